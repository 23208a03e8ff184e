//! `perfkit diff` against `perf diff` on two recordings of one workload built two ways
//! (-O0 and -O2, same file name), and its differential flamegraph and folded exports.

mod common;

use common::{have_perf, hotloop, perfkit, run_ok, skip, stdout_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Record the -O0 build with perf and the -O2 build with perfkit (perf reads both).
fn recordings(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    if !have_perf() {
        skip("perf is not installed");
        return None;
    }
    let o0 = hotloop::build(dir, "-O0")?;
    let o2 = hotloop::build(dir, "-O2")?;
    let (old, new) = (dir.join("old.data"), dir.join("new.data"));
    let st = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&old)
        .arg("--")
        .arg(&o0)
        .arg("60000000")
        .status()
        .expect("perf record");
    assert!(st.success());
    run_ok(
        perfkit()
            .args(["record", "-q", "-o"])
            .arg(&new)
            .arg("--")
            .arg(&o2)
            .arg("100000000"),
    );
    Some((old, new))
}

fn perf_diff(args: &[&str], old: &Path, new: &Path) -> String {
    let out = Command::new("perf")
        .arg("diff")
        .args(args)
        .arg(old)
        .arg(new)
        .output()
        .expect("perf diff");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect()
}

#[test]
fn diff_matches_perf_diff_for_each_computation() {
    let dir = tempfile::tempdir().unwrap();
    let Some((old, new)) = recordings(dir.path()) else {
        return;
    };
    for args in [
        &[][..],
        &["-c", "delta"],
        &["-c", "ratio"],
        &["-c", "wdiff:1,2"],
        &["-p"],
        &["-s", "comm"],
        &["-s", "dso,sym"],
        &["-s", "pid"],
        &["-s", "comm,dso"],
        &["-F"],
        &["-F", "-c", "ratio"],
        &["-F", "-c", "wdiff:1,2"],
        &["-p", "-F"],
        &["-b"],
        &["-b", "-p"],
        &["-b", "-c", "ratio"],
        &["-o", "0"],
        &["-p", "-o", "0"],
        &["--percentage", "absolute", "-d", "hotloop"],
        &["--percentage", "relative", "-d", "hotloop"],
        &["--percentage", "relative", "-S", "hot,cold"],
        &["-s", "pid", "-F"],
    ] {
        let theirs = perf_diff(args, &old, &new);
        let ours = stdout_ok(perfkit().arg("diff").args(args).arg(&old).arg(&new));
        let (mut t, mut o) = (rows(&theirs), rows(&ours));
        assert!(!t.is_empty(), "{theirs}");
        // The same leading rows in the same order (hot and cold of both builds match by
        // name), and the same rows overall (ties may order differently).
        let lead = t.len().min(2);
        assert_eq!(
            t[..lead],
            o[..lead.min(o.len())],
            "{args:?}\nperf:\n{theirs}\nperfkit:\n{ours}"
        );
        t.sort_unstable();
        o.sort_unstable();
        assert_eq!(t, o, "{args:?}\nperf:\n{theirs}\nperfkit:\n{ours}");
        let headers = |s: &str| -> Vec<String> {
            s.lines()
                .filter(|l| {
                    l.starts_with("# ") && (l.contains("Baseline") || l.contains("..."))
                        || l.starts_with("# Event")
                })
                .map(str::to_string)
                .collect()
        };
        assert_eq!(headers(&theirs), headers(&ours), "{args:?}");
    }
    // hot leads both builds; its ratio is a real number between the builds' periods.
    let ratio = stdout_ok(perfkit().args(["diff", "-c", "ratio"]).arg(&old).arg(&new));
    let hot = ratio
        .lines()
        .find(|l| l.ends_with("[.] hot"))
        .expect("hot row");
    let r: f64 = hot.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(r > 0.0, "{hot}");
}

#[test]
fn diff_exports_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let Some((old, new)) = recordings(dir.path()) else {
        return;
    };
    let folded = stdout_ok(
        perfkit()
            .args(["diff", "--format", "folded", "-q"])
            .arg(&old)
            .arg(&new),
    );
    let hot = folded
        .lines()
        .find(|l| l.starts_with("hotloop;hot "))
        .unwrap_or_else(|| panic!("{folded}"));
    let n: Vec<u64> = hot
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(n[0] > 0 && n[1] > 0, "hot sampled in both builds: {hot}");
    let svg = dir.path().join("diff.svg");
    run_ok(
        perfkit()
            .args(["diff", "--format", "flamegraph", "--output"])
            .arg(&svg)
            .arg(&old)
            .arg(&new),
    );
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(
        text.starts_with("<?xml") && text.contains(">hot "),
        "an SVG naming hot"
    );
    // Differential colours: shades of red (grew) or blue (shrank), not the flame palette.
    assert!(
        text.contains("rgb(255,") || text.contains(",255)"),
        "differential colouring"
    );
    for (args, says) in [
        (&["-c", "bogus"][..], "delta-abs"),
        (&["-s", "nokey"], "unknown key"),
        (&["--format", "pdf"], "flamegraph"),
        (&["-o", "2"], "give 0 (the baseline) to 1"),
        (&["--percentage", "some"], "relative or absolute"),
    ] {
        let out = perfkit()
            .arg("diff")
            .args(args)
            .arg(&old)
            .arg(&new)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{args:?}"
        );
    }
    let out = perfkit()
        .args(["diff", "/nonexistent/old.data"])
        .arg(&new)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
}
