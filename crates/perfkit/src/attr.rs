//! [`Attr`]: a builder over `struct perf_event_attr` with a method per field and flag.

use crate::event::Event;
use crate::sample_type::SampleType;
use perfkit_sys::{self as sys, attr_flags as f, perf_event_attr};

/// The attributes of one event: what to count and how (`struct perf_event_attr`).
///
/// Defaults chosen for counting: `disabled` (enable explicitly, or with
/// [`enable_on_exec`](Self::enable_on_exec) when launching a command) and a
/// `read_format` of `TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING | ID`, so every read can be
/// scaled and matched. Every builder method takes and returns `self`.
///
/// ```
/// use perfkit::{Attr, Software};
/// let attr = Attr::new(Software::TaskClock).exclude_kernel(true).inherit(true);
/// assert!(attr.raw().has(perfkit::sys::attr_flags::INHERIT));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Attr {
    raw: perf_event_attr,
}

macro_rules! flag_setters {
    ($($(#[$doc:meta])* $name:ident => $bit:ident;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $name(mut self, on: bool) -> Self {
                self.raw.set(f::$bit, on);
                self
            }
        )*
    };
}

macro_rules! field_setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty => $field:ident;)*) => {
        $(
            $(#[$doc])*
            #[must_use]
            pub fn $name(mut self, value: $ty) -> Self {
                self.raw.$field = value;
                self
            }
        )*
    };
}

impl Attr {
    /// Attributes for `event` with perfkit's counting defaults.
    pub fn new(event: impl Into<Event>) -> Attr {
        let mut raw = perf_event_attr::new();
        event.into().apply(&mut raw);
        raw.read_format = sys::PERF_FORMAT_TOTAL_TIME_ENABLED
            | sys::PERF_FORMAT_TOTAL_TIME_RUNNING
            | sys::PERF_FORMAT_ID;
        raw.set(f::DISABLED, true);
        Attr { raw }
    }

    /// Wrap a raw attr as it is (for example one built by the event parser).
    pub fn from_raw(raw: perf_event_attr) -> Attr {
        Attr { raw }
    }

    /// The raw attr.
    pub fn raw(&self) -> &perf_event_attr {
        &self.raw
    }

    /// The raw attr, for fields without a builder method.
    pub fn raw_mut(&mut self) -> &mut perf_event_attr {
        &mut self.raw
    }

    /// Replace type and config fields with those of `event`.
    #[must_use]
    pub fn event(mut self, event: impl Into<Event>) -> Self {
        event.into().apply(&mut self.raw);
        self
    }

    /// Set or clear any bit of the flags word (`perfkit_sys::attr_flags`).
    #[must_use]
    pub fn flag(mut self, bit: u64, on: bool) -> Self {
        self.raw.set(bit, on);
        self
    }

    flag_setters! {
        /// `disabled`: start off; enable with an ioctl or `enable_on_exec`.
        disabled => DISABLED;
        /// `inherit`: count the target's future children and threads too.
        inherit => INHERIT;
        /// `pinned`: always on the PMU, or in error state if it cannot be.
        pinned => PINNED;
        /// `exclusive`: the only group on the PMU when it runs.
        exclusive => EXCLUSIVE;
        /// `exclude_user`: don't count user space.
        exclude_user => EXCLUDE_USER;
        /// `exclude_kernel`: don't count the kernel (needed below paranoid 2 for non-root).
        exclude_kernel => EXCLUDE_KERNEL;
        /// `exclude_hv`: don't count the hypervisor.
        exclude_hv => EXCLUDE_HV;
        /// `exclude_idle`: don't count when the CPU is idle.
        exclude_idle => EXCLUDE_IDLE;
        /// `mmap`: emit `PERF_RECORD_MMAP` for executable mappings.
        mmap => MMAP;
        /// `comm`: emit `PERF_RECORD_COMM` on task name changes.
        comm => COMM;
        /// `inherit_stat`: per-task counts of inherited counters (`PERF_RECORD_READ` at exit).
        inherit_stat => INHERIT_STAT;
        /// `enable_on_exec`: enable at the target's next `exec`.
        enable_on_exec => ENABLE_ON_EXEC;
        /// `task`: emit `PERF_RECORD_FORK` / `PERF_RECORD_EXIT`.
        task => TASK;
        /// `mmap_data`: emit MMAP records for data (non-executable) mappings too.
        mmap_data => MMAP_DATA;
        /// `sample_id_all`: put the sample_id trailer on non-sample records.
        sample_id_all => SAMPLE_ID_ALL;
        /// `exclude_host`: don't count in the host (guest only).
        exclude_host => EXCLUDE_HOST;
        /// `exclude_guest`: don't count in guests.
        exclude_guest => EXCLUDE_GUEST;
        /// `exclude_callchain_kernel`: no kernel frames in callchains.
        exclude_callchain_kernel => EXCLUDE_CALLCHAIN_KERNEL;
        /// `exclude_callchain_user`: no user frames in callchains.
        exclude_callchain_user => EXCLUDE_CALLCHAIN_USER;
        /// `mmap2`: emit `PERF_RECORD_MMAP2` (with inode or build id).
        mmap2 => MMAP2;
        /// `comm_exec`: flag COMM records caused by exec.
        comm_exec => COMM_EXEC;
        /// `context_switch`: emit `PERF_RECORD_SWITCH` / `SWITCH_CPU_WIDE`.
        context_switch => CONTEXT_SWITCH;
        /// `write_backward`: the kernel writes the ring from the end backwards.
        write_backward => WRITE_BACKWARD;
        /// `namespaces`: emit `PERF_RECORD_NAMESPACES`.
        namespaces => NAMESPACES;
        /// `ksymbol`: emit `PERF_RECORD_KSYMBOL`.
        ksymbol => KSYMBOL;
        /// `bpf_event`: emit `PERF_RECORD_BPF_EVENT`.
        bpf_event => BPF_EVENT;
        /// `aux_output`: emit AUX records for this event into the group leader's AUX area.
        aux_output => AUX_OUTPUT;
        /// `cgroup`: emit `PERF_RECORD_CGROUP`.
        cgroup => CGROUP;
        /// `text_poke`: emit `PERF_RECORD_TEXT_POKE`.
        text_poke => TEXT_POKE;
        /// `build_id`: MMAP2 records carry build ids instead of inode data.
        build_id => BUILD_ID;
        /// `inherit_thread`: inherit only to threads (`CLONE_THREAD`), not processes.
        inherit_thread => INHERIT_THREAD;
        /// `remove_on_exec`: remove the event from the task at exec.
        remove_on_exec => REMOVE_ON_EXEC;
        /// `sigtrap`: send a synchronous SIGTRAP on overflow (needs `remove_on_exec`).
        sigtrap => SIGTRAP;
    }

    field_setters! {
        /// `read_format`: the `PERF_FORMAT_*` fields a read returns.
        read_format: u64 => read_format;
        /// `bp_type`: breakpoint access type (`HW_BREAKPOINT_*`).
        bp_type: u32 => bp_type;
        /// `config`
        config: u64 => config;
        /// `config1` (also `bp_addr`, `uprobe_path`, `kprobe_func`).
        config1: u64 => config1;
        /// `config2` (also `bp_len`, `probe_offset`, `kprobe_addr`).
        config2: u64 => config2;
        /// `config3`
        config3: u64 => config3;
        /// `branch_sample_type`: `PERF_SAMPLE_BRANCH_*` bits.
        branch_sample_type: u64 => branch_sample_type;
        /// `sample_regs_user`: mask of user registers in samples.
        sample_regs_user: u64 => sample_regs_user;
        /// `sample_regs_intr`: mask of interrupted-context registers in samples.
        sample_regs_intr: u64 => sample_regs_intr;
        /// `sample_stack_user`: bytes of user stack copied into samples.
        sample_stack_user: u32 => sample_stack_user;
        /// `aux_watermark`: AUX area wakeup watermark.
        aux_watermark: u32 => aux_watermark;
        /// `sample_max_stack`: deepest callchain to record.
        sample_max_stack: u16 => sample_max_stack;
        /// `aux_sample_size`: AUX bytes put into each sample.
        aux_sample_size: u32 => aux_sample_size;
        /// `aux_action`: `AUX_START_PAUSED` / `AUX_PAUSE` / `AUX_RESUME` bits.
        aux_action: u32 => aux_action;
        /// `sig_data`: the value delivered in `si_perf_data` with `sigtrap`.
        sig_data: u64 => sig_data;
    }

    /// `sample_type`: the `PERF_SAMPLE_*` fields each sample carries, as a
    /// [`SampleType`] (`SampleType::IP | SampleType::TID`) or raw bits
    /// (`sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID`). The one way to set it.
    #[must_use]
    pub fn sample_type(mut self, fields: impl Into<SampleType>) -> Self {
        self.raw.sample_type = fields.into().bits();
        self
    }

    /// `bp_addr`: the breakpoint address.
    #[must_use]
    pub fn bp_addr(self, addr: u64) -> Self {
        self.config1(addr)
    }

    /// `bp_len`: the breakpoint length.
    #[must_use]
    pub fn bp_len(self, len: u64) -> Self {
        self.config2(len)
    }

    /// `sample_period`: sample every `n` events (clears `freq`).
    #[must_use]
    pub fn sample_period(mut self, n: u64) -> Self {
        self.raw.sample_period = n;
        self.raw.set(f::FREQ, false);
        self
    }

    /// `sample_freq`: aim for `hz` samples per second (sets `freq`).
    #[must_use]
    pub fn sample_freq(mut self, hz: u64) -> Self {
        self.raw.sample_period = hz;
        self.raw.set(f::FREQ, true);
        self
    }

    /// `wakeup_events`: wake pollers every `n` samples (clears `watermark`).
    #[must_use]
    pub fn wakeup_events(mut self, n: u32) -> Self {
        self.raw.wakeup_events = n;
        self.raw.set(f::WATERMARK, false);
        self
    }

    /// `wakeup_watermark`: wake pollers when `bytes` are in the ring (sets `watermark`).
    #[must_use]
    pub fn wakeup_watermark(mut self, bytes: u32) -> Self {
        self.raw.wakeup_events = bytes;
        self.raw.set(f::WATERMARK, true);
        self
    }

    /// `precise_ip`: skid constraint, 0 (arbitrary skid) to 3 (zero skid).
    #[must_use]
    pub fn precise_ip(mut self, level: u8) -> Self {
        self.raw.set_precise_ip(level);
        self
    }

    /// `use_clockid` + `clockid`: timestamps from this clock (`libc::CLOCK_MONOTONIC` ...).
    #[must_use]
    pub fn clockid(mut self, clock: Option<i32>) -> Self {
        self.raw.set(f::USE_CLOCKID, clock.is_some());
        self.raw.clockid = clock.unwrap_or(0);
        self
    }

    /// The smallest published `attr.size` (`PERF_ATTR_SIZE_VER*`) that holds every non-zero
    /// field: opening with it lets older kernels accept attrs that use no newer field.
    pub fn min_size(&self) -> u32 {
        let r = &self.raw;
        let needs = [
            (r.config3 != 0, sys::PERF_ATTR_SIZE_VER8),
            (r.sig_data != 0, sys::PERF_ATTR_SIZE_VER7),
            (
                r.aux_sample_size != 0 || r.aux_action != 0,
                sys::PERF_ATTR_SIZE_VER6,
            ),
            (
                r.aux_watermark != 0 || r.sample_max_stack != 0 || r.__reserved_2 != 0,
                sys::PERF_ATTR_SIZE_VER5,
            ),
            (r.sample_regs_intr != 0, sys::PERF_ATTR_SIZE_VER4),
            (
                r.sample_regs_user != 0 || r.sample_stack_user != 0 || r.clockid != 0,
                sys::PERF_ATTR_SIZE_VER3,
            ),
            (r.branch_sample_type != 0, sys::PERF_ATTR_SIZE_VER2),
            (r.config2 != 0, sys::PERF_ATTR_SIZE_VER1),
        ];
        needs
            .iter()
            .find(|(used, _)| *used)
            .map_or(sys::PERF_ATTR_SIZE_VER0, |&(_, size)| size)
    }

    /// The first field, by name, that lies at or beyond `size` bytes and is in use.
    pub fn first_field_beyond(&self, size: u32) -> Option<&'static str> {
        let r = &self.raw;
        let fields: [(&str, u32, bool); 9] = [
            ("config2", sys::PERF_ATTR_SIZE_VER0, r.config2 != 0),
            (
                "branch_sample_type",
                sys::PERF_ATTR_SIZE_VER1,
                r.branch_sample_type != 0,
            ),
            (
                "sample_regs_user/sample_stack_user/clockid",
                sys::PERF_ATTR_SIZE_VER2,
                r.sample_regs_user != 0 || r.sample_stack_user != 0 || r.clockid != 0,
            ),
            (
                "sample_regs_intr",
                sys::PERF_ATTR_SIZE_VER3,
                r.sample_regs_intr != 0,
            ),
            (
                "aux_watermark/sample_max_stack",
                sys::PERF_ATTR_SIZE_VER4,
                r.aux_watermark != 0 || r.sample_max_stack != 0,
            ),
            (
                "aux_sample_size/aux_action",
                sys::PERF_ATTR_SIZE_VER5,
                r.aux_sample_size != 0 || r.aux_action != 0,
            ),
            ("sig_data", sys::PERF_ATTR_SIZE_VER6, r.sig_data != 0),
            ("config3", sys::PERF_ATTR_SIZE_VER7, r.config3 != 0),
            ("(end)", sys::PERF_ATTR_SIZE_VER8, false),
        ];
        fields
            .iter()
            .find(|(_, off, used)| *used && *off >= size)
            .map(|(name, _, _)| *name)
    }
}

impl From<Event> for Attr {
    fn from(e: Event) -> Attr {
        Attr::new(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Hardware, Software};

    #[test]
    fn defaults_and_builders() {
        let a = Attr::new(Hardware::Instructions)
            .exclude_kernel(true)
            .sample_freq(4000);
        let r = a.raw();
        assert_eq!(r.type_, sys::PERF_TYPE_HARDWARE);
        assert_eq!(r.config, sys::PERF_COUNT_HW_INSTRUCTIONS);
        assert_eq!(r.size, sys::PERF_ATTR_SIZE_VER8);
        assert!(r.has(f::DISABLED | f::EXCLUDE_KERNEL | f::FREQ));
        assert_eq!(r.sample_freq(), 4000);
        let a = a.sample_period(10);
        assert!(!a.raw().has(f::FREQ));
    }

    #[test]
    fn min_size_tracks_newest_field() {
        let a = Attr::new(Software::TaskClock);
        assert_eq!(a.min_size(), sys::PERF_ATTR_SIZE_VER0);
        assert_eq!(a.config2(1).min_size(), sys::PERF_ATTR_SIZE_VER1);
        assert_eq!(a.sample_max_stack(3).min_size(), sys::PERF_ATTR_SIZE_VER5);
        assert_eq!(a.sig_data(3).min_size(), sys::PERF_ATTR_SIZE_VER7);
        assert_eq!(a.config3(3).min_size(), sys::PERF_ATTR_SIZE_VER8);
        assert_eq!(a.config3(3).first_field_beyond(128), Some("config3"));
        assert_eq!(a.sig_data(1).first_field_beyond(128), None);
    }
}
