//! What to count: the kernel's event types as Rust values.

use perfkit_sys as sys;

/// A generalized hardware event (`PERF_TYPE_HARDWARE`, `PERF_COUNT_HW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Hardware {
    /// `PERF_COUNT_HW_CPU_CYCLES`
    CpuCycles,
    /// `PERF_COUNT_HW_INSTRUCTIONS`
    Instructions,
    /// `PERF_COUNT_HW_CACHE_REFERENCES`
    CacheReferences,
    /// `PERF_COUNT_HW_CACHE_MISSES`
    CacheMisses,
    /// `PERF_COUNT_HW_BRANCH_INSTRUCTIONS`
    BranchInstructions,
    /// `PERF_COUNT_HW_BRANCH_MISSES`
    BranchMisses,
    /// `PERF_COUNT_HW_BUS_CYCLES`
    BusCycles,
    /// `PERF_COUNT_HW_STALLED_CYCLES_FRONTEND`
    StalledCyclesFrontend,
    /// `PERF_COUNT_HW_STALLED_CYCLES_BACKEND`
    StalledCyclesBackend,
    /// `PERF_COUNT_HW_REF_CPU_CYCLES`
    RefCpuCycles,
}

impl Hardware {
    /// Every hardware event, in id order.
    pub const ALL: [Hardware; 10] = [
        Hardware::CpuCycles,
        Hardware::Instructions,
        Hardware::CacheReferences,
        Hardware::CacheMisses,
        Hardware::BranchInstructions,
        Hardware::BranchMisses,
        Hardware::BusCycles,
        Hardware::StalledCyclesFrontend,
        Hardware::StalledCyclesBackend,
        Hardware::RefCpuCycles,
    ];

    /// The `PERF_COUNT_HW_*` id.
    pub const fn id(self) -> u64 {
        self as u64
    }

    /// The name perf uses.
    pub const fn name(self) -> &'static str {
        match self {
            Hardware::CpuCycles => "cycles",
            Hardware::Instructions => "instructions",
            Hardware::CacheReferences => "cache-references",
            Hardware::CacheMisses => "cache-misses",
            Hardware::BranchInstructions => "branches",
            Hardware::BranchMisses => "branch-misses",
            Hardware::BusCycles => "bus-cycles",
            Hardware::StalledCyclesFrontend => "stalled-cycles-frontend",
            Hardware::StalledCyclesBackend => "stalled-cycles-backend",
            Hardware::RefCpuCycles => "ref-cycles",
        }
    }
}

/// A kernel software event (`PERF_TYPE_SOFTWARE`, `PERF_COUNT_SW_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Software {
    /// `PERF_COUNT_SW_CPU_CLOCK`
    CpuClock,
    /// `PERF_COUNT_SW_TASK_CLOCK`
    TaskClock,
    /// `PERF_COUNT_SW_PAGE_FAULTS`
    PageFaults,
    /// `PERF_COUNT_SW_CONTEXT_SWITCHES`
    ContextSwitches,
    /// `PERF_COUNT_SW_CPU_MIGRATIONS`
    CpuMigrations,
    /// `PERF_COUNT_SW_PAGE_FAULTS_MIN`
    PageFaultsMin,
    /// `PERF_COUNT_SW_PAGE_FAULTS_MAJ`
    PageFaultsMaj,
    /// `PERF_COUNT_SW_ALIGNMENT_FAULTS`
    AlignmentFaults,
    /// `PERF_COUNT_SW_EMULATION_FAULTS`
    EmulationFaults,
    /// `PERF_COUNT_SW_DUMMY`
    Dummy,
    /// `PERF_COUNT_SW_BPF_OUTPUT`
    BpfOutput,
    /// `PERF_COUNT_SW_CGROUP_SWITCHES`
    CgroupSwitches,
}

impl Software {
    /// Every software event, in id order.
    pub const ALL: [Software; 12] = [
        Software::CpuClock,
        Software::TaskClock,
        Software::PageFaults,
        Software::ContextSwitches,
        Software::CpuMigrations,
        Software::PageFaultsMin,
        Software::PageFaultsMaj,
        Software::AlignmentFaults,
        Software::EmulationFaults,
        Software::Dummy,
        Software::BpfOutput,
        Software::CgroupSwitches,
    ];

    /// The `PERF_COUNT_SW_*` id.
    pub const fn id(self) -> u64 {
        self as u64
    }

    /// The name perf uses.
    pub const fn name(self) -> &'static str {
        match self {
            Software::CpuClock => "cpu-clock",
            Software::TaskClock => "task-clock",
            Software::PageFaults => "page-faults",
            Software::ContextSwitches => "context-switches",
            Software::CpuMigrations => "cpu-migrations",
            Software::PageFaultsMin => "minor-faults",
            Software::PageFaultsMaj => "major-faults",
            Software::AlignmentFaults => "alignment-faults",
            Software::EmulationFaults => "emulation-faults",
            Software::Dummy => "dummy",
            Software::BpfOutput => "bpf-output",
            Software::CgroupSwitches => "cgroup-switches",
        }
    }
}

/// The cache of a hardware cache event (`PERF_COUNT_HW_CACHE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cache {
    /// Level 1 data.
    L1d,
    /// Level 1 instruction.
    L1i,
    /// Last level.
    Ll,
    /// Data TLB.
    Dtlb,
    /// Instruction TLB.
    Itlb,
    /// Branch prediction unit.
    Bpu,
    /// Local memory (NUMA node).
    Node,
}

/// The operation of a hardware cache event (`PERF_COUNT_HW_CACHE_OP_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheOp {
    /// Reads.
    Read,
    /// Writes.
    Write,
    /// Prefetches.
    Prefetch,
}

/// The result of a hardware cache event (`PERF_COUNT_HW_CACHE_RESULT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheResult {
    /// Accesses.
    Access,
    /// Misses.
    Miss,
}

/// A hardware cache event (`PERF_TYPE_HW_CACHE`): cache x op x result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheEvent {
    /// Which cache.
    pub cache: Cache,
    /// Which operation.
    pub op: CacheOp,
    /// Accesses or misses.
    pub result: CacheResult,
}

impl CacheEvent {
    /// The config value: `cache | op << 8 | result << 16`.
    pub const fn config(self) -> u64 {
        sys::hw_cache_config(self.cache as u64, self.op as u64, self.result as u64)
    }

    /// The name perf uses, e.g. `L1-dcache-load-misses`.
    pub fn name(self) -> String {
        let cache = match self.cache {
            Cache::L1d => "L1-dcache",
            Cache::L1i => "L1-icache",
            Cache::Ll => "LLC",
            Cache::Dtlb => "dTLB",
            Cache::Itlb => "iTLB",
            Cache::Bpu => "branch",
            Cache::Node => "node",
        };
        let op = match self.op {
            CacheOp::Read => "load",
            CacheOp::Write => "store",
            CacheOp::Prefetch => "prefetch",
        };
        let res = match self.result {
            CacheResult::Access => "s",
            CacheResult::Miss => "-misses",
        };
        format!("{cache}-{op}{res}")
    }
}

/// Hardware breakpoint access kind (`HW_BREAKPOINT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BreakpointKind {
    /// Data write (`HW_BREAKPOINT_W`).
    Write,
    /// Data read or write (`HW_BREAKPOINT_RW`).
    ReadWrite,
    /// Instruction execution (`HW_BREAKPOINT_X`).
    Execute,
    /// Data read only (`HW_BREAKPOINT_R`; x86 does not support it: EINVAL).
    Read,
}

impl BreakpointKind {
    /// The `bp_type` value.
    pub const fn bp_type(self) -> u32 {
        match self {
            BreakpointKind::Write => sys::HW_BREAKPOINT_W,
            BreakpointKind::ReadWrite => sys::HW_BREAKPOINT_RW,
            BreakpointKind::Execute => sys::HW_BREAKPOINT_X,
            BreakpointKind::Read => sys::HW_BREAKPOINT_R,
        }
    }
}

/// A hardware breakpoint (`PERF_TYPE_BREAKPOINT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Breakpoint {
    /// The address watched (`bp_addr`).
    pub addr: u64,
    /// Length in bytes: 1, 2, 4 or 8 for data; `size_of::<c_long>()` for execute (`bp_len`).
    pub len: u64,
    /// The access kind (`bp_type`).
    pub kind: BreakpointKind,
}

/// An event to count or sample: the `type` and `config*` part of an attr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// `PERF_TYPE_HARDWARE`
    Hardware(Hardware),
    /// `PERF_TYPE_SOFTWARE`
    Software(Software),
    /// `PERF_TYPE_HW_CACHE`
    Cache(CacheEvent),
    /// `PERF_TYPE_RAW` with a full 64-bit config.
    Raw(u64),
    /// `PERF_TYPE_TRACEPOINT` by tracefs id.
    Tracepoint(u64),
    /// `PERF_TYPE_BREAKPOINT`
    Breakpoint(Breakpoint),
    /// Any PMU by its dynamic type (from `/sys/bus/event_source/devices/*/type`).
    Pmu {
        /// The PMU type number.
        type_: u32,
        /// `config`
        config: u64,
        /// `config1`
        config1: u64,
        /// `config2`
        config2: u64,
        /// `config3`
        config3: u64,
    },
}

impl From<Hardware> for Event {
    fn from(h: Hardware) -> Event {
        Event::Hardware(h)
    }
}
impl From<Software> for Event {
    fn from(s: Software) -> Event {
        Event::Software(s)
    }
}
impl From<CacheEvent> for Event {
    fn from(c: CacheEvent) -> Event {
        Event::Cache(c)
    }
}
impl From<Breakpoint> for Event {
    fn from(b: Breakpoint) -> Event {
        Event::Breakpoint(b)
    }
}

impl Event {
    /// Write this event's type, config, config1..3 and breakpoint fields into `attr`.
    pub fn apply(&self, attr: &mut sys::perf_event_attr) {
        match *self {
            Event::Hardware(h) => {
                attr.type_ = sys::PERF_TYPE_HARDWARE;
                attr.config = h.id();
            }
            Event::Software(s) => {
                attr.type_ = sys::PERF_TYPE_SOFTWARE;
                attr.config = s.id();
            }
            Event::Cache(c) => {
                attr.type_ = sys::PERF_TYPE_HW_CACHE;
                attr.config = c.config();
            }
            Event::Raw(config) => {
                attr.type_ = sys::PERF_TYPE_RAW;
                attr.config = config;
            }
            Event::Tracepoint(id) => {
                attr.type_ = sys::PERF_TYPE_TRACEPOINT;
                attr.config = id;
            }
            Event::Breakpoint(bp) => {
                attr.type_ = sys::PERF_TYPE_BREAKPOINT;
                attr.config = 0;
                attr.bp_type = bp.kind.bp_type();
                attr.config1 = bp.addr;
                attr.config2 = bp.len;
            }
            Event::Pmu {
                type_,
                config,
                config1,
                config2,
                config3,
            } => {
                attr.type_ = type_;
                attr.config = config;
                attr.config1 = config1;
                attr.config2 = config2;
                attr.config3 = config3;
            }
        }
    }

    /// A readable name: perf's name where there is one, else `type/config`.
    pub fn name(&self) -> String {
        match *self {
            Event::Hardware(h) => h.name().to_string(),
            Event::Software(s) => s.name().to_string(),
            Event::Cache(c) => c.name(),
            Event::Raw(c) => format!("r{c:x}"),
            Event::Tracepoint(id) => format!("tracepoint {id}"),
            Event::Breakpoint(bp) => {
                let k = match bp.kind {
                    BreakpointKind::Write => "w",
                    BreakpointKind::ReadWrite => "rw",
                    BreakpointKind::Execute => "x",
                    BreakpointKind::Read => "r",
                };
                format!("mem:{:#x}/{}:{k}", bp.addr, bp.len)
            }
            Event::Pmu { type_, config, .. } => format!("pmu type {type_}, config {config:#x}"),
        }
    }

    /// Whether this is a hardware-counter event (needs a PMU; `<not supported>` in most VMs).
    pub fn is_hardware(&self) -> bool {
        matches!(self, Event::Hardware(_) | Event::Cache(_) | Event::Raw(_))
    }
}

/// The best name for a raw attr: perf's name for generic events, else `type/config`.
pub fn attr_name(attr: &sys::perf_event_attr) -> String {
    let id = attr.config;
    match attr.type_ {
        sys::PERF_TYPE_HARDWARE => Hardware::ALL
            .get((id & sys::PERF_HW_EVENT_MASK) as usize)
            .map_or_else(|| format!("hardware {id:#x}"), |h| h.name().to_string()),
        sys::PERF_TYPE_SOFTWARE => Software::ALL
            .get(id as usize)
            .map_or_else(|| format!("software {id:#x}"), |s| s.name().to_string()),
        sys::PERF_TYPE_RAW => format!("r{id:x}"),
        sys::PERF_TYPE_TRACEPOINT => format!("tracepoint {id}"),
        sys::PERF_TYPE_BREAKPOINT => format!("mem:{:#x}", attr.config1),
        sys::PERF_TYPE_HW_CACHE => {
            let cache = [
                Cache::L1d,
                Cache::L1i,
                Cache::Ll,
                Cache::Dtlb,
                Cache::Itlb,
                Cache::Bpu,
                Cache::Node,
            ]
            .get((id & 0xff) as usize)
            .copied();
            let op = [CacheOp::Read, CacheOp::Write, CacheOp::Prefetch]
                .get(((id >> 8) & 0xff) as usize)
                .copied();
            let result = [CacheResult::Access, CacheResult::Miss]
                .get(((id >> 16) & 0xff) as usize)
                .copied();
            match (cache, op, result) {
                (Some(cache), Some(op), Some(result)) => CacheEvent { cache, op, result }.name(),
                _ => format!("hw-cache {id:#x}"),
            }
        }
        t => format!("{t}/config={id:#x}/"),
    }
}
