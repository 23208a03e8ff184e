//! LIKWID's marker API and PAPI's high-level API over [`perfkit_regions`], exported with
//! the C signatures of Debian's `likwid.h` and `papi.h` from `libperfkit_markers.so`.
//!
//! A program written for either library runs unchanged: link it against this library, or
//! run it with `LD_PRELOAD=libperfkit_markers.so` (what `perfkit stat --regions` does).
//! The configuration comes from the environment ([`perfkit_regions::launch`]):
//! `PERFKIT_REGIONS_EVENTS` names the events (perf's `-e` syntax) and
//! `PERFKIT_REGIONS_OUTPUT` the file each process appends its results to (one JSON line),
//! at `likwid_markerClose` or at exit, whichever comes first. Without
//! `PERFKIT_REGIONS_EVENTS` every call does nothing and succeeds, as LIKWID's marker API
//! does when the program is not run under `likwid-perfctr -m`.
//!
//! The C ABI is the boundary where this crate has `unsafe`: reading the caller's strings
//! and writing through its pointers.

// The C API keeps its own names (regionTag, PAPI_hl_...).
#![allow(non_snake_case)]

mod global;
mod likwid;
mod papi;

pub use global::flush;
