//! perfkit's profile model and the exports built from it.
//!
//! [`load::load`] reads a perf.data file (perfkit's or perf's, through `perfkit-data`) into
//! a [`Profile`]; [`load::Loader`] builds one from records fed one at a time (a live tool's
//! rings). [`dump::dump_raw`] prints a file's records as `perf script -D` does.
//!
//! A [`Profile`] is built once per perf.data file: threads and their names over time,
//! interned functions, frames (addresses) and call stacks (a prefix tree), and samples that
//! point at their leaf stack node. Every report and export reads this model; none re-parses
//! the file.
//!
//! Exports, each in its public format and produced with the well-kept crate made for it
//! where one exists:
//!
//! * [`export::folded`]: `comm;caller;...;callee count` lines, the input of flamegraph tools;
//! * [`export::flamegraph`]: an interactive SVG (click to zoom, search) through `inferno`;
//! * [`export::firefox`]: Firefox Profiler JSON through `fxprof-processed-profile`
//!   (threads, samples, stacks, context-switch markers);
//! * [`export::speedscope`]: speedscope's file format (sampled profiles per thread);
//! * [`export::pprof`]: gzipped protobuf `perftools.profiles.Profile` (Pyroscope, Parca,
//!   `go tool pprof`), with the message types declared here for `prost` (no build script).
#![forbid(unsafe_code)]

pub mod build;
mod callgraph;
pub mod dump;
mod error;
pub mod export;
pub mod header;
pub mod load;
mod model;
mod origin;
pub mod report;
pub mod script;
pub mod stats;
pub mod tasks;
pub mod timespec;
pub mod trace_info;

pub use error::LoadError;
pub use load::{Diagnostics, LoadOptions, Loader, load};

pub use model::*;
