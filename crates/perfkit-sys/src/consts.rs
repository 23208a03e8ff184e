//! Every constant of `include/uapi/linux/perf_event.h` and `hw_breakpoint.h` that user space
//! uses, plus the record types perf's own tools add to perf.data (`tools/perf/util/event.h`).

// enum perf_type_id
/// Generalized hardware events.
pub const PERF_TYPE_HARDWARE: u32 = 0;
/// Kernel software events.
pub const PERF_TYPE_SOFTWARE: u32 = 1;
/// Tracepoints (config = tracefs id).
pub const PERF_TYPE_TRACEPOINT: u32 = 2;
/// Generalized hardware cache events.
pub const PERF_TYPE_HW_CACHE: u32 = 3;
/// Raw PMU-specific events.
pub const PERF_TYPE_RAW: u32 = 4;
/// Hardware breakpoints.
pub const PERF_TYPE_BREAKPOINT: u32 = 5;
/// First dynamic type number.
pub const PERF_TYPE_MAX: u32 = 6;

/// Extended hardware/cache config: PMU type in the upper 32 bits (hybrid systems).
pub const PERF_PMU_TYPE_SHIFT: u32 = 32;
/// Mask of the generic event id in an extended config.
pub const PERF_HW_EVENT_MASK: u64 = 0xffff_ffff;

// enum perf_hw_id
/// Total cycles.
pub const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
/// Retired instructions.
pub const PERF_COUNT_HW_INSTRUCTIONS: u64 = 1;
/// Cache accesses (usually last level).
pub const PERF_COUNT_HW_CACHE_REFERENCES: u64 = 2;
/// Cache misses (usually last level).
pub const PERF_COUNT_HW_CACHE_MISSES: u64 = 3;
/// Retired branch instructions.
pub const PERF_COUNT_HW_BRANCH_INSTRUCTIONS: u64 = 4;
/// Mispredicted branches.
pub const PERF_COUNT_HW_BRANCH_MISSES: u64 = 5;
/// Bus cycles.
pub const PERF_COUNT_HW_BUS_CYCLES: u64 = 6;
/// Stalled cycles during issue.
pub const PERF_COUNT_HW_STALLED_CYCLES_FRONTEND: u64 = 7;
/// Stalled cycles during retirement.
pub const PERF_COUNT_HW_STALLED_CYCLES_BACKEND: u64 = 8;
/// Cycles not affected by frequency scaling.
pub const PERF_COUNT_HW_REF_CPU_CYCLES: u64 = 9;
/// Number of hardware ids.
pub const PERF_COUNT_HW_MAX: u64 = 10;

// enum perf_hw_cache_id
/// Level 1 data cache.
pub const PERF_COUNT_HW_CACHE_L1D: u64 = 0;
/// Level 1 instruction cache.
pub const PERF_COUNT_HW_CACHE_L1I: u64 = 1;
/// Last-level cache.
pub const PERF_COUNT_HW_CACHE_LL: u64 = 2;
/// Data TLB.
pub const PERF_COUNT_HW_CACHE_DTLB: u64 = 3;
/// Instruction TLB.
pub const PERF_COUNT_HW_CACHE_ITLB: u64 = 4;
/// Branch prediction unit.
pub const PERF_COUNT_HW_CACHE_BPU: u64 = 5;
/// Local memory accesses (NUMA node).
pub const PERF_COUNT_HW_CACHE_NODE: u64 = 6;
/// Number of cache ids.
pub const PERF_COUNT_HW_CACHE_MAX: u64 = 7;

// enum perf_hw_cache_op_id
/// Reads.
pub const PERF_COUNT_HW_CACHE_OP_READ: u64 = 0;
/// Writes.
pub const PERF_COUNT_HW_CACHE_OP_WRITE: u64 = 1;
/// Prefetches.
pub const PERF_COUNT_HW_CACHE_OP_PREFETCH: u64 = 2;
/// Number of cache ops.
pub const PERF_COUNT_HW_CACHE_OP_MAX: u64 = 3;

// enum perf_hw_cache_op_result_id
/// Accesses.
pub const PERF_COUNT_HW_CACHE_RESULT_ACCESS: u64 = 0;
/// Misses.
pub const PERF_COUNT_HW_CACHE_RESULT_MISS: u64 = 1;
/// Number of cache results.
pub const PERF_COUNT_HW_CACHE_RESULT_MAX: u64 = 2;

// enum perf_sw_ids
/// High-resolution per-CPU timer.
pub const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
/// Per-task clock.
pub const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// Page faults.
pub const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
/// Context switches.
pub const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
/// CPU migrations.
pub const PERF_COUNT_SW_CPU_MIGRATIONS: u64 = 4;
/// Minor page faults.
pub const PERF_COUNT_SW_PAGE_FAULTS_MIN: u64 = 5;
/// Major page faults.
pub const PERF_COUNT_SW_PAGE_FAULTS_MAJ: u64 = 6;
/// Alignment faults.
pub const PERF_COUNT_SW_ALIGNMENT_FAULTS: u64 = 7;
/// Emulation faults.
pub const PERF_COUNT_SW_EMULATION_FAULTS: u64 = 8;
/// Placeholder that counts nothing (for side-band records).
pub const PERF_COUNT_SW_DUMMY: u64 = 9;
/// BPF output (bpf_perf_event_output).
pub const PERF_COUNT_SW_BPF_OUTPUT: u64 = 10;
/// Cgroup switches.
pub const PERF_COUNT_SW_CGROUP_SWITCHES: u64 = 11;
/// Number of software ids.
pub const PERF_COUNT_SW_MAX: u64 = 12;

// enum perf_event_sample_format
/// Instruction pointer.
pub const PERF_SAMPLE_IP: u64 = 1 << 0;
/// pid and tid.
pub const PERF_SAMPLE_TID: u64 = 1 << 1;
/// Timestamp.
pub const PERF_SAMPLE_TIME: u64 = 1 << 2;
/// Address.
pub const PERF_SAMPLE_ADDR: u64 = 1 << 3;
/// Counter values (read_format).
pub const PERF_SAMPLE_READ: u64 = 1 << 4;
/// Callchain.
pub const PERF_SAMPLE_CALLCHAIN: u64 = 1 << 5;
/// Event id.
pub const PERF_SAMPLE_ID: u64 = 1 << 6;
/// CPU number.
pub const PERF_SAMPLE_CPU: u64 = 1 << 7;
/// Sample period.
pub const PERF_SAMPLE_PERIOD: u64 = 1 << 8;
/// Id of the group leader that produced the sample.
pub const PERF_SAMPLE_STREAM_ID: u64 = 1 << 9;
/// Raw tracepoint data.
pub const PERF_SAMPLE_RAW: u64 = 1 << 10;
/// Branch stack.
pub const PERF_SAMPLE_BRANCH_STACK: u64 = 1 << 11;
/// User registers.
pub const PERF_SAMPLE_REGS_USER: u64 = 1 << 12;
/// User stack.
pub const PERF_SAMPLE_STACK_USER: u64 = 1 << 13;
/// Weight.
pub const PERF_SAMPLE_WEIGHT: u64 = 1 << 14;
/// Data source.
pub const PERF_SAMPLE_DATA_SRC: u64 = 1 << 15;
/// Id at a fixed position.
pub const PERF_SAMPLE_IDENTIFIER: u64 = 1 << 16;
/// Transaction flags.
pub const PERF_SAMPLE_TRANSACTION: u64 = 1 << 17;
/// Interrupted-context registers.
pub const PERF_SAMPLE_REGS_INTR: u64 = 1 << 18;
/// Physical address.
pub const PERF_SAMPLE_PHYS_ADDR: u64 = 1 << 19;
/// AUX area data.
pub const PERF_SAMPLE_AUX: u64 = 1 << 20;
/// Cgroup id.
pub const PERF_SAMPLE_CGROUP: u64 = 1 << 21;
/// Data page size.
pub const PERF_SAMPLE_DATA_PAGE_SIZE: u64 = 1 << 22;
/// Code page size.
pub const PERF_SAMPLE_CODE_PAGE_SIZE: u64 = 1 << 23;
/// Weight as a structure (var1/var2/var3).
pub const PERF_SAMPLE_WEIGHT_STRUCT: u64 = 1 << 24;

/// Each `PERF_SAMPLE_*` bit with its name after the prefix, in bit order.
pub const PERF_SAMPLE_NAMES: [(u64, &str); 25] = [
    (PERF_SAMPLE_IP, "IP"),
    (PERF_SAMPLE_TID, "TID"),
    (PERF_SAMPLE_TIME, "TIME"),
    (PERF_SAMPLE_ADDR, "ADDR"),
    (PERF_SAMPLE_READ, "READ"),
    (PERF_SAMPLE_CALLCHAIN, "CALLCHAIN"),
    (PERF_SAMPLE_ID, "ID"),
    (PERF_SAMPLE_CPU, "CPU"),
    (PERF_SAMPLE_PERIOD, "PERIOD"),
    (PERF_SAMPLE_STREAM_ID, "STREAM_ID"),
    (PERF_SAMPLE_RAW, "RAW"),
    (PERF_SAMPLE_BRANCH_STACK, "BRANCH_STACK"),
    (PERF_SAMPLE_REGS_USER, "REGS_USER"),
    (PERF_SAMPLE_STACK_USER, "STACK_USER"),
    (PERF_SAMPLE_WEIGHT, "WEIGHT"),
    (PERF_SAMPLE_DATA_SRC, "DATA_SRC"),
    (PERF_SAMPLE_IDENTIFIER, "IDENTIFIER"),
    (PERF_SAMPLE_TRANSACTION, "TRANSACTION"),
    (PERF_SAMPLE_REGS_INTR, "REGS_INTR"),
    (PERF_SAMPLE_PHYS_ADDR, "PHYS_ADDR"),
    (PERF_SAMPLE_AUX, "AUX"),
    (PERF_SAMPLE_CGROUP, "CGROUP"),
    (PERF_SAMPLE_DATA_PAGE_SIZE, "DATA_PAGE_SIZE"),
    (PERF_SAMPLE_CODE_PAGE_SIZE, "CODE_PAGE_SIZE"),
    (PERF_SAMPLE_WEIGHT_STRUCT, "WEIGHT_STRUCT"),
];
/// First unused sample bit.
pub const PERF_SAMPLE_MAX: u64 = 1 << 25;
/// Either weight form.
pub const PERF_SAMPLE_WEIGHT_TYPE: u64 = PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT;

// enum perf_branch_sample_type
/// User branches.
pub const PERF_SAMPLE_BRANCH_USER: u64 = 1 << 0;
/// Kernel branches.
pub const PERF_SAMPLE_BRANCH_KERNEL: u64 = 1 << 1;
/// Hypervisor branches.
pub const PERF_SAMPLE_BRANCH_HV: u64 = 1 << 2;
/// Any branch types.
pub const PERF_SAMPLE_BRANCH_ANY: u64 = 1 << 3;
/// Any call branch.
pub const PERF_SAMPLE_BRANCH_ANY_CALL: u64 = 1 << 4;
/// Any return branch.
pub const PERF_SAMPLE_BRANCH_ANY_RETURN: u64 = 1 << 5;
/// Indirect calls.
pub const PERF_SAMPLE_BRANCH_IND_CALL: u64 = 1 << 6;
/// Transaction aborts.
pub const PERF_SAMPLE_BRANCH_ABORT_TX: u64 = 1 << 7;
/// In transaction.
pub const PERF_SAMPLE_BRANCH_IN_TX: u64 = 1 << 8;
/// Not in transaction.
pub const PERF_SAMPLE_BRANCH_NO_TX: u64 = 1 << 9;
/// Conditional branches.
pub const PERF_SAMPLE_BRANCH_COND: u64 = 1 << 10;
/// Call/ret stack.
pub const PERF_SAMPLE_BRANCH_CALL_STACK: u64 = 1 << 11;
/// Indirect jumps.
pub const PERF_SAMPLE_BRANCH_IND_JUMP: u64 = 1 << 12;
/// Direct calls.
pub const PERF_SAMPLE_BRANCH_CALL: u64 = 1 << 13;
/// No flags.
pub const PERF_SAMPLE_BRANCH_NO_FLAGS: u64 = 1 << 14;
/// No cycles.
pub const PERF_SAMPLE_BRANCH_NO_CYCLES: u64 = 1 << 15;
/// Save branch type.
pub const PERF_SAMPLE_BRANCH_TYPE_SAVE: u64 = 1 << 16;
/// Save low-level index of raw branch records.
pub const PERF_SAMPLE_BRANCH_HW_INDEX: u64 = 1 << 17;
/// Save privilege mode.
pub const PERF_SAMPLE_BRANCH_PRIV_SAVE: u64 = 1 << 18;
/// Save occurrences of events on a branch.
pub const PERF_SAMPLE_BRANCH_COUNTERS: u64 = 1 << 19;
/// First unused branch bit.
pub const PERF_SAMPLE_BRANCH_MAX: u64 = 1 << 20;

// enum perf_sample_regs_abi
/// No registers.
pub const PERF_SAMPLE_REGS_ABI_NONE: u64 = 0;
/// 32-bit registers.
pub const PERF_SAMPLE_REGS_ABI_32: u64 = 1;
/// 64-bit registers.
pub const PERF_SAMPLE_REGS_ABI_64: u64 = 2;

// Transaction flags (PERF_SAMPLE_TRANSACTION)
/// Transaction elision.
pub const PERF_TXN_ELISION: u64 = 1 << 0;
/// Transaction.
pub const PERF_TXN_TRANSACTION: u64 = 1 << 1;
/// Synchronous abort.
pub const PERF_TXN_SYNC: u64 = 1 << 2;
/// Asynchronous abort.
pub const PERF_TXN_ASYNC: u64 = 1 << 3;
/// Retryable.
pub const PERF_TXN_RETRY: u64 = 1 << 4;
/// Conflict abort.
pub const PERF_TXN_CONFLICT: u64 = 1 << 5;
/// Capacity write abort.
pub const PERF_TXN_CAPACITY_WRITE: u64 = 1 << 6;
/// Capacity read abort.
pub const PERF_TXN_CAPACITY_READ: u64 = 1 << 7;
/// Mask of the abort code.
pub const PERF_TXN_ABORT_MASK: u64 = 0xffff_ffff << 32;
/// Shift of the abort code.
pub const PERF_TXN_ABORT_SHIFT: u32 = 32;

// enum perf_event_read_format
/// Time the event was enabled.
pub const PERF_FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
/// Time the event was on the PMU.
pub const PERF_FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
/// Event id.
pub const PERF_FORMAT_ID: u64 = 1 << 2;
/// Read the whole group.
pub const PERF_FORMAT_GROUP: u64 = 1 << 3;
/// Lost samples.
pub const PERF_FORMAT_LOST: u64 = 1 << 4;
/// First unused read_format bit.
pub const PERF_FORMAT_MAX: u64 = 1 << 5;

// ioctl flags
/// Apply an ioctl to the whole group.
pub const PERF_IOC_FLAG_GROUP: u32 = 1 << 0;

// perf_event_open flags
/// Don't group with the group_fd leader (only redirect output).
pub const PERF_FLAG_FD_NO_GROUP: u64 = 1 << 0;
/// Redirect output to group_fd (broken since 2.6.35; EINVAL).
pub const PERF_FLAG_FD_OUTPUT: u64 = 1 << 1;
/// pid is a cgroup directory fd.
pub const PERF_FLAG_PID_CGROUP: u64 = 1 << 2;
/// Open the fd close-on-exec.
pub const PERF_FLAG_FD_CLOEXEC: u64 = 1 << 3;

// perf_event_header.misc
/// Mask of the CPU mode.
pub const PERF_RECORD_MISC_CPUMODE_MASK: u16 = 7;
/// Unknown mode.
pub const PERF_RECORD_MISC_CPUMODE_UNKNOWN: u16 = 0;
/// Kernel mode.
pub const PERF_RECORD_MISC_KERNEL: u16 = 1;
/// User mode.
pub const PERF_RECORD_MISC_USER: u16 = 2;
/// Hypervisor mode.
pub const PERF_RECORD_MISC_HYPERVISOR: u16 = 3;
/// Guest kernel mode.
pub const PERF_RECORD_MISC_GUEST_KERNEL: u16 = 4;
/// Guest user mode.
pub const PERF_RECORD_MISC_GUEST_USER: u16 = 5;
/// /proc/PID/maps parsing was cut short by a timeout (perf synthesized records).
pub const PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT: u16 = 1 << 12;
/// MMAP/MMAP2: a data (non-executable) mapping.
pub const PERF_RECORD_MISC_MMAP_DATA: u16 = 1 << 13;
/// COMM: the name changed because of an exec.
pub const PERF_RECORD_MISC_COMM_EXEC: u16 = 1 << 13;
/// FORK: the fork was part of an exec (perf synthesized).
pub const PERF_RECORD_MISC_FORK_EXEC: u16 = 1 << 13;
/// SWITCH: the task switched out.
pub const PERF_RECORD_MISC_SWITCH_OUT: u16 = 1 << 13;
/// SAMPLE: the ip is exact (precise_ip).
pub const PERF_RECORD_MISC_EXACT_IP: u16 = 1 << 14;
/// SWITCH: switched out while still runnable (preempted).
pub const PERF_RECORD_MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// MMAP2: the record carries a build id instead of device and inode.
pub const PERF_RECORD_MISC_MMAP_BUILD_ID: u16 = 1 << 14;
/// Reserved for future extension.
pub const PERF_RECORD_MISC_EXT_RESERVED: u16 = 1 << 15;

// enum perf_event_type
/// An executable mmap.
pub const PERF_RECORD_MMAP: u32 = 1;
/// Records lost because the ring was full.
pub const PERF_RECORD_LOST: u32 = 2;
/// A task name change.
pub const PERF_RECORD_COMM: u32 = 3;
/// A task exit.
pub const PERF_RECORD_EXIT: u32 = 4;
/// Sampling throttled.
pub const PERF_RECORD_THROTTLE: u32 = 5;
/// Sampling unthrottled.
pub const PERF_RECORD_UNTHROTTLE: u32 = 6;
/// A task fork.
pub const PERF_RECORD_FORK: u32 = 7;
/// A counter read at task exit (inherit_stat).
pub const PERF_RECORD_READ: u32 = 8;
/// A sample.
pub const PERF_RECORD_SAMPLE: u32 = 9;
/// An mmap with inode or build-id data.
pub const PERF_RECORD_MMAP2: u32 = 10;
/// New data in the AUX area.
pub const PERF_RECORD_AUX: u32 = 11;
/// Instruction trace started.
pub const PERF_RECORD_ITRACE_START: u32 = 12;
/// Samples lost in hardware.
pub const PERF_RECORD_LOST_SAMPLES: u32 = 13;
/// A context switch (per task).
pub const PERF_RECORD_SWITCH: u32 = 14;
/// A context switch (per CPU, with the other task).
pub const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;
/// A task's namespaces.
pub const PERF_RECORD_NAMESPACES: u32 = 16;
/// Kernel symbol (un)registration.
pub const PERF_RECORD_KSYMBOL: u32 = 17;
/// BPF program load/unload.
pub const PERF_RECORD_BPF_EVENT: u32 = 18;
/// A new cgroup.
pub const PERF_RECORD_CGROUP: u32 = 19;
/// Kernel text modification.
pub const PERF_RECORD_TEXT_POKE: u32 = 20;
/// Hardware id of an AUX output event.
pub const PERF_RECORD_AUX_OUTPUT_HW_ID: u32 = 21;
/// First unused kernel record type.
pub const PERF_RECORD_MAX: u32 = 22;

/// Kernel record type names, indexed by type.
pub const PERF_RECORD_NAMES: [&str; 22] = [
    "UNKNOWN",
    "MMAP",
    "LOST",
    "COMM",
    "EXIT",
    "THROTTLE",
    "UNTHROTTLE",
    "FORK",
    "READ",
    "SAMPLE",
    "MMAP2",
    "AUX",
    "ITRACE_START",
    "LOST_SAMPLES",
    "SWITCH",
    "SWITCH_CPU_WIDE",
    "NAMESPACES",
    "KSYMBOL",
    "BPF_EVENT",
    "CGROUP",
    "TEXT_POKE",
    "AUX_OUTPUT_HW_ID",
];

// perf tool (user) record types: not produced by the kernel, found in perf.data files.
/// First user record type.
pub const PERF_RECORD_USER_TYPE_START: u32 = 64;
/// An attr and its ids (pipe mode).
pub const PERF_RECORD_HEADER_ATTR: u32 = 64;
/// Obsolete event type record.
pub const PERF_RECORD_HEADER_EVENT_TYPE: u32 = 65;
/// Tracing data (pipe mode).
pub const PERF_RECORD_HEADER_TRACING_DATA: u32 = 66;
/// A build id (pipe mode).
pub const PERF_RECORD_HEADER_BUILD_ID: u32 = 67;
/// All records before this one may be sorted and flushed.
pub const PERF_RECORD_FINISHED_ROUND: u32 = 68;
/// Event id to cpu/tid index.
pub const PERF_RECORD_ID_INDEX: u32 = 69;
/// AUX trace information.
pub const PERF_RECORD_AUXTRACE_INFO: u32 = 70;
/// AUX trace data.
pub const PERF_RECORD_AUXTRACE: u32 = 71;
/// AUX trace error.
pub const PERF_RECORD_AUXTRACE_ERROR: u32 = 72;
/// Thread map.
pub const PERF_RECORD_THREAD_MAP: u32 = 73;
/// CPU map.
pub const PERF_RECORD_CPU_MAP: u32 = 74;
/// perf stat configuration.
pub const PERF_RECORD_STAT_CONFIG: u32 = 75;
/// perf stat counts.
pub const PERF_RECORD_STAT: u32 = 76;
/// perf stat round.
pub const PERF_RECORD_STAT_ROUND: u32 = 77;
/// Event update (unit, scale, name, cpus).
pub const PERF_RECORD_EVENT_UPDATE: u32 = 78;
/// Time conversion parameters.
pub const PERF_RECORD_TIME_CONV: u32 = 79;
/// A header feature section (pipe mode).
pub const PERF_RECORD_HEADER_FEATURE: u32 = 80;
/// zstd-compressed records.
pub const PERF_RECORD_COMPRESSED: u32 = 81;
/// End of the synthesized records.
pub const PERF_RECORD_FINISHED_INIT: u32 = 82;
/// zstd-compressed records, 8-byte aligned, with a data_size field.
pub const PERF_RECORD_COMPRESSED2: u32 = 83;

// Callchain context markers (enum perf_callchain_context), as u64.
/// Hypervisor frames follow.
pub const PERF_CONTEXT_HV: u64 = -32i64 as u64;
/// Kernel frames follow.
pub const PERF_CONTEXT_KERNEL: u64 = -128i64 as u64;
/// User frames follow.
pub const PERF_CONTEXT_USER: u64 = -512i64 as u64;
/// Guest frames follow.
pub const PERF_CONTEXT_GUEST: u64 = -2048i64 as u64;
/// Guest kernel frames follow.
pub const PERF_CONTEXT_GUEST_KERNEL: u64 = -2176i64 as u64;
/// Guest user frames follow.
pub const PERF_CONTEXT_GUEST_USER: u64 = -2560i64 as u64;
/// Values at or above this are context markers.
pub const PERF_CONTEXT_MAX: u64 = -4095i64 as u64;

// PERF_RECORD_AUX flags
/// Record was truncated to fit.
pub const PERF_AUX_FLAG_TRUNCATED: u64 = 0x01;
/// Snapshot from overwrite mode.
pub const PERF_AUX_FLAG_OVERWRITE: u64 = 0x02;
/// Record contains gaps.
pub const PERF_AUX_FLAG_PARTIAL: u64 = 0x04;
/// Sample collided with another.
pub const PERF_AUX_FLAG_COLLISION: u64 = 0x08;
/// PMU-specific trace format type.
pub const PERF_AUX_FLAG_PMU_FORMAT_TYPE_MASK: u64 = 0xff00;

// Namespaces (PERF_RECORD_NAMESPACES)
/// Network namespace index.
pub const NET_NS_INDEX: usize = 0;
/// UTS namespace index.
pub const UTS_NS_INDEX: usize = 1;
/// IPC namespace index.
pub const IPC_NS_INDEX: usize = 2;
/// PID namespace index.
pub const PID_NS_INDEX: usize = 3;
/// User namespace index.
pub const USER_NS_INDEX: usize = 4;
/// Mount namespace index.
pub const MNT_NS_INDEX: usize = 5;
/// Cgroup namespace index.
pub const CGROUP_NS_INDEX: usize = 6;
/// Number of namespaces.
pub const NR_NAMESPACES: usize = 7;

// enum perf_record_ksymbol_type
/// Unknown symbol type.
pub const PERF_RECORD_KSYMBOL_TYPE_UNKNOWN: u16 = 0;
/// A BPF program.
pub const PERF_RECORD_KSYMBOL_TYPE_BPF: u16 = 1;
/// Out of line code such as kprobe-replaced instructions or optimized kprobes.
pub const PERF_RECORD_KSYMBOL_TYPE_OOL: u16 = 2;
/// The symbol is being unregistered.
pub const PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER: u16 = 1 << 0;

// enum perf_bpf_event_type
/// Unknown BPF event.
pub const PERF_BPF_EVENT_UNKNOWN: u16 = 0;
/// Program loaded.
pub const PERF_BPF_EVENT_PROG_LOAD: u16 = 1;
/// Program unloaded.
pub const PERF_BPF_EVENT_PROG_UNLOAD: u16 = 2;
/// Size of the BPF tag.
pub const BPF_TAG_SIZE: usize = 8;

/// Maximum build id size in MMAP2 records.
pub const BUILD_ID_SIZE_MAX: usize = 20;

// hw_breakpoint.h
/// No access.
pub const HW_BREAKPOINT_EMPTY: u32 = 0;
/// Read.
pub const HW_BREAKPOINT_R: u32 = 1;
/// Write.
pub const HW_BREAKPOINT_W: u32 = 2;
/// Read or write.
pub const HW_BREAKPOINT_RW: u32 = HW_BREAKPOINT_R | HW_BREAKPOINT_W;
/// Execute.
pub const HW_BREAKPOINT_X: u32 = 4;
/// Invalid combination.
pub const HW_BREAKPOINT_INVALID: u32 = HW_BREAKPOINT_RW | HW_BREAKPOINT_X;
/// 1 byte.
pub const HW_BREAKPOINT_LEN_1: u64 = 1;
/// 2 bytes.
pub const HW_BREAKPOINT_LEN_2: u64 = 2;
/// 3 bytes.
pub const HW_BREAKPOINT_LEN_3: u64 = 3;
/// 4 bytes.
pub const HW_BREAKPOINT_LEN_4: u64 = 4;
/// 5 bytes.
pub const HW_BREAKPOINT_LEN_5: u64 = 5;
/// 6 bytes.
pub const HW_BREAKPOINT_LEN_6: u64 = 6;
/// 7 bytes.
pub const HW_BREAKPOINT_LEN_7: u64 = 7;
/// 8 bytes.
pub const HW_BREAKPOINT_LEN_8: u64 = 8;

// perf_mem_data_src (PERF_SAMPLE_DATA_SRC) field shifts
/// Memory operation shift.
pub const PERF_MEM_OP_SHIFT: u32 = 0;
/// Memory hierarchy level shift.
pub const PERF_MEM_LVL_SHIFT: u32 = 5;
/// Snoop mode shift.
pub const PERF_MEM_SNOOP_SHIFT: u32 = 19;
/// Lock instruction shift.
pub const PERF_MEM_LOCK_SHIFT: u32 = 24;
/// TLB access shift.
pub const PERF_MEM_TLB_SHIFT: u32 = 26;
/// Memory hierarchy level number shift.
pub const PERF_MEM_LVLNUM_SHIFT: u32 = 33;
/// Remote shift.
pub const PERF_MEM_REMOTE_SHIFT: u32 = 37;
/// Snoop extension shift.
pub const PERF_MEM_SNOOPX_SHIFT: u32 = 38;
/// Block reason shift.
pub const PERF_MEM_BLK_SHIFT: u32 = 40;
/// Hop level shift.
pub const PERF_MEM_HOPS_SHIFT: u32 = 43;

/// The generic event id of a hardware cache event: `cache | op << 8 | result << 16`.
pub const fn hw_cache_config(cache: u64, op: u64, result: u64) -> u64 {
    cache | (op << 8) | (result << 16)
}
