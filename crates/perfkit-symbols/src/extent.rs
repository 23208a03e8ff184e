//! The extent of a resolved symbol in a mapped file: what a caller needs to name every
//! other address inside that symbol without asking again (a live view meets thousands of
//! new addresses a second, most of them in functions it has already named).

use crate::{Mapping, Symbolizer};

impl Symbolizer {
    /// The file offsets `[start, end)` of the mapping `m` whose addresses
    /// [`symbolize_in_mapping`](Self::symbolize_in_mapping) names exactly as it names
    /// `addr` (the same symbol; its offset grows with the address): the symbol's extent in
    /// the symbol table (to its end or the next symbol's start), as far as one segment and
    /// the mapping hold it. None when `addr` has no symbol there.
    pub fn symbol_extent(&mut self, m: &Mapping, addr: u64) -> Option<(u64, u64)> {
        let off = m.file_offset(addr);
        let dso = self.dso_for(m)?;
        let vaddr = dso.binary.offset_to_vaddr(off)?;
        let table = dso.symbols.as_ref()?;
        let (start, end) = table.extent(table.find(vaddr)?);
        // The same segment's bytes at both ends (offset and address move together), and
        // inside the mapping's part of the file.
        let first = off.checked_sub(vaddr - start)?;
        let last = off.checked_add(end.checked_sub(vaddr)?.checked_sub(1)?)?;
        let linear = |o: u64| dso.binary.offset_to_vaddr(o) == Some(vaddr - off + o);
        let map_end = m.pgoff.saturating_add(m.end.saturating_sub(m.start));
        let (first, last) = (first.max(m.pgoff), last.min(map_end.checked_sub(1)?));
        (first <= last && linear(first) && linear(last)).then_some((first, last + 1))
    }
}

#[cfg(test)]
mod tests {
    use crate::{Mapping, Options, Symbolizer};

    #[inline(never)]
    fn marker_extent(x: u64) -> u64 {
        std::hint::black_box(x.wrapping_mul(3).wrapping_add(1))
    }

    #[test]
    fn every_address_in_the_extent_is_named_alike() {
        assert_eq!(marker_extent(1), 4);
        let maps = crate::read_proc_maps(std::process::id()).expect("own maps");
        let addr = marker_extent as *const () as usize as u64;
        let m: Mapping = maps.find(addr).expect("mapped").clone();
        let mut s = Symbolizer::new(Options::default());
        let sym = s
            .symbolize_in_mapping(&m, addr)
            .symbol
            .expect("a symbol for a function of this test");
        assert!(sym.name.contains("marker_extent"), "{}", sym.name);
        let (first, end) = s.symbol_extent(&m, addr).expect("an extent");
        let off = m.file_offset(addr);
        assert!(first <= off && off < end, "{first:#x} {off:#x} {end:#x}");
        assert!(end - first <= sym.size, "{} > {}", end - first, sym.size);
        // Each address of the extent: the same symbol, at its distance from `addr`.
        for o in first..end {
            let a = m.start + (o - m.pgoff);
            let got = s.symbolize_in_mapping(&m, a).symbol.expect("named");
            assert_eq!(&*got.name, &*sym.name);
            assert_eq!(got.offset, sym.offset + o - off);
        }
        // Just past it: another symbol, or none.
        let past = m.start + (end - m.pgoff);
        if past < m.end {
            let f = s.symbolize_in_mapping(&m, past);
            assert!(f.symbol.is_none_or(|g| g.name != sym.name || g.offset == 0));
        }
    }
}
