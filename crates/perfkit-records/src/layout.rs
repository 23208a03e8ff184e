//! Per-attr layout, computed once: where each fixed field sits, how big the fixed parts
//! are, how the `sample_id` trailer looks.

use crate::Endian;
use perfkit_sys::*;

/// "Not present" in the `u16` offset tables below.
pub(crate) const ABSENT: u16 = u16::MAX;

/// Offsets of the fixed-size fields that start every `PERF_RECORD_SAMPLE` body
/// (IDENTIFIER .. PERIOD), relative to the body start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SamplePrefix {
    pub identifier: u16,
    pub ip: u16,
    pub tid: u16,
    pub time: u16,
    pub addr: u16,
    pub id: u16,
    pub stream_id: u16,
    pub cpu: u16,
    pub period: u16,
    /// Total bytes of the prefix.
    pub len: u16,
}

/// Offsets within the `sample_id` trailer of non-sample records (`sample_id_all`), in
/// the kernel's order TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Trailer {
    pub tid: u16,
    pub time: u16,
    pub id: u16,
    pub stream_id: u16,
    pub cpu: u16,
    pub identifier: u16,
    /// Total bytes of the trailer (0 without `sample_id_all`).
    pub len: u16,
}

/// Everything a parser needs from a `perf_event_attr`, worked out once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    pub endian: Endian,
    pub sample_type: u64,
    pub read_format: u64,
    pub branch_sample_type: u64,
    pub regs_user_mask: u64,
    pub regs_user_count: u64,
    pub regs_intr_mask: u64,
    pub regs_intr_count: u64,
    pub sample_id_all: bool,
    pub prefix: SamplePrefix,
    pub trailer: Trailer,
    /// Whether anything follows the fixed prefix in a sample.
    pub has_variable: bool,
    /// Bytes of one `read_format` entry in a group (value + id? + lost?).
    pub read_entry: u64,
}

fn place(flags: u64, bit: u64, size: u16, at: &mut u16) -> u16 {
    if flags & bit != 0 {
        let here = *at;
        *at += size;
        here
    } else {
        ABSENT
    }
}

impl Layout {
    pub fn new(attr: &perf_event_attr, endian: Endian) -> Layout {
        let st = attr.sample_type;
        let mut at = 0u16;
        let prefix = SamplePrefix {
            identifier: place(st, PERF_SAMPLE_IDENTIFIER, 8, &mut at),
            ip: place(st, PERF_SAMPLE_IP, 8, &mut at),
            tid: place(st, PERF_SAMPLE_TID, 8, &mut at),
            time: place(st, PERF_SAMPLE_TIME, 8, &mut at),
            addr: place(st, PERF_SAMPLE_ADDR, 8, &mut at),
            id: place(st, PERF_SAMPLE_ID, 8, &mut at),
            stream_id: place(st, PERF_SAMPLE_STREAM_ID, 8, &mut at),
            cpu: place(st, PERF_SAMPLE_CPU, 8, &mut at),
            period: place(st, PERF_SAMPLE_PERIOD, 8, &mut at),
            len: 0,
        };
        let prefix = SamplePrefix { len: at, ..prefix };

        let sample_id_all = attr.has(attr_flags::SAMPLE_ID_ALL);
        let mut at = 0u16;
        let trailer = if sample_id_all {
            let t = Trailer {
                tid: place(st, PERF_SAMPLE_TID, 8, &mut at),
                time: place(st, PERF_SAMPLE_TIME, 8, &mut at),
                id: place(st, PERF_SAMPLE_ID, 8, &mut at),
                stream_id: place(st, PERF_SAMPLE_STREAM_ID, 8, &mut at),
                cpu: place(st, PERF_SAMPLE_CPU, 8, &mut at),
                identifier: place(st, PERF_SAMPLE_IDENTIFIER, 8, &mut at),
                len: 0,
            };
            Trailer { len: at, ..t }
        } else {
            Trailer {
                tid: ABSENT,
                time: ABSENT,
                id: ABSENT,
                stream_id: ABSENT,
                cpu: ABSENT,
                identifier: ABSENT,
                len: 0,
            }
        };

        let fixed = PERF_SAMPLE_IDENTIFIER
            | PERF_SAMPLE_IP
            | PERF_SAMPLE_TID
            | PERF_SAMPLE_TIME
            | PERF_SAMPLE_ADDR
            | PERF_SAMPLE_ID
            | PERF_SAMPLE_STREAM_ID
            | PERF_SAMPLE_CPU
            | PERF_SAMPLE_PERIOD;
        let rf = attr.read_format;
        let read_entry = 8
            + if rf & PERF_FORMAT_ID != 0 { 8 } else { 0 }
            + if rf & PERF_FORMAT_LOST != 0 { 8 } else { 0 };
        Layout {
            endian,
            sample_type: st,
            read_format: rf,
            branch_sample_type: attr.branch_sample_type,
            regs_user_mask: attr.sample_regs_user,
            regs_user_count: u64::from(attr.sample_regs_user.count_ones()),
            regs_intr_mask: attr.sample_regs_intr,
            regs_intr_count: u64::from(attr.sample_regs_intr.count_ones()),
            sample_id_all,
            prefix,
            trailer,
            has_variable: st & !fixed != 0,
            read_entry,
        }
    }

    /// Offset of the event id in a sample body: IDENTIFIER, else ID.
    pub fn sample_id_offset(&self) -> Option<usize> {
        if self.prefix.identifier != ABSENT {
            Some(usize::from(self.prefix.identifier))
        } else if self.prefix.id != ABSENT {
            Some(usize::from(self.prefix.id))
        } else {
            None
        }
    }

    /// Distance of the event id from the end of a non-sample body: IDENTIFIER, else ID
    /// in the trailer. `None` without `sample_id_all`.
    pub fn nonsample_id_from_end(&self) -> Option<usize> {
        let t = &self.trailer;
        let at = if t.identifier != ABSENT {
            t.identifier
        } else if t.id != ABSENT {
            t.id
        } else {
            return None;
        };
        Some(usize::from(t.len - at))
    }
}
