//! User-space counter reads (self-monitoring) through the user page
//! (`struct perf_event_mmap_page`), without a system call where the hardware allows.
//!
//! # The protocol (include/uapi/linux/perf_event.h)
//!
//! The kernel updates the page under a sequence count `lock`. A reader loops: load
//! `lock`, compiler barrier, load `time_enabled`, `time_running`, the time conversion
//! fields (reading the cycle counter), `index` and `offset`, read hardware counter
//! `index` when it is non-zero, compiler barrier, and retry if `lock` changed. The value
//! is `offset + sign_extend(pmc, pmc_width)`.
//!
//! Times are brought up to date with the cycle counter (TSC on x86_64, `CNTVCT_EL0` on
//! arm64): `quot = cyc >> time_shift; rem = cyc & ((1 << time_shift) - 1);
//! delta = time_offset + quot * time_mult + ((rem * time_mult) >> time_shift)`, with
//! `cyc = time_cycles + ((cyc - time_cycles) & time_mask)` first when
//! `cap_user_time_short`; `delta` is added to `time_enabled`, and to `time_running` when
//! the counter is on the PMU (`index != 0`).
//!
//! **`index == 0` means "not readable here"** (no PMU, the event is not scheduled, or
//! user access is off — arm64 still sets `cap_user_rdpmc` with `perf_user_access=0`), so
//! [`SelfMonitor::read`] falls back to `read(2)` whenever the index is 0, whatever the
//! capability bits say.
//!
//! # Clock conversions
//!
//! With `cap_user_time_zero`, [`TimeConv`] converts between perf timestamps and the
//! cycle counter exactly. [`ClockOffset`] relates perf timestamps to any POSIX clock
//! (monotonic, realtime) by bracketing a kernel-timestamped record, which works on
//! every machine, with or without a usable TSC.
//!
//! # Hardware reads
//!
//! * x86_64: `rdpmc` with `ecx = index - 1`.
//! * aarch64: `index == 32` is `PMCCNTR_EL0`, otherwise `PMEVCNTR<index-1>_EL0`; the
//!   register is encoded in the `mrs` instruction, so the read is a match over 0..=30.
//!   Arm64 needs `sysctl kernel.perf_user_access=1` and `attr.config1` bit 1 (user
//!   access; bit 0 asks for a 64-bit counter): see [`arm64_user_access`].

use crate::attr::Attr;
use crate::counter::Counter;
use crate::error::{Error, Op, Result};
use crate::ring::{Mapping, RingBuffer, page_size};
use crate::target::Target;
use perfkit_sys::{mmap_cap, perf_event_mmap_page};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{Ordering, compiler_fence};

/// Where the hardware values come from: the real instructions ([`NativeHw`]) or, in
/// tests, anything else.
pub trait HwReader {
    /// The hardware counter for the user page's `index` (1-based; 32 = arm64 cycle
    /// counter). Only called with `index != 0`.
    fn counter(&mut self, index: u32) -> u64;
    /// The cycle counter the time fields convert (TSC / `CNTVCT_EL0`).
    fn cycles(&mut self) -> u64;
}

/// The CPU's own counters: `rdpmc`/`rdtsc` on x86_64, `mrs` on aarch64.
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeHw;

impl NativeHw {
    /// Whether this architecture has user-space counter reads implemented.
    pub const SUPPORTED: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));
}

#[cfg(target_arch = "x86_64")]
impl HwReader for NativeHw {
    #[inline]
    fn counter(&mut self, index: u32) -> u64 {
        let (lo, hi): (u32, u32);
        // SAFETY: rdpmc is only reached with a non-zero index from a user page, which the
        // kernel sets only when it has enabled CR4.PCE for this task and counter; it
        // reads a register, touching no memory.
        unsafe {
            core::arch::asm!(
                "rdpmc",
                in("ecx") index.wrapping_sub(1),
                out("eax") lo,
                out("edx") hi,
                options(nomem, nostack, preserves_flags)
            );
        }
        (u64::from(hi) << 32) | u64::from(lo)
    }
    #[inline]
    fn cycles(&mut self) -> u64 {
        // SAFETY: rdtsc is always available on x86_64 and only reads the TSC.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
}

#[cfg(target_arch = "aarch64")]
impl HwReader for NativeHw {
    #[inline]
    fn counter(&mut self, index: u32) -> u64 {
        if index == 32 {
            let v: u64;
            // SAFETY: reached only when the kernel published this counter in the user
            // page (user access enabled via PMUSERENR_EL0); reads a system register.
            unsafe {
                core::arch::asm!("mrs {0}, pmccntr_el0", out(reg) v,
                                 options(nomem, nostack, preserves_flags));
            }
            return v;
        }
        macro_rules! pmevcntr {
            ($n:expr; $($k:literal)*) => {
                match $n {
                    $(
                        $k => {
                            let v: u64;
                            // SAFETY: as above, for event counter $k.
                            unsafe {
                                core::arch::asm!(
                                    concat!("mrs {0}, pmevcntr", stringify!($k), "_el0"),
                                    out(reg) v,
                                    options(nomem, nostack, preserves_flags)
                                );
                            }
                            v
                        }
                    )*
                    _ => 0,
                }
            };
        }
        pmevcntr!(index.wrapping_sub(1);
            0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)
    }
    #[inline]
    fn cycles(&mut self) -> u64 {
        let v: u64;
        // SAFETY: CNTVCT_EL0 is readable at EL0 on Linux; the isb orders the read after
        // the preceding instructions, as the kernel's own reader does.
        unsafe {
            core::arch::asm!("isb", "mrs {0}, cntvct_el0", out(reg) v,
                             options(nomem, nostack, preserves_flags));
        }
        v
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
impl HwReader for NativeHw {
    fn counter(&mut self, _index: u32) -> u64 {
        0
    }
    fn cycles(&mut self) -> u64 {
        0
    }
}

/// The time conversion fields of a user page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeConv {
    /// `time_shift`
    pub time_shift: u16,
    /// `time_mult`
    pub time_mult: u32,
    /// `time_offset`
    pub time_offset: u64,
    /// `time_zero` (valid with `cap_user_time_zero`)
    pub time_zero: u64,
    /// `time_cycles` (valid with `cap_user_time_short`)
    pub time_cycles: u64,
    /// `time_mask` (valid with `cap_user_time_short`)
    pub time_mask: u64,
    /// `capabilities` bits ([`mmap_cap`]).
    pub capabilities: u64,
}

impl TimeConv {
    /// `cap_user_time`: `time_mult`/`time_shift`/`time_offset` are valid.
    pub fn has_time(&self) -> bool {
        self.capabilities & mmap_cap::CAP_USER_TIME != 0
    }
    /// `cap_user_time_zero`: `time_zero` is valid.
    pub fn has_time_zero(&self) -> bool {
        self.capabilities & mmap_cap::CAP_USER_TIME_ZERO != 0
    }
    /// `cap_user_time_short`: the cycle counter is narrow; use `time_cycles`/`time_mask`.
    pub fn is_short(&self) -> bool {
        self.capabilities & mmap_cap::CAP_USER_TIME_SHORT != 0
    }

    /// Widen a short cycle count: `time_cycles + ((cyc - time_cycles) & time_mask)`.
    pub fn widen(&self, cyc: u64) -> u64 {
        if self.is_short() {
            self.time_cycles
                .wrapping_add(cyc.wrapping_sub(self.time_cycles) & self.time_mask)
        } else {
            cyc
        }
    }

    /// Cycles to nanoseconds: `quot * time_mult + ((rem * time_mult) >> time_shift)`
    /// with `quot = cyc >> time_shift`, `rem = cyc & ((1 << time_shift) - 1)`.
    pub fn scale(&self, cyc: u64) -> u64 {
        let shift = u32::from(self.time_shift).min(63);
        let mult = u64::from(self.time_mult);
        let quot = cyc >> shift;
        let rem = cyc & ((1u64 << shift) - 1);
        quot.wrapping_mul(mult)
            .wrapping_add(rem.wrapping_mul(mult) >> shift)
    }

    /// The time elapsed since the kernel last updated the page's times:
    /// `time_offset + scale(widen(cyc))`.
    pub fn delta(&self, cyc: u64) -> u64 {
        self.time_offset.wrapping_add(self.scale(self.widen(cyc)))
    }

    /// A cycle count (TSC) to a perf timestamp (the clock of sample `time`):
    /// `time_zero + scale(widen(cyc))`. `None` without `cap_user_time_zero`.
    pub fn cycles_to_perf_time(&self, cyc: u64) -> Option<u64> {
        self.has_time_zero()
            .then(|| self.time_zero.wrapping_add(self.scale(self.widen(cyc))))
    }

    /// A perf timestamp to a cycle count: `time = ts - time_zero; quot = time /
    /// time_mult; rem = time % time_mult; cyc = (quot << time_shift) + (rem <<
    /// time_shift) / time_mult`. `None` without `cap_user_time_zero` or with
    /// `time_mult` 0.
    pub fn perf_time_to_cycles(&self, ts: u64) -> Option<u64> {
        if !self.has_time_zero() || self.time_mult == 0 {
            return None;
        }
        let shift = u32::from(self.time_shift).min(63);
        let mult = u64::from(self.time_mult);
        let time = ts.wrapping_sub(self.time_zero);
        let quot = time / mult;
        let rem = time % mult;
        Some((quot << shift).wrapping_add((rem << shift) / mult))
    }
}

/// One consistent read of a user page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserPageSnapshot {
    /// `index`: 0 = not readable from user space now.
    pub index: u32,
    /// `offset`
    pub offset: i64,
    /// `pmc_width`
    pub pmc_width: u16,
    /// The hardware counter, sign-extended from `pmc_width` bits (0 when `index == 0`).
    pub pmc: i64,
    /// `offset + pmc`: the count, valid when `index != 0`.
    pub count: u64,
    /// `time_enabled` (+ delta when `cap_user_time`).
    pub time_enabled: u64,
    /// `time_running` (+ delta when `cap_user_time` and `index != 0`).
    pub time_running: u64,
    /// The time fields, for conversions.
    pub time: TimeConv,
    /// The cycle counter value read, if `cap_user_time`.
    pub cycles: Option<u64>,
    /// How many times the seqlock made the loop retry.
    pub retries: u32,
}

impl UserPageSnapshot {
    /// `cap_user_rdpmc && index != 0`: `count` is the counter's value.
    pub fn user_readable(&self) -> bool {
        self.time.capabilities & mmap_cap::CAP_USER_RDPMC != 0 && self.index != 0
    }
}

/// Sign-extend the low `width` bits of `v` (`width` 0 or above 64 counts as 64).
pub fn sign_extend(v: u64, width: u16) -> i64 {
    let w = u32::from(width);
    if w == 0 || w >= 64 {
        return v as i64;
    }
    let shift = 64 - w;
    ((v << shift) as i64) >> shift
}

macro_rules! vload {
    ($p:expr, $field:ident) => {{
        let p: *const perf_event_mmap_page = $p;
        // SAFETY: read_snapshot's caller guarantees the page is mapped and readable; the
        // field is a naturally aligned member of it, read volatile (the kernel writes it).
        unsafe { std::ptr::read_volatile(&raw const (*p).$field) }
    }};
}

/// The seqlock read of a user page.
///
/// # Safety
/// `page` must point to a readable `perf_event_mmap_page` (a perf mmap's first page, or
/// memory laid out like one) for the duration of the call.
pub unsafe fn read_snapshot(
    page: NonNull<perf_event_mmap_page>,
    hw: &mut impl HwReader,
) -> UserPageSnapshot {
    let p = page.as_ptr();
    let mut retries = 0u32;
    loop {
        let seq = vload!(p, lock);
        compiler_fence(Ordering::SeqCst);
        let mut s = UserPageSnapshot {
            time_enabled: vload!(p, time_enabled),
            time_running: vload!(p, time_running),
            retries,
            ..UserPageSnapshot::default()
        };
        s.time.capabilities = vload!(p, capabilities);
        if s.time.has_time() {
            s.cycles = Some(hw.cycles());
            s.time.time_offset = vload!(p, time_offset);
            s.time.time_mult = vload!(p, time_mult);
            s.time.time_shift = vload!(p, time_shift);
        }
        if s.time.has_time_zero() {
            s.time.time_zero = vload!(p, time_zero);
        }
        if s.time.is_short() {
            s.time.time_cycles = vload!(p, time_cycles);
            s.time.time_mask = vload!(p, time_mask);
        }
        s.index = vload!(p, index);
        s.offset = vload!(p, offset);
        if s.time.capabilities & mmap_cap::CAP_USER_RDPMC != 0 && s.index != 0 {
            s.pmc_width = vload!(p, pmc_width);
            s.pmc = sign_extend(hw.counter(s.index), s.pmc_width);
        }
        compiler_fence(Ordering::SeqCst);
        if vload!(p, lock) != seq {
            retries = retries.saturating_add(1);
            std::hint::spin_loop();
            continue;
        }
        s.count = s.offset.wrapping_add(s.pmc) as u64;
        if let Some(cyc) = s.cycles {
            let delta = s.time.delta(cyc);
            s.time_enabled = s.time_enabled.wrapping_add(delta);
            if s.index != 0 {
                s.time_running = s.time_running.wrapping_add(delta);
            }
        }
        return s;
    }
}

enum PageStore {
    Mapped(Mapping),
    /// From `Box::into_raw`, freed in `Drop`: a raw pointer so that writers through
    /// [`UserPage::as_ptr`] (a test playing the kernel) do not alias a `Box`.
    Owned(NonNull<perf_event_mmap_page>),
}

impl Drop for PageStore {
    fn drop(&mut self) {
        if let PageStore::Owned(p) = self {
            // SAFETY: p came from Box::into_raw in UserPage::synthetic and is freed once.
            drop(unsafe { Box::from_raw(p.as_ptr()) });
        }
    }
}

/// A user page: one page mapped read-only from a counting event, or a page built in
/// memory (tests, replays).
pub struct UserPage {
    store: PageStore,
}

impl std::fmt::Debug for UserPage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserPage")
            .field("mapped", &matches!(self.store, PageStore::Mapped(_)))
            .finish()
    }
}

impl UserPage {
    /// `mmap(fd, page_size, PROT_READ)`: the user page of `counter`, no ring.
    pub fn map(counter: &Counter) -> Result<UserPage> {
        let map = Mapping::new(counter.as_fd(), page_size(), libc::PROT_READ, 0)
            .map_err(|e| counter.make_error(Op::Mmap, e))?;
        Ok(UserPage {
            store: PageStore::Mapped(map),
        })
    }

    /// `mmap(fd, page_size, PROT_READ)` on any perf event fd (one opened elsewhere).
    pub fn map_fd(fd: BorrowedFd<'_>) -> Result<UserPage> {
        let map = Mapping::new(fd, page_size(), libc::PROT_READ, 0).map_err(|e| {
            Error::new(
                Op::Mmap,
                e,
                format!("perf event fd {}", fd.as_raw_fd()),
                -1,
                -1,
            )
        })?;
        Ok(UserPage {
            store: PageStore::Mapped(map),
        })
    }

    /// A page in memory with the given contents.
    pub fn synthetic(page: perf_event_mmap_page) -> UserPage {
        UserPage {
            store: PageStore::Owned(NonNull::from(Box::leak(Box::new(page)))),
        }
    }

    /// An all-zero page in memory (fill it through [`page_mut`](Self::page_mut)).
    pub fn zeroed() -> UserPage {
        // SAFETY: perf_event_mmap_page consists of integers and integer arrays only, for
        // which all-zero bytes are a valid value.
        let page: perf_event_mmap_page = unsafe { std::mem::zeroed() };
        Self::synthetic(page)
    }

    /// The contents of an in-memory page, to edit; `None` for a kernel mapping.
    pub fn page_mut(&mut self) -> Option<&mut perf_event_mmap_page> {
        match &mut self.store {
            PageStore::Mapped(_) => None,
            // SAFETY: the allocation is ours, alive while self is, and &mut self makes
            // this the only reference handed out.
            PageStore::Owned(p) => Some(unsafe { p.as_mut() }),
        }
    }

    /// The page's address (for writers of synthetic pages).
    pub fn as_ptr(&self) -> NonNull<perf_event_mmap_page> {
        match &self.store {
            PageStore::Mapped(m) => m.ptr.cast(),
            PageStore::Owned(p) => *p,
        }
    }

    /// A consistent read with the CPU's counters.
    pub fn read(&self) -> UserPageSnapshot {
        self.read_with(&mut NativeHw)
    }

    /// A consistent read with `hw` supplying the counter and cycle values.
    pub fn read_with(&self, hw: &mut impl HwReader) -> UserPageSnapshot {
        // SAFETY: the page is mapped (or boxed) for as long as self lives.
        unsafe { read_snapshot(self.as_ptr(), hw) }
    }
}

// SAFETY: the page is read only through volatile loads; the box is never handed out.
unsafe impl Send for UserPage {}
// SAFETY: as above; reads from several threads are fine.
unsafe impl Sync for UserPage {}

impl RingBuffer {
    /// A consistent read of this ring's user page (its first page).
    pub fn user_page(&self) -> UserPageSnapshot {
        // SAFETY: the ring's first page is mapped for as long as the ring.
        unsafe { read_snapshot(self.user_page_ptr(), &mut NativeHw) }
    }
}

/// Where a [`SelfRead`] came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadSource {
    /// The user page and `rdpmc`/`mrs`: no system call.
    UserPage,
    /// `read(2)`, because the page's `index` was 0.
    Syscall,
}

/// A self-monitoring read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SelfRead {
    /// The count.
    pub value: u64,
    /// Nanoseconds enabled, if known (user page with `cap_user_time`, or `read_format`).
    pub time_enabled: Option<u64>,
    /// Nanoseconds running, likewise.
    pub time_running: Option<u64>,
    /// How it was read.
    pub source: ReadSource,
}

/// A counting event and its user page, read without a system call when the page allows.
#[derive(Debug)]
pub struct SelfMonitor {
    counter: Counter,
    page: UserPage,
}

impl SelfMonitor {
    /// Open `attr` for `target` and map its user page.
    pub fn open(attr: &Attr, target: &Target<'_>) -> Result<SelfMonitor> {
        Self::new(Counter::open(attr, target)?)
    }

    /// Map the user page of an open counter.
    pub fn new(counter: Counter) -> Result<SelfMonitor> {
        let page = UserPage::map(&counter)?;
        Ok(SelfMonitor { counter, page })
    }

    /// The counter (for enable/disable/reset).
    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// The user page.
    pub fn page(&self) -> &UserPage {
        &self.page
    }

    /// Read the count: from the user page when `index != 0`, else with `read(2)`.
    #[inline]
    pub fn read(&self) -> Result<SelfRead> {
        let s = self.page.read();
        if s.user_readable() && NativeHw::SUPPORTED {
            let timed = s.cycles.is_some();
            return Ok(SelfRead {
                value: s.count,
                time_enabled: timed.then_some(s.time_enabled),
                time_running: timed.then_some(s.time_running),
                source: ReadSource::UserPage,
            });
        }
        let c = self.counter.read()?;
        Ok(SelfRead {
            value: c.value,
            time_enabled: c.time_enabled,
            time_running: c.time_running,
            source: ReadSource::Syscall,
        })
    }

    /// Why reads are not served from the user page right now, if they are not.
    pub fn why_not_user_readable(&self) -> Option<String> {
        let s = self.page.read();
        if s.user_readable() && NativeHw::SUPPORTED {
            return None;
        }
        let cap = s.time.capabilities & mmap_cap::CAP_USER_RDPMC != 0;
        Some(if !NativeHw::SUPPORTED {
            "user-space counter reads are implemented for x86_64 and aarch64 only".into()
        } else if cfg!(target_arch = "aarch64") && cap {
            "the kernel offers user access but did not give this event a counter index: \
             enable it with `sysctl kernel.perf_user_access=1` and open the event with \
             attr.config1 bit 1 (user access; bit 0 for a 64-bit counter), see \
             perfkit::arm64_user_access"
                .into()
        } else if cfg!(target_arch = "aarch64") {
            "no user access: open the event with attr.config1 bit 1 (and bit 0 for 64 \
             bits) and `sysctl kernel.perf_user_access=1`; software events never have it"
                .into()
        } else if cap {
            "the event is not on a hardware counter now (index 0): reads use read(2)".into()
        } else {
            "this event has no hardware counter (software event, or no PMU on this \
             machine): reads use read(2)"
                .into()
        })
    }
}

/// Request arm64 user-space access for `attr` (`config1` bit 1), with a 64-bit counter
/// (`config1` bit 0) if `sixty_four_bit`. A no-op on other architectures' semantics: the
/// bits are set anyway, so only use it for arm64 PMU events.
pub fn arm64_user_access(attr: Attr, sixty_four_bit: bool) -> Attr {
    let c1 = attr.raw().config1 | 0b10 | u64::from(sixty_four_bit);
    attr.config1(c1)
}

/// The offset between perf timestamps (sample `time`, the `sample_id` trailer) and a
/// POSIX clock, measured by bracketing a kernel-timestamped record with two
/// `clock_gettime` calls.
///
/// With `cap_user_time_zero` the user page relates perf time to the TSC exactly
/// ([`TimeConv::cycles_to_perf_time`]); without it (this machine, every VM without a
/// stable TSC exposed to perf) the only link to wall or monotonic time is an event whose
/// kernel timestamp falls between two clock readings. The record used is the
/// `PERF_RECORD_COMM` that `prctl(PR_SET_NAME)` (renaming the thread to its own name)
/// makes the kernel emit for a `dummy` event with `comm` and `sample_id_all` + `TIME`.
/// The tightest of several rounds is kept; `uncertainty_ns` is half its bracket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockOffset {
    /// The POSIX clock compared with (`libc::CLOCK_MONOTONIC`, `CLOCK_REALTIME`...).
    pub clock: i32,
    /// `perf time - clock time`, in nanoseconds.
    pub offset_ns: i64,
    /// Half the width of the tightest bracket: the offset is exact within this.
    pub uncertainty_ns: u64,
}

fn clock_ns(clock: i32) -> std::io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok((ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64))
}

impl ClockOffset {
    /// Measure the offset of `clock` from the perf clock of events opened with
    /// `perf_clockid` (`None` = the default perf clock, else `use_clockid` + `clockid`),
    /// over `rounds` rounds (at least 1).
    pub fn measure(perf_clockid: Option<i32>, clock: i32, rounds: u32) -> Result<ClockOffset> {
        use crate::event::Software;
        let attr = Attr::new(Software::Dummy)
            .comm(true)
            .sample_id_all(true)
            .sample_type(perfkit_sys::PERF_SAMPLE_TIME)
            .clockid(perf_clockid)
            .exclude_kernel(true);
        let counter = Counter::open(&attr, &Target::this_thread())?;
        let mut ring = RingBuffer::map(&counter, crate::ring::RingSize::Pages(1))?;
        let parser =
            perfkit_records::RecordParser::new(attr.raw(), perfkit_records::Endian::NATIVE);
        let fail = |what: String, e: std::io::Error| {
            crate::error::Error::new(Op::Other(what), e, "dummy (clock offset)", 0, -1)
        };
        let mut name = [0u8; 16];
        // SAFETY: PR_GET_NAME writes at most 16 bytes into `name`.
        if unsafe { libc::prctl(libc::PR_GET_NAME, name.as_mut_ptr()) } != 0 {
            return Err(fail(
                "prctl(PR_GET_NAME)".into(),
                std::io::Error::last_os_error(),
            ));
        }
        counter.enable()?;
        let mut best: Option<ClockOffset> = None;
        for _ in 0..rounds.max(1) {
            let before = clock_ns(clock).map_err(|e| fail("clock_gettime".into(), e))?;
            // SAFETY: PR_SET_NAME reads a NUL-terminated name of at most 16 bytes; `name`
            // came from PR_GET_NAME and is NUL-terminated.
            let r = unsafe { libc::prctl(libc::PR_SET_NAME, name.as_ptr()) };
            let after = clock_ns(clock).map_err(|e| fail("clock_gettime".into(), e))?;
            if r != 0 {
                return Err(fail(
                    "prctl(PR_SET_NAME)".into(),
                    std::io::Error::last_os_error(),
                ));
            }
            let mut stamp = None;
            let mut scratch = Vec::new();
            ring.drain(|raw| {
                if raw.type_ == perfkit_sys::PERF_RECORD_COMM {
                    if let Ok(p) = parser.parse_raw(&raw, &mut scratch) {
                        stamp = p.time();
                    }
                }
            })
            .map_err(|e| {
                fail(
                    "reading the clock-offset ring".into(),
                    std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
                )
            })?;
            let Some(t) = stamp else { continue };
            let mid = before + (after - before) / 2;
            let round = ClockOffset {
                clock,
                offset_ns: (t as i64).wrapping_sub(mid as i64),
                uncertainty_ns: (after - before).div_ceil(2),
            };
            if best.is_none_or(|b| round.uncertainty_ns < b.uncertainty_ns) {
                best = Some(round);
            }
        }
        counter.disable()?;
        best.ok_or_else(|| {
            fail(
                "clock offset".into(),
                std::io::Error::other("the kernel emitted no timestamped COMM record"),
            )
            .with_detail(
                "prctl(PR_SET_NAME) should make a `comm` dummy event emit PERF_RECORD_COMM",
            )
        })
    }

    /// A perf timestamp in this clock's time.
    pub fn perf_to_clock(&self, perf_ns: u64) -> u64 {
        perf_ns.wrapping_sub(self.offset_ns as u64)
    }

    /// A time of this clock as a perf timestamp.
    pub fn clock_to_perf(&self, clock_ns: u64) -> u64 {
        clock_ns.wrapping_add(self.offset_ns as u64)
    }
}
