//! A call graph merges an inlined function with the real function of the same name, as
//! perf 6.1's `match_chain` does (a pair with an inlined frame matches by name): `main`
//! calling `work` out of line (through a pointer) and running `work` inlined is one
//! `main → work` branch in perf's children mode, not two. Compared with perf on a
//! `--call-graph dwarf` recording made here.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::Command;

/// Report's text without its last comment line (perf prints a random tip there), up to the
/// first row under 5%: below that, rows of equal weight are ordered by callchain depths
/// that perfkit does not always reproduce for inlined frames (README).
fn heavy(text: &[u8]) -> String {
    let mut out = Vec::new();
    for l in String::from_utf8_lossy(text).lines() {
        if l.starts_with("# (") {
            continue;
        }
        let pct = l
            .split_whitespace()
            .next()
            .and_then(|w| w.strip_suffix('%'))
            .and_then(|w| w.parse::<f64>().ok());
        if pct.is_some_and(|p| p < 5.0) {
            break;
        }
        out.push(l.to_string());
    }
    out.join("\n")
}

#[test]
fn an_inlined_function_and_its_real_copy_are_one_branch() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("twice");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inline_and_called.c");
    if !Command::new("cc")
        .args(["-O2", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success())
    {
        return skip("no C compiler");
    }
    let data = dir.path().join("twice.data");
    let rec = Command::new("perf")
        .args(["record", "-q", "--call-graph", "dwarf", "-o"])
        .arg(&data)
        .arg("--")
        .arg(&bin)
        .arg("3000000")
        .output()
        .unwrap();
    assert!(rec.status.success(), "perf record failed");
    for args in [
        &["report", "--stdio"][..],
        &["report", "--stdio", "--no-children", "-g", "caller"],
    ] {
        let theirs = Command::new("perf")
            .args(args)
            .arg("-i")
            .arg(&data)
            .output()
            .unwrap();
        let ours = perfkit().args(args).arg("-i").arg(&data).output().unwrap();
        assert!(ours.status.success(), "perfkit {args:?}");
        let t = heavy(&theirs.stdout);
        if args.len() == 2 {
            // The premise: both copies ran, and perf shows one branch for them.
            assert!(
                t.contains("work (inlined)"),
                "perf shows no inlined work:\n{t}"
            );
            assert!(
                t.lines().any(|l| l.ends_with("[.] work")),
                "perf shows no real work row:\n{t}"
            );
        }
        assert_eq!(heavy(&ours.stdout), t, "{args:?}");
    }
}
