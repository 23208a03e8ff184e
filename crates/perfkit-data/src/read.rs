//! [`PerfData`]: the reader.
//!
//! # Streaming
//!
//! Opening a file reads only its header, attrs (with ids) and feature sections, with
//! positioned reads (`pread`) checked against the file's length before anything is
//! allocated. The data section is then read front to back through one fixed 256 KiB
//! buffer. Records are put in time order the way perf's `ordered_events` does it: kernel
//! records with a timestamp are queued; at each `FINISHED_ROUND` the queue is flushed up
//! to the largest timestamp seen before the *previous* round (a pass over the ring buffers
//! can still hold older records from a CPU that was read late), and everything is flushed
//! at the end. Records without a timestamp (time 0, such as perf's synthesized COMM/MMAP)
//! and perf's own records go out at once. So memory is bounded by two rounds, not by the
//! file; a file without rounds is flushed whole whenever the queue passes
//! [`MAX_QUEUED_BYTES`].
//!
//! Pipe mode (`perf record -o -`) from a non-seekable stream is read once: the header
//! records (HEADER_ATTR, HEADER_FEATURE, EVENT_UPDATE, TRACING_DATA, ...) up to the first
//! kernel record are read at open, the rest when the records are walked.
//!
//! No `mmap` (and so no `memmap2`): a file being written or truncated under a mapping
//! kills the reader with SIGBUS, and this crate forbids `unsafe`; a copy through a
//! 256 KiB buffer costs little next to decoding.

use crate::error::ReadError;
use crate::features::{Cursor, Features};
use perfkit_records::{Endian, MultiParser, ParsedRecord, RawData};
use perfkit_sys::{self as sys, perf_event_attr};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

/// One event of the file: its attr (in native form), the ids of its instances, its name.
#[derive(Clone, Debug)]
pub struct EventAttr {
    /// The attr.
    pub attr: perf_event_attr,
    /// Ids of the event's instances (to match samples).
    pub ids: Vec<u64>,
    /// Name (from EVENT_DESC or EVENT_UPDATE; else derived from the attr).
    pub name: String,
}

/// A record delivered by [`PerfData::for_each`].
#[allow(
    clippy::large_enum_variant,
    reason = "delivered by reference to a callback, never stored"
)]
#[derive(Debug)]
#[non_exhaustive]
pub enum Item<'a> {
    /// A kernel record, decoded, with the index of its event's attr.
    Event {
        /// Index into [`PerfData::attrs`].
        attr: usize,
        /// The record.
        record: ParsedRecord<'a>,
    },
    /// One of perf's own records (type 64 and up), raw. HEADER_ATTR and HEADER_FEATURE
    /// (pipe mode) are not delivered: they are in [`PerfData::attrs`] and
    /// [`PerfData::features`]; COMPRESSED records are delivered decompressed, as the
    /// records they hold; FINISHED_ROUND is used for ordering, then delivered.
    User {
        /// `PERF_RECORD_*` type.
        type_: u32,
        /// Header misc.
        misc: u16,
        /// The body after the 8-byte header.
        body: &'a [u8],
        /// Bytes that follow the record outside its size: the trace of `AUXTRACE`, the
        /// tracing data of `HEADER_TRACING_DATA` (empty when larger than
        /// [`MAX_PAYLOAD`]).
        payload: &'a [u8],
    },
    /// A kernel record as it is in the file, not decoded: only
    /// [`PerfData::for_each_unparsed`] delivers these (decode it with [`parse_any`]).
    Unparsed {
        /// Where the record is in the file (of its COMPRESSED record, for one inside).
        offset: u64,
        /// `PERF_RECORD_*` type.
        type_: u32,
        /// Header misc.
        misc: u16,
        /// The body after the 8-byte header.
        body: &'a [u8],
    },
}

/// Largest payload (after AUXTRACE or HEADER_TRACING_DATA records) handed to a callback;
/// larger ones are skipped.
pub const MAX_PAYLOAD: u64 = 64 << 20;

/// Records queued for time ordering beyond this many bytes are flushed whatever their
/// time (only files without FINISHED_ROUND records get there).
pub const MAX_QUEUED_BYTES: usize = 256 << 20;

enum Source {
    Memory(Vec<u8>),
    File(File, u64),
    /// A non-seekable pipe-mode stream: the bytes read at open, then the rest (read once).
    Stream {
        prefix: Vec<u8>,
        rest: Mutex<Option<Box<dyn Read + Send>>>,
    },
}

impl Source {
    /// `len` bytes at `off`, checked against the source's length before allocating.
    fn read_at(&self, off: u64, len: u64, what: &str) -> Result<Vec<u8>, ReadError> {
        let total = match self {
            Source::Memory(b) => b.len() as u64,
            Source::File(_, n) => *n,
            Source::Stream { prefix, .. } => prefix.len() as u64,
        };
        let end = off
            .checked_add(len)
            .filter(|&e| e <= total)
            .ok_or_else(|| ReadError::truncated(off, what, len, total.saturating_sub(off)))?;
        match self {
            Source::Memory(b) => Ok(b[off as usize..end as usize].to_vec()),
            Source::Stream { prefix, .. } => Ok(prefix[off as usize..end as usize].to_vec()),
            Source::File(f, _) => {
                let mut v = vec![0u8; len as usize];
                f.read_exact_at(&mut v, off)
                    .map_err(|e| ReadError::io(off, format!("cannot read {what}"), e))?;
                Ok(v)
            }
        }
    }
}

/// The start of the warning about a header never finished (data size 0), as perf words it;
/// [`PerfData::open`] names the file in it.
const UNFINISHED: &str = "WARNING: The file's data size field is 0 which is unexpected";

/// A perf.data file: header, attrs and features read; records read when walked.
pub struct PerfData {
    source: Source,
    /// Byte order of the file.
    pub endian: Endian,
    /// Pipe mode (`perf record -o -`).
    pub pipe: bool,
    /// The events.
    pub attrs: Vec<EventAttr>,
    /// The feature sections.
    pub features: Features,
    data: std::ops::Range<u64>,
    /// The feature bits set in a file-mode header (`HEADER_*`, ascending; empty in pipe
    /// mode, where features come as records).
    pub feature_bits: Vec<usize>,
    /// Things read but not understood (unknown feature bits, an unsupported compression).
    pub warnings: Vec<String>,
}

const HEADER_SIZE: usize = 104;
const PIPE_HEADER_SIZE: usize = 16;
const BUF_SIZE: usize = 256 << 10;

fn rd32(b: &[u8], off: usize, e: Endian) -> Result<u32, ReadError> {
    Cursor::new(b.get(off..).unwrap_or(&[]), e)
        .u32()
        .ok_or_else(|| {
            ReadError::truncated(off as u64, "a u32", 4, b.len().saturating_sub(off) as u64)
        })
}

fn rd64(b: &[u8], off: usize, e: Endian) -> Result<u64, ReadError> {
    Cursor::new(b.get(off..).unwrap_or(&[]), e)
        .u64()
        .ok_or_else(|| {
            ReadError::truncated(off as u64, "a u64", 8, b.len().saturating_sub(off) as u64)
        })
}

/// An attr from file bytes (any published size) in the file's byte order, in native form.
pub(crate) fn attr_from(b: &[u8], e: Endian) -> perf_event_attr {
    let mut buf = [0u8; 136];
    let n = b.len().min(136);
    buf[..n].copy_from_slice(&b[..n]);
    let u16_ = |o: usize| {
        let a = [buf[o], buf[o + 1]];
        match e {
            Endian::Little => u16::from_le_bytes(a),
            Endian::Big => u16::from_be_bytes(a),
        }
    };
    let u32_ = |o: usize| rd32(&buf, o, e).unwrap_or(0);
    let u64_ = |o: usize| rd64(&buf, o, e).unwrap_or(0);
    let mut a = perf_event_attr::new();
    a.type_ = u32_(0);
    a.size = u32_(4);
    a.config = u64_(8);
    a.sample_period = u64_(16);
    a.sample_type = u64_(24);
    a.read_format = u64_(32);
    a.flags = u64_(40);
    if e != Endian::NATIVE {
        // C bit-fields are allocated from the other end in the other byte order; the
        // two-bit precise_ip field also has its bits swapped by the reversal.
        let f = a.flags.reverse_bits();
        let (b15, b16) = ((f >> 15) & 1, (f >> 16) & 1);
        a.flags = (f & !(3 << 15)) | (b15 << 16) | (b16 << 15);
    }
    a.wakeup_events = u32_(48);
    a.bp_type = u32_(52);
    a.config1 = u64_(56);
    a.config2 = u64_(64);
    a.branch_sample_type = u64_(72);
    a.sample_regs_user = u64_(80);
    a.sample_stack_user = u32_(88);
    a.clockid = u32_(92) as i32;
    a.sample_regs_intr = u64_(96);
    a.aux_watermark = u32_(104);
    a.sample_max_stack = u16_(108);
    a.aux_sample_size = u32_(112);
    a.aux_action = u32_(116);
    a.sig_data = u64_(120);
    a.config3 = u64_(128);
    a
}

/// Bytes of payload that follow some of perf's records outside their header size.
fn trailing_payload(type_: u32, body: &[u8], e: Endian) -> u64 {
    match type_ {
        sys::PERF_RECORD_AUXTRACE => rd64(body, 0, e).unwrap_or(0),
        sys::PERF_RECORD_HEADER_TRACING_DATA => {
            u64::from(rd32(body, 0, e).unwrap_or(0)).next_multiple_of(8)
        }
        _ => 0,
    }
}

enum Input<'s> {
    Slice(&'s [u8]),
    File(&'s File),
    Stream {
        prefix: &'s [u8],
        rest: Box<dyn Read + Send>,
    },
}

/// Sequential reader of records through a fixed buffer.
struct Feeder<'s> {
    input: Input<'s>,
    /// Absolute offset of the next byte to fetch.
    next: u64,
    /// Absolute end (`u64::MAX`: a stream, until end of file).
    end: u64,
    buf: Vec<u8>,
    lo: usize,
    hi: usize,
    /// Absolute offset of `buf[0]`.
    base: u64,
    e: Endian,
    /// Copy of every byte fetched (pipe header scan of a stream).
    tee: Option<Vec<u8>>,
}

/// A record header as read by a [`Feeder`].
#[derive(Clone, Copy)]
struct Hdr {
    off: u64,
    type_: u32,
    misc: u16,
    size: usize,
}

impl<'s> Feeder<'s> {
    fn new(input: Input<'s>, start: u64, end: u64, e: Endian) -> Self {
        Feeder {
            input,
            next: start,
            end,
            buf: vec![0; BUF_SIZE],
            lo: 0,
            hi: 0,
            base: start,
            e,
            tee: None,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.lo as u64
    }

    fn fetch(&mut self) -> std::io::Result<usize> {
        let room = self.buf.len() - self.hi;
        let want = (room as u64).min(self.end.saturating_sub(self.next)) as usize;
        if want == 0 {
            return Ok(0);
        }
        let dst = &mut self.buf[self.hi..self.hi + want];
        let n = match &mut self.input {
            Input::Slice(s) => {
                let src = usize::try_from(self.next)
                    .ok()
                    .and_then(|at| s.get(at..))
                    .unwrap_or(&[]);
                let n = src.len().min(want);
                dst[..n].copy_from_slice(&src[..n]);
                n
            }
            Input::File(f) => loop {
                match f.read_at(dst, self.next) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    r => break r?,
                }
            },
            Input::Stream { prefix, rest } => {
                if let Some(p) = usize::try_from(self.next)
                    .ok()
                    .and_then(|at| prefix.get(at..))
                    .filter(|p| !p.is_empty())
                {
                    let n = p.len().min(want);
                    dst[..n].copy_from_slice(&p[..n]);
                    n
                } else {
                    loop {
                        match rest.read(dst) {
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            r => break r?,
                        }
                    }
                }
            }
        };
        if let Some(t) = &mut self.tee {
            t.extend_from_slice(&dst[..n]);
        }
        self.hi += n;
        self.next += n as u64;
        Ok(n)
    }

    /// Make `need` (at most the buffer size) bytes available; returns how many are.
    fn ensure(&mut self, need: usize) -> Result<usize, ReadError> {
        while self.hi - self.lo < need {
            if self.buf.len() - self.lo < need {
                self.buf.copy_within(self.lo..self.hi, 0);
                self.base += self.lo as u64;
                self.hi -= self.lo;
                self.lo = 0;
            }
            let n = self.fetch().map_err(|e| {
                ReadError::io(self.base + self.hi as u64, "cannot read the data", e)
            })?;
            if n == 0 {
                break;
            }
        }
        Ok(self.hi - self.lo)
    }

    /// The next record's header; its bytes are then [`Self::bytes`] until [`Self::consume`].
    fn peek(&mut self) -> Result<Option<Hdr>, ReadError> {
        let avail = self.ensure(8)?;
        let off = self.offset();
        if avail == 0 {
            return Ok(None);
        }
        if avail < 8 {
            return Err(ReadError::truncated(
                off,
                "a record header",
                8,
                avail as u64,
            ));
        }
        let b = &self.buf[self.lo..];
        let (Ok(type_), Ok(w1)) = (rd32(b, 0, self.e), rd32(b, 4, self.e)) else {
            return Err(ReadError::truncated(
                off,
                "a record header",
                8,
                avail as u64,
            ));
        };
        let (misc, size) = split_misc_size(w1, self.e);
        if size < 8 {
            return Err(ReadError::invalid(
                off,
                format!("record of type {type_} has an impossible size {size}"),
            ));
        }
        let avail = self.ensure(size)?;
        if avail < size {
            return Err(ReadError::truncated(
                off,
                format!("record of type {type_}"),
                size as u64,
                avail as u64,
            ));
        }
        Ok(Some(Hdr {
            off,
            type_,
            misc,
            size,
        }))
    }

    fn bytes(&self, size: usize) -> &[u8] {
        &self.buf[self.lo..self.lo + size]
    }

    fn consume(&mut self, n: usize) {
        self.lo += n;
    }

    /// Read (into `out`, if given) or skip `n` bytes.
    fn payload(&mut self, n: u64, mut out: Option<&mut Vec<u8>>) -> Result<(), ReadError> {
        let at = self.offset();
        let mut left = n;
        while left > 0 {
            let avail = self.ensure(1)?;
            if avail == 0 {
                return Err(ReadError::truncated(
                    at,
                    "the payload after a record",
                    n,
                    n - left,
                ));
            }
            let k = (avail as u64).min(left) as usize;
            if let Some(o) = out.as_deref_mut() {
                o.extend_from_slice(&self.buf[self.lo..self.lo + k]);
            }
            self.lo += k;
            left -= k as u64;
        }
        Ok(())
    }
}

/// The byte order of a file from its first 16 bytes (magic and header size).
fn detect_endian(head: &[u8]) -> Result<Endian, ReadError> {
    let magic = head.get(..8).unwrap_or(head);
    // The magic is the u64 "PERFILE2" written in the writer's byte order: these bytes in
    // this order mean a little-endian writer, reversed a big-endian one.
    match magic {
        b"PERFILE2" => Ok(Endian::Little),
        b"2ELIFREP" => Ok(Endian::Big),
        // Version 1 wrote its magic as a string, which says nothing of the byte order:
        // the header size does, as perf tells (the file header with or without the
        // feature bitmap).
        b"PERFFILE" => {
            let size = head.get(8..16).ok_or(ReadError::Version1)?;
            let size: [u8; 8] = size.try_into().map_err(|_| ReadError::Version1)?;
            let plausible = |n: u64| n == HEADER_SIZE as u64 || n == HEADER_SIZE_V1 as u64;
            if plausible(u64::from_le_bytes(size)) {
                Ok(Endian::Little)
            } else if plausible(u64::from_be_bytes(size)) {
                Ok(Endian::Big)
            } else {
                Err(ReadError::Version1)
            }
        }
        _ => Err(ReadError::NotPerfData {
            magic: magic.to_vec(),
        }),
    }
}

/// The version-1 file header without the feature bitmap (perf still reads it).
const HEADER_SIZE_V1: usize = 72;

fn is_pipe_header_record(type_: u32) -> bool {
    type_ >= sys::PERF_RECORD_USER_TYPE_START
        && !matches!(
            type_,
            sys::PERF_RECORD_FINISHED_ROUND
                | sys::PERF_RECORD_COMPRESSED
                | sys::PERF_RECORD_COMPRESSED2
                | sys::PERF_RECORD_FINISHED_INIT
                | sys::PERF_RECORD_AUXTRACE
        )
}

/// Largest prefix of header records read at open from a pipe-mode stream.
const MAX_PIPE_PREFIX: u64 = 256 << 20;

impl PerfData {
    /// Open a file (`-` = standard input). Only the header, attrs and features are read
    /// now; records are read by [`walk`](Self::walk) and [`for_each`](Self::for_each).
    pub fn open(path: &Path) -> Result<PerfData, ReadError> {
        if path.as_os_str() == "-" {
            return PerfData::from_reader(Box::new(std::io::stdin()));
        }
        let file = File::open(path).map_err(|e| ReadError::io(0, "cannot open the file", e))?;
        let len = file
            .metadata()
            .map_err(|e| ReadError::io(0, "cannot stat the file", e))?
            .len();
        let mut me = PerfData::from_source(Source::File(file, len))?;
        // perf names the file in its warning about an unfinished header.
        for w in &mut me.warnings {
            if w.starts_with(UNFINISHED) {
                *w = w.replacen(
                    UNFINISHED,
                    &format!(
                        "WARNING: The {} file's data size field is 0 which is unexpected",
                        path.display()
                    ),
                    1,
                );
            }
        }
        Ok(me)
    }

    /// Parse the header, attrs and features of a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfData, ReadError> {
        PerfData::from_source(Source::Memory(bytes))
    }

    /// Read from a stream (a pipe): pipe mode is read as it comes, once; a file-mode
    /// stream is read into memory first (its features come after the data).
    pub fn from_reader(mut r: Box<dyn Read + Send>) -> Result<PerfData, ReadError> {
        let mut head = Vec::new();
        (&mut r)
            .take(PIPE_HEADER_SIZE as u64)
            .read_to_end(&mut head)
            .map_err(|e| ReadError::io(0, "cannot read the header", e))?;
        if head.len() < 8 {
            return Err(ReadError::truncated(0, "the header", 8, head.len() as u64));
        }
        let e = detect_endian(&head)?;
        if rd64(&head, 8, e)? as usize != PIPE_HEADER_SIZE {
            r.read_to_end(&mut head)
                .map_err(|e| ReadError::io(head.len() as u64, "cannot read the input", e))?;
            return PerfData::from_bytes(head);
        }
        // Scan the header records, keeping every byte read for the data walk.
        let mut f = Feeder::new(
            Input::Stream {
                prefix: &[],
                rest: r,
            },
            PIPE_HEADER_SIZE as u64,
            u64::MAX,
            e,
        );
        f.tee = Some(head);
        let mut me = PerfData {
            source: Source::Memory(Vec::new()),
            endian: e,
            pipe: true,
            attrs: Vec::new(),
            features: Features::default(),
            data: PIPE_HEADER_SIZE as u64..u64::MAX,
            feature_bits: Vec::new(),
            warnings: Vec::new(),
        };
        me.scan_pipe_header(&mut f);
        let prefix = f.tee.take().unwrap_or_default();
        let Input::Stream { rest, .. } = f.input else {
            return Err(ReadError::StreamConsumed);
        };
        me.source = Source::Stream {
            prefix,
            rest: Mutex::new(Some(rest)),
        };
        me.finish_open()?;
        Ok(me)
    }

    fn from_source(source: Source) -> Result<PerfData, ReadError> {
        let head = source.read_at(0, PIPE_HEADER_SIZE as u64, "the file header")?;
        let endian = detect_endian(&head)?;
        let hsize = rd64(&head, 8, endian)? as usize;
        let mut me = PerfData {
            source,
            endian,
            pipe: hsize == PIPE_HEADER_SIZE,
            attrs: Vec::new(),
            features: Features::default(),
            data: 0..0,
            feature_bits: Vec::new(),
            warnings: Vec::new(),
        };
        if me.pipe {
            me.data = PIPE_HEADER_SIZE as u64..me.source_len();
            let input = me.input()?;
            let mut f = Feeder::new(input, me.data.start, me.data.end, endian);
            let mut tmp = PerfData {
                source: Source::Memory(Vec::new()),
                endian,
                pipe: true,
                attrs: Vec::new(),
                features: Features::default(),
                data: 0..0,
                feature_bits: Vec::new(),
                warnings: Vec::new(),
            };
            tmp.scan_pipe_header(&mut f);
            me.attrs = tmp.attrs;
            me.features = tmp.features;
            me.warnings = tmp.warnings;
        } else {
            if hsize < HEADER_SIZE && hsize != HEADER_SIZE_V1 {
                return Err(ReadError::invalid(
                    8,
                    format!("header size {hsize} is below {HEADER_SIZE}"),
                ));
            }
            me.read_file_header(hsize)?;
        }
        me.finish_open()?;
        Ok(me)
    }

    fn finish_open(&mut self) -> Result<(), ReadError> {
        self.apply_names();
        if self.attrs.is_empty() {
            return Err(ReadError::NoEvents);
        }
        Ok(())
    }

    fn source_len(&self) -> u64 {
        match &self.source {
            Source::Memory(b) => b.len() as u64,
            Source::File(_, n) => *n,
            Source::Stream { .. } => u64::MAX,
        }
    }

    fn input(&self) -> Result<Input<'_>, ReadError> {
        Ok(match &self.source {
            Source::Memory(b) => Input::Slice(b),
            Source::File(f, _) => Input::File(f),
            Source::Stream { prefix, rest } => {
                let rest = rest
                    .lock()
                    .ok()
                    .and_then(|mut g| g.take())
                    .ok_or(ReadError::StreamConsumed)?;
                Input::Stream { prefix, rest }
            }
        })
    }

    fn read_file_header(&mut self, hsize: usize) -> Result<(), ReadError> {
        let e = self.endian;
        let mut b = self
            .source
            .read_at(0, hsize.min(HEADER_SIZE) as u64, "the file header")?;
        // A version-1 header without the feature bitmap: no features.
        b.resize(HEADER_SIZE, 0);
        let attr_size = rd64(&b, 16, e)?;
        let (attrs_off, attrs_len) = (rd64(&b, 24, e)?, rd64(&b, 32, e)?);
        let (data_off, mut data_len) = (rd64(&b, 40, e)?, rd64(&b, 48, e)?);
        if attr_size < 16 + u64::from(sys::PERF_ATTR_SIZE_VER0) || attr_size > 4096 {
            return Err(ReadError::invalid(
                16,
                format!("attr_size {attr_size} is impossible"),
            ));
        }
        let attrs_raw = self
            .source
            .read_at(attrs_off, attrs_len, "the attrs section")?;
        let total = self.source_len();
        let mut attrs = Vec::new();
        for (i, raw) in attrs_raw.chunks_exact(attr_size as usize).enumerate() {
            let at = attrs_off + i as u64 * attr_size;
            let n = raw.len();
            let attr = attr_from(&raw[..n - 16], e);
            let ids_off = rd64(raw, n - 16, e)?;
            let ids_len = rd64(raw, n - 8, e)?;
            let ids_bytes =
                self.source
                    .read_at(ids_off, ids_len, &format!("the ids of attr {i} (at {at})"))?;
            let ids = ids_bytes
                .chunks_exact(8)
                .filter_map(|c| Cursor::new(c, e).u64())
                .collect();
            attrs.push(EventAttr {
                attr,
                ids,
                name: String::new(),
            });
        }
        // The feature bitmap is an array of four unsigned longs in the file's order.
        let bits: Vec<usize> = (0..256usize)
            .filter(|bit| rd64(&b, 72 + 8 * (bit / 64), e).is_ok_and(|w| w >> (bit % 64) & 1 != 0))
            .collect();
        let mut bits = bits;
        if data_len == 0 && total > data_off {
            // A writer that died before its first header update (killed, disk full): the
            // data runs to the end of the file, and whatever the bitmap says, no feature
            // index was written after it (reading one would take sample bytes for it).
            // perf's words, then what is done about it.
            self.warnings.push(format!(
                "{UNFINISHED}. Was the 'perf record' command properly terminated? Reading \
                 the records to the end of the file, without its features"
            ));
            data_len = total - data_off;
            bits.clear();
        }
        let data_end = data_off.saturating_add(data_len);
        if data_end > total {
            self.warnings.push(format!(
                "the data section should end at byte {data_end} but the file has {total} bytes: it was cut short"
            ));
        }
        self.data = data_off.min(total)..data_end.min(total);
        // Feature index after the data: {offset, size} per set bit, ascending.
        let mut features = Features::default();
        let index = self
            .source
            .read_at(data_end, 16 * bits.len() as u64, "the feature index");
        match index {
            Err(_) if !bits.is_empty() => self
                .warnings
                .push("the feature sections are missing (the file was not finished)".into()),
            Err(_) => {}
            Ok(index) => {
                for (i, &bit) in bits.iter().enumerate() {
                    let (Ok(off), Ok(size)) =
                        (rd64(&index, i * 16, e), rd64(&index, i * 16 + 8, e))
                    else {
                        break;
                    };
                    match self.source.read_at(off, size, "a feature section") {
                        Ok(sec) => features.add(bit, &sec, e),
                        Err(err) => features.unparsed.push((bit, err.to_string())),
                    }
                }
            }
        }
        self.features = features;
        self.feature_bits = bits;
        self.attrs = attrs;
        Ok(())
    }

    /// Pipe mode: attrs and features come as HEADER_ATTR / HEADER_FEATURE records before
    /// the first kernel record; EVENT_UPDATE records name the events.
    fn scan_pipe_header(&mut self, f: &mut Feeder<'_>) {
        let e = self.endian;
        let mut names = Vec::new();
        loop {
            let h = match f.peek() {
                Ok(Some(h)) if is_pipe_header_record(h.type_) => h,
                Ok(_) => break,
                Err(err) => {
                    self.warnings.push(format!("the stream is cut short {err}"));
                    break;
                }
            };
            if h.off > MAX_PIPE_PREFIX {
                break;
            }
            let body = &f.bytes(h.size)[8..];
            match h.type_ {
                sys::PERF_RECORD_HEADER_ATTR => {
                    let size = rd32(body, 4, e).unwrap_or(0) as usize;
                    let size = if size == 0 {
                        sys::PERF_ATTR_SIZE_VER0 as usize
                    } else {
                        size
                    };
                    let attr = attr_from(body.get(..size).unwrap_or(body), e);
                    let ids = body
                        .get(size..)
                        .unwrap_or(&[])
                        .chunks_exact(8)
                        .filter_map(|c| Cursor::new(c, e).u64())
                        .collect();
                    self.attrs.push(EventAttr {
                        attr,
                        ids,
                        name: String::new(),
                    });
                }
                sys::PERF_RECORD_HEADER_FEATURE => {
                    if let Ok(bit) = rd64(body, 0, e) {
                        self.features.add(bit as usize, &body[8..], e);
                    }
                }
                // EVENT_UPDATE: u64 type (0 unit, 1 scale, 2 name, 3 cpus), u64 id, payload.
                sys::PERF_RECORD_EVENT_UPDATE => {
                    if rd64(body, 0, e).ok() == Some(2)
                        && let Ok(id) = rd64(body, 8, e)
                    {
                        let s = &body[16.min(body.len())..];
                        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
                        names.push((id, String::from_utf8_lossy(&s[..end]).into_owned()));
                    }
                }
                _ => {}
            }
            let extra = trailing_payload(h.type_, body, e);
            let is_tracing = h.type_ == sys::PERF_RECORD_HEADER_TRACING_DATA;
            f.consume(h.size);
            let mut tracing = Vec::new();
            let keep = is_tracing && extra <= MAX_PAYLOAD;
            if let Err(err) = f.payload(extra, keep.then_some(&mut tracing)) {
                self.warnings.push(format!("the stream is cut short {err}"));
                break;
            }
            if keep {
                self.features.tracing_data = Some(tracing);
            }
        }
        for (id, name) in names {
            if let Some(a) = self.attrs.iter_mut().find(|a| a.ids.contains(&id)) {
                a.name = name;
            }
        }
    }

    fn apply_names(&mut self) {
        for (i, a) in self.attrs.iter_mut().enumerate() {
            if a.name.is_empty() {
                a.name = self
                    .features
                    .event_desc
                    .get(i)
                    .map(|(n, _)| n.clone())
                    .unwrap_or_default();
            }
            if a.name.is_empty() {
                a.name = fallback_name(&a.attr);
            }
        }
    }

    /// A record parser for this file's attrs (samples matched by id).
    pub fn parser(&self) -> Result<MultiParser, ReadError> {
        MultiParser::new(
            self.endian,
            self.attrs.iter().map(|a| (a.ids.as_slice(), &a.attr)),
        )
        .map_err(ReadError::Ids)
    }

    /// The data section's byte range as the file header gives it (bounded by the file's
    /// length; from the end of the pipe header to `u64::MAX` in pipe mode).
    pub fn data_section(&self) -> std::ops::Range<u64> {
        self.data.clone()
    }

    /// Size of the data section (0 for a stream, whose size is not known).
    pub fn data_len(&self) -> usize {
        if matches!(self.source, Source::Stream { .. }) {
            0
        } else {
            (self.data.end - self.data.start) as usize
        }
    }

    /// Every record of the data section in file order (compressed records as they are):
    /// `(offset, type, misc, body)`. Stops with an error at the first malformed record.
    pub fn walk(
        &self,
        mut f: impl FnMut(usize, u32, u16, &[u8]) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let e = self.endian;
        let mut feed = Feeder::new(self.input()?, self.data.start, self.data.end, e);
        while let Some(h) = feed.peek()? {
            let body = &feed.bytes(h.size)[8..];
            f(h.off as usize, h.type_, h.misc, body)?;
            let extra = trailing_payload(h.type_, body, e);
            feed.consume(h.size);
            feed.payload(extra, None)?;
        }
        Ok(())
    }

    /// Every record of the data section in file order like [`walk`](Self::walk), but with
    /// the records inside COMPRESSED ones delivered one by one, decompressed (offset: the
    /// COMPRESSED record's): what `perf inject` copies from a `-z` recording.
    pub fn walk_decompressed(
        &self,
        mut f: impl FnMut(usize, u32, u16, &[u8]) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        let e = self.endian;
        let mut zstd = None::<zstd::stream::raw::Decoder<'static>>;
        let mut pending: Vec<u8> = Vec::new();
        let mut zbuf = Vec::new();
        self.walk(|off, type_, misc, body| {
            if !matches!(
                type_,
                sys::PERF_RECORD_COMPRESSED | sys::PERF_RECORD_COMPRESSED2
            ) {
                return f(off, type_, misc, body);
            }
            let off64 = off as u64;
            let data = if type_ == sys::PERF_RECORD_COMPRESSED2 {
                let n = rd64(body, 0, e)? as usize;
                body.get(8..8usize.saturating_add(n)).ok_or_else(|| {
                    ReadError::invalid(off64, "COMPRESSED2 data size runs past the record")
                })?
            } else {
                body
            };
            let dec = match &mut zstd {
                Some(d) => d,
                None => zstd.insert(zstd::stream::raw::Decoder::new().map_err(|source| {
                    ReadError::Decompress {
                        offset: off64,
                        source,
                    }
                })?),
            };
            decompress(dec, data, &mut zbuf, |out| {
                pending.extend_from_slice(out);
                // Whole records (8-byte header, then size - 8 bytes) from the front.
                let mut used = 0;
                while pending.len() - used >= 8 {
                    let size = match e {
                        Endian::Little => {
                            u16::from_le_bytes([pending[used + 6], pending[used + 7]])
                        }
                        Endian::Big => u16::from_be_bytes([pending[used + 6], pending[used + 7]]),
                    } as usize;
                    if size < 8 {
                        return Err(ReadError::invalid(
                            off64,
                            "a compressed record of size below 8",
                        ));
                    }
                    if pending.len() - used < size {
                        break;
                    }
                    let t = rd32(&pending, used, e)?;
                    let m = match e {
                        Endian::Little => {
                            u16::from_le_bytes([pending[used + 4], pending[used + 5]])
                        }
                        Endian::Big => u16::from_be_bytes([pending[used + 4], pending[used + 5]]),
                    };
                    f(off, t, m, &pending[used + 8..used + size])?;
                    used += size;
                }
                pending.drain(..used);
                Ok(())
            })
            .map_err(|err| match err {
                Dec::Zstd(source) => ReadError::Decompress {
                    offset: off64,
                    source,
                },
                Dec::Read(err) => err,
            })
        })?;
        if !pending.is_empty() {
            return Err(ReadError::invalid(
                self.data.end,
                format!(
                    "the compressed data ends inside a record ({} bytes left over)",
                    pending.len()
                ),
            ));
        }
        Ok(())
    }

    /// The times of the first and last sample (None: no sample has a time), what perf's
    /// `--time` percent ranges count from: the header's `HEADER_SAMPLE_TIME` when it has
    /// one (perf's source), else one pass over the samples that reads only their
    /// timestamps (a file without the feature, a pipe; a stream must have been read into
    /// memory, see [`from_bytes`](Self::from_bytes)). Samples with time 0 have none.
    pub fn sample_span(&self) -> Result<Option<(u64, u64)>, ReadError> {
        if let Some((first, last)) = self.features.sample_time
            && first != 0
            && first <= last
        {
            return Ok(Some((first, last)));
        }
        let parser = self.parser()?;
        let at: Vec<Option<usize>> = self
            .attrs
            .iter()
            .map(|a| time_positions(&a.attr).0)
            .collect();
        let e = self.endian;
        let (mut first, mut last) = (u64::MAX, 0);
        self.walk_decompressed(|_, type_, _, body| {
            if type_ != sys::PERF_RECORD_SAMPLE {
                return Ok(());
            }
            let idx = parser
                .attr_index(type_, &RawData::Single(body))
                .unwrap_or(usize::MAX);
            if let Some(t) = at
                .get(idx)
                .copied()
                .flatten()
                .and_then(|at| rd64(body, at, e).ok())
                .filter(|&t| t != 0)
            {
                first = first.min(t);
                last = last.max(t);
            }
            Ok(())
        })?;
        Ok((first <= last).then_some((first, last)))
    }

    /// Every record in time order, decompressed, decoded, as perf delivers them (see the
    /// module docs). A record that fails to decode ends the walk with an error after
    /// everything before it was delivered. `progress` is called with the bytes of the
    /// data section done so far.
    pub fn for_each(
        &self,
        f: impl FnMut(Item<'_>),
        progress: impl FnMut(usize),
    ) -> Result<(), ReadError> {
        self.ordered(true, f, progress)
    }

    /// [`for_each`](Self::for_each) with kernel records left undecoded
    /// ([`Item::Unparsed`]), in the same order: a reader that decodes them on other
    /// threads. Records that fail to decode are delivered too (decoding is the caller's).
    pub fn for_each_unparsed(
        &self,
        f: impl FnMut(Item<'_>),
        progress: impl FnMut(usize),
    ) -> Result<(), ReadError> {
        self.ordered(false, f, progress)
    }

    fn ordered(
        &self,
        parse: bool,
        mut f: impl FnMut(Item<'_>),
        mut progress: impl FnMut(usize),
    ) -> Result<(), ReadError> {
        let parser = self.parser()?;
        let e = self.endian;
        let mut feed = Feeder::new(self.input()?, self.data.start, self.data.end, e);
        let mut sink = Sink::new(&parser, e, self.attrs.iter().map(|a| &a.attr));
        sink.parse = parse;
        let mut zstd = None::<zstd::stream::raw::Decoder<'static>>;
        let mut pending: Vec<u8> = Vec::new();
        let mut zbuf = Vec::new();
        let mut payload = Vec::new();
        let mut last_progress = 0u64;
        let result = (|| -> Result<(), ReadError> {
            while let Some(h) = feed.peek()? {
                if h.off - last_progress >= 1 << 20 {
                    last_progress = h.off;
                    progress((h.off - self.data.start) as usize);
                }
                let rec = feed.bytes(h.size);
                let body = &rec[8..];
                match h.type_ {
                    sys::PERF_RECORD_COMPRESSED | sys::PERF_RECORD_COMPRESSED2 => {
                        let data = if h.type_ == sys::PERF_RECORD_COMPRESSED2 {
                            let n = rd64(body, 0, e)? as usize;
                            body.get(8..8usize.saturating_add(n)).ok_or_else(|| {
                                ReadError::invalid(
                                    h.off,
                                    "COMPRESSED2 data size runs past the record",
                                )
                            })?
                        } else {
                            body
                        };
                        let dec = match &mut zstd {
                            Some(d) => d,
                            None => zstd.insert(zstd::stream::raw::Decoder::new().map_err(
                                |source| ReadError::Decompress {
                                    offset: h.off,
                                    source,
                                },
                            )?),
                        };
                        decompress(dec, data, &mut zbuf, |out| {
                            pending.extend_from_slice(out);
                            let used = sink.records_in(&pending, h.off, &mut f)?;
                            pending.drain(..used);
                            Ok(())
                        })
                        .map_err(|err| match err {
                            Dec::Zstd(source) => ReadError::Decompress {
                                offset: h.off,
                                source,
                            },
                            Dec::Read(err) => err,
                        })?;
                    }
                    sys::PERF_RECORD_HEADER_ATTR | sys::PERF_RECORD_HEADER_FEATURE => {}
                    _ => {
                        let extra = trailing_payload(h.type_, body, e);
                        if extra == 0 {
                            sink.record(h.off, h.type_, h.misc, rec, &[], &mut f)?;
                        } else {
                            // The record is copied out: the payload read reuses the buffer.
                            let rec = rec.to_vec();
                            feed.consume(h.size);
                            payload.clear();
                            let keep = extra <= MAX_PAYLOAD;
                            feed.payload(extra, keep.then_some(&mut payload))?;
                            sink.record(h.off, h.type_, h.misc, &rec, &payload, &mut f)?;
                            continue;
                        }
                    }
                }
                feed.consume(h.size);
            }
            if !pending.is_empty() {
                return Err(ReadError::invalid(
                    feed.offset(),
                    format!(
                        "the compressed data ends inside a record ({} bytes left over)",
                        pending.len()
                    ),
                ));
            }
            Ok(())
        })();
        let flushed = sink.flush(u64::MAX, &mut f);
        result.and(flushed)
    }
}

/// perf's `ordered_events`: a queue of records with timestamps, in two arenas (the round
/// being read and the one before it).
struct Sink<'p> {
    parser: &'p MultiParser,
    e: Endian,
    /// Per attr: offset of TIME in a sample, distance of TIME from the end of another
    /// record's body (its `sample_id` trailer).
    times: Vec<(Option<usize>, Option<usize>)>,
    arenas: [Vec<u8>; 2],
    cur: usize,
    queue: Vec<Queued>,
    next_flush: u64,
    max_time: u64,
    /// Decode kernel records (else deliver them as [`Item::Unparsed`]).
    parse: bool,
}

#[derive(Clone, Copy)]
struct Queued {
    time: u64,
    file_off: u64,
    off: u32,
    arena: u32,
}

/// Where TIME sits in this attr's records (perf's `evlist__parse_sample_timestamp`).
fn time_positions(a: &perf_event_attr) -> (Option<usize>, Option<usize>) {
    let st = a.sample_type;
    let has = |bit: u64| usize::from(st & bit != 0);
    if st & sys::PERF_SAMPLE_TIME == 0 {
        return (None, None);
    }
    let sample = 8
        * (has(sys::PERF_SAMPLE_IDENTIFIER) + has(sys::PERF_SAMPLE_IP) + has(sys::PERF_SAMPLE_TID));
    let other = a.has(sys::attr_flags::SAMPLE_ID_ALL).then(|| {
        8 * (1
            + has(sys::PERF_SAMPLE_ID)
            + has(sys::PERF_SAMPLE_STREAM_ID)
            + has(sys::PERF_SAMPLE_CPU)
            + has(sys::PERF_SAMPLE_IDENTIFIER))
    });
    (Some(sample), other)
}

impl<'p> Sink<'p> {
    fn new<'a>(
        parser: &'p MultiParser,
        e: Endian,
        attrs: impl Iterator<Item = &'a perf_event_attr>,
    ) -> Self {
        Sink {
            parser,
            e,
            times: attrs.map(time_positions).collect(),
            arenas: [Vec::new(), Vec::new()],
            cur: 0,
            queue: Vec::new(),
            next_flush: 0,
            max_time: 0,
            parse: true,
        }
    }

    /// The timestamp of a kernel record (None or 0: none).
    fn time_of(&self, off: u64, type_: u32, body: &[u8]) -> Result<Option<u64>, ReadError> {
        let idx = match self.parser.attr_index(type_, &RawData::Single(body)) {
            Ok(i) => i,
            Err(err) if type_ == sys::PERF_RECORD_SAMPLE => {
                return Err(ReadError::Record {
                    offset: off,
                    source: err,
                });
            }
            // Non-sample records with an unknown id go to the first attr, as in perf.
            Err(_) => 0,
        };
        let Some(&(in_sample, from_end)) = self.times.get(idx) else {
            return Ok(None);
        };
        let at = if type_ == sys::PERF_RECORD_SAMPLE {
            in_sample
        } else {
            from_end.and_then(|k| body.len().checked_sub(k))
        };
        Ok(at.and_then(|at| rd64(body, at, self.e).ok()))
    }

    fn deliver(
        &self,
        off: u64,
        type_: u32,
        misc: u16,
        body: &[u8],
        f: &mut dyn FnMut(Item<'_>),
    ) -> Result<(), ReadError> {
        if !self.parse {
            f(Item::Unparsed {
                offset: off,
                type_,
                misc,
                body,
            });
            return Ok(());
        }
        let (attr, record) =
            parse_any(self.parser, type_, misc, body).map_err(|source| ReadError::Record {
                offset: off,
                source,
            })?;
        f(Item::Event { attr, record });
        Ok(())
    }

    /// One record (header included) at file offset `off`.
    fn record(
        &mut self,
        off: u64,
        type_: u32,
        misc: u16,
        rec: &[u8],
        payload: &[u8],
        f: &mut dyn FnMut(Item<'_>),
    ) -> Result<(), ReadError> {
        let body = &rec[8..];
        if type_ >= sys::PERF_RECORD_USER_TYPE_START {
            if type_ == sys::PERF_RECORD_FINISHED_ROUND {
                self.round(f)?;
            }
            f(Item::User {
                type_,
                misc,
                body,
                payload,
            });
            return Ok(());
        }
        match self.time_of(off, type_, body)? {
            None | Some(0) | Some(u64::MAX) => self.deliver(off, type_, misc, body, f),
            Some(time) => {
                if self.arenas[self.cur].len() + rec.len() > MAX_QUEUED_BYTES {
                    self.flush(u64::MAX, f)?;
                }
                let arena = &mut self.arenas[self.cur];
                self.queue.push(Queued {
                    time,
                    file_off: off,
                    off: arena.len() as u32,
                    arena: self.cur as u32,
                });
                arena.extend_from_slice(rec);
                self.max_time = self.max_time.max(time);
                Ok(())
            }
        }
    }

    /// The complete records at the start of `buf` (decompressed data of the record at
    /// `off`); returns the bytes used.
    fn records_in(
        &mut self,
        buf: &[u8],
        off: u64,
        f: &mut dyn FnMut(Item<'_>),
    ) -> Result<usize, ReadError> {
        let mut used = 0;
        while let (Ok(t), Ok(w1)) = (rd32(buf, used, self.e), rd32(buf, used + 4, self.e)) {
            let (m, size) = split_misc_size(w1, self.e);
            if size < 8 {
                return Err(ReadError::invalid(
                    off,
                    "a record in the compressed data has an impossible size",
                ));
            }
            let Some(rec) = buf.get(used..used + size) else {
                break;
            };
            if matches!(
                t,
                sys::PERF_RECORD_COMPRESSED
                    | sys::PERF_RECORD_COMPRESSED2
                    | sys::PERF_RECORD_AUXTRACE
                    | sys::PERF_RECORD_HEADER_TRACING_DATA
            ) {
                return Err(ReadError::invalid(
                    off,
                    format!("record type {t} cannot be inside compressed data"),
                ));
            }
            self.record(off, t, m, rec, &[], f)?;
            used += size;
        }
        Ok(used)
    }

    /// FINISHED_ROUND: flush what is older than the previous round's newest record.
    fn round(&mut self, f: &mut dyn FnMut(Item<'_>)) -> Result<(), ReadError> {
        let limit = self.next_flush;
        self.flush(limit, f)?;
        self.next_flush = self.max_time;
        // Every record of the other arena was at or below `limit`: it is free.
        let other = 1 - self.cur;
        if self.queue.iter().all(|q| q.arena as usize != other) {
            self.arenas[other].clear();
            self.cur = other;
        }
        Ok(())
    }

    /// Deliver queued records with time <= `limit`, oldest first.
    fn flush(&mut self, limit: u64, f: &mut dyn FnMut(Item<'_>)) -> Result<(), ReadError> {
        if !self.queue.is_sorted_by_key(|q| q.time) {
            self.queue.sort_by_key(|q| q.time);
        }
        let n = self.queue.partition_point(|q| q.time <= limit);
        let mut result = Ok(());
        for q in &self.queue[..n] {
            let arena = &self.arenas[q.arena as usize];
            let rec = &arena[q.off as usize..];
            let (Ok(type_), Ok(w1)) = (rd32(rec, 0, self.e), rd32(rec, 4, self.e)) else {
                continue;
            };
            let (misc, size) = split_misc_size(w1, self.e);
            let body = rec.get(8..size).unwrap_or(&[]);
            if let Err(err) = self.deliver(q.file_off, type_, misc, body, f) {
                result = Err(err);
                break;
            }
        }
        self.queue.drain(..n);
        if self.queue.is_empty() {
            self.arenas[0].clear();
            self.arenas[1].clear();
        }
        result
    }
}

enum Dec {
    Zstd(std::io::Error),
    Read(ReadError),
}

/// Decompress `data`, handing the output to `out` piece by piece (so a small record that
/// inflates hugely never sits in memory whole).
fn decompress(
    dec: &mut zstd::stream::raw::Decoder<'static>,
    data: &[u8],
    buf: &mut Vec<u8>,
    mut out: impl FnMut(&[u8]) -> Result<(), ReadError>,
) -> Result<(), Dec> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    let mut input = InBuffer::around(data);
    buf.resize(1 << 17, 0);
    loop {
        let mut ob = OutBuffer::around(&mut buf[..]);
        dec.run(&mut input, &mut ob).map_err(Dec::Zstd)?;
        let n = ob.pos();
        out(&buf[..n]).map_err(Dec::Read)?;
        if input.pos == data.len() && n < buf.len() {
            return Ok(());
        }
    }
}

/// Decode with the attr the record's id names; synthesized records (perf writes id 0)
/// and other unknown ids of non-sample records go to the first attr, as perf does.
pub fn parse_any<'b>(
    parser: &MultiParser,
    type_: u32,
    misc: u16,
    body: &'b [u8],
) -> Result<(usize, ParsedRecord<'b>), perfkit_records::ParseError> {
    match parser.parse(type_, misc, body) {
        Err(e)
            if type_ != sys::PERF_RECORD_SAMPLE
                && matches!(e.kind, perfkit_records::ParseErrorKind::UnknownId(_)) =>
        {
            let first = parser.parser(0).ok_or(e)?;
            Ok((0, first.parse(type_, misc, body)?))
        }
        r => r,
    }
}

fn split_misc_size(w1: u32, e: Endian) -> (u16, usize) {
    // The header is {u32 type; u16 misc; u16 size}: read as one u32 in the file's order,
    // misc is the low half on little-endian files and the high half on big-endian ones.
    match e {
        Endian::Little => ((w1 & 0xffff) as u16, (w1 >> 16) as usize),
        Endian::Big => ((w1 >> 16) as u16, (w1 & 0xffff) as usize),
    }
}

fn fallback_name(a: &perf_event_attr) -> String {
    let generic = match (a.type_, a.config) {
        (sys::PERF_TYPE_HARDWARE, 0) => "cycles",
        (sys::PERF_TYPE_HARDWARE, 1) => "instructions",
        (sys::PERF_TYPE_SOFTWARE, 0) => "cpu-clock",
        (sys::PERF_TYPE_SOFTWARE, 1) => "task-clock",
        (sys::PERF_TYPE_SOFTWARE, 2) => "page-faults",
        (sys::PERF_TYPE_SOFTWARE, 3) => "context-switches",
        _ => "",
    };
    if generic.is_empty() {
        format!("{}/config={:#x}/", a.type_, a.config)
    } else {
        generic.to_string()
    }
}
