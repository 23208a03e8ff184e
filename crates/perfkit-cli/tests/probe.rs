//! `perfkit probe -x`: uprobes defined as perf 6.1 defines them (the same uprobe_events line
//! for the same function), seen by perf (`perf probe -l`), and removed by globs.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip};
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

/// A binary with a function `target_fn`, named uniquely so its probe group is this test's.
fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("t.c");
    std::fs::write(
        &src,
        "__attribute__((noinline)) int target_fn(int x) { return x * 3; }\n\
         int main(int argc, char **argv) { (void)argv; return target_fn(argc) == 3 ? 0 : 1; }\n",
    )
    .unwrap();
    let bin = dir.join(format!("pkprobe{}", std::process::id()));
    let ok = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

#[test]
fn uprobes_are_defined_as_perf_defines_them() {
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
    let group = format!("probe_pkprobe{}", std::process::id());

    run_ok(
        Command::new("perf")
            .args(["probe", "-q", "-x"])
            .arg(&bin)
            .args(["-a", "target_fn", "-a", "target_fn%return"]),
    );
    let theirs = defs(&group);
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    run_ok(
        Command::new("perf")
            .args(["probe", "-q", "-d"])
            .arg(format!("{group}:*")),
    );
    assert!(defs(&group).is_empty());

    let out = run_ok(perfkit().args(["probe", "-x"]).arg(&bin).args([
        "-a",
        "target_fn",
        "-a",
        "target_fn%return",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "  {group}:target_fn (on target_fn in {})",
            bin.display()
        )),
        "{err}"
    );
    assert_eq!(defs(&group), theirs);
    let listed = run_ok(Command::new("perf").args(["probe", "-l"])).stdout;
    assert!(String::from_utf8_lossy(&listed).contains(&format!("{group}:target_fn__return")));

    // A second probe of the same name is refused, or named _1 with -f.
    let out = perfkit()
        .args(["probe", "-q", "-x"])
        .arg(&bin)
        .arg("target_fn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    run_ok(
        perfkit()
            .args(["probe", "-q", "-f", "-x"])
            .arg(&bin)
            .arg("target_fn"),
    );
    assert!(
        defs(&group)
            .iter()
            .any(|l| l.contains(&format!("{group}/target_fn_1 ")))
    );

    run_ok(
        perfkit()
            .args(["probe", "-q", "-d"])
            .arg(format!("{group}:*")),
    );
    assert!(defs(&group).is_empty());
}

#[test]
fn bad_probes_fail_with_perfs_messages() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler (cc)");
    };
    let out = perfkit()
        .args(["probe", "-x"])
        .arg(&bin)
        .arg("no_such_fn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Probe point 'no_such_fn' not found."));
    // Kernel probes: refused with the reason (no kprobes here).
    let out = perfkit()
        .args(["probe", "-a", "vfs_getname"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kernel probes need kprobe_events"));
    let funcs = run_ok(
        perfkit()
            .args(["probe", "-x"])
            .arg(&bin)
            .args(["--funcs", "target*"]),
    )
    .stdout;
    assert_eq!(String::from_utf8_lossy(&funcs), "target_fn\n");
}
