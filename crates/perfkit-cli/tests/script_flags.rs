//! `perfkit script` filters and time formats against `perf script` on the same files (one
//! recorded by perf, one by perfkit, with callchains): `--ns`, `--reltime`, `--deltatime`,
//! `-G`, `--comm`, `--pid`, `--tid`, `--time` (absolute and percent), `-F +f`, `-F -f`,
//! `-F type:fields`, and perf's errors for a missing CPU field.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::{Command, Stdio};

fn record(tool: &str, path: &Path) {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let st = cmd
        .args(["record", "-q", "-g", "-e", "task-clock", "-o"])
        .arg(path)
        .args(["--", "sh", "-c", "sleep 0.02; true"])
        .stderr(Stdio::null())
        .status()
        .expect("record");
    assert!(st.success(), "{tool} record");
}

fn script(tool: &str, args: &[String], file: &Path) -> (bool, String, String) {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd
        .arg("script")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The sample lines up to the event name: callchains hold frames perf names differently
/// now and then (PLT stubs, symbol aliases, garbage past the end of a frame-pointer chain),
/// which the flags tested here do not touch (`report.rs` compares the frames).
fn heads(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('\t'))
        .map(|l| l.find("task-clock:").map_or(l, |i| &l[..i + 11]))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn filters_and_time_formats_match_perf_script() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    for tool in ["perf", "perfkit"] {
        let file = dir.path().join(format!("{tool}.data"));
        record(tool, &file);
        let (_, times, _) = script("perf", &["-F".into(), "time".into()], &file);
        let times: Vec<&str> = times
            .lines()
            .map(|l| l.trim().trim_end_matches(':'))
            .collect();
        assert!(times.len() >= 3, "{times:?}");
        let (_, tids, _) = script("perf", &["-F".into(), "tid".into()], &file);
        let tid = tids.lines().last().unwrap().trim().to_string();
        let window = format!("{},{}", times[1], times[times.len() - 2]);
        let cases: Vec<Vec<&str>> = vec![
            vec![],
            vec!["--ns"],
            vec!["--reltime"],
            vec!["--deltatime"],
            vec!["--reltime", "--ns"],
            vec!["-G"],
            vec!["--comm", "sleep"],
            vec!["--comm", "sh"],
            vec!["--pid", "1"],
            vec!["--tid", &tid],
            vec!["--time", &window],
            vec!["--time", "10%/2"],
            vec!["--time", "0%-50%"],
            vec!["-F", "+period"],
            vec!["-F", "-period,-dso"],
            vec!["-F", "sw:comm,tid,time"],
            vec!["-F", "comm,time", "--deltatime"],
            vec!["-F", "tid,time,event"],
        ];
        for args in cases {
            let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            let (ok_theirs, theirs, _) = script("perf", &args, &file);
            let (ok_ours, ours, err) = script("perfkit", &args, &file);
            assert!(ok_theirs && ok_ours, "script {args:?}: {err}");
            assert_eq!(
                heads(&ours),
                heads(&theirs),
                "script {args:?} on {tool}'s file"
            );
        }
        // A filter that keeps something keeps less than everything.
        let (_, all, _) = script("perfkit", &[], &file);
        let (_, part, _) = script("perfkit", &["--time".into(), window.clone()], &file);
        assert!(!part.is_empty() && part.len() < all.len());
        // perf's errors for CPU fields the file lacks.
        let (ok, _, err) = script("perfkit", &["-C".into(), "0".into()], &file);
        assert!(
            !ok && err.contains("File does not contain CPU events. Remove -C option to proceed.")
        );
        let (ok, _, err) = script("perfkit", &["-F".into(), "tid,cpu".into()], &file);
        assert!(!ok && err.contains("do not have CPU attribute set. Cannot print 'cpu' field."));
    }
    let out = perfkit()
        .args(["script", "--time", "5,3", "-i"])
        .arg(dir.path().join("perf.data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid time string"));
}
