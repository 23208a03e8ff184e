//! One counting run of a [`Plan`]: open, start the command, read at intervals, stop.

use super::plan::{Plan, Scope};
use super::rows::{Row, build_rows};
use super::sets::{SetSchedule, SetsReport, Switching};
use super::tool::Tool;
use super::trigger::Trigger;
use crate::open::{OpenOptions, OpenedEvent, leaders};
use crate::{Error, Place, Result, Workload};
use perfkit::{ChildUsage, Count, ExitStatus};
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How a run counts.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Count the command's children (`inherit`); `-i` turns it off.
    pub inherit: bool,
    /// `-D`: start counting this long after the command starts.
    pub delay: Option<Duration>,
    /// `--timeout`: stop after this long.
    pub timeout: Option<Duration>,
    /// `-I`: read every interval.
    pub interval: Option<Duration>,
    /// `--interval-count`: stop after this many intervals.
    pub interval_count: Option<u64>,
    /// `--no-scale`: leave multiplexed counts as read.
    pub no_scale: bool,
    /// `-D -1`: start with the events disabled, until a control command enables them.
    pub start_disabled: bool,
    /// perfmon2's event sets: every group is a set, one enabled at a time, switched by
    /// this rule ([`SetSchedule`]); `None`: every group at once (the kernel multiplexes).
    pub switching: Option<Switching>,
}

/// What a run tells its caller as it goes.
#[derive(Debug)]
#[non_exhaustive]
pub enum Progress<'a> {
    /// The attrs about to be opened (for `-v`), one per event.
    Attrs(&'a [OpenedEvent]),
    /// `-D`: the events are disabled until the delay passes.
    Disabled,
    /// `-D`: the delay passed.
    Enabled,
    /// A control command was carried out (the acknowledgement is written after this).
    Control(&'a ControlCmd),
    /// An interval ended: seconds since the start, and the counts of the interval.
    Interval {
        /// Seconds since counting started.
        secs: f64,
        /// The interval's rows.
        rows: Vec<Row>,
    },
}

/// What one run measured.
#[derive(Debug)]
pub struct RunResult {
    /// The places counted (the command's pid filled in).
    pub places: Vec<Place>,
    /// The events and their counters.
    pub events: Vec<OpenedEvent>,
    /// The final reading, `[event][place]`.
    pub counts: Vec<Vec<Option<Count>>>,
    /// Wall time counted.
    pub elapsed: Duration,
    /// How the command ended.
    pub status: Option<ExitStatus>,
    /// The command's CPU time.
    pub usage: Option<ChildUsage>,
    /// Stopped by [`StopHandle::interrupt`] (Ctrl-C without a command): do not repeat.
    pub interrupted: bool,
    /// With event sets: what the schedule did and each estimate's bound (`counts` are
    /// already rescaled to the whole run).
    pub sets: Option<SetsReport>,
}

#[derive(Debug)]
enum Msg {
    Exited,
    /// The designated counter overflowed: switch event sets.
    Switch,
    Stop,
    Control(ControlCmd),
}

pub use crate::control::ControlCmd;

/// Ends a run from another thread: Ctrl-C goes to the command when one runs (perf's
/// behaviour: the command ends, the counts print), else it stops counting.
#[derive(Clone, Debug)]
pub struct StopHandle {
    tx: Arc<Mutex<mpsc::Sender<Msg>>>,
    child: Arc<AtomicI32>,
}

impl StopHandle {
    /// Deliver `sig` to the running command, or stop counting if none runs.
    pub fn interrupt(&self, sig: i32) {
        let pid = self.child.load(Ordering::SeqCst);
        if pid > 0 {
            let _ = perfkit::kill(pid, sig);
        } else if let Ok(tx) = self.tx.lock() {
            let _ = tx.send(Msg::Stop);
        }
    }
}

/// Runs a [`Plan`], once or repeatedly.
#[derive(Debug)]
pub struct Runner {
    rx: mpsc::Receiver<Msg>,
    stop: StopHandle,
    ack: Option<std::fs::File>,
}

impl Default for Runner {
    fn default() -> Self {
        Runner::new()
    }
}

const TASK_POLL: Duration = Duration::from_millis(100);

impl Runner {
    /// A runner with its stop handle.
    pub fn new() -> Runner {
        let (tx, rx) = mpsc::channel();
        Runner {
            rx,
            stop: StopHandle {
                tx: Arc::new(Mutex::new(tx)),
                child: Arc::new(AtomicI32::new(0)),
            },
            ack: None,
        }
    }

    /// perf's `--control`: read commands (`enable`, `disable`, `ping`, `stop`, one per
    /// line) from `ctl` while counting, and write perf's `ack\n\0` to `ack` after each.
    pub fn control(&mut self, ctl: std::fs::File, ack: Option<std::fs::File>) {
        self.ack = ack;
        let tx = self.stop.tx.lock().map(|t| t.clone());
        let Ok(tx) = tx else { return };
        std::thread::spawn(move || {
            crate::control::read_commands(ctl, |cmd| tx.send(Msg::Control(cmd)).is_ok());
        });
    }

    /// The handle that interrupts runs.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Count once: open the plan's events, run the command (if any) to its end or until
    /// the timeout, interval count or an interrupt, and read everything.
    pub fn run(
        &mut self,
        plan: &Plan,
        opts: &RunOptions,
        progress: &mut dyn FnMut(Progress<'_>) -> io::Result<()>,
    ) -> Result<RunResult> {
        while self.rx.try_recv().is_ok() {}
        // The command is forked first (held before exec) so counters can attach to it.
        let child = if plan.command.is_empty() {
            None
        } else {
            Some(Workload::prepare(&plan.command)?)
        };
        let places = match (&plan.scope, &child) {
            (Scope::Command, Some(c)) => vec![Place::thread(c.pid())],
            _ => plan.places.clone(),
        };
        let command_scope = plan.scope == Scope::Command;
        if opts.switching.is_some() && (opts.delay.is_some() || opts.start_disabled) {
            return Err(Error::Usage(
                "event-set switching starts with the first set at once: drop -D".into(),
            ));
        }
        let on_exec = command_scope && opts.delay.is_none() && !opts.start_disabled;
        let events = open_plan(
            plan,
            &places,
            opts.inherit,
            on_exec,
            opts.switching.is_some(),
        );
        progress(Progress::Attrs(&events)).map_err(|e| Error::io("writing", e))?;
        let events = check_opened(events)?;
        let mut schedule = opts.switching.as_ref().map(|_| SetSchedule::new(&events));
        let trigger = match &opts.switching {
            Some(Switching::On { event, period }) => {
                let tx = self.stop.tx.lock().map(|t| t.clone()).ok();
                let topts = crate::OpenOptions {
                    cgroups: &plan.cgroups,
                    inherit: opts.inherit,
                    enable_on_exec: on_exec,
                    ..crate::OpenOptions::default()
                };
                Some(Trigger::start(
                    event,
                    *period,
                    &places,
                    &topts,
                    move || {
                        if let Some(tx) = &tx {
                            let _ = tx.send(Msg::Switch);
                        }
                    },
                )?)
            }
            _ => None,
        };
        let every = match &opts.switching {
            Some(Switching::Every(d)) if !d.is_zero() => Some(*d),
            Some(Switching::Every(_)) => {
                return Err(Error::Usage(
                    "--switch-every needs a period above 0 ms".into(),
                ));
            }
            _ => None,
        };

        let start = Instant::now();
        let mut next_switch = every.map(|d| start + d);
        if !command_scope && !opts.start_disabled {
            match &schedule {
                Some(s) => s.enable_active(&events),
                None => enable(&events),
            }
        }
        let workload = match child {
            Some(c) => {
                let tx = self.stop.tx.lock().map(|t| t.clone()).ok();
                let w = Workload::start(c, move |_| {
                    if let Some(tx) = tx {
                        let _ = tx.send(Msg::Exited);
                    }
                })?;
                self.stop.child.store(w.pid(), Ordering::SeqCst);
                Some(w)
            }
            None => None,
        };
        if opts.start_disabled {
            progress(Progress::Disabled).map_err(|e| Error::io("writing", e))?;
        } else if let Some(d) = opts.delay {
            if command_scope {
                progress(Progress::Disabled).map_err(|e| Error::io("writing", e))?;
            }
            std::thread::sleep(d);
            enable(&events);
            if command_scope {
                progress(Progress::Enabled).map_err(|e| Error::io("writing", e))?;
            }
        }

        let deadline = opts.timeout.map(|t| start + t);
        let mut exited = false;
        let mut interrupted = false;
        // Interval deltas start from zero: everything since counting began belongs to the
        // first interval (a snapshot here would already include the command's start-up).
        let mut last: Vec<Vec<Option<Count>>> =
            events.iter().map(|e| vec![None; e.slots.len()]).collect();
        let mut last_t = start;
        let mut intervals = 0u64;
        let mut stopped_early = false;
        loop {
            // What is left of the interval (a control command or a task poll may have woken
            // the loop early).
            let mut wait = opts.interval.map(|i| i.saturating_sub(last_t.elapsed()));
            if let Scope::Threads(_) = plan.scope {
                // Attached tasks are polled so counting stops when they are all gone.
                wait = Some(wait.map_or(TASK_POLL, |w| w.min(TASK_POLL)));
            }
            if let Some(d) = deadline {
                let left = d.saturating_duration_since(Instant::now());
                wait = Some(wait.map_or(left, |w| w.min(left)));
            }
            if let Some(t) = next_switch {
                let left = t.saturating_duration_since(Instant::now());
                wait = Some(wait.map_or(left, |w| w.min(left)));
            }
            let msg = match wait {
                Some(w) => match self.rx.recv_timeout(w) {
                    Ok(m) => Some(m),
                    Err(mpsc::RecvTimeoutError::Timeout) => None,
                    Err(mpsc::RecvTimeoutError::Disconnected) => Some(Msg::Stop),
                },
                None => Some(self.rx.recv().unwrap_or(Msg::Stop)),
            };
            let now = Instant::now();
            if let (Some(s), Some(t), Some(d)) = (&mut schedule, &mut next_switch, every)
                && now >= *t
            {
                s.switch(&events);
                // The next period counts from now: a late wake-up does not shorten it.
                *t = now + d;
            }
            if let (Some(s), Some(Msg::Switch)) = (&mut schedule, &msg) {
                s.switch(&events);
            }
            let timed_out = deadline.is_some_and(|d| now >= d);
            let interval_due = opts.interval.is_some_and(|i| {
                now.duration_since(last_t) >= i
                    || matches!(msg, Some(Msg::Exited | Msg::Stop))
                    || timed_out
            });
            if interval_due {
                let mut counts = read_all(&events);
                fill_tools(&events, &mut counts, now.duration_since(start), None);
                let mut d = delta(&counts, &last);
                if let Some(s) = &schedule {
                    s.rescale(&mut d);
                }
                let rows = build_rows(
                    plan,
                    &places,
                    &events,
                    &d,
                    now.duration_since(last_t),
                    opts.no_scale,
                );
                progress(Progress::Interval {
                    secs: now.duration_since(start).as_secs_f64(),
                    rows,
                })
                .map_err(|e| Error::io("writing", e))?;
                last = counts;
                last_t = now;
                intervals += 1;
            }
            match msg {
                Some(Msg::Exited) => {
                    exited = true;
                    break;
                }
                Some(Msg::Stop) => {
                    interrupted = true;
                    break;
                }
                Some(Msg::Control(cmd)) if self.carry_out(&cmd, &events, progress)? => {
                    stopped_early = true;
                    break;
                }
                Some(Msg::Control(_)) | Some(Msg::Switch) => {}
                None => {}
            }
            if timed_out || opts.interval_count.is_some_and(|n| intervals >= n) {
                stopped_early = true;
                break;
            }
            if let Scope::Threads(ts) = &plan.scope
                && workload.is_none()
                && ts.iter().all(|(t, _)| !task_alive(*t))
            {
                break;
            }
        }
        let elapsed = start.elapsed();
        drop(trigger);
        for c in leaders(&events) {
            let _ = c.disable();
        }
        let mut counts = read_all(&events);
        let sets = match (&mut schedule, &opts.switching) {
            (Some(s), Some(sw)) => {
                s.finish(&events, &counts);
                let report = s.report(&events, &counts, sw);
                s.rescale(&mut counts);
                Some(report)
            }
            _ => None,
        };
        self.stop.child.store(0, Ordering::SeqCst);
        let (mut status, mut usage) = (None, None);
        if let Some(w) = &workload {
            // A command still running when counting stopped (timeout, interval count) is
            // ended; a command that ended is reaped.
            let done = if exited {
                w.wait_timeout(Duration::from_secs(5))
            } else {
                w.terminate(Duration::from_secs(5))
            };
            if let Some((st, u)) = done {
                usage = Some(u);
                if exited || !stopped_early {
                    status = Some(st);
                }
            }
        }
        fill_tools(&events, &mut counts, elapsed, usage);
        // perfkit ended the command itself (timeout, interval count): that is success.
        if stopped_early && status.is_none() && workload.is_some() {
            status = Some(ExitStatus::Exited(0));
        }
        Ok(RunResult {
            places,
            events,
            counts,
            elapsed,
            status,
            usage,
            interrupted,
            sets,
        })
    }
}

impl Runner {
    /// Carry out a control command and acknowledge it; true for `stop`.
    fn carry_out(
        &mut self,
        cmd: &ControlCmd,
        events: &[OpenedEvent],
        progress: &mut dyn FnMut(Progress<'_>) -> io::Result<()>,
    ) -> Result<bool> {
        let named = |name: &Option<String>| -> Vec<&OpenedEvent> {
            events
                .iter()
                .filter(|e| name.as_ref().is_none_or(|n| &e.name == n))
                .collect()
        };
        match cmd {
            ControlCmd::Enable(n) => {
                for e in named(n) {
                    for c in e.counters() {
                        let _ = c.enable();
                    }
                }
            }
            ControlCmd::Disable(n) => {
                for e in named(n) {
                    for c in e.counters() {
                        let _ = c.disable();
                    }
                }
            }
            ControlCmd::Ping | ControlCmd::Stop => {}
        }
        progress(Progress::Control(cmd)).map_err(|e| Error::io("writing", e))?;
        if let Some(ack) = &mut self.ack {
            crate::control::acknowledge(ack)
                .map_err(|e| Error::io("writing the --control acknowledgement", e))?;
        }
        Ok(*cmd == ControlCmd::Stop)
    }
}

/// Fill in the tool events (`duration_time`, `user_time`, `system_time`) of a reading:
/// one value on the first place, in nanoseconds; the CPU times only once the command has
/// ended (`usage`), as perf.
fn fill_tools(
    events: &[OpenedEvent],
    counts: &mut [Vec<Option<Count>>],
    elapsed: Duration,
    usage: Option<ChildUsage>,
) {
    for (e, c) in events.iter().zip(counts) {
        let Some(tool) = Tool::of(&e.attr) else {
            continue;
        };
        let v = match tool {
            Tool::Duration => Some(elapsed.as_nanos() as u64),
            Tool::User => usage.map(|u| u.user_ns),
            Tool::System => usage.map(|u| u.sys_ns),
        };
        if let (Some(v), Some(slot)) = (v, c.first_mut()) {
            *slot = Some(Count {
                value: v,
                time_enabled: Some(v),
                time_running: Some(v),
                id: None,
                lost: None,
            });
        }
    }
}

fn enable(events: &[OpenedEvent]) {
    for c in leaders(events) {
        let _ = c.enable();
    }
}

/// Open the plan's events on `places`, group by group, each group on its cgroup's places.
/// With event sets only the first set (group) enables at the command's exec.
fn open_plan(
    plan: &Plan,
    places: &[Place],
    inherit: bool,
    enable_on_exec: bool,
    sets: bool,
) -> Vec<OpenedEvent> {
    let mut out = Vec::new();
    let mut first_set = true;
    let mut i = 0;
    while i < plan.specs.len() {
        let g = plan.specs[i].group;
        let mut j = i;
        while j < plan.specs.len() && plan.specs[j].group == g {
            j += 1;
        }
        if Tool::of(&plan.specs[i].attr).is_some() {
            let spec = plan.specs[i].clone();
            out.push(OpenedEvent {
                name: spec.name.clone(),
                attr: spec.attr,
                slots: places.iter().map(|_| crate::Slot::Skipped).collect(),
                spec,
            });
            i = j;
            continue;
        }
        let cg = plan.spec_cgroup[i];
        let here: Vec<Place> = places.iter().map(|p| Place { cgroup: cg, ..*p }).collect();
        let specs: Vec<_> = plan.specs[i..j]
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.attr = perfkit::Attr::from_raw(s.attr)
                    .read_format(
                        perfkit::sys::PERF_FORMAT_TOTAL_TIME_ENABLED
                            | perfkit::sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
                    )
                    .disabled(s.leader)
                    .raw()
                    .to_owned();
                s
            })
            .collect();
        let opts = OpenOptions {
            cgroups: &plan.cgroups,
            inherit,
            enable_on_exec: enable_on_exec && (!sets || first_set),
            ..OpenOptions::default()
        };
        first_set = false;
        out.extend(crate::open(&specs, &here, &opts).events);
        i = j;
    }
    out
}

/// If nothing at all could be opened because of errors, stop with the reason. Only
/// unsupported events are not an error: as perf, each shows `<not supported>`.
fn check_opened(mut events: Vec<OpenedEvent>) -> Result<Vec<OpenedEvent>> {
    if events.iter().any(|e| e.counters().next().is_some()) {
        return Ok(events);
    }
    for s in events.iter_mut().flat_map(|e| &mut e.slots) {
        if let crate::Slot::Failed(_) = s
            && let crate::Slot::Failed(e) = std::mem::replace(s, crate::Slot::Skipped)
        {
            return Err(Error::Open(Box::new(e)));
        }
    }
    Ok(events)
}

/// Whether a task exists and is not a zombie.
fn task_alive(tid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{tid}/stat")) {
        Ok(s) => {
            let state = s
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next());
            !matches!(state, Some('Z' | 'X') | None)
        }
        Err(_) => false,
    }
}

/// A reading of every slot (None where not open or the read failed).
pub fn read_all(events: &[OpenedEvent]) -> Vec<Vec<Option<Count>>> {
    events
        .iter()
        .map(|e| {
            e.slots
                .iter()
                .map(|s| s.counter().and_then(|c| c.read().ok()))
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
