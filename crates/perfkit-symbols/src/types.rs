//! The input model (mappings) and the output model (frames) of the symbolizer.

use std::fmt;
use std::sync::Arc;

/// One file mapped into a process, as told by a `PERF_RECORD_MMAP` / `PERF_RECORD_MMAP2`
/// record (or a line of `/proc/PID/maps`).
///
/// `start..end` is the mapped address range (`addr`, `addr + len` in the record), `pgoff`
/// the file offset mapped at `start`, `path` the `filename` field (`//anon`, `[vdso]`,
/// `[kernel.kallsyms]_text`, ... for non-files), and `build_id` the build id that
/// `PERF_RECORD_MMAP2` carries when `PERF_RECORD_MISC_MMAP_BUILD_ID` is set, or that the
/// `HEADER_BUILD_ID` feature section of a perf.data file gives for that path.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Mapping {
    /// First mapped address.
    pub start: u64,
    /// One past the last mapped address.
    pub end: u64,
    /// File offset mapped at `start`.
    pub pgoff: u64,
    /// File name as the kernel reported it.
    pub path: String,
    /// The file's GNU build id (`NT_GNU_BUILD_ID` note), if recorded. perf pads build ids to
    /// 20 bytes with zeros; both padded and unpadded forms are accepted.
    pub build_id: Option<Vec<u8>>,
}

impl Mapping {
    /// Does this mapping hold no file (anonymous memory, where JIT compilers put code)?
    ///
    /// perf names such mappings `//anon`; the kernel's maps file shows `[anon:NAME]` for
    /// named anonymous memory and nothing at all for plain anonymous memory. A memfd
    /// (`/memfd:NAME (deleted)`) is a file to perf 6.1: its addresses are printed relative
    /// to it and no JIT map is consulted.
    pub fn is_anonymous(&self) -> bool {
        let p = self.path.as_str();
        p.is_empty()
            || p == "//anon"
            || p.starts_with("[anon")
            || p == "[heap]"
            || p.starts_with("[stack")
    }

    /// Does perf map addresses in it one to one, with no file offset or symbols (its
    /// `is_anon_memory` and `is_no_dso_memory`): anonymous memory, `/dev/zero`, huge pages,
    /// the stack, SysV shared memory and the heap.
    pub fn is_identity_mapped(&self) -> bool {
        let p = self.path.as_str();
        p == "//anon"
            || p.starts_with("/dev/zero")
            || p.starts_with("/anon_hugepage")
            || p.starts_with("[stack")
            || p.starts_with("/SYSV")
            || p == "[heap]"
    }

    /// Is this the kernel image (`[kernel.kallsyms]`, perf's name for the kernel mapping,
    /// synthesized with pid -1) or a kernel module path?
    pub fn is_kernel(&self) -> bool {
        self.path.starts_with("[kernel.kallsyms]") || self.path.starts_with("[guest.kernel")
    }

    /// Does `addr` fall in this mapping?
    pub fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }

    /// The file offset of `addr`: `addr - start + pgoff`.
    pub fn file_offset(&self, addr: u64) -> u64 {
        addr.wrapping_sub(self.start).wrapping_add(self.pgoff)
    }
}

/// A source location: file and line (DWARF `.debug_line`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SrcLine {
    /// Source file path as recorded in the DWARF line table (usually absolute).
    pub file: Arc<str>,
    /// 1-based line number; 0 when the line table gives none.
    pub line: u32,
}

impl fmt::Display for SrcLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// A function symbol covering an address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Symbol {
    /// The name, demangled (Rust and C++) unless demangling was turned off.
    pub name: Arc<str>,
    /// The symbol's start, in the file's virtual address space (ELF `st_value`), or the
    /// absolute address for kernel and JIT symbols.
    pub start: u64,
    /// Size in bytes (`st_size`, or the distance to the next symbol when the table gives 0).
    pub size: u64,
    /// Offset of the looked-up address from `start` (perf prints `name+0x1f`).
    pub offset: u64,
    /// A data object (`STT_OBJECT`, or a kallsyms data/bss line) rather than a function:
    /// perf prints its report row with an offset (`__start_rodata+0x10`).
    pub object: bool,
}

/// One function inlined at an address (DWARF `DW_TAG_inlined_subroutine`), from
/// [`Options::inline`](crate::Options::inline).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InlinedFrame {
    /// The inlined function's name, demangled.
    pub function: Option<Arc<str>>,
    /// The line executing inside this inlined function.
    pub srcline: Option<SrcLine>,
}

/// The result of symbolizing one address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The address that was looked up (as given; return addresses are not adjusted here).
    pub address: u64,
    /// The covering symbol, or `None` (then `unknown_reason` says why).
    pub symbol: Option<Symbol>,
    /// The object the address belongs to, as perf names it: a path, `[kernel.kallsyms]`,
    /// `[module_name]`, `[JIT] tid PID`, `[vdso]`, or `[unknown]`.
    pub dso: Arc<str>,
    /// File and line of the address (innermost, as `addr2line` without `-i` prints it),
    /// when [`Options::srcline`](crate::Options::srcline) is on and DWARF line info exists.
    pub srcline: Option<SrcLine>,
    /// Functions inlined at this address, innermost first; the last entry is inlined into
    /// `symbol`. Empty unless [`Options::inline`](crate::Options::inline) is on.
    pub inlined: Vec<InlinedFrame>,
    /// Why `symbol` is `None` (or why the symbol may not be trusted).
    pub unknown_reason: Option<UnknownReason>,
}

impl Frame {
    /// The symbol name, or `[unknown]` as perf prints it.
    pub fn name(&self) -> &str {
        self.symbol.as_ref().map_or("[unknown]", |s| &s.name)
    }
}

/// Why an address has no symbol. Reports count samples per reason (`Copy + Hash`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum UnknownReason {
    /// No mapping of the process covers the address (and no JIT map names it).
    NoMapping,
    /// The mapped file does not exist here and no build-id cache holds it.
    FileMissing,
    /// A file exists but its build id differs from the recorded one, and no copy with the
    /// right build id was found (`~/.debug`, `/usr/lib/debug/.build-id`). Symbols from the
    /// wrong file would be wrong, so none are given.
    BuildIdMismatch,
    /// The file exists but is not a readable ELF file.
    NotElf,
    /// The ELF file has no symbol table (`.symtab` stripped, no `.dynsym` entries) and no
    /// separate debug file was found.
    NoSymbols,
    /// The file has symbols but none covers this address (PLT stubs, padding, data).
    NoSymbolAtAddress,
    /// The address's file offset falls outside every `PT_LOAD` segment of the file.
    OutsideSegments,
    /// Kernel addresses are hidden (`/proc/kallsyms` shows zeros): `kptr_restrict` is set
    /// or the reader is not root. See [`crate::kernel_hidden_hint`].
    KernelHidden,
    /// The kernel symbol table could not be read.
    KernelSymbolsUnavailable,
    /// Anonymous executable memory (JIT code) with no `/tmp/perf-PID.map` entry.
    NoJitSymbol,
}

impl UnknownReason {
    /// Every reason, for report headers that print a table.
    pub const ALL: [UnknownReason; 10] = [
        UnknownReason::NoMapping,
        UnknownReason::FileMissing,
        UnknownReason::BuildIdMismatch,
        UnknownReason::NotElf,
        UnknownReason::NoSymbols,
        UnknownReason::NoSymbolAtAddress,
        UnknownReason::OutsideSegments,
        UnknownReason::KernelHidden,
        UnknownReason::KernelSymbolsUnavailable,
        UnknownReason::NoJitSymbol,
    ];
}

impl fmt::Display for UnknownReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UnknownReason::NoMapping => "no mapping covers the address",
            UnknownReason::FileMissing => "mapped file not found (nor in a build-id cache)",
            UnknownReason::BuildIdMismatch => {
                "build id mismatch: the file changed since recording and no cached copy matches"
            }
            UnknownReason::NotElf => "file is not a readable ELF file",
            UnknownReason::NoSymbols => "no symbol table (stripped, no debug file found)",
            UnknownReason::NoSymbolAtAddress => "no symbol covers the address",
            UnknownReason::OutsideSegments => "address outside the file's loadable segments",
            UnknownReason::KernelHidden => {
                "kernel symbols hidden (kptr_restrict or not root): run as root or sysctl kernel.kptr_restrict=0"
            }
            UnknownReason::KernelSymbolsUnavailable => "kernel symbol table unreadable",
            UnknownReason::NoJitSymbol => "JIT code without a /tmp/perf-PID.map entry",
        })
    }
}
