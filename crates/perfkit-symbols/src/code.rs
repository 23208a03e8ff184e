//! A function's machine code and its source lines, for annotation: the same file the
//! symbolizer chose for the mapping (path if its build id matches, else perf's build-id
//! cache or `/usr/lib/debug`), so the instructions shown are the ones that ran.

use std::path::PathBuf;
use std::sync::Arc;

use object::Object;

use crate::elf::{ElfFile, dwarf_context};
use crate::locate::find_debug_file;
use crate::symbolizer::{DwarfState, Symbolizer};
use crate::types::{Mapping, SrcLine, Symbol, UnknownReason};

/// The machine a file's code is for, as far as annotation cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// x86-64.
    X86_64,
    /// AArch64.
    Aarch64,
    /// Anything else (ELF `e_machine`).
    Other(u16),
}

/// One function's code.
#[derive(Clone, Debug)]
pub struct FunctionCode {
    /// The symbol (`start` and `size` in the file's virtual addresses; `offset` 0).
    pub symbol: Symbol,
    /// The bytes of `start..start + size` (shorter when the file holds fewer: `.bss`-like).
    pub bytes: Vec<u8>,
    /// The file's machine.
    pub machine: Machine,
    /// The file read.
    pub file: PathBuf,
    /// Source lines from DWARF, as `(address, length, line)` ranges in address order; empty
    /// when not asked for or the file has no line table.
    pub lines: Vec<(u64, u64, SrcLine)>,
}

impl FunctionCode {
    /// The source line of the instruction at `vaddr`.
    pub fn line_at(&self, vaddr: u64) -> Option<&SrcLine> {
        let i = self.lines.partition_point(|(a, _, _)| *a <= vaddr);
        let (a, len, l) = self.lines.get(i.checked_sub(1)?)?;
        (vaddr - a < (*len).max(1)).then_some(l)
    }
}

fn vaddr_to_offset(f: &ElfFile, vaddr: u64) -> Option<(u64, u64)> {
    f.segments
        .iter()
        .find(|s| s.vaddr <= vaddr && vaddr - s.vaddr < s.filesz)
        .map(|s| (s.offset + (vaddr - s.vaddr), s.filesz - (vaddr - s.vaddr)))
}

fn machine_of(f: &ElfFile) -> Machine {
    match object::File::parse(f.bytes.bytes()).map(|o| o.architecture()) {
        Ok(object::Architecture::X86_64) => Machine::X86_64,
        Ok(object::Architecture::Aarch64) => Machine::Aarch64,
        _ => {
            // e_machine sits at byte 18 of every ELF header.
            let b = f.bytes.bytes();
            let m = b.get(18..20).map_or(0, |x| {
                if b.get(5) == Some(&2) {
                    u16::from_be_bytes([x[0], x[1]])
                } else {
                    u16::from_le_bytes([x[0], x[1]])
                }
            });
            Machine::Other(m)
        }
    }
}

impl Symbolizer {
    /// The code of the function covering `file_offset` in the file mapped by `mapping`
    /// (only its `path` and `build_id` matter), with DWARF source lines when `lines`.
    pub fn function_code(
        &mut self,
        mapping: &Mapping,
        file_offset: u64,
        lines: bool,
    ) -> Result<FunctionCode, UnknownReason> {
        let (dso, search) = self.dso_mut(mapping);
        let dso = dso?;
        let vaddr = dso
            .binary
            .offset_to_vaddr(file_offset)
            .ok_or(UnknownReason::OutsideSegments)?;
        let table = dso.symbols.as_mut().ok_or(UnknownReason::NoSymbols)?;
        let i = table.find(vaddr).ok_or(UnknownReason::NoSymbolAtAddress)?;
        let (start, size) = table.range(i);
        let name = table.name(i);
        let symbol = Symbol {
            name,
            start,
            size,
            offset: 0,
            object: false,
        };
        let bytes = match vaddr_to_offset(&dso.binary, start) {
            Some((off, avail)) => {
                let all = dso.binary.bytes.bytes();
                let off = off as usize;
                let len = size.min(avail) as usize;
                all.get(off..off.saturating_add(len))
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default()
            }
            None => Vec::new(),
        };
        let machine = machine_of(&dso.binary);
        let file = dso.binary.path.clone();
        let mut found = Vec::new();
        if lines {
            if matches!(dso.dwarf, DwarfState::NotLoaded) {
                if !dso.binary.has_debug_info && dso.debug.is_none() {
                    dso.debug = find_debug_file(&dso.binary, search);
                }
                let f = if dso.binary.has_debug_info {
                    Some(&dso.binary)
                } else {
                    dso.debug.as_ref().filter(|d| d.has_debug_info)
                };
                dso.dwarf = match f.and_then(dwarf_context) {
                    Some(c) => DwarfState::Loaded(Box::new(c)),
                    None => DwarfState::Missing,
                };
            }
            if let DwarfState::Loaded(ctx) = &dso.dwarf
                && let Ok(iter) = ctx.find_location_range(start, start + size.max(1))
            {
                for (addr, len, loc) in iter {
                    if let Some(file) = loc.file {
                        found.push((
                            addr,
                            len,
                            SrcLine {
                                file: Arc::from(file),
                                line: loc.line.unwrap_or(0),
                            },
                        ));
                    }
                }
                found.sort_by_key(|(a, _, _)| *a);
            }
        }
        Ok(FunctionCode {
            symbol,
            bytes,
            machine,
            file,
            lines: found,
        })
    }

    /// The name of the symbol at `vaddr` in `mapping`'s file, with the offset into it: for
    /// jump and call targets (`<hot+0x10>`).
    pub fn symbol_at_vaddr(&mut self, mapping: &Mapping, vaddr: u64) -> Option<Symbol> {
        let (dso, _) = self.dso_mut(mapping);
        let table = dso.ok()?.symbols.as_mut()?;
        let i = table.find(vaddr)?;
        let (start, size) = table.range(i);
        Some(Symbol {
            name: table.name(i),
            start,
            size,
            offset: vaddr - start,
            object: false,
        })
    }
}
