//! `perfkit test -w`: perf's test workloads, profiled by perf: samples land in the
//! workload's own functions, `thloop` runs two threads, `sqrtloop` a child process.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip, stdout_ok};
use std::collections::BTreeSet;

/// `perf script -F FIELDS` lines of `perf record -e task-clock:u -- perfkit test -w ARGS`.
fn profile(workload: &[&str], fields: &str) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", "task-clock:u", "-o"])
            .arg(&data)
            .arg("--")
            .arg(env!("CARGO_BIN_EXE_perfkit"))
            .args(["test", "-w"])
            .args(workload),
    );
    stdout_ok(
        Command::new("perf")
            .args(["script", "-F", fields, "-i"])
            .arg(&data),
    )
    .lines()
    .map(|l| l.trim().to_owned())
    .collect()
}

#[test]
fn loops_spend_their_samples_in_their_own_functions() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    for (w, sym) in [("noploop", "noploop"), ("leafloop", "leaf")] {
        let syms = profile(&[w, "1"], "ip,sym");
        let hits = syms.iter().filter(|s| s.contains(sym)).count();
        assert!(
            hits * 2 > syms.len(),
            "{w}: {hits} of {} samples in {sym}: {syms:?}",
            syms.len()
        );
    }
}

#[test]
fn thloop_runs_two_threads_and_sqrtloop_a_child() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let tids: BTreeSet<String> = profile(&["thloop"], "tid").into_iter().collect();
    assert_eq!(tids.len(), 2, "{tids:?}");
    let lines = profile(&["sqrtloop"], "pid,ip,sym");
    let pids: BTreeSet<&str> = lines
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(pids.len(), 2, "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("sqrt_child")), "{lines:?}");
}

#[test]
fn a_bad_workload_or_argument_is_refused() {
    // perf 6.1's words and exit status (255).
    let out = perfkit().args(["test", "-w", "bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(255));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("No workload found: bogus"), "{err}");
    if have_perf() {
        let p = std::process::Command::new("perf")
            .args(["test", "-w", "bogus"])
            .output()
            .unwrap();
        assert_eq!(p.status.code(), out.status.code());
        assert!(String::from_utf8_lossy(&p.stderr).contains("No workload found: bogus"));
    }
    let out = perfkit()
        .args(["test", "-w", "noploop", "x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a number"));
    run_ok(perfkit().args(["test", "-w", "brstack"]));
}
