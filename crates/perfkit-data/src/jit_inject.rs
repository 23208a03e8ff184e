//! `perf inject --jit`: the MMAP of a `jit-PID.dump` file in a recording is replaced by one
//! MMAP2 per function the JIT loaded, each over an ELF file written next to the dump
//! (`jitted-PID-N.so`, see [`crate::jit_elf`]), stamped with the load's time, so reports
//! name the jitted functions. `JIT_CODE_MOVE` maps the moved code's file at its new
//! address. After a dump was read, the anonymous mappings of its process (`//anon`,
//! `[anon:`, `/memfd:`) are dropped, as perf drops them: the jitted code lives there.
//!
//! `JIT_CODE_UNWINDING_INFO` puts `.eh_frame`/`.eh_frame_hdr` in the next load's file (and
//! its MMAP2 covers them, as perf's), so DWARF unwinding goes through jitted code.
//!
//! The JIT's timestamps are CLOCK_MONOTONIC, so the recording must use that clock
//! (`record -k 1`), as perf requires; time-stamp-counter dumps
//! (`JITDUMP_FLAGS_ARCH_TIMESTAMP`) are refused.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use perfkit_sys::{self as sys, perf_event_attr};

use crate::jit_elf;
use crate::jitdump::{JitRecord, Jitdump, is_jitdump_name};

/// CLOCK_MONOTONIC.
const CLOCK_MONOTONIC: i32 = 1;

/// The state of a `--jit` copy: dumps read, files written, processes with jitted code.
#[derive(Debug, Default)]
pub struct JitInjector {
    attr: perf_event_attr,
    id: u64,
    jit_pids: BTreeSet<u32>,
    /// The ELF file of each (pid, code index), for moves.
    files: HashMap<(u32, u64), PathBuf>,
    /// Dumps already read.
    done: BTreeSet<String>,
    /// ELF files written.
    pub written: u64,
}

/// What to do with one record of the input.
#[derive(Debug)]
pub enum JitAction {
    /// Copy it.
    Keep,
    /// Drop it, writing these records in its place.
    Replace(Vec<Vec<u8>>),
}

impl JitInjector {
    /// An injector for a recording whose first event is `attr` with first id `id`
    /// (the injected MMAP2 records carry its `sample_id` fields). Refused, with perf's
    /// reason, when the events do not all use CLOCK_MONOTONIC.
    pub fn new<'a>(
        attrs: impl IntoIterator<Item = &'a perf_event_attr>,
        id: u64,
    ) -> Result<JitInjector, String> {
        let attrs: Vec<&perf_event_attr> = attrs.into_iter().collect();
        let Some(first) = attrs.first() else {
            return Err("the recording has no events".to_string());
        };
        let mono = attrs
            .iter()
            .all(|a| a.has(sys::attr_flags::USE_CLOCKID) && a.clockid == CLOCK_MONOTONIC);
        if !mono {
            return Err(
                "jitted code must be sampled with perf record -k 1 (CLOCK_MONOTONIC, the \
                 jitdump's clock): record again with -k 1"
                    .to_string(),
            );
        }
        Ok(JitInjector {
            attr: **first,
            id,
            ..JitInjector::default()
        })
    }

    /// Look at one record of the input (`type_`, `misc`, body after the header).
    pub fn process(&mut self, type_: u32, body: &[u8]) -> Result<JitAction, String> {
        let name_at = match type_ {
            sys::PERF_RECORD_MMAP => 32,
            sys::PERF_RECORD_MMAP2 => 64,
            _ => return Ok(JitAction::Keep),
        };
        let pid = body
            .get(..4)
            .map_or(0, |b| u32::from_ne_bytes(b.try_into().unwrap_or_default()));
        let name = body.get(name_at..).unwrap_or_default();
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let name = String::from_utf8_lossy(&name[..end]).into_owned();
        if is_jitdump_name(&name, pid) {
            if !self.done.insert(name.clone()) {
                return Ok(JitAction::Replace(Vec::new()));
            }
            let recs = self.read_dump(Path::new(&name))?;
            self.jit_pids.insert(pid);
            return Ok(JitAction::Replace(recs));
        }
        let anon =
            name.starts_with("//anon") || name.starts_with("[anon:") || name.starts_with("/memfd:");
        if anon && self.jit_pids.contains(&pid) {
            return Ok(JitAction::Replace(Vec::new()));
        }
        Ok(JitAction::Keep)
    }

    /// Write the ELF files of dump `path`; the MMAP2 records for them.
    fn read_dump(&mut self, path: &Path) -> Result<Vec<Vec<u8>>, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let dump = Jitdump::parse(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
        if dump.header.flags & crate::jitdump::FLAGS_ARCH_TIMESTAMP != 0 {
            return Err(format!(
                "{}: the JIT stamped it with the time-stamp counter \
                 (JITDUMP_FLAGS_ARCH_TIMESTAMP); perfkit reads CLOCK_MONOTONIC jitdumps only",
                path.display()
            ));
        }
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut out = Vec::new();
        // JIT_CODE_DEBUG_INFO comes before the load of its code.
        let mut pending_lines: Option<(u64, Vec<jit_elf::LineRow>)> = None;
        // JIT_CODE_UNWINDING_INFO too: (mapped size, tables) of the next load.
        let mut pending_unwind: Option<(u64, jit_elf::Unwind<'_>)> = None;
        for rec in dump.records() {
            // A dump cut short (the JIT still ran) is used up to its last whole record.
            let Ok(rec) = rec else { break };
            match rec {
                JitRecord::Load {
                    timestamp,
                    pid,
                    tid,
                    code_addr,
                    code_index,
                    name,
                    code,
                    ..
                } => {
                    let file = dir.join(format!("jitted-{pid}-{code_index}.so"));
                    let rows = match pending_lines.take() {
                        Some((addr, rows)) if addr == code_addr => rows,
                        _ => Vec::new(),
                    };
                    let unwind = pending_unwind.take();
                    let image = jit_elf::image_full(
                        name,
                        code,
                        dump.header.elf_mach as u16,
                        &rows,
                        unwind.map(|u| u.1),
                    );
                    std::fs::write(&file, image)
                        .map_err(|e| format!("writing {}: {e}", file.display()))?;
                    self.written += 1;
                    // perf maps the unwinding tables with the code when the JIT says they
                    // are mapped after it.
                    let len = match unwind {
                        Some((mapped, _)) if mapped > 0 => {
                            (code.len() as u64).next_multiple_of(8) + mapped
                        }
                        _ => code.len() as u64,
                    };
                    out.push(self.mmap2(pid, tid, code_addr, len, timestamp, &file));
                    self.files.insert((pid, code_index), file);
                }
                JitRecord::DebugInfo { code_addr, entries } => {
                    let rows = entries
                        .into_iter()
                        .filter(|e| e.addr >= code_addr)
                        .map(|e| jit_elf::LineRow {
                            offset: e.addr - code_addr,
                            line: e.line,
                            file: e.file,
                        })
                        .collect();
                    pending_lines = Some((code_addr, rows));
                }
                JitRecord::UnwindingInfo {
                    mapped_size,
                    eh_frame,
                    eh_frame_hdr,
                } => {
                    let tables = jit_elf::Unwind {
                        eh_frame,
                        eh_frame_hdr,
                    };
                    pending_unwind = Some((mapped_size, tables));
                }
                JitRecord::Move {
                    timestamp,
                    pid,
                    tid,
                    new_code_addr,
                    code_size,
                    code_index,
                    ..
                } => {
                    if let Some(file) = self.files.get(&(pid, code_index)).cloned() {
                        out.push(self.mmap2(pid, tid, new_code_addr, code_size, timestamp, &file));
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// perf's injected MMAP2: `start`..+`len` at file offset `TEXT_OFFSET` of `file`,
    /// its inode, `prot` = the file's mode and `MAP_SHARED`, as perf writes them.
    fn mmap2(&self, pid: u32, tid: u32, start: u64, len: u64, time: u64, file: &Path) -> Vec<u8> {
        let meta = std::fs::metadata(file).ok();
        let dev = meta.as_ref().map_or(0, MetadataExt::dev);
        // glibc's major()/minor().
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
        let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
        let mut b = Vec::with_capacity(128);
        for x in [pid, tid] {
            b.extend_from_slice(&x.to_ne_bytes());
        }
        for x in [start, len, jit_elf::TEXT_OFFSET] {
            b.extend_from_slice(&x.to_ne_bytes());
        }
        b.extend_from_slice(&(major as u32).to_ne_bytes());
        b.extend_from_slice(&(minor as u32).to_ne_bytes());
        b.extend_from_slice(&meta.as_ref().map_or(0, MetadataExt::ino).to_ne_bytes());
        b.extend_from_slice(&1u64.to_ne_bytes());
        b.extend_from_slice(&meta.as_ref().map_or(0, MetadataExt::mode).to_ne_bytes());
        b.extend_from_slice(&1u32.to_ne_bytes()); // MAP_SHARED
        b.extend_from_slice(file.as_os_str().as_encoded_bytes());
        b.push(0);
        b.resize(b.len().next_multiple_of(8), 0);
        let trailer = self.trailer(pid, tid, time);
        crate::record(
            sys::PERF_RECORD_MMAP2,
            sys::PERF_RECORD_MISC_USER,
            &b,
            &trailer,
        )
    }

    /// The `sample_id` fields of the first event with a time.
    fn trailer(&self, pid: u32, tid: u32, time: u64) -> Vec<u8> {
        let a = &self.attr;
        let mut v = Vec::new();
        if !a.has(sys::attr_flags::SAMPLE_ID_ALL) {
            return v;
        }
        let st = a.sample_type;
        let mut put = |x: u64| v.extend_from_slice(&x.to_ne_bytes());
        if st & sys::PERF_SAMPLE_TID != 0 {
            put(u64::from(pid) | u64::from(tid) << 32);
        }
        if st & sys::PERF_SAMPLE_TIME != 0 {
            put(time);
        }
        if st & sys::PERF_SAMPLE_ID != 0 {
            put(self.id);
        }
        if st & sys::PERF_SAMPLE_STREAM_ID != 0 {
            put(self.id);
        }
        if st & sys::PERF_SAMPLE_CPU != 0 {
            put(0);
        }
        if st & sys::PERF_SAMPLE_IDENTIFIER != 0 {
            put(self.id);
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_mapping_becomes_one_mmap2_per_load_and_anon_maps_go() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("jit-77.dump");
        std::fs::write(
            &dump,
            crate::jitdump::tests::sample("hot", 0x7000, &[0x90, 0xc3]),
        )
        .unwrap();
        let mut attr = perf_event_attr {
            sample_type: sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME,
            ..Default::default()
        };
        attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
        assert!(JitInjector::new([&attr], 5).is_err(), "-k 1 is required");
        attr.set(sys::attr_flags::USE_CLOCKID, true);
        attr.clockid = CLOCK_MONOTONIC;
        let mut j = JitInjector::new([&attr], 5).unwrap();
        let mut mmap = vec![0u8; 64];
        mmap[..4].copy_from_slice(&77u32.to_ne_bytes());
        mmap.extend_from_slice(dump.to_str().unwrap().as_bytes());
        mmap.push(0);
        let JitAction::Replace(recs) = j.process(sys::PERF_RECORD_MMAP2, &mmap).unwrap() else {
            panic!("the dump's mapping is replaced");
        };
        assert_eq!(recs.len(), 1);
        let so = dir.path().join("jitted-77-3.so");
        assert!(so.is_file());
        let r = &recs[0];
        let body = &r[8..];
        assert_eq!(u64::from_ne_bytes(body[8..16].try_into().unwrap()), 0x7000);
        assert_eq!(u64::from_ne_bytes(body[16..24].try_into().unwrap()), 2);
        assert_eq!(
            u64::from_ne_bytes(body[24..32].try_into().unwrap()),
            jit_elf::TEXT_OFFSET
        );
        assert!(
            r.windows(so.as_os_str().len())
                .any(|w| w == so.as_os_str().as_encoded_bytes())
        );
        // The trailer: pid/tid, then the load's time.
        let t = &r[r.len() - 16..];
        assert_eq!(u64::from_ne_bytes(t[8..].try_into().unwrap()), 1000);
        let mut anon = vec![0u8; 64];
        anon[..4].copy_from_slice(&77u32.to_ne_bytes());
        anon.extend_from_slice(b"//anon\0");
        assert!(matches!(
            j.process(sys::PERF_RECORD_MMAP2, &anon).unwrap(),
            JitAction::Replace(v) if v.is_empty()
        ));
        anon[..4].copy_from_slice(&78u32.to_ne_bytes());
        assert!(matches!(
            j.process(sys::PERF_RECORD_MMAP2, &anon).unwrap(),
            JitAction::Keep
        ));
    }
}
