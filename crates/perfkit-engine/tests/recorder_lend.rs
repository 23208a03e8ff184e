//! The draining threads lend their records to the writer in place (written straight from
//! the rings) or copy them into blocks, or one drainer lends them on the writing thread
//! itself: all give the same kind of file, with every sample counted and the
//! FINISHED_ROUNDs perf sorts by.

use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::threads::{DrainLayout, Drainer, ThreadSpec};
use perfkit_engine::{OpenOptions, Place, Poll, Recorder, open, parse};
use std::time::Duration;

/// This thread's CPU time in ns (the first field of its schedstat).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

const RING_PAGES: usize = 8;
/// Each busy thread burns this much CPU: at one sample per 100 µs, 3000 samples.
const BURN_NS: u64 = 300_000_000;

/// (samples, FINISHED_ROUNDs, data bytes) of a perf.data file, read record by record.
fn scan(path: &std::path::Path) -> (u64, u64, u64) {
    let data = std::fs::read(path).unwrap();
    assert_eq!(&data[..8], b"PERFILE2");
    let u64_at = |at: usize| u64::from_ne_bytes(data[at..at + 8].try_into().unwrap());
    let (off, size) = (u64_at(40) as usize, u64_at(48) as usize);
    let (mut at, end) = (off, off + size);
    let (mut samples, mut rounds) = (0, 0);
    while at + 8 <= end {
        let type_ = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
        let sz = u16::from_ne_bytes(data[at + 6..at + 8].try_into().unwrap()) as usize;
        assert!(sz >= 8, "record of size {sz} at {at}");
        match type_ {
            perfkit::sys::PERF_RECORD_SAMPLE => samples += 1,
            perfkit::sys::PERF_RECORD_FINISHED_ROUND => rounds += 1,
            _ => {}
        }
        at += sz;
    }
    assert_eq!(at, end, "the data section ends with a whole record");
    (samples, rounds, size as u64)
}

/// How the rings are drained.
#[derive(Clone, Copy, Debug, PartialEq)]
enum How {
    /// A thread per CPU lends its records to the writer.
    Lend,
    /// A thread per CPU copies its records into blocks.
    Copy,
    /// One drainer lending its records: on the writing thread (`start_draining`).
    Inline,
}

fn record(how: How, path: &std::path::Path) -> (perfkit_engine::RecordStats, usize) {
    let mut specs = parse(&["cpu-clock".to_string()]).expect("cpu-clock");
    sampling_attrs(
        &mut specs,
        &SamplingOptions {
            sampling: Sampling::Period(100_000),
            call_graph: CallGraph::Fp,
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
    rec.set_lend_records(how != How::Copy);
    let mut w = perfkit_data::PerfDataWriter::create(path, rec.file_events(), Default::default())
        .expect("writer");
    rec.write_preamble(&mut w, &[]).expect("preamble");
    if how == How::Inline {
        let one = DrainLayout {
            drainers: vec![Drainer {
                cpus: cpus.clone(),
                affinity: Vec::new(),
            }],
        };
        assert_eq!(rec.start_draining(&one).expect("draining"), 0);
    } else {
        let layout = DrainLayout::new(&ThreadSpec::Cpu, &cpus, &cpus).expect("layout");
        assert!(rec.start_threads(&layout).expect("draining threads") >= 1);
    }
    rec.enable().expect("enable");
    let stopper = rec.stopper();
    let n = cpus.len();
    let workers = std::thread::spawn(move || {
        let busy: Vec<_> = (0..n)
            .map(|_| {
                std::thread::spawn(|| {
                    let start = thread_cpu_ns();
                    let mut x = 0u64;
                    while thread_cpu_ns() - start < BURN_NS {
                        for i in 0..100_000u64 {
                            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                        }
                    }
                    x
                })
            })
            .collect();
        for b in busy {
            b.join().unwrap();
        }
        stopper.stop();
    });
    while rec.poll(&mut w, Duration::from_millis(50)).expect("poll") == Poll::Continue {}
    let stats = rec.finish(&mut w).expect("finish");
    w.finish(&[]).expect("file");
    workers.join().unwrap();
    (stats, RING_PAGES * 4096 * cpus.len())
}

#[test]
fn lent_and_copied_records_make_files_with_every_sample_and_rounds() {
    for lend in [How::Lend, How::Copy, How::Inline] {
        let path = std::env::temp_dir().join(format!(
            "perfkit-recorder-lend-{}-{lend:?}.data",
            std::process::id()
        ));
        let (stats, ring_bytes) = record(lend, &path);
        let (samples, rounds, bytes) = scan(&path);
        println!("{lend:?}: {stats:?}; file: {samples} samples, {rounds} rounds, {bytes} bytes");
        assert_eq!(samples, stats.samples, "{lend:?}: samples in the file");
        assert!(samples > 0, "{lend:?}: no samples");
        assert!(rounds >= 1, "{lend:?}: no FINISHED_ROUND");
        // More than all the rings hold went through them: at least two passes with
        // records, and the writer ends a round after the first one already.
        if bytes > ring_bytes as u64 {
            assert!(rounds >= 2, "{lend:?}: {rounds} rounds for {bytes} bytes");
        }
        let pd = perfkit_data::PerfData::open(&path).expect("perfkit reads it");
        let mut read = 0u64;
        pd.for_each(
            |item| {
                if let perfkit_data::Item::Event { record, .. } = item
                    && matches!(record.record, perfkit::Record::Sample(_))
                {
                    read += 1;
                }
            },
            |_| {},
        )
        .expect("in order");
        assert_eq!(read, samples, "{lend:?}: samples read back in time order");
        let _ = std::fs::remove_file(&path);
    }
}
