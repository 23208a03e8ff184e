//! `perf script -F brstack`: each taken branch of a sample's branch stack as perf 6.1
//! prints it, ` FROM/TO/M/X/A/CYCLES/TYPE ` (with `dso`, each address followed by its
//! object in parentheses).

use crate::script_events::{AddrSymbol, Branch};
use std::fmt::Write;

/// perf 6.1's names of `PERF_BR_*` (`branch_type_name`); 15 is `PERF_BR_EXTEND_ABI`,
/// named by [`NEW_TYPE_NAMES`] instead.
const TYPE_NAMES: [&str; 15] = [
    "N/A",
    "COND",
    "UNCOND",
    "IND",
    "CALL",
    "IND_CALL",
    "RET",
    "SYSCALL",
    "SYSRET",
    "COND_CALL",
    "COND_RET",
    "ERET",
    "IRQ",
    "SERROR",
    "NO_TX",
];

/// perf 6.1's names of `PERF_BR_NEW_*` (`branch_new_type_name`).
const NEW_TYPE_NAMES: [&str; 8] = [
    "FAULT_ALGN",
    "FAULT_DATA",
    "FAULT_INST",
    "ARCH_1",
    "ARCH_2",
    "ARCH_3",
    "ARCH_4",
    "ARCH_5",
];

/// perf's `get_branch_type`: empty for an unknown type, the extended name for
/// `PERF_BR_EXTEND_ABI` (glibc's `(null)` for one perf has no name for).
fn type_name(flags: u64) -> &'static str {
    match (flags >> 20) & 0xf {
        0 => "",
        15 => NEW_TYPE_NAMES
            .get(((flags >> 26) & 0xf) as usize)
            .copied()
            .unwrap_or("(null)"),
        t => TYPE_NAMES[t as usize],
    }
}

/// Append `branches` as perf's `brstack` field (`brstackoff` with `offsets`: each address
/// as [`Branch::offsets`] has it); `dso` adds each address's object.
pub fn push_brstack(out: &mut String, branches: &[Branch], dso: bool, offsets: bool) {
    for b in branches {
        let names = b.names.as_ref().filter(|_| dso);
        let (from, to) = b.offsets.filter(|_| offsets).unwrap_or((b.from, b.to));
        let _ = write!(out, " 0x{from:x}");
        if let Some((from, _)) = names {
            let _ = write!(out, "({})", from.dso);
        }
        let _ = write!(out, "/0x{to:x}");
        if let Some((_, to)) = names {
            let _ = write!(out, "({})", to.dso);
        }
        push_flags(out, b.flags);
    }
}

/// Append `branches` as perf's `brstacksym` field: `SYM+0xOFF` (or `[unknown]`) for each
/// end, each followed by its object with `dso`.
pub fn push_brstacksym(out: &mut String, branches: &[Branch], dso: bool) {
    let unknown = AddrSymbol {
        name: "[unknown]".into(),
        offset: None,
        dso: "[unknown]".into(),
    };
    for b in branches {
        let (from, to) = b
            .names
            .as_ref()
            .map_or((&unknown, &unknown), |(f, t)| (f, t));
        for (i, end) in [from, to].into_iter().enumerate() {
            if i == 1 {
                out.push('/');
            }
            match end.offset {
                Some(off) if end.name != "[unknown]" => {
                    let _ = write!(out, "{}+{off:#x}", end.name);
                }
                _ => out.push_str("[unknown]"),
            }
            if dso {
                let _ = write!(out, "({})", end.dso);
            }
        }
        push_flags(out, b.flags);
    }
}

/// perf's `print_bstack_flags`: `/M|P|-/X|-/A|-/CYCLES/TYPE `.
fn push_flags(out: &mut String, f: u64) {
    let (mispred, predicted) = (f & 1 != 0, f & 2 != 0);
    let _ = write!(
        out,
        "/{}/{}/{}/{}/{} ",
        match (mispred, predicted) {
            (false, false) => '-',
            (_, true) => 'P',
            (true, false) => 'M',
        },
        if f & 4 != 0 { 'X' } else { '-' },
        if f & 8 != 0 { 'A' } else { '-' },
        (f >> 4) & 0xffff,
        type_name(f)
    );
}

#[cfg(test)]
mod tests {
    use super::push_brstack;
    use crate::script_events::Branch;

    #[test]
    fn flags_as_perf_prints_them() {
        let b = |flags: u64| Branch {
            from: 0x401000,
            to: 0x402000,
            flags,
            names: None,
            offsets: None,
        };
        let mut s = String::new();
        // predicted, in_tx, 3 cycles, CALL.
        push_brstack(
            &mut s,
            &[b(2 | 4 | (3 << 4) | (4 << 20)), b(1 | 8)],
            false,
            false,
        );
        assert_eq!(
            s,
            " 0x401000/0x402000/P/X/-/3/CALL  0x401000/0x402000/M/-/A/0/ "
        );
        let mut s = String::new();
        push_brstack(&mut s, &[b((15 << 20) | (2 << 26))], false, false);
        assert_eq!(s, " 0x401000/0x402000/-/-/-/0/FAULT_INST ");
    }
}
