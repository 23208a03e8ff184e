//! [`Plan`]: what `stat` counts, where, and how the counts are grouped, checked before
//! anything is opened.

use super::tool::{self, Piece};
use super::user_metrics::{self, MetricUse};
use crate::{Error, EventSpec, Place, Result};
use std::ffi::OsString;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// What to count and where, as perf stat's flags say it.
#[derive(Clone, Debug, Default)]
pub struct StatConfig {
    /// Event strings, each with the `--filter`s that follow it; empty: perf's defaults.
    pub events: Vec<(String, Vec<String>)>,
    /// `-p`: processes (comma separated), all their threads.
    pub pids: Option<String>,
    /// `-t`: threads (comma separated).
    pub tids: Option<String>,
    /// `-a`: every CPU.
    pub all_cpus: bool,
    /// `-C`: these CPUs (implies system-wide).
    pub cpus: Option<String>,
    /// `-G`: cgroups paired with the events in order (the last repeats).
    pub cgroup: Option<String>,
    /// `--for-each-cgroup`: every event once for each of these cgroups.
    pub for_each_cgroup: Option<String>,
    /// The command to run.
    pub command: Vec<OsString>,
    /// How to group the counts.
    pub aggr: Aggr,
    /// `-d`, `-dd`, `-ddd`: perf's detailed events added to the default list.
    pub detail: u8,
    /// `-n`/`--null`: count nothing (only the elapsed time).
    pub null: bool,
    /// `--all-user`: count user space only (every event gets `exclude_kernel`, `exclude_hv`).
    pub all_user: bool,
    /// `--all-kernel`: count the kernel only (every event gets `exclude_user`).
    pub all_kernel: bool,
    /// `-M`: metrics and metric groups (comma separated) from the CPU's metric table.
    pub metrics: Option<String>,
    /// `--metric-no-group`: the metrics' events ungrouped, each once.
    pub metric_no_group: bool,
    /// `--metric-no-merge`: each metric counts its own events (no set is shared).
    pub metric_no_merge: bool,
}

/// perf's `-d` levels: the events each adds after the default list.
const DETAIL: [&[&str]; 3] = [
    &[
        "L1-dcache-loads",
        "L1-dcache-load-misses",
        "LLC-loads",
        "LLC-load-misses",
    ],
    &[
        "L1-icache-loads",
        "L1-icache-load-misses",
        "dTLB-loads",
        "dTLB-load-misses",
        "iTLB-loads",
        "iTLB-load-misses",
    ],
    &["L1-dcache-prefetches", "L1-dcache-prefetch-misses"],
];

/// Whom the counters are attached to.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Scope {
    /// The launched command (inherit, enable_on_exec).
    Command,
    /// Existing threads, with their names.
    Threads(Vec<(i32, String)>),
    /// CPUs (with or without a command).
    Cpus(Vec<u32>),
}

/// How counts are grouped into rows (perf's `--per-*` and `-A`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Aggr {
    /// One row per event.
    #[default]
    Global,
    /// Per CPU (`-A`).
    Cpu,
    /// Per thread (`--per-thread`).
    Thread,
    /// Per physical core.
    Core,
    /// Per die (`--per-die`).
    Die,
    /// Per socket.
    Socket,
    /// Per NUMA node.
    Node,
    /// Per cache of this level (`--per-cache`; 0: the highest level).
    Cache(u8),
}

/// A checked stat configuration: the events, the places to open them on, the cgroups.
#[derive(Debug)]
pub struct Plan {
    /// Whom the counters are attached to.
    pub scope: Scope,
    /// How counts are grouped.
    pub aggr: Aggr,
    /// Where each event is opened (the command's place is filled in per run).
    pub places: Vec<Place>,
    /// Cgroup names as given, by index.
    pub cgroup_names: Vec<String>,
    /// Open cgroup directories, by index.
    pub cgroups: Vec<OwnedFd>,
    /// The events.
    pub specs: Vec<EventSpec>,
    /// The cgroup (index into `cgroups`) each spec counts, for -G / --for-each-cgroup.
    pub spec_cgroup: Vec<Option<usize>>,
    /// The command, if any.
    pub command: Vec<OsString>,
    /// Every CPU was asked for (`-a`, `-C`, or no target at all), also when counting per
    /// thread: perf prints `system wide` and skips threads that counted nothing.
    pub system_wide: bool,
    /// `-M`: the metrics counted, computed on the rows.
    pub metrics: Vec<MetricUse>,
    /// Messages for the user before counting (perf's: a metric that is not there).
    pub notes: Vec<String>,
    /// `-M`: each event string built for the metrics, in the order parsed (perf's `-v`
    /// line `Parsing metric events '...'`).
    pub metric_events: Vec<String>,
}

fn comm_of(tid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "?".into())
}

impl Plan {
    /// Check a configuration: targets exist, CPU lists name CPUs that are online, the
    /// aggregation fits the targets, cgroups open, events parse.
    pub fn new(cfg: &StatConfig) -> Result<Plan> {
        // No command and no target: perf counts the whole system.
        let system_wide = cfg.all_cpus
            || cfg.cpus.is_some()
            || (cfg.command.is_empty()
                && cfg.pids.is_none()
                && cfg.tids.is_none()
                && cfg.cgroup.is_none()
                && cfg.for_each_cgroup.is_none());
        let cpus = crate::targets::cpus(cfg.cpus.as_deref())?;
        let with_names = |ts: Vec<i32>| ts.into_iter().map(|t| (t, comm_of(t))).collect();
        let scope = if let Some(p) = &cfg.pids {
            Scope::Threads(with_names(crate::targets::threads_of_pids(p)?))
        } else if let Some(t) = &cfg.tids {
            Scope::Threads(with_names(crate::targets::existing_tids(t)?))
        } else if system_wide && cfg.aggr == Aggr::Thread {
            // perf 6.1's `--per-thread -a`: every thread that exists now, counted as a
            // thread (not per CPU).
            Scope::Threads(with_names(all_threads()?))
        } else if system_wide || cfg.cgroup.is_some() || cfg.for_each_cgroup.is_some() {
            Scope::Cpus(cpus)
        } else {
            Scope::Command
        };
        match (&scope, cfg.aggr) {
            (Scope::Cpus(_), Aggr::Thread) => {
                return Err(Error::Usage(
                    "--per-thread needs -p, -t or -a (per-thread counts of a cgroup are not \
                     available)"
                        .into(),
                ));
            }
            (
                Scope::Threads(_),
                Aggr::Cpu | Aggr::Core | Aggr::Die | Aggr::Socket | Aggr::Node | Aggr::Cache(_),
            ) => {
                return Err(Error::Usage(
                    "-A, --per-core, --per-die, --per-cache, --per-socket and --per-node need \
                     -a or -C"
                        .into(),
                ));
            }
            (Scope::Command, a) if a != Aggr::Global => {
                return Err(Error::Usage(
                    "per-CPU and per-thread output need -a, -C, -p or -t".into(),
                ));
            }
            _ => {}
        }

        let mut cgroup_names = Vec::new();
        let mut cgroups = Vec::new();
        if let Some(list) = cfg.cgroup.as_ref().or(cfg.for_each_cgroup.as_ref()) {
            let root = cgroup_root()?;
            for name in list.split(',').filter(|s| !s.is_empty()) {
                let path = root.join(name.trim_start_matches('/'));
                let f = std::fs::File::open(&path).map_err(|source| Error::Cgroup {
                    name: name.to_string(),
                    path: path.clone(),
                    source,
                })?;
                cgroups.push(OwnedFd::from(f));
                cgroup_names.push(name.to_string());
            }
        }

        if cfg.all_user && cfg.all_kernel {
            return Err(Error::Usage(
                "--all-user and --all-kernel exclude each other".into(),
            ));
        }
        let mut notes = Vec::new();
        let mut metric_events = Vec::new();
        let mut metrics = Vec::new();
        let mut metric_specs = Vec::new();
        if let Some(list) = &cfg.metrics {
            let r = user_metrics::resolve(
                &perfkit_events::metrics::Metrics::system(),
                list,
                user_metrics::MetricLayout {
                    no_group: cfg.metric_no_group,
                    no_merge: cfg.metric_no_merge,
                },
                &perfkit_events::metrics::Literals::system(matches!(scope, Scope::Cpus(_))),
                perfkit_events::metrics::nmi_watchdog_enabled(),
            )?;
            notes = r.notes;
            metric_events = r.event_strings;
            metrics = r.metrics;
            metric_specs = r.specs;
        }
        // -M alone counts only the metrics' events.
        let mut specs = if cfg.null || (cfg.events.is_empty() && !metric_specs.is_empty()) {
            Vec::new()
        } else if cfg.events.is_empty() {
            let mut specs = crate::default_stat_events(matches!(scope, Scope::Cpus(_)));
            let extra: Vec<(String, Vec<String>)> = DETAIL
                .iter()
                .take(cfg.detail.into())
                .flat_map(|l| l.iter())
                .map(|e| (e.to_string(), Vec::new()))
                .collect();
            if !extra.is_empty() {
                // Each its own group, after the defaults.
                let base = specs.iter().map(|s| s.group + 1).max().unwrap_or(0);
                for mut s in crate::parse_with_filters(&extra)? {
                    s.group += base;
                    specs.push(s);
                }
            }
            specs
        } else {
            parse_events(&cfg.events)?
        };
        // The metrics' rows come after the other events' rows of the same names.
        for m in &mut metrics {
            m.after(&|e| specs.iter().filter(|s| s.name == e).count());
        }
        let base = specs.last().map_or(0, |s| s.group + 1);
        for mut s in metric_specs {
            s.group += base;
            specs.push(s);
        }
        if cfg.all_user || cfg.all_kernel {
            for s in &mut specs {
                let a = perfkit::Attr::from_raw(s.attr);
                let a = if cfg.all_user {
                    a.exclude_kernel(true).exclude_hv(true)
                } else {
                    a.exclude_user(true)
                };
                s.attr = a.raw().to_owned();
            }
        }
        // -G pairs cgroups with events in order; --for-each-cgroup repeats every event.
        let mut spec_cgroup: Vec<Option<usize>> = vec![None; specs.len()];
        if cfg.for_each_cgroup.is_some() {
            let base = std::mem::take(&mut specs);
            spec_cgroup.clear();
            for cg in 0..cgroups.len() {
                for s in &base {
                    let mut s = s.clone();
                    s.group += cg * base.len();
                    specs.push(s);
                    spec_cgroup.push(Some(cg));
                }
            }
        } else if cfg.cgroup.is_some() {
            for (i, c) in spec_cgroup.iter_mut().enumerate() {
                *c = Some(i.min(cgroups.len().saturating_sub(1)));
            }
        }

        let places = match &scope {
            Scope::Command => vec![Place::thread(0)],
            Scope::Threads(ts) => ts.iter().map(|(t, _)| Place::thread(*t)).collect(),
            Scope::Cpus(cs) => cs.iter().map(|&c| Place::cpu(c)).collect(),
        };
        Ok(Plan {
            scope,
            aggr: cfg.aggr,
            places,
            cgroup_names,
            cgroups,
            specs,
            spec_cgroup,
            command: cfg.command.clone(),
            system_wide,
            metrics,
            notes,
            metric_events,
        })
    }
}

/// `-e` strings with their filters, perf's tool events among them, each event string's
/// groups after the previous one's.
pub(super) fn parse_events(events: &[(String, Vec<String>)]) -> Result<Vec<EventSpec>> {
    let mut out: Vec<EventSpec> = Vec::new();
    for (s, filters) in events {
        let pieces = tool::split(s);
        let last_events = pieces.iter().rposition(|p| matches!(p, Piece::Events(_)));
        for (i, p) in pieces.into_iter().enumerate() {
            let base = out.last().map_or(0, |s| s.group + 1);
            match p {
                Piece::Tool(mut t) => {
                    t.group = base;
                    out.push(*t);
                }
                Piece::Events(e) => {
                    let f = if Some(i) == last_events {
                        filters.clone()
                    } else {
                        Vec::new()
                    };
                    for mut spec in crate::parse_with_filters(&[(e, f)])? {
                        spec.group += base;
                        out.push(spec);
                    }
                }
            }
        }
    }
    if out.is_empty() {
        return Err(Error::NoEvents);
    }
    Ok(out)
}

/// Every thread of every process in /proc (tasks that end while listed are left out).
fn all_threads() -> Result<Vec<i32>> {
    let procs = std::fs::read_dir("/proc").map_err(|e| Error::io("reading /proc", e))?;
    let mut pids: Vec<i32> = procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    let mut out = Vec::new();
    for pid in pids {
        if let Ok(ts) = perfkit::threads_of(pid) {
            out.extend(ts);
        }
    }
    Ok(out)
}

/// Where the cgroup file system is mounted: cgroup2, else a cgroup v1 hierarchy with the
/// `perf_event` controller (what `-G` names are relative to).
pub fn cgroup_root() -> Result<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts")
        .map_err(|e| Error::io("reading /proc/mounts", e))?;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 2 && f[2] == "cgroup2" {
            return Ok(PathBuf::from(f[1]));
        }
    }
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 3 && f[2] == "cgroup" && f[3].contains("perf_event") {
            return Ok(PathBuf::from(f[1]));
        }
    }
    Err(Error::Usage(
        "no cgroup2 (or perf_event cgroup v1) file system is mounted: mount one \
         (`mount -t cgroup2 none /sys/fs/cgroup`)"
            .into(),
    ))
}
