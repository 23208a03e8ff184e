//! Notification on the real kernel: poll wakeups, POLLHUP at task exit, SIGIO with
//! `si_fd`, REFRESH-limited counters, and `sigtrap` with `sig_data`.

use perfkit::sys;
use perfkit::{
    AsyncSignal, Attr, Breakpoint, BreakpointKind, Counter, PausedChild, RingSize, Sampler,
    Software, Target, page_size, poll_fd, si_code, siginfo_fd, siginfo_perf,
};
use perfkit_records::{Endian, Record, RecordParser};
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd};
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

macro_rules! require_root {
    () => {
        if !is_root() {
            eprintln!("skipped: needs root");
            return;
        }
    };
}

/// Exactly `pages` page faults (fresh private anonymous pages).
fn touch_fresh_pages(pages: usize) {
    let ps = page_size();
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

type Handler = extern "C" fn(i32, *mut libc::siginfo_t, *mut libc::c_void);

fn install(sig: i32, h: Handler) {
    // SAFETY: a zeroed sigaction with an SA_SIGINFO handler that only touches atomics.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = h as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        assert_eq!(libc::sigaction(sig, &sa, std::ptr::null_mut()), 0);
    }
}

#[test]
fn poll_wakes_after_wakeup_events_samples() {
    require_root!();
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP)
        .wakeup_events(16);
    let s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    s.enable().unwrap();
    assert_eq!(
        poll_fd(s.ring_ref().as_fd(), Some(Duration::ZERO)).unwrap(),
        None,
        "no wakeup before 16 samples"
    );
    touch_fresh_pages(20);
    let ev = poll_fd(s.ring_ref().as_fd(), Some(Duration::ZERO))
        .unwrap()
        .expect("a wakeup after 20 samples");
    assert!(ev.readable && !ev.hangup, "{ev:?}");
    s.disable().unwrap();

    // By watermark: 1 KiB of 16-byte samples.
    let attr = attr.wakeup_watermark(1024);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    s.enable().unwrap();
    touch_fresh_pages(10);
    assert_eq!(
        poll_fd(s.ring_ref().as_fd(), Some(Duration::ZERO)).unwrap(),
        None,
        "160 bytes are below the watermark"
    );
    touch_fresh_pages(100);
    s.disable().unwrap();
    assert!(s.ring().pending_bytes() >= 1024);
    let ev = poll_fd(s.ring_ref().as_fd(), Some(Duration::ZERO)).unwrap();
    assert!(ev.is_some_and(|e| e.readable), "{ev:?}");
}

#[test]
fn pollhup_when_the_task_exits_and_without_a_ring() {
    require_root!();
    let child = PausedChild::spawn("/bin/sleep".as_ref(), &[OsString::from("0.05")]).unwrap();
    let attr = Attr::new(Software::TaskClock)
        .sample_period(100_000)
        .sample_type(sys::PERF_SAMPLE_TID)
        .enable_on_exec(true);
    let s = Sampler::open(&attr, &Target::pid(child.pid()), RingSize::Pages(1)).unwrap();
    let pid = child.start().unwrap();
    assert_eq!(
        poll_fd(s.ring_ref().as_fd(), Some(Duration::ZERO)).unwrap(),
        None,
        "still running"
    );
    let ev = poll_fd(s.ring_ref().as_fd(), Some(Duration::from_secs(5)))
        .unwrap()
        .expect("hangup before the timeout");
    assert!(ev.hangup, "{ev:?}");
    perfkit::wait(pid).unwrap();

    // No ring buffer: POLLHUP at once.
    let c = Counter::open(&Attr::new(Software::TaskClock), &Target::this_thread()).unwrap();
    let ev = poll_fd(c.as_fd(), Some(Duration::ZERO)).unwrap().unwrap();
    assert!(ev.hangup);
}

static SIGIO_COUNT: AtomicU32 = AtomicU32::new(0);
static SIGIO_FD: AtomicI32 = AtomicI32::new(-1);
static SIGIO_CODE: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_sigio(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
    let info = unsafe { &*info };
    SIGIO_FD.store(siginfo_fd(info), Ordering::SeqCst);
    SIGIO_CODE.store(info.si_code, Ordering::SeqCst);
    SIGIO_COUNT.fetch_add(1, Ordering::SeqCst);
}

#[test]
fn sigio_carries_the_overflowing_fd() {
    require_root!();
    let sig = libc::SIGRTMIN() + 3;
    install(sig, on_sigio);
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP)
        .wakeup_events(1);
    let s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    AsyncSignal::to_this_thread(sig)
        .apply(s.counter().as_fd())
        .unwrap();
    s.enable().unwrap();
    touch_fresh_pages(10);
    s.disable().unwrap();
    let n = SIGIO_COUNT.load(Ordering::SeqCst);
    assert!(n >= 10, "one signal per wakeup: {n}");
    assert_eq!(
        SIGIO_FD.load(Ordering::SeqCst),
        s.counter().as_fd().as_raw_fd()
    );
    assert_eq!(SIGIO_CODE.load(Ordering::SeqCst), si_code::POLL_IN);
}

static REFRESH_HUP: AtomicU32 = AtomicU32::new(0);
static REFRESH_IN: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_refresh(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
    let code = unsafe { (*info).si_code };
    if code == si_code::POLL_HUP {
        REFRESH_HUP.fetch_add(1, Ordering::SeqCst);
    } else if code == si_code::POLL_IN {
        REFRESH_IN.fetch_add(1, Ordering::SeqCst);
    }
}

#[test]
fn refresh_stops_after_n_overflows() {
    require_root!();
    let sig = libc::SIGRTMIN() + 4;
    install(sig, on_refresh);
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .sample_type(sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID);
    let mut s = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(8)).unwrap();
    AsyncSignal::to_this_thread(sig)
        .apply(s.counter().as_fd())
        .unwrap();
    // Counting events cannot be refreshed; sampling ones can.
    let counting = Counter::open(&Attr::new(Software::PageFaults), &Target::this_thread()).unwrap();
    assert_eq!(counting.refresh(1).unwrap_err().errno(), libc::EINVAL);

    s.counter().refresh(3).unwrap(); // enables, for 3 overflows
    touch_fresh_pages(50);
    let parser = RecordParser::new(attr.raw(), Endian::NATIVE);
    let mut scratch = Vec::new();
    let mut samples = 0;
    s.ring()
        .drain(|raw| {
            if let Record::Sample(_) = parser.parse_raw(&raw, &mut scratch).unwrap().record {
                samples += 1;
            }
        })
        .unwrap();
    assert_eq!(samples, 3, "exactly the refreshed number of samples");
    assert_eq!(
        REFRESH_HUP.load(Ordering::SeqCst),
        1,
        "POLL_HUP at the limit"
    );
    let count = s.counter().read().unwrap().value;
    assert!(count <= 4, "disabled after the limit: counted {count}");
    // Refresh again: 2 more.
    s.counter().refresh(2).unwrap();
    touch_fresh_pages(50);
    let mut more = 0;
    s.ring()
        .drain(|raw| {
            if let Record::Sample(_) = parser.parse_raw(&raw, &mut scratch).unwrap().record {
                more += 1;
            }
        })
        .unwrap();
    assert_eq!(more, 2);
    assert_eq!(REFRESH_HUP.load(Ordering::SeqCst), 2);
}

static TRAP_DATA: AtomicU64 = AtomicU64::new(0);
static TRAP_TYPE: AtomicU32 = AtomicU32::new(u32::MAX);
static TRAP_COUNT: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_sigtrap(_sig: i32, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to SA_SIGINFO handlers.
    let info = unsafe { &*info };
    if let Some((data, type_)) = siginfo_perf(info) {
        TRAP_DATA.store(data, Ordering::SeqCst);
        TRAP_TYPE.store(type_, Ordering::SeqCst);
        TRAP_COUNT.fetch_add(1, Ordering::SeqCst);
    }
}

static WATCHED: AtomicU64 = AtomicU64::new(0);

#[test]
fn sigtrap_delivers_sig_data() {
    require_root!();
    install(libc::SIGTRAP, on_sigtrap);
    let bp = Breakpoint {
        addr: WATCHED.as_ptr() as u64,
        len: 8,
        kind: BreakpointKind::Write,
    };
    let attr = Attr::new(bp)
        .sample_period(1)
        .sigtrap(true)
        .sig_data(0xdead_beef_cafe)
        .exclude_kernel(true);
    // sigtrap without remove_on_exec is refused, and explained.
    let e = Counter::open(&attr, &Target::this_thread()).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(e.detail().unwrap_or("").contains("remove_on_exec"), "{e}");

    let attr = attr.remove_on_exec(true);
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    c.enable().unwrap();
    for i in 0..3 {
        WATCHED.store(i, Ordering::SeqCst);
    }
    c.disable().unwrap();
    assert_eq!(
        TRAP_COUNT.load(Ordering::SeqCst),
        3,
        "one SIGTRAP per write"
    );
    assert_eq!(TRAP_DATA.load(Ordering::SeqCst), 0xdead_beef_cafe);
    assert_eq!(TRAP_TYPE.load(Ordering::SeqCst), sys::PERF_TYPE_BREAKPOINT);
    assert_eq!(c.read().unwrap().value, 3);
}
