//! Counting on the real kernel: every check asserts values the kernel must produce.
//!
//! This machine has no hardware PMU (see shared/ci-machine.md): software events,
//! tracepoints, breakpoints and uprobes are tested for real here; hardware events are
//! tested to fail with the not-supported error (and on the emulated arm64 PMU by
//! scripts/arm64-pmu-test.sh).

use perfkit::sys;
use perfkit::{
    Attr, Breakpoint, BreakpointKind, Counter, ErrorKind, Event, Group, Hardware, PausedChild,
    Scaled, Software, Target,
};
use std::hint::black_box;
use std::time::{Duration, Instant};

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

fn open(ev: impl Into<Event>) -> Counter {
    let attr = Attr::new(ev).exclude_kernel(!is_root());
    Counter::open(&attr, &Target::this_thread()).expect("open")
}

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spin for `d` of this thread's CPU time (not wall time: on a loaded machine a thread
/// may get a fraction of a CPU, and the assertions are about CPU time).
fn burn(d: Duration) -> u64 {
    let start = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns() - start < d.as_nanos() as u64 {
        for i in 0..10_000u64 {
            x = black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    x
}

/// Map `pages` fresh anonymous pages, write one byte to each, unmap: `pages` minor faults.
fn touch_fresh_pages(pages: usize) {
    let page = 4096;
    // SAFETY: anonymous private mapping, no file; checked for MAP_FAILED below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            pages * page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    for i in 0..pages {
        // SAFETY: i * page is inside the mapping created above.
        unsafe { std::ptr::write_volatile((p as *mut u8).add(i * page), 1) };
    }
    // SAFETY: unmapping exactly what was mapped.
    unsafe { libc::munmap(p, pages * page) };
}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; CPU_SET on a valid index; sched_setaffinity on
    // the calling thread (pid 0).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set),
            0
        );
    }
}

fn ncpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn page_faults_count_touched_pages() {
    let pf = open(Software::PageFaults);
    let min = open(Software::PageFaultsMin);
    let maj = open(Software::PageFaultsMaj);
    for c in [&pf, &min, &maj] {
        c.enable().unwrap();
    }
    touch_fresh_pages(1000);
    for c in [&pf, &min, &maj] {
        c.disable().unwrap();
    }
    let (pf, min, maj) = (
        pf.read().unwrap().value,
        min.read().unwrap().value,
        maj.read().unwrap().value,
    );
    // Exactly one fault per page, plus a handful for the test's own code and stack.
    assert!((1000..1020).contains(&pf), "page-faults {pf}");
    assert!((1000..1020).contains(&min), "minor-faults {min}");
    assert_eq!(maj, 0, "anonymous memory has no major faults");
}

#[test]
fn context_switches_of_a_sleeping_thread() {
    let cs = open(Software::ContextSwitches);
    cs.enable().unwrap();
    for _ in 0..20 {
        std::thread::sleep(Duration::from_millis(1));
    }
    cs.disable().unwrap();
    let v = cs.read().unwrap().value;
    assert!((20..60).contains(&v), "20 sleeps gave {v} context switches");
}

#[test]
fn context_switches_of_a_child_that_sleeps() {
    // The child is launched paused, counted from exec with inherit: it sleeps 5 times.
    let child = PausedChild::spawn(
        "sh".as_ref(),
        &[
            "-c".into(),
            "for i in 1 2 3 4 5; do sleep 0.01; done".into(),
        ],
    )
    .unwrap();
    let attr = Attr::new(Software::ContextSwitches)
        .inherit(true)
        .enable_on_exec(true);
    let cs = Counter::open(&attr, &Target::pid(child.pid())).unwrap();
    let pid = child.start().unwrap();
    assert_eq!(perfkit::wait(pid).unwrap(), perfkit::ExitStatus::Exited(0));
    let v = cs.read().unwrap().value;
    // Each `sleep` child blocks at least once, and the shell waits for each of them.
    assert!(
        (10..200).contains(&v),
        "5 sleeping children gave {v} switches"
    );
}

#[test]
fn task_clock_matches_thread_cpu_time() {
    let tc = open(Software::TaskClock);
    let cc = open(Software::CpuClock);
    let t0 = thread_cpu_ns();
    tc.enable().unwrap();
    cc.enable().unwrap();
    black_box(burn(Duration::from_millis(200)));
    tc.disable().unwrap();
    cc.disable().unwrap();
    let cpu = thread_cpu_ns() - t0;
    let tc = tc.read().unwrap();
    let cc = cc.read().unwrap().value;
    let ratio = tc.value as f64 / cpu as f64;
    assert!(
        (0.9..=1.15).contains(&ratio),
        "task-clock {} vs cpu time {cpu}",
        tc.value
    );
    let ratio = cc as f64 / cpu as f64;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "cpu-clock {cc} vs cpu time {cpu}"
    );
    // (Under a loaded VM, steal time can put task-clock a few percent above the
    // thread CPU clock.) A task-clock counts only while the task runs; enabled is at
    // least that.
    assert!(tc.time_enabled.unwrap() >= tc.value);
    assert_eq!(tc.scaled(), Scaled::Exact(tc.value));
    assert!(tc.id.unwrap() > 0);
}

#[test]
fn cpu_migrations_counts_forced_moves() {
    if ncpus() < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    let m = open(Software::CpuMigrations);
    m.enable().unwrap();
    for i in 0..6 {
        pin_to(i % 2);
        burn(Duration::from_millis(2));
    }
    m.disable().unwrap();
    let v = m.read().unwrap().value;
    // Pinned to each CPU in turn: every pin after the first one moves the thread.
    assert!(
        (5..=12).contains(&v),
        "6 alternating pins gave {v} migrations"
    );
    pin_to_all();
}

fn pin_to_all() {
    // SAFETY: as in pin_to.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for c in 0..ncpus() {
            libc::CPU_SET(c, &mut set);
        }
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[test]
fn every_software_event_opens() {
    for sw in Software::ALL {
        let c = open(sw);
        c.enable().unwrap();
        black_box(burn(Duration::from_millis(1)));
        c.disable().unwrap();
        let v = c.read().unwrap().value;
        match sw {
            // These never fire in this test: the kernel must say zero, not fail.
            Software::AlignmentFaults
            | Software::EmulationFaults
            | Software::Dummy
            | Software::BpfOutput
            | Software::PageFaultsMaj => assert_eq!(v, 0, "{sw:?}"),
            Software::TaskClock | Software::CpuClock => assert!(v >= 900_000, "{sw:?} {v}"),
            _ => {}
        }
    }
}

#[test]
fn inherit_counts_children() {
    let attr = Attr::new(Software::TaskClock).inherit(true);
    let tc = Counter::open(&attr, &Target::this_thread()).unwrap();
    tc.enable().unwrap();
    let child = PausedChild::spawn(
        "sh".as_ref(),
        &[
            "-c".into(),
            "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done".into(),
        ],
    )
    .unwrap();
    let pid = child.start().unwrap();
    // The child's own usage (other tests run children of this process concurrently).
    let (status, usage) = perfkit::wait_with_usage(pid).unwrap();
    assert_eq!(status, perfkit::ExitStatus::Exited(0));
    tc.disable().unwrap();
    let child_cpu = usage.user_ns + usage.sys_ns;
    let v = tc.read().unwrap().value;
    assert!(child_cpu > 10_000_000, "child burned {child_cpu} ns");
    // The child's task-clock is folded into ours at its exit.
    assert!(
        v as f64 >= child_cpu as f64 * 0.8,
        "inherited task-clock {v} vs child cpu {child_cpu}"
    );
}

#[test]
fn per_cpu_counting() {
    require_root!();
    let start = Instant::now();
    let counters: Vec<Counter> = (0..ncpus())
        .map(|c| Counter::open(&Attr::new(Software::CpuClock), &Target::cpu(c as u32)).unwrap())
        .collect();
    for c in &counters {
        c.enable().unwrap();
    }
    std::thread::sleep(Duration::from_millis(100));
    for c in &counters {
        c.disable().unwrap();
    }
    let wall = start.elapsed().as_nanos() as f64;
    for c in &counters {
        let v = c.read().unwrap().value as f64;
        // cpu-clock on a CPU advances with wall time, busy or idle.
        assert!(
            v > wall * 0.5 && v < wall * 1.1,
            "cpu-clock {v} vs wall {wall}"
        );
    }
}

#[test]
fn group_reads_consistently() {
    let leader = Attr::new(Software::TaskClock).exclude_kernel(!is_root());
    let mut g = Group::open(&leader, &Target::this_thread()).unwrap();
    let pf = g
        .add(&Attr::new(Software::PageFaults), &Target::this_thread())
        .unwrap();
    let cs = g
        .add(
            &Attr::new(Software::ContextSwitches),
            &Target::this_thread(),
        )
        .unwrap();
    let cc = g
        .add(&Attr::new(Software::CpuClock), &Target::this_thread())
        .unwrap();
    g.enable().unwrap();
    touch_fresh_pages(200);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let t0 = thread_cpu_ns();
    burn(Duration::from_millis(20));
    let burned = (thread_cpu_ns() - t0) as f64;
    g.disable().unwrap();
    let r = g.read().unwrap();
    assert_eq!(r.counts().len(), 4);
    assert!((200..230).contains(&r[pf].value), "{:?}", r[pf]);
    assert!(r[cs].value >= 5, "{:?}", r[cs]);
    let (tc, cc) = (r[g.leader()].value as f64, r[cc].value as f64);
    assert!(tc >= burned * 0.95, "task-clock {tc} vs burned {burned}");
    assert!((cc / tc - 1.0).abs() < 0.1, "task {tc} cpu {cc}");
    // One time pair for the whole group, and ids match the members' own.
    assert_eq!(r[pf].time_enabled, r.time_enabled);
    assert_eq!(r[pf].id, Some(g.counter(pf).id().unwrap()));
}

#[test]
fn reset_enable_disable() {
    let c = open(Software::PageFaults);
    touch_fresh_pages(50);
    assert_eq!(
        c.read().unwrap().value,
        0,
        "disabled counter must not count"
    );
    c.enable().unwrap();
    touch_fresh_pages(50);
    c.disable().unwrap();
    let first = c.read().unwrap();
    assert!(first.value >= 50);
    touch_fresh_pages(50);
    assert_eq!(
        c.read().unwrap().value,
        first.value,
        "disabled again: no change"
    );
    c.reset().unwrap();
    let after = c.read().unwrap();
    assert_eq!(after.value, 0, "reset zeroes the count");
    assert_eq!(
        after.time_enabled, first.time_enabled,
        "reset keeps the times"
    );
}

#[test]
fn refresh_and_period_on_sampling_events() {
    let counting = open(Software::PageFaults);
    let e = counting.refresh(1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOperation, "{e}");
    assert_eq!(e.errno(), libc::EINVAL);
    let e = counting.set_period(10).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidOperation);

    // A sampling counter with period 1 and REFRESH 3 stops after three overflows.
    let attr = Attr::new(Software::PageFaults)
        .sample_period(1)
        .exclude_kernel(!is_root());
    let s = Counter::open(&attr, &Target::this_thread()).unwrap();
    s.refresh(3).unwrap();
    touch_fresh_pages(100);
    let v = s.read().unwrap().value;
    assert_eq!(v, 3, "refresh 3 at period 1 counts 3 then disables");

    let p = Counter::open(&attr, &Target::this_thread()).unwrap();
    p.set_period(1000).unwrap();
}

static mut WATCHED: [u64; 8] = [0; 8];

#[inline(never)]
fn write_watched(i: usize, v: u64) {
    // SAFETY: single-threaded use within the one test that touches WATCHED; the write
    // goes through a raw pointer so no reference to the static mut is formed.
    unsafe { std::ptr::write_volatile(std::ptr::addr_of_mut!(WATCHED).cast::<u64>().add(i), v) };
}

/// A user-space write breakpoint on slot `i` of `WATCHED`.
fn watch_write(i: u64) -> Attr {
    Attr::new(Breakpoint {
        addr: std::ptr::addr_of!(WATCHED) as u64 + 8 * i,
        len: 8,
        kind: BreakpointKind::Write,
    })
    .exclude_kernel(true)
    .exclude_hv(true)
}

#[test]
fn breakpoints_count_exact_writes_and_run_out_of_slots() {
    let bp = watch_write;
    let c = Counter::open(&bp(0), &Target::this_thread()).unwrap();
    c.enable().unwrap();
    for v in 0..1234 {
        write_watched(0, v);
        write_watched(1, v); // not watched by this counter
    }
    c.disable().unwrap();
    assert_eq!(c.read().unwrap().value, 1234);

    let mut more = vec![c];
    for i in 1..4 {
        more.push(Counter::open(&bp(i), &Target::this_thread()).unwrap());
    }
    let e = Counter::open(&bp(4), &Target::this_thread()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoFreeCounter, "{e}");
    assert!(e.hint().unwrap().contains("slot"), "{:?}", e.hint());
}

#[test]
fn breakpoint_bad_length_is_explained() {
    let a = Attr::new(Breakpoint {
        addr: std::ptr::addr_of!(WATCHED) as u64 + 1,
        len: 3,
        kind: BreakpointKind::Write,
    })
    .exclude_kernel(true);
    let e = Counter::open(&a, &Target::this_thread()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidAttr);
    assert!(e.to_string().contains("length"), "{e}");
}

#[unsafe(no_mangle)]
#[inline(never)]
pub extern "C" fn perfkit_test_probed(x: u64) -> u64 {
    black_box(x.wrapping_mul(3))
}

/// File offset of `addr` in the mapping of our executable (for a uprobe's config2).
fn file_offset_of(addr: u64) -> (String, u64) {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    for line in maps.lines() {
        let mut it = line.split_whitespace();
        let range = it.next().unwrap();
        let _perms = it.next();
        let off = u64::from_str_radix(it.next().unwrap(), 16).unwrap();
        let _dev = it.next();
        let _ino = it.next();
        let path = it.next().unwrap_or("");
        let (s, e) = range.split_once('-').unwrap();
        let (s, e) = (
            u64::from_str_radix(s, 16).unwrap(),
            u64::from_str_radix(e, 16).unwrap(),
        );
        if (s..e).contains(&addr) {
            return (path.to_string(), addr - s + off);
        }
    }
    panic!("{addr:#x} not mapped");
}

#[test]
fn uprobe_counts_exact_calls() {
    require_root!();
    let Ok(ty) = std::fs::read_to_string("/sys/bus/event_source/devices/uprobe/type") else {
        eprintln!("skipped: no uprobe PMU");
        return;
    };
    let ty: u32 = ty.trim().parse().unwrap();
    let (path, offset) = file_offset_of(perfkit_test_probed as *const () as usize as u64);
    let cpath = std::ffi::CString::new(path).unwrap();
    let attr = Attr::new(Event::Pmu {
        type_: ty,
        config: 0,
        config1: cpath.as_ptr() as u64,
        config2: offset,
        config3: 0,
    });
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    c.enable().unwrap();
    let mut acc = 0;
    for i in 0..777 {
        acc += perfkit_test_probed(i);
    }
    c.disable().unwrap();
    black_box(acc);
    assert_eq!(c.read().unwrap().value, 777);
}

fn tracefs() -> Option<std::path::PathBuf> {
    for p in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        if std::path::Path::new(p).join("events").is_dir() {
            return Some(p.into());
        }
    }
    if is_root() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
        if std::path::Path::new("/sys/kernel/tracing/events").is_dir() {
            return Some("/sys/kernel/tracing".into());
        }
    }
    None
}

#[test]
fn tracepoint_counts_by_id() {
    require_root!();
    let Some(tfs) = tracefs() else {
        eprintln!("skipped: no tracefs");
        return;
    };
    let idf = tfs.join("events/syscalls/sys_enter_getppid/id");
    let Ok(id) = std::fs::read_to_string(&idf) else {
        eprintln!("skipped: no syscalls:sys_enter_getppid tracepoint");
        return;
    };
    let id: u64 = id.trim().parse().unwrap();
    let c = Counter::open(&Attr::new(Event::Tracepoint(id)), &Target::this_thread()).unwrap();
    c.enable().unwrap();
    for _ in 0..321 {
        // SAFETY: getppid has no preconditions.
        black_box(unsafe { libc::getppid() });
    }
    c.disable().unwrap();
    assert_eq!(c.read().unwrap().value, 321);
    // A filter naming a field the tracepoint does not have is refused and explained.
    let e = c.set_filter("no_such_field == 1").unwrap_err();
    assert!(e.to_string().contains("filter"), "{e}");
}

#[test]
fn multiplexed_time_is_scaled() {
    if ncpus() < 2 {
        eprintln!("skipped: needs 2 CPUs");
        return;
    }
    // A counter for this thread on CPU 1 only, while the thread runs on CPU 0: enabled
    // but never running.
    pin_to(0);
    let attr = Attr::new(Software::TaskClock).exclude_kernel(!is_root());
    let on1 = Counter::open(&attr, &Target::pid_on_cpu(0, 1)).unwrap();
    let all = Counter::open(&attr, &Target::this_thread()).unwrap();
    on1.enable().unwrap();
    let t0 = thread_cpu_ns();
    burn(Duration::from_millis(30));
    let burned = thread_cpu_ns() - t0;
    let r = on1.read().unwrap();
    assert_eq!(r.time_running, Some(0));
    assert!(
        r.time_enabled.unwrap() as f64 > burned as f64 * 0.9,
        "{r:?} vs {burned}"
    );
    assert_eq!(r.scaled(), Scaled::NotCounted);

    // Alternate CPUs: the CPU-1 counter runs about half the time; its scaled value
    // estimates the thread's whole task-clock.
    on1.disable().unwrap();
    on1.reset().unwrap();
    let before = on1.read().unwrap();
    on1.enable().unwrap();
    all.enable().unwrap();
    for i in 0..20 {
        pin_to(i % 2);
        burn(Duration::from_millis(5));
    }
    on1.disable().unwrap();
    all.disable().unwrap();
    pin_to_all();
    let r = on1.read().unwrap();
    let (e, run) = (
        r.time_enabled.unwrap() - before.time_enabled.unwrap(),
        r.time_running.unwrap() - before.time_running.unwrap(),
    );
    let frac = run as f64 / e as f64;
    assert!((0.3..0.7).contains(&frac), "running fraction {frac}");
    let est = perfkit::scale(r.value, e, run).value().unwrap() as f64;
    let truth = all.read().unwrap().value as f64;
    assert!(
        (est / truth - 1.0).abs() < 0.15,
        "scaled {est} vs whole task-clock {truth}"
    );
}

#[test]
fn hardware_events_are_not_supported_here() {
    let probe = Counter::open(
        &Attr::new(Hardware::CpuCycles).exclude_kernel(true),
        &Target::this_thread(),
    );
    if probe.is_ok() {
        eprintln!("skipped: this machine has a hardware PMU");
        return;
    }
    for hw in Hardware::ALL {
        let e =
            Counter::open(&Attr::new(hw).exclude_kernel(true), &Target::this_thread()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotSupported, "{hw:?}: {e}");
        assert!(e.to_string().contains("not supported"), "{e}");
        assert!(e.hint().unwrap().contains("perfkit list"));
    }
}

#[test]
fn inherit_with_sample_read_needs_tid() {
    let attr = Attr::new(Software::TaskClock)
        .inherit(true)
        .sample_period(100_000)
        .sample_type(sys::PERF_SAMPLE_READ | sys::PERF_SAMPLE_IP);
    let e = Counter::open(&attr, &Target::this_thread()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidAttr);
    assert!(e.to_string().contains("PERF_SAMPLE_TID"), "{e}");
    // With TID it opens.
    let ok = attr.sample_type(sys::PERF_SAMPLE_READ | sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID);
    Counter::open(&ok, &Target::this_thread()).unwrap();
}

#[test]
fn missing_task_is_no_such_task() {
    let e = Counter::open(&Attr::new(Software::TaskClock), &Target::pid(0x3fff_fff0)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchTask, "{e}");
    assert!(e.to_string().contains("1073741808"), "{e}");
    // The OS error is the source, and Display does not repeat it.
    let source = std::error::Error::source(&e).expect("the OS error is the source");
    let shown = e.to_string();
    assert!(
        !shown.contains(&source.to_string()),
        "{shown} repeats {source}"
    );
    assert!(!shown.contains("os error"), "{shown}");
    assert_eq!(e.errno(), libc::ESRCH);
}

#[test]
fn unprivileged_kernel_counting_explains_paranoid() {
    require_root!();
    let paranoid = perfkit::read_paranoid().unwrap_or(2);
    if paranoid < 2 {
        eprintln!(
            "skipped: perf_event_paranoid is {paranoid}, unprivileged kernel counting is allowed"
        );
        return;
    }
    // Re-run this test binary as `nobody` for the check below.
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "as_nobody_kernel_counting", "--nocapture"])
        .env("PERFKIT_AS_NOBODY", "1")
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

use std::os::unix::process::CommandExt;

#[test]
fn as_nobody_kernel_counting() {
    if std::env::var_os("PERFKIT_AS_NOBODY").is_none() {
        return; // only meaningful when started by the test above
    }
    let e = Counter::open(&Attr::new(Software::TaskClock), &Target::this_thread()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Permission, "{e}");
    let hint = e.hint().unwrap();
    assert!(hint.contains("perf_event_paranoid is"), "{hint}");
    assert!(hint.contains(":u"), "{hint}");
    // User space only is allowed.
    let c = Counter::open(
        &Attr::new(Software::TaskClock).exclude_kernel(true),
        &Target::this_thread(),
    )
    .unwrap();
    c.enable().unwrap();
    burn(Duration::from_millis(5));
    assert!(c.read().unwrap().value > 1_000_000);
}

#[test]
fn paused_child_reports_missing_command() {
    let e = PausedChild::spawn("perfkit-no-such-command".as_ref(), &[]).unwrap_err();
    assert_eq!(e.exit_code(), 127);
    assert!(e.to_string().contains("command not found"));
}

#[test]
fn prctl_disables_all_counters_of_this_process() {
    let c = open(Software::PageFaults);
    c.enable().unwrap();
    perfkit::disable_all_for_this_process().unwrap();
    touch_fresh_pages(30);
    let v = c.read().unwrap().value;
    perfkit::enable_all_for_this_process().unwrap();
    touch_fresh_pages(30);
    let w = c.read().unwrap().value;
    assert!(v < 5, "counted {v} while disabled by prctl");
    assert!(w - v >= 30);
}

fn cgroup2_root() -> Option<std::path::PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| f[1].into())
    })
}

#[test]
#[allow(
    clippy::zombie_processes,
    reason = "reaped by perfkit::wait_with_usage"
)]
fn cgroup_target_counts_only_its_tasks() {
    require_root!();
    let Some(root) = cgroup2_root() else {
        eprintln!("skipped: no cgroup2 mount");
        return;
    };
    let dir = root.join(format!("perfkit-test-{}", std::process::id()));
    if std::fs::create_dir(&dir).is_err() {
        eprintln!("skipped: cannot create a cgroup under {}", root.display());
        return;
    }
    let cg = std::fs::File::open(&dir).unwrap();
    let attr = Attr::new(Software::TaskClock);
    let counters: Vec<Counter> = (0..ncpus())
        .map(|c| Counter::open(&attr, &Target::cgroup(&cg, c as u32)).unwrap())
        .collect();
    for c in &counters {
        c.enable().unwrap();
    }
    // A child moved into the cgroup burns CPU; this test's own work is not counted.
    let mut child = std::process::Command::new("sh")
        .args([
            "-c",
            "read x; i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
        ])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::write(dir.join("cgroup.procs"), child.id().to_string()).unwrap();
    {
        use std::io::Write;
        writeln!(child.stdin.take().unwrap(), "go").unwrap();
    }
    // The child's own CPU time (other tests run children of this process concurrently).
    let (status, usage) = perfkit::wait_with_usage(child.id() as i32).unwrap();
    assert_eq!(status, perfkit::ExitStatus::Exited(0));
    let child_cpu = (usage.user_ns + usage.sys_ns) as f64;
    burn(Duration::from_millis(50));
    for c in &counters {
        c.disable().unwrap();
    }
    let total: u64 = counters.iter().map(|c| c.read().unwrap().value).sum();
    let _ = std::fs::remove_dir(&dir);
    let ratio = total as f64 / child_cpu;
    assert!(
        (0.8..1.2).contains(&ratio),
        "cgroup task-clock {total} vs the child's CPU time {child_cpu}"
    );
}

#[test]
fn modify_attributes_moves_a_breakpoint() {
    let bp = watch_write;
    // Slot 7 and 6 of WATCHED: the slot test above uses 0..4 of the same array; a
    // breakpoint only counts writes to its own address.
    let mut c = Counter::open(&bp(7), &Target::this_thread()).unwrap();
    c.enable().unwrap();
    for v in 0..10 {
        write_watched(7, v);
    }
    c.disable().unwrap();
    c.modify_attributes(&bp(6)).unwrap();
    c.enable().unwrap();
    for v in 0..25 {
        write_watched(7, v); // no longer watched
        write_watched(6, v);
    }
    c.disable().unwrap();
    assert_eq!(c.read().unwrap().value, 35);
}

#[test]
fn read_format_lost_and_id() {
    let attr = Attr::new(Software::PageFaults)
        .exclude_kernel(!is_root())
        .read_format(
            sys::PERF_FORMAT_ID
                | sys::PERF_FORMAT_LOST
                | sys::PERF_FORMAT_TOTAL_TIME_ENABLED
                | sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
        );
    let c = Counter::open(&attr, &Target::this_thread()).unwrap();
    c.enable().unwrap();
    touch_fresh_pages(10);
    c.disable().unwrap();
    let r = c.read().unwrap();
    assert!(r.value >= 10);
    assert_eq!(r.lost, Some(0), "a counting event loses nothing");
    assert_eq!(r.id, Some(c.id().unwrap()));
}

#[test]
fn too_many_open_files_is_explained() {
    if std::env::var_os("PERFKIT_LOW_NOFILE").is_some() {
        // Started by the test below with RLIMIT_NOFILE lowered: open until it fails.
        let mut keep = Vec::new();
        let err = loop {
            match Counter::open(
                &Attr::new(Software::Dummy).exclude_kernel(true),
                &Target::this_thread(),
            ) {
                Ok(c) => keep.push(c),
                Err(e) => break e,
            }
            assert!(keep.len() < 10_000, "the limit was not applied");
        };
        assert_eq!(err.kind(), ErrorKind::TooManyFiles, "{err}");
        assert!(err.hint().unwrap().contains("ulimit -n"));
        return;
    }
    if std::process::Command::new("prlimit")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: no prlimit command");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("prlimit")
        .arg("--nofile=40")
        .arg(exe)
        .args([
            "--exact",
            "too_many_open_files_is_explained",
            "--test-threads=1",
        ])
        .env("PERFKIT_LOW_NOFILE", "1")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}
