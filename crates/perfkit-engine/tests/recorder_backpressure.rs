//! A writer that falls behind does not make the recorder's memory grow: the draining
//! threads stop copying once the queue for the writer holds its byte limit, the records
//! stay in the rings, and the kernel counts what does not fit as lost.

use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::threads::{DrainLayout, ThreadSpec};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder, open, parse};
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// This thread's CPU time in ns (the first field of its schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// A sink that blocks every write until `open` is set: a disk that stopped keeping up.
struct StalledDisk {
    armed: Arc<AtomicBool>,
    open: Arc<AtomicBool>,
}

impl Write for StalledDisk {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        while self.armed.load(Ordering::Acquire) && !self.open.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// CPU time the workload burns while the writer is stalled.
const STALL_CPU_NS: u64 = 500_000_000;
/// cpu-clock period: one sample per 100 µs of CPU time, so the stall makes ~5000 samples
/// (more than 200 KiB of records), whatever the machine's load.
const PERIOD_NS: u64 = 100_000;
const QUEUE_LIMIT: usize = 16 << 10;
const RING_PAGES: usize = 4;

#[test]
fn a_stalled_writer_holds_the_queue_to_its_limit_and_the_kernel_counts_the_rest_lost() {
    stalled_writer(false);
}

#[test]
fn a_stalled_writer_of_lent_records_queues_nothing_and_the_kernel_counts_the_rest_lost() {
    stalled_writer(true);
}

/// A writer whose disk stalls while busy threads make far more samples than the rings
/// hold; `lend`: the draining threads lend their records in place instead of copying.
fn stalled_writer(lend: bool) {
    let mut specs = parse(&["cpu-clock".to_string()]).expect("cpu-clock");
    sampling_attrs(
        &mut specs,
        &SamplingOptions {
            sampling: Sampling::Period(PERIOD_NS),
            call_graph: CallGraph::None,
            ..SamplingOptions::default()
        },
    );
    let cpus = perfkit::cpus::online().expect("online CPUs");
    let places = Place::of(
        &perfkit::Targets::this_process()
            .expect("this process")
            .on_cpus(&cpus),
    );
    let opts = OpenOptions {
        inherit: true,
        ..OpenOptions::default()
    };
    let opened = open(&specs, &places, &opts)
        .require_all()
        .expect("cpu-clock opens (a software event: every kernel has it)");
    let mut rec = Recorder::new(opened, RING_PAGES).expect("rings");
    rec.set_queue_limit(QUEUE_LIMIT);
    rec.set_lend_records(lend);
    let armed = Arc::new(AtomicBool::new(false));
    let gate = Arc::new(AtomicBool::new(false));
    let sink = StalledDisk {
        armed: armed.clone(),
        open: gate.clone(),
    };
    let mut w =
        perfkit_data::PerfDataWriter::pipe(Box::new(sink), rec.file_events(), Default::default())
            .expect("writer");
    let layout = DrainLayout::new(&ThreadSpec::Cpu, &cpus, &cpus).expect("layout");
    let drainers = rec.start_threads(&layout).expect("draining threads");
    assert!(drainers >= 1);
    armed.store(true, Ordering::Release);
    rec.enable().expect("enable");

    // The workload: a busy thread per CPU, until together they burnt STALL_CPU_NS with
    // the writer stalled; then the disk catches up.
    let burnt = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = cpus
        .iter()
        .map(|_| {
            let (burnt, stop, gate) = (burnt.clone(), stop.clone(), gate.clone());
            std::thread::spawn(move || {
                let start = thread_cpu_ns();
                let mut last = 0;
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    for i in 0..100_000u64 {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                    }
                    let mine = thread_cpu_ns() - start;
                    let total = burnt.fetch_add(mine - last, Ordering::Relaxed) + mine - last;
                    last = mine;
                    if total >= STALL_CPU_NS {
                        gate.store(true, Ordering::Release);
                    }
                }
                x
            })
        })
        .collect();
    let stopper = rec.stopper();
    let (gate2, stop2) = (gate.clone(), stop.clone());
    let ender = std::thread::spawn(move || {
        while !gate2.load(Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Some time with the disk keeping up, for the kernel's LOST records to come out.
        std::thread::sleep(Duration::from_millis(200));
        stop2.store(true, Ordering::Relaxed);
        stopper.stop();
    });
    while rec.poll(&mut w, Duration::from_millis(50)).expect("poll") == Poll::Continue {}
    let stats = rec.finish(&mut w).expect("finish");
    ender.join().unwrap();
    for t in workers {
        t.join().unwrap();
    }
    let ring_bytes = RING_PAGES * 4096 * cpus.len();
    let peak = rec.queue_peak();
    println!(
        "{drainers} draining threads, queue peak {peak} bytes (limit {QUEUE_LIMIT}, rings \
         {ring_bytes}), {} samples written, {} lost",
        stats.samples, stats.lost
    );
    // Each draining thread may add one pass (at most its rings) after it saw room, and
    // its last pass after the stop: the bound.
    assert!(
        peak <= QUEUE_LIMIT + 2 * ring_bytes,
        "queue peak {peak} > limit {QUEUE_LIMIT} + 2 x rings {ring_bytes}"
    );
    if lend {
        // The draining threads lend their records to the writer in place (the ring's
        // bytes are written straight from the ring) and wait for them back: nothing is
        // copied or queued in perfkit's memory.
        assert_eq!(peak, 0, "lent records were queued in memory");
    } else {
        // The stall made far more records than the queue and the rings hold: the queue
        // filled up to its limit, and the rest was lost in the rings rather than queued.
        assert!(
            peak >= QUEUE_LIMIT,
            "queue peak {peak} never reached the limit"
        );
    }
    // What the stall made beyond the rings (and the queue) was lost in the rings.
    assert!(stats.lost > 0, "nothing lost: {stats:?}");
}
