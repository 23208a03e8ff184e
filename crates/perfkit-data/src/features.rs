//! Feature sections (perf's header.c `write_*`/`process_*` pairs): the ones with meaning are
//! parsed into [`Features`], the others kept as raw bytes.

use crate::feature as f;
use crate::write::{w32, w64, wstr};
use perfkit_records::Endian;

/// A bounds-checked reader over a feature section.
pub(crate) struct Cursor<'a> {
    b: &'a [u8],
    pos: usize,
    e: Endian,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(b: &'a [u8], e: Endian) -> Self {
        Cursor { b, pos: 0, e }
    }
    pub(crate) fn u32(&mut self) -> Option<u32> {
        let s = self.b.get(self.pos..self.pos + 4)?;
        self.pos += 4;
        let a: [u8; 4] = s.try_into().ok()?;
        Some(match self.e {
            Endian::Little => u32::from_le_bytes(a),
            Endian::Big => u32::from_be_bytes(a),
        })
    }
    pub(crate) fn u64(&mut self) -> Option<u64> {
        let s = self.b.get(self.pos..self.pos + 8)?;
        self.pos += 8;
        let a: [u8; 8] = s.try_into().ok()?;
        Some(match self.e {
            Endian::Little => u64::from_le_bytes(a),
            Endian::Big => u64::from_be_bytes(a),
        })
    }
    pub(crate) fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(s)
    }
    /// perf's string: u32 length (padding included), NUL-padded bytes.
    pub(crate) fn string(&mut self) -> Option<String> {
        let len = self.u32()? as usize;
        let s = self.bytes(len)?;
        let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
        Some(String::from_utf8_lossy(&s[..end]).into_owned())
    }
    pub(crate) fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()? as usize;
        // Each string takes at least 4 bytes: a bound on what the section can hold.
        if n > self.b.len() / 4 {
            return None;
        }
        (0..n).map(|_| self.string()).collect()
    }
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.pos)
    }
}

/// One `HEADER_BUILD_ID` entry: a file and its build id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildIdEntry {
    /// Process id (-1 for the kernel).
    pub pid: i32,
    /// cpumode bits of the header misc.
    pub misc: u16,
    /// The build id (up to 20 bytes).
    pub build_id: Vec<u8>,
    /// The file.
    pub filename: String,
}

/// `HEADER_CPU_TOPOLOGY`: sibling lists.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuTopology {
    /// CPU lists of each core's siblings (package level).
    pub core_siblings: Vec<String>,
    /// CPU lists of each thread's siblings (core level).
    pub thread_siblings: Vec<String>,
    /// (core id, socket id) of each available CPU, when the writer gave them.
    pub cpus: Vec<(i32, i32)>,
    /// CPU lists of each die's siblings (newer writers).
    pub die_siblings: Vec<String>,
    /// The die id of each available CPU, with `die_siblings`.
    pub die_ids: Vec<i32>,
}

/// One `HEADER_CACHE` entry: a CPU cache level as sysfs describes it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheLevel {
    /// Level (1, 2, 3).
    pub level: u32,
    /// Line size in bytes.
    pub line_size: u32,
    /// Number of sets.
    pub sets: u32,
    /// Associativity.
    pub ways: u32,
    /// `Data`, `Instruction`, `Unified`.
    pub kind: String,
    /// Size as sysfs writes it (`32K`).
    pub size: String,
    /// The CPUs sharing it (`0-1`).
    pub map: String,
}

/// `HEADER_MEM_TOPOLOGY`: memory blocks per NUMA node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemTopology {
    /// Bytes per memory block.
    pub block_size: u64,
    /// (node, the blocks it holds as a bitmap of `bits` bits).
    pub nodes: Vec<(u64, u64, Vec<u64>)>,
}

/// `HEADER_COMPRESSED`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompressedInfo {
    /// Format version.
    pub version: u32,
    /// 1 = zstd.
    pub kind: u32,
    /// Compression level.
    pub level: u32,
    /// Compression ratio.
    pub ratio: u32,
    /// The ring buffer size the data was compressed from (bounds a decompressed chunk).
    pub mmap_len: u32,
}

/// The feature sections of a file.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// `HEADER_HOSTNAME`
    pub hostname: Option<String>,
    /// `HEADER_OSRELEASE`
    pub osrelease: Option<String>,
    /// `HEADER_VERSION`: the tool that wrote the file.
    pub version: Option<String>,
    /// `HEADER_ARCH`
    pub arch: Option<String>,
    /// `HEADER_NRCPUS`: (online, available).
    pub nrcpus: Option<(u32, u32)>,
    /// `HEADER_CPUDESC`
    pub cpudesc: Option<String>,
    /// `HEADER_CPUID`
    pub cpuid: Option<String>,
    /// `HEADER_TOTAL_MEM` in kB.
    pub total_mem_kb: Option<u64>,
    /// `HEADER_CMDLINE`
    pub cmdline: Vec<String>,
    /// `HEADER_EVENT_DESC`: (name, ids) per event, in attr order.
    pub event_desc: Vec<(String, Vec<u64>)>,
    /// `HEADER_BUILD_ID`
    pub build_ids: Vec<BuildIdEntry>,
    /// `HEADER_SAMPLE_TIME`: first and last sample time.
    pub sample_time: Option<(u64, u64)>,
    /// `HEADER_CPU_TOPOLOGY`
    pub cpu_topology: Option<CpuTopology>,
    /// `HEADER_CACHE`
    pub caches: Vec<CacheLevel>,
    /// `HEADER_MEM_TOPOLOGY`
    pub mem_topology: Option<MemTopology>,
    /// `HEADER_NUMA_TOPOLOGY`: (node, total kB, free kB, cpu list).
    pub numa: Vec<(u32, u64, u64, String)>,
    /// `HEADER_PMU_MAPPINGS`: (type, name).
    pub pmu_mappings: Vec<(u32, String)>,
    /// `HEADER_GROUP_DESC`: (name, leader index, number of members).
    pub group_desc: Vec<(String, u32, u32)>,
    /// `HEADER_CLOCKID`: the clock of timestamps.
    pub clockid: Option<u64>,
    /// `HEADER_CLOCK_DATA`: (version, clockid, wall-clock ns, perf clock ns).
    pub clock_data: Option<(u32, u32, u64, u64)>,
    /// `HEADER_COMPRESSED`
    pub compressed: Option<CompressedInfo>,
    /// `HEADER_TRACING_DATA` (tracepoint formats), raw.
    pub tracing_data: Option<Vec<u8>>,
    /// Every other section, raw: (feature bit, bytes).
    pub raw: Vec<(usize, Vec<u8>)>,
    /// Sections that did not parse: (feature bit, reason). The rest of the file is read.
    pub unparsed: Vec<(usize, String)>,
}

impl Features {
    /// Parse one section. Malformed sections are recorded in `unparsed`, never fatal.
    pub(crate) fn add(&mut self, bit: usize, b: &[u8], e: Endian) {
        let mut c = Cursor::new(b, e);
        let ok = match bit {
            f::HOSTNAME => c.string().map(|s| self.hostname = Some(s)),
            f::OSRELEASE => c.string().map(|s| self.osrelease = Some(s)),
            f::VERSION => c.string().map(|s| self.version = Some(s)),
            f::ARCH => c.string().map(|s| self.arch = Some(s)),
            f::CPUDESC => c.string().map(|s| self.cpudesc = Some(s)),
            f::CPUID => c.string().map(|s| self.cpuid = Some(s)),
            f::NRCPUS => (|| {
                self.nrcpus = Some((c.u32()?, c.u32()?));
                Some(())
            })(),
            f::TOTAL_MEM => c.u64().map(|v| self.total_mem_kb = Some(v)),
            f::CMDLINE => c.strings().map(|v| self.cmdline = v),
            f::EVENT_DESC => self.event_desc(&mut c),
            f::BUILD_ID => self.build_id(b, e),
            f::SAMPLE_TIME => (|| {
                self.sample_time = Some((c.u64()?, c.u64()?));
                Some(())
            })(),
            f::CPU_TOPOLOGY => (|| {
                let core_siblings = c.strings()?;
                let thread_siblings = c.strings()?;
                let mut t = CpuTopology {
                    core_siblings,
                    thread_siblings,
                    ..CpuTopology::default()
                };
                // Then (core, socket) per available CPU, die siblings and die ids: each
                // part only when the writer knew it.
                let avail = self.nrcpus.map_or(0, |n| n.1 as usize).min(b.len() / 8);
                let mut ids = Vec::new();
                for _ in 0..avail {
                    match (c.u32(), c.u32()) {
                        (Some(core), Some(socket)) => ids.push((core as i32, socket as i32)),
                        _ => break,
                    }
                }
                if ids.len() == avail {
                    t.cpus = ids;
                    if let Some(dies) = c.strings() {
                        let die_ids: Option<Vec<i32>> =
                            (0..avail).map(|_| c.u32().map(|d| d as i32)).collect();
                        if let Some(die_ids) = die_ids {
                            t.die_siblings = dies;
                            t.die_ids = die_ids;
                        }
                    }
                }
                self.cpu_topology = Some(t);
                Some(())
            })(),
            f::CACHE => (|| {
                let _version = c.u32()?;
                let n = c.u32()? as usize;
                for _ in 0..n.min(b.len() / 28) {
                    let (level, line_size, sets, ways) = (c.u32()?, c.u32()?, c.u32()?, c.u32()?);
                    let (kind, size, map) = (c.string()?, c.string()?, c.string()?);
                    self.caches.push(CacheLevel {
                        level,
                        line_size,
                        sets,
                        ways,
                        kind,
                        size,
                        map,
                    });
                }
                Some(())
            })(),
            f::MEM_TOPOLOGY => (|| {
                let _version = c.u64()?;
                let block_size = c.u64()?;
                let n = c.u64()? as usize;
                let mut nodes = Vec::new();
                for _ in 0..n.min(b.len() / 32) {
                    // The node, its size in blocks, then the bitmap (its bit count again,
                    // then the words).
                    let (node, _size, bits) = (c.u64()?, c.u64()?, c.u64()?);
                    let words = bits.div_ceil(64) as usize;
                    if words > b.len() / 8 {
                        return None;
                    }
                    let set: Option<Vec<u64>> = (0..words).map(|_| c.u64()).collect();
                    nodes.push((node, bits, set?));
                }
                self.mem_topology = Some(MemTopology { block_size, nodes });
                Some(())
            })(),
            f::NUMA_TOPOLOGY => (|| {
                let n = c.u32()? as usize;
                for _ in 0..n.min(b.len() / 24) {
                    let node = c.u32()?;
                    let (total, free) = (c.u64()?, c.u64()?);
                    self.numa.push((node, total, free, c.string()?));
                }
                Some(())
            })(),
            f::PMU_MAPPINGS => (|| {
                let n = c.u32()? as usize;
                for _ in 0..n.min(b.len() / 8) {
                    let ty = c.u32()?;
                    self.pmu_mappings.push((ty, c.string()?));
                }
                Some(())
            })(),
            f::GROUP_DESC => (|| {
                let n = c.u32()? as usize;
                for _ in 0..n.min(b.len() / 12) {
                    let name = c.string()?;
                    let (leader, nr) = (c.u32()?, c.u32()?);
                    self.group_desc.push((name, leader, nr));
                }
                Some(())
            })(),
            f::CLOCKID => c.u64().map(|v| self.clockid = Some(v)),
            f::CLOCK_DATA => (|| {
                let v = c.u32()?;
                let id = c.u32()?;
                self.clock_data = Some((v, id, c.u64()?, c.u64()?));
                Some(())
            })(),
            f::COMPRESSED => (|| {
                self.compressed = Some(CompressedInfo {
                    version: c.u32()?,
                    kind: c.u32()?,
                    level: c.u32()?,
                    ratio: c.u32()?,
                    mmap_len: c.u32()?,
                });
                Some(())
            })(),
            f::TRACING_DATA => {
                self.tracing_data = Some(b.to_vec());
                Some(())
            }
            _ => {
                self.raw.push((bit, b.to_vec()));
                Some(())
            }
        };
        if ok.is_none() {
            self.unparsed.push((
                bit,
                format!("section of {} bytes is truncated or malformed", b.len()),
            ));
        }
    }

    fn event_desc(&mut self, c: &mut Cursor<'_>) -> Option<()> {
        let n = c.u32()? as usize;
        let attr_size = c.u32()? as usize;
        for _ in 0..n.min(c.remaining() / attr_size.max(1)) {
            c.bytes(attr_size)?;
            let nr_ids = c.u32()? as usize;
            let name = c.string()?;
            if nr_ids > c.remaining() / 8 {
                return None;
            }
            let ids = (0..nr_ids).map(|_| c.u64()).collect::<Option<Vec<u64>>>()?;
            self.event_desc.push((name, ids));
        }
        Some(())
    }

    /// `struct build_id_event { header; pid; build_id[24]; filename[] }` records.
    fn build_id(&mut self, b: &[u8], e: Endian) -> Option<()> {
        let mut off = 0;
        while off + 8 <= b.len() {
            let mut c = Cursor::new(&b[off..], e);
            let _type = c.u32()?;
            let misc_size = c.u32()?;
            let (misc, size) = match e {
                Endian::Little => ((misc_size & 0xffff) as u16, (misc_size >> 16) as usize),
                Endian::Big => ((misc_size >> 16) as u16, (misc_size & 0xffff) as usize),
            };
            if size < 8 + 4 + 24 || off + size > b.len() {
                return None;
            }
            let pid = c.u32()? as i32;
            let id = c.bytes(24)?;
            // perf 5.x+ stores the id's length in the byte after 20 bytes of id when
            // PERF_RECORD_MISC_BUILD_ID_SIZE (1 << 15) is set.
            let len = if misc & (1 << 15) != 0 {
                usize::from(id[20]).min(20)
            } else {
                20
            };
            let name = c.bytes(size - 8 - 4 - 24)?;
            let end = name.iter().position(|&x| x == 0).unwrap_or(name.len());
            self.build_ids.push(BuildIdEntry {
                pid,
                misc,
                build_id: id[..len].to_vec(),
                filename: String::from_utf8_lossy(&name[..end]).into_owned(),
            });
            off += size;
        }
        Some(())
    }
}

// The writers of the sections above, in perf 6.1's layout (header.c `write_*`): each
// reads back through `Features::add`.

/// `HEADER_NUMA_TOPOLOGY` (`write_numa_topology`): u32 count, then per node its number
/// (u32), total and free kB (u64) and cpu list (string).
pub(crate) fn write_numa(nodes: &[(u32, u64, u64, String)]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, nodes.len() as u32);
    for (node, total, free, cpus) in nodes {
        w32(&mut v, *node);
        w64(&mut v, *total);
        w64(&mut v, *free);
        wstr(&mut v, cpus);
    }
    v
}

/// `HEADER_PMU_MAPPINGS` (`write_pmu_mappings`): u32 count, then (u32 type, name) pairs.
pub(crate) fn write_pmu_mappings(pmus: &[(u32, String)]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, pmus.len() as u32);
    for (ty, name) in pmus {
        w32(&mut v, *ty);
        wstr(&mut v, name);
    }
    v
}

/// `HEADER_CACHE` (`write_cache`): u32 version 1, u32 count, then per cache four u32
/// (level, line size, sets, ways) and three strings (type, size, shared cpu list).
pub(crate) fn write_caches(caches: &[CacheLevel]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, 1);
    w32(&mut v, caches.len() as u32);
    for c in caches {
        for x in [c.level, c.line_size, c.sets, c.ways] {
            w32(&mut v, x);
        }
        for s in [&c.kind, &c.size, &c.map] {
            wstr(&mut v, s);
        }
    }
    v
}

impl MemTopology {
    /// `HEADER_MEM_TOPOLOGY` (`write_mem_topology`): u64 version 1, block size, node
    /// count, then per node its number, its size in bits and the bitmap (`do_write_bitmap`:
    /// the bit count again, then the u64 words).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::new();
        w64(&mut v, 1);
        w64(&mut v, self.block_size);
        w64(&mut v, self.nodes.len() as u64);
        for (node, bits, set) in &self.nodes {
            w64(&mut v, *node);
            w64(&mut v, *bits);
            w64(&mut v, *bits);
            for word in set {
                w64(&mut v, *word);
            }
        }
        v
    }
}

/// `HEADER_CPU_PMU_CAPS` (`write_cpu_pmu_caps`): u32 count, then (name, value) strings.
pub(crate) fn write_cpu_pmu_caps(caps: &[(String, String)]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, caps.len() as u32);
    for (name, value) in caps {
        wstr(&mut v, name);
        wstr(&mut v, value);
    }
    v
}

/// `HEADER_PMU_CAPS` (`write_pmu_caps`): u32 count of PMUs, then per PMU its u32 count of
/// capabilities, (name, value) strings, and its name.
pub(crate) fn write_pmu_caps(pmus: &[(String, Vec<(String, String)>)]) -> Vec<u8> {
    let mut v = Vec::new();
    w32(&mut v, pmus.len() as u32);
    for (pmu, caps) in pmus {
        w32(&mut v, caps.len() as u32);
        for (name, value) in caps {
            wstr(&mut v, name);
            wstr(&mut v, value);
        }
        wstr(&mut v, pmu);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The writers write this machine's byte order.
    const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    fn read_back(bit: usize, b: &[u8]) -> Features {
        let mut f = Features::default();
        f.add(bit, b, NATIVE);
        assert!(f.unparsed.is_empty(), "{:?}", f.unparsed);
        f
    }

    #[test]
    fn numa_reads_back() {
        let nodes = vec![
            (0, 24684084, 5154564, "0-1".to_string()),
            (3, 7, 1, String::new()),
        ];
        let b = write_numa(&nodes);
        // u32 count; per node u32 + 2 u64 + a 64-byte padded string with its u32 length.
        assert_eq!(b.len(), 4 + 2 * (4 + 16 + 4 + 64));
        assert_eq!(read_back(f::NUMA_TOPOLOGY, &b).numa, nodes);
    }

    #[test]
    fn pmu_mappings_read_back() {
        let pmus = vec![(1, "software".to_string()), (9, "msr".to_string())];
        let b = write_pmu_mappings(&pmus);
        assert_eq!(b.len(), 4 + 2 * (4 + 4 + 64));
        assert_eq!(read_back(f::PMU_MAPPINGS, &b).pmu_mappings, pmus);
    }

    #[test]
    fn caches_read_back() {
        let caches = vec![
            CacheLevel {
                level: 1,
                line_size: 64,
                sets: 64,
                ways: 8,
                kind: "Data".into(),
                size: "32K".into(),
                map: "0".into(),
            },
            CacheLevel {
                level: 3,
                line_size: 64,
                sets: 32768,
                ways: 16,
                kind: "Unified".into(),
                size: "32768K".into(),
                map: "0-1".into(),
            },
        ];
        let b = write_caches(&caches);
        let mut c = Cursor::new(&b, NATIVE);
        assert_eq!((c.u32(), c.u32()), (Some(1), Some(2)));
        assert_eq!(b.len(), 8 + 2 * (16 + 3 * 68));
        assert_eq!(read_back(f::CACHE, &b).caches, caches);
    }

    #[test]
    fn mem_topology_reads_back() {
        // Blocks 0-23 and 32-199 of 128 MiB (what perf's file of this machine holds).
        let mut set = vec![0u64; 4];
        for b in (0..24).chain(32..200) {
            set[b / 64] |= 1 << (b % 64);
        }
        let m = MemTopology {
            block_size: 0x800_0000,
            nodes: vec![(0, 200, set), (1, 1, vec![0])],
        };
        let b = m.to_bytes();
        assert_eq!(b.len(), 24 + (24 + 32) + (24 + 8));
        assert_eq!(read_back(f::MEM_TOPOLOGY, &b).mem_topology, Some(m));
    }

    #[test]
    fn pmu_caps_layout() {
        // No reader keeps them: check perf's layout field by field.
        assert_eq!(write_pmu_caps(&[]), vec![0; 4]);
        let b = write_pmu_caps(&[(
            "cpu_core".to_string(),
            vec![("branches".to_string(), "32".to_string())],
        )]);
        let mut c = Cursor::new(&b, NATIVE);
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.string().as_deref(), Some("branches"));
        assert_eq!(c.string().as_deref(), Some("32"));
        assert_eq!(c.string().as_deref(), Some("cpu_core"));
        assert_eq!(c.remaining(), 0);
        let b = write_cpu_pmu_caps(&[("max_precise".to_string(), "3".to_string())]);
        let mut c = Cursor::new(&b, NATIVE);
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.string().as_deref(), Some("max_precise"));
        assert_eq!(c.string().as_deref(), Some("3"));
        assert_eq!(c.remaining(), 0);
    }
}
