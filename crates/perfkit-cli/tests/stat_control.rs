//! `--control fifo:CTL,ACK` / `fd:CTL,ACK` with `-D -1`: counting starts disabled and
//! follows the `enable`/`disable` commands written to CTL, each acknowledged on ACK, as
//! perf 6.1 does (its messages, its `ack\n\0`).

mod common;

use common::{have_perf, skip};
use std::io::{BufRead, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A command that keeps a CPU busy for about `secs` of wall time.
fn spin(secs: f64) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!(
            "end=$(($(date +%s%N) + {})); while [ $(date +%s%N) -lt $end ]; do :; done",
            (secs * 1e9) as u64
        ),
    ]
}

/// Run `tool stat --control fifo:ctl,ack -D -1 -e task-clock -x, -- spin`, enable for
/// `on`, disable, wait `off`; the acks read and the stderr.
fn controlled(tool: &str, on: Duration, off: Duration) -> (Vec<Vec<u8>>, String, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (ctl, ack) = (dir.path().join("ctl"), dir.path().join("ack"));
    for f in [&ctl, &ack] {
        let st = Command::new("mkfifo").arg(f).status().unwrap();
        assert!(st.success());
    }
    let total = on + off + Duration::from_millis(700);
    let mut child = Command::new(tool)
        .args(["stat", "--control"])
        .arg(format!("fifo:{},{}", ctl.display(), ack.display()))
        .args(["-D", "-1", "-e", "task-clock", "-x,", "--"])
        .args(spin(total.as_secs_f64()))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ctl_w = std::fs::OpenOptions::new().write(true).open(&ctl).unwrap();
    let mut ack_r = std::io::BufReader::new(std::fs::File::open(&ack).unwrap());
    let mut acks = Vec::new();
    std::thread::sleep(Duration::from_millis(300));
    let mut send = |cmd: &str, acks: &mut Vec<Vec<u8>>| {
        ctl_w.write_all(format!("{cmd}\n").as_bytes()).unwrap();
        let mut a = Vec::new();
        ack_r.read_until(b'\n', &mut a).unwrap();
        acks.push(a);
    };
    send("enable", &mut acks);
    let t = Instant::now();
    std::thread::sleep(on);
    send("disable", &mut acks);
    let enabled = t.elapsed();
    send("ping", &mut acks);
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(child.wait().unwrap().success(), "{tool}: {err}");
    (acks, err, enabled)
}

#[test]
fn control_fifo_enables_and_disables_counting() {
    let (acks, err, enabled) = controlled(
        assert_cmd::cargo::cargo_bin("perfkit").to_str().unwrap(),
        Duration::from_millis(400),
        Duration::from_millis(300),
    );
    // perf's acknowledgement: `ack\n`, each after the first carrying the NUL before it.
    assert_eq!(acks[0], b"ack\n");
    assert_eq!(acks[1], b"\0ack\n");
    let msgs: Vec<&str> = err.lines().filter(|l| l.starts_with("Events")).collect();
    assert_eq!(
        msgs,
        ["Events disabled", "Events enabled", "Events disabled"],
        "{err}"
    );
    // Counted only while enabled: no more CPU time than the enabled wall time (plus the
    // time it takes to carry out the command), and some of it on a loaded machine.
    let row = err.lines().find(|l| l.contains(",task-clock,")).unwrap();
    let ms: f64 = row.split(',').next().unwrap().parse().unwrap();
    assert!(
        ms <= enabled.as_secs_f64() * 1e3 + 50.0,
        "{ms} ms counted in {enabled:?}: {err}"
    );
    assert!(ms > 0.0, "{err}");
    if have_perf() {
        let (packs, perr, _) = controlled(
            "perf",
            Duration::from_millis(400),
            Duration::from_millis(300),
        );
        assert_eq!(acks, packs, "perf's acks");
        let pmsgs: Vec<&str> = perr.lines().filter(|l| l.starts_with("Events")).collect();
        assert_eq!(msgs, pmsgs, "perf: {perr}");
    } else {
        skip("perf is not installed");
    }
}

#[test]
fn control_fd_and_bad_specs() {
    // fd:: the descriptors the caller opened (here a pipe on 3, the acks to a file on 4).
    let dir = tempfile::tempdir().unwrap();
    let acks = dir.path().join("acks");
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "(sleep 0.3; echo enable; sleep 0.3; echo disable) | {} stat --control fd:0,4 -D -1 \
             -e task-clock -x, -- sleep 1 4>{}",
            exe.display(),
            acks.display()
        ))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(std::fs::read(&acks).unwrap(), b"ack\n\0ack\n\0", "{err}");
    assert!(err.contains("Events enabled"), "{err}");
    for bad in ["fd:x", "pipe:3", "fifo:", "fifo:/nonexistent/ctl"] {
        let out = Command::new(&exe)
            .args(["stat", "--control", bad, "true"])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(e.contains("--control"), "{bad}: {e}");
    }
}
