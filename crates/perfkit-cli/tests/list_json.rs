//! `perfkit list -j`: perf's JSON list (perf gained `list -j` after 6.1, whose `perf list`
//! refuses it): one array, perf's keys in perf's order, the events perf 6.1 names for the
//! same kind and the metrics perf 6.1 lists.

mod common;

use common::{have_perf, perfkit, run_ok, skip};
use serde_json::Value;

const EVENT_KEYS: [&str; 6] = [
    "Unit",
    "EventName",
    "EventAlias",
    "ScaleUnit",
    "EventType",
    "BriefDescription",
];
const METRIC_KEYS: [&str; 4] = [
    "MetricGroup",
    "MetricName",
    "MetricExpr",
    "BriefDescription",
];

/// The array, after checking perf's layout: `[`, objects with one tab-indented key per
/// line in perf's order (events' keys or metrics' keys), `]`.
fn perf_json(args: &[&str]) -> Vec<Value> {
    let out = run_ok(perfkit().arg("list").arg("-j").args(args));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("[\n") && text.ends_with("]\n"), "{text}");
    let mut at: Option<usize> = None;
    let mut order: &[&str] = &EVENT_KEYS;
    for line in text.lines() {
        if line == "{" || line == ",{" || line.ends_with('{') {
            at = None;
            continue;
        }
        let Some(k) = line.strip_prefix("\t\"").and_then(|l| l.split('"').next()) else {
            continue;
        };
        if at.is_none() {
            order = if k.starts_with("Metric") {
                &METRIC_KEYS
            } else {
                &EVENT_KEYS
            };
        }
        let i = order
            .iter()
            .position(|o| *o == k)
            .unwrap_or_else(|| panic!("key {k}"));
        assert!(at.is_none_or(|a| i > a), "{line}: not in perf's order");
        at = Some(i);
    }
    serde_json::from_str::<Vec<Value>>(&text).unwrap()
}

fn raw_dump(args: &[&str]) -> Vec<String> {
    let out = run_ok(
        assert_cmd::Command::new("perf")
            .args(["list", "--raw-dump"])
            .args(args),
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

#[test]
fn software_events_are_perfs_in_perfs_json() {
    let evs = perf_json(&["sw"]);
    for e in &evs {
        assert_eq!(e["EventType"], "Software event", "{e}");
    }
    let cs = evs
        .iter()
        .find(|e| e["EventName"] == "context-switches")
        .unwrap();
    assert_eq!(cs["EventAlias"], "cs");
    let ours: Vec<String> = evs
        .iter()
        .map(|e| e["EventName"].as_str().unwrap().to_owned())
        .collect();
    if !have_perf() {
        return skip("the comparison with perf: perf is not installed");
    }
    // perf 6.1 has no -j: the format is the newer perf's.
    let p = std::process::Command::new("perf")
        .args(["list", "-j"])
        .output()
        .unwrap();
    assert!(!p.status.success());
    let theirs = raw_dump(&["sw"]);
    let tools = ["duration_time", "user_time", "system_time"];
    for n in &theirs {
        assert!(
            ours.contains(n) || tools.contains(&n.as_str()),
            "perf lists {n}"
        );
    }
    for n in &ours {
        assert!(theirs.contains(n), "perf does not list {n}");
    }
}

#[test]
fn metrics_are_perfs_in_perfs_json() {
    let ms = perf_json(&["metric"]);
    for m in &ms {
        assert!(m["MetricExpr"].as_str().is_some_and(|e| !e.is_empty()));
    }
    // The whole list ends with the same metrics, after the events.
    let all = perf_json(&["--no-probe", "--no-pfm"]);
    let tail: Vec<&Value> = all
        .iter()
        .filter(|o| o.get("MetricName").is_some())
        .collect();
    assert_eq!(tail.len(), ms.len());
    assert!(all.iter().any(|o| o["EventType"] == "Hardware event"));
    if !have_perf() {
        return skip("the comparison with perf: perf is not installed");
    }
    let mut theirs = raw_dump(&["metrics"]);
    let mut ours: Vec<String> = ms
        .iter()
        .map(|m| m["MetricName"].as_str().unwrap().to_owned())
        .collect();
    theirs.sort();
    theirs.dedup();
    ours.sort();
    ours.dedup();
    assert_eq!(ours, theirs);
}
