//! BPF programs' JIT-compiled code as a recording keeps it (perf's `HEADER_BPF_PROG_INFO`
//! with its `jited_prog_insns`, line info and `HEADER_BPF_BTF`), for annotating a
//! `bpf_prog_TAG_NAME` symbol: the kernel forgets a program's code once it is unloaded,
//! and no kernel image holds it.

use perfkit_data::bpf_btf::{self, BpfBtf};
use perfkit_data::bpf_prog_info::{self, BpfProgInfo};
use perfkit_data::{PerfData, feature};
use perfkit_disasm::Arch;

/// The BPF programs of a recording and their BTF.
#[derive(Clone, Debug, Default)]
pub struct BpfCode {
    programs: Vec<BpfProgInfo>,
    btfs: Vec<BpfBtf>,
    /// The recording machine's architecture (`HEADER_ARCH`), which the JIT compiled for.
    arch: Option<Arch>,
}

/// One JIT-compiled function of a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfFunction<'a> {
    /// The program's id.
    pub prog_id: u32,
    /// Its code.
    pub code: &'a [u8],
    /// Where it was loaded.
    pub start: u64,
    /// The machine code's architecture.
    pub arch: Arch,
    /// Source lines by the address they start at, in address order: (address, file,
    /// line number, the line's text), from the program's line info and BTF.
    pub lines: Vec<(u64, String, u32, Option<String>)>,
}

impl BpfCode {
    /// The programs of `file`'s sections (none without them).
    pub fn from_file(file: &PerfData) -> BpfCode {
        let raw = |bit: usize| {
            file.features
                .raw
                .iter()
                .find(|(b, _)| *b == bit)
                .map(|(_, r)| r.as_slice())
        };
        let arch = match file.features.arch.as_deref() {
            Some("x86_64") => Some(Arch::X86_64),
            Some("aarch64" | "arm64") => Some(Arch::Aarch64),
            _ => None,
        };
        BpfCode {
            programs: raw(feature::BPF_PROG_INFO)
                .and_then(|r| bpf_prog_info::parse(r, file.endian))
                .unwrap_or_default(),
            btfs: raw(feature::BPF_BTF)
                .and_then(|r| bpf_btf::parse(r, file.endian))
                .unwrap_or_default(),
            arch,
        }
    }

    /// Programs read from the running kernel (`top`'s side-band watcher), whose JIT
    /// compiled for this machine's architecture.
    pub fn live(programs: Vec<BpfProgInfo>, btfs: Vec<BpfBtf>) -> BpfCode {
        let arch = match std::env::consts::ARCH {
            "x86_64" => Some(Arch::X86_64),
            "aarch64" => Some(Arch::Aarch64),
            _ => None,
        };
        BpfCode {
            programs,
            btfs,
            arch,
        }
    }

    /// The function loaded at `start` whose code the recording keeps, or why there is
    /// none.
    pub fn function_at(&self, start: u64) -> Result<BpfFunction<'_>, String> {
        let Some((p, i)) = self.programs.iter().find_map(|p| {
            let i = p.functions.iter().position(|f| f.0 == start)?;
            Some((p, i))
        }) else {
            return Err(format!(
                "the recording's HEADER_BPF_PROG_INFO section has no BPF function at \
                 {start:#x} (a program loaded and unloaded before perf or perfkit could \
                 read it, or a file recorded with --no-bpf-event)"
            ));
        };
        let insns = p.jited_insns();
        let at: usize = p.functions[..i].iter().map(|f| f.1 as usize).sum();
        let len = p.functions[i].1 as usize;
        let Some(code) = insns.get(at..at + len) else {
            return Err(format!(
                "the recording keeps no JIT code of BPF program {} (a file that lists \
                 programs without their code: perfkit before this version)",
                p.id
            ));
        };
        let Some(arch) = self.arch else {
            return Err("the recording names no architecture this disassembler knows".into());
        };
        let btf = self
            .btfs
            .iter()
            .find(|b| b.id == p.btf_id && p.btf_id != 0)
            .map(|b| b.data.as_slice());
        let end = start + len as u64;
        let mut lines: Vec<(u64, String, u32, Option<String>)> = p
            .lines()
            .into_iter()
            .filter(|(_, addr)| (start..end).contains(addr))
            .map(|(l, addr)| {
                let text = |off| btf.and_then(|b| bpf_btf::string(b, off));
                let file = text(l.file_name_off).unwrap_or_default();
                (addr, file, l.line_col >> 10, text(l.line_off))
            })
            .collect();
        lines.sort_by_key(|l| l.0);
        Ok(BpfFunction {
            prog_id: p.id,
            code,
            start,
            arch,
            lines,
        })
    }
}
