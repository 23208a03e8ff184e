//! Launching commands: a `PausedChild` starts with default signal dispositions and an
//! empty signal mask, whatever the launcher's (the Rust runtime ignores SIGPIPE); and
//! launch errors keep their OS error as the source.
//!
//! This file is its own test binary because it ignores and blocks signals in the test
//! process, which other tests must not see.

use perfkit::{ExitStatus, LaunchError, PausedChild, wait};
use std::error::Error as _;
use std::ffi::OsString;
use std::path::PathBuf;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perfkit-launch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Make this process look like a typical Rust launcher, and worse: SIGPIPE ignored (the
/// runtime already does it), SIGXFSZ ignored, SIGUSR2 blocked in the calling thread.
fn hostile_signal_state() {
    // SAFETY: setting dispositions to SIG_IGN and blocking a signal in this thread; no
    // handler code is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR2);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn run(program: &str, args: &[&str]) -> ExitStatus {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let child = PausedChild::spawn(program.as_ref(), &args).unwrap();
    let pid = child.start().unwrap();
    wait(pid).unwrap()
}

#[test]
fn yes_into_head_exits_quietly() {
    hostile_signal_state();
    let err = temp("yes-stderr");
    // `yes` is killed by SIGPIPE when head exits; with SIGPIPE ignored it would get EPIPE
    // and print "yes: standard output: Broken pipe" instead.
    let status = run(
        "sh",
        &[
            "-c",
            r#"yes 2>"$1" | head -1 >/dev/null"#,
            "sh",
            err.to_str().unwrap(),
        ],
    );
    let stderr = std::fs::read_to_string(&err).unwrap();
    assert!(!stderr.contains("Broken pipe"), "yes wrote: {stderr}");
    assert_eq!(stderr, "");
    assert_eq!(status, ExitStatus::Exited(0));
}

#[test]
fn child_has_no_ignored_or_blocked_signals() {
    hostile_signal_state();
    let out = temp("status");
    let status = run(
        "sh",
        &[
            "-c",
            r#"exec cat /proc/self/status >"$1""#,
            "sh",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(status, ExitStatus::Exited(0));
    let text = std::fs::read_to_string(&out).unwrap();
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_else(|| panic!("no {name} in {text}"))
    };
    assert_eq!(field("SigIgn:"), "0000000000000000", "ignored signals");
    assert_eq!(field("SigBlk:"), "0000000000000000", "blocked signals");
}

#[test]
fn missing_program_error_keeps_its_source() {
    let e = PausedChild::spawn("perfkit-no-such-command".as_ref(), &[]).unwrap_err();
    assert!(matches!(e, LaunchError::NotFound { .. }), "{e:?}");
    assert_eq!(e.exit_code(), 127);
    let shown = e.to_string();
    assert_eq!(shown, "perfkit-no-such-command: command not found");
    let source = e.source().expect("the OS error is the source");
    assert!(
        !shown.contains(&source.to_string()),
        "{shown} repeats {source}"
    );
    assert_eq!(e.errno(), libc::ENOENT);
}

#[test]
fn exec_failure_names_the_program_and_keeps_errno() {
    // A file that exists and is executable but is not a valid program: execv fails
    // with ENOEXEC.
    let path = temp("not-a-program");
    std::fs::write(&path, [0u8; 64]).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Another test thread forking while the file was open for writing leaves a copy of the
    // write descriptor in its child until that child execs: exec gives ETXTBSY meanwhile.
    let mut tries = 0;
    let e = loop {
        let child = PausedChild::spawn(path.as_os_str(), &[]).unwrap();
        let e = child.start().unwrap_err();
        tries += 1;
        if e.errno() != libc::ETXTBSY || tries == 100 {
            break e;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    assert_eq!(e.exit_code(), 126);
    assert_eq!(e.errno(), libc::ENOEXEC);
    let shown = e.to_string();
    assert!(shown.contains("not-a-program: cannot execute"), "{shown}");
    let source = e.source().expect("source");
    assert!(!shown.contains(&source.to_string()), "{shown}");
}
