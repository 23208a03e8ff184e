//! Interning without a second copy: the ids of a `Vec`'s items by their content, where
//! the index holds only the ids (4 bytes each) and hashes and compares the items where
//! they already are. A `HashMap<Item, Id>` beside the `Vec` kept every frame, function
//! and stack node twice (a frame is about 90 bytes, a function's two names are heap
//! strings); this keeps them once.
//!
//! `hashbrown::HashTable` is the table made for this (the standard library's `HashMap`
//! has no way to look an entry up by something other than its stored key); it is the
//! table `std`'s map is built on, used here without its default hasher (ids hash with
//! `rustc_hash`, as the maps did).

use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash};

/// The ids of the items of one `Vec` (its indices), by content. Items must not change
/// while they are indexed ([`Index::reindex`] after a change).
#[derive(Clone, Debug, Default)]
pub(crate) struct Index(HashTable<u32>);

fn hash<T: Hash>(item: &T) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(item)
}

impl Index {
    /// The id of `item` in `items`, if it is there.
    #[cfg(test)]
    pub(crate) fn get<T: Hash + Eq>(&self, items: &[T], item: &T) -> Option<u32> {
        self.0
            .find(hash(item), |&i| items[i as usize] == *item)
            .copied()
    }

    /// The id of `item`, pushed onto `items` if it is not there yet.
    pub(crate) fn intern<T: Hash + Eq>(&mut self, items: &mut Vec<T>, item: T) -> u32 {
        let entry = self.0.entry(
            hash(&item),
            |&i| items[i as usize] == item,
            |&i| hash(&items[i as usize]),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(e) => *e.get(),
            hashbrown::hash_table::Entry::Vacant(e) => {
                let id = items.len() as u32;
                e.insert(id);
                items.push(item);
                id
            }
        }
    }

    /// Index item `id` of `items` (already pushed): as [`intern`](Self::intern) does for a
    /// new item, when no equal item is indexed.
    pub(crate) fn insert<T: Hash + Eq>(&mut self, items: &[T], id: u32) {
        let item = &items[id as usize];
        let h = hash(item);
        if self.0.find(h, |&i| items[i as usize] == *item).is_none() {
            self.0.insert_unique(h, id, |&i| hash(&items[i as usize]));
        }
    }

    /// Change item `id` of `items` with `edit`, keeping the index right: the id leaves the
    /// index under its old content and comes back under the new one unless an equal item
    /// is indexed already (that item keeps answering for the content, as before).
    pub(crate) fn reindex<T: Hash + Eq>(
        &mut self,
        items: &mut [T],
        id: u32,
        edit: impl FnOnce(&mut T),
    ) {
        let Some(item) = items.get(id as usize) else {
            return;
        };
        if let Ok(e) = self.0.find_entry(hash(item), |&i| i == id) {
            e.remove();
        }
        edit(&mut items[id as usize]);
        self.insert(items, id);
    }

    /// Forget every id.
    pub(crate) fn clear(&mut self) {
        self.0 = HashTable::new();
    }

    /// How many ids are indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_interned_once_and_found_by_content() {
        let mut items: Vec<String> = Vec::new();
        let mut index = Index::default();
        let words = ["main", "work", "main", "hot", "work", "main"];
        let ids: Vec<u32> = words
            .iter()
            .map(|w| index.intern(&mut items, w.to_string()))
            .collect();
        assert_eq!(ids, [0, 1, 0, 2, 1, 0]);
        assert_eq!(items, ["main", "work", "hot"]);
        assert_eq!(index.get(&items, &"hot".to_string()), Some(2));
        assert_eq!(index.get(&items, &"idle".to_string()), None);
        // Many more items than the table's first size: it grows, rehashing in place.
        for i in 0..10_000u32 {
            assert_eq!(index.intern(&mut items, format!("f{i}")), i + 3);
        }
        for i in (0..10_000u32).step_by(7) {
            assert_eq!(index.get(&items, &format!("f{i}")), Some(i + 3));
        }
        assert_eq!(index.len(), items.len());
    }

    #[test]
    fn an_edited_item_is_found_by_its_new_content() {
        let mut items: Vec<String> = Vec::new();
        let mut index = Index::default();
        for w in ["a", "b", "c"] {
            index.intern(&mut items, w.to_string());
        }
        index.reindex(&mut items, 1, |s| *s = "z".into());
        assert_eq!(index.get(&items, &"b".to_string()), None);
        assert_eq!(index.get(&items, &"z".to_string()), Some(1));
        // Edited to equal another: the other keeps answering for that content.
        index.reindex(&mut items, 2, |s| *s = "a".into());
        assert_eq!(index.get(&items, &"a".to_string()), Some(0));
        assert_eq!(index.get(&items, &"c".to_string()), None);
        assert_eq!(index.intern(&mut items, "c".to_string()), 3);
        assert_eq!(index.len(), 3, "ids 0, 1 and 3");
    }
}
