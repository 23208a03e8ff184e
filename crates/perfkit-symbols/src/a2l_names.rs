//! The names perf 6.1 gives the frames of an inline chain, which come from GNU
//! `addr2line -i -f` (perf runs it as a child per file when built without libbfd, as
//! Debian's perf is) and so follow binutils' naming, state included.
//!
//! binutils names the innermost function at an address from DWARF only when that name is
//! a linkage name (a mangled `DW_AT_linkage_name`, or any name in a unit whose language
//! has no mangling, such as C). Otherwise the first time that function (one DWARF
//! instance: a `DW_TAG_subprogram` or `DW_TAG_inlined_subroutine`) is the innermost one
//! of a query, the name printed is the ELF symbol's that contains the address; when that
//! symbol starts where the instance's first range starts, the instance is renamed to the
//! symbol for good, also where it appears later as a caller of an inlined frame. Later
//! queries print the instance's (possibly renamed) name. perf then compares each name
//! with its own symbol's: an equal one is the real symbol (`sym+off (dso)`), another an
//! `(inlined)` frame. So the names depend on the order perf asks for addresses, which is
//! the order it meets them: samples in order, each chain leaf first. [`A2lNames`] keeps
//! that state per file; callers ask for each address once, in that order.

use std::collections::HashMap;
use std::sync::Arc;

use crate::elf::DwarfReader;

/// One function instance: its unit's `.debug_info` offset and its DIE's offset there.
type InstanceKey = (usize, usize);

/// binutils' per-instance naming state for one file.
#[derive(Default)]
pub(crate) struct A2lNames {
    /// Instances already named once as the innermost function of a query: `Some(name)`
    /// when they took the ELF symbol's name for good.
    seen: HashMap<InstanceKey, Option<Arc<str>>>,
}

/// A frame of a chain, innermost first, before binutils' renaming.
pub(crate) struct ChainName {
    /// The instance's DIE offset in its unit (from `addr2line::Frame::dw_die_offset`).
    pub(crate) die: Option<usize>,
    /// The raw (undemangled) DWARF name: a linkage name when DWARF has one.
    pub(crate) raw: Option<Arc<str>>,
    /// The name as printed (demangled when asked).
    pub(crate) name: Option<Arc<str>>,
}

impl A2lNames {
    /// Rename `chain` (the frames DWARF places at `vaddr`, innermost first) as
    /// `addr2line -i -f` run by perf names them, given the ELF symbol perf found there
    /// (its printed name and start).
    pub(crate) fn rename(
        &mut self,
        ctx: &addr2line::Context<DwarfReader>,
        vaddr: u64,
        chain: &mut [ChainName],
        symbol: Option<(&Arc<str>, u64)>,
    ) {
        let Some(unit) = ctx.find_dwarf_and_unit(vaddr).skip_all_loads() else {
            return;
        };
        let Some(unit_off) = unit.header.offset().as_debug_info_offset() else {
            return;
        };
        let unit_off = unit_off.0;
        for f in chain.iter_mut() {
            if let Some(die) = f.die
                && let Some(Some(renamed)) = self.seen.get(&(unit_off, die))
            {
                f.name = Some(renamed.clone());
            }
        }
        let Some(first) = chain.first_mut() else {
            return;
        };
        let Some(die) = first.die else {
            return;
        };
        let key = (unit_off, die);
        if self.seen.contains_key(&key) || is_linkage(unit, first.raw.as_deref()) {
            return;
        }
        let Some((sym_name, sym_start)) = symbol else {
            self.seen.insert(key, None);
            return;
        };
        first.name = Some(sym_name.clone());
        let starts_here = unit
            .entry(gimli::UnitOffset(die))
            .ok()
            .and_then(|e| unit.die_ranges(&e).ok())
            .and_then(|mut r| r.next().ok().flatten())
            .is_some_and(|r| r.begin == sym_start);
        self.seen.insert(key, starts_here.then(|| sym_name.clone()));
    }
}

/// Whether binutils takes `raw` as a linkage name: a mangled name, or any name in a unit
/// of a language without mangling (binutils' `mangle_style` 0).
fn is_linkage(unit: gimli::UnitRef<'_, DwarfReader>, raw: Option<&str>) -> bool {
    let Some(raw) = raw else {
        return false;
    };
    if raw.starts_with("_Z") || raw.starts_with("_R") {
        return true;
    }
    let mut entries = unit.entries();
    let lang = match entries.next_dfs() {
        Ok(Some((_, root))) => root.attr_value(gimli::DW_AT_language).ok().flatten(),
        _ => None,
    };
    match lang {
        Some(gimli::AttributeValue::Language(l)) => unmangled_language(l),
        _ => false,
    }
}

/// Languages whose names binutils never demangles (its `mangle_style` returns 0).
fn unmangled_language(l: gimli::DwLang) -> bool {
    use gimli::*;
    [
        DW_LANG_C89,
        DW_LANG_C,
        DW_LANG_C99,
        DW_LANG_C11,
        DW_LANG_Cobol74,
        DW_LANG_Cobol85,
        DW_LANG_Fortran77,
        DW_LANG_Pascal83,
        DW_LANG_PLI,
        DW_LANG_UPC,
        DW_LANG_Mips_Assembler,
    ]
    .contains(&l)
}
