//! [`Counter`]: one open perf event, its ioctls and its reads.

use crate::attr::Attr;
use crate::error::{Error, ErrorKind, Op, Result};
use crate::event::attr_name;
use crate::target::Target;
use perfkit_sys::{self as sys, attr_flags as f};
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// One open perf event (`perf_event_open(2)`), owning its file descriptor.
///
/// ```
/// use perfkit::{Attr, Counter, Software, Target};
/// // Page faults of this thread, kernel and user.
/// let faults = Counter::open(&Attr::new(Software::PageFaults), &Target::this_thread())?;
/// faults.enable()?;
/// let buf = vec![1u8; 1 << 20]; // 256 fresh pages
/// faults.disable()?;
/// let count = faults.read()?;
/// assert!(count.value > 0, "{}", buf.len());
/// assert_eq!(count.time_enabled, count.time_running); // software events always run
/// # Ok::<(), perfkit::Error>(())
/// ```
#[derive(Debug)]
pub struct Counter {
    fd: OwnedFd,
    attr: Attr,
    name: String,
    pid: i32,
    cpu: i32,
}

/// The value of a counter as `read(2)` returns it, in the attr's `read_format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    /// The raw count.
    pub value: u64,
    /// Nanoseconds enabled (`PERF_FORMAT_TOTAL_TIME_ENABLED`).
    pub time_enabled: Option<u64>,
    /// Nanoseconds on the PMU (`PERF_FORMAT_TOTAL_TIME_RUNNING`).
    pub time_running: Option<u64>,
    /// The event id (`PERF_FORMAT_ID`).
    pub id: Option<u64>,
    /// Samples lost (`PERF_FORMAT_LOST`).
    pub lost: Option<u64>,
}

/// A count corrected for multiplexing: `value * time_enabled / time_running`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scaled {
    /// The event ran the whole time it was enabled (or times were not read): exact.
    Exact(u64),
    /// The event was multiplexed: an estimate.
    Scaled {
        /// The estimate for the whole enabled time.
        estimate: u64,
        /// The count actually seen.
        raw: u64,
        /// time_running / time_enabled, in (0, 1).
        running_fraction: f64,
    },
    /// Enabled but never scheduled on the PMU (time_running 0): no estimate exists.
    NotCounted,
}

impl Scaled {
    /// The exact or estimated value, `None` when the event never ran.
    pub fn value(&self) -> Option<u64> {
        match *self {
            Scaled::Exact(v) => Some(v),
            Scaled::Scaled { estimate, .. } => Some(estimate),
            Scaled::NotCounted => None,
        }
    }
}

/// Scale `value` by `enabled / running` without overflow.
pub fn scale(value: u64, enabled: u64, running: u64) -> Scaled {
    if running == 0 {
        if enabled == 0 && value == 0 {
            // Never enabled at all: nothing happened, which is exact.
            return Scaled::Exact(0);
        }
        return Scaled::NotCounted;
    }
    if running >= enabled {
        return Scaled::Exact(value);
    }
    let estimate = (u128::from(value) * u128::from(enabled) / u128::from(running)) as u64;
    Scaled::Scaled {
        estimate,
        raw: value,
        running_fraction: running as f64 / enabled as f64,
    }
}

impl Count {
    /// The count corrected for multiplexing.
    pub fn scaled(&self) -> Scaled {
        match (self.time_enabled, self.time_running) {
            (Some(e), Some(r)) => scale(self.value, e, r),
            _ => Scaled::Exact(self.value),
        }
    }

    /// Parse one counter's `read(2)` result (without `PERF_FORMAT_GROUP`).
    pub fn parse(read_format: u64, words: &[u64]) -> Option<Count> {
        let mut it = words.iter().copied();
        let mut c = Count {
            value: it.next()?,
            ..Count::default()
        };
        if read_format & sys::PERF_FORMAT_TOTAL_TIME_ENABLED != 0 {
            c.time_enabled = Some(it.next()?);
        }
        if read_format & sys::PERF_FORMAT_TOTAL_TIME_RUNNING != 0 {
            c.time_running = Some(it.next()?);
        }
        if read_format & sys::PERF_FORMAT_ID != 0 {
            c.id = Some(it.next()?);
        }
        if read_format & sys::PERF_FORMAT_LOST != 0 {
            c.lost = Some(it.next()?);
        }
        Some(c)
    }
}

/// Number of u64 words a non-group read returns for `read_format`.
pub(crate) fn single_read_words(read_format: u64) -> usize {
    1 + (read_format
        & (sys::PERF_FORMAT_TOTAL_TIME_ENABLED
            | sys::PERF_FORMAT_TOTAL_TIME_RUNNING
            | sys::PERF_FORMAT_ID
            | sys::PERF_FORMAT_LOST))
        .count_ones() as usize
}

/// `read(2)` into a u64 buffer; returns the number of whole words read.
pub(crate) fn read_words(fd: BorrowedFd<'_>, buf: &mut [u64]) -> io::Result<usize> {
    // SAFETY: buf is a valid, writable region of size_of_val(buf) bytes owned by the
    // caller for the duration of the call; fd is a live descriptor.
    let n = unsafe {
        libc::read(
            fd.as_raw_fd(),
            buf.as_mut_ptr().cast(),
            std::mem::size_of_val(buf),
        )
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize / 8)
}

/// Explain an EINVAL from `perf_event_open` where the cause can be told from the attr.
fn explain_einval(attr: &sys::perf_event_attr) -> Option<String> {
    let st = attr.sample_type;
    if attr.has(f::INHERIT) && st & sys::PERF_SAMPLE_READ != 0 && st & sys::PERF_SAMPLE_TID == 0 {
        return Some("inherit with PERF_SAMPLE_READ needs PERF_SAMPLE_TID".into());
    }
    if attr.read_format & !(sys::PERF_FORMAT_MAX - 1) != 0 {
        return Some(format!("unknown read_format bits {:#x}", attr.read_format));
    }
    if st & !(sys::PERF_SAMPLE_MAX - 1) != 0 {
        return Some(format!("unknown sample_type bits {st:#x}"));
    }
    if attr.has(f::FREQ)
        && let Some(max) = std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
        && attr.sample_period > max
    {
        return Some(format!(
            "sample frequency {} Hz is above kernel.perf_event_max_sample_rate ({max})",
            attr.sample_period
        ));
    }
    if attr.has(f::SIGTRAP) && !attr.has(f::REMOVE_ON_EXEC) {
        return Some("sigtrap needs remove_on_exec".into());
    }
    if attr.precise_ip() > 0 && attr.type_ == sys::PERF_TYPE_SOFTWARE {
        return Some("software events have no precise_ip (drop the :p modifier)".into());
    }
    if attr.type_ == sys::PERF_TYPE_BREAKPOINT {
        if attr.bp_type == sys::HW_BREAKPOINT_R {
            return Some("read-only breakpoints are not supported here; use rw".into());
        }
        if attr.bp_type != sys::HW_BREAKPOINT_X
            && (![1, 2, 4, 8].contains(&attr.config2) || attr.config1 % attr.config2.max(1) != 0)
        {
            return Some(format!(
                "breakpoint length must be 1, 2, 4 or 8 and the address aligned to it \
                 (addr {:#x}, len {})",
                attr.config1, attr.config2
            ));
        }
    }
    if attr.has(f::EXCLUSIVE) || attr.has(f::PINNED) {
        return Some("pinned/exclusive are only valid on group leaders".into());
    }
    None
}

impl Counter {
    /// Open `attr` for `target` (close-on-exec), as a group leader of its own.
    pub fn open(attr: &Attr, target: &Target<'_>) -> Result<Counter> {
        Self::open_raw(attr, target, None, 0)
    }

    /// Open `attr` for `target` as a member of `leader`'s group.
    pub fn open_in_group(attr: &Attr, target: &Target<'_>, leader: &Counter) -> Result<Counter> {
        Self::open_raw(attr, target, Some(leader.fd.as_fd()), 0)
    }

    /// Open with an explicit group fd and extra `PERF_FLAG_*` bits (`FD_CLOEXEC` and, for
    /// cgroup targets, `PID_CGROUP` are always added).
    pub fn open_raw(
        attr: &Attr,
        target: &Target<'_>,
        group: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<Counter> {
        let mut raw = *attr.raw();
        // Ask for no more than the fields in use need, so older kernels accept it.
        raw.size = attr.min_size();
        let mut flags = flags | sys::PERF_FLAG_FD_CLOEXEC;
        if target.is_cgroup() {
            flags |= sys::PERF_FLAG_PID_CGROUP;
        }
        let group_fd: RawFd = group.map_or(-1, |g| g.as_raw_fd());
        let name = attr_name(&raw);
        // SAFETY: raw is a valid perf_event_attr on our stack, at least raw.size bytes long,
        // writable (the kernel writes its size back on E2BIG); the other arguments are
        // plain integers, and group_fd is borrowed for the duration of the call.
        let fd = unsafe {
            sys::perf_event_open(
                &mut raw,
                target.pid_arg(),
                target.cpu_arg(),
                group_fd,
                flags as libc::c_ulong,
            )
        };
        if fd < 0 {
            let e = io::Error::last_os_error();
            let mut err = Error::new(Op::Open, e, name, target.pid_value(), target.cpu_arg());
            match err.kind() {
                ErrorKind::AttrTooBig { .. } => {
                    let kernel_size = raw.size;
                    let field = attr
                        .first_field_beyond(kernel_size)
                        .unwrap_or("a newer field");
                    err = err
                        .with_kind(ErrorKind::AttrTooBig { kernel_size })
                        .with_detail(format!(
                            "{field} needs a kernel whose perf_event_attr is larger than \
                             {kernel_size} bytes"
                        ));
                }
                ErrorKind::InvalidAttr => {
                    if let Some(why) = explain_einval(attr.raw()) {
                        err = err.with_detail(why);
                    } else if group.is_some() && attr.raw().type_ != sys::PERF_TYPE_SOFTWARE {
                        err = err.with_detail(
                            "the kernel would not add it to the group: a group is scheduled \
                             all at once, so its hardware events must fit on the PMU's \
                             counters together (and be on the leader's CPU and task); this \
                             one does not fit: split the group or leave this event out of it",
                        );
                    }
                }
                ErrorKind::NotSupported
                    if cfg!(target_arch = "aarch64")
                        && err.errno() == libc::EOPNOTSUPP
                        && raw.type_ != sys::PERF_TYPE_SOFTWARE
                        && raw.type_ != sys::PERF_TYPE_TRACEPOINT
                        && raw.config1 & 1 != 0 =>
                {
                    err = err.with_detail(
                        "a 64-bit counter was asked for (attr.config1 bit 0) and this CPU's \
                         PMU has only 32-bit event counters (64-bit ones came with PMUv3p5): \
                         open it without bit 0 (perfkit::arm64_user_access(attr, false)); \
                         the kernel still counts 64 bits, only user-space reads see 32",
                    );
                }
                ErrorKind::NoSuchTask if target.pid_value() > 0 => {
                    err = err.with_detail(format!("no process or thread {}", target.pid_value()));
                }
                _ => {}
            }
            return Err(err);
        }
        // SAFETY: fd was just returned by the kernel and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Counter {
            fd,
            attr: *attr,
            name: attr_name(attr.raw()),
            pid: target.pid_value(),
            cpu: target.cpu_arg(),
        })
    }

    /// The attr this counter was opened with.
    pub fn attr(&self) -> &Attr {
        &self.attr
    }

    /// A readable name of the event (for messages).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Use `name` in error messages instead of the generic one.
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into();
    }

    fn err(&self, op: Op, e: io::Error) -> Error {
        Error::new(op, e, self.name.clone(), self.pid, self.cpu)
    }

    fn ioctl(&self, name: &'static str, request: libc::c_ulong, arg: libc::c_ulong) -> Result<()> {
        // SAFETY: the fd is live; every request passed here takes an integer argument, or
        // a pointer (cast by the caller) that stays valid for the call.
        let r = unsafe { sys::ioctl::ioctl_arg(self.fd.as_raw_fd(), request, arg) };
        if r < 0 {
            return Err(self.err(Op::Ioctl(name), io::Error::last_os_error()));
        }
        Ok(())
    }

    /// `PERF_EVENT_IOC_ENABLE`
    pub fn enable(&self) -> Result<()> {
        self.ioctl("PERF_EVENT_IOC_ENABLE", sys::PERF_EVENT_IOC_ENABLE, 0)
    }
    /// `PERF_EVENT_IOC_DISABLE`
    pub fn disable(&self) -> Result<()> {
        self.ioctl("PERF_EVENT_IOC_DISABLE", sys::PERF_EVENT_IOC_DISABLE, 0)
    }
    /// `PERF_EVENT_IOC_RESET`: zero the count (not the times).
    pub fn reset(&self) -> Result<()> {
        self.ioctl("PERF_EVENT_IOC_RESET", sys::PERF_EVENT_IOC_RESET, 0)
    }
    /// `PERF_EVENT_IOC_ENABLE` with `PERF_IOC_FLAG_GROUP`: the whole group.
    pub fn enable_group(&self) -> Result<()> {
        let g = sys::PERF_IOC_FLAG_GROUP as libc::c_ulong;
        self.ioctl("PERF_EVENT_IOC_ENABLE", sys::PERF_EVENT_IOC_ENABLE, g)
    }
    /// `PERF_EVENT_IOC_DISABLE` with `PERF_IOC_FLAG_GROUP`.
    pub fn disable_group(&self) -> Result<()> {
        let g = sys::PERF_IOC_FLAG_GROUP as libc::c_ulong;
        self.ioctl("PERF_EVENT_IOC_DISABLE", sys::PERF_EVENT_IOC_DISABLE, g)
    }
    /// `PERF_EVENT_IOC_RESET` with `PERF_IOC_FLAG_GROUP`.
    pub fn reset_group(&self) -> Result<()> {
        let g = sys::PERF_IOC_FLAG_GROUP as libc::c_ulong;
        self.ioctl("PERF_EVENT_IOC_RESET", sys::PERF_EVENT_IOC_RESET, g)
    }
    /// `PERF_EVENT_IOC_REFRESH`: allow `n` more overflows, then disable (sampling events).
    pub fn refresh(&self, n: u32) -> Result<()> {
        self.ioctl(
            "PERF_EVENT_IOC_REFRESH",
            sys::PERF_EVENT_IOC_REFRESH,
            n as libc::c_ulong,
        )
    }
    /// `PERF_EVENT_IOC_PERIOD`: set a new sample period (sampling events).
    pub fn set_period(&self, period: u64) -> Result<()> {
        let p = period;
        self.ioctl(
            "PERF_EVENT_IOC_PERIOD",
            sys::PERF_EVENT_IOC_PERIOD,
            &p as *const u64 as libc::c_ulong,
        )
    }
    /// `PERF_EVENT_IOC_ID`: the event's id (as in samples and `PERF_FORMAT_ID`).
    pub fn id(&self) -> Result<u64> {
        let mut id = 0u64;
        self.ioctl(
            "PERF_EVENT_IOC_ID",
            sys::PERF_EVENT_IOC_ID,
            &mut id as *mut u64 as libc::c_ulong,
        )?;
        Ok(id)
    }
    /// `PERF_EVENT_IOC_SET_OUTPUT`: send this event's records to `to`'s ring buffer
    /// (same CPU, same clock); `None` stops redirecting.
    pub fn set_output(&self, to: Option<&Counter>) -> Result<()> {
        // The kernel reads the argument as a long: -1 must be passed as a 64-bit -1.
        let arg = to.map_or(-1i64, |c| i64::from(c.fd.as_raw_fd()));
        self.ioctl(
            "PERF_EVENT_IOC_SET_OUTPUT",
            sys::PERF_EVENT_IOC_SET_OUTPUT,
            arg as libc::c_ulong,
        )
    }
    /// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint filter such as `prev_pid == 1`.
    pub fn set_filter(&self, filter: &str) -> Result<()> {
        let c = CString::new(filter).map_err(|_| {
            self.err(
                Op::Ioctl("PERF_EVENT_IOC_SET_FILTER"),
                io::Error::new(io::ErrorKind::InvalidInput, "filter contains a NUL byte"),
            )
        })?;
        self.ioctl(
            "PERF_EVENT_IOC_SET_FILTER",
            sys::PERF_EVENT_IOC_SET_FILTER,
            c.as_ptr() as libc::c_ulong,
        )
        .map_err(|e| {
            if e.errno() == libc::EEXIST || e.errno() == libc::EINVAL {
                e.with_detail(format!(
                    "the filter `{filter}` does not parse or names a field the tracepoint \
                     does not have"
                ))
            } else {
                e
            }
        })
    }
    /// `PERF_EVENT_IOC_SET_BPF`: attach a BPF program (by its fd).
    pub fn set_bpf(&self, prog: BorrowedFd<'_>) -> Result<()> {
        self.ioctl(
            "PERF_EVENT_IOC_SET_BPF",
            sys::PERF_EVENT_IOC_SET_BPF,
            prog.as_raw_fd() as libc::c_ulong,
        )
    }
    /// `PERF_EVENT_IOC_PAUSE_OUTPUT`: stop (`true`) or restart writing to the ring buffer.
    pub fn pause_output(&self, pause: bool) -> Result<()> {
        self.ioctl(
            "PERF_EVENT_IOC_PAUSE_OUTPUT",
            sys::PERF_EVENT_IOC_PAUSE_OUTPUT,
            libc::c_ulong::from(pause),
        )
    }
    /// `PERF_EVENT_IOC_MODIFY_ATTRIBUTES`: change a breakpoint's address, length or type.
    ///
    /// The kernel compares every other field with the attr the event was opened with, so
    /// `attr` must differ only in `bp_addr`, `bp_len`, `bp_type` and `disabled`.
    pub fn modify_attributes(&mut self, attr: &Attr) -> Result<()> {
        let mut raw = *attr.raw();
        // The kernel kept the size we opened with; a different one compares unequal.
        raw.size = self.attr.min_size().max(attr.min_size());
        self.ioctl(
            "PERF_EVENT_IOC_MODIFY_ATTRIBUTES",
            sys::PERF_EVENT_IOC_MODIFY_ATTRIBUTES,
            &mut raw as *mut sys::perf_event_attr as libc::c_ulong,
        )?;
        self.attr = *attr;
        Ok(())
    }

    /// Read the counter: value and whatever `read_format` asks for.
    ///
    /// For a group leader opened with `PERF_FORMAT_GROUP`, use [`crate::Group::read`].
    pub fn read(&self) -> Result<Count> {
        let rf = self.attr.raw().read_format;
        let mut buf = [0u64; 5];
        let want = single_read_words(rf);
        if rf & sys::PERF_FORMAT_GROUP != 0 {
            return Err(self.err(
                Op::Read,
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "this counter reads as a group (PERF_FORMAT_GROUP): use Group::read",
                ),
            ));
        }
        let n = read_words(self.fd.as_fd(), &mut buf[..want]).map_err(|e| self.err(Op::Read, e))?;
        match buf.get(..n).and_then(|w| Count::parse(rf, w)) {
            Some(c) if n == want => Ok(c),
            _ => Err(self.err(
                Op::Read,
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short read: {n} of {want} words"),
                ),
            )),
        }
    }

    /// The raw `read(2)` into `buf`, for callers that parse themselves.
    pub fn read_raw(&self, buf: &mut [u64]) -> Result<usize> {
        read_words(self.fd.as_fd(), buf).map_err(|e| self.err(Op::Read, e))
    }

    pub(crate) fn make_error(&self, op: Op, e: io::Error) -> Error {
        self.err(op, e)
    }
}

impl AsFd for Counter {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl From<Counter> for OwnedFd {
    fn from(c: Counter) -> OwnedFd {
        c.fd
    }
}

/// `prctl(PR_TASK_PERF_EVENTS_DISABLE)`: stop every counter attached to this process.
pub fn disable_all_for_this_process() -> io::Result<()> {
    // SAFETY: prctl with these options takes no pointers.
    let r = unsafe { libc::prctl(libc::PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `prctl(PR_TASK_PERF_EVENTS_ENABLE)`: restart every counter attached to this process.
pub fn enable_all_for_this_process() -> io::Result<()> {
    // SAFETY: prctl with these options takes no pointers.
    let r = unsafe { libc::prctl(libc::PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling() {
        assert_eq!(scale(100, 10, 10), Scaled::Exact(100));
        assert_eq!(scale(0, 0, 0), Scaled::Exact(0));
        assert_eq!(scale(0, 10, 0), Scaled::NotCounted);
        match scale(100, 40, 10) {
            Scaled::Scaled {
                estimate,
                raw,
                running_fraction,
            } => {
                assert_eq!(estimate, 400);
                assert_eq!(raw, 100);
                assert!((running_fraction - 0.25).abs() < 1e-12);
            }
            other => panic!("{other:?}"),
        }
        // No overflow for huge values.
        assert_eq!(
            scale(u64::MAX / 2, 4, 2).value(),
            Some((u64::MAX / 2) as u128 as u64 * 2)
        );
    }

    #[test]
    fn parse_read_formats() {
        let rf = sys::PERF_FORMAT_TOTAL_TIME_ENABLED | sys::PERF_FORMAT_ID;
        let c = Count::parse(rf, &[5, 7, 9]).expect("parses");
        assert_eq!(c.value, 5);
        assert_eq!(c.time_enabled, Some(7));
        assert_eq!(c.time_running, None);
        assert_eq!(c.id, Some(9));
        assert_eq!(Count::parse(rf, &[5, 7]), None);
        assert_eq!(single_read_words(rf | sys::PERF_FORMAT_LOST), 4);
    }
}
