//! The machine as perf 6.1 reads it from sysfs for its feature sections: NUMA nodes
//! (`numa_topology__new`), PMU types (`perf_pmu__scan`), CPU caches (`build_caches`),
//! memory blocks per node (`build_mem_topology`), PMU capabilities, and the older host
//! sections (`/proc/cpuinfo`, `/proc/meminfo`, CPU topology). Each reader returns
//! None where perf's `write_*` fails, so the section is left out as perf leaves it out.

use crate::features::{CacheLevel, MemTopology};
use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

const NODES: &str = "/sys/devices/system/node";
const PMUS: &str = "/sys/bus/event_source/devices";
const CPUS: &str = "/sys/devices/system/cpu";

/// A sysfs or procfs file without its surrounding white space.
pub(crate) fn read(p: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(p).ok().map(|s| s.trim().to_string())
}

/// The numbers of a list such as `0-3,8` (sysfs's cpulist format).
fn list(s: &str) -> Vec<u32> {
    perfkit_sys::cpulist::ranges(s)
        .flatten()
        .flat_map(|(a, b)| a..=b)
        .collect()
}

/// A field of `/proc/cpuinfo`'s first processor (`model name`, `vendor_id`, ...).
pub(crate) fn cpuinfo_field(key: &str) -> Option<String> {
    let info = fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find(|l| l.split(':').next().is_some_and(|n| n.trim() == key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// `HEADER_CPUID` as perf writes it on x86: `vendor,family,model,stepping`.
pub(crate) fn cpuid() -> Option<String> {
    let [v, fam, model, step] = ["vendor_id", "cpu family", "model", "stepping"].map(cpuinfo_field);
    Some(format!("{},{},{},{}", v?, fam?, model?, step?))
}

/// `HEADER_TOTAL_MEM`: `MemTotal` of `/proc/meminfo`, in kB.
pub(crate) fn total_mem_kb() -> Option<u64> {
    fs::read_to_string("/proc/meminfo")
        .ok()?
        .lines()
        .find(|l| l.starts_with("MemTotal:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// `HEADER_CPU_TOPOLOGY`'s sysfs values for CPUs `0..cpus`.
pub(crate) struct CpuTopology {
    /// The distinct `core_siblings_list`s, sorted.
    pub core_siblings: BTreeSet<String>,
    /// The distinct `thread_siblings_list`s, sorted.
    pub thread_siblings: BTreeSet<String>,
    /// The distinct `die_cpus_list`s, sorted.
    pub die_siblings: BTreeSet<String>,
    /// Each CPU's (core id, package id, die id); 0 where sysfs has none.
    pub ids: Vec<(u32, u32, u32)>,
}

/// The topology of CPUs `0..cpus`, as perf reads it (a file that does not read is an empty
/// list or id 0, as perf writes it).
pub(crate) fn cpu_topology(cpus: u32) -> CpuTopology {
    let file =
        |c: u32, what: &str| read(format!("{CPUS}/cpu{c}/topology/{what}")).unwrap_or_default();
    let id = |c: u32, what: &str| file(c, what).parse::<u32>().unwrap_or(0);
    let set = |what: &str| (0..cpus).map(|c| file(c, what)).collect::<BTreeSet<_>>();
    CpuTopology {
        core_siblings: set("core_siblings_list"),
        thread_siblings: set("thread_siblings_list"),
        die_siblings: set("die_cpus_list"),
        ids: (0..cpus)
            .map(|c| {
                (
                    id(c, "core_id"),
                    id(c, "physical_package_id"),
                    id(c, "die_id"),
                )
            })
            .collect(),
    }
}

/// `HEADER_NUMA_TOPOLOGY`: (node, MemTotal kB, MemFree kB, cpu list) of each online node.
pub(crate) fn numa_nodes() -> Option<Vec<(u32, u64, u64, String)>> {
    let mut nodes = Vec::new();
    for n in list(&read(format!("{NODES}/online"))?) {
        let meminfo = fs::read_to_string(format!("{NODES}/node{n}/meminfo")).ok()?;
        // `Node 0 MemTotal:       24684084 kB`
        let field = |name: &str| {
            meminfo.lines().find_map(|l| {
                let mut w = l.split_whitespace().skip(2);
                (w.next()? == name).then(|| w.next()?.parse::<u64>().ok())?
            })
        };
        let (total, free) = (field("MemTotal:")?, field("MemFree:")?);
        nodes.push((n, total, free, read(format!("{NODES}/node{n}/cpulist"))?));
    }
    Some(nodes)
}

/// `HEADER_PMU_MAPPINGS`: (type, name) of each PMU, in directory order as perf lists them.
pub(crate) fn pmu_mappings() -> Option<Vec<(u32, String)>> {
    let mut pmus = Vec::new();
    for e in fs::read_dir(PMUS).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(ty) = read(e.path().join("type")).and_then(|t| t.parse().ok()) {
            pmus.push((ty, name));
        }
    }
    Some(pmus)
}

/// The (capability, value) pairs of a PMU's `caps` directory, in directory order (empty
/// without one).
fn caps_of(pmu: &Path) -> Vec<(String, String)> {
    let Ok(caps) = fs::read_dir(pmu.join("caps")) else {
        return Vec::new();
    };
    caps.flatten()
        .filter_map(|c| {
            let v = read(c.path())?;
            Some((c.file_name().to_string_lossy().into_owned(), v))
        })
        .collect()
}

/// `HEADER_PMU_CAPS`: (PMU, its (capability, value) pairs) of each PMU other than `cpu`
/// with capabilities.
pub(crate) fn pmu_caps() -> Vec<(String, Vec<(String, String)>)> {
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir(PMUS) else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "cpu" || read(e.path().join("type")).is_none() {
            continue;
        }
        let caps = caps_of(&e.path());
        if !caps.is_empty() {
            out.push((name, caps));
        }
    }
    out
}

/// `HEADER_CPU_PMU_CAPS`: the `cpu` PMU's capabilities; None without a `cpu` PMU (perf
/// then writes no section).
pub(crate) fn cpu_pmu_caps() -> Option<Vec<(String, String)>> {
    let cpu = Path::new(PMUS).join("cpu");
    read(cpu.join("type"))?;
    Some(caps_of(&cpu))
}

/// One `cpuN/cache/indexM` directory; `Some(None)` where it does not exist.
fn cache_level(cpu: u32, index: u32) -> Option<Option<CacheLevel>> {
    let dir = format!("{CPUS}/cpu{cpu}/cache/index{index}");
    if !Path::new(&dir).exists() {
        return Some(None);
    }
    let int = |f: &str| read(format!("{dir}/{f}"))?.parse::<u32>().ok();
    Some(Some(CacheLevel {
        level: int("level")?,
        line_size: int("coherency_line_size")?,
        sets: int("number_of_sets")?,
        ways: int("ways_of_associativity")?,
        kind: read(format!("{dir}/type"))?,
        size: read(format!("{dir}/size"))?,
        map: read(format!("{dir}/shared_cpu_list"))?,
    }))
}

/// `HEADER_CACHE`: each distinct cache of the possible CPUs (up to 4 levels each), in
/// level order (a stable sort, as perf's), or None where a cache's files do not read.
pub(crate) fn caches() -> Option<Vec<CacheLevel>> {
    let possible = list(&read(format!("{CPUS}/possible"))?);
    let max = possible.iter().max().map_or(0, |m| m + 1);
    let mut caches: Vec<CacheLevel> = Vec::new();
    for cpu in 0..max {
        for index in 0..4 {
            let Some(c) = cache_level(cpu, index)? else {
                break;
            };
            if !caches.contains(&c) {
                caches.push(c);
            }
        }
    }
    caches.sort_by_key(|c| c.level);
    Some(caches)
}

/// `HEADER_MEM_TOPOLOGY`: the memory block size and each node's blocks (node order), or
/// None without memory block information.
pub(crate) fn mem_topology() -> Option<MemTopology> {
    let block_size =
        u64::from_str_radix(&read("/sys/devices/system/memory/block_size_bytes")?, 16).ok()?;
    let mut nodes = Vec::new();
    for e in fs::read_dir(NODES).ok()?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(node) = name
            .strip_prefix("node")
            .and_then(|n| n.parse::<u64>().ok())
        else {
            continue;
        };
        let blocks: Vec<u64> = fs::read_dir(e.path())
            .ok()?
            .flatten()
            .filter_map(|b| {
                let n = b.file_name().to_string_lossy().into_owned();
                n.strip_prefix("memory")?.parse::<u64>().ok()
            })
            .collect();
        // perf's bitmap holds one bit past the highest block (one bit with none).
        let bits = blocks.iter().max().map_or(0, |m| m + 1).max(1);
        let mut set = vec![0u64; bits.div_ceil(64) as usize];
        for b in blocks {
            set[(b / 64) as usize] |= 1 << (b % 64);
        }
        nodes.push((node, bits, set));
    }
    nodes.sort_by_key(|n| n.0);
    Some(MemTopology { block_size, nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_as_sysfs_writes_them() {
        assert_eq!(list("0-2,5,7-8"), vec![0, 1, 2, 5, 7, 8]);
        assert_eq!(list("0"), vec![0]);
        assert!(list("").is_empty());
    }

    #[test]
    fn this_machine_as_sysfs_describes_it() {
        // Every kernel with perf events has the software PMU, type 1 (PERF_TYPE_SOFTWARE).
        let pmus = pmu_mappings().expect("/sys/bus/event_source/devices reads");
        assert!(pmus.contains(&(1, "software".to_string())), "{pmus:?}");
        // Caches: distinct, in level order.
        if let Some(c) = caches() {
            assert!(c.windows(2).all(|w| w[0].level <= w[1].level), "{c:?}");
            assert!(c.iter().enumerate().all(|(i, x)| !c[..i].contains(x)));
        }
        // NUMA: free memory within total, node 0 online on any machine with nodes.
        if let Some(n) = numa_nodes().filter(|n| !n.is_empty()) {
            assert!(n.iter().all(|x| x.2 <= x.1), "{n:?}");
        }
        // Memory blocks: the bitmaps hold the blocks the node directories list.
        if let Some(m) = mem_topology() {
            assert!(m.block_size.is_power_of_two());
            for (_, bits, set) in &m.nodes {
                assert_eq!(set.len() as u64, bits.div_ceil(64));
            }
        }
    }
}
