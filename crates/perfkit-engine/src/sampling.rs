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

/// Which privilege levels every event samples (`--all-user`, `--all-kernel`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Privilege {
    /// User space only (`exclude_kernel`).
    User,
    /// The kernel only (`exclude_user`).
    Kernel,
}

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
    /// `-d`: data addresses (`PERF_SAMPLE_ADDR | PERF_SAMPLE_DATA_SRC`, `mmap_data`).
    pub data_addr: bool,
    /// `--phys-data`: `PERF_SAMPLE_PHYS_ADDR`.
    pub phys_addr: bool,
    /// `--data-page-size`: `PERF_SAMPLE_DATA_PAGE_SIZE`.
    pub data_page_size: bool,
    /// `-R`: raw samples (`PERF_SAMPLE_RAW | PERF_SAMPLE_CPU | PERF_SAMPLE_TIME`).
    pub raw: bool,
    /// `-s`: per-thread counts (`inherit_stat`, read_format with the times).
    pub inherit_stat: bool,
    /// `--user-regs`: `PERF_SAMPLE_REGS_USER` with this mask (0 = none).
    pub user_regs: u64,
    /// `--intr-regs`: `PERF_SAMPLE_REGS_INTR` with this mask (0 = none).
    pub intr_regs: u64,
    /// `--all-user` / `--all-kernel`.
    pub privilege: Option<Privilege>,
    /// `-k`: timestamps from this clock (`use_clockid`, `clockid`).
    pub clockid: Option<i32>,
    /// `--namespaces`: `PERF_RECORD_NAMESPACES` records.
    pub namespaces: bool,
    /// `--all-cgroups`: `PERF_RECORD_CGROUP` records and `PERF_SAMPLE_CGROUP`.
    pub cgroups: bool,
    /// `-b`/`-j`: `PERF_SAMPLE_BRANCH_STACK` with this `branch_sample_type` (0 = none).
    pub branch_sample_type: u64,
    /// The side-band records go to a separate tracking event ([`tracking_attr`]), as
    /// perf does when the sampling events start disabled (`-D`): every event then carries
    /// `PERF_SAMPLE_IDENTIFIER`.
    pub tracking_event: bool,
    /// `-P`: `PERF_SAMPLE_PERIOD` with a fixed period too (perf samples the period only in
    /// frequency mode otherwise).
    pub period: bool,
    /// `--no-bpf-event`: the side-band event does not ask for `PERF_RECORD_BPF_EVENT`.
    pub no_bpf_event: bool,
}

impl Default for SamplingOptions {
    /// perf's defaults: 4000 Hz, no call chains, nothing extra.
    fn default() -> Self {
        SamplingOptions {
            sampling: Sampling::Freq(4000),
            call_graph: CallGraph::None,
            sample_cpu: false,
            data_addr: false,
            phys_addr: false,
            data_page_size: false,
            raw: false,
            inherit_stat: false,
            user_regs: 0,
            intr_regs: 0,
            privilege: None,
            clockid: None,
            namespaces: false,
            cgroups: false,
            branch_sample_type: 0,
            tracking_event: false,
            period: false,
            no_bpf_event: false,
        }
    }
}

/// The sampling attrs of a list of events, one each: the first carries the side-band
/// records (mmap, comm, task) unless a tracking event does; several events get
/// `PERF_SAMPLE_IDENTIFIER`.
pub fn sampling_attrs(specs: &mut [EventSpec], opts: &SamplingOptions) {
    let several = specs.len() > 1 || opts.tracking_event;
    for (i, s) in specs.iter_mut().enumerate() {
        s.attr = sampling_attr(
            s,
            opts.sampling,
            opts.call_graph,
            several,
            opts.sample_cpu,
            i == 0 && !opts.tracking_event,
        );
        // perf's `evsel__config`: the period is sampled in frequency mode, or with -P.
        if s.attr.has(f::FREQ) || opts.period {
            s.attr.sample_type |= sys::PERF_SAMPLE_PERIOD;
        }
        if i == 0 && !opts.tracking_event {
            side_band_bpf(&mut s.attr, opts);
        }
        extras(&mut s.attr, opts, i == 0 && !opts.tracking_event);
    }
}

/// The attr of perf's tracking event (`dummy`, every event, period 1): it carries the
/// side-band records (mmap, comm, task) while the sampling events are disabled, and
/// enables at the command's exec.
pub fn tracking_attr(spec: &mut EventSpec, opts: &SamplingOptions) {
    let a = &mut spec.attr;
    a.sample_period = 1;
    a.set(f::FREQ, false);
    a.sample_type = sys::PERF_SAMPLE_IP
        | sys::PERF_SAMPLE_TID
        | sys::PERF_SAMPLE_TIME
        | sys::PERF_SAMPLE_IDENTIFIER;
    if opts.sample_cpu || opts.raw {
        a.sample_type |= sys::PERF_SAMPLE_CPU;
    }
    a.read_format = sys::PERF_FORMAT_ID | sys::PERF_FORMAT_LOST;
    a.set(f::DISABLED, true);
    a.set(f::SAMPLE_ID_ALL, true);
    a.set(f::EXCLUDE_GUEST, false);
    for flag in [f::MMAP, f::MMAP2, f::COMM, f::COMM_EXEC, f::TASK] {
        a.set(flag, true);
    }
    // Every mapping, for DWARF unwinding (see `sampling_attr`).
    if matches!(opts.call_graph, CallGraph::Dwarf(_)) {
        a.set(f::MMAP_DATA, true);
    }
    if let Some(c) = opts.clockid {
        a.set(f::USE_CLOCKID, true);
        a.clockid = c;
    }
    a.set(f::NAMESPACES, opts.namespaces);
    a.set(f::CGROUP, opts.cgroups);
    side_band_bpf(a, opts);
}

/// The event that carries the side-band records also asks for the kernel's
/// `PERF_RECORD_KSYMBOL` and (unless `--no-bpf-event`) `PERF_RECORD_BPF_EVENT` records, as
/// perf's tracking event does: symbols of BPF programs and trampolines loaded while
/// recording.
fn side_band_bpf(a: &mut sys::perf_event_attr, o: &SamplingOptions) {
    a.set(f::KSYMBOL, true);
    a.set(f::BPF_EVENT, !o.no_bpf_event);
}

/// The command line's extra sample fields and flags, as perf's `evsel__config` sets them.
fn extras(a: &mut sys::perf_event_attr, o: &SamplingOptions, tracking: bool) {
    if o.data_addr {
        a.sample_type |= sys::PERF_SAMPLE_ADDR | sys::PERF_SAMPLE_DATA_SRC;
        a.set(f::MMAP_DATA, true);
    }
    if o.phys_addr {
        a.sample_type |= sys::PERF_SAMPLE_PHYS_ADDR;
    }
    if o.data_page_size {
        a.sample_type |= sys::PERF_SAMPLE_DATA_PAGE_SIZE;
    }
    if o.raw {
        a.sample_type |= sys::PERF_SAMPLE_TIME | sys::PERF_SAMPLE_RAW | sys::PERF_SAMPLE_CPU;
    }
    if o.inherit_stat {
        a.read_format |= sys::PERF_FORMAT_TOTAL_TIME_ENABLED | sys::PERF_FORMAT_TOTAL_TIME_RUNNING;
        a.set(f::INHERIT_STAT, true);
    }
    if o.user_regs != 0 {
        a.sample_type |= sys::PERF_SAMPLE_REGS_USER;
        a.sample_regs_user |= o.user_regs;
    }
    if o.intr_regs != 0 {
        a.sample_type |= sys::PERF_SAMPLE_REGS_INTR;
        a.sample_regs_intr = o.intr_regs;
    }
    match o.privilege {
        Some(Privilege::User) => {
            a.set(f::EXCLUDE_KERNEL, true);
            a.set(f::EXCLUDE_USER, false);
        }
        Some(Privilege::Kernel) => {
            a.set(f::EXCLUDE_KERNEL, false);
            a.set(f::EXCLUDE_USER, true);
        }
        None => {}
    }
    if let Some(c) = o.clockid {
        a.set(f::USE_CLOCKID, true);
        a.clockid = c;
    }
    if o.branch_sample_type != 0 {
        a.sample_type |= sys::PERF_SAMPLE_BRANCH_STACK;
        a.branch_sample_type = o.branch_sample_type;
    }
    if o.cgroups {
        a.sample_type |= sys::PERF_SAMPLE_CGROUP;
    }
    if tracking {
        a.set(f::NAMESPACES, o.namespaces);
        a.set(f::CGROUP, o.cgroups);
    }
}

/// A `--clockid` value: a name perf takes (with or without `CLOCK_`, any case) or a
/// number.
pub fn parse_clockid(s: &str) -> Option<i32> {
    if let Ok(n) = s.parse::<i32>() {
        return (n >= 0).then_some(n);
    }
    let lower = s.to_ascii_lowercase();
    let name = lower.strip_prefix("clock_").unwrap_or(&lower);
    Some(match name {
        "realtime" => 0,
        "monotonic" | "mono" => 1,
        "monotonic_raw" | "raw" => 4,
        "boottime" | "boot" => 7,
        "tai" => 11,
        _ => return None,
    })
}

/// Register names of `--user-regs`/`--intr-regs` with their `PERF_REG_*` numbers, in the
/// order perf lists them (`--intr-regs=?`).
#[cfg(target_arch = "x86_64")]
pub const REGISTERS: &[(&str, u32)] = &[
    ("AX", 0),
    ("BX", 1),
    ("CX", 2),
    ("DX", 3),
    ("SI", 4),
    ("DI", 5),
    ("BP", 6),
    ("SP", 7),
    ("IP", 8),
    ("FLAGS", 9),
    ("CS", 10),
    ("SS", 11),
    ("R8", 16),
    ("R9", 17),
    ("R10", 18),
    ("R11", 19),
    ("R12", 20),
    ("R13", 21),
    ("R14", 22),
    ("R15", 23),
];
/// Register names of `--user-regs`/`--intr-regs`: none known on this architecture.
#[cfg(not(target_arch = "x86_64"))]
pub const REGISTERS: &[(&str, u32)] = &[];

/// A `--user-regs`/`--intr-regs` list (`di,r8`, any case) as a register mask; an empty
/// list is every register perf records. `Err` names the unknown register.
pub fn parse_registers(s: &str) -> Result<u64, String> {
    if s.is_empty() {
        return Ok(REGISTERS.iter().fold(0, |m, r| m | 1 << r.1));
    }
    let mut mask = 0u64;
    for name in s.split(',') {
        let r = REGISTERS
            .iter()
            .find(|r| r.0.eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| name.to_string())?;
        mask |= 1 << r.1;
    }
    Ok(mask)
}

/// A `-j` filter list (`any,u`) as a `branch_sample_type`; `Err` names the unknown filter.
pub fn parse_branch_filter(s: &str) -> Result<u64, String> {
    let mut t = 0u64;
    for name in s.split(',') {
        t |= match name.trim() {
            "u" => sys::PERF_SAMPLE_BRANCH_USER,
            "k" => sys::PERF_SAMPLE_BRANCH_KERNEL,
            "hv" => sys::PERF_SAMPLE_BRANCH_HV,
            "any" => sys::PERF_SAMPLE_BRANCH_ANY,
            "any_call" => sys::PERF_SAMPLE_BRANCH_ANY_CALL,
            "any_ret" => sys::PERF_SAMPLE_BRANCH_ANY_RETURN,
            "ind_call" => sys::PERF_SAMPLE_BRANCH_IND_CALL,
            "abort_tx" => sys::PERF_SAMPLE_BRANCH_ABORT_TX,
            "in_tx" => sys::PERF_SAMPLE_BRANCH_IN_TX,
            "no_tx" => sys::PERF_SAMPLE_BRANCH_NO_TX,
            "cond" => sys::PERF_SAMPLE_BRANCH_COND,
            "call_stack" => sys::PERF_SAMPLE_BRANCH_CALL_STACK,
            "ind_jmp" => sys::PERF_SAMPLE_BRANCH_IND_JUMP,
            "call" => sys::PERF_SAMPLE_BRANCH_CALL,
            "save_type" => sys::PERF_SAMPLE_BRANCH_TYPE_SAVE,
            "stack" => sys::PERF_SAMPLE_BRANCH_CALL_STACK,
            "priv" => sys::PERF_SAMPLE_BRANCH_PRIV_SAVE,
            other => return Err(other.to_string()),
        };
    }
    // Only privilege levels: any branch at those levels, as perf does.
    let levels =
        sys::PERF_SAMPLE_BRANCH_USER | sys::PERF_SAMPLE_BRANCH_KERNEL | sys::PERF_SAMPLE_BRANCH_HV;
    if t & !levels == 0 {
        t |= sys::PERF_SAMPLE_BRANCH_ANY;
    }
    Ok(t)
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
    if several {
        a.sample_type |= sys::PERF_SAMPLE_IDENTIFIER;
    }
    if sample_cpu {
        a.sample_type |= sys::PERF_SAMPLE_CPU;
    }
    if a.type_ == sys::PERF_TYPE_TRACEPOINT {
        // perf's `evsel__newtp`: every tracepoint samples RAW, TIME, CPU and PERIOD.
        a.sample_type |= sys::PERF_SAMPLE_RAW | sys::PERF_SAMPLE_CPU | sys::PERF_SAMPLE_PERIOD;
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
            // perf's layout of a DWARF sample: it also samples the data address.
            a.sample_type |= sys::PERF_SAMPLE_ADDR | sys::PERF_SAMPLE_DATA_SRC;
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
        // Unwinding reads the stack, the `.eh_frame` of read-only segments and data the
        // unwinder follows, so a DWARF recording describes every mapping (`[stack]`,
        // `r--p` segments), not just the executable ones: without them perf's unwinder
        // finds no memory behind a frame and stops at the leaf.
        if matches!(call_graph, CallGraph::Dwarf(_)) {
            a.set(f::MMAP_DATA, true);
        }
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
