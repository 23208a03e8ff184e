//! Annotation: each sampled function's instructions with the share of samples that hit
//! each one, source lines from DWARF between them, and jump targets named (`perf annotate`).
//!
//! The model ([`annotate`]) reads the profile's leaf frames (their offset into the symbol),
//! asks the symbolizer for the function's code from the very file the samples came from
//! (same build-id rules as symbolization) and disassembles it in process
//! (`perfkit-disasm`). [`write_stdio`] prints it as `perf annotate --stdio` does;
//! [`Annotation`] serializes to JSON.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use perfkit_disasm::Arch;
pub use perfkit_disasm::Syntax;
use perfkit_symbols::{Machine, Mapping, Symbolizer};
use serde::Serialize;

use crate::Profile;
use crate::report::Filter;

/// What a percentage is relative to (`--percent-type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum PercentType {
    /// The function's own period (perf's default).
    #[default]
    LocalPeriod,
    /// The event's whole period.
    GlobalPeriod,
    /// The function's sample count.
    LocalHits,
    /// The event's sample count.
    GlobalHits,
}

impl PercentType {
    /// Parse perf's names: `local-period`, `global-period`, `local-hits`, `global-hits`
    /// (also `period-local` and the like, as perf accepts both orders).
    pub fn parse(s: &str) -> Option<PercentType> {
        let mut parts: Vec<&str> = s.split('-').collect();
        parts.sort_unstable();
        match parts.as_slice() {
            ["local", "period"] => Some(PercentType::LocalPeriod),
            ["global", "period"] => Some(PercentType::GlobalPeriod),
            ["hits", "local"] => Some(PercentType::LocalHits),
            ["global", "hits"] => Some(PercentType::GlobalHits),
            _ => None,
        }
    }

    /// The words perf prints in the header (`local period`).
    pub fn label(self) -> &'static str {
        match self {
            PercentType::LocalPeriod => "local period",
            PercentType::GlobalPeriod => "global period",
            PercentType::LocalHits => "local hits",
            PercentType::GlobalHits => "global hits",
        }
    }
}

/// What to annotate and how.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Only this symbol (`-s`).
    pub symbol: Option<String>,
    /// Only functions of these DSOs (path or file name, `--dso`).
    pub dsos: Vec<String>,
    /// Interleave source lines (`--source`, the default; `--no-source` turns it off).
    pub source: bool,
    /// What percentages are relative to.
    pub percent_type: PercentType,
    /// x86 syntax (`-M intel`).
    pub syntax: Syntax,
    /// Sample filters shared with report (comm, pid, tid, cpu, time).
    pub filter: Filter,
    /// The running kernel's image, for kernel functions (`--vmlinux`); without it they
    /// are read from [`kcore`](Self::kcore).
    pub vmlinux: Option<std::path::PathBuf>,
    /// The kernel memory image (default `/proc/kcore`).
    pub kcore: Option<std::path::PathBuf>,
    /// The recording's BPF programs, whose JIT code annotates their `bpf_prog_*` symbols.
    pub bpf: crate::bpf_code::BpfCode,
}

/// One line of an annotation.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Line {
    /// A source line (file, line number, its text when the file is readable here).
    Source {
        /// Source file.
        file: String,
        /// Line number.
        line: u32,
        /// The line's text, if the file could be read.
        text: Option<String>,
    },
    /// An instruction.
    Insn {
        /// Address in the file's virtual address space (what objdump prints).
        addr: u64,
        /// Raw encoding, hex bytes separated by spaces (`--asm-raw`).
        raw: String,
        /// The instruction's text (`mov    %rdx,%rcx`), jump targets as `11d0 <hot+0x10>`.
        text: String,
        /// Target of a direct jump or call.
        target: Option<u64>,
        /// Samples at this instruction.
        hits: u64,
        /// Their period.
        period: u64,
        /// The share, in percent, by [`Options::percent_type`].
        percent: f64,
    },
}

/// One annotated function.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Annotation {
    /// Symbol name.
    pub symbol: String,
    /// Its DSO (path as recorded).
    pub dso: String,
    /// The file whose code is shown (may be a build-id cache copy).
    pub file: String,
    /// The event.
    pub event: String,
    /// Symbol start (file virtual address) and size.
    pub start: u64,
    /// Size in bytes.
    pub size: u64,
    /// Samples in the function.
    pub hits: u64,
    /// Their period.
    pub period: u64,
    /// Which percentage the lines carry.
    pub percent_type: PercentType,
    /// Lines in address order, sources before the instructions they belong to.
    pub lines: Vec<Line>,
}

/// A function that has samples but could not be annotated, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Skipped {
    /// Symbol name.
    pub symbol: String,
    /// DSO.
    pub dso: String,
    /// Why.
    pub reason: String,
}

#[derive(Default)]
struct Acc {
    hits: u64,
    period: u64,
    file_offset: Option<u64>,
    /// A kernel function's running start address.
    kernel_start: Option<u64>,
    by_offset: HashMap<u64, (u64, u64)>,
}

/// Annotate every sampled function that passes `opts`, hottest first (by period), per
/// event. Functions without code here (kernel, JIT, missing files) come back in the second
/// list with the reason.
pub fn annotate(
    profile: &Profile,
    symbolizer: &mut Symbolizer,
    opts: &Options,
) -> (Vec<Annotation>, Vec<Skipped>) {
    let nevents = profile.events.len().max(1);
    let mut accs: Vec<HashMap<u32, Acc>> = (0..nevents).map(|_| HashMap::new()).collect();
    let mut totals = vec![(0u64, 0u64); nevents];
    for s in &profile.samples {
        if !opts.filter.keep(profile, s) {
            continue;
        }
        let ev = (s.event as usize).min(nevents - 1);
        totals[ev].0 += u64::from(s.count);
        totals[ev].1 += s.period;
        let Some(leaf) = profile.sample_frame(s.stack) else {
            continue;
        };
        let frame = &profile.frames[leaf as usize];
        let acc = accs[ev].entry(frame.func).or_default();
        acc.hits += u64::from(s.count);
        acc.period += s.period;
        if let Some(so) = frame.sym_offset
            && profile.funcs[frame.func as usize].kernel
        {
            acc.kernel_start.get_or_insert(frame.addr.wrapping_sub(so));
            let e = acc.by_offset.entry(so).or_default();
            e.0 += u64::from(s.count);
            e.1 += s.period;
        } else if let (Some(mo), Some(so)) = (frame.map_offset, frame.sym_offset) {
            acc.file_offset.get_or_insert(mo);
            let e = acc.by_offset.entry(so).or_default();
            e.0 += u64::from(s.count);
            e.1 += s.period;
        }
    }
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (ev, funcs) in accs.into_iter().enumerate() {
        let mut funcs: Vec<(u32, Acc)> = funcs.into_iter().collect();
        funcs.sort_by(|a, b| b.1.period.cmp(&a.1.period).then(a.0.cmp(&b.0)));
        for (fid, acc) in funcs {
            let func = &profile.funcs[fid as usize];
            if opts.symbol.as_ref().is_some_and(|s| *s != func.name) {
                continue;
            }
            if !opts.dsos.is_empty()
                && !opts.dsos.iter().any(|d| {
                    *d == func.dso || perfkit_symbols::dso_short_name(&func.dso) == d.as_str()
                })
            {
                continue;
            }
            let skip = |reason: String| Skipped {
                symbol: func.name.clone(),
                dso: func.dso.clone(),
                reason,
            };
            let (den_hits, den_period) = match opts.percent_type {
                PercentType::LocalPeriod | PercentType::LocalHits => (acc.hits, acc.period),
                PercentType::GlobalPeriod | PercentType::GlobalHits => totals[ev],
            };
            let event = profile
                .events
                .get(ev)
                .map_or_else(String::new, |e| e.name.clone());
            if func.kernel {
                let Some(start) = acc.kernel_start else {
                    skipped.push(skip("its samples were not named by a kernel symbol".into()));
                    continue;
                };
                let size = profile.sym_sizes.get(&fid).copied().unwrap_or(0);
                // Named by a KSYMBOL record: JIT code that no kernel image file holds, but
                // the recording's HEADER_BPF_PROG_INFO may (and, while the program is
                // loaded, the kernel's memory: `top`).
                let mut bpf_why = None;
                if func.dso.starts_with("bpf_prog_") {
                    match opts.bpf.function_at(start) {
                        Ok(f) => {
                            let insns =
                                perfkit_disasm::disassemble(f.arch, opts.syntax, f.code, start);
                            let lines = insn_lines(
                                &insns,
                                start,
                                &acc,
                                opts.percent_type,
                                (den_hits, den_period),
                                |a| {
                                    let (_, file, line, text) =
                                        f.lines.iter().rev().find(|l| l.0 <= a)?;
                                    Some(Line::Source {
                                        file: file.clone(),
                                        line: *line,
                                        text: text.clone(),
                                    })
                                },
                                |t| kernel_target(symbolizer, t),
                            );
                            out.push(Annotation {
                                symbol: func.name.clone(),
                                dso: func.dso.clone(),
                                file: format!("[bpf_prog_info {}]", f.prog_id),
                                event,
                                start,
                                size: f.code.len() as u64,
                                hits: acc.hits,
                                period: acc.period,
                                percent_type: opts.percent_type,
                                lines,
                            });
                            continue;
                        }
                        Err(why) => bpf_why = Some(why),
                    }
                }
                let kcore = opts
                    .kcore
                    .clone()
                    .unwrap_or_else(|| perfkit_symbols::kernel_code::KCORE.into());
                let code = match perfkit_symbols::kernel_code::kernel_code(
                    start,
                    size,
                    opts.vmlinux.as_deref(),
                    &kcore,
                ) {
                    Ok(c) => c,
                    Err(why) => {
                        skipped.push(skip(bpf_why.unwrap_or(why)));
                        continue;
                    }
                };
                let arch = match code.machine {
                    Machine::X86_64 => Arch::X86_64,
                    Machine::Aarch64 => Arch::Aarch64,
                    Machine::Other(m) => {
                        skipped.push(skip(format!("no disassembler for ELF machine {m}")));
                        continue;
                    }
                };
                let insns = perfkit_disasm::disassemble(arch, opts.syntax, &code.bytes, start);
                let lines = insn_lines(
                    &insns,
                    start,
                    &acc,
                    opts.percent_type,
                    (den_hits, den_period),
                    |_| None,
                    |t| kernel_target(symbolizer, t),
                );
                out.push(Annotation {
                    symbol: func.name.clone(),
                    dso: func.dso.clone(),
                    file: code.file.display().to_string(),
                    event,
                    start,
                    size,
                    hits: acc.hits,
                    period: acc.period,
                    percent_type: opts.percent_type,
                    lines,
                });
                continue;
            }
            let Some(file_offset) = acc.file_offset else {
                skipped.push(skip(
                    "no file offset for its samples (not a file mapping)".into(),
                ));
                continue;
            };
            let mapping = Mapping {
                start: 0,
                end: u64::MAX,
                pgoff: 0,
                path: func.dso.clone(),
                build_id: profile.dso_build_ids.get(&func.dso).cloned(),
            };
            let code = match symbolizer.function_code(&mapping, file_offset, opts.source) {
                Ok(c) => c,
                Err(why) => {
                    skipped.push(skip(why.to_string()));
                    continue;
                }
            };
            let arch = match code.machine {
                Machine::X86_64 => Arch::X86_64,
                Machine::Aarch64 => Arch::Aarch64,
                Machine::Other(m) => {
                    skipped.push(skip(format!("no disassembler for ELF machine {m}")));
                    continue;
                }
            };
            let start = code.symbol.start;
            let insns = perfkit_disasm::disassemble(arch, opts.syntax, &code.bytes, start);
            let mut sources = SourceFiles::default();
            let lines = insn_lines(
                &insns,
                start,
                &acc,
                opts.percent_type,
                (den_hits, den_period),
                |addr| {
                    if !opts.source {
                        return None;
                    }
                    let l = code.line_at(addr)?;
                    let file = l.file.to_string();
                    Some(Line::Source {
                        text: sources.line(&file, l.line),
                        file,
                        line: l.line,
                    })
                },
                |t| {
                    symbolizer
                        .symbol_at_vaddr(&mapping, t)
                        .map(|s| (s.name.to_string(), s.offset))
                },
            );
            out.push(Annotation {
                symbol: func.name.clone(),
                dso: func.dso.clone(),
                file: code.file.display().to_string(),
                event,
                start,
                size: code.symbol.size,
                hits: acc.hits,
                period: acc.period,
                percent_type: opts.percent_type,
                lines,
            });
        }
    }
    (out, skipped)
}

/// The annotation's lines: each instruction with its share, after the source line it
/// starts (`source_at`, when that changes), jump targets named by `name_at`.
#[allow(clippy::too_many_arguments)]
/// A jump or call target in kernel code: its symbol and the offset into it.
fn kernel_target(symbolizer: &mut Symbolizer, addr: u64) -> Option<(String, u64)> {
    let f = symbolizer.symbolize_kernel(addr);
    f.symbol.as_ref().map(|s| (s.name.to_string(), s.offset))
}

fn insn_lines(
    insns: &[perfkit_disasm::Insn],
    start: u64,
    acc: &Acc,
    percent_type: PercentType,
    (den_hits, den_period): (u64, u64),
    mut source_at: impl FnMut(u64) -> Option<Line>,
    mut name_at: impl FnMut(u64) -> Option<(String, u64)>,
) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut last_src: Option<(String, u32)> = None;
    for insn in insns {
        if let Some(src) = source_at(insn.addr)
            && let Line::Source { file, line, .. } = &src
        {
            let key = (file.clone(), *line);
            if last_src.as_ref() != Some(&key) {
                lines.push(src);
                last_src = Some(key);
            }
        }
        let (hits, period) = acc
            .by_offset
            .get(&(insn.addr - start))
            .copied()
            .unwrap_or_default();
        let percent = match percent_type {
            PercentType::LocalPeriod | PercentType::GlobalPeriod => pct(period, den_period),
            PercentType::LocalHits | PercentType::GlobalHits => pct(hits, den_hits),
        };
        let mut text = insn.text();
        if let Some(t) = insn.target
            && let Some((name, offset)) = name_at(t)
        {
            if offset == 0 {
                let _ = write!(text, " <{name}>");
            } else {
                let _ = write!(text, " <{name}+{offset:#x}>");
            }
        }
        lines.push(Line::Insn {
            addr: insn.addr,
            raw: insn
                .bytes
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<Vec<_>>()
                .join(" "),
            text,
            target: insn.target,
            hits,
            period,
            percent,
        });
    }
    lines
}

fn pct(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// Source files read once each.
#[derive(Default)]
struct SourceFiles {
    files: HashMap<String, Option<Vec<String>>>,
}

impl SourceFiles {
    fn line(&mut self, file: &str, line: u32) -> Option<String> {
        let lines = self.files.entry(file.to_string()).or_insert_with(|| {
            std::fs::read_to_string(file)
                .ok()
                .map(|t| t.lines().map(str::to_string).collect())
        });
        let l = lines.as_ref()?.get((line as usize).checked_sub(1)?)?;
        Some(l.trim().to_string())
    }
}

/// Layout choices of [`write_stdio`].
#[derive(Clone, Copy, Debug, Default)]
pub struct StdioOptions {
    /// Print each instruction's encoding (`--asm-raw`).
    pub asm_raw: bool,
    /// Print a sorted summary of source lines first (`-l`, `--print-line`).
    pub print_line: bool,
}

/// Print annotations as `perf annotate --stdio` does.
pub fn write_stdio<W: Write + ?Sized>(
    out: &mut W,
    anns: &[Annotation],
    layout: StdioOptions,
) -> io::Result<()> {
    for a in anns {
        if layout.print_line {
            write_line_summary(out, a)?;
        }
        let dso = perfkit_symbols::dso_short_name(&a.dso);
        let head = format!(
            " Percent |\tSource code & Disassembly of {dso} for {} ({} samples, percent: {})",
            a.event,
            a.hits,
            a.percent_type.label()
        );
        writeln!(out, "{head}")?;
        writeln!(out, "{}", "-".repeat(head.len() + 5))?;
        writeln!(out, "         :")?;
        writeln!(out, "         :")?;
        writeln!(out, "         :")?;
        writeln!(out, "         : 3    Disassembly of section .text:")?;
        writeln!(out, "         :")?;
        writeln!(out, "         : 5    {:016x} <{}>:", a.start, a.symbol)?;
        writeln!(out, "         : 6    {}():", a.symbol)?;
        let end = a.start + a.size;
        let digits = format!("{end:x}").len();
        let w = digits + 2;
        let pad = " ".repeat(7usize.saturating_sub(digits).max(1));
        for l in &a.lines {
            match l {
                Line::Source { file, line, text } => match text {
                    Some(t) => writeln!(out, "         : {line:<4} {t}")?,
                    None => writeln!(out, "         : {line:<4} {file}:{line}")?,
                },
                Line::Insn {
                    addr,
                    raw,
                    text,
                    percent,
                    ..
                } => {
                    if layout.asm_raw {
                        writeln!(out, "{percent:8.2} : {addr:>w$x}:{pad}{raw:<21} {text}")?;
                    } else {
                        writeln!(out, "{percent:8.2} : {addr:>w$x}:{pad}{text}")?;
                    }
                }
            }
        }
        writeln!(out)?;
    }
    Ok(())
}

/// perf's `-l` summary: source lines by their share, hottest first.
fn write_line_summary<W: Write + ?Sized>(out: &mut W, a: &Annotation) -> io::Result<()> {
    let mut by_line: Vec<(String, f64)> = Vec::new();
    let mut cur: Option<String> = None;
    for l in &a.lines {
        match l {
            Line::Source { file, line, .. } => {
                let base = file.rsplit('/').next().unwrap_or(file);
                cur = Some(format!("{base}:{line}"));
            }
            Line::Insn { percent, .. } if *percent > 0.0 => {
                let key = cur.clone().unwrap_or_else(|| "??:0".into());
                match by_line.iter_mut().find(|(k, _)| *k == key) {
                    Some(e) => e.1 += percent,
                    None => by_line.push((key, *percent)),
                }
            }
            Line::Insn { .. } => {}
        }
    }
    by_line.sort_by(|x, y| y.1.total_cmp(&x.1));
    writeln!(out, "\nSorted summary for file {}", a.file)?;
    writeln!(out, "----------------------------------------------\n")?;
    for (k, p) in by_line {
        writeln!(out, "  {p:6.2} {k}")?;
    }
    writeln!(out)
}

#[cfg(test)]
mod tests {
    use super::PercentType;

    #[test]
    fn percent_types_parse_in_either_order() {
        assert_eq!(
            PercentType::parse("local-period"),
            Some(PercentType::LocalPeriod)
        );
        assert_eq!(
            PercentType::parse("period-global"),
            Some(PercentType::GlobalPeriod)
        );
        assert_eq!(
            PercentType::parse("hits-local"),
            Some(PercentType::LocalHits)
        );
        assert_eq!(
            PercentType::parse("global-hits"),
            Some(PercentType::GlobalHits)
        );
        assert_eq!(PercentType::parse("local"), None);
    }
}
