//! Addresses in data (non-executable) mappings, named as perf 6.1 names them (issue 16).
//!
//! `perf record -d` (and `--data-page-size`, `--phys-data`) records the data mmaps too,
//! and perf keeps them in the thread's one map tree: a callchain address that falls in
//! one (a frame-pointer walk through code built without frame pointers, such as ld.so's,
//! lands on the stack or on a library's data) is named by that mapping: its object, the
//! address relative to the file (`map__map_ip`; one to one for the stack, heap and
//! anonymous memory) and a symbol only where the file has one. Recorded here with perf
//! (page faults of `ls`, every one sampled), and perfkit's `script` and `report` are
//! compared with perf's byte for byte.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::Command;

/// Standard output without report's last comment line (perf's random tip).
fn body(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !(l.starts_with("# (Tip:") || l.starts_with("# (Report by")))
        .filter(|l| !l.starts_with("# (Cannot load tips"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's output of `ARGS -i FILE`, asserted equal to perfkit's.
fn same_as_perf(args: &[&str], file: &Path) -> String {
    let theirs = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    assert!(theirs.status.success(), "perf {args:?}");
    let ours = perfkit().args(args).arg("-i").arg(file).output().unwrap();
    assert!(
        ours.status.success(),
        "perfkit {args:?}: {}",
        String::from_utf8_lossy(&ours.stderr)
    );
    let (t, o) = (body(&theirs.stdout), body(&ours.stdout));
    if let Some(at) = t.lines().zip(o.lines()).position(|(a, b)| a != b) {
        panic!(
            "{args:?} differs from perf at line {at}:\n--- perf\n{}\n--- perfkit\n{}",
            t.lines().nth(at).unwrap_or(""),
            o.lines().nth(at).unwrap_or("")
        );
    }
    assert_eq!(
        t.lines().count(),
        o.lines().count(),
        "{args:?}\n{t}\n---\n{o}"
    );
    t
}

#[test]
fn addresses_in_data_mappings_are_named_as_perf_names_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("datamaps.data");
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "page-faults",
            "-c",
            "1",
            "-g",
            "-d",
            "-o",
        ])
        .arg(&data)
        .args(["--", "ls", "/usr"])
        .output()
        .unwrap();
    if !rec.status.success() {
        let err = String::from_utf8_lossy(&rec.stderr).into_owned();
        if err.contains("Permission") || err.contains("paranoid") {
            return skip(&format!("perf may not record page faults here: {err}"));
        }
        panic!("perf record: {err}");
    }
    let perf = same_as_perf(&["script"], &data);
    // The file does what the test is about: ld.so's frame-pointer walk lands on the
    // stack, a data mapping, which perf names (perfkit without data maps printed
    // `[unknown]` there).
    assert!(
        perf.lines().any(|l| l.ends_with(" [unknown] ([stack])")),
        "no callchain address of perf's falls in the stack mapping:\n{perf}"
    );
    same_as_perf(&["script", "-F", "comm,tid,ip,sym,symoff,dso", "-G"], &data);
    for args in [
        &["report", "--stdio", "--no-children"][..],
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"],
        &["report", "--stdio", "--no-children", "-g", "caller"],
    ] {
        let perf = same_as_perf(args, &data);
        assert!(perf.contains("ls "), "{args:?}:\n{perf}");
    }
}
