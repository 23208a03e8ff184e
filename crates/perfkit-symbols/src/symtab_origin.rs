//! Where perf 6.1 reads an object's symbols from, as `report -v` shows it: one letter per
//! object (`dso__symtab_origin`), `B` for perf's build-id cache copy, `D` for the cache's
//! separate debug file, `d` for the file at its recorded path, `l` for a `.gnu_debuglink`
//! file, `k` for kallsyms, `!` where nothing was found.
//!
//! perf tries its candidates in a fixed order (`binary_type_symtab`): the debuglink file,
//! the cache's `elf`, the cache's `debug`, `/usr/lib/debug/PATH.debug`,
//! `/usr/lib/debug/PATH`, `/usr/lib/debug/.build-id/ab/cdef.debug`, the path itself,
//! `DIR/.debug/NAME`. A candidate counts when it is a regular ELF file whose build id is
//! the object's (when the object has one: recorded, or read from the file at its path).
//! The first candidate with a symbol table gives the letter; without any, the first with
//! dynamic symbols does.

use std::path::{Path, PathBuf};

use crate::elf::{ElfFile, build_id_hex};

/// The debug root perf searches (`/usr/lib/debug`), hard-coded in perf.
const DEBUG_ROOT: &str = "/usr/lib/debug";

/// perf's letter for the symbols of the object recorded as `dso` with `build_id`
/// (`buildid_dir`: perf's cache; `symfs`: `--symfs`).
pub fn symtab_origin(
    dso: &str,
    build_id: Option<&[u8]>,
    buildid_dir: &Path,
    symfs: Option<&Path>,
) -> char {
    if dso == "[kernel.kallsyms]" || dso.starts_with("[kernel.kallsyms]") {
        return 'k';
    }
    if dso.starts_with("/tmp/perf-") && dso.ends_with(".map") {
        // A JIT's symbol map, where it still is.
        return if Path::new(dso).is_file() { 'j' } else { '!' };
    }
    let on_disk = |p: &str| match symfs {
        Some(root) => root.join(p.trim_start_matches('/')),
        None => PathBuf::from(p),
    };
    let path = on_disk(dso);
    let build_id: Option<Vec<u8>> = build_id
        .filter(|id| id.iter().any(|&b| b != 0))
        .map(<[u8]>::to_vec)
        .or_else(|| {
            dso.starts_with('/')
                .then(|| ElfFile::open(&path).and_then(|f| f.build_id))
                .flatten()
        });
    let hex = build_id.as_deref().map(build_id_hex);
    let mut candidates: Vec<(char, PathBuf)> = Vec::new();
    // DEBUGLINK: the first of perf's places for the named file that exists.
    if path.is_file()
        && let Some(f) = ElfFile::open(&path)
        && let Some((name, _)) = &f.debuglink
        && let Ok(name) = std::str::from_utf8(name)
    {
        let dir = path.parent().unwrap_or(Path::new("/"));
        let places = [
            PathBuf::from(name),
            dir.join(name),
            dir.join(".debug").join(name),
            Path::new(DEBUG_ROOT)
                .join(dir.strip_prefix("/").unwrap_or(dir))
                .join(name),
        ];
        if let Some(p) = places.into_iter().find(|p| p.is_file()) {
            candidates.push(('l', p));
        }
    }
    if let Some(hex) = hex.as_deref().filter(|h| h.len() > 2) {
        let entry = buildid_dir
            .join(".build-id")
            .join(&hex[..2])
            .join(&hex[2..]);
        let base = if dso == "[vdso]" { "vdso" } else { "elf" };
        candidates.push(('B', entry.join(base)));
        candidates.push(('D', entry.join("debug")));
    }
    if dso.starts_with('/') {
        let rel = dso.trim_start_matches('/');
        candidates.push(('f', Path::new(DEBUG_ROOT).join(format!("{rel}.debug"))));
        candidates.push(('u', Path::new(DEBUG_ROOT).join(rel)));
    }
    if let Some(hex) = hex.as_deref().filter(|h| h.len() > 2) {
        candidates.push((
            'b',
            Path::new(DEBUG_ROOT)
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..])),
        ));
    }
    if dso.starts_with('/') {
        candidates.push(('d', path.clone()));
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
            candidates.push(('o', dir.join(".debug").join(name)));
        }
    }
    let mut runtime = None;
    for (letter, c) in candidates {
        if !c.is_file() {
            continue;
        }
        let Some(f) = ElfFile::open(&c) else {
            continue;
        };
        if let Some(want) = &build_id
            && f.build_id.as_deref() != Some(want.as_slice())
        {
            continue;
        }
        if f.has_symtab {
            return letter;
        }
        // perf's `symsrc__possibly_runtime`: a `.dynsym` section, even one that defines
        // nothing (a stripped program exporting nothing is still `B` or `d`).
        let dynsym = || {
            f.has_dynsym
                || object::File::parse(f.bytes.bytes())
                    .is_ok_and(|o| object::Object::section_by_name(&o, ".dynsym").is_some())
        };
        if runtime.is_none() && dynsym() {
            runtime = Some(letter);
        }
    }
    runtime.unwrap_or('!')
}
