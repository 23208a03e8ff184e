//! The raw `perf_event_open(2)` system call and the `PERF_EVENT_IOC_*` ioctls.
//!
//! These are thin `unsafe` wrappers that return the kernel's result unchanged (`-1` with
//! `errno` set on failure); the safe layer lives in the `perfkit` crate.

use crate::perf_event_attr;
use core::ffi::{c_int, c_ulong};

const IOC_NONE: c_ulong = 0;
const IOC_WRITE: c_ulong = 1;
const IOC_READ: c_ulong = 2;

const fn ioc(dir: c_ulong, nr: c_ulong, size: usize) -> c_ulong {
    (dir << 30) | ((size as c_ulong) << 16) | ((b'$' as c_ulong) << 8) | nr
}

const PTR: usize = core::mem::size_of::<usize>();

/// The ioctl request numbers (`_IO('$', n)` and friends).
pub mod ioctl {
    use super::*;
    /// `_IO('$', 0)`: enable the event (arg: 0 or `PERF_IOC_FLAG_GROUP`).
    pub const PERF_EVENT_IOC_ENABLE: c_ulong = ioc(IOC_NONE, 0, 0);
    /// `_IO('$', 1)`: disable the event.
    pub const PERF_EVENT_IOC_DISABLE: c_ulong = ioc(IOC_NONE, 1, 0);
    /// `_IO('$', 2)`: add to the overflow refresh count.
    pub const PERF_EVENT_IOC_REFRESH: c_ulong = ioc(IOC_NONE, 2, 0);
    /// `_IO('$', 3)`: zero the count.
    pub const PERF_EVENT_IOC_RESET: c_ulong = ioc(IOC_NONE, 3, 0);
    /// `_IOW('$', 4, __u64)`: set the sample period (arg: pointer to u64).
    pub const PERF_EVENT_IOC_PERIOD: c_ulong = ioc(IOC_WRITE, 4, 8);
    /// `_IO('$', 5)`: send records to another event's ring (arg: fd, or -1 as a long).
    pub const PERF_EVENT_IOC_SET_OUTPUT: c_ulong = ioc(IOC_NONE, 5, 0);
    /// `_IOW('$', 6, char *)`: set a tracepoint filter (arg: C string).
    pub const PERF_EVENT_IOC_SET_FILTER: c_ulong = ioc(IOC_WRITE, 6, PTR);
    /// `_IOR('$', 7, __u64 *)`: read the event id (arg: pointer to u64).
    pub const PERF_EVENT_IOC_ID: c_ulong = ioc(IOC_READ, 7, PTR);
    /// `_IOW('$', 8, __u32)`: attach a BPF program (arg: program fd).
    pub const PERF_EVENT_IOC_SET_BPF: c_ulong = ioc(IOC_WRITE, 8, 4);
    /// `_IOW('$', 9, __u32)`: pause (1) or resume (0) ring output.
    pub const PERF_EVENT_IOC_PAUSE_OUTPUT: c_ulong = ioc(IOC_WRITE, 9, 4);
    /// `_IOWR('$', 10, struct perf_event_query_bpf *)`: list attached BPF programs.
    pub const PERF_EVENT_IOC_QUERY_BPF: c_ulong = ioc(IOC_READ | IOC_WRITE, 10, PTR);
    /// `_IOW('$', 11, struct perf_event_attr *)`: modify attributes (breakpoints).
    pub const PERF_EVENT_IOC_MODIFY_ATTRIBUTES: c_ulong = ioc(IOC_WRITE, 11, PTR);

    /// Issue `request` with an integer argument.
    ///
    /// # Safety
    /// `fd` must be a valid file descriptor and `arg` must be what `request` expects (an
    /// integer, or a valid pointer cast to an integer for the pointer-taking requests).
    pub unsafe fn ioctl_arg(fd: c_int, request: c_ulong, arg: c_ulong) -> c_int {
        // SAFETY: the caller guarantees fd and arg fit the request.
        unsafe { libc::ioctl(fd, request as _, arg) }
    }
}

pub use ioctl::*;

/// `perf_event_open(2)`: returns a new fd, or -1 with errno set.
///
/// # Safety
/// `attr` must point to a valid, writable `perf_event_attr` whose `size` field does not
/// exceed the memory behind the pointer (the kernel writes back its own size on E2BIG).
pub unsafe fn perf_event_open(
    attr: *mut perf_event_attr,
    pid: libc::pid_t,
    cpu: c_int,
    group_fd: c_int,
    flags: c_ulong,
) -> c_int {
    // SAFETY: the caller guarantees attr is valid; the other arguments are plain integers.
    unsafe { libc::syscall(libc::SYS_perf_event_open, attr, pid, cpu, group_fd, flags) as c_int }
}

#[cfg(test)]
mod tests {
    use super::ioctl::*;

    #[test]
    fn ioctl_numbers_match_the_kernel_on_64_bit() {
        // Values from the kernel's _IOC encoding on x86_64 and arm64.
        assert_eq!(PERF_EVENT_IOC_ENABLE, 0x2400);
        assert_eq!(PERF_EVENT_IOC_DISABLE, 0x2401);
        assert_eq!(PERF_EVENT_IOC_REFRESH, 0x2402);
        assert_eq!(PERF_EVENT_IOC_RESET, 0x2403);
        assert_eq!(PERF_EVENT_IOC_PERIOD, 0x4008_2404);
        assert_eq!(PERF_EVENT_IOC_SET_OUTPUT, 0x2405);
        assert_eq!(PERF_EVENT_IOC_SET_FILTER, 0x4008_2406);
        assert_eq!(PERF_EVENT_IOC_ID, 0x8008_2407);
        assert_eq!(PERF_EVENT_IOC_SET_BPF, 0x4004_2408);
        assert_eq!(PERF_EVENT_IOC_PAUSE_OUTPUT, 0x4004_2409);
        assert_eq!(PERF_EVENT_IOC_QUERY_BPF, 0xc008_240a);
        assert_eq!(PERF_EVENT_IOC_MODIFY_ATTRIBUTES, 0x4008_240b);
    }
}

#[cfg(test)]
mod kernel_tests {
    use crate::*;

    /// An attr larger than the kernel's, with a non-zero byte past its end: the kernel
    /// refuses it with E2BIG and writes back the size it supports.
    #[test]
    fn oversized_attr_gets_e2big_and_the_kernel_size() {
        #[repr(C)]
        struct Bigger {
            attr: perf_event_attr,
            future: [u64; 4],
        }
        let mut big = Bigger {
            attr: perf_event_attr::new(),
            future: [0, 0, 0, 1],
        };
        big.attr.type_ = PERF_TYPE_SOFTWARE;
        big.attr.config = PERF_COUNT_SW_DUMMY;
        big.attr.size = core::mem::size_of::<Bigger>() as u32;
        big.attr.flags = attr_flags::DISABLED | attr_flags::EXCLUDE_KERNEL;
        // SAFETY: big is a valid, writable buffer of big.attr.size bytes.
        let fd = unsafe { perf_event_open(&mut big.attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC as _) };
        let errno = std::io::Error::last_os_error().raw_os_error();
        assert_eq!(fd, -1);
        assert_eq!(errno, Some(libc::E2BIG));
        assert!(big.attr.size >= PERF_ATTR_SIZE_VER8 && big.attr.size < 168);

        // With the tail zeroed, the larger size is accepted.
        big.future = [0; 4];
        big.attr.size = core::mem::size_of::<Bigger>() as u32;
        // SAFETY: as above.
        let fd = unsafe { perf_event_open(&mut big.attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC as _) };
        assert!(fd >= 0, "{}", std::io::Error::last_os_error());
        // SAFETY: closing the fd we just opened.
        unsafe { libc::close(fd) };
    }
}
