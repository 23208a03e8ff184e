//! [`PerfData`]: the reader.

use crate::error::ReadError;
use crate::features::{Cursor, Features};
use perfkit_records::{Endian, MultiParser, ParsedRecord};
use perfkit_sys::{self as sys, perf_event_attr};
use std::path::Path;

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
pub enum Item<'a> {
    /// A kernel record, decoded, with the index of its event's attr.
    Event {
        /// Index into [`PerfData::attrs`].
        attr: usize,
        /// The record.
        record: ParsedRecord<'a>,
    },
    /// One of perf's own records (type 64 and up), raw.
    User {
        /// `PERF_RECORD_*` type.
        type_: u32,
        /// Header misc.
        misc: u16,
        /// The body after the 8-byte header.
        body: &'a [u8],
    },
}

/// A perf.data file, read into memory once; records are decoded on demand.
pub struct PerfData {
    bytes: Vec<u8>,
    /// Byte order of the file.
    pub endian: Endian,
    /// Pipe mode (`perf record -o -`).
    pub pipe: bool,
    /// The events.
    pub attrs: Vec<EventAttr>,
    /// The feature sections.
    pub features: Features,
    data: std::ops::Range<usize>,
    /// Things read but not understood (unknown feature bits, an unsupported compression).
    pub warnings: Vec<String>,
}

const HEADER_SIZE: usize = 104;
const PIPE_HEADER_SIZE: usize = 16;

fn rd32(b: &[u8], off: usize, e: Endian) -> Result<u32, ReadError> {
    Cursor::new(b.get(off..).unwrap_or(&[]), e)
        .u32()
        .ok_or_else(|| ReadError::at(off as u64, "truncated (4 bytes needed)"))
}

fn rd64(b: &[u8], off: usize, e: Endian) -> Result<u64, ReadError> {
    Cursor::new(b.get(off..).unwrap_or(&[]), e)
        .u64()
        .ok_or_else(|| ReadError::at(off as u64, "truncated (8 bytes needed)"))
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
fn trailing_payload(type_: u32, body: &[u8], e: Endian) -> usize {
    match type_ {
        sys::PERF_RECORD_AUXTRACE => rd64(body, 0, e).unwrap_or(0) as usize,
        sys::PERF_RECORD_HEADER_TRACING_DATA => {
            (rd32(body, 0, e).unwrap_or(0) as usize).next_multiple_of(8)
        }
        _ => 0,
    }
}

impl PerfData {
    /// Read a file (`-` = standard input).
    pub fn open(path: &Path) -> Result<PerfData, ReadError> {
        let bytes = if path.as_os_str() == "-" {
            let mut v = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut v)
                .map_err(|e| ReadError::at(0, format!("reading standard input: {e}")))?;
            v
        } else {
            std::fs::read(path).map_err(|e| ReadError::at(0, format!("cannot read: {e}")))?
        };
        PerfData::from_bytes(bytes)
    }

    /// Parse the header, attrs and features of a file held in memory.
    pub fn from_bytes(bytes: Vec<u8>) -> Result<PerfData, ReadError> {
        let magic = bytes
            .get(..8)
            .ok_or_else(|| ReadError::at(0, "empty file, or shorter than a header"))?;
        let endian = match magic {
            b"PERFILE2" => Endian::Little,
            b"2ELIFREP" => Endian::Big,
            b"PERFFILE" => {
                return Err(ReadError::at(
                    0,
                    "a perf.data file in the obsolete version-1 format",
                ));
            }
            _ => {
                return Err(ReadError::at(
                    0,
                    format!(
                        "not a perf.data file (magic {:?})",
                        String::from_utf8_lossy(magic)
                    ),
                ));
            }
        };
        // The magic is written as a u64 in the writer's byte order: "PERFILE2" read as
        // bytes means the writer was little-endian.
        let endian = if cfg!(target_endian = "little") {
            endian
        } else {
            match endian {
                Endian::Little => Endian::Big,
                Endian::Big => Endian::Little,
            }
        };
        let hsize = rd64(&bytes, 8, endian)? as usize;
        let mut me = PerfData {
            bytes,
            endian,
            pipe: hsize == PIPE_HEADER_SIZE,
            attrs: Vec::new(),
            features: Features::default(),
            data: 0..0,
            warnings: Vec::new(),
        };
        if me.pipe {
            me.data = PIPE_HEADER_SIZE..me.bytes.len();
            me.scan_pipe_header_records()?;
        } else {
            if hsize < HEADER_SIZE {
                return Err(ReadError::at(
                    8,
                    format!("header size {hsize} is below {HEADER_SIZE}"),
                ));
            }
            me.read_file_header()?;
        }
        me.apply_names();
        if me.attrs.is_empty() {
            return Err(ReadError::at(0, "the file describes no events"));
        }
        Ok(me)
    }

    fn read_file_header(&mut self) -> Result<(), ReadError> {
        let (b, e) = (&self.bytes, self.endian);
        let attr_size = rd64(b, 16, e)? as usize;
        let (attrs_off, attrs_len) = (rd64(b, 24, e)? as usize, rd64(b, 32, e)? as usize);
        let (data_off, data_len) = (rd64(b, 40, e)? as usize, rd64(b, 48, e)? as usize);
        if attr_size < 16 + sys::PERF_ATTR_SIZE_VER0 as usize {
            return Err(ReadError::at(
                16,
                format!("attr_size {attr_size} is too small"),
            ));
        }
        let mut attrs = Vec::new();
        for i in 0..attrs_len / attr_size {
            let at = attrs_off + i * attr_size;
            let raw = b.get(at..at + attr_size - 16).ok_or_else(|| {
                ReadError::at(at as u64, format!("attr {i} runs past the end of the file"))
            })?;
            let attr = attr_from(raw, e);
            let ids_off = rd64(b, at + attr_size - 16, e)? as usize;
            let ids_len = rd64(b, at + attr_size - 8, e)? as usize;
            let ids_bytes = b
                .get(ids_off..ids_off.saturating_add(ids_len))
                .ok_or_else(|| {
                    ReadError::at(ids_off as u64, format!("ids of attr {i} run past the end"))
                })?;
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
        let data_end = data_off.saturating_add(data_len);
        if data_end > b.len() {
            self.warnings.push(format!(
                "the data section should end at byte {data_end} but the file has {} bytes: it was cut short",
                b.len()
            ));
        }
        self.data = data_off.min(b.len())..data_end.min(b.len());
        // Feature index after the data: {offset, size} per set bit, ascending.
        let bits: Vec<usize> = (0..256usize)
            .filter(|bit| {
                b.get(72 + bit / 8)
                    .is_some_and(|byte| byte & (1 << (bit % 8)) != 0)
            })
            .collect();
        let mut features = Features::default();
        for (i, &bit) in bits.iter().enumerate() {
            let idx = data_end + i * 16;
            let (Ok(off), Ok(size)) = (rd64(b, idx, e), rd64(b, idx + 8, e)) else {
                self.warnings
                    .push("the feature sections are missing (the file was not finished)".into());
                break;
            };
            match b.get(off as usize..(off as usize).saturating_add(size as usize)) {
                Some(sec) => features.add(bit, sec, e),
                None => features
                    .unparsed
                    .push((bit, format!("section at byte {off} runs past the end"))),
            }
        }
        self.features = features;
        self.attrs = attrs;
        Ok(())
    }

    /// Pipe mode: attrs and features come as HEADER_ATTR / HEADER_FEATURE records.
    fn scan_pipe_header_records(&mut self) -> Result<(), ReadError> {
        let e = self.endian;
        let mut attrs = Vec::new();
        let mut features = Features::default();
        let r = self.walk(|_, type_, _, body| {
            match type_ {
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
                    attrs.push(EventAttr {
                        attr,
                        ids,
                        name: String::new(),
                    });
                }
                sys::PERF_RECORD_HEADER_FEATURE => {
                    if let Ok(bit) = rd64(body, 0, e) {
                        features.add(bit as usize, &body[8..], e);
                    }
                }
                _ => {}
            }
            Ok(())
        });
        self.attrs = attrs;
        self.features = features;
        if let Err(err) = r {
            self.warnings.push(format!("the stream is cut short {err}"));
        }
        Ok(())
    }

    fn apply_names(&mut self) {
        for (i, a) in self.attrs.iter_mut().enumerate() {
            a.name = self
                .features
                .event_desc
                .get(i)
                .map(|(n, _)| n.clone())
                .unwrap_or_default();
        }
        // EVENT_UPDATE records (pipe mode) carry names too: type 0 = unit, 1 = scale,
        // 2 = name, 3 = cpus; then u64 id and the payload.
        let e = self.endian;
        let mut names = Vec::new();
        let _ = self.walk(|_, type_, _, body| {
            if type_ == sys::PERF_RECORD_EVENT_UPDATE
                && rd64(body, 0, e).ok() == Some(2)
                && let Ok(id) = rd64(body, 8, e)
            {
                let s = &body[16.min(body.len())..];
                let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
                names.push((id, String::from_utf8_lossy(&s[..end]).into_owned()));
            }
            Ok(())
        });
        for (id, name) in names {
            if let Some(a) = self.attrs.iter_mut().find(|a| a.ids.contains(&id)) {
                a.name = name;
            }
        }
        for a in &mut self.attrs {
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
        .map_err(|e| ReadError::at(0, format!("the events cannot be told apart: {e}")))
    }

    /// Size of the data section.
    pub fn data_len(&self) -> usize {
        self.data.len()
    }

    /// Every record of the data section in file order (compressed records as they are):
    /// `(offset, type, misc, body)`. Stops with an error at the first malformed record.
    pub fn walk<'f>(
        &'f self,
        mut f: impl FnMut(usize, u32, u16, &'f [u8]) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        walk_bytes(&self.bytes, self.data.clone(), self.endian, 0, &mut f)
    }

    /// Every record in time order, decompressed, decoded: buffered one round (up to each
    /// `FINISHED_ROUND`) at a time and sorted by timestamp, as perf does. Records that
    /// fail to decode end the walk with an error after everything before them was
    /// delivered. `progress` is called with the bytes done so far.
    pub fn for_each(
        &self,
        mut f: impl FnMut(Item<'_>),
        mut progress: impl FnMut(usize),
    ) -> Result<(), ReadError> {
        let parser = self.parser()?;
        let e = self.endian;
        // (time, chunk, offset): chunk usize::MAX = the file, else a decompressed chunk.
        let mut round: Vec<(u64, usize, usize)> = Vec::new();
        let mut chunks: Vec<Vec<u8>> = Vec::new();
        let mut last_time = 0u64;
        let mut zstd = None::<zstd::stream::raw::Decoder<'static>>;
        let mut pending: Vec<u8> = Vec::new();
        let flush = |round: &mut Vec<(u64, usize, usize)>,
                     chunks: &mut Vec<Vec<u8>>,
                     f: &mut dyn FnMut(Item<'_>)| {
            round.sort_by_key(|r| r.0);
            for &(_, chunk, off) in round.iter() {
                let buf: &[u8] = if chunk == usize::MAX {
                    &self.bytes
                } else {
                    &chunks[chunk]
                };
                let (Ok(type_), Ok(w1)) = (rd32(buf, off, e), rd32(buf, off + 4, e)) else {
                    continue;
                };
                let (misc, size) = split_misc_size(w1, e);
                let Some(body) = buf.get(off + 8..off + size) else {
                    continue;
                };
                if type_ >= sys::PERF_RECORD_USER_TYPE_START {
                    f(Item::User { type_, misc, body });
                } else if let Ok((attr, record)) = parse_any(&parser, type_, misc, body) {
                    f(Item::Event { attr, record });
                }
            }
            round.clear();
            chunks.clear();
        };
        let mut classify = |buf: &[u8],
                            off: usize,
                            type_: u32,
                            misc: u16,
                            body: &[u8],
                            chunk: usize,
                            round: &mut Vec<(u64, usize, usize)>|
         -> Result<(), ReadError> {
            if type_ < sys::PERF_RECORD_USER_TYPE_START {
                let (_, rec) = parse_any(&parser, type_, misc, body)
                    .map_err(|err| ReadError::at(off as u64, format!("{err}")))?;
                last_time = rec.time().unwrap_or(last_time);
            }
            let _ = buf;
            round.push((last_time, chunk, off));
            Ok(())
        };
        let result = self.walk(|off, type_, misc, body| {
            progress(off - self.data.start);
            match type_ {
                sys::PERF_RECORD_FINISHED_ROUND => {
                    flush(&mut round, &mut chunks, &mut f);
                }
                sys::PERF_RECORD_COMPRESSED | sys::PERF_RECORD_COMPRESSED2 => {
                    let data = if type_ == sys::PERF_RECORD_COMPRESSED2 {
                        let n = rd64(body, 0, e)? as usize;
                        body.get(8..8 + n).ok_or_else(|| {
                            ReadError::at(off as u64, "COMPRESSED2 data size runs past the record")
                        })?
                    } else {
                        body
                    };
                    let dec = match &mut zstd {
                        Some(d) => d,
                        None => zstd
                            .insert(zstd::stream::raw::Decoder::new().map_err(|err| {
                                ReadError::at(off as u64, format!("zstd: {err}"))
                            })?),
                    };
                    decompress(dec, data, &mut pending)
                        .map_err(|err| ReadError::at(off as u64, format!("zstd: {err}")))?;
                    // Complete records of the decompressed stream go into a chunk.
                    let mut used = 0;
                    let mut chunk_recs = Vec::new();
                    while let (Ok(t), Ok(w1)) =
                        (rd32(&pending, used, e), rd32(&pending, used + 4, e))
                    {
                        let (m, size) = split_misc_size(w1, e);
                        if size < 8 {
                            return Err(ReadError::at(
                                off as u64,
                                "a record in the compressed data has an impossible size",
                            ));
                        }
                        if used + size > pending.len() {
                            break;
                        }
                        chunk_recs.push((used, t, m, size));
                        used += size;
                    }
                    let chunk: Vec<u8> = pending.drain(..used).collect();
                    let ci = chunks.len();
                    for (o, t, m, size) in chunk_recs {
                        if t == sys::PERF_RECORD_FINISHED_ROUND {
                            continue;
                        }
                        classify(&chunk, o, t, m, &chunk[o + 8..o + size], ci, &mut round)?;
                    }
                    chunks.push(chunk);
                }
                sys::PERF_RECORD_HEADER_ATTR | sys::PERF_RECORD_HEADER_FEATURE => {}
                _ => classify(&self.bytes, off, type_, misc, body, usize::MAX, &mut round)?,
            }
            Ok(())
        });
        flush(&mut round, &mut chunks, &mut f);
        result
    }
}

/// Decode with the attr the record's id names; synthesized records (perf writes id 0)
/// and other unknown ids of non-sample records go to the first attr, as perf does.
fn parse_any<'b>(
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

fn decompress(
    dec: &mut zstd::stream::raw::Decoder<'static>,
    data: &[u8],
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
    let mut input = InBuffer::around(data);
    let mut buf = vec![0u8; 1 << 17];
    loop {
        let mut ob = OutBuffer::around(&mut buf[..]);
        dec.run(&mut input, &mut ob)?;
        let n = ob.pos();
        out.extend_from_slice(&buf[..n]);
        if out.len() > 1 << 30 {
            return Err(std::io::Error::other(
                "decompressed data grows past 1 GiB without a complete record",
            ));
        }
        if input.pos == data.len() && n < buf.len() {
            return Ok(());
        }
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

fn walk_bytes<'f>(
    b: &'f [u8],
    range: std::ops::Range<usize>,
    e: Endian,
    _depth: usize,
    f: &mut impl FnMut(usize, u32, u16, &'f [u8]) -> Result<(), ReadError>,
) -> Result<(), ReadError> {
    let mut off = range.start;
    while off < range.end {
        let (Ok(type_), Ok(w1)) = (rd32(b, off, e), rd32(b, off + 4, e)) else {
            return Err(ReadError::at(off as u64, "truncated record header"));
        };
        let (misc, size) = split_misc_size(w1, e);
        if size < 8 {
            return Err(ReadError::at(
                off as u64,
                format!("record has an impossible size {size}"),
            ));
        }
        let body = b.get(off + 8..off + size).ok_or_else(|| {
            ReadError::at(
                off as u64,
                format!("record of {size} bytes runs past the end of the file: it was cut short"),
            )
        })?;
        f(off, type_, misc, body)?;
        off += size + trailing_payload(type_, body, e);
    }
    Ok(())
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
