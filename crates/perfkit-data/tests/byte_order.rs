//! Both byte orders, and perf's ordering rules, on files built byte by byte here (perf
//! only writes the machine's own order, so a big-endian file cannot be recorded on x86).

use perfkit_data::{Item, PerfData};
use perfkit_records::Record;
use perfkit_sys as sys;

struct W {
    big: bool,
    b: Vec<u8>,
}

impl W {
    fn u16(&mut self, v: u16) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
    fn u32(&mut self, v: u32) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
    fn u64(&mut self, v: u64) {
        let x = if self.big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        };
        self.b.extend_from_slice(&x);
    }
    fn header(&mut self, type_: u32, misc: u16, size: u16) {
        self.u32(type_);
        self.u16(misc);
        self.u16(size);
    }
}

const SAMPLE_TYPE: u64 =
    sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_PERIOD;
// disabled (bit 0), exclude_kernel (bit 5), sample_id_all (bit 18)
const FLAGS: u64 = 1 | 1 << 5 | 1 << 18;

/// A file: one attr, two rounds of samples out of order, a COMM with time 0 in the middle
/// of the first round, a HOSTNAME section.
fn build(big: bool) -> Vec<u8> {
    let mut w = W { big, b: Vec::new() };
    w.b.extend_from_slice(if big { b"2ELIFREP" } else { b"PERFILE2" });
    let attr_size = 128u64;
    let attrs_off = 104u64;
    let ids_off = attrs_off + attr_size + 16;
    let data_off = ids_off + 8;
    // Data: samples (time) 30, 10, COMM(time 0), 20, ROUND, 25, 40, ROUND.
    let mut d = W { big, b: Vec::new() };
    let sample = |d: &mut W, t: u64| {
        d.header(sys::PERF_RECORD_SAMPLE, sys::PERF_RECORD_MISC_USER, 8 + 32);
        d.u64(0x400000 + t); // ip
        d.u32(7); // pid
        d.u32(8); // tid
        d.u64(t);
        d.u64(1000); // period
    };
    let round = |d: &mut W| d.header(sys::PERF_RECORD_FINISHED_ROUND, 0, 8);
    sample(&mut d, 30);
    sample(&mut d, 10);
    d.header(sys::PERF_RECORD_COMM, 0, 8 + 8 + 8 + 16);
    d.u32(7);
    d.u32(8);
    d.b.extend_from_slice(b"work\0\0\0\0");
    d.u32(7); // trailer: pid, tid, time
    d.u32(8);
    d.u64(0);
    sample(&mut d, 20);
    round(&mut d);
    sample(&mut d, 25);
    sample(&mut d, 40);
    round(&mut d);
    let data_len = d.b.len() as u64;
    w.u64(104);
    w.u64(attr_size + 16);
    w.u64(attrs_off);
    w.u64(attr_size + 16);
    w.u64(data_off);
    w.u64(data_len);
    w.u64(0);
    w.u64(0);
    // Feature bitmap: HOSTNAME (bit 3). The bitmap is an array of unsigned longs.
    w.u64(1 << perfkit_data::feature::HOSTNAME);
    w.u64(0);
    w.u64(0);
    w.u64(0);
    // attr
    w.u32(sys::PERF_TYPE_SOFTWARE);
    w.u32(attr_size as u32);
    w.u64(sys::PERF_COUNT_SW_TASK_CLOCK);
    w.u64(100_000);
    w.u64(SAMPLE_TYPE);
    w.u64(0);
    // C bit-fields start at the most significant end on big-endian machines.
    w.u64(if big { FLAGS.reverse_bits() } else { FLAGS });
    w.b.resize(104 + attr_size as usize, 0);
    w.u64(ids_off);
    w.u64(8);
    w.u64(42); // the id
    assert_eq!(w.b.len() as u64, data_off);
    w.b.extend_from_slice(&d.b);
    let sec_off = data_off + data_len + 16;
    w.u64(sec_off);
    w.u64(4 + 64);
    w.u32(64);
    let mut name = b"bigbox".to_vec();
    name.resize(64, 0);
    w.b.extend_from_slice(&name);
    w.b
}

fn read(bytes: Vec<u8>) -> (PerfData, Vec<(&'static str, u64)>) {
    let d = PerfData::from_bytes(bytes).unwrap();
    let mut seen = Vec::new();
    d.for_each(
        |i| match i {
            Item::Event { record, .. } => match record.record {
                Record::Sample(s) => {
                    assert_eq!((s.pid, s.tid, s.period), (Some(7), Some(8), Some(1000)));
                    assert_eq!(s.ip, s.time.map(|t| 0x400000 + t));
                    seen.push(("sample", s.time.unwrap()));
                }
                Record::Comm(c) => {
                    assert_eq!(c.comm, b"work");
                    seen.push(("comm", 0));
                }
                r => panic!("unexpected {r:?}"),
            },
            Item::User { type_, .. } => {
                assert_eq!(type_, sys::PERF_RECORD_FINISHED_ROUND);
                seen.push(("round", 0));
            }
            other => panic!("unexpected {other:?}"),
        },
        |_| {},
    )
    .unwrap();
    (d, seen)
}

#[test]
fn both_byte_orders_read_the_same_in_perfs_order() {
    for big in [false, true] {
        let (d, seen) = read(build(big));
        assert_eq!(d.endian == perfkit_records::Endian::Big, big);
        let a = &d.attrs[0];
        assert_eq!(a.attr.type_, sys::PERF_TYPE_SOFTWARE);
        assert_eq!(a.attr.config, sys::PERF_COUNT_SW_TASK_CLOCK);
        assert_eq!(a.attr.sample_type, SAMPLE_TYPE);
        assert_eq!(a.attr.flags, FLAGS, "big endian: {big}");
        assert_eq!(a.ids, [42]);
        assert_eq!(a.name, "task-clock");
        assert_eq!(d.features.hostname.as_deref(), Some("bigbox"));
        // perf's ordered_events: the first round flushes nothing (its limit is the time
        // reached before it, 0), the second flushes up to 30 (the first round's newest),
        // the end flushes the rest. Time-0 records go out at once.
        assert_eq!(
            seen,
            [
                ("comm", 0),
                ("round", 0),
                ("sample", 10),
                ("sample", 20),
                ("sample", 25),
                ("sample", 30),
                ("round", 0),
                ("sample", 40),
            ],
            "big endian: {big}"
        );
    }
}

#[test]
fn unfinished_file_without_data_size_is_read_to_its_end() {
    let mut b = build(false);
    let data_off = u64::from_le_bytes(b[40..48].try_into().unwrap()) as usize;
    let data_len = u64::from_le_bytes(b[48..56].try_into().unwrap()) as usize;
    b.truncate(data_off + data_len);
    // As a writer killed before its first header update leaves it: no data size, no
    // features.
    b[48..56].fill(0);
    b[72..104].fill(0);
    let (d, seen) = read(b);
    assert!(
        d.warnings.iter().any(|w| w.contains("properly terminated")),
        "{:?}",
        d.warnings
    );
    assert_eq!(seen.iter().filter(|s| s.0 == "sample").count(), 5);
}
