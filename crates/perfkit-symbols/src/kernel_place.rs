//! Which of a recording's kernel maps holds a kernel address, as perf decides it.
//!
//! A recording describes the kernel's address space with `PERF_RECORD_MMAP` records of
//! pid -1: `[kernel.kallsyms]_text` (the core kernel, `_text` to `_etext`) and one per loaded
//! module (`perf record` makes them from `/proc/modules`: the module's file under
//! `/lib/modules/RELEASE`, or `[name]` when it has none). perf looks a kernel sample up in
//! those maps first: a module's address belongs to the module (`[kvm]`) and takes its name
//! only from the kallsyms lines tagged with that module; an address that no map covers is
//! `[unknown]`, whatever kallsyms says is there (an ftrace trampoline, a module unloaded
//! before the recording) or a code that a `PERF_RECORD_KSYMBOL` registered (a BPF program:
//! its own map, see [`Ksymbols`]). [`kernel_place`] makes that decision, and
//! [`Symbolizer::symbolize_kernel_in`](crate::Symbolizer::symbolize_kernel_in) names the
//! address in the place it gives.

use std::sync::Arc;

use crate::{Ksymbol, Ksymbols, ProcessMaps};

/// Where a kernel address lies in a recording's kernel maps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelPlace {
    /// The recording has no map of the core kernel (kernel addresses were hidden, or a
    /// file from a tool that writes none): kallsyms alone decides.
    NoKernelMap,
    /// The core kernel's map (`[kernel.kallsyms]`).
    Core,
    /// A guest kernel's map: named from kallsyms alone, as before maps were consulted.
    Guest,
    /// A module's map.
    Module {
        /// The module as perf names its object: `[kvm]`.
        name: Arc<str>,
        /// Where the map starts and the file offset it starts at: addresses in the module
        /// are printed relative to it, as perf's `map_ip` makes them.
        start: u64,
        /// The map's file offset.
        pgoff: u64,
    },
    /// The map of a symbol a `PERF_RECORD_KSYMBOL` registered (a BPF program): the
    /// symbol names the whole map and its object.
    Ksymbol(Ksymbol),
    /// No kernel map covers the address.
    Unmapped,
}

impl KernelPlace {
    /// The address as perf's map of this place gives it (`map__map_ip`): relative to a
    /// module's map, the address itself elsewhere.
    pub fn map_ip(&self, addr: u64) -> u64 {
        match self {
            KernelPlace::Module { start, pgoff, .. } => {
                addr.wrapping_sub(*start).wrapping_add(*pgoff)
            }
            KernelPlace::Ksymbol(k) => addr.wrapping_sub(k.start),
            _ => addr,
        }
    }
}

/// The place of kernel address `addr` in `maps`, a recording's kernel maps (those of
/// pid -1 and the `[kernel.kallsyms]`/`[guest.kernel...]` ones), and `ksyms`, the symbols
/// its KSYMBOL records registered so far.
pub fn kernel_place(maps: &ProcessMaps, ksyms: &Ksymbols, addr: u64) -> KernelPlace {
    if let Some(m) = maps.find(addr) {
        let p = m.path.as_str();
        if p.starts_with("[kernel.kallsyms]") {
            return KernelPlace::Core;
        }
        if p.starts_with("[guest.kernel") {
            return KernelPlace::Guest;
        }
        return KernelPlace::Module {
            name: Arc::from(kernel_map_dso_name(p)),
            start: m.start,
            pgoff: m.pgoff,
        };
    }
    if let Some(k) = ksyms.find(addr) {
        return KernelPlace::Ksymbol(k.clone());
    }
    if maps.iter().any(|m| m.path.starts_with("[kernel.kallsyms]")) {
        KernelPlace::Unmapped
    } else {
        KernelPlace::NoKernelMap
    }
}

/// The object name perf gives a kernel map other than the core kernel's (its
/// `kmod_path__parse_name`): `[name]` as it is; a module file's name without directory,
/// `.ko` and compression suffix, in brackets, dashes made underscores
/// (`/lib/modules/6.1.0/kernel/arch/x86/kvm/kvm-amd.ko.xz` is `[kvm_amd]`); any other
/// file's name without directory, dashes made underscores.
pub fn kernel_map_dso_name(path: &str) -> String {
    let base = path.rsplit('/').next().unwrap_or(path);
    if base.starts_with('[') || !base.contains('.') {
        return base.to_string();
    }
    match perfkit_records::kmod::module_name(base) {
        Some(name) => format!("[{name}]"),
        None => base.replace('-', "_"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mapping;

    fn map(start: u64, end: u64, path: &str) -> Mapping {
        Mapping {
            start,
            end,
            pgoff: 0,
            path: path.into(),
            build_id: None,
        }
    }

    #[test]
    fn module_names_as_perf_gives_them() {
        for (path, name) in [
            (
                "/lib/modules/6.1.0/kernel/arch/x86/kvm/kvm-amd.ko.xz",
                "[kvm_amd]",
            ),
            ("/lib/modules/6.1.0/extra/nvidia-uvm.ko", "[nvidia_uvm]"),
            ("/lib/modules/6.1.0/extra/zfs.ko.gz", "[zfs]"),
            ("[e1000e]", "[e1000e]"),
            ("[some-mod]", "[some-mod]"),
            ("/boot/odd-file.bin", "odd_file.bin"),
        ] {
            assert_eq!(kernel_map_dso_name(path), name, "{path}");
        }
    }

    #[test]
    fn places_follow_the_maps() {
        let kernel = map(
            0xffff_ffff_8100_0000,
            0xffff_ffff_8200_0000,
            "[kernel.kallsyms]_text",
        );
        let kvm = map(0xffff_ffff_c0a0_0000, 0xffff_ffff_c0a0_8000, "/x/kvm.ko");
        let maps = ProcessMaps::from_mappings([kernel.clone(), kvm]);
        assert_eq!(
            kernel_place(&maps, &Ksymbols::new(), 0xffff_ffff_8100_0010),
            KernelPlace::Core
        );
        let p = kernel_place(&maps, &Ksymbols::new(), 0xffff_ffff_c0a0_0010);
        assert_eq!(
            p,
            KernelPlace::Module {
                name: "[kvm]".into(),
                start: 0xffff_ffff_c0a0_0000,
                pgoff: 0
            }
        );
        assert_eq!(p.map_ip(0xffff_ffff_c0a0_0010), 0x10);
        assert_eq!(
            kernel_place(&maps, &Ksymbols::new(), 0xffff_ffff_c0b0_0000),
            KernelPlace::Unmapped
        );
        // Without the core kernel's map, kallsyms decides.
        let only_module = ProcessMaps::from_mappings([map(1 << 63, (1 << 63) + 4096, "[m]")]);
        assert_eq!(
            kernel_place(&only_module, &Ksymbols::new(), 0xffff_ffff_8100_0010),
            KernelPlace::NoKernelMap
        );
        assert_eq!(
            kernel_place(&ProcessMaps::new(), &Ksymbols::new(), 1 << 63),
            KernelPlace::NoKernelMap
        );
    }
}
