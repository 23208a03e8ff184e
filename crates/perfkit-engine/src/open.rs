//! The one open path: every event of a list on every place (thread, CPU, cgroup on a CPU),
//! with every fallback perf applies, in one place.
//!
//! The fallbacks, in the order they are tried for each counter:
//!
//! 1. PMUs that know nothing of guests (msr, many uncore PMUs) refuse `exclude_guest` /
//!    `exclude_host` with EINVAL: open again without them.
//! 2. `:P` asks for the highest `precise_ip` the PMU takes: lower it on EINVAL/EOPNOTSUPP.
//! 3. With [`OpenOptions::cycles_fallback`] (`record`'s default event), hardware `cycles`
//!    on a machine without a PMU becomes `cpu-clock`, and the event is renamed.
//! 4. A permission error on a task counter that counts the kernel, for an event that chose
//!    no privilege level itself, is retried for user space only (`exclude_kernel`, as perf
//!    at `perf_event_paranoid` 2); the event's name gets `:u` so the output says what was
//!    counted. An event that asked for the kernel (`:k`) is never changed: it fails.
//!
//! Each fallback that happened is reported in [`Opened::notes`], once per event.
//!
//! For a launched command, task places get `inherit` (its children are counted too, unless
//! the event string says `no-inherit`, or the event reads a group in its samples, which the
//! kernel cannot inherit) and group leaders `enable_on_exec` (counting starts at the
//! command's first instruction, not in the launcher); whole-CPU and cgroup places get
//! neither.

use crate::EventSpec;
use perfkit::sys::{self, attr_flags as f};
use perfkit::{Attr, Counter, ErrorKind, Target};
use std::os::fd::{AsFd, OwnedFd};

/// One place an event is opened: a thread on any CPU, a thread on one CPU, every task of
/// a CPU, or a cgroup on a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// Task id, or -1 for every task on `cpu`.
    pub tid: i32,
    /// CPU, or -1 for any.
    pub cpu: i32,
    /// Index into [`OpenOptions::cgroups`] (`perf stat -G`).
    pub cgroup: Option<usize>,
}

impl Place {
    /// A thread (or process leader: the kernel takes a tid) on any CPU.
    pub const fn thread(tid: i32) -> Place {
        Place {
            tid,
            cpu: -1,
            cgroup: None,
        }
    }
    /// Every task on one CPU.
    pub const fn cpu(cpu: u32) -> Place {
        Place {
            tid: -1,
            cpu: cpu as i32,
            cgroup: None,
        }
    }
    /// One thread while it runs on one CPU (for rings of inherited events).
    pub const fn thread_on_cpu(tid: i32, cpu: u32) -> Place {
        Place {
            tid,
            cpu: cpu as i32,
            cgroup: None,
        }
    }
    /// The places of a [`perfkit::Targets`] (a whole process, threads, CPUs, tasks x CPUs).
    ///
    /// ```
    /// use perfkit_engine::Place;
    /// let me = Place::of(&perfkit::Targets::this_process()?);
    /// assert!(me.iter().all(|p| p.tid > 0 && p.cpu == -1));
    /// # Ok::<(), perfkit::Error>(())
    /// ```
    pub fn of(targets: &perfkit::Targets) -> Vec<Place> {
        targets
            .places()
            .iter()
            .map(|&(tid, cpu)| Place {
                tid,
                cpu,
                cgroup: None,
            })
            .collect()
    }

    /// Every task of `tasks` on every CPU of `cpus`, CPU by CPU (the places of a sampling
    /// session, one ring each); a task of -1 is the whole CPU (system wide).
    ///
    /// ```
    /// use perfkit_engine::Place;
    /// let p = Place::on_cpus(&[0, 1], &[-1]);
    /// assert_eq!(p, [Place::cpu(0), Place::cpu(1)]);
    /// ```
    pub fn on_cpus(cpus: &[u32], tasks: &[i32]) -> Vec<Place> {
        cpus.iter()
            .flat_map(|&cpu| {
                tasks.iter().map(move |&t| match t {
                    -1 => Place::cpu(cpu),
                    t => Place::thread_on_cpu(t, cpu),
                })
            })
            .collect()
    }

    /// Whether this place is a task (not a whole CPU or cgroup).
    pub fn is_task(&self) -> bool {
        self.tid >= 0 && self.cgroup.is_none()
    }
}

/// How [`open`] opens.
#[derive(Debug, Default)]
pub struct OpenOptions<'a> {
    /// Open cgroup directories, indexed by [`Place::cgroup`].
    pub cgroups: &'a [OwnedFd],
    /// Hardware `cycles` that the machine lacks is opened as `cpu-clock` (perf record).
    pub cycles_fallback: bool,
    /// Never retry a permission error for user space only.
    pub no_user_fallback: bool,
    /// Task places follow their children (`inherit`).
    pub inherit: bool,
    /// Task places are a command held before exec: group leaders enable at its exec.
    pub enable_on_exec: bool,
}

impl OpenOptions<'_> {
    /// Whether `spec` inherits on a task place: the event string's `inherit`/`no-inherit`
    /// wins; groups read in samples (`:S`) cannot be inherited.
    fn inherits(&self, spec: &EventSpec) -> bool {
        spec.terms.inherit.unwrap_or(self.inherit) && !(spec.sample_read && spec.grouped)
    }
}

/// What happened when an event was opened on one place.
#[derive(Debug)]
#[non_exhaustive]
pub enum Slot {
    /// Open.
    Open(Counter),
    /// Not opened here: the event's PMU does not cover this CPU, or its group leader is
    /// not open here.
    Skipped,
    /// The machine has no such event (ENOENT, EOPNOTSUPP, ENODEV).
    NotSupported(perfkit::Error),
    /// Failed for another reason (permission, invalid attr, ...).
    Failed(perfkit::Error),
}

impl Slot {
    /// The counter, if open.
    pub fn counter(&self) -> Option<&Counter> {
        match self {
            Slot::Open(c) => Some(c),
            _ => None,
        }
    }
    /// The error, if opening failed.
    pub fn error(&self) -> Option<&perfkit::Error> {
        match self {
            Slot::NotSupported(e) | Slot::Failed(e) => Some(e),
            _ => None,
        }
    }
}

/// One event and its counter on every place.
#[derive(Debug)]
pub struct OpenedEvent {
    /// What the user asked for.
    pub spec: EventSpec,
    /// The name to print: the spec's, with `:u` when it fell back to user space, or
    /// `cpu-clock` when cycles fell back to it.
    pub name: String,
    /// The attr as opened on the first place that opened (after fallbacks): what a
    /// perf.data file must describe.
    pub attr: sys::perf_event_attr,
    /// One slot per place, in the order of [`Opened::places`].
    pub slots: Vec<Slot>,
}

impl OpenedEvent {
    /// The open counters.
    pub fn counters(&self) -> impl Iterator<Item = &Counter> {
        self.slots.iter().filter_map(Slot::counter)
    }
}

/// A fallback that changed what an event counts.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// The event counts user space only (perf_event_paranoid forbids the kernel).
    UserOnly {
        /// The event's new name (`context-switches:u`).
        event: String,
        /// `perf_event_paranoid`, when readable.
        paranoid: Option<i32>,
    },
    /// `cycles` is not available (no PMU): `cpu-clock` is used instead.
    CyclesToCpuClock,
    /// `:P`: the PMU took only this `precise_ip`.
    Precise {
        /// The event.
        event: String,
        /// The level it opened with.
        level: u8,
    },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::UserOnly { event, paranoid } => {
                write!(f, "counting {event} in user space only")?;
                if let Some(p) = paranoid {
                    write!(f, " (kernel.perf_event_paranoid is {p})")?;
                }
                Ok(())
            }
            Note::CyclesToCpuClock => f.write_str(
                "no hardware counters on this machine (cycles is not supported): \
                 sampling cpu-clock instead",
            ),
            Note::Precise { event, level } => {
                write!(f, "{event}: the PMU takes precise_ip up to {level}")
            }
        }
    }
}

/// An event list opened on places.
#[derive(Debug)]
pub struct Opened {
    /// The places, in slot order.
    pub places: Vec<Place>,
    /// The events, in the order of the spec list.
    pub events: Vec<OpenedEvent>,
    /// Fallbacks that changed what an event counts.
    pub notes: Vec<Note>,
}

impl Opened {
    /// Every open counter of every event.
    pub fn counters(&self) -> impl Iterator<Item = &Counter> {
        self.events.iter().flat_map(OpenedEvent::counters)
    }

    /// The open counters of group leaders (enable and disable go through them).
    pub fn leaders(&self) -> impl Iterator<Item = &Counter> {
        leaders(&self.events)
    }

    /// Enable every group.
    pub fn enable(&self) -> crate::Result<()> {
        for c in self.leaders() {
            c.enable()?;
        }
        Ok(())
    }

    /// Disable every group (errors ignored: a counter of an exited task may refuse).
    pub fn disable(&self) {
        for c in self.leaders() {
            let _ = c.disable();
        }
    }

    /// The first failure that is not "not supported", if any.
    pub fn first_failure(&self) -> Option<&perfkit::Error> {
        self.events
            .iter()
            .flat_map(|e| &e.slots)
            .find_map(|s| match s {
                Slot::Failed(e) => Some(e),
                _ => None,
            })
    }

    /// Whether any counter is open.
    pub fn any_open(&self) -> bool {
        self.counters().next().is_some()
    }

    /// Every slot must be open or skipped (record's rule): else the first error.
    pub fn require_all(mut self) -> crate::Result<Opened> {
        for ev in &mut self.events {
            for s in &mut ev.slots {
                if s.error().is_some()
                    && let Slot::NotSupported(e) | Slot::Failed(e) =
                        std::mem::replace(s, Slot::Skipped)
                {
                    return Err(crate::Error::Open(Box::new(e)));
                }
            }
        }
        Ok(self)
    }
}

/// The open counters of the group leaders among `events` (enable and disable go through
/// them; members follow).
pub fn leaders(events: &[OpenedEvent]) -> impl Iterator<Item = &Counter> {
    events
        .iter()
        .filter(|e| e.spec.leader)
        .flat_map(OpenedEvent::counters)
}

/// Open every spec on every place. Members of a `{...}` group open into their leader on
/// the same place (and are skipped where the leader did not open); events whose PMU
/// covers only some CPUs skip the others. Tracepoint filters are set.
///
/// Failures are kept per slot: `stat` prints `<not supported>` for them, `record` calls
/// [`Opened::require_all`].
///
/// ```
/// use perfkit_engine::{open, parse, OpenOptions, Place};
/// let mut specs = parse(&["task-clock".to_string()])?;
/// let opened = open(&specs, &[Place::thread(0)], &OpenOptions::default());
/// opened.enable()?;
/// let n: u64 = (0..100_000u64).map(|x| x ^ 3).sum();
/// opened.disable();
/// let count = opened.events[0].slots[0].counter().unwrap().read()?;
/// assert!(count.value > 0, "{n}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn open(specs: &[EventSpec], places: &[Place], opts: &OpenOptions<'_>) -> Opened {
    let mut events: Vec<OpenedEvent> = Vec::with_capacity(specs.len());
    let mut notes = Vec::new();
    for (ei, spec) in specs.iter().enumerate() {
        let leader_idx = if spec.leader {
            None
        } else {
            specs[..ei]
                .iter()
                .rposition(|s| s.group == spec.group && s.leader)
        };
        let mut ev = OpenedEvent {
            spec: spec.clone(),
            name: spec.name.clone(),
            attr: spec.attr,
            slots: Vec::with_capacity(places.len()),
        };
        let mut first_attr: Option<sys::perf_event_attr> = None;
        let (mut user_only, mut cpu_clock, mut precise) = (false, false, None);
        for (pi, place) in places.iter().enumerate() {
            if place.cpu >= 0
                && let Some(cpus) = &spec.cpus
                && !cpus.contains(&(place.cpu as u32))
            {
                ev.slots.push(Slot::Skipped);
                continue;
            }
            let leader = match leader_idx {
                Some(l) => match events[l].slots[pi].counter() {
                    Some(c) => Some(c.as_fd()),
                    None => {
                        ev.slots.push(Slot::Skipped);
                        continue;
                    }
                },
                None => None,
            };
            let task = place.is_task();
            let mut attr = Attr::from_raw(spec.attr)
                .inherit(task && opts.inherits(spec))
                .enable_on_exec(task && spec.leader && opts.enable_on_exec);
            // Members follow a leader that fell back to user space.
            if let Some(l) = leader_idx
                && events[l].attr.flags & f::EXCLUDE_KERNEL != 0
                && spec.attr.flags & f::EXCLUDE_KERNEL == 0
            {
                attr = attr.exclude_kernel(true).exclude_hv(true);
            }
            let target = match place.cgroup {
                Some(cg) => Target::cgroup(&opts.cgroups[cg], place.cpu.max(0) as u32),
                None if place.cpu < 0 => Target::pid(place.tid),
                None if place.tid < 0 => Target::cpu(place.cpu as u32),
                None => Target::pid_on_cpu(place.tid, place.cpu as u32),
            };
            let try_open = |a: &Attr| Counter::open_raw(a, &target, leader, 0);
            let mut res = try_open(&attr);
            // 1. Guest bits.
            if is_errno(&res, libc::EINVAL)
                && attr.raw().flags & (f::EXCLUDE_GUEST | f::EXCLUDE_HOST) != 0
            {
                let mut plain = attr;
                plain.raw_mut().flags &= !(f::EXCLUDE_GUEST | f::EXCLUDE_HOST);
                res = try_open(&plain);
                if res.is_ok() {
                    attr = plain;
                }
            }
            // 2. `:P`: the highest precise_ip the PMU takes.
            if spec.precise_max {
                while (is_errno(&res, libc::EINVAL) || is_errno(&res, libc::EOPNOTSUPP))
                    && attr.raw().precise_ip() > 0
                {
                    let p = attr.raw().precise_ip() - 1;
                    attr = attr.precise_ip(p);
                    res = try_open(&attr);
                    precise = Some(p);
                }
            }
            // 3. cycles without a PMU: cpu-clock.
            if opts.cycles_fallback
                && is_cycles(attr.raw())
                && res
                    .as_ref()
                    .is_err_and(|e| e.kind() == ErrorKind::NotSupported)
            {
                let mut clock = attr;
                clock.raw_mut().type_ = sys::PERF_TYPE_SOFTWARE;
                clock.raw_mut().config = sys::PERF_COUNT_SW_CPU_CLOCK;
                clock = clock.precise_ip(0);
                res = try_open(&clock);
                if res.is_ok() {
                    attr = clock;
                    cpu_clock = true;
                }
            }
            // 4. paranoid: user space only, for events that did not choose.
            if !opts.no_user_fallback
                && place.is_task()
                && !spec.explicit_privilege()
                && attr.raw().flags & f::EXCLUDE_KERNEL == 0
                && res
                    .as_ref()
                    .is_err_and(|e| e.kind() == ErrorKind::Permission)
            {
                let user = attr.exclude_kernel(true).exclude_hv(true);
                if let Ok(c) = try_open(&user) {
                    attr = user;
                    res = Ok(c);
                    user_only = true;
                }
            }
            if let (Ok(c), Some(filter)) = (&res, &spec.filter)
                && let Err(e) = c.set_filter(filter)
            {
                res = Err(e);
            }
            ev.slots.push(match res {
                Ok(mut c) => {
                    first_attr.get_or_insert(*attr.raw());
                    c.set_name(ev.name.clone());
                    Slot::Open(c)
                }
                Err(e) if e.is_not_supported() => {
                    Slot::NotSupported(e.with_event(spec.name.clone()))
                }
                Err(e) => Slot::Failed(e.with_event(spec.name.clone())),
            });
        }
        if let Some(a) = first_attr {
            ev.attr = a;
        }
        if cpu_clock {
            ev.name = "cpu-clock".into();
            notes.push(Note::CyclesToCpuClock);
        }
        if user_only {
            ev.name = user_only_name(&ev.name);
            notes.push(Note::UserOnly {
                event: ev.name.clone(),
                paranoid: perfkit::read_paranoid(),
            });
        }
        if let Some(level) = precise.filter(|_| first_attr.is_some()) {
            notes.push(Note::Precise {
                event: ev.name.clone(),
                level,
            });
        }
        events.push(ev);
    }
    Opened {
        places: places.to_vec(),
        events,
        notes,
    }
}

fn is_errno(res: &perfkit::Result<Counter>, errno: i32) -> bool {
    res.as_ref().is_err_and(|e| e.errno() == errno)
}

fn is_cycles(a: &sys::perf_event_attr) -> bool {
    a.type_ == sys::PERF_TYPE_HARDWARE && a.config == sys::PERF_COUNT_HW_CPU_CYCLES
}

/// `cycles` → `cycles:u`, `cpu/event=1/` → `cpu/event=1/u`.
fn user_only_name(name: &str) -> String {
    if name.ends_with('/') {
        format!("{name}u")
    } else {
        format!("{name}:u")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_only_names() {
        assert_eq!(user_only_name("cycles"), "cycles:u");
        assert_eq!(user_only_name("cpu/event=0x3c/"), "cpu/event=0x3c/u");
    }
}
