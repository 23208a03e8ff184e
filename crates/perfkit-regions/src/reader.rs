//! Reading a thread's counters: from the user page (rdpmc / `mrs`, no system call) when the
//! events are on hardware counters the thread may read, else one `read(2)` of a group.

use crate::error::Error;
use perfkit::{Attr, Group, GroupCount, ReadSource, SelfMonitor, Target};

/// One reading of every event, plus the monotonic clock.
#[derive(Clone, Debug, Default)]
pub struct Reading {
    /// Raw counts, per event.
    pub values: Vec<u64>,
    /// Nanoseconds enabled, per event (0 where the read path does not say).
    pub enabled: Vec<u64>,
    /// Nanoseconds running, per event.
    pub running: Vec<u64>,
    /// `CLOCK_MONOTONIC` nanoseconds when read.
    pub time_ns: u64,
}

impl Reading {
    /// A reading for `n` events.
    pub fn new(n: usize) -> Reading {
        Reading {
            values: vec![0; n],
            enabled: vec![0; n],
            running: vec![0; n],
            time_ns: 0,
        }
    }
}

/// The per-thread counters and how they are read.
#[derive(Debug)]
pub enum Reader {
    /// Each event's user page: rdpmc/`mrs` while it has a counter index, `read(2)` of that
    /// event alone otherwise.
    UserPage(Vec<SelfMonitor>),
    /// All events in one group, read with one `read(2)` (no event here is user-readable:
    /// software events, or no PMU).
    Group(Group, GroupCount),
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; CLOCK_MONOTONIC always exists (vDSO).
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

impl Reader {
    /// Open `attrs` for the calling thread, enabled.
    pub fn open(names: &[String], attrs: &[Attr]) -> Result<Reader, Error> {
        let me = Target::this_thread();
        let mut mons = Vec::with_capacity(attrs.len());
        for (name, attr) in names.iter().zip(attrs) {
            let err = |e| Error::Open(name.clone(), Box::new(e));
            let m = SelfMonitor::open(attr, &me).map_err(err)?;
            m.counter().enable().map_err(err)?;
            mons.push(m);
        }
        let any_user = mons
            .iter()
            .any(|m| m.read().is_ok_and(|r| r.source == ReadSource::UserPage));
        if !any_user {
            // One system call for all of them instead of one each; if they cannot share a
            // group (different PMUs, too many for the hardware), keep them apart.
            if let Ok(g) = Self::open_group(attrs) {
                return Ok(Reader::Group(g, GroupCount::default()));
            }
        }
        Ok(Reader::UserPage(mons))
    }

    fn open_group(attrs: &[Attr]) -> perfkit::Result<Group> {
        let me = Target::this_thread();
        let mut g = Group::open(&attrs[0], &me)?;
        for a in &attrs[1..] {
            g.add(&a.disabled(false), &me)?;
        }
        g.enable()?;
        Ok(g)
    }

    /// Enable or disable every event (event sets not counted now are disabled, so they
    /// take no hardware counter).
    pub fn set_enabled(&self, on: bool) -> perfkit::Result<()> {
        match self {
            Reader::UserPage(m) => m.iter().try_for_each(|m| {
                if on {
                    m.counter().enable()
                } else {
                    m.counter().disable()
                }
            }),
            Reader::Group(g, _) => {
                if on {
                    g.enable()
                } else {
                    g.disable()
                }
            }
        }
    }

    /// How many events.
    pub fn len(&self) -> usize {
        match self {
            Reader::UserPage(m) => m.len(),
            Reader::Group(g, _) => g.len(),
        }
    }

    /// Never true: a reader has at least one event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `user-page`, `read(2)` or `user-page+read(2)`: how the last reads went.
    pub fn path(&self) -> &'static str {
        match self {
            Reader::Group(..) => "read(2)",
            Reader::UserPage(m) => {
                let user = m
                    .iter()
                    .filter(|m| m.read().is_ok_and(|r| r.source == ReadSource::UserPage))
                    .count();
                if user == m.len() {
                    "user-page"
                } else if user == 0 {
                    "read(2)"
                } else {
                    "user-page+read(2)"
                }
            }
        }
    }

    /// Read every event into `out`. The clock is read before the counters when `clock_first`
    /// (a region's start) and after them otherwise (its end), so a region's wall time
    /// spans the window its counts cover.
    #[inline]
    pub fn read(&mut self, out: &mut Reading, clock_first: bool) -> perfkit::Result<()> {
        if clock_first {
            out.time_ns = now_ns();
        }
        let n = self.len();
        if out.values.len() != n {
            let t = out.time_ns;
            *out = Reading::new(n);
            out.time_ns = t;
        }
        match self {
            Reader::UserPage(mons) => {
                for (i, m) in mons.iter().enumerate() {
                    let r = m.read()?;
                    out.values[i] = r.value;
                    out.enabled[i] = r.time_enabled.unwrap_or(0);
                    out.running[i] = r.time_running.unwrap_or(0);
                }
            }
            Reader::Group(g, buf) => {
                g.read_into(buf)?;
                let en = buf.time_enabled.unwrap_or(0);
                let run = buf.time_running.unwrap_or(0);
                for (i, c) in buf.counts().iter().enumerate() {
                    out.values[i] = c.value;
                    out.enabled[i] = en;
                    out.running[i] = run;
                }
            }
        }
        if !clock_first {
            out.time_ns = now_ns();
        }
        Ok(())
    }
}
