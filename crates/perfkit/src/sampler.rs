//! [`Sampler`]: a sampling event with its ring buffer (and events sharing it through
//! `PERF_EVENT_IOC_SET_OUTPUT`); [`SideBand`]: the attr bits that ask for non-sample
//! records; [`Drainer`]: one thread draining many rings (one per CPU) with epoll until
//! stopped or every target has exited.

use crate::attr::Attr;
use crate::counter::Counter;
use crate::error::{Error, Op, Result};
use crate::notify::{Poller, Ready, Stopper};
use crate::ring::{RingBuffer, RingError, RingMode, RingSize};
use crate::sample_type::SampleType;
use crate::target::Target;
use perfkit_records::{Endian, MultiParser, MultiParserError, ParseError, ParsedRecord, RawRecord};
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
///
/// The sampler keeps the record parser of its events (built once from their attrs), so
/// [`for_each_record`](Self::for_each_record) hands out decoded records; the raw,
/// zero-copy form is [`for_each_raw`](Self::for_each_raw) (or [`ring`](Self::ring)).
///
/// ```
/// use perfkit::records::Record;
/// use perfkit::{Attr, RingSize, SampleType, Sampler, Software, Target};
/// // Every page fault of this thread, with its address.
/// let attr = Attr::new(Software::PageFaults)
///     .sample_period(1)
///     .sample_type(SampleType::IP | SampleType::TID | SampleType::ADDR);
/// let mut sampler = Sampler::open(&attr, &Target::this_thread(), RingSize::Pages(16))?;
/// sampler.enable()?;
/// let pages: Vec<u8> = vec![1; 64 * 4096]; // fresh memory: faults as it is written
/// sampler.disable()?;
/// let mut faults = 0;
/// sampler.for_each_record(|rec| {
///     if let Record::Sample(s) = rec.record {
///         assert!(s.addr.is_some());
///         faults += 1;
///     }
/// })?;
/// assert!(faults > 0, "{}", pages.len());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Sampler {
    // Field order: the ring is unmapped before the counters close (either order is
    // valid for the kernel; this keeps the ring's fd dup last).
    ring: RingBuffer,
    counter: Counter,
    members: Vec<Counter>,
    parser: std::result::Result<MultiParser, MultiParserError>,
    /// Where records split at the ring's end are made contiguous for parsing.
    scratch: Vec<u8>,
}

/// Why [`Sampler::for_each_record`] stopped.
#[derive(Debug)]
#[non_exhaustive]
pub enum RecordError {
    /// The ring's records are inconsistent (see [`RingError`]).
    Ring(RingError),
    /// A record could not be decoded with its event's attr.
    Parse(ParseError),
    /// The events sharing the ring cannot be told apart (they need
    /// `PERF_SAMPLE_IDENTIFIER`), so records cannot be decoded.
    Events(MultiParserError),
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RecordError::Ring(_) => "cannot walk the ring's records",
            RecordError::Parse(_) => "cannot decode a record of the ring",
            RecordError::Events(_) => "cannot decode the records of the events sharing the ring",
        })
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RecordError::Ring(e) => Some(e),
            RecordError::Parse(e) => Some(e),
            RecordError::Events(e) => Some(e),
        }
    }
}

impl Sampler {
    /// Open `attr` for `target` and map a ring of `size` ([`RingMode::Consume`], or
    /// read-only for `write_backward` events).
    ///
    /// When the kernel answers EINVAL and a [`SampleType::check`] rule is broken, the
    /// error's detail says which.
    pub fn open(attr: &Attr, target: &Target<'_>, size: RingSize) -> Result<Sampler> {
        let counter = Counter::open(attr, target).map_err(|e| {
            if e.errno() != libc::EINVAL || e.detail().is_some() {
                return e;
            }
            match SampleType::from(attr.raw().sample_type).check(attr) {
                Err(why) => e.with_detail(why),
                Ok(()) => e,
            }
        })?;
        Self::new(counter, size)
    }

    /// Map a ring for an already open event.
    pub fn new(counter: Counter, size: RingSize) -> Result<Sampler> {
        let ring = RingBuffer::map(&counter, size)?;
        Ok(Self::from_parts(counter, ring))
    }

    /// Map a ring with an explicit mode (for example an overwrite flight recorder).
    pub fn with_mode(counter: Counter, size: RingSize, mode: RingMode) -> Result<Sampler> {
        let ring = RingBuffer::map_with(&counter, size, mode)?;
        Ok(Self::from_parts(counter, ring))
    }

    fn from_parts(counter: Counter, ring: RingBuffer) -> Sampler {
        // One attr: every record is its event's, no id needed.
        let parser = MultiParser::new(Endian::NATIVE, [(&[][..], counter.attr().raw())]);
        Sampler {
            ring,
            counter,
            members: Vec::new(),
            parser,
            scratch: Vec::new(),
        }
    }

    /// Redirect `other`'s records into this ring (`PERF_EVENT_IOC_SET_OUTPUT`) and keep
    /// it. The kernel requires the same CPU (or the same task, for per-task events) and
    /// the same clock. To decode the records of several events, every attr needs the
    /// event id at the same place (`PERF_SAMPLE_IDENTIFIER`); otherwise
    /// [`for_each_record`](Self::for_each_record) says so (raw reads still work).
    pub fn add_output(&mut self, other: Counter) -> Result<()> {
        other.set_output(Some(&self.counter)).map_err(|e| {
            e.with_detail(
                "SET_OUTPUT needs both events on the same CPU (or both per-task for the same \
                 task), the same clock (use_clockid) and no ring mapped on the redirected one",
            )
        })?;
        self.members.push(other);
        let mut ids = Vec::with_capacity(self.members.len() + 1);
        for c in std::iter::once(&self.counter).chain(&self.members) {
            ids.push([c.id()?]);
        }
        let attrs = std::iter::once(&self.counter)
            .chain(&self.members)
            .zip(&ids)
            .map(|(c, id)| (&id[..], c.attr().raw()));
        self.parser = MultiParser::new(Endian::NATIVE, attrs);
        Ok(())
    }

    /// The record parser of the events writing to this ring (attr index 0 is the
    /// sampling event, `i` is `members()[i - 1]`), or why there is none.
    pub fn parser(&self) -> std::result::Result<&MultiParser, &MultiParserError> {
        self.parser.as_ref()
    }

    /// Decode every pending record, oldest first, and hand it to `f`; then publish the
    /// tail. A record split at the ring's end is copied into a scratch buffer the
    /// sampler keeps; the others are decoded in place. Returns the number of records.
    ///
    /// Stops at the first record that cannot be walked or decoded (the records before
    /// it were handed out and are consumed, and so is the bad one).
    pub fn for_each_record(
        &mut self,
        mut f: impl FnMut(ParsedRecord<'_>),
    ) -> std::result::Result<usize, RecordError> {
        let parser = self
            .parser
            .as_ref()
            .map_err(|e| RecordError::Events(e.clone()))?;
        let mut n = 0;
        let mut result = Ok(());
        for raw in self.ring.records() {
            let raw = match raw {
                Ok(r) => r,
                Err(e) => {
                    result = Err(RecordError::Ring(e));
                    break;
                }
            };
            match parser.parse_raw(&raw, &mut self.scratch) {
                Ok((_, rec)) => f(rec),
                Err(e) => {
                    result = Err(RecordError::Parse(e));
                    break;
                }
            }
            n += 1;
        }
        self.ring.consume();
        result.map(|()| n)
    }

    /// Hand every pending record to `f` undecoded and without copying (a body that wraps
    /// around the ring's end comes as [`RawData::Split`](crate::records::RawData)), then
    /// publish the tail. Returns the number of records.
    pub fn for_each_raw(
        &mut self,
        f: impl FnMut(RawRecord<'_>),
    ) -> std::result::Result<usize, RingError> {
        self.ring.drain(f)
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

/// One [`Sampler`] per online CPU ([`crate::cpus::online`], which may have holes) for
/// `pid` (-1 = every task on that CPU), each with its own ring: the way to sample an
/// `inherit` per-task event, whose cpu=-1 form cannot be mmap'ed.
pub fn open_per_cpu(attr: &Attr, pid: i32, size: RingSize) -> Result<Vec<Sampler>> {
    let cpus = crate::cpus::online().map_err(|e| {
        Error::new(
            Op::Other("read /sys/devices/system/cpu/online to open".into()),
            e,
            crate::event::attr_name(attr.raw()),
            pid,
            -1,
        )
    })?;
    cpus.into_iter()
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
#[non_exhaustive]
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
                io::Error::new(io::ErrorKind::InvalidData, e),
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
