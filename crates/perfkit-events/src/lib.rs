//! perf's event syntax for perfkit: the `-e` parser that `stat`, `record` and `top` share,
//! PMU discovery from sysfs, tracepoints from tracefs (with a RAW-sample decoder), libpfm4
//! names, the `perfkit list` catalogue, and `-vv` attr printing.
//!
//! ```no_run
//! let env = perfkit_events::Env::system();
//! let list = env.parse("{cycles:u,instructions:u}:S,sched:sched_switch,mem:0x1000:w")?;
//! for group in &list.groups {
//!     for ev in &group.members {
//!         println!("{}\n{}", ev.name, perfkit_events::format_attr(&ev.attr));
//!     }
//! }
//! # Ok::<(), perfkit_events::ParseError>(())
//! ```
//!
//! * [`Env`] says where to look: the sysfs PMU directory, tracefs, libpfm4. Tests build
//!   fixture trees and pass them in.
//! * [`Env::parse`] returns an [`EventList`] of [`EventGroup`]s of [`ParsedEvent`]s, each
//!   with a ready `perf_event_attr`, scale/unit, PMU cpus, filter and per-event terms.
//!   Errors are [`ParseError`]s with the byte offset, what was expected, and a suggestion.
//! * [`names::name_of`] / [`Env::name_of`] go back from an attr to perf's name.
//! * [`tracefs`] finds or mounts tracefs, lists and parses `format` files, decodes RAW data.
//! * [`list`]: the `perfkit list` catalogue, with availability probed by opening each event.
//! * [`format_attr`] prints an attr like `perf -vv`.
//!
//! # Dependencies
//!
//! * `object`: reads ELF symbol tables and program headers to turn `uprobe:BIN:SYMBOL` into
//!   the file offset the uprobe PMU wants (no need to shell out to `nm`/`readelf`).
//! * `libloading`: `dlopen`s `libpfm.so.4` at run time, so libpfm4 is optional and there is
//!   no build-time link or header dependency.
//! * `serde` / `serde_json`: `perfkit list --json`.
//! * `strsim`: edit distances for "did you mean" suggestions.
//! * `regex`: perf's metric tables are keyed by POSIX extended regexes over the CPUID
//!   string (`AuthenticAMD-23-([12][0-9A-F]|[0-9A-F])`); the same matching, not a copy.
//! * `perfkit-trace`: tracefs and print fmts (re-exported as [`tracefs`] and [`printfmt`]).
//! * `perfkit`: [`perfkit::Counter::open`] to probe whether an event opens here, so this
//!   crate needs no `unsafe` for the system call.
//!
//! The only `unsafe` code is the libpfm4 FFI in [`pfm`].
#![deny(unsafe_code)]
// A ParseError carries the input and its advice so it can print itself with a caret; it is
// built only on the error path, so its size does not matter.
#![allow(clippy::result_large_err)]

mod env;
mod error;
pub mod fixture;
pub mod glob;
pub mod list;
pub mod list_json;
pub mod metrics;
pub mod names;
mod parse;
pub mod pfm;
pub mod pmu;
mod print;
mod tracefs_error;
pub mod uprobe;

pub use env::{Env, PfmSetting, SYSFS_PMUS};
pub use error::{ParseError, closest};
pub use names::name_of;
pub use parse::{CallGraph, EventGroup, EventList, ParsedEvent, UserTerms, parse, pmu_event_name};
/// Tracepoints (tracefs, `format` files, RAW decoding, print fmts): the `perfkit-trace`
/// crate, which readers of recordings use without linking this one.
pub use perfkit_trace::{printfmt, tracefs};
pub use print::{attr_lines, bit_names, format_attr, read_format_names, sample_type_names};
pub use tracefs_error::TracefsError;

/// Parse with this machine's environment ([`Env::system`]). Builds a new `Env` each call;
/// keep an `Env` around to parse several strings.
pub fn parse_system(input: &str) -> Result<EventList, ParseError> {
    Env::system().parse(input)
}
