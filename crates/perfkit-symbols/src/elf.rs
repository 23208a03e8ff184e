//! One ELF file: build id, loadable segments, symbol tables, debug link, DWARF.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use object::{
    Object, ObjectSection, ObjectSegment, ObjectSymbol, ObjectSymbolTable, SectionFlags,
    SectionIndex, SymbolKind, SymbolSection,
};

use crate::demangle::Demangling;
use crate::filemap::FileBytes;

/// A `PT_LOAD` program header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub offset: u64,
    pub filesz: u64,
    pub vaddr: u64,
    pub memsz: u64,
}

/// What the symbolizer keeps of an ELF file after one parse of its headers.
pub(crate) struct ElfFile {
    pub path: PathBuf,
    pub bytes: Arc<FileBytes>,
    pub build_id: Option<Vec<u8>>,
    pub segments: Vec<Segment>,
    pub debuglink: Option<(Vec<u8>, u32)>,
    pub has_symtab: bool,
    pub has_dynsym: bool,
    pub has_debug_info: bool,
}

impl ElfFile {
    /// Map and parse `path`; `None` if unreadable or not ELF.
    pub fn open(path: &Path) -> Option<ElfFile> {
        let bytes = FileBytes::open(path).ok()?;
        ElfFile::from_bytes(path.to_owned(), bytes)
    }

    pub fn from_bytes(path: PathBuf, bytes: Arc<FileBytes>) -> Option<ElfFile> {
        let obj = object::File::parse(bytes.bytes()).ok()?;
        if !matches!(obj, object::File::Elf32(_) | object::File::Elf64(_)) {
            return None;
        }
        let build_id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
        let debuglink = obj
            .gnu_debuglink()
            .ok()
            .flatten()
            .map(|(n, crc)| (n.to_vec(), crc));
        let segments = obj
            .segments()
            .map(|s| {
                let (offset, filesz) = s.file_range();
                Segment {
                    offset,
                    filesz,
                    vaddr: s.address(),
                    memsz: s.size(),
                }
            })
            .collect();
        let has_symtab = obj
            .symbols()
            .any(|s| s.kind() == SymbolKind::Text && s.is_definition());
        // A table perf loads at least one symbol from (a function or an object): perf names
        // the PLT stubs only then, so a stripped program that exports nothing has none.
        let has_dynsym = obj
            .dynamic_symbols()
            .any(|s| s.is_definition() && matches!(s.kind(), SymbolKind::Text | SymbolKind::Data));
        let has_debug_info = obj.has_debug_symbols();
        drop(obj);
        Some(ElfFile {
            path,
            bytes,
            build_id,
            segments,
            debuglink,
            has_symtab,
            has_dynsym,
            has_debug_info,
        })
    }

    /// File offset → ELF virtual address through the `PT_LOAD` headers.
    pub fn offset_to_vaddr(&self, off: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|s| s.offset <= off && off - s.offset < s.filesz.max(1))
            .or_else(|| {
                self.segments
                    .iter()
                    .find(|s| s.offset <= off && off - s.offset < s.memsz)
            })
            .map(|s| s.vaddr + (off - s.offset))
    }

    /// The `PT_LOAD` segment that overlaps the file range `off..off + len` the most: the
    /// segment a mapping of that range holds (a mapping starts at a page boundary that can
    /// lie before its segment's first byte).
    pub fn segment_for_range(&self, off: u64, len: u64) -> Option<Segment> {
        let end = off.saturating_add(len);
        self.segments
            .iter()
            .copied()
            .map(|s| {
                let s_end = s.offset.saturating_add(s.filesz.max(1));
                (end.min(s_end).saturating_sub(off.max(s.offset)), s)
            })
            .filter(|(overlap, _)| *overlap > 0)
            .max_by_key(|(overlap, _)| *overlap)
            .map(|(_, s)| s)
    }
}

/// Compare a recorded build id (perf pads to 20 bytes with zeros) with a file's.
pub(crate) fn build_id_matches(recorded: &[u8], actual: &[u8]) -> bool {
    if recorded.len() >= actual.len() {
        recorded[..actual.len()] == *actual && recorded[actual.len()..].iter().all(|&b| b == 0)
    } else {
        false
    }
}

/// Hex form of a build id, without perf's zero padding.
pub fn build_id_hex(id: &[u8]) -> String {
    let mut end = id.len();
    // perf pads 16-byte (md5/uuid) ids to 20 bytes; strip a zero tail of exactly that kind.
    if id.len() == 20 && id[16..].iter().all(|&b| b == 0) {
        end = 16;
    }
    id[..end].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Clone, Copy, Debug)]
struct SymEntry {
    start: u64,
    size: u64,
    /// Where the name is ([`name_bytes`]).
    name_off: u64,
    name_len: u32,
    /// An `STT_OBJECT` (code in an executable section that its file calls data: a
    /// hand-written table or routine), which perf's report row names with an offset.
    object: bool,
}

/// A [`SymEntry::name_off`] with this bit is an offset into [`SymbolTable::own_names`];
/// without it, an offset into the table's (mapped) file.
const OWN_NAME: u64 = 1 << 63;

/// The bytes of a name at `off` (see [`OWN_NAME`]) in `file` or `own`.
fn name_bytes<'a>(file: &'a [u8], own: &'a [u8], off: u64, len: u32) -> &'a [u8] {
    let (bytes, off) = if off & OWN_NAME != 0 {
        (own, off & !OWN_NAME)
    } else {
        (file, off)
    };
    usize::try_from(off)
        .ok()
        .and_then(|o| bytes.get(o..o.checked_add(len as usize)?))
        .unwrap_or_default()
}

/// A function symbol table sorted by address, demangled on first use. It also holds the
/// data objects (`STT_OBJECT`) of executable sections: perf's table keeps objects beside
/// functions, so an address there is the object's, and a zero-sized function before it
/// runs only up to it. The names stay in
/// the mapped file: a huge library's string table is read where its names are looked up,
/// not copied (only the `name@plt` stubs' names, made here, are kept in `own_names`).
pub(crate) struct SymbolTable {
    entries: Vec<SymEntry>,
    file: Arc<crate::filemap::FileBytes>,
    own_names: Vec<u8>,
    demangled: HashMap<u32, Arc<str>>,
    demangle: Demangling,
    /// Aliases at one address that rank alike but for their demangled names, by entry:
    /// which one names the entry is decided when the entry is first named, not when the
    /// table is read (a new binary's load then demangles nothing; a large C++ or Rust
    /// library has tens of thousands of such aliases).
    ties: HashMap<u32, Box<[RawSym]>>,
}

/// How an alias ranks (smaller is better): untyped, unsized, weak, not global, leading
/// underscores, and the name's length (longer is better).
type Rank = (bool, bool, bool, bool, u8, std::cmp::Reverse<usize>);

/// A symbol read from a table: (start, size, rank, name offset ([`name_bytes`]), name
/// length, end of its section, its position in the table, whether it is an object).
type RawSym = (u64, u64, Rank, u64, u32, u64, u32, bool);

/// PLT stubs rank after every symbol at their address.
const PLT_RANK: Rank = (true, true, true, true, u8::MAX, std::cmp::Reverse(0));

impl SymbolTable {
    /// Build from `.symtab` (`dynamic` false) or `.dynsym` (`dynamic` true) of `file`, with
    /// the PLT stubs of `runtime` (the file that is mapped: `file` itself, or the stripped
    /// binary whose separate debug file `file` is).
    pub fn build(
        file: &ElfFile,
        dynamic: bool,
        runtime: &ElfFile,
        demangle: Demangling,
    ) -> Option<SymbolTable> {
        let obj = object::File::parse(file.bytes.bytes()).ok()?;
        let runtime_obj = if std::ptr::eq(file, runtime) {
            None
        } else {
            Some(object::File::parse(runtime.bytes.bytes()).ok()?)
        };
        let mut exec_cache: HashMap<SectionIndex, Option<(u64, u64)>> = HashMap::new();
        let mut section_exec = |idx: SectionIndex| -> Option<(u64, u64)> {
            *exec_cache.entry(idx).or_insert_with(|| {
                let sec = obj.section_by_index(idx).ok()?;
                let exec = match sec.flags() {
                    SectionFlags::Elf { sh_flags } => {
                        sh_flags & u64::from(object::elf::SHF_EXECINSTR) != 0
                    }
                    _ => false,
                };
                exec.then(|| (sec.address(), sec.address() + sec.size()))
            })
        };
        let mut raw: Vec<RawSym> = Vec::new();
        let mut names = Vec::new();
        let base = file.bytes.bytes().as_ptr() as usize;
        let file_len = file.bytes.bytes().len();
        let syms: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
            Box::new(obj.dynamic_symbols())
        } else {
            Box::new(obj.symbols())
        };
        // Named data objects: perf's table keeps them beside the functions (its
        // elf_sym__filter takes STT_OBJECT too), so they count for the PLT rule below.
        let mut objects = 0usize;
        for s in syms {
            let SymbolSection::Section(idx) = s.section() else {
                continue;
            };
            let kind = s.kind();
            if kind == SymbolKind::Data && s.name_bytes().is_ok_and(|n| !n.is_empty()) {
                objects += 1;
            }
            if !matches!(
                kind,
                SymbolKind::Text | SymbolKind::Unknown | SymbolKind::Data
            ) {
                continue;
            }
            let Some((_, sec_end)) = section_exec(idx) else {
                continue;
            };
            let Ok(name) = s.name_bytes() else { continue };
            // Skip empty names and ARM/AArch64 mapping symbols ($x, $d).
            if name.is_empty() || name[0] == b'$' {
                continue;
            }
            // Among aliases at one address perf keeps (choose_best_symbol): a sized one,
            // a non-weak one, a global one, the one with fewer leading underscores, the
            // longest name. Functions (and objects, which perf does not tell apart from
            // them) come before untyped labels.
            let leading = name.iter().take_while(|&&c| c == b'_').count().min(255) as u8;
            let rank = (
                kind == SymbolKind::Unknown,
                s.size() == 0,
                s.is_weak(),
                !s.is_global() || s.is_weak(),
                leading,
                std::cmp::Reverse(name.len()),
            );
            let Ok(len) = u32::try_from(name.len()) else {
                continue;
            };
            // The name where it is in the mapped file (a copy only if it is not there).
            let off = match (name.as_ptr() as usize).checked_sub(base) {
                Some(o) if o + name.len() <= file_len => o as u64,
                _ => {
                    let o = names.len() as u64 | OWN_NAME;
                    names.extend_from_slice(name);
                    o
                }
            };
            raw.push((
                s.address(),
                s.size(),
                rank,
                off,
                len,
                sec_end,
                raw.len() as u32,
                kind == SymbolKind::Data,
            ));
        }
        // perf's `name@plt` symbols for the PLT stubs, which no symbol table covers: only
        // when the table gave symbols, functions or data objects (perf's dso__load
        // synthesizes them only then: a stripped dash, whose .dynsym defines only
        // `environ`, gets them).
        let plt = if raw.is_empty() && objects == 0 {
            Vec::new()
        } else {
            plt_symbols(runtime_obj.as_ref().unwrap_or(&obj))
        };
        for (start, size, name) in plt {
            let Ok(len) = u32::try_from(name.len() + 4) else {
                continue;
            };
            let off = names.len() as u64 | OWN_NAME;
            names.extend_from_slice(name);
            names.extend_from_slice(b"@plt");
            raw.push((
                start,
                size,
                PLT_RANK,
                off,
                len,
                start + size,
                raw.len() as u32,
                false,
            ));
        }
        if raw.is_empty() {
            return None;
        }
        // At one address keep the best (the rank orders aliases as perf does).
        raw.sort_by_key(|&(start, _, rank, ..)| (start, rank));
        let ties = if demangle != Demangling::Off {
            defer_ties(&mut raw, file.bytes.bytes(), &names, demangle)
        } else {
            HashMap::new()
        };
        raw.dedup_by_key(|e| e.0);
        let mut entries: Vec<SymEntry> = Vec::with_capacity(raw.len());
        for i in 0..raw.len() {
            let (start, mut size, _, name_off, name_len, sec_end, _, object) = raw[i];
            if size == 0 {
                // perf's symbols__fixup_end: a zero-sized symbol runs to the next one (or to
                // the end of its section).
                let next = raw.get(i + 1).map_or(sec_end, |n| n.0.min(sec_end));
                size = next.saturating_sub(start).max(1);
            }
            entries.push(SymEntry {
                start,
                size,
                name_off,
                name_len,
                object,
            });
        }
        names.shrink_to_fit();
        Some(SymbolTable {
            entries,
            file: file.bytes.clone(),
            own_names: names,
            demangled: HashMap::new(),
            demangle,
            ties,
        })
    }

    /// The index of the symbol covering `vaddr`.
    pub fn find(&self, vaddr: u64) -> Option<usize> {
        let i = self
            .entries
            .partition_point(|e| e.start <= vaddr)
            .checked_sub(1)?;
        let e = &self.entries[i];
        (vaddr - e.start < e.size).then_some(i)
    }

    /// Start and size of symbol `i`.
    pub fn range(&self, i: usize) -> (u64, u64) {
        let e = &self.entries[i];
        (e.start, e.size)
    }

    /// Is symbol `i` a data object (`STT_OBJECT`) rather than a function or label?
    pub fn is_object(&self, i: usize) -> bool {
        self.entries[i].object
    }

    /// The addresses for which [`find`](Self::find) answers `i`: from its start to its
    /// end or the next symbol's start, whichever comes first.
    pub fn extent(&self, i: usize) -> (u64, u64) {
        let e = &self.entries[i];
        let end = e.start.saturating_add(e.size);
        match self.entries.get(i + 1) {
            Some(n) => (e.start, end.min(n.start)),
            None => (e.start, end),
        }
    }

    /// The (demangled) name of symbol `i`.
    pub fn name(&mut self, i: usize) -> Arc<str> {
        if let Some(n) = self.demangled.get(&(i as u32)) {
            return n.clone();
        }
        if let Some(mut group) = self.ties.remove(&(i as u32)) {
            prefer_longer_demangled(
                &mut group,
                self.file.bytes(),
                &self.own_names,
                self.demangle,
            );
            self.entries[i].name_off = group[0].3;
            self.entries[i].name_len = group[0].4;
        }
        let e = self.entries[i];
        let raw = String::from_utf8_lossy(name_bytes(
            self.file.bytes(),
            &self.own_names,
            e.name_off,
            e.name_len,
        ));
        let name: Arc<str> = Arc::from(self.demangle.apply(&raw));
        self.demangled.insert(i as u32, name.clone());
        name
    }
}

/// The aliases of `raw` (sorted by address and rank) whose order
/// [`prefer_longer_demangled`] decides, kept by the index their address will have once
/// `raw` is deduplicated, for [`SymbolTable::name`] to decide on first use. A group whose
/// aliases differ in size is decided now: its size is the chosen one's, and lookups need
/// it before any name.
fn defer_ties(
    raw: &mut [RawSym],
    file: &[u8],
    own: &[u8],
    how: Demangling,
) -> HashMap<u32, Box<[RawSym]>> {
    let mut ties = HashMap::new();
    let (mut i, mut entry) = (0, 0u32);
    while i < raw.len() {
        let (j, tied) = alias_group(raw, i);
        if tied > 1 {
            let group = &mut raw[i..i + tied];
            if group.iter().all(|e| e.1 == group[0].1) {
                ties.insert(entry, Box::from(&*group));
            } else {
                prefer_longer_demangled(group, file, own, how);
            }
        }
        i = j;
        entry += 1;
    }
    ties
}

/// The aliases at `raw[i]`'s address (`raw` sorted by address and rank): where the next
/// address starts, and how many of them, from `i`, rank alike but for their names.
fn alias_group(raw: &[RawSym], i: usize) -> (usize, usize) {
    let (start, best) = (raw[i].0, raw[i].2);
    let j = i + raw[i..].iter().take_while(|e| e.0 == start).count();
    let tied = raw[i..j]
        .iter()
        .take_while(|e| (e.2.0, e.2.1, e.2.2, e.2.3) == (best.0, best.1, best.2, best.3))
        .count();
    (j, tied)
}

/// perf compares aliases' names as it prints them, demangled (its symbols are demangled
/// before `choose_best_symbol` sees them): among the aliases at one address that rank best
/// but for the name, move first the one whose demangled name has the fewest leading
/// underscores (`_ZNK4llvm10ModulePass...` has none, demangled, beside
/// `LLVMIsMultithreaded`), then the longest one (the first in symbol-table order on a tie,
/// as perf keeps it: LLVM's identical-code-folded destructors). Only shared addresses are
/// demangled.
fn prefer_longer_demangled(raw: &mut [RawSym], file: &[u8], own: &[u8], how: Demangling) {
    let mut i = 0;
    while i < raw.len() {
        let (j, tied) = alias_group(raw, i);
        if tied > 1 {
            let key = |e: &RawSym| {
                let name = how
                    .apply(&String::from_utf8_lossy(name_bytes(file, own, e.3, e.4)))
                    .into_owned();
                let leading = name.bytes().take_while(|&c| c == b'_').count();
                // Symbol-table order among the tied: the smaller sequence number came first.
                (
                    std::cmp::Reverse(leading),
                    name.len(),
                    std::cmp::Reverse(e.6),
                )
            };
            let pick = (i..i + tied).max_by_key(|&k| key(&raw[k])).unwrap_or(i);
            raw.swap(i, pick);
        }
        i = j;
    }
}

/// Synthesize `name@plt` symbols as perf 6.1 does: entry `i` of `.plt`, after a header as
/// long as one entry (x86_64: the section's `sh_entsize`; aarch64: a 32-byte header and
/// 16-byte entries), is named after `.rela.plt` relocation `i`'s `.dynsym` symbol, demangled
/// later (an `R_X86_64_IRELATIVE` slot has no symbol: perf calls it `@plt`). A `.plt` whose
/// `sh_entsize` is 0 (lld, BOLT) gives perf no usable entries, so none are named.
/// Entry `i` of `.plt.sec` (x86_64 with IBT), which perf 6.1 does not know, gets the same
/// name: there perfkit names stubs perf leaves unnamed. 64-bit little-endian only;
/// `.plt.got` stubs are not named.
fn plt_symbols<'a>(obj: &object::File<'a>) -> Vec<(u64, u64, &'a [u8])> {
    use object::read::elf::{ElfFile64, SectionHeader};
    let mut out = Vec::new();
    let object::File::Elf64(elf) = obj else {
        return out;
    };
    let elf: &ElfFile64<'a, object::Endianness> = elf;
    if !obj.is_little_endian() {
        return out;
    }
    let endian = elf.endian();
    let (Some(rela), Some(plt), Some(dynsym)) = (
        elf.section_by_name(".rela.plt"),
        elf.section_by_name(".plt"),
        elf.dynamic_symbol_table(),
    ) else {
        return out;
    };
    // perf checks that the relocations refer to .dynsym.
    let dynsym_index = elf.section_by_name(".dynsym").map(|s| s.index().0);
    if Some(rela.elf_section_header().sh_link(endian) as usize) != dynsym_index {
        return out;
    }
    let Ok(rela) = rela.data() else { return out };
    let (header, entry) = match obj.architecture() {
        object::Architecture::X86_64 => {
            let e = plt.elf_section_header().sh_entsize(endian);
            (e, e)
        }
        object::Architecture::Aarch64 => (32, 16),
        _ => return out,
    };
    let sec = elf
        .section_by_name(".plt.sec")
        .map(|s| (s.address(), s.size()));
    const SEC_ENTRY: u64 = 16;
    for (i, r) in rela.chunks_exact(24).enumerate() {
        let mut info = [0u8; 8];
        info.copy_from_slice(&r[8..16]);
        let sym = (u64::from_le_bytes(info) >> 32) as usize;
        let name: &[u8] = if sym == 0 {
            b""
        } else {
            match dynsym
                .symbol_by_index(object::SymbolIndex(sym))
                .and_then(|s| s.name_bytes())
            {
                Ok(n) => n,
                Err(_) => continue,
            }
        };
        let i = i as u64;
        if entry > 0 {
            out.push((plt.address() + header + i * entry, entry, name));
        }
        if let Some((base, size)) = sec
            && (i + 1) * SEC_ENTRY <= size
        {
            out.push((base + i * SEC_ENTRY, SEC_ENTRY, name));
        }
    }
    out
}

/// gimli reader over shared section copies (decompressed when `SHF_COMPRESSED`).
pub(crate) type DwarfReader = gimli::EndianArcSlice<gimli::RunTimeEndian>;

/// Build an addr2line context over the DWARF sections of `file`.
pub(crate) fn dwarf_context(file: &ElfFile) -> Option<addr2line::Context<DwarfReader>> {
    let obj = object::File::parse(file.bytes.bytes()).ok()?;
    let endian = if obj.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let load = |id: gimli::SectionId| -> Result<DwarfReader, gimli::Error> {
        let data: Arc<[u8]> = match obj.section_by_name(id.name()) {
            Some(sec) => match sec.uncompressed_data() {
                Ok(d) => Arc::from(&*d),
                Err(_) => Arc::from(&[][..]),
            },
            None => Arc::from(&[][..]),
        };
        Ok(gimli::EndianArcSlice::new(data, endian))
    };
    let dwarf = gimli::Dwarf::load(load).ok()?;
    addr2line::Context::from_dwarf(dwarf).ok()
}

/// CRC-32 (IEEE 802.3, reflected), the checksum `.gnu_debuglink` stores.
pub(crate) fn crc32(data: &[u8]) -> u32 {
    static TABLE: std::sync::OnceLock<[u32; 256]> = std::sync::OnceLock::new();
    let table = TABLE.get_or_init(|| {
        let mut t = [0u32; 256];
        for (i, slot) in t.iter_mut().enumerate() {
            let mut c = i as u32;
            for _ in 0..8 {
                c = if c & 1 != 0 {
                    0xEDB8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
            }
            *slot = c;
        }
        t
    });
    let mut crc = !0u32;
    for &b in data {
        crc = table[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_known_value() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn aliases_compare_demangled_lengths_and_keep_table_order_on_ties() {
        // Two folded destructors of equal demangled length (the first in the table wins,
        // as perf keeps it), and at another address a longer demangled name behind a
        // shorter mangled one.
        let names: Vec<&[u8]> = vec![
            b"_ZN12_GLOBAL__N_14AaaaD2Ev",
            b"_ZN12_GLOBAL__N_14BbbbD2Ev",
            b"_ZN1x3fooEv",
            b"_ZN2yy3fooEv",
        ];
        let mut arena = Vec::new();
        let mut raw = Vec::new();
        let rank: Rank = (false, false, false, true, 1, std::cmp::Reverse(0));
        for (i, n) in names.iter().enumerate() {
            let start = if i < 2 { 0x100 } else { 0x200 };
            raw.push((
                start,
                8,
                rank,
                arena.len() as u64,
                n.len() as u32,
                0x300,
                i as u32,
                false,
            ));
            arena.extend_from_slice(n);
        }
        let name =
            |e: &RawSym| String::from_utf8_lossy(name_bytes(&arena, &[], e.3, e.4)).into_owned();
        prefer_longer_demangled(&mut raw, &arena, &[], Demangling::Names);
        assert_eq!(name(&raw[0]), "_ZN12_GLOBAL__N_14AaaaD2Ev");
        assert_eq!(name(&raw[2]), "_ZN2yy3fooEv");
    }

    #[test]
    fn build_id_padding() {
        let id = [1u8, 2, 3, 4];
        assert!(build_id_matches(&[1, 2, 3, 4, 0, 0], &id));
        assert!(build_id_matches(&[1, 2, 3, 4], &id));
        assert!(!build_id_matches(&[1, 2, 3, 5], &id));
        assert!(!build_id_matches(&[1, 2, 3, 4, 0, 1], &id));
        assert!(!build_id_matches(&[1, 2], &id));
        let mut padded = vec![0xabu8; 16];
        padded.extend_from_slice(&[0; 4]);
        assert_eq!(build_id_hex(&padded), "ab".repeat(16));
    }
}
