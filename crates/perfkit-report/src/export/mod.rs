//! Exports of a [`crate::Profile`] into the formats other tools read.

pub mod firefox;
pub mod flamegraph;
pub mod folded;
pub mod perf_json;
pub mod pprof;
pub mod speedscope;
pub mod weight;
