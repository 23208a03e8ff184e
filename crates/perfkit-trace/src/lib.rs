//! Linux tracepoints as data: where tracefs is, what its `format` files say, how a
//! `PERF_SAMPLE_RAW` payload decodes by them, and what `perf script` prints for it (the
//! event's `print fmt:` evaluated the way libtraceevent does).
//!
//! ```
//! use perfkit_trace::printfmt::{PrintFmt, format_record};
//! use perfkit_trace::tracefs::{TraceFormat, Value};
//!
//! let fmt = TraceFormat::parse(
//!     "name: demo\nID: 7\nformat:\n\
//!      \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\
//!      \tfield:int pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
//!      print fmt: \"pid=%d\", REC->pid\n",
//! )?;
//! let mut raw = vec![7, 0, 0, 0];
//! raw.extend_from_slice(&42i32.to_ne_bytes());
//! assert_eq!(fmt.decode(&raw, false)?, [("pid", Value::Signed(42))]);
//! let print = PrintFmt::parse(&fmt.print_fmt)?;
//! assert_eq!(format_record(&fmt, Some(&print), &raw), "pid=42");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! * [`tracefs`]: finding (or mounting) tracefs, listing `events/<subsys>/<event>`, ids
//!   (the `attr.config` of a `PERF_TYPE_TRACEPOINT` event), [`tracefs::TraceFormat`]: a
//!   parsed `format` file, and decoding RAW payloads field by field in the recording's byte
//!   order.
//! * [`printfmt`]: the `print fmt:` line parsed once per event ([`printfmt::PrintFmt`]) and
//!   evaluated per sample, with the kernel's symbols and `printk_formats` strings when known
//!   ([`printfmt::KernelInfo`]).
//!
//! # Why a crate of its own
//!
//! Reading a recording needs the tracepoint formats (they travel in a perf.data file's
//! tracing data) but none of the machinery to open events. `perfkit-events` (the `-e`
//! parser) links the counting library `perfkit` and `libloading` (for libpfm4); a reader of
//! files (`perfkit-report`, a viewer, a converter) should link neither. So the tracepoint
//! code lives here, depending only on `perfkit-records` (for [`Endian`]) and `serde`
//! (decoded values serialize into `perfkit script --json`), and `perfkit-events` re-exports
//! it as `perfkit_events::{tracefs, printfmt}`.
#![forbid(unsafe_code)]

mod error;
pub mod printfmt;
pub mod tracefs;

pub use error::TraceError;
pub use perfkit_records::Endian;
