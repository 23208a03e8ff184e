//! perfkit beyond one machine: feeding the systems a fleet already runs.
//!
//! * [`Exporter`] counts an event list on every CPU and in each selected cgroup (cgroups
//!   that appear or vanish are picked up or dropped at the next reading) and renders
//!   Prometheus' text exposition; [`serve()`] answers `GET /metrics` with it (`perfkit
//!   exporter`).
//! * [`Agent`] samples the whole system at a low rate with call chains and cuts it into
//!   one gzipped pprof profile per window (`perfkit agent`): the engine's
//!   [`Recorder`](perfkit_engine::Recorder) writes each window, `perfkit-report` builds the
//!   profile model and its pprof export, and this crate adds the fleet's labels (process,
//!   thread, comm, cgroup, host). [`sink`] writes profiles to a rotated, size-bounded
//!   directory and [`upload`] sends them to Pyroscope or Parca from a bounded on-disk
//!   spool, so that no profile is lost while the endpoint is down.
//!
//! Dependencies: `tiny_http` (a small synchronous HTTP server: a scrape endpoint needs no
//! async runtime) and `ureq` (a small blocking HTTP client, plain HTTP only).
//!
//! ```no_run
//! use perfkit_fleet::{Exporter, ExporterOptions};
//! let mut exporter = Exporter::new(ExporterOptions {
//!     events: vec!["task-clock,context-switches".into()],
//!     ..ExporterOptions::default()
//! })?;
//! let page = exporter.scrape();
//! assert!(page.contains("perfkit_event_count_total{"));
//! # Ok::<(), perfkit_engine::Error>(())
//! ```
#![forbid(unsafe_code)]

pub mod agent;
pub mod cgroups;
pub mod exporter;
pub mod exposition;
pub mod labels;
pub mod serve;
pub mod sink;
pub mod symcache;
pub mod upload;

pub use agent::{Agent, AgentOptions, WindowProfile};
pub use exporter::{Exporter, ExporterOptions, hostname};
pub use serve::serve;
