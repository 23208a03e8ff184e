//! The record types and the per-attr [`RecordParser`].

use crate::layout::{ABSENT, Layout, Trailer};
use crate::sample::{ReadValues, Sample, parse_sample};
use crate::{Endian, HEADER_SIZE, ParseError, RawRecord, Reader};
use perfkit_sys::*;

/// The `sample_id` fields of a record: for non-sample records the trailer the kernel
/// appends with `sample_id_all` (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, in that
/// order, at the end of the record); for samples the same fields taken from the sample.
/// Fields are `None` when not sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SampleId {
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<i32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<i32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub identifier: Option<u64>,
}

impl SampleId {
    /// The event id: IDENTIFIER if present, else ID.
    pub fn event_id(&self) -> Option<u64> {
        self.identifier.or(self.id)
    }
}

/// `PERF_RECORD_MMAP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mmap<'a> {
    /// Process id (-1 for kernel maps synthesized by perf).
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// File name, without its NUL terminator.
    pub filename: &'a [u8],
    /// `PERF_RECORD_MISC_MMAP_DATA`: a non-executable mapping.
    pub data: bool,
}

/// The file identity in a `PERF_RECORD_MMAP2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mmap2FileId {
    /// The inode form: device numbers, inode and generation.
    Inode {
        /// Device major.
        maj: u32,
        /// Device minor.
        min: u32,
        /// Inode number.
        ino: u64,
        /// Inode generation.
        ino_generation: u64,
    },
    /// The build-id form (`PERF_RECORD_MISC_MMAP_BUILD_ID` in misc).
    BuildId(BuildId),
}

/// A build id of up to 20 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuildId {
    /// `build_id_size` (at most 20).
    pub size: u8,
    /// The 20 bytes of the field; only the first `size` are the build id.
    pub bytes: [u8; BUILD_ID_SIZE_MAX],
}

impl BuildId {
    /// The build id bytes.
    pub fn as_bytes(&self) -> &[u8] {
        self.bytes
            .get(..usize::from(self.size))
            .unwrap_or(&self.bytes)
    }
}

/// `PERF_RECORD_MMAP2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mmap2<'a> {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u64,
    /// File offset.
    pub pgoff: u64,
    /// Inode or build-id form.
    pub file_id: Mmap2FileId,
    /// `PROT_*` bits.
    pub prot: u32,
    /// `MAP_*` bits.
    pub flags: u32,
    /// File name, without its NUL terminator.
    pub filename: &'a [u8],
    /// `PERF_RECORD_MISC_MMAP_DATA`: a non-executable mapping.
    pub data: bool,
}

/// `PERF_RECORD_LOST`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lost {
    /// Id of the event whose records were lost.
    pub id: u64,
    /// Number of records lost.
    pub lost: u64,
}

/// `PERF_RECORD_COMM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Comm<'a> {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The new command name, without its NUL terminator.
    pub comm: &'a [u8],
    /// `PERF_RECORD_MISC_COMM_EXEC`: the name changed because of an exec.
    pub exec: bool,
}

/// `PERF_RECORD_FORK` and `PERF_RECORD_EXIT` (`struct perf_task_event`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: i32,
    /// Parent process id.
    pub ppid: i32,
    /// Thread id.
    pub tid: i32,
    /// Parent thread id.
    pub ptid: i32,
    /// Timestamp.
    pub time: u64,
}

/// `PERF_RECORD_THROTTLE` and `PERF_RECORD_UNTHROTTLE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// Timestamp.
    pub time: u64,
    /// Event id.
    pub id: u64,
    /// Event stream id.
    pub stream_id: u64,
}

/// `PERF_RECORD_READ` (inherited counters at child exit, with `inherit_stat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Read<'a> {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The values in the attr's `read_format`.
    pub values: ReadValues<'a>,
}

/// `PERF_RECORD_AUX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aux {
    /// Offset in the AUX area.
    pub aux_offset: u64,
    /// Size of the new data.
    pub aux_size: u64,
    /// `PERF_AUX_FLAG_*`.
    pub flags: u64,
}

/// `PERF_RECORD_ITRACE_START`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItraceStart {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
}

/// `PERF_RECORD_LOST_SAMPLES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostSamples {
    /// Number of samples lost.
    pub lost: u64,
}

/// `PERF_RECORD_SWITCH` (misc bits only).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// `PERF_RECORD_MISC_SWITCH_OUT`: switching out (else in).
    pub out: bool,
    /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`: switched out while runnable (preempted).
    pub preempt: bool,
}

/// `PERF_RECORD_SWITCH_CPU_WIDE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchCpuWide {
    /// `PERF_RECORD_MISC_SWITCH_OUT`.
    pub out: bool,
    /// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`.
    pub preempt: bool,
    /// The next process (switching out) or the previous one (switching in).
    pub next_prev_pid: i32,
    /// The next or previous thread.
    pub next_prev_tid: i32,
}

/// One `struct perf_ns_link_info`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NamespaceLink {
    /// Device of the nsfs.
    pub dev: u64,
    /// Inode of the namespace.
    pub ino: u64,
}

/// `PERF_RECORD_NAMESPACES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Namespaces<'a> {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    links: &'a [u8],
    endian: Endian,
}

impl<'a> Namespaces<'a> {
    /// `nr_namespaces`.
    pub fn len(&self) -> usize {
        self.links.len() / 16
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.links.len() < 16
    }
    /// Namespace `index` (`NET_NS_INDEX` .. `CGROUP_NS_INDEX`).
    pub fn get(&self, index: usize) -> Option<NamespaceLink> {
        self.iter().nth(index)
    }
    /// All namespaces, in index order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = NamespaceLink> + 'a {
        let e = self.endian;
        self.links.chunks_exact(16).map(move |c| {
            let (a, b) = c.split_at(8);
            NamespaceLink {
                dev: e.u64_chunk(a),
                ino: e.u64_chunk(b),
            }
        })
    }
}

/// `PERF_RECORD_KSYMBOL`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ksymbol<'a> {
    /// Start address.
    pub addr: u64,
    /// Length.
    pub len: u32,
    /// `PERF_RECORD_KSYMBOL_TYPE_*`.
    pub ksym_type: u16,
    /// `PERF_RECORD_KSYMBOL_FLAGS_*`.
    pub flags: u16,
    /// Symbol name, without its NUL terminator.
    pub name: &'a [u8],
}

/// `PERF_RECORD_BPF_EVENT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfEvent {
    /// `PERF_BPF_EVENT_*`.
    pub type_: u16,
    /// Flags.
    pub flags: u16,
    /// BPF program id.
    pub id: u32,
    /// Program tag.
    pub tag: [u8; BPF_TAG_SIZE],
}

/// `PERF_RECORD_CGROUP`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cgroup<'a> {
    /// Cgroup id.
    pub id: u64,
    /// Cgroup path, without its NUL terminator.
    pub path: &'a [u8],
}

/// `PERF_RECORD_TEXT_POKE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextPoke<'a> {
    /// Address of the change.
    pub addr: u64,
    /// The `old_len` bytes before the change.
    pub old_bytes: &'a [u8],
    /// The `new_len` bytes after it.
    pub new_bytes: &'a [u8],
}

/// `PERF_RECORD_AUX_OUTPUT_HW_ID`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuxOutputHwId {
    /// Architecture-specific hardware id.
    pub hw_id: u64,
}

/// A decoded record body. Kernel records (types 1..=21) are typed; every other type,
/// including the perf tool's records (64 and up), is kept as raw bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)] // Boxing the sample would allocate per record.
pub enum Record<'a> {
    /// `PERF_RECORD_MMAP`.
    Mmap(Mmap<'a>),
    /// `PERF_RECORD_LOST`.
    Lost(Lost),
    /// `PERF_RECORD_COMM`.
    Comm(Comm<'a>),
    /// `PERF_RECORD_EXIT`.
    Exit(Task),
    /// `PERF_RECORD_THROTTLE`.
    Throttle(Throttle),
    /// `PERF_RECORD_UNTHROTTLE`.
    Unthrottle(Throttle),
    /// `PERF_RECORD_FORK`.
    Fork(Task),
    /// `PERF_RECORD_READ`.
    Read(Read<'a>),
    /// `PERF_RECORD_SAMPLE`.
    Sample(Sample<'a>),
    /// `PERF_RECORD_MMAP2`.
    Mmap2(Mmap2<'a>),
    /// `PERF_RECORD_AUX`.
    Aux(Aux),
    /// `PERF_RECORD_ITRACE_START`.
    ItraceStart(ItraceStart),
    /// `PERF_RECORD_LOST_SAMPLES`.
    LostSamples(LostSamples),
    /// `PERF_RECORD_SWITCH`.
    Switch(Switch),
    /// `PERF_RECORD_SWITCH_CPU_WIDE`.
    SwitchCpuWide(SwitchCpuWide),
    /// `PERF_RECORD_NAMESPACES`.
    Namespaces(Namespaces<'a>),
    /// `PERF_RECORD_KSYMBOL`.
    Ksymbol(Ksymbol<'a>),
    /// `PERF_RECORD_BPF_EVENT`.
    BpfEvent(BpfEvent),
    /// `PERF_RECORD_CGROUP`.
    Cgroup(Cgroup<'a>),
    /// `PERF_RECORD_TEXT_POKE`.
    TextPoke(TextPoke<'a>),
    /// `PERF_RECORD_AUX_OUTPUT_HW_ID`.
    AuxOutputHwId(AuxOutputHwId),
    /// Any other type (a newer kernel's, or a perf tool record >= 64): the whole body.
    Unknown {
        /// The record type.
        type_: u32,
        /// The misc bits.
        misc: u16,
        /// The body (bytes after the header), `sample_id` trailer included if any.
        data: &'a [u8],
    },
}

impl Record<'_> {
    /// The `PERF_RECORD_*` type this came from.
    pub fn record_type(&self) -> u32 {
        match self {
            Record::Mmap(_) => PERF_RECORD_MMAP,
            Record::Lost(_) => PERF_RECORD_LOST,
            Record::Comm(_) => PERF_RECORD_COMM,
            Record::Exit(_) => PERF_RECORD_EXIT,
            Record::Throttle(_) => PERF_RECORD_THROTTLE,
            Record::Unthrottle(_) => PERF_RECORD_UNTHROTTLE,
            Record::Fork(_) => PERF_RECORD_FORK,
            Record::Read(_) => PERF_RECORD_READ,
            Record::Sample(_) => PERF_RECORD_SAMPLE,
            Record::Mmap2(_) => PERF_RECORD_MMAP2,
            Record::Aux(_) => PERF_RECORD_AUX,
            Record::ItraceStart(_) => PERF_RECORD_ITRACE_START,
            Record::LostSamples(_) => PERF_RECORD_LOST_SAMPLES,
            Record::Switch(_) => PERF_RECORD_SWITCH,
            Record::SwitchCpuWide(_) => PERF_RECORD_SWITCH_CPU_WIDE,
            Record::Namespaces(_) => PERF_RECORD_NAMESPACES,
            Record::Ksymbol(_) => PERF_RECORD_KSYMBOL,
            Record::BpfEvent(_) => PERF_RECORD_BPF_EVENT,
            Record::Cgroup(_) => PERF_RECORD_CGROUP,
            Record::TextPoke(_) => PERF_RECORD_TEXT_POKE,
            Record::AuxOutputHwId(_) => PERF_RECORD_AUX_OUTPUT_HW_ID,
            Record::Unknown { type_, .. } => *type_,
        }
    }
}

/// A parsed record: header `misc`, the typed body, and its `sample_id` fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParsedRecord<'a> {
    /// `PERF_RECORD_MISC_*` bits from the header.
    pub misc: u16,
    /// The decoded body.
    pub record: Record<'a>,
    /// The `sample_id` fields (all `None` for records without them).
    pub sample_id: SampleId,
}

impl ParsedRecord<'_> {
    /// The cpu mode (`misc & PERF_RECORD_MISC_CPUMODE_MASK`: `PERF_RECORD_MISC_KERNEL`,
    /// `PERF_RECORD_MISC_USER`, ...).
    pub fn cpumode(&self) -> u16 {
        self.misc & PERF_RECORD_MISC_CPUMODE_MASK
    }

    /// The timestamp, from the sample or the `sample_id` trailer.
    pub fn time(&self) -> Option<u64> {
        self.sample_id.time
    }
}

/// Decodes the records of one event (one `perf_event_attr`) in one byte order.
///
/// Construction works out the layout once (offsets of the fixed sample fields, the size
/// and shape of the `sample_id` trailer, register counts, `read_format` entry size);
/// [`parse`](Self::parse) then only follows it. Parsing never allocates and never panics:
/// bad input gives a [`ParseError`] with the byte offset within the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordParser {
    layout: Layout,
    attr: perf_event_attr,
}

impl RecordParser {
    /// A parser for records of the event opened with `attr`, written in byte order
    /// `endian`. The attr must be in native form (a perf.data reader byte-swaps it first).
    pub fn new(attr: &perf_event_attr, endian: Endian) -> Self {
        RecordParser {
            layout: Layout::new(attr, endian),
            attr: *attr,
        }
    }

    /// The attr this parser was built from.
    pub fn attr(&self) -> &perf_event_attr {
        &self.attr
    }

    /// The byte order.
    pub fn endian(&self) -> Endian {
        self.layout.endian
    }

    /// Size of the `sample_id` trailer on non-sample records (0 without `sample_id_all`).
    pub fn sample_id_size(&self) -> usize {
        usize::from(self.layout.trailer.len)
    }

    /// Offset in a sample body of the event id (IDENTIFIER, else ID), if sampled.
    pub fn sample_id_offset(&self) -> Option<usize> {
        self.layout.sample_id_offset()
    }

    /// Distance from the end of a non-sample body to the event id in its trailer.
    pub fn nonsample_id_from_end(&self) -> Option<usize> {
        self.layout.nonsample_id_from_end()
    }

    /// The event id of a record (without decoding the rest), if its layout has one.
    pub fn record_id(&self, type_: u32, data: &crate::RawData<'_>) -> Option<u64> {
        let e = self.layout.endian;
        if type_ == PERF_RECORD_SAMPLE {
            data.u64_at(self.sample_id_offset()?, e)
        } else if type_ < PERF_RECORD_USER_TYPE_START {
            data.u64_at(data.len().checked_sub(self.nonsample_id_from_end()?)?, e)
        } else {
            None
        }
    }

    /// Parse a record given as a [`RawRecord`]. A split body is first copied into
    /// `scratch` (see [`RawData`](crate::RawData) for why); a single one is parsed in place.
    #[inline]
    pub fn parse_raw<'b>(
        &self,
        raw: &RawRecord<'b>,
        scratch: &'b mut Vec<u8>,
    ) -> Result<ParsedRecord<'b>, ParseError> {
        let body = raw.data.contiguous(scratch);
        self.parse(raw.type_, raw.misc, body)
    }

    /// Parse a record from its type, misc bits and contiguous body (the bytes after the
    /// 8-byte header).
    pub fn parse<'a>(
        &self,
        type_: u32,
        misc: u16,
        body: &'a [u8],
    ) -> Result<ParsedRecord<'a>, ParseError> {
        let l = &self.layout;
        if type_ == PERF_RECORD_SAMPLE {
            let s = parse_sample(body, l)?;
            let sample_id = SampleId {
                pid: s.pid,
                tid: s.tid,
                time: s.time,
                id: s.id,
                stream_id: s.stream_id,
                cpu: s.cpu,
                identifier: s.identifier,
            };
            return Ok(ParsedRecord {
                misc,
                record: Record::Sample(s),
                sample_id,
            });
        }
        if !(PERF_RECORD_MMAP..=PERF_RECORD_AUX_OUTPUT_HW_ID).contains(&type_) {
            return Ok(ParsedRecord {
                misc,
                record: Record::Unknown {
                    type_,
                    misc,
                    data: body,
                },
                sample_id: SampleId::default(),
            });
        }
        let tlen = usize::from(l.trailer.len);
        let Some(fields_len) = body.len().checked_sub(tlen) else {
            return Err(ParseError::truncated(
                Some(type_),
                HEADER_SIZE,
                "record fields and the sample_id trailer",
                tlen as u64,
                body.len() as u64,
            ));
        };
        let (fields, trailer) = body.split_at(fields_len);
        let sample_id = parse_trailer(trailer, &l.trailer, l.endian);
        let mut r = Reader::new(fields, l.endian, HEADER_SIZE, Some(type_));
        let record = parse_nonsample(type_, misc, &mut r, l)?;
        Ok(ParsedRecord {
            misc,
            record,
            sample_id,
        })
    }
}

#[inline]
fn parse_trailer(t: &[u8], tl: &Trailer, e: Endian) -> SampleId {
    let u64_at = |off: u16| -> Option<u64> {
        if off == ABSENT {
            return None;
        }
        let o = usize::from(off);
        t.get(o..o + 8).map(|c| e.u64_chunk(c))
    };
    let half = |off: u16, hi: bool| -> Option<u32> {
        if off == ABSENT {
            return None;
        }
        let o = usize::from(off) + if hi { 4 } else { 0 };
        t.get(o..o + 4)
            .map(|c| e.u32(c.try_into().unwrap_or([0; 4])))
    };
    SampleId {
        pid: half(tl.tid, false).map(|v| v as i32),
        tid: half(tl.tid, true).map(|v| v as i32),
        time: u64_at(tl.time),
        id: u64_at(tl.id),
        stream_id: u64_at(tl.stream_id),
        cpu: half(tl.cpu, false),
        identifier: u64_at(tl.identifier),
    }
}

fn parse_nonsample<'a>(
    type_: u32,
    misc: u16,
    r: &mut Reader<'a>,
    l: &Layout,
) -> Result<Record<'a>, ParseError> {
    Ok(match type_ {
        PERF_RECORD_MMAP => Record::Mmap(Mmap {
            pid: r.i32("pid")?,
            tid: r.i32("tid")?,
            addr: r.u64("addr")?,
            len: r.u64("len")?,
            pgoff: r.u64("pgoff")?,
            filename: r.c_string("filename (NUL-terminated)")?,
            data: misc & PERF_RECORD_MISC_MMAP_DATA != 0,
        }),
        PERF_RECORD_LOST => Record::Lost(Lost {
            id: r.u64("id")?,
            lost: r.u64("lost")?,
        }),
        PERF_RECORD_COMM => Record::Comm(Comm {
            pid: r.i32("pid")?,
            tid: r.i32("tid")?,
            comm: r.c_string("comm (NUL-terminated)")?,
            exec: misc & PERF_RECORD_MISC_COMM_EXEC != 0,
        }),
        PERF_RECORD_EXIT | PERF_RECORD_FORK => {
            let t = Task {
                pid: r.i32("pid")?,
                ppid: r.i32("ppid")?,
                tid: r.i32("tid")?,
                ptid: r.i32("ptid")?,
                time: r.u64("time")?,
            };
            if type_ == PERF_RECORD_EXIT {
                Record::Exit(t)
            } else {
                Record::Fork(t)
            }
        }
        PERF_RECORD_THROTTLE | PERF_RECORD_UNTHROTTLE => {
            let t = Throttle {
                time: r.u64("time")?,
                id: r.u64("id")?,
                stream_id: r.u64("stream_id")?,
            };
            if type_ == PERF_RECORD_THROTTLE {
                Record::Throttle(t)
            } else {
                Record::Unthrottle(t)
            }
        }
        PERF_RECORD_READ => Record::Read(Read {
            pid: r.i32("pid")?,
            tid: r.i32("tid")?,
            values: ReadValues::parse(r, l)?,
        }),
        PERF_RECORD_MMAP2 => {
            let pid = r.i32("pid")?;
            let tid = r.i32("tid")?;
            let addr = r.u64("addr")?;
            let len = r.u64("len")?;
            let pgoff = r.u64("pgoff")?;
            let file_id = if misc & PERF_RECORD_MISC_MMAP_BUILD_ID != 0 {
                let size = r.u8("build_id_size")?;
                if usize::from(size) > BUILD_ID_SIZE_MAX {
                    return Err(r.invalid(1, "build_id_size (at most 20)", u64::from(size)));
                }
                r.bytes(3, "build id reserved bytes")?;
                let b = r.bytes(BUILD_ID_SIZE_MAX as u64, "build_id[20]")?;
                Mmap2FileId::BuildId(BuildId {
                    size,
                    bytes: b.try_into().unwrap_or([0; BUILD_ID_SIZE_MAX]),
                })
            } else {
                Mmap2FileId::Inode {
                    maj: r.u32("maj")?,
                    min: r.u32("min")?,
                    ino: r.u64("ino")?,
                    ino_generation: r.u64("ino_generation")?,
                }
            };
            // Kernels before 3.16 wrote no prot and flags: the file name follows the inode
            // fields at once (perf 6.1 misreads such records: `/usr/bin/true` as `/true`).
            let inode = matches!(file_id, Mmap2FileId::Inode { .. });
            let (prot, flags) = if inode && old_mmap2_layout(r.rest()) {
                (0, 0)
            } else {
                (r.u32("prot")?, r.u32("flags")?)
            };
            Record::Mmap2(Mmap2 {
                pid,
                tid,
                addr,
                len,
                pgoff,
                file_id,
                prot,
                flags,
                filename: r.c_string("filename (NUL-terminated)")?,
                data: misc & PERF_RECORD_MISC_MMAP_DATA != 0,
            })
        }
        PERF_RECORD_AUX => Record::Aux(Aux {
            aux_offset: r.u64("aux_offset")?,
            aux_size: r.u64("aux_size")?,
            flags: r.u64("flags")?,
        }),
        PERF_RECORD_ITRACE_START => Record::ItraceStart(ItraceStart {
            pid: r.i32("pid")?,
            tid: r.i32("tid")?,
        }),
        PERF_RECORD_LOST_SAMPLES => Record::LostSamples(LostSamples {
            lost: r.u64("lost")?,
        }),
        PERF_RECORD_SWITCH => Record::Switch(Switch {
            out: misc & PERF_RECORD_MISC_SWITCH_OUT != 0,
            preempt: misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
        }),
        PERF_RECORD_SWITCH_CPU_WIDE => Record::SwitchCpuWide(SwitchCpuWide {
            out: misc & PERF_RECORD_MISC_SWITCH_OUT != 0,
            preempt: misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT != 0,
            next_prev_pid: r.i32("next_prev_pid")?,
            next_prev_tid: r.i32("next_prev_tid")?,
        }),
        PERF_RECORD_NAMESPACES => {
            let pid = r.i32("pid")?;
            let tid = r.i32("tid")?;
            let nr = r.u64("nr_namespaces")?;
            let links = r.array_of(nr, 16, "link_info[nr_namespaces]")?;
            Record::Namespaces(Namespaces {
                pid,
                tid,
                links,
                endian: r.endian(),
            })
        }
        PERF_RECORD_KSYMBOL => Record::Ksymbol(Ksymbol {
            addr: r.u64("addr")?,
            len: r.u32("len")?,
            ksym_type: r.u16("ksym_type")?,
            flags: r.u16("flags")?,
            name: r.c_string("name (NUL-terminated)")?,
        }),
        PERF_RECORD_BPF_EVENT => Record::BpfEvent(BpfEvent {
            type_: r.u16("type")?,
            flags: r.u16("flags")?,
            id: r.u32("id")?,
            tag: r
                .bytes(BPF_TAG_SIZE as u64, "tag[BPF_TAG_SIZE]")?
                .try_into()
                .unwrap_or([0; BPF_TAG_SIZE]),
        }),
        PERF_RECORD_CGROUP => Record::Cgroup(Cgroup {
            id: r.u64("id")?,
            path: r.c_string("path (NUL-terminated)")?,
        }),
        PERF_RECORD_TEXT_POKE => {
            let addr = r.u64("addr")?;
            let old_len = r.u16("old_len")?;
            let new_len = r.u16("new_len")?;
            let old_bytes = r.bytes(u64::from(old_len), "bytes[old_len]")?;
            let new_bytes = r.bytes(u64::from(new_len), "bytes[new_len]")?;
            Record::TextPoke(TextPoke {
                addr,
                old_bytes,
                new_bytes,
            })
        }
        PERF_RECORD_AUX_OUTPUT_HW_ID => Record::AuxOutputHwId(AuxOutputHwId {
            hw_id: r.u64("hw_id")?,
        }),
        _ => Record::Unknown {
            type_,
            misc,
            data: r.rest(),
        },
    })
}

/// Whether the bytes after an MMAP2 record's inode fields are a file name rather than the
/// `prot` and `flags` words that kernels since 3.16 write there (build-id MMAP2 records are
/// all newer: only the inode form is checked). `prot` holds PROT_* bits
/// (at most 0x0f, plus PROT_GROWSDOWN/UP at bits 24/25), never the printable bytes a path
/// starts with; `rest` is what follows the inode fields (sample_id trailer included).
fn old_mmap2_layout(rest: &[u8]) -> bool {
    let Some(first) = rest.first() else {
        return false;
    };
    // Valid prot bits in either byte order: PROT_READ/WRITE/EXEC/SEM, GROWSDOWN/UP.
    let valid = |p: u32| p & !0x0300_000f == 0;
    if let Some(w) = rest.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok())
        && (valid(u32::from_le_bytes(w)) || valid(u32::from_be_bytes(w)))
    {
        return false;
    }
    // A modern record has 8 bytes of prot/flags, then at least a 1-byte name; a name that
    // starts with '/' or '[' (every path and every [anon]/[stack]/[heap]/[vdso] name) at
    // the prot position is the old layout. Modern prot's low byte is a small number.
    matches!(first, b'/' | b'[') && rest.get(1).is_some_and(|b| b.is_ascii_graphic())
}
