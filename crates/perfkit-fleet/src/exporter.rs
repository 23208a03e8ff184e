//! [`Exporter`]: counters of an event list on every CPU, and on every CPU for each
//! selected cgroup, read into Prometheus' text format.
//!
//! Counting goes through the engine's one open path ([`perfkit_engine::open`]) with
//! whole-CPU places (`pid = -1, cpu = N`) and cgroup places (`PERF_FLAG_PID_CGROUP`), each
//! counter read with `PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING`.
//! Three counter families per (event, cpu, cgroup):
//!
//! * `perfkit_event_count_total`: the count scaled by enabled/running (nanoseconds for
//!   clock events), kept monotonic (a multiplexed estimate that would go down repeats the
//!   last value, so `rate()` never sees a false reset);
//! * `perfkit_event_enabled_seconds_total` and `perfkit_event_running_seconds_total`: the
//!   raw times, so that a dashboard can see and judge multiplexing.
//!
//! Memory is bounded: one `f64` of state per series and at most
//! [`ExporterOptions::max_cgroups`] cgroups. The cgroup list is looked up again at each
//! refresh: new cgroups get counters, vanished ones are closed (their series end).

use crate::cgroups::CgroupSelection;
use crate::exposition::Exposition;
use perfkit::sys;
use perfkit_engine::{EventSpec, OpenOptions, Opened, Place, Slot};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What the exporter counts.
#[derive(Clone, Debug)]
pub struct ExporterOptions {
    /// Event strings (perf's syntax), each may hold a comma list.
    pub events: Vec<String>,
    /// CPUs to count on, as a list (`0-3,8`; None: every online CPU).
    pub cpus: Option<String>,
    /// Cgroups to count in.
    pub cgroups: CgroupSelection,
    /// Count every CPU as a whole too (the series without a `cgroup` label).
    pub system_wide: bool,
    /// At most this many cgroups are counted (the first by name); the others are counted
    /// in `perfkit_exporter_cgroups_skipped`.
    pub max_cgroups: usize,
    /// The `host` label.
    pub host: String,
    /// Read the counters (and look for cgroups) at most this often: a scrape in between
    /// gets the last reading.
    pub interval: Duration,
}

impl Default for ExporterOptions {
    fn default() -> Self {
        ExporterOptions {
            events: vec!["task-clock,context-switches,cpu-migrations,page-faults".into()],
            cpus: None,
            cgroups: CgroupSelection::default(),
            system_wide: true,
            max_cgroups: 256,
            host: hostname(),
            interval: Duration::from_secs(1),
        }
    }
}

/// This machine's host name (`/proc/sys/kernel/hostname`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "localhost".into())
}

/// One opened event list (system-wide or one cgroup) and the last value of each series.
#[derive(Debug)]
struct Counted {
    opened: Opened,
    /// Per event, per place: last scaled count, enabled ns, running ns.
    last: Vec<Vec<[u64; 3]>>,
}

impl Counted {
    fn new(opened: Opened) -> Counted {
        let last = opened
            .events
            .iter()
            .map(|e| vec![[0; 3]; e.slots.len()])
            .collect();
        Counted { opened, last }
    }

    /// Read every counter; keep each series monotonic.
    fn read(&mut self) {
        for (ei, ev) in self.opened.events.iter().enumerate() {
            for (pi, slot) in ev.slots.iter().enumerate() {
                let Some(c) = slot.counter() else { continue };
                let Ok(count) = c.read() else { continue };
                let last = &mut self.last[ei][pi];
                let (en, run) = (
                    count.time_enabled.unwrap_or(0),
                    count.time_running.unwrap_or(0),
                );
                if let Some(v) = count.scaled().value() {
                    last[0] = last[0].max(v);
                }
                last[1] = last[1].max(en);
                last[2] = last[2].max(run);
            }
        }
    }
}

/// A Prometheus exporter of counters.
#[derive(Debug)]
pub struct Exporter {
    opts: ExporterOptions,
    specs: Vec<EventSpec>,
    cpus: Vec<u32>,
    root: Option<PathBuf>,
    system: Option<Counted>,
    cgroups: BTreeMap<String, Counted>,
    skipped: usize,
    /// Events that opened nowhere, with why (once, at start or when first seen).
    unsupported: BTreeMap<String, String>,
    last_read: Option<Instant>,
    page: String,
    refreshes: u64,
    refresh_time: Duration,
}

impl Exporter {
    /// Parse the events and open them on every CPU (and the cgroups that exist now).
    /// Fails when an event string does not parse, or when nothing at all can be opened.
    pub fn new(opts: ExporterOptions) -> perfkit_engine::Result<Exporter> {
        let mut specs = perfkit_engine::parse(&opts.events)?;
        for s in &mut specs {
            s.attr.read_format |=
                sys::PERF_FORMAT_TOTAL_TIME_ENABLED | sys::PERF_FORMAT_TOTAL_TIME_RUNNING;
        }
        let cpus = perfkit_engine::cpus(opts.cpus.as_deref())?;
        let root = if opts.cgroups.is_empty() {
            None
        } else {
            Some(perfkit_engine::stat::cgroup_root()?)
        };
        let mut me = Exporter {
            opts,
            specs,
            cpus,
            root,
            system: None,
            cgroups: BTreeMap::new(),
            skipped: 0,
            unsupported: BTreeMap::new(),
            last_read: None,
            page: String::new(),
            refreshes: 0,
            refresh_time: Duration::ZERO,
        };
        if me.opts.system_wide {
            let places: Vec<Place> = me.cpus.iter().map(|&c| Place::cpu(c)).collect();
            let opened = perfkit_engine::open(&me.specs, &places, &OpenOptions::default());
            me.note_failures(&opened);
            if !opened.any_open() {
                return Err(match opened.require_all() {
                    Err(e) => e,
                    Ok(_) => perfkit_engine::Error::NoEvents,
                });
            }
            opened.enable()?;
            me.system = Some(Counted::new(opened));
        }
        me.rescan();
        if me.system.is_none() && me.cgroups.is_empty() && me.opts.cgroups.names.is_empty() {
            // Only trees were given and none has a cgroup yet: that is fine (they may
            // appear), but a tree that does not exist at all is a typo.
            if let Some(root) = &me.root {
                for t in &me.opts.cgroups.trees {
                    let p = root.join(t.trim_start_matches('/'));
                    if !p.is_dir() && !std::path::Path::new(t).is_dir() {
                        return Err(perfkit_engine::Error::Usage(format!(
                            "--cgroup-tree {t}: no such cgroup directory under {}",
                            root.display()
                        )));
                    }
                }
            }
        }
        Ok(me)
    }

    /// The events as they were opened (names after fallbacks).
    pub fn event_names(&self) -> Vec<String> {
        match &self.system {
            Some(c) => c.opened.events.iter().map(|e| e.name.clone()).collect(),
            None => self.specs.iter().map(|s| s.name.clone()).collect(),
        }
    }

    /// Events that could not be opened, with the reason.
    pub fn unsupported(&self) -> impl Iterator<Item = (&str, &str)> {
        self.unsupported
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The cgroups counted now, by label.
    pub fn cgroups(&self) -> impl Iterator<Item = &str> {
        self.cgroups.keys().map(String::as_str)
    }

    fn note_failures(&mut self, opened: &Opened) {
        for ev in &opened.events {
            if ev.counters().next().is_none()
                && let Some(e) = ev.slots.iter().find_map(Slot::error)
            {
                self.unsupported
                    .entry(ev.name.clone())
                    .or_insert_with(|| e.to_string());
            }
        }
    }

    /// Look for cgroups again: open the new ones, close the vanished ones.
    fn rescan(&mut self) {
        let Some(root) = &self.root else { return };
        let (found, skipped) = self.opts.cgroups.scan(root, self.opts.max_cgroups);
        self.skipped = skipped;
        self.cgroups.retain(|name, _| found.contains_key(name));
        for (name, dir) in found {
            if self.cgroups.contains_key(&name) {
                continue;
            }
            let Ok(fd) = std::fs::File::open(&dir) else {
                continue;
            };
            let fds = [std::os::fd::OwnedFd::from(fd)];
            let places: Vec<Place> = self
                .cpus
                .iter()
                .map(|&c| Place {
                    tid: -1,
                    cpu: c as i32,
                    cgroup: Some(0),
                })
                .collect();
            let opts = OpenOptions {
                cgroups: &fds,
                ..OpenOptions::default()
            };
            let opened = perfkit_engine::open(&self.specs, &places, &opts);
            self.note_failures(&opened);
            if !opened.any_open() || opened.enable().is_err() {
                continue;
            }
            self.cgroups.insert(name, Counted::new(opened));
        }
    }

    /// Look for cgroups and read every counter now.
    pub fn refresh(&mut self) {
        let t = Instant::now();
        self.rescan();
        if let Some(s) = &mut self.system {
            s.read();
        }
        for c in self.cgroups.values_mut() {
            c.read();
        }
        self.refreshes += 1;
        self.refresh_time = t.elapsed();
        self.page = self.render();
        self.last_read = Some(Instant::now());
    }

    /// The page for a scrape: refreshed when the last reading is older than the interval.
    pub fn scrape(&mut self) -> &str {
        if self
            .last_read
            .is_none_or(|t| t.elapsed() >= self.opts.interval)
        {
            self.refresh();
        }
        &self.page
    }

    fn render(&self) -> String {
        let mut e = Exposition::new();
        let host = self.opts.host.as_str();
        let families: [(&str, &str, usize, f64); 3] = [
            (
                "perfkit_event_count_total",
                "Event count since the exporter opened the counter, scaled by time enabled / time running (nanoseconds for clock events).",
                0,
                1.0,
            ),
            (
                "perfkit_event_enabled_seconds_total",
                "Time the counter was enabled (PERF_FORMAT_TOTAL_TIME_ENABLED).",
                1,
                1e9,
            ),
            (
                "perfkit_event_running_seconds_total",
                "Time the counter was on the PMU (PERF_FORMAT_TOTAL_TIME_RUNNING); below enabled when multiplexed.",
                2,
                1e9,
            ),
        ];
        for (name, help, field, unit) in families {
            e.family(name, "counter", help);
            let sets = self
                .system
                .iter()
                .map(|c| ("", c))
                .chain(self.cgroups.iter().map(|(n, c)| (n.as_str(), c)));
            for (cgroup, counted) in sets {
                for (ei, ev) in counted.opened.events.iter().enumerate() {
                    for (pi, slot) in ev.slots.iter().enumerate() {
                        if slot.counter().is_none() {
                            continue;
                        }
                        let cpu = counted.opened.places[pi].cpu.to_string();
                        let v = counted.last[ei][pi][field] as f64 / unit;
                        let mut labels = vec![("host", host), ("event", ev.name.as_str())];
                        labels.push(("cpu", cpu.as_str()));
                        if !cgroup.is_empty() {
                            labels.push(("cgroup", cgroup));
                        }
                        e.series(name, &labels, v);
                    }
                }
            }
        }
        e.family("perfkit_exporter_cgroups", "gauge", "Cgroups counted now.");
        e.series(
            "perfkit_exporter_cgroups",
            &[("host", host)],
            self.cgroups.len() as f64,
        );
        e.family(
            "perfkit_exporter_cgroups_skipped",
            "gauge",
            "Cgroups selected but not counted (over --max-cgroups).",
        );
        e.series(
            "perfkit_exporter_cgroups_skipped",
            &[("host", host)],
            self.skipped as f64,
        );
        e.family(
            "perfkit_exporter_event_unsupported",
            "gauge",
            "Events of --events that could not be opened on this machine.",
        );
        for name in self.unsupported.keys() {
            e.series(
                "perfkit_exporter_event_unsupported",
                &[("host", host), ("event", name)],
                1.0,
            );
        }
        e.family(
            "perfkit_exporter_refreshes_total",
            "counter",
            "Times the counters were read.",
        );
        e.series(
            "perfkit_exporter_refreshes_total",
            &[("host", host)],
            self.refreshes as f64,
        );
        e.family(
            "perfkit_exporter_refresh_seconds",
            "gauge",
            "How long the last reading took.",
        );
        e.series(
            "perfkit_exporter_refresh_seconds",
            &[("host", host)],
            self.refresh_time.as_secs_f64(),
        );
        e.finish()
    }
}
