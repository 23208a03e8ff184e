//! Sample classes: an id for each distinct (event, process, thread, cpumode, cgroup, CPU
//! when kept apart, callchain, and ip when there is no callchain) a folding load meets,
//! given on the decoding threads, so that the builder finds what it made for a sample of
//! the class before (its stack, thread, cgroup, fold group) by the id, in a `Vec`,
//! instead of hashing and comparing the callchain again ([`crate::chain_memo`]) and
//! looking the fold group up by its key ([`crate::fold`]): that was most of the serial
//! builder's time.
//!
//! The table is shared by every decoding thread: 64 shards, each behind its own lock, so
//! threads rarely wait for one another. Which id a class gets depends on which thread
//! met it first, so the builder uses ids only to find what it remembered, and checks that
//! it still holds (maps generations, thread name, fold key) before it uses it: the
//! profile is the one the single-threaded path builds whatever the ids are.
//!
//! Memory is bounded: at most [`MAX_CLASSES`] classes get an id (about 60 bytes each
//! and the callchain); the others are built as before.

use hashbrown::HashTable;
use std::sync::Mutex;

/// Classes given an id at most.
pub(crate) const MAX_CLASSES: usize = 1 << 20;
/// Shards of the table (a power of two).
const SHARDS: usize = 64;

/// What a class is told apart by (the merge key of [`crate::batch`], whose hash it is
/// looked up by) besides its callchain.
pub(crate) type ClassKey = (u32, i32, i32, bool, u64, Option<u32>, u64);

struct Shard {
    table: HashTable<u32>,
    /// Each class's key, and its callchain's range in `words`.
    keys: Vec<(ClassKey, u32, u32)>,
    words: Vec<u64>,
}

/// The ids of the classes met so far (see the [module](self)).
pub(crate) struct Classes {
    shards: Box<[Mutex<Shard>]>,
}

impl Default for Classes {
    fn default() -> Classes {
        Classes {
            shards: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Shard {
                        table: HashTable::new(),
                        keys: Vec::new(),
                        words: Vec::new(),
                    })
                })
                .collect(),
        }
    }
}

impl Classes {
    /// The id of the class with `key` and `chain`, whose hash is `hash` (any hash of both
    /// that equal classes share), given now if it has none yet; None when the table is
    /// full.
    pub(crate) fn id(&self, hash: u64, key: ClassKey, chain: &[u64]) -> Option<u32> {
        // The top bits pick the shard, the table uses the whole hash.
        let s = (hash >> 58) as usize % SHARDS;
        let mut guard = self.shards[s].lock().ok()?;
        let shard = &mut *guard;
        let (keys, words) = (&shard.keys, &shard.words);
        let same = |&i: &u32| {
            let (k, a, b) = &keys[i as usize];
            *k == key && words[*a as usize..*b as usize] == *chain
        };
        if let Some(&i) = shard.table.find(hash, same) {
            return Some(i * SHARDS as u32 + s as u32);
        }
        let i = shard.keys.len();
        if i >= MAX_CLASSES / SHARDS || shard.words.len() + chain.len() > u32::MAX as usize {
            return None;
        }
        let a = shard.words.len() as u32;
        shard.words.extend_from_slice(chain);
        shard.keys.push((key, a, shard.words.len() as u32));
        // Rehashing needs every class's hash: the same one as callers give.
        let (keys, words) = (&shard.keys, &shard.words);
        shard.table.insert_unique(hash, i as u32, |&j| {
            let (k, a, b) = &keys[j as usize];
            crate::batch::class_hash(k, &words[*a as usize..*b as usize])
        });
        Some(i as u32 * SHARDS as u32 + s as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_keeps_its_id_and_others_get_their_own() {
        let c = Classes::default();
        let key = (0, 10, 11, false, 0, None, 0);
        let chain = [1u64, 2, 3];
        let h = crate::batch::class_hash(&key, &chain);
        let a = c.id(h, key, &chain).unwrap();
        assert_eq!(c.id(h, key, &chain), Some(a));
        let other = (0, 10, 12, false, 0, None, 0);
        let b = c.id(crate::batch::class_hash(&other, &chain), other, &chain);
        assert!(b.is_some_and(|b| b != a));
        // The same hash with other content is another class.
        assert!(c.id(h, key, &[1, 2]).is_some_and(|x| x != a));
        // Many classes: the shards grow and keep every id.
        let ids: Vec<u32> = (0..5000u64)
            .map(|i| {
                let ch = [i, i + 1];
                c.id(crate::batch::class_hash(&key, &ch), key, &ch).unwrap()
            })
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 5000);
        for (i, id) in (0..5000u64).zip(&ids).step_by(97) {
            let ch = [i, i + 1];
            assert_eq!(
                c.id(crate::batch::class_hash(&key, &ch), key, &ch),
                Some(*id)
            );
        }
    }
}
