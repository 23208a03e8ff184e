//! Functions already named, by the file they are in and their extent there: a live view
//! (`top`) meets new addresses all the time (new processes, new mappings, new code paths),
//! and most of them fall in a function it has already named. Such an address costs a hash
//! of its file and a binary search here, instead of the symbolizer's lookup and the
//! function's interning by name.
//!
//! Extents come from [`perfkit_symbols::Symbolizer::symbol_extent`]: every file offset in
//! one is named by the symbolizer as the first was (the same symbol, the offset growing
//! with the address), so an answer from here is the symbolizer's answer. Files are told
//! apart as the symbolizer tells them: by path and build id.

use crate::FuncId;
use perfkit_symbols::Mapping;
use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;

/// One named extent (file offsets from its key, the start, to `end`), the function, and
/// the symbol offset of its start.
#[derive(Clone, Copy, Debug)]
struct Extent {
    end: u64,
    func: FuncId,
    sym_offset: u64,
}

/// One build (by build id) of a path, and the index of its extents.
type Build = (Option<Vec<u8>>, u32);

/// Named extents by file (path, then build id).
#[derive(Default)]
pub(crate) struct SymRanges {
    files: HashMap<String, Vec<Build>>,
    /// Each file's extents by start, by the index [`find`](Self::find) gives the file.
    /// (A B-tree: a large library gets a new extent for every function named, and a
    /// sorted vector moved half its length for each, most of a live view's time
    /// on a machine running compilers; the tree's searches also miss the caches less.)
    extents: Vec<BTreeMap<u64, Extent>>,
}

impl SymRanges {
    /// How many extents are known.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.extents.iter().map(BTreeMap::len).sum()
    }

    fn file(&self, m: &Mapping) -> Option<u32> {
        let list = self.files.get(m.path.as_str())?;
        list.iter()
            .find(|(b, _)| b.as_deref() == m.build_id.as_deref())
            .map(|&(_, i)| i)
    }

    /// The function at file offset `off` of `m`'s file and its symbol offset there, when
    /// an extent holds it, and the file's index (one per path and build id, whichever
    /// process maps it, wherever).
    pub(crate) fn find(&self, m: &Mapping, off: u64) -> Option<(FuncId, u64, u32)> {
        let file = self.file(m)?;
        let (&start, e) = self.extents[file as usize].range(..=off).next_back()?;
        (off < e.end).then(|| (e.func, e.sym_offset + (off - start), file))
    }

    /// Remember that `[start, end)` of `m`'s file is function `func`, whose symbol offset
    /// at `start` is `sym_offset`. Extents of one file never overlap (each is where the
    /// symbol table answers one symbol); one already known is left as it is. The file's
    /// index, as [`find`](Self::find) gives it.
    pub(crate) fn insert(
        &mut self,
        m: &Mapping,
        start: u64,
        end: u64,
        func: FuncId,
        sym_offset: u64,
    ) -> u32 {
        let file = match self.file(m) {
            Some(i) => i,
            None => {
                let i = self.extents.len() as u32;
                self.extents.push(BTreeMap::new());
                self.files
                    .entry(m.path.clone())
                    .or_default()
                    .push((m.build_id.clone(), i));
                i
            }
        };
        let ex = &mut self.extents[file as usize];
        let overlaps = ex.range(start..).next().is_some_and(|(&n, _)| n < end)
            || ex
                .range(..start)
                .next_back()
                .is_some_and(|(_, p)| p.end > start);
        if !overlaps {
            ex.insert(
                start,
                Extent {
                    end,
                    func,
                    sym_offset,
                },
            );
        }
        file
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(path: &str, build_id: Option<&[u8]>) -> Mapping {
        Mapping {
            start: 0x1000,
            end: 0x9000,
            pgoff: 0,
            path: path.into(),
            build_id: build_id.map(<[u8]>::to_vec),
        }
    }

    #[test]
    fn extents_answer_inside_and_only_for_their_file() {
        let mut r = SymRanges::default();
        let a = map("/bin/a", Some(&[1, 2]));
        r.insert(&a, 0x100, 0x140, 7, 0);
        r.insert(&a, 0x200, 0x210, 8, 4);
        assert_eq!(r.find(&a, 0x100), Some((7, 0, 0)));
        assert_eq!(r.find(&a, 0x13f), Some((7, 0x3f, 0)));
        assert_eq!(r.find(&a, 0x140), None);
        assert_eq!(r.find(&a, 0xff), None);
        assert_eq!(r.find(&a, 0x208), Some((8, 0xc, 0)));
        // The same file mapped elsewhere (another process): the same answer and file.
        let moved = Mapping {
            start: 0x7f00_0000,
            end: 0x7f00_8000,
            ..a.clone()
        };
        assert_eq!(r.find(&moved, 0x208), Some((8, 0xc, 0)));
        // Another build of the same path, another path: nothing known.
        assert_eq!(r.find(&map("/bin/a", Some(&[9])), 0x100), None);
        assert_eq!(r.find(&map("/bin/a", None), 0x100), None);
        assert_eq!(r.find(&map("/bin/b", Some(&[1, 2])), 0x100), None);
        // An overlapping extent is not taken.
        r.insert(&a, 0x130, 0x180, 9, 0);
        assert_eq!(r.find(&a, 0x150), None);
        assert_eq!(r.find(&a, 0x135), Some((7, 0x35, 0)));
        // Another file gets another index.
        let b = map("/bin/b", None);
        r.insert(&b, 0x100, 0x140, 10, 0);
        assert_eq!(r.find(&b, 0x100), Some((10, 0, 1)));
    }
}
