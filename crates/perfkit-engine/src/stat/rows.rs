//! Rows: counts aggregated into buckets (global, CPU, core, socket, node, thread),
//! scaled for multiplexing, with shadow metrics; and the means of repeated runs.

use super::metrics::{compute_metrics, is_clock, mean_stddev_of_mean};
use super::plan::{Aggr, Plan, Scope};
use super::run::RunResult;
use super::tool::Tool;
use super::user_metrics;
use crate::Place;
use crate::open::{OpenedEvent, Slot};
use perfkit::cpus::{CpuPlace, places as cpu_places};
use perfkit::{Count, sys};
use std::collections::BTreeMap;
use std::time::Duration;

/// How a value came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Counted (possibly scaled).
    Counted,
    /// Opened but never ran.
    NotCounted,
    /// The machine lacks the event.
    NotSupported,
    /// Opening failed (permission ...).
    Failed,
}

/// One line of output: one event in one aggregation bucket.
#[derive(Clone, Debug)]
pub struct Row {
    /// Bucket label (`CPU0`, `S0-D0-C0`, `bash-1045`), empty when aggregated.
    pub label: String,
    /// Bucket kind for JSON (`cpu`, `core`, `socket`, `node`, `thread`, `cgroup`).
    pub label_kind: &'static str,
    /// CPUs in the bucket (per-core/socket/node).
    pub ncpus: Option<usize>,
    /// Event name as printed.
    pub event: String,
    /// The attr (to recognize clocks and metrics).
    pub attr: sys::perf_event_attr,
    /// Unit after scaling.
    pub unit: String,
    /// Whether a cgroup name follows the event name.
    pub cgroup: Option<String>,
    /// State.
    pub state: State,
    /// Scaled value (mean over runs with -r).
    pub value: f64,
    /// Sum of time_running (ns).
    pub running: u64,
    /// Sum of time_enabled (ns).
    pub enabled: u64,
    /// Every run's value (-r).
    pub runs: Vec<f64>,
    /// Shadow metric: value and unit.
    pub metric: Option<(f64, String)>,
    /// Digits perf prints a `-M` metric's value with (`%8.2f`, `%8.1f` with a
    /// `ScaleUnit`); `None` for the shadow metrics, each printed its own way.
    pub metric_decimals: Option<usize>,
}

impl Row {
    /// Percentage of enabled time the event ran.
    pub fn pcnt_running(&self) -> f64 {
        if self.enabled == 0 {
            100.0
        } else {
            100.0 * self.running as f64 / self.enabled as f64
        }
    }

    /// Mean and standard deviation of the mean (Welford), when there are several runs.
    pub fn stats(&self) -> Option<(f64, f64)> {
        mean_stddev_of_mean(&self.runs)
    }

    /// Whether this is a clock (task-clock, cpu-clock): printed in msec.
    pub fn is_clock(&self) -> bool {
        is_clock(&self.attr)
    }
}

/// The aggregation bucket of instance `i`.
fn bucket(plan: &Plan, inst: &Place, topo: &BTreeMap<u32, CpuPlace>) -> (String, &'static str) {
    let place = topo
        .get(&(inst.cpu.max(0) as u32))
        .copied()
        .unwrap_or_default();
    match plan.aggr {
        Aggr::Global => (String::new(), ""),
        Aggr::Cpu => (format!("CPU{}", inst.cpu), "cpu"),
        Aggr::Thread => {
            let comm = match &plan.scope {
                Scope::Threads(ts) => ts
                    .iter()
                    .find(|(t, _)| *t == inst.tid)
                    .map_or_else(|| "?".to_string(), |(_, c)| c.clone()),
                _ => "?".into(),
            };
            (format!("{comm}-{}", inst.tid), "thread")
        }
        Aggr::Core => (
            format!("S{}-D{}-C{}", place.socket, place.die, place.core),
            "core",
        ),
        Aggr::Die => (format!("S{}-D{}", place.socket, place.die), "die"),
        Aggr::Socket => (format!("S{}", place.socket), "socket"),
        Aggr::Node => (format!("N{}", place.node), "node"),
        Aggr::Cache(level) => {
            let cpu = inst.cpu.max(0) as u32;
            let level = if level == 0 {
                super::cache::highest_level(cpu)
            } else {
                level
            };
            (
                format!(
                    "S{}-D{}-L{level}-ID{}",
                    place.socket,
                    place.die,
                    super::cache::cache_id(cpu, level)
                ),
                "cache",
            )
        }
    }
}

/// The rows of one reading: every event in every bucket of the plan's aggregation.
/// `counts[event][place]` (None where not open or not read); `elapsed` is the wall time
/// measured (for `CPUs utilized`); `no_scale` leaves multiplexed counts as read.
pub fn build_rows(
    plan: &Plan,
    places: &[Place],
    events: &[OpenedEvent],
    counts: &[Vec<Option<Count>>],
    elapsed: Duration,
    no_scale: bool,
) -> Vec<Row> {
    let cpus: Vec<u32> = places
        .iter()
        .filter(|i| i.cpu >= 0)
        .map(|i| i.cpu as u32)
        .collect();
    let topo = cpu_places(&cpus);
    // bucket label -> (kind, ncpus)
    let mut order: Vec<(String, &'static str)> = Vec::new();
    let mut ncpus: BTreeMap<String, usize> = BTreeMap::new();
    for inst in places {
        let b = bucket(plan, inst, &topo);
        *ncpus.entry(b.0.clone()).or_default() += 1;
        if !order.contains(&b) {
            order.push(b);
        }
    }
    let mut rows: Vec<Row> = Vec::new();
    // The event index of each row, for perf's -A order.
    let mut row_events: Vec<usize> = Vec::new();
    for (label, kind) in &order {
        let mut bucket_rows = Vec::new();
        for (ei, (ev, evc)) in events.iter().zip(counts).enumerate() {
            let (mut value, mut enabled, mut running) = (0f64, 0u64, 0u64);
            let (mut any_open, mut any_failed, mut any_counted) = (false, false, false);
            let tool = Tool::of(&ev.attr).is_some();
            for (pi, ((slot, c), inst)) in ev.slots.iter().zip(evc).zip(places).enumerate() {
                if &bucket(plan, inst, &topo).0 != label {
                    continue;
                }
                // A tool event has one value, on the first place.
                any_open |= tool && pi == 0;
                match slot {
                    Slot::Open(_) => any_open = true,
                    Slot::Failed(_) => any_failed = true,
                    _ => {}
                }
                let Some(c) = c else { continue };
                let e = c.time_enabled.unwrap_or(0);
                let r = c.time_running.unwrap_or(0);
                enabled += e;
                running += r;
                let v = if no_scale {
                    Some(c.value)
                } else {
                    perfkit::scale(c.value, e, r).value()
                };
                // A counter that did not run (in this interval) is not counted, as perf
                // prints it; only counts without times are taken as they are.
                if let Some(v) = v
                    && (r > 0 || c.time_enabled.is_none())
                {
                    any_counted = true;
                    value += v as f64 * ev.spec.scale;
                }
            }
            let state = if any_counted {
                State::Counted
            } else if any_open {
                State::NotCounted
            } else if any_failed {
                State::Failed
            } else {
                State::NotSupported
            };
            let cg = plan
                .spec_cgroup
                .get(ei)
                .copied()
                .flatten()
                .and_then(|i| plan.cgroup_names.get(i).cloned());
            bucket_rows.push(Row {
                label: label.clone(),
                label_kind: kind,
                ncpus: matches!(
                    plan.aggr,
                    Aggr::Core | Aggr::Die | Aggr::Socket | Aggr::Node | Aggr::Cache(_)
                )
                .then(|| ncpus.get(label).copied().unwrap_or(0)),
                event: ev.name.clone(),
                attr: ev.attr,
                unit: ev.spec.unit.clone(),
                cgroup: cg,
                state,
                value,
                running,
                enabled,
                runs: Vec::new(),
                metric: None,
                metric_decimals: None,
            });
        }
        // perf prints a tool event once, in the first bucket.
        let keep = |r: &Row| Tool::of(&r.attr).is_none() || r.state != State::NotSupported;
        row_events.extend((0..bucket_rows.len()).filter(|&i| keep(&bucket_rows[i])));
        bucket_rows.retain(keep);
        compute_metrics(&mut bucket_rows, elapsed.as_nanos() as f64);
        user_metrics::apply(&plan.metrics, &mut bucket_rows);
        rows.extend(bucket_rows);
    }
    // perf prints -A rows event by event, CPU by CPU.
    if plan.aggr == Aggr::Cpu {
        let mut ix: Vec<(usize, Row)> = row_events.into_iter().zip(rows).collect();
        ix.sort_by_key(|(e, _)| *e);
        rows = ix.into_iter().map(|(_, r)| r).collect();
    }
    // perf prints --per-thread rows event by event, each event's threads by count, the
    // largest first, and the threads that did not run last.
    if plan.aggr == Aggr::Thread {
        let n = events.len();
        let mut by_event = Vec::with_capacity(rows.len());
        for e in 0..n {
            let mut of_event: Vec<Row> = rows.iter().skip(e).step_by(n).cloned().collect();
            of_event.sort_by(|a, b| {
                (a.state != State::Counted)
                    .cmp(&(b.state != State::Counted))
                    .then(b.value.total_cmp(&a.value))
            });
            by_event.extend(of_event);
        }
        rows = by_event;
        // System wide, perf lists only the threads that counted something.
        if plan.system_wide {
            rows.retain(|r| r.state == State::Counted && r.value != 0.0);
        }
    }
    rows
}

/// Rows over all runs: values are means, with every run kept for statistics.
pub fn summarize(plan: &Plan, runs: &[RunResult], no_scale: bool) -> Vec<Row> {
    let mut per_run: Vec<Vec<Row>> = runs
        .iter()
        .map(|r| build_rows(plan, &r.places, &r.events, &r.counts, r.elapsed, no_scale))
        .collect();
    let Some(mut rows) = per_run.first().cloned() else {
        return Vec::new();
    };
    if runs.len() > 1 {
        for (i, row) in rows.iter_mut().enumerate() {
            // A tool event that read zero in a run (perf's `<not counted>` CPU time) is a
            // zero in the statistics, as perf keeps it.
            let tool = Tool::of(&row.attr).is_some();
            let vals: Vec<f64> = per_run
                .iter()
                .filter_map(|rs| rs.get(i))
                .filter(|r| r.state == State::Counted || (tool && r.state == State::NotCounted))
                .map(|r| r.value)
                .collect();
            let any_counted = per_run
                .iter()
                .filter_map(|rs| rs.get(i))
                .any(|r| r.state == State::Counted);
            if any_counted {
                row.value = vals.iter().sum::<f64>() / vals.len() as f64;
                row.state = State::Counted;
            }
            row.runs = vals;
            // perf prints the last run's running and enabled times, not their sum.
            if let Some(last) = per_run.last().and_then(|rs| rs.get(i)) {
                row.running = last.running;
                row.enabled = last.enabled;
            }
        }
        let mean_elapsed = runs
            .iter()
            .map(|r| r.elapsed.as_nanos() as f64)
            .sum::<f64>()
            / runs.len() as f64;
        for r in &mut rows {
            r.metric = None;
            r.metric_decimals = None;
        }
        // Metrics over the means, bucket by bucket.
        let mut start = 0;
        while start < rows.len() {
            let label = rows[start].label.clone();
            let mut end = start;
            while end < rows.len() && rows[end].label == label {
                end += 1;
            }
            compute_metrics(&mut rows[start..end], mean_elapsed);
            user_metrics::apply(&plan.metrics, &mut rows[start..end]);
            start = end;
        }
    }
    per_run.clear();
    rows
}
