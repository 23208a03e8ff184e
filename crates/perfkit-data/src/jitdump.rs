//! jitdump files (`jit-PID.dump`): the code a JIT compiler generated, as perf's jvmti agent,
//! V8's `--perf-prof` and any JIT following `tools/perf/Documentation/jitdump-specification.txt`
//! write them.
//!
//! A file is a header (magic `JiTD`, version, header size, ELF machine, pid, timestamp,
//! flags) and records, each `id`, `total_size`, `timestamp` then a body:
//! `JIT_CODE_LOAD` (pid, tid, vma, code address and size, code index, NUL-terminated name,
//! the code bytes), `JIT_CODE_MOVE`, `JIT_CODE_DEBUG_INFO` (line table of the next load),
//! `JIT_CODE_CLOSE` and `JIT_CODE_UNWINDING_INFO`. Records of unknown kinds are skipped by
//! their size, as the specification asks. The file is in the writer's byte order; only
//! this machine's is read.

use std::fmt;

/// `JiTD` as a native u32.
const MAGIC: u32 = 0x4A69_5444;
/// Header flag: timestamps are the CPU's time-stamp counter, not CLOCK_MONOTONIC.
pub const FLAGS_ARCH_TIMESTAMP: u64 = 1;

/// The file header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Format version (1).
    pub version: u32,
    /// `e_machine` of the generated code.
    pub elf_mach: u32,
    /// Process that wrote the file.
    pub pid: u32,
    /// When the file was created.
    pub timestamp: u64,
    /// `FLAGS_*`.
    pub flags: u64,
}

/// One line of `JIT_CODE_DEBUG_INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DebugEntry {
    /// Code address of the line.
    pub addr: u64,
    /// Line number.
    pub line: u32,
    /// Discriminator.
    pub discrim: u32,
    /// Source file name.
    pub file: String,
}

/// A record of a jitdump file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JitRecord<'a> {
    /// `JIT_CODE_LOAD`: a function was generated.
    Load {
        /// Time of the record.
        timestamp: u64,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Virtual address of the code (the same as `code_addr` in practice).
        vma: u64,
        /// Where the code runs.
        code_addr: u64,
        /// Unique index of this code (names the ELF file).
        code_index: u64,
        /// Function name.
        name: &'a str,
        /// The machine code.
        code: &'a [u8],
    },
    /// `JIT_CODE_MOVE`: already loaded code moved.
    Move {
        /// Time of the record.
        timestamp: u64,
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
        /// Virtual address.
        vma: u64,
        /// Old address.
        old_code_addr: u64,
        /// New address.
        new_code_addr: u64,
        /// Code size.
        code_size: u64,
        /// Index of the code moved.
        code_index: u64,
    },
    /// `JIT_CODE_DEBUG_INFO`: source lines of the code at `code_addr` (the next load).
    DebugInfo {
        /// Code address the lines belong to.
        code_addr: u64,
        /// The lines.
        entries: Vec<DebugEntry>,
    },
    /// `JIT_CODE_CLOSE`: the JIT closed the file.
    Close,
    /// `JIT_CODE_UNWINDING_INFO`: the `.eh_frame` and `.eh_frame_hdr` of the next load's
    /// code, laid out as the JIT expects them in its ELF file: `.eh_frame` right after the
    /// code (rounded up to 8), `.eh_frame_hdr` right after `.eh_frame`.
    UnwindingInfo {
        /// Bytes the unwinding data occupies after the code in memory (perf's MMAP2 covers
        /// the code rounded up to 8 plus this).
        mapped_size: u64,
        /// The `.eh_frame` bytes.
        eh_frame: &'a [u8],
        /// The `.eh_frame_hdr` bytes.
        eh_frame_hdr: &'a [u8],
    },
    /// A record this reader does not know.
    Other {
        /// Record id.
        id: u32,
    },
}

/// A jitdump file that cannot be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitdumpError {
    /// Byte offset of the problem.
    pub offset: usize,
    /// What is wrong.
    pub what: String,
}

impl fmt::Display for JitdumpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "jitdump at byte {}: {}", self.offset, self.what)
    }
}

impl std::error::Error for JitdumpError {}

fn err(offset: usize, what: impl Into<String>) -> JitdumpError {
    JitdumpError {
        offset,
        what: what.into(),
    }
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, JitdumpError> {
    b.get(at..at + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap_or_default()))
        .ok_or_else(|| err(at, "truncated"))
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, JitdumpError> {
    b.get(at..at + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().unwrap_or_default()))
        .ok_or_else(|| err(at, "truncated"))
}

/// A NUL-terminated string at `at` (within `end`) and the offset after its NUL.
fn cstr_at(b: &[u8], at: usize, end: usize) -> Result<(&str, usize), JitdumpError> {
    let s = b.get(at..end).ok_or_else(|| err(at, "truncated"))?;
    let n = s
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| err(at, "a name without its NUL"))?;
    let name = std::str::from_utf8(&s[..n]).map_err(|_| err(at, "a name that is not UTF-8"))?;
    Ok((name, at + n + 1))
}

/// A parsed jitdump file over its bytes.
#[derive(Debug)]
pub struct Jitdump<'a> {
    /// The header.
    pub header: Header,
    bytes: &'a [u8],
    start: usize,
}

impl<'a> Jitdump<'a> {
    /// Check the header of `bytes`.
    pub fn parse(bytes: &'a [u8]) -> Result<Jitdump<'a>, JitdumpError> {
        let magic = u32_at(bytes, 0).map_err(|_| err(0, "too short for a jitdump header"))?;
        if magic == MAGIC.swap_bytes() {
            return Err(err(
                0,
                "written in the other byte order (a jitdump from another machine)",
            ));
        }
        if magic != MAGIC {
            return Err(err(0, format!("not a jitdump file (magic {magic:#x})")));
        }
        let total = u32_at(bytes, 8)? as usize;
        if total < 40 || total > bytes.len() {
            return Err(err(8, format!("header size {total} out of range")));
        }
        Ok(Jitdump {
            header: Header {
                version: u32_at(bytes, 4)?,
                elf_mach: u32_at(bytes, 12)?,
                pid: u32_at(bytes, 20)?,
                timestamp: u64_at(bytes, 24)?,
                flags: u64_at(bytes, 32)?,
            },
            bytes,
            start: total,
        })
    }

    /// The records, in file order. A record cut short (the JIT was still writing) ends the
    /// walk with an error after the complete ones.
    pub fn records(&self) -> impl Iterator<Item = Result<JitRecord<'a>, JitdumpError>> + '_ {
        let mut at = self.start;
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed || at + 16 > self.bytes.len() {
                return None;
            }
            let r = self.record_at(at);
            match &r {
                Ok((_, next)) => at = *next,
                Err(_) => failed = true,
            }
            Some(r.map(|(rec, _)| rec))
        })
    }

    fn record_at(&self, at: usize) -> Result<(JitRecord<'a>, usize), JitdumpError> {
        let b = self.bytes;
        let id = u32_at(b, at)?;
        let size = u32_at(b, at + 4)? as usize;
        let timestamp = u64_at(b, at + 8)?;
        let end = at + size;
        if size < 16 || end > b.len() {
            return Err(err(at, format!("record of {size} bytes runs past the end")));
        }
        let p = at + 16;
        let rec = match id {
            0 => {
                let code_size = u64_at(b, p + 24)? as usize;
                let (name, after) = cstr_at(b, p + 40, end)?;
                let code = b
                    .get(after..after + code_size)
                    .filter(|_| after + code_size <= end)
                    .ok_or_else(|| err(after, "code runs past its record"))?;
                JitRecord::Load {
                    timestamp,
                    pid: u32_at(b, p)?,
                    tid: u32_at(b, p + 4)?,
                    vma: u64_at(b, p + 8)?,
                    code_addr: u64_at(b, p + 16)?,
                    code_index: u64_at(b, p + 32)?,
                    name,
                    code,
                }
            }
            1 => JitRecord::Move {
                timestamp,
                pid: u32_at(b, p)?,
                tid: u32_at(b, p + 4)?,
                vma: u64_at(b, p + 8)?,
                old_code_addr: u64_at(b, p + 16)?,
                new_code_addr: u64_at(b, p + 24)?,
                code_size: u64_at(b, p + 32)?,
                code_index: u64_at(b, p + 40)?,
            },
            2 => {
                let code_addr = u64_at(b, p)?;
                let n = u64_at(b, p + 8)?;
                let mut entries = Vec::new();
                let mut q = p + 16;
                for _ in 0..n {
                    let (file, next) = cstr_at(b, q + 16, end)?;
                    entries.push(DebugEntry {
                        addr: u64_at(b, q)?,
                        line: u32_at(b, q + 8)?,
                        discrim: u32_at(b, q + 12)?,
                        file: file.to_string(),
                    });
                    q = next;
                }
                JitRecord::DebugInfo { code_addr, entries }
            }
            3 => JitRecord::Close,
            4 => {
                // unwinding_size, eh_frame_hdr_size, mapped_size, then eh_frame and
                // eh_frame_hdr (unwinding_size bytes in all; the record may be padded).
                let size = u64_at(b, p)? as usize;
                let hdr_size = u64_at(b, p + 8)? as usize;
                let data = b
                    .get(p + 24..p + 24 + size)
                    .filter(|_| p + 24 + size <= end && hdr_size <= size)
                    .ok_or_else(|| {
                        err(
                            p,
                            format!(
                                "unwinding info of {size} bytes (header {hdr_size}) does not \
                                 fit its record"
                            ),
                        )
                    })?;
                let (eh_frame, eh_frame_hdr) = data.split_at(size - hdr_size);
                JitRecord::UnwindingInfo {
                    mapped_size: u64_at(b, p + 16)?,
                    eh_frame,
                    eh_frame_hdr,
                }
            }
            id => JitRecord::Other { id },
        };
        Ok((rec, end))
    }
}

/// Whether `path` names a jitdump file as perf recognizes one: `jit-PID.dump` with the
/// pid of the process that mapped it.
pub fn is_jitdump_name(path: &str, pid: u32) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.strip_prefix("jit-")
        .and_then(|r| r.strip_suffix(".dump"))
        .and_then(|n| n.parse::<u32>().ok())
        == Some(pid)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A jitdump with one load of `code` named `name` at `addr`.
    pub fn sample(name: &str, addr: u64, code: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        for x in [MAGIC, 1, 40, 62, 0, 77] {
            v.extend_from_slice(&x.to_ne_bytes());
        }
        v.extend_from_slice(&5u64.to_ne_bytes());
        v.extend_from_slice(&0u64.to_ne_bytes());
        let size = 16 + 40 + name.len() + 1 + code.len();
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&(size as u32).to_ne_bytes());
        v.extend_from_slice(&1000u64.to_ne_bytes());
        v.extend_from_slice(&77u32.to_ne_bytes());
        v.extend_from_slice(&78u32.to_ne_bytes());
        for x in [addr, addr, code.len() as u64, 3] {
            v.extend_from_slice(&x.to_ne_bytes());
        }
        v.extend_from_slice(name.as_bytes());
        v.push(0);
        v.extend_from_slice(code);
        // A record of an id this reader does not know, then a truncated one.
        v.extend_from_slice(&9u32.to_ne_bytes());
        v.extend_from_slice(&24u32.to_ne_bytes());
        v.extend_from_slice(&[0; 16]);
        v.extend_from_slice(&0u32.to_ne_bytes());
        v.extend_from_slice(&500u32.to_ne_bytes());
        v.extend_from_slice(&[0; 8]);
        v
    }

    #[test]
    fn loads_are_read_and_a_truncated_tail_is_an_error() {
        let bytes = sample("hot", 0x7000, &[0x90, 0xc3]);
        let d = Jitdump::parse(&bytes).unwrap();
        assert_eq!((d.header.pid, d.header.elf_mach), (77, 62));
        let recs: Vec<_> = d.records().collect();
        assert_eq!(recs.len(), 3, "{recs:?}");
        assert_eq!(
            recs[0],
            Ok(JitRecord::Load {
                timestamp: 1000,
                pid: 77,
                tid: 78,
                vma: 0x7000,
                code_addr: 0x7000,
                code_index: 3,
                name: "hot",
                code: &[0x90, 0xc3],
            })
        );
        assert_eq!(recs[1], Ok(JitRecord::Other { id: 9 }));
        assert!(recs[2].is_err());
        assert!(Jitdump::parse(b"ELF").is_err());
        let mut swapped = bytes.clone();
        swapped[..4].reverse();
        assert!(
            Jitdump::parse(&swapped)
                .unwrap_err()
                .what
                .contains("byte order")
        );
        assert!(is_jitdump_name("/tmp/x/jit-77.dump", 77));
        assert!(!is_jitdump_name("/tmp/x/jit-77.dump", 78));
        assert!(!is_jitdump_name("/tmp/x/jit-77.so", 77));
    }

    #[test]
    fn unwinding_info_is_split_into_eh_frame_and_its_header() {
        let mut v = sample("f", 0x7000, &[0xc3]);
        v.truncate(v.len() - 40); // drop the unknown and the truncated records
        let unwinding = |v: &mut Vec<u8>, size: u64, hdr: u64| {
            v.extend_from_slice(&4u32.to_ne_bytes());
            v.extend_from_slice(&(16 + 24 + 8u32).to_ne_bytes());
            v.extend_from_slice(&0u64.to_ne_bytes());
            for x in [size, hdr, 8] {
                v.extend_from_slice(&x.to_ne_bytes());
            }
            v.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        };
        unwinding(&mut v, 8, 3);
        unwinding(&mut v, 9, 3);
        let d = Jitdump::parse(&v).unwrap();
        let recs: Vec<_> = d.records().collect();
        assert_eq!(
            recs[1],
            Ok(JitRecord::UnwindingInfo {
                mapped_size: 8,
                eh_frame: &[1, 2, 3, 4, 5],
                eh_frame_hdr: &[6, 7, 8],
            })
        );
        assert!(
            recs[2].as_ref().unwrap_err().what.contains("does not fit"),
            "{recs:?}"
        );
    }
}
