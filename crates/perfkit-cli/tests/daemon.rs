//! `perfkit daemon` beside `perf daemon` (perf 6.1): the same config file and base layout,
//! the same session list (plain, `-v`, `-x:`), ping and signal answers, the same refusal of
//! a second daemon on one base, `signal` writing one `--switch-output` file per SIGUSR2,
//! and `stop` ending every session. Also `record --control` answering perf's daemon
//! protocol (`ping` with no newline, `ack\n\0` back, `stop`).

mod common;

use common::{have_perf, skip};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn perfkit_path() -> PathBuf {
    assert_cmd::cargo::cargo_bin("perfkit")
}

/// What one daemon run printed, with the base directory, pids and uptimes replaced.
#[derive(Debug, PartialEq)]
struct Seen {
    list: String,
    list_v: String,
    list_x: String,
    ping: String,
    ping_missing: String,
    second_start: String,
    signal: String,
    /// perf.data files in session-test after `stop`.
    switched: Vec<String>,
}

fn run(tool: &Path, args: &[&str], cfg: &Path) -> std::process::Output {
    Command::new(tool)
        .arg("daemon")
        .args(args)
        .arg("--config")
        .arg(cfg)
        .stdin(Stdio::null())
        .output()
        .expect("run daemon command")
}

fn stdout(tool: &Path, args: &[&str], cfg: &Path) -> String {
    let out = run(tool, args, cfg);
    assert!(
        out.status.success(),
        "{} daemon {args:?}: {}",
        tool.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Replace what differs between runs: the base path, pids (`[N:`, `[N]`, a leading
/// `N:` field) and uptimes.
fn normalize(s: &str, base: &Path) -> String {
    let s = s.replace(&*base.to_string_lossy(), "BASE");
    s.lines()
        .map(|l| {
            let mut l = l.to_string();
            if let Some((head, rest)) = l.split_once(':')
                && head.chars().all(|c| c.is_ascii_digit() || c == '-')
                && !head.is_empty()
            {
                // -x: lines: pid first, uptime last.
                let rest = rest
                    .rsplit_once(':')
                    .map_or(rest.to_string(), |(r, _)| r.into());
                l = format!("PID:{rest}:UP");
            }
            if let Some(open) = l.find('[')
                && let Some(close) = l[open..].find([':', ']'])
                && l[open + 1..open + close]
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '-')
            {
                l = format!("{}[PID{}", &l[..open], &l[open + close..]);
            }
            if l.trim_start().starts_with("up:") {
                l = "  up:      UP minutes".into();
            }
            l
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Wait until `tool daemon ping --session NAME` says OK.
fn wait_ok(tool: &Path, cfg: &Path, name: &str) {
    let until = Instant::now() + Duration::from_secs(120);
    while Instant::now() < until {
        let out = run(tool, &["ping", "--session", name], cfg);
        if String::from_utf8_lossy(&out.stdout).starts_with("OK") {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{}: session {name} never answered ping", tool.display());
}

fn wait_gone(pid: &str) {
    let until = Instant::now() + Duration::from_secs(120);
    while Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            Instant::now() < until,
            "pid {pid} still runs 120 s after stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn session(tool: &Path) -> Seen {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base");
    std::fs::create_dir(&base).unwrap();
    let cfg = dir.path().join("config");
    std::fs::write(
        &cfg,
        format!(
            "[daemon]\nbase={}\n\n[session-size]\nrun = -e cpu-clock -m 1 sleep 60\n\n\
             [session-test]\nrun = -e cpu-clock --switch-output -m 1 sleep 60\n",
            base.display()
        ),
    )
    .unwrap();
    stdout(tool, &["start"], &cfg);
    wait_ok(tool, &cfg, "size");
    wait_ok(tool, &cfg, "test");
    let list_x = stdout(tool, &["-x:"], &cfg);
    let pids: Vec<String> = list_x
        .lines()
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    assert_eq!(pids.len(), 3, "daemon and two sessions: {list_x}");
    for p in &pids {
        assert!(Path::new(&format!("/proc/{p}")).exists(), "pid {p} runs");
    }
    let second = run(tool, &["start"], &cfg);
    assert!(!second.status.success() || tool.ends_with("perf"));
    let mut second_start = String::from_utf8_lossy(&second.stderr).into_owned();
    second_start += &String::from_utf8_lossy(&second.stdout);
    let seen = |s: String| normalize(&s, &base);
    let signal = stdout(tool, &["signal", "--session", "test"], &cfg);
    // Let that file be written before the stop.
    let until = Instant::now() + Duration::from_secs(60);
    while count_switched(&base).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = Seen {
        list: seen(stdout(tool, &[], &cfg)),
        list_v: seen(stdout(tool, &["-v"], &cfg)),
        list_x: seen(list_x.clone()),
        ping: stdout(tool, &["ping"], &cfg),
        ping_missing: stdout(tool, &["ping", "--session", "nope"], &cfg),
        second_start: seen(second_start),
        signal: seen(signal),
        switched: Vec::new(),
    };
    stdout(tool, &["stop"], &cfg);
    for p in &pids {
        wait_gone(p);
    }
    s.switched = count_switched(&base);
    // Each file is a whole perf.data perf reads.
    for f in &s.switched {
        let out = Command::new("perf")
            .args(["evlist", "-i"])
            .arg(base.join("session-test").join(f))
            .output()
            .unwrap();
        assert!(out.status.success(), "perf evlist {f}: {out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("cpu-clock"));
    }
    s
}

/// `perf.data.<timestamp>` files in session-test (names without the timestamps).
fn count_switched(base: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(base.join("session-test"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("perf.data.") && n.len() == "perf.data.".len() + 16)
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn daemon_sessions_as_perf_runs_them() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    let mine = session(&perfkit_path());
    let perfs = session(Path::new("perf"));
    // One file for the signal, one for the end, with perf's names.
    assert_eq!(mine.switched.len(), 2, "{mine:?}");
    assert_eq!(perfs.switched.len(), 2, "{perfs:?}");
    assert_eq!(mine.ping, "OK   size\nOK   test\n");
    assert_eq!(mine.ping_missing, "FAIL nope (not found)\n");
    assert!(
        mine.second_start
            .starts_with("failed: another perf daemon (pid ")
            && mine.second_start.trim_end().ends_with(") owns BASE"),
        "{}",
        mine.second_start
    );
    assert_eq!(
        mine.list_x.lines().nth(1),
        Some(
            "PID:size:-e cpu-clock -m 1 sleep 60:BASE/session-size:BASE/session-size/output:\
             BASE/session-size/control:BASE/session-size/ack:UP"
        )
    );
    let (mut mine, mut perfs) = (mine, perfs);
    mine.switched.clear();
    perfs.switched.clear();
    // perf prints its refusal from the background process, perhaps after it returned.
    mine.second_start.clear();
    perfs.second_start.clear();
    assert_eq!(mine, perfs);
}

fn fifo(p: &Path) {
    assert!(perfkit::mkfifo(p, 0o600).unwrap());
}

/// `TOOL record --control=fifo:ctl,ack -- sleep 60`: the bytes acknowledging a `ping`
/// written as perf's daemon writes it (no newline), and the seconds `stop` took to end it.
fn controlled_record(tool: &Path) -> (Vec<u8>, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let (ctl, ack) = (dir.path().join("control"), dir.path().join("ack"));
    fifo(&ctl);
    fifo(&ack);
    let mut child = Command::new(tool)
        .args([
            "record",
            "--control=fifo:control,ack",
            "-e",
            "cpu-clock",
            "-o",
            "x.data",
        ])
        .args(["--", "sleep", "60"])
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The record holds both FIFOs open read-write: opening them here does not block.
    let mut acks = std::fs::File::open(&ack).unwrap();
    let mut ctl_w = std::fs::OpenOptions::new().write(true).open(&ctl).unwrap();
    ctl_w.write_all(b"ping").unwrap();
    let mut got = [0u8; 5];
    acks.read_exact(&mut got).unwrap();
    let t = Instant::now();
    ctl_w.write_all(b"stop").unwrap();
    let st = child.wait().unwrap();
    let took = t.elapsed();
    assert!(
        dir.path().join("x.data").exists(),
        "{} wrote its file ({st})",
        tool.display()
    );
    (got.to_vec(), took)
}

#[test]
fn record_control_answers_perfs_daemon_protocol() {
    let (ack, took) = controlled_record(&perfkit_path());
    assert_eq!(ack, b"ack\n\0");
    // `stop` ended a 60 s command: it did not run out.
    assert!(took < Duration::from_secs(50), "stop took {took:?}");
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    let (perf_ack, _) = controlled_record(Path::new("perf"));
    assert_eq!(ack, perf_ack);
}
