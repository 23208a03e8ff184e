//! The attrs `record` samples with: perf's rules for sample_type, periods, call chains and
//! side-band records, in one place (`record`, and later `top`, build their attrs here).

use crate::EventSpec;
use perfkit::sys::{self, attr_flags as f};

/// How call chains are recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    /// No call chains.
    None,
    /// Kernel-walked frame-pointer chains (`PERF_SAMPLE_CALLCHAIN`).
    Fp,
    /// User registers and a copy of this many bytes of user stack, unwound later.
    Dwarf(u32),
}

/// perf's default user stack copy for dwarf mode; the report hints at larger values.
pub const DEFAULT_DWARF_STACK: u32 = 8192;

impl std::str::FromStr for CallGraph {
    type Err = String;

    /// perf's `--call-graph` values: `fp`, `dwarf[,STACK-BYTES]` (`lbr` is refused: it
    /// needs branch stacks).
    fn from_str(cg: &str) -> Result<CallGraph, String> {
        let mut parts = cg.split(',');
        match parts.next() {
            Some("fp") => Ok(CallGraph::Fp),
            Some("dwarf") => {
                let size = match parts.next() {
                    Some(s) => s
                        .trim()
                        .parse::<u64>()
                        .map_err(|_| format!("--call-graph {cg}: `{s}` is not a byte count"))?,
                    None => u64::from(DEFAULT_DWARF_STACK),
                };
                // The kernel takes a multiple of 8 up to 65528 (u16 dyn_size).
                if size == 0 || size > 65528 {
                    return Err(format!(
                        "--call-graph {cg}: the stack size must be 8 to 65528 bytes"
                    ));
                }
                Ok(CallGraph::Dwarf(
                    (size as u32).next_multiple_of(8).min(65528),
                ))
            }
            Some("lbr") => Err(format!(
                "--call-graph {cg}: branch stacks are not available on this machine's PMU"
            )),
            _ => Err(format!("--call-graph {cg}: use fp or dwarf[,SIZE]")),
        }
    }
}

/// Frequency or period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampling {
    /// Samples per second.
    Freq(u64),
    /// Every N events.
    Period(u64),
}

/// `kernel.perf_event_max_sample_rate`.
pub fn max_sample_rate() -> Option<u64> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_sample_rate")
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// x86_64 user registers perf records for dwarf unwinding (AX..R15 and IP, SP, BP as perf
/// names them: the mask of `PERF_REG_X86_*` numbers 0..=23 without the segment registers).
#[cfg(target_arch = "x86_64")]
pub const DWARF_REGS_MASK: u64 = 0xff_0fff;
/// aarch64 user registers: X0..X30, SP, PC.
#[cfg(target_arch = "aarch64")]
pub const DWARF_REGS_MASK: u64 = (1 << 33) - 1;
/// Other architectures: no dwarf unwinding support.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
pub const DWARF_REGS_MASK: u64 = 0;

/// How `record` samples: the command line's defaults, which event terms override.
/// (`inherit` and `enable_on_exec` depend on the place: [`OpenOptions`](crate::OpenOptions).)
#[derive(Clone, Copy, Debug)]
pub struct SamplingOptions {
    /// Frequency or period (a period in the event string wins).
    pub sampling: Sampling,
    /// Call chains (`call-graph=` in the event string wins).
    pub call_graph: CallGraph,
    /// Record the CPU of each sample (always for system-wide recordings).
    pub sample_cpu: bool,
}

/// The sampling attrs of a list of events, one each: the first carries the side-band
/// records (mmap, comm, task); several events get `PERF_SAMPLE_IDENTIFIER`.
pub fn sampling_attrs(specs: &mut [EventSpec], opts: &SamplingOptions) {
    let several = specs.len() > 1;
    for (i, s) in specs.iter_mut().enumerate() {
        s.attr = sampling_attr(
            s,
            opts.sampling,
            opts.call_graph,
            several,
            opts.sample_cpu,
            i == 0,
        );
    }
}

/// Turn an event spec into the sampling attr `record` opens.
///
/// `first` marks the event that carries the side-band records (mmap2, comm, task).
fn sampling_attr(
    spec: &EventSpec,
    sampling: Sampling,
    call_graph: CallGraph,
    several: bool,
    sample_cpu: bool,
    first: bool,
) -> sys::perf_event_attr {
    let mut a = spec.attr;
    // Event terms win over the command line: call-graph=, stack-size=, inherit.
    let call_graph = match spec.terms.call_graph {
        Some(perfkit_events::CallGraph::None) => CallGraph::None,
        Some(perfkit_events::CallGraph::Fp) => CallGraph::Fp,
        Some(perfkit_events::CallGraph::Dwarf) => CallGraph::Dwarf(
            spec.terms
                .stack_size
                .map_or(DEFAULT_DWARF_STACK, |s| s.next_multiple_of(8).min(65528)),
        ),
        // No branch stacks on this machine: lbr (and modes added later) fall back to the
        // command line choice.
        Some(_) | None => call_graph,
    };
    // `{a,b}:S`: only the leader samples; the members are read into its samples.
    let member_of_sampling_group = spec.grouped && !spec.leader && spec.leader_sampling;
    // A period or frequency given in the event string (pmu/period=N/) wins.
    if member_of_sampling_group {
        a.sample_period = 0;
        a.set(f::FREQ, false);
    } else if a.sample_period == 0 {
        match sampling {
            Sampling::Freq(hz) => {
                a.sample_period = hz;
                a.set(f::FREQ, true);
            }
            Sampling::Period(n) => {
                a.sample_period = n;
                a.set(f::FREQ, false);
            }
        }
    }
    a.sample_type |= sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME;
    a.sample_type |= sys::PERF_SAMPLE_PERIOD;
    if several {
        a.sample_type |= sys::PERF_SAMPLE_IDENTIFIER;
    }
    if sample_cpu {
        a.sample_type |= sys::PERF_SAMPLE_CPU;
    }
    if a.type_ == sys::PERF_TYPE_TRACEPOINT {
        a.sample_type |= sys::PERF_SAMPLE_RAW;
    }
    match call_graph {
        CallGraph::None => {}
        CallGraph::Fp => a.sample_type |= sys::PERF_SAMPLE_CALLCHAIN,
        CallGraph::Dwarf(size) => {
            a.sample_type |= sys::PERF_SAMPLE_CALLCHAIN
                | sys::PERF_SAMPLE_REGS_USER
                | sys::PERF_SAMPLE_STACK_USER;
            a.sample_regs_user = DWARF_REGS_MASK;
            a.sample_stack_user = size;
            // The kernel's user part of the chain is useless without frame pointers.
            a.set(f::EXCLUDE_CALLCHAIN_USER, true);
        }
    }
    a.read_format = sys::PERF_FORMAT_ID | sys::PERF_FORMAT_LOST;
    if spec.sample_read {
        a.sample_type |= sys::PERF_SAMPLE_READ;
        if spec.grouped {
            a.read_format |= sys::PERF_FORMAT_GROUP;
        }
    }
    // Group members follow their leader, which alone is enabled.
    a.set(f::DISABLED, spec.leader);
    a.set(f::SAMPLE_ID_ALL, true);
    if first {
        a.set(f::MMAP, true);
        a.set(f::MMAP2, true);
        a.set(f::COMM, true);
        a.set(f::COMM_EXEC, true);
        a.set(f::TASK, true);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_graph_strings() {
        assert_eq!("fp".parse(), Ok(CallGraph::Fp));
        assert_eq!("dwarf,16384".parse(), Ok(CallGraph::Dwarf(16384)));
        assert_eq!("dwarf".parse(), Ok(CallGraph::Dwarf(8192)));
        assert_eq!("dwarf,13".parse(), Ok(CallGraph::Dwarf(16)));
        assert!("dwarf,0".parse::<CallGraph>().is_err());
        assert!("dwarf,x".parse::<CallGraph>().is_err());
        assert!(
            "lbr"
                .parse::<CallGraph>()
                .unwrap_err()
                .contains("branch stacks")
        );
    }
}
