//! x86-64 through iced-x86.

use iced_x86::{
    Decoder, DecoderOptions, FlowControl, Formatter, GasFormatter, Instruction, IntelFormatter,
};

use crate::{Insn, Syntax};

pub(crate) fn disassemble(code: &[u8], start: u64, syntax: Syntax) -> Vec<Insn> {
    let mut decoder = Decoder::with_ip(64, code, start, DecoderOptions::NONE);
    let mut fmt: Box<dyn Formatter> = match syntax {
        Syntax::Att => Box::new(GasFormatter::new()),
        Syntax::Intel => Box::new(IntelFormatter::new()),
    };
    let o = fmt.options_mut();
    o.set_uppercase_hex(false);
    o.set_hex_prefix("0x");
    o.set_hex_suffix("");
    o.set_space_after_operand_separator(false);
    o.set_branch_leading_zeros(false);
    o.set_leading_zeros(false);
    o.set_show_branch_size(false);
    o.set_rip_relative_addresses(false);
    o.set_small_hex_numbers_in_decimal(false);
    o.set_show_zero_displacements(true);
    o.set_always_show_scale(true);
    let mut out = Vec::new();
    let mut insn = Instruction::default();
    while decoder.can_decode() {
        let pos = decoder.position();
        decoder.decode_out(&mut insn);
        let bytes = code[pos..(pos + insn.len()).min(code.len())].to_vec();
        if insn.is_invalid() {
            // One byte is bad; decoding goes on from the next one, as objdump does.
            let next = pos + 1;
            let _ = decoder.set_position(next);
            decoder.set_ip(start + next as u64);
            out.push(Insn {
                addr: start + pos as u64,
                bytes: code[pos..next].to_vec(),
                mnemonic: "(bad)".into(),
                operands: String::new(),
                target: None,
                call: false,
            });
            continue;
        }
        let direct = matches!(
            insn.flow_control(),
            FlowControl::UnconditionalBranch | FlowControl::ConditionalBranch | FlowControl::Call
        ) && insn.op_count() == 1
            && matches!(
                insn.op0_kind(),
                iced_x86::OpKind::NearBranch16
                    | iced_x86::OpKind::NearBranch32
                    | iced_x86::OpKind::NearBranch64
            );
        let mut mnemonic = String::new();
        fmt.format_mnemonic(&insn, &mut mnemonic);
        // iced prints prefixes (`rep`, `bnd`, `notrack`) with the mnemonic; keep them.
        let mnemonic = mnemonic.trim().to_string();
        let (operands, target) = if direct {
            let t = insn.near_branch_target();
            (format!("{t:x}"), Some(t))
        } else {
            let mut ops = String::new();
            // objdump prints the scale of an index register (`(%rax,%rax,1)`), and no
            // scale without one (`(%rax)`, where iced would print `(%rax,)`).
            fmt.options_mut()
                .set_always_show_scale(insn.memory_index() != iced_x86::Register::None);
            fmt.format_all_operands(&insn, &mut ops);
            (ops, None)
        };
        out.push(Insn {
            addr: insn.ip(),
            bytes,
            mnemonic,
            operands,
            target,
            call: insn.flow_control() == FlowControl::Call,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::{Arch, Syntax, disassemble};

    #[test]
    fn a_loop_decodes_as_objdump_prints_it() {
        // 11d0: mov %rdx,%rcx; imul %rdx,%rcx; add %rcx,%rax; add $0x1,%rdx;
        // cmp %rdx,%rdi; jne 11d0; ret
        let code = [
            0x48, 0x89, 0xd1, 0x48, 0x0f, 0xaf, 0xca, 0x48, 0x01, 0xc8, 0x48, 0x83, 0xc2, 0x01,
            0x48, 0x39, 0xd7, 0x75, 0xed, 0xc3,
        ];
        let v = disassemble(Arch::X86_64, Syntax::Att, &code, 0x11d0);
        let text: Vec<String> = v.iter().map(|i| i.text()).collect();
        assert_eq!(
            text,
            [
                "mov    %rdx,%rcx",
                "imul   %rdx,%rcx",
                "add    %rcx,%rax",
                "add    $0x1,%rdx",
                "cmp    %rdx,%rdi",
                "jne    11d0",
                "ret"
            ]
        );
        assert_eq!(v[5].target, Some(0x11d0));
        assert_eq!(v[5].addr, 0x11e1);
        assert!(!v[5].call);
        // objdump's padding forms: scale 1 and a zero displacement are printed.
        let nop = disassemble(
            Arch::X86_64,
            Syntax::Att,
            &[0x66, 0x0f, 0x1f, 0x44, 0, 0],
            0,
        );
        assert_eq!(nop[0].text(), "nopw   0x0(%rax,%rax,1)");
        // ... but no scale without an index register.
        for (bytes, text) in [
            (&[0x0f, 0x1f, 0x00][..], "nopl   (%rax)"),
            (&[0x0f, 0x1f, 0x40, 0x00][..], "nopl   0x0(%rax)"),
            (&[0x48, 0x8b, 0x04, 0x24][..], "mov    (%rsp),%rax"),
            (
                &[0x48, 0x8b, 0x04, 0xc5, 0x10, 0, 0, 0][..],
                "mov    0x10(,%rax,8),%rax",
            ),
        ] {
            let v = disassemble(Arch::X86_64, Syntax::Att, bytes, 0);
            assert_eq!(v[0].text(), text, "{bytes:02x?}");
        }
        let intel = disassemble(Arch::X86_64, Syntax::Intel, &code, 0x11d0);
        assert_eq!(intel[0].text(), "mov    rcx,rdx");
    }

    #[test]
    fn undecodable_bytes_are_bad_not_lost() {
        let v = disassemble(Arch::X86_64, Syntax::Att, &[0x0f, 0x0b, 0x06, 0xc3], 0x100);
        assert_eq!(v[0].mnemonic, "ud2");
        assert_eq!(v[1].mnemonic, "(bad)");
        assert_eq!(v[1].addr, 0x102);
        assert_eq!(v[2].mnemonic, "ret");
    }
}
