//! `perfkit list` as a user runs it: kinds and filters, availability that matches what
//! `perfkit stat` can open, JSON for tools, and agreement with `perf list` on the names.

mod common;

use common::perfkit;
use serde_json::Value;

fn stdout(args: &[&str]) -> String {
    let out = perfkit().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn json(args: &[&str]) -> Value {
    serde_json::from_str(&stdout(args)).unwrap()
}

fn tracefs() -> Option<&'static str> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .into_iter()
        .find(|p| std::path::Path::new(p).join("events").is_dir())
}

#[test]
fn every_kind_has_its_heading_and_software_events_open() {
    let text = stdout(&["list", "--no-pfm"]);
    for h in [
        "Hardware events:",
        "Software events:",
        "Hardware cache events:",
        "Raw hardware event descriptors:",
        "Hardware breakpoints:",
        "User-space probes:",
    ] {
        assert!(text.contains(h), "missing {h}");
    }
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no line for {name}"))
            .to_string()
    };
    assert!(line("context-switches OR cs").contains("context switches"));
    assert!(!line("task-clock").contains('<'), "task-clock opens here");
    assert!(text.contains("mem:<addr>[/len][:access]"));
    assert!(text.contains("uprobe:<binary>:<symbol>[+offset]"));
}

/// The catalogue's availability is what `perfkit stat` finds: an event marked available
/// counts, one marked not supported is `<not supported>` in stat.
#[test]
fn availability_agrees_with_stat() {
    let v = json(&["list", "--json-full", "hw"]);
    let evs = v["events"].as_array().unwrap();
    assert_eq!(evs.len(), 10);
    for e in evs {
        let name = e["name"].as_str().unwrap();
        let out = perfkit()
            .args(["stat", "-x,", "-e", name, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let unsupported = err.contains("<not supported>");
        match e["available"]["status"].as_str().unwrap() {
            "yes" => assert!(!unsupported, "{name}: list says yes, stat: {err}"),
            "no" => assert!(unsupported, "{name}: list says no, stat: {err}"),
            s => panic!("{name}: {s}"),
        }
    }
}

#[test]
fn filters_by_kind_glob_and_substring() {
    let sw = json(&["list", "--json-full", "sw"]);
    let sw = sw["events"].as_array().unwrap();
    assert_eq!(sw.len(), 12);
    assert!(sw.iter().all(|e| e["kind"] == "software"));
    assert!(sw.iter().all(|e| e["available"]["status"] == "yes"));
    let cs = sw.iter().find(|e| e["name"] == "context-switches").unwrap();
    assert_eq!(cs["aliases"][0], "cs");
    assert_eq!(cs["encoding"], "type=1,config=0x3");

    // Two filters: their union, once each.
    let v = json(&["list", "--json-full", "--no-pfm", "faults", "cpu-clock"]);
    let names: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "cpu-clock",
            "page-faults",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults"
        ]
    );

    let Some(t) = tracefs() else {
        common::skip("the tracepoint part: tracefs is not mounted");
        return;
    };
    let text = stdout(&["list", "sched:sched_sw*"]);
    let mut expect: Vec<String> = std::fs::read_dir(format!("{t}/events/sched"))
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("sched_sw"))
        .map(|n| format!("sched:{n}"))
        .collect();
    expect.sort();
    let got: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(got, expect);
    assert!(text.starts_with("Tracepoints:\n"));
}

/// perf's names are ours: every software event and tracepoint `perf list` prints here is in
/// perfkit's list under the same name.
#[test]
fn perf_list_names_are_all_known() {
    let Ok(out) = std::process::Command::new("perf")
        .args(["list", "sw", "tracepoint"])
        .output()
    else {
        common::skip("perf is not installed");
        return;
    };
    let theirs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("[Software event]") || l.contains("[Tracepoint event]"))
        .map(|l| l.split('[').next().unwrap().trim().to_string())
        .collect();
    assert!(theirs.len() >= 12, "{theirs:?}");
    let ours = stdout(&["list", "--no-probe", "--no-pfm", "--no-desc"]);
    let ours: std::collections::HashSet<&str> = ours
        .lines()
        .filter(|l| l.starts_with("  "))
        .map(|l| l.trim())
        .collect();
    for n in &theirs {
        assert!(
            ours.contains(n.as_str()),
            "perf lists `{n}`, perfkit does not"
        );
    }
}

#[test]
fn an_event_that_does_not_exist_points_to_list() {
    let out = perfkit()
        .args(["stat", "-e", "cylces", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did you mean `cycles`"), "{err}");
    assert!(err.contains("perfkit list"), "{err}");
    let out = perfkit()
        .args(["list", "no-such-event-anywhere"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "no events match"
    );
}
