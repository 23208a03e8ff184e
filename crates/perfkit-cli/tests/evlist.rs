//! `perfkit evlist` prints what `perf evlist` prints for the same files (perf's and
//! perfkit's recordings; plain, `-v`, `-F`, `-g`).

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip, stdout_ok};

#[test]
fn evlist_matches_perf_on_the_same_files() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let group = dir.path().join("group.data");
    let period = dir.path().join("period.data");
    let ours = dir.path().join("perfkit.data");
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", "{task-clock,page-faults}", "-o"])
            .arg(&group)
            .arg("true"),
    );
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-c", "1000", "-e", "task-clock:u", "-o"])
            .arg(&period)
            .arg("true"),
    );
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock,page-faults:u", "-o"])
            .arg(&ours)
            .arg("true"),
    );
    for file in [&group, &period, &ours] {
        for opt in [None, Some("-v"), Some("-F"), Some("-g")] {
            let args = |c: &mut Command| {
                c.arg("evlist").args(opt).arg("-i").arg(file);
            };
            let mut theirs = Command::new("perf");
            args(&mut theirs);
            let mut mine = perfkit();
            args(&mut mine);
            let want = stdout_ok(&mut theirs);
            assert!(!want.is_empty());
            assert_eq!(
                stdout_ok(&mut mine),
                want,
                "evlist {opt:?} -i {}",
                file.display()
            );
        }
    }
    // The group is one line with -g, as perf prints it.
    let g = stdout_ok(perfkit().args(["evlist", "-g", "-i"]).arg(&group));
    assert_eq!(g, "{task-clock,page-faults}\n");
}

#[test]
fn a_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = perfkit()
        .args(["evlist", "-i"])
        .arg(dir.path().join("none.data"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("none.data"));
}

/// `--trace-fields`: each tracepoint's own fields from the file's tracing data, and
/// `(not a tracepoint)` for the others, as perf prints them.
#[test]
fn trace_fields_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !common::sleeper::tracefs_ready() {
        return skip("tracefs is not mounted and cannot be mounted (run as root)");
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs_file = dir.path().join("perf.data");
    let ours_file = dir.path().join("perfkit.data");
    let events = "sched:sched_switch,sched:sched_process_exit,task-clock";
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", events, "-o"])
            .arg(&theirs_file)
            .arg("true"),
    );
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", events, "-o"])
            .arg(&ours_file)
            .arg("true"),
    );
    for file in [&theirs_file, &ours_file] {
        let want = stdout_ok(
            Command::new("perf")
                .args(["evlist", "--trace-fields", "-i"])
                .arg(file),
        );
        assert!(
            want.contains("sched:sched_switch: trace_fields: prev_comm,prev_pid,"),
            "{want}"
        );
        assert!(want.contains("task-clock: (not a tracepoint)"), "{want}");
        let got = stdout_ok(perfkit().args(["evlist", "--trace-fields", "-i"]).arg(file));
        assert_eq!(got, want, "{}", file.display());
    }
}
