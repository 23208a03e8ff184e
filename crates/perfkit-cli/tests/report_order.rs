//! `report --no-children -g none` rows exactly as perf prints them, in perf's order: rows
//! of equal weight sorted key by key as perf's sort functions compare them (symbol names
//! without the `[k]`/`[.]` mark, unnamed addresses after named symbols, rows without a DSO
//! last), unnamed addresses relative to their file, PLT stubs named, C++ names as perf
//! demangles them.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::Command;

/// The rows of the shell and the workload (which alias perf picks among a library's or the
/// kernel's symbols at one address is another matter, and where samples land in them
/// varies from run to run).
fn rows(out: std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains('%') && !l.starts_with('#'))
        .filter(|l| l.contains(" dash ") || l.contains(" wl "))
        // The workload's own PLT stubs: perf 6.1 names some `_init` (its symbol tree's
        // shape stretches `_init` over them, a perf bug the README lists), perfkit
        // `name@plt`; which stub a sample hits varies from run to run.
        .filter(|l| !(l.contains(" wl ") && (l.ends_with("] _init") || l.ends_with("@plt"))))
        .map(str::to_string)
        .collect()
}

fn same_rows_as_perf(file: &Path) {
    let args = ["report", "--stdio", "--no-children", "-g", "none", "-i"];
    let ours = rows(perfkit().args(args).arg(file).output().unwrap());
    let theirs = rows(Command::new("perf").args(args).arg(file).output().unwrap());
    assert!(!theirs.is_empty());
    for (i, (a, b)) in ours.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "row {i} of {}", file.display());
    }
    assert_eq!(ours.len(), theirs.len(), "{}", file.display());
}

#[test]
fn rows_and_their_order_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("wl");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
    assert!(
        Command::new("cc")
            .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
            .arg(&wl)
            .arg(&src)
            .status()
            .unwrap()
            .success()
    );
    // A stripped shell (unnamed addresses, PLT stubs) that execs the workload.
    let data = dir.path().join("sh.data");
    let script = format!(
        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec {} spin 200",
        wl.display()
    );
    let st = Command::new("perf")
        .args(["record", "-q", "-g", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    assert!(st.status.success());
    same_rows_as_perf(&data);
}
