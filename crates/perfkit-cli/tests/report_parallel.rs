//! report, script and the exports read a file on two threads (perfkit_report::pipeline):
//! their output must be byte for byte the single-threaded path's
//! (`PERFKIT_REPORT_THREADS=1`), on generated files (many processes, threads, mappings,
//! deep callchains, side-band between samples) and on real recordings.

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
    &["report", "--format", "folded"],
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

/// Compare every command's output on one thread and two; `must_succeed`: each must exit 0.
/// Returns the number of lines compared.
fn same_bytes_both_ways(file: &Path, must_succeed: bool) -> usize {
    let mut lines = 0;
    for args in COMMANDS {
        let one = output(args, file, "1");
        let two = output(args, file, "2");
        if must_succeed {
            assert_eq!(
                one.0,
                Some(0),
                "perfkit {} -i {}",
                args.join(" "),
                file.display()
            );
        }
        assert_eq!(one.0, two.0, "exit status of perfkit {}", args.join(" "));
        let (one, two) = (one.1, two.1);
        assert!(
            one == two,
            "perfkit {} -i {}: the two-thread output differs from the single-threaded one \
             (first difference at byte {})",
            args.join(" "),
            file.display(),
            one.iter()
                .zip(&two)
                .position(|(a, b)| a != b)
                .unwrap_or(one.len().min(two.len()))
        );
        lines += one.iter().filter(|&&b| b == b'\n').count();
    }
    lines
}

#[test]
fn generated_files_report_the_same_bytes_on_one_thread_and_two() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gen.data");
    let mut a = generator::Args::new(40_000, file.clone());
    // Enough side-band between samples (processes replaced 4 times each) and enough
    // records for many batches between the threads.
    a.processes = 6;
    a.threads = 4;
    a.paths = 300;
    if let Err(e) = generator::run(a) {
        common::skip(&format!("cannot generate a perf.data file here: {e}"));
        return;
    }
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
