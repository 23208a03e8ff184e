//! Fixture sysfs and tracefs trees (perfkit_events::fixture), built in a tempdir.
#![allow(dead_code)]

use std::path::PathBuf;

use perfkit_events::{Env, fixture};

#[allow(unused_imports)]
pub use fixture::{DATA_LOC_FORMAT, SCHED_SWITCH_FORMAT};

/// Skip a test for want of something CI has (root, tracefs, libpfm4 and its headers, a C
/// compiler): say why, or fail when `CI=true`, where `.ci/run` provides all of these, so that
/// a skip cannot pass for a success there.
pub fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
}

impl Fixture {
    /// A non-hybrid machine with a `cpu` PMU, uncore, msr, power, uprobe, and tracefs.
    pub fn standard() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        fixture::standard(dir.path()).unwrap();
        Fixture { dir }
    }

    /// A hybrid machine: cpu_core (type 4, CPUs 0-3) and cpu_atom (type 10, CPUs 4-7).
    pub fn hybrid() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        fixture::hybrid(dir.path()).unwrap();
        Fixture { dir }
    }

    pub fn sysfs(&self) -> PathBuf {
        self.dir.path().join("sysfs")
    }
    pub fn tracefs(&self) -> PathBuf {
        self.dir.path().join("tracing")
    }
    pub fn env(&self) -> Env {
        fixture::env(self.dir.path())
    }
}
