//! The engine behind perfkit's commands, as a library: what `perfkit stat`, `perfkit
//! record` (and later `top`, region markers and the exporter) share.
//!
//! * [`parse`] / [`parse_with_filters`] turn perf's event syntax into [`EventSpec`]s
//!   (flattened groups with everything the event string asked for).
//! * [`open()`] opens a spec list on [`Place`]s (threads, CPUs, cgroups) with every
//!   fallback perf applies, in one place; [`Opened`] holds the counters and says which
//!   fallbacks changed what is counted ([`Note`]).
//! * [`Recorder`] drains the rings of an opened list into a perf.data stream (file or
//!   pipe) and counts what was written and lost; [`sampling`] builds record's attrs;
//!   [`sideband`] writes the records a file starts with.
//! * [`stat`] is the counting side of `perf stat`: plan, runs, intervals, repeats,
//!   aggregation, scaling and shadow metrics, returned as rows.
//! * [`Workload`] runs the measured command: held before `exec` until the counters are
//!   open, default signal state, waited for on a thread.
//!
//! This crate sits above `perfkit` (counters, rings), `perfkit-events` (event names) and
//! `perfkit-data` (the perf.data writer); reading a file back needs none of it (see
//! `perfkit-report`).
//!
//! ```
//! use perfkit_engine::{open, parse, OpenOptions, Place};
//! let specs = parse(&["task-clock,page-faults".to_string()])?;
//! let opened = open(&specs, &[Place::thread(0)], &OpenOptions::default());
//! opened.enable()?;
//! let v: Vec<u64> = (0..100_000).collect();
//! opened.disable();
//! for ev in &opened.events {
//!     let c = ev.slots[0].counter().unwrap().read()?;
//!     println!("{:>12} {}", c.value, ev.name);
//! }
//! # drop(v);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![forbid(unsafe_code)]

pub mod bpf_watch;
pub mod control;
pub mod daemon;
mod drain_budget;
mod drain_threads;
mod error;
pub mod offcpu;
mod open;
mod recorder;
pub mod sampling;
pub mod sideband;
mod spec;
pub mod stat;
mod targets;
pub mod threads;
mod workload;

pub use error::{Error, Result};
pub use open::{Note, OpenOptions, Opened, OpenedEvent, Place, Slot, open};
pub use recorder::{DrainPriority, Poll, RecordStats, Recorder};
pub use spec::{EventSpec, default_stat_events, describe_attr, env, parse, parse_with_filters};
pub use targets::{cpus, existing_tids, parse_task_ids, threads_of_pids};
pub use workload::Workload;
