//! [`Sampler`]: a sampling event with its ring buffer (and events sharing it through
//! `PERF_EVENT_IOC_SET_OUTPUT`); [`SideBand`]: the attr bits that ask for non-sample
//! records; [`Drainer`]: one thread draining many rings (one per CPU) with epoll until
//! stopped or every target has exited.

use crate::attr::Attr;
use crate::counter::Counter;
use crate::error::{Error, Op, Result};
use crate::notify::{Poller, Ready, Stopper};
use crate::ring::{RingBuffer, RingError, RingMode, RingSize};
use crate::target::Target;
use perfkit_records::RawRecord;
use perfkit_sys::attr_flags as f;
use std::io;
use std::os::fd::AsFd;
use std::time::Duration;

/// The side-band records an event can ask for: one `perf_event_attr` bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SideBand(u64);

impl SideBand {
    /// `mmap`: `PERF_RECORD_MMAP` for executable mappings.
    pub const MMAP: SideBand = SideBand(f::MMAP);
    /// `mmap2`: `PERF_RECORD_MMAP2` instead (inode data or, with `BUILD_ID`, build ids).
    pub const MMAP2: SideBand = SideBand(f::MMAP2);
    /// `mmap_data`: data mappings too.
    pub const MMAP_DATA: SideBand = SideBand(f::MMAP_DATA);
    /// `build_id`: MMAP2 records carry build ids.
    pub const BUILD_ID: SideBand = SideBand(f::BUILD_ID);
    /// `comm`: `PERF_RECORD_COMM`.
    pub const COMM: SideBand = SideBand(f::COMM);
    /// `comm_exec`: mark COMM records caused by exec.
    pub const COMM_EXEC: SideBand = SideBand(f::COMM_EXEC);
    /// `task`: `PERF_RECORD_FORK` / `PERF_RECORD_EXIT`.
    pub const TASK: SideBand = SideBand(f::TASK);
    /// `context_switch`: `PERF_RECORD_SWITCH` (`SWITCH_CPU_WIDE` for CPU-wide events).
    pub const CONTEXT_SWITCH: SideBand = SideBand(f::CONTEXT_SWITCH);
    /// `namespaces`: `PERF_RECORD_NAMESPACES`.
    pub const NAMESPACES: SideBand = SideBand(f::NAMESPACES);
    /// `ksymbol`: `PERF_RECORD_KSYMBOL`.
    pub const KSYMBOL: SideBand = SideBand(f::KSYMBOL);
    /// `bpf_event`: `PERF_RECORD_BPF_EVENT`.
    pub const BPF_EVENT: SideBand = SideBand(f::BPF_EVENT);
    /// `cgroup`: `PERF_RECORD_CGROUP`.
    pub const CGROUP: SideBand = SideBand(f::CGROUP);
    /// `text_poke`: `PERF_RECORD_TEXT_POKE` (needs a kernel that patches text; x86 with
    /// hardware PMU in practice).
    pub const TEXT_POKE: SideBand = SideBand(f::TEXT_POKE);
    /// Everything `perf record` asks for on its first event.
    pub const PERF_RECORD: SideBand =
        SideBand(f::MMAP | f::MMAP2 | f::COMM | f::COMM_EXEC | f::TASK | f::KSYMBOL | f::BPF_EVENT);
    /// Every side-band bit.
    pub const ALL: SideBand = SideBand(
        f::MMAP
            | f::MMAP2
            | f::MMAP_DATA
            | f::BUILD_ID
            | f::COMM
            | f::COMM_EXEC
            | f::TASK
            | f::CONTEXT_SWITCH
            | f::NAMESPACES
            | f::KSYMBOL
            | f::BPF_EVENT
            | f::CGROUP
            | f::TEXT_POKE,
    );

    /// The attr flag bits.
    pub fn bits(self) -> u64 {
        self.0
    }

    /// Set these bits (and `sample_id_all`, so every record says whose it is) on `attr`.
    pub fn apply(self, mut attr: Attr) -> Attr {
        for bit in 0..64 {
            let b = 1u64 << bit;
            if self.0 & b != 0 {
                attr = attr.flag(b, true);
            }
        }
        attr.sample_id_all(true)
    }
}

impl std::ops::BitOr for SideBand {
    type Output = SideBand;
    fn bitor(self, rhs: SideBand) -> SideBand {
        SideBand(self.0 | rhs.0)
    }
}

/// A sampling event and its ring buffer; other events may write into the same ring.
#[derive(Debug)]
pub struct Sampler {
    // Field order: the ring is unmapped before the counters close (either order is
    // valid for the kernel; this keeps the ring's fd dup last).
    ring: RingBuffer,
    counter: Counter,
    members: Vec<Counter>,
}

impl Sampler {
    /// Open `attr` for `target` and map a ring of `size` ([`RingMode::Consume`], or
    /// read-only for `write_backward` events).
    pub fn open(attr: &Attr, target: &Target<'_>, size: RingSize) -> Result<Sampler> {
        let counter = Counter::open(attr, target)?;
        Self::new(counter, size)
    }

    /// Map a ring for an already open event.
    pub fn new(counter: Counter, size: RingSize) -> Result<Sampler> {
        let ring = RingBuffer::map(&counter, size)?;
        Ok(Sampler {
            ring,
            counter,
            members: Vec::new(),
        })
    }

    /// Map a ring with an explicit mode (for example an overwrite flight recorder).
    pub fn with_mode(counter: Counter, size: RingSize, mode: RingMode) -> Result<Sampler> {
        let ring = RingBuffer::map_with(&counter, size, mode)?;
        Ok(Sampler {
            ring,
            counter,
            members: Vec::new(),
        })
    }

    /// Redirect `other`'s records into this ring (`PERF_EVENT_IOC_SET_OUTPUT`) and keep
    /// it. The kernel requires the same CPU (or the same task, for per-task events) and
    /// the same clock.
    pub fn add_output(&mut self, other: Counter) -> Result<()> {
        other.set_output(Some(&self.counter)).map_err(|e| {
            e.with_detail(
                "SET_OUTPUT needs both events on the same CPU (or both per-task for the same \
                 task), the same clock (use_clockid) and no ring mapped on the redirected one",
            )
        })?;
        self.members.push(other);
        Ok(())
    }

    /// The sampling event.
    pub fn counter(&self) -> &Counter {
        &self.counter
    }

    /// The events added with [`add_output`](Self::add_output).
    pub fn members(&self) -> &[Counter] {
        &self.members
    }

    /// The ring.
    pub fn ring(&mut self) -> &mut RingBuffer {
        &mut self.ring
    }

    /// The ring, shared.
    pub fn ring_ref(&self) -> &RingBuffer {
        &self.ring
    }

    /// Enable the event and every member.
    pub fn enable(&self) -> Result<()> {
        self.counter.enable()?;
        self.members.iter().try_for_each(Counter::enable)
    }

    /// Disable the event and every member.
    pub fn disable(&self) -> Result<()> {
        self.counter.disable()?;
        self.members.iter().try_for_each(Counter::disable)
    }

    /// Split into its parts.
    pub fn into_parts(self) -> (Counter, RingBuffer, Vec<Counter>) {
        (self.counter, self.ring, self.members)
    }
}

/// The number of online CPUs to open per-CPU events on (`sysconf(_SC_NPROCESSORS_ONLN)`).
fn online_cpus() -> u32 {
    // SAFETY: sysconf takes no pointers.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 { n as u32 } else { 1 }
}

/// One [`Sampler`] per online CPU for `pid` (-1 = every task on that CPU), each with
/// its own ring: the way to sample an `inherit` per-task event, whose cpu=-1 form cannot
/// be mmap'ed.
pub fn open_per_cpu(attr: &Attr, pid: i32, size: RingSize) -> Result<Vec<Sampler>> {
    (0..online_cpus())
        .map(|cpu| {
            let target = if pid == -1 {
                Target::cpu(cpu)
            } else {
                Target::pid_on_cpu(pid, cpu)
            };
            Sampler::open(attr, &target, size)
        })
        .collect()
}

/// Why a [`Drainer::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DrainEnd {
    /// The [`Stopper`] was used (rings were drained one last time).
    Stopped,
    /// Every ring reported POLLHUP (its task exited) and was drained.
    AllHungUp,
    /// The timeout passed with no event.
    Timeout,
}

/// Drains many rings from one thread: an epoll set of the rings' fds plus a stop
/// eventfd.
#[derive(Debug)]
pub struct Drainer {
    poller: Poller,
    live: Vec<bool>,
}

impl Drainer {
    /// A drainer watching `rings` (tokens are their indexes).
    pub fn new(rings: &[&RingBuffer]) -> io::Result<Drainer> {
        let mut poller = Poller::new()?;
        for (i, r) in rings.iter().enumerate() {
            poller.add(r.as_fd(), i as u64)?;
        }
        Ok(Drainer {
            poller,
            live: vec![true; rings.len()],
        })
    }

    /// A cloneable handle that makes [`run`](Self::run) return (from another thread or
    /// a signal handler).
    pub fn stopper(&self) -> Stopper {
        self.poller.stopper()
    }

    /// Wait for wakeups and hand every record to `f(ring index, record)` until stopped,
    /// until every ring hung up (its task exited), or until `idle` passes with no
    /// event. `rings` must be the ones given to [`new`](Self::new), in the same order.
    pub fn run(
        &mut self,
        rings: &mut [&mut RingBuffer],
        idle: Option<Duration>,
        mut f: impl FnMut(usize, RawRecord<'_>),
    ) -> Result<DrainEnd> {
        let ring_err = |i: usize, e: RingError| {
            Error::new(
                Op::Other(format!("drain ring {i}")),
                io::Error::new(io::ErrorKind::InvalidData, e.to_string()),
                "ring buffer",
                -1,
                -1,
            )
        };
        let wait_err = |e: io::Error| {
            Error::new(
                Op::Other("epoll_wait on the rings".into()),
                e,
                "ring buffer",
                -1,
                -1,
            )
        };
        loop {
            match self.poller.wait(idle).map_err(wait_err)? {
                Ready::Stopped => {
                    for (i, r) in rings.iter_mut().enumerate() {
                        r.drain(|rec| f(i, rec)).map_err(|e| ring_err(i, e))?;
                    }
                    return Ok(DrainEnd::Stopped);
                }
                Ready::Timeout => return Ok(DrainEnd::Timeout),
                Ready::Events(evs) => {
                    for (token, ev) in evs {
                        let i = token as usize;
                        let Some(r) = rings.get_mut(i) else { continue };
                        r.drain(|rec| f(i, rec)).map_err(|e| ring_err(i, e))?;
                        if ev.hangup && self.live.get(i) == Some(&true) {
                            self.live[i] = false;
                            self.poller.remove(r.as_fd()).map_err(wait_err)?;
                        }
                    }
                    if !self.live.is_empty() && self.live.iter().all(|l| !l) {
                        return Ok(DrainEnd::AllHungUp);
                    }
                }
            }
        }
    }
}
