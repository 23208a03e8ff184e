//! In-process symbolization and DWARF unwinding for perf samples.
//!
//! `perfkit report`, `script`, `top` and the exporters turn sample addresses into
//! `function+offset (dso)` here, without ever starting a process per address (perf's
//! `addr2line` habit) and without giving wrong names when a binary changed since recording.
//!
//! # Model
//!
//! Input is independent of any perf.data reader: [`Mapping`]s (from `PERF_RECORD_MMAP` /
//! `PERF_RECORD_MMAP2`, with the build id when recorded) collected per process into
//! [`ProcessMaps`], a pid, and addresses. Output is a [`Frame`]: the demangled [`Symbol`]
//! with offset, the dso name as perf prints it, optional source line and inlined functions,
//! and when there is no symbol an [`UnknownReason`] that reports count per sample.
//!
//! ```
//! use perfkit_symbols::{Options, Symbolizer, read_proc_maps};
//!
//! #[inline(never)]
//! fn here() -> u64 { here as fn() -> u64 as usize as u64 }
//!
//! let maps = read_proc_maps(0).unwrap();                 // this process
//! let mut sym = Symbolizer::new(Options::default());
//! let frame = sym.symbolize(std::process::id(), &maps, here() + 1);
//! assert!(frame.name().ends_with("here"), "{}", frame.name());
//! assert_eq!(frame.symbol.unwrap().offset, 1);
//! ```
//!
//! # How an address is resolved
//!
//! * **Kernel** (top bit set, or a `[kernel.kallsyms]` mapping): `/proc/kallsyms` parsed
//!   once into a sorted table ([`Kallsyms`]); module symbols give dso `[module]`. When all
//!   addresses read zero, frames say [`UnknownReason::KernelHidden`] and
//!   [`kernel_hidden_hint`] explains `kptr_restrict`.
//! * **Files**: file offset = `addr - start + pgoff`, then the file's `PT_LOAD` program
//!   headers turn the offset into an ELF virtual address, which is looked up by binary
//!   search in the symbol table (`.symtab`, else the debug file's `.symtab`, else `.dynsym`).
//! * **Which file**: the mapped path if its `NT_GNU_BUILD_ID` note matches the recorded build
//!   id; else perf's build-id cache (`$PERF_BUILDID_DIR` or `~/.debug`,
//!   `.build-id/ab/cdef…/elf`) and `/usr/lib/debug/.build-id/ab/cdef….debug`. If nothing
//!   matches: [`UnknownReason::BuildIdMismatch`], never symbols of the wrong file. A stripped
//!   binary gets its symbols (and DWARF) from a separate debug file found by build id or
//!   `.gnu_debuglink` (next to the file, in `.debug/`, under `/usr/lib/debug/DIR/`).
//! * **JIT**: addresses in anonymous memory (`//anon`, `[anon:…]`, no file) or in no mapping
//!   at all go to `/tmp/perf-PID.map` ([`PerfMap`]).
//! * **`[vdso]`**: from the build-id cache, else this process's own vDSO (same kernel) when
//!   the build id agrees.
//! * **Source lines and inlines** ([`Options::srcline`], [`Options::inline`]): DWARF through
//!   `addr2line`, parsed once per file on first use.
//!
//! # Caching and speed
//!
//! Each file is mapped and parsed once per [`Symbolizer`] (keyed by path and build id);
//! symbol names are copied into one arena and demangled on first use; every (file, address)
//! answer is memoized, so a report that sees the same return address a thousand times pays
//! for it once. `benches/symbolize.rs` on this machine's libc (2 vCPU VM):
//!
//! | what | time |
//! |---|---|
//! | warm lookup (memo hit) | ~115 ns |
//! | first lookup of an address (binary search + demangle) | ~310 ns |
//! | cold: map libc, build its table, one lookup | ~0.9 ms |
//! | unwind one 17-frame sample | ~0.5 µs |
//! | unwind + symbolize that sample | ~2.5 µs |
//!
//! # Limits
//!
//! * `.plt.got` stubs are not named (`.plt` and `.plt.sec` are, as `name@plt`).
//! * Kernel symbols always come from [`Options::kallsyms`]: a perf.data from another kernel
//!   needs that file pointed at perf's saved copy; the kernel build id is not checked.
//! * Split DWARF (`.dwo`), `.gnu_debugaltlink` (dwz) and debuginfod are not used.
//! * Unwinding covers 64-bit x86_64 and aarch64 processes (not 32-bit ABIs); the aarch64
//!   path is untested here (the test machine is x86_64); it strips pointer-authentication
//!   bits with a mask derived from the highest mapped address.
//!
//! # Unwinding
//!
//! [`Unwinder`] turns the user registers and stack copy of a `--call-graph dwarf` sample
//! (`PERF_SAMPLE_REGS_USER` + `PERF_SAMPLE_STACK_USER`) into return addresses with
//! `framehop`, reading `.eh_frame`/`.eh_frame_hdr`/`.debug_frame` from the symbolizer's
//! cached files, and says whether the walk reached the outermost frame or ran out of stack
//! copy (then a larger `--call-graph dwarf,SIZE` helps).
//!
//! # Dependencies and why
//!
//! * `object`: zero-copy ELF parsing (symbols, notes, program headers, compressed sections);
//!   the same parser `addr2line` and most Rust profilers use.
//! * `addr2line` + `gimli`: DWARF lines and inlined frames; `gimli` is the reference DWARF
//!   reader in Rust. Sections are copied into shared buffers (`EndianArcSlice`) only when
//!   source lines are asked for, which also covers `SHF_COMPRESSED` debug sections.
//! * `framehop`: the unwinder samply uses; fast, caches unwind rules, detects the stack's end.
//! * `rustc-demangle`, `cpp_demangle`: the demanglers of the Rust and C++ ecosystems.
//! * `memmap2`: files are mapped, not read, since debug files can be hundreds of MB.
//!
//! blazesym was considered: it does much of this, but it hides the file choice (we need
//! perf's build-id cache layout and a typed reason per failure) and it would need a second
//! ELF/DWARF stack for unwinding anyway. `object` + `addr2line` + `framehop` share one.

mod a2l_file_zero;
mod a2l_names;
mod a2l_symtab;
pub mod buildid_cache;
mod code;
mod data_symbols;
mod demangle;
mod demangle_fallback;
mod demangle_packs;
mod elf;
mod error;
mod extent;
mod filemap;
mod fn_bounds;
mod kallsyms;
pub mod kernel_code;
mod kernel_place;
pub mod kprobe;
mod ksymbols;
mod locate;
mod maps;
mod perf_fixup;
mod perfmap;
pub mod probe_args;
pub mod probe_lines;
pub mod probe_range;
mod symbolizer;
mod symtab_origin;
mod types;
pub mod unwind;
pub mod uprobe_events;
pub mod vmlinux;

pub use code::{FunctionCode, Machine};
pub use demangle::{Demangling, demangle, demangle_all, demangle_with_params};
pub use elf::build_id_hex;
pub use error::{Error, ParseError};
pub use fn_bounds::FunctionBounds;
pub use kallsyms::{Kallsyms, KernelSymbol, cached_copy as cached_kallsyms, kernel_hidden_hint};
pub use kernel_place::{KernelPlace, kernel_map_dso_name, kernel_place};
pub use ksymbols::{Ksymbol, Ksymbols};
pub use maps::{ProcMapsEntry, ProcessMaps, parse_proc_maps, read_proc_maps};
pub use perfmap::{JitSymbol, PerfMap};
pub use symbolizer::{Options, Symbolizer, dso_short_name, is_kernel_address};
pub use symtab_origin::symtab_origin;
pub use types::{Frame, InlinedFrame, Mapping, SrcLine, Symbol, UnknownReason};
pub use unwind::{Arch, STACK_HINT, UnwindEnd, UnwindOutput, Unwinder, UserRegs};
