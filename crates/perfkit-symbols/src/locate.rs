//! Finding the right file for a mapping: by path, by build id in perf's cache and the
//! distribution debug directories, and separate debug files through `.gnu_debuglink`.

use std::path::{Path, PathBuf};

use crate::elf::{ElfFile, build_id_hex, build_id_matches, crc32};
use crate::types::UnknownReason;

/// Where to look for files.
#[derive(Clone, Debug)]
pub(crate) struct SearchPaths {
    /// perf's build-id cache (`$PERF_BUILDID_DIR`, else `~/.debug`).
    pub buildid_dir: Option<PathBuf>,
    /// Distribution debug roots (`/usr/lib/debug`).
    pub debug_dirs: Vec<PathBuf>,
    /// perf's `--symfs`: the root the recorded paths are looked up under.
    pub symfs: Option<PathBuf>,
}

impl SearchPaths {
    /// Where the recorded `path` is on this machine (under `--symfs` when given).
    fn on_disk(&self, path: &str) -> PathBuf {
        match &self.symfs {
            Some(root) => root.join(path.trim_start_matches('/')),
            None => PathBuf::from(path),
        }
    }
}

/// The candidates of perf's cache for a build id: `DIR/.build-id/ab/cdef.../elf` (perf ≥ 4.x:
/// the link points to a directory holding `elf`), the link itself (older perf: a link to
/// the file), and `DIR/PATH/HEX/elf`.
fn perf_cache_candidates(dir: &Path, hex: &str, path: &str) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if hex.len() > 2 {
        let link = dir.join(".build-id").join(&hex[..2]).join(&hex[2..]);
        v.push(link.join("elf"));
        v.push(link);
    }
    let rel = path.trim_start_matches('/');
    if !rel.is_empty() {
        v.push(dir.join(rel).join(hex).join("elf"));
    }
    v
}

fn debug_dir_candidate(dir: &Path, hex: &str) -> Option<PathBuf> {
    (hex.len() > 2).then(|| {
        dir.join(".build-id")
            .join(&hex[..2])
            .join(format!("{}.debug", &hex[2..]))
    })
}

fn open_matching(path: &Path, want: &[u8]) -> Option<ElfFile> {
    if !path.is_file() {
        return None;
    }
    let f = ElfFile::open(path)?;
    match &f.build_id {
        Some(id) if build_id_matches(want, id) => Some(f),
        _ => None,
    }
}

/// Find the file to read for a mapping of `path` recorded with `build_id`.
pub(crate) fn find_binary(
    path: &str,
    build_id: Option<&[u8]>,
    sp: &SearchPaths,
) -> Result<ElfFile, UnknownReason> {
    let build_id = build_id.filter(|id| id.iter().any(|&b| b != 0));
    // The kernel marks files unlinked after mapping (upgraded packages); a file at the plain
    // path is only used if its build id matches, or none was recorded.
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    let on_disk = sp.on_disk(path);
    let p = on_disk.as_path();
    let mut mismatch = false;
    let mut not_elf = false;
    if path.starts_with('/') && p.is_file() {
        match ElfFile::open(p) {
            Some(f) => match (build_id, &f.build_id) {
                (None, _) => return Ok(f),
                (Some(want), Some(have)) if build_id_matches(want, have) => return Ok(f),
                // A file without a build-id note cannot be checked: trust the path only
                // when nothing better is found below.
                (Some(_), None) => {
                    if let Some(c) = search_cache(path, build_id, sp) {
                        return Ok(c);
                    }
                    return Ok(f);
                }
                (Some(_), Some(_)) => mismatch = true,
            },
            None => not_elf = true,
        }
    }
    if let Some(c) = search_cache(path, build_id, sp) {
        return Ok(c);
    }
    Err(if mismatch {
        UnknownReason::BuildIdMismatch
    } else if not_elf {
        UnknownReason::NotElf
    } else {
        UnknownReason::FileMissing
    })
}

fn search_cache(path: &str, build_id: Option<&[u8]>, sp: &SearchPaths) -> Option<ElfFile> {
    let want = build_id?;
    let hex = build_id_hex(want);
    if let Some(dir) = &sp.buildid_dir {
        for c in perf_cache_candidates(dir, &hex, path) {
            if let Some(f) = open_matching(&c, want) {
                return Some(f);
            }
        }
    }
    for dir in &sp.debug_dirs {
        if let Some(c) = debug_dir_candidate(dir, &hex)
            && let Some(f) = open_matching(&c, want)
        {
            return Some(f);
        }
    }
    None
}

/// Find a separate debug file for `bin`: by its build id (`/usr/lib/debug/.build-id/ab/cdef.debug`,
/// perf's cache `.../debug`), then by `.gnu_debuglink` (next to the file, in its `.debug/`
/// subdirectory, and under each debug root), checking the build id or, without one, the CRC.
pub(crate) fn find_debug_file(bin: &ElfFile, sp: &SearchPaths) -> Option<ElfFile> {
    if let Some(id) = &bin.build_id {
        let hex = build_id_hex(id);
        for dir in &sp.debug_dirs {
            if let Some(c) = debug_dir_candidate(dir, &hex)
                && let Some(f) = open_matching(&c, id)
                && f.path != bin.path
            {
                return Some(f);
            }
        }
        if let Some(dir) = &sp.buildid_dir
            && hex.len() > 2
        {
            let entry = dir.join(".build-id").join(&hex[..2]).join(&hex[2..]);
            if let Some(f) = open_matching(&entry.join("debug"), id) {
                return Some(f);
            }
            // perf's own copy of the binary, when it kept the symbol table that this one
            // lost (a stripped file with the same build id): perf reads it before the
            // file on disk.
            if !bin.has_symtab
                && let Some(f) = open_matching(&entry.join("elf"), id)
                && f.has_symtab
                && f.path != bin.path
            {
                return Some(f);
            }
        }
    }
    let (name, crc) = bin.debuglink.as_ref()?;
    let name = std::str::from_utf8(name).ok()?;
    let dir = bin.path.parent()?;
    let mut cands = vec![dir.join(name), dir.join(".debug").join(name)];
    for d in &sp.debug_dirs {
        cands.push(d.join(dir.strip_prefix("/").unwrap_or(dir)).join(name));
    }
    for c in cands {
        if c == bin.path || !c.is_file() {
            continue;
        }
        let Some(f) = ElfFile::open(&c) else { continue };
        let ok = match (&bin.build_id, &f.build_id) {
            (Some(a), Some(b)) => a == b,
            _ => crc32(f.bytes.bytes()) == *crc,
        };
        if ok {
            return Some(f);
        }
    }
    None
}
