//! [`Target`]: whom to count (the `pid`, `cpu` and `PERF_FLAG_PID_CGROUP` arguments).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// The `pid`/`cpu` pair of `perf_event_open`, or a cgroup on a CPU.
#[derive(Clone, Copy, Debug)]
pub struct Target<'fd> {
    pid: i32,
    cpu: i32,
    cgroup: Option<BorrowedFd<'fd>>,
}

impl Target<'static> {
    /// The calling thread only (pid 0), on any CPU: the kernel attaches a per-task event
    /// to one task, so other threads of the process are not counted. With `inherit`, the
    /// threads and processes this thread creates afterwards are counted too. For every
    /// thread of the process see [`crate::Targets::this_process`].
    pub const fn this_thread() -> Self {
        Target {
            pid: 0,
            cpu: -1,
            cgroup: None,
        }
    }
    /// A process or thread by id (the kernel takes a tid), on any CPU.
    pub const fn pid(pid: i32) -> Self {
        Target {
            pid,
            cpu: -1,
            cgroup: None,
        }
    }
    /// Every task on one CPU (needs root or paranoid <= 0).
    pub const fn cpu(cpu: u32) -> Self {
        Target {
            pid: -1,
            cpu: cpu as i32,
            cgroup: None,
        }
    }
    /// One task, only while it runs on one CPU.
    pub const fn pid_on_cpu(pid: i32, cpu: u32) -> Self {
        Target {
            pid,
            cpu: cpu as i32,
            cgroup: None,
        }
    }
}

impl<'fd> Target<'fd> {
    /// The tasks of a cgroup (an open cgroupfs directory) on one CPU
    /// (`PERF_FLAG_PID_CGROUP`).
    pub fn cgroup(dir: &'fd impl AsFd, cpu: u32) -> Self {
        Target {
            pid: -1,
            cpu: cpu as i32,
            cgroup: Some(dir.as_fd()),
        }
    }

    /// The `pid` argument (a cgroup target gives its directory fd).
    pub fn pid_arg(&self) -> i32 {
        match self.cgroup {
            Some(fd) => fd.as_raw_fd(),
            None => self.pid,
        }
    }
    /// The `cpu` argument (-1 = any).
    pub fn cpu_arg(&self) -> i32 {
        self.cpu
    }
    /// Whether this is a cgroup target.
    pub fn is_cgroup(&self) -> bool {
        self.cgroup.is_some()
    }
    /// The pid as given (-1 for CPU-wide and cgroup targets).
    pub fn pid_value(&self) -> i32 {
        self.pid
    }
}
