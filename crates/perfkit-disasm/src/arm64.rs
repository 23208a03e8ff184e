//! AArch64 through yaxpeax-arm.

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{ARMv8, InstDecoder, Opcode, Operand};

use crate::Insn;

pub(crate) fn disassemble(code: &[u8], start: u64) -> Vec<Insn> {
    let decoder = InstDecoder::default();
    let mut out = Vec::new();
    for (i, word) in code.chunks(4).enumerate() {
        let addr = start + 4 * i as u64;
        let bytes = word.to_vec();
        let mut reader = U8Reader::new(word);
        let decoded = if word.len() == 4 {
            Decoder::<ARMv8>::decode(&decoder, &mut reader).ok()
        } else {
            None
        };
        let Some(inst) = decoded else {
            out.push(Insn {
                addr,
                bytes,
                mnemonic: "(bad)".into(),
                operands: String::new(),
                target: None,
                call: false,
            });
            continue;
        };
        let branch = matches!(
            inst.opcode,
            Opcode::B
                | Opcode::BL
                | Opcode::Bcc(_)
                | Opcode::CBZ
                | Opcode::CBNZ
                | Opcode::TBZ
                | Opcode::TBNZ
        );
        let target = if branch {
            inst.operands.iter().find_map(|o| match o {
                Operand::PCOffset(off) => Some(addr.wrapping_add(*off as u64)),
                _ => None,
            })
        } else {
            None
        };
        let full = inst.to_string();
        let (mnemonic, mut operands) = match full.split_once(' ') {
            Some((m, rest)) => (m.to_string(), rest.trim().to_string()),
            None => (full.clone(), String::new()),
        };
        if let Some(t) = target {
            // `cbz x0, $+0x10` -> `cbz x0, 4005d0`, as objdump prints targets.
            let rel = operands
                .rfind('$')
                .map_or(operands.len(), |p| p.min(operands.len()));
            operands.truncate(rel);
            operands.push_str(&format!("{t:x}"));
        }
        out.push(Insn {
            addr,
            bytes,
            mnemonic,
            operands,
            target,
            call: inst.opcode == Opcode::BL,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::{Arch, Syntax, disassemble};

    fn le(words: &[u32]) -> Vec<u8> {
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn branches_get_absolute_targets() {
        // 400: add x0, x0, #1 ; 404: cmp x0, x1 ; 408: b.ne 400 ; 40c: bl 500 ; 410: ret
        let code = le(&[
            0x9100_0400,
            0xeb01_001f,
            0x54ff_ffc1,
            0x9400_003d,
            0xd65f_03c0,
        ]);
        let v = disassemble(Arch::Aarch64, Syntax::Att, &code, 0x400);
        assert_eq!(v.len(), 5);
        assert_eq!(v[0].mnemonic, "add");
        assert_eq!(v[2].target, Some(0x400), "{:?}", v[2]);
        assert!(v[2].operands.ends_with("400"), "{:?}", v[2]);
        assert_eq!(v[3].target, Some(0x500));
        assert!(v[3].call);
        assert_eq!(v[4].mnemonic, "ret");
        assert_eq!(v[4].target, None);
    }

    #[test]
    fn a_short_tail_is_bad() {
        let v = disassemble(
            Arch::Aarch64,
            Syntax::Att,
            &[0xc0, 0x03, 0x5f, 0xd6, 0x00],
            0,
        );
        assert_eq!(v[0].mnemonic, "ret");
        assert_eq!(v[1].mnemonic, "(bad)");
    }
}
