//! Linux performance counters: a safe library over `perf_event_open(2)`.
//!
//! ```
//! use perfkit::{Attr, Counter, Software, Target};
//! let counter = Counter::open(&Attr::new(Software::TaskClock), &Target::this_thread())?;
//! counter.enable()?;
//! let v: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
//! counter.disable()?;
//! let count = counter.read()?;
//! assert!(count.value > 0);
//! println!("{v}: {} ns of CPU, {:?}", count.value, count.scaled());
//! # Ok::<(), perfkit::Error>(())
//! ```
//!
//! * [`Event`] names what to count (hardware, software, cache, raw, tracepoint,
//!   breakpoint, any PMU), [`Attr`] says how (every `perf_event_attr` field and flag),
//!   [`Target`] says whom (a thread, a CPU, a cgroup); [`Targets`] lists many places
//!   (every thread of a process, a set of CPUs) and [`CounterSet`] counts one event on
//!   all of them; [`cpus`] knows which CPUs exist and are online.
//! * [`Counter`] is one open event: ioctls (enable, disable, reset, refresh, period, id,
//!   set_output, set_filter, set_bpf, pause_output, modify_attributes) and reads;
//!   [`Group`] reads several at once with `PERF_FORMAT_GROUP`.
//! * [`Count::scaled`] corrects multiplexed counts and says whether the value is exact,
//!   estimated, or was never counted.
//! * [`Error`] keeps the errno, names the event, pid and cpu, and explains permission
//!   (`perf_event_paranoid`), not-supported and invalid-attribute failures.
//! * [`PausedChild`] starts a command held before `exec`, so counters opened with
//!   `enable_on_exec` count the command and nothing of the launcher.
//!
//! The kernel ABI itself is in [`sys`] (the `perfkit-sys` crate); the only `unsafe` code
//! here is the system calls, ioctls, `read(2)`, fork/exec and the mmaps of the ring buffer
//! and user page.

mod attr;
mod bpf_progs;
mod caps;
mod counter;
mod counter_set;
pub mod cpus;
mod error;
mod event;
mod fifo;
mod flock;
mod group;
mod launch;
mod target;
mod targets;

/// The record parser (`perfkit-records`): [`Sampler::for_each_record`] hands out its
/// [`ParsedRecord`]s; the same parser reads perf.data files.
pub use perfkit_records as records;
pub use perfkit_records::{ParsedRecord, RawData, RawRecord, Record, Sample};
pub use perfkit_sys as sys;

pub use attr::Attr;
pub use bpf_progs::{BpfProgram, bpf_btf, bpf_program, bpf_programs};
pub use counter::{
    Count, Counter, Scaled, disable_all_for_this_process, enable_all_for_this_process, scale,
};
pub use counter_set::CounterSet;
pub use error::{Error, ErrorKind, Op, Result, read_paranoid};
pub use event::{
    Breakpoint, BreakpointKind, Cache, CacheEvent, CacheOp, CacheResult, Event, Hardware, Software,
    attr_name,
};
pub use fifo::mkfifo;
pub use flock::try_lock_exclusive;
pub use group::{Group, GroupCount, MemberId};
pub use launch::{
    ChildUsage, ExitStatus, LaunchError, PausedChild, find_program, kill, threads_of, wait,
    wait_with_usage,
};
pub use target::Target;
pub use targets::{Targets, TargetsIter};

mod notify;
mod ring;
mod sample_type;
mod sampler;
mod userpage;

pub use notify::{
    AsyncSignal, PollEvents, Poller, Ready, SignalWaiter, Stopper, poll_fd, rt_signal, si_code,
    siginfo_fd, siginfo_perf,
};
pub use ring::{
    AuxArea, BackwardRecords, BackwardWalk, RingBuffer, RingControl, RingError, RingLease,
    RingMode, RingRecords, RingSize, RingWalk, can_lock_any_memory, default_data_pages, mlock_hint,
    page_size, recorder_data_pages,
};
pub use sample_type::{SampleSupport, SampleType, UnknownSampleField};
pub use sampler::{DrainEnd, Drainer, RecordError, Sampler, SideBand, open_per_cpu};
pub use userpage::{
    ClockOffset, HwReader, NativeHw, ReadSource, SelfMonitor, SelfRead, TimeConv, UserPage,
    UserPageSnapshot, arm64_user_access, read_snapshot, sign_extend,
};
