//! [`Regions`]: per-thread, nestable named regions accumulating counts of an event list.

use crate::error::Error;
use crate::reader::{Reader, Reading};
use crate::report::{EventCount, RegionResult, RegionsReport, ThreadReport};
use perfkit::Attr;
use std::cell::RefCell;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's state for each live `Regions` (usually one), by `Regions` id.
    static MINE: RefCell<Vec<(u64, Arc<Mutex<ThreadState>>)>> = const { RefCell::new(Vec::new()) };
}

/// A set of named regions measured with one event list, on every thread that enters them.
///
/// Each thread opens its own counters (for itself only) the first time it enters a region
/// or calls [`Regions::thread_init`]; counts are inclusive of nested regions. Cloning
/// shares the same results.
#[derive(Clone, Debug)]
pub struct Regions {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    id: u64,
    names: Vec<String>,
    attrs: Vec<Attr>,
    /// Event sets (ranges of `names`/`attrs`): one is counted at a time, switched by
    /// [`Regions::next_set`].
    sets: Vec<Range<usize>>,
    threads: Mutex<Vec<Arc<Mutex<ThreadState>>>>,
}

#[derive(Debug)]
struct Acc {
    name: String,
    calls: u64,
    time_ns: u64,
    counts: Vec<EventCount>,
}

#[derive(Debug)]
struct Frame {
    region: usize,
    start: Reading,
}

#[derive(Debug)]
struct ThreadState {
    pid: u32,
    tid: u32,
    /// One reader per event set; only `readers[active]` is enabled.
    readers: Vec<Reader>,
    sets: Vec<Range<usize>>,
    active: usize,
    n_events: usize,
    index: HashMap<String, usize>,
    regions: Vec<Acc>,
    open: Vec<Frame>,
    scratch: Reading,
    /// Readings of closed frames, reused so entering a region does not allocate.
    spare: Vec<Reading>,
}

impl ThreadState {
    fn region(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.regions.len();
        self.regions.push(Acc {
            name: name.to_string(),
            calls: 0,
            time_ns: 0,
            counts: vec![EventCount::default(); self.n_events],
        });
        self.index.insert(name.to_string(), i);
        i
    }

    fn start(&mut self, region: usize) -> Result<(), Error> {
        let mut start = self.spare.pop().unwrap_or_default();
        self.readers[self.active]
            .read(&mut start, true)
            .map_err(|e| Error::Read(Box::new(e)))?;
        self.open.push(Frame { region, start });
        Ok(())
    }

    /// Close the innermost open frame of `region`.
    fn stop(&mut self, region: usize) -> Result<(), Error> {
        let mut now = std::mem::take(&mut self.scratch);
        let r = self.readers[self.active]
            .read(&mut now, false)
            .map_err(|e| Error::Read(Box::new(e)));
        let Some(pos) = self.open.iter().rposition(|f| f.region == region) else {
            self.scratch = now;
            return Err(Error::NotStarted(self.regions[region].name.clone()));
        };
        if let Err(e) = r {
            self.scratch = now;
            return Err(e);
        }
        let f = self.open.remove(pos);
        let acc = &mut self.regions[region];
        let dt = now.time_ns.saturating_sub(f.start.time_ns);
        acc.calls += 1;
        acc.time_ns += dt;
        if self.sets.len() == 1 {
            for (i, c) in acc.counts.iter_mut().enumerate() {
                c.value += now.values[i].wrapping_sub(f.start.values[i]);
                c.enabled_ns += now.enabled[i].saturating_sub(f.start.enabled[i]);
                c.running_ns += now.running[i].saturating_sub(f.start.running[i]);
            }
        } else {
            // Several sets: every event was enabled for the region's whole (wall) time, and
            // ran for the part its set was active (times the fraction the kernel had it on
            // the PMU), so `scaled()` estimates the count over the region's time.
            let set = self.sets[self.active].clone();
            for c in &mut acc.counts[..set.start] {
                c.enabled_ns += dt;
            }
            for c in &mut acc.counts[set.end..] {
                c.enabled_ns += dt;
            }
            for (i, c) in acc.counts[set].iter_mut().enumerate() {
                let en = now.enabled[i].saturating_sub(f.start.enabled[i]);
                let run = now.running[i].saturating_sub(f.start.running[i]);
                c.value += now.values[i].wrapping_sub(f.start.values[i]);
                c.enabled_ns += dt;
                c.running_ns += if en == 0 || run >= en {
                    dt
                } else {
                    (dt as u128 * run as u128 / en as u128) as u64
                };
            }
        }
        self.spare.push(f.start);
        self.scratch = now;
        Ok(())
    }

    fn report(&self) -> ThreadReport {
        ThreadReport {
            pid: self.pid,
            tid: self.tid,
            regions: self
                .regions
                .iter()
                .map(|a| RegionResult {
                    name: a.name.clone(),
                    calls: a.calls,
                    time_ns: a.time_ns,
                    counts: a.counts.clone(),
                })
                .collect(),
        }
    }
}

/// Closes its region when dropped. Not `Send`: a region ends on the thread it began on.
#[must_use = "the region ends when the guard is dropped"]
pub struct RegionGuard<'a> {
    regions: &'a Regions,
    state: Arc<Mutex<ThreadState>>,
    region: usize,
    _not_send: PhantomData<*const ()>,
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        // A failing read at exit cannot be reported from drop; the region then keeps the
        // calls it completed. Use start/stop to see such errors.
        let _ = lock(&self.state).stop(self.region);
        let _ = self.regions;
    }
}

fn lock(m: &Mutex<ThreadState>) -> MutexGuard<'_, ThreadState> {
    // A panic while holding the lock leaves consistent-enough counts behind.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Regions {
    /// Regions counting `events` (perf's `-e` syntax: `instructions,cycles`,
    /// `page-faults,task-clock`, raw `r...`, PMU events...). Groups in the string are
    /// flattened; each event is counted for the calling thread only, user and kernel as
    /// the modifiers say. `;` separates event sets ([`with_sets`](Self::with_sets)):
    /// `page-faults;task-clock`.
    pub fn new(events: &str) -> Result<Regions, Error> {
        if events.contains(';') {
            return Self::with_sets(&events.split(';').collect::<Vec<_>>());
        }
        let list = perfkit_events::parse_system(events).map_err(|e| Error::Parse(Box::new(e)))?;
        let mut names = Vec::new();
        let mut attrs = Vec::new();
        for ev in list.groups.into_iter().flat_map(|g| g.members) {
            names.push(ev.name);
            attrs.push(Attr::from_raw(ev.attr));
        }
        Self::with_attrs(names, attrs)
    }

    /// Regions counting these attrs (named as given), as one set.
    pub fn with_attrs(names: Vec<String>, attrs: Vec<Attr>) -> Result<Regions, Error> {
        let n = attrs.len();
        Self::with_attr_sets(names, attrs, std::iter::once(0..n).collect())
    }

    /// Regions counting event sets, one at a time (perfmon2's event sets, LIKWID's groups):
    /// `sets` are `-e` strings; the first is counted until [`next_set`](Self::next_set).
    /// Each event's result says how long it ran (`running_ns`) out of the region's time
    /// (`enabled_ns`), and [`crate::EventCount::scaled`] estimates its count over all of it.
    pub fn with_sets(sets: &[&str]) -> Result<Regions, Error> {
        let mut names = Vec::new();
        let mut attrs = Vec::new();
        let mut ranges = Vec::new();
        for set in sets {
            let list = perfkit_events::parse_system(set).map_err(|e| Error::Parse(Box::new(e)))?;
            let start = names.len();
            for ev in list.groups.into_iter().flat_map(|g| g.members) {
                names.push(ev.name);
                attrs.push(Attr::from_raw(ev.attr));
            }
            if names.len() == start {
                return Err(Error::NoEvents);
            }
            ranges.push(start..names.len());
        }
        Self::with_attr_sets(names, attrs, ranges)
    }

    fn with_attr_sets(
        names: Vec<String>,
        attrs: Vec<Attr>,
        sets: Vec<Range<usize>>,
    ) -> Result<Regions, Error> {
        if attrs.is_empty() {
            return Err(Error::NoEvents);
        }
        let attrs = attrs
            .into_iter()
            .map(|a| {
                let mut a = a.disabled(true).inherit(false).pinned(false);
                a.raw_mut().read_format = perfkit::sys::PERF_FORMAT_TOTAL_TIME_ENABLED
                    | perfkit::sys::PERF_FORMAT_TOTAL_TIME_RUNNING
                    | perfkit::sys::PERF_FORMAT_ID;
                a
            })
            .collect();
        Ok(Regions {
            shared: Arc::new(Shared {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                names,
                attrs,
                sets,
                threads: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The event names, in the order of every result's counts.
    pub fn events(&self) -> &[String] {
        &self.shared.names
    }

    /// This thread's state, opening its counters on first use.
    fn state(&self) -> Result<Arc<Mutex<ThreadState>>, Error> {
        let id = self.shared.id;
        if let Some(s) = MINE.with_borrow(|v| v.iter().find(|(i, _)| *i == id).map(|x| x.1.clone()))
        {
            return Ok(s);
        }
        let mut readers = Vec::new();
        for (k, set) in self.shared.sets.iter().enumerate() {
            let r = Reader::open(
                &self.shared.names[set.clone()],
                &self.shared.attrs[set.clone()],
            )?;
            if k > 0 {
                r.set_enabled(false)
                    .map_err(|e| Error::Open(self.shared.names[set.start].clone(), Box::new(e)))?;
            }
            readers.push(r);
        }
        let n = self.shared.names.len();
        let st = Arc::new(Mutex::new(ThreadState {
            pid: std::process::id(),
            // SAFETY: gettid has no preconditions.
            tid: unsafe { libc::gettid() } as u32,
            readers,
            sets: self.shared.sets.clone(),
            active: 0,
            n_events: n,
            index: HashMap::new(),
            regions: Vec::new(),
            open: Vec::new(),
            scratch: Reading::default(),
            spare: Vec::new(),
        }));
        self.shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(st.clone());
        MINE.with_borrow_mut(|v| v.push((id, st.clone())));
        Ok(st)
    }

    /// Open this thread's counters now (LIKWID's `likwid_markerThreadInit`), so the first
    /// region does not pay for it.
    pub fn thread_init(&self) -> Result<(), Error> {
        self.state().map(|_| ())
    }

    /// Make `name` known on this thread with zero calls (it then shows in the results even
    /// if never entered), as `likwid_markerRegisterRegion`.
    pub fn register(&self, name: &str) -> Result<(), Error> {
        let s = self.state()?;
        lock(&s).region(name);
        Ok(())
    }

    /// Enter region `name` on this thread until the guard drops.
    pub fn enter(&self, name: &str) -> Result<RegionGuard<'_>, Error> {
        let state = self.state()?;
        let region = {
            let mut s = lock(&state);
            let r = s.region(name);
            s.start(r)?;
            r
        };
        Ok(RegionGuard {
            regions: self,
            state,
            region,
            _not_send: PhantomData,
        })
    }

    /// Start region `name` on this thread (regions may nest and overlap).
    pub fn start(&self, name: &str) -> Result<(), Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        let r = s.region(name);
        s.start(r)
    }

    /// Stop the innermost open `name` on this thread and add its counts.
    pub fn stop(&self, name: &str) -> Result<(), Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        match s.index.get(name) {
            Some(&r) => s.stop(r),
            None => Err(Error::NotStarted(name.to_string())),
        }
    }

    /// Add what `name` counted since it was started to its totals, and go on counting from
    /// now without completing a call (PAPI's `PAPI_hl_read`).
    pub fn checkpoint(&self, name: &str) -> Result<(), Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        let Some(&r) = s.index.get(name) else {
            return Err(Error::NotStarted(name.to_string()));
        };
        s.stop(r)?;
        s.regions[r].calls -= 1;
        s.start(r)
    }

    /// Switch this thread to the next event set (back to the first after the last), as
    /// `likwid_markerNextGroup`; returns the set now counted. Not while a region is open on
    /// this thread: a region's counts must come from one set.
    pub fn next_set(&self) -> Result<usize, Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        if let Some(f) = s.open.last() {
            return Err(Error::SwitchInRegion(s.regions[f.region].name.clone()));
        }
        if s.readers.len() == 1 {
            return Ok(0);
        }
        let (old, new) = (s.active, (s.active + 1) % s.readers.len());
        s.readers[old]
            .set_enabled(false)
            .and_then(|()| s.readers[new].set_enabled(true))
            .map_err(|e| Error::Read(Box::new(e)))?;
        s.active = new;
        Ok(new)
    }

    /// How many event sets.
    pub fn sets(&self) -> usize {
        self.shared.sets.len()
    }

    /// Zero `name`'s totals on this thread (`likwid_markerResetRegion`).
    pub fn reset(&self, name: &str) -> Result<(), Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        let Some(&r) = s.index.get(name) else {
            return Err(Error::NotStarted(name.to_string()));
        };
        let acc = &mut s.regions[r];
        acc.calls = 0;
        acc.time_ns = 0;
        acc.counts
            .iter_mut()
            .for_each(|c| *c = EventCount::default());
        Ok(())
    }

    /// `name`'s totals on this thread so far, if it is known here.
    pub fn get(&self, name: &str) -> Result<Option<RegionResult>, Error> {
        let s = self.state()?;
        let s = lock(&s);
        Ok(s.index.get(name).map(|&r| {
            let a = &s.regions[r];
            RegionResult {
                name: a.name.clone(),
                calls: a.calls,
                time_ns: a.time_ns,
                counts: a.counts.clone(),
            }
        }))
    }

    /// Read this thread's counters once, as entering a region does (the bare read the
    /// enter/exit overhead is compared with).
    pub fn read_counters(&self, into: &mut Reading) -> Result<(), Error> {
        let s = self.state()?;
        let mut s = lock(&s);
        let a = s.active;
        s.readers[a]
            .read(into, false)
            .map_err(|e| Error::Read(Box::new(e)))
    }

    /// A reading buffer sized for these events.
    pub fn reading(&self) -> Reading {
        Reading::new(self.shared.sets[0].len())
    }

    /// Every thread's results so far (regions still open count only their completed calls).
    pub fn report(&self) -> RegionsReport {
        let threads = self
            .shared
            .threads
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let mut rep = RegionsReport {
            events: self.shared.names.clone(),
            ..Default::default()
        };
        for t in threads.iter() {
            let t = lock(t);
            let paths: Vec<&str> = t.readers.iter().map(Reader::path).collect();
            rep.read_paths.push(paths.join("/"));
            rep.threads.push(t.report());
        }
        rep
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let id = self.id;
        // Only this thread's entry can be removed here; other threads drop theirs with the
        // thread (the Arc keeps their counters until then).
        let _ = MINE.try_with(|v| {
            if let Ok(mut v) = v.try_borrow_mut() {
                v.retain(|(i, _)| *i != id);
            }
        });
    }
}
