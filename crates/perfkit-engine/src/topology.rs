//! CPU topology from sysfs, for `--per-core`, `--per-socket`, `--per-node`.

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
                && let Ok(list) =
                    perfkit::cpus::parse_list(&list, &(0..=u16::MAX as u32).collect::<Vec<_>>())
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
