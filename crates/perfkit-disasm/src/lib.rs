//! Disassembly of one function's machine code, for `perfkit annotate` and `top`'s annotate
//! view: instructions with their address, raw bytes, text and, for direct jumps and calls,
//! the target address (so the caller can print `jne 11d0 <hot+0x10>` as perf does).
//!
//! No `objdump` process: decoding is in process with the decoders made for the job.
//!
//! * x86-64: [`iced-x86`](https://docs.rs/iced-x86), the most complete and best-tested x86
//!   decoder in Rust; its GNU assembler (AT&T) formatter prints what `objdump -d` prints
//!   (perf annotate's default syntax), its Intel formatter `-M intel`.
//! * arm64: [`yaxpeax-arm`](https://docs.rs/yaxpeax-arm), a small, fuzzed, no-unsafe ARMv8
//!   decoder; branch targets come from its `PCOffset` operands.
//!
//! Bytes that do not decode become one `(bad)` instruction of the architecture's minimum
//! length, as objdump prints them, so a function with data in it still lists every address.
#![forbid(unsafe_code)]

mod arm64;
mod x86;

/// The machine a function's code is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arch {
    /// x86-64 (ELF `EM_X86_64`).
    X86_64,
    /// AArch64 (ELF `EM_AARCH64`).
    Aarch64,
}

/// Which assembler syntax to print (x86 only; arm64 has one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Syntax {
    /// AT&T, as `objdump -d` and perf print by default.
    #[default]
    Att,
    /// Intel (`-M intel`).
    Intel,
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    /// Its address (in the same space as the `start` given to [`disassemble`]).
    pub addr: u64,
    /// Its encoding.
    pub bytes: Vec<u8>,
    /// The mnemonic (`mov`, `jne`, `b.ne`).
    pub mnemonic: String,
    /// The operands as the assembler prints them; for a direct branch, the target's address
    /// in hex without a prefix (`11d0`), as objdump prints it.
    pub operands: String,
    /// The target of a direct jump, conditional jump or call.
    pub target: Option<u64>,
    /// Whether this is a call (the target is another function, usually).
    pub call: bool,
}

impl Insn {
    /// `mnemonic operands`, the mnemonic padded to 6 columns as perf annotate prints it.
    pub fn text(&self) -> String {
        if self.operands.is_empty() {
            self.mnemonic.clone()
        } else {
            format!("{:<6} {}", self.mnemonic, self.operands)
        }
    }
}

/// Decode `code`, which starts at address `start`, into instructions, in order.
pub fn disassemble(arch: Arch, syntax: Syntax, code: &[u8], start: u64) -> Vec<Insn> {
    match arch {
        Arch::X86_64 => x86::disassemble(code, start, syntax),
        Arch::Aarch64 => arm64::disassemble(code, start),
    }
}
