//! perf.data files: read the ones perf and perfkit write, and write ones perf reads.
//!
//! * [`PerfData`] reads file mode and pipe mode, in either byte order, with zstd-compressed
//!   data (`COMPRESSED` and `COMPRESSED2` records); its attrs with their ids and names, its
//!   feature sections ([`Features`]: the ones with meaning parsed, the others kept raw);
//!   and delivers records in time order the way perf does: buffered one round at a time
//!   (up to each `FINISHED_ROUND`), sorted by timestamp, so memory is bounded by a round,
//!   not by the file. Kernel records are decoded by `perfkit-records`; perf's own records
//!   (HEADER_ATTR, ID_INDEX, THREAD_MAP, CPU_MAP, TIME_CONV, EVENT_UPDATE, ...) come out raw.
//! * [`PerfDataWriter`] writes files perf 6.1 opens (`perf report`, `perf script`): attrs of
//!   at most 128 bytes (perf 6.1 refuses larger ones), ids, the data section with a
//!   `FINISHED_ROUND` after each pass, the feature sections perf shows first, optional zstd
//!   compression, and pipe mode (`-o -`). The header is rewritten after every round so a
//!   recording cut short (Ctrl-C, a crash, a full disk) stays readable up to its last round.
//! * [`synth`] builds the records perf writes before the first sample (COMM and MMAP2 of
//!   existing processes with build ids, the kernel's `[kernel.kallsyms]_text` MMAP).
//!
//! Why our own code: the file format is the heart of interoperability with perf, and the
//! record decoding is shared with the live ring buffer (`perfkit-records`); the
//! `linux-perf-data` crate decodes into its own record types. `zstd` (the reference
//! library's bindings) decompresses; `object` reads ELF build-id notes.
#![forbid(unsafe_code)]

pub mod bpf_btf;
pub mod bpf_prog_info;
mod error;
mod features;
pub mod inject;
pub mod jit_elf;
pub mod jit_inject;
pub mod jitdump;
mod read;
pub mod synth;
mod sysinfo;
pub mod tracing_data;
mod write;

pub use error::ReadError;
pub use features::{BuildIdEntry, CacheLevel, CompressedInfo, CpuTopology, Features, MemTopology};
pub use read::{EventAttr, Item, MAX_PAYLOAD, PerfData, parse_any};
pub use write::{FileEvent, PerfDataWriter, WriteOptions, record};

/// Feature bit numbers (`HEADER_*` in perf's header.h).
pub mod feature {
    #![allow(missing_docs)]
    pub const TRACING_DATA: usize = 1;
    pub const BUILD_ID: usize = 2;
    pub const HOSTNAME: usize = 3;
    pub const OSRELEASE: usize = 4;
    pub const VERSION: usize = 5;
    pub const ARCH: usize = 6;
    pub const NRCPUS: usize = 7;
    pub const CPUDESC: usize = 8;
    pub const CPUID: usize = 9;
    pub const TOTAL_MEM: usize = 10;
    pub const CMDLINE: usize = 11;
    pub const EVENT_DESC: usize = 12;
    pub const CPU_TOPOLOGY: usize = 13;
    pub const NUMA_TOPOLOGY: usize = 14;
    pub const BRANCH_STACK: usize = 15;
    pub const PMU_MAPPINGS: usize = 16;
    pub const GROUP_DESC: usize = 17;
    pub const AUXTRACE: usize = 18;
    pub const STAT: usize = 19;
    pub const CACHE: usize = 20;
    pub const SAMPLE_TIME: usize = 21;
    pub const MEM_TOPOLOGY: usize = 22;
    pub const CLOCKID: usize = 23;
    pub const DIR_FORMAT: usize = 24;
    pub const BPF_PROG_INFO: usize = 25;
    pub const BPF_BTF: usize = 26;
    pub const COMPRESSED: usize = 27;
    pub const CPU_PMU_CAPS: usize = 28;
    pub const CLOCK_DATA: usize = 29;
    pub const HYBRID_TOPOLOGY: usize = 30;
    pub const PMU_CAPS: usize = 31;
}
