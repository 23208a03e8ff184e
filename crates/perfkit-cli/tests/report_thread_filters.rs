//! `report --pid`/`--tid`/`--comm` as perf 6.1 applies them (issue 16): the filters hide
//! entries, they do not drop samples. perf's entry of a command, object and symbol
//! (`comm,dso,sym`) merges the samples of every process of that command; the sample that
//! makes the entry decides whether it is shown (its `he->filtered`), and the samples merged
//! into it later count whatever their process. So with `--pid 100` a row that another
//! process of the same name made first is not shown at all (on a `-a` recording perfkit
//! used to print a `finish_task_switch` row perf did not), and a row process 100 made
//! first shows the other process's samples too.
//!
//! Two processes of one name interleave kernel samples in a recording written here
//! (perfkit's writer), read by both tools with the same `--kallsyms` file.

mod common;

use common::{have_perf, skip};
use perfkit::sys::{self, attr_flags as f};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
use std::path::Path;
use std::process::Command;

const TEXT: u64 = 0xffff_ffff_8100_0000;
const ETEXT: u64 = TEXT + 0x10_0000;
const FN1: u64 = TEXT + 0x100;
const FN2: u64 = TEXT + 0x200;
const FN3: u64 = TEXT + 0x300;

fn kallsyms() -> String {
    [
        format!("{TEXT:016x} T _text"),
        format!("{FN1:016x} T core_fn"),
        format!("{FN2:016x} T core_fn2"),
        format!("{FN3:016x} T core_fn3"),
        format!("{ETEXT:016x} T _etext"),
    ]
    .join("\n")
        + "\n"
}

/// (pid, ip) of each sample, in time order; each process is its own single thread.
const SAMPLES: [(i32, u64); 8] = [
    (200, FN1 + 4), // makes `twin core_fn`: hidden under --pid 100
    (100, FN1 + 8),
    (100, FN2 + 4), // makes `twin core_fn2`: shown under --pid 100, with 200's samples
    (200, FN2 + 8),
    (200, FN2 + 12),
    (300, FN3 + 4), // `other core_fn3`
    (100, FN3 + 8), // `twin core_fn3`
    (100, FN3 + 12),
];

fn comm_of(pid: i32) -> &'static str {
    if pid == 300 { "other" } else { "twin" }
}

fn write(path: &Path) {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 1000,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_CPU
            | sys::PERF_SAMPLE_PERIOD,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::TASK | f::MMAP, true);
    let event = FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    };
    let opts = WriteOptions {
        no_build_ids: true,
        ..Default::default()
    };
    let mut w = PerfDataWriter::create(path, vec![event], opts).unwrap();
    let mut kmap = Vec::new();
    kmap.extend_from_slice(&u32::MAX.to_ne_bytes());
    kmap.extend_from_slice(&0u32.to_ne_bytes());
    for v in [TEXT, ETEXT - TEXT, TEXT] {
        kmap.extend_from_slice(&v.to_ne_bytes());
    }
    kmap.extend_from_slice(b"[kernel.kallsyms]_text\0");
    w.write_record(&[&record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &kmap,
        &synth::sample_id_trailer(&attr, -1, 0, 1),
    )])
    .unwrap();
    for pid in [100, 200, 300] {
        let mut body = Vec::new();
        body.extend_from_slice(&(pid as u32).to_ne_bytes());
        body.extend_from_slice(&(pid as u32).to_ne_bytes());
        body.extend_from_slice(comm_of(pid).as_bytes());
        body.push(0);
        w.write_record(&[&record(
            sys::PERF_RECORD_COMM,
            0,
            &body,
            &synth::sample_id_trailer(&attr, pid, pid, 1),
        )])
        .unwrap();
    }
    for (i, &(pid, ip)) in SAMPLES.iter().enumerate() {
        let time = 1_000_000_000 + i as u64 * 1000;
        w.saw_time(time);
        let mut body = Vec::new();
        body.extend_from_slice(&ip.to_ne_bytes());
        body.extend_from_slice(&(pid as u32).to_ne_bytes());
        body.extend_from_slice(&(pid as u32).to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(&1000u64.to_ne_bytes());
        w.write_record(&[&record(
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_KERNEL,
            &body,
            &[],
        )])
        .unwrap();
    }
    w.finish(&["perf".into(), "record".into(), "-a".into()])
        .unwrap();
}

fn run(tool: &str, args: &[&str]) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd.args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The rows (lines with a `[k]` symbol) of each report of `modes`, the same from both
/// tools.
fn rows_as_perf(modes: &[&[&str]]) -> Vec<Vec<String>> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("twins.data");
    write(&data);
    let ks = dir.path().join("kallsyms");
    std::fs::write(&ks, kallsyms()).unwrap();
    let (d, k) = (data.to_str().unwrap(), ks.to_str().unwrap());
    let mut out = Vec::new();
    for mode in modes {
        let mut args = vec!["report", "--stdio"];
        args.extend_from_slice(mode);
        args.extend(["-i", d, "--kallsyms", k]);
        let p = run("perf", &args);
        let q = run("perfkit", &args);
        assert_eq!(q, p, "perfkit {args:?}");
        out.push(
            p.lines()
                .filter(|l| l.contains("[k] "))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect(),
        );
    }
    out
}

#[test]
fn the_sample_that_makes_an_entry_decides_whether_a_thread_filter_shows_it() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let rows = rows_as_perf(&[
        &["--no-children", "--pid", "100"],
        &["--children", "--pid", "100"],
        &["--no-children", "--tid", "100"],
        &["--no-children", "--pid", "100", "--percentage", "relative"],
        &["--no-children", "--pid", "200", "--sort", "dso,sym"],
        &["--no-children", "--comm", "twin", "--sort", "dso,sym"],
        &["--no-children", "--comm", "twin"],
        &["--no-children", "--pid", "100", "--sort", "pid,sym"],
    ]);
    // What perf prints, so that a change of both cannot pass unseen: `core_fn` was made by
    // 200's sample and is not shown; `core_fn2`, made by 100's, holds 200's two samples.
    let want_pid100 = [
        "37.50% twin [kernel.kallsyms] [k] core_fn2",
        "25.00% twin [kernel.kallsyms] [k] core_fn3",
    ];
    assert_eq!(rows[0], want_pid100);
    assert_eq!(rows[2], want_pid100);
    // Relative: of the rows shown (5 samples).
    assert_eq!(
        rows[3],
        [
            "60.00% twin [kernel.kallsyms] [k] core_fn2",
            "40.00% twin [kernel.kallsyms] [k] core_fn3"
        ]
    );
    // By object and symbol: `core_fn3` was made by `other`'s sample (300) and holds all
    // three; under --pid 200 only `core_fn` (made by 200, with 100's sample) is shown.
    assert_eq!(rows[4], ["25.00% [kernel.kallsyms] [k] core_fn"]);
    // `--comm` without the comm key: the `core_fn3` entry was made by `other`, hidden.
    assert_eq!(
        rows[5],
        [
            "37.50% [kernel.kallsyms] [k] core_fn2",
            "25.00% [kernel.kallsyms] [k] core_fn"
        ]
    );
    // Per thread: only 100's own samples.
    assert_eq!(
        rows[7],
        [
            "25.00% 100:twin [k] core_fn3",
            "12.50% 100:twin [k] core_fn",
            "12.50% 100:twin [k] core_fn2",
        ]
    );
}
