//! The side-band records a recording starts with, as perf synthesizes them: the kernel's
//! map, the loaded modules, the loaded BPF programs, the tasks that already run, and
//! FINISHED_INIT.

use perfkit::sys;
use perfkit_data::bpf_btf::BpfBtf;
use perfkit_data::bpf_prog_info::BpfProgInfo;
use perfkit_data::{PerfDataWriter, synth};

/// Write what perf synthesizes at the start of a file: the kernel map, the kernel
/// modules, COMM/MMAP records of `pids` (existing tasks: `-p`, `-t`, every process for
/// `-a`), and FINISHED_INIT. `attr` and `id` are the first event's (the records carry its
/// sample id).
pub fn write_preamble(
    w: &mut PerfDataWriter,
    attr: &sys::perf_event_attr,
    id: u64,
    pids: &[i32],
) -> std::io::Result<()> {
    KernelMaps::new(attr, id).write_preamble(w, attr, id, pids)
}

/// The records [`write_preamble`] writes, each a whole record (header and body): for a
/// live consumer that feeds them to its profile instead of a file.
pub fn preamble_records(attr: &sys::perf_event_attr, id: u64, pids: &[i32]) -> Vec<Vec<u8>> {
    KernelMaps::new(attr, id).preamble_records(attr, id, pids)
}

/// The records of [`write_preamble`] that stay the same while the kernel runs: its map
/// and its modules' maps (from `/proc/kallsyms`, `/proc/modules`). A recorder that starts
/// many files (`perfkit agent`, one per window) makes them once.
#[derive(Clone, Debug)]
pub struct KernelMaps {
    records: Vec<Vec<u8>>,
}

impl KernelMaps {
    /// The kernel's and its modules' MMAP records, carrying `attr`'s sample id for `id`.
    pub fn new(attr: &sys::perf_event_attr, id: u64) -> KernelMaps {
        let mut records: Vec<Vec<u8>> = synth::kernel_mmap(attr, id).into_iter().collect();
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let release = release.trim();
        // `PERFKIT_MODULES_ROOT` reads the module list and files under another root (as
        // perf's guest `root_dir`): for tests on machines without modules.
        let root = std::path::PathBuf::from(
            std::env::var_os(MODULES_ROOT_ENV).unwrap_or_else(|| "/".into()),
        );
        let modules = std::fs::read_to_string(root.join("proc/modules")).unwrap_or_default();
        let dep = std::fs::read_to_string(root.join(format!("lib/modules/{release}/modules.dep")))
            .unwrap_or_default();
        records.extend(module_mmaps(&modules, &dep, release, attr, id));
        KernelMaps { records }
    }

    /// The preamble with these kernel maps: them, COMM/MMAP records of `pids`, and
    /// FINISHED_INIT, each a whole record.
    pub fn preamble_records(
        &self,
        attr: &sys::perf_event_attr,
        id: u64,
        pids: &[i32],
    ) -> Vec<Vec<u8>> {
        let mut out = self.preamble_start(attr, id, pids).records;
        out.push(synth::finished_init());
        out
    }

    /// [`preamble_records`](Self::preamble_records) without the FINISHED_INIT that ends
    /// them: a recorder makes these before counting starts and adds the tasks that started
    /// meanwhile before ending the preamble.
    pub fn preamble_start(&self, attr: &sys::perf_event_attr, id: u64, pids: &[i32]) -> Preamble {
        let mut records = self.records.clone();
        let (mut bpf_programs, mut bpf_btfs) = (Vec::new(), Vec::new());
        if attr.has(sys::attr_flags::BPF_EVENT) {
            bpf_programs = loaded_bpf_programs();
            bpf_btfs = program_btfs(&bpf_programs, true);
            records.extend(bpf_program_records(attr, id, &bpf_programs));
        }
        if attr.has(sys::attr_flags::CGROUP) {
            records.extend(synth::cgroups(attr, id));
        }
        records.extend(synth::tasks(attr, id, pids));
        Preamble {
            records,
            bpf_programs,
            bpf_btfs,
        }
    }

    /// What [`write_preamble`] writes, with these kernel maps.
    pub fn write_preamble(
        &self,
        w: &mut PerfDataWriter,
        attr: &sys::perf_event_attr,
        id: u64,
        pids: &[i32],
    ) -> std::io::Result<()> {
        let mut made = self.preamble_start(attr, id, pids);
        made.records.push(synth::finished_init());
        made.write(w)
    }
}

/// The start of a file's side-band records, made before the file is: the records, and
/// the BPF programs they describe, for the file's `HEADER_BPF_PROG_INFO` section.
#[derive(Clone, Debug, Default)]
pub struct Preamble {
    /// Whole records (header and body), in file order.
    pub records: Vec<Vec<u8>>,
    /// The BPF programs loaded when it was made; none when not asked for
    /// (`--no-bpf-event`) or not allowed, where perf's section lists none too.
    pub bpf_programs: Vec<BpfProgInfo>,
    /// Their BTF, for the file's `HEADER_BPF_BTF` section.
    pub bpf_btfs: Vec<BpfBtf>,
}

impl Preamble {
    /// Write the records to `w` and give it the programs for its header.
    pub fn write(&self, w: &mut PerfDataWriter) -> std::io::Result<()> {
        for r in &self.records {
            w.write_record(&[r])?;
        }
        w.add_bpf_programs(self.bpf_programs.iter().cloned());
        w.add_bpf_btfs(self.bpf_btfs.iter().cloned());
        Ok(())
    }
}

/// The environment variable naming the root under which [`KernelMaps::new`] reads
/// `proc/modules` and `lib/modules/RELEASE/modules.dep` (`/` when unset).
pub const MODULES_ROOT_ENV: &str = "PERFKIT_MODULES_ROOT";

/// The BPF programs loaded now, as `perf record` lists them for its synthesized records
/// and its `HEADER_BPF_PROG_INFO` section. Without the privileges to list them, none (perf
/// says nothing either).
fn loaded_bpf_programs() -> Vec<BpfProgInfo> {
    let Ok(progs) = perfkit::bpf_programs() else {
        return Vec::new();
    };
    progs.into_iter().map(program_info).collect()
}

/// A program read from the kernel, as a perf.data section keeps it.
pub(crate) fn program_info(p: perfkit::BpfProgram) -> BpfProgInfo {
    BpfProgInfo {
        id: p.id,
        tag: p.tag,
        name: p.name,
        btf_id: p.btf_id,
        functions: p.functions,
        info: p.info,
        arrays: p.arrays,
        data: p.data,
        endian: perfkit_records::Endian::NATIVE,
    }
}

/// The BTF of `progs` that perf keeps, each once: of every program with a BTF id
/// (`perf_env__add_bpf_info`, for programs loaded while it records), or with
/// `with_func_info_only` only of those whose function info names their functions
/// (`perf_event__synthesize_one_bpf_prog`, for those loaded before). A BTF that is gone
/// is left out.
pub(crate) fn program_btfs(progs: &[BpfProgInfo], with_func_info_only: bool) -> Vec<BpfBtf> {
    let mut out: Vec<BpfBtf> = Vec::new();
    for p in progs {
        if p.btf_id == 0
            || out.iter().any(|b| b.id == p.btf_id)
            || (with_func_info_only && p.func_type_ids().is_empty())
        {
            continue;
        }
        if let Ok(Some(data)) = perfkit::bpf_btf(p.btf_id) {
            out.push(BpfBtf { id: p.btf_id, data });
        }
    }
    out
}

/// The `PERF_RECORD_KSYMBOL` and `PERF_RECORD_BPF_EVENT` records of the BPF programs
/// `progs`, as `perf record` synthesizes them (unless `--no-bpf-event`): each JIT-compiled
/// function's symbol, then the program's load event. A program with BTF takes the names
/// the kernel gave its functions (its kallsyms `[bpf]` lines, what perf reads from the
/// BTF); one without, perf's `bpf_prog_TAG_NAME`.
fn bpf_program_records(
    attr: &sys::perf_event_attr,
    id: u64,
    progs: &[BpfProgInfo],
) -> Vec<Vec<u8>> {
    let kernel_names = if progs.iter().any(|p| p.btf_id != 0) {
        bpf_kallsyms_names()
    } else {
        std::collections::HashMap::new()
    };
    let mut out = Vec::new();
    for p in progs {
        for (i, &(addr, len, _)) in p.functions.iter().enumerate() {
            if addr == 0 {
                continue;
            }
            let name = kernel_names
                .get(&addr)
                .cloned()
                .unwrap_or_else(|| p.function_name(i));
            out.push(synth::ksymbol_bpf(attr, id, addr, len, &name));
        }
        out.push(synth::bpf_prog_load(attr, id, p.id, p.tag));
    }
    out
}

/// The kernel's names of BPF functions by address: the `[bpf]` lines of `/proc/kallsyms`.
fn bpf_kallsyms_names() -> std::collections::HashMap<u64, String> {
    let text = std::fs::read_to_string("/proc/kallsyms").unwrap_or_default();
    text.lines()
        .filter(|l| l.ends_with("[bpf]"))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let addr = u64::from_str_radix(f.next()?, 16).ok()?;
            let name = f.nth(1)?;
            Some((addr, name.to_string()))
        })
        .collect()
}

/// Every process id in /proc (what a system-wide recording synthesizes).
pub fn all_pids() -> Vec<i32> {
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `PERF_RECORD_MMAP` records (pid -1) for the loaded kernel modules, as perf synthesizes
/// them (`perf_event__synthesize_modules`): in address order, address and size from
/// `/proc/modules`, file offset 0, the file from `modules.dep` (else `[name]`). Hidden
/// addresses (all zero: not root, kptr_restrict) give none.
fn module_mmaps(
    modules: &str,
    modules_dep: &str,
    release: &str,
    attr: &sys::perf_event_attr,
    id: u64,
) -> Vec<Vec<u8>> {
    let mut mods = Vec::new();
    for line in modules.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(name), Some(size), Some(addr)) = (f.first(), f.get(1), f.get(5)) else {
            continue;
        };
        let (Ok(size), Ok(addr)) = (
            size.parse::<u64>(),
            u64::from_str_radix(addr.trim_start_matches("0x"), 16),
        ) else {
            continue;
        };
        if addr == 0 {
            continue;
        }
        let file = modules_dep
            .lines()
            .filter_map(|l| l.split(':').next())
            .find(|p| {
                perfkit_records::kmod::module_name(p).is_some_and(|m| m == name.replace('-', "_"))
            })
            .map(|p| format!("/lib/modules/{release}/{p}"))
            .unwrap_or_else(|| format!("[{name}]"));
        mods.push((addr, size, file));
    }
    mods.sort_by_key(|m| m.0);
    let mut out = Vec::new();
    for (addr, size, file) in mods {
        let mut b = Vec::new();
        b.extend_from_slice(&u32::MAX.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        for v in [addr, size, 0] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(file.as_bytes());
        b.push(0);
        out.push(perfkit_data::record(
            sys::PERF_RECORD_MMAP,
            sys::PERF_RECORD_MISC_KERNEL,
            &b,
            &synth::sample_id_trailer(attr, 0, 0, id),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_maps_from_proc_modules() {
        let modules = "nvme 57344 2 - Live 0xffffffffc0123000\n\
                       kvm_amd 200704 0 - Live 0xffffffffc0200000\n\
                       hidden 4096 0 - Live 0x0000000000000000\n\
                       nvidia_uvm 1830912 - - Live 0xffffffffc080c000 (O)\n";
        let dep = "kernel/drivers/nvme/host/nvme.ko.xz: kernel/drivers/nvme/host/nvme-core.ko.xz\n\
                   kernel/arch/x86/kvm/kvm-amd.ko.xz: kernel/arch/x86/kvm/kvm.ko.xz\n";
        let mut attr = sys::perf_event_attr::new();
        attr.set(sys::attr_flags::SAMPLE_ID_ALL, true);
        attr.sample_type = sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME;
        let recs = module_mmaps(modules, dep, "6.1.0", &attr, 7);
        // (The nvidia line is as a GPU machine's kernel writes it: no reference count, a
        // taint flag.)
        assert_eq!(recs.len(), 3, "hidden addresses give no record");
        let parser = perfkit_records::RecordParser::new(&attr, perfkit_records::Endian::NATIVE);
        let mut seen = Vec::new();
        for r in &recs {
            let (type_, misc) = (
                u32::from_ne_bytes(r[..4].try_into().unwrap()),
                u16::from_ne_bytes(r[4..6].try_into().unwrap()),
            );
            let p = parser.parse(type_, misc, &r[8..]).unwrap();
            let perfkit_records::Record::Mmap(m) = p.record else {
                panic!()
            };
            assert_eq!(m.pid, -1);
            seen.push((
                m.addr,
                m.len,
                String::from_utf8_lossy(m.filename).into_owned(),
            ));
        }
        // In address order, as perf synthesizes them.
        assert_eq!(
            seen[0],
            (
                0xffffffffc0123000,
                57344,
                "/lib/modules/6.1.0/kernel/drivers/nvme/host/nvme.ko.xz".into()
            )
        );
        assert_eq!(
            seen[1].2,
            "/lib/modules/6.1.0/kernel/arch/x86/kvm/kvm-amd.ko.xz"
        );
        assert_eq!(
            seen[2],
            (0xffffffffc080c000, 1830912, "[nvidia_uvm]".into())
        );
    }
}
