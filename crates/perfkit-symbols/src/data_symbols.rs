//! Data objects of an ELF file (`STT_OBJECT` symbols: globals and statics in `.data`,
//! `.bss`, `.rodata`; and labels in data sections), for naming data addresses as perf does (`perf script -F addr,sym`
//! on page-fault samples: `small_data+0x40`).
//!
//! perf keeps objects in one table with the functions (its `elf_sym__filter` takes
//! `STT_OBJECT` too, and labels of data and text sections). perfkit's code table stays as
//! it is (code lookups are by far the most common); this second table is perf's whole
//! one, built only when a data address is asked for and consulted when the code table
//! has nothing: its sizes follow perf's `symbols__fixup_end` over every symbol (a
//! zero-sized one runs to the next symbol of either kind: `_fini+0x52e` names a data
//! address past the last function), its aliases perf's `symbols__fixup_duplicate`.

use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};

use crate::demangle::demangle;
use crate::elf::ElfFile;

/// One object: start, size, name as in the file.
struct Entry {
    start: u64,
    size: u64,
    name: Box<str>,
}

/// perf's table of one ELF symbol table (functions, objects, labels), sorted by address.
pub(crate) struct DataSymbols {
    entries: Vec<Entry>,
    demangle: bool,
}

/// How an alias ranks (smaller is better), as perf's `choose_best_symbol`: sized, not
/// weak, global, fewer leading underscores, longer name.
type Rank = (bool, bool, bool, usize, std::cmp::Reverse<usize>);

impl DataSymbols {
    /// Objects of `.symtab` (`dynamic` false) or `.dynsym` of `file`; `None` when it has
    /// none.
    pub fn build(file: &ElfFile, dynamic: bool, demangle: bool) -> Option<DataSymbols> {
        let obj = object::File::parse(file.bytes.bytes()).ok()?;
        let syms: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
            Box::new(obj.dynamic_symbols())
        } else {
            Box::new(obj.symbols())
        };
        // perf's single table in symbol-table order: functions and objects.
        let mut raw: Vec<(u64, u64, Rank, Box<str>, bool)> = Vec::new();
        for s in syms {
            let SymbolSection::Section(idx) = s.section() else {
                continue;
            };
            let Ok(name) = s.name() else { continue };
            let data = match s.kind() {
                SymbolKind::Text => false,
                SymbolKind::Data => true,
                // Labels (`STT_NOTYPE`: `_edata`, `__data_start`) in a section whose name
                // says text or data, as perf's elf_sec__filter.
                SymbolKind::Unknown => {
                    let sec = obj.section_by_index(idx).ok();
                    match sec.as_ref().and_then(|s| s.name().ok()) {
                        Some(n) if n.contains("data") => true,
                        Some(n) if n.contains("text") => false,
                        _ => continue,
                    }
                }
                _ => continue,
            };
            if name.is_empty() {
                continue;
            }
            let leading = name.bytes().take_while(|&c| c == b'_').count();
            let rank = (
                false,
                s.is_weak(),
                !s.is_global() || s.is_weak(),
                leading,
                std::cmp::Reverse(name.len()),
            );
            raw.push((s.address(), s.size(), rank, name.into(), data));
        }
        if !raw.iter().any(|e| e.4) {
            return None;
        }
        // Ties keep the file's order, as perf's tree inserts them.
        raw.sort_by_key(|e| e.0);
        // symbols__fixup_end first: a zero-sized symbol runs to the next one (itself
        // zero-sized when that one starts at the same address), the last one to the page
        // after its start's page.
        for i in 0..raw.len() {
            if raw[i].1 == 0 {
                let start = raw[i].0;
                raw[i].1 = match raw.get(i + 1) {
                    Some(next) => next.0 - start,
                    None => ((start + 0xfff) & !0xfff) + 0x1000 - start,
                };
            }
            raw[i].2.0 = raw[i].1 == 0;
        }
        // Then symbols__fixup_duplicate: of the symbols at one address the best stays (the
        // first on a tie).
        let mut entries = Vec::new();
        let mut i = 0;
        while i < raw.len() {
            let j = i + raw[i..].iter().take_while(|e| e.0 == raw[i].0).count();
            let best = (i..j).min_by_key(|&k| &raw[k].2).unwrap_or(i);
            let (start, size, _, name, _) = std::mem::replace(
                &mut raw[best],
                (
                    0,
                    0,
                    (false, false, false, 0, std::cmp::Reverse(0)),
                    "".into(),
                    false,
                ),
            );
            entries.push(Entry { start, size, name });
            i = j;
        }
        Some(DataSymbols { entries, demangle })
    }

    /// The object covering `vaddr`: its name (demangled unless turned off), start and size.
    pub fn find(&self, vaddr: u64) -> Option<(Arc<str>, u64, u64)> {
        let i = self
            .entries
            .partition_point(|e| e.start <= vaddr)
            .checked_sub(1)?;
        let e = &self.entries[i];
        if vaddr - e.start >= e.size {
            return None;
        }
        let name: Arc<str> = if self.demangle {
            demangle(&e.name).into()
        } else {
            Arc::from(&*e.name)
        };
        Some((name, e.start, e.size))
    }
}
