//! Whole-process counting: `Targets` + `CounterSet` against the threads' own CPU clocks.
//!
//! Every bound is a relation between the kernel's task-clock and the threads' CPU time
//! (`CLOCK_THREAD_CPUTIME_ID`, `CLOCK_PROCESS_CPUTIME_ID`), never wall time. Other tests of
//! this binary run in parallel threads of the same process, so process-wide counts have
//! only lower bounds from the threads started here and an upper bound from the process's
//! CPU clock.

use perfkit::{Attr, Counter, CounterSet, ErrorKind, Software, Target, Targets};
use std::hint::black_box;
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Spin for `d` of this thread's CPU time; returns the CPU time actually used.
fn burn(d: Duration) -> u64 {
    let start = thread_cpu_ns();
    let mut x = 0u64;
    while thread_cpu_ns() - start < d.as_nanos() as u64 {
        for i in 0..10_000u64 {
            x = black_box(x.wrapping_mul(31).wrapping_add(i));
        }
    }
    black_box(x);
    thread_cpu_ns() - start
}

fn attr() -> Attr {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    Attr::new(Software::TaskClock).exclude_kernel(!root)
}

/// `n` threads that wait at a barrier, then burn `d` of CPU each and report it.
fn spinners(n: usize, d: Duration) -> (Arc<Barrier>, Vec<std::thread::JoinHandle<u64>>) {
    let go = Arc::new(Barrier::new(n + 1));
    let handles = (0..n)
        .map(|_| {
            let go = go.clone();
            std::thread::spawn(move || {
                go.wait();
                burn(d)
            })
        })
        .collect();
    (go, handles)
}

#[test]
fn this_process_counts_every_thread_and_this_thread_one() {
    let d = Duration::from_millis(150);
    let (go, handles) = spinners(3, d);
    let set = CounterSet::open(&attr(), &Targets::this_process().unwrap()).unwrap();
    assert!(
        set.counters().len() >= 4,
        "{} threads",
        set.counters().len()
    );
    let mine = Counter::open(&attr(), &Target::this_thread()).unwrap();
    let proc_start = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID);
    set.enable().unwrap();
    mine.enable().unwrap();
    go.wait();
    let own = burn(d);
    let others: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    mine.disable().unwrap();
    set.disable().unwrap();
    let proc_used = clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID) - proc_start;
    let total = set.read().unwrap();
    let one = mine.read().unwrap().value;
    let spun = own + others;
    eprintln!(
        "set {} ns, this thread {one} ns; spun {spun} ns (own {own}), process {proc_used} ns",
        total.value
    );
    // The set sees the four spinning threads (this one and three others).
    assert!(
        total.value >= spun * 8 / 10,
        "set {} < 80% of the {spun} ns the four threads spun",
        total.value
    );
    // ... and nothing the process did not do.
    assert!(
        total.value <= proc_used + proc_used / 5 + 20_000_000,
        "set {} > process CPU time {proc_used}",
        total.value
    );
    // This thread's counter sees this thread only.
    assert!(one >= own * 8 / 10, "thread {one} < 80% of own {own}");
    assert!(
        one <= own + own / 2 + 20_000_000,
        "thread {one} sees more than its own {own}"
    );
    assert!(
        one * 2 < total.value,
        "the thread counter ({one}) should see about a quarter of the set ({})",
        total.value
    );
    // Summed times: each counter was enabled for about the same span.
    let enabled = total.time_enabled.unwrap();
    assert!(enabled >= total.time_running.unwrap());
    assert!(enabled > 0);
}

#[test]
fn inherit_covers_threads_started_later() {
    let d = Duration::from_millis(100);
    let set = CounterSet::open(&attr().inherit(true), &Targets::this_process().unwrap()).unwrap();
    set.enable().unwrap();
    // Started after the list was taken: covered through `inherit` from this thread.
    let spun: u64 = (0..2)
        .map(|_| std::thread::spawn(move || burn(d)))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.join().unwrap())
        .sum();
    set.disable().unwrap();
    let v = set.read().unwrap().value;
    eprintln!("inherited set {v} ns, new threads spun {spun} ns");
    assert!(v >= spun * 8 / 10, "{v} < 80% of {spun}");
}

#[test]
fn without_inherit_later_threads_are_not_counted() {
    let d = Duration::from_millis(100);
    let set = CounterSet::open(&attr(), &Targets::threads(&[0])).unwrap();
    set.enable().unwrap();
    let spun = std::thread::spawn(move || burn(d)).join().unwrap();
    set.disable().unwrap();
    let v = set.read().unwrap().value;
    assert!(
        v < spun / 2,
        "{v} counted of a thread not in the set ({spun})"
    );
}

#[test]
fn targets_lists() {
    let me = Targets::this_process().unwrap();
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    assert!(me.places().contains(&(tid, -1)), "{me:?} lacks {tid}");
    assert!(me.is_listed_from_proc());
    let cpus = Targets::cpus(&[0, 1]);
    assert_eq!(cpus.places(), [(-1, 0), (-1, 1)]);
    let t: Vec<_> = cpus.iter().map(|t| (t.pid_value(), t.cpu_arg())).collect();
    assert_eq!(t, [(-1, 0), (-1, 1)]);
    let per_cpu = Targets::threads(&[5, 6]).on_cpus(&[0, 1]);
    assert_eq!(per_cpu.places(), [(5, 0), (5, 1), (6, 0), (6, 1)]);
    assert_eq!((&per_cpu).into_iter().len(), 4);
}

#[test]
fn missing_process_and_empty_targets_are_errors() {
    let e = Targets::process(0x3fff_fff0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchTask, "{e}");
    assert!(e.to_string().contains("1073741808"), "{e}");
    let e = CounterSet::open(&attr(), &Targets::threads(&[])).unwrap_err();
    assert!(e.to_string().contains("empty"), "{e}");
    // A thread given explicitly that does not exist is an error, not skipped.
    let e = CounterSet::open(&attr(), &Targets::threads(&[0x3fff_fff0])).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NoSuchTask, "{e}");
}

#[test]
fn per_cpu_set_counts_this_cpu() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: CPU-wide counting needs root");
        return;
    }
    let online = perfkit::cpus::online().unwrap();
    let set = CounterSet::open(&Attr::new(Software::CpuClock), &Targets::cpus(&online)).unwrap();
    assert_eq!(set.counters().len(), online.len());
    set.enable().unwrap();
    let spun = burn(Duration::from_millis(50));
    set.disable().unwrap();
    let c = set.read().unwrap();
    // cpu-clock per CPU counts wall time on every CPU, busy or idle: at least this
    // thread's CPU time.
    assert!(c.value >= spun * 8 / 10, "{} < {spun}", c.value);
    assert_eq!(set.read_each().unwrap().len(), online.len());
}
