//! A [`criterion`] [`Measurement`] that counts a perf event per iteration: instructions,
//! cycles, cache misses, or any event string perf's `-e` takes (`r01c2`, `cpu/.../`,
//! `page-faults`, `task-clock`).
//!
//! ```no_run
//! use criterion::{Criterion, criterion_group, criterion_main};
//! use perfkit_criterion::PerfMeasurement;
//!
//! fn bench(c: &mut Criterion<PerfMeasurement>) {
//!     c.bench_function("sum", |b| b.iter(|| (0..1000u64).sum::<u64>()));
//! }
//! criterion_group! {
//!     name = benches;
//!     // Instructions where the PMU allows, else task-clock (CPU ns) with a note.
//!     config = Criterion::default().with_measurement(PerfMeasurement::instructions_or_task_clock());
//!     targets = bench
//! }
//! criterion_main!(benches);
//! ```
//!
//! The counter counts the benchmarking thread only (criterion runs the routine on it),
//! user and kernel as the event's modifiers say (`instructions:u` for user space only).
//! Reads come from the user page (rdpmc / `mrs`) while the event sits on a hardware
//! counter, else from `read(2)`; a multiplexed event is scaled by its enabled/running time.
//!
//! Without a hardware PMU (VMs, this project's CI machine) `instructions` and `cycles` do
//! not open: [`PerfMeasurement::new`] says so, and
//! [`PerfMeasurement::instructions_or_task_clock`] falls back to `task-clock`, the CPU time
//! of the thread in nanoseconds, printing why once on standard error.
//!
//! # Dependencies
//!
//! * `criterion`: the trait implemented here (no default features: no plots, no rayon).

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};
use perfkit::{Attr, SelfMonitor, SelfRead, Target};
use std::fmt;

/// Counts one perf event per iteration for criterion.
#[derive(Debug)]
pub struct PerfMeasurement {
    monitor: SelfMonitor,
    name: String,
    fmt: Units,
    note: Option<String>,
}

/// Why an event cannot be measured.
#[derive(Debug)]
pub enum Error {
    /// The event string did not parse.
    Parse(Box<perfkit_events::ParseError>),
    /// The string named no event or more than one.
    NotOneEvent(String),
    /// The event did not open for this thread.
    Open(Box<perfkit::Error>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(_) => write!(f, "bad event"),
            Error::NotOneEvent(s) => {
                write!(f, "{s:?}: give exactly one event to measure per iteration")
            }
            Error::Open(_) => write!(f, "the measurement counter"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Parse(e) => Some(e.as_ref()),
            Error::Open(e) => Some(e.as_ref()),
            Error::NotOneEvent(_) => None,
        }
    }
}

impl PerfMeasurement {
    /// Measure `event` (perf's `-e` syntax, one event) on the calling thread.
    pub fn new(event: &str) -> Result<PerfMeasurement, Error> {
        let list = perfkit_events::parse_system(event).map_err(|e| Error::Parse(Box::new(e)))?;
        let mut evs: Vec<_> = list.groups.into_iter().flat_map(|g| g.members).collect();
        if evs.len() != 1 {
            return Err(Error::NotOneEvent(event.to_string()));
        }
        let ev = evs.remove(0);
        let attr = Attr::from_raw(ev.attr).disabled(true).inherit(false);
        let mut attr = attr;
        attr.raw_mut().read_format = perfkit::sys::PERF_FORMAT_TOTAL_TIME_ENABLED
            | perfkit::sys::PERF_FORMAT_TOTAL_TIME_RUNNING;
        let monitor = SelfMonitor::open(&attr, &Target::this_thread())
            .and_then(|m| m.counter().enable().map(|()| m))
            .map_err(|e| Error::Open(Box::new(e)))?;
        let time = matches!(ev.name.as_str(), "task-clock" | "cpu-clock");
        Ok(PerfMeasurement {
            monitor,
            fmt: Units::new(&ev.name, time),
            name: ev.name,
            note: None,
        })
    }

    /// Retired instructions (user and kernel).
    pub fn instructions() -> Result<PerfMeasurement, Error> {
        Self::new("instructions")
    }

    /// CPU cycles.
    pub fn cycles() -> Result<PerfMeasurement, Error> {
        Self::new("cycles")
    }

    /// `event`, or `task-clock` (CPU nanoseconds of the thread) where `event` does not open
    /// (no hardware PMU); the reason is in [`note`](Self::note) and printed once.
    pub fn or_task_clock(event: &str) -> PerfMeasurement {
        match Self::new(event) {
            Ok(m) => m,
            Err(e) => {
                let note = format!(
                    "perfkit-criterion: {event} cannot be measured here ({}): measuring \
                     task-clock (CPU time of the thread, ns) instead",
                    chain(&e)
                );
                eprintln!("{note}");
                let mut m = Self::new("task-clock").expect("task-clock opens on every Linux");
                m.note = Some(note);
                m
            }
        }
    }

    /// Instructions, else task-clock ([`or_task_clock`](Self::or_task_clock)).
    pub fn instructions_or_task_clock() -> PerfMeasurement {
        Self::or_task_clock("instructions")
    }

    /// The event measured (perf's name).
    pub fn event(&self) -> &str {
        &self.name
    }

    /// Why another event than the one asked for is measured, if so.
    pub fn note(&self) -> Option<&str> {
        self.note.as_deref()
    }

    fn read(&self) -> SelfRead {
        // A counter that opened and enabled does not fail to read; if the kernel says
        // otherwise there is no way to report it through criterion's trait.
        self.monitor
            .read()
            .unwrap_or_else(|e| panic!("perfkit-criterion: reading {}: {}", self.name, chain(&e)))
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

impl Measurement for PerfMeasurement {
    type Intermediate = SelfRead;
    type Value = u64;

    fn start(&self) -> SelfRead {
        self.read()
    }

    fn end(&self, i: SelfRead) -> u64 {
        let now = self.read();
        let d = now.value.wrapping_sub(i.value);
        match (
            now.time_enabled,
            now.time_running,
            i.time_enabled,
            i.time_running,
        ) {
            (Some(e1), Some(r1), Some(e0), Some(r0)) if r1 - r0 < e1 - e0 && r1 > r0 => {
                (d as f64 * (e1 - e0) as f64 / (r1 - r0) as f64) as u64
            }
            _ => d,
        }
    }

    fn add(&self, v1: &u64, v2: &u64) -> u64 {
        v1 + v2
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        &self.fmt
    }
}

/// Unit names: SI prefixes of the event's name, or of seconds for time events.
#[derive(Debug)]
struct Units {
    time: bool,
    /// The event name with "", "K", "M", "G" before it; leaked once per measurement
    /// because criterion wants `&'static str` units.
    prefixed: [&'static str; 4],
    per_byte: &'static str,
    per_element: &'static str,
    per_bit: &'static str,
}

impl Units {
    fn new(name: &str, time: bool) -> Units {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        Units {
            time,
            prefixed: ["", "K", "M", "G"].map(|p| leak(format!("{p}{name}"))),
            per_byte: leak(format!("{name}/byte")),
            per_element: leak(format!("{name}/element")),
            per_bit: leak(format!("{name}/bit")),
        }
    }
}

impl ValueFormatter for Units {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = if self.time {
            match typical {
                t if t < 1e3 => (1.0, "ns"),
                t if t < 1e6 => (1e3, "µs"),
                t if t < 1e9 => (1e6, "ms"),
                _ => (1e9, "s"),
            }
        } else {
            let k = match typical {
                t if t < 1e3 => 0,
                t if t < 1e6 => 1,
                t if t < 1e9 => 2,
                _ => 3,
            };
            (1e3f64.powi(k), self.prefixed[k as usize])
        };
        values.iter_mut().for_each(|v| *v /= div);
        unit
    }

    fn scale_throughputs(&self, _typical: f64, t: &Throughput, values: &mut [f64]) -> &'static str {
        let (n, unit) = match *t {
            Throughput::Bytes(n) | Throughput::BytesDecimal(n) => (n, self.per_byte),
            Throughput::Elements(n) => (n, self.per_element),
            Throughput::Bits(n) => (n, self.per_bit),
        };
        values.iter_mut().for_each(|v| *v /= n.max(1) as f64);
        unit
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        if self.time { "ns" } else { self.prefixed[0] }
    }
}
