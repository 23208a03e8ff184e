//! Sample classes: an id for each distinct (event, process, thread, cpumode, cgroup, CPU
//! when kept apart, callchain, and ip when there is no callchain) a folding load meets,
//! given on the decoding threads, so that the builder finds what it made for a sample of
//! the class before (its stack, thread, cgroup, fold group) by the id, in a `Vec`,
//! instead of hashing and comparing the callchain again ([`crate::chain_memo`]) and
//! looking the fold group up by its key ([`crate::fold`]): that was most of the serial
//! builder's time.
//!
//! A class is told apart in two steps: the callchain with what its stack depends on
//! (process, cpumode, the ip where there is no chain) gets a chain id, kept once for
//! every thread of the process; then (chain id, event, thread, cgroup, CPU) a class id,
//! a small key. The tables are shared by every decoding thread: 64 shards each, each
//! behind its own lock, so threads rarely wait for one another. Which id a class gets depends on which thread
//! met it first, so the builder uses ids only to find what it remembered, and checks that
//! it still holds (maps generations, thread name, fold key) before it uses it: the
//! profile is the one the single-threaded path builds whatever the ids are.
//!
//! Memory is bounded: at most [`MAX_CLASSES`] chains (about 30 bytes each and the
//! callchain) and classes (about 40 bytes each) get an id; the others are built as
//! before.

use hashbrown::HashTable;
use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Mutex;

/// Classes given an id at most.
pub(crate) const MAX_CLASSES: usize = 1 << 20;
/// Shards of each table (a power of two).
const SHARDS: usize = 64;

/// What a callchain's stack depends on besides its words: the process, the cpumode and
/// the ip (only where there is no callchain; 0 else).
pub(crate) type ChainKey = (i32, bool, u64);
/// What tells the classes of one chain (its id) apart: event, thread, cgroup, and CPU
/// when the report keeps CPUs apart.
pub(crate) type ClassKey = (u32, u32, i32, u64, Option<u32>);

/// Chains: each one's key and its words' range in `words`.
struct Chains {
    table: HashTable<u32>,
    keys: Vec<(ChainKey, u32, u32)>,
    words: Vec<u64>,
}

/// Classes by their key (a chain id and the rest) and id.
struct ClassTable {
    table: HashTable<(ClassKey, u32)>,
    len: u32,
}

/// The ids of the chains and classes met so far (see the [module](self)).
pub(crate) struct Classes {
    chains: Box<[Mutex<Chains>]>,
    classes: Box<[Mutex<ClassTable>]>,
}

impl Default for Classes {
    fn default() -> Classes {
        Classes {
            chains: (0..SHARDS)
                .map(|_| {
                    Mutex::new(Chains {
                        table: HashTable::new(),
                        keys: Vec::new(),
                        words: Vec::new(),
                    })
                })
                .collect(),
            classes: (0..SHARDS)
                .map(|_| {
                    Mutex::new(ClassTable {
                        table: HashTable::new(),
                        len: 0,
                    })
                })
                .collect(),
        }
    }
}

/// The hash a chain is looked up by ([`chain_hash`]'s, the one callers give).
pub(crate) fn chain_hash(key: &ChainKey, chain: &[u64]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    chain.hash(&mut h);
    h.finish()
}

/// The hash of a class's key.
fn class_hash(key: &ClassKey) -> u64 {
    rustc_hash::FxBuildHasher.hash_one(key)
}

/// The shard of a hash (its top bits; the tables use the whole hash).
fn shard(hash: u64) -> usize {
    (hash >> 58) as usize % SHARDS
}

impl Classes {
    /// The id of the chain `chain` with `key`, whose [`chain_hash`] is `hash`, given now
    /// if it has none yet; None when the table is full.
    fn chain_id(&self, hash: u64, key: ChainKey, chain: &[u64]) -> Option<u32> {
        let s = shard(hash);
        let mut guard = self.chains[s].lock().ok()?;
        let c = &mut *guard;
        let (keys, words) = (&c.keys, &c.words);
        let same = |&i: &u32| {
            let (k, a, b) = &keys[i as usize];
            *k == key && words[*a as usize..*b as usize] == *chain
        };
        if let Some(&i) = c.table.find(hash, same) {
            return Some(i * SHARDS as u32 + s as u32);
        }
        let i = c.keys.len();
        if i >= MAX_CLASSES / SHARDS || c.words.len() + chain.len() > u32::MAX as usize {
            return None;
        }
        let a = c.words.len() as u32;
        c.words.extend_from_slice(chain);
        c.keys.push((key, a, c.words.len() as u32));
        let (keys, words) = (&c.keys, &c.words);
        c.table.insert_unique(hash, i as u32, |&j| {
            let (k, a, b) = &keys[j as usize];
            chain_hash(k, &words[*a as usize..*b as usize])
        });
        Some(i as u32 * SHARDS as u32 + s as u32)
    }

    /// The id of the class of a sample with `key` and `chain` (whose [`chain_hash`] is
    /// `hash`), and of `event`, thread `tid`, `cgroup` and `cpu` (None unless the report
    /// keeps CPUs apart), given now if it has none yet; None when a table is full.
    pub(crate) fn id(
        &self,
        hash: u64,
        key: ChainKey,
        chain: &[u64],
        rest: (u32, i32, u64, Option<u32>),
    ) -> Option<u32> {
        let c = self.chain_id(hash, key, chain)?;
        let key: ClassKey = (c, rest.0, rest.1, rest.2, rest.3);
        let h = class_hash(&key);
        let s = shard(h);
        let mut guard = self.classes[s].lock().ok()?;
        let t = &mut *guard;
        if let Some(&(_, id)) = t.table.find(h, |(k, _)| *k == key) {
            return Some(id);
        }
        if t.len as usize >= MAX_CLASSES / SHARDS {
            return None;
        }
        let id = t.len * SHARDS as u32 + s as u32;
        t.len += 1;
        t.table.insert_unique(h, (key, id), |(k, _)| class_hash(k));
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(c: &Classes, key: ChainKey, chain: &[u64], tid: i32) -> Option<u32> {
        c.id(chain_hash(&key, chain), key, chain, (0, tid, 0, None))
    }

    #[test]
    fn a_class_keeps_its_id_and_others_get_their_own() {
        let c = Classes::default();
        let key = (10, false, 0);
        let chain = [1u64, 2, 3];
        let a = id(&c, key, &chain, 11).unwrap();
        assert_eq!(id(&c, key, &chain, 11), Some(a));
        // Another thread, another class (of the same chain).
        assert!(id(&c, key, &chain, 12).is_some_and(|b| b != a));
        // The same hash with other content is another chain.
        let h = chain_hash(&key, &chain);
        assert!(
            c.id(h, key, &[1, 2], (0, 11, 0, None))
                .is_some_and(|x| x != a)
        );
        assert!(
            c.id(h, key, &chain, (0, 11, 0, Some(1)))
                .is_some_and(|x| x != a)
        );
        assert_eq!(c.id(h, key, &chain, (0, 11, 0, None)), Some(a));
        // Many classes: the shards grow and keep every id.
        let ids: Vec<u32> = (0..5000u64)
            .map(|i| id(&c, key, &[i, i + 1], (i % 3) as i32).unwrap())
            .collect();
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 5000);
        for (i, x) in (0..5000u64).zip(&ids).step_by(97) {
            assert_eq!(id(&c, key, &[i, i + 1], (i % 3) as i32), Some(*x));
        }
    }
}
