//! DWARF unwinding of `--call-graph dwarf` samples with framehop.
//!
//! A sample recorded with `PERF_SAMPLE_REGS_USER` and `PERF_SAMPLE_STACK_USER` carries the
//! user registers at the interrupt and a copy of the user stack from the stack pointer up
//! (`dyn_size` valid bytes). [`Unwinder::unwind`] walks that copy with the CFI
//! (`.eh_frame` through `.eh_frame_hdr`, or `.debug_frame`) of every mapped file, read from
//! the [`Symbolizer`]'s file cache, and tells whether it reached the outermost frame or ran
//! out of stack copy ([`UnwindEnd::StackTruncated`]: perf's default 8 KiB copy ends most
//! walks early; see [`STACK_HINT`]).
//!
//! Where the CFI runs out, the walk ends as perf 6.1's libunwind walk ends (see
//! [`cfi_ends`]): a frame in no file whose unwind tables can be read (a deleted memfd,
//! anonymous JIT code, an address in no mapping) is the last frame; an instruction pointer
//! that no FDE covers is unwound by the frame-pointer chain, and a zero frame pointer ends
//! the walk, where framehop would take the top of the stack as the return address (the
//! `argc` of a process sampled at `ld.so`'s `_start`).

use std::collections::HashMap;

use framehop::aarch64::{CacheAarch64, PtrAuthMask, UnwindRegsAarch64, UnwinderAarch64};
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder as _};
use object::{Object, ObjectSection};

use crate::elf::ElfFile;
use crate::filemap::{FileBytes, SectionBytes};
use crate::maps::ProcessMaps;
use crate::symbolizer::Symbolizer;

/// perf's register numbers for x86_64 (`arch/x86/include/uapi/asm/perf_regs.h`,
/// `enum perf_event_x86_regs`): the bits of `perf_event_attr::sample_regs_user`.
pub mod x86_64_regs {
    /// `PERF_REG_X86_BP`
    pub const PERF_REG_X86_BP: u32 = 6;
    /// `PERF_REG_X86_SP`
    pub const PERF_REG_X86_SP: u32 = 7;
    /// `PERF_REG_X86_IP`
    pub const PERF_REG_X86_IP: u32 = 8;
    /// The registers unwinding needs: `sample_regs_user` for `--call-graph dwarf`.
    pub const UNWIND_MASK: u64 =
        (1 << PERF_REG_X86_BP) | (1 << PERF_REG_X86_SP) | (1 << PERF_REG_X86_IP);
}

/// perf's register numbers for aarch64 (`arch/arm64/include/uapi/asm/perf_regs.h`,
/// `enum perf_event_arm_regs`).
pub mod aarch64_regs {
    /// `PERF_REG_ARM64_X29` (frame pointer)
    pub const PERF_REG_ARM64_X29: u32 = 29;
    /// `PERF_REG_ARM64_LR` (x30)
    pub const PERF_REG_ARM64_LR: u32 = 30;
    /// `PERF_REG_ARM64_SP`
    pub const PERF_REG_ARM64_SP: u32 = 31;
    /// `PERF_REG_ARM64_PC`
    pub const PERF_REG_ARM64_PC: u32 = 32;
    /// The registers unwinding needs: `sample_regs_user` for `--call-graph dwarf`.
    pub const UNWIND_MASK: u64 = (1 << PERF_REG_ARM64_X29)
        | (1 << PERF_REG_ARM64_LR)
        | (1 << PERF_REG_ARM64_SP)
        | (1 << PERF_REG_ARM64_PC);
}

/// The advice for incomplete stacks, as the report header prints it.
pub const STACK_HINT: &str = "stacks were cut by the size of the user stack copy: record with --call-graph dwarf,16384 or more";

/// The CPU architecture of the recorded process (perf.data `HEADER_ARCH`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arch {
    /// x86_64: registers IP, SP, BP (`PERF_REG_X86_*`).
    X86_64,
    /// aarch64: registers PC, SP, X29, LR (`PERF_REG_ARM64_*`).
    Aarch64,
}

impl Arch {
    /// The architecture this program runs on, if supported.
    pub fn native() -> Option<Arch> {
        if cfg!(target_arch = "x86_64") {
            Some(Arch::X86_64)
        } else if cfg!(target_arch = "aarch64") {
            Some(Arch::Aarch64)
        } else {
            None
        }
    }
}

/// The `PERF_SAMPLE_REGS_USER` part of a sample: `abi` (`PERF_SAMPLE_REGS_ABI_*`) and one
/// value per bit set in `mask` (`attr.sample_regs_user`), in ascending bit order.
#[derive(Clone, Copy, Debug)]
pub struct UserRegs<'a> {
    /// `PERF_SAMPLE_REGS_ABI_NONE` (0: no user registers, e.g. a kernel thread),
    /// `_32` (1) or `_64` (2).
    pub abi: u64,
    /// `attr.sample_regs_user`.
    pub mask: u64,
    /// The register values as recorded.
    pub values: &'a [u64],
}

impl UserRegs<'_> {
    /// The value of register number `reg` (a `PERF_REG_*` number), if recorded.
    pub fn get(&self, reg: u32) -> Option<u64> {
        if reg >= 64 || self.mask & (1u64 << reg) == 0 {
            return None;
        }
        let index = (self.mask & ((1u64 << reg) - 1)).count_ones() as usize;
        self.values.get(index).copied()
    }
}

/// How a walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnwindEnd {
    /// The outermost frame was reached (CFI says so, or the frame chain ends).
    Complete,
    /// The walk needed stack memory at `address`, outside the recorded copy: the stack copy
    /// was too small (see [`STACK_HINT`]) or a frame was misread.
    StackTruncated {
        /// The address that could not be read.
        address: u64,
    },
    /// The sample has no user registers (`PERF_SAMPLE_REGS_ABI_NONE`) or lacks IP/SP.
    NoRegisters,
    /// The unwinder stopped for another reason (framehop's message).
    Failed(String),
    /// The walk hit [`Unwinder::max_frames`].
    TooDeep,
}

/// The return addresses of one sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnwindOutput {
    /// The instruction pointer, then return addresses, innermost first.
    pub frames: Vec<u64>,
    /// How the walk ended.
    pub end: UnwindEnd,
}

impl UnwindOutput {
    /// Did the walk reach the outermost frame?
    pub fn is_complete(&self) -> bool {
        self.end == UnwindEnd::Complete
    }

    /// The addresses to symbolize: the instruction pointer as is, each return address minus
    /// one (so that a call at the end of a function, or to a `noreturn` function, is charged
    /// to the caller's call instruction and its source line).
    pub fn lookup_addresses(&self) -> impl Iterator<Item = u64> + '_ {
        self.frames
            .iter()
            .enumerate()
            .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
    }
}

struct ProcessUnwinder {
    generation: u64,
    x86_64: UnwinderX86_64<SectionBytes>,
    aarch64: UnwinderAarch64<SectionBytes>,
    /// The mappings whose unwind tables were read, by start address.
    cfi: Vec<CfiRange>,
}

/// A mapping with unwind tables, and what finding its FDEs needs.
struct CfiRange {
    avma: std::ops::Range<u64>,
    /// Runtime address minus file address.
    bias: u64,
    /// `.eh_frame_hdr` and `.eh_frame` with their file addresses, where both exist.
    eh: Option<EhTables>,
}

struct EhTables {
    hdr: SectionBytes,
    hdr_svma: u64,
    frame: SectionBytes,
    frame_svma: u64,
}

impl ProcessUnwinder {
    fn cfi_for(&self, address: u64) -> Option<&CfiRange> {
        let i = self.cfi.partition_point(|c| c.avma.start <= address);
        let c = self.cfi.get(i.checked_sub(1)?)?;
        c.avma.contains(&address).then_some(c)
    }
}

impl CfiRange {
    /// Whether an FDE of `.eh_frame` covers `address` (true where it cannot be told).
    fn covers(&self, address: u64) -> bool {
        let Some(eh) = &self.eh else {
            return true;
        };
        let svma = address.wrapping_sub(self.bias);
        let hdr_bytes: &[u8] = &eh.hdr;
        let frame_bytes: &[u8] = &eh.frame;
        let bases = gimli::BaseAddresses::default()
            .set_eh_frame_hdr(eh.hdr_svma)
            .set_eh_frame(eh.frame_svma);
        let hdr = gimli::EhFrameHdr::new(hdr_bytes, gimli::LittleEndian);
        let Ok(parsed) = hdr.parse(&bases, 8) else {
            return true;
        };
        let Some(table) = parsed.table() else {
            return true;
        };
        let frame = gimli::EhFrame::new(frame_bytes, gimli::LittleEndian);
        match table.fde_for_address(&frame, &bases, svma, |f, b, o| {
            use gimli::UnwindSection as _;
            f.cie_from_offset(b, o)
        }) {
            Ok(fde) => fde.contains(svma),
            Err(gimli::Error::NoUnwindInfoForAddress) => false,
            Err(_) => true,
        }
    }
}

/// What perf's libunwind walk does at a frame that framehop would unwind differently.
#[derive(Debug, PartialEq, Eq)]
enum CfiEnd {
    /// Unwind with framehop.
    Continue,
    /// The frame is the last one: its file's unwind tables cannot be read (perf's
    /// `find_proc_info` fails with `-EINVAL`, which ends libunwind's `unw_step`).
    Stop,
    /// No FDE covers the instruction pointer: follow the frame-pointer chain
    /// (libunwind's fallback for `-UNW_ENOINFO`).
    FramePointer,
}

/// perf's verdict for frame `index` at `lookup` (the instruction pointer, or a return
/// address minus one).
fn cfi_ends(p: &ProcessUnwinder, index: usize, lookup: u64) -> CfiEnd {
    match p.cfi_for(lookup) {
        None => CfiEnd::Stop,
        Some(c) if index == 0 && !c.covers(lookup) => CfiEnd::FramePointer,
        Some(_) => CfiEnd::Continue,
    }
}

/// Unwinds samples of many processes; keeps per-process module lists (rebuilt when the
/// process's [`ProcessMaps::generation`] changes) and framehop's unwind-rule caches.
pub struct Unwinder {
    processes: HashMap<u32, ProcessUnwinder>,
    cache_x86_64: Box<CacheX86_64>,
    cache_aarch64: Box<CacheAarch64>,
    max_frames: usize,
}

impl Default for Unwinder {
    fn default() -> Self {
        Unwinder::new()
    }
}

impl Unwinder {
    /// An unwinder with no processes yet; walks stop after 1024 frames.
    pub fn new() -> Unwinder {
        Unwinder {
            processes: HashMap::new(),
            cache_x86_64: Box::new(CacheX86_64::new()),
            cache_aarch64: Box::new(CacheAarch64::new()),
            max_frames: 1024,
        }
    }

    /// The frame limit of one walk.
    pub fn max_frames(&self) -> usize {
        self.max_frames
    }

    /// Change the frame limit of one walk (perf's `--max-stack`).
    pub fn set_max_frames(&mut self, n: usize) {
        self.max_frames = n.max(1);
    }

    /// Unwind one sample of process `pid`. `stack` is the `PERF_SAMPLE_STACK_USER` data cut to
    /// its `dyn_size`; it starts at the sampled stack pointer.
    pub fn unwind(
        &mut self,
        symbolizer: &mut Symbolizer,
        arch: Arch,
        pid: u32,
        maps: &ProcessMaps,
        regs: &UserRegs<'_>,
        stack: &[u8],
    ) -> UnwindOutput {
        use aarch64_regs::*;
        use x86_64_regs::*;
        if regs.abi == 0 {
            return UnwindOutput {
                frames: Vec::new(),
                end: UnwindEnd::NoRegisters,
            };
        }
        let (pc, sp) = match arch {
            Arch::X86_64 => (regs.get(PERF_REG_X86_IP), regs.get(PERF_REG_X86_SP)),
            Arch::Aarch64 => (regs.get(PERF_REG_ARM64_PC), regs.get(PERF_REG_ARM64_SP)),
        };
        let (Some(pc), Some(sp)) = (pc, sp) else {
            return UnwindOutput {
                frames: Vec::new(),
                end: UnwindEnd::NoRegisters,
            };
        };
        let stale = self
            .processes
            .get(&pid)
            .is_none_or(|p| p.generation != maps.generation());
        if stale {
            let p = build_process(symbolizer, maps);
            self.processes.insert(pid, p);
        }
        let Some(p) = self.processes.get(&pid) else {
            return UnwindOutput {
                frames: Vec::new(),
                end: UnwindEnd::Failed("no process".into()),
            };
        };
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let bytes = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            let mut b = [0u8; 8];
            b.copy_from_slice(bytes);
            Ok(u64::from_le_bytes(b))
        };
        let max = self.max_frames;
        let mut frames = Vec::new();
        let end = match arch {
            Arch::X86_64 => {
                let bp = regs.get(PERF_REG_X86_BP).unwrap_or(0);
                let mut uregs = UnwindRegsX86_64::new(pc, sp, bp);
                let cache = &mut self.cache_x86_64;
                walk(p, pc, &mut frames, max, &mut |address, fp| {
                    if fp {
                        return frame_pointer_step(&mut uregs, &mut read_stack);
                    }
                    p.x86_64
                        .unwind_frame(address, &mut uregs, cache, &mut read_stack)
                })
            }
            Arch::Aarch64 => {
                let fp = regs.get(PERF_REG_ARM64_X29).unwrap_or(0);
                let lr = regs.get(PERF_REG_ARM64_LR).unwrap_or(0);
                // Strip pointer-authentication bits from return addresses: bits above the
                // highest code address of the process cannot be address bits.
                let mask = PtrAuthMask::from_max_known_address(p.aarch64.max_known_code_address());
                let mut uregs = UnwindRegsAarch64::new_with_ptr_auth_mask(mask, lr, sp, fp);
                let cache = &mut self.cache_aarch64;
                // perf's frame-pointer fallback is x86's; aarch64 keeps framehop's rules
                // where no FDE covers the address.
                walk(p, pc, &mut frames, max, &mut |address, _| {
                    p.aarch64
                        .unwind_frame(address, &mut uregs, cache, &mut read_stack)
                })
            }
        };
        UnwindOutput { frames, end }
    }
}

/// Walk from `pc`, asking `step` for each caller's return address (with `true` where perf
/// follows the frame-pointer chain instead of the CFI).
fn walk(
    p: &ProcessUnwinder,
    pc: u64,
    frames: &mut Vec<u64>,
    max: usize,
    step: &mut dyn FnMut(FrameAddress, bool) -> Result<Option<u64>, framehop::Error>,
) -> UnwindEnd {
    let mut address = FrameAddress::from_instruction_pointer(pc);
    loop {
        if frames.len() >= max {
            return UnwindEnd::TooDeep;
        }
        frames.push(address.address());
        let how = cfi_ends(p, frames.len() - 1, address.address_for_lookup());
        if how == CfiEnd::Stop {
            return UnwindEnd::Complete;
        }
        if frames.len() >= max {
            return UnwindEnd::TooDeep;
        }
        match step(address, how == CfiEnd::FramePointer) {
            Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                Some(a) => address = a,
                None => return UnwindEnd::Complete,
            },
            Ok(None) => return UnwindEnd::Complete,
            Err(framehop::Error::CouldNotReadStack(address)) => {
                return UnwindEnd::StackTruncated { address };
            }
            Err(e) => return UnwindEnd::Failed(e.to_string()),
        }
    }
}

/// libunwind's x86_64 frame-chain step: a zero frame pointer ends the chain; otherwise the
/// caller's frame pointer is at `[bp]` and the return address at `[bp + 8]`.
fn frame_pointer_step(
    regs: &mut UnwindRegsX86_64,
    read_stack: &mut impl FnMut(u64) -> Result<u64, ()>,
) -> Result<Option<u64>, framehop::Error> {
    let bp = regs.bp();
    if bp == 0 {
        return Ok(None);
    }
    let read = |read_stack: &mut dyn FnMut(u64) -> Result<u64, ()>, at: u64| {
        read_stack(at).map_err(|_| framehop::Error::CouldNotReadStack(at))
    };
    let new_bp = read(read_stack, bp)?;
    let ra_at = bp.checked_add(8).ok_or(framehop::Error::IntegerOverflow)?;
    let ra = read(read_stack, ra_at)?;
    regs.set_sp(ra_at + 8);
    regs.set_bp(new_bp);
    Ok(Some(ra))
}

fn build_process(symbolizer: &mut Symbolizer, maps: &ProcessMaps) -> ProcessUnwinder {
    let mut x86_64 = UnwinderX86_64::new();
    let mut aarch64 = UnwinderAarch64::new();
    let mut cfi = Vec::new();
    for m in maps.iter() {
        if m.is_anonymous() || m.is_kernel() {
            continue;
        }
        let Some(dso) = symbolizer.dso_for(m) else {
            continue;
        };
        let Some(seg) = dso.binary.segment_for_range(m.pgoff, m.end - m.start) else {
            continue;
        };
        // avma = svma - seg.vaddr + seg.offset - pgoff + start
        let base_avma = m
            .start
            .wrapping_sub(m.pgoff)
            .wrapping_add(seg.offset)
            .wrapping_sub(seg.vaddr);
        let Some(info) = section_info(&dso.binary, dso.debug.as_ref()) else {
            continue;
        };
        if info.eh_frame.is_none() && info.debug_frame.is_none() {
            continue;
        }
        let eh = match (
            &info.eh_frame_hdr,
            info.eh_frame_hdr_svma.as_ref(),
            &info.eh_frame,
            info.eh_frame_svma.as_ref(),
        ) {
            (Some(hdr), Some(hs), Some(frame), Some(fs)) => Some(EhTables {
                hdr: hdr.clone(),
                hdr_svma: hs.start,
                frame: frame.clone(),
                frame_svma: fs.start,
            }),
            _ => None,
        };
        cfi.push(CfiRange {
            avma: m.start..m.end,
            bias: base_avma,
            eh,
        });
        let module = Module::new(m.path.clone(), m.start..m.end, base_avma, info);
        x86_64.add_module(module.clone());
        aarch64.add_module(module);
    }
    cfi.sort_by_key(|c: &CfiRange| c.avma.start);
    ProcessUnwinder {
        generation: maps.generation(),
        x86_64,
        aarch64,
        cfi,
    }
}

fn section(
    file: &ElfFile,
    obj: &object::File<'_>,
    name: &str,
) -> Option<(std::ops::Range<u64>, SectionBytes)> {
    let sec = obj.section_by_name(name)?;
    let range = sec.address()..sec.address() + sec.size();
    let data = sec.uncompressed_data().ok()?;
    let bytes = match data {
        std::borrow::Cow::Borrowed(b) => SectionBytes::of_subslice(&file.bytes, b)?,
        std::borrow::Cow::Owned(v) => {
            let len = v.len();
            SectionBytes::new(FileBytes::from_vec(v), 0..len)?
        }
    };
    Some((range, bytes))
}

/// The unwind sections framehop reads, without copying (`.debug_frame` may come from the
/// separate debug file).
fn section_info(
    bin: &ElfFile,
    debug: Option<&ElfFile>,
) -> Option<ExplicitModuleSectionInfo<SectionBytes>> {
    let obj = object::File::parse(bin.bytes.bytes()).ok()?;
    let text = section(bin, &obj, ".text");
    let eh_frame = section(bin, &obj, ".eh_frame");
    let eh_frame_hdr = section(bin, &obj, ".eh_frame_hdr");
    let got = obj
        .section_by_name(".got")
        .map(|s| s.address()..s.address() + s.size());
    let mut debug_frame = section(bin, &obj, ".debug_frame").map(|(_, d)| d);
    if debug_frame.is_none()
        && let Some(d) = debug
        && let Ok(dobj) = object::File::parse(d.bytes.bytes())
    {
        debug_frame = section(d, &dobj, ".debug_frame").map(|(_, d)| d);
    }
    let (text_svma, text) = text.map_or((None, None), |(r, d)| (Some(r), Some(d)));
    let (eh_frame_svma, eh_frame) = eh_frame.map_or((None, None), |(r, d)| (Some(r), Some(d)));
    let (eh_frame_hdr_svma, eh_frame_hdr) =
        eh_frame_hdr.map_or((None, None), |(r, d)| (Some(r), Some(d)));
    Some(ExplicitModuleSectionInfo {
        base_svma: 0,
        text_svma,
        text,
        got_svma: got,
        eh_frame_svma,
        eh_frame,
        eh_frame_hdr_svma,
        eh_frame_hdr,
        debug_frame,
        stubs_svma: None,
        stub_helper_svma: None,
        unwind_info: None,
        text_segment_svma: None,
        text_segment: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_regs_index_by_mask() {
        let vals = [60u64, 70, 80];
        let r = UserRegs {
            abi: 2,
            mask: x86_64_regs::UNWIND_MASK,
            values: &vals,
        };
        assert_eq!(r.get(x86_64_regs::PERF_REG_X86_BP), Some(60));
        assert_eq!(r.get(x86_64_regs::PERF_REG_X86_SP), Some(70));
        assert_eq!(r.get(x86_64_regs::PERF_REG_X86_IP), Some(80));
        assert_eq!(r.get(0), None);
        assert_eq!(r.get(64), None);
        let short = UserRegs {
            abi: 2,
            mask: x86_64_regs::UNWIND_MASK,
            values: &vals[..1],
        };
        assert_eq!(short.get(x86_64_regs::PERF_REG_X86_IP), None);
        let vals = [29u64, 30, 31, 32];
        let a = UserRegs {
            abi: 2,
            mask: aarch64_regs::UNWIND_MASK,
            values: &vals,
        };
        assert_eq!(a.get(aarch64_regs::PERF_REG_ARM64_PC), Some(32));
        assert_eq!(a.get(aarch64_regs::PERF_REG_ARM64_LR), Some(30));
    }

    #[test]
    fn no_registers() {
        let mut u = Unwinder::new();
        let mut s = Symbolizer::new(crate::Options::default());
        let out = u.unwind(
            &mut s,
            Arch::X86_64,
            1,
            &ProcessMaps::new(),
            &UserRegs {
                abi: 0,
                mask: 0,
                values: &[],
            },
            &[],
        );
        assert_eq!(out.end, UnwindEnd::NoRegisters);
        assert!(out.frames.is_empty());
    }
}
