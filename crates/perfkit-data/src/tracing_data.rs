//! perf's tracing data (`HEADER_TRACING_DATA`): the tracefs `format` files of the
//! tracepoints a file recorded, so that a reader can decode their RAW sample data on
//! another machine or after a reboot.
//!
//! The layout (perf's `trace-event-info.c` writes it, `trace-event-read.c` reads it):
//!
//! ```text
//! "\x17\x08\x44tracing"  version "0.6\0"  u8 big_endian  u8 sizeof(long)  u32 page_size
//! "header_page\0"  u64 size  bytes           (tracefs events/header_page)
//! "header_event\0" u64 size  bytes           (tracefs events/header_event)
//! u32 n  { u64 size  bytes }*n               ftrace formats (events/ftrace/*/format)
//! u32 n  { "system\0"  u32 m  { u64 size  bytes }*m }*n     event formats by system
//! u32 size  bytes                            kallsyms (perf writes it empty)
//! u32 size  bytes                            printk formats (tracefs printk_formats)
//! u64 size  bytes                            saved cmdlines (version 0.6; may be empty)
//! ```
//!
//! Numbers are in the byte order the `big_endian` byte gives.

use crate::ReadError;
use perfkit_records::Endian;
use std::path::{Path, PathBuf};

const MAGIC: &[u8] = b"\x17\x08\x44tracing";
const VERSION: &str = "0.6";

/// The parsed tracing data.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TracingData {
    /// `"0.6"` for perf since 2.6.3x; `"0.5"` has no saved cmdlines.
    pub version: String,
    /// The numbers in the blob (and the traced kernel) are big-endian.
    pub big_endian: bool,
    /// `sizeof(long)` of the traced kernel.
    pub long_size: u8,
    /// Page size of the traced machine.
    pub page_size: u32,
    /// `events/header_page`.
    pub header_page: Vec<u8>,
    /// `events/header_event`.
    pub header_event: Vec<u8>,
    /// `events/ftrace/*/format` files.
    pub ftrace_formats: Vec<Vec<u8>>,
    /// (system, `format` file) for each recorded tracepoint.
    pub event_formats: Vec<(String, Vec<u8>)>,
    /// kallsyms text (usually empty).
    pub kallsyms: Vec<u8>,
    /// `printk_formats`.
    pub printk: Vec<u8>,
    /// `saved_cmdlines` (pid comm lines; usually empty).
    pub saved_cmdlines: Vec<u8>,
}

/// Where tracefs is mounted, if it is.
pub fn tracefs() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("events/header_page").exists())
}

struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    big: bool,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: u64, what: &str) -> Result<&'a [u8], ReadError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| {
                ReadError::truncated(
                    self.pos as u64,
                    format!("tracing data: {what}"),
                    n,
                    (self.b.len() - self.pos) as u64,
                )
            })?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self, what: &str) -> Result<u32, ReadError> {
        let s: [u8; 4] = self.take(4, what)?.try_into().unwrap_or_default();
        Ok(if self.big {
            u32::from_be_bytes(s)
        } else {
            u32::from_le_bytes(s)
        })
    }
    fn u64(&mut self, what: &str) -> Result<u64, ReadError> {
        let s: [u8; 8] = self.take(8, what)?.try_into().unwrap_or_default();
        Ok(if self.big {
            u64::from_be_bytes(s)
        } else {
            u64::from_le_bytes(s)
        })
    }
    fn cstr(&mut self, what: &str) -> Result<&'a str, ReadError> {
        let rest = &self.b[self.pos..];
        let at = self.pos as u64;
        let n = rest.iter().position(|&c| c == 0).ok_or_else(|| {
            ReadError::invalid(at, format!("tracing data: {what} has no terminating NUL"))
        })?;
        let s = std::str::from_utf8(&rest[..n])
            .map_err(|_| ReadError::invalid(at, format!("tracing data: {what} is not UTF-8")))?;
        self.pos += n + 1;
        Ok(s)
    }
    /// `name\0 u64 size bytes`, with `name` checked.
    fn named(&mut self, name: &str) -> Result<Vec<u8>, ReadError> {
        let at = self.pos as u64;
        let got = self.cstr(name)?;
        if got != name {
            return Err(ReadError::invalid(
                at,
                format!("tracing data: expected `{name}`, found `{got}`"),
            ));
        }
        let n = self.u64(name)?;
        Ok(self.take(n, name)?.to_vec())
    }
}

impl TracingData {
    /// Parse the blob of a `HEADER_TRACING_DATA` feature section or record. Trailing
    /// padding after the saved cmdlines is ignored. Errors name the part and its offset
    /// in `b` (not in the file).
    pub fn parse(b: &[u8]) -> Result<TracingData, ReadError> {
        if !b.starts_with(MAGIC) {
            return Err(ReadError::invalid(
                0,
                "tracing data: no `\\x17\\x08\\x44tracing` magic",
            ));
        }
        let mut c = Cursor {
            b,
            pos: MAGIC.len(),
            big: false,
        };
        let version = c.cstr("version")?.to_string();
        let head = c.take(2, "byte order and long size")?;
        c.big = head[0] != 0;
        let long_size = head[1];
        let page_size = c.u32("page size")?;
        let header_page = c.named("header_page")?;
        let header_event = c.named("header_event")?;
        let n = c.u32("ftrace format count")?;
        let mut ftrace_formats = Vec::new();
        for _ in 0..n {
            let size = c.u64("ftrace format size")?;
            ftrace_formats.push(c.take(size, "ftrace format")?.to_vec());
        }
        let systems = c.u32("system count")?;
        let mut event_formats = Vec::new();
        for _ in 0..systems {
            let sys = c.cstr("system name")?.to_string();
            let m = c.u32("event format count")?;
            for _ in 0..m {
                let size = c.u64("event format size")?;
                event_formats.push((sys.clone(), c.take(size, "event format")?.to_vec()));
            }
        }
        let n = c.u32("kallsyms size")?;
        let kallsyms = c.take(u64::from(n), "kallsyms")?.to_vec();
        let n = c.u32("printk formats size")?;
        let printk = c.take(u64::from(n), "printk formats")?.to_vec();
        let saved_cmdlines = if version.as_str() >= "0.6" {
            let n = c.u64("saved cmdlines size")?;
            c.take(n, "saved cmdlines")?.to_vec()
        } else {
            Vec::new()
        };
        Ok(TracingData {
            version,
            big_endian: c.big,
            long_size,
            page_size,
            header_page,
            header_event,
            ftrace_formats,
            event_formats,
            kallsyms,
            printk,
            saved_cmdlines,
        })
    }

    /// The blob, its numbers in the byte order `big_endian` says (the recording
    /// machine's).
    pub fn to_bytes(&self) -> Vec<u8> {
        let e = if self.big_endian {
            Endian::Big
        } else {
            Endian::Little
        };
        let mut v = Vec::new();
        let n32 = |v: &mut Vec<u8>, x: usize| v.extend_from_slice(&e.u32_bytes(x as u32));
        let n64 = |v: &mut Vec<u8>, x: usize| v.extend_from_slice(&e.u64_bytes(x as u64));
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(self.version.as_bytes());
        v.push(0);
        v.push(u8::from(self.big_endian));
        v.push(self.long_size);
        v.extend_from_slice(&e.u32_bytes(self.page_size));
        for (name, body) in [
            ("header_page", &self.header_page),
            ("header_event", &self.header_event),
        ] {
            v.extend_from_slice(name.as_bytes());
            v.push(0);
            n64(&mut v, body.len());
            v.extend_from_slice(body);
        }
        n32(&mut v, self.ftrace_formats.len());
        for f in &self.ftrace_formats {
            n64(&mut v, f.len());
            v.extend_from_slice(f);
        }
        // Group by system, in order of first appearance.
        let mut systems: Vec<&str> = Vec::new();
        for (s, _) in &self.event_formats {
            if !systems.contains(&s.as_str()) {
                systems.push(s);
            }
        }
        n32(&mut v, systems.len());
        for s in systems {
            v.extend_from_slice(s.as_bytes());
            v.push(0);
            let fmts: Vec<&Vec<u8>> = self
                .event_formats
                .iter()
                .filter(|(sys, _)| sys == s)
                .map(|(_, f)| f)
                .collect();
            n32(&mut v, fmts.len());
            for f in fmts {
                n64(&mut v, f.len());
                v.extend_from_slice(f);
            }
        }
        n32(&mut v, self.kallsyms.len());
        v.extend_from_slice(&self.kallsyms);
        n32(&mut v, self.printk.len());
        v.extend_from_slice(&self.printk);
        n64(&mut v, self.saved_cmdlines.len());
        v.extend_from_slice(&self.saved_cmdlines);
        v
    }

    /// Read what perf records for the tracepoints with these ids from the tracefs at
    /// `tracefs`: the headers, printk formats, and each event's `format` file (found by
    /// its `id`). An id tracefs does not know is an error naming it.
    pub fn from_tracefs(tracefs: &Path, ids: &[u64]) -> std::io::Result<TracingData> {
        let events = tracefs.join("events");
        let mut want: Vec<u64> = ids.to_vec();
        want.sort_unstable();
        want.dedup();
        let mut found: Vec<(u64, String, Vec<u8>)> = Vec::new();
        let mut systems: Vec<_> = std::fs::read_dir(&events)?
            .filter_map(|e| e.ok())
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name())
            .collect();
        systems.sort();
        'outer: for sys in systems {
            if sys == "ftrace" {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(events.join(&sys)) else {
                continue;
            };
            for ev in entries.filter_map(|e| e.ok()) {
                let id = std::fs::read_to_string(ev.path().join("id"))
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok());
                if let Some(id) = id.filter(|id| want.binary_search(id).is_ok()) {
                    let format = std::fs::read(ev.path().join("format"))?;
                    found.push((id, sys.to_string_lossy().into_owned(), format));
                    if found.len() == want.len() {
                        break 'outer;
                    }
                }
            }
        }
        if let Some(missing) = want.iter().find(|id| !found.iter().any(|f| f.0 == **id)) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("no tracepoint with id {missing} under {}", events.display()),
            ));
        }
        // In the order asked for.
        found.sort_by_key(|(id, ..)| ids.iter().position(|i| i == id));
        Ok(TracingData {
            version: VERSION.into(),
            big_endian: cfg!(target_endian = "big"),
            long_size: std::mem::size_of::<usize>() as u8,
            page_size: page_size(),
            header_page: read_in_one(&events.join("header_page"))?,
            header_event: read_in_one(&events.join("header_event"))?,
            ftrace_formats: Vec::new(),
            event_formats: found.into_iter().map(|(_, s, f)| (s, f)).collect(),
            kallsyms: Vec::new(),
            printk: std::fs::read(tracefs.join("printk_formats")).unwrap_or_default(),
            saved_cmdlines: Vec::new(),
        })
    }

    /// The `format` files of the recorded events, as text.
    pub fn formats(&self) -> impl Iterator<Item = (&str, std::borrow::Cow<'_, str>)> {
        self.event_formats
            .iter()
            .map(|(s, f)| (s.as_str(), String::from_utf8_lossy(f)))
    }
}

/// Read a tracefs file whose handler answers only the first `read(2)` (header_page and
/// header_event return 0 at any non-zero offset, so `fs::read`'s 32-byte probe read would
/// truncate them): one read with a buffer larger than they ever are.
fn read_in_one(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 << 10];
    let mut n = 0;
    loop {
        let got = f.read(&mut buf[n..])?;
        if got == 0 || n + got == buf.len() {
            n += got;
            break;
        }
        n += got;
    }
    buf.truncate(n);
    Ok(buf)
}

/// The page size from the auxiliary vector (`AT_PAGESZ`), without `unsafe`.
fn page_size() -> u32 {
    const AT_PAGESZ: u64 = 6;
    let auxv = std::fs::read("/proc/self/auxv").unwrap_or_default();
    auxv.chunks_exact(16)
        .map(|p| {
            let w = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or_default());
            (w(&p[..8]), w(&p[8..]))
        })
        .find(|&(k, _)| k == AT_PAGESZ)
        .and_then(|(_, v)| u32::try_from(v).ok())
        .unwrap_or(4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TracingData {
        TracingData {
            version: "0.6".into(),
            big_endian: cfg!(target_endian = "big"),
            long_size: 8,
            page_size: 4096,
            header_page: b"field: u64 timestamp;".to_vec(),
            header_event: b"# compressed entry header".to_vec(),
            ftrace_formats: vec![b"name: function".to_vec()],
            event_formats: vec![
                ("sched".into(), b"name: sched_switch\nID: 1\n".to_vec()),
                ("irq".into(), b"name: irq_handler_entry\nID: 2\n".to_vec()),
                ("sched".into(), b"name: sched_wakeup\nID: 3\n".to_vec()),
            ],
            kallsyms: Vec::new(),
            printk: b"0xffff : \"hello\"\n".to_vec(),
            saved_cmdlines: b"1 init\n".to_vec(),
        }
    }

    #[test]
    fn the_other_byte_order_round_trips() {
        let t = TracingData {
            big_endian: !cfg!(target_endian = "big"),
            ..sample()
        };
        let bytes = t.to_bytes();
        assert_eq!(bytes[MAGIC.len() + 4], u8::from(t.big_endian));
        let back = TracingData::parse(&bytes).unwrap();
        assert_eq!((back.big_endian, back.page_size), (t.big_endian, 4096));
        assert_eq!(back.event_formats.len(), 3);
        assert_eq!(back.to_bytes(), bytes);
    }

    #[test]
    fn round_trip_groups_by_system() {
        let t = sample();
        let back = TracingData::parse(&t.to_bytes()).unwrap();
        assert_eq!(back.version, "0.6");
        assert_eq!(back.printk, t.printk);
        assert_eq!(back.saved_cmdlines, t.saved_cmdlines);
        // Grouped by system in order of first appearance.
        let names: Vec<&str> = back.event_formats.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(names, ["sched", "sched", "irq"]);
        // Padding after the end (pipe records are padded to 8 bytes) is ignored.
        let mut padded = t.to_bytes();
        padded.extend_from_slice(&[0; 7]);
        assert_eq!(TracingData::parse(&padded).unwrap().event_formats.len(), 3);
    }

    #[test]
    fn every_truncation_is_an_error_not_a_panic() {
        let b = sample().to_bytes();
        for cut in 0..b.len() - 8 {
            let e = TracingData::parse(&b[..cut]).unwrap_err();
            assert!(
                e.to_string().contains("tracing data:") || cut < MAGIC.len(),
                "{cut}: {e}"
            );
            assert!(e.offset().is_some_and(|o| o <= cut as u64), "{cut}: {e}");
        }
        // A size field of 2^64-1 is an error, not an allocation.
        let mut huge = b.clone();
        let at = MAGIC.len() + 4 + 6 + "header_page\0".len();
        huge[at..at + 8].copy_from_slice(&u64::MAX.to_ne_bytes());
        assert!(matches!(
            TracingData::parse(&huge).unwrap_err(),
            ReadError::Truncated {
                needed: u64::MAX,
                ..
            }
        ));
    }
}
