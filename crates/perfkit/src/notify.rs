//! Notification: `poll(2)`/epoll on ring wakeups and task exit, overflow signals
//! (`O_ASYNC` + `F_SETOWN_EX` + `F_SETSIG`), and decoding of the `siginfo_t` the kernel
//! sends (`si_fd` for SIGIO, `si_perf_data` for `sigtrap`).
//!
//! # What the kernel signals
//!
//! * **POLLIN** when the ring crosses `wakeup_events` samples or `wakeup_watermark`
//!   bytes (and at each overflow of a `REFRESH`-limited event).
//! * **POLLHUP** when the monitored task exits (per-task events), when a `REFRESH` limit
//!   runs out, or at once for an event without a ring buffer.
//! * **SIGIO** (or the signal chosen with `F_SETSIG`) at the same moments if the fd is
//!   `O_ASYNC`; with `F_SETSIG` the handler's `siginfo_t` carries `si_fd` and `si_code`
//!   (`POLL_IN`, `POLL_HUP`).
//! * **SIGTRAP** with `si_code == TRAP_PERF` synchronously in the task that overflowed,
//!   for events opened with `sigtrap` (+ `remove_on_exec`); `si_perf_data` is
//!   `attr.sig_data`, `si_perf_type` the event's type.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Duration;

/// `si_code` values of the signals perf sends (include/uapi/asm-generic/siginfo.h).
pub mod si_code {
    /// SIGIO for a wakeup (data to read).
    pub const POLL_IN: i32 = 1;
    /// SIGIO for a hangup: the task exited or a REFRESH limit ran out.
    pub const POLL_HUP: i32 = 6;
    /// SIGTRAP from a `sigtrap` event.
    pub const TRAP_PERF: i32 = 6;
}

/// The poll bits of one fd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PollEvents {
    /// POLLIN: data to read (a wakeup).
    pub readable: bool,
    /// POLLHUP: the task exited, a REFRESH limit ran out, or there is no ring.
    pub hangup: bool,
    /// POLLERR
    pub error: bool,
}

impl PollEvents {
    fn from_poll(revents: i16) -> PollEvents {
        PollEvents {
            readable: revents & libc::POLLIN != 0,
            hangup: revents & libc::POLLHUP != 0,
            error: revents & libc::POLLERR != 0,
        }
    }
    fn from_epoll(events: u32) -> PollEvents {
        PollEvents {
            readable: events & libc::EPOLLIN as u32 != 0,
            hangup: events & libc::EPOLLHUP as u32 != 0,
            error: events & libc::EPOLLERR as u32 != 0,
        }
    }
}

fn timeout_ms(timeout: Option<Duration>) -> i32 {
    timeout.map_or(-1, |t| t.as_millis().min(i32::MAX as u128) as i32)
}

/// `poll(2)` one fd for POLLIN; `Ok(None)` on timeout.
pub fn poll_fd(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<Option<PollEvents>> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    loop {
        // SAFETY: one valid pollfd, count 1.
        let r = unsafe { libc::poll(&mut p, 1, timeout_ms(timeout)) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        return Ok((r > 0).then(|| PollEvents::from_poll(p.revents)));
    }
}

/// A handle that stops a [`Poller`] wait, from any thread or a signal handler: an
/// `eventfd` registered in the poller's epoll set. Cloneable; cheap.
#[derive(Clone, Debug)]
pub struct Stopper {
    fd: Arc<OwnedFd>,
}

impl Stopper {
    /// Wake the poller and make it report [`Ready::Stopped`] (now and on every later
    /// wait). Only `write(2)`: safe to call from a signal handler through
    /// [`raw_fd`](Self::raw_fd).
    pub fn stop(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a live u64 to our eventfd.
        unsafe {
            libc::write(self.fd.as_raw_fd(), (&raw const one).cast(), 8);
        }
    }

    /// The eventfd, for a signal handler: `write(fd, &1u64, 8)` is async-signal-safe
    /// and does what [`stop`](Self::stop) does. Valid while any clone lives.
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Whether [`stop`](Self::stop) was called (reads without consuming).
    pub fn is_stopped(&self) -> bool {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, zero timeout.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }
}

/// What a [`Poller::wait`] saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ready {
    /// These tokens (as registered with [`Poller::add`]) have events.
    Events(Vec<(u64, PollEvents)>),
    /// The timeout passed with nothing ready.
    Timeout,
    /// The [`Stopper`] was used.
    Stopped,
}

const STOP_TOKEN: u64 = u64::MAX;

/// An epoll set of perf fds (rings of many CPUs) plus a stop eventfd.
#[derive(Debug)]
pub struct Poller {
    epoll: OwnedFd,
    stop: Stopper,
    registered: usize,
}

impl Poller {
    /// An empty set with its stop eventfd (`epoll_create1`, `eventfd`, both close-on-exec).
    pub fn new() -> io::Result<Poller> {
        // SAFETY: no pointers.
        let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if ep < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: ep was just returned to us.
        let epoll = unsafe { OwnedFd::from_raw_fd(ep) };
        // SAFETY: no pointers.
        let ev = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if ev < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: ev was just returned to us.
        let evfd = unsafe { OwnedFd::from_raw_fd(ev) };
        let p = Poller {
            epoll,
            stop: Stopper { fd: Arc::new(evfd) },
            registered: 0,
        };
        p.ctl(libc::EPOLL_CTL_ADD, p.stop.fd.as_fd(), STOP_TOKEN)?;
        Ok(p)
    }

    fn ctl(&self, op: i32, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLHUP) as u32,
            u64: token,
        };
        // SAFETY: valid epoll fd, target fd and event struct for the call.
        let r = unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), op, fd.as_raw_fd(), &mut ev) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Watch `fd` (a perf event or ring) for POLLIN/POLLHUP, reported as `token`
    /// (any value but `u64::MAX`).
    pub fn add(&mut self, fd: BorrowedFd<'_>, token: u64) -> io::Result<()> {
        if token == STOP_TOKEN {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "token u64::MAX is reserved for the stop eventfd",
            ));
        }
        self.ctl(libc::EPOLL_CTL_ADD, fd, token)?;
        self.registered += 1;
        Ok(())
    }

    /// Stop watching `fd` (for example after its POLLHUP, which epoll repeats forever).
    pub fn remove(&mut self, fd: BorrowedFd<'_>) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0)?;
        self.registered = self.registered.saturating_sub(1);
        Ok(())
    }

    /// Number of fds watched (the stop eventfd not counted).
    pub fn len(&self) -> usize {
        self.registered
    }

    /// Whether no fd is watched.
    pub fn is_empty(&self) -> bool {
        self.registered == 0
    }

    /// A handle to stop waits from elsewhere.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Wait for events (`epoll_wait`), retrying on EINTR. A stop wins over other events.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<Ready> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 64];
        loop {
            // SAFETY: evs is a writable array of evs.len() epoll_events.
            let n = unsafe {
                libc::epoll_wait(
                    self.epoll.as_raw_fd(),
                    evs.as_mut_ptr(),
                    evs.len() as i32,
                    timeout_ms(timeout),
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if n == 0 {
                return Ok(Ready::Timeout);
            }
            let got = &evs[..n as usize];
            if got.iter().any(|e| e.u64 == STOP_TOKEN) {
                return Ok(Ready::Stopped);
            }
            return Ok(Ready::Events(
                got.iter()
                    .map(|e| (e.u64, PollEvents::from_epoll(e.events)))
                    .collect(),
            ));
        }
    }
}

// fcntl ABI values (include/uapi/asm-generic/fcntl.h), not exported by the libc crate.
const F_SETSIG: i32 = 10;
const F_SETOWN_EX: i32 = 15;
const F_OWNER_TID: i32 = 0;
const F_OWNER_PID: i32 = 1;

/// `struct f_owner_ex`.
#[repr(C)]
struct FOwnerEx {
    type_: i32,
    pid: i32,
}

/// Overflow signals for a perf fd: `fcntl(F_SETFL, O_ASYNC | O_NONBLOCK)`,
/// `F_SETOWN_EX` (a thread or process) and `F_SETSIG`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncSignal {
    /// The signal to send (`F_SETSIG`); with a non-zero signal the handler gets
    /// `si_fd` and the POLL_* `si_code`. 0 means plain SIGIO without that information.
    pub signal: i32,
    /// The thread to signal (`F_OWNER_TID`), or `None` for this process
    /// (`F_OWNER_PID`).
    pub thread: Option<i32>,
}

impl AsyncSignal {
    /// Signal `signal` to the calling thread.
    pub fn to_this_thread(signal: i32) -> AsyncSignal {
        // SAFETY: gettid takes no arguments.
        let tid = unsafe { libc::gettid() };
        AsyncSignal {
            signal,
            thread: Some(tid),
        }
    }

    /// Configure `fd`.
    pub fn apply(&self, fd: BorrowedFd<'_>) -> io::Result<()> {
        let raw = fd.as_raw_fd();
        let owner = match self.thread {
            Some(tid) => FOwnerEx {
                type_: F_OWNER_TID,
                pid: tid,
            },
            None => FOwnerEx {
                type_: F_OWNER_PID,
                // SAFETY: getpid takes no arguments.
                pid: unsafe { libc::getpid() },
            },
        };
        // SAFETY: fcntl on a live fd with a pointer to a valid f_owner_ex / integers.
        unsafe {
            if libc::fcntl(raw, F_SETOWN_EX, &raw const owner) < 0
                || libc::fcntl(raw, F_SETSIG, self.signal) < 0
            {
                return Err(io::Error::last_os_error());
            }
            let fl = libc::fcntl(raw, libc::F_GETFL);
            if fl < 0 || libc::fcntl(raw, libc::F_SETFL, fl | libc::O_ASYNC | libc::O_NONBLOCK) < 0
            {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Overflow signals taken synchronously by one thread: the signal is blocked in the thread
/// that creates the waiter (so its default action never runs) and [`wait`](Self::wait)
/// takes one queued instance with `sigtimedwait`. Pair it with
/// [`AsyncSignal::to_this_thread`] (or [`thread`](Self::thread)) on the perf fds; use a
/// real-time signal ([`rt_signal`]) so overflows queue instead of merging.
#[derive(Debug)]
pub struct SignalWaiter {
    signal: i32,
    set: libc::sigset_t,
    tid: i32,
}

/// The `n`th real-time signal glibc leaves to programs (`SIGRTMIN + n`).
pub fn rt_signal(n: i32) -> i32 {
    libc::SIGRTMIN() + n
}

impl SignalWaiter {
    /// Block `signal` in the calling thread and wait for it there.
    pub fn block_in_this_thread(signal: i32) -> io::Result<SignalWaiter> {
        // SAFETY: sigemptyset/sigaddset initialise a local sigset_t; pthread_sigmask
        // changes this thread's mask only, with a valid set and no old-set pointer;
        // gettid takes no arguments.
        let (set, tid) = unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            if libc::sigaddset(&mut set, signal) < 0 {
                return Err(io::Error::last_os_error());
            }
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            (set, libc::gettid())
        };
        Ok(SignalWaiter { signal, set, tid })
    }

    /// The thread that waits (for [`AsyncSignal::thread`]).
    pub fn thread(&self) -> i32 {
        self.tid
    }

    /// Take one pending instance of the signal, waiting at most `timeout`; false on
    /// timeout (or an interruption by another signal).
    pub fn wait(&self, timeout: Duration) -> bool {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the set and timespec are valid for the call; a null siginfo pointer is
        // allowed. Only the blocked signal is taken.
        let got = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        got == self.signal
    }
}

/// The bytes of a `siginfo_t` at `offset`.
fn siginfo_word<T: Copy>(info: &libc::siginfo_t, offset: usize) -> T {
    debug_assert!(offset + std::mem::size_of::<T>() <= std::mem::size_of::<libc::siginfo_t>());
    // SAFETY: siginfo_t is 128 bytes of plain data; offset + size_of::<T>() stays inside
    // it for the offsets used here (16..40), read unaligned.
    unsafe {
        std::ptr::read_unaligned(
            (info as *const libc::siginfo_t)
                .cast::<u8>()
                .add(offset)
                .cast::<T>(),
        )
    }
}

/// `si_fd` of a SIGIO-style signal (`_sigpoll`: `si_band` at 16, `si_fd` at 24 on
/// 64-bit Linux): the perf fd that overflowed, when `F_SETSIG` was used.
#[cfg(target_pointer_width = "64")]
pub fn siginfo_fd(info: &libc::siginfo_t) -> i32 {
    siginfo_word::<i32>(info, 24)
}

/// `(si_perf_data, si_perf_type)` of a `TRAP_PERF` SIGTRAP (`_sigfault._perf`:
/// `_data` at 24, `_type` at 32 on 64-bit Linux), or `None` if `si_code` is not
/// `TRAP_PERF` (6).
#[cfg(target_pointer_width = "64")]
pub fn siginfo_perf(info: &libc::siginfo_t) -> Option<(u64, u32)> {
    (info.si_signo == libc::SIGTRAP && info.si_code == si_code::TRAP_PERF)
        .then(|| (siginfo_word::<u64>(info, 24), siginfo_word::<u32>(info, 32)))
}
