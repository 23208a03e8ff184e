//! perfmon2's event sets, scheduled by perfkit instead of the kernel: every group of the
//! plan is a set, exactly one set is enabled at a time (`PERF_EVENT_IOC_ENABLE` /
//! `DISABLE` on its leaders), and the active set changes every so many milliseconds
//! ([`Switching::Every`]) or after N overflows of a designated counter
//! ([`Switching::On`], perfmon2's overflow-based switching).
//!
//! Because a set is disabled while the others run, its counters' own `time_enabled` is
//! exactly the time it was active. The total time is the sum over the sets (the kernel's
//! numbers, nothing measured by perfkit's clock), so [`SetSchedule::rescale`] gives every
//! counter that total as its enabled time and the usual scaling (`value * enabled /
//! running`) estimates the whole run.
//!
//! Every activation is a slice with its own count and running time. The error bound a
//! run can state ([`EventBound`]) is what the unseen time could add at the lowest and at
//! the highest rate seen in any slice: the estimate assumes the average rate, and the
//! truth lies within `[seen + r_min * unseen, seen + r_max * unseen]` as long as the rate
//! in the unseen time stayed within the range that was seen. With one slice there is no
//! range and no bound is stated.
//!
//! ```
//! use perfkit_engine::stat::{Plan, RunOptions, Runner, StatConfig, Switching};
//! use std::time::Duration;
//! let plan = Plan::new(&StatConfig {
//!     // Two groups: two sets, counted in turn.
//!     events: vec![("{task-clock,page-faults},{cpu-clock}".into(), vec![])],
//!     command: vec!["sh".into(), "-c".into(), "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done".into()],
//!     ..StatConfig::default()
//! })?;
//! let opts = RunOptions {
//!     inherit: true,
//!     switching: Some(Switching::Every(Duration::from_millis(5))),
//!     ..RunOptions::default()
//! };
//! let run = Runner::new().run(&plan, &opts, &mut |_| Ok(()))?;
//! let sets = run.sets.as_ref().unwrap();
//! assert_eq!(sets.sets.len(), 2);
//! // One set at a time: the sets' active times add up to the time counted.
//! let sum: u64 = sets.sets.iter().map(|s| s.enabled_ns).sum();
//! assert_eq!(sum, sets.total_ns);
//! println!("{}", sets.text());
//! # Ok::<(), perfkit_engine::Error>(())
//! ```

use crate::open::OpenedEvent;
use perfkit::Count;
use std::ops::Range;
use std::time::Duration;

/// When the active set changes.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Switching {
    /// Every this long (perfkit's clock).
    Every(Duration),
    /// After `overflows` periods of `event` (a counter opened beside the sets on the same
    /// places, with `sample_period = period`): perfmon2's overflow-based switching.
    On {
        /// The designated event, as `-e` spells it.
        event: String,
        /// Its overflow period.
        period: u64,
    },
}

impl Switching {
    /// Parse `--switch-on EVENT:N` (the last `:` separates N, so `instructions:u:1000000`
    /// is `instructions:u` every 1,000,000).
    pub fn parse_on(s: &str) -> Result<Switching, String> {
        let bad = || {
            format!(
                "--switch-on {s}: give EVENT:N, N > 0 occurrences of EVENT per switch \
                 (for example instructions:u:1000000)"
            )
        };
        let (event, n) = s.rsplit_once(':').ok_or_else(bad)?;
        let period: u64 = n.replace('_', "").parse().map_err(|_| bad())?;
        if period == 0 || event.is_empty() || event.contains(',') {
            return Err(bad());
        }
        Ok(Switching::On {
            event: event.to_string(),
            period,
        })
    }

    /// How the report names it.
    pub fn describe(&self) -> String {
        match self {
            Switching::Every(d) => format!("every {} ms", d.as_millis()),
            Switching::On { event, period } => format!("every {period} {event}"),
        }
    }
}

/// Sum of one event's counts over its places: (value, time_running).
fn totals(c: &[Option<Count>]) -> (u64, u64) {
    c.iter().flatten().fold((0, 0), |(v, t), c| {
        (v + c.value, t + c.time_running.unwrap_or(0))
    })
}

/// One set enabled at a time, the slices each event saw, and the rescaling that turns
/// its counts into estimates of the whole run.
#[derive(Debug)]
pub struct SetSchedule {
    /// Each set's events (a range of the run's event list).
    sets: Vec<Range<usize>>,
    active: usize,
    /// The last reading of every event (what the next slice starts from).
    prev: Vec<(u64, u64)>,
    /// Per event: (count, running ns) of each activation.
    slices: Vec<Vec<(u64, u64)>>,
    activations: Vec<u64>,
}

/// The sets of an event list: one per group, in order; tool events belong to none.
pub fn set_ranges(events: &[OpenedEvent]) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    for (i, e) in events.iter().enumerate() {
        if super::tool::Tool::of(&e.attr).is_some() {
            continue;
        }
        match out.last_mut() {
            Some(r) if r.end == i && events[r.start].spec.group == e.spec.group => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

impl SetSchedule {
    /// The schedule of `events`' groups; set 0 is active first.
    pub fn new(events: &[OpenedEvent]) -> SetSchedule {
        let sets = set_ranges(events);
        let mut activations = vec![0; sets.len()];
        if let Some(a) = activations.first_mut() {
            *a = 1;
        }
        SetSchedule {
            sets,
            active: 0,
            prev: vec![(0, 0); events.len()],
            slices: vec![Vec::new(); events.len()],
            activations,
        }
    }

    /// The sets, as ranges of the event list.
    pub fn sets(&self) -> &[Range<usize>] {
        &self.sets
    }

    /// The set now counted.
    pub fn active(&self) -> usize {
        self.active
    }

    fn leaders<'a>(
        &self,
        events: &'a [OpenedEvent],
        set: usize,
    ) -> impl Iterator<Item = &'a perfkit::Counter> {
        crate::open::leaders(&events[self.sets[set].clone()])
    }

    /// Enable the active set (the others stay disabled).
    pub fn enable_active(&self, events: &[OpenedEvent]) {
        if self.sets.is_empty() {
            return;
        }
        for c in self.leaders(events, self.active) {
            let _ = c.enable();
        }
    }

    /// Close the active set's slice from a reading of its events.
    fn close_slice(&mut self, events: &[OpenedEvent], counts: Option<&[Vec<Option<Count>>]>) {
        for i in self.sets[self.active].clone() {
            let now = match counts {
                Some(c) => totals(&c[i]),
                None => totals(
                    &events[i]
                        .slots
                        .iter()
                        .map(|s| s.counter().and_then(|c| c.read().ok()))
                        .collect::<Vec<_>>(),
                ),
            };
            let (v0, t0) = self.prev[i];
            self.slices[i].push((now.0.saturating_sub(v0), now.1.saturating_sub(t0)));
            self.prev[i] = now;
        }
    }

    /// Disable the active set, read its slice, enable the next one (after the last, the
    /// first).
    pub fn switch(&mut self, events: &[OpenedEvent]) {
        if self.sets.len() < 2 {
            return;
        }
        for c in self.leaders(events, self.active) {
            let _ = c.disable();
        }
        self.close_slice(events, None);
        self.active = (self.active + 1) % self.sets.len();
        self.activations[self.active] += 1;
        self.enable_active(events);
    }

    /// The run ended: close the active set's last slice from the final reading.
    pub fn finish(&mut self, events: &[OpenedEvent], counts: &[Vec<Option<Count>>]) {
        if !self.sets.is_empty() {
            self.close_slice(events, Some(counts));
        }
    }

    /// Give every set's counters, place by place, the total time all sets were active
    /// there as their enabled time, so that `value * enabled / running` estimates the
    /// whole run. Works on a final reading and on an interval's deltas alike.
    pub fn rescale(&self, counts: &mut [Vec<Option<Count>>]) {
        let places = counts.first().map_or(0, Vec::len);
        for p in 0..places {
            let total: u64 = self
                .sets
                .iter()
                .map(|r| {
                    counts[r.clone()]
                        .iter()
                        .filter_map(|c| c.get(p).copied().flatten())
                        .filter_map(|c| c.time_enabled)
                        .max()
                        .unwrap_or(0)
                })
                .sum();
            for r in &self.sets {
                for c in counts[r.clone()].iter_mut() {
                    if let Some(Some(c)) = c.get_mut(p) {
                        c.time_enabled = Some(total);
                    }
                }
            }
        }
    }

    /// What the schedule did and the bound on each event's estimate, from the final
    /// reading (before [`rescale`](Self::rescale)).
    pub fn report(
        &self,
        events: &[OpenedEvent],
        counts: &[Vec<Option<Count>>],
        switching: &Switching,
    ) -> SetsReport {
        let enabled: Vec<u64> = self
            .sets
            .iter()
            .map(|r| {
                counts[r.start]
                    .iter()
                    .flatten()
                    .filter_map(|c| c.time_enabled)
                    .sum()
            })
            .collect();
        let total: u64 = enabled.iter().sum();
        let sets = self
            .sets
            .iter()
            .zip(&enabled)
            .zip(&self.activations)
            .map(|((r, &en), &n)| SetInfo {
                events: events[r.clone()].iter().map(|e| e.name.clone()).collect(),
                enabled_ns: en,
                activations: n,
            })
            .collect();
        let mut bounds = Vec::new();
        for r in &self.sets {
            for i in r.clone() {
                // The unseen time: the whole run less the time this event was on the PMU.
                let slices = &self.slices[i];
                bounds.push(bound(&events[i].name, slices, total));
            }
        }
        SetsReport {
            switching: switching.describe(),
            switches: self.activations.iter().sum::<u64>().saturating_sub(1),
            total_ns: total,
            sets,
            bounds,
        }
    }
}

/// The estimate of an event from its slices, and the bound the slices give.
fn bound(name: &str, slices: &[(u64, u64)], total_ns: u64) -> EventBound {
    let seen: u64 = slices.iter().map(|s| s.0).sum();
    let running: u64 = slices.iter().map(|s| s.1).sum();
    let estimate = if running == 0 {
        0.0
    } else {
        seen as f64 * total_ns as f64 / running as f64
    };
    let rates: Vec<f64> = slices
        .iter()
        .filter(|s| s.1 > 0)
        .map(|s| s.0 as f64 / s.1 as f64)
        .collect();
    let bound = (rates.len() >= 2).then(|| {
        let unseen = total_ns.saturating_sub(running) as f64;
        let lo = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rates.iter().copied().fold(0.0, f64::max);
        let (low, high) = (seen as f64 + lo * unseen, seen as f64 + hi * unseen);
        (high - estimate).max(estimate - low).max(0.0)
    });
    EventBound {
        event: name.to_string(),
        seen,
        running_ns: running,
        slices: rates.len(),
        estimate,
        bound,
    }
}

/// One set of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct SetInfo {
    /// Its events' names.
    pub events: Vec<String>,
    /// How long it was active (the kernel's `time_enabled`, summed over places).
    pub enabled_ns: u64,
    /// How many times it was made active.
    pub activations: u64,
}

/// The estimate of one event and its stated bound.
#[derive(Clone, Debug, PartialEq)]
pub struct EventBound {
    /// The event's name.
    pub event: String,
    /// What it counted while its set was active.
    pub seen: u64,
    /// How long it was on the PMU.
    pub running_ns: u64,
    /// How many activations it ran in.
    pub slices: usize,
    /// `seen * total / running`.
    pub estimate: f64,
    /// The largest distance from the estimate to the truth if the rate in the unseen
    /// time stayed within the rates of the slices; `None` with fewer than two slices.
    pub bound: Option<f64>,
}

impl EventBound {
    /// The bound relative to the estimate (0.01 = 1%).
    pub fn relative(&self) -> Option<f64> {
        self.bound.map(|b| {
            if self.estimate > 0.0 {
                b / self.estimate
            } else {
                0.0
            }
        })
    }
}

/// What a run with event sets did.
#[derive(Clone, Debug, PartialEq)]
pub struct SetsReport {
    /// The switching rule, in words.
    pub switching: String,
    /// How many switches happened.
    pub switches: u64,
    /// The time counted, summed over the sets (ns).
    pub total_ns: u64,
    /// The sets.
    pub sets: Vec<SetInfo>,
    /// Every event's estimate and bound.
    pub bounds: Vec<EventBound>,
}

impl SetsReport {
    /// The text `perfkit stat` prints after the counts.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut s = format!(
            " Event sets: {} sets, switched {} ({} switches), one counted at a time:\n",
            self.sets.len(),
            self.switching,
            self.switches
        );
        for (i, set) in self.sets.iter().enumerate() {
            let share = if self.total_ns > 0 {
                100.0 * set.enabled_ns as f64 / self.total_ns as f64
            } else {
                0.0
            };
            let _ = writeln!(
                s,
                "   set {}: {{{}}} active {:.2}% of {:.3} ms, {} activations",
                i + 1,
                set.events.join(","),
                share,
                self.total_ns as f64 / 1e6,
                set.activations
            );
        }
        s.push_str(
            " Error bound of each estimate (the unseen time at the lowest and highest rate \
             of any activation):\n",
        );
        for b in &self.bounds {
            let _ = match b.relative() {
                Some(r) => writeln!(
                    s,
                    "   {:>20.0}  {:<25} +- {:.3}% ({} activations)",
                    b.estimate,
                    b.event,
                    r * 100.0,
                    b.slices
                ),
                None => writeln!(
                    s,
                    "   {:>20.0}  {:<25} no bound: counted in {} activation(s)",
                    b.estimate, b.event, b.slices
                ),
            };
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switch_on_parses_event_and_period() {
        assert_eq!(
            Switching::parse_on("instructions:u:1000000"),
            Ok(Switching::On {
                event: "instructions:u".into(),
                period: 1_000_000
            })
        );
        for bad in ["instructions", "instructions:0", ":5", "a,b:5", "cycles:x"] {
            let e = Switching::parse_on(bad).unwrap_err();
            assert!(e.contains("EVENT:N"), "{bad}: {e}");
        }
    }

    #[test]
    fn bound_spans_the_rates_seen() {
        // Two slices of 100 ns at rates 1 and 3 over a 400 ns run: seen 400 in 200 ns,
        // estimate 800; the unseen 200 ns add between 200 and 600.
        let b = bound("x", &[(100, 100), (300, 100)], 400);
        assert_eq!(b.estimate, 800.0);
        assert_eq!(b.bound, Some(200.0));
        assert_eq!(b.relative(), Some(0.25));
        // A steady rate: no error possible under the assumption.
        let b = bound("x", &[(100, 100), (100, 100)], 400);
        assert_eq!((b.estimate, b.bound), (400.0, Some(0.0)));
        // One slice: nothing to bound with.
        assert_eq!(bound("x", &[(100, 100)], 400).bound, None);
    }
}
