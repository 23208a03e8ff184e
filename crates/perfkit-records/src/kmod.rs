//! The kernel module a file name stands for, as perf reads it (`kmod_path__parse_name`).
//!
//! A module MMAP record (pid -1) names the module's file under `/lib/modules/RELEASE`;
//! perf calls its object `[name]`, the file's name without directory, `.ko` and
//! compression suffix, dashes made underscores, as `/proc/modules` spells it. The recorder
//! uses the rule to find a loaded module's file, the reader to name the module's map.

/// The module name of a module file (`.../kvm-amd.ko.xz` is `kvm_amd`), or `None` for a
/// file that is no module (no `.ko` before an optional `.gz`/`.xz`/`.zst`).
pub fn module_name(path: &str) -> Option<String> {
    let base = path.rsplit('/').next().unwrap_or(path);
    let stem = [".gz", ".xz", ".zst"]
        .iter()
        .find_map(|c| base.strip_suffix(c))
        .unwrap_or(base);
    match stem.strip_suffix(".ko") {
        Some(name) if !name.is_empty() => Some(name.replace('-', "_")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_files_and_other_files() {
        for (path, name) in [
            (
                "/lib/modules/6.1.0/kernel/arch/x86/kvm/kvm-amd.ko.xz",
                Some("kvm_amd"),
            ),
            (
                "kernel/drivers/nvme/host/nvme-core.ko.zst",
                Some("nvme_core"),
            ),
            ("/lib/modules/6.1.0/extra/zfs.ko.gz", Some("zfs")),
            ("e1000e.ko", Some("e1000e")),
            (".ko", None),
            ("/boot/odd-file.bin", None),
            ("[kvm]", None),
            ("notako", None),
        ] {
            assert_eq!(module_name(path).as_deref(), name, "{path}");
        }
    }
}
