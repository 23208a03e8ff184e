//! Bugs found at the kernel boundary, each tried as a new user would: privilege fallbacks
//! that changed what an event counts, a recorder that left its command running, lost
//! samples that went unreported, CPU lists and signal dispositions.

mod common;

use common::{have_perf, perfkit};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn workload() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("perfkit-boundary-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bin = dir.join("workload");
    if !bin.exists() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
        let st = Command::new("cc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .expect("cc");
        assert!(st.success());
    }
    bin
}

/// Run the perfkit binary as user nobody.
fn as_nobody(args: &[&str]) -> (Option<i32>, String) {
    let bin = assert_cmd::cargo::cargo_bin("perfkit");
    let out = Command::new(bin)
        .args(args)
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_event_that_asks_for_the_kernel_is_refused_not_silently_zeroed() {
    if !is_root() {
        assert!(!in_ci(), "CI runs as root");
        eprintln!("skipped: needs root to run as another user");
        return;
    }
    let paranoid = perfkit::read_paranoid().unwrap_or(2);
    if paranoid < 2 {
        eprintln!("skipped: perf_event_paranoid {paranoid} lets users count the kernel");
        return;
    }
    // `:k` counts only the kernel, which this user may not: perfkit refuses, as perf does.
    let (code, err) = as_nobody(&["stat", "-x", ",", "-e", "context-switches:k", "--", "true"]);
    assert_ne!(code, Some(0), "{err}");
    assert!(err.contains("context-switches:k"), "{err}");
    assert!(
        err.contains(&format!("perf_event_paranoid is {paranoid}")),
        "{err}"
    );
    assert!(!err.contains(",context-switches"), "no zero row: {err}");
    if have_perf() {
        let out = Command::new("perf")
            .args(["stat", "-e", "context-switches:k", "--", "true"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        assert!(!out.status.success(), "perf refuses too");
    }
    // An event that chose nothing falls back to user space and says so in its name.
    let (code, err) = as_nobody(&["stat", "-x", ",", "-e", "context-switches", "--", "true"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains(",context-switches:u,"), "{err}");
}

#[test]
fn a_closed_output_pipe_stops_the_command_and_exits_141() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("pid");
    let script = format!("echo $$ > {}; while :; do :; done", pidfile.display());
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        .args(["record", "-F", "999", "-o", "-", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    out.read_exact(&mut first).unwrap();
    assert_eq!(&first[..8], b"PERFILE2", "pipe-mode header");
    // Keep the pipe open until the command runs: closed during the preamble, it would end
    // perfkit before the command starts (the pipe buffer holds the whole preamble, so
    // perfkit is not blocked meanwhile).
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(&pidfile).is_ok_and(|p| p.ends_with('\n')) {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // The reader is gone (stdout dropped): perfkit must notice, end the command, and exit
    // as perf does when its pipe closes.
    drop(out);
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(err.contains("output pipe was closed"), "{err}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while task_alive(pid) {
        assert!(Instant::now() < deadline, "the command {pid} still runs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` exists and is not a zombie.
fn task_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        let state = s.rsplit_once(')').map(|(_, r)| r.trim_start());
        !matches!(state.and_then(|r| r.chars().next()), Some('Z' | 'X'))
    })
}

/// The summary's `(N samples)` and the lost-samples line's `M samples were lost` (0 when
/// there is none).
fn written_and_lost(stderr: &str) -> (u64, u64) {
    let line = stderr
        .lines()
        .find(|l| l.contains("Captured and wrote"))
        .unwrap_or_else(|| panic!("no summary in {stderr}"));
    let num_before = |line: &str, word: &str| -> u64 {
        let i = line.find(word).unwrap();
        line[..i]
            .split(|c: char| c.is_whitespace() || c == '(')
            .rfind(|w| !w.is_empty())
            .unwrap()
            .parse()
            .unwrap()
    };
    let lost = stderr
        .lines()
        .find(|l| l.contains(" samples were lost"))
        .map_or(0, |l| num_before(l, " samples were lost"));
    (num_before(line, " samples)"), lost)
}

#[test]
fn samples_lost_in_a_full_ring_at_the_end_are_counted_exactly() {
    let bin = workload();
    let dir = tempfile::tempdir().unwrap();
    let (started, done) = (dir.path().join("started"), dir.path().join("done"));
    let script = format!(
        "touch {}; sleep 0.6; {} pages 10000; touch {}",
        started.display(),
        bin.display(),
        done.display()
    );
    // The truth: page faults of the same command, counted.
    let out = perfkit()
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "page-faults",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    let faults: f64 = text
        .lines()
        .find(|l| l.contains(",page-faults,"))
        .and_then(|l| l.split(',').next()?.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    std::fs::remove_file(&done).unwrap();
    std::fs::remove_file(&started).unwrap();
    // A one-page ring, every fault a sample, and the recorder stopped while the command
    // faults: the ring fills and stays full until the end.
    let data = dir.path().join("perf.data");
    let mut rec = Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
        .args(["record", "-e", "page-faults", "-c", "1", "-m", "1", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once the command runs, during its 0.6 s sleep.
    let deadline = Instant::now() + Duration::from_secs(120);
    while !started.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    perfkit::kill(rec.id() as i32, libc::SIGSTOP).unwrap();
    while !done.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    perfkit::kill(rec.id() as i32, libc::SIGCONT).unwrap();
    let mut err = String::new();
    rec.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(rec.wait().unwrap().success(), "{err}");
    let (written, lost) = written_and_lost(&err);
    assert!(lost > 0, "a one-page ring held every fault? {err}");
    let total = (written + lost) as f64;
    assert!(
        (total - faults).abs() <= faults * 0.02,
        "written {written} + lost {lost} = {total}, page faults counted {faults}: {err}"
    );
    // The file says so too (LOST_SAMPLES, the kernel's count), to perfkit report and perf's.
    let lost_line = |text: &str| {
        text.lines()
            .find(|l| l.starts_with("# Total Lost Samples:"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("{text}"))
    };
    let ours = perfkit()
        .args(["report", "--stdio", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let ours = lost_line(&String::from_utf8_lossy(&ours.stdout));
    assert_eq!(ours, format!("# Total Lost Samples: {lost}"));
    if have_perf() {
        let out = Command::new("perf")
            .args(["report", "--stdio", "-i"])
            .arg(&data)
            .output()
            .unwrap();
        assert_eq!(lost_line(&String::from_utf8_lossy(&out.stdout)), ours);
    }
}

#[test]
fn cpu_lists_are_checked_as_they_are_parsed() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    for cmd in ["stat", "record"] {
        let huge = perfkit()
            .args([cmd, "-C", "0-4294967295", "-o", out, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&huge.stderr);
        assert_eq!(huge.status.code(), Some(1), "{cmd}: {err}");
        assert!(err.contains("does not exist"), "{cmd}: {err}");
        for list in [",", ""] {
            let o = perfkit()
                .args([cmd, "-C", list, "-o", out, "--", "true"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{cmd} -C '{list}': {err}");
        }
        let o = perfkit()
            .args([cmd, "-C", "9999", "-o", out, "--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{cmd}: {err}");
        assert!(
            err.contains("-C 9999") && err.contains("CPU 9999 does not exist"),
            "one message for both commands: {cmd}: {err}"
        );
    }
}

#[test]
fn a_launched_command_gets_default_signal_dispositions() {
    // `yes` dies of SIGPIPE when `head` exits, silently, as in a shell.
    let out = perfkit()
        .args([
            "stat",
            "-e",
            "task-clock",
            "--",
            "sh",
            "-c",
            "yes | head -1",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "y\n");
    assert!(!err.contains("Broken pipe"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out");
    for cmd in ["stat", "record"] {
        let out = perfkit()
            .args([
                cmd,
                "-o",
                file.to_str().unwrap(),
                "--",
                "grep",
                "^Sig",
                "/proc/self/status",
            ])
            .output()
            .unwrap();
        let status = String::from_utf8_lossy(&out.stdout);
        for field in ["SigBlk", "SigIgn"] {
            let line = status.lines().find(|l| l.starts_with(field)).unwrap();
            assert!(
                line.trim_end().ends_with(&"0".repeat(16)),
                "{cmd}: {field} must be empty: {status}"
            );
        }
    }
}
