//! `perf script -F brstackinsn` (and `brstackinsnlen`): the instructions executed between
//! the branches of a sample's branch stack, oldest block first, as perf 6.1 prints them.
//!
//! Each block runs from one branch's target to the source of the next newer branch; its
//! bytes are read from the mapped file and split into instructions. perf 6.1 (built, as
//! Debian's, without libxed) prints each instruction as its bytes (`insn: 48 89 e5 `),
//! decoded for their length only; so does perfkit, with iced-x86 for the length. On
//! other architectures perf 6.1 has no decoder: one `?` per block, then its "mismatch"
//! line, which perfkit prints too. A function's name heads the instructions where they
//! enter it; the branch ending a block is followed by its flags, cycles, the running total
//! and the block's IPC.

use crate::script_events::Branch;
use std::fmt::Write;

/// perf's `MAXBB`: the largest block it reads.
const MAXBB: u64 = 16384;
/// perf's `MAXINSN`: the longest x86 instruction, read past a block's end.
const MAXINSN: u64 = 15;

/// The length of the x86-64 instruction `bytes` start with, as the kernel's instruction
/// decoder (perf's) finds it: it also measures the opcodes that are invalid in 64-bit mode
/// (`07`, `pop %es`), which iced-x86 refuses, so those get their 32-bit length.
fn insn_len(bytes: &[u8]) -> Option<usize> {
    let decode = |bits| {
        let insn = iced_x86::Decoder::new(bits, bytes, iced_x86::DecoderOptions::NONE).decode();
        Some(insn.len()).filter(|&n| !insn.is_invalid() && n <= bytes.len())
    };
    let group = || {
        // An undefined member of a group whose members all have the same operands
        // (`ff /7`): the kernel's tables give it the length of the group's first member.
        let (&op, rest) = bytes.split_first()?;
        let modrm = *rest.first()?;
        if !matches!(op, 0xfe | 0xff | 0x8f) || modrm & 0x38 == 0 {
            return None;
        }
        let mut b = bytes.to_vec();
        b[1] = modrm & !0x38;
        let insn = iced_x86::Decoder::new(64, &b, iced_x86::DecoderOptions::NONE).decode();
        Some(insn.len()).filter(|&n| !insn.is_invalid() && n <= bytes.len())
    };
    decode(64).or_else(group).or_else(|| {
        // Only a first byte that is no REX prefix (those are inc/dec in 32-bit mode).
        bytes
            .first()
            .filter(|b| **b & 0xf0 != 0x40)
            .and_then(|_| decode(32))
    })
}

/// What the blocks are read and named from: the sample's thread's mappings.
pub trait Code {
    /// Whether `addr` is a kernel address (perf's `machine__kernel_ip`).
    fn is_kernel(&self, addr: u64) -> bool;
    /// Up to `len` bytes of the file mapped at `addr` (fewer at its end); `None` where
    /// nothing readable is mapped.
    fn read(&mut self, addr: u64, len: u64) -> Option<Vec<u8>>;
    /// The function covering `addr`: its name and its extent `[start, end)`, in the
    /// process's addresses.
    fn symbol(&mut self, addr: u64, kernel: bool) -> Option<(String, u64, u64)>;
    /// Whether the code is x86 (perf 6.1 decodes no other).
    fn x86(&self) -> bool;
}

/// perf's `grab_bb`: a block's bytes, nothing, or "it crosses between kernel and user".
enum Block {
    Bytes(Vec<u8>),
    Nothing,
    Crosses,
}

struct State<'a, C: Code> {
    code: &'a mut C,
    /// The mode of the last block read (perf's `x.cpumode`).
    kernel: bool,
    /// The function whose name was printed last.
    last: Option<(u64, u64)>,
    total_cycles: u64,
    ilen: bool,
}

impl<C: Code> State<'_, C> {
    fn grab(&mut self, start: u64, end: u64) -> Block {
        if start == 0 || end == 0 {
            return Block::Nothing;
        }
        self.kernel = self.code.is_kernel(start);
        if self.kernel != self.code.is_kernel(end) {
            return Block::Crosses;
        }
        if end.wrapping_sub(start) > MAXBB - MAXINSN {
            return Block::Nothing;
        }
        match self.code.read(start, end - start + MAXINSN) {
            Some(b) if !b.is_empty() => Block::Bytes(b),
            _ => Block::Nothing,
        }
    }

    /// perf's `dump_insn`: the text and the length (0: not decoded).
    fn dump(&self, bytes: &[u8]) -> (String, usize) {
        if !self.code.x86() {
            return ("?".into(), 0);
        }
        let Some(len) = insn_len(bytes) else {
            return ("<bad>".into(), 0);
        };
        let mut s = String::from("insn: ");
        for b in &bytes[..len] {
            let _ = write!(s, "{b:02x} ");
        }
        (s, len)
    }

    /// perf's `arch_is_branch` (intel-pt's decoder: jumps, calls, returns, interrupts).
    fn is_branch(&self, bytes: &[u8]) -> bool {
        use iced_x86::FlowControl as F;
        if !self.code.x86() {
            return false;
        }
        let mut dec = iced_x86::Decoder::new(64, bytes, iced_x86::DecoderOptions::NONE);
        let insn = dec.decode();
        matches!(
            insn.flow_control(),
            F::UnconditionalBranch
                | F::IndirectBranch
                | F::ConditionalBranch
                | F::Return
                | F::Call
                | F::IndirectCall
                | F::Interrupt
        )
    }

    /// perf's `ip__fprintf_sym`: the function's name where the instructions enter it.
    fn sym(&mut self, out: &mut String, addr: u64) {
        if self
            .last
            .is_some_and(|(start, end)| addr >= start && addr < end)
        {
            return;
        }
        let Some((name, start, end)) = self.code.symbol(addr, self.kernel) else {
            return;
        };
        let off = addr.wrapping_sub(start) as i64 as i32;
        let _ = write!(out, "\t{name}");
        if off != 0 {
            let _ = write!(out, "{off:+}");
        }
        out.push_str(":\n");
        self.last = Some((start, end));
    }

    /// perf's `ip__fprintf_jump`: a block's last instruction, the branch, and its flags.
    fn jump(&mut self, out: &mut String, ip: u64, b: &Branch, bytes: &[u8], insns: u64) {
        let (text, ilen) = self.dump(bytes);
        let _ = write!(out, "\t{ip:016x}\t{text:<30}\t");
        if self.ilen {
            let _ = write!(out, "ilen: {ilen}\t");
        }
        let f = b.flags;
        out.push('#');
        for (bit, name) in [(2, " PRED"), (1, " MISPRED"), (4, " INTX"), (8, " ABORT")] {
            if f & bit != 0 {
                out.push_str(name);
            }
        }
        let cycles = (f >> 4) & 0xffff;
        if cycles != 0 {
            self.total_cycles += cycles;
            let _ = write!(out, " {cycles} cycles [{}]", self.total_cycles);
            if insns != 0 {
                let ipc = insns as f32 / cycles as f32;
                let _ = write!(out, " {:.2} IPC", f64::from(ipc));
            }
        }
        out.push('\n');
    }

    /// One instruction inside a block; its length (0: stop).
    fn insn(&self, out: &mut String, ip: u64, bytes: &[u8]) -> usize {
        let (text, ilen) = self.dump(bytes);
        let _ = write!(out, "\t{ip:016x}\t{text}");
        if self.ilen {
            let _ = write!(out, "\tilen: {ilen}");
        }
        out.push('\n');
        ilen
    }
}

/// Append the blocks of `branches` (newest first, as recorded) of a sample at `ip`, as
/// perf 6.1's `brstackinsn` (`ilen`: `brstackinsnlen`, each instruction's length too).
pub fn push_brstackinsn<C: Code>(
    out: &mut String,
    code: &mut C,
    ip: u64,
    branches: &[Branch],
    ilen: bool,
) {
    if branches.is_empty() {
        return;
    }
    let nr = branches.len();
    let mut st = State {
        code,
        kernel: false,
        last: None,
        total_cycles: 0,
        ilen,
    };
    out.push('\n');
    // The first branch's source: its block's start is not known.
    let first = &branches[nr - 1];
    if let Block::Bytes(buf) = st.grab(first.from, first.from) {
        st.sym(out, first.from);
        st.jump(out, first.from, first, &buf, 0);
    }
    // Every block, oldest first.
    let mut i = nr as isize - 2;
    while i >= 0 {
        let start = branches[i as usize + 1].to;
        let mut end = branches[i as usize].from;
        let mut blk = st.grab(start, end);
        // A transfer between kernel and user the hardware filtered out: join the blocks.
        if matches!(blk, Block::Crosses) && i > 0 {
            i -= 1;
            end = branches[i as usize].from;
            blk = st.grab(start, end);
        }
        let Block::Bytes(buf) = blk else {
            i -= 1;
            continue;
        };
        let mut insns = 0;
        let mut off = 0u64;
        while off < buf.len() as u64 {
            let ip = start + off;
            st.sym(out, ip);
            if ip == end {
                insns += 1;
                st.jump(out, ip, &branches[i as usize], &buf[off as usize..], insns);
                break;
            }
            let n = st.insn(out, ip, &buf[off as usize..]);
            if n == 0 {
                break;
            }
            insns += 1;
            off += n as u64;
        }
        if off != end.wrapping_sub(start) {
            out.push_str("\tmismatch of LBR data and executable\n");
        }
        i -= 1;
    }
    // The sample is on the newest branch: its target did not run yet.
    if branches[0].from == ip || branches[0].flags & 8 != 0 {
        return;
    }
    // The block from the newest branch's target to the sample.
    let start = branches[0].to;
    let mut end = ip;
    if end < start {
        // A branch the hardware missed: look 128 bytes on for the next one.
        end = start + 128;
    }
    let blk = st.grab(start, end);
    st.sym(out, start);
    let Block::Bytes(buf) = blk else {
        // At least the sampled instruction.
        if let Block::Bytes(buf) = st.grab(ip, ip) {
            st.insn(out, ip, &buf);
        }
        return;
    };
    let mut off = 0u64;
    while off <= end - start {
        let at = &buf[(off as usize).min(buf.len())..];
        let n = st.insn(out, start + off, at);
        if n == 0 {
            break;
        }
        if st.is_branch(at) && start + off != ip {
            out.push_str("\t... not reaching sample ...\n");
            break;
        }
        off += n as u64;
    }
}
