//! The source line binutils' `addr2line` gives an address its DWARF has no line for, which
//! perf 6.1 prints (perf asks an `addr2line -i -f` child for every srcline): BFD's
//! `elf_find_function` takes the nearest function-like symbol at or before the address in
//! the address's section, and names the file after the `STT_FILE` symbol before it in the
//! table (for a local symbol, or a global one no other symbol came between). `addr2line`
//! then prints `FILE:?` (`??:?` without a file), which perf reads as line 0:
//! `crtstuff.c:0` for code after `frame_dummy`, `:0` for ld.so's `_start` (its file symbol
//! has an empty name), `??:0` in a stripped program after its first `.dynsym` function.
//! Without such a symbol `addr2line` prints `??:0`, which perf takes for no answer.

use object::elf;
use object::read::elf::{ElfFile64, Sym};
use object::{Object, ObjectSection, ObjectSymbol, SymbolSection};
use std::sync::Arc;

/// One function-like symbol as BFD weighs it.
struct Candidate {
    section: usize,
    start: u64,
    /// `st_size`, or 1 for a zero-sized symbol (BFD's `maybe_function_sym`).
    size: u64,
    function: bool,
    notype: bool,
    file: Option<Arc<str>>,
}

/// The candidates of one file's table, sorted by section and start (table order kept
/// among equals, as BFD's first-seen wins a tie).
pub(crate) struct A2lSymtab {
    candidates: Vec<Candidate>,
    /// Code sections: (index, start, end). (perf asks `addr2line` about the
    /// file-relative address plus `.text`'s offset, which is the address itself in the
    /// code segment but not in others: an address in `.data` gets no answer there.)
    sections: Vec<(usize, u64, u64)>,
}

impl A2lSymtab {
    /// The table `addr2line` reads from `bytes`: `.symtab`, or `.dynsym` when the file has
    /// no regular symbols.
    pub fn build(bytes: &[u8]) -> Option<A2lSymtab> {
        let file = ElfFile64::<object::Endianness>::parse(bytes).ok()?;
        let endian = file.endian();
        let sections = file
            .sections()
            .filter(|s| match s.flags() {
                object::SectionFlags::Elf { sh_flags } => {
                    let code = u64::from(elf::SHF_ALLOC | elf::SHF_EXECINSTR);
                    sh_flags & code == code
                }
                _ => false,
            })
            .filter(|s| s.size() > 0)
            .map(|s| (s.index().0, s.address(), s.address() + s.size()))
            .collect();
        let regular = file.symbols().count() > 0;
        let syms: Box<
            dyn Iterator<Item = object::read::elf::ElfSymbol64<'_, '_, object::Endianness>>,
        > = if regular {
            Box::new(file.symbols())
        } else {
            Box::new(file.dynamic_symbols())
        };
        #[derive(PartialEq)]
        enum State {
            Nothing,
            Symbol,
            FileAfterSymbol,
        }
        let (mut file_name, mut state) = (None::<Arc<str>>, State::Nothing);
        let mut candidates = Vec::new();
        for s in syms {
            let raw = s.elf_symbol();
            let kind = raw.st_type();
            if kind == elf::STT_FILE {
                file_name = Some(Arc::from(s.name().unwrap_or("")));
                if state == State::Symbol {
                    state = State::FileAfterSymbol;
                }
                continue;
            }
            if state == State::Nothing {
                state = State::Symbol;
            }
            let SymbolSection::Section(idx) = s.section() else {
                continue;
            };
            if matches!(kind, elf::STT_OBJECT | elf::STT_SECTION | elf::STT_TLS) {
                continue;
            }
            let local = raw.st_bind() == elf::STB_LOCAL;
            let size = raw.st_size(endian);
            // (annobin's hidden local markers are not functions.)
            if size == 0
                && local
                && kind == elf::STT_NOTYPE
                && raw.st_visibility() == elf::STV_HIDDEN
            {
                continue;
            }
            let file = file_name
                .clone()
                .filter(|_| local || state != State::FileAfterSymbol);
            candidates.push(Candidate {
                section: idx.0,
                start: raw.st_value(endian),
                size: size.max(1),
                function: matches!(kind, elf::STT_FUNC | elf::STT_GNU_IFUNC),
                notype: kind == elf::STT_NOTYPE,
                file,
            });
        }
        candidates.sort_by_key(|c| (c.section, c.start));
        Some(A2lSymtab {
            candidates,
            sections,
        })
    }

    /// The file `addr2line` names `vaddr` after when DWARF has no line: `Some("??")` for a
    /// symbol without a file, `None` where it finds no symbol.
    pub fn file_of(&self, vaddr: u64) -> Option<Arc<str>> {
        let &(section, ..) = self
            .sections
            .iter()
            .find(|&&(_, start, end)| start <= vaddr && vaddr < end)?;
        let end = self
            .candidates
            .partition_point(|c| (c.section, c.start) <= (section, vaddr));
        let last = self.candidates[..end].last()?;
        if last.section != section {
            return None;
        }
        let start = last.start;
        let first =
            self.candidates[..end].partition_point(|c| (c.section, c.start) < (section, start));
        // BFD's better_fit among the symbols at that start, in table order.
        let mut best = &self.candidates[first];
        for c in &self.candidates[first + 1..end] {
            let covers = |c: &Candidate| c.start + c.size > vaddr;
            let better = if !covers(best) {
                c.size > best.size
            } else if !covers(c) {
                false
            } else if best.function != c.function {
                c.function
            } else if best.notype != c.notype {
                !c.notype
            } else {
                c.size < best.size
            };
            if better {
                best = c;
            }
        }
        Some(best.file.clone().unwrap_or_else(|| Arc::from("??")))
    }
}
