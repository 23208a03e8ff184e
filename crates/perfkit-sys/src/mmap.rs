//! `struct perf_event_mmap_page` and `struct perf_event_header`.

use core::mem::{offset_of, size_of};

/// The first page of a perf mmap: the user page.
///
/// Fields the kernel updates concurrently (`lock`, `index`, `offset`, the times,
/// `data_head`, `aux_head`) must be read with volatile loads and the seqlock protocol; see
/// the safe readers in the `perfkit` crate.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct perf_event_mmap_page {
    /// Version number of this structure.
    pub version: u32,
    /// Lowest version this is compatible with.
    pub compat_version: u32,
    /// Seqlock for synchronization.
    pub lock: u32,
    /// Hardware counter identifier (0 = not readable from user space; else index + 1).
    pub index: u32,
    /// Add to the hardware counter value.
    pub offset: i64,
    /// Time the event was active.
    pub time_enabled: u64,
    /// Time the event was running.
    pub time_running: u64,
    /// Capability bits, see [`mmap_cap`].
    pub capabilities: u64,
    /// Width of the hardware counter in bits (for sign extension).
    pub pmc_width: u16,
    /// TSC to nanoseconds shift.
    pub time_shift: u16,
    /// TSC to nanoseconds multiplier.
    pub time_mult: u32,
    /// Offset for time_enabled/time_running.
    pub time_offset: u64,
    /// Offset from TSC to perf time.
    pub time_zero: u64,
    /// Header size.
    pub size: u32,
    /// Reserved.
    pub __reserved_1: u32,
    /// Last TSC value when `cap_user_time_short`.
    pub time_cycles: u64,
    /// Mask of valid TSC bits when `cap_user_time_short`.
    pub time_mask: u64,
    /// Padding to 1 KiB.
    pub __reserved: [u8; 116 * 8],
    /// Head of the data ring (written by the kernel).
    pub data_head: u64,
    /// Tail of the data ring (written by user space when the mapping is writable).
    pub data_tail: u64,
    /// Where the data ring starts in the mapping.
    pub data_offset: u64,
    /// Size of the data ring.
    pub data_size: u64,
    /// Head of the AUX ring.
    pub aux_head: u64,
    /// Tail of the AUX ring.
    pub aux_tail: u64,
    /// Offset of the AUX area in the file.
    pub aux_offset: u64,
    /// Size of the AUX area.
    pub aux_size: u64,
}

const _: () = {
    assert!(offset_of!(perf_event_mmap_page, version) == 0);
    assert!(offset_of!(perf_event_mmap_page, lock) == 8);
    assert!(offset_of!(perf_event_mmap_page, index) == 12);
    assert!(offset_of!(perf_event_mmap_page, offset) == 16);
    assert!(offset_of!(perf_event_mmap_page, time_enabled) == 24);
    assert!(offset_of!(perf_event_mmap_page, time_running) == 32);
    assert!(offset_of!(perf_event_mmap_page, capabilities) == 40);
    assert!(offset_of!(perf_event_mmap_page, pmc_width) == 48);
    assert!(offset_of!(perf_event_mmap_page, time_shift) == 50);
    assert!(offset_of!(perf_event_mmap_page, time_mult) == 52);
    assert!(offset_of!(perf_event_mmap_page, time_offset) == 56);
    assert!(offset_of!(perf_event_mmap_page, time_zero) == 64);
    assert!(offset_of!(perf_event_mmap_page, size) == 72);
    assert!(offset_of!(perf_event_mmap_page, time_cycles) == 80);
    assert!(offset_of!(perf_event_mmap_page, time_mask) == 88);
    assert!(offset_of!(perf_event_mmap_page, data_head) == 1024);
    assert!(offset_of!(perf_event_mmap_page, data_tail) == 1032);
    assert!(offset_of!(perf_event_mmap_page, data_offset) == 1040);
    assert!(offset_of!(perf_event_mmap_page, data_size) == 1048);
    assert!(offset_of!(perf_event_mmap_page, aux_head) == 1056);
    assert!(offset_of!(perf_event_mmap_page, aux_tail) == 1064);
    assert!(offset_of!(perf_event_mmap_page, aux_offset) == 1072);
    assert!(offset_of!(perf_event_mmap_page, aux_size) == 1080);
    assert!(size_of::<perf_event_mmap_page>() == 1088);
};

/// Bits of [`perf_event_mmap_page::capabilities`].
pub mod mmap_cap {
    /// Old, ambiguous `cap_usr_time`/`cap_usr_rdpmc` bit (deprecated).
    pub const CAP_BIT0: u64 = 1 << 0;
    /// Set when bit 0 is deprecated (always, on kernels since 3.12).
    pub const CAP_BIT0_IS_DEPRECATED: u64 = 1 << 1;
    /// The counter can be read from user space (`rdpmc`/`mrs`) when `index` != 0.
    pub const CAP_USER_RDPMC: u64 = 1 << 2;
    /// `time_mult`, `time_shift`, `time_offset` are valid.
    pub const CAP_USER_TIME: u64 = 1 << 3;
    /// `time_zero` is valid.
    pub const CAP_USER_TIME_ZERO: u64 = 1 << 4;
    /// `time_cycles`, `time_mask` are valid (the counter wraps).
    pub const CAP_USER_TIME_SHORT: u64 = 1 << 5;
}

/// `struct perf_event_header`: the start of every record.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct perf_event_header {
    /// `PERF_RECORD_*`.
    pub type_: u32,
    /// `PERF_RECORD_MISC_*` bits.
    pub misc: u16,
    /// Size of the record including this header.
    pub size: u16,
}

const _: () = assert!(size_of::<perf_event_header>() == 8);
