//! `perfkit list --raw-dump`, `-o FILE`, `--details`, `--deprecated`, against perf 6.1's
//! list of the same events.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, skip, stdout_ok};
use std::collections::BTreeSet;

#[test]
fn raw_dump_names_perfs_software_events() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let ours = stdout_ok(perfkit().args(["list", "--raw-dump", "sw"]));
    assert!(ours.ends_with(' ') && !ours.contains('\n'), "{ours:?}");
    let ours: BTreeSet<&str> = ours.split_whitespace().collect();
    let theirs = stdout_ok(Command::new("perf").args(["list", "--raw-dump", "sw"]));
    let theirs: BTreeSet<&str> = theirs.split_whitespace().collect();
    assert!(ours.is_subset(&theirs), "{ours:?} not in {theirs:?}");
    let software = stdout_ok(Command::new("perf").args(["list", "sw"]));
    for line in software.lines().filter(|l| l.contains("[Software event]")) {
        let name = line.split_whitespace().next().unwrap();
        assert!(ours.contains(name), "perf's {name} missing from {ours:?}");
    }
}

/// Byte for byte perf 6.1's `--raw-dump` of each kind: what does not open left out, names
/// sorted, the tool events after the software ones, tracepoints with an `id` only.
#[test]
fn raw_dump_of_each_kind_is_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    for kind in ["sw", "hw", "cache", "pmu", "tracepoint"] {
        let ours = stdout_ok(perfkit().args(["list", "--raw-dump", kind]));
        let theirs = stdout_ok(Command::new("perf").args(["list", "--raw-dump", kind]));
        assert_eq!(ours, theirs, "list --raw-dump {kind}");
    }
}

#[test]
fn output_file_details_and_deprecated() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("list.txt");
    let shown = stdout_ok(perfkit().args(["list", "--no-probe", "sw"]));
    let out = stdout_ok(
        perfkit()
            .args(["list", "--no-probe", "-o"])
            .arg(&file)
            .arg("sw"),
    );
    assert_eq!(out, "");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), shown);
    let deprecated = stdout_ok(perfkit().args(["list", "--no-probe", "--deprecated", "sw"]));
    assert_eq!(deprecated, shown);
    let details = stdout_ok(perfkit().args(["list", "--no-probe", "--details", "task-clock"]));
    let lines: Vec<&str> = details.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("task-clock"))
        .unwrap();
    assert_eq!(lines[at + 1].trim(), "[type=1,config=0x1]", "{details}");
}

/// perf's metric kinds: perf's headings and perf's lists (perfkit's own metric table for
/// this CPU, or the headings alone and a note where it has none); SDT: a note, not "no
/// events match".
#[test]
fn metric_kinds_print_perfs_headings() {
    for (kind, heading) in [
        ("metric", "\nMetrics:\n\n"),
        ("metricgroup", "\nMetric Groups:\n\n"),
    ] {
        let out = perfkit().args(["list", kind]).output().unwrap();
        assert!(out.status.success());
        let ours = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(ours.starts_with(heading), "{ours:?}");
        if have_perf() {
            let theirs = stdout_ok(Command::new("perf").args(["list", kind]));
            assert_eq!(ours, theirs, "perfkit list {kind} differs from perf's");
        }
    }
    let out = perfkit().args(["list", "sdt"]).output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("SDT events"));
}
