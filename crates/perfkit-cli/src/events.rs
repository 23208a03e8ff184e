//! The events a command opens: parsed from `-e` strings, or the default set.
//!
//! The full grammar lives in the `perfkit-events` crate; this module adapts its result to
//! the flat list `stat` and `record` work with (group membership kept as indices).

use anyhow::{Result, bail};
use perfkit::sys::{self, perf_event_attr};
use perfkit::{Attr, Hardware, Software};

/// One event to open, as the user named it.
#[derive(Clone, Debug)]
pub struct EventSpec {
    /// The name printed in output (`cycles:u`).
    pub name: String,
    /// The attr to open (flags for the target are added by the command).
    pub attr: perf_event_attr,
    /// Multiply counts by this (sysfs `.scale`).
    pub scale: f64,
    /// Unit after scaling (sysfs `.unit`), empty if none.
    pub unit: String,
    /// Index of the group this event belongs to.
    pub group: usize,
    /// Whether it leads its group (a lone event leads a group of one).
    pub leader: bool,
    /// CPUs the PMU is restricted to (sysfs `cpumask`).
    pub cpus: Option<Vec<u32>>,
    /// Tracepoint filter.
    pub filter: Option<String>,
}

impl EventSpec {
    fn simple(name: &str, attr: perf_event_attr, group: usize) -> EventSpec {
        EventSpec {
            name: name.to_string(),
            attr,
            scale: 1.0,
            unit: String::new(),
            group,
            leader: true,
            cpus: None,
            filter: None,
        }
    }
}

fn lookup(name: &str) -> Option<perf_event_attr> {
    let hw = |h: Hardware| Attr::new(h).raw().to_owned();
    let sw = |s: Software| Attr::new(s).raw().to_owned();
    Some(match name {
        "cycles" | "cpu-cycles" => hw(Hardware::CpuCycles),
        "instructions" => hw(Hardware::Instructions),
        "cache-references" => hw(Hardware::CacheReferences),
        "cache-misses" => hw(Hardware::CacheMisses),
        "branches" | "branch-instructions" => hw(Hardware::BranchInstructions),
        "branch-misses" => hw(Hardware::BranchMisses),
        "bus-cycles" => hw(Hardware::BusCycles),
        "stalled-cycles-frontend" | "idle-cycles-frontend" => hw(Hardware::StalledCyclesFrontend),
        "stalled-cycles-backend" | "idle-cycles-backend" => hw(Hardware::StalledCyclesBackend),
        "ref-cycles" => hw(Hardware::RefCpuCycles),
        "cpu-clock" => sw(Software::CpuClock),
        "task-clock" => sw(Software::TaskClock),
        "page-faults" | "faults" => sw(Software::PageFaults),
        "context-switches" | "cs" => sw(Software::ContextSwitches),
        "cpu-migrations" | "migrations" => sw(Software::CpuMigrations),
        "minor-faults" => sw(Software::PageFaultsMin),
        "major-faults" => sw(Software::PageFaultsMaj),
        "alignment-faults" => sw(Software::AlignmentFaults),
        "emulation-faults" => sw(Software::EmulationFaults),
        "dummy" => sw(Software::Dummy),
        "bpf-output" => sw(Software::BpfOutput),
        "cgroup-switches" => sw(Software::CgroupSwitches),
        _ => return None,
    })
}

/// Parse the `-e` arguments (each may be a comma-separated list).
pub fn parse(specs: &[String]) -> Result<Vec<EventSpec>> {
    let mut out = Vec::new();
    for spec in specs {
        for item in spec.split(',').filter(|s| !s.is_empty()) {
            let (base, mods) = item.split_once(':').unwrap_or((item, ""));
            let Some(mut attr) = lookup(base) else {
                bail!(
                    "unknown event `{item}`: run `perfkit list` to see the events of this machine"
                );
            };
            for m in mods.chars() {
                match m {
                    'u' => attr.set(
                        sys::attr_flags::EXCLUDE_KERNEL | sys::attr_flags::EXCLUDE_HV,
                        true,
                    ),
                    'k' => attr.set(
                        sys::attr_flags::EXCLUDE_USER | sys::attr_flags::EXCLUDE_HV,
                        true,
                    ),
                    _ => bail!("unknown modifier `{m}` in `{item}`"),
                }
            }
            let g = out.len();
            out.push(EventSpec::simple(item, attr, g));
        }
    }
    if out.is_empty() {
        bail!("no events given to -e");
    }
    Ok(out)
}

/// perf stat's default events: the clock, switches, migrations, faults, and the
/// hardware basics (the stalled-cycles events too where the machine has them).
pub fn default_stat_events(system_wide: bool) -> Vec<EventSpec> {
    let clock = if system_wide {
        "cpu-clock"
    } else {
        "task-clock"
    };
    let mut names = vec![
        clock,
        "context-switches",
        "cpu-migrations",
        "page-faults",
        "cycles",
    ];
    for stalled in ["stalled-cycles-frontend", "stalled-cycles-backend"] {
        if opens_here(stalled) {
            names.push(stalled);
        }
    }
    names.extend(["instructions", "branches", "branch-misses"]);
    names
        .iter()
        .enumerate()
        .filter_map(|(i, n)| Some(EventSpec::simple(n, lookup(n)?, i)))
        .collect()
}

fn opens_here(name: &str) -> bool {
    let Some(attr) = lookup(name) else {
        return false;
    };
    let attr = Attr::from_raw(attr).exclude_kernel(true).exclude_hv(true);
    perfkit::Counter::open(&attr, &perfkit::Target::this_process()).is_ok()
}

/// The attr in the shape of `perf -vv` (`perf_event_attr:` then one non-zero field a line).
pub fn describe_attr(attr: &perf_event_attr) -> String {
    let mut s = String::from(
        "------------------------------------------------------------\nperf_event_attr:\n",
    );
    let mut field = |name: &str, v: String| s.push_str(&format!("  {name:<32} {v}\n"));
    field("type", attr.type_.to_string());
    field("size", attr.size.to_string());
    if attr.config != 0 {
        field("config", format!("{:#x}", attr.config));
    }
    if attr.sample_period != 0 {
        field(
            "{ sample_period, sample_freq }",
            attr.sample_period.to_string(),
        );
    }
    if attr.sample_type != 0 {
        field("sample_type", format!("{:#x}", attr.sample_type));
    }
    if attr.read_format != 0 {
        field("read_format", format!("{:#x}", attr.read_format));
    }
    for (name, bit) in sys::attr_flags::ALL {
        if attr.has(bit) {
            field(name, "1".into());
        }
    }
    s.push_str("------------------------------------------------------------");
    s
}
