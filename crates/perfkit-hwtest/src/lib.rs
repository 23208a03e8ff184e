//! Helpers of `perfkit-hwtest` (the hardware-counter tests run in the emulated arm64
//! guest by `scripts/arm64-pmu-test.sh`): the loop of known length and output parsing.

/// A test's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Passed, with what was measured.
    Pass(String),
    /// Failed, with why.
    Fail(String),
    /// Could not run here (no PMU on a development machine).
    Skip(String),
}

/// Run a loop of exactly 4 instructions per iteration, `n` times (`n` = 0 runs nothing).
///
/// aarch64: `nop; nop; subs; b.ne`. x86_64: `nop; nop; dec; jnz`. Elsewhere a plain loop
/// of unknown length.
#[inline(never)]
pub fn spin(n: u64) {
    if n == 0 {
        return;
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: the loop only decrements a register it owns; no memory, no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            "nop",
            "nop",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the loop only decrements a register it owns; no memory, no stack.
    unsafe {
        core::arch::asm!(
            "2:",
            "nop",
            "nop",
            "dec {n}",
            "jnz 2b",
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "aarch64", target_arch = "x86_64")))]
    {
        let mut i = 0u64;
        while std::hint::black_box(i) < n {
            i += 1;
        }
    }
}

/// The count `perfkit stat` (or `perf stat`) printed for `event`: the first number of
/// the line whose second column is exactly the event name (thousands separators allowed).
pub fn parse_stat_count(text: &str, event: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut cols = l.split_whitespace();
        let value = cols.next()?;
        (cols.next()? == event)
            .then(|| value.replace(',', "").parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse() {
        let text = "\n Performance counter stats for 'x --spin 5':\n\n\
             \x20      200,000,419      cycles:u\n\
             \x20      200,000,070      instructions:u       #    1.00  insn per cycle\n\
             \x20    <not counted>      instructions\n";
        assert_eq!(parse_stat_count(text, "instructions:u"), Some(200_000_070));
        assert_eq!(parse_stat_count(text, "cycles:u"), Some(200_000_419));
        assert_eq!(parse_stat_count(text, "instructions"), None);
        assert_eq!(parse_stat_count(text, "cycles"), None);
    }

    #[test]
    fn spin_runs_and_returns() {
        // The loop's length is checked against a real PMU in the guest; here it must run
        // the iterations (time grows with n) and return for 0.
        spin(0);
        let t = std::time::Instant::now();
        spin(50_000_000);
        assert!(t.elapsed() > std::time::Duration::from_micros(100));
    }
}
