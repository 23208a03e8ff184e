//! Region results as data: per thread, summed over threads, and as a table.

use serde::{Deserialize, Serialize};

/// One event's count over every call of a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventCount {
    /// The raw count, summed over calls.
    pub value: u64,
    /// Nanoseconds the event was enabled inside the region.
    pub enabled_ns: u64,
    /// Nanoseconds it was on the PMU inside the region (less than enabled when multiplexed).
    pub running_ns: u64,
}

impl EventCount {
    /// The count scaled by enabled/running (the kernel's multiplexing estimate); the raw
    /// value when it ran all the time or no time is known, `None` when it never ran while
    /// enabled.
    pub fn scaled(&self) -> Option<f64> {
        if self.running_ns == self.enabled_ns || self.enabled_ns == 0 {
            return Some(self.value as f64);
        }
        if self.running_ns == 0 {
            return None;
        }
        Some(self.value as f64 * self.enabled_ns as f64 / self.running_ns as f64)
    }

    fn add(&mut self, o: &EventCount) {
        self.value += o.value;
        self.enabled_ns += o.enabled_ns;
        self.running_ns += o.running_ns;
    }
}

/// One region on one thread (or summed over threads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegionResult {
    /// The region's name.
    pub name: String,
    /// Completed entries (enter/exit pairs, start/stop pairs).
    pub calls: u64,
    /// Wall-clock nanoseconds inside the region (CLOCK_MONOTONIC), summed over calls.
    pub time_ns: u64,
    /// One count per event of [`RegionsReport::events`], in that order.
    pub counts: Vec<EventCount>,
}

/// One thread's regions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThreadReport {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Regions in the order they were first entered (or registered).
    pub regions: Vec<RegionResult>,
}

/// Everything a [`crate::Regions`] measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RegionsReport {
    /// The event names, in the order of every [`RegionResult::counts`].
    pub events: Vec<String>,
    /// How counters were read: `user-page` (rdpmc/mrs, no system call), `read(2)`, or a
    /// mix, per thread in the order of `threads`.
    pub read_paths: Vec<String>,
    /// Per-thread results.
    pub threads: Vec<ThreadReport>,
}

impl RegionsReport {
    /// Each region summed over threads, in first-seen order; `threads` is how many
    /// threads entered it.
    pub fn summed(&self) -> Vec<(RegionResult, usize)> {
        let mut out: Vec<(RegionResult, usize)> = Vec::new();
        for t in &self.threads {
            for r in &t.regions {
                match out.iter_mut().find(|(s, _)| s.name == r.name) {
                    Some((s, n)) => {
                        s.calls += r.calls;
                        s.time_ns += r.time_ns;
                        for (a, b) in s.counts.iter_mut().zip(&r.counts) {
                            a.add(b);
                        }
                        *n += 1;
                    }
                    None => out.push((r.clone(), 1)),
                }
            }
        }
        out
    }

    /// Merge another report of the same events (another process of the same run).
    pub fn merge(&mut self, other: RegionsReport) {
        if self.events.is_empty() {
            self.events = other.events;
        }
        self.read_paths.extend(other.read_paths);
        self.threads.extend(other.threads);
    }

    /// The region in `name` of thread `tid`, if it ran there.
    pub fn region(&self, tid: u32, name: &str) -> Option<&RegionResult> {
        self.threads
            .iter()
            .find(|t| t.tid == tid)?
            .regions
            .iter()
            .find(|r| r.name == name)
    }

    /// Metrics derived from a region's counts, where its events allow them:
    /// `CPUs utilized` (task-clock or cpu-clock over the region's wall time) and `IPC`
    /// (instructions over cycles, with or without the same modifiers).
    pub fn metrics(&self, r: &RegionResult) -> Vec<(&'static str, f64)> {
        let find = |names: &[&str]| {
            self.events
                .iter()
                .position(|e| names.contains(&e.split(':').next().unwrap_or(e)))
                .and_then(|i| r.counts.get(i)?.scaled())
        };
        let mut out = Vec::new();
        if let Some(t) = find(&["task-clock", "cpu-clock"]) {
            if r.time_ns > 0 {
                out.push(("CPUs utilized", t / r.time_ns as f64));
            }
        }
        if let (Some(i), Some(c)) = (find(&["instructions"]), find(&["cycles", "cpu-cycles"])) {
            if c > 0.0 {
                out.push(("IPC", i / c));
            }
        }
        out
    }

    /// A human-readable table: per region, one block with a line per thread and, when
    /// more than one thread entered it, a `SUM` line.
    pub fn table(&self) -> String {
        let mut out = String::new();
        for (sum, nthreads) in self.summed() {
            out.push_str(&format!("Region {}\n", sum.name));
            let mut header = vec!["thread".to_string(), "calls".into(), "time (s)".into()];
            header.extend(self.events.iter().cloned());
            header.extend(self.metrics(&sum).iter().map(|(n, _)| n.to_string()));
            let mut rows = vec![header];
            let with_metrics = |label: &str, r: &RegionResult| {
                let mut v = row(label, r);
                v.extend(self.metrics(r).iter().map(|(_, x)| format!("{x:.3}")));
                v
            };
            for t in &self.threads {
                if let Some(r) = t.regions.iter().find(|r| r.name == sum.name) {
                    rows.push(with_metrics(&format!("{}/{}", t.pid, t.tid), r));
                }
            }
            if nthreads > 1 {
                rows.push(with_metrics("SUM", &sum));
            }
            let widths: Vec<usize> = (0..rows[0].len())
                .map(|c| rows.iter().map(|r| r[c].len()).max().unwrap_or(0))
                .collect();
            for r in &rows {
                let cells: Vec<String> = r
                    .iter()
                    .zip(&widths)
                    .enumerate()
                    .map(|(i, (c, w))| {
                        if i == 0 {
                            format!("{c:<w$}")
                        } else {
                            format!("{c:>w$}")
                        }
                    })
                    .collect();
                out.push_str("  ");
                out.push_str(cells.join("  ").trim_end());
                out.push('\n');
            }
            out.push('\n');
        }
        out
    }
}

fn row(label: &str, r: &RegionResult) -> Vec<String> {
    let mut v = vec![
        label.to_string(),
        r.calls.to_string(),
        format!("{:.6}", r.time_ns as f64 / 1e9),
    ];
    v.extend(r.counts.iter().map(format_count));
    v
}

/// A count as the table shows it: the raw value, or the scaled estimate with the percentage
/// of time it ran when it was multiplexed, `<not counted>` if it never ran.
pub fn format_count(c: &EventCount) -> String {
    match c.scaled() {
        None => "<not counted>".into(),
        Some(v) if c.running_ns < c.enabled_ns => format!(
            "{:.0} ({:.1}%)",
            v,
            100.0 * c.running_ns as f64 / c.enabled_ns as f64
        ),
        Some(_) => c.value.to_string(),
    }
}
