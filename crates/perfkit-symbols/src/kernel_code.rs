//! The bytes of a running kernel's function, for annotation: from a `vmlinux` given by the
//! user (its link addresses moved by the KASLR offset, found as perf finds it: the running
//! kernel's `_stext` in `/proc/kallsyms` against the file's), else from `/proc/kcore` (an
//! ELF core file whose `PT_LOAD` segments map kernel virtual addresses; readable by root
//! only, and absent from kernels built without `CONFIG_PROC_KCORE`).
//!
//! `/proc/kcore` claims a size of the whole address space: it is read through
//! [`object::ReadCache`], which reads only the header and the ranges asked for.

use std::fs::File;
use std::path::{Path, PathBuf};

use object::read::elf::{ElfFile64, ProgramHeader};
use object::{Object, ObjectSection, ObjectSymbol, ReadCache};

use crate::Machine;

/// A kernel function's code.
#[derive(Clone, Debug)]
pub struct KernelCode {
    /// The bytes from the function's start (its running address).
    pub bytes: Vec<u8>,
    /// The architecture of the code.
    pub machine: Machine,
    /// Where they were read (`/proc/kcore` or the vmlinux).
    pub file: PathBuf,
}

/// The default place of the running kernel's memory image.
pub const KCORE: &str = "/proc/kcore";

/// The `size` bytes of kernel code at running address `start`: from `vmlinux` when given,
/// else from `kcore` (normally [`KCORE`]). The error says what to do.
pub fn kernel_code(
    start: u64,
    size: u64,
    vmlinux: Option<&Path>,
    kcore: &Path,
) -> Result<KernelCode, String> {
    if size == 0 || size > 16 << 20 {
        return Err(format!(
            "kernel symbol at {start:#x} has no usable size ({size})"
        ));
    }
    match vmlinux {
        Some(v) => from_vmlinux(v, start, size),
        None => from_kcore(kcore, start, size),
    }
}

fn machine_of(m: u16) -> Machine {
    match m {
        object::elf::EM_X86_64 => Machine::X86_64,
        object::elf::EM_AARCH64 => Machine::Aarch64,
        other => Machine::Other(other),
    }
}

fn from_kcore(path: &Path, start: u64, size: u64) -> Result<KernelCode, String> {
    let f = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{} does not exist (a kernel built without CONFIG_PROC_KCORE): give the \
             kernel's image with --vmlinux PATH",
            path.display()
        ),
        std::io::ErrorKind::PermissionDenied => format!(
            "{} is readable by root only: run as root, or give --vmlinux PATH",
            path.display()
        ),
        _ => format!("cannot open {}: {e}", path.display()),
    })?;
    let cache = ReadCache::new(f);
    let elf = ElfFile64::<object::Endianness, _>::parse(&cache)
        .map_err(|e| format!("{} is not an ELF core file: {e}", path.display()))?;
    let endian = elf.endian();
    let machine = machine_of(elf.elf_header().e_machine.get(endian));
    for ph in elf.elf_program_headers() {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let (vaddr, len, off) = (ph.p_vaddr(endian), ph.p_filesz(endian), ph.p_offset(endian));
        if start < vaddr || start.saturating_add(size) > vaddr.saturating_add(len) {
            continue;
        }
        let at = off + (start - vaddr);
        let bytes = object::ReadRef::read_bytes_at(&cache, at, size).map_err(|()| {
            format!(
                "cannot read {size} bytes at {start:#x} of {}",
                path.display()
            )
        })?;
        return Ok(KernelCode {
            bytes: bytes.to_vec(),
            machine,
            file: path.to_path_buf(),
        });
    }
    Err(format!(
        "{} maps no kernel memory at {start:#x}",
        path.display()
    ))
}

/// The running kernel's address of `_stext` (from /proc/kallsyms), if readable.
fn running_stext() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        let addr = u64::from_str_radix(it.next()?, 16).ok()?;
        let _kind = it.next()?;
        (it.next()? == "_stext" && addr != 0).then_some(addr)
    })
}

fn from_vmlinux(path: &Path, start: u64, size: u64) -> Result<KernelCode, String> {
    let data = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let elf = object::File::parse(&*data)
        .map_err(|e| format!("{} is not an ELF file: {e}", path.display()))?;
    let machine = match elf.architecture() {
        object::Architecture::X86_64 => Machine::X86_64,
        object::Architecture::Aarch64 => Machine::Aarch64,
        _ => Machine::Other(0),
    };
    // KASLR: the file's addresses move by what the running kernel's _stext moved.
    let file_stext = elf
        .symbols()
        .find(|s| s.name() == Ok("_stext"))
        .map(|s| s.address());
    let slide = match (running_stext(), file_stext) {
        (Some(run), Some(file)) => run.wrapping_sub(file),
        _ => 0,
    };
    let at = start.wrapping_sub(slide);
    for sec in elf.sections() {
        let (a, len) = (sec.address(), sec.size());
        if at < a || at.saturating_add(size) > a.saturating_add(len) {
            continue;
        }
        let bytes = sec
            .data_range(at, size)
            .ok()
            .flatten()
            .ok_or_else(|| format!("{}: no file data at {at:#x}", path.display()))?;
        return Ok(KernelCode {
            bytes: bytes.to_vec(),
            machine,
            file: path.to_path_buf(),
        });
    }
    Err(format!(
        "{} has no code at {at:#x} (running address {start:#x}): is it this kernel's image?",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF64 core file: one PT_LOAD mapping `code` at `vaddr`.
    fn core_file(vaddr: u64, code: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 64 + 56];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2; // 64-bit
        f[5] = 1; // little-endian
        f[6] = 1; // version
        f[16..18].copy_from_slice(&4u16.to_le_bytes()); // ET_CORE
        f[18..20].copy_from_slice(&object::elf::EM_X86_64.to_le_bytes());
        f[20..24].copy_from_slice(&1u32.to_le_bytes());
        f[32..40].copy_from_slice(&64u64.to_le_bytes()); // e_phoff
        f[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
        f[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
        f[56..58].copy_from_slice(&1u16.to_le_bytes()); // e_phnum
        let ph = &mut f[64..120];
        ph[..4].copy_from_slice(&object::elf::PT_LOAD.to_le_bytes());
        ph[4..8].copy_from_slice(&5u32.to_le_bytes());
        ph[8..16].copy_from_slice(&120u64.to_le_bytes()); // p_offset
        ph[16..24].copy_from_slice(&vaddr.to_le_bytes());
        ph[32..40].copy_from_slice(&(code.len() as u64).to_le_bytes());
        ph[40..48].copy_from_slice(&(code.len() as u64).to_le_bytes());
        f.extend_from_slice(code);
        f
    }

    #[test]
    fn reads_a_kernel_address_from_a_core_file_and_says_why_not() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("kcore");
        let code: Vec<u8> = (0..64u8).collect();
        std::fs::write(&p, core_file(0xffff_ffff_8100_0000, &code)).unwrap();
        let k = kernel_code(0xffff_ffff_8100_0010, 8, None, &p).unwrap();
        assert_eq!(k.bytes, &code[16..24]);
        assert_eq!(k.machine, Machine::X86_64);
        let e = kernel_code(0xffff_ffff_8200_0000, 8, None, &p).unwrap_err();
        assert!(e.contains("maps no kernel memory"), "{e}");
        let e = kernel_code(0xffff_ffff_8100_0000, 8, None, &dir.path().join("none")).unwrap_err();
        assert!(
            e.contains("CONFIG_PROC_KCORE") && e.contains("--vmlinux"),
            "{e}"
        );
        let e = kernel_code(0xffff_ffff_8100_0000, 0, None, &p).unwrap_err();
        assert!(e.contains("no usable size"), "{e}");
    }
}
