//! Writer throughput (MB/s of records) for what `perfkit record` hands it: ring records
//! (header, then a body that may be split where the ring wraps), mostly samples with a
//! callchain, one MMAP2 in a hundred (whose file name the writer keeps for BUILD_ID), a
//! FINISHED_ROUND every thousand. The file goes to a temporary directory.
//!
//! `perfkit-data`: `write_record` with a header built by hand (what the CLI did before
//! `write_raw`); `write_raw`: the ring's `RawRecord` as it is.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions};
use perfkit_records::{RawData, RawRecord};
use perfkit_sys as sys;
use std::hint::black_box;

const RECORDS: usize = 50_000;

fn event() -> FileEvent {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_type: sys::PERF_SAMPLE_IDENTIFIER
            | sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_PERIOD
            | sys::PERF_SAMPLE_CALLCHAIN,
        ..Default::default()
    };
    attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
    FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![7],
    }
}

fn ne64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}

/// (type, misc, body) of the records, as the ring hands them out.
fn records() -> Vec<(u32, u16, Vec<u8>)> {
    let mut out = Vec::with_capacity(RECORDS);
    for i in 0..RECORDS as u64 {
        let mut b = Vec::new();
        if i % 100 == 0 {
            // MMAP2: pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot,
            // flags, filename; then the sample_id trailer (tid, time, identifier).
            b.extend_from_slice(&42u32.to_ne_bytes());
            b.extend_from_slice(&42u32.to_ne_bytes());
            ne64(&mut b, 0x40_0000 + i * 0x1000);
            ne64(&mut b, 0x1000);
            ne64(&mut b, 0);
            b.extend_from_slice(&[0; 24]);
            b.extend_from_slice(&5u32.to_ne_bytes());
            b.extend_from_slice(&2u32.to_ne_bytes());
            let name = format!("/nonexistent/lib{}.so\0", i % 7);
            b.extend_from_slice(name.as_bytes());
            b.resize(b.len().next_multiple_of(8), 0);
            b.extend_from_slice(&42u32.to_ne_bytes());
            b.extend_from_slice(&42u32.to_ne_bytes());
            ne64(&mut b, i * 1000);
            ne64(&mut b, 7);
            out.push((sys::PERF_RECORD_MMAP2, sys::PERF_RECORD_MISC_USER, b));
        } else {
            ne64(&mut b, 7); // identifier
            ne64(&mut b, 0x40_1000 + i); // ip
            b.extend_from_slice(&42u32.to_ne_bytes());
            b.extend_from_slice(&42u32.to_ne_bytes());
            ne64(&mut b, i * 1000); // time
            ne64(&mut b, 250_000); // period
            ne64(&mut b, 12); // callchain
            for f in 0..12 {
                ne64(&mut b, 0x40_1000 + f * 64);
            }
            out.push((sys::PERF_RECORD_SAMPLE, sys::PERF_RECORD_MISC_USER, b));
        }
    }
    out
}

/// Write every record, through `write_raw` (`raw`) or `write_record` with a header built
/// by hand.
fn write_all(dir: &std::path::Path, recs: &[(u32, u16, Vec<u8>)], raw: bool) -> u64 {
    let path = dir.join("bench.data");
    let mut w = PerfDataWriter::create(&path, vec![event()], WriteOptions::default()).unwrap();
    for (i, (type_, misc, body)) in recs.iter().enumerate() {
        // A body split where the ring wraps, now and then.
        let (a, b) = body.split_at(if i % 64 == 0 {
            body.len() / 2
        } else {
            body.len()
        });
        if raw {
            let data = if b.is_empty() {
                RawData::Single(a)
            } else {
                RawData::Split(a, b)
            };
            w.write_raw(&RawRecord {
                type_: *type_,
                misc: *misc,
                data,
            })
            .unwrap();
        } else {
            let mut hdr = [0u8; 8];
            hdr[..4].copy_from_slice(&type_.to_ne_bytes());
            hdr[4..6].copy_from_slice(&misc.to_ne_bytes());
            hdr[6..].copy_from_slice(&((body.len() + 8) as u16).to_ne_bytes());
            w.write_record(&[&hdr, a, b]).unwrap();
        }
        if i % 1000 == 999 {
            w.finish_round().unwrap();
        }
    }
    let n = w.data_size();
    w.finish(&[]).unwrap();
    std::fs::remove_file(&path).unwrap();
    n
}

fn write(c: &mut Criterion) {
    let recs = records();
    let bytes: usize = recs.iter().map(|r| r.2.len() + 8).sum();
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("write_records");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(20);
    g.bench_function("perfkit-data", |b| {
        b.iter(|| black_box(write_all(dir.path(), &recs, false)))
    });
    g.bench_function("write_raw", |b| {
        b.iter(|| black_box(write_all(dir.path(), &recs, true)))
    });
    g.finish();
}

criterion_group!(benches, write);
criterion_main!(benches);
