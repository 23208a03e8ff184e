//! The mappings of one process, sorted for lookup; `/proc/PID/maps` reading.

use std::path::Path;

use crate::error::{Error, ParseError, parse_hex};
use crate::types::Mapping;

/// The address space of one process: its mappings sorted by start. A new mapping replaces
/// the parts of older ones it overlaps, as `mmap` does (perf's `maps__fixup_overlappings`).
#[derive(Clone, Debug, Default)]
pub struct ProcessMaps {
    maps: Vec<Mapping>,
    generation: u64,
}

impl ProcessMaps {
    /// An empty address space.
    pub fn new() -> ProcessMaps {
        ProcessMaps::default()
    }

    /// Add a mapping (a `PERF_RECORD_MMAP2` record), cutting older ones it overlaps.
    pub fn insert(&mut self, m: Mapping) {
        self.generation = next_generation();
        if m.start >= m.end {
            return;
        }
        self.cut_range(m.start, m.end);
        let at = self.maps.partition_point(|x| x.start < m.start);
        self.maps.insert(at, m);
    }

    /// Remove `start..end` from the mappings (what a mapping kept elsewhere, such as a
    /// data mapping beside the code ones, takes over), keeping the parts of each outside it.
    pub fn cut(&mut self, start: u64, end: u64) {
        if start >= end || !self.maps.iter().any(|m| m.start < end && start < m.end) {
            return;
        }
        self.generation = next_generation();
        self.cut_range(start, end);
    }

    fn cut_range(&mut self, start: u64, end: u64) {
        let mut out = Vec::with_capacity(self.maps.len() + 2);
        for old in self.maps.drain(..) {
            if old.end <= start || old.start >= end {
                out.push(old);
                continue;
            }
            if old.start < start {
                let mut left = old.clone();
                left.end = start;
                out.push(left);
            }
            if old.end > end {
                let mut right = old;
                right.pgoff += end - right.start;
                right.start = end;
                out.push(right);
            }
        }
        self.maps = out;
    }

    /// Build from a list (e.g. parsed `/proc/PID/maps`), later entries winning overlaps.
    pub fn from_mappings(list: impl IntoIterator<Item = Mapping>) -> ProcessMaps {
        let mut maps = ProcessMaps::new();
        for m in list {
            maps.insert(m);
        }
        maps
    }

    /// The mapping covering `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self
            .maps
            .partition_point(|m| m.start <= addr)
            .checked_sub(1)?;
        let m = &self.maps[i];
        m.contains(addr).then_some(m)
    }

    /// All mappings in address order.
    pub fn iter(&self) -> std::slice::Iter<'_, Mapping> {
        self.maps.iter()
    }

    /// Number of mappings.
    pub fn len(&self) -> usize {
        self.maps.len()
    }

    /// No mappings?
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// Changes each time a mapping is inserted, unique across all `ProcessMaps` of the
    /// program (lets caches keyed by process notice a changed address space).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

pub(crate) fn next_generation() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One line of `/proc/PID/maps`, with the permissions perf's MMAP2 `prot` also carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcMapsEntry {
    /// The mapping (no build id: the maps file does not carry one).
    pub mapping: Mapping,
    /// `r`, `w`, `x` permission bits as in the file.
    pub readable: bool,
    /// Writable.
    pub writable: bool,
    /// Executable (`PROT_EXEC`): only these are code.
    pub executable: bool,
}

/// Parse `/proc/PID/maps` text (`start-end perms offset dev inode path`).
pub fn parse_proc_maps(text: &str, source: &str) -> Result<Vec<ProcMapsEntry>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let err = |message: &str| ParseError {
            source: source.to_owned(),
            line: i + 1,
            message: format!("{message}: {line:?}"),
        };
        let mut rest = line;
        let mut field = || -> Option<&str> {
            let t = rest.trim_start();
            let end = t.find(' ').unwrap_or(t.len());
            let (f, r) = t.split_at(end);
            rest = r;
            (!f.is_empty()).then_some(f)
        };
        let range = field().ok_or_else(|| err("missing range"))?;
        let perms = field().ok_or_else(|| err("missing permissions"))?;
        let offset = field()
            .and_then(parse_hex)
            .ok_or_else(|| err("bad offset"))?;
        let _dev = field().ok_or_else(|| err("missing device"))?;
        let _inode = field().ok_or_else(|| err("missing inode"))?;
        let path = rest.trim_start().to_owned();
        let (s, e) = range.split_once('-').ok_or_else(|| err("bad range"))?;
        let start = parse_hex(s).ok_or_else(|| err("bad start"))?;
        let end = parse_hex(e).ok_or_else(|| err("bad end"))?;
        if end < start || perms.len() < 3 {
            return Err(err("bad range or permissions"));
        }
        let p = perms.as_bytes();
        out.push(ProcMapsEntry {
            mapping: Mapping {
                start,
                end,
                pgoff: offset,
                path,
                build_id: None,
            },
            readable: p[0] == b'r',
            writable: p[1] == b'w',
            executable: p[2] == b'x',
        });
    }
    Ok(out)
}

/// Read `/proc/PID/maps` (`pid` 0 = this process) and keep the executable mappings, as
/// `perf record` synthesizes MMAP2 records for existing processes.
pub fn read_proc_maps(pid: u32) -> Result<ProcessMaps, Error> {
    let path = if pid == 0 {
        "/proc/self/maps".to_owned()
    } else {
        format!("/proc/{pid}/maps")
    };
    let text = std::fs::read_to_string(&path).map_err(|source| Error::Io {
        path: Path::new(&path).to_owned(),
        source,
    })?;
    let entries = parse_proc_maps(&text, &path)?;
    Ok(ProcessMaps::from_mappings(
        entries
            .into_iter()
            .filter(|e| e.executable)
            .map(|e| e.mapping),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(start: u64, end: u64, pgoff: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            pgoff,
            path: path.into(),
            build_id: None,
        }
    }

    #[test]
    fn cut_keeps_the_parts_outside_with_their_file_offsets() {
        let mut maps = ProcessMaps::from_mappings([m(0x1000, 0x5000, 0x10000, "/a.so")]);
        let before = maps.generation();
        maps.cut(0x8000, 0x9000);
        assert_eq!(
            maps.generation(),
            before,
            "nothing overlapped, nothing changed"
        );
        maps.cut(0x2000, 0x3000);
        assert!(maps.generation() > before);
        assert!(maps.find(0x2800).is_none());
        assert_eq!(maps.find(0x1800).unwrap().file_offset(0x1800), 0x10800);
        let right = maps.find(0x3800).unwrap();
        assert_eq!((right.start, right.end), (0x3000, 0x5000));
        assert_eq!(right.file_offset(0x3800), 0x12800);
        assert_eq!(maps.len(), 2);
    }

    #[test]
    fn overlap_cuts_older() {
        let mut p = ProcessMaps::new();
        p.insert(m(0x1000, 0x5000, 0, "a"));
        p.insert(m(0x2000, 0x3000, 0, "b"));
        let v: Vec<_> = p
            .iter()
            .map(|x| (x.start, x.end, x.pgoff, x.path.as_str()))
            .collect();
        assert_eq!(
            v,
            vec![
                (0x1000, 0x2000, 0, "a"),
                (0x2000, 0x3000, 0, "b"),
                (0x3000, 0x5000, 0x2000, "a")
            ]
        );
        assert_eq!(p.find(0x3500).unwrap().path, "a");
        assert_eq!(p.find(0x2fff).unwrap().path, "b");
        assert!(p.find(0x5000).is_none());
        assert!(p.find(0xfff).is_none());
    }

    #[test]
    fn parses_proc_maps_lines() {
        let t = "55d0c0a00000-55d0c0a21000 r-xp 00002000 fd:01 1234   /usr/bin/cat\n\
                 7ffd1c1d6000-7ffd1c1f7000 rw-p 00000000 00:00 0                          [stack]\n\
                 7f00aa000000-7f00aa001000 r-xp 00000000 00:00 0 \n";
        let v = parse_proc_maps(t, "maps").unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[0].mapping,
            m(0x55d0c0a00000, 0x55d0c0a21000, 0x2000, "/usr/bin/cat")
        );
        assert!(v[0].executable && !v[0].writable);
        assert_eq!(v[1].mapping.path, "[stack]");
        assert_eq!(v[2].mapping.path, "");
        assert!(v[2].mapping.is_anonymous());
        let e = parse_proc_maps("zz-10 r-xp 0 0 0 /x\n", "maps").unwrap_err();
        assert!(e.message.contains("bad start"), "{e}");
    }

    #[test]
    fn reads_own_maps() {
        let p = read_proc_maps(0).unwrap();
        let f = read_proc_maps as fn(u32) -> Result<ProcessMaps, Error>;
        let me = p.find(f as usize as u64).expect("own code is mapped");
        assert!(me.path.contains("perfkit_symbols"), "{}", me.path);
    }
}
