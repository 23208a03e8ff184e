//! Kernel symbols from a vmlinux ELF file (`perf script/report -k FILE`): the function
//! symbols and text labels of its symbol table, sized as perf sizes them (`st_size`, a
//! zero-sized one running to the next symbol), used in place of kallsyms for the core
//! kernel.
//!
//! perf takes the file only when its build id is the recorded kernel's (when the
//! recording has one); otherwise kernel addresses stay unnamed. [`build_id`] gives the
//! caller what it needs to make that check.

use crate::perf_fixup::{RawSymbol, fixup, rank};
use std::path::Path;
use std::sync::Arc;

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};

use crate::elf::ElfFile;
use crate::error::Error;
use crate::kallsyms::{Kallsyms, KernelSymbol};

fn open(path: &Path) -> Result<ElfFile, Error> {
    if let Err(source) = std::fs::metadata(path) {
        return Err(Error::Io {
            path: path.to_owned(),
            source,
        });
    }
    ElfFile::open(path).ok_or_else(|| Error::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not an ELF file"),
    })
}

/// The build id of the vmlinux at `path` (`None` when it has none).
pub fn build_id(path: &Path) -> Result<Option<Vec<u8>>, Error> {
    Ok(open(path)?.build_id)
}

/// The function symbols of the vmlinux at `path`, as kernel symbols.
pub fn symbols(path: &Path) -> Result<Kallsyms, Error> {
    let file = open(path)?;
    let obj = object::File::parse(file.bytes.bytes()).map_err(|e| Error::Io {
        path: path.to_owned(),
        source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
    })?;
    // (start, size, rank, name) in symbol-table order.
    let mut raw: Vec<RawSymbol<&str>> = Vec::new();
    for s in obj.symbols() {
        let SymbolSection::Section(idx) = s.section() else {
            continue;
        };
        let Ok(name) = s.name() else { continue };
        if name.is_empty() {
            continue;
        }
        let text_section = || {
            obj.section_by_index(idx)
                .ok()
                .and_then(|sec| sec.name().ok().map(|n| n.contains("text")))
                .unwrap_or(false)
        };
        match s.kind() {
            SymbolKind::Text => {}
            SymbolKind::Unknown if text_section() => {}
            _ => continue,
        }
        let rank = rank(name, s.is_weak(), s.is_global());
        raw.push((s.address(), s.size(), rank, name));
    }
    raw.sort_by_key(|e| e.0);
    // perf's symbols__fixup_end, then symbols__fixup_duplicate.
    let mut out = Vec::new();
    for k in fixup(&mut raw) {
        let (start, size, _, name) = raw[k];
        out.push(KernelSymbol {
            start,
            size,
            name: Arc::from(name),
            module: None,
            // Functions only are kept (text symbols and labels in text).
            object: false,
        });
    }
    Ok(Kallsyms::from_symbols(out))
}
