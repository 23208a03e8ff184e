//! The stack of each distinct callchain, remembered: a profile repeats the same few
//! thousand callchains over millions of samples, and naming a chain frame by frame (a
//! lookup per address, an interning per stack node) was most of a report's time.
//!
//! A chain's stack depends only on the words of the chain (and the sampled ip, for a
//! sample without one), on which maps they are looked up in (the process, and the
//! generation of its maps and of the kernel's) and on the sample's cpumode. With the same
//! key, the frame-by-frame path gives the same stack and changes nothing: every frame and
//! stack node it would look up is already interned, and the symbolizer's counts are kept
//! only when a frame is made. So the profile is the same, byte for byte.

use crate::StackId;
use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};

/// Distinct chains remembered at most (about 200 bytes each): a file of ever-new chains
/// then costs no more memory than this, and names its chains frame by frame.
const MAX_CHAINS: usize = 1 << 20;

/// What selects the maps a chain is looked up in, and how.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ChainKey {
    pub pid: i32,
    pub user_generation: u64,
    pub kernel_generation: u64,
    pub kernel: bool,
    /// The sampled ip (it is the only frame of a sample without a callchain).
    pub ip: u64,
}

struct Entry {
    key: ChainKey,
    chain: Box<[u64]>,
    stack: Option<StackId>,
}

/// Stacks by (key, callchain).
#[derive(Default)]
pub(crate) struct ChainMemo {
    by_hash: HashMap<u64, Vec<Entry>>,
    len: usize,
}

fn hash_of(key: &ChainKey, chain: &[u64]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    chain.hash(&mut h);
    h.finish()
}

impl ChainMemo {
    /// The stack remembered for this chain, if any.
    pub fn get(&self, key: &ChainKey, chain: &[u64]) -> Option<Option<StackId>> {
        self.by_hash
            .get(&hash_of(key, chain))?
            .iter()
            .find(|e| e.key == *key && *e.chain == *chain)
            .map(|e| e.stack)
    }

    /// Remember the stack of this chain.
    pub fn insert(&mut self, key: ChainKey, chain: &[u64], stack: Option<StackId>) {
        if self.len >= MAX_CHAINS {
            return;
        }
        self.len += 1;
        self.by_hash
            .entry(hash_of(&key, chain))
            .or_default()
            .push(Entry {
                key,
                chain: chain.into(),
                stack,
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_is_found_only_under_its_own_key() {
        let mut m = ChainMemo::default();
        let key = ChainKey {
            pid: 7,
            user_generation: 1,
            kernel_generation: 0,
            kernel: false,
            ip: 0x10,
        };
        m.insert(key, &[1, 2, 3], Some(5));
        assert_eq!(m.get(&key, &[1, 2, 3]), Some(Some(5)));
        assert_eq!(m.get(&key, &[1, 2]), None);
        let later = ChainKey {
            user_generation: 2,
            ..key
        };
        assert_eq!(m.get(&later, &[1, 2, 3]), None, "the maps changed");
        m.insert(key, &[], None);
        assert_eq!(m.get(&key, &[]), Some(None));
    }
}
