//! Zero-copy, checked decoding of Linux `perf_event` records.
//!
//! One parser serves the live ring buffer (records in native byte order, possibly split
//! where they wrap the end of the buffer) and perf.data files (records in the file's byte
//! order, which may be the other one). It decodes every record type of
//! `include/uapi/linux/perf_event.h` up to `PERF_RECORD_AUX_OUTPUT_HW_ID` into typed
//! values, every `PERF_SAMPLE_*` field of a sample in the kernel's output order, and the
//! `sample_id` trailer that `sample_id_all` appends to the other records. Any other record
//! type (a newer kernel's, or the perf tool's own records from type 64 up) comes out whole
//! as [`Record::Unknown`], never dropped.
//!
//! # Design
//!
//! * **Layout once per attr.** [`RecordParser::new`] computes, from the attr's
//!   `sample_type`, `read_format`, `sample_id_all`, register masks and
//!   `branch_sample_type`, where each fixed sample field sits, the `read_format` entry
//!   size, register counts and the trailer's shape. Parsing a record follows that table.
//! * **Zero copy, no allocation.** Strings are `&[u8]` into the record (paths need not be
//!   UTF-8); callchains, registers, branch stacks, group reads and namespaces are lazy
//!   views over the record bytes. A body split by the ring's wrap-around is copied into a
//!   caller-owned, reused scratch `Vec` (see [`RawData`]).
//! * **Checked.** Every read goes through [`Reader`], which never indexes out of bounds;
//!   truncated or inconsistent records give a [`ParseError`] with the byte offset within
//!   the record and the field that was expected. Nothing in this crate panics on input.
//! * **Either byte order**, chosen once per parser ([`Endian`]).
//! * **Several events in one stream:** [`MultiParser`] maps each record's event id
//!   (the `PERF_SAMPLE_IDENTIFIER` position) to its attr; [`sample_identifier`] reads that
//!   id alone.
//!
//! Sample field order follows the kernel's `perf_output_sample()`, which differs from the
//! uapi header's comment for the last fields: `PHYS_ADDR, CGROUP, DATA_PAGE_SIZE,
//! CODE_PAGE_SIZE, AUX` (AUX comes last).
//!
//! # Dependencies
//!
//! Only `perfkit-sys`, for `perf_event_attr` and every `PERF_*` constant. Byte-order
//! handling is a dozen lines ([`Endian`]), so no `byteorder`; `#![forbid(unsafe_code)]`.
//!
//! # Example
//!
//! ```
//! use perfkit_records::{Endian, Record, RecordParser, Records};
//! use perfkit_sys::*;
//!
//! let mut attr = perf_event_attr::new();
//! attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
//! let parser = RecordParser::new(&attr, Endian::Little);
//!
//! // A PERF_RECORD_SAMPLE: header (type 9, misc 2 = user, size 24), ip, pid, tid.
//! let mut bytes = Vec::new();
//! bytes.extend_from_slice(&9u32.to_le_bytes());
//! bytes.extend_from_slice(&2u16.to_le_bytes());
//! bytes.extend_from_slice(&24u16.to_le_bytes());
//! bytes.extend_from_slice(&0x401000u64.to_le_bytes());
//! bytes.extend_from_slice(&42u32.to_le_bytes());
//! bytes.extend_from_slice(&43u32.to_le_bytes());
//!
//! let mut scratch = Vec::new();
//! for rec in Records::new(&bytes, Endian::Little) {
//!     let (_offset, raw) = rec.unwrap();
//!     let parsed = parser.parse_raw(&raw, &mut scratch).unwrap();
//!     let Record::Sample(s) = parsed.record else { panic!() };
//!     assert_eq!((s.ip, s.pid, s.tid), (Some(0x401000), Some(42), Some(43)));
//! }
//! ```
#![forbid(unsafe_code)]

mod endian;
mod error;
pub mod kmod;
mod layout;
mod multi;
mod raw;
mod reader;
mod record;
mod sample;

pub use endian::Endian;
pub use error::{ParseError, ParseErrorKind, record_type_name};
pub use multi::{MultiParser, MultiParserError};
pub use raw::{HEADER_SIZE, RawData, RawRecord, RecordHeader, Records, sample_identifier};
pub use reader::Reader;
pub use record::{
    Aux, AuxOutputHwId, BpfEvent, BuildId, Cgroup, Comm, ItraceStart, Ksymbol, Lost, LostSamples,
    Mmap, Mmap2, Mmap2FileId, NamespaceLink, Namespaces, ParsedRecord, Read, Record, RecordParser,
    SampleId, Switch, SwitchCpuWide, Task, TextPoke, Throttle,
};
pub use sample::{
    BranchEntry, BranchStack, Callchain, CallchainContext, CallchainIter, Frame, Frames, ReadValue,
    ReadValueIter, ReadValues, Regs, Sample, StackUser, WeightStruct,
};
