//! The header's topology sections as `perf report --header -I` prints them (without `-I`
//! perf says `# CPU_TOPOLOGY info available, use -I to display`): CPU and die siblings and
//! ids, NUMA nodes, CPU caches and memory blocks per node.

use perfkit_data::{CacheLevel, CpuTopology, MemTopology};
use std::fmt::Write;

/// perf's `print_cpu_topology`.
pub fn cpu_topology(t: &CpuTopology) -> String {
    let mut s = String::new();
    for c in &t.core_siblings {
        let _ = writeln!(s, "# sibling sockets : {c}");
    }
    for d in &t.die_siblings {
        let _ = writeln!(s, "# sibling dies    : {d}");
    }
    for c in &t.thread_siblings {
        let _ = writeln!(s, "# sibling threads : {c}");
    }
    if !t.die_siblings.is_empty() {
        if t.cpus.is_empty() {
            s.push_str("# Core ID, Die ID and Socket ID information is not available\n");
        }
        for (i, ((core, socket), die)) in t.cpus.iter().zip(&t.die_ids).enumerate() {
            let _ = writeln!(
                s,
                "# CPU {i}: Core ID {core}, Die ID {die}, Socket ID {socket}"
            );
        }
    } else {
        if t.cpus.is_empty() {
            s.push_str("# Core ID and Socket ID information is not available\n");
        }
        for (i, (core, socket)) in t.cpus.iter().enumerate() {
            let _ = writeln!(s, "# CPU {i}: Core ID {core}, Socket ID {socket}");
        }
    }
    s.pop();
    s
}

/// perf's `print_numa_topology`.
pub fn numa(nodes: &[(u32, u64, u64, String)]) -> String {
    let mut s = String::new();
    for (node, total, free, cpus) in nodes {
        let _ = writeln!(
            s,
            "# node{node} meminfo  : total = {total} kB, free = {free} kB\n# node{node} cpu list : {cpus}"
        );
    }
    s.pop();
    s
}

/// perf's `print_cache`.
pub fn caches(levels: &[CacheLevel]) -> String {
    let mut s = String::from("# CPU cache info:");
    for c in levels {
        let _ = write!(
            s,
            "\n#  L{} {:<15} {:>8} [{}]",
            c.level, c.kind, c.size, c.map
        );
    }
    s
}

/// perf's `print_mem_topology`: each node's size (perf's `unit_number__scnprintf`) and its
/// blocks as a range list.
pub fn mem_topology(m: &MemTopology) -> String {
    let mut s = format!(
        "# memory nodes (nr {}, block size {:#x}):",
        m.nodes.len(),
        m.block_size
    );
    for (node, bits, set) in &m.nodes {
        let on = |i: u64| {
            set.get((i / 64) as usize)
                .is_some_and(|w| w >> (i % 64) & 1 == 1)
        };
        let blocks = (0..*bits).filter(|&i| on(i)).count() as u64;
        let _ = write!(
            s,
            "\n#  {node:>3} [{}]: {}",
            unit(m.block_size * blocks),
            ranges((0..*bits).filter(|&i| on(i)))
        );
    }
    s
}

/// perf's `unit_number__scnprintf`: divide by 1024 while more than one unit is left.
fn unit(mut n: u64) -> String {
    let units = ['B', 'K', 'M', 'G'];
    let mut i = 0;
    while n / 1024 > 1 && i < 3 {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units[i])
}

/// `0-23,32-199` from increasing numbers.
fn ranges(it: impl Iterator<Item = u64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(u64, u64)> = None;
    let flush = |r: (u64, u64), out: &mut Vec<String>| {
        out.push(if r.0 == r.1 {
            r.0.to_string()
        } else {
            format!("{}-{}", r.0, r.1)
        })
    };
    for i in it {
        run = match run {
            Some((a, b)) if b + 1 == i => Some((a, i)),
            Some(r) => {
                flush(r, &mut out);
                Some((i, i))
            }
            None => Some((i, i)),
        };
    }
    if let Some(r) = run {
        flush(r, &mut out);
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_perfs_lines() {
        let m = MemTopology {
            block_size: 0x8000000,
            nodes: vec![(
                0,
                200,
                vec![0xffff_ffff_00ff_ffff, u64::MAX, u64::MAX, 0xff],
            )],
        };
        assert_eq!(
            mem_topology(&m),
            "# memory nodes (nr 1, block size 0x8000000):\n#    0 [24G]: 0-23,32-199"
        );
        let c = CacheLevel {
            level: 1,
            kind: "Data".into(),
            size: "32K".into(),
            map: "0".into(),
            ..CacheLevel::default()
        };
        assert_eq!(
            caches(&[c]),
            "# CPU cache info:\n#  L1 Data                 32K [0]"
        );
    }
}
