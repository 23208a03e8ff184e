//! report, script and the exports read a file on several threads (perfkit_report's
//! pipeline: a reader and a builder; fan_out: a reader, decoding threads and a builder):
//! their output must be byte for byte the single-threaded path's
//! (`PERFKIT_REPORT_THREADS=1`) at every thread count, on generated files (many
//! processes, threads, mappings, deep callchains, side-band between samples), on a file
//! with a record that does not decode, and on real recordings.

mod common;

use common::{perfkit, run_ok};
use std::path::Path;

#[allow(dead_code)] // the example's `main` and argument parsing are not used here
#[path = "../../perfkit-report/examples/gen-perf-data.rs"]
mod generator;

/// The commands compared: report in both modes and a few sort keys, script, exports.
const COMMANDS: &[&[&str]] = &[
    &["report", "--stdio", "--no-children"],
    &["report", "--stdio", "--children"],
    &[
        "report",
        "--stdio",
        "--no-children",
        "--sort",
        "dso,sym",
        "-g",
        "caller",
    ],
    &["report", "--stdio", "-n", "--sort", "pid,cpu"],
    &["script"],
    &[
        "script",
        "-F",
        "comm,pid,tid,time,period,event,ip,sym,symoff,dso",
        "--ns",
        "--deltatime",
    ],
    &["report", "--format", "folded"],
];

/// More report modes, compared on the generated file: sort keys that keep CPUs apart or
/// not (the decoding threads merge samples by what the report keeps apart), `--cpu`, and
/// the call-graph modes.
const MORE_REPORTS: &[&[&str]] = &[
    &["report", "--stdio", "--children", "--sort", "comm,dso"],
    &[
        "report",
        "--stdio",
        "--no-children",
        "--sort",
        "cpu,sym",
        "-g",
        "flat",
    ],
    &[
        "report",
        "--stdio",
        "--no-children",
        "--sort",
        "tid",
        "-g",
        "fractal",
    ],
    &["report", "--stdio", "--children", "-g", "callee"],
    &[
        "report",
        "--stdio",
        "--no-children",
        "-g",
        "none",
        "--cpu",
        "0-3",
    ],
];

/// Exit status and output of `perfkit ARGS -i FILE` with `threads` reading threads (1:
/// single-threaded).
fn output(args: &[&str], file: &Path, threads: &str) -> (Option<i32>, Vec<u8>) {
    let out = perfkit()
        .args(args)
        .arg("-i")
        .arg(file)
        .env("PERFKIT_REPORT_THREADS", threads)
        .output()
        .expect("run perfkit");
    (out.status.code(), out.stdout)
}

/// Thread counts compared with the single-threaded path: the two-thread pipeline, and
/// one, two and six decoding threads (more threads than this machine's CPUs is fine).
const THREADS: &[&str] = &["2", "3", "4", "8"];

/// Compare every command's output on one thread and on each of [`THREADS`];
/// `must_succeed`: each must exit 0. Returns the number of lines compared.
fn same_bytes_both_ways(file: &Path, must_succeed: bool) -> usize {
    same_bytes_of(COMMANDS, file, must_succeed)
}

/// [`same_bytes_both_ways`] for `commands`.
fn same_bytes_of(commands: &[&[&str]], file: &Path, must_succeed: bool) -> usize {
    let mut lines = 0;
    for args in commands {
        let one = output(args, file, "1");
        for threads in THREADS {
            lines += same_as_one(args, file, &one, threads, must_succeed);
        }
    }
    lines
}

/// Compare `perfkit ARGS -i FILE` on `threads` threads with `one`, its single-threaded
/// run; returns the lines compared.
fn same_as_one(
    args: &[&str],
    file: &Path,
    one: &(Option<i32>, Vec<u8>),
    threads: &str,
    must_succeed: bool,
) -> usize {
    let two = output(args, file, threads);
    {
        if must_succeed {
            assert_eq!(
                one.0,
                Some(0),
                "perfkit {} -i {}",
                args.join(" "),
                file.display()
            );
        }
        assert_eq!(
            one.0,
            two.0,
            "exit status of perfkit {} on {threads} threads",
            args.join(" ")
        );
        let (one, two) = (&one.1, &two.1);
        assert!(
            one == two,
            "perfkit {} -i {}: the output on {threads} threads differs from the \
             single-threaded one (first difference at byte {})",
            args.join(" "),
            file.display(),
            one.iter()
                .zip(two)
                .position(|(a, b)| a != b)
                .unwrap_or(one.len().min(two.len()))
        );
        one.iter().filter(|&&b| b == b'\n').count()
    }
}

/// A generated file `name` of `samples` samples in a new temporary directory (kept while
/// the directory is), with `edit` applied to the generator's arguments; None (after
/// saying why) where no file can be generated here.
fn generated(
    name: &str,
    samples: u64,
    edit: impl FnOnce(&mut generator::Args),
) -> Option<(tempfile::TempDir, std::path::PathBuf)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join(name);
    let mut a = generator::Args::new(samples, file.clone());
    edit(&mut a);
    match generator::run(a) {
        Ok(_) => Some((dir, file)),
        Err(e) => {
            common::skip(&format!("cannot generate a perf.data file here: {e}"));
            None
        }
    }
}

#[test]
fn generated_files_report_the_same_bytes_on_one_thread_and_two() {
    let Some((_dir, file)) = generated("gen.data", 40_000, |a| {
        // Enough side-band between samples (processes replaced 4 times each) and enough
        // records for many batches between the threads.
        a.processes = 6;
        a.threads = 4;
        a.paths = 300;
    }) else {
        return;
    };
    let script = output(&["script"], &file, "2").1;
    // A sample is a header line, then its frames (each line starts with a tab).
    let samples = script
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'\t')
        .count();
    assert!(
        samples >= 40_000,
        "script shows {samples} sample header lines of 40000"
    );
    let lines = same_bytes_both_ways(&file, true);
    assert!(lines > 40_000, "only {lines} lines compared");
    let lines = same_bytes_of(MORE_REPORTS, &file, true);
    assert!(lines > 1_000, "only {lines} lines compared");
}

/// Reports of a file whose few samples classes (thread, event, callchain) come back in
/// batch after batch, while processes are replaced (their maps and names change): the
/// builder makes each class's samples from what it made of the class before (perfkit_report's
/// classes, given on the reading and decoding threads), and the reports on every thread
/// count must be the single-threaded ones, sums, sort orders and call graphs included.
#[test]
fn classes_met_again_report_the_same_bytes_on_every_thread_count() {
    let Some((_dir, file)) = generated("classes.data", 60_000, |a| {
        a.processes = 3;
        a.threads = 3;
        a.paths = 12;
        a.cpus = 4;
        a.seed = 9;
    }) else {
        return;
    };
    let commands: &[&[&str]] = &[
        &["report", "--stdio", "--no-children"],
        &["report", "--stdio", "--children", "-n"],
        &["report", "--stdio", "-n", "--sort", "pid,cpu", "-g", "none"],
        &[
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "comm,dso,sym",
            "-g",
            "caller",
        ],
        &["report", "--format", "folded"],
    ];
    let lines = same_bytes_of(commands, &file, true);
    assert!(lines > 5_000, "only {lines} lines compared");
    // Every sample is counted once: the rows' sample counts add up to the file's.
    let args = ["report", "--stdio", "-n", "--sort", "pid", "-g", "none"];
    for threads in ["1", "3"] {
        let out = output(&args, &file, threads);
        let samples: u64 = String::from_utf8_lossy(&out.1)
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_whitespace().find_map(|w| w.parse::<u64>().ok()))
            .sum();
        assert_eq!(samples, 60_000, "samples in the rows on {threads} threads");
    }
}

/// Every name, symbol offset and object of every frame on several threads is the
/// single-threaded path's, on a file with many shared objects, each mapped at another
/// address in each process, and processes replaced while their samples are on their way
/// between the threads (the builder finds each symbol's function again by the
/// symbolizer's names, and each mapping's image by the mapping).
#[test]
fn names_on_every_thread_count_are_the_single_threaded_ones() {
    let Some((_dir, file)) = generated("names.data", 16_000, |a| {
        a.processes = 12;
        a.threads = 2;
        a.paths = 400;
        a.seed = 5;
    }) else {
        return;
    };
    let args = ["script", "-F", "pid,ip,sym,symoff,dso"];
    let one = output(&args, &file, "1");
    assert_eq!(one.0, Some(0), "perfkit script on one thread");
    // What is named: distinct objects and (symbol, object) pairs among the frames.
    let text = String::from_utf8_lossy(&one.1);
    let frames: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with('\t'))
        .map(str::trim)
        .collect();
    let dsos: std::collections::HashSet<&str> = frames
        .iter()
        .filter_map(|f| f.rsplit_once(" (").map(|(_, d)| d))
        .collect();
    let names: std::collections::HashSet<&str> = frames
        .iter()
        .filter_map(|f| f.split_once(' ').map(|(_, rest)| rest))
        .filter(|n| !n.starts_with("[unknown]"))
        .collect();
    assert!(frames.len() > 50_000, "{} frames", frames.len());
    assert!(
        dsos.len() >= 8,
        "frames in only {} objects: {dsos:?}",
        dsos.len()
    );
    assert!(names.len() > 1_000, "only {} distinct names", names.len());
    let mut lines = 0;
    for threads in THREADS {
        lines += same_as_one(&args, &file, &one, threads, true);
    }
    for report in [
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"][..],
        &[
            "report",
            "--stdio",
            "--children",
            "--sort",
            "pid,sym",
            "-g",
            "none",
        ],
    ] {
        let one = output(report, &file, "1");
        for threads in THREADS {
            lines += same_as_one(report, &file, &one, threads, true);
        }
    }
    assert!(lines > 200_000, "only {lines} lines compared");
}

/// A sample in the middle whose callchain claims more entries than the record holds:
/// the single-threaded path stops there (the first error), and the decoding threads,
/// which meet it out of the reader's sight, must give the same output and status.
#[test]
fn a_record_that_does_not_decode_ends_the_report_as_on_one_thread() {
    let Some((_dir, file)) = generated("bad.data", 30_000, |a| {
        a.processes = 3;
    }) else {
        return;
    };
    // The generator's samples: ip, pid/tid, time, cpu/res, period, then the chain's nr.
    let mut at = None;
    let mut samples = 0;
    perfkit_data::PerfData::open(&file)
        .expect("open")
        .walk(|off, type_, _, _| {
            if type_ == perfkit::sys::PERF_RECORD_SAMPLE {
                samples += 1;
                if samples == 20_000 {
                    at = Some(off + 8 + 40);
                }
            }
            Ok(())
        })
        .expect("walk");
    let at = at.expect("20000 samples");
    let mut bytes = std::fs::read(&file).expect("read");
    bytes[at..at + 8].copy_from_slice(&0xffffu64.to_ne_bytes());
    std::fs::write(&file, bytes).expect("write");
    let mut lines = 0;
    for args in [&["report", "--stdio", "--no-children"][..], &["script"]] {
        let one = output(args, &file, "1");
        let shown = one.1.iter().filter(|&&b| b == b'\n').count();
        assert!(shown > 10, "{shown} lines before the bad record");
        for threads in THREADS {
            lines += same_as_one(args, &file, &one, threads, false);
        }
    }
    assert!(lines > 10_000, "only {lines} lines compared");
}

#[test]
fn recordings_report_the_same_bytes_on_one_thread_and_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(bin) = common::hotloop::build(dir.path(), "-O1") else {
        return;
    };
    let file = dir.path().join("rec.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-g", "-F", "2000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .args(["200000000", "2"]),
    );
    let lines = same_bytes_both_ways(&file, true);
    assert!(lines > 10, "only {lines} lines compared");
    // perf's own recording of it, when perf is here.
    if common::have_perf() {
        let file = dir.path().join("perf.data");
        let st = std::process::Command::new("perf")
            .args(["record", "-q", "-g", "-F", "2000", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .args(["200000000", "2"])
            .status()
            .expect("run perf");
        assert!(st.success(), "perf record failed: {st}");
        same_bytes_both_ways(&file, true);
    } else {
        common::skip("perf is not installed: only perfkit's recording is compared");
    }
    // perf's recordings of many kinds (system-wide, tracepoints, forks, exec, C++), where
    // this machine keeps a corpus of them.
    let corpus = Path::new("/work/corpora/perf61");
    for name in [
        "sys-g",
        "forks-g",
        "execve-g",
        "sys-sched-switch",
        "tp-getpid",
        "cxx-O2-g",
    ] {
        let f = corpus.join(format!("{name}.data"));
        if f.exists() {
            same_bytes_both_ways(&f, false);
        }
    }
}

/// `script` writes each sample as it is built and forgets it (the load's samples stream);
/// with `PERFKIT_SCRIPT_KEEP=1` it keeps them all first. The two must print the same bytes, with every layout
/// option and absolute `--time` ranges (which stream), at every thread count.
#[test]
fn streamed_script_is_the_whole_profiles_script() {
    let Some((_dir, file)) = generated("gen.data", 30_000, |a| {
        a.processes = 6;
        a.threads = 4;
        a.paths = 300;
    }) else {
        return;
    };
    let mut lines = 0;
    // The generator's samples run from 1.00025 s to about 1.47 s.
    for extra in [
        &[][..],
        &["-G", "--deltatime"],
        &["-F", "comm,tid,time,ip,sym", "--max-stack", "3", "--ns"],
        &["--json"],
        &["--comm", "postgres-w2"],
        &["--time", "1.1,1.3"],
        &["--time", "1.2,", "-F", "tid,time,period,sym"],
        &["--time", ",1.05", "-G"],
        &["--time", "1.1,1.15 1.3,1.35"],
    ] {
        let args: Vec<&str> = ["script"].iter().chain(extra).copied().collect();
        let out = perfkit()
            .args(&args)
            .arg("-i")
            .arg(&file)
            .env("PERFKIT_REPORT_THREADS", "1")
            .env("PERFKIT_SCRIPT_KEEP", "1")
            .output()
            .expect("run perfkit");
        let kept = (out.status.code(), out.stdout);
        assert_eq!(kept.0, Some(0), "perfkit {}", args.join(" "));
        let shown = kept.1.iter().filter(|&&b| b == b'\n').count();
        assert!(shown > 100, "perfkit {}: {shown} lines", args.join(" "));
        for threads in ["1", "2", "3"] {
            lines += same_as_one(&args, &file, &kept, threads, true);
        }
        if extra.is_empty() {
            // A percent range (its span from the header) streams too: 0%-100% is all.
            let whole: Vec<&str> = args.iter().chain(&["--time", "0%-100%"]).copied().collect();
            assert!(
                output(&whole, &file, "2") == kept,
                "perfkit {}",
                whole.join(" ")
            );
        }
    }
    assert!(lines > 100_000, "only {lines} lines compared");
}

/// `script --time` with absolute ranges streams (no sample is kept to find the recording's
/// span): it prints what perf 6.1 prints, byte for byte, for one range, open ends and two
/// ranges.
#[test]
fn streamed_time_ranges_are_perfs() {
    if !common::have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let Some((_dir, file)) = generated("gen.data", 8_000, |a| {
        a.processes = 4;
        a.threads = 2;
    }) else {
        return;
    };
    // The generator's 8,000 samples run from 1.00025 s to 1.125 s.
    for range in ["1.03,1.06", ",1.01", "1.1,", "1.02,1.03 1.05,1.07"] {
        let ours = output(&["script", "--time", range], &file, "2");
        assert_eq!(ours.0, Some(0), "perfkit script --time {range}");
        let perf = common::perf_ok(&["script", "--time", range], &file);
        let lines = perf.lines().count();
        assert!(lines > 100, "perf script --time {range}: {lines} lines");
        assert!(
            String::from_utf8_lossy(&ours.1) == perf,
            "perfkit script --time {range} differs from perf's"
        );
    }
}
