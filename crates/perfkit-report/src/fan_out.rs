//! Loading a file on more than two cores: one thread reads (the data section, zstd, perf's
//! time ordering of each round) and hands out the records, still undecoded, in batches;
//! several threads decode batches into the builder's inputs (merging like samples when
//! the builder folds them, [`crate::batch`]); this thread builds the profile from the
//! decoded batches taken back in the reader's order.
//!
//! The builder ends with the profile the single-threaded path builds ([`Batch::replay`]),
//! so every report, script and export is byte for byte the single-threaded one.
//! Decoding is stateless per record except for `PERF_SAMPLE_READ` (each counter's last
//! value), so files with it, and streams (read once), take the two-thread path
//! ([`crate::pipeline`]). A record that fails to decode makes [`fan_out`] give up (the
//! single-threaded path stops at it in a way that depends on the round it is in); the
//! caller then loads the file again on the two-thread path.
//!
//! Memory between the threads is bounded: the reader hands out a batch only while fewer
//! than one per decoding thread (+2) are on their way to the builder (the decoders are
//! far from the bottleneck, so one batch ahead each keeps the builder fed; two each cost
//! 40 MB on 16 cores and no time); buffers are reused.

use crate::batch::Batch;
use crate::build::{Builder, SampleSink};
use crate::load::Decoder;
use perfkit_data::{Item, PerfData, ReadError};
use perfkit_sys as sys;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};

/// Records per batch: small enough that the batches on their way (one per decoding
/// thread, raw or decoded) stay a few MiB, large enough that handing them over costs
/// nothing next to decoding them ([`crate::batch::MERGED_BATCH`] when the decoders merge
/// samples).
const BATCH: usize = 1024;
/// Batches a decoding thread's queue can hold (the slots above bound them all).
const QUEUE: usize = 2;
/// Decoding threads at most (beyond, the reader or the builder is the bottleneck).
pub const MAX_DECODERS: usize = 8;

/// Undecoded records (their bytes one after another) and how far into the data section
/// the reader was after them.
#[derive(Default)]
struct Raw {
    seq: u64,
    bytes: Vec<u8>,
    recs: Vec<(u32, u16, u32, u32)>,
    done: usize,
}

/// A spare buffer, if one was given back.
fn take<T>(spare: &Mutex<Vec<T>>) -> Option<T> {
    spare.lock().ok().and_then(|mut v| v.pop())
}

/// Whether `file` can be loaded by [`fan_out`]: a seekable file (it may have to be read
/// again) without `PERF_SAMPLE_READ` events.
pub(crate) fn possible(file: &PerfData) -> bool {
    file.data_len() > 0
        && file
            .attrs
            .iter()
            .all(|a| a.attr.sample_type & sys::PERF_SAMPLE_READ == 0)
}

/// Read `file` as the module docs say with `decoders` decoding threads, feeding `b`;
/// `progress(done)` with the bytes of the data section read. None: a record did not
/// decode, `b` holds part of the file and the caller must start again another way.
pub(crate) fn fan_out(
    file: &PerfData,
    dec: &mut Decoder,
    b: &mut Builder,
    sink: &mut SampleSink<'_>,
    decoders: usize,
    mut progress: impl FnMut(usize),
) -> Option<Result<(), ReadError>> {
    let Ok(parser) = file.parser() else {
        return None;
    };
    let decoders = decoders.clamp(1, MAX_DECODERS);
    let fold = b.merging();
    let batch_len = match fold {
        // Half-size batches from 4 decoders up: the batches in flight grow with the
        // decoders, and there the builder gains less from merging than the memory costs.
        Some(_) if decoders >= 4 => crate::batch::MERGED_BATCH / 2,
        Some(_) => crate::batch::MERGED_BATCH,
        None => BATCH,
    };
    let failed = AtomicBool::new(false);
    let spare_raw: Mutex<Vec<Raw>> = Mutex::new(Vec::new());
    let spare_out: Mutex<Vec<Batch>> = Mutex::new(Vec::new());
    let (failed, spare_raw, spare_out, parser) = (&failed, &spare_raw, &spare_out, &parser);
    let (out_tx, out_rx) = mpsc::channel::<(u64, Option<Batch>)>();
    // Batches handed out and not yet built: the reader waits for a slot.
    let (slot_tx, slot_rx) = mpsc::sync_channel::<()>(decoders + 2);
    std::thread::scope(|s| {
        let mut queues = Vec::with_capacity(decoders);
        for _ in 0..decoders {
            let (tx, rx) = mpsc::sync_channel::<Raw>(QUEUE);
            queues.push(tx);
            let out_tx = out_tx.clone();
            let mut dec = dec.clone();
            let fold = fold.clone();
            s.spawn(move || {
                for mut raw in rx {
                    let mut batch = take(spare_out).unwrap_or_else(|| Batch::new(fold.clone()));
                    batch.done = raw.done;
                    let mut ok = true;
                    for &(type_, misc, start, end) in &raw.recs {
                        let body = &raw.bytes[start as usize..end as usize];
                        match perfkit_data::parse_any(parser, type_, misc, body) {
                            Ok((attr, rec)) => dec.decode(attr, &rec, &mut |fed| batch.push(fed)),
                            Err(_) => {
                                ok = false;
                                break;
                            }
                        }
                    }
                    if !ok {
                        failed.store(true, Ordering::Relaxed);
                    }
                    let seq = raw.seq;
                    raw.bytes.clear();
                    raw.recs.clear();
                    if let Ok(mut v) = spare_raw.lock() {
                        v.push(raw);
                    }
                    if out_tx.send((seq, ok.then_some(batch))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(out_tx);
        let reader = s.spawn(move || {
            let mut raw = Raw::default();
            let mut seq = 0u64;
            let done = std::cell::Cell::new(0);
            let send = |raw: &mut Raw, seq: &mut u64| {
                // The builder is gone only when it has given up.
                let _ = slot_tx.send(());
                raw.seq = *seq;
                raw.done = done.get();
                let next = take(spare_raw).unwrap_or_default();
                let full = std::mem::replace(raw, next);
                // A decoding thread that is gone failed: the builder gives up anyway.
                let _ = queues[*seq as usize % queues.len()].send(full);
                *seq += 1;
            };
            let result = file.for_each_unparsed(
                |item| {
                    if failed.load(Ordering::Relaxed) {
                        return;
                    }
                    match item {
                        Item::Unparsed {
                            type_, misc, body, ..
                        } => {
                            let start = raw.bytes.len() as u32;
                            raw.bytes.extend_from_slice(body);
                            raw.recs.push((type_, misc, start, raw.bytes.len() as u32));
                        }
                        Item::User { type_, .. } => dec.user_record(type_),
                        _ => {}
                    }
                    if raw.recs.len() >= batch_len {
                        send(&mut raw, &mut seq);
                    }
                },
                |d| done.set(d),
            );
            send(&mut raw, &mut seq);
            result
        });
        // Build from the batches in the reader's order.
        let mut waiting: BTreeMap<u64, Batch> = BTreeMap::new();
        let (mut next, mut last, mut gave_up) = (0u64, 0, false);
        let mut slots = Some(slot_rx);
        for (seq, batch) in out_rx {
            let Some(batch) = batch else {
                gave_up = true;
                // The reader must never wait for a slot again.
                slots = None;
                continue;
            };
            if gave_up {
                continue;
            }
            waiting.insert(seq, batch);
            while let Some(mut batch) = waiting.remove(&next) {
                batch.replay(b, sink);
                if batch.done != last {
                    last = batch.done;
                    progress(last);
                }
                batch.clear();
                if let Ok(mut v) = spare_out.lock() {
                    v.push(batch);
                }
                next += 1;
                if let Some(slots) = &slots {
                    let _ = slots.try_recv();
                }
            }
        }
        let result = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (!gave_up).then_some(result)
    })
}
