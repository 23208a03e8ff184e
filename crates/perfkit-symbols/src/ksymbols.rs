//! Kernel code named by `PERF_RECORD_KSYMBOL` records: BPF programs (`bpf_prog_TAG_NAME`),
//! BPF trampolines and dispatchers, out-of-line kernel text.
//!
//! Such code lives outside the kernel's and its modules' maps, and kallsyms names it only
//! while it is loaded (`[bpf]` lines). perf gives each registered symbol a map of its own
//! (`machine__process_ksymbol_register`): the map's object is called by the symbol's name,
//! and the one symbol covers the whole map; an unregistering record removes the map again.
//! [`Ksymbols`] keeps those maps for a reader that replays a recording in time order.

use std::collections::BTreeMap;
use std::sync::Arc;

/// One registered kernel symbol: its map and its name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ksymbol {
    /// First address.
    pub start: u64,
    /// One past the last address.
    pub end: u64,
    /// The symbol's name, also its object's name (`bpf_prog_f7904b1e51166c13_spin`).
    pub name: Arc<str>,
}

/// The kernel symbols registered so far, by address.
#[derive(Clone, Debug, Default)]
pub struct Ksymbols {
    by_start: BTreeMap<u64, Ksymbol>,
    generation: u64,
}

impl Ksymbols {
    /// None registered.
    pub fn new() -> Ksymbols {
        Ksymbols::default()
    }

    /// A `PERF_RECORD_KSYMBOL` that registers `name` at `addr` for `len` bytes. As perf,
    /// an address some registered symbol already covers adds nothing (perf adds the name
    /// to that map's object, whose one symbol already covers it); an empty one neither.
    pub fn register(&mut self, addr: u64, len: u64, name: &str) {
        if len == 0 || self.find(addr).is_some() {
            return;
        }
        self.generation = crate::maps::next_generation();
        self.by_start.insert(
            addr,
            Ksymbol {
                start: addr,
                end: addr.saturating_add(len),
                name: Arc::from(name),
            },
        );
    }

    /// A `PERF_RECORD_KSYMBOL` with the unregister flag: the map covering `addr` goes.
    pub fn unregister(&mut self, addr: u64) {
        if let Some(start) = self.find(addr).map(|k| k.start) {
            self.generation = crate::maps::next_generation();
            self.by_start.remove(&start);
        }
    }

    /// The registered symbol covering `addr`.
    pub fn find(&self, addr: u64) -> Option<&Ksymbol> {
        let (_, k) = self.by_start.range(..=addr).next_back()?;
        (addr < k.end).then_some(k)
    }

    /// Changes with each register and unregister; drawn from the counter of
    /// [`ProcessMaps::generation`](crate::ProcessMaps::generation), so the larger of the
    /// two changes whenever either does.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Nothing registered?
    pub fn is_empty(&self) -> bool {
        self.by_start.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_find_unregister() {
        let mut k = Ksymbols::new();
        let g0 = k.generation();
        k.register(0xffff_ffff_c002_204c, 35, "bpf_prog_f7904b1e51166c13_spin");
        assert!(k.generation() > g0);
        let s = k.find(0xffff_ffff_c002_205e).unwrap();
        assert_eq!(s.start, 0xffff_ffff_c002_204c);
        assert_eq!(&*s.name, "bpf_prog_f7904b1e51166c13_spin");
        assert!(k.find(0xffff_ffff_c002_204c + 35).is_none());
        assert!(k.find(0xffff_ffff_c002_204b).is_none());
        // A second name inside the first map adds nothing, as in perf.
        k.register(0xffff_ffff_c002_2050, 8, "other");
        assert_eq!(
            &*k.find(0xffff_ffff_c002_2050).unwrap().name,
            "bpf_prog_f7904b1e51166c13_spin"
        );
        let g1 = k.generation();
        k.unregister(0xffff_ffff_c002_2050);
        assert!(k.generation() > g1);
        assert!(k.find(0xffff_ffff_c002_205e).is_none());
        assert!(k.is_empty());
    }
}
