//! The raw `perf_event_open(2)` system call and the `PERF_EVENT_IOC_*` ioctls.
//!
//! These are thin `unsafe` wrappers that return the kernel's result unchanged (`-1` with
//! `errno` set on failure); the safe layer lives in the `perfkit` crate.

use crate::perf_event_attr;
use core::ffi::{c_int, c_ulong};

/// How an architecture packs an ioctl request number (`include/uapi/asm-generic/ioctl.h`
/// and the arch overrides in `arch/*/include/uapi/asm/ioctl.h`): bits 0-7 the number,
/// 8-15 the type (`'$'` for perf), then `size_bits` of argument size, then `dir_bits`
/// of direction, with the direction values the arch chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IocLayout {
    /// `_IOC_NONE`: no argument copied.
    pub none: u32,
    /// `_IOC_READ`: the kernel writes the argument (user space reads).
    pub read: u32,
    /// `_IOC_WRITE`: the kernel reads the argument.
    pub write: u32,
    /// `_IOC_SIZEBITS`.
    pub size_bits: u32,
    /// `_IOC_DIRBITS`.
    pub dir_bits: u32,
}

impl IocLayout {
    /// The generic layout (x86, arm, arm64, riscv, s390, loongarch ...): `_IOC_NONE` 0,
    /// `_IOC_WRITE` 1, `_IOC_READ` 2, 14 size bits, 2 direction bits.
    pub const GENERIC: IocLayout = IocLayout {
        none: 0,
        read: 2,
        write: 1,
        size_bits: 14,
        dir_bits: 2,
    };
    /// The layout of powerpc, mips and sparc (and alpha): `_IOC_NONE` 1, `_IOC_READ` 2,
    /// `_IOC_WRITE` 4, 13 size bits, 3 direction bits.
    pub const POWERPC_MIPS_SPARC: IocLayout = IocLayout {
        none: 1,
        read: 2,
        write: 4,
        size_bits: 13,
        dir_bits: 3,
    };

    /// The layout of the architecture this crate is compiled for.
    pub const NATIVE: IocLayout = if cfg!(any(
        target_arch = "powerpc",
        target_arch = "powerpc64",
        target_arch = "mips",
        target_arch = "mips32r6",
        target_arch = "mips64",
        target_arch = "mips64r6",
        target_arch = "sparc",
        target_arch = "sparc64",
    )) {
        IocLayout::POWERPC_MIPS_SPARC
    } else {
        IocLayout::GENERIC
    };

    /// `_IOC(dir, type, nr, size)` in this layout; `dir` is a combination of this
    /// layout's `none`/`read`/`write` values. A `size` that does not fit the size bits
    /// is a compile-time panic where evaluated in a const.
    pub const fn encode(&self, dir: u32, ty: u8, nr: u8, size: usize) -> u64 {
        assert!(
            size < (1usize << self.size_bits),
            "ioctl argument too large"
        );
        assert!(dir < (1u32 << self.dir_bits), "bad ioctl direction");
        let size_shift = 16;
        let dir_shift = size_shift + self.size_bits;
        ((dir as u64) << dir_shift) | ((size as u64) << size_shift) | ((ty as u64) << 8) | nr as u64
    }

    /// `_IO(ty, nr)`.
    pub const fn io(&self, ty: u8, nr: u8) -> u64 {
        self.encode(self.none, ty, nr, 0)
    }
    /// `_IOR(ty, nr, size)`.
    pub const fn ior(&self, ty: u8, nr: u8, size: usize) -> u64 {
        self.encode(self.read, ty, nr, size)
    }
    /// `_IOW(ty, nr, size)`.
    pub const fn iow(&self, ty: u8, nr: u8, size: usize) -> u64 {
        self.encode(self.write, ty, nr, size)
    }
    /// `_IOWR(ty, nr, size)`.
    pub const fn iowr(&self, ty: u8, nr: u8, size: usize) -> u64 {
        self.encode(self.read | self.write, ty, nr, size)
    }
}

const N: IocLayout = IocLayout::NATIVE;
const PERF: u8 = b'$';
const PTR: usize = core::mem::size_of::<usize>();

/// The ioctl request numbers (`_IO('$', n)` and friends).
pub mod ioctl {
    use super::*;
    /// `_IO('$', 0)`: enable the event (arg: 0 or `PERF_IOC_FLAG_GROUP`).
    pub const PERF_EVENT_IOC_ENABLE: c_ulong = N.io(PERF, 0) as c_ulong;
    /// `_IO('$', 1)`: disable the event.
    pub const PERF_EVENT_IOC_DISABLE: c_ulong = N.io(PERF, 1) as c_ulong;
    /// `_IO('$', 2)`: add to the overflow refresh count.
    pub const PERF_EVENT_IOC_REFRESH: c_ulong = N.io(PERF, 2) as c_ulong;
    /// `_IO('$', 3)`: zero the count.
    pub const PERF_EVENT_IOC_RESET: c_ulong = N.io(PERF, 3) as c_ulong;
    /// `_IOW('$', 4, __u64)`: set the sample period (arg: pointer to u64).
    pub const PERF_EVENT_IOC_PERIOD: c_ulong = N.iow(PERF, 4, 8) as c_ulong;
    /// `_IO('$', 5)`: send records to another event's ring (arg: fd, or -1 as a long).
    pub const PERF_EVENT_IOC_SET_OUTPUT: c_ulong = N.io(PERF, 5) as c_ulong;
    /// `_IOW('$', 6, char *)`: set a tracepoint filter (arg: C string).
    pub const PERF_EVENT_IOC_SET_FILTER: c_ulong = N.iow(PERF, 6, PTR) as c_ulong;
    /// `_IOR('$', 7, __u64 *)`: read the event id (arg: pointer to u64).
    pub const PERF_EVENT_IOC_ID: c_ulong = N.ior(PERF, 7, PTR) as c_ulong;
    /// `_IOW('$', 8, __u32)`: attach a BPF program (arg: program fd).
    pub const PERF_EVENT_IOC_SET_BPF: c_ulong = N.iow(PERF, 8, 4) as c_ulong;
    /// `_IOW('$', 9, __u32)`: pause (1) or resume (0) ring output.
    pub const PERF_EVENT_IOC_PAUSE_OUTPUT: c_ulong = N.iow(PERF, 9, 4) as c_ulong;
    /// `_IOWR('$', 10, struct perf_event_query_bpf *)`: list attached BPF programs.
    pub const PERF_EVENT_IOC_QUERY_BPF: c_ulong = N.iowr(PERF, 10, PTR) as c_ulong;
    /// `_IOW('$', 11, struct perf_event_attr *)`: modify attributes (breakpoints).
    pub const PERF_EVENT_IOC_MODIFY_ATTRIBUTES: c_ulong = N.iow(PERF, 11, PTR) as c_ulong;

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

    use super::IocLayout;

    /// The numbers of each perf ioctl as the kernel headers compute them for a 64-bit
    /// target (pointer arguments are 8 bytes), in `layout`.
    fn perf_numbers(l: IocLayout) -> [u64; 12] {
        let p = b'$';
        [
            l.io(p, 0),
            l.io(p, 1),
            l.io(p, 2),
            l.io(p, 3),
            l.iow(p, 4, 8),
            l.io(p, 5),
            l.iow(p, 6, 8),
            l.ior(p, 7, 8),
            l.iow(p, 8, 4),
            l.iow(p, 9, 4),
            l.iowr(p, 10, 8),
            l.iow(p, 11, 8),
        ]
    }

    #[test]
    fn generic_layout_numbers() {
        // x86_64 / arm64 (`perf_event.h` through asm-generic/ioctl.h).
        assert_eq!(
            perf_numbers(IocLayout::GENERIC),
            [
                0x2400,
                0x2401,
                0x2402,
                0x2403,
                0x4008_2404,
                0x2405,
                0x4008_2406, // SET_FILTER
                0x8008_2407, // ID
                0x4004_2408,
                0x4004_2409,
                0xc008_240a,
                0x4008_240b,
            ]
        );
    }

    #[test]
    fn powerpc_mips_sparc_layout_numbers() {
        // powerpc64 / mips64 / sparc64: _IOC_NONE 1, _IOC_READ 2, _IOC_WRITE 4 at bit 29.
        assert_eq!(
            perf_numbers(IocLayout::POWERPC_MIPS_SPARC),
            [
                0x2000_2400, // ENABLE
                0x2000_2401,
                0x2000_2402,
                0x2000_2403,
                0x8008_2404,
                0x2000_2405,
                0x8008_2406, // SET_FILTER
                0x4008_2407, // ID
                0x8004_2408,
                0x8004_2409,
                0xc008_240a,
                0x8008_240b,
            ]
        );
        // 32-bit powerpc: pointer arguments are 4 bytes.
        let l = IocLayout::POWERPC_MIPS_SPARC;
        assert_eq!(l.iow(b'$', 6, 4), 0x8004_2406);
        assert_eq!(l.ior(b'$', 7, 4), 0x4004_2407);
    }

    #[test]
    // c_ulong is u32 on 32-bit targets: the casts are needed there.
    #[allow(clippy::unnecessary_cast)]
    fn native_constants_use_the_native_layout() {
        let l = IocLayout::NATIVE;
        let ptr = core::mem::size_of::<usize>();
        assert_eq!(PERF_EVENT_IOC_ENABLE as u64, l.io(b'$', 0));
        assert_eq!(PERF_EVENT_IOC_SET_FILTER as u64, l.iow(b'$', 6, ptr));
        assert_eq!(PERF_EVENT_IOC_ID as u64, l.ior(b'$', 7, ptr));
        assert_eq!(PERF_EVENT_IOC_QUERY_BPF as u64, l.iowr(b'$', 10, ptr));
        #[cfg(target_arch = "x86_64")]
        {
            assert_eq!(l, IocLayout::GENERIC);
            assert_eq!(PERF_EVENT_IOC_ID, 0x8008_2407);
        }
        #[cfg(target_arch = "powerpc64")]
        assert_eq!(PERF_EVENT_IOC_ID, 0x4008_2407);
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
