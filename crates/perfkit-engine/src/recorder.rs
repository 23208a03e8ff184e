//! [`Recorder`]: drain the rings of an opened event list into a perf.data stream.
//!
//! One ring buffer per CPU (a per-task `inherit` event cannot be mmap'ed with cpu=-1): the
//! first counter of each CPU owns it and every other counter of that CPU is redirected
//! into it with `PERF_EVENT_IOC_SET_OUTPUT`. One thread drains every ring when epoll says
//! one is readable (or every 100 ms), writes each ring's pending bytes straight from the
//! ring and gives their space back (or copies them, see
//! [`set_lend_records`](Recorder::set_lend_records)), and writes a FINISHED_ROUND after
//! each pass, as perf does. With a [`DrainLayout`] of several threads ([`start_threads`](Recorder::start_threads)),
//! the rings are drained by threads of their own and this thread only writes (the engine's
//! `drain_threads` module says how their records stay ordered for perf).
//! At the end the kernel's own lost count of every counter (`PERF_FORMAT_LOST`) is
//! read and written as `PERF_RECORD_LOST_SAMPLES`, so samples lost in a ring that was full
//! when recording stopped are counted too.

use crate::drain_budget::Budget;
use crate::drain_threads::{Counts, Group, Pass, Threads, drain_ring, lease_ring};
use crate::offcpu::OffCpu;
use crate::open::Opened;
use crate::threads::DrainLayout;
use crate::{Error, Result};
use perfkit::records::{Endian, MultiParser, ParsedRecord};
use perfkit::sys;
use perfkit::{Poller, Ready, RingBuffer, RingSize, Stopper};
use perfkit_data::{FileEvent, PerfDataWriter, synth};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

/// What a recording wrote and lost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RecordStats {
    /// Samples written.
    pub samples: u64,
    /// Records of any kind written.
    pub records: u64,
    /// Samples the kernel could not write (ring full): the larger of what
    /// `PERF_RECORD_LOST` records said and the counters' `PERF_FORMAT_LOST` totals.
    pub lost: u64,
    /// `PERF_RECORD_LOST` records (perf's "lost chunks").
    pub lost_chunks: u64,
    /// `PERF_RECORD_THROTTLE` records (the kernel lowered the sampling rate).
    pub throttled: u64,
    /// Times the recorder was woken up by a ring.
    pub wakeups: u64,
}

/// What one [`Recorder::poll`] saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Poll {
    /// Keep going.
    Continue,
    /// The stop handle was used.
    Stopped,
}

/// Drains the rings of an opened event list into a [`PerfDataWriter`].
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use perfkit_engine::{open, parse, OpenOptions, Place, Recorder};
/// use perfkit_engine::sampling::{sampling_attrs, CallGraph, Sampling, SamplingOptions};
/// let mut specs = parse(&["cpu-clock".to_string()])?;
/// sampling_attrs(&mut specs, &SamplingOptions {
///     sampling: Sampling::Freq(1000),
///     call_graph: CallGraph::Fp,
///     ..SamplingOptions::default()
/// });
/// // This process, on every CPU (one ring per CPU).
/// let cpus = perfkit::cpus::online()?;
/// let places = Place::of(&perfkit::Targets::this_process()?.on_cpus(&cpus));
/// let opts = OpenOptions { inherit: true, ..OpenOptions::default() };
/// let opened = open(&specs, &places, &opts).require_all()?;
/// let mut rec = Recorder::new(opened, 64)?;
/// let path = std::env::temp_dir().join(format!("recorder-doc-{}.data", std::process::id()));
/// let mut w = perfkit_data::PerfDataWriter::create(&path, rec.file_events(), Default::default())?;
/// rec.write_preamble(&mut w, &[])?;
/// rec.enable()?;
/// let stop = rec.stopper();
/// std::thread::spawn(move || {
///     let t = std::time::Instant::now();
///     while t.elapsed() < std::time::Duration::from_millis(50) {} // work to sample
///     stop.stop()
/// });
/// let stats = rec.run(&mut w)?;
/// w.finish(&[])?;
/// println!("{} samples, {} lost", stats.samples, stats.lost);
/// assert!(perfkit_data::PerfData::open(&path).is_ok());
/// # std::fs::remove_file(&path)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Recorder {
    opened: Opened,
    rings: Vec<RingBuffer>,
    /// Counter ids of each event, in event order.
    ids: Vec<Vec<u64>>,
    parser: MultiParser,
    poller: Poller,
    stats: RecordStats,
    /// Sum of the counts of PERF_RECORD_LOST records seen.
    lost_records: u64,
    scratch: Vec<u8>,
    /// `--off-cpu`: the sched_switch counters, drained with the rings and written as
    /// samples of the `offcpu-time` event at the end.
    off_cpu: Option<OffCpu>,
    /// The latest sample time written.
    last_time: u64,
    /// The CPU of each ring of `rings`.
    ring_cpus: Vec<i32>,
    /// The draining threads, once started (the rings are theirs then).
    threads: Option<Threads>,
    /// The stop handle given out (the poller's, kept when the poller moves to the
    /// threads' stop watcher).
    stop: Stopper,
    /// Records of one pass over the rings, written as one block.
    block: Vec<u8>,
    /// Offsets of the MMAP and MMAP2 records in `block`.
    mappings: Vec<usize>,
    /// Bytes the draining threads may queue for the writer.
    queue_limit: usize,
    /// The draining threads' queue, once started.
    budget: Option<Arc<Budget>>,
    /// The priority asked for the draining threads.
    drain_priority: Option<DrainPriority>,
    /// Whether the draining threads lend their records in place (see
    /// [`set_lend_records`](Recorder::set_lend_records)).
    lend: bool,
}

/// The priority of a recorder's draining threads (and of the thread that writes what
/// they copy): on CPUs that the sampled tasks keep busy, a thread at the normal priority
/// may wait hundreds of milliseconds for a CPU after a ring woke it, and the ring fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainPriority {
    /// `SCHED_FIFO` at this real-time priority, where the kernel allows it.
    pub realtime: Option<i32>,
    /// Else this nice value, where the kernel allows it.
    pub nice: Option<i32>,
}

impl DrainPriority {
    /// `perfkit record`'s: `SCHED_FIFO` at the lowest real-time priority (1), else nice
    /// -10. Both need `CAP_SYS_NICE` (root); without it the threads keep the caller's
    /// priority. The threads sleep until a ring or a block needs them, so they take no
    /// more CPU than at the normal priority, only sooner.
    pub const RECORD: DrainPriority = DrainPriority {
        realtime: Some(1),
        nice: Some(-10),
    };

    /// Give the calling thread this priority (what the kernel refuses is left as it
    /// was); whether it was raised.
    pub fn apply_to_current_thread(self) -> bool {
        if let Some(p) = self.realtime
            && perfkit::cpus::set_current_thread_realtime(p).is_ok()
        {
            return true;
        }
        self.nice
            .is_some_and(|n| perfkit::cpus::set_current_thread_nice(n).is_ok())
    }
}

/// Poller tokens of the off-CPU rings start here.
const OFF_CPU_TOKEN: u64 = 1 << 32;

impl Recorder {
    /// Map one ring of `pages` data pages (a power of two) per CPU of `opened` and redirect
    /// the other counters of each CPU into it.
    pub fn new(opened: Opened, pages: usize) -> Result<Recorder> {
        let mut ids: Vec<Vec<u64>> = vec![Vec::new(); opened.events.len()];
        let mut rings = Vec::new();
        let mut ring_cpus = Vec::new();
        // The owner of each CPU's ring, by CPU.
        let mut owner: Vec<(i32, usize, usize)> = Vec::new();
        for (pi, place) in opened.places.iter().enumerate() {
            for (ei, ev) in opened.events.iter().enumerate() {
                let Some(c) = ev.slots[pi].counter() else {
                    continue;
                };
                ids[ei].push(c.id()?);
                match owner.iter().find(|o| o.0 == place.cpu) {
                    None => {
                        rings.push(RingBuffer::map(c, RingSize::Pages(pages))?);
                        ring_cpus.push(place.cpu);
                        owner.push((place.cpu, ei, pi));
                    }
                    Some(&(_, oe, op)) => {
                        if let Some(o) = opened.events[oe].slots[op].counter() {
                            c.set_output(Some(o))?;
                        }
                    }
                }
            }
        }
        let parser = MultiParser::new(
            Endian::NATIVE,
            opened
                .events
                .iter()
                .zip(&ids)
                .map(|(e, ids)| (ids.as_slice(), &e.attr)),
        )
        .map_err(|e| Error::Usage(format!("these events cannot share a file: {e}")))?;
        let mut poller = Poller::new().map_err(|e| Error::io("epoll", e))?;
        for (i, r) in rings.iter().enumerate() {
            poller
                .add(r.as_fd(), i as u64)
                .map_err(|e| Error::io("epoll", e))?;
        }
        let stop = poller.stopper();
        Ok(Recorder {
            opened,
            rings,
            ring_cpus,
            threads: None,
            stop,
            block: Vec::new(),
            mappings: Vec::new(),
            queue_limit: crate::drain_budget::DEFAULT_QUEUE_LIMIT,
            budget: None,
            drain_priority: None,
            lend: true,
            ids,
            parser,
            poller,
            stats: RecordStats::default(),
            lost_records: 0,
            scratch: Vec::new(),
            off_cpu: None,
            last_time: 0,
        })
    }

    /// Record off-CPU time too (`--off-cpu`): `off` is drained with the rings, and at
    /// [`finish`](Self::finish) its sums are written as samples of the opened event named
    /// [`OFFCPU_EVENT`](crate::offcpu::OFFCPU_EVENT).
    pub fn with_off_cpu(mut self, off: OffCpu) -> Result<Recorder> {
        for (i, r) in off.rings().iter().enumerate() {
            self.poller
                .add(r.as_fd(), OFF_CPU_TOKEN + i as u64)
                .map_err(|e| Error::io("epoll", e))?;
        }
        self.off_cpu = Some(off);
        Ok(self)
    }

    /// The events as a perf.data file describes them (attr as opened, name, ids).
    pub fn file_events(&self) -> Vec<FileEvent> {
        self.opened
            .events
            .iter()
            .zip(&self.ids)
            .map(|(e, ids)| FileEvent {
                attr: e.attr,
                name: e.name.clone(),
                ids: ids.clone(),
            })
            .collect()
    }

    /// The opened events.
    pub fn opened(&self) -> &Opened {
        &self.opened
    }

    /// The attr the synthesized side-band records carry the sample id of: the first
    /// event's, with the records any event asks for (`--namespaces`: each task's
    /// NAMESPACES; `--all-cgroups`: the CGROUP records of every cgroup; `bpf_event`: the
    /// KSYMBOL and BPF_EVENT records of the loaded BPF programs).
    fn preamble_attr(&self) -> Option<sys::perf_event_attr> {
        use sys::attr_flags as f;
        let mut attr = self.opened.events.first()?.attr;
        for flag in [f::NAMESPACES, f::CGROUP, f::BPF_EVENT] {
            if self.opened.events.iter().any(|e| e.attr.has(flag)) {
                attr.set(flag, true);
            }
        }
        Some(attr)
    }

    /// Write the side-band records a file starts with (see
    /// [`sideband::write_preamble`](crate::sideband::write_preamble)), for the existing
    /// tasks `pids`.
    pub fn write_preamble(&self, w: &mut PerfDataWriter, pids: &[i32]) -> Result<()> {
        let first_id = self.ids.first().and_then(|i| i.first()).copied();
        let attr = self.preamble_attr();
        if let (Some(attr), Some(id)) = (attr, first_id) {
            crate::sideband::write_preamble(w, &attr, id, pids).map_err(Error::Write)?;
        }
        Ok(())
    }

    /// The kernel's maps as this recorder's files start with them, made once for
    /// [`write_preamble_with`](Self::write_preamble_with) (None without an open event).
    pub fn kernel_maps(&self) -> Option<crate::sideband::KernelMaps> {
        let id = self.ids.first().and_then(|i| i.first()).copied()?;
        let attr = self.preamble_attr()?;
        Some(crate::sideband::KernelMaps::new(&attr, id))
    }

    /// [`write_preamble`](Self::write_preamble) with kernel maps made earlier by
    /// [`kernel_maps`](Self::kernel_maps): a recorder that starts a file every few seconds
    /// reads `/proc/kallsyms` once.
    pub fn write_preamble_with(
        &self,
        w: &mut PerfDataWriter,
        kernel: &crate::sideband::KernelMaps,
        pids: &[i32],
    ) -> Result<()> {
        let first_id = self.ids.first().and_then(|i| i.first()).copied();
        let attr = self.preamble_attr();
        if let (Some(attr), Some(id)) = (attr, first_id) {
            kernel
                .write_preamble(w, &attr, id, pids)
                .map_err(Error::Write)?;
        }
        Ok(())
    }

    /// The start of a file's side-band preamble for the existing tasks `pids` (kernel and
    /// module maps, COMM/MMAP of the tasks), made before counting starts as perf makes it:
    /// reading `/proc` then costs no lost samples (nothing drains the rings yet) and no
    /// sampling overhead. [`write_made_preamble`](Self::write_made_preamble) writes it.
    pub fn make_preamble(&self, pids: &[i32]) -> crate::sideband::Preamble {
        let first_id = self.ids.first().and_then(|i| i.first()).copied();
        let attr = self.preamble_attr();
        let (Some(attr), Some(id)) = (attr, first_id) else {
            return Default::default();
        };
        crate::sideband::KernelMaps::new(&attr, id).preamble_start(&attr, id, pids)
    }

    /// The NAMESPACES record of task `pid` where the recording asks for them
    /// (`--namespaces`): perf synthesizes one for the command it starts.
    pub fn task_namespaces(&self, pid: i32) -> Option<Vec<u8>> {
        let id = self.ids.first().and_then(|i| i.first()).copied()?;
        let attr = self.preamble_attr()?;
        if !attr.has(sys::attr_flags::NAMESPACES) {
            return None;
        }
        synth::namespaces(&attr, id, pid, pid)
    }

    /// COMM/MMAP records of the tasks `pids`, read from `/proc` now: for tasks that
    /// started while [`make_preamble`](Self::make_preamble) read the others, added to its
    /// records before counting starts.
    ///
    /// Never after: a task read once counting runs may already have renamed itself or
    /// exec'd, and its synthesized COMM (stamped time 0, before every sample) would give its
    /// earlier samples the name it took later. A task that starts between this reading and
    /// the start of counting is unnamed until its own COMM, as in perf.
    pub fn task_records(&self, pids: &[i32]) -> Vec<Vec<u8>> {
        let first_id = self.ids.first().and_then(|i| i.first()).copied();
        let attr = self.preamble_attr();
        let (Some(attr), Some(id)) = (attr, first_id) else {
            return Vec::new();
        };
        synth::tasks(&attr, id, pids)
    }

    /// Write a preamble made by [`make_preamble`](Self::make_preamble) (and
    /// [`task_records`](Self::task_records)), then FINISHED_INIT.
    pub fn write_made_preamble(
        &self,
        w: &mut PerfDataWriter,
        made: &crate::sideband::Preamble,
    ) -> Result<()> {
        if self.opened.events.is_empty() {
            return Ok(());
        }
        made.write(w).map_err(Error::Write)?;
        w.write_record(&[&synth::finished_init()])
            .map_err(Error::Write)
    }

    /// Enable every group (not needed for events that enable at the command's exec).
    pub fn enable(&self) -> Result<()> {
        self.opened.enable()?;
        if let Some(o) = &self.off_cpu {
            o.enable()?;
        }
        Ok(())
    }

    /// Disable every group (perf's `--control disable`); [`enable`](Self::enable) resumes.
    pub fn disable(&self) {
        self.opened.disable();
        if let Some(o) = &self.off_cpu {
            o.disable();
        }
    }

    /// Enable the groups of the events `range` (indices into the event list): `-D` enables
    /// the sampling events after the delay while the tracking event already runs.
    pub fn enable_events(&self, range: std::ops::Range<usize>) -> Result<()> {
        for ev in &self.opened.events[range] {
            if !ev.spec.leader {
                continue;
            }
            for c in ev.counters() {
                c.enable()?;
            }
        }
        Ok(())
    }

    /// A handle that ends [`run`](Self::run) (or makes [`poll`](Self::poll) return
    /// [`Poll::Stopped`]) from another thread or a signal handler thread.
    pub fn stopper(&self) -> Stopper {
        self.stop.clone()
    }

    /// Hand the rings to draining threads as `layout` shares them out (a ring of a CPU no
    /// thread names goes to the first thread). From here on [`poll`](Self::poll) only
    /// writes what the threads send, so the rings keep being drained while this thread
    /// writes the side-band preamble, compresses, or starts the next file. Returns the
    /// number of draining threads (0 when there are no rings, or threads already run).
    /// Not for [`poll_parsed`](Self::poll_parsed), which needs the rings here.
    pub fn start_threads(&mut self, layout: &DrainLayout) -> Result<usize> {
        if self.threads.is_some() || self.rings.is_empty() || layout.drainers.is_empty() {
            return Ok(0);
        }
        // The stop watcher keeps this poller with only its stop eventfd in it.
        for r in &self.rings {
            let _ = self.poller.remove(r.as_fd());
        }
        if let Some(o) = &self.off_cpu {
            for r in o.rings() {
                let _ = self.poller.remove(r.as_fd());
            }
        }
        let mut groups: Vec<Group> = layout
            .drainers
            .iter()
            .map(|d| Group {
                rings: Vec::new(),
                affinity: d.affinity.clone(),
            })
            .collect();
        let rings = std::mem::take(&mut self.rings);
        for (r, &cpu) in rings.into_iter().zip(&self.ring_cpus) {
            let i = layout
                .drainers
                .iter()
                .position(|d| d.cpus.iter().any(|&c| c as i32 == cpu))
                .unwrap_or(0);
            groups[i].rings.push(r);
        }
        groups.retain(|g| !g.rings.is_empty());
        let n = groups.len();
        let poller = std::mem::replace(
            &mut self.poller,
            Poller::new().map_err(|e| Error::io("epoll", e))?,
        );
        let budget = Arc::new(Budget::new(self.queue_limit));
        self.budget = Some(budget.clone());
        self.threads = Some(Threads::start(
            groups,
            &self.parser,
            poller,
            budget,
            self.drain_priority,
            self.lend,
        )?);
        Ok(n)
    }

    /// Drain the rings as `layout` shares them out: on threads of their own
    /// ([`start_threads`](Self::start_threads)), except where one thread drains every ring
    /// and lends its records ([`set_lend_records`](Self::set_lend_records), the default):
    /// then the rings are drained on the thread that writes, in [`poll`](Self::poll), as
    /// perf's single thread drains them. A draining thread of its own would hand each pass
    /// to the writer and wait for it back, two wakeups and two context switches a pass
    /// (with `-m 8` at `-F max`, half the recorder's CPU), and gain nothing: lent records
    /// hold their ring until the writer has written them anyway. Returns the number of
    /// draining threads started.
    pub fn start_draining(&mut self, layout: &DrainLayout) -> Result<usize> {
        if layout.is_single() && self.lend {
            return Ok(0);
        }
        self.start_threads(layout)
    }

    /// Hold the records the draining threads copied and the writer has not written yet to
    /// `bytes` (default 64 MiB), plus one pass per thread: when the writer falls behind,
    /// records stay in the rings and the kernel counts what does not fit as lost, instead
    /// of perfkit's memory growing. Set before [`start_threads`](Self::start_threads).
    pub fn set_queue_limit(&mut self, bytes: usize) {
        self.queue_limit = bytes;
    }

    /// Run the draining threads at `priority` (e.g. [`DrainPriority::RECORD`]): a woken
    /// thread then gets a CPU before the busy tasks it is sampling, and empties its rings
    /// before they fill. Set before [`start_threads`](Self::start_threads).
    pub fn set_drain_priority(&mut self, priority: Option<DrainPriority>) {
        self.drain_priority = priority;
    }

    /// Whether the draining threads lend their records to the writer in place (the
    /// default): the writer `write`s each ring's pending bytes straight from the ring, as
    /// perf does, and gives their space back to the kernel as soon as they are written
    /// ([`RingLease::free`](perfkit::RingLease::free)); a thread takes the lease back
    /// before its next pass. Nothing is copied and nothing queues in memory; while the writer is
    /// busy, records wait in the rings. With `false` the threads copy the records into
    /// blocks that queue for the writer, up to [`set_queue_limit`](Self::set_queue_limit),
    /// so the rings keep draining during long work of the writer's (`-z` compression).
    /// Set before [`start_threads`](Self::start_threads).
    pub fn set_lend_records(&mut self, lend: bool) {
        self.lend = lend;
    }

    /// The most bytes the draining threads had queued for the writer at once (0 without
    /// draining threads).
    pub fn queue_peak(&self) -> usize {
        self.budget.as_ref().map_or(0, |b| b.peak())
    }

    /// The statistics so far.
    pub fn stats(&self) -> RecordStats {
        self.stats
    }

    /// Wait until a ring has data, the stop handle is used or `timeout` passes, then drain
    /// every ring into `w`.
    pub fn poll(&mut self, w: &mut PerfDataWriter, timeout: Duration) -> Result<Poll> {
        if let Some(t) = &mut self.threads {
            let (stats, lost_records, last_time) =
                (&mut self.stats, &mut self.lost_records, &mut self.last_time);
            let w2 = &mut *w;
            let stopped = {
                let w3 = std::cell::RefCell::new(w2);
                t.poll(
                    timeout,
                    |p| write_pass(&mut w3.borrow_mut(), p, stats, lost_records, last_time),
                    || w3.borrow_mut().finish_round().map_err(Error::Write),
                    || w3.borrow_mut().settle().map_err(Error::Write),
                )?
            };
            if let Some(o) = &mut self.off_cpu {
                o.drain()?;
            }
            return Ok(if stopped {
                Poll::Stopped
            } else {
                Poll::Continue
            });
        }
        let outcome = self.wait(timeout)?;
        self.drain(w)?;
        Ok(outcome)
    }

    /// Run `f` on another thread while this one goes on draining the rings (or writing what
    /// the draining threads send), so that the rings keep draining while `f` blocks. Launching a command waits
    /// for its `exec`, which on a loaded machine took 100 ms and more; with `-a` the rings
    /// count from before the launch, and a small ring, its records lent to a writer that
    /// was waiting there, overflowed (-m 8: 10,000 samples lost per CPU). Returns what `f`
    /// returned, and the first error of the writing (after `f` ended).
    pub fn poll_while<T: Send>(
        &mut self,
        w: &mut PerfDataWriter,
        f: impl FnOnce() -> T + Send,
    ) -> (T, Result<()>) {
        if self.threads.is_none() && self.rings.is_empty() {
            return (f(), Ok(()));
        }
        std::thread::scope(|s| {
            let h = s.spawn(f);
            let mut result = Ok(());
            while !h.is_finished() {
                match self.poll(w, Duration::from_millis(5)) {
                    Ok(Poll::Continue) => {}
                    // The stop stays seen: the caller's next poll sees it too.
                    Ok(Poll::Stopped) => break,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
            match h.join() {
                Ok(t) => (t, result),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// [`poll`](Self::poll) for a live consumer (`top`): each record, parsed, goes to `f`
    /// with the index of its event instead of to a file.
    pub fn poll_parsed(
        &mut self,
        timeout: Duration,
        f: impl FnMut(usize, &ParsedRecord<'_>),
    ) -> Result<Poll> {
        let outcome = self.wait(timeout)?;
        self.drain_parsed(f)?;
        Ok(outcome)
    }

    fn wait(&mut self, timeout: Duration) -> Result<Poll> {
        Ok(match self.poller.wait(Some(timeout)) {
            Ok(Ready::Stopped) => Poll::Stopped,
            Ok(Ready::Events(evs)) => {
                self.stats.wakeups += 1;
                // A ring whose task exited hangs up, and epoll repeats that forever: stop
                // watching it (what it holds is drained next), as perf does.
                for (token, ev) in evs {
                    if !ev.hangup {
                        continue;
                    }
                    let ring = match token.checked_sub(OFF_CPU_TOKEN) {
                        Some(i) => self
                            .off_cpu
                            .as_ref()
                            .and_then(|o| o.rings().get(i as usize)),
                        None => self.rings.get(token as usize),
                    };
                    if let Some(r) = ring {
                        let _ = self.poller.remove(r.as_fd());
                    }
                }
                Poll::Continue
            }
            Ok(Ready::Timeout) => Poll::Continue,
            Err(e) => return Err(Error::io("epoll_wait", e)),
        })
    }

    /// Drain every ring, handing each record (parsed, with its event's index) to `f`;
    /// records that do not parse are counted and skipped.
    pub fn drain_parsed(&mut self, mut f: impl FnMut(usize, &ParsedRecord<'_>)) -> Result<u64> {
        let mut n = 0u64;
        let Recorder {
            rings,
            parser,
            stats,
            lost_records,
            scratch,
            ..
        } = self;
        for r in rings.iter_mut() {
            r.drain(|rec| {
                n += 1;
                match rec.type_ {
                    sys::PERF_RECORD_SAMPLE => stats.samples += 1,
                    sys::PERF_RECORD_LOST => {
                        *lost_records += rec.data.u64_at(8, Endian::NATIVE).unwrap_or(0);
                        stats.lost_chunks += 1;
                    }
                    sys::PERF_RECORD_THROTTLE => stats.throttled += 1,
                    _ => {}
                }
                let body = rec.data.contiguous(scratch);
                if let Ok((i, p)) = parser.parse(rec.type_, rec.misc, body) {
                    f(i, &p);
                }
            })
            .map_err(Error::Ring)?;
        }
        stats.records += n;
        stats.lost = stats.lost.max(*lost_records);
        if let Some(o) = &mut self.off_cpu {
            o.drain()?;
        }
        Ok(n)
    }

    /// With off-CPU time ([`with_off_cpu`](Self::with_off_cpu)): the sleeps summed since
    /// the last call, per task and user stack, handed to `f` as parsed samples of the
    /// `offcpu-time` event (period: nanoseconds off the CPU), as the file would hold them.
    /// A live view (`top --off-cpu`) calls this at each refresh; the number handed over.
    pub fn off_cpu_parsed(&mut self, mut f: impl FnMut(usize, &ParsedRecord<'_>)) -> u64 {
        let Some(o) = &mut self.off_cpu else {
            return 0;
        };
        let at = self
            .opened
            .events
            .iter()
            .zip(&self.ids)
            .find(|(e, _)| e.name == crate::offcpu::OFFCPU_EVENT);
        let Some((ev, ids)) = at else {
            return 0;
        };
        let id = ids.first().copied().unwrap_or(0);
        let after = self.last_time.max(o.last_time());
        let mut n = 0;
        for (i, s) in o.take_samples().iter().enumerate() {
            let rec = crate::offcpu::encode_sample(&ev.attr, id, s, after + 1 + i as u64);
            if let Ok((i, p)) = self.parser.parse_native(&rec) {
                f(i, &p);
                n += 1;
            }
        }
        n
    }

    /// The side-band records a file would start with (kernel and module maps, COMM/MMAP of
    /// the existing tasks `pids`), parsed and handed to `f` as the rings' records are: what
    /// a live consumer needs to name the code of tasks that started before it.
    pub fn preamble_parsed(&self, pids: &[i32], mut f: impl FnMut(usize, &ParsedRecord<'_>)) {
        let first_id = self.ids.first().and_then(|i| i.first()).copied();
        let attr = self.preamble_attr();
        let (Some(attr), Some(id)) = (attr, first_id) else {
            return;
        };
        for rec in crate::sideband::preamble_records(&attr, id, pids) {
            if let Ok((i, p)) = self.parser.parse_native(&rec) {
                f(i, &p);
            }
        }
    }

    /// Drain every ring into `w` and end the round (with draining threads: nothing to
    /// do here, the threads drain).
    pub fn drain(&mut self, w: &mut PerfDataWriter) -> Result<u64> {
        let Recorder {
            rings,
            parser,
            stats,
            lost_records,
            last_time,
            block,
            mappings,
            scratch,
            lend,
            ..
        } = self;
        block.clear();
        mappings.clear();
        let mut counts = Counts::empty();
        let mut leases = Vec::new();
        if *lend {
            // As perf: each ring's pending bytes are written straight from the ring, and
            // its space goes back to the kernel as soon as they are written.
            let mut base = 0usize;
            for (i, r) in rings.iter_mut().enumerate() {
                if let Some(l) = lease_ring(r, &mut counts, mappings, base, parser, scratch)? {
                    base += l.len();
                    leases.push((i, l));
                }
            }
        } else {
            for r in rings.iter_mut() {
                drain_ring(r, block, &mut counts, mappings, parser)?;
            }
        }
        let n = counts.records;
        let mut pass = Pass {
            drainer: 0,
            generation: 0,
            block: std::mem::take(block),
            mappings: std::mem::take(mappings),
            leases,
            counts,
        };
        let written = write_pass(w, &pass, stats, lost_records, last_time);
        for (i, mut lease) in pass.leases.drain(..) {
            lease.free();
            rings[i].release(lease);
        }
        *block = pass.block;
        *mappings = pass.mappings;
        written?;
        // The rings have their space back: the writer's buffer may go to the file now
        // without keeping the kernel from writing meanwhile.
        w.settle().map_err(Error::Write)?;
        if n > 0 {
            w.finish_round().map_err(Error::Write)?;
        }
        if let Some(o) = &mut self.off_cpu {
            o.drain()?;
        }
        Ok(n)
    }

    /// Poll until stopped, then [`finish`](Self::finish).
    pub fn run(&mut self, w: &mut PerfDataWriter) -> Result<RecordStats> {
        while self.poll(w, Duration::from_millis(100))? == Poll::Continue {}
        self.finish(w)
    }

    /// Stop counting, drain what is left, and write the kernel's lost counts
    /// (`PERF_RECORD_LOST_SAMPLES`, one per counter that lost samples, as perf does).
    pub fn finish(&mut self, w: &mut PerfDataWriter) -> Result<RecordStats> {
        self.opened.disable();
        if let Some(o) = &self.off_cpu {
            o.disable();
        }
        match self.threads.take() {
            Some(t) => {
                let (stats, lost_records, last_time) =
                    (&mut self.stats, &mut self.lost_records, &mut self.last_time);
                let w3 = std::cell::RefCell::new(&mut *w);
                t.finish(
                    |p| write_pass(&mut w3.borrow_mut(), p, stats, lost_records, last_time),
                    || w3.borrow_mut().finish_round().map_err(Error::Write),
                )?;
                if let Some(o) = &mut self.off_cpu {
                    o.drain()?;
                }
            }
            None => {
                self.drain(w)?;
            }
        }
        if let Some(o) = &self.off_cpu {
            let at = self
                .opened
                .events
                .iter()
                .zip(&self.ids)
                .find(|(e, _)| e.name == crate::offcpu::OFFCPU_EVENT);
            if let Some((ev, ids)) = at {
                let after = self.last_time.max(o.last_time());
                let n = o
                    .write(w, &ev.attr, ids.first().copied().unwrap_or(0), after)
                    .map_err(Error::Write)?;
                self.stats.samples += n;
                self.stats.records += n;
            }
        }
        let mut kernel_lost = 0u64;
        let mut any = false;
        for ev in &self.opened.events {
            if ev.attr.read_format & sys::PERF_FORMAT_LOST == 0 {
                continue;
            }
            for (pi, slot) in ev.slots.iter().enumerate() {
                let Some(c) = slot.counter() else { continue };
                let Some(lost) = c.read().ok().and_then(|c| c.lost) else {
                    continue;
                };
                let id = c.id().unwrap_or(0);
                if lost == 0 {
                    continue;
                }
                kernel_lost += lost;
                let place = self.opened.places[pi];
                let body = lost.to_ne_bytes();
                let rec = perfkit_data::record(
                    sys::PERF_RECORD_LOST_SAMPLES,
                    0,
                    &body,
                    &synth::sample_id_trailer(&ev.attr, place.tid, place.tid, id),
                );
                w.write_record(&[&rec]).map_err(Error::Write)?;
                any = true;
            }
        }
        if any {
            w.finish_round().map_err(Error::Write)?;
        }
        self.stats.lost = self.stats.lost.max(kernel_lost);
        Ok(self.stats)
    }
}

/// Write one pass's records and add what it counted to the statistics.
fn write_pass(
    w: &mut PerfDataWriter,
    p: &Pass,
    stats: &mut RecordStats,
    lost_records: &mut u64,
    last_time: &mut u64,
) -> Result<()> {
    // drain_ring and lease_ring checked every record's header.
    if p.leases.is_empty() {
        w.write_checked_records(&p.block, &p.mappings)
    } else {
        let parts: Vec<&[u8]> = p.leases.iter().flat_map(|(_, l)| l.parts()).collect();
        w.write_checked_parts(&parts, &p.mappings)
    }
    .map_err(Error::Write)?;
    let c = &p.counts;
    if c.first_time <= c.last_time {
        w.saw_time(c.first_time);
        w.saw_time(c.last_time);
        *last_time = (*last_time).max(c.last_time);
    }
    stats.samples += c.samples;
    stats.records += c.records;
    stats.lost_chunks += c.lost_chunks;
    stats.throttled += c.throttled;
    stats.wakeups += c.wakeups;
    *lost_records += c.lost_records;
    stats.lost = stats.lost.max(*lost_records);
    Ok(())
}
