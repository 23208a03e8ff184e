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
//! * [`export::flamegraph`]: an interactive SVG (click to zoom, search) through `inferno`,
//!   bounded in depth for its first screen, coloured by kind, optionally inverted;
//! * [`export::firefox`]: Firefox Profiler JSON through `fxprof-processed-profile`
//!   (a track per thread, CPU time, libraries with build ids, off-CPU, lost and throttle
//!   markers);
//! * [`export::speedscope`]: speedscope's file format (a sampled profile per thread, in
//!   nanoseconds, with off-CPU time);
//! * [`export::pprof`]: gzipped protobuf `perftools.profiles.Profile` (Pyroscope, Parca,
//!   `go tool pprof`), with the message types declared here for `prost` (no build script)
//!   and a builder for labels.
//!
//! A profile keeps the mapped files its frames were sampled in ([`Image`]: build id, file
//! offset, main executable) and the recording's gaps ([`Mark`]: lost records, throttling)
//! for these exports.
//!
//! Analyses over the model: [`annotate`] (instructions and source lines of hot functions,
//! disassembled in process by `perfkit-disasm`) and [`diff`] (perf diff's comparison of
//! profiles, with a differential flamegraph).
//!
//! `script -F insn,insnlen` decodes the instruction at a sample's ip with `iced-x86` (a
//! well-kept x86 decoder): perf prints exactly one instruction's bytes, so their length
//! must be decoded, not guessed.
//!
//! The profile interns its functions, frames, stack nodes and images once each with
//! `hashbrown`'s `HashTable` (the table `std`'s maps are built on; only it can find an
//! entry by something other than a stored key), which indexes them by id where they are
//! instead of keeping a second copy as a map key.
#![forbid(unsafe_code)]

pub mod annotate;
mod batch;
pub mod bpf_code;
pub mod build;
mod callgraph;
mod chain_memo;
mod classes;
pub mod data_src;
pub mod diff;
pub mod dump;
pub mod elide;
mod error;
pub mod export;
mod fan_out;
pub mod fold;
pub mod header;
pub mod header_info;
pub mod hierarchy;
mod image;
mod intern;
pub mod load;
mod model;
mod origin;
pub mod pipeline;
pub mod pprof_in;
mod rb_order;
pub mod report;
pub mod sample_columns;
pub mod script;
mod script_brstack;
mod script_brstackinsn;
pub mod script_events;
pub mod script_fields;
pub mod script_python;
mod script_srccode;
pub mod srcline;
pub mod stats;
mod sym_ranges;
pub mod tasks;
pub mod thread_values;
pub mod timespec;
pub mod top;
pub mod trace_info;
pub mod unnamed_functions;

pub use error::LoadError;
pub use image::{Image, ImageId, Mark, MarkKind};
pub use load::{Diagnostics, LoadOptions, Loader, load};

pub use model::*;
