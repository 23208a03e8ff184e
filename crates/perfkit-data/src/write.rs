//! [`PerfDataWriter`]: perf.data files perf 6.1 opens.

use crate::feature as f;
use perfkit_records::{
    Endian, HEADER_SIZE as HEADER_SIZE_RECORD, MultiParser, ParsedRecord, RawData, RawRecord,
    Record, RecordHeader, RecordParser,
};
use perfkit_sys::{self as sys, perf_event_attr};
use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const HEADER_SIZE: u64 = 104;
/// perf 6.1 refuses attrs larger than this ("more recent and unsupported ABI").
const FILE_ATTR_SIZE: u32 = sys::PERF_ATTR_SIZE_VER7;
/// Largest record body a COMPRESSED record carries (its size is a u16).
const MAX_COMPRESSED_PAYLOAD: usize = 0xffff - 8;

/// One event of the file.
#[derive(Clone, Debug)]
pub struct FileEvent {
    /// Its attr.
    pub attr: perf_event_attr,
    /// Its name (EVENT_DESC, or EVENT_UPDATE in pipe mode).
    pub name: String,
    /// The ids of its instances.
    pub ids: Vec<u64>,
}

/// How to write.
#[derive(Clone, Copy, Debug, Default)]
pub struct WriteOptions {
    /// zstd level (1-22) for COMPRESSED records; None = uncompressed.
    pub compress: Option<i32>,
    /// Bytes of one compressed chunk (perf: the ring size); bounds a reader's buffer.
    pub chunk: usize,
    /// Write no build-id table (`perf record -B`: no `HEADER_BUILD_ID`).
    pub no_build_ids: bool,
}

enum Out {
    File { path: PathBuf, w: BufWriter<File> },
    Pipe(Box<dyn Write>),
}

/// A perf.data file (or pipe stream) being written.
pub struct PerfDataWriter {
    out: Out,
    events: Vec<FileEvent>,
    opts: WriteOptions,
    data_start: u64,
    data_len: u64,
    first_time: u64,
    last_time: u64,
    round: Vec<u8>,
    raw_bytes: u64,
    mapped: BTreeSet<(i32, u16, String)>,
    zstd: Option<zstd::bulk::Compressor<'static>>,
    /// HEADER_TRACING_DATA: the format files of the tracepoints recorded.
    tracing: Option<Vec<u8>>,
    /// HEADER_BPF_PROG_INFO: the BPF programs the file describes (None: no section).
    bpf_programs: Option<Vec<crate::bpf_prog_info::BpfProgInfo>>,
    /// HEADER_BPF_BTF: the BTF of those programs (written with them).
    bpf_btfs: Vec<crate::bpf_btf::BpfBtf>,
    /// Decoders of the events' records (MMAP/MMAP2 file names for BUILD_ID).
    parsers: Parsers,
    /// When the header was last rewritten by [`finish_round`](Self::finish_round).
    last_sync: Option<std::time::Instant>,
}

/// Blocks of at least this many bytes are written with their own `write` rather than
/// copied into the file's buffer first.
const DIRECT_WRITE_MIN: usize = 64 << 10;

/// How often [`PerfDataWriter::finish_round`] makes the file readable up to the round.
pub const HEADER_SYNC_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// The record parsers of a file's events: the records written are decoded by
/// `perfkit-records`, as any reader decodes them, never by byte offsets of their own.
struct Parsers {
    /// By event id, when the events can be told apart.
    multi: Option<MultiParser>,
    /// The first event's: records without a known id (synthesized ones) go to it, as
    /// perf does.
    first: Option<RecordParser>,
}

impl Parsers {
    fn new(events: &[FileEvent]) -> Parsers {
        Parsers {
            multi: MultiParser::new(
                Endian::NATIVE,
                events.iter().map(|e| (e.ids.as_slice(), &e.attr)),
            )
            .ok(),
            first: events
                .first()
                .map(|e| RecordParser::new(&e.attr, Endian::NATIVE)),
        }
    }

    fn parse<'b>(&self, type_: u32, misc: u16, body: &'b [u8]) -> Option<ParsedRecord<'b>> {
        if let Some(m) = &self.multi
            && let Ok((_, r)) = m.parse(type_, misc, body)
        {
            return Some(r);
        }
        self.first.as_ref()?.parse(type_, misc, body).ok()
    }

    /// Remember the file of an executable MMAP/MMAP2 record (`rec`: header included)
    /// with its pid and cpumode, for the BUILD_ID section.
    fn note_mapping(&self, rec: &[u8], mapped: &mut BTreeSet<(i32, u16, String)>) {
        let Ok((raw, _)) = RawRecord::from_bytes(rec, Endian::NATIVE) else {
            return;
        };
        let RawData::Single(body) = raw.data else {
            return;
        };
        let Some(parsed) = self.parse(raw.type_, raw.misc, body) else {
            return;
        };
        let (pid, name) = match parsed.record {
            Record::Mmap(m) if !m.data => (m.pid, m.filename),
            Record::Mmap2(m) if !m.data => (m.pid, m.filename),
            _ => return,
        };
        let name = String::from_utf8_lossy(name);
        if name.starts_with('/') || name.starts_with("[kernel.kallsyms]") {
            mapped.insert((
                pid,
                raw.misc & sys::PERF_RECORD_MISC_CPUMODE_MASK,
                name.into_owned(),
            ));
        }
    }
}

/// The whole record at offset `at` of `parts` put end to end, contiguous (copied into
/// `scratch` where it spans two parts); None where no whole record starts there.
fn record_in_parts<'a>(
    parts: &[&'a [u8]],
    at: usize,
    scratch: &'a mut Vec<u8>,
) -> Option<&'a [u8]> {
    let mut base = 0usize;
    let mut i = 0;
    while i < parts.len() && at >= base + parts[i].len() {
        base += parts[i].len();
        i += 1;
    }
    let first = parts.get(i)?.get(at - base..)?;
    let rest = || parts[i + 1..].iter().flat_map(|p| p.iter().copied());
    let header: Vec<u8> = first
        .iter()
        .copied()
        .chain(rest())
        .take(HEADER_SIZE_RECORD)
        .collect();
    let size = RecordHeader::parse(&header, Endian::NATIVE).ok()?.size as usize;
    if size <= first.len() {
        return Some(&first[..size]);
    }
    scratch.clear();
    scratch.extend(first.iter().copied().chain(rest()).take(size));
    (scratch.len() == size).then_some(&scratch[..])
}

/// The 8 bytes of a record header in native byte order.
fn header_bytes(h: &RecordHeader) -> [u8; 8] {
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&h.type_.to_ne_bytes());
    b[4..6].copy_from_slice(&h.misc.to_ne_bytes());
    b[6..].copy_from_slice(&h.size.to_ne_bytes());
    b
}

/// The tracing data for the tracepoint events among `events`, from this machine's tracefs.
fn tracing_blob(events: &[FileEvent]) -> io::Result<Option<Vec<u8>>> {
    let ids: Vec<u64> = events
        .iter()
        .filter(|e| e.attr.type_ == sys::PERF_TYPE_TRACEPOINT)
        .map(|e| e.attr.config)
        .collect();
    if ids.is_empty() {
        return Ok(None);
    }
    let tracefs = crate::tracing_data::tracefs().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            "tracepoints are recorded but tracefs is not mounted, so their formats cannot be \
             saved: mount it with `mount -t tracefs nodev /sys/kernel/tracing`",
        )
    })?;
    let t = crate::tracing_data::TracingData::from_tracefs(&tracefs, &ids)?;
    Ok(Some(t.to_bytes()))
}

pub(crate) fn w32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_ne_bytes());
}
pub(crate) fn w64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}
/// perf's string: u32 length (padded to 64 bytes as perf does), NUL-padded.
pub(crate) fn wstr(v: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(64);
    w32(v, len as u32);
    v.extend_from_slice(s.as_bytes());
    v.resize(v.len() + len - s.len(), 0);
}

/// A record: header, body, zero padding to 8 bytes, trailer.
pub fn record(type_: u32, misc: u16, body: &[u8], trailer: &[u8]) -> Vec<u8> {
    let padded = (8 + body.len()).next_multiple_of(8);
    let len = padded + trailer.len();
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&header_bytes(&RecordHeader {
        type_,
        misc,
        size: len as u16,
    }));
    v.extend_from_slice(body);
    v.resize(padded, 0);
    v.extend_from_slice(trailer);
    v
}

fn attr_bytes(a: &perf_event_attr) -> Vec<u8> {
    let mut a = *a;
    a.size = FILE_ATTR_SIZE;
    a.as_bytes()[..FILE_ATTR_SIZE as usize].to_vec()
}

fn check_attrs(events: &[FileEvent]) -> io::Result<()> {
    for e in events {
        // The newest field perf 6.1 knows is sig_data (VER7).
        if e.attr.config3 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "event {} uses config3, which perf.data files for perf 6.1 cannot hold",
                    e.name
                ),
            ));
        }
    }
    Ok(())
}

impl PerfDataWriter {
    /// Create `path` (mode 0600; an existing file is renamed to `path.old` as perf does).
    pub fn create(path: &Path, events: Vec<FileEvent>, opts: WriteOptions) -> io::Result<Self> {
        check_attrs(&events)?;
        // As perf: a non-empty regular file is kept as FILE.old; anything else (a device
        // such as /dev/null, a FIFO, an empty file) is opened as it is, never replaced.
        let regular = std::fs::metadata(path).ok().filter(|m| m.is_file());
        if regular.as_ref().is_some_and(|m| m.len() > 0) {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            std::fs::rename(path, &old)?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(regular.is_some())
            .mode(0o600)
            .open(path)?;
        let mut w = Self::new(
            Out::File {
                path: path.to_path_buf(),
                w: BufWriter::with_capacity(1 << 20, file),
            },
            events,
            opts,
        )?;
        let attrs = w.attrs_section();
        w.data_start = HEADER_SIZE + attrs.len() as u64;
        let header = w.header(&[]);
        w.raw_write(&header)?;
        w.raw_write(&attrs)?;
        Ok(w)
    }

    /// Pipe mode (`perf record -o -`): a 16-byte header, then HEADER_ATTR and
    /// HEADER_FEATURE records, then the data.
    pub fn pipe(
        out: Box<dyn Write>,
        events: Vec<FileEvent>,
        opts: WriteOptions,
    ) -> io::Result<Self> {
        Self::pipe_with(out, events, opts, false)
    }

    /// Pipe mode with the 16-byte header and the HEADER_ATTR records only: the caller
    /// writes the rest. perf 6.1's stat stream (`perf stat record -o -`) is such: each
    /// event's EVENT_UPDATE records (unit, scale, name) follow, and no HEADER_FEATURE
    /// record, not even the end-of-features marker.
    pub fn pipe_attrs_only(
        out: Box<dyn Write>,
        events: Vec<FileEvent>,
        opts: WriteOptions,
    ) -> io::Result<Self> {
        Self::pipe_with(out, events, opts, true)
    }

    fn pipe_with(
        out: Box<dyn Write>,
        events: Vec<FileEvent>,
        opts: WriteOptions,
        attrs_only: bool,
    ) -> io::Result<Self> {
        check_attrs(&events)?;
        let mut w = Self::new(Out::Pipe(out), events, opts)?;
        let mut h = Vec::new();
        h.extend_from_slice(b"PERFILE2");
        w64(&mut h, 16);
        w.raw_write(&h)?;
        for i in 0..w.events.len() {
            let e = &w.events[i];
            let mut body = attr_bytes(&e.attr);
            for id in &e.ids {
                w64(&mut body, *id);
            }
            let r = record(sys::PERF_RECORD_HEADER_ATTR, 0, &body, &[]);
            w.raw_write(&r)?;
        }
        if attrs_only {
            return Ok(w);
        }
        // Names: EVENT_UPDATE type 2 records (EVENT_DESC is not sent in pipe mode).
        for i in 0..w.events.len() {
            let (id, name) = (
                w.events[i].ids.first().copied().unwrap_or(0),
                w.events[i].name.clone(),
            );
            let mut body = Vec::new();
            w64(&mut body, 2);
            w64(&mut body, id);
            body.extend_from_slice(name.as_bytes());
            body.push(0);
            let r = record(sys::PERF_RECORD_EVENT_UPDATE, 0, &body, &[]);
            w.raw_write(&r)?;
        }
        // perf writes its BPF program sections in pipe mode before it lists any program
        // (the feature records come first): both empty.
        // perf 6.1's pipe stream carries no CACHE section; its CMDLINE is perf's own (the
        // executable's path, then its arguments) and its SAMPLE_TIME is zeros.
        let mut features = w.static_features();
        features.retain(|x| x.0 != f::CACHE);
        let exe = std::env::current_exe().map_or_else(
            |_| std::env::args().next().unwrap_or_default(),
            |p| p.to_string_lossy().into_owned(),
        );
        let cmdline: Vec<String> = std::iter::once(exe)
            .chain(std::env::args().skip(1))
            .collect();
        features.push((f::CMDLINE, Self::cmdline_section(&cmdline)));
        features.push((f::EVENT_DESC, w.event_desc_section()));
        features.push((f::SAMPLE_TIME, vec![0; 16]));
        features.push((f::BPF_PROG_INFO, crate::bpf_prog_info::write(&[])));
        features.push((f::BPF_BTF, crate::bpf_btf::write(&[])));
        features.sort_by_key(|x| x.0);
        // As perf writes them (`perf_event__synthesize_features`): the section as it is,
        // not padded to 8 bytes (perf's BPF sections make 20-byte records).
        // Then perf's end marker: a record of bit HEADER_LAST_FEATURE (32) with nothing in
        // it (where perf prints the header of a pipe stream).
        features.push((32, Vec::new()));
        for (bit, payload) in features {
            let mut r = header_bytes(&RecordHeader {
                type_: sys::PERF_RECORD_HEADER_FEATURE,
                misc: 0,
                size: (16 + payload.len()) as u16,
            })
            .to_vec();
            w64(&mut r, bit as u64);
            r.extend_from_slice(&payload);
            w.raw_write(&r)?;
        }
        // Tracepoint formats: a 16-byte record whose size field gives the 8-byte aligned
        // length of the blob that follows it, outside the record.
        if let Some(blob) = w.tracing.clone() {
            let aligned = blob.len().next_multiple_of(8);
            let mut body = Vec::new();
            w32(&mut body, aligned as u32);
            w32(&mut body, 0);
            let r = record(sys::PERF_RECORD_HEADER_TRACING_DATA, 0, &body, &[]);
            w.raw_write(&r)?;
            w.raw_write(&blob)?;
            w.raw_write(&vec![0; aligned - blob.len()])?;
        }
        Ok(w)
    }

    fn new(out: Out, events: Vec<FileEvent>, opts: WriteOptions) -> io::Result<Self> {
        let tracing = tracing_blob(&events)?;
        let parsers = Parsers::new(&events);
        let zstd = match opts.compress {
            Some(level) => Some(zstd::bulk::Compressor::new(level)?),
            None => None,
        };
        Ok(PerfDataWriter {
            out,
            events,
            opts: WriteOptions {
                chunk: if opts.chunk == 0 {
                    512 << 10
                } else {
                    opts.chunk
                },
                ..opts
            },
            data_start: 0,
            data_len: 0,
            first_time: u64::MAX,
            last_time: 0,
            round: Vec::new(),
            raw_bytes: 0,
            mapped: BTreeSet::new(),
            zstd,
            tracing,
            bpf_programs: None,
            bpf_btfs: Vec::new(),
            parsers,
            last_sync: None,
        })
    }

    fn raw_write(&mut self, b: &[u8]) -> io::Result<()> {
        match &mut self.out {
            Out::File { w, .. } => w.write_all(b),
            Out::Pipe(w) => w.write_all(b),
        }
    }

    fn ids_offset(&self) -> u64 {
        HEADER_SIZE + (self.events.len() as u64) * (u64::from(FILE_ATTR_SIZE) + 16)
    }

    fn attrs_section(&self) -> Vec<u8> {
        let mut v = Vec::new();
        let mut ids_at = self.ids_offset();
        for e in &self.events {
            v.extend_from_slice(&attr_bytes(&e.attr));
            w64(&mut v, ids_at);
            w64(&mut v, 8 * e.ids.len() as u64);
            ids_at += 8 * e.ids.len() as u64;
        }
        for e in &self.events {
            for id in &e.ids {
                w64(&mut v, *id);
            }
        }
        v
    }

    fn header(&self, features: &[usize]) -> Vec<u8> {
        let mut h = Vec::with_capacity(HEADER_SIZE as usize);
        h.extend_from_slice(b"PERFILE2");
        w64(&mut h, HEADER_SIZE);
        w64(&mut h, u64::from(FILE_ATTR_SIZE) + 16);
        w64(&mut h, HEADER_SIZE);
        w64(
            &mut h,
            self.events.len() as u64 * (u64::from(FILE_ATTR_SIZE) + 16),
        );
        w64(&mut h, self.data_start);
        w64(&mut h, self.data_len);
        w64(&mut h, 0);
        w64(&mut h, 0);
        let mut bits = [0u8; 32];
        for &b in features {
            bits[b / 8] |= 1 << (b % 8);
        }
        h.extend_from_slice(&bits);
        h
    }

    /// Append one record as the ring buffer hands it out ([`RawRecord`]: type, misc and
    /// a body in one or two parts, two when it wraps the end of the ring); the 8-byte
    /// header is built here. The body is written as it is (the kernel's records are
    /// multiples of 8 bytes). MMAP/MMAP2 file names are remembered for the BUILD_ID
    /// section.
    ///
    /// A body too large for a record (the size is a `u16`) is an `InvalidInput` error.
    pub fn write_raw(&mut self, rec: &RawRecord<'_>) -> io::Result<()> {
        let size = u16::try_from(HEADER_SIZE_RECORD + rec.data.len()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a record of type {} with a body of {} bytes does not fit the 16-bit size",
                    rec.type_,
                    rec.data.len()
                ),
            )
        })?;
        let start = self.round.len();
        let header = RecordHeader {
            type_: rec.type_,
            misc: rec.misc,
            size,
        };
        self.round.extend_from_slice(&header_bytes(&header));
        match rec.data {
            RawData::Single(a) => self.round.extend_from_slice(a),
            RawData::Split(a, b) => {
                self.round.extend_from_slice(a);
                self.round.extend_from_slice(b);
            }
        }
        self.appended(rec.type_, start)
    }

    /// Append one record exactly as it is in memory (header included, native byte
    /// order), in one or more parts; see [`write_raw`](Self::write_raw) for records as
    /// the ring hands them out.
    pub fn write_record(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        let start = self.round.len();
        for p in parts {
            self.round.extend_from_slice(p);
        }
        let type_ = RecordHeader::parse(&self.round[start..], Endian::NATIVE).map(|h| h.type_);
        match type_ {
            Ok(t) => self.appended(t, start),
            // Shorter than a header: written as given, nothing to remember.
            Err(_) => self.appended(u32::MAX, start),
        }
    }

    /// Append a block of whole records, each header included, in native byte order (what
    /// a draining thread collected from its rings). MMAP/MMAP2 file names are remembered
    /// as [`write_raw`](Self::write_raw) remembers them, and compressed chunks stay within
    /// the chunk size. A block that ends inside a record, or a record whose size is under
    /// 8 bytes, is an `InvalidData` error naming the offset; nothing after it is written
    /// (uncompressed, nothing of the block).
    pub fn write_records(&mut self, block: &[u8]) -> io::Result<()> {
        // Uncompressed, the block goes out as it is (after what the round holds), not
        // copied into the round: only the headers are read.
        let direct = self.zstd.is_none();
        if direct {
            self.flush_round()?;
        }
        let mut at = 0usize;
        while at < block.len() {
            let h = RecordHeader::parse(&block[at..], Endian::NATIVE).map_err(|e| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("record at byte {at} of a block: {e}"),
                )
            })?;
            let size = h.size as usize;
            if size < HEADER_SIZE_RECORD || at + size > block.len() {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "record at byte {at} of a {}-byte block has size {size}",
                        block.len()
                    ),
                ));
            }
            let rec = &block[at..at + size];
            if direct {
                if matches!(h.type_, sys::PERF_RECORD_MMAP | sys::PERF_RECORD_MMAP2) {
                    self.parsers.note_mapping(rec, &mut self.mapped);
                }
            } else {
                let start = self.round.len();
                self.round.extend_from_slice(rec);
                self.appended(h.type_, start)?;
            }
            at += size;
        }
        if direct && !block.is_empty() {
            self.write_direct(block)?;
        }
        Ok(())
    }

    /// [`write_records`](Self::write_records) for a block whose record headers were
    /// checked already (a draining thread walked them while copying): uncompressed, it
    /// is written without being read again. `mappings` are the offsets in `block` of its
    /// MMAP and MMAP2 records, whose files go into the build-id table: only those are
    /// looked at (a system-wide recording on a machine that starts programs has one in
    /// nearly every block, and walking every header again cost the writer a tenth of its
    /// CPU). An offset that is not the start of a whole record in `block` is ignored.
    pub fn write_checked_records(&mut self, block: &[u8], mappings: &[usize]) -> io::Result<()> {
        self.write_checked_parts(&[block], mappings)
    }

    /// [`write_checked_records`](Self::write_checked_records) for records given as runs
    /// of bytes that together are whole records (a ring's pending bytes, lent in place
    /// and wrapping its end): uncompressed, each run is written as it is, without a copy;
    /// `mappings` are offsets in the runs put end to end. Compressed, they are copied once
    /// into the chunker.
    pub fn write_checked_parts(&mut self, parts: &[&[u8]], mappings: &[usize]) -> io::Result<()> {
        if self.zstd.is_some() {
            return self.write_records(&parts.concat());
        }
        self.flush_round()?;
        let mut scratch = Vec::new();
        for &at in mappings {
            if let Some(rec) = record_in_parts(parts, at, &mut scratch) {
                self.parsers.note_mapping(rec, &mut self.mapped);
            }
        }
        for p in parts {
            if !p.is_empty() {
                self.write_direct(p)?;
            }
        }
        Ok(())
    }

    /// Write `block` after everything buffered, without copying it into the buffer when
    /// it is big (a draining thread's pass): one `write` of the caller's bytes.
    fn write_direct(&mut self, block: &[u8]) -> io::Result<()> {
        match &mut self.out {
            Out::File { w, .. } if block.len() >= DIRECT_WRITE_MIN => {
                w.flush()?;
                w.get_mut().write_all(block)?;
            }
            Out::File { w, .. } => w.write_all(block)?,
            Out::Pipe(w) => w.write_all(block)?,
        }
        self.raw_bytes += block.len() as u64;
        self.data_len += block.len() as u64;
        Ok(())
    }

    /// Write out the file's buffer once it holds half its capacity or more. A recorder
    /// calls this after giving its rings their space back: the small passes it wrote are
    /// copied into the buffer, and without this the buffer went to the file when a pass no
    /// longer fit, while that pass still held its rings (with small rings at a high rate,
    /// 1-5% of the samples were lost during those writes).
    pub fn settle(&mut self) -> io::Result<()> {
        if let Out::File { w, .. } = &mut self.out
            && w.buffer().len() >= w.capacity() / 2
        {
            w.flush()?;
        }
        Ok(())
    }

    /// Book-keeping after a record of type `type_` was appended to the round at `start`.
    fn appended(&mut self, type_: u32, start: usize) -> io::Result<()> {
        if matches!(type_, sys::PERF_RECORD_MMAP | sys::PERF_RECORD_MMAP2) {
            self.parsers
                .note_mapping(&self.round[start..], &mut self.mapped);
        }
        if self.round.len() >= self.opts.chunk {
            self.flush_round()?;
        }
        Ok(())
    }

    /// Describe `progs` in the file's `HEADER_BPF_PROG_INFO` section (perf's list of the
    /// BPF programs its records name): a program already described (by id) is kept once.
    /// Without a call the file has no section; an empty list gives one of no programs
    /// (and an empty `HEADER_BPF_BTF`, which perf writes beside it). Pipe mode writes both
    /// sections empty at its start, as perf does, and these programs nowhere.
    pub fn add_bpf_programs(
        &mut self,
        progs: impl IntoIterator<Item = crate::bpf_prog_info::BpfProgInfo>,
    ) {
        let all = self.bpf_programs.get_or_insert_with(Vec::new);
        for p in progs {
            if !all.iter().any(|q| q.id == p.id) {
                all.push(p);
            }
        }
    }

    /// Add `btfs` to the file's `HEADER_BPF_BTF` section (the BTF of the programs given to
    /// [`add_bpf_programs`](Self::add_bpf_programs), by id; one already there is kept
    /// once). Written only with a `HEADER_BPF_PROG_INFO` section.
    pub fn add_bpf_btfs(&mut self, btfs: impl IntoIterator<Item = crate::bpf_btf::BpfBtf>) {
        for b in btfs {
            if !self.bpf_btfs.iter().any(|c| c.id == b.id) {
                self.bpf_btfs.push(b);
            }
        }
    }

    /// Note a sample's timestamp (SAMPLE_TIME feature).
    pub fn saw_time(&mut self, t: u64) {
        self.first_time = self.first_time.min(t);
        self.last_time = self.last_time.max(t);
    }

    fn flush_round(&mut self) -> io::Result<()> {
        if self.round.is_empty() {
            return Ok(());
        }
        let round = std::mem::take(&mut self.round);
        self.raw_bytes += round.len() as u64;
        match &mut self.zstd {
            Some(z) => {
                let frame = z.compress(&round)?;
                for piece in frame.chunks(MAX_COMPRESSED_PAYLOAD) {
                    let mut r = Vec::with_capacity(piece.len() + 8);
                    r.extend_from_slice(&header_bytes(&RecordHeader {
                        type_: sys::PERF_RECORD_COMPRESSED,
                        misc: 0,
                        size: (piece.len() + 8) as u16,
                    }));
                    r.extend_from_slice(piece);
                    self.raw_write(&r)?;
                    self.data_len += r.len() as u64;
                }
            }
            None => {
                self.raw_write(&round)?;
                self.data_len += round.len() as u64;
            }
        }
        self.round = round;
        self.round.clear();
        Ok(())
    }

    /// End a pass over the rings: write a FINISHED_ROUND, and make the file valid up to
    /// here at most every [`HEADER_SYNC_EVERY`] (a header rewrite is a flush and three
    /// syscalls, and a busy recorder ends thousands of rounds a second).
    pub fn finish_round(&mut self) -> io::Result<()> {
        self.flush_round()?;
        let r = record(sys::PERF_RECORD_FINISHED_ROUND, 0, &[], &[]);
        self.raw_write(&r)?;
        self.data_len += 8;
        if self
            .last_sync
            .is_none_or(|t| t.elapsed() >= HEADER_SYNC_EVERY)
        {
            self.last_sync = Some(std::time::Instant::now());
            self.sync_header(&[])?;
        }
        Ok(())
    }

    fn sync_header(&mut self, features: &[usize]) -> io::Result<()> {
        let h = self.header(features);
        match &mut self.out {
            Out::File { w, .. } => {
                w.flush()?;
                let f = w.get_mut();
                let end = f.stream_position()?;
                f.seek(SeekFrom::Start(0))?;
                f.write_all(&h)?;
                f.seek(SeekFrom::Start(end))?;
                Ok(())
            }
            Out::Pipe(w) => w.flush(),
        }
    }

    /// Bytes of records given so far, before compression (perf's "original" size).
    pub fn uncompressed_size(&self) -> u64 {
        self.raw_bytes + self.round.len() as u64
    }

    /// Whether the data is zstd-compressed (`PERF_RECORD_COMPRESSED`).
    pub fn is_compressed(&self) -> bool {
        self.zstd.is_some()
    }

    /// Bytes of data written so far (compressed size with `-z`), buffered round included.
    pub fn data_size(&self) -> u64 {
        self.data_len + self.round.len() as u64
    }

    /// The path written, for messages (None in pipe mode).
    pub fn path(&self) -> Option<&Path> {
        match &self.out {
            Out::File { path, .. } => Some(path),
            Out::Pipe(_) => None,
        }
    }

    fn static_features(&self) -> Vec<(usize, Vec<u8>)> {
        let mut feats = Vec::new();
        let read = |p: &str| crate::sysinfo::read(p).unwrap_or_default();
        for (bit, v) in [
            (f::HOSTNAME, read("/proc/sys/kernel/hostname")),
            (f::OSRELEASE, read("/proc/sys/kernel/osrelease")),
            (
                f::VERSION,
                concat!("perfkit ", env!("CARGO_PKG_VERSION")).to_string(),
            ),
            (f::ARCH, std::env::consts::ARCH.to_string()),
        ] {
            let mut s = Vec::new();
            wstr(&mut s, &v);
            feats.push((bit, s));
        }
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
        let mut s = Vec::new();
        w32(&mut s, cpus);
        w32(&mut s, cpus);
        feats.push((f::NRCPUS, s));
        use crate::sysinfo;
        if let Some(desc) = sysinfo::cpuinfo_field("model name") {
            let mut s = Vec::new();
            wstr(&mut s, &desc);
            feats.push((f::CPUDESC, s));
        }
        if let Some(id) = sysinfo::cpuid() {
            let mut s = Vec::new();
            wstr(&mut s, &id);
            feats.push((f::CPUID, s));
        }
        if let Some(kb) = sysinfo::total_mem_kb() {
            let mut s = Vec::new();
            w64(&mut s, kb);
            feats.push((f::TOTAL_MEM, s));
        }
        // The full CPU_TOPOLOGY format perf writes: sibling lists, per-CPU core and socket
        // ids, die sibling lists, per-CPU die ids (perf's pipe-mode reader expects all of it).
        let t = sysinfo::cpu_topology(cpus);
        let mut s = Vec::new();
        for set in [&t.core_siblings, &t.thread_siblings] {
            w32(&mut s, set.len() as u32);
            for l in set.iter() {
                wstr(&mut s, l);
            }
        }
        for (core, socket, _) in &t.ids {
            w32(&mut s, *core);
            w32(&mut s, *socket);
        }
        w32(&mut s, t.die_siblings.len() as u32);
        for l in &t.die_siblings {
            wstr(&mut s, l);
        }
        for (_, _, die) in &t.ids {
            w32(&mut s, *die);
        }
        feats.push((f::CPU_TOPOLOGY, s));
        // The machine's NUMA nodes, PMUs, caches and memory blocks, as perf reads sysfs
        // (each left out where perf's writer fails).
        use crate::features as fs;
        if let Some(nodes) = sysinfo::numa_nodes() {
            feats.push((f::NUMA_TOPOLOGY, fs::write_numa(&nodes)));
        }
        if let Some(pmus) = sysinfo::pmu_mappings() {
            feats.push((f::PMU_MAPPINGS, fs::write_pmu_mappings(&pmus)));
        }
        if let Some(caches) = sysinfo::caches() {
            feats.push((f::CACHE, fs::write_caches(&caches)));
        }
        if let Some(mem) = sysinfo::mem_topology() {
            feats.push((f::MEM_TOPOLOGY, mem.to_bytes()));
        }
        if let Some(caps) = sysinfo::cpu_pmu_caps() {
            feats.push((f::CPU_PMU_CAPS, fs::write_cpu_pmu_caps(&caps)));
        }
        feats.push((f::PMU_CAPS, fs::write_pmu_caps(&sysinfo::pmu_caps())));
        feats
    }

    /// `HEADER_CMDLINE`: the count, then each argument.
    fn cmdline_section(cmdline: &[String]) -> Vec<u8> {
        let mut s = Vec::new();
        w32(&mut s, cmdline.len() as u32);
        for a in cmdline {
            wstr(&mut s, a);
        }
        s
    }

    /// `HEADER_EVENT_DESC`: count, attr size, then per event its attr, id count, name, ids.
    fn event_desc_section(&self) -> Vec<u8> {
        let mut s = Vec::new();
        w32(&mut s, self.events.len() as u32);
        w32(&mut s, FILE_ATTR_SIZE);
        for e in &self.events {
            s.extend_from_slice(&attr_bytes(&e.attr));
            w32(&mut s, e.ids.len() as u32);
            wstr(&mut s, &e.name);
            for id in &e.ids {
                w64(&mut s, *id);
            }
        }
        s
    }

    fn build_id_section(&self) -> Vec<u8> {
        let mut out = Vec::new();
        // A system-wide file maps the same objects in many processes: one look-up each.
        let mut ids: std::collections::HashMap<&str, Option<Vec<u8>>> =
            std::collections::HashMap::new();
        // One entry per object, with pid -1 (perf's HOST_KERNEL_ID), as perf writes its
        // host machine's objects: perf takes an entry with any other pid for a guest
        // machine's, and then finds no build id for the host's object of that name.
        let objects: BTreeSet<(u16, &str)> = self
            .mapped
            .iter()
            .map(|(_, cpumode, name)| (*cpumode, name.as_str()))
            .collect();
        for (cpumode, name) in objects {
            let id = ids
                .entry(name)
                .or_insert_with(|| {
                    if name.starts_with("[kernel.kallsyms]") {
                        crate::synth::kernel_build_id()
                    } else {
                        crate::synth::build_id_of(Path::new(name))
                    }
                })
                .clone();
            let Some(id) = id else { continue };
            let fname = if name.starts_with("[kernel.kallsyms]") {
                "[kernel.kallsyms]"
            } else {
                name
            };
            let name_len = (fname.len() + 1).next_multiple_of(64);
            let size = 8 + 4 + 24 + name_len;
            let mut r = Vec::with_capacity(size);
            // misc: cpumode, plus PERF_RECORD_MISC_BUILD_ID_SIZE with the size in byte 20.
            r.extend_from_slice(&header_bytes(&RecordHeader {
                type_: sys::PERF_RECORD_HEADER_BUILD_ID,
                misc: cpumode | (1 << 15),
                size: size as u16,
            }));
            w32(&mut r, -1i32 as u32);
            let mut idb = [0u8; 24];
            let n = id.len().min(20);
            idb[..n].copy_from_slice(&id[..n]);
            idb[20] = n as u8;
            r.extend_from_slice(&idb);
            r.extend_from_slice(fname.as_bytes());
            r.resize(size, 0);
            out.extend_from_slice(&r);
        }
        out
    }

    /// Write the feature sections and the final header; returns the bytes written.
    pub fn finish(mut self, cmdline: &[String]) -> io::Result<u64> {
        self.flush_round()?;
        if matches!(self.out, Out::Pipe(_)) {
            if let Out::Pipe(w) = &mut self.out {
                w.flush()?;
            }
            return Ok(self.data_len);
        }
        let mut feats = self.static_features();
        feats.push((f::CMDLINE, Self::cmdline_section(cmdline)));
        feats.push((f::EVENT_DESC, self.event_desc_section()));
        if self.first_time <= self.last_time {
            let mut s = Vec::new();
            w64(&mut s, self.first_time);
            w64(&mut s, self.last_time);
            feats.push((f::SAMPLE_TIME, s));
        }
        let ids = if self.opts.no_build_ids {
            Vec::new()
        } else {
            self.build_id_section()
        };
        if !ids.is_empty() {
            feats.push((f::BUILD_ID, ids));
        }
        if let Some(level) = self.opts.compress {
            let mut s = Vec::new();
            w32(&mut s, 0); // version
            w32(&mut s, 1); // zstd
            w32(&mut s, level as u32);
            let ratio = self.raw_bytes.max(1) / self.data_len.max(1);
            w32(&mut s, ratio.max(1) as u32);
            w32(&mut s, self.opts.chunk as u32);
            feats.push((f::COMPRESSED, s));
        }
        if let Some(blob) = self.tracing.take() {
            feats.push((f::TRACING_DATA, blob));
        }
        if let Some(progs) = &self.bpf_programs {
            feats.push((f::BPF_PROG_INFO, crate::bpf_prog_info::write(progs)));
            feats.push((f::BPF_BTF, crate::bpf_btf::write(&self.bpf_btfs)));
        }
        feats.sort_by_key(|x| x.0);
        let index_at = self.data_start + self.data_len;
        let mut at = index_at + 16 * feats.len() as u64;
        let mut index = Vec::new();
        for (_, body) in &feats {
            w64(&mut index, at);
            w64(&mut index, body.len() as u64);
            at += body.len() as u64;
        }
        self.raw_write(&index)?;
        for (_, body) in &feats {
            self.raw_write(body)?;
        }
        let bits: Vec<usize> = feats.iter().map(|x| x.0).collect();
        self.sync_header(&bits)?;
        Ok(at)
    }
}
