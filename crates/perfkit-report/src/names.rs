//! Naming user addresses off the builder's thread: the threads that decode a file
//! ([`crate::pipeline`]'s reader, [`crate::fan_out`]'s decoders) look up the names of
//! their batch's user addresses in the files they are mapped from, so that the builder,
//! which must take every record in order on one thread, finds each name ready and only
//! interns it.
//!
//! A name in a file mapping depends on the file (path and build id) and the offset in it,
//! nothing else ([`Symbolizer::symbolize_in_mapping`] without source lines or inlined
//! functions): [`SharedNames`] keeps the answers by (path, build id, file offset), readable
//! by every thread at once, with one [`Symbolizer`] (each file loaded once) to find those
//! not known yet. The decoding threads run ahead of the builder, so they look addresses
//! up in the processes' maps as the builder last published them
//! ([`SharedNames::set_maps`]): a guess that can be stale (a mapping made since), which
//! costs at most a name found for nothing. The builder finds each of its addresses'
//! mappings in its own maps, as on one thread, and asks for the name of that (file,
//! offset): found (mostly), or looked up then. The answers are the same either way, so
//! the profile is the single-threaded one whichever thread named an address first.

use perfkit_symbols::{Frame, Mapping, Options, ProcessMaps, Symbolizer};
use perfkit_sys as sys;
use rustc_hash::FxHashMap as HashMap;
use rustc_hash::FxHashSet as HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, RwLock};

/// Each process's maps (by pid) as the builder last published them.
pub(crate) type MapsSnapshot = HashMap<i32, Arc<ProcessMaps>>;

/// A file names are looked up in: its path and build id.
type File = (Box<str>, Option<Box<[u8]>>);

/// One answer: the name at `offset` in file `file` of [`Table::files`].
struct Entry {
    file: u32,
    offset: u64,
    name: Arc<Frame>,
}

/// The answers, and the files (path, build id) they are in.
#[derive(Default)]
struct Table {
    files: Vec<File>,
    /// Indices into `files` by (path, build id).
    file_ids: hashbrown::HashTable<u32>,
    entries: hashbrown::HashTable<Entry>,
}

/// Names of user addresses by (file, offset), shared by the threads of one load (see the
/// [module](self)).
pub(crate) struct SharedNames {
    symbolizer: Mutex<Symbolizer>,
    table: RwLock<Table>,
    maps: Mutex<Arc<MapsSnapshot>>,
}

fn key_hash(path: &str, build_id: Option<&[u8]>, offset: u64) -> u64 {
    rustc_hash::FxBuildHasher.hash_one((path, build_id, offset))
}

/// Whether `symbolize` names `addr` in mapping `m` by its file (as
/// [`Symbolizer::symbolize`] decides): a user address in a file mapping.
pub(crate) fn in_file(m: &Mapping, addr: u64) -> bool {
    !perfkit_symbols::is_kernel_address(addr) && !m.is_kernel() && !m.is_anonymous()
}

/// Whether a load of `file` names user addresses ahead on its decoding threads: not where
/// samples carry user stacks (DWARF unwinding reads the files with the builder's own
/// symbolizer; a second would load them twice).
pub(crate) fn wanted(file: &perfkit_data::PerfData) -> bool {
    file.attrs
        .iter()
        .all(|a| a.attr.sample_type & sys::PERF_SAMPLE_STACK_USER == 0)
}

impl SharedNames {
    /// Names looked up with these options: only where a name depends on the file and
    /// offset alone (no source lines, no inlined functions); None otherwise.
    pub(crate) fn new(opts: &Options) -> Option<SharedNames> {
        (!opts.srcline && !opts.inline).then(|| SharedNames {
            symbolizer: Mutex::new(Symbolizer::new(opts.clone())),
            table: RwLock::new(Table::default()),
            maps: Mutex::new(Arc::default()),
        })
    }

    /// The name of `addr` in file mapping `m` (one [`in_file`]): what
    /// [`Symbolizer::symbolize_in_mapping`] says, the same answer for every address of
    /// the same file and offset.
    pub(crate) fn name(&self, m: &Mapping, addr: u64) -> Arc<Frame> {
        let offset = m.file_offset(addr);
        let build_id = m.build_id.as_deref();
        let h = key_hash(&m.path, build_id, offset);
        let is = |files: &[File], e: &Entry| {
            let (path, id) = &files[e.file as usize];
            e.offset == offset && **path == *m.path && id.as_deref() == build_id
        };
        if let Ok(t) = self.table.read()
            && let Some(e) = t.entries.find(h, |e| is(&t.files, e))
        {
            return e.name.clone();
        }
        let name = {
            let mut s = self
                .symbolizer
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            Arc::new(s.symbolize_in_mapping(m, addr))
        };
        let mut t = self
            .table
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Table {
            files,
            file_ids,
            entries,
        } = &mut *t;
        // Another thread may have named it meanwhile: its answer is the same.
        if let Some(e) = entries.find(h, |e| is(files, e)) {
            return e.name.clone();
        }
        let file_hash =
            |path: &str, id: Option<&[u8]>| rustc_hash::FxBuildHasher.hash_one((path, id));
        let file = *file_ids
            .entry(
                file_hash(&m.path, build_id),
                |&i| {
                    let (p, id) = &files[i as usize];
                    **p == *m.path && id.as_deref() == build_id
                },
                |&i| {
                    let (p, id) = &files[i as usize];
                    file_hash(p, id.as_deref())
                },
            )
            .or_insert_with(|| {
                files.push((m.path.as_str().into(), build_id.map(Into::into)));
                (files.len() - 1) as u32
            })
            .get();
        entries.insert_unique(
            h,
            Entry {
                file,
                offset,
                name: name.clone(),
            },
            |e| {
                let (path, id) = &files[e.file as usize];
                key_hash(path, id.as_deref(), e.offset)
            },
        );
        name
    }

    /// The builder's maps, for the decoding threads' guesses from now on.
    pub(crate) fn set_maps(&self, maps: Arc<MapsSnapshot>) {
        *self
            .maps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = maps;
    }

    fn maps(&self) -> Arc<MapsSnapshot> {
        self.maps
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// A decoding thread's side of [`SharedNames`]: the addresses it has named with the maps
/// it last took, so that each is looked up once per snapshot.
pub(crate) struct NameAhead {
    names: Arc<SharedNames>,
    maps: Arc<MapsSnapshot>,
    seen: HashSet<(i32, u64)>,
}

impl NameAhead {
    pub(crate) fn new(names: Arc<SharedNames>) -> NameAhead {
        NameAhead {
            names,
            maps: Arc::default(),
            seen: HashSet::default(),
        }
    }

    /// Take the maps the builder published last (before a batch).
    pub(crate) fn refresh(&mut self) {
        let maps = self.names.maps();
        if !Arc::ptr_eq(&maps, &self.maps) {
            self.maps = maps;
            self.seen.clear();
        }
    }

    /// Name the user addresses of a sample of `pid` (its ip, where there is no callchain;
    /// `kernel`: the sample's cpumode before any context marker).
    pub(crate) fn sample(&mut self, pid: i32, ip: u64, kernel: bool, callchain: &[u64]) {
        let Some(maps) = self.maps.get(&pid) else {
            return;
        };
        let mut in_kernel = kernel;
        let one = [ip];
        let addrs = if callchain.is_empty() {
            &one[..]
        } else {
            callchain
        };
        for &addr in addrs {
            if addr >= sys::PERF_CONTEXT_MAX {
                in_kernel = matches!(
                    addr,
                    sys::PERF_CONTEXT_KERNEL | sys::PERF_CONTEXT_GUEST_KERNEL
                );
                continue;
            }
            if in_kernel || !self.seen.insert((pid, addr)) {
                continue;
            }
            if let Some(m) = maps.find(addr).filter(|m| in_file(m, addr)) {
                self.names.name(m, addr);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This process's file mappings.
    fn own_maps() -> ProcessMaps {
        let text = std::fs::read_to_string("/proc/self/maps").expect("read /proc/self/maps");
        let entries =
            perfkit_symbols::parse_proc_maps(&text, "/proc/self/maps").expect("parse maps");
        ProcessMaps::from_mappings(entries.into_iter().map(|e| e.mapping))
    }

    #[test]
    fn names_from_several_threads_are_the_symbolizers() {
        let maps = own_maps();
        // Addresses across every file mapping of this process (the test binary, libc,
        // the loader, the vDSO), several in each.
        let addrs: Vec<u64> = maps
            .iter()
            .filter(|m| in_file(m, m.start))
            .flat_map(|m| {
                let step = ((m.end - m.start) / 97).max(1);
                (m.start..m.end).step_by(step as usize)
            })
            .collect();
        assert!(addrs.len() > 300, "{} addresses", addrs.len());
        let shared = Arc::new(SharedNames::new(&Options::default()).expect("plain names"));
        std::thread::scope(|s| {
            for t in 0..4 {
                let (shared, maps, addrs) = (&shared, &maps, &addrs);
                s.spawn(move || {
                    // Each thread in another order: first lookups race.
                    for i in 0..addrs.len() {
                        let addr = addrs[(i * (t + 1) * 7919) % addrs.len()];
                        let m = maps.find(addr).expect("mapped");
                        shared.name(m, addr);
                    }
                });
            }
        });
        let mut one = Symbolizer::new(Options::default());
        let mut named = 0;
        for &addr in &addrs {
            let m = maps.find(addr).expect("mapped");
            let want = one.symbolize(0, &maps, addr);
            let got = shared.name(m, addr);
            // The address is the first lookup's; the rest is the file offset's.
            assert_eq!(
                (&got.symbol, &got.dso, &got.unknown_reason),
                (&want.symbol, &want.dso, &want.unknown_reason),
                "{addr:#x} in {}",
                m.path
            );
            named += usize::from(want.symbol.is_some());
        }
        assert!(named > 100, "only {named} addresses have symbols");
    }
}
