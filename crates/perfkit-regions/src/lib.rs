//! Named measurement regions: counts of an event list for the code between `enter` and the
//! end of a guard (or `start`/`stop` by name), per thread, nestable, with call counts,
//! wall time and the events' enabled/running times.
//!
//! ```
//! let regions = perfkit_regions::Regions::new("task-clock,page-faults")?;
//! for _ in 0..3 {
//!     let _g = regions.enter("fill")?;
//!     let v = vec![1u8; 1 << 20];
//!     std::hint::black_box(&v);
//! }
//! let report = regions.report();
//! let tid = report.threads[0].tid;
//! let fill = report.region(tid, "fill").unwrap();
//! assert_eq!(fill.calls, 3);
//! println!("{}", report.table());
//! # Ok::<(), perfkit_regions::Error>(())
//! ```
//!
//! Each thread opens its own counters (for itself only) when it first enters a region.
//! Counters are read from the user page with `rdpmc` (x86-64) or `mrs` (arm64, with
//! `kernel.perf_user_access=1` and the event's user-access bit, see
//! [`perfkit::arm64_user_access`]) while an event sits on a hardware counter; otherwise
//! all events of the thread are read in one `read(2)` of a group (software events, or no
//! PMU). [`RegionsReport::read_paths`] says which.
//!
//! The LIKWID and PAPI C APIs over this crate are in `perfkit-markers`;
//! `perfkit stat --regions` runs a program with them ([`launch`]).
//!
//! # Dependencies
//!
//! * `serde`/`serde_json`: results cross from the measured program to `perfkit stat
//!   --regions` as JSON lines.

mod error;
pub mod launch;
mod reader;
mod regions;
mod report;

pub use error::Error;
pub use reader::{Reader, Reading};
pub use regions::{RegionGuard, Regions};
pub use report::{EventCount, RegionResult, RegionsReport, ThreadReport, format_count};
