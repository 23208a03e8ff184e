//! `PERF_RECORD_SAMPLE` and the lazily decoded parts of a sample.

use crate::layout::{ABSENT, Layout};
use crate::{Endian, ParseError, Reader};
use perfkit_sys::*;

/// A decoded `PERF_RECORD_SAMPLE`. Each field is `Some` exactly when its
/// `PERF_SAMPLE_*` bit is set in the attr's `sample_type` (fields are listed in the
/// kernel's output order). Variable-length parts borrow the record bytes and decode lazily.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sample<'a> {
    /// `PERF_SAMPLE_IDENTIFIER`: the event id, first in the body.
    pub identifier: Option<u64>,
    /// `PERF_SAMPLE_IP`.
    pub ip: Option<u64>,
    /// `PERF_SAMPLE_TID`: process id.
    pub pid: Option<i32>,
    /// `PERF_SAMPLE_TID`: thread id.
    pub tid: Option<i32>,
    /// `PERF_SAMPLE_TIME`.
    pub time: Option<u64>,
    /// `PERF_SAMPLE_ADDR`.
    pub addr: Option<u64>,
    /// `PERF_SAMPLE_ID`.
    pub id: Option<u64>,
    /// `PERF_SAMPLE_STREAM_ID`.
    pub stream_id: Option<u64>,
    /// `PERF_SAMPLE_CPU`: the cpu.
    pub cpu: Option<u32>,
    /// `PERF_SAMPLE_CPU`: the reserved u32 after the cpu.
    pub cpu_res: Option<u32>,
    /// `PERF_SAMPLE_PERIOD`.
    pub period: Option<u64>,
    /// `PERF_SAMPLE_READ`: counter values in the attr's `read_format`.
    pub read: Option<ReadValues<'a>>,
    /// `PERF_SAMPLE_CALLCHAIN`.
    pub callchain: Option<Callchain<'a>>,
    /// `PERF_SAMPLE_RAW`: the `data[size]` bytes (alignment padding included, as the
    /// kernel counts it in `size`).
    pub raw: Option<&'a [u8]>,
    /// `PERF_SAMPLE_BRANCH_STACK`.
    pub branch_stack: Option<BranchStack<'a>>,
    /// `PERF_SAMPLE_REGS_USER`.
    pub regs_user: Option<Regs<'a>>,
    /// `PERF_SAMPLE_STACK_USER`.
    pub stack_user: Option<StackUser<'a>>,
    /// `PERF_SAMPLE_WEIGHT` (or the same u64 read as a whole under `WEIGHT_STRUCT`).
    pub weight: Option<u64>,
    /// `PERF_SAMPLE_WEIGHT_STRUCT`: the weight as `var1_dw`, `var2_w`, `var3_w`.
    pub weight_struct: Option<WeightStruct>,
    /// `PERF_SAMPLE_DATA_SRC` (`union perf_mem_data_src`, see `PERF_MEM_*_SHIFT`).
    pub data_src: Option<u64>,
    /// `PERF_SAMPLE_TRANSACTION` (`PERF_TXN_*` bits).
    pub transaction: Option<u64>,
    /// `PERF_SAMPLE_REGS_INTR`.
    pub regs_intr: Option<Regs<'a>>,
    /// `PERF_SAMPLE_PHYS_ADDR`.
    pub phys_addr: Option<u64>,
    /// `PERF_SAMPLE_CGROUP`: cgroup id.
    pub cgroup: Option<u64>,
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`.
    pub data_page_size: Option<u64>,
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`.
    pub code_page_size: Option<u64>,
    /// `PERF_SAMPLE_AUX`: the `data[size]` bytes.
    pub aux: Option<&'a [u8]>,
}

impl Sample<'_> {
    /// The event id: `PERF_SAMPLE_IDENTIFIER` if present, else `PERF_SAMPLE_ID`.
    pub fn event_id(&self) -> Option<u64> {
        self.identifier.or(self.id)
    }
}

/// `PERF_SAMPLE_WEIGHT_STRUCT`: `union perf_sample_weight` as its struct member.
///
/// Read as one u64 in the stream's byte order, `var1_dw` is the low 32 bits, `var2_w`
/// the next 16 and `var3_w` the top 16, on either byte order (the kernel declares the
/// members in reverse order on big-endian machines for exactly that reason).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WeightStruct {
    /// Usually the latency.
    pub var1_dw: u32,
    /// Model-specific (e.g. instruction latency).
    pub var2_w: u16,
    /// Model-specific.
    pub var3_w: u16,
}

impl WeightStruct {
    /// Split the full 64-bit weight.
    pub const fn from_full(full: u64) -> Self {
        WeightStruct {
            var1_dw: full as u32,
            var2_w: (full >> 32) as u16,
            var3_w: (full >> 48) as u16,
        }
    }
}

/// One counter of a `struct read_format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadValue {
    /// The count.
    pub value: u64,
    /// `PERF_FORMAT_ID`.
    pub id: Option<u64>,
    /// `PERF_FORMAT_LOST`.
    pub lost: Option<u64>,
}

/// `struct read_format` (in `PERF_SAMPLE_READ` and `PERF_RECORD_READ`): a single counter,
/// or with `PERF_FORMAT_GROUP` every counter of the group (decoded lazily).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadValues<'a> {
    /// `PERF_FORMAT_TOTAL_TIME_ENABLED`.
    pub time_enabled: Option<u64>,
    /// `PERF_FORMAT_TOTAL_TIME_RUNNING`.
    pub time_running: Option<u64>,
    inner: ReadInner<'a>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReadInner<'a> {
    Single(ReadValue),
    Group {
        entries: &'a [u8],
        entry: u8,
        has_id: bool,
        has_lost: bool,
        endian: Endian,
    },
}

impl<'a> ReadValues<'a> {
    /// Whether this is a `PERF_FORMAT_GROUP` read.
    pub fn is_group(&self) -> bool {
        matches!(self.inner, ReadInner::Group { .. })
    }

    /// Number of counters (`nr` for a group, else 1).
    pub fn len(&self) -> usize {
        match self.inner {
            ReadInner::Single(_) => 1,
            ReadInner::Group { entries, entry, .. } => entries.len() / usize::from(entry),
        }
    }

    /// Whether there are no counters (an empty group).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The counters, in group order.
    pub fn iter(&self) -> ReadValueIter<'a> {
        match self.inner {
            ReadInner::Single(v) => ReadValueIter {
                single: Some(v),
                chunks: [].chunks_exact(8),
                has_id: false,
                has_lost: false,
                endian: Endian::NATIVE,
            },
            ReadInner::Group {
                entries,
                entry,
                has_id,
                has_lost,
                endian,
            } => ReadValueIter {
                single: None,
                chunks: entries.chunks_exact(usize::from(entry)),
                has_id,
                has_lost,
                endian,
            },
        }
    }

    pub(crate) fn parse(r: &mut Reader<'a>, l: &Layout) -> Result<Self, ParseError> {
        let rf = l.read_format;
        let has_id = rf & PERF_FORMAT_ID != 0;
        let has_lost = rf & PERF_FORMAT_LOST != 0;
        let opt = |r: &mut Reader<'a>, bit: u64, what| -> Result<Option<u64>, ParseError> {
            if rf & bit != 0 {
                Ok(Some(r.u64(what)?))
            } else {
                Ok(None)
            }
        };
        if rf & PERF_FORMAT_GROUP != 0 {
            let nr = r.u64("read_format.nr")?;
            let time_enabled = opt(
                r,
                PERF_FORMAT_TOTAL_TIME_ENABLED,
                "read_format.time_enabled",
            )?;
            let time_running = opt(
                r,
                PERF_FORMAT_TOTAL_TIME_RUNNING,
                "read_format.time_running",
            )?;
            let entries = r.array_of(nr, l.read_entry, "read_format.cntr[nr]")?;
            Ok(ReadValues {
                time_enabled,
                time_running,
                inner: ReadInner::Group {
                    entries,
                    entry: l.read_entry as u8,
                    has_id,
                    has_lost,
                    endian: r.endian(),
                },
            })
        } else {
            let value = r.u64("read_format.value")?;
            let time_enabled = opt(
                r,
                PERF_FORMAT_TOTAL_TIME_ENABLED,
                "read_format.time_enabled",
            )?;
            let time_running = opt(
                r,
                PERF_FORMAT_TOTAL_TIME_RUNNING,
                "read_format.time_running",
            )?;
            let id = opt(r, PERF_FORMAT_ID, "read_format.id")?;
            let lost = opt(r, PERF_FORMAT_LOST, "read_format.lost")?;
            Ok(ReadValues {
                time_enabled,
                time_running,
                inner: ReadInner::Single(ReadValue { value, id, lost }),
            })
        }
    }
}

/// Iterator over [`ReadValues`].
#[derive(Clone, Debug)]
pub struct ReadValueIter<'a> {
    single: Option<ReadValue>,
    chunks: core::slice::ChunksExact<'a, u8>,
    has_id: bool,
    has_lost: bool,
    endian: Endian,
}

impl Iterator for ReadValueIter<'_> {
    type Item = ReadValue;
    fn next(&mut self) -> Option<ReadValue> {
        if let Some(v) = self.single.take() {
            return Some(v);
        }
        let c = self.chunks.next()?;
        let mut words = c.chunks_exact(8).map(|w| self.endian.u64_chunk(w));
        let value = words.next().unwrap_or(0);
        let id = if self.has_id { words.next() } else { None };
        let lost = if self.has_lost { words.next() } else { None };
        Some(ReadValue { value, id, lost })
    }
}

/// The context a callchain entry belongs to: the `PERF_CONTEXT_*` markers the kernel
/// puts in callchains before the frames of each context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallchainContext {
    /// `PERF_CONTEXT_HV`.
    Hv,
    /// `PERF_CONTEXT_KERNEL`.
    Kernel,
    /// `PERF_CONTEXT_USER`.
    User,
    /// `PERF_CONTEXT_GUEST`.
    Guest,
    /// `PERF_CONTEXT_GUEST_KERNEL`.
    GuestKernel,
    /// `PERF_CONTEXT_GUEST_USER`.
    GuestUser,
    /// Another value at or above `PERF_CONTEXT_MAX` (reserved for markers).
    Other(u64),
}

impl CallchainContext {
    /// The context a callchain value marks, or `None` if it is an address (below
    /// `PERF_CONTEXT_MAX`).
    #[inline]
    pub const fn from_marker(v: u64) -> Option<Self> {
        if v < PERF_CONTEXT_MAX {
            return None;
        }
        Some(match v {
            PERF_CONTEXT_HV => CallchainContext::Hv,
            PERF_CONTEXT_KERNEL => CallchainContext::Kernel,
            PERF_CONTEXT_USER => CallchainContext::User,
            PERF_CONTEXT_GUEST => CallchainContext::Guest,
            PERF_CONTEXT_GUEST_KERNEL => CallchainContext::GuestKernel,
            PERF_CONTEXT_GUEST_USER => CallchainContext::GuestUser,
            other => CallchainContext::Other(other),
        })
    }

    /// The marker value.
    pub const fn marker(self) -> u64 {
        match self {
            CallchainContext::Hv => PERF_CONTEXT_HV,
            CallchainContext::Kernel => PERF_CONTEXT_KERNEL,
            CallchainContext::User => PERF_CONTEXT_USER,
            CallchainContext::Guest => PERF_CONTEXT_GUEST,
            CallchainContext::GuestKernel => PERF_CONTEXT_GUEST_KERNEL,
            CallchainContext::GuestUser => PERF_CONTEXT_GUEST_USER,
            CallchainContext::Other(v) => v,
        }
    }
}

/// `PERF_SAMPLE_CALLCHAIN`: `u64 nr; u64 ips[nr]`, decoded lazily.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Callchain<'a> {
    ips: &'a [u8],
    endian: Endian,
}

impl<'a> Callchain<'a> {
    /// A callchain over `nr * 8` bytes of `ips`.
    pub fn new(ips: &'a [u8], endian: Endian) -> Self {
        Callchain { ips, endian }
    }

    /// `nr`: number of entries, context markers included.
    #[inline]
    pub fn len(&self) -> usize {
        self.ips.len() / 8
    }

    /// Whether `nr` is 0.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.ips.len() < 8
    }

    /// Entry `i` (a marker or an address).
    pub fn get(&self, i: usize) -> Option<u64> {
        let at = i.checked_mul(8)?;
        let c = self.ips.get(at..at.checked_add(8)?)?;
        Some(self.endian.u64_chunk(c))
    }

    /// Every raw entry, markers included, as the kernel wrote them.
    #[inline]
    pub fn iter(&self) -> CallchainIter<'a> {
        CallchainIter {
            chunks: self.ips.chunks_exact(8),
            endian: self.endian,
        }
    }

    /// The addresses, each tagged with the context of the last marker before it (`None`
    /// before the first marker); the markers themselves are not yielded.
    #[inline]
    pub fn frames(&self) -> Frames<'a> {
        Frames {
            inner: self.iter(),
            context: None,
        }
    }
}

impl<'a> IntoIterator for &Callchain<'a> {
    type Item = u64;
    type IntoIter = CallchainIter<'a>;
    fn into_iter(self) -> CallchainIter<'a> {
        self.iter()
    }
}

/// Raw callchain entries.
#[derive(Clone, Debug)]
pub struct CallchainIter<'a> {
    chunks: core::slice::ChunksExact<'a, u8>,
    endian: Endian,
}

impl Iterator for CallchainIter<'_> {
    type Item = u64;
    #[inline]
    fn next(&mut self) -> Option<u64> {
        let c = self.chunks.next()?;
        Some(self.endian.u64_chunk(c))
    }
    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.chunks.size_hint()
    }
}

impl ExactSizeIterator for CallchainIter<'_> {}

impl DoubleEndedIterator for CallchainIter<'_> {
    fn next_back(&mut self) -> Option<u64> {
        let c = self.chunks.next_back()?;
        Some(self.endian.u64_chunk(c))
    }
}

/// A callchain address with its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The context of the last marker before this address.
    pub context: Option<CallchainContext>,
    /// The address.
    pub ip: u64,
}

/// Callchain addresses tagged with their context.
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    inner: CallchainIter<'a>,
    context: Option<CallchainContext>,
}

impl Iterator for Frames<'_> {
    type Item = Frame;
    #[inline]
    fn next(&mut self) -> Option<Frame> {
        loop {
            let v = self.inner.next()?;
            match CallchainContext::from_marker(v) {
                Some(c) => self.context = Some(c),
                None => {
                    return Some(Frame {
                        context: self.context,
                        ip: v,
                    });
                }
            }
        }
    }
}

/// One `struct perf_branch_entry`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchEntry {
    /// Branch source.
    pub from: u64,
    /// Branch target.
    pub to: u64,
    /// The flags bit-field word.
    pub flags: u64,
}

impl BranchEntry {
    /// `mispred` (bit 0 of the flags word, little-endian bit-field order).
    pub fn mispred(&self) -> bool {
        self.flags & 1 != 0
    }
    /// `predicted` (bit 1).
    pub fn predicted(&self) -> bool {
        self.flags & 2 != 0
    }
    /// `in_tx` (bit 2).
    pub fn in_tx(&self) -> bool {
        self.flags & 4 != 0
    }
    /// `abort` (bit 3).
    pub fn abort(&self) -> bool {
        self.flags & 8 != 0
    }
    /// `cycles` (bits 4-19).
    pub fn cycles(&self) -> u16 {
        (self.flags >> 4) as u16
    }
    /// `type` (bits 20-23, `PERF_BR_*`).
    pub fn branch_type(&self) -> u8 {
        ((self.flags >> 20) & 0xf) as u8
    }
}

/// `PERF_SAMPLE_BRANCH_STACK`: `nr`, `hw_idx` (with `PERF_SAMPLE_BRANCH_HW_INDEX`),
/// `lbr[nr]`, and `cntr[nr]` (with `PERF_SAMPLE_BRANCH_COUNTERS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BranchStack<'a> {
    /// `hw_idx`, present with `PERF_SAMPLE_BRANCH_HW_INDEX`.
    pub hw_idx: Option<u64>,
    entries: &'a [u8],
    counters: Option<&'a [u8]>,
    endian: Endian,
}

impl<'a> BranchStack<'a> {
    /// `nr`.
    pub fn len(&self) -> usize {
        self.entries.len() / 24
    }
    /// Whether `nr` is 0.
    pub fn is_empty(&self) -> bool {
        self.entries.len() < 24
    }
    /// The `lbr[nr]` entries.
    pub fn entries(&self) -> impl ExactSizeIterator<Item = BranchEntry> + 'a {
        let e = self.endian;
        self.entries.chunks_exact(24).map(move |c| {
            let mut w = c.chunks_exact(8).map(|w| e.u64_chunk(w));
            BranchEntry {
                from: w.next().unwrap_or(0),
                to: w.next().unwrap_or(0),
                flags: w.next().unwrap_or(0),
            }
        })
    }
    /// The `cntr[nr]` words (with `PERF_SAMPLE_BRANCH_COUNTERS`), one per entry.
    pub fn counters(&self) -> Option<impl ExactSizeIterator<Item = u64> + 'a> {
        let e = self.endian;
        self.counters
            .map(move |c| c.chunks_exact(8).map(move |w| e.u64_chunk(w)))
    }
}

/// `PERF_SAMPLE_REGS_USER` / `PERF_SAMPLE_REGS_INTR`: `abi` and one u64 per bit set in
/// the attr's register mask, in ascending register-number order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_*` (`NONE` = 0: no registers follow).
    pub abi: u64,
    mask: u64,
    regs: &'a [u8],
    endian: Endian,
}

impl<'a> Regs<'a> {
    /// The attr's register mask (`sample_regs_user` or `sample_regs_intr`); empty when
    /// `abi` is `PERF_SAMPLE_REGS_ABI_NONE`.
    pub fn mask(&self) -> u64 {
        if self.regs.is_empty() { 0 } else { self.mask }
    }

    /// Number of registers present.
    pub fn len(&self) -> usize {
        self.regs.len() / 8
    }

    /// Whether no registers are present.
    pub fn is_empty(&self) -> bool {
        self.regs.is_empty()
    }

    /// Register number `reg` (the arch's `perf_regs.h` numbering), if sampled.
    #[inline]
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask() & (1u64 << reg) == 0 {
            return None;
        }
        let idx = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        let c = self.regs.get(idx * 8..idx * 8 + 8)?;
        Some(self.endian.u64_chunk(c))
    }

    /// `(register number, value)` pairs in ascending register order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u64)> + 'a {
        let e = self.endian;
        let mask = self.mask();
        (0..64u32)
            .filter(move |b| mask & (1u64 << b) != 0)
            .zip(self.regs.chunks_exact(8).map(move |c| e.u64_chunk(c)))
    }

    fn parse(
        r: &mut Reader<'a>,
        mask: u64,
        count: u64,
        abi_what: &'static str,
        regs_what: &'static str,
    ) -> Result<Self, ParseError> {
        let abi = r.u64(abi_what)?;
        let regs = if abi == PERF_SAMPLE_REGS_ABI_NONE {
            &[][..]
        } else {
            r.array_of(count, 8, regs_what)?
        };
        Ok(Regs {
            abi,
            mask,
            regs,
            endian: r.endian(),
        })
    }
}

/// `PERF_SAMPLE_STACK_USER`: `u64 size; char data[size]; u64 dyn_size` (`dyn_size` only
/// when `size != 0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackUser<'a> {
    /// The `data[size]` bytes as copied by the kernel.
    pub data: &'a [u8],
    /// How many of them are valid stack (`None` when `size` is 0).
    pub dyn_size: Option<u64>,
}

impl<'a> StackUser<'a> {
    /// The valid part: the first `dyn_size` bytes (clamped to `data`).
    pub fn valid(&self) -> &'a [u8] {
        let n = self
            .dyn_size
            .map_or(0, |d| usize::try_from(d).unwrap_or(usize::MAX));
        self.data.get(..n).unwrap_or(self.data)
    }
}

#[inline(always)]
fn fixed_u64(body: &[u8], off: u16, e: Endian) -> Option<u64> {
    if off == ABSENT {
        return None;
    }
    let o = usize::from(off);
    body.get(o..o + 8).map(|c| e.u64_chunk(c))
}

/// Parse a sample body (after the header) with a precomputed layout.
pub(crate) fn parse_sample<'a>(body: &'a [u8], l: &Layout) -> Result<Sample<'a>, ParseError> {
    let p = &l.prefix;
    let e = l.endian;
    let plen = usize::from(p.len);
    if body.len() < plen {
        // Find the first fixed field that does not fit, for a precise message.
        let mut r = Reader::new(body, e, 8, Some(PERF_RECORD_SAMPLE));
        r.bytes(plen as u64, "the fixed sample fields (IDENTIFIER..PERIOD)")?;
    }
    let mut s = Sample {
        identifier: fixed_u64(body, p.identifier, e),
        ip: fixed_u64(body, p.ip, e),
        time: fixed_u64(body, p.time, e),
        addr: fixed_u64(body, p.addr, e),
        id: fixed_u64(body, p.id, e),
        stream_id: fixed_u64(body, p.stream_id, e),
        period: fixed_u64(body, p.period, e),
        ..Sample::default()
    };
    if p.tid != ABSENT {
        let o = usize::from(p.tid);
        if let (Some(a), Some(b)) = (body.get(o..o + 4), body.get(o + 4..o + 8)) {
            s.pid = Some(e.u32(a.try_into().unwrap_or([0; 4])) as i32);
            s.tid = Some(e.u32(b.try_into().unwrap_or([0; 4])) as i32);
        }
    }
    if p.cpu != ABSENT {
        let o = usize::from(p.cpu);
        if let (Some(a), Some(b)) = (body.get(o..o + 4), body.get(o + 4..o + 8)) {
            s.cpu = Some(e.u32(a.try_into().unwrap_or([0; 4])));
            s.cpu_res = Some(e.u32(b.try_into().unwrap_or([0; 4])));
        }
    }
    if !l.has_variable {
        return Ok(s);
    }
    let st = l.sample_type;
    let mut r = Reader::new(
        body.get(plen..).unwrap_or(&[]),
        e,
        8 + plen,
        Some(PERF_RECORD_SAMPLE),
    );
    if st & PERF_SAMPLE_READ != 0 {
        s.read = Some(ReadValues::parse(&mut r, l)?);
    }
    if st & PERF_SAMPLE_CALLCHAIN != 0 {
        let nr = r.u64("callchain.nr")?;
        let ips = r.array_of(nr, 8, "callchain.ips[nr]")?;
        s.callchain = Some(Callchain { ips, endian: e });
    }
    if st & PERF_SAMPLE_RAW != 0 {
        let size = r.u32("raw.size")?;
        s.raw = Some(r.bytes(u64::from(size), "raw.data[size]")?);
        r.align8();
    }
    if st & PERF_SAMPLE_BRANCH_STACK != 0 {
        let nr = r.u64("branch_stack.nr")?;
        let hw_idx = if l.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX != 0 {
            Some(r.u64("branch_stack.hw_idx")?)
        } else {
            None
        };
        let entries = r.array_of(nr, 24, "branch_stack.lbr[nr]")?;
        let counters = if l.branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS != 0 {
            Some(r.array_of(nr, 8, "branch_stack.cntr[nr]")?)
        } else {
            None
        };
        s.branch_stack = Some(BranchStack {
            hw_idx,
            entries,
            counters,
            endian: e,
        });
    }
    if st & PERF_SAMPLE_REGS_USER != 0 {
        s.regs_user = Some(Regs::parse(
            &mut r,
            l.regs_user_mask,
            l.regs_user_count,
            "regs_user.abi",
            "regs_user.regs[weight(sample_regs_user)]",
        )?);
    }
    if st & PERF_SAMPLE_STACK_USER != 0 {
        let size = r.u64("stack_user.size")?;
        let data = r.bytes(size, "stack_user.data[size]")?;
        r.align8();
        let dyn_size = if size != 0 {
            Some(r.u64("stack_user.dyn_size")?)
        } else {
            None
        };
        s.stack_user = Some(StackUser { data, dyn_size });
    }
    if st & PERF_SAMPLE_WEIGHT_TYPE != 0 {
        let w = r.u64("weight")?;
        s.weight = Some(w);
        if st & PERF_SAMPLE_WEIGHT_STRUCT != 0 {
            s.weight_struct = Some(WeightStruct::from_full(w));
        }
    }
    if st & PERF_SAMPLE_DATA_SRC != 0 {
        s.data_src = Some(r.u64("data_src")?);
    }
    if st & PERF_SAMPLE_TRANSACTION != 0 {
        s.transaction = Some(r.u64("transaction")?);
    }
    if st & PERF_SAMPLE_REGS_INTR != 0 {
        s.regs_intr = Some(Regs::parse(
            &mut r,
            l.regs_intr_mask,
            l.regs_intr_count,
            "regs_intr.abi",
            "regs_intr.regs[weight(sample_regs_intr)]",
        )?);
    }
    if st & PERF_SAMPLE_PHYS_ADDR != 0 {
        s.phys_addr = Some(r.u64("phys_addr")?);
    }
    if st & PERF_SAMPLE_CGROUP != 0 {
        s.cgroup = Some(r.u64("cgroup")?);
    }
    if st & PERF_SAMPLE_DATA_PAGE_SIZE != 0 {
        s.data_page_size = Some(r.u64("data_page_size")?);
    }
    if st & PERF_SAMPLE_CODE_PAGE_SIZE != 0 {
        s.code_page_size = Some(r.u64("code_page_size")?);
    }
    if st & PERF_SAMPLE_AUX != 0 {
        let size = r.u64("aux.size")?;
        s.aux = Some(r.bytes(size, "aux.data[size]")?);
        r.align8();
    }
    Ok(s)
}
