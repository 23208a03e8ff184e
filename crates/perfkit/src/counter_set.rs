//! [`CounterSet`]: one event opened on every place of a [`Targets`] and read as one sum.

use crate::attr::Attr;
use crate::counter::{Count, Counter};
use crate::error::{Error, ErrorKind, Op, Result};
use crate::event::attr_name;
use crate::targets::Targets;
use std::io;

/// One attr opened on each place of a [`Targets`] (one `perf_event_open` per thread or
/// CPU), enabled, disabled and read together; [`read`](Self::read) sums the places.
///
/// Counting a whole process: the kernel attaches a per-task event to one thread only, so
/// open the set on [`Targets::this_process`] (or [`Targets::process`]). Threads that start
/// later are covered when `attr` has `inherit`: the kernel copies the event into every
/// thread or process a counted thread creates and adds the children's counts to the
/// parent's event when they exit (and to its read while they run, for counting events).
///
/// ```
/// use perfkit::{Attr, CounterSet, Software, Targets};
/// let set = CounterSet::open(&Attr::new(Software::TaskClock), &Targets::this_process()?)?;
/// set.enable()?;
/// let v: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
/// set.disable()?;
/// let count = set.read()?;
/// assert!(count.value > 0, "{v}");
/// println!("{} ns of CPU in {} threads", count.value, set.counters().len());
/// # Ok::<(), perfkit::Error>(())
/// ```
#[derive(Debug)]
pub struct CounterSet {
    counters: Vec<Counter>,
}

impl CounterSet {
    /// Open `attr` on every place of `targets` (close-on-exec, each its own group).
    ///
    /// For targets listed from `/proc` ([`Targets::this_process`], [`Targets::process`]),
    /// a thread that exited between the listing and the open (ESRCH) is skipped; any other
    /// failure, or every thread gone, is an error naming the place. An empty `targets` is
    /// an error.
    pub fn open(attr: &Attr, targets: &Targets) -> Result<CounterSet> {
        if targets.is_empty() {
            return Err(Error::new(
                Op::Open,
                io::Error::from_raw_os_error(libc::EINVAL),
                attr_name(attr.raw()),
                -1,
                -1,
            )
            .with_kind(ErrorKind::InvalidOperation)
            .with_detail("no threads or CPUs to open the event on (the target list is empty)"));
        }
        let mut counters = Vec::with_capacity(targets.len());
        let mut first_gone = None;
        for target in targets {
            match Counter::open(attr, &target) {
                Ok(c) => counters.push(c),
                Err(e) if targets.is_listed_from_proc() && e.kind() == ErrorKind::NoSuchTask => {
                    first_gone.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        match first_gone {
            Some(e) if counters.is_empty() => Err(e),
            _ => Ok(CounterSet { counters }),
        }
    }

    /// `PERF_EVENT_IOC_ENABLE` on every counter.
    pub fn enable(&self) -> Result<()> {
        self.counters.iter().try_for_each(Counter::enable)
    }

    /// `PERF_EVENT_IOC_DISABLE` on every counter.
    pub fn disable(&self) -> Result<()> {
        self.counters.iter().try_for_each(Counter::disable)
    }

    /// `PERF_EVENT_IOC_RESET` on every counter (zeroes counts, not times).
    pub fn reset(&self) -> Result<()> {
        self.counters.iter().try_for_each(Counter::reset)
    }

    /// Read every counter and sum values, enabled and running times and lost counts
    /// (the way `perf stat` aggregates the threads or CPUs of one event, so
    /// [`Count::scaled`] scales the sum by the summed times). `id` is kept only when the
    /// set has one counter.
    pub fn read(&self) -> Result<Count> {
        let mut sum = Count::default();
        for c in &self.counters {
            sum = add(sum, c.read()?);
        }
        if self.counters.len() != 1 {
            sum.id = None;
        }
        Ok(sum)
    }

    /// Read every counter on its own, in the order of [`counters`](Self::counters).
    pub fn read_each(&self) -> Result<Vec<Count>> {
        self.counters.iter().map(Counter::read).collect()
    }

    /// The counters, one per opened place.
    pub fn counters(&self) -> &[Counter] {
        &self.counters
    }

    /// Take the counters out.
    pub fn into_counters(self) -> Vec<Counter> {
        self.counters
    }
}

fn add(a: Count, b: Count) -> Count {
    let sum = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (None, None) => None,
        (x, y) => Some(x.unwrap_or(0).wrapping_add(y.unwrap_or(0))),
    };
    Count {
        value: a.value.wrapping_add(b.value),
        time_enabled: sum(a.time_enabled, b.time_enabled),
        time_running: sum(a.time_running, b.time_running),
        id: b.id,
        lost: sum(a.lost, b.lost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_values_and_times() {
        let a = Count {
            value: 5,
            time_enabled: Some(10),
            time_running: Some(5),
            id: Some(1),
            lost: None,
        };
        let b = Count {
            value: 7,
            time_enabled: Some(10),
            time_running: Some(10),
            id: Some(2),
            lost: None,
        };
        let s = add(add(Count::default(), a), b);
        assert_eq!(s.value, 12);
        assert_eq!(s.time_enabled, Some(20));
        assert_eq!(s.time_running, Some(15));
        assert_eq!(s.lost, None);
    }
}
