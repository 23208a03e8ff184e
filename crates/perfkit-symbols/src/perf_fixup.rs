//! perf's two passes over a symbol table it reads whole (the data-symbol table of
//! `script -F addr` and a `--vmlinux` file): `symbols__fixup_end`, then
//! `symbols__fixup_duplicate` with `choose_best_symbol`'s order.

/// perf's `choose_best_symbol` order, best first: sized, not weak, global, fewer leading
/// underscores, longer name. The first field (zero-sized) is set by [`fixup`].
pub(crate) type Rank = (bool, bool, bool, usize, std::cmp::Reverse<usize>);

/// A symbol as the passes see it: start, size, [`Rank`], and what the caller keeps.
pub(crate) type RawSymbol<T> = (u64, u64, Rank, T);

/// The rank of a symbol named `name` ([`Rank`]).
pub(crate) fn rank(name: &str, weak: bool, global: bool) -> Rank {
    (
        false,
        weak,
        !global || weak,
        name.bytes().take_while(|&c| c == b'_').count(),
        std::cmp::Reverse(name.len()),
    )
}

/// Over `syms` sorted by start (ties in the file's order) as `(start, size, rank, _)`: a
/// zero-sized symbol runs to the next one (itself zero-sized when that one starts at the
/// same address), the last one to the page after its start's page; then of the symbols at
/// one address the best ranked stays (the first on a tie). The indexes kept, by address.
pub(crate) fn fixup<T>(syms: &mut [RawSymbol<T>]) -> Vec<usize> {
    for i in 0..syms.len() {
        if syms[i].1 == 0 {
            let start = syms[i].0;
            syms[i].1 = match syms.get(i + 1) {
                Some(next) => next.0 - start,
                None => ((start + 0xfff) & !0xfff) + 0x1000 - start,
            };
        }
        syms[i].2.0 = syms[i].1 == 0;
    }
    let mut keep = Vec::new();
    let mut i = 0;
    while i < syms.len() {
        let j = i + syms[i..].iter().take_while(|e| e.0 == syms[i].0).count();
        keep.push((i..j).min_by_key(|&k| &syms[k].2).unwrap_or(i));
        i = j;
    }
    keep
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_sized_symbols_run_to_the_next_and_the_best_alias_stays() {
        let mut syms = vec![
            (0x1000, 0, rank("__weak_alias", true, true), "a"),
            (0x1000, 0x10, rank("global_fn", false, true), "b"),
            (0x1010, 0, rank("label", false, false), "c"),
            (0x1234, 0, rank("last", false, true), "d"),
        ];
        let keep = fixup(&mut syms);
        let kept: Vec<_> = keep.iter().map(|&k| (syms[k].3, syms[k].1)).collect();
        // The zero-sized alias ran to its twin (size 0), so the sized global one wins; the
        // label runs to `last`, and `last` to the end of the page after its own.
        assert_eq!(kept, [("b", 0x10), ("c", 0x224), ("d", 0x2000 - 0x234)]);
    }
}
