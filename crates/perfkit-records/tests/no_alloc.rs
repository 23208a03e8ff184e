//! Parsing allocates nothing per record: a counting global allocator sees zero
//! allocations while a stream of samples (with callchains), MMAP2 and COMM records is
//! parsed and consumed, and while split records are parsed through a scratch buffer that
//! has already grown.

mod common;

use common::*;
use perfkit_records::*;
use perfkit_sys::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged, only counting calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn parsing_does_not_allocate() {
    let cfg = Cfg {
        sample_type: PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_CPU
            | PERF_SAMPLE_CALLCHAIN
            | PERF_SAMPLE_READ
            | PERF_SAMPLE_REGS_USER,
        read_format: PERF_FORMAT_GROUP | PERF_FORMAT_ID,
        branch_sample_type: 0,
        regs_user: 0xff,
        regs_intr: 0,
        sample_id_all: true,
    };
    let e = Endian::NATIVE;
    let sid = MSampleId {
        pid_tid: Some((1, 2)),
        time: Some(3),
        cpu: Some(0),
        identifier: Some(9),
        ..MSampleId::default()
    };
    let mut stream = Vec::new();
    for i in 0..300u64 {
        let m = match i % 3 {
            0 => MRecord {
                misc: 0,
                body: MBody::Sample(MSample {
                    identifier: Some(9),
                    ip: Some(i),
                    pid_tid: Some((1, 2)),
                    time: Some(i),
                    cpu_res: Some((0, 0)),
                    read: Some(MRead {
                        time_enabled: None,
                        time_running: None,
                        values: vec![(i, Some(9), None); 3],
                    }),
                    callchain: Some(vec![PERF_CONTEXT_USER, 1, 2, 3, i]),
                    regs_user: Some((2, vec![i; 8])),
                    ..MSample::default()
                }),
                sid: MSampleId::default(),
            },
            1 => MRecord {
                misc: 0,
                body: MBody::Mmap2 {
                    pid: 1,
                    tid: 2,
                    addr: i,
                    len: 4096,
                    pgoff: 0,
                    file: MFile::Inode(1, 2, 3, 4),
                    prot: 5,
                    flags: 2,
                    filename: b"/usr/lib/libfoo.so".to_vec(),
                    data: false,
                },
                sid: sid.clone(),
            },
            _ => MRecord {
                misc: 0,
                body: MBody::Comm {
                    pid: 1,
                    tid: 2,
                    comm: b"name".to_vec(),
                    exec: false,
                },
                sid: sid.clone(),
            },
        };
        stream.extend(encode(e, &cfg, &m));
    }
    let parser = RecordParser::new(&cfg.attr(), e);
    let mut scratch = Vec::with_capacity(1 << 16);

    let before = ALLOCS.load(Ordering::Relaxed);
    let mut acc = 0u64;
    let mut n = 0;
    for rec in Records::new(&stream, e) {
        let (_, raw) = rec.unwrap();
        // Also parse the record split in the middle, through the scratch buffer.
        let RawData::Single(body) = raw.data else {
            unreachable!()
        };
        let (a, b) = body.split_at(body.len() / 2);
        let split = RawRecord {
            data: RawData::Split(a, b),
            ..raw
        };
        for r in [raw, split] {
            let p = parser.parse_raw(&r, &mut scratch).unwrap();
            acc = acc.wrapping_add(p.sample_id.time.unwrap_or(0));
            match p.record {
                Record::Sample(s) => {
                    acc =
                        acc.wrapping_add(s.callchain.unwrap().frames().map(|f| f.ip).sum::<u64>());
                    acc = acc.wrapping_add(s.read.unwrap().iter().map(|v| v.value).sum::<u64>());
                    acc = acc.wrapping_add(s.regs_user.unwrap().get(7).unwrap());
                }
                Record::Mmap2(m) => acc = acc.wrapping_add(m.filename.len() as u64),
                Record::Comm(c) => acc = acc.wrapping_add(c.comm.len() as u64),
                _ => panic!("unexpected record"),
            }
        }
        n += 1;
    }
    let after = ALLOCS.load(Ordering::Relaxed);
    assert_eq!(n, 300);
    assert!(acc > 0);
    assert_eq!(
        after - before,
        0,
        "parsing {n} records (twice) allocated {} times",
        after - before
    );
}
