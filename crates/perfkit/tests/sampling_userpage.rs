//! User-page (self-monitoring) reads: the seqlock loop, sign extension and time
//! arithmetic against synthetic pages built from the formulas in
//! include/uapi/linux/perf_event.h, and the real `read(2)` fallback on this machine
//! (no PMU: `index` is 0).

use perfkit::sys::{self, mmap_cap};
use perfkit::{
    Attr, ClockOffset, HwReader, ReadSource, RingSize, Sampler, SelfMonitor, Software, Target,
    TimeConv, UserPage, sign_extend,
};

/// Fixed hardware values; counts calls.
struct FakeHw {
    pmc: u64,
    cyc: u64,
    counter_calls: Vec<u32>,
}

impl HwReader for FakeHw {
    fn counter(&mut self, index: u32) -> u64 {
        self.counter_calls.push(index);
        self.pmc
    }
    fn cycles(&mut self) -> u64 {
        self.cyc
    }
}

fn fake(pmc: u64, cyc: u64) -> FakeHw {
    FakeHw {
        pmc,
        cyc,
        counter_calls: Vec::new(),
    }
}

/// The header's formula, computed independently with 128-bit arithmetic:
/// `(cyc * mult) >> shift` equals `quot * mult + ((rem * mult) >> shift)`.
fn reference_scale(cyc: u64, mult: u32, shift: u16) -> u64 {
    ((u128::from(cyc) * u128::from(mult)) >> shift) as u64
}

#[test]
fn sign_extension_by_pmc_width() {
    for (width, raw, offset, expect) in [
        // 48-bit counter holding -16.
        (48u16, 0xFFFF_FFFF_FFF0u64, 1000i64, 984u64),
        // 32-bit counter: bits above 32 are ignored, 0xFFFF_FFFF is -1.
        (32, 0x1_0000_0005, 10, 15),
        (32, 0xFFFF_FFFF, 10, 9),
        // 64-bit counter: the value as is.
        (64, 0x8000_0000_0000_0010, 0, 0x8000_0000_0000_0010),
        (64, 123, -23, 100),
        // A positive 48-bit value stays positive.
        (48, 0x7FFF_FFFF_FFFF, 1, 0x8000_0000_0000),
    ] {
        let mut page = UserPage::zeroed();
        let p = page.page_mut().unwrap();
        p.capabilities = mmap_cap::CAP_BIT0_IS_DEPRECATED | mmap_cap::CAP_USER_RDPMC;
        p.index = 3;
        p.offset = offset;
        p.pmc_width = width;
        let mut hw = fake(raw, 0);
        let s = page.read_with(&mut hw);
        assert!(s.user_readable());
        assert_eq!(
            hw.counter_calls,
            vec![3],
            "counter read with the page's index"
        );
        assert_eq!(
            s.count, expect,
            "width {width} raw {raw:#x} offset {offset}"
        );
        assert_eq!(s.pmc, sign_extend(raw, width));
    }
    assert_eq!(sign_extend(0xFF, 8), -1);
    assert_eq!(sign_extend(0x7F, 8), 127);
    assert_eq!(sign_extend(u64::MAX, 0), -1);
}

#[test]
fn index_zero_means_no_user_read_whatever_the_capabilities() {
    let mut page = UserPage::zeroed();
    let p = page.page_mut().unwrap();
    // arm64 with perf_user_access=0: cap_user_rdpmc set, index 0.
    p.capabilities = mmap_cap::CAP_BIT0_IS_DEPRECATED | mmap_cap::CAP_USER_RDPMC;
    p.index = 0;
    p.offset = 77;
    p.pmc_width = 64;
    let mut hw = fake(1234, 0);
    let s = page.read_with(&mut hw);
    assert!(!s.user_readable());
    assert!(hw.counter_calls.is_empty(), "no rdpmc with index 0");
    // And index without the capability is not trusted either.
    let p = page.page_mut().unwrap();
    p.capabilities = mmap_cap::CAP_BIT0_IS_DEPRECATED;
    p.index = 2;
    let s = page.read_with(&mut hw);
    assert!(!s.user_readable());
    assert!(hw.counter_calls.is_empty());
}

#[test]
fn times_extrapolated_from_the_cycle_counter() {
    let (mult, shift, toff) = (0x8001_2345u32, 31u16, 5_000u64.wrapping_neg());
    let cyc = 0x0123_4567_89AB_CDEFu64;
    for index in [0u32, 1] {
        let mut page = UserPage::zeroed();
        let p = page.page_mut().unwrap();
        p.capabilities =
            mmap_cap::CAP_BIT0_IS_DEPRECATED | mmap_cap::CAP_USER_RDPMC | mmap_cap::CAP_USER_TIME;
        p.index = index;
        p.pmc_width = 48;
        p.time_enabled = 1_000_000;
        p.time_running = 600_000;
        p.time_mult = mult;
        p.time_shift = shift;
        p.time_offset = toff;
        let s = page.read_with(&mut fake(0, cyc));
        let delta = toff.wrapping_add(reference_scale(cyc, mult, shift));
        assert_eq!(s.cycles, Some(cyc));
        assert_eq!(s.time.delta(cyc), delta);
        assert_eq!(s.time_enabled, 1_000_000u64.wrapping_add(delta));
        // Running only advances while the counter is on the PMU (index != 0).
        let running = if index != 0 {
            600_000u64.wrapping_add(delta)
        } else {
            600_000
        };
        assert_eq!(s.time_running, running, "index {index}");
    }
    // Without cap_user_time the times are the page's, untouched, and no cycles are read.
    let mut page = UserPage::zeroed();
    let p = page.page_mut().unwrap();
    p.time_enabled = 10;
    p.time_running = 5;
    p.time_mult = 3;
    let s = page.read_with(&mut fake(0, 99));
    assert_eq!((s.time_enabled, s.time_running, s.cycles), (10, 5, None));
}

#[test]
fn time_short_widens_a_wrapped_counter() {
    let mut page = UserPage::zeroed();
    let p = page.page_mut().unwrap();
    p.capabilities = mmap_cap::CAP_USER_TIME | mmap_cap::CAP_USER_TIME_SHORT;
    p.time_mult = 1 << 20;
    p.time_shift = 20; // 1 cycle = 1 ns
    p.time_offset = 0;
    p.time_cycles = 0x1_FFFF_FFF0;
    p.time_mask = 0xFFFF_FFFF; // a 32-bit counter
    // The 32-bit counter wrapped: it reads 0x10, meaning 0x2_0000_0010.
    let s = page.read_with(&mut fake(0, 0x10));
    assert_eq!(s.time.widen(0x10), 0x2_0000_0010);
    assert_eq!(s.time_enabled, 0x2_0000_0010);
    // Not short: used as is.
    let p = page.page_mut().unwrap();
    p.capabilities = mmap_cap::CAP_USER_TIME;
    let s = page.read_with(&mut fake(0, 0x10));
    assert_eq!(s.time_enabled, 0x10);
}

#[test]
fn time_zero_conversions_round_trip() {
    let t = TimeConv {
        time_shift: 31,
        time_mult: 0x5555_5555, // ~0.667 ns per cycle (a 1.5 GHz TSC)
        time_offset: 0,
        time_zero: 1_000_000_000,
        time_cycles: 0,
        time_mask: 0,
        capabilities: mmap_cap::CAP_USER_TIME | mmap_cap::CAP_USER_TIME_ZERO,
    };
    for cyc in [
        0u64,
        1,
        1_500_000_000,
        0x0000_7FFF_FFFF_FFFF,
        123_456_789_012_345,
    ] {
        let ts = t.cycles_to_perf_time(cyc).unwrap();
        assert_eq!(ts, 1_000_000_000 + reference_scale(cyc, t.time_mult, 31));
        let back = t.perf_time_to_cycles(ts).unwrap();
        // ns resolution is coarser than a cycle: within 2 cycles.
        assert!(back.abs_diff(cyc) <= 2, "{cyc} -> {ts} -> {back}");
    }
    let none = TimeConv {
        capabilities: mmap_cap::CAP_USER_TIME,
        ..t
    };
    assert_eq!(none.cycles_to_perf_time(5), None);
    assert_eq!(none.perf_time_to_cycles(5), None);
}

/// Plays the kernel: changes the page under the reader once, in the middle of a read.
struct RacingHw {
    page: std::ptr::NonNull<sys::perf_event_mmap_page>,
    raced: bool,
}

impl HwReader for RacingHw {
    fn counter(&mut self, _index: u32) -> u64 {
        if !self.raced {
            self.raced = true;
            let p = self.page.as_ptr();
            // SAFETY: the page is the test's own heap page (UserPage::zeroed), alive for
            // the read; the reader only reads it with volatile loads.
            unsafe {
                std::ptr::write_volatile(&raw mut (*p).lock, 1);
                std::ptr::write_volatile(&raw mut (*p).offset, 5000);
                std::ptr::write_volatile(&raw mut (*p).time_enabled, 42);
                std::ptr::write_volatile(&raw mut (*p).lock, 2);
            }
        }
        7
    }
    fn cycles(&mut self) -> u64 {
        0
    }
}

#[test]
fn seqlock_retries_when_the_kernel_updates_mid_read() {
    let mut page = UserPage::zeroed();
    let p = page.page_mut().unwrap();
    p.capabilities = mmap_cap::CAP_USER_RDPMC;
    p.index = 1;
    p.pmc_width = 64;
    p.offset = 100;
    p.time_enabled = 1;
    let mut hw = RacingHw {
        page: page.as_ptr(),
        raced: false,
    };
    let s = page.read_with(&mut hw);
    assert_eq!(s.retries, 1, "the changed lock forces one more pass");
    assert_eq!(s.count, 5007, "values from the consistent second pass");
    assert_eq!(s.time_enabled, 42);
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn real_page_falls_back_to_read_and_matches_it() {
    let attr = Attr::new(Software::PageFaults).exclude_kernel(!is_root());
    let m = SelfMonitor::open(&attr, &Target::this_thread()).expect("open");
    m.counter().enable().unwrap();
    let mut v = Vec::new();
    for i in 0..100u64 {
        v.push(vec![i as u8; 1 << 16]);
    }
    std::hint::black_box(&v);
    let live = m.read().unwrap();
    assert!(live.value > 0);
    m.counter().disable().unwrap();
    let r = m.read().unwrap();
    let c = m.counter().read().unwrap();
    let snap = m.page().read();
    if snap.user_readable() {
        eprintln!(
            "this machine reads the counter from user space (index {})",
            snap.index
        );
        assert_eq!(r.source, ReadSource::UserPage);
    } else {
        // The case on this VM: no PMU, index 0, read(2).
        assert_eq!(snap.index, 0);
        assert_eq!(r.source, ReadSource::Syscall);
        let why = m.why_not_user_readable().expect("a reason");
        eprintln!("fallback: {why}");
        assert!(
            why.contains("read(2)") || why.contains("perf_user_access"),
            "{why}"
        );
    }
    assert_eq!(r.value, c.value, "the user-page read equals read(2)");
    assert_eq!(r.time_enabled, c.time_enabled);
    assert_eq!(r.time_running, c.time_running);
    assert!(snap.time.capabilities & mmap_cap::CAP_BIT0_IS_DEPRECATED != 0);
}

#[test]
fn ring_first_page_is_a_user_page_too() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_TID);
    let s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1)).unwrap();
    s.enable().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1));
    s.disable().unwrap();
    let snap = s.ring_ref().user_page();
    assert!(snap.time.capabilities & mmap_cap::CAP_BIT0_IS_DEPRECATED != 0);
    // The page's times are the kernel's last update (at a sample or a switch): behind
    // read(2)'s, which computes them now.
    let read = s.counter().read().unwrap();
    assert!(snap.time_enabled > 0);
    assert!(
        Some(snap.time_enabled) <= read.time_enabled,
        "{snap:?} {read:?}"
    );
    assert_eq!(snap.index, 0, "software events have no hardware counter");
}

fn clock_ns(clock: i32) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(r, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Events opened with `use_clockid` stamp records with that clock: the measured offset
/// to the same clock is zero within the bracket, for MONOTONIC and REALTIME alike.
#[test]
fn clock_offset_is_zero_against_the_events_own_clock() {
    for clock in [libc::CLOCK_MONOTONIC, libc::CLOCK_REALTIME] {
        let off = ClockOffset::measure(Some(clock), clock, 20).expect("measure");
        assert_eq!(off.clock, clock);
        assert!(
            off.offset_ns.unsigned_abs() <= off.uncertainty_ns,
            "clock {clock}: {off:?}"
        );
        assert!(
            off.uncertainty_ns < 1_000_000,
            "a bracket under 1 ms: {off:?}"
        );
    }
}

/// The default perf clock against CLOCK_MONOTONIC: the measured offset converts the
/// timestamp of a later, independent sample into the monotonic interval around it.
#[test]
fn clock_offset_converts_sample_times_to_monotonic() {
    let off = ClockOffset::measure(None, libc::CLOCK_MONOTONIC, 20).expect("measure");
    eprintln!(
        "perf clock - CLOCK_MONOTONIC = {} ns (+- {} ns)",
        off.offset_ns, off.uncertainty_ns
    );
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_TIME);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(4)).unwrap();
    s.enable().unwrap();
    let mut windows = Vec::new();
    for _ in 0..5 {
        let before = clock_ns(libc::CLOCK_MONOTONIC);
        std::thread::sleep(std::time::Duration::from_millis(2));
        let after = clock_ns(libc::CLOCK_MONOTONIC);
        windows.push((before, after));
        // A gap of 5 ms without sleeping: a conversion off by more than the window
        // would land the sleep's switch-out sample in a gap.
        let end = after + 5_000_000;
        while clock_ns(libc::CLOCK_MONOTONIC) < end {
            std::hint::spin_loop();
        }
    }
    s.disable().unwrap();
    let mut times = Vec::new();
    s.ring()
        .drain(|r| {
            if r.type_ == sys::PERF_RECORD_SAMPLE {
                let mut b = [0u8; 8];
                let mut scratch = Vec::new();
                b.copy_from_slice(r.data.contiguous(&mut scratch));
                times.push(off.perf_to_clock(u64::from_ne_bytes(b)));
            }
        })
        .unwrap();
    for &m in &times {
        assert_eq!(off.perf_to_clock(off.clock_to_perf(m)), m);
    }
    // Every sleep switches out inside its window (preemption may add samples in the
    // gaps; those are not checked).
    let slack = off.uncertainty_ns + 50_000;
    for &(a, b) in &windows {
        assert!(
            times.iter().any(|&m| m + slack >= a && m <= b + slack),
            "no sample in monotonic window {a}..{b}: {times:?}"
        );
    }
}
