//! `struct perf_event_attr`.

use core::mem::{offset_of, size_of};

/// Size of the first published `perf_event_attr` (Linux 2.6.31).
pub const PERF_ATTR_SIZE_VER0: u32 = 64;
/// Adds `config2` (Linux 2.6.33).
pub const PERF_ATTR_SIZE_VER1: u32 = 72;
/// Adds `branch_sample_type` (Linux 3.4).
pub const PERF_ATTR_SIZE_VER2: u32 = 80;
/// Adds `sample_regs_user`, `sample_stack_user`, `clockid` (Linux 3.7).
pub const PERF_ATTR_SIZE_VER3: u32 = 96;
/// Adds `sample_regs_intr` (Linux 3.19).
pub const PERF_ATTR_SIZE_VER4: u32 = 104;
/// Adds `aux_watermark`, `sample_max_stack` (Linux 4.1).
pub const PERF_ATTR_SIZE_VER5: u32 = 112;
/// Adds `aux_sample_size` (Linux 5.5).
pub const PERF_ATTR_SIZE_VER6: u32 = 120;
/// Adds `sig_data` (Linux 5.13).
pub const PERF_ATTR_SIZE_VER7: u32 = 128;
/// Adds `config3` (Linux 6.3).
pub const PERF_ATTR_SIZE_VER8: u32 = 136;

/// Every published attr size, oldest first.
pub const PERF_ATTR_SIZES: [u32; 9] = [
    PERF_ATTR_SIZE_VER0,
    PERF_ATTR_SIZE_VER1,
    PERF_ATTR_SIZE_VER2,
    PERF_ATTR_SIZE_VER3,
    PERF_ATTR_SIZE_VER4,
    PERF_ATTR_SIZE_VER5,
    PERF_ATTR_SIZE_VER6,
    PERF_ATTR_SIZE_VER7,
    PERF_ATTR_SIZE_VER8,
];

/// `struct perf_event_attr`, field for field.
///
/// The kernel's unions are single fields here, named after their first member, with
/// accessors for the other names ([`sample_freq`](Self::sample_freq),
/// [`wakeup_watermark`](Self::wakeup_watermark), [`bp_addr`](Self::bp_addr) ...). The C
/// bit-field word is [`flags`](Self::flags); its bits are in [`attr_flags`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct perf_event_attr {
    /// Major type: `PERF_TYPE_*` or a dynamic PMU type from sysfs.
    pub type_: u32,
    /// Size of this structure as the caller knows it (`PERF_ATTR_SIZE_VER*`).
    pub size: u32,
    /// Type-specific configuration.
    pub config: u64,
    /// Union `sample_period` / `sample_freq` (which one is chosen by `attr_flags::FREQ`).
    pub sample_period: u64,
    /// `PERF_SAMPLE_*` bits.
    pub sample_type: u64,
    /// `PERF_FORMAT_*` bits.
    pub read_format: u64,
    /// The bit-field word: `disabled`, `inherit`, ... `sigtrap`. See [`attr_flags`].
    pub flags: u64,
    /// Union `wakeup_events` / `wakeup_watermark` (chosen by `attr_flags::WATERMARK`).
    pub wakeup_events: u32,
    /// `HW_BREAKPOINT_*` access type.
    pub bp_type: u32,
    /// Union `bp_addr` / `kprobe_func` / `uprobe_path` / `config1`.
    pub config1: u64,
    /// Union `bp_len` / `kprobe_addr` / `probe_offset` / `config2`.
    pub config2: u64,
    /// `PERF_SAMPLE_BRANCH_*` bits.
    pub branch_sample_type: u64,
    /// Mask of user registers to dump in samples (arch `perf_regs.h`).
    pub sample_regs_user: u64,
    /// Bytes of user stack to dump in samples.
    pub sample_stack_user: u32,
    /// Clock for timestamps when `attr_flags::USE_CLOCKID` is set.
    pub clockid: i32,
    /// Mask of interrupted-context registers to dump in samples.
    pub sample_regs_intr: u64,
    /// AUX area wakeup watermark.
    pub aux_watermark: u32,
    /// Maximum callchain depth.
    pub sample_max_stack: u16,
    /// Reserved, must be zero.
    pub __reserved_2: u16,
    /// Bytes of AUX data to put in samples.
    pub aux_sample_size: u32,
    /// `aux_start_paused`, `aux_pause`, `aux_resume` bits (`__reserved_3` before 6.13).
    pub aux_action: u32,
    /// User data delivered in `si_perf_data` with `sigtrap`.
    pub sig_data: u64,
    /// Extension of `config2`.
    pub config3: u64,
}

const _: () = {
    assert!(size_of::<perf_event_attr>() == PERF_ATTR_SIZE_VER8 as usize);
    assert!(offset_of!(perf_event_attr, type_) == 0);
    assert!(offset_of!(perf_event_attr, size) == 4);
    assert!(offset_of!(perf_event_attr, config) == 8);
    assert!(offset_of!(perf_event_attr, sample_period) == 16);
    assert!(offset_of!(perf_event_attr, sample_type) == 24);
    assert!(offset_of!(perf_event_attr, read_format) == 32);
    assert!(offset_of!(perf_event_attr, flags) == 40);
    assert!(offset_of!(perf_event_attr, wakeup_events) == 48);
    assert!(offset_of!(perf_event_attr, bp_type) == 52);
    assert!(offset_of!(perf_event_attr, config1) == 56);
    assert!(offset_of!(perf_event_attr, config2) == PERF_ATTR_SIZE_VER0 as usize);
    assert!(offset_of!(perf_event_attr, branch_sample_type) == PERF_ATTR_SIZE_VER1 as usize);
    assert!(offset_of!(perf_event_attr, sample_regs_user) == PERF_ATTR_SIZE_VER2 as usize);
    assert!(offset_of!(perf_event_attr, sample_stack_user) == 88);
    assert!(offset_of!(perf_event_attr, clockid) == 92);
    assert!(offset_of!(perf_event_attr, sample_regs_intr) == PERF_ATTR_SIZE_VER3 as usize);
    assert!(offset_of!(perf_event_attr, aux_watermark) == PERF_ATTR_SIZE_VER4 as usize);
    assert!(offset_of!(perf_event_attr, sample_max_stack) == 108);
    assert!(offset_of!(perf_event_attr, __reserved_2) == 110);
    assert!(offset_of!(perf_event_attr, aux_sample_size) == PERF_ATTR_SIZE_VER5 as usize);
    assert!(offset_of!(perf_event_attr, aux_action) == 116);
    assert!(offset_of!(perf_event_attr, sig_data) == PERF_ATTR_SIZE_VER6 as usize);
    assert!(offset_of!(perf_event_attr, config3) == PERF_ATTR_SIZE_VER7 as usize);
};

impl perf_event_attr {
    /// A zeroed attr with `size` set to [`PERF_ATTR_SIZE_VER8`].
    pub const fn new() -> Self {
        perf_event_attr {
            type_: 0,
            size: PERF_ATTR_SIZE_VER8,
            config: 0,
            sample_period: 0,
            sample_type: 0,
            read_format: 0,
            flags: 0,
            wakeup_events: 0,
            bp_type: 0,
            config1: 0,
            config2: 0,
            branch_sample_type: 0,
            sample_regs_user: 0,
            sample_stack_user: 0,
            clockid: 0,
            sample_regs_intr: 0,
            aux_watermark: 0,
            sample_max_stack: 0,
            __reserved_2: 0,
            aux_sample_size: 0,
            aux_action: 0,
            sig_data: 0,
            config3: 0,
        }
    }

    /// Whether flag bit `flag` (one of [`attr_flags`]) is set.
    #[inline]
    pub const fn has(&self, flag: u64) -> bool {
        self.flags & flag == flag
    }

    /// Set or clear flag bits.
    #[inline]
    pub fn set(&mut self, flag: u64, on: bool) {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
    }

    /// `precise_ip` (0..=3), a two-bit field inside [`flags`](Self::flags).
    #[inline]
    pub const fn precise_ip(&self) -> u8 {
        ((self.flags & attr_flags::PRECISE_IP_MASK) >> attr_flags::PRECISE_IP_SHIFT) as u8
    }

    /// Set `precise_ip` (values above 3 are cut to their low two bits).
    #[inline]
    pub fn set_precise_ip(&mut self, level: u8) {
        self.flags = (self.flags & !attr_flags::PRECISE_IP_MASK)
            | ((u64::from(level) & 3) << attr_flags::PRECISE_IP_SHIFT);
    }

    /// The `sample_freq` member of the period union.
    #[inline]
    pub const fn sample_freq(&self) -> u64 {
        self.sample_period
    }
    /// The `wakeup_watermark` member of the wakeup union.
    #[inline]
    pub const fn wakeup_watermark(&self) -> u32 {
        self.wakeup_events
    }
    /// The `bp_addr` member of the `config1` union.
    #[inline]
    pub const fn bp_addr(&self) -> u64 {
        self.config1
    }
    /// The `bp_len` member of the `config2` union.
    #[inline]
    pub const fn bp_len(&self) -> u64 {
        self.config2
    }
    /// The `uprobe_path` / `kprobe_func` member of the `config1` union.
    #[inline]
    pub const fn uprobe_path(&self) -> u64 {
        self.config1
    }
    /// The `probe_offset` / `kprobe_addr` member of the `config2` union.
    #[inline]
    pub const fn probe_offset(&self) -> u64 {
        self.config2
    }

    /// The attr as the bytes the kernel sees (native byte order, `size_of` bytes).
    pub fn as_bytes(&self) -> [u8; PERF_ATTR_SIZE_VER8 as usize] {
        let mut out = [0u8; PERF_ATTR_SIZE_VER8 as usize];
        let words: [u64; 17] = [
            u64::from(self.type_) | (u64::from(self.size) << 32),
            self.config,
            self.sample_period,
            self.sample_type,
            self.read_format,
            self.flags,
            u64::from(self.wakeup_events) | (u64::from(self.bp_type) << 32),
            self.config1,
            self.config2,
            self.branch_sample_type,
            self.sample_regs_user,
            u64::from(self.sample_stack_user) | (u64::from(self.clockid as u32) << 32),
            self.sample_regs_intr,
            u64::from(self.aux_watermark)
                | (u64::from(self.sample_max_stack) << 32)
                | (u64::from(self.__reserved_2) << 48),
            u64::from(self.aux_sample_size) | (u64::from(self.aux_action) << 32),
            self.sig_data,
            self.config3,
        ];
        // Pairs of u32 packed into u64 above follow little-endian field order; on a
        // big-endian machine the first u32 field is the high half of its word.
        for (i, w) in words.iter().enumerate() {
            let w = if cfg!(target_endian = "big") && [0, 6, 11, 13, 14].contains(&i) {
                w.rotate_left(32)
            } else {
                *w
            };
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_ne_bytes());
        }
        if cfg!(target_endian = "big") {
            // aux_watermark (u32) | sample_max_stack (u16) | __reserved_2 (u16):
            // rebuild that word field by field.
            let mut w = [0u8; 8];
            w[0..4].copy_from_slice(&self.aux_watermark.to_ne_bytes());
            w[4..6].copy_from_slice(&self.sample_max_stack.to_ne_bytes());
            w[6..8].copy_from_slice(&self.__reserved_2.to_ne_bytes());
            out[104..112].copy_from_slice(&w);
        }
        out
    }
}

/// Bits of [`perf_event_attr::flags`], in the kernel's declaration order.
///
/// C bit-fields are allocated from the least significant bit on little-endian targets and
/// from the most significant bit on big-endian ones; [`bit`](attr_flags::bit) hides that.
pub mod attr_flags {
    /// The mask of bit-field number `n` (0 = `disabled`) in native allocation order.
    pub const fn bit(n: u32) -> u64 {
        if cfg!(target_endian = "big") {
            1 << (63 - n)
        } else {
            1 << n
        }
    }
    /// Off by default.
    pub const DISABLED: u64 = bit(0);
    /// Children inherit it.
    pub const INHERIT: u64 = bit(1);
    /// Must always be on the PMU.
    pub const PINNED: u64 = bit(2);
    /// Only group on the PMU.
    pub const EXCLUSIVE: u64 = bit(3);
    /// Don't count user.
    pub const EXCLUDE_USER: u64 = bit(4);
    /// Don't count kernel.
    pub const EXCLUDE_KERNEL: u64 = bit(5);
    /// Don't count hypervisor.
    pub const EXCLUDE_HV: u64 = bit(6);
    /// Don't count when idle.
    pub const EXCLUDE_IDLE: u64 = bit(7);
    /// Include mmap data (PERF_RECORD_MMAP for executable maps).
    pub const MMAP: u64 = bit(8);
    /// Include comm data.
    pub const COMM: u64 = bit(9);
    /// Use freq, not period.
    pub const FREQ: u64 = bit(10);
    /// Per task counts.
    pub const INHERIT_STAT: u64 = bit(11);
    /// Next exec enables.
    pub const ENABLE_ON_EXEC: u64 = bit(12);
    /// Trace fork/exit.
    pub const TASK: u64 = bit(13);
    /// wakeup_watermark instead of wakeup_events.
    pub const WATERMARK: u64 = bit(14);
    /// Shift of the two-bit `precise_ip` field.
    pub const PRECISE_IP_SHIFT: u32 = if cfg!(target_endian = "big") { 47 } else { 15 };
    /// Mask of the two-bit `precise_ip` field (bits 15-16).
    pub const PRECISE_IP_MASK: u64 = bit(15) | bit(16);
    /// Non-exec mmap data.
    pub const MMAP_DATA: u64 = bit(17);
    /// sample_type fields on all records (the sample_id trailer).
    pub const SAMPLE_ID_ALL: u64 = bit(18);
    /// Don't count in host.
    pub const EXCLUDE_HOST: u64 = bit(19);
    /// Don't count in guest.
    pub const EXCLUDE_GUEST: u64 = bit(20);
    /// Exclude kernel callchains.
    pub const EXCLUDE_CALLCHAIN_KERNEL: u64 = bit(21);
    /// Exclude user callchains.
    pub const EXCLUDE_CALLCHAIN_USER: u64 = bit(22);
    /// Include mmap with inode data (PERF_RECORD_MMAP2).
    pub const MMAP2: u64 = bit(23);
    /// Flag comm events that are due to an exec.
    pub const COMM_EXEC: u64 = bit(24);
    /// Use `clockid` for time fields.
    pub const USE_CLOCKID: u64 = bit(25);
    /// Context switch data (PERF_RECORD_SWITCH*).
    pub const CONTEXT_SWITCH: u64 = bit(26);
    /// Write ring buffer from end to beginning.
    pub const WRITE_BACKWARD: u64 = bit(27);
    /// Include namespaces data.
    pub const NAMESPACES: u64 = bit(28);
    /// Include ksymbol events.
    pub const KSYMBOL: u64 = bit(29);
    /// Include BPF events.
    pub const BPF_EVENT: u64 = bit(30);
    /// Generate AUX records instead of events.
    pub const AUX_OUTPUT: u64 = bit(31);
    /// Include cgroup events.
    pub const CGROUP: u64 = bit(32);
    /// Include text poke events.
    pub const TEXT_POKE: u64 = bit(33);
    /// Use build id in mmap2 events.
    pub const BUILD_ID: u64 = bit(34);
    /// Children only inherit if cloned with CLONE_THREAD.
    pub const INHERIT_THREAD: u64 = bit(35);
    /// Event is removed from task on exec.
    pub const REMOVE_ON_EXEC: u64 = bit(36);
    /// Send synchronous SIGTRAP on event.
    pub const SIGTRAP: u64 = bit(37);

    /// Every named flag with the kernel's field name, in declaration order
    /// (`precise_ip` is not here: it is a two-bit number, see [`PRECISE_IP_MASK`]).
    pub const ALL: [(&str, u64); 36] = [
        ("disabled", DISABLED),
        ("inherit", INHERIT),
        ("pinned", PINNED),
        ("exclusive", EXCLUSIVE),
        ("exclude_user", EXCLUDE_USER),
        ("exclude_kernel", EXCLUDE_KERNEL),
        ("exclude_hv", EXCLUDE_HV),
        ("exclude_idle", EXCLUDE_IDLE),
        ("mmap", MMAP),
        ("comm", COMM),
        ("freq", FREQ),
        ("inherit_stat", INHERIT_STAT),
        ("enable_on_exec", ENABLE_ON_EXEC),
        ("task", TASK),
        ("watermark", WATERMARK),
        ("mmap_data", MMAP_DATA),
        ("sample_id_all", SAMPLE_ID_ALL),
        ("exclude_host", EXCLUDE_HOST),
        ("exclude_guest", EXCLUDE_GUEST),
        ("exclude_callchain_kernel", EXCLUDE_CALLCHAIN_KERNEL),
        ("exclude_callchain_user", EXCLUDE_CALLCHAIN_USER),
        ("mmap2", MMAP2),
        ("comm_exec", COMM_EXEC),
        ("use_clockid", USE_CLOCKID),
        ("context_switch", CONTEXT_SWITCH),
        ("write_backward", WRITE_BACKWARD),
        ("namespaces", NAMESPACES),
        ("ksymbol", KSYMBOL),
        ("bpf_event", BPF_EVENT),
        ("aux_output", AUX_OUTPUT),
        ("cgroup", CGROUP),
        ("text_poke", TEXT_POKE),
        ("build_id", BUILD_ID),
        ("inherit_thread", INHERIT_THREAD),
        ("remove_on_exec", REMOVE_ON_EXEC),
        ("sigtrap", SIGTRAP),
    ];
}

/// Bits of [`perf_event_attr::aux_action`] (Linux 6.13).
pub mod aux_action {
    /// Start the AUX area paused.
    pub const AUX_START_PAUSED: u32 = 1 << 0;
    /// On overflow, pause AUX tracing.
    pub const AUX_PAUSE: u32 = 1 << 1;
    /// On overflow, resume AUX tracing.
    pub const AUX_RESUME: u32 = 1 << 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_bytes_matches_memory() {
        let mut a = perf_event_attr::new();
        a.type_ = 7;
        a.config = 0x1122_3344_5566_7788;
        a.flags = attr_flags::DISABLED | attr_flags::SIGTRAP;
        a.wakeup_events = 3;
        a.bp_type = 4;
        a.clockid = -2;
        a.aux_watermark = 9;
        a.sample_max_stack = 127;
        a.aux_action = 5;
        a.config3 = 1;
        // SAFETY: perf_event_attr is repr(C), has no padding (checked above) and every
        // bit pattern of its integer fields is valid to read as bytes.
        let raw: [u8; 136] = unsafe { core::mem::transmute(a) };
        assert_eq!(raw, a.as_bytes());
    }

    #[test]
    fn precise_ip_round_trip() {
        let mut a = perf_event_attr::new();
        a.set(attr_flags::DISABLED, true);
        a.set_precise_ip(3);
        assert_eq!(a.precise_ip(), 3);
        assert!(a.has(attr_flags::DISABLED));
        a.set_precise_ip(1);
        assert_eq!(a.precise_ip(), 1);
        assert_eq!(a.flags & !attr_flags::PRECISE_IP_MASK, attr_flags::DISABLED);
    }
}
