//! Records the draining threads lend to the writer go back to the kernel as soon as they
//! are written, not at the drainer's next wakeup.
//!
//! A ring wakes its drainer each time another half of it was written. If the lent half
//! stayed lent until then, the kernel could fill only the other half: a ring with one lent
//! half and one new half is full, and the wakeup that would give the lent half back never
//! comes (the head cannot pass the tail). With a small ring at a high rate that lost most
//! samples (`record -F max -m 8`: 22,581 lost where perf lost 576). Here the recorder's
//! ring is one page, samples are page faults of this thread (one per fresh page, so their
//! number and size are exact), and every step is ordered by what the writer reports, so
//! the test holds whatever the scheduler does.

use perfkit_engine::sampling::{CallGraph, Sampling, SamplingOptions, sampling_attrs};
use perfkit_engine::threads::{DrainLayout, ThreadSpec};
use perfkit_engine::{OpenOptions, Place, Recorder, open, parse};
use std::time::{Duration, Instant};

/// Fault in `pages` fresh anonymous pages (a private mapping of its own, so that no
/// touched memory hides a fault): exactly `pages` page faults of this thread.
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

/// Bytes of a sample record of `sample_type` (header included), where every field asked
/// for has a fixed size.
fn sample_size(sample_type: u64) -> usize {
    use perfkit::sys::*;
    let fixed = PERF_SAMPLE_IP
        | PERF_SAMPLE_TID
        | PERF_SAMPLE_TIME
        | PERF_SAMPLE_ADDR
        | PERF_SAMPLE_ID
        | PERF_SAMPLE_STREAM_ID
        | PERF_SAMPLE_CPU
        | PERF_SAMPLE_PERIOD
        | PERF_SAMPLE_IDENTIFIER;
    assert_eq!(
        sample_type & !fixed,
        0,
        "sample_type {sample_type:#x} has fields of varying size"
    );
    8 + 8 * (sample_type & fixed).count_ones() as usize
}

/// With a draining thread, and with one drainer that lends its records on the writing
/// thread (no thread of its own, as perf's single thread): a pass that was written gives
/// its space back before the next wakeup (or poll). One test for both: the counters count
/// the whole process, so two recordings must not run at once.
#[test]
fn a_written_pass_gives_its_ring_space_back_before_the_next_wakeup() {
    written_space_goes_back(Drain::Thread);
    written_space_goes_back(Drain::Inline);
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Drain {
    /// A draining thread of its own (`start_threads`).
    Thread,
    /// `start_draining` with one drainer: the rings are drained in `poll`.
    Inline,
}

fn written_space_goes_back(how: Drain) {
    // Everything on one CPU: its ring gets every sample of this thread.
    let cpu = perfkit::cpus::online().expect("online CPUs")[0];
    perfkit::cpus::pin_current_thread(&[cpu]).expect("pin this thread");
    let mut specs = parse(&["page-faults".to_string()]).expect("page-faults");
    sampling_attrs(
        &mut specs,
        &SamplingOptions {
            sampling: Sampling::Period(1),
            call_graph: CallGraph::None,
            // The side-band records go to another event (none here): the ring holds only
            // the samples.
            tracking_event: true,
            ..SamplingOptions::default()
        },
    );
    let size = sample_size(specs[0].attr.sample_type);
    let places = Place::of(
        &perfkit::Targets::this_process()
            .expect("this process")
            .on_cpus(&[cpu]),
    );
    let opts = OpenOptions {
        inherit: true,
        ..OpenOptions::default()
    };
    let opened = open(&specs, &places, &opts)
        .require_all()
        .expect("page-faults opens (a software event: every kernel has it)");
    let mut rec = Recorder::new(opened, 1).expect("a one-page ring");
    let ring = perfkit::page_size();
    let path = std::env::temp_dir().join(format!(
        "perfkit-recorder-frees-{}.data",
        std::process::id()
    ));
    let mut w = perfkit_data::PerfDataWriter::create(&path, rec.file_events(), Default::default())
        .expect("writer");
    let layout = DrainLayout::new(&ThreadSpec::Cpu, &[cpu], &[cpu]).expect("layout");
    match how {
        Drain::Thread => assert_eq!(rec.start_threads(&layout).expect("draining thread"), 1),
        Drain::Inline => assert_eq!(
            rec.start_draining(&layout).expect("draining"),
            0,
            "one drainer lending its records needs no thread"
        ),
    }
    rec.enable().expect("enable");

    // 1. Just over half the ring: the kernel wakes the drainer, which lends the samples to
    // the writer (this thread, in poll). Less than the ring, so nothing is lost.
    let first = ring / 2 / size + 1;
    touch_fresh_pages(first);
    let deadline = Instant::now() + Duration::from_secs(60);
    while rec.stats().samples < first as u64 {
        rec.poll(&mut w, Duration::from_millis(50)).expect("poll");
        assert!(
            Instant::now() < deadline,
            "the {first} samples of a woken ring were not written in 60 s: {:?}",
            rec.stats()
        );
    }
    // 2. The writer has written them: the whole ring is the kernel's again, although the
    // drainer sleeps until the ring is half full once more. Three quarters of the ring
    // fit; with the written half still lent they would not (and the ring, full before its
    // next wakeup, would wake no one).
    let second = ring * 3 / 4 / size;
    assert!(
        (first + second) * size > ring,
        "the test needs the two steps to overlap"
    );
    touch_fresh_pages(second);
    let stats = rec.finish(&mut w).expect("finish");
    w.finish(&[]).expect("file");
    let _ = std::fs::remove_file(&path);
    println!(
        "{how:?}: {size}-byte samples, {ring}-byte ring, {first} + {second} faults: {stats:?}"
    );
    assert_eq!(stats.lost, 0, "samples lost: {stats:?}");
    assert!(
        stats.samples >= (first + second) as u64,
        "{} samples for {first} + {second} faults",
        stats.samples
    );
}
