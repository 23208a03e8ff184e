//! Records perf synthesizes before the first sample, as raw native-endian bytes with a
//! `sample_id` trailer for a given attr: COMM and MMAP2 of existing threads, the kernel's
//! `[kernel.kallsyms]_text` MMAP, FINISHED_INIT; and build ids of files.

use crate::write::record;
use perfkit_sys::{self as sys, perf_event_attr};
use std::path::Path;

fn w32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_ne_bytes());
}
fn w64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}

/// The `sample_id` trailer (`sample_id_all`) for `attr`, with time 0 and `id`.
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

/// `PERF_RECORD_FINISHED_INIT`.
pub fn finished_init() -> Vec<u8> {
    record(sys::PERF_RECORD_FINISHED_INIT, 0, &[], &[])
}

/// The `NT_GNU_BUILD_ID` note of an ELF file.
///
/// Only the file header, the program headers and the `PT_NOTE` segments are read (what a
/// loader maps), not the section headers or symbol tables: shared objects can be hundreds
/// of MB, and a system-wide recording asks for every mapped file. A file with program
/// headers and no such note has no build id (many do: a full parse would read their
/// symbol tables for nothing); only files without program headers (relocatable objects)
/// are looked up by section.
pub fn build_id_of(path: &Path) -> Option<Vec<u8>> {
    use object::Object;
    let cache = object::ReadCache::new(std::fs::File::open(path).ok()?);
    let by_segment = match object::FileKind::parse(&cache).ok()? {
        object::FileKind::Elf64 => {
            segment_build_id::<object::elf::FileHeader64<object::Endianness>>(&cache)
        }
        object::FileKind::Elf32 => {
            segment_build_id::<object::elf::FileHeader32<object::Endianness>>(&cache)
        }
        _ => None,
    };
    if let Some(found) = by_segment {
        return found;
    }
    let file = object::File::parse(&cache).ok()?;
    file.build_id().ok().flatten().map(<[u8]>::to_vec)
}

/// The build id in the `PT_NOTE` segments: None when the file has no program headers,
/// Some(None) when they hold no build id.
fn segment_build_id<H: object::read::elf::FileHeader<Endian = object::Endianness>>(
    data: &object::ReadCache<std::fs::File>,
) -> Option<Option<Vec<u8>>> {
    use object::read::elf::ProgramHeader;
    let header = H::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let headers = header.program_headers(endian, data).ok()?;
    if headers.is_empty() {
        return None;
    }
    for ph in headers {
        let Ok(Some(mut notes)) = ph.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == b"GNU" && note.n_type(endian) == object::elf::NT_GNU_BUILD_ID {
                return Some(Some(note.desc().to_vec()));
            }
        }
    }
    Some(None)
}

/// The running kernel's build id (`/sys/kernel/notes`).
pub fn kernel_build_id() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    let mut off = 0;
    while off + 12 <= notes.len() {
        let rd =
            |o: usize| u32::from_ne_bytes(notes[o..o + 4].try_into().unwrap_or([0; 4])) as usize;
        let (namesz, descsz, kind) = (rd(off), rd(off + 4), rd(off + 8));
        let name_at = off + 12;
        let desc_at = name_at + namesz.next_multiple_of(4);
        let end = desc_at + descsz.next_multiple_of(4);
        if end > notes.len() {
            return None;
        }
        if kind == 3 && notes.get(name_at..name_at + 3) == Some(b"GNU") {
            return Some(notes[desc_at..desc_at + descsz].to_vec());
        }
        off = end;
    }
    None
}

/// `PERF_RECORD_MMAP` of the kernel image (`[kernel.kallsyms]_text`, pid -1, `_text` to
/// `_etext`), from `/proc/kallsyms`. None when kernel addresses are hidden (kptr_restrict, not root).
pub fn kernel_mmap(attr: &perf_event_attr, id: u64) -> Option<Vec<u8>> {
    let (start, end) = kernel_text()?;
    let mut b = Vec::new();
    w32(&mut b, u32::MAX);
    w32(&mut b, 0);
    w64(&mut b, start);
    w64(&mut b, end.saturating_sub(start).max(1));
    w64(&mut b, start);
    b.extend_from_slice(b"[kernel.kallsyms]_text\0");
    Some(record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &b,
        &sample_id_trailer(attr, 0, 0, id),
    ))
}

/// The running kernel's text, `_text` to `_etext` (else to its last core symbol), from
/// `/proc/kallsyms`, as perf maps `[kernel.kallsyms]`. None when kernel addresses are
/// hidden (kptr_restrict, not root).
pub fn kernel_text() -> Option<(u64, u64)> {
    let syms = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let mut text = None;
    let mut etext = None;
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
        } else if name == "_etext" {
            etext = Some(a);
        }
        if it.next().is_none() {
            end = end.max(a);
        }
    }
    let start = text.filter(|&t| t != 0)?;
    // As perf: the map ends at `_etext` (kernel text), else at the last core symbol.
    let end = etext.filter(|&e| e > start).unwrap_or(end);
    Some((start, end))
}

/// The `PERF_RECORD_KSYMBOL` perf synthesizes for a function of a BPF program loaded before
/// the recording (`PERF_RECORD_KSYMBOL_TYPE_BPF`, no flags): `name` at `addr`, `len` bytes.
pub fn ksymbol_bpf(attr: &perf_event_attr, id: u64, addr: u64, len: u32, name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    w64(&mut b, addr);
    w32(&mut b, len);
    b.extend_from_slice(&sys::PERF_RECORD_KSYMBOL_TYPE_BPF.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    record(
        sys::PERF_RECORD_KSYMBOL,
        0,
        &b,
        &sample_id_trailer(attr, 0, 0, id),
    )
}

/// The `PERF_RECORD_BPF_EVENT` (`PERF_BPF_EVENT_PROG_LOAD`) perf synthesizes for a BPF
/// program loaded before the recording: its id and tag.
pub fn bpf_prog_load(attr: &perf_event_attr, id: u64, prog_id: u32, tag: [u8; 8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&sys::PERF_BPF_EVENT_PROG_LOAD.to_ne_bytes());
    b.extend_from_slice(&0u16.to_ne_bytes());
    w32(&mut b, prog_id);
    b.extend_from_slice(&tag);
    record(
        sys::PERF_RECORD_BPF_EVENT,
        0,
        &b,
        &sample_id_trailer(attr, 0, 0, id),
    )
}

/// perf's order of a `PERF_RECORD_NAMESPACES` record's namespaces (`NET_NS_INDEX` ..
/// `CGROUP_NS_INDEX`), by their names in `/proc/PID/ns`.
const NAMESPACES: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];

/// The `PERF_RECORD_NAMESPACES` record perf synthesizes for a running thread (`record
/// --namespaces`): each namespace's device and inode, from `/proc/TID/ns/NAME`.
pub fn namespaces(attr: &perf_event_attr, id: u64, pid: i32, tid: i32) -> Option<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    let mut b = Vec::new();
    w32(&mut b, pid as u32);
    w32(&mut b, tid as u32);
    w64(&mut b, NAMESPACES.len() as u64);
    for ns in NAMESPACES {
        let m = std::fs::metadata(format!("/proc/{tid}/ns/{ns}")).ok()?;
        w64(&mut b, m.dev());
        w64(&mut b, m.ino());
    }
    Some(record(
        sys::PERF_RECORD_NAMESPACES,
        0,
        &b,
        &sample_id_trailer(attr, pid, tid, id),
    ))
}

/// The `PERF_RECORD_CGROUP` records perf synthesizes for `record --all-cgroups`: every
/// cgroup of the cgroup2 hierarchy (the mount in `/proc/self/mounts`), parents first,
/// each with its id and its path below the mount (`/` for the root). The id is the
/// directory's inode number, which is the kernel's cgroup id (its kernfs node id) on
/// 64-bit kernels, where perf asks `name_to_handle_at` for the same number. None where
/// no cgroup2 file system is mounted.
pub fn cgroups(attr: &perf_event_attr, id: u64) -> Vec<Vec<u8>> {
    use std::os::unix::fs::MetadataExt;
    fn walk(dir: &Path, rel: &str, attr: &perf_event_attr, id: u64, out: &mut Vec<Vec<u8>>) {
        let Ok(meta) = std::fs::metadata(dir) else {
            return;
        };
        let mut b = Vec::new();
        w64(&mut b, meta.ino());
        b.extend_from_slice(if rel.is_empty() { "/" } else { rel }.as_bytes());
        b.push(0);
        while b.len() % 8 != 0 {
            b.push(0);
        }
        out.push(record(
            sys::PERF_RECORD_CGROUP,
            0,
            &b,
            &sample_id_trailer(attr, -1, -1, id),
        ));
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                let name = e.file_name();
                let rel = format!("{rel}/{}", name.to_string_lossy());
                walk(&e.path(), &rel, attr, id, out);
            }
        }
    }
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let Some(root) = mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| f[1].to_string())
    }) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(Path::new(&root), "", attr, id, &mut out);
    out
}

/// COMM and MMAP2 records for every thread of the processes `pids` (from /proc), and
/// each thread's NAMESPACES record where `attr` asks for them (`--namespaces`).
pub fn tasks(attr: &perf_event_attr, id: u64, pids: &[i32]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for &pid in pids {
        let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        let mut tids: Vec<i32> = dir
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect();
        tids.sort_unstable();
        for tid in tids {
            let comm =
                std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm")).unwrap_or_default();
            let mut b = Vec::new();
            w32(&mut b, pid as u32);
            w32(&mut b, tid as u32);
            b.extend_from_slice(comm.trim_end().as_bytes());
            b.push(0);
            out.push(record(
                sys::PERF_RECORD_COMM,
                0,
                &b,
                &sample_id_trailer(attr, pid, tid, id),
            ));
            if attr.has(perfkit_sys::attr_flags::NAMESPACES) {
                out.extend(namespaces(attr, id, pid, tid));
            }
        }
        let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        for line in maps.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 6 || !f[1].contains('x') {
                continue;
            }
            let Some((s, e)) = f[0].split_once('-') else {
                continue;
            };
            let (Ok(s), Ok(e), Ok(off)) = (
                u64::from_str_radix(s, 16),
                u64::from_str_radix(e, 16),
                u64::from_str_radix(f[2], 16),
            ) else {
                continue;
            };
            let (maj, min) = f[3].split_once(':').unwrap_or(("0", "0"));
            let mut b = Vec::new();
            w32(&mut b, pid as u32);
            w32(&mut b, pid as u32);
            w64(&mut b, s);
            w64(&mut b, e - s);
            w64(&mut b, off);
            w32(&mut b, u32::from_str_radix(maj, 16).unwrap_or(0));
            w32(&mut b, u32::from_str_radix(min, 16).unwrap_or(0));
            w64(&mut b, f[4].parse::<u64>().unwrap_or(0));
            w64(&mut b, 0);
            w32(&mut b, 0x5); // PROT_READ | PROT_EXEC
            w32(&mut b, 0x2); // MAP_PRIVATE
            b.extend_from_slice(f[5..].join(" ").as_bytes());
            b.push(0);
            out.push(record(
                sys::PERF_RECORD_MMAP2,
                sys::PERF_RECORD_MISC_USER,
                &b,
                &sample_id_trailer(attr, pid, pid, id),
            ));
        }
    }
    out
}
