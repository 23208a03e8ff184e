//! CPU topology from sysfs, for `--per-core`, `--per-socket`, `--per-node`, and CPU lists.

use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::Path;

/// Where one CPU sits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct CpuPlace {
    /// `physical_package_id`
    pub socket: i32,
    /// `die_id`
    pub die: i32,
    /// `core_id`
    pub core: i32,
    /// NUMA node.
    pub node: i32,
}

/// Parse a CPU list such as `0,2-3` (sysfs and `-C` syntax).
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let a: u32 = a
            .trim()
            .parse()
            .with_context(|| format!("`{part}` in CPU list `{s}` is not a number or range"))?;
        let b: u32 = b
            .trim()
            .parse()
            .with_context(|| format!("`{part}` in CPU list `{s}` is not a number or range"))?;
        if b < a {
            bail!("range `{part}` in CPU list `{s}` goes backwards");
        }
        out.extend(a..=b);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// The CPUs that are online.
pub fn online_cpus() -> Vec<u32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_cpu_list(&s).ok())
        .unwrap_or_else(|| {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n as u32).collect()
        })
}

fn read_i32(p: &Path) -> i32 {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// Topology of every listed CPU.
pub fn places(cpus: &[u32]) -> BTreeMap<u32, CpuPlace> {
    let mut node_of = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") {
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str().and_then(|s| s.strip_prefix("node")) else {
                continue;
            };
            let Ok(n) = n.parse::<i32>() else { continue };
            if let Ok(list) = std::fs::read_to_string(e.path().join("cpulist"))
                && let Ok(list) = parse_cpu_list(&list)
            {
                for c in list {
                    node_of.insert(c, n);
                }
            }
        }
    }
    cpus.iter()
        .map(|&c| {
            let t = format!("/sys/devices/system/cpu/cpu{c}/topology");
            let t = Path::new(&t);
            (
                c,
                CpuPlace {
                    socket: read_i32(&t.join("physical_package_id")),
                    die: read_i32(&t.join("die_id")),
                    core: read_i32(&t.join("core_id")),
                    node: node_of.get(&c).copied().unwrap_or(0),
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0,2-3").unwrap(), vec![0, 2, 3]);
        assert_eq!(parse_cpu_list("3,1,1-2\n").unwrap(), vec![1, 2, 3]);
        assert!(parse_cpu_list("1-x").is_err());
        assert!(parse_cpu_list("3-1").is_err());
    }
}
