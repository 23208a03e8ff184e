//! Opening every event on every target instance, and reading them.

use crate::events::EventSpec;
use perfkit::sys::attr_flags as f;
use perfkit::{Attr, Count, Counter, ErrorKind, Target};
use std::os::fd::{AsFd, OwnedFd};

/// One place an event is opened: a thread (cpu -1) or a CPU (pid -1), maybe a cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// Task id, or -1 for every task on `cpu`.
    pub tid: i32,
    /// CPU, or -1 for any.
    pub cpu: i32,
    /// Index into the cgroup list for `-G` / `--for-each-cgroup`.
    pub cgroup: Option<usize>,
}

/// What happened when an event was opened on one instance.
#[derive(Debug)]
pub enum Slot {
    /// Open and counting.
    Open(Counter),
    /// The machine has no such event.
    NotSupported,
    /// Failed for another reason.
    Failed(perfkit::Error),
}

/// One event and its counters on every instance.
#[derive(Debug)]
pub struct OpenEvent {
    /// What the user asked for.
    pub spec: EventSpec,
    /// Name to print (with `:u` added when perfkit fell back to user space only).
    pub name: String,
    /// One slot per instance, in the same order as the instance list.
    pub slots: Vec<Slot>,
    /// The cgroup counted (index into the command's cgroup list).
    pub cgroup: Option<usize>,
}

/// How the counters are to be opened.
pub struct OpenConfig<'a> {
    /// inherit to children (command and attach modes).
    pub inherit: bool,
    /// Enable at the child's exec (command mode without -D).
    pub enable_on_exec: bool,
    /// Open cgroup directories, by index.
    pub cgroups: &'a [OwnedFd],
    /// Print each attr before opening (-v).
    pub verbose: bool,
}

/// Open every event on every instance. Group members go into their leader's group on
/// the same instance.
pub fn open_all(
    specs: &[EventSpec],
    instances: &[Instance],
    cfg: &OpenConfig<'_>,
    log: &mut dyn std::io::Write,
) -> Vec<OpenEvent> {
    let mut out: Vec<OpenEvent> = Vec::with_capacity(specs.len());
    let mut fell_back = vec![false; specs.len()];
    for (ei, spec) in specs.iter().enumerate() {
        let mut slots = Vec::with_capacity(instances.len());
        let leader_idx = if spec.leader {
            None
        } else {
            specs[..ei]
                .iter()
                .rposition(|s| s.group == spec.group && s.leader)
        };
        for (ii, inst) in instances.iter().enumerate() {
            if let Some(cpus) = &spec.cpus
                && inst.cpu >= 0
                && !cpus.contains(&(inst.cpu as u32))
            {
                slots.push(Slot::NotSupported);
                continue;
            }
            let mut attr = Attr::from_raw(spec.attr)
                .read_format(
                    perfkit::sys::PERF_FORMAT_TOTAL_TIME_ENABLED
                        | perfkit::sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
                )
                .inherit(cfg.inherit && inst.cpu < 0)
                .disabled(spec.leader)
                .enable_on_exec(spec.leader && cfg.enable_on_exec);
            if leader_idx.is_some_and(|l| fell_back[l]) {
                attr = attr.exclude_kernel(true).exclude_hv(true);
            }
            let target = match inst.cgroup {
                Some(cg) => Target::cgroup(&cfg.cgroups[cg], inst.cpu as u32),
                None if inst.cpu < 0 => Target::pid(inst.tid),
                None if inst.tid < 0 => Target::cpu(inst.cpu as u32),
                None => Target::pid_on_cpu(inst.tid, inst.cpu as u32),
            };
            if cfg.verbose && ii == 0 {
                let _ = writeln!(log, "{}", crate::events::describe_attr(attr.raw()));
            }
            let leader = leader_idx.and_then(|l| match &out[l].slots[ii] {
                Slot::Open(c) => Some(c.as_fd()),
                _ => None,
            });
            if leader_idx.is_some() && leader.is_none() {
                slots.push(Slot::NotSupported);
                continue;
            }
            let mut res = Counter::open_raw(&attr, &target, leader, 0);
            // Like perf: PMUs that know nothing of guests (msr, uncore) refuse exclude_guest.
            if let Some(plain) = crate::events::without_guest_bits(&attr, &res) {
                res = Counter::open_raw(&plain, &target, leader, 0);
                attr = plain;
            }
            // Like perf: a permission error on a task counter that counts the kernel is
            // retried for user space only.
            if let Err(e) = &res
                && e.kind() == ErrorKind::Permission
                && inst.tid >= 0
                && !attr.raw().has(f::EXCLUDE_KERNEL)
            {
                let user = attr.exclude_kernel(true).exclude_hv(true);
                if let Ok(c) = Counter::open_raw(&user, &target, leader, 0) {
                    fell_back[ei] = true;
                    res = Ok(c);
                }
            }
            if let (Ok(c), Some(filter)) = (&res, &spec.filter)
                && let Err(e) = c.set_filter(filter)
            {
                res = Err(e);
            }
            slots.push(match res {
                Ok(c) => Slot::Open(c),
                Err(e) if e.is_not_supported() => Slot::NotSupported,
                Err(e) => Slot::Failed(e.with_event(spec.name.clone())),
            });
        }
        let name = if fell_back[ei] && !spec.name.contains(':') {
            format!("{}:u", spec.name)
        } else {
            spec.name.clone()
        };
        out.push(OpenEvent {
            spec: spec.clone(),
            name,
            slots,
            cgroup: None,
        });
    }
    out
}

/// Every open counter, for enable/disable.
pub fn leaders(events: &[OpenEvent]) -> impl Iterator<Item = &Counter> {
    events
        .iter()
        .filter(|e| e.spec.leader)
        .flat_map(|e| e.slots.iter())
        .filter_map(|s| match s {
            Slot::Open(c) => Some(c),
            _ => None,
        })
}

/// A reading of every slot (None where not open or the read failed).
pub fn read_all(events: &[OpenEvent]) -> Vec<Vec<Option<Count>>> {
    events
        .iter()
        .map(|e| {
            e.slots
                .iter()
                .map(|s| match s {
                    Slot::Open(c) => c.read().ok(),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// `now - before`, field by field (interval mode).
pub fn delta(now: &[Vec<Option<Count>>], before: &[Vec<Option<Count>>]) -> Vec<Vec<Option<Count>>> {
    now.iter()
        .zip(before)
        .map(|(n, b)| {
            n.iter()
                .zip(b)
                .map(|(n, b)| {
                    let (n, b) = ((*n)?, b.unwrap_or_default());
                    Some(Count {
                        value: n.value.wrapping_sub(b.value),
                        time_enabled: Some(
                            n.time_enabled
                                .unwrap_or(0)
                                .saturating_sub(b.time_enabled.unwrap_or(0)),
                        ),
                        time_running: Some(
                            n.time_running
                                .unwrap_or(0)
                                .saturating_sub(b.time_running.unwrap_or(0)),
                        ),
                        id: n.id,
                        lost: n.lost,
                    })
                })
                .collect()
        })
        .collect()
}
