//! `record -a -e sched:sched_switch -o -` labels each sample with the name its task had at
//! that moment, never one it took later (issue 16, item 5b).
//!
//! The cause was the second listing of `/proc` that names the tasks started while the first
//! was read: it ran after counting started, so a task that had renamed itself meanwhile got
//! a COMM (time 0, before every sample) with its later name. A spawner that keeps starting
//! children, one at a time, each renaming itself every 0.5 ms (`st000`, `st001`, ...) and
//! sleeping five times under each name (a sched_switch each time, whose `prev_comm` is the
//! name the kernel had then), makes the child alive when counting starts such a task, with
//! samples before its next rename, in most recordings. The check: for every switch-out sample of a
//! child, the name printed is `prev_comm` or, at worst, an earlier name (a rename between
//! the reading and the start of counting is seen by neither perf nor perfkit), or none yet
//! (`:TID`); never a later one. Both `perf script` and `perfkit script` read the stream, and
//! print the same lines for the spawner's tasks.

mod common;

use common::have_perf;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const SPAWNER: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void nap(long ns) { struct timespec t = {0, ns}; nanosleep(&t, 0); }
int main(int argc, char **argv) {
    double secs = atof(argv[1]);
    struct timespec s, n;
    clock_gettime(CLOCK_MONOTONIC, &s);
    prctl(PR_SET_NAME, "spawner");
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &n);
        if ((n.tv_sec - s.tv_sec) + (n.tv_nsec - s.tv_nsec) / 1e9 > secs) break;
        pid_t p = fork();
        if (p == 0) {
            char name[16];
            for (int i = 0; i < 60; i++) {
                snprintf(name, sizeof name, "st%03d", i);
                prctl(PR_SET_NAME, name);
                for (int j = 0; j < 5; j++) nap(100000);
            }
            _exit(0);
        }
        waitpid(p, 0, 0);
    }
    return 0;
}
"#;

/// perf, tracefs and a C compiler, or a printed reason to skip.
fn ready() -> bool {
    if !have_perf() {
        common::skip("perf is not installed");
        return false;
    }
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        common::skip("tracefs is not mounted and cannot be (needs root)");
        return false;
    }
    true
}

fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("spawner.c");
    std::fs::write(&src, SPAWNER).unwrap();
    let bin = dir.join("spawner");
    let ok = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        common::skip("no working C compiler (cc) to build the spawner");
        return None;
    }
    Some(bin)
}

/// The position of a child's name in its sequence of names: `spawner` (before its first
/// rename), then `st000`, `st001`, ...
fn stage(name: &str) -> Option<i32> {
    if name == "spawner" {
        return Some(-1);
    }
    let n = name.strip_prefix("st")?;
    (n.len() == 3).then(|| n.parse().ok())?
}

/// The switch-out samples of the spawner's children in `script` output: (label, prev_comm,
/// the line).
fn child_switches(script: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for l in script.lines() {
        let Some((head, rest)) = l.split_once(": sched:sched_switch: prev_comm=") else {
            continue;
        };
        let Some((prev_comm, rest)) = rest.split_once(" prev_pid=") else {
            continue;
        };
        let prev_pid = rest.split_whitespace().next().unwrap_or("");
        // `COMM TID [CPU] TIME`, the name right-aligned (and possibly with spaces).
        let mut f: Vec<&str> = head.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        f.truncate(f.len() - 2);
        let tid = f.pop().unwrap();
        let label = f.join(" ");
        if tid == prev_pid && stage(prev_comm).is_some() {
            out.push((label, prev_comm.to_string(), l.to_string()));
        }
    }
    out
}

fn script(tool: &str, stream: &Path) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd
        .args(["script", "-i", "-"])
        .stdin(std::fs::File::open(stream).unwrap())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{tool} script failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn pipe_recordings_never_label_a_sample_with_a_later_name() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(spawner) = build(dir.path()) else {
        return;
    };
    let mut bg = Command::new(&spawner).arg("60").spawn().unwrap();
    let mut checked = 0;
    let mut failures = Vec::new();
    for run in 0..6 {
        let stream = dir.path().join(format!("run{run}.pipe"));
        let st = Command::new(env!("CARGO_BIN_EXE_perfkit"))
            .args(["record", "-q", "-a", "-e", "sched:sched_switch", "-o", "-"])
            .args(["--", "sleep", "0.05"])
            .stdout(std::fs::File::create(&stream).unwrap())
            .stderr(Stdio::null())
            .status()
            .unwrap();
        assert!(st.success());
        let theirs = child_switches(&script("perf", &stream));
        let ours = child_switches(&script("perfkit", &stream));
        assert_eq!(
            ours.iter().map(|s| &s.2).collect::<Vec<_>>(),
            theirs.iter().map(|s| &s.2).collect::<Vec<_>>(),
            "perfkit script labels the spawner's samples as perf script does"
        );
        for (label, prev_comm, line) in &theirs {
            checked += 1;
            if let (Some(l), Some(p)) = (stage(label), stage(prev_comm))
                && l > p
            {
                failures.push(line.clone());
            } else if stage(label).is_none() && !label.starts_with(':') {
                failures.push(line.clone());
            }
        }
    }
    let _ = bg.kill();
    let _ = bg.wait();
    assert!(
        checked > 0,
        "no switch-out sample of the spawner's children"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} samples carry a name their task took later:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
