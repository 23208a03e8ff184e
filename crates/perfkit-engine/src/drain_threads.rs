//! Draining threads of a [`Recorder`](crate::Recorder) and the rounds that keep their
//! records in a valid perf.data.
//!
//! Each thread owns the rings of some CPUs ([`DrainLayout`](crate::threads::DrainLayout)),
//! waits on its own epoll set, and copies every pending record of its rings into a block
//! of its own. Blocks go over a channel to the writing thread, which writes them into the
//! one perf.data (compression included): nothing but copying happens on a draining thread.
//!
//! **Rounds.** perf sorts records by time between `PERF_RECORD_FINISHED_ROUND`s: at each
//! round it processes what is queued up to the newest time seen at the round before, so a
//! record written after round k+1 must be newer than everything written before round k.
//! A single drainer gets that by ending a round after each pass over all rings. Several
//! drainers get it from a generation number: the writer ends a round only once every
//! drainer has finished a pass that *started* after the previous round was written (each
//! pass reads the generation before touching a ring). Whatever any drainer sends later
//! was written into its ring after that pass read the ring, so after everything that came
//! before the previous round: perf reads the merged file with no out-of-order records.
//! A drainer with nothing new says only that its pass ended, and only when the writer
//! waits for it (the generation moved).
//!
//! **Lent records.** Uncompressed, a pass lends its rings' records to the writer in place
//! instead of copying them ([`lease_ring`]). The writer frees their space for the kernel as
//! soon as it wrote them ([`RingLease::free`]), as perf publishes its tail right after its
//! `write`: a ring wakes its drainer only each time another half of it was written, so a
//! half kept lent until then would leave the kernel a full ring, which wakes no one.
//!
//! **Backpressure.** The blocks waiting for the writer are held to a byte budget
//! ([`Budget`]): a drainer that finds it spent leaves its records in the rings, where the
//! kernel counts what no longer fits as lost, instead of growing perfkit's memory.

use crate::drain_budget::Budget;
use crate::{Error, Result};
use perfkit::records::{Endian, MultiParser};
use perfkit::sys;
use perfkit::{Poller, RawRecord, Ready, RingBuffer, RingLease, Stopper};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::thread::JoinHandle;
use std::time::Duration;

/// What a pass counted (added into [`RecordStats`](crate::RecordStats) by the writer).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub samples: u64,
    pub records: u64,
    pub lost_chunks: u64,
    /// Sum of the counts of PERF_RECORD_LOST records.
    pub lost_records: u64,
    pub throttled: u64,
    pub wakeups: u64,
    /// Oldest and newest sample time.
    pub first_time: u64,
    pub last_time: u64,
}

impl Counts {
    pub fn empty() -> Counts {
        Counts {
            first_time: u64::MAX,
            ..Counts::default()
        }
    }

    /// Count one of a ring's records, at offset `at` of its pass: an MMAP or MMAP2
    /// record's offset, shifted by `base`, goes into `mappings`, and a sample's into
    /// `ends` (the first and the last, whose times are read after the pass).
    fn count(
        &mut self,
        at: usize,
        rec: &RawRecord<'_>,
        (mappings, base): (&mut Vec<usize>, usize),
        ends: &mut (Option<usize>, Option<usize>),
    ) {
        self.records += 1;
        match rec.type_ {
            sys::PERF_RECORD_SAMPLE => {
                self.samples += 1;
                ends.0.get_or_insert(at);
                ends.1 = Some(at);
            }
            sys::PERF_RECORD_LOST => {
                self.lost_records += rec.data.u64_at(8, Endian::NATIVE).unwrap_or(0);
                self.lost_chunks += 1;
            }
            sys::PERF_RECORD_THROTTLE => self.throttled += 1,
            sys::PERF_RECORD_MMAP | sys::PERF_RECORD_MMAP2 => mappings.push(base + at),
            _ => {}
        }
    }

    /// Take in the time of a sample the pass counted.
    fn saw_time(&mut self, t: u64) {
        self.first_time = self.first_time.min(t);
        self.last_time = self.last_time.max(t);
    }
}

/// Copy every pending record of `ring` (header included) to the end of `block` (one copy
/// of the ring's pending bytes, see [`RingBuffer::drain_copy`]), count them into
/// `counts`, note the offsets of its MMAP and MMAP2 records in `mappings` (the writer
/// reads only those), and read the time of the ring's first and last sample (a ring's
/// records come in time order; the others are not parsed).
pub(crate) fn drain_ring(
    ring: &mut RingBuffer,
    block: &mut Vec<u8>,
    counts: &mut Counts,
    mappings: &mut Vec<usize>,
    parser: &MultiParser,
) -> Result<()> {
    let mut ends = (None, None);
    ring.drain_copy(block, |at, rec| {
        counts.count(at, &rec, (mappings, 0), &mut ends)
    })
    .map_err(Error::Ring)?;
    for at in ends.0.into_iter().chain(ends.1) {
        if let Ok((_, p)) = parser.parse_native(&block[at..])
            && let Some(t) = p.time()
        {
            counts.saw_time(t);
        }
    }
    Ok(())
}

/// Lend out every pending record of `ring` in place ([`RingBuffer::lease`]: the writer
/// writes them straight from the ring, and the ring gets them back once written), counted
/// into `counts` as [`drain_ring`] counts them; the offsets of MMAP and MMAP2 records go
/// into `mappings` shifted by `base`, the bytes lent before this ring's in the same pass.
/// An empty lease is given back at once (None).
pub(crate) fn lease_ring(
    ring: &mut RingBuffer,
    counts: &mut Counts,
    mappings: &mut Vec<usize>,
    base: usize,
    parser: &MultiParser,
    scratch: &mut Vec<u8>,
) -> Result<Option<RingLease>> {
    let mut ends = (None, None);
    let lease = ring
        .lease(|at, rec| counts.count(at, &rec, (mappings, base), &mut ends))
        .map_err(Error::Ring)?
        .ok_or_else(|| Error::Usage("a recorder ring could not be read in place".into()))?;
    for at in ends.0.into_iter().chain(ends.1) {
        if let Some(rec) = lease.record(at, scratch)
            && let Ok((_, p)) = parser.parse_native(rec)
            && let Some(t) = p.time()
        {
            counts.saw_time(t);
        }
    }
    if lease.is_empty() {
        ring.release(lease);
        return Ok(None);
    }
    Ok(Some(lease))
}

/// One drainer's pass: the records it copied, and the generation it read first.
pub(crate) struct Pass {
    pub drainer: usize,
    pub generation: u64,
    pub block: Vec<u8>,
    /// Offsets in `block` of its MMAP and MMAP2 records (or in the leases' bytes put end
    /// to end, where the pass lent its records instead of copying them).
    pub mappings: Vec<usize>,
    /// Records lent in place, with the index of their ring in the drainer's list: written
    /// straight from the rings, then given back.
    pub leases: Vec<(usize, RingLease)>,
    pub counts: Counts,
}

/// What the writer hands back to a drainer after writing its pass.
pub(crate) type Returned = (Vec<u8>, Vec<usize>, Vec<(usize, RingLease)>);

pub(crate) enum Msg {
    Pass(Pass),
    /// The drainer made its last pass (after a stop) and ended.
    Done(usize),
    Failed(Error),
    /// The recorder's stop handle was used.
    Stop,
}

/// The running draining threads, seen from the writing thread.
pub(crate) struct Threads {
    rx: Receiver<Msg>,
    generation: Arc<AtomicU64>,
    /// Generation read at the start of each drainer's latest finished pass.
    seen: Vec<u64>,
    done: Vec<bool>,
    stops: Vec<Stopper>,
    handles: Vec<JoinHandle<()>>,
    /// Blocks (and their lists of mapping offsets) going back to their drainer, to be
    /// filled again.
    returns: Vec<Sender<Returned>>,
    /// Something was written since the last FINISHED_ROUND.
    unrounded: bool,
    watcher: Option<(Stopper, JoinHandle<()>)>,
    /// Set by the watcher when the stop handle is used: seen at once, not after the
    /// blocks queued before the [`Msg::Stop`] (a writer that fell behind would otherwise
    /// keep recording until it caught up).
    stop_seen: Arc<AtomicBool>,
    /// The bytes sent and not yet written.
    budget: Arc<Budget>,
}

impl std::fmt::Debug for Threads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Threads")
            .field("drainers", &self.handles.len())
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A group of rings and where its thread runs.
pub(crate) struct Group {
    pub rings: Vec<RingBuffer>,
    pub affinity: Vec<u32>,
}

const PASS_TIMEOUT: Duration = Duration::from_millis(100);

impl Threads {
    /// Start one thread per group, and a watcher that turns a use of the recorder's stop
    /// handle (`stop_poller`, holding only the stop eventfd) into a [`Msg::Stop`].
    /// Blocks waiting for the writer are held to `budget` (plus one pass per drainer).
    pub fn start(
        groups: Vec<Group>,
        parser: &MultiParser,
        stop_poller: Poller,
        budget: Arc<Budget>,
        priority: Option<crate::recorder::DrainPriority>,
        lend: bool,
    ) -> Result<Threads> {
        let (tx, rx) = channel();
        let generation = Arc::new(AtomicU64::new(0));
        let parser = Arc::new(parser.clone());
        let n = groups.len();
        let mut t = Threads {
            rx,
            generation: generation.clone(),
            seen: vec![0; n],
            done: vec![false; n],
            stops: Vec::new(),
            handles: Vec::new(),
            returns: Vec::new(),
            unrounded: false,
            watcher: None,
            stop_seen: Arc::new(AtomicBool::new(false)),
            budget: budget.clone(),
        };
        for (i, g) in groups.into_iter().enumerate() {
            let mut poller = Poller::new().map_err(|e| Error::io("epoll", e))?;
            for (k, r) in g.rings.iter().enumerate() {
                poller
                    .add(r.as_fd(), k as u64)
                    .map_err(|e| Error::io("epoll", e))?;
            }
            t.stops.push(poller.stopper());
            let (ret_tx, ret_rx) = channel();
            t.returns.push(ret_tx);
            let d = Drainer {
                index: i,
                rings: g.rings,
                poller,
                parser: parser.clone(),
                generation: generation.clone(),
                tx: tx.clone(),
                returned: ret_rx,
                budget: budget.clone(),
                lend,
            };
            let affinity = g.affinity;
            let h = std::thread::Builder::new()
                .name(format!("perfkit-drain-{i}"))
                .spawn(move || {
                    if !affinity.is_empty() {
                        // Pinning is a placement hint: a CPU set the kernel refuses (a
                        // cgroup's cpuset) leaves the thread where it is.
                        let _ = perfkit::cpus::pin_current_thread(&affinity);
                    }
                    if let Some(p) = priority {
                        // A priority the kernel refuses (no CAP_SYS_NICE) leaves the
                        // thread at its own.
                        p.apply_to_current_thread();
                    }
                    d.run()
                })
                .map_err(|e| Error::io("starting a draining thread", e))?;
            t.handles.push(h);
        }
        let watch_stop = stop_poller.stopper();
        let mut stop_poller = stop_poller;
        let wtx = tx;
        let seen = t.stop_seen.clone();
        let w = std::thread::Builder::new()
            .name("perfkit-stop".into())
            .spawn(move || {
                // Anything but a stop (there are no other fds in this set) waits again.
                while let Ok(Ready::Events(_) | Ready::Timeout) = stop_poller.wait(None) {}
                seen.store(true, Ordering::Release);
                let _ = wtx.send(Msg::Stop);
            })
            .map_err(|e| Error::io("starting the stop watcher", e))?;
        t.watcher = Some((watch_stop, w));
        Ok(t)
    }

    /// Wait up to `timeout` for blocks, write what came (a bounded number of blocks, so
    /// that the caller gets control back), and end a round when every drainer allows it.
    /// Returns whether the stop handle was used.
    pub fn poll(
        &mut self,
        timeout: Duration,
        mut write: impl FnMut(&Pass) -> Result<()>,
        mut round: impl FnMut() -> Result<()>,
        mut settle: impl FnMut() -> Result<()>,
    ) -> Result<bool> {
        if self.stop_seen.load(Ordering::Acquire) {
            return Ok(true);
        }
        let mut stopped = false;
        let first = match self.rx.recv_timeout(timeout) {
            Ok(m) => Some(m),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(Error::Usage("every draining thread ended".into()));
            }
        };
        let budget = 4 * self.seen.len() + 4;
        let mut next = first;
        for _ in 0..budget {
            let Some(m) = next.take() else { break };
            stopped |= self.handle(m, &mut write)?;
            settle()?;
            self.maybe_round(&mut round)?;
            next = self.rx.try_recv().ok();
        }
        Ok(stopped || self.stop_seen.load(Ordering::Acquire))
    }

    fn handle(&mut self, m: Msg, write: &mut impl FnMut(&Pass) -> Result<()>) -> Result<bool> {
        match m {
            Msg::Pass(mut p) => {
                let i = p.drainer;
                self.seen[i] = self.seen[i].max(p.generation);
                self.unrounded |= !p.block.is_empty() || !p.leases.is_empty();
                let written = write(&p);
                // The lent bytes are in the file (or the writer's buffer) now: the kernel
                // may reuse their space at once. Waiting for the drainer's next pass to give
                // them back would hold them until the ring's next wakeup, when the ring is
                // full again: with a small ring at a high rate that lost most samples, and a
                // ring that filled up woke nobody until the drainer's timeout.
                for (_, lease) in &mut p.leases {
                    lease.free();
                }
                self.budget.written(p.block.len());
                written?;
                self.give_back(i, p.block, p.mappings, p.leases);
                Ok(false)
            }
            Msg::Done(i) => {
                self.done[i] = true;
                Ok(false)
            }
            Msg::Failed(e) => Err(e),
            Msg::Stop => Ok(true),
        }
    }

    /// Hand a written block back to its drainer for reuse.
    fn give_back(
        &self,
        drainer: usize,
        mut block: Vec<u8>,
        mut mappings: Vec<usize>,
        leases: Vec<(usize, RingLease)>,
    ) {
        block.clear();
        mappings.clear();
        if let Some(r) = self.returns.get(drainer) {
            let _ = r.send((block, mappings, leases));
        }
    }

    fn maybe_round(&mut self, round: &mut impl FnMut() -> Result<()>) -> Result<()> {
        let g = self.generation.load(Ordering::Acquire);
        let ready = self.seen.iter().zip(&self.done).all(|(&s, &d)| d || s >= g);
        if ready && self.unrounded {
            round()?;
            self.unrounded = false;
            // Release: a drainer that reads the new generation starts its pass after
            // the round record was written.
            self.generation.store(g + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Stop every drainer after its last pass (the counters are disabled by then), write
    /// what they send, and end with a round.
    pub fn finish(
        mut self,
        mut write: impl FnMut(&Pass) -> Result<()>,
        mut round: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        for s in &self.stops {
            s.stop();
        }
        let mut failed = None;
        while !self.done.iter().all(|&d| d) {
            match self.rx.recv() {
                Ok(Msg::Failed(e)) => {
                    failed.get_or_insert(e);
                    break;
                }
                Ok(m) => {
                    self.handle(m, &mut write)?;
                }
                Err(_) => {
                    failed.get_or_insert(Error::Usage(
                        "a draining thread ended without its last pass".into(),
                    ));
                    break;
                }
            }
        }
        if self.unrounded {
            round()?;
            self.unrounded = false;
        }
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl Drop for Threads {
    fn drop(&mut self) {
        for s in &self.stops {
            s.stop();
        }
        if let Some((stop, h)) = self.watcher.take() {
            stop.stop();
            let _ = h.join();
        }
    }
}

/// One draining thread.
struct Drainer {
    index: usize,
    rings: Vec<RingBuffer>,
    poller: Poller,
    parser: Arc<MultiParser>,
    generation: Arc<AtomicU64>,
    tx: Sender<Msg>,
    returned: Receiver<Returned>,
    budget: Arc<Budget>,
    /// Lend the records to the writer in place ([`lease_ring`]) instead of copying them
    /// into blocks ([`drain_ring`]).
    lend: bool,
}

impl Drainer {
    fn run(mut self) {
        let mut sent_generation = u64::MAX;
        let mut counts = Counts::empty();
        // A pass was sent and not handed back yet.
        let mut outstanding = false;
        let mut scratch = Vec::new();
        loop {
            let g = self.generation.load(Ordering::Acquire);
            let stopped = match self.poller.wait(Some(PASS_TIMEOUT)) {
                Ok(Ready::Stopped) => true,
                Ok(Ready::Events(evs)) => {
                    counts.wakeups += 1;
                    // A ring whose task exited hangs up, and epoll repeats that forever:
                    // stop watching it (what it holds is drained now).
                    for (token, ev) in evs {
                        if ev.hangup
                            && let Some(r) = self.rings.get(token as usize)
                        {
                            let _ = self.poller.remove(r.as_fd());
                        }
                    }
                    false
                }
                Ok(Ready::Timeout) => false,
                Err(e) => {
                    let _ = self.tx.send(Msg::Failed(Error::io("epoll_wait", e)));
                    return;
                }
            };
            // The writer is behind by the whole budget: leave the records in the rings
            // (the kernel counts what does not fit as lost). The last pass after a stop
            // always runs.
            if !stopped && !self.budget.wait_room(PASS_TIMEOUT) {
                continue;
            }
            // The previous pass's records are lent to the writer until it wrote them:
            // take them back (and let the kernel reuse their space) before lending more.
            let (block, mut mappings, back) = if outstanding {
                match self.returned.recv() {
                    Ok(r) => r,
                    // The writer is gone (the recording failed): nothing more to do.
                    Err(_) => return,
                }
            } else {
                self.returned.try_recv().unwrap_or_default()
            };
            outstanding = false;
            for (i, lease) in back {
                if let Some(r) = self.rings.get_mut(i) {
                    r.release(lease);
                }
            }
            let mut block = block;
            let mut leases = Vec::new();
            let mut base = 0usize;
            for (i, r) in self.rings.iter_mut().enumerate() {
                if !self.lend {
                    if let Err(e) =
                        drain_ring(r, &mut block, &mut counts, &mut mappings, &self.parser)
                    {
                        let _ = self.tx.send(Msg::Failed(e));
                        return;
                    }
                    continue;
                }
                match lease_ring(
                    r,
                    &mut counts,
                    &mut mappings,
                    base,
                    &self.parser,
                    &mut scratch,
                ) {
                    Ok(Some(l)) => {
                        base += l.len();
                        leases.push((i, l));
                    }
                    Ok(None) => {}
                    Err(e) => {
                        let _ = self.tx.send(Msg::Failed(e));
                        return;
                    }
                }
            }
            if !leases.is_empty() || !block.is_empty() || g != sent_generation || stopped {
                // Lent records take no memory of perfkit's; a copied block does.
                self.budget.add(block.len());
                let pass = Pass {
                    drainer: self.index,
                    generation: g,
                    block,
                    mappings,
                    leases,
                    counts: std::mem::replace(&mut counts, Counts::empty()),
                };
                if self.tx.send(Msg::Pass(pass)).is_err() {
                    return;
                }
                outstanding = self.lend;
                sent_generation = g;
            }
            if stopped {
                let _ = self.tx.send(Msg::Done(self.index));
                return;
            }
        }
    }
}
