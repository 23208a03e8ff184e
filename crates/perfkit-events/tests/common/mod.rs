//! Fixture sysfs and tracefs trees (perfkit_events::fixture), built in a tempdir.
#![allow(dead_code)]

use std::path::PathBuf;

use perfkit_events::{Env, fixture};

#[allow(unused_imports)]
pub use fixture::{DATA_LOC_FORMAT, SCHED_SWITCH_FORMAT};

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
