//! A compact perf.data writer (file mode, native byte order): header, attrs with their
//! ids, the data section, and the feature sections perf shows first (EVENT_DESC, HOSTNAME,
//! OSRELEASE, VERSION, ARCH, NRCPUS, CPUDESC, TOTAL_MEM, CMDLINE, SAMPLE_TIME). The full
//! writer (pipe mode, zstd, every feature) is the `perfkit-data` crate, which replaces it.
//!
//! The header is rewritten after every round, so a file whose recording was cut short
//! (Ctrl-C, a crash, a full disk) is readable up to the last complete round.

use anyhow::{Context, Result, bail};
use perfkit::sys::{self, perf_event_attr};
use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

const HEADER_SIZE: u64 = 104;
/// perf 6.1 refuses attrs larger than this.
const FILE_ATTR_SIZE: u32 = sys::PERF_ATTR_SIZE_VER7;

/// One event of the file.
pub struct FileEvent {
    /// Its attr.
    pub attr: perf_event_attr,
    /// Its name (EVENT_DESC).
    pub name: String,
    /// The ids of its instances.
    pub ids: Vec<u64>,
}

/// A perf.data file being written.
pub struct PerfDataWriter {
    path: PathBuf,
    out: BufWriter<File>,
    events: Vec<FileEvent>,
    data_start: u64,
    data_len: u64,
    first_time: u64,
    last_time: u64,
}

fn w32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_ne_bytes());
}
fn w64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}
/// perf's string: u32 length (padded to 64 bytes' alignment as perf does), NUL-padded.
fn wstr(v: &mut Vec<u8>, s: &str) {
    let len = (s.len() + 1).next_multiple_of(64);
    w32(v, len as u32);
    v.extend_from_slice(s.as_bytes());
    v.resize(v.len() + len - s.len(), 0);
}

impl PerfDataWriter {
    /// Create `path` (mode 0600; an existing file is renamed to `path.old` as perf does).
    pub fn create(path: &Path, events: Vec<FileEvent>) -> Result<PerfDataWriter> {
        for e in &events {
            let needed = perfkit::Attr::from_raw(e.attr).min_size();
            if needed > FILE_ATTR_SIZE {
                bail!(
                    "event {} uses attr fields newer than perf.data files can hold ({needed} bytes)",
                    e.name
                );
            }
        }
        if path.exists() {
            let mut old = path.as_os_str().to_owned();
            old.push(".old");
            std::fs::rename(path, &old)
                .with_context(|| format!("cannot move the old {} aside", path.display()))?;
        }
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut w = PerfDataWriter {
            path: path.to_path_buf(),
            out: BufWriter::with_capacity(1 << 20, file),
            events,
            data_start: 0,
            data_len: 0,
            first_time: u64::MAX,
            last_time: 0,
        };
        // Attrs and ids right after the header; data after them.
        let attrs = w.attrs_section();
        w.data_start = HEADER_SIZE + attrs.len() as u64;
        w.out.write_all(&w.header(&[]))?;
        w.out.write_all(&attrs)?;
        Ok(w)
    }

    fn ids_offset(&self) -> u64 {
        HEADER_SIZE + (self.events.len() as u64) * (u64::from(FILE_ATTR_SIZE) + 16)
    }

    fn attrs_section(&self) -> Vec<u8> {
        let mut v = Vec::new();
        let mut ids_at = self.ids_offset();
        for e in &self.events {
            let mut a = e.attr;
            a.size = FILE_ATTR_SIZE;
            v.extend_from_slice(&a.as_bytes()[..FILE_ATTR_SIZE as usize]);
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
        w64(&mut h, 0); // event_types
        w64(&mut h, 0);
        let mut bits = [0u8; 32];
        for &f in features {
            bits[f / 8] |= 1 << (f % 8);
        }
        h.extend_from_slice(&bits);
        h
    }

    /// Append one record exactly as the kernel wrote it (header included), split in two
    /// parts when it wrapped the ring.
    pub fn write_record(&mut self, parts: &[&[u8]]) -> Result<()> {
        for p in parts {
            self.out.write_all(p).map_err(|e| self.io_error(e))?;
            self.data_len += p.len() as u64;
        }
        Ok(())
    }

    /// Note a sample's timestamp (SAMPLE_TIME feature).
    pub fn saw_time(&mut self, t: u64) {
        self.first_time = self.first_time.min(t);
        self.last_time = self.last_time.max(t);
    }

    /// Write a FINISHED_ROUND record and make the file valid up to here.
    pub fn finish_round(&mut self) -> Result<()> {
        let mut r = Vec::with_capacity(8);
        w32(&mut r, sys::PERF_RECORD_FINISHED_ROUND);
        w32(&mut r, 8 << 16);
        self.write_record(&[&r])?;
        self.sync_header(&[])
    }

    fn io_error(&self, e: std::io::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "writing {}: {e}; the file holds the data up to the last complete round",
            self.path.display()
        )
    }

    fn sync_header(&mut self, features: &[usize]) -> Result<()> {
        let h = self.header(features);
        self.out.flush().map_err(|e| self.io_error(e))?;
        let f = self.out.get_mut();
        let res = (|| {
            let end = f.stream_position()?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(&h)?;
            f.seek(SeekFrom::Start(end))?;
            Ok::<(), std::io::Error>(())
        })();
        res.map_err(|e| self.io_error(e))
    }

    /// Write the feature sections and the final header.
    pub fn finish(mut self, cmdline: &[String]) -> Result<u64> {
        let mut feats: Vec<(usize, Vec<u8>)> = Vec::new();
        let uname = rustix_uname();
        let mut s = Vec::new();
        wstr(&mut s, &uname.0);
        feats.push((3, s)); // HOSTNAME
        let mut s = Vec::new();
        wstr(&mut s, &uname.1);
        feats.push((4, s)); // OSRELEASE
        let mut s = Vec::new();
        wstr(&mut s, concat!("perfkit ", env!("CARGO_PKG_VERSION")));
        feats.push((5, s)); // VERSION
        let mut s = Vec::new();
        wstr(&mut s, std::env::consts::ARCH);
        feats.push((6, s)); // ARCH
        let cpus = crate::topology::online_cpus().len() as u32;
        let mut s = Vec::new();
        w32(&mut s, cpus);
        w32(&mut s, cpus);
        feats.push((7, s)); // NRCPUS
        if let Some(desc) = cpu_description() {
            let mut s = Vec::new();
            wstr(&mut s, &desc);
            feats.push((8, s)); // CPUDESC
        }
        if let Some(kb) = total_mem_kb() {
            let mut s = Vec::new();
            w64(&mut s, kb);
            feats.push((10, s)); // TOTAL_MEM
        }
        let mut s = Vec::new();
        w32(&mut s, cmdline.len() as u32);
        for a in cmdline {
            wstr(&mut s, a);
        }
        feats.push((11, s)); // CMDLINE
        let mut s = Vec::new();
        w32(&mut s, self.events.len() as u32);
        w32(&mut s, FILE_ATTR_SIZE);
        for e in &self.events {
            let mut a = e.attr;
            a.size = FILE_ATTR_SIZE;
            s.extend_from_slice(&a.as_bytes()[..FILE_ATTR_SIZE as usize]);
            w32(&mut s, e.ids.len() as u32);
            wstr(&mut s, &e.name);
            for id in &e.ids {
                w64(&mut s, *id);
            }
        }
        feats.push((12, s)); // EVENT_DESC
        if self.first_time <= self.last_time {
            let mut s = Vec::new();
            w64(&mut s, self.first_time);
            w64(&mut s, self.last_time);
            feats.push((21, s)); // SAMPLE_TIME
        }
        feats.sort_by_key(|f| f.0);
        self.out.flush().map_err(|e| self.io_error(e))?;
        // The feature index follows the data, then the sections.
        let index_at = self.data_start + self.data_len;
        let mut at = index_at + 16 * feats.len() as u64;
        let mut index = Vec::new();
        for (_, body) in &feats {
            w64(&mut index, at);
            w64(&mut index, body.len() as u64);
            at += body.len() as u64;
        }
        self.out.write_all(&index).map_err(|e| self.io_error(e))?;
        for (_, body) in &feats {
            self.out.write_all(body).map_err(|e| self.io_error(e))?;
        }
        let bits: Vec<usize> = feats.iter().map(|f| f.0).collect();
        self.sync_header(&bits)?;
        self.out.flush().map_err(|e| self.io_error(e))?;
        Ok(at)
    }
}

fn rustix_uname() -> (String, String) {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    (
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/osrelease"),
    )
}

fn cpu_description() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn total_mem_kb() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    info.lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// The `sample_id` trailer a synthesized record needs for `attr` (sample_id_all), with
/// pid/tid and time 0.
pub fn sample_id_trailer(attr: &perf_event_attr, pid: i32, tid: i32, id: u64) -> Vec<u8> {
    let mut v = Vec::new();
    if !attr.has(sys::attr_flags::SAMPLE_ID_ALL) {
        return v;
    }
    let st = attr.sample_type;
    if st & sys::PERF_SAMPLE_TID != 0 {
        w32(&mut v, pid as u32);
        w32(&mut v, tid as u32);
    }
    if st & sys::PERF_SAMPLE_TIME != 0 {
        w64(&mut v, 0);
    }
    if st & sys::PERF_SAMPLE_ID != 0 {
        w64(&mut v, id);
    }
    if st & sys::PERF_SAMPLE_STREAM_ID != 0 {
        w64(&mut v, id);
    }
    if st & sys::PERF_SAMPLE_CPU != 0 {
        w64(&mut v, 0);
    }
    if st & sys::PERF_SAMPLE_IDENTIFIER != 0 {
        w64(&mut v, id);
    }
    v
}

/// A synthesized record: header, body, trailer, padded to 8 bytes.
pub fn record(type_: u32, misc: u16, body: &[u8], trailer: &[u8]) -> Vec<u8> {
    let len = (8 + body.len()).next_multiple_of(8) + trailer.len();
    let mut v = Vec::with_capacity(len);
    w32(&mut v, type_);
    w32(&mut v, u32::from(misc) | ((len as u32) << 16));
    v.extend_from_slice(body);
    v.resize((8 + body.len()).next_multiple_of(8), 0);
    v.extend_from_slice(trailer);
    v
}

/// `PERF_RECORD_MMAP` for the kernel image (`[kernel.kallsyms]_text`, pid -1), which perf
/// needs to attribute kernel samples.
pub fn kernel_mmap(attr: &perf_event_attr, id: u64) -> Option<Vec<u8>> {
    let syms = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let mut text = None;
    let mut end = 0u64;
    for line in syms.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(_kind), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let Ok(a) = u64::from_str_radix(addr, 16) else {
            continue;
        };
        if name == "_text" {
            text = Some(a);
        }
        if it.next().is_none() {
            end = end.max(a);
        }
    }
    let start = text.filter(|&t| t != 0)?;
    let mut b = Vec::new();
    w32(&mut b, u32::MAX); // pid -1
    w32(&mut b, 0);
    w64(&mut b, start);
    w64(&mut b, end.saturating_sub(start).max(1));
    w64(&mut b, start);
    b.extend_from_slice(b"[kernel.kallsyms]_text\0");
    Some(record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &b,
        &sample_id_trailer(attr, -1, -1, id),
    ))
}
