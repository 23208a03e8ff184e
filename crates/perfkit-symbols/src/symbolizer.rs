//! The symbolizer: per-file cache, per-address memo, dispatch to ELF, kernel and JIT.

use std::collections::HashMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::data_symbols::DataSymbols;
use crate::elf::{DwarfReader, ElfFile, SymbolTable, build_id_matches, dwarf_context};
use crate::filemap::FileBytes;
use crate::kallsyms::Kallsyms;
use crate::locate::{SearchPaths, find_binary, find_debug_file};
use crate::maps::ProcessMaps;
use crate::perfmap::PerfMap;
use crate::types::{Frame, InlinedFrame, Mapping, SrcLine, Symbol, UnknownReason};

/// A fast non-cryptographic hasher (the Fx hash of rustc) for the memo and file index:
/// keys are addresses and paths from our own input, so DoS resistance is not needed, and
/// SipHash was a third of a warm lookup.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_u8(&mut self, n: u8) {
        self.write_u64(u64::from(n));
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FxMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FxHasher>>;

/// What the symbolizer does and where it looks. `Options::default()` is what `perf report`
/// does by default: demangled names, no source lines, the running kernel's `/proc/kallsyms`,
/// perf's build-id cache and `/usr/lib/debug`.
#[derive(Clone, Debug)]
pub struct Options {
    /// Demangle Rust and C++ names (perf's default; `--no-demangle` turns it off).
    pub demangle: bool,
    /// Demangle C++ names with their parameters, return types and clone suffixes, as perf
    /// does with `-v` (libiberty's `DMGL_PARAMS`).
    pub demangle_params: bool,
    /// Look up file:line in DWARF `.debug_line` (`--sort srcline`, `perf script -F srcline`).
    /// Slow on first use of each file: the DWARF is parsed then.
    pub srcline: bool,
    /// List inlined functions (`--inline`) from DWARF `DW_TAG_inlined_subroutine`.
    pub inline: bool,
    /// The kernel symbol table (`/proc/kallsyms`, or perf's saved copy, `--kallsyms`).
    pub kallsyms: PathBuf,
    /// perf's build-id cache: `$PERF_BUILDID_DIR`, else `$HOME/.debug` (`--buildid-dir`).
    pub buildid_dir: Option<PathBuf>,
    /// Roots of separate debug files (`/usr/lib/debug`).
    pub debug_dirs: Vec<PathBuf>,
    /// Where JIT perf maps live (`/tmp`, giving `/tmp/perf-PID.map`).
    pub perf_map_dir: PathBuf,
    /// perf's `--symfs DIR`: binaries and debug files are looked up under this root (the
    /// build-id cache is not).
    pub symfs: Option<PathBuf>,
    /// perf's `-k/--vmlinux FILE`: the core kernel's symbols from this ELF file instead
    /// of [`Options::kallsyms`] (the caller checks its build id against the recording's).
    pub vmlinux: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        let buildid_dir = std::env::var_os("PERF_BUILDID_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".debug")));
        Options {
            demangle: true,
            demangle_params: false,
            srcline: false,
            inline: false,
            kallsyms: PathBuf::from("/proc/kallsyms"),
            buildid_dir,
            debug_dirs: vec![PathBuf::from("/usr/lib/debug")],
            perf_map_dir: PathBuf::from("/tmp"),
            symfs: None,
            vmlinux: None,
        }
    }
}

impl Options {
    /// How names are demangled, from [`Options::demangle`] and [`Options::demangle_params`].
    pub fn demangling(&self) -> crate::Demangling {
        match (self.demangle, self.demangle_params) {
            (false, _) => crate::Demangling::Off,
            (true, false) => crate::Demangling::Names,
            (true, true) => crate::Demangling::Signatures,
        }
    }
}

/// The memoized answer for one address of one file.
#[derive(Clone)]
struct Resolved {
    symbol: Option<Symbol>,
    srcline: Option<SrcLine>,
    inlined: Vec<InlinedFrame>,
    reason: Option<UnknownReason>,
}

pub(crate) enum DwarfState {
    NotLoaded,
    Missing,
    Loaded(Box<addr2line::Context<DwarfReader>>),
}

/// One loaded binary (with its debug file) and its memo.
pub(crate) struct Dso {
    pub(crate) binary: ElfFile,
    pub(crate) debug: Option<ElfFile>,
    pub(crate) symbols: Option<SymbolTable>,
    /// Where `symbols` came from (the debug file's table, the dynamic one), so that the
    /// data objects come from the same table.
    symbols_from: (bool, bool),
    /// The data objects, built on the first data address ([`Symbolizer::symbolize_data`]).
    data_symbols: Option<Option<DataSymbols>>,
    /// The symbols `addr2line` names a line-less address by, built on first use.
    a2l_symtab: Option<Option<crate::a2l_symtab::A2lSymtab>>,
    /// The executable sections' address ranges, read on first use.
    exec_sections: Option<Vec<(u64, u64)>>,
    /// binutils' misnamed line rows, by unit (`.debug_info` offset).
    file_zero: FxMap<usize, Option<crate::a2l_file_zero::FileZero>>,
    pub(crate) dwarf: DwarfState,
    memo: FxMap<u64, Resolved>,
    /// Answers with the whole DWARF function chain ([`Symbolizer::symbolize_chain`]).
    chain_memo: FxMap<u64, Resolved>,
    /// binutils' naming state for those chains, as perf's `addr2line` child keeps it.
    a2l_names: crate::a2l_names::A2lNames,
}

impl Dso {
    /// Is `vaddr` inside an executable section (where the code table holds every sized
    /// symbol perf's table has)?
    fn in_exec_section(&mut self, vaddr: u64) -> bool {
        let ranges = self.exec_sections.get_or_insert_with(|| {
            use object::{Object, ObjectSection};
            let Ok(obj) = object::File::parse(self.binary.bytes.bytes()) else {
                return Vec::new();
            };
            obj.sections()
                .filter(|s| match s.flags() {
                    object::SectionFlags::Elf { sh_flags } => {
                        sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                    }
                    _ => false,
                })
                .map(|s| (s.address(), s.address() + s.size()))
                .collect()
        });
        ranges
            .iter()
            .any(|&(start, end)| start <= vaddr && vaddr < end)
    }

    /// The symbol of perf's whole table (functions, objects and labels of every section,
    /// [`DataSymbols`]) covering `vaddr`, the table built on first use; with `sized_only`,
    /// only one whose own size covers it.
    fn whole_table_symbol(
        &mut self,
        vaddr: u64,
        demangle: crate::Demangling,
        sized_only: bool,
    ) -> Option<Symbol> {
        let table = self.data_symbols.get_or_insert_with(|| {
            let (from_debug, dynamic) = self.symbols_from;
            let file = if from_debug {
                self.debug.as_ref()
            } else {
                Some(&self.binary)
            };
            file.and_then(|file| DataSymbols::build(file, dynamic, demangle))
        });
        let (name, start, size, object) = table.as_ref()?.find(vaddr, sized_only)?;
        Some(Symbol {
            name,
            start,
            size,
            offset: vaddr - start,
            object,
        })
    }
}

type BuildIdSlot = (Option<Vec<u8>>, usize);

struct Slot {
    name: Arc<str>,
    dso: Result<Box<Dso>, UnknownReason>,
}

enum KernelState {
    NotLoaded,
    Loaded(Arc<Kallsyms>),
    Hidden,
    Failed,
}

/// A dso's name as perf reports show it: the file's base name, `[kernel.kallsyms]` and the
/// like as they are, and `[JIT] tid PID` for a JIT map `.../perf-PID.map`.
pub fn dso_short_name(dso: &str) -> std::borrow::Cow<'_, str> {
    if dso.starts_with('[') {
        return dso.into();
    }
    let base = dso.rsplit('/').next().unwrap_or(dso);
    match base
        .strip_prefix("perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .filter(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
    {
        Some(pid) => format!("[JIT] tid {pid}").into(),
        None => base.into(),
    }
}

/// Symbolizes addresses of many processes, loading each file once.
///
/// Use one `Symbolizer` per report: files, kernel symbols and JIT maps are loaded on first
/// use and kept; every (file, address) answer is memoized, so the second lookup of an
/// address costs a hash lookup.
pub struct Symbolizer {
    opts: Options,
    search: SearchPaths,
    slots: Vec<Slot>,
    /// path -> (build id, slot index) for each build id seen with that path.
    index: FxMap<String, Vec<BuildIdSlot>>,
    kernel: KernelState,
    kernel_prefetch: Option<std::thread::JoinHandle<Result<Kallsyms, crate::Error>>>,
    kernel_dso: Arc<str>,
    module_dsos: HashMap<Arc<str>, Arc<str>>,
    unknown_dso: Arc<str>,
    jit: HashMap<u32, (Arc<str>, Option<PerfMap>)>,
    diagnostics: Vec<String>,
}

/// Is `addr` in the kernel half of a 64-bit address space (x86_64, aarch64)?
pub fn is_kernel_address(addr: u64) -> bool {
    addr >> 63 == 1
}

impl Symbolizer {
    /// A symbolizer with these options; nothing is loaded yet.
    pub fn new(opts: Options) -> Symbolizer {
        let mut opts = opts;
        if let Some(root) = &opts.symfs {
            // As perf: under --symfs every file comes from there, the kernel's symbols too.
            opts.kallsyms = root.join(opts.kallsyms.strip_prefix("/").unwrap_or(&opts.kallsyms));
        }
        let search = SearchPaths {
            buildid_dir: opts.buildid_dir.clone().filter(|_| opts.symfs.is_none()),
            debug_dirs: match &opts.symfs {
                Some(root) => opts
                    .debug_dirs
                    .iter()
                    .map(|d| root.join(d.strip_prefix("/").unwrap_or(d)))
                    .collect(),
                None => opts.debug_dirs.clone(),
            },
            symfs: opts.symfs.clone(),
        };
        Symbolizer {
            opts,
            search,
            slots: Vec::new(),
            index: FxMap::default(),
            kernel: KernelState::NotLoaded,
            kernel_prefetch: None,
            kernel_dso: Arc::from("[kernel.kallsyms]"),
            module_dsos: HashMap::new(),
            unknown_dso: Arc::from("[unknown]"),
            jit: HashMap::new(),
            diagnostics: Vec::new(),
        }
    }

    /// The options in force.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Problems met while loading (unparsable JIT maps, unreadable kallsyms, ...), once each.
    pub fn diagnostics(&self) -> &[String] {
        &self.diagnostics
    }

    /// Symbolize `addr` of process `pid` whose mappings are `maps`: kernel addresses through
    /// kallsyms, file mappings through their ELF file, anonymous memory through the JIT map.
    pub fn symbolize(&mut self, pid: u32, maps: &ProcessMaps, addr: u64) -> Frame {
        if is_kernel_address(addr) {
            return self.symbolize_kernel(addr);
        }
        match maps.find(addr) {
            Some(m) if m.is_kernel() => self.symbolize_kernel(addr),
            Some(m) if m.is_anonymous() => {
                self.symbolize_jit(pid, addr, UnknownReason::NoJitSymbol)
            }
            Some(m) => self.symbolize_in_mapping(m, addr),
            None => self.symbolize_jit(pid, addr, UnknownReason::NoMapping),
        }
    }

    fn slot_for(&mut self, m: &Mapping) -> usize {
        let bid = m.build_id.as_deref();
        if let Some(list) = self.index.get(m.path.as_str())
            && let Some(&(_, i)) = list.iter().find(|(b, _)| b.as_deref() == bid)
        {
            return i;
        }
        let dso = self.load(&m.path, bid);
        let i = self.slots.len();
        self.slots.push(Slot {
            name: Arc::from(m.path.as_str()),
            dso,
        });
        self.index
            .entry(m.path.clone())
            .or_default()
            .push((m.build_id.clone(), i));
        i
    }

    fn load(&mut self, path: &str, build_id: Option<&[u8]>) -> Result<Box<Dso>, UnknownReason> {
        let binary = match find_binary(path, build_id, &self.search) {
            Ok(b) => b,
            Err(UnknownReason::FileMissing) if path == "[vdso]" && self.opts.symfs.is_none() => {
                own_vdso(build_id).ok_or(UnknownReason::FileMissing)?
            }
            Err(e) => return Err(e),
        };
        let need_debug = !binary.has_symtab
            || ((self.opts.srcline || self.opts.inline) && !binary.has_debug_info);
        let debug = if need_debug {
            find_debug_file(&binary, &self.search)
        } else {
            None
        };
        let demangle = self.opts.demangling();
        let mut symbols_from = (false, false);
        let symbols = if binary.has_symtab {
            SymbolTable::build(&binary, false, &binary, demangle)
        } else if let Some(d) = debug.as_ref().filter(|d| d.has_symtab) {
            symbols_from.0 = true;
            SymbolTable::build(d, false, &binary, demangle)
        } else if binary.has_dynsym {
            symbols_from.1 = true;
            SymbolTable::build(&binary, true, &binary, demangle)
        } else {
            None
        };
        // The tables were read whole; from now on only what lookups touch stays resident.
        binary.bytes.release_pages();
        if let Some(d) = &debug {
            d.bytes.release_pages();
        }
        Ok(Box::new(Dso {
            binary,
            debug,
            symbols,
            symbols_from,
            data_symbols: None,
            a2l_symtab: None,
            file_zero: FxMap::default(),
            exec_sections: None,
            dwarf: DwarfState::NotLoaded,
            memo: FxMap::default(),
            chain_memo: FxMap::default(),
            a2l_names: Default::default(),
        }))
    }

    /// Symbolize `addr` inside the file mapping `m` (the mapping must contain `addr`).
    pub fn symbolize_in_mapping(&mut self, m: &Mapping, addr: u64) -> Frame {
        self.in_mapping(m, addr, false)
    }

    /// Symbolize the data address `addr` inside the file mapping `m` as perf names the
    /// `addr` of a page fault: the function covering it, else the data object (a global
    /// or static in `.data`, `.bss`, `.rodata`) of the same symbol table.
    pub fn symbolize_data_in_mapping(&mut self, m: &Mapping, addr: u64) -> Frame {
        let mut f = self.in_mapping(m, addr, false);
        if f.symbol.is_some() {
            return f;
        }
        let i = self.slot_for(m);
        let demangle = self.opts.demangling();
        let Ok(dso) = &mut self.slots[i].dso else {
            return f;
        };
        let Some(vaddr) = dso.binary.offset_to_vaddr(m.file_offset(addr)) else {
            return f;
        };
        if let Some(s) = dso.whole_table_symbol(vaddr, demangle, false) {
            f.symbol = Some(s);
            f.unknown_reason = None;
        }
        f
    }

    /// Symbolize `addr` as perf does the frames its DWARF unwinder finds: for a file with
    /// debug information, [`Frame::inlined`] holds every function DWARF places at the
    /// address, innermost first and the containing function last (empty when the file has
    /// none). Other addresses are symbolized as [`Symbolizer::symbolize`] does.
    pub fn symbolize_chain(&mut self, pid: u32, maps: &ProcessMaps, addr: u64) -> Frame {
        match maps.find(addr) {
            Some(m) if !is_kernel_address(addr) && !m.is_kernel() && !m.is_anonymous() => {
                let m = m.clone();
                self.in_mapping(&m, addr, true)
            }
            _ => self.symbolize(pid, maps, addr),
        }
    }

    fn in_mapping(&mut self, m: &Mapping, addr: u64, whole_chain: bool) -> Frame {
        let i = self.slot_for(m);
        let slot = &mut self.slots[i];
        let dso_name = slot.name.clone();
        let dso = match &mut slot.dso {
            Ok(d) => d,
            Err(reason) => return unknown(addr, dso_name, *reason),
        };
        let Some(vaddr) = dso.binary.offset_to_vaddr(m.file_offset(addr)) else {
            return unknown(addr, dso_name, UnknownReason::OutsideSegments);
        };
        let memo = if whole_chain {
            &dso.chain_memo
        } else {
            &dso.memo
        };
        let r = match memo.get(&vaddr) {
            Some(r) => r.clone(),
            None => {
                let r = resolve(dso, vaddr, &self.opts, whole_chain);
                if whole_chain {
                    dso.chain_memo.insert(vaddr, r.clone());
                } else {
                    dso.memo.insert(vaddr, r.clone());
                }
                r
            }
        };
        Frame {
            address: addr,
            symbol: r.symbol,
            dso: dso_name,
            srcline: r.srcline,
            inlined: r.inlined,
            unknown_reason: r.reason,
        }
    }

    /// Start reading and parsing the kernel symbol table on another thread, so it is
    /// ready when the first kernel address comes (reading `/proc/kallsyms` costs tens of
    /// milliseconds of kernel time; a report can overlap it with parsing its file).
    pub fn prefetch_kernel(&mut self) {
        if matches!(self.kernel, KernelState::NotLoaded) && self.kernel_prefetch.is_none() {
            let path = self.opts.kallsyms.clone();
            let vmlinux = self.opts.vmlinux.clone();
            self.kernel_prefetch = Some(std::thread::spawn(move || match vmlinux {
                Some(v) => crate::vmlinux::symbols(&v),
                None => Kallsyms::from_file(&path),
            }));
        }
    }

    fn load_kernel(&mut self) {
        if !matches!(self.kernel, KernelState::NotLoaded) {
            return;
        }
        let loaded = match self.kernel_prefetch.take().map(|h| h.join()) {
            Some(Ok(result)) => result,
            _ => match &self.opts.vmlinux {
                Some(v) => crate::vmlinux::symbols(v),
                None => Kallsyms::from_file(&self.opts.kallsyms),
            },
        };
        self.kernel = match loaded {
            Ok(k) if k.hidden() => {
                self.diagnostics.push(crate::kallsyms::kernel_hidden_hint());
                KernelState::Hidden
            }
            Ok(k) => KernelState::Loaded(Arc::new(k)),
            Err(e) => {
                self.diagnostics.push(format!(
                    "kernel symbols unavailable: {}",
                    crate::error::with_causes(&e)
                ));
                KernelState::Failed
            }
        };
    }

    /// The kernel's symbol table (loaded if not yet), when it could be read and is not
    /// hidden: for tracepoint fields printed with `%pS`.
    pub fn kernel_symbols(&mut self) -> Option<Arc<Kallsyms>> {
        self.load_kernel();
        match &self.kernel {
            KernelState::Loaded(k) => Some(Arc::clone(k)),
            _ => None,
        }
    }

    /// Are kernel symbols hidden by `kptr_restrict` (loads kallsyms if not yet loaded)?
    pub fn kernel_hidden(&mut self) -> bool {
        self.load_kernel();
        matches!(self.kernel, KernelState::Hidden)
    }

    /// Symbolize a kernel address through kallsyms. The dso is `[kernel.kallsyms]` or the
    /// module name in brackets.
    pub fn symbolize_kernel(&mut self, addr: u64) -> Frame {
        self.load_kernel();
        let k = match &self.kernel {
            KernelState::Loaded(k) => k,
            KernelState::Hidden => {
                return unknown(addr, self.kernel_dso.clone(), UnknownReason::KernelHidden);
            }
            _ => {
                return unknown(
                    addr,
                    self.kernel_dso.clone(),
                    UnknownReason::KernelSymbolsUnavailable,
                );
            }
        };
        let Some(s) = k.find(addr) else {
            if !k.covers(addr) {
                // As perf: no map covers it (garbage in a callchain, a stale address).
                return unknown(addr, Arc::from("[unknown]"), UnknownReason::NoMapping);
            }
            return unknown(
                addr,
                self.kernel_dso.clone(),
                UnknownReason::NoSymbolAtAddress,
            );
        };
        let dso = match &s.module {
            None => self.kernel_dso.clone(),
            Some(m) => self
                .module_dsos
                .entry(m.clone())
                .or_insert_with(|| Arc::from(format!("[{m}]")))
                .clone(),
        };
        Frame {
            address: addr,
            symbol: Some(Symbol {
                name: s.name.clone(),
                start: s.start,
                size: s.size,
                offset: addr - s.start,
                object: s.object,
            }),
            dso,
            srcline: None,
            inlined: Vec::new(),
            unknown_reason: None,
        }
    }

    /// Symbolize a kernel address in the kernel map `place` holds it in (see
    /// [`kernel_place`](crate::kernel_place)), as perf does: a module's address is that
    /// module's, named only by kallsyms symbols tagged with the module; the core kernel's
    /// by untagged symbols; an address outside every map is `[unknown]`.
    pub fn symbolize_kernel_in(&mut self, addr: u64, place: &crate::KernelPlace) -> Frame {
        use crate::KernelPlace as P;
        match place {
            P::NoKernelMap | P::Guest => self.symbolize_kernel(addr),
            P::Unmapped => {
                // perf's map of the core kernel reaches past the recorded `_etext` to the
                // end of the last core kallsyms symbol (`.rodata`'s `__start_rodata` ...,
                // which ends a page after its page): its symbols name those addresses.
                let f = self.symbolize_kernel(addr);
                if f.symbol.is_some() && f.dso == self.kernel_dso {
                    return f;
                }
                unknown(addr, self.unknown_dso.clone(), UnknownReason::NoMapping)
            }
            P::Ksymbol(k) => Frame {
                address: addr,
                symbol: Some(Symbol {
                    name: k.name.clone(),
                    start: k.start,
                    size: k.end - k.start,
                    offset: addr - k.start,
                    object: false,
                }),
                dso: k.name.clone(),
                srcline: None,
                inlined: Vec::new(),
                unknown_reason: None,
            },
            P::Core => {
                let f = self.symbolize_kernel(addr);
                match &f.symbol {
                    // A module's symbol where the recording maps the core kernel: perf
                    // moves it to that module (or drops it), and the core symbol before
                    // it ends where it starts.
                    Some(_) if f.dso != self.kernel_dso => unknown(
                        addr,
                        self.kernel_dso.clone(),
                        UnknownReason::NoSymbolAtAddress,
                    ),
                    None if f.unknown_reason == Some(UnknownReason::NoMapping) => unknown(
                        addr,
                        self.kernel_dso.clone(),
                        UnknownReason::NoSymbolAtAddress,
                    ),
                    _ => f,
                }
            }
            P::Module { name, .. } => {
                let mut f = self.symbolize_kernel(addr);
                if f.symbol.is_some() && *f.dso == **name {
                    f.dso = name.clone();
                    return f;
                }
                let reason = match f.unknown_reason {
                    Some(
                        r @ (UnknownReason::KernelHidden | UnknownReason::KernelSymbolsUnavailable),
                    ) => r,
                    _ => UnknownReason::NoSymbolAtAddress,
                };
                unknown(addr, name.clone(), reason)
            }
        }
    }

    /// Symbolize an address of anonymous memory through `PERF_MAP_DIR/perf-PID.map`;
    /// `missing` is the reason given when the map has no entry.
    pub fn symbolize_jit(&mut self, pid: u32, addr: u64, missing: UnknownReason) -> Frame {
        let dir = &self.opts.perf_map_dir;
        let diagnostics = &mut self.diagnostics;
        let (name, map) = self.jit.entry(pid).or_insert_with(|| {
            let path = dir.join(format!("perf-{pid}.map"));
            let map = if path.exists() {
                match PerfMap::from_file(&path) {
                    Ok(m) => Some(m),
                    Err(e) => {
                        diagnostics.push(format!(
                            "JIT map ignored: {}",
                            crate::error::with_causes(&e)
                        ));
                        None
                    }
                }
            } else {
                None
            };
            // perf's long name for the dso, which `script` prints; reports show the
            // short `[JIT] tid PID` (see `dso_short_name`).
            (Arc::from(path.display().to_string()), map)
        });
        match map.as_ref().and_then(|m| m.find(addr)) {
            Some(s) => Frame {
                address: addr,
                symbol: Some(Symbol {
                    name: s.name.clone(),
                    start: s.start,
                    size: s.size,
                    offset: addr - s.start,
                    object: false,
                }),
                dso: name.clone(),
                srcline: None,
                inlined: Vec::new(),
                unknown_reason: None,
            },
            None => {
                let dso = if missing == UnknownReason::NoMapping {
                    self.unknown_dso.clone()
                } else {
                    name.clone()
                };
                unknown(addr, dso, missing)
            }
        }
    }

    /// Look up the loaded file of a mapping (unwinding reuses the symbolizer's file cache).
    pub(crate) fn dso_for(&mut self, m: &Mapping) -> Option<&Dso> {
        let i = self.slot_for(m);
        self.slots[i].dso.as_deref().ok()
    }

    /// The loaded file of a mapping, to change (its DWARF loaded on demand), and where to
    /// look for debug files; or why there is none.
    pub(crate) fn dso_mut(
        &mut self,
        m: &Mapping,
    ) -> (Result<&mut Dso, UnknownReason>, &SearchPaths) {
        let i = self.slot_for(m);
        let dso = match &mut self.slots[i].dso {
            Ok(d) => Ok(&mut **d),
            Err(r) => Err(*r),
        };
        (dso, &self.search)
    }

    /// How many distinct files have been loaded (or tried).
    pub fn files_loaded(&self) -> usize {
        self.slots.len()
    }
}

fn unknown(addr: u64, dso: Arc<str>, reason: UnknownReason) -> Frame {
    Frame {
        address: addr,
        symbol: None,
        dso,
        srcline: None,
        inlined: Vec::new(),
        unknown_reason: Some(reason),
    }
}

fn srcline_of(loc: &addr2line::Location<'_>) -> Option<SrcLine> {
    Some(SrcLine {
        file: Arc::from(loc.file?),
        line: loc.line.unwrap_or(0),
    })
}

fn resolve(dso: &mut Dso, vaddr: u64, opts: &Options, whole_chain: bool) -> Resolved {
    let (symbol, reason) = match &mut dso.symbols {
        None => (None, Some(UnknownReason::NoSymbols)),
        Some(t) => match t.find(vaddr) {
            Some(i) => {
                let (start, size) = t.range(i);
                (
                    Some(Symbol {
                        name: t.name(i),
                        start,
                        size,
                        offset: vaddr - start,
                        object: t.is_object(i),
                    }),
                    None,
                )
            }
            None => (None, Some(UnknownReason::NoSymbolAtAddress)),
        },
    };
    // Outside every function of an executable section, perf's whole table still names
    // the address: code run from a data object (`.data` made executable), a function of
    // a data section. (Not a zero-sized symbol stretched past its section: perf 6.1 left
    // an address past a program's `_fini` unnamed on the corpus's `sys-g` recording.)
    let (symbol, reason) = match (symbol, reason) {
        // (In an executable section the code table already holds every sized symbol:
        // only addresses outside them need the whole table, built on their first miss.)
        (None, Some(r @ (UnknownReason::NoSymbolAtAddress | UnknownReason::NoSymbols)))
            if !dso.in_exec_section(vaddr) =>
        {
            match dso.whole_table_symbol(vaddr, opts.demangling(), true) {
                Some(s) => (Some(s), None),
                None => (None, Some(r)),
            }
        }
        other => other,
    };
    let mut srcline = None;
    let mut inlined = Vec::new();
    if opts.srcline || opts.inline || whole_chain {
        if matches!(dso.dwarf, DwarfState::NotLoaded) {
            let file = if dso.binary.has_debug_info {
                Some(&dso.binary)
            } else {
                dso.debug.as_ref().filter(|d| d.has_debug_info)
            };
            dso.dwarf = match file.and_then(dwarf_context) {
                Some(c) => DwarfState::Loaded(Box::new(c)),
                None => DwarfState::Missing,
            };
        }
        if let DwarfState::Loaded(ctx) = &dso.dwarf {
            if opts.inline || whole_chain {
                if let Ok(mut frames) = ctx.find_frames(vaddr).skip_all_loads() {
                    let mut chain = Vec::new();
                    let mut names = Vec::new();
                    while let Ok(Some(f)) = frames.next() {
                        let raw: Option<Arc<str>> = f
                            .function
                            .as_ref()
                            .and_then(|n| n.raw_name().ok())
                            .map(|n| Arc::from(n.as_ref()));
                        let function = raw.as_ref().map(|n| match opts.demangling() {
                            crate::Demangling::Off => n.clone(),
                            how => Arc::from(how.apply(n)),
                        });
                        let line = f.location.as_ref().and_then(srcline_of);
                        if whole_chain {
                            names.push(crate::a2l_names::ChainName {
                                die: f.dw_die_offset.map(|o| o.0),
                                raw,
                                name: function.clone(),
                            });
                        }
                        chain.push(InlinedFrame {
                            function,
                            srcline: line,
                        });
                    }
                    if whole_chain {
                        dso.a2l_names.rename(
                            ctx,
                            vaddr,
                            &mut names,
                            symbol.as_ref().map(|s| (&s.name, s.start)),
                        );
                        for (c, n) in chain.iter_mut().zip(names) {
                            c.function = n.name;
                        }
                    }
                    srcline = chain.first().and_then(|f| f.srcline.clone());
                    if whole_chain {
                        inlined = chain;
                    } else if chain.len() > 1 {
                        chain.pop();
                        inlined = chain;
                    }
                }
            } else if let Ok(Some(loc)) = ctx.find_location(vaddr) {
                srcline = srcline_of(&loc);
            }
        }
        // The line table's file as binutils 2.40 reads it (`a2l_file_zero`).
        if let (Some(line), DwarfState::Loaded(ctx)) = (&mut srcline, &dso.dwarf)
            && let Some(unit) = ctx.find_dwarf_and_unit(vaddr).skip_all_loads()
            && let Some(key) = unit.header.offset().as_debug_info_offset()
        {
            let fz = dso
                .file_zero
                .entry(key.0)
                .or_insert_with(|| crate::a2l_file_zero::FileZero::of(unit));
            if let Some(file) = fz.as_ref().and_then(|f| f.rename(vaddr, &line.file)) {
                if let Some(first) = inlined.first_mut().and_then(|f| f.srcline.as_mut())
                    && first.file == line.file
                    && first.line == line.line
                {
                    first.file = file.clone();
                }
                line.file = file;
            }
        }
        // Where DWARF gives no line, perf's `addr2line` child still names a file (line 0)
        // from the symbol table of the file it reads (the debug file, if any).
        let named = dso
            .binary
            .path
            .to_str()
            .is_some_and(|p| !p.starts_with('['));
        if opts.srcline && srcline.is_none() && named {
            let table = dso.a2l_symtab.get_or_insert_with(|| {
                let file = dso.debug.as_ref().unwrap_or(&dso.binary);
                crate::a2l_symtab::A2lSymtab::build(file.bytes.bytes())
            });
            if let Some(file) = table.as_ref().and_then(|t| t.file_of(vaddr)) {
                srcline = Some(SrcLine { file, line: 0 });
            }
        }
    }
    Resolved {
        symbol,
        srcline,
        inlined,
        reason,
    }
}

/// This process's vDSO image, read from `/proc/self/mem` (the kernel maps the same image
/// into every process, so it stands for a recorded `[vdso]` of this kernel when the build
/// ids agree or none was recorded).
fn own_vdso(build_id: Option<&[u8]>) -> Option<ElfFile> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let entries = crate::maps::parse_proc_maps(&maps, "/proc/self/maps").ok()?;
    let v = entries.iter().find(|e| e.mapping.path == "[vdso]")?;
    let len = usize::try_from(v.mapping.end - v.mapping.start).ok()?;
    let mut f = std::fs::File::open("/proc/self/mem").ok()?;
    f.seek(SeekFrom::Start(v.mapping.start)).ok()?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf).ok()?;
    let elf = ElfFile::from_bytes(PathBuf::from("[vdso]"), FileBytes::from_vec(buf))?;
    match (
        build_id.filter(|b| b.iter().any(|&x| x != 0)),
        &elf.build_id,
    ) {
        (Some(want), Some(have)) if !build_id_matches(want, have) => None,
        _ => Some(elf),
    }
}
