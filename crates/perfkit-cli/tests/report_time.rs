//! `--time` in perf 6.1's forms for `report` and `script` (absolute `START,STOP` with open
//! ends, several space-separated ranges, `P%/N`, `P%`, `A%-B%` lists, `--reltime` ranges),
//! each compared with perf on one perf-recorded file, and the strings perf refuses refused.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::Path;
use std::process::{Command, Output};

fn run(tool: &str, args: &[&str], file: &Path) -> Output {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.args(args).arg("-i").arg(file).output().expect("run")
}

/// Output without perf's random tip line (perfkit prints its own).
fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn time_ranges_select_what_perf_selects() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "task-clock", "-c", "200000", "-o"])
        .arg(&file)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done",
        ])
        .status()
        .expect("perf record");
    assert!(st.success());
    let times: Vec<String> =
        String::from_utf8_lossy(&run("perf", &["script", "-F", "time"], &file).stdout)
            .lines()
            .map(|l| l.trim().trim_end_matches(':').to_string())
            .collect();
    assert!(times.len() >= 8, "too few samples to slice: {times:?}");
    let n = times.len();
    let (t1, t2, t3, t5) = (&times[1], &times[n / 3], &times[n / 2], &times[n - 2]);
    let specs = [
        format!("{t1},{t2}"),
        format!("{t2},"),
        format!(",{t2}"),
        format!("{t1},{t1}"),
        format!("{t1},{t2} {t3},{t5}"),
        format!("{t1},{t2}  {t3},"),
        "10%/2".into(),
        "25%".into(),
        "10%/1,10%/3,10%/10".into(),
        "0%-10%,30%-40%".into(),
        "50%-100%".into(),
        "20%-10%".into(),
        "10%/1,".into(),
    ];
    let mut kept_some = 0;
    for spec in &specs {
        for args in [
            vec!["script", "-F", "comm,tid,time", "--time", spec],
            vec!["script", "-F", "time", "--reltime", "--time", "0.001,0.005"],
            vec![
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "comm,dso",
                "--time",
                spec,
            ],
            vec!["report", "--stdio", "-n", "--sort", "pid", "--time", spec],
        ] {
            let (theirs, ours) = (run("perf", &args, &file), run("perfkit", &args, &file));
            assert!(
                theirs.status.success() && ours.status.success(),
                "{args:?}: {}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(text(&ours), text(&theirs), "{args:?}");
            kept_some += usize::from(args[0] == "script" && !ours.stdout.is_empty());
        }
    }
    // Most of these keep samples, and none keeps everything by accident.
    assert!(kept_some >= specs.len() / 2, "{kept_some}");
    let all = run("perfkit", &["script", "-F", "time"], &file)
        .stdout
        .len();
    let part = run(
        "perfkit",
        &["script", "-F", "time", "--time", "10%/2"],
        &file,
    )
    .stdout
    .len();
    assert!(part > 0 && part < all, "{part} of {all}");

    // What perf refuses, perfkit refuses, saying what it takes.
    for bad in [
        "x",
        "5",
        "3,2",
        "1.0000000001,",
        &format!("{t2},{t5} {t1},{t3}"),
        "1,2,3",
        "10%/0",
        "60%/2",
        "10%-",
        "10%/2,20%-30%",
        "10%x",
    ] {
        for cmd in ["script", "report"] {
            let theirs = run("perf", &[cmd, "--time", bad], &file);
            assert!(!theirs.status.success(), "perf {cmd} took --time {bad}");
            let out = perfkit()
                .args([cmd, "--time", bad, "-i"])
                .arg(&file)
                .output()
                .unwrap();
            assert!(!out.status.success(), "perfkit {cmd} took --time {bad}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("Invalid time string") && err.contains("START,STOP"),
                "{err}"
            );
        }
    }
}
