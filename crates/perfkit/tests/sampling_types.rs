//! Typed sampling helpers against the real kernel: `SampleType` names and the kernel's
//! companion-field rules (each rule the library states is one the kernel enforces with
//! EINVAL), the per-bit probe (this machine: everything but BRANCH_STACK and AUX),
//! frequency sampling (the PERIOD fields add up to the count), rings mapped from a raw
//! fd, and a Drainer stopped from a signal handler.

use perfkit::sys;
use perfkit::{
    Attr, DrainEnd, Drainer, RingBuffer, RingMode, RingSize, SampleType, Sampler, Software, Target,
    UserPage,
};
use perfkit_records::{Endian, Record, RecordParser};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn sample_type_names_cover_every_abi_bit_and_round_trip() {
    // The name table covers every bit below PERF_SAMPLE_MAX, each exactly once.
    let mut union = 0u64;
    for bit in SampleType::ALL.iter() {
        let name = bit.name().expect("every ABI bit has a name");
        assert_eq!(union & bit.bits(), 0);
        union |= bit.bits();
        assert_eq!(name.parse::<SampleType>().unwrap(), bit);
    }
    assert_eq!(union, sys::PERF_SAMPLE_MAX - 1);
    assert_eq!(SampleType::ALL.iter().count(), 25);
    assert_eq!(SampleType::CALLCHAIN.bits(), sys::PERF_SAMPLE_CALLCHAIN);
    assert_eq!(SampleType::WEIGHT_STRUCT.bits(), 1 << 24);

    let t = SampleType::IP | SampleType::TID | SampleType::TIME | SampleType::CALLCHAIN;
    assert_eq!(t.to_string(), "IP|TID|TIME|CALLCHAIN");
    assert_eq!(format!("{t:?}"), "SampleType(IP|TID|TIME|CALLCHAIN)");
    assert_eq!(t.to_string().parse::<SampleType>().unwrap(), t);
    assert_eq!(
        " ip, perf_sample_tid |Time,callchain"
            .parse::<SampleType>()
            .unwrap(),
        t
    );
    assert_eq!(SampleType::EMPTY.to_string(), "0");
    assert_eq!(
        SampleType::from_bits(1 << 25),
        None,
        "bits at PERF_SAMPLE_MAX are not ABI"
    );
    assert_eq!(
        SampleType::from_bits(0x7),
        Some(t.difference(SampleType::CALLCHAIN))
    );

    let e = "ip,tid,bogus,time".parse::<SampleType>().unwrap_err();
    assert_eq!(e.name, "bogus");
    assert_eq!(e.offset, 7);
    assert!(
        e.to_string()
            .contains("unknown sample field \"bogus\" at offset 7")
    );
    assert!(e.to_string().contains("weight_struct"));
}

/// Each companion-field rule `SampleType::check` states, and the kernel's answer to an
/// attr that breaks it: EINVAL, with the rule's sentence in `Sampler::open`'s error.
#[test]
fn sample_type_rules_are_the_kernels() {
    let base = || {
        Attr::new(Software::PageFaults)
            .sample_period(1)
            .exclude_kernel(true)
    };
    let regs = if cfg!(target_arch = "aarch64") {
        (1u64 << 31) | (1 << 32)
    } else {
        (1u64 << 7) | (1 << 8)
    };
    let cases: Vec<(&str, Attr)> = vec![
        (
            "exclude each other",
            base().sample_type(
                (SampleType::IP | SampleType::WEIGHT | SampleType::WEIGHT_STRUCT).bits(),
            ),
        ),
        (
            "sample_regs_user",
            base().sample_type((SampleType::IP | SampleType::REGS_USER).bits()),
        ),
        (
            "sample_regs_intr",
            base().sample_type((SampleType::IP | SampleType::REGS_INTR).bits()),
        ),
        (
            "multiple of 8",
            base()
                .sample_type(SampleType::STACK_USER.bits())
                .sample_stack_user(1020),
        ),
        (
            "needs PERF_SAMPLE_TID",
            base().inherit(true).sample_type(SampleType::READ.bits()),
        ),
    ];
    for (rule, attr) in cases {
        let t = SampleType::from_bits(attr.raw().sample_type).unwrap();
        let why = t.check(&attr).expect_err(rule);
        assert!(why.contains(rule), "{why}");
        let e = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1))
            .expect_err("the kernel refuses it too");
        assert_eq!(e.errno(), libc::EINVAL, "{rule}: {e}");
        // Counter::open explains inherit + READ itself; the other rules come from check.
        let detail = e.detail().expect("explained");
        assert!(
            detail == why || detail.contains("PERF_SAMPLE_TID"),
            "{detail}"
        );
    }
    // And the same bits with their companions are accepted by both.
    let ok = base()
        .sample_type((SampleType::IP | SampleType::REGS_USER | SampleType::STACK_USER).bits())
        .sample_regs_user(regs)
        .sample_stack_user(1024);
    SampleType::from_bits(ok.raw().sample_type)
        .unwrap()
        .check(&ok)
        .unwrap();
    Sampler::open(&ok, &Target::this_thread(), RingSize::Pages(1)).expect("accepted");
}

#[test]
fn probe_finds_every_field_but_branch_stack_and_aux() {
    if !is_root() {
        eprintln!("skipped: REGS_INTR/PHYS_ADDR need root (or paranoid <= 0)");
        return;
    }
    let attr = Attr::new(Software::PageFaults).sample_period(1);
    let got = SampleType::probe(SampleType::ALL, &attr, &Target::this_thread());
    // ci-machine.md: every field but BRANCH_STACK (EOPNOTSUPP) and AUX (EINVAL).
    assert_eq!(
        got.supported,
        SampleType::ALL.difference(SampleType::BRANCH_STACK | SampleType::AUX),
        "refused: {:?}",
        got.refused
    );
    let refused: Vec<_> = got.refused.iter().map(|(b, e)| (*b, e.errno())).collect();
    // Without a PMU with branch records and without an AUX group leader the kernel
    // says EINVAL to both (this kernel, page-faults).
    assert_eq!(
        refused,
        vec![
            (SampleType::BRANCH_STACK, libc::EINVAL),
            (SampleType::AUX, libc::EINVAL)
        ]
    );
}

fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(r, 0);
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Busy for `d` of this thread's CPU time.
fn spin_cpu(d: Duration) -> u64 {
    let end = thread_cpu_time() + d;
    let mut x = 0u64;
    while thread_cpu_time() < end {
        for i in 0..1000u64 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    x
}

/// Map `pages` fresh anonymous pages, write each once (a page fault each), unmap them.
fn touch_fresh_pages(pages: usize) {
    let ps = perfkit::page_size();
    // SAFETY: a new private anonymous mapping, written only inside its bounds, then
    // unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            pages * ps,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(p, libc::MAP_FAILED);
        for i in 0..pages {
            std::ptr::write_volatile(p.cast::<u8>().add(i * ps), 1);
        }
        libc::munmap(p, pages * ps);
    }
}

fn sample_periods(attr: &Attr, work: impl FnOnce()) -> (Vec<u64>, u64) {
    let mut s = Sampler::open(attr, &Target::this_thread(), RingSize::Pages(256)).expect("open");
    s.enable().unwrap();
    work();
    s.disable().unwrap();
    let count = s.counter().read().unwrap().value;
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut periods = Vec::new();
    s.ring()
        .drain(|raw| {
            if let Record::Sample(smp) = parser.parse_raw(&raw, &mut scratch).unwrap().record {
                periods.push(smp.period.expect("PERIOD"));
            }
        })
        .unwrap();
    assert_eq!(s.counter().read().unwrap().lost, Some(0), "no sample lost");
    (periods, count)
}

/// `sample_freq` on a counting software event: the kernel starts at period 1 and adapts
/// the period to the event rate (at each tick), so most events are not sampled.
/// `sample_freq` on task-clock becomes a fixed hrtimer period of `1e9 / freq` ns: the
/// PERIOD fields are all 1 ms and add up to nearly the count.
#[test]
fn frequency_sampling_adapts_the_period_and_fixes_hrtimer_periods() {
    let attr = Attr::new(Software::PageFaults)
        .sample_freq(1000)
        .exclude_kernel(true)
        .read_format(sys::PERF_FORMAT_LOST)
        .sample_type((SampleType::IP | SampleType::TID | SampleType::PERIOD).bits());
    let (periods, count) = sample_periods(&attr, || {
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            touch_fresh_pages(256);
        }
    });
    eprintln!(
        "page-faults: {count} faults, {} samples, periods {:?}...",
        periods.len(),
        &periods[..periods.len().min(40)]
    );
    let max = *periods.iter().max().unwrap();
    assert_eq!(periods[0], 1, "frequency mode starts at period 1");
    assert!(max > 1, "and adapts: {periods:?}");
    assert!(
        count >= periods.len() as u64 * 10,
        "{count} faults, {} samples",
        periods.len()
    );

    let attr = Attr::new(Software::TaskClock)
        .sample_freq(1000)
        .read_format(sys::PERF_FORMAT_LOST)
        .sample_type((SampleType::IP | SampleType::TID | SampleType::PERIOD).bits());
    // 100 ms of this thread's CPU time (wall time would depend on the machine's load).
    let (periods, count) = sample_periods(&attr, || {
        spin_cpu(Duration::from_millis(100));
    });
    assert!(
        periods.len() >= 50,
        "{} samples in 100 ms at 1 kHz",
        periods.len()
    );
    assert!(periods.iter().all(|&p| p == 1_000_000), "{periods:?}");
    let sum: u64 = periods.iter().sum();
    // Each sample comes after 1 ms of counted time, so the periods never exceed the
    // count; a timer that fires late only loses a sample now and then.
    assert!(
        sum <= count && sum >= count / 10 * 9,
        "count {count}, sum {sum}"
    );
}

/// A ring mapped from a raw fd opened without perfkit's Counter.
#[test]
fn ring_and_user_page_from_a_raw_fd() {
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1)
        .exclude_kernel(false)
        .sample_type((SampleType::TID | SampleType::TIME).bits());
    let mut raw = *attr.raw();
    // SAFETY: raw is a valid attr of raw.size bytes; the other arguments are integers.
    let fd = unsafe { sys::perf_event_open(&mut raw, 0, -1, -1, sys::PERF_FLAG_FD_CLOEXEC as _) };
    assert!(fd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: fd was just returned to us and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let e =
        RingBuffer::map_fd(fd.as_fd(), RingSize::Pages(3), RingMode::Consume, false).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.event().starts_with("perf event fd "), "{e}");
    let mut ring =
        RingBuffer::map_fd(fd.as_fd(), RingSize::Pages(2), RingMode::Consume, false).unwrap();
    assert_eq!(ring.data_size(), 2 * perfkit::page_size());
    // A second mmap of an event with a ring must have the ring's size: one page is EINVAL.
    let e = UserPage::map_fd(fd.as_fd()).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.to_string().contains("perf event fd"), "{e}");
    // SAFETY: integer-argument ioctl on our live fd.
    let r = unsafe {
        sys::ioctl::ioctl_arg(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            sys::PERF_EVENT_IOC_ENABLE,
            0,
        )
    };
    assert_eq!(r, 0);
    for _ in 0..10 {
        std::thread::sleep(Duration::from_millis(1));
    }
    // SAFETY: as above.
    let r = unsafe {
        sys::ioctl::ioctl_arg(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            sys::PERF_EVENT_IOC_DISABLE,
            0,
        )
    };
    assert_eq!(r, 0);
    let mut n = 0;
    ring.drain(|rec| {
        assert_eq!(rec.type_, sys::PERF_RECORD_SAMPLE);
        assert_eq!(rec.data.len(), 16, "tid + time");
        n += 1;
    })
    .unwrap();
    assert!(n >= 10, "{n} switch samples");
    assert_eq!(ring.control().tail(), ring.control().head());
    // The ring's first page is the user page: a software event has no counter index.
    assert_eq!(ring.user_page().index, 0);

    // The user page alone, of another raw fd (a counting event, never mapped before).
    let mut craw = *Attr::new(Software::TaskClock).disabled(false).raw();
    // SAFETY: as above.
    let cfd = unsafe { sys::perf_event_open(&mut craw, 0, -1, -1, sys::PERF_FLAG_FD_CLOEXEC as _) };
    assert!(cfd >= 0, "{}", std::io::Error::last_os_error());
    // SAFETY: cfd was just returned to us.
    let cfd = unsafe { OwnedFd::from_raw_fd(cfd) };
    let page = UserPage::map_fd(cfd.as_fd()).unwrap();
    spin_cpu(Duration::from_millis(5));
    let snap = page.read();
    assert_eq!(snap.index, 0, "no hardware counter here");
    assert!(
        snap.time_enabled > 0,
        "the kernel keeps time_enabled in the page"
    );
}

static STOP_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_usr1(_: libc::c_int) {
    let fd = STOP_FD.load(Ordering::Relaxed);
    let one: u64 = 1;
    // SAFETY: write(2) is async-signal-safe; 8 bytes from a live u64 to the eventfd.
    unsafe {
        libc::write(fd, (&raw const one).cast(), 8);
    }
}

/// `Stopper::raw_fd` used the way a signal handler would: the drain thread blocks in
/// epoll_wait, SIGUSR1 arrives on it, the handler writes the eventfd, run returns Stopped.
#[test]
fn drainer_stops_from_a_signal_handler() {
    let attr = Attr::new(Software::ContextSwitches)
        .sample_period(1_000_000_000)
        .sample_type(SampleType::TID.bits());
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(1)).unwrap();
    let mut drainer = Drainer::new(&[s.ring_ref()]).unwrap();
    STOP_FD.store(drainer.stopper().raw_fd(), Ordering::Relaxed);
    // SAFETY: installs a handler that only does async-signal-safe work.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &sa, std::ptr::null_mut()), 0);
    }
    // SAFETY: no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: no preconditions.
    let pid = unsafe { libc::getpid() };
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        // SAFETY: tgkill with integer arguments; the target thread is alive (it joins us).
        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR1) }
    });
    let t = Instant::now();
    let end = drainer
        .run(&mut [s.ring()], Some(Duration::from_secs(20)), |_, _| {})
        .unwrap();
    assert_eq!(killer.join().unwrap(), 0);
    assert_eq!(end, DrainEnd::Stopped);
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "stopped, not timed out"
    );
}
