//! [`Error`]: what failed, the errno the kernel gave, and what to do about it.

use std::fmt;
use std::io;

/// The class of a failure, told apart by errno and context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The event does not exist on this machine (ENOENT, EOPNOTSUPP; ENODEV for hybrid).
    NotSupported,
    /// Not allowed (EACCES, EPERM): see [`Error::paranoid`].
    Permission,
    /// The kernel rejected the attr (EINVAL).
    InvalidAttr,
    /// The attr uses fields this kernel does not know (E2BIG): it wants `kernel_size` bytes.
    AttrTooBig {
        /// The attr size the kernel wrote back.
        kernel_size: u32,
    },
    /// The target task does not exist (ESRCH).
    NoSuchTask,
    /// No free hardware counter or breakpoint slot (ENOSPC, EBUSY).
    NoFreeCounter,
    /// Out of file descriptors (EMFILE, ENFILE).
    TooManyFiles,
    /// The operation is not valid for this event (for example REFRESH on a counting event).
    InvalidOperation,
    /// Anything else; see [`Error::errno`].
    Other,
}

/// What was being done when the error happened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Op {
    /// `perf_event_open`
    Open,
    /// An ioctl, by name (`PERF_EVENT_IOC_ENABLE` ...).
    Ioctl(&'static str),
    /// `read(2)` of the counter.
    Read,
    /// `mmap(2)` of the ring buffer or user page.
    Mmap,
    /// Listing the threads of a process (`/proc/PID/task`).
    ListThreads,
    /// Something else, described.
    Other(String),
}

/// A perf_events failure: keeps the OS error and names the event, pid and cpu.
///
/// `Display` says what failed and the class of failure ("cannot open event `cycles`
/// for pid 7: no such process: ..."); the OS error itself is the [`source`]
/// (print the chain, as `anyhow`'s `{:#}` does, to see it), and [`errno`](Self::errno)
/// gives its number.
///
/// [`source`]: std::error::Error::source
#[derive(Debug)]
pub struct Error {
    kind: ErrorKind,
    op: Op,
    source: io::Error,
    event: String,
    pid: i32,
    cpu: i32,
    paranoid: Option<i32>,
    detail: Option<String>,
}

impl Error {
    /// Build an error from an OS error during `op` on `event` for (`pid`, `cpu`).
    pub fn new(op: Op, source: io::Error, event: impl Into<String>, pid: i32, cpu: i32) -> Error {
        let errno = source.raw_os_error().unwrap_or(0);
        let kind = match errno {
            libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => ErrorKind::NotSupported,
            libc::EACCES | libc::EPERM => ErrorKind::Permission,
            libc::EINVAL if op != Op::Open => ErrorKind::InvalidOperation,
            libc::EINVAL => ErrorKind::InvalidAttr,
            libc::E2BIG => ErrorKind::AttrTooBig { kernel_size: 0 },
            libc::ESRCH => ErrorKind::NoSuchTask,
            libc::ENOSPC | libc::EBUSY => ErrorKind::NoFreeCounter,
            libc::EMFILE | libc::ENFILE => ErrorKind::TooManyFiles,
            _ => ErrorKind::Other,
        };
        let paranoid = (kind == ErrorKind::Permission)
            .then(read_paranoid)
            .flatten();
        Error {
            kind,
            op,
            source,
            event: event.into(),
            pid,
            cpu,
            paranoid,
            detail: None,
        }
    }

    /// Replace the kind (used when the context tells more than the errno).
    pub(crate) fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.kind = kind;
        self
    }

    /// Attach an explanation of the cause.
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// Name the event the way the user wrote it (`sched:sched_switch` rather than the
    /// attr's `tracepoint 372`).
    pub fn with_event(mut self, event: impl Into<String>) -> Self {
        self.event = event.into();
        self
    }

    /// The class of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The errno, 0 if none.
    pub fn errno(&self) -> i32 {
        self.source.raw_os_error().unwrap_or(0)
    }
    /// The OS error.
    pub fn io_error(&self) -> &io::Error {
        &self.source
    }
    /// The operation that failed.
    pub fn op(&self) -> &Op {
        &self.op
    }
    /// The event's name.
    pub fn event(&self) -> &str {
        &self.event
    }
    /// The target pid (-1 = any).
    pub fn pid(&self) -> i32 {
        self.pid
    }
    /// The target cpu (-1 = any).
    pub fn cpu(&self) -> i32 {
        self.cpu
    }
    /// `/proc/sys/kernel/perf_event_paranoid` when the error is a permission error.
    pub fn paranoid(&self) -> Option<i32> {
        self.paranoid
    }
    /// The explanation of the cause, where one was found.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// Whether the event simply does not exist here (shown as `<not supported>` by stat).
    pub fn is_not_supported(&self) -> bool {
        self.kind == ErrorKind::NotSupported
    }

    /// Advice on what to do, for the user.
    pub fn hint(&self) -> Option<String> {
        match self.kind {
            ErrorKind::NotSupported => Some(
                "this machine does not provide the event (no such PMU or event; virtual \
                 machines usually have no hardware counters): `perfkit list` shows what is \
                 available"
                    .into(),
            ),
            ErrorKind::Permission => Some(permission_hint(self.paranoid, self.pid == -1)),
            ErrorKind::NoFreeCounter => Some(
                "every hardware counter or breakpoint slot is in use: close other \
                 perf users, or open fewer events at once"
                    .into(),
            ),
            ErrorKind::TooManyFiles => Some(
                "out of file descriptors (one per event per CPU): raise the limit with \
                 `ulimit -n`"
                    .into(),
            ),
            ErrorKind::NoSuchTask => Some("the process or thread does not exist (any more)".into()),
            ErrorKind::AttrTooBig { kernel_size } => Some(format!(
                "this kernel knows perf_event_attr up to {kernel_size} bytes; the attr uses a \
                 newer field: a newer kernel is needed"
            )),
            _ => None,
        }
    }
}

/// What to do about a permission error, given `perf_event_paranoid` and whether the
/// counter was for a whole CPU (or cgroup) rather than a task. Lowering the setting is
/// advised only to a level that would allow this open; counting user space only (`:u`) only
/// where that is allowed at the current level.
fn permission_hint(paranoid: Option<i32>, cpu_wide: bool) -> String {
    let Some(p) = paranoid else {
        return "access to perf events is restricted: run as root or with CAP_PERFMON".into();
    };
    let level = format!("kernel.perf_event_paranoid is {p}");
    // The highest setting at which an unprivileged open of this kind works.
    let needed = if cpu_wide { 0 } else { 1 };
    if p <= needed {
        // Lowering would not help: the rest needs a capability (another user's task, raw
        // tracepoints at -1, ...).
        return format!(
            "{level}, which already allows this for users: another user's task or this event              needs root, CAP_PERFMON (or CAP_SYS_PTRACE for other users' processes)"
        );
    }
    let what = match p {
        p if p >= 3 => "unprivileged users may not use perf events at all",
        2 => "unprivileged users may count their own processes in user space only",
        _ => "unprivileged users may count their own processes, not whole CPUs",
    };
    let user_only = if !cpu_wide && p == 2 {
        ", or count user space only with the `:u` modifier (exclude_kernel)"
    } else {
        ""
    };
    let scope = if cpu_wide { "whole CPUs" } else { "the kernel" };
    format!(
        "{level}: {what}. Run as root (or with CAP_PERFMON), lower it to allow {scope} with \
         `sysctl kernel.perf_event_paranoid={needed}`{user_only}"
    )
}

/// Read `/proc/sys/kernel/perf_event_paranoid`.
pub fn read_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match &self.op {
            Op::Open => "open",
            Op::Ioctl(name) => name,
            Op::Read => "read",
            Op::Mmap => "mmap the ring buffer of",
            Op::ListThreads => "list the threads",
            Op::Other(s) => s,
        };
        write!(f, "cannot {op}")?;
        if !self.event.is_empty() {
            write!(f, " event `{}`", self.event)?;
        }
        match (self.pid, self.cpu) {
            (-1, -1) => {}
            (-1, c) => write!(f, " on CPU {c}")?,
            (0, -1) => write!(f, " for this thread")?,
            (p, -1) => write!(f, " for pid {p}")?,
            (p, c) => write!(f, " for pid {p} on CPU {c}")?,
        }
        // The OS error's own text is left to `source()`, so that printing the chain does
        // not say it twice.
        let what = match self.kind {
            ErrorKind::NotSupported => Some("not supported on this machine"),
            ErrorKind::Permission => Some("permission denied"),
            ErrorKind::InvalidAttr => Some("invalid attribute"),
            ErrorKind::AttrTooBig { .. } => Some("attribute too new for this kernel"),
            ErrorKind::NoSuchTask => Some("no such process"),
            ErrorKind::NoFreeCounter => Some("no free counter"),
            ErrorKind::TooManyFiles => Some("too many open files"),
            ErrorKind::InvalidOperation => Some("not valid for this event"),
            ErrorKind::Other => None,
        };
        if let Some(what) = what {
            write!(f, ": {what}")?;
        }
        if let Some(d) = &self.detail {
            write!(f, ": {d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod hint_tests {
    use super::permission_hint;

    #[test]
    fn never_advise_lowering_to_a_level_already_reached() {
        // A task counter at 2: lower to 1, or :u.
        let h = permission_hint(Some(2), false);
        assert!(h.contains("perf_event_paranoid is 2"), "{h}");
        assert!(
            h.contains("perf_event_paranoid=1") && h.contains(":u"),
            "{h}"
        );
        // A CPU counter at 2: lower to 0; :u would not help.
        let h = permission_hint(Some(2), true);
        assert!(
            h.contains("perf_event_paranoid=0") && !h.contains(":u"),
            "{h}"
        );
        // At 1, a task counter is allowed: no advice to lower it to 1.
        let h = permission_hint(Some(1), false);
        assert!(!h.contains("sysctl"), "{h}");
        assert!(h.contains("is 1"), "{h}");
        let h = permission_hint(Some(1), true);
        assert!(h.contains("perf_event_paranoid=0"), "{h}");
        for p in [-1, 0] {
            for cpu in [false, true] {
                let h = permission_hint(Some(p), cpu);
                assert!(!h.contains("sysctl"), "{p} {cpu}: {h}");
            }
        }
        assert!(permission_hint(Some(4), false).contains("may not use perf events at all"));
    }
}
