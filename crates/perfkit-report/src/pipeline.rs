//! Loading a file on two cores: one thread reads (decompression, perf's time ordering of
//! each round, record decoding into the builder's [`Input`](crate::build::Input)s, and
//! the merging of like samples when the builder folds them, [`crate::batch`]), another
//! builds the profile (side-band, symbolization, interning of frames and stacks, folding).
//!
//! The builder ends with the profile the single-threaded path builds, byte for byte
//! ([`Batch::replay`]): every report, script and export made from it is the
//! single-threaded one. Inputs travel in batches (flat buffers, reused), a few batches in
//! flight at most: the memory between the threads is a few MiB whatever the file's size.
//!
//! `PERFKIT_REPORT_THREADS=1` (or a machine with one CPU) keeps the single-threaded path;
//! 3 or more add decoding threads ([`crate::fan_out`]).

use crate::batch::Batch;
use crate::build::{Builder, SampleSink};
use crate::load::Decoder;
use perfkit_data::{Item, PerfData, ReadError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// Inputs per batch ([`crate::batch::MERGED_BATCH`] when the reader merges samples):
/// large enough that the channel costs nothing per record, small enough
/// that both threads start at once.
const BATCH: usize = 4096;
/// Batches in flight between the threads.
const IN_FLIGHT: usize = 4;

/// How many threads a load may use: `PERFKIT_REPORT_THREADS` when set to a number above
/// 0, else the CPUs this process may run on. 1 is the single-threaded path, 2 this
/// module's reader and builder, more adds decoding threads ([`crate::fan_out`]).
pub fn threads() -> usize {
    match std::env::var("PERFKIT_REPORT_THREADS") {
        Ok(v) if v.trim().parse::<usize>().is_ok_and(|n| n > 0) => v.trim().parse().unwrap_or(1),
        _ => std::thread::available_parallelism().map_or(1, |n| n.get()),
    }
}

/// Whether to load with a reading thread beside the building one (more than one
/// [`threads`]).
pub fn enabled() -> bool {
    threads() > 1
}

/// Read `file`'s records on a second thread, decoding them with `dec`, and feed them to
/// `b` on this one; `progress(done)` with the bytes of the data section read so far.
/// Returns the reader's result (as [`PerfData::for_each`]'s).
pub(crate) fn feed(
    file: &PerfData,
    dec: &mut Decoder,
    b: &mut Builder,
    sink: &mut SampleSink<'_>,
    mut progress: impl FnMut(usize),
) -> Result<(), ReadError> {
    let (full_tx, full_rx) = mpsc::sync_channel::<Batch>(IN_FLIGHT);
    let (empty_tx, empty_rx) = mpsc::channel::<Batch>();
    let fold = b.merging();
    let batch_len = if fold.is_some() {
        crate::batch::MERGED_BATCH
    } else {
        BATCH
    };
    for _ in 0..IN_FLIGHT + 1 {
        let _ = empty_tx.send(Batch::new(fold.clone()));
    }
    // Batches sent and not built yet: the builder is behind while several are.
    let behind = AtomicUsize::new(0);
    let behind = &behind;
    std::thread::scope(|s| {
        let reader = s.spawn(move || {
            let mut batch = empty_rx.recv().unwrap_or_else(|_| Batch::new(fold.clone()));
            let done = std::cell::Cell::new(0);
            let result = file.for_each(
                |item| {
                    match item {
                        Item::Event { attr, record } => {
                            dec.decode(attr, &record, &mut |fed| batch.push(fed))
                        }
                        Item::User { type_, .. } => dec.user_record(type_),
                        _ => {}
                    }
                    if batch.len() >= batch_len {
                        batch.done = done.get();
                        let mut next = empty_rx.recv().unwrap_or_else(|_| Batch::new(fold.clone()));
                        // The sample classes move work from the builder to this thread:
                        // worth it while the builder is the slower one.
                        next.give_classes(behind.fetch_add(1, Ordering::Relaxed) >= IN_FLIGHT / 2);
                        // The builder hung up: it is gone, nothing more to do.
                        let _ = full_tx.send(std::mem::replace(&mut batch, next));
                    }
                },
                |d| done.set(d),
            );
            batch.done = done.get();
            behind.fetch_add(1, Ordering::Relaxed);
            let _ = full_tx.send(batch);
            result
        });
        let mut last = 0;
        for mut batch in full_rx {
            behind.fetch_sub(1, Ordering::Relaxed);
            batch.replay(b, sink);
            if batch.done != last {
                last = batch.done;
                progress(last);
            }
            batch.clear();
            let _ = empty_tx.send(batch);
        }
        reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
