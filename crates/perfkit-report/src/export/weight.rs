//! How much each sample weighs in an export, so that off-CPU time (`record --off-cpu`,
//! perf's `offcpu-time` event) shows as time, not as a handful of samples.
//!
//! An `offcpu-time` sample sums every sleep of one task at one stack: its period is the
//! time slept in nanoseconds. When a profile has such an event, it is weighed by period,
//! and so are the clock events beside it (`cpu-clock`, `task-clock`: their period is also
//! nanoseconds), so on-CPU and off-CPU time share one unit. Every other event, and every
//! profile without off-CPU time, weighs one per sample, as before.

use crate::Profile;
use crate::model::{EventDesc, Sample};

/// perf's name of the off-CPU event.
pub const OFFCPU_EVENT: &str = "offcpu-time";

/// Whether `ev` carries off-CPU time.
pub fn is_off_cpu(ev: &EventDesc) -> bool {
    ev.name == OFFCPU_EVENT
}

fn is_clock(name: &str) -> bool {
    ["cpu-clock", "task-clock"].iter().any(|c| {
        name.strip_prefix(c)
            .is_some_and(|r| r.is_empty() || r.starts_with(':'))
    })
}

/// The weighing of one profile's events.
#[derive(Clone, Debug)]
pub struct Weights {
    /// Per event: weighed by period (nanoseconds) rather than by sample.
    by_period: Vec<bool>,
    /// The profile has more than one event with samples.
    several: bool,
}

impl Weights {
    /// The weighing of `p`'s events.
    pub fn of(p: &Profile) -> Weights {
        let off_cpu = p.events.iter().any(is_off_cpu);
        let by_period = p
            .events
            .iter()
            .map(|e| is_off_cpu(e) || (off_cpu && is_clock(&e.name)))
            .collect();
        let mut seen = vec![false; p.events.len()];
        for s in &p.samples {
            if let Some(x) = seen.get_mut(s.event as usize) {
                *x = true;
            }
        }
        Weights {
            by_period,
            several: seen.iter().filter(|&&x| x).count() > 1,
        }
    }

    /// Whether event `event` is weighed in nanoseconds.
    pub fn in_nanos(&self, event: u32) -> bool {
        self.by_period.get(event as usize).copied().unwrap_or(false)
    }

    /// The weight of one sample.
    pub fn weight(&self, s: &Sample) -> u64 {
        if self.in_nanos(s.event) {
            s.period
        } else {
            u64::from(s.count)
        }
    }

    /// Whether samples of several events are mixed: exports then keep them apart (a root
    /// frame or a profile per event).
    pub fn several(&self) -> bool {
        self.several
    }

    /// The unit of a single-valued export: `ns` when every event with samples is weighed
    /// in nanoseconds, else `samples`.
    pub fn unit(&self, p: &Profile) -> &'static str {
        let all_ns = p.samples.iter().all(|s| self.in_nanos(s.event));
        if all_ns && !p.samples.is_empty() {
            "ns"
        } else {
            "samples"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;

    #[test]
    fn off_cpu_and_clocks_weigh_by_period_only_with_off_cpu() {
        let mut p = sample_profile();
        let w = Weights::of(&p);
        assert!(!w.several());
        assert_eq!(w.weight(&p.samples[0]), 1);
        p.events[0].name = "cpu-clock:u".to_string();
        let mut off = p.events[0].clone();
        off.name = OFFCPU_EVENT.to_string();
        p.events.push(off);
        let mut s = p.samples[0];
        s.event = 1;
        s.period = 5_000_000;
        p.samples.push(s);
        let w = Weights::of(&p);
        assert!(w.several());
        assert_eq!(w.weight(p.samples.last().unwrap()), 5_000_000);
        assert_eq!(w.weight(&p.samples[0]), p.samples[0].period);
        assert_eq!(w.unit(&p), "ns");
    }
}
