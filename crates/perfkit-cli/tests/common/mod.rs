//! Helpers shared by the CLI tests: the binary under test, perf's presence, and running a
//! command that must succeed.
#![allow(dead_code)] // each test file uses its own subset

use assert_cmd::Command;
use std::path::Path;
use std::process::Output;

/// Skip a test for want of something CI has (perf, a C compiler, tracefs, root): say why,
/// or fail when `CI=true`, where `.ci/run` provides all of these, so that a skip cannot pass
/// for a success there.
pub fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}

/// The `perfkit` binary built for these tests.
pub fn perfkit() -> Command {
    Command::cargo_bin("perfkit").expect("perfkit binary")
}

/// Whether Linux `perf` runs here.
pub fn have_perf() -> bool {
    std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Run `cmd`, which must exit 0 (else the test fails with its stderr); its output.
pub fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run");
    assert!(
        out.status.success(),
        "{:?} failed ({}): {}",
        cmd,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Standard output of `cmd`, which must succeed.
pub fn stdout_ok(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run_ok(cmd).stdout).into_owned()
}

/// Standard output of `perf ARGS -i FILE`, which must succeed.
pub fn perf_ok(args: &[&str], file: &Path) -> String {
    let mut cmd = Command::new("perf");
    cmd.args(args).arg("-i").arg(file);
    stdout_ok(&mut cmd)
}
pub mod hotloop;
#[allow(dead_code)]
pub mod sleeper;

/// What `perf stat ARGS` prints on standard error (its counts), whatever its exit status.
pub fn perf_stat_stderr(args: &[&str]) -> String {
    let out = std::process::Command::new("perf")
        .arg("stat")
        .args(args)
        .output()
        .expect("run perf");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
