//! [`EventSpec`]: the events a command opens, parsed from perf's event syntax by
//! `perfkit-events`, or perf's default sets.
//!
//! `perfkit-events` returns groups of ready attrs; this module flattens them into the list
//! the open path works with (group membership kept as indices), keeping what each event
//! asked for explicitly (period, call-graph, filter, `:S`, uprobe path).

use std::ffi::CString;
use std::sync::{Arc, OnceLock};

use crate::Error;
use perfkit::Attr;
use perfkit::sys::perf_event_attr;
use perfkit_events::{Env, EventList, UserTerms};

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
    /// Whether the user grouped it with braces (opened with a group fd).
    pub grouped: bool,
    /// CPUs the PMU is restricted to (sysfs `cpumask`, or a hybrid core PMU's cpus).
    pub cpus: Option<Vec<u32>>,
    /// Tracepoint filter.
    pub filter: Option<String>,
    /// Settings given in the event string, which command-line defaults must not override.
    pub terms: UserTerms,
    /// `:S`: the leader's samples read the whole group (`PERF_SAMPLE_READ`).
    pub sample_read: bool,
    /// The group has `:S` (leader sampling): only its leader samples.
    pub leader_sampling: bool,
    /// `:P`: open with the highest `precise_ip` that works.
    pub precise_max: bool,
    /// The uprobe's binary: `attr.config1` points into it, so it lives as long as any copy
    /// of this spec.
    pub uprobe_path: Option<Arc<CString>>,
}

/// The parser's view of this machine, read once per run.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(Env::system)
}

fn flatten(list: EventList, out: &mut Vec<EventSpec>) {
    for g in list.groups {
        let group = out.last().map_or(0, |s: &EventSpec| s.group + 1);
        let leader_sampling = g.leader_sampling;
        for (i, e) in g.members.into_iter().enumerate() {
            let uprobe_path = e.uprobe_path.map(Arc::new);
            let mut attr = e.attr;
            if let Some(p) = &uprobe_path {
                attr.config1 = p.as_ptr() as u64;
            }
            // A hybrid machine's copies of one generic event are separate events, each
            // leading its own group unless the user grouped them.
            let group = if g.is_group { group } else { group + i };
            out.push(EventSpec {
                name: e.name,
                attr,
                scale: e.scale,
                unit: e.unit,
                group,
                leader: !g.is_group || i == 0,
                grouped: g.is_group,
                cpus: e.cpus,
                filter: e.filter,
                terms: e.terms,
                sample_read: e.sample_read || (leader_sampling && i == 0),
                leader_sampling: leader_sampling && g.is_group,
                precise_max: e.precise_max,
                uprobe_path,
            });
        }
    }
}

impl EventSpec {
    /// Whether the event string chose privilege levels itself (`:u`, `:k`, `:h` set some
    /// `exclude_user`/`exclude_kernel`/`exclude_hv` bit): then no fallback may change them.
    pub fn explicit_privilege(&self) -> bool {
        use perfkit::sys::attr_flags as f;
        self.attr.flags & (f::EXCLUDE_USER | f::EXCLUDE_KERNEL | f::EXCLUDE_HV) != 0
    }
}

/// Parse event strings (each may be a comma-separated list with groups), each with the
/// tracepoint filters that follow it (perf's `-e EVENT --filter F`), as
/// `(event string, filters)` pairs.
///
/// ```
/// let specs = perfkit_engine::parse_with_filters(&[("task-clock,page-faults".into(), vec![])])?;
/// assert_eq!(specs.len(), 2);
/// assert_eq!(specs[1].name, "page-faults");
/// # Ok::<(), perfkit_engine::Error>(())
/// ```
pub fn parse_with_filters(specs: &[(String, Vec<String>)]) -> Result<Vec<EventSpec>, Error> {
    let mut out = Vec::new();
    for (spec, filters) in specs {
        let mut list = env().parse(spec).map_err(|e| Error::Parse(Box::new(e)))?;
        for f in filters {
            list.set_filter(f).map_err(|why| Error::Filter {
                event: spec.clone(),
                why,
            })?;
        }
        flatten(list, &mut out);
    }
    if out.is_empty() {
        return Err(Error::NoEvents);
    }
    Ok(out)
}

/// Parse event strings (each may be a comma-separated list with groups).
pub fn parse(specs: &[String]) -> Result<Vec<EventSpec>, Error> {
    let pairs: Vec<(String, Vec<String>)> = specs.iter().map(|s| (s.clone(), vec![])).collect();
    parse_with_filters(&pairs)
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
    let mut out = Vec::new();
    for n in names {
        if let Ok(list) = env().parse(n) {
            flatten(list, &mut out);
        }
    }
    out
}

fn opens_here(name: &str) -> bool {
    let Ok(list) = env().parse(name) else {
        return false;
    };
    list.events().all(|e| {
        let attr = Attr::from_raw(e.attr).exclude_kernel(true).exclude_hv(true);
        perfkit::Counter::open(&attr, &perfkit::Target::this_thread()).is_ok()
    })
}

/// The attr in the shape of `perf -vv` (`perf_event_attr:` then one non-zero field a line).
pub fn describe_attr(attr: &perf_event_attr) -> String {
    perfkit_events::format_attr(attr).trim_end().to_string()
}
