//! The agent's symbols, kept from window to window within a memory bound.
//!
//! A window is loaded by `perfkit-report` with a symbolizer that names kernel addresses
//! only (it keeps `/proc/kallsyms` loaded from window to window; user-space files are
//! looked up under an empty `--symfs`, so it opens none). [`SymbolCache::name_frames`]
//! then names the user-space frames that occur in the window:
//!
//! * each mapped file is known by **(device, inode, build id)** (the path is stat'ed once
//!   per window; its build id is read once per file version), so a binary replaced at the
//!   same path (an upgrade, a rebuild) is never named with the old one's symbols;
//! * each (file, file offset) answer is memoized across windows: a service whose hot
//!   addresses recur costs hash lookups, not symbol-table loads;
//! * a file's symbol table is loaded only when an address in it is not memoized yet, and
//!   dropped after [`SymbolCache::IDLE_WINDOWS`] windows without use or when the loaded
//!   files pass [`SymbolCache::MAX_FILE_BYTES`] (least recently used first, never one
//!   the last window used: that is the working set, and dropping it would reload it at
//!   once); the memo is bounded by [`SymbolCache::MAX_NAMES`]. Memory stays flat on a machine that keeps
//!   starting new binaries, and a busy file's table is not reloaded every window.
//!
//! The same per-file facts serve `--no-symbolize` (build ids and load segments of mapped
//! files, read once per file version rather than once per window).

use perfkit_report::Func;
use perfkit_report::Profile;
use perfkit_symbols::{Mapping, Options, Symbolizer};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A file version: device, inode, build id.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileKey {
    dev: u64,
    ino: u64,
    build_id: Option<Vec<u8>>,
}

/// What is known of one file version.
#[derive(Debug)]
struct Facts {
    key: FileKey,
    /// Modification time and size when read (a file rewritten in place gets new facts).
    stamp: (i64, u64),
    /// Loadable segments: (file offset, file size).
    segments: Vec<(u64, u64)>,
}

/// A loaded symbol table (a symbolizer that holds this one file).
struct Loaded {
    symbolizer: Symbolizer,
    bytes: u64,
    last_used: u64,
}

/// Symbols of user-space files, across windows.
pub struct SymbolCache {
    /// Path → facts, re-validated (stat) once per window.
    facts: HashMap<String, (u64, Option<Facts>)>,
    loaded: HashMap<FileKey, Loaded>,
    names: HashMap<(FileKey, u64), Option<Arc<str>>>,
    window: u64,
    demangle: bool,
    /// Symbol tables loaded so far (for tests and the log).
    pub loads: u64,
}

impl Default for SymbolCache {
    fn default() -> Self {
        SymbolCache::new(true)
    }
}

impl SymbolCache {
    /// Windows a symbol table stays loaded without use.
    pub const IDLE_WINDOWS: u64 = 6;
    /// Loaded files' total size above which the least recently used are dropped.
    pub const MAX_FILE_BYTES: u64 = 192 << 20;
    /// Memoized (file, offset) names at most.
    pub const MAX_NAMES: usize = 1 << 18;

    /// A cache that demangles names (or not).
    pub fn new(demangle: bool) -> SymbolCache {
        SymbolCache {
            facts: HashMap::new(),
            loaded: HashMap::new(),
            names: HashMap::new(),
            window: 0,
            demangle,
            loads: 0,
        }
    }

    /// Start a window: paths are stat'ed again when next used.
    pub fn next_window(&mut self) {
        self.window += 1;
        let w = self.window;
        // Drop what was not used for a while, then the least recently used beyond the
        // bound.
        self.loaded
            .retain(|_, l| w.saturating_sub(l.last_used) <= Self::IDLE_WINDOWS);
        let mut total: u64 = self.loaded.values().map(|l| l.bytes).sum();
        if total > Self::MAX_FILE_BYTES {
            // The files the last window used are its working set: they stay (dropping
            // one would reload it at once); the others go, least recently used first.
            let mut by_age: Vec<(u64, FileKey, u64)> = self
                .loaded
                .iter()
                .filter(|(_, l)| l.last_used + 1 < w)
                .map(|(k, l)| (l.last_used, k.clone(), l.bytes))
                .collect();
            by_age.sort_by_key(|(t, _, _)| *t);
            for (_, k, bytes) in by_age {
                if total <= Self::MAX_FILE_BYTES {
                    break;
                }
                self.loaded.remove(&k);
                total -= bytes;
            }
        }
        if self.names.len() > Self::MAX_NAMES {
            let loaded = &self.loaded;
            self.names.retain(|(k, _), _| loaded.contains_key(k));
            if self.names.len() > Self::MAX_NAMES / 2 {
                self.names.clear();
            }
        }
        if self.facts.len() > 4096 {
            self.facts
                .retain(|_, (seen, _)| w.saturating_sub(*seen) <= 1);
        }
    }

    /// The facts of the file at `path` as it is now (None: gone, not a file).
    fn facts(&mut self, path: &str) -> Option<&Facts> {
        let w = self.window;
        let fresh = matches!(self.facts.get(path), Some((seen, _)) if *seen == w);
        if !fresh {
            let meta = std::fs::metadata(path).ok().filter(|m| m.is_file());
            let known = self.facts.remove(path).and_then(|(_, f)| f);
            let facts = meta.map(|m| {
                let stamp = (m.mtime_nsec() + m.mtime() * 1_000_000_000, m.size());
                match known {
                    Some(f) if f.key.dev == m.dev() && f.key.ino == m.ino() && f.stamp == stamp => {
                        f
                    }
                    _ => read_facts(Path::new(path), m.dev(), m.ino(), stamp),
                }
            });
            self.facts.insert(path.to_string(), (w, facts));
        }
        self.facts.get(path)?.1.as_ref()
    }

    /// The GNU build id of the file at `path` (as it is now).
    pub fn build_id(&mut self, path: &str) -> Option<Vec<u8>> {
        self.facts(path)?.key.build_id.clone()
    }

    /// The loadable segment of the file at `path` that holds file offset `off`, as the
    /// kernel maps it: (offset rounded down to the page, length to the segment's end
    /// rounded up).
    pub fn segment(&mut self, path: &str, off: u64) -> Option<(u64, u64)> {
        const PAGE: u64 = 4096;
        let f = self.facts(path)?;
        let &(o, len) = f
            .segments
            .iter()
            .find(|(o, len)| off >= *o && off < o + len)?;
        let start = o & !(PAGE - 1);
        let end = (o + len).next_multiple_of(PAGE);
        Some((start, end - start))
    }

    /// The function at file offset `off` of the file at `path`.
    pub fn name(&mut self, path: &str, off: u64) -> Option<Arc<str>> {
        let key = self.facts(path)?.key.clone();
        if let Some(n) = self.names.get(&(key.clone(), off)) {
            if let Some(l) = self.loaded.get_mut(&key) {
                l.last_used = self.window;
            }
            return n.clone();
        }
        let window = self.window;
        let demangle = self.demangle;
        let loads = &mut self.loads;
        let l = self.loaded.entry(key.clone()).or_insert_with(|| {
            *loads += 1;
            Loaded {
                symbolizer: Symbolizer::new(Options {
                    demangle,
                    ..Options::default()
                }),
                bytes: std::fs::metadata(path).map_or(0, |m| m.len()),
                last_used: window,
            }
        });
        l.last_used = window;
        // The whole file mapped at 0: the address is the file offset.
        let whole = Mapping {
            start: 0,
            end: u64::MAX,
            pgoff: 0,
            path: path.to_string(),
            build_id: key.build_id.clone(),
        };
        let frame = l.symbolizer.symbolize_in_mapping(&whole, off);
        let name: Option<Arc<str>> = frame.symbol.map(|s| s.name);
        self.names.insert((key, off), name.clone());
        name
    }

    /// Name the user-space frames of a window's profile (loaded with [`kernel_only`]'s
    /// options): each frame with a file offset in a file gets its function.
    pub fn name_frames(&mut self, profile: &mut Profile) {
        self.next_window();
        let mut renamed: HashMap<(u32, Arc<str>), u32> = HashMap::new();
        for i in 0..profile.frames.len() {
            let f = &profile.frames[i];
            let Some(off) = f.map_offset else { continue };
            let func = &profile.funcs[f.func as usize];
            if func.kernel || func.dso.starts_with('[') || func.name != "[unknown]" {
                continue;
            }
            let (dso, old) = (func.dso.clone(), f.func);
            let Some(name) = self.name(&dso, off) else {
                continue;
            };
            let id = *renamed.entry((old, name.clone())).or_insert_with(|| {
                profile.func(Func {
                    name: name.to_string(),
                    dso,
                    kernel: false,
                })
            });
            profile.frames[i].func = id;
        }
    }

    /// Symbol tables loaded now.
    pub fn files_loaded(&self) -> usize {
        self.loaded.len()
    }
}

fn read_facts(path: &Path, dev: u64, ino: u64, stamp: (i64, u64)) -> Facts {
    Facts {
        key: FileKey {
            dev,
            ino,
            build_id: perfkit_data::synth::build_id_of(path),
        },
        stamp,
        segments: load_segments(path).unwrap_or_default(),
    }
}

/// The PT_LOAD segments of an ELF file: (file offset, file size).
fn load_segments(path: &Path) -> Option<Vec<(u64, u64)>> {
    use object::read::elf::{FileHeader, ProgramHeader};
    let file = std::fs::File::open(path).ok()?;
    let data = object::ReadCache::new(file);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&data).ok()?;
    let endian = header.endian().ok()?;
    Some(
        header
            .program_headers(endian, &data)
            .ok()?
            .iter()
            .filter(|ph| ph.p_type(endian) == object::elf::PT_LOAD)
            .map(|ph| (ph.p_offset(endian), ph.p_filesz(endian)))
            .collect(),
    )
}

/// Load options that name kernel addresses only: user-space files are looked up under
/// `symfs`, an empty directory made here (with `proc/kallsyms` linked to the kernel's).
pub fn kernel_only(symfs: &Path) -> std::io::Result<perfkit_report::LoadOptions> {
    let proc = symfs.join("proc");
    std::fs::create_dir_all(&proc)?;
    let link = proc.join("kallsyms");
    if std::fs::read_link(&link).is_err() {
        std::os::unix::fs::symlink("/proc/kallsyms", &link)?;
    }
    let mut o = perfkit_report::LoadOptions::default();
    o.kallsyms = Some(PathBuf::from("/proc/kallsyms"));
    o.symfs = Some(symfs.to_path_buf());
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary's own function, named through the cache by its file offset.
    #[test]
    fn names_come_from_the_file_and_are_memoized() {
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let exe = exe.to_str().unwrap();
        // The file offset of this function's code, from /proc/self/maps.
        let addr = names_come_from_the_file_and_are_memoized as *const () as u64;
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        let off = maps
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (s, e) = f[0].split_once('-')?;
                let (s, e) = (
                    u64::from_str_radix(s, 16).ok()?,
                    u64::from_str_radix(e, 16).ok()?,
                );
                (addr >= s && addr < e && f.get(5) == Some(&exe))
                    .then(|| addr - s + u64::from_str_radix(f[2], 16).unwrap())
            })
            .expect("this function's mapping");
        let mut c = SymbolCache::new(true);
        c.next_window();
        let name = c.name(exe, off).expect("a name");
        assert!(
            name.contains("names_come_from_the_file_and_are_memoized"),
            "{name}"
        );
        assert_eq!(c.loads, 1);
        // Memoized: the next window asks again without loading anything.
        for _ in 0..3 {
            c.next_window();
            assert_eq!(c.name(exe, off), Some(name.clone()));
        }
        assert_eq!(c.loads, 1);
        // Idle long enough, the table goes; the memo still answers.
        for _ in 0..=SymbolCache::IDLE_WINDOWS + 1 {
            c.next_window();
        }
        assert_eq!(c.files_loaded(), 0);
        assert_eq!(c.name(exe, off), Some(name));
        assert_eq!(c.loads, 1);
        assert!(
            c.build_id(exe).is_some(),
            "cargo's test binaries have build ids"
        );
        assert!(
            c.segment(exe, off)
                .is_some_and(|(o, len)| o <= off && off < o + len)
        );
    }
}
