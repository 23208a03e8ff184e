//! The paths that used to keep every sample of a file, now reading it in memory that
//! follows what they show: `report --time` (absolute and percent ranges) folds like
//! samples as they are read, dropping those outside the ranges; `script --time` in percent
//! or with `--reltime`, and `script --per-event-dump`, write each sample as it is built.
//! Percent ranges take the first and last sample times from the header's
//! HEADER_SAMPLE_TIME, or from a first pass over the samples when the header has none (a
//! pipe, `perf record -B`).
//!
//! Each is compared byte for byte with the path that keeps every sample
//! (`PERFKIT_REPORT_KEEP=1`, `PERFKIT_SCRIPT_KEEP=1`), on generated files and on real
//! recordings, and with perf 6.1.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

#[allow(dead_code)] // the example's `main` and argument parsing are not used here
#[path = "../../perfkit-report/examples/gen-perf-data.rs"]
mod generator;

/// Exit status and standard output of `perfkit ARGS -i FILE` with these variables set.
fn ours(args: &[&str], file: &Path, env: &[(&str, &str)]) -> (Option<i32>, Vec<u8>) {
    let mut cmd = perfkit();
    cmd.args(args).arg("-i").arg(file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run perfkit");
    (out.status.code(), out.stdout)
}

/// The text without perf's random tip line and perfkit's line in its place.
fn without_tip(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's output of `perf ARGS -i FILE` (None: it failed).
fn perfs(args: &[&str], file: &Path) -> Option<String> {
    let out = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("run perf");
    out.status.success().then(|| without_tip(&out.stdout))
}

/// Assert that `args` prints the same on the kept path (`keep`: its variable) and on the
/// streamed one (on 1 and 3 reading threads); returns the lines compared.
fn same_as_kept(args: &[&str], file: &Path, keep: &str) -> usize {
    let kept = ours(args, file, &[(keep, "1"), ("PERFKIT_REPORT_THREADS", "1")]);
    assert_eq!(kept.0, Some(0), "perfkit {} (kept)", args.join(" "));
    let mut lines = 0;
    for threads in ["1", "3"] {
        let streamed = ours(args, file, &[("PERFKIT_REPORT_THREADS", threads)]);
        assert_eq!(streamed.0, Some(0), "perfkit {}", args.join(" "));
        assert!(
            streamed.1 == kept.1,
            "perfkit {} -i {} on {threads} threads differs from {keep}=1 (first difference at \
             byte {})",
            args.join(" "),
            file.display(),
            kept.1
                .iter()
                .zip(&streamed.1)
                .position(|(a, b)| a != b)
                .unwrap_or(kept.1.len().min(streamed.1.len()))
        );
        lines += streamed.1.iter().filter(|&&b| b == b'\n').count();
    }
    lines
}

/// A generated file of `samples` samples in `dir` (None: the generator cannot run here).
fn generated(dir: &Path, samples: u64) -> Option<PathBuf> {
    let file = dir.join("gen.data");
    let mut a = generator::Args::new(samples, file.clone());
    a.processes = 6;
    a.threads = 3;
    a.paths = 200;
    match generator::run(a) {
        Ok(_) => Some(file),
        Err(e) => {
            skip(&format!("cannot generate a perf.data file here: {e}"));
            None
        }
    }
}

/// The samples `perfkit report --format folded ARGS -i FILE` adds up (each line ends with
/// its stack's count).
fn samples_shown(args: &[&str], file: &Path) -> u64 {
    let all: Vec<&str> = ["report", "--format", "folded"]
        .iter()
        .chain(args)
        .copied()
        .collect();
    let out = ours(&all, file, &[]);
    assert_eq!(out.0, Some(0), "perfkit {all:?}");
    String::from_utf8_lossy(&out.1)
        .lines()
        .map(|l| {
            l.rsplit_once(' ')
                .and_then(|(_, n)| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("{l}"))
        })
        .sum()
}

/// `report --time` folds the samples in its ranges as it reads them: absolute and percent
/// ranges, one or several, in the report's modes and sort keys and the folded export,
/// print what keeping every sample and filtering them afterwards prints.
#[test]
fn report_time_ranges_fold_as_keeping_every_sample_shows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(file) = generated(dir.path(), 12_000) else {
        return;
    };
    // The generator's samples run from 1.00025 s to about 1.19 s.
    let specs = [
        "1.05,1.1",
        "1.1,",
        "1.02,1.03 1.08,1.12",
        "10%/2",
        "0%-10%,30%-40%",
        "0%-100%",
    ];
    let modes: &[&[&str]] = &[
        &["report", "--stdio", "--no-children"],
        &["report", "--stdio", "--children", "--sort", "comm,dso"],
        &["report", "--stdio", "-n", "--sort", "pid,cpu", "-g", "none"],
        &["report", "--format", "folded"],
    ];
    let mut lines = 0;
    for spec in specs {
        for mode in modes {
            let args: Vec<&str> = mode.iter().copied().chain(["--time", spec]).collect();
            lines += same_as_kept(&args, &file, "PERFKIT_REPORT_KEEP");
        }
    }
    assert!(lines > 20_000, "only {lines} lines compared");
    // A slice shows fewer samples than the whole file, 0%-100% all of them.
    let whole = samples_shown(&[], &file);
    let all = samples_shown(&["--time", "0%-100%"], &file);
    let slice = samples_shown(&["--time", "10%/2"], &file);
    assert_eq!(all, whole);
    assert_eq!(whole, 12_000);
    assert!(
        slice > whole / 20 && slice < whole / 5,
        "{slice} of {whole}"
    );
}

/// The folded `report --time` and the streamed `script --time` in percent and with
/// `--reltime` print what perf 6.1 prints on the same generated file. (The children
/// column is left out: on these generated files equal call-graph siblings are ordered
/// differently from perf's with or without `--time`, an issue-16 difference of its own.)
#[test]
fn streamed_time_slices_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(file) = generated(dir.path(), 8_000) else {
        return;
    };
    let runs: &[&[&str]] = &[
        &["report", "--stdio", "--no-children", "--time", "10%/2"],
        &[
            "report",
            "--stdio",
            "--no-children",
            "--time",
            "0%-10%,30%-40%",
        ],
        &[
            "report",
            "--stdio",
            "-n",
            "--sort",
            "pid",
            "-g",
            "none",
            "--time",
            "1.02,1.05",
        ],
        &["script", "--time", "25%/3"],
        &["script", "--time", "0%-5%,50%-55%", "--ns"],
        &["script", "--reltime", "--time", "0.01,0.02"],
    ];
    for args in runs {
        let theirs = perfs(args, &file).unwrap_or_else(|| panic!("perf {args:?} failed"));
        assert!(theirs.lines().count() > 15, "perf {args:?}: {theirs}");
        let mine = ours(args, &file, &[]);
        assert_eq!(mine.0, Some(0), "perfkit {args:?}");
        assert!(
            without_tip(&mine.1) == theirs,
            "perfkit {args:?} differs from perf's"
        );
    }
}

/// `script --time` in percent of the recording and `--reltime` ranges stream: what they
/// print is what the path that keeps every sample prints, on every thread count.
#[test]
fn script_percent_and_reltime_ranges_stream_as_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(file) = generated(dir.path(), 12_000) else {
        return;
    };
    let mut lines = 0;
    for extra in [
        &["--time", "10%/2"][..],
        &["--time", "0%-10%,30%-40%", "-G"],
        &["--time", "50%", "-F", "comm,tid,time,ip,sym", "--ns"],
        &["--reltime", "--time", "0.01,0.05"],
        &["--reltime", "--time", "0.1,", "--deltatime"],
    ] {
        let args: Vec<&str> = ["script"].iter().chain(extra).copied().collect();
        lines += same_as_kept(&args, &file, "PERFKIT_SCRIPT_KEEP");
    }
    assert!(lines > 20_000, "only {lines} lines compared");
}

/// A recording whose header has no first and last sample times (perf's `record -B`, a
/// pipe, where perf 6.1 refuses percent ranges): perfkit finds them in a first pass over
/// the samples, and the streamed paths print what keeping every sample prints.
#[test]
fn without_sample_times_in_the_header_a_first_pass_finds_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("nob.data");
    let work = [
        "sh",
        "-c",
        "i=0; while [ $i -lt 60000 ]; do i=$((i+1)); done",
    ];
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-B",
            "-e",
            "task-clock",
            "-c",
            "100000",
            "-o",
        ])
        .arg(&file)
        .arg("--")
        .args(work)
        .status()
        .expect("perf record");
    assert!(st.success());
    let header = ours(&["report", "--header-only"], &file, &[]);
    assert!(
        String::from_utf8_lossy(&header.1).contains("# time of first sample : 0.000000"),
        "perf -B wrote sample times"
    );
    assert!(
        perfs(&["report", "--stdio", "--time", "10%/2"], &file).is_none(),
        "perf took a percent range without sample times"
    );
    let all = samples_shown(&[], &file);
    assert!(all >= 20, "{all} samples");
    let mut lines = 0;
    for spec in ["10%/2", "0%-30%,60%-70%"] {
        lines += same_as_kept(
            &["report", "--stdio", "--time", spec],
            &file,
            "PERFKIT_REPORT_KEEP",
        );
        lines += same_as_kept(&["script", "--time", spec], &file, "PERFKIT_SCRIPT_KEEP");
    }
    let slice = samples_shown(&["--time", "25%/2"], &file);
    assert!(slice > 0 && slice < all, "{slice} of {all}");
    assert!(lines > 50, "{lines}");

    // The same from a pipe (read into memory for the two passes).
    let out = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "task-clock",
            "-c",
            "100000",
            "-o",
            "-",
            "--",
        ])
        .args(work)
        .output()
        .expect("perf record");
    assert!(out.status.success());
    for (args, keep) in [
        (
            &["report", "--stdio", "--time", "10%/2"][..],
            "PERFKIT_REPORT_KEEP",
        ),
        (&["script", "--time", "25%/3"], "PERFKIT_SCRIPT_KEEP"),
    ] {
        let piped = |env: &[(&str, &str)]| {
            let mut cmd = perfkit();
            cmd.args(args)
                .args(["-i", "-"])
                .write_stdin(out.stdout.clone());
            for (k, v) in env {
                cmd.env(k, v);
            }
            let o = cmd.output().expect("run perfkit");
            assert!(
                o.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            o.stdout
        };
        let (kept, streamed) = (piped(&[(keep, "1")]), piped(&[]));
        assert!(kept.iter().filter(|&&b| b == b'\n').count() > 5, "{args:?}");
        assert!(kept == streamed, "perfkit {args:?} from a pipe");
    }
}

/// `script --per-event-dump` writes each sample to its event's file as it comes: the
/// files are the kept path's and perf 6.1's, byte for byte, with the sample counts perf
/// gives.
#[test]
fn per_event_dump_streams_perfs_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("two.data");
    let rec = perfkit()
        .args([
            "record",
            "-q",
            "-e",
            "cpu-clock,task-clock",
            "-F",
            "2000",
            "-g",
            "-o",
        ])
        .arg(&file)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ])
        .output()
        .expect("perfkit record");
    if !rec.status.success() {
        return skip(&format!(
            "perfkit record cannot sample here: {}",
            String::from_utf8_lossy(&rec.stderr)
        ));
    }
    let events = ["cpu-clock", "task-clock"];
    let dump = |tool: &str, env: &[(&str, &str)]| -> (String, Vec<Vec<u8>>) {
        let mut cmd = if tool == "perf" {
            assert_cmd::Command::new("perf")
        } else {
            perfkit()
        };
        cmd.args(["script", "--per-event-dump", "-i"]).arg(&file);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("run");
        assert!(out.status.success(), "{tool} script --per-event-dump");
        let files = events
            .iter()
            .map(|e| {
                let p = dir.path().join(format!("two.data.{e}.dump"));
                let b = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                std::fs::remove_file(&p).expect("remove");
                b
            })
            .collect();
        (String::from_utf8_lossy(&out.stdout).into_owned(), files)
    };
    let (kept_text, kept) = dump("perfkit", &[("PERFKIT_SCRIPT_KEEP", "1")]);
    for threads in ["1", "3"] {
        let (text, streamed) = dump("perfkit", &[("PERFKIT_REPORT_THREADS", threads)]);
        assert_eq!(text, kept_text);
        assert!(
            streamed == kept,
            "the streamed dump files differ from the kept ones"
        );
    }
    for (e, f) in events.iter().zip(&kept) {
        let n = f.iter().filter(|&&b| b == b'\n').count();
        assert!(n > 50, "{e}: {n} lines");
    }
    if !have_perf() {
        return skip("perf is not installed");
    }
    let (perf_text, theirs) = dump("perf", &[]);
    assert!(theirs == kept, "the dump files differ from perf's");
    // The same sample counts, in the same order.
    let counts = |t: &str| -> Vec<String> {
        t.lines()
            .filter_map(|l| l.rsplit_once(" (").map(|(_, n)| n.to_string()))
            .collect()
    };
    assert_eq!(
        counts(&kept_text),
        counts(&perf_text),
        "{kept_text}\n{perf_text}"
    );
}

/// Tracepoint samples fold like the others when the report does not show their fields
/// (their RAW data is dropped as they are read); with the `trace` key (perf's default for
/// a file of tracepoints only) they keep it. Either way the report is the kept path's and
/// perf 6.1's.
#[test]
fn tracepoint_samples_fold_unless_their_fields_are_shown() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("tp.data");
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch,sched:sched_wakeup",
            "-a",
            "-o",
        ])
        .arg(&file)
        .args([
            "--",
            "sh",
            "-c",
            "for i in $(seq 100); do sleep 0.001; done",
        ])
        .output()
        .expect("perf record");
    if !rec.status.success() {
        return skip(&format!(
            "perf cannot record sched tracepoints here (tracefs mounted?): {}",
            String::from_utf8_lossy(&rec.stderr)
        ));
    }
    let mut lines = 0;
    for sort in [
        &["--sort", "comm,pid"][..],
        &["--sort", "pid", "-n"],
        &["--sort", "trace"],
        &[],
        &["--sort", "comm,sym", "--time", "10%/3"],
    ] {
        let args: Vec<&str> = ["report", "--stdio"].iter().chain(sort).copied().collect();
        lines += same_as_kept(&args, &file, "PERFKIT_REPORT_KEEP");
        let theirs = perfs(&args, &file).unwrap_or_else(|| panic!("perf {args:?} failed"));
        let mine = ours(&args, &file, &[]);
        assert!(
            without_tip(&mine.1) == theirs,
            "perfkit {args:?} differs from perf's"
        );
    }
    // Each of the 100 sleeps switches out at least once.
    assert!(lines > 200, "{lines}");
}

/// `script --show-task-events`, `--show-mmap-events`, `--show-switch-events` and the other
/// side-band records stream with the samples: each record waits only until the samples
/// before it are written. The text is the kept path's, on a generated file (many
/// processes, maps and threads between samples) and on a perf recording with
/// context-switch records, with `--time`, `-C` and `--deltatime`; and perf 6.1's.
#[test]
fn side_band_records_stream_as_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(generated) = generated(dir.path(), 8_000) else {
        return;
    };
    let mut files = vec![generated];
    if have_perf() {
        let sw = dir.path().join("sw.data");
        let st = Command::new("perf")
            .args(["record", "-q", "--switch-events", "-F", "1000", "-g", "-o"])
            .arg(&sw)
            .args([
                "--",
                "sh",
                "-c",
                "for i in $(seq 30); do sleep 0.002; done; \
                 i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
            ])
            .status()
            .expect("perf record");
        assert!(st.success(), "perf record --switch-events");
        files.push(sw);
    } else {
        skip("perf is not installed: the generated file only");
    }
    let runs: &[&[&str]] = &[
        &["script", "--show-task-events"],
        &["script", "--show-mmap-events"],
        &["script", "--show-switch-events"],
        &[
            "script",
            "--show-task-events",
            "--show-mmap-events",
            "--deltatime",
        ],
        &["script", "--show-mmap-events", "--time", "10%/2"],
        &["script", "--show-task-events", "--json"],
    ];
    // The generated file's samples carry their CPU (the recording with switches does not).
    let mut lines = same_as_kept(
        &["script", "--show-task-events", "-C", "1"],
        &files[0],
        "PERFKIT_SCRIPT_KEEP",
    );
    for file in &files {
        for args in runs {
            lines += same_as_kept(args, file, "PERFKIT_SCRIPT_KEEP");
        }
        if have_perf() {
            for args in &runs[..3] {
                let theirs = perfs(args, file).unwrap_or_else(|| panic!("perf {args:?}"));
                let mine = ours(args, file, &[]);
                assert!(
                    without_tip(&mine.1) == theirs,
                    "perfkit {args:?} -i {} differs from perf's",
                    file.display()
                );
            }
        }
    }
    assert!(lines > 50_000, "only {lines} lines compared");
}
