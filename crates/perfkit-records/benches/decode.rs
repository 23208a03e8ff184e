//! Records decoded per second, perfkit-records against linux-perf-event-reader, on the
//! same bytes: a realistic synthetic stream of 20,000 records (90% samples with
//! IDENTIFIER|IP|TID|TIME|ID|CPU|PERIOD|CALLCHAIN and 3..48-deep callchains, 5% MMAP2 with
//! library paths, 5% COMM), `sample_id_all` on, little-endian.
//!
//! Both decoders do the same consumer work per record: take the timestamp, and for samples
//! ip/pid/tid/cpu and every callchain entry, for MMAP2 the address and path, for COMM the
//! name. Run with `cargo bench -p perfkit-records`; the ratio is printed at the end.

#[path = "../tests/common/mod.rs"]
mod common;

use common::*;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use perfkit_records::{Endian, Record, RecordParser, Records};
use perfkit_sys::*;
use std::hint::black_box;

fn cfg() -> Cfg {
    Cfg {
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_ID
            | PERF_SAMPLE_CPU
            | PERF_SAMPLE_PERIOD
            | PERF_SAMPLE_CALLCHAIN,
        read_format: 0,
        branch_sample_type: 0,
        regs_user: 0,
        regs_intr: 0,
        sample_id_all: true,
    }
}

/// The stream and its record count.
pub fn stream() -> (Vec<u8>, usize) {
    let cfg = cfg();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut out = Vec::new();
    let n = 20_000;
    let mut time = 1_000_000u64;
    for i in 0..n {
        time += next() % 1000;
        let sid = MSampleId {
            pid_tid: Some((1234, 1234 + (i % 4) as i32)),
            time: Some(time),
            id: Some(77),
            stream_id: None,
            cpu: Some((i % 2) as u32),
            identifier: Some(77),
        };
        let (misc, body, sid) = match next() % 20 {
            0 => (
                PERF_RECORD_MISC_USER,
                MBody::Mmap2 {
                    pid: 1234,
                    tid: 1234,
                    addr: 0x7f00_0000_0000 + (next() % 0x1000_0000) * 4096,
                    len: 0x2_1000,
                    pgoff: 0,
                    file: MFile::Inode(8, 1, next() % 100_000, 0),
                    prot: 5,
                    flags: 2,
                    filename: format!(
                        "/usr/lib/x86_64-linux-gnu/libexample-{}.so.1.2.3",
                        next() % 1000
                    )
                    .into_bytes(),
                    data: false,
                },
                sid,
            ),
            1 => (
                PERF_RECORD_MISC_COMM_EXEC,
                MBody::Comm {
                    pid: 1234,
                    tid: 1235,
                    comm: b"worker-thread".to_vec(),
                    exec: true,
                },
                sid,
            ),
            _ => {
                let depth = 3 + (next() % 46) as usize;
                let mut chain = vec![PERF_CONTEXT_USER];
                chain.extend((1..depth).map(|_| 0x5555_0000_0000 + next() % 0x100_0000));
                (
                    PERF_RECORD_MISC_USER,
                    MBody::Sample(MSample {
                        identifier: Some(77),
                        ip: Some(chain[1]),
                        pid_tid: sid.pid_tid,
                        time: Some(time),
                        id: Some(77),
                        cpu_res: Some(((i % 2) as u32, 0)),
                        period: Some(250_000),
                        callchain: Some(chain),
                        ..MSample::default()
                    }),
                    MSampleId::default(),
                )
            }
        };
        out.extend(encode(Endian::Little, &cfg, &MRecord { misc, body, sid }));
    }
    (out, n)
}

fn decode_perfkit(parser: &RecordParser, bytes: &[u8]) -> u64 {
    let mut acc = 0u64;
    let mut scratch = Vec::new();
    for rec in Records::new(bytes, Endian::Little) {
        let Ok((_, raw)) = rec else { break };
        let Ok(p) = parser.parse_raw(&raw, &mut scratch) else {
            continue;
        };
        acc = acc.wrapping_add(p.sample_id.time.unwrap_or(0));
        match p.record {
            Record::Sample(s) => {
                acc = acc
                    .wrapping_add(s.ip.unwrap_or(0))
                    .wrapping_add(s.pid.unwrap_or(0) as u64)
                    .wrapping_add(s.tid.unwrap_or(0) as u64)
                    .wrapping_add(u64::from(s.cpu.unwrap_or(0)));
                if let Some(c) = s.callchain {
                    for ip in c.iter() {
                        acc = acc.wrapping_add(ip);
                    }
                }
            }
            Record::Mmap2(m) => {
                acc = acc
                    .wrapping_add(m.addr)
                    .wrapping_add(m.filename.len() as u64)
            }
            Record::Comm(c) => acc = acc.wrapping_add(c.comm.len() as u64),
            _ => {}
        }
    }
    acc
}

fn lper_info(attr: &perf_event_attr) -> linux_perf_event_reader::RecordParseInfo {
    let bytes = attr.as_bytes();
    let (a, _) =
        linux_perf_event_reader::PerfEventAttr::parse::<_, byteorder::LittleEndian>(&bytes[..])
            .expect("attr");
    linux_perf_event_reader::RecordParseInfo::new(
        &a,
        linux_perf_event_reader::Endianness::LittleEndian,
    )
}

fn decode_lper(info: &linux_perf_event_reader::RecordParseInfo, bytes: &[u8]) -> u64 {
    use linux_perf_event_reader::{EventRecord, RawData, RawEventRecord, RecordType};
    let mut acc = 0u64;
    let mut pos = 0;
    while pos + 8 <= bytes.len() {
        let type_ = u32::from_le_bytes(bytes[pos..pos + 4].try_into().unwrap());
        let misc = u16::from_le_bytes(bytes[pos + 4..pos + 6].try_into().unwrap());
        let size = u16::from_le_bytes(bytes[pos + 6..pos + 8].try_into().unwrap()) as usize;
        if size < 8 || pos + size > bytes.len() {
            break;
        }
        let raw = RawEventRecord::new(
            RecordType(type_),
            misc,
            RawData::Single(&bytes[pos + 8..pos + size]),
            *info,
        );
        pos += size;
        acc = acc.wrapping_add(raw.timestamp().unwrap_or(0));
        let Ok(rec) = raw.parse() else { continue };
        match rec {
            EventRecord::Sample(s) => {
                acc = acc
                    .wrapping_add(s.ip.unwrap_or(0))
                    .wrapping_add(s.pid.unwrap_or(0) as u64)
                    .wrapping_add(s.tid.unwrap_or(0) as u64)
                    .wrapping_add(u64::from(s.cpu.unwrap_or(0)));
                if let Some(c) = s.callchain {
                    for i in 0..c.len() {
                        acc = acc.wrapping_add(c.get(i).unwrap_or(0));
                    }
                }
            }
            EventRecord::Mmap2(m) => {
                acc = acc
                    .wrapping_add(m.address)
                    .wrapping_add(m.path.len() as u64)
            }
            EventRecord::Comm(c) => acc = acc.wrapping_add(c.name.len() as u64),
            _ => {}
        }
    }
    acc
}

fn bench(c: &mut Criterion) {
    let (bytes, n) = stream();
    let attr = cfg().attr();
    let parser = RecordParser::new(&attr, Endian::Little);
    let info = lper_info(&attr);
    // Both decoders must see the same data.
    assert_eq!(decode_perfkit(&parser, &bytes), decode_lper(&info, &bytes));

    let mut g = c.benchmark_group("decode");
    g.throughput(Throughput::Elements(n as u64));
    g.bench_function("perfkit-records", |b| {
        b.iter(|| decode_perfkit(&parser, black_box(&bytes)))
    });
    g.bench_function("linux-perf-event-reader", |b| {
        b.iter(|| decode_lper(&info, black_box(&bytes)))
    });
    g.finish();

    // A direct ratio, measured here side by side (criterion's own figures above).
    let time = |f: &dyn Fn() -> u64| {
        let mut best = f64::MAX;
        for _ in 0..30 {
            let t = std::time::Instant::now();
            black_box(f());
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    };
    let ours = time(&|| decode_perfkit(&parser, black_box(&bytes)));
    let theirs = time(&|| decode_lper(&info, black_box(&bytes)));
    println!(
        "records/s: perfkit-records {:.1} M, linux-perf-event-reader {:.1} M, ratio {:.2}x ({} records, {} bytes)",
        n as f64 / ours / 1e6,
        n as f64 / theirs / 1e6,
        theirs / ours,
        n,
        bytes.len()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
