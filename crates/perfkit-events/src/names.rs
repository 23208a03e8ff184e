//! The symbolic names perf knows without asking the machine: generalized hardware events
//! (`PERF_TYPE_HARDWARE`), software events (`PERF_TYPE_SOFTWARE`) and hardware cache events
//! (`PERF_TYPE_HW_CACHE`), with every alias perf 6.x accepts, and the reverse mapping
//! [`name_of`] from an attr back to the name perf prints.

use perfkit_sys::{self as sys, attr_flags as f, perf_event_attr};

/// One symbolic event: its canonical name (as `perf` prints it), the aliases accepted on
/// the command line, the `config` value, and a one-line description for `perfkit list`.
#[derive(Clone, Copy, Debug)]
pub struct Symbol {
    /// The name perf prints (`cycles`, `task-clock`).
    pub name: &'static str,
    /// Other spellings accepted by the parser (`cpu-cycles`).
    pub aliases: &'static [&'static str],
    /// `attr.config` (`PERF_COUNT_HW_*` / `PERF_COUNT_SW_*`).
    pub config: u64,
    /// Short description.
    pub desc: &'static str,
}

/// `PERF_TYPE_HARDWARE` events, in id order.
pub const HARDWARE: &[Symbol] = &[
    Symbol {
        name: "cycles",
        aliases: &["cpu-cycles"],
        config: sys::PERF_COUNT_HW_CPU_CYCLES,
        desc: "CPU cycles",
    },
    Symbol {
        name: "instructions",
        aliases: &[],
        config: sys::PERF_COUNT_HW_INSTRUCTIONS,
        desc: "retired instructions",
    },
    Symbol {
        name: "cache-references",
        aliases: &[],
        config: sys::PERF_COUNT_HW_CACHE_REFERENCES,
        desc: "cache accesses (usually last level)",
    },
    Symbol {
        name: "cache-misses",
        aliases: &[],
        config: sys::PERF_COUNT_HW_CACHE_MISSES,
        desc: "cache misses (usually last level)",
    },
    Symbol {
        name: "branches",
        aliases: &["branch-instructions"],
        config: sys::PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
        desc: "retired branch instructions",
    },
    Symbol {
        name: "branch-misses",
        aliases: &[],
        config: sys::PERF_COUNT_HW_BRANCH_MISSES,
        desc: "mispredicted branches",
    },
    Symbol {
        name: "bus-cycles",
        aliases: &[],
        config: sys::PERF_COUNT_HW_BUS_CYCLES,
        desc: "bus cycles",
    },
    Symbol {
        name: "stalled-cycles-frontend",
        aliases: &["idle-cycles-frontend"],
        config: sys::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND,
        desc: "cycles stalled in the front end",
    },
    Symbol {
        name: "stalled-cycles-backend",
        aliases: &["idle-cycles-backend"],
        config: sys::PERF_COUNT_HW_STALLED_CYCLES_BACKEND,
        desc: "cycles stalled in the back end",
    },
    Symbol {
        name: "ref-cycles",
        aliases: &[],
        config: sys::PERF_COUNT_HW_REF_CPU_CYCLES,
        desc: "reference cycles (not scaled by frequency changes)",
    },
];

/// `PERF_TYPE_SOFTWARE` events, in id order.
pub const SOFTWARE: &[Symbol] = &[
    Symbol {
        name: "cpu-clock",
        aliases: &[],
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        desc: "per-CPU high-resolution timer (ns)",
    },
    Symbol {
        name: "task-clock",
        aliases: &[],
        config: sys::PERF_COUNT_SW_TASK_CLOCK,
        desc: "time the task ran on a CPU (ns)",
    },
    Symbol {
        name: "page-faults",
        aliases: &["faults"],
        config: sys::PERF_COUNT_SW_PAGE_FAULTS,
        desc: "page faults",
    },
    Symbol {
        name: "context-switches",
        aliases: &["cs"],
        config: sys::PERF_COUNT_SW_CONTEXT_SWITCHES,
        desc: "context switches",
    },
    Symbol {
        name: "cpu-migrations",
        aliases: &["migrations"],
        config: sys::PERF_COUNT_SW_CPU_MIGRATIONS,
        desc: "moves of the task to another CPU",
    },
    Symbol {
        name: "minor-faults",
        aliases: &[],
        config: sys::PERF_COUNT_SW_PAGE_FAULTS_MIN,
        desc: "page faults served without I/O",
    },
    Symbol {
        name: "major-faults",
        aliases: &[],
        config: sys::PERF_COUNT_SW_PAGE_FAULTS_MAJ,
        desc: "page faults that needed I/O",
    },
    Symbol {
        name: "alignment-faults",
        aliases: &[],
        config: sys::PERF_COUNT_SW_ALIGNMENT_FAULTS,
        desc: "unaligned accesses fixed up by the kernel",
    },
    Symbol {
        name: "emulation-faults",
        aliases: &[],
        config: sys::PERF_COUNT_SW_EMULATION_FAULTS,
        desc: "instructions emulated by the kernel",
    },
    Symbol {
        name: "dummy",
        aliases: &[],
        config: sys::PERF_COUNT_SW_DUMMY,
        desc: "counts nothing; carries side-band records",
    },
    Symbol {
        name: "bpf-output",
        aliases: &[],
        config: sys::PERF_COUNT_SW_BPF_OUTPUT,
        desc: "output of BPF programs",
    },
    Symbol {
        name: "cgroup-switches",
        aliases: &[],
        config: sys::PERF_COUNT_SW_CGROUP_SWITCHES,
        desc: "context switches to a task in another cgroup",
    },
];

/// Cache names (`PERF_COUNT_HW_CACHE_*` ids in order), first spelling is perf's.
pub const CACHES: &[&[&str]] = &[
    &["L1-dcache", "l1-d", "l1d", "L1-data"],
    &["L1-icache", "l1-i", "l1i", "L1-instruction"],
    &["LLC", "L2"],
    &["dTLB", "d-tlb", "Data-TLB"],
    &["iTLB", "i-tlb", "Instruction-TLB"],
    &["branch", "branches", "bpu", "btb", "bpc"],
    &["node"],
];

/// Cache operations (`PERF_COUNT_HW_CACHE_OP_*`): [singular, plural, aliases...].
pub const CACHE_OPS: &[&[&str]] = &[
    &["load", "loads", "read"],
    &["store", "stores", "write"],
    &[
        "prefetch",
        "prefetches",
        "speculative-read",
        "speculative-load",
    ],
];

/// Cache results (`PERF_COUNT_HW_CACHE_RESULT_*`).
pub const CACHE_RESULTS: &[&[&str]] =
    &[&["refs", "Reference", "ops", "access"], &["misses", "miss"]];

/// Whether perf accepts operation `op` on cache `cache` (its `evsel__hw_cache_stat` table).
pub fn cache_op_valid(cache: u64, op: u64) -> bool {
    const LOAD: u8 = 1;
    const STORE: u8 = 2;
    const PREFETCH: u8 = 4;
    let mask = match cache {
        0 => LOAD | STORE | PREFETCH,
        1 => LOAD | PREFETCH,
        2 => LOAD | STORE | PREFETCH,
        3 => LOAD | STORE | PREFETCH,
        4 => LOAD,
        5 => LOAD,
        6 => LOAD | STORE | PREFETCH,
        _ => 0,
    };
    op < 3 && mask & (1 << op) != 0
}

/// The perf name of cache event `(cache, op, result)`: `L1-dcache-loads`,
/// `L1-dcache-load-misses`.
pub fn cache_name(cache: u64, op: u64, result: u64) -> Option<String> {
    let c = CACHES.get(cache as usize)?[0];
    let o = CACHE_OPS.get(op as usize)?;
    let r = CACHE_RESULTS.get(result as usize)?;
    Some(if result == 0 {
        format!("{c}-{}", o[1])
    } else {
        format!("{c}-{}-{}", o[0], r[0])
    })
}

/// Every valid cache event name, in perf list's order.
pub fn all_cache_names() -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for cache in 0..CACHES.len() as u64 {
        for op in 0..3 {
            if !cache_op_valid(cache, op) {
                continue;
            }
            for result in 0..2 {
                if let Some(n) = cache_name(cache, op, result) {
                    v.push((n, cache | (op << 8) | (result << 16)));
                }
            }
        }
    }
    v
}

fn eq_ic(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Look up a hardware or software symbol (case-insensitive, as perf): `(type, config)`.
pub fn lookup_symbol(name: &str) -> Option<(u32, &'static Symbol)> {
    for (ty, table) in [
        (sys::PERF_TYPE_HARDWARE, HARDWARE),
        (sys::PERF_TYPE_SOFTWARE, SOFTWARE),
    ] {
        for s in table {
            if eq_ic(s.name, name) || s.aliases.iter().any(|a| eq_ic(a, name)) {
                return Some((ty, s));
            }
        }
    }
    None
}

/// Why a cache name did not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheError {
    /// The name does not start with a cache name.
    NotACache,
    /// It does, but the rest is not `-op[-result]` (byte offset of the bad part).
    BadSuffix(usize),
    /// Operation not supported by that cache (e.g. `L1-icache-stores`).
    InvalidOp,
}

/// Parse a cache event name (`L1-dcache-load-misses`, `l1d-load-miss`, `LLC-prefetches`,
/// `dTLB-speculative-read-miss`) into its `PERF_TYPE_HW_CACHE` config. The operation defaults
/// to load/read and the result to access, as in perf.
pub fn parse_cache(name: &str) -> Result<u64, CacheError> {
    // Longest matching prefix among cache spellings, followed by '-' or the end.
    let mut best: Option<(usize, u64)> = None;
    for (id, names) in CACHES.iter().enumerate() {
        for n in names.iter() {
            if name.len() >= n.len()
                && name.is_char_boundary(n.len())
                && eq_ic(&name[..n.len()], n)
                && (name.len() == n.len() || name.as_bytes()[n.len()] == b'-')
                && best.is_none_or(|(l, _)| n.len() > l)
            {
                best = Some((n.len(), id as u64));
            }
        }
    }
    let Some((mut pos, cache)) = best else {
        return Err(CacheError::NotACache);
    };
    let mut op: Option<u64> = None;
    let mut result: Option<u64> = None;
    while pos < name.len() {
        // skip the '-'
        pos += 1;
        let rest = &name[pos..];
        let mut matched: Option<(usize, bool, u64)> = None;
        for (is_op, table) in [(true, CACHE_OPS), (false, CACHE_RESULTS)] {
            for (id, names) in table.iter().enumerate() {
                for n in names.iter() {
                    if rest.len() >= n.len()
                        && rest.is_char_boundary(n.len())
                        && eq_ic(&rest[..n.len()], n)
                        && (rest.len() == n.len() || rest.as_bytes()[n.len()] == b'-')
                        && matched.is_none_or(|(l, _, _)| n.len() > l)
                    {
                        matched = Some((n.len(), is_op, id as u64));
                    }
                }
            }
        }
        match matched {
            Some((len, true, id)) if op.is_none() => {
                op = Some(id);
                pos += len;
            }
            Some((len, false, id)) if result.is_none() => {
                result = Some(id);
                pos += len;
            }
            _ => return Err(CacheError::BadSuffix(pos)),
        }
    }
    let op = op.unwrap_or(sys::PERF_COUNT_HW_CACHE_OP_READ);
    let result = result.unwrap_or(sys::PERF_COUNT_HW_CACHE_RESULT_ACCESS);
    if !cache_op_valid(cache, op) {
        return Err(CacheError::InvalidOp);
    }
    Ok(cache | (op << 8) | (result << 16))
}

/// Every symbolic name the parser knows, for suggestions ("did you mean ...").
pub fn all_symbolic_names() -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for s in HARDWARE.iter().chain(SOFTWARE) {
        v.push(s.name.to_string());
        v.extend(s.aliases.iter().map(|a| a.to_string()));
    }
    v.extend(all_cache_names().into_iter().map(|(n, _)| n));
    v
}

/// The modifier suffix perf would print for the privilege and precision bits of `attr`
/// (`:u`, `:k`, `:ppp`, `:G` ...), empty when everything is at its default.
pub fn modifier_suffix(attr: &perf_event_attr) -> String {
    // The shortest modifiers that parse back to the same bits: k/u/h for the levels still
    // counted once any is excluded (perf's order), the precise level, then H/G only where
    // the guest/host bits differ from what the parser would set for those modifiers. As in
    // perf's parser, no modifier at all or a `u` or `p` modifier implies exclude_guest;
    // any other modifier string leaves it clear.
    let mut m = String::new();
    let (eu, ek, eh) = (
        attr.has(f::EXCLUDE_USER),
        attr.has(f::EXCLUDE_KERNEL),
        attr.has(f::EXCLUDE_HV),
    );
    if eu || ek || eh {
        for (excluded, c) in [(ek, 'k'), (eu, 'u'), (eh, 'h')] {
            if !excluded {
                m.push(c);
            }
        }
    }
    for _ in 0..attr.precise_ip() {
        m.push('p');
    }
    if attr.has(f::EXCLUDE_IDLE) {
        m.push('I');
    }
    if attr.has(f::PINNED) {
        m.push('D');
    }
    if attr.has(f::EXCLUSIVE) {
        m.push('e');
    }
    let default_eg = m.is_empty() || m.contains('u') || m.contains('p');
    let (ehost, eguest) = (attr.has(f::EXCLUDE_HOST), attr.has(f::EXCLUDE_GUEST));
    if (ehost, eguest) != (false, default_eg) {
        match (ehost, eguest) {
            (false, true) => m.push('H'),
            (true, false) => m.push('G'),
            (false, false) => m.push_str("GH"),
            (true, true) => {}
        }
    }
    if m.is_empty() { m } else { format!(":{m}") }
}

/// The base name of an event from its attr alone (no sysfs or tracefs lookups): `cycles`,
/// `task-clock`, `L1-dcache-load-misses`, `r1a2`, `mem:0x1000/4:w`; ids no name is
/// known for in perf's numeric `TYPE:CONFIG` form (`2:316`, `1:0x6e`, `10:0x0`), and
/// `pmu-type-10/config=0x0,config1=0x1/` when config1..3 are set too. Use [`crate::Env::name_of`] to name tracepoints and PMU
/// events by their sysfs/tracefs names.
pub fn base_name(attr: &perf_event_attr) -> String {
    let c = attr.config;
    let ty = attr.type_;
    match ty {
        sys::PERF_TYPE_HARDWARE => {
            let pmu = c >> sys::PERF_PMU_TYPE_SHIFT;
            let id = c & sys::PERF_HW_EVENT_MASK;
            match HARDWARE.get(id as usize) {
                // An extended type (PMU in the high 32 bits) whose PMU is not known here.
                _ if pmu != 0 => format!("0:{c:#x}"),
                Some(s) => s.name.to_string(),
                None => format!("0:{id:#x}"),
            }
        }
        sys::PERF_TYPE_SOFTWARE => SOFTWARE
            .get(c as usize)
            .map_or_else(|| format!("1:{c:#x}"), |s| s.name.to_string()),
        sys::PERF_TYPE_HW_CACHE => {
            let pmu = c >> sys::PERF_PMU_TYPE_SHIFT;
            let id = c & sys::PERF_HW_EVENT_MASK;
            match cache_name(id & 0xff, (id >> 8) & 0xff, (id >> 16) & 0xff) {
                _ if pmu != 0 || id >> 24 != 0 => format!("3:{c:#x}"),
                Some(n) => n,
                None => format!("3:{id:#x}"),
            }
        }
        sys::PERF_TYPE_RAW => format!("r{c:x}"),
        sys::PERF_TYPE_TRACEPOINT => format!("2:{c}"),
        sys::PERF_TYPE_BREAKPOINT
            if !matches!(
                attr.bp_type,
                sys::HW_BREAKPOINT_R
                    | sys::HW_BREAKPOINT_W
                    | sys::HW_BREAKPOINT_RW
                    | sys::HW_BREAKPOINT_X
            ) && (attr.config1, attr.config2) == (0, 0) =>
        {
            // No access type: not a `mem:` event (`5:0x...` written numerically).
            format!("5:{c:#x}")
        }
        sys::PERF_TYPE_BREAKPOINT => {
            let mut s = format!("mem:{:#x}", attr.config1);
            let default_len = if attr.bp_type == sys::HW_BREAKPOINT_X {
                std::mem::size_of::<libc::c_long>() as u64
            } else {
                sys::HW_BREAKPOINT_LEN_4
            };
            if attr.config2 != default_len {
                s.push_str(&format!("/{}", attr.config2));
            }
            let mut acc = String::new();
            if attr.bp_type & sys::HW_BREAKPOINT_R != 0 {
                acc.push('r');
            }
            if attr.bp_type & sys::HW_BREAKPOINT_W != 0 {
                acc.push('w');
            }
            if attr.bp_type & sys::HW_BREAKPOINT_X != 0 {
                acc.push('x');
            }
            if attr.bp_type != sys::HW_BREAKPOINT_RW {
                s.push(':');
                s.push_str(&acc);
            }
            s
        }
        t if (attr.config1, attr.config2, attr.config3) == (0, 0, 0) => format!("{t}:{c:#x}"),
        t => {
            let mut s = format!("pmu-type-{t}/config={c:#x}");
            push_extra_configs(attr, &mut s);
            s.push('/');
            s
        }
    }
}

/// The name perf would give `attr` when the user wrote no explicit name: the base name
/// ([`base_name`]) followed by the modifier suffix ([`modifier_suffix`]), e.g. type
/// `PERF_TYPE_HARDWARE` config 0 with `exclude_kernel|exclude_hv` gives `cycles:u`.
/// Parsing the result gives the same attr back for symbolic, cache, raw and breakpoint
/// events.
pub fn name_of(attr: &perf_event_attr) -> String {
    let base = base_name(attr);
    let m = modifier_suffix(attr);
    if attr.type_ == sys::PERF_TYPE_BREAKPOINT
        && attr.bp_type == sys::HW_BREAKPOINT_RW
        && !m.is_empty()
    {
        // `mem:ADDR:u` would read the modifier as an access type: spell the access out.
        return format!("{base}:rw{m}");
    }
    with_modifiers(base, &m)
}

/// `name` followed by the modifier suffix `m` (`:u`, `:ppp`...), the way perf writes it:
/// right after the closing slash of a `pmu/terms/` event (`cpu/event=0x3c/u`), after a
/// colon otherwise.
pub fn with_modifiers(mut name: String, m: &str) -> String {
    if name.ends_with('/') {
        name.push_str(m.strip_prefix(':').unwrap_or(m));
    } else {
        name.push_str(m);
    }
    name
}

/// Append `,config1=0x..` (and config2, config3) for each of them that is not zero.
pub(crate) fn push_extra_configs(attr: &perf_event_attr, s: &mut String) {
    for (n, v) in [
        ("config1", attr.config1),
        ("config2", attr.config2),
        ("config3", attr.config3),
    ] {
        if v != 0 {
            s.push_str(&format!(",{n}={v:#x}"));
        }
    }
}
