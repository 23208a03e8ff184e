//! `perfkit probe -x BIN '[GROUP:]EVENT=FUNC'`: a probe named into a group of the user's
//! choosing, as perf 6.1 names it: the same messages, exit status and `uprobe_events` lines
//! for the same specs (a return probe's name gets `__return`, a forced duplicate `_N` on the
//! bare name, a group or event that is not a C name perf's semantic error), and the event
//! counts the calls of the function.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, skip};
use std::path::Path;

const EVENTS: &str = "/sys/kernel/tracing/uprobe_events";

/// Lines of uprobe_events for `group`.
fn defs(group: &str) -> Vec<String> {
    std::fs::read_to_string(EVENTS)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!(":{group}/")))
        .map(str::to_owned)
        .collect()
}

/// A binary calling `target_fn` once per argument.
fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("t.c");
    std::fs::write(
        &src,
        "__attribute__((noinline)) int target_fn(int x) { return x * 3; }\n\
         int main(int argc, char **argv) { int s = 0; for (int i = 1; i < argc; i++) \
         s += target_fn(i); (void)argv; return s == 0; }\n",
    )
    .unwrap();
    let bin = dir.join(format!("pkgroup{}", std::process::id()));
    let ok = std::process::Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// (status, stderr, the group's uprobe_events lines) after `TOOL probe ARGS` for each
/// of `specs` in turn, the group's probes deleted at the end.
fn define(
    tool: &mut dyn FnMut() -> Command,
    bin: &Path,
    specs: &[&[&str]],
    group: &str,
) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for spec in specs {
        let o = tool()
            .args(["probe", "-x"])
            .arg(bin)
            .args(*spec)
            .output()
            .unwrap();
        out.push((
            o.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        ));
    }
    for l in defs(group) {
        out.push((0, l));
    }
    std::process::Command::new("perf")
        .args(["probe", "-q", "-d"])
        .arg(format!("{group}:*"))
        .output()
        .unwrap();
    assert!(defs(group).is_empty());
    out
}

#[test]
fn group_event_names_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !Path::new(EVENTS).exists() {
        return skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler (cc)");
    };
    let pid = std::process::id();
    // Event names are unique across groups in perf's check: make them this test's own.
    let (group, ev, ret) = (
        format!("pkgrp{pid}"),
        format!("ev{pid}"),
        format!("ret{pid}"),
    );
    let specs: Vec<Vec<String>> = vec![
        vec![(format!("{group}:{ev}=target_fn"))],
        // The same name again, in another group: refused (status 239).
        vec![(format!("other{pid}:{ev}=target_fn"))],
        vec![
            (format!("{group}:{ret}=target_fn%return")),
            "$retval".into(),
        ],
        vec!["-f".into(), (format!("{group}:{ret}=target_fn%return"))],
        vec!["-a".into(), format!("{group}:x{pid}=target_fn %di")],
        vec![format!("1bad:e{pid}=target_fn")],
        vec![format!("{group}:b-d=target_fn")],
        vec![format!(":e{pid}=target_fn")],
        vec![format!("{group}:=target_fn")],
    ];
    let specs: Vec<Vec<&str>> = specs
        .iter()
        .map(|s| s.iter().map(String::as_str).collect())
        .collect();
    let specs: Vec<&[&str]> = specs.iter().map(Vec::as_slice).collect();
    let theirs = define(&mut || Command::new("perf"), &bin, &specs, &group);
    let ours = define(&mut perfkit, &bin, &specs, &group);
    assert_eq!(ours, theirs);
    // Real values: three definitions, the named ones, in the named group.
    let lines: Vec<&str> = theirs
        .iter()
        .filter(|(_, l)| l.starts_with(['p', 'r']) && l.contains(&format!(":{group}/")))
        .map(|(_, l)| l.as_str())
        .collect();
    assert_eq!(lines.len(), 4, "{theirs:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("p:{group}/x{pid} ")) && l.ends_with(" arg1=%di"))
    );
    assert!(
        lines[0].starts_with(&format!("p:{group}/{ev} ")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("r:{group}/{ret}__return ")))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("r:{group}/{ret}_1 ")))
    );
    let statuses: Vec<i32> = theirs.iter().take(specs.len()).map(|x| x.0).collect();
    assert_eq!(statuses, [0, 239, 0, 0, 0, 234, 234, 234, 234]);

    // The event perfkit named counts each call of the function: 3 calls, 3 hits.
    let o = perfkit()
        .args(["probe", "-q", "-x"])
        .arg(&bin)
        .arg(format!("{group}:{ev}=target_fn"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let st = perfkit()
        .args(["stat", "-x,", "-e"])
        .arg(format!("{group}:{ev}"))
        .arg(&bin)
        .args(["a", "b", "c"])
        .output()
        .unwrap();
    perfkit()
        .args(["probe", "-q", "-d"])
        .arg(format!("{group}:*"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&st.stderr);
    let count = err
        .lines()
        .find(|l| l.contains(&format!("{group}:{ev}")))
        .and_then(|l| l.split(',').next())
        .and_then(|c| c.parse::<u64>().ok());
    assert_eq!(count, Some(3), "{err}");
    assert!(defs(&group).is_empty());
}
