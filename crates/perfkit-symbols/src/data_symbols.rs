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

use crate::perf_fixup::{RawSymbol, fixup, rank};
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};

use crate::demangle::Demangling;
use crate::elf::ElfFile;

/// One object: start, size, name as in the file.
struct Entry {
    start: u64,
    size: u64,
    name: Box<str>,
    /// `STT_OBJECT` (not a function, nor a label).
    object: bool,
    /// The file gives it a size (its extent is not perf's stretch to the next symbol).
    sized: bool,
}

/// What a symbol keeps through perf's passes: its name, whether it is data, an object,
/// and sized in the file.
type Kept = (Box<str>, bool, bool, bool);

/// perf's table of one ELF symbol table (functions, objects, labels), sorted by address.
pub(crate) struct DataSymbols {
    entries: Vec<Entry>,
    demangle: Demangling,
}

impl DataSymbols {
    /// Objects of `.symtab` (`dynamic` false) or `.dynsym` of `file`; `None` when it has
    /// none.
    pub fn build(file: &ElfFile, dynamic: bool, demangle: Demangling) -> Option<DataSymbols> {
        let obj = object::File::parse(file.bytes.bytes()).ok()?;
        let syms: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
            Box::new(obj.dynamic_symbols())
        } else {
            Box::new(obj.symbols())
        };
        // perf's single table in symbol-table order: functions and objects.
        let mut raw: Vec<RawSymbol<Kept>> = Vec::new();
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
            let rank = rank(name, s.is_weak(), s.is_global());
            let object = s.kind() == SymbolKind::Data;
            raw.push((
                s.address(),
                s.size(),
                rank,
                (name.into(), data, object, s.size() != 0),
            ));
        }
        if !raw.iter().any(|e| e.3.1) {
            return None;
        }
        // Ties keep the file's order, as perf's tree inserts them.
        raw.sort_by_key(|e| e.0);
        // symbols__fixup_end, then symbols__fixup_duplicate.
        let entries = fixup(&mut raw)
            .into_iter()
            .map(|k| Entry {
                start: raw[k].0,
                size: raw[k].1,
                name: std::mem::take(&mut raw[k].3.0),
                object: raw[k].3.2,
                sized: raw[k].3.3,
            })
            .collect();
        Some(DataSymbols { entries, demangle })
    }

    /// The object covering `vaddr`: its name (demangled unless turned off), start, size and
    /// whether it is an `STT_OBJECT`. With `sized_only`, only a symbol whose own size
    /// covers `vaddr` (not one stretched to the next).
    pub fn find(&self, vaddr: u64, sized_only: bool) -> Option<(Arc<str>, u64, u64, bool)> {
        let i = self
            .entries
            .partition_point(|e| e.start <= vaddr)
            .checked_sub(1)?;
        let e = &self.entries[i];
        if vaddr - e.start >= e.size || (sized_only && !e.sized) {
            return None;
        }
        let name: Arc<str> = self.demangle.apply(&e.name).into();
        Some((name, e.start, e.size, e.object))
    }
}
