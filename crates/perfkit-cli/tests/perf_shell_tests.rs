//! perf 6.1's own shell tests (/usr/lib/perf-core/tests/shell) run with perfkit behind a
//! `perf` name: a temporary directory holding a `perf` script that execs the perfkit binary
//! comes first on PATH. Each test in [`PERFKIT_PASSES`] must pass with real perf here first
//! (else this test says why and does not hold it against perfkit), then with perfkit.
//! `scripts/perf-shell-tests.sh` runs all of them and prints a table.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The perf shell tests perfkit is meant to pass (names without `.sh`). Add a name here when
/// perfkit's part for it lands.
const PERFKIT_PASSES: &[&str] = &[
    "buildid",
    "daemon",
    "lock_contention",
    "pipe_test",
    "record+probe_libc_inet_pton",
    "record+zstd_comp_decomp",
    "stat",
    "stat+csv_output",
    "stat+csv_summary",
    "stat+json_output",
    "stat+shadow_stat",
    "stat_all_metricgroups",
    "stat_all_metrics",
    "stat_all_pmu",
    "test_uprobe_from_different_cu",
];

/// Where Debian's linux-perf installs perf's shell tests.
const TESTS_DIR: &str = "/usr/lib/perf-core/tests/shell";

/// Seconds one run of one test may take before it counts as a failure.
const LIMIT_S: &str = "300";

/// How one run ended, by perf's test convention (exit 0 pass, 2 skip).
#[derive(Debug, PartialEq)]
enum Outcome {
    Pass,
    Skip,
    Fail(String),
}

/// Run shell test `name` in a fresh temporary directory; `bin` (when given) goes first on PATH.
fn run(name: &str, bin: Option<&Path>) -> Outcome {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut path = std::env::var_os("PATH").unwrap_or_default();
    if let Some(bin) = bin {
        let mut p = bin.as_os_str().to_owned();
        p.push(":");
        p.push(&path);
        path = p;
    }
    let out = Command::new("timeout")
        .args(["-k", "5", LIMIT_S, "bash"])
        .arg(Path::new(TESTS_DIR).join(format!("{name}.sh")))
        .current_dir(dir.path())
        .env("PATH", path)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run timeout(1)");
    match out.status.code() {
        Some(0) => Outcome::Pass,
        Some(2) => Outcome::Skip,
        code => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Outcome::Fail(format!("exit {code:?}:\n{}", tail.join("\n")))
        }
    }
}

/// A directory with a `perf` that execs the perfkit binary under test.
fn perf_wrapper(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let perfkit = env!("CARGO_BIN_EXE_perfkit");
    let script = dir.join("perf");
    std::fs::write(&script, format!("#!/bin/sh\nexec '{perfkit}' \"$@\"\n")).expect("write");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir.to_path_buf()
}

#[test]
fn perfkit_passes_perfs_shell_tests() {
    if !Path::new(TESTS_DIR).is_dir() {
        return common::skip(&format!(
            "perf's shell tests are not installed at {TESTS_DIR}"
        ));
    }
    if !common::have_perf() {
        return common::skip("perf is not installed");
    }
    let bin = tempfile::tempdir().expect("temp dir");
    let wrapper = perf_wrapper(bin.path());
    let mut failures = Vec::new();
    for name in PERFKIT_PASSES {
        match run(name, None) {
            Outcome::Pass => {}
            other => {
                eprintln!("{name}: perf does not pass it here ({other:?}); not run with perfkit");
                continue;
            }
        }
        match run(name, Some(&wrapper)) {
            Outcome::Pass => eprintln!("{name}: pass"),
            other => failures.push(format!("{name}: {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "perf shell tests perfkit failed:\n{}",
        failures.join("\n\n")
    );
}
