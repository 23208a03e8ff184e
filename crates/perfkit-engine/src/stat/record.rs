//! `perf stat record` / `perf stat report`: a run's counts as perf's stat records
//! (THREAD_MAP, CPU_MAP, STAT_CONFIG, one STAT per counter instance, STAT_ROUND) in a
//! perf.data file or stream, and those records read back into rows.

use super::metrics::{compute_metrics, is_clock};
use super::plan::Aggr;
use super::rows::{Row, State};
use super::run::RunResult;
use super::tool::Tool;
use crate::{Error, Result};
use perfkit::sys;
use perfkit_data::{FileEvent, PerfData, record};

/// perf's `enum aggr_mode` values, as STAT_CONFIG carries them.
fn aggr_mode(a: Aggr) -> u64 {
    match a {
        Aggr::Cpu => 0,
        // perf 6.1 has no per-cache mode: its readers get the totals.
        Aggr::Global | Aggr::Cache(_) => 1,
        Aggr::Socket => 2,
        Aggr::Die => 3,
        Aggr::Core => 4,
        Aggr::Thread => 5,
        Aggr::Node => 7,
    }
}

/// A run as perf's stat records: the events (attrs with the ids the STAT records name),
/// the records that go before the counts (maps and config), and the counts with the
/// closing round.
#[derive(Debug)]
pub struct StatRecords {
    /// The events, each with one id per place it was opened on.
    pub events: Vec<FileEvent>,
    /// The events' units, scales (and names in a stream) as EVENT_UPDATE records, THREAD_MAP, CPU_MAP, STAT_CONFIG.
    pub head: Vec<Vec<u8>>,
    /// One STAT record per counter instance that was read, then the final STAT_ROUND.
    pub counts: Vec<Vec<u8>>,
}

fn u64s(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_ne_bytes()).collect()
}

/// The stat records of one run; `aggr` and `interval_ms` go into STAT_CONFIG. For a
/// stream (`pipe`), each event's name follows its unit and scale, as perf sends them (a
/// file names its events in its EVENT_DESC section).
pub fn stat_records(run: &RunResult, aggr: Aggr, interval_ms: u64, pipe: bool) -> StatRecords {
    let mut cpus: Vec<i32> = Vec::new();
    let mut threads: Vec<i32> = Vec::new();
    for p in &run.places {
        if !cpus.contains(&p.cpu) {
            cpus.push(p.cpu);
        }
        if !threads.contains(&p.tid) {
            threads.push(p.tid);
        }
    }
    let nplaces = run.places.len() as u64;
    let id = |ei: usize, pi: usize| ei as u64 * nplaces + pi as u64 + 1;
    // perf 6.1 writes a tool event as a software dummy event with the flags and read
    // format its counters got (`perf stat report` and perfkit's read it back by name).
    use sys::attr_flags::{DISABLED, ENABLE_ON_EXEC, EXCLUDE_GUEST, INHERIT};
    let counter = run.events.iter().find(|e| Tool::of(&e.attr).is_none());
    let tool_attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_DUMMY,
        read_format: counter.map_or(
            sys::PERF_FORMAT_TOTAL_TIME_ENABLED | sys::PERF_FORMAT_TOTAL_TIME_RUNNING,
            |c| c.attr.read_format,
        ),
        flags: counter.map_or(DISABLED | EXCLUDE_GUEST, |c| {
            c.attr.flags & (DISABLED | INHERIT | ENABLE_ON_EXEC | EXCLUDE_GUEST)
        }),
        ..Default::default()
    };
    let events = run
        .events
        .iter()
        .enumerate()
        .map(|(ei, e)| {
            let mut attr = if Tool::of(&e.attr).is_some() {
                tool_attr
            } else {
                e.attr
            };
            // As perf's stat attrs: IDENTIFIER, so the ids name the instances.
            attr.sample_type |= sys::PERF_SAMPLE_IDENTIFIER;
            FileEvent {
                attr,
                name: e.name.clone(),
                ids: (0..run.places.len()).map(|pi| id(ei, pi)).collect(),
            }
        })
        .collect();

    let mut head = Vec::new();
    // As perf's `perf_event__synthesize_extra_attr`: each event's unit and its scale
    // (where not 1), EVENT_UPDATE types 0 and 1, named by the event's first id.
    for (ei, e) in run.events.iter().enumerate() {
        let (unit, scale) = if is_clock(&e.attr) {
            ("msec", 1e-6)
        } else {
            (e.spec.unit.as_str(), e.spec.scale)
        };
        if !unit.is_empty() {
            let mut body = u64s(&[0, id(ei, 0)]);
            body.extend_from_slice(unit.as_bytes());
            body.resize((body.len() + 1).next_multiple_of(8), 0);
            head.push(record(sys::PERF_RECORD_EVENT_UPDATE, 0, &body, &[]));
        }
        if scale != 1.0 {
            let mut body = u64s(&[1, id(ei, 0)]);
            body.extend_from_slice(&scale.to_ne_bytes());
            head.push(record(sys::PERF_RECORD_EVENT_UPDATE, 0, &body, &[]));
        }
        if pipe {
            let mut body = u64s(&[2, id(ei, 0)]);
            body.extend_from_slice(e.name.as_bytes());
            body.resize((body.len() + 1).next_multiple_of(8), 0);
            head.push(record(sys::PERF_RECORD_EVENT_UPDATE, 0, &body, &[]));
        }
    }
    let mut body = u64s(&[threads.len() as u64]);
    for &t in &threads {
        body.extend_from_slice(&(t as i64).to_ne_bytes());
        body.extend_from_slice(&[0u8; 16]);
    }
    head.push(record(sys::PERF_RECORD_THREAD_MAP, 0, &body, &[]));
    // CPU_MAP type 0 (a list of u16 CPUs; -1 for "any"), padded to 8 bytes.
    let mut body = Vec::new();
    body.extend_from_slice(&0u16.to_ne_bytes());
    body.extend_from_slice(&(cpus.len() as u16).to_ne_bytes());
    for &c in &cpus {
        body.extend_from_slice(&(c as i16 as u16).to_ne_bytes());
    }
    body.resize(body.len().next_multiple_of(8), 0);
    head.push(record(sys::PERF_RECORD_CPU_MAP, 0, &body, &[]));
    // STAT_CONFIG: (tag, value) pairs: aggr mode, interval, scale.
    let body = u64s(&[3, 0, aggr_mode(aggr), 1, interval_ms, 2, 1]);
    head.push(record(sys::PERF_RECORD_STAT_CONFIG, 0, &body, &[]));

    let mut counts = Vec::new();
    for (ei, per_place) in run.counts.iter().enumerate() {
        for (pi, c) in per_place.iter().enumerate() {
            let Some(c) = c else { continue };
            let p = &run.places[pi];
            let t = threads.iter().position(|&t| t == p.tid).unwrap_or(0) as u32;
            let mut body = u64s(&[id(ei, pi)]);
            body.extend_from_slice(&(p.cpu as u32).to_ne_bytes());
            body.extend_from_slice(&t.to_ne_bytes());
            body.extend_from_slice(&u64s(&[
                c.value,
                c.time_enabled.unwrap_or(0),
                c.time_running.unwrap_or(0),
            ]));
            counts.push(record(sys::PERF_RECORD_STAT, 0, &body, &[]));
        }
    }
    // STAT_ROUND: type FINAL (1) and the elapsed wall time in ns.
    let body = u64s(&[1, run.elapsed.as_nanos() as u64]);
    counts.push(record(sys::PERF_RECORD_STAT_ROUND, 0, &body, &[]));
    StatRecords {
        events,
        head,
        counts,
    }
}

/// What a stat perf.data holds: totals per event over every instance, and the elapsed
/// time of the final round.
#[derive(Debug)]
pub struct StatReport {
    /// One row per event of the file (totals over CPUs and threads), with metrics.
    pub rows: Vec<Row>,
    /// Elapsed wall time of the final STAT_ROUND, in ns.
    pub elapsed_ns: Option<u64>,
    /// The interval of STAT_CONFIG in ms (0: none).
    pub interval_ms: u64,
}

fn word(b: &[u8], i: usize) -> Option<u64> {
    b.get(i * 8..i * 8 + 8)
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
}

/// Read the stat records of `data` (written by `perf stat record` or
/// [`stat_records`]) into rows.
pub fn read_stat(data: &PerfData) -> Result<StatReport> {
    let n = data.attrs.len();
    let mut sums: Vec<Option<(u64, u64, u64)>> = vec![None; n];
    let (mut elapsed_ns, mut interval_ms, mut any) = (None, 0, false);
    let mut units: Vec<String> = vec![String::new(); n];
    data.walk(|_, type_, _, body| {
        match type_ {
            // EVENT_UPDATE type 0: the event's unit (`ns` for tool events).
            sys::PERF_RECORD_EVENT_UPDATE if word(body, 0) == Some(0) => {
                let id = word(body, 1).unwrap_or(0);
                if let Some(i) = data.attrs.iter().position(|a| a.ids.contains(&id)) {
                    let s = body.get(16..).unwrap_or_default();
                    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
                    units[i] = String::from_utf8_lossy(&s[..end]).into_owned();
                }
            }
            sys::PERF_RECORD_STAT => {
                any = true;
                let id = word(body, 0).unwrap_or(0);
                let (v, e, r) = (word(body, 2), word(body, 3), word(body, 4));
                if let (Some(i), Some(v), Some(e), Some(r)) =
                    (data.attrs.iter().position(|a| a.ids.contains(&id)), v, e, r)
                {
                    let s = sums[i].get_or_insert((0, 0, 0));
                    *s = (s.0 + v, s.1 + e, s.2 + r);
                }
            }
            sys::PERF_RECORD_STAT_CONFIG => {
                let nr = word(body, 0).unwrap_or(0) as usize;
                for k in 0..nr.min(16) {
                    if word(body, 1 + 2 * k) == Some(1) {
                        interval_ms = word(body, 2 + 2 * k).unwrap_or(0);
                    }
                }
            }
            // The final round (type 1) carries the elapsed time.
            sys::PERF_RECORD_STAT_ROUND if word(body, 0) == Some(1) => {
                elapsed_ns = word(body, 1);
            }
            _ => {}
        }
        Ok(())
    })
    .map_err(|e| Error::io("reading the stat records", std::io::Error::other(e)))?;
    if !any && data.attrs.is_empty() {
        return Err(Error::Usage(
            "no stat records in this file (write one with `perfkit stat record`)".into(),
        ));
    }
    let mut rows: Vec<Row> = data
        .attrs
        .iter()
        .zip(&sums)
        .zip(units)
        .map(|((a, s), unit)| {
            // A software dummy event named as a tool event is one (perf writes them so).
            let attr = match Tool::named(&a.name) {
                Some(t)
                    if a.attr.type_ == sys::PERF_TYPE_SOFTWARE
                        && a.attr.config == sys::PERF_COUNT_SW_DUMMY =>
                {
                    t.attr()
                }
                _ => a.attr,
            };
            let (value, enabled, running) = s.unwrap_or((0, 0, 0));
            let scaled = perfkit::scale(value, enabled, running).value().unwrap_or(0);
            Row {
                label: String::new(),
                label_kind: "",
                ncpus: None,
                event: a.name.clone(),
                attr,
                // perf prints `msec` for clocks from the attr, not from this unit.
                unit: if is_clock(&a.attr) {
                    String::new()
                } else {
                    unit
                },
                cgroup: None,
                state: match s {
                    Some(_) if running > 0 || enabled == 0 => State::Counted,
                    Some(_) => State::NotCounted,
                    None => State::NotSupported,
                },
                value: scaled as f64,
                running,
                enabled,
                runs: Vec::new(),
                metric: None,
                metric_decimals: None,
            }
        })
        .collect();
    compute_metrics(&mut rows, elapsed_ns.unwrap_or(0) as f64);
    Ok(StatReport {
        rows,
        elapsed_ns,
        interval_ms,
    })
}
