//! speedscope's file format (<https://www.speedscope.app/file-format-schema.json>): one
//! sampled profile per thread, named `comm (tid)`, frames shared, weights in nanoseconds so
//! that speedscope's axis reads in time.
//!
//! A sample of a clock event (`cpu-clock`, `task-clock`) weighs its period (nanoseconds of
//! CPU). A sample of another event weighs the time since the thread's previous sample, at
//! most two sampling intervals (a thread that slept between two samples did not run that
//! long), and one interval for a thread's first sample. With context-switch records
//! (`record --switch-events`), each time a thread was switched out becomes a sample of its
//! last stack with an `[off-CPU]` frame on top, weighing the time it was out.
//!
//! A recording with off-CPU time (`record --off-cpu`: perf's `offcpu-time` event, one
//! sample per task and stack with the nanoseconds slept, [`super::weight`]) has that time
//! in each thread's profile instead: every such sample is its stack with the `[off-CPU]`
//! frame on top, weighing its nanoseconds. The switch records `record --off-cpu` also
//! writes are then not counted a second time.
//!
//! The document is written as it is made ([`write_with_interval`]): per sample only its
//! time, stack id and weight are kept (each thread's samples are written together, in
//! time order, so they wait), and each stack is spelled out as it is written, not held
//! as a JSON value per sample and frame (928 MB for a million samples before).

use crate::{Profile, StackId};
use serde_json::json;
use std::collections::HashMap;
use std::io::{self, Write};

/// The name of the frame that stands for the time a thread was switched out.
pub const OFF_CPU: &str = "[off-CPU]";

/// One sample of a thread's profile: when, its stack (root first when written), with the
/// off-CPU frame on top or not, and its weight in nanoseconds.
#[derive(Clone, Copy)]
struct Entry {
    time: u64,
    stack: Option<StackId>,
    off_cpu: bool,
    weight: u64,
}

/// Each thread's samples in the order they are written (by time; ties in the order they
/// were made: samples, then off-CPU intervals).
fn entries(p: &Profile, interval_ns: u64) -> Vec<Vec<Entry>> {
    let interval = interval_ns.max(1);
    let clock: Vec<bool> = p
        .events
        .iter()
        .map(|e| super::pprof::is_clock(&e.name))
        .collect();
    let off_cpu_event: Vec<bool> = p.events.iter().map(super::weight::is_off_cpu).collect();
    let is = |v: &[bool], event: u32| v.get(event as usize).copied().unwrap_or(false);
    let has_off_cpu_event = p.samples.iter().any(|s| is(&off_cpu_event, s.event));
    let mut per_thread: Vec<Vec<Entry>> = vec![Vec::new(); p.threads.len()];
    let mut last_time: HashMap<u32, u64> = HashMap::new();
    for s in &p.samples {
        let off_cpu = is(&off_cpu_event, s.event);
        let weight = if off_cpu || is(&clock, s.event) {
            s.period
        } else {
            match last_time.insert(s.thread, s.time) {
                Some(t0) => s.time.saturating_sub(t0).clamp(1, 2 * interval),
                None => interval,
            }
        };
        per_thread[s.thread as usize].push(Entry {
            time: s.time,
            stack: s.stack,
            off_cpu,
            weight,
        });
    }
    // Off-CPU intervals: the stack of the thread's sample just before it was switched out.
    let mut out_since: HashMap<u32, u64> = HashMap::new();
    let mut sample_idx: HashMap<u32, usize> = HashMap::new();
    let by_thread: Vec<Vec<(u64, Option<StackId>)>> = if has_off_cpu_event {
        Vec::new()
    } else {
        let mut v = vec![Vec::new(); p.threads.len()];
        for s in p.samples.iter().filter(|s| !is(&off_cpu_event, s.event)) {
            v[s.thread as usize].push((s.time, s.stack));
        }
        v
    };
    let mut off: Vec<(u32, Entry)> = Vec::new();
    let switches = if has_off_cpu_event {
        &[][..]
    } else {
        &p.switches[..]
    };
    for sw in switches {
        if sw.out {
            out_since.insert(sw.thread, sw.time);
        } else if let Some(t0) = out_since.remove(&sw.thread) {
            let samples = &by_thread[sw.thread as usize];
            let i = sample_idx.entry(sw.thread).or_default();
            while *i < samples.len() && samples[*i].0 <= t0 {
                *i += 1;
            }
            let stack = i.checked_sub(1).and_then(|j| samples[j].1);
            let weight = sw.time.saturating_sub(t0);
            off.push((
                sw.thread,
                Entry {
                    time: t0,
                    stack,
                    off_cpu: true,
                    weight,
                },
            ));
        }
    }
    drop(by_thread);
    for (thread, e) in off {
        if e.weight > 0 {
            per_thread[thread as usize].push(e);
        }
    }
    for events in &mut per_thread {
        events.sort_by_key(|e| e.time);
    }
    per_thread
}

/// The frames of `e`'s stack, root first, into `out` (`off_cpu`: the off-CPU frame's index).
fn stack_of(p: &Profile, e: &Entry, off_cpu: usize, out: &mut Vec<usize>) {
    out.clear();
    out.extend(
        p.stack_frames(e.stack)
            .map(|f| p.frames[f as usize].func as usize),
    );
    out.reverse();
    if e.off_cpu {
        out.push(off_cpu);
    }
}

/// The index among the written profiles of the heaviest thread's (the first of the
/// heaviest), and each thread's total weight.
fn heaviest(per_thread: &[Vec<Entry>]) -> (usize, Vec<u64>) {
    let totals: Vec<u64> = per_thread
        .iter()
        .map(|t| t.iter().map(|e| e.weight).sum())
        .collect();
    let mut best = (0, 0u64);
    for (i, &total) in per_thread
        .iter()
        .zip(&totals)
        .filter(|(t, _)| !t.is_empty())
        .map(|(_, t)| t)
        .enumerate()
    {
        if total > best.1 {
            best = (i, total);
        }
    }
    (best.0, totals)
}

/// The speedscope document for `p`, with the nominal sampling interval `interval_ns` (for
/// events whose period is not time), as a JSON value: what [`write_with_interval`]
/// writes (a value per frame of each sample: for small profiles and tests).
pub fn document_with_interval(p: &Profile, name: &str, interval_ns: u64) -> serde_json::Value {
    let mut frames: Vec<serde_json::Value> = p
        .funcs
        .iter()
        .map(|f| {
            if f.dso.is_empty() {
                json!({ "name": f.name })
            } else {
                json!({ "name": f.name, "file": f.dso })
            }
        })
        .collect();
    let off_cpu = frames.len();
    frames.push(json!({ "name": OFF_CPU }));
    let per_thread = entries(p, interval_ns);
    let (active, totals) = heaviest(&per_thread);
    let mut profiles = Vec::new();
    let mut stack = Vec::new();
    for (ti, events) in per_thread.into_iter().enumerate() {
        if events.is_empty() {
            continue;
        }
        let t = &p.threads[ti];
        let (samples, weights): (Vec<Vec<usize>>, Vec<u64>) = events
            .iter()
            .map(|e| {
                stack_of(p, e, off_cpu, &mut stack);
                (stack.clone(), e.weight)
            })
            .unzip();
        profiles.push(json!({
            "type": "sampled",
            "name": format!("{} ({})", t.name(), t.tid),
            "unit": "nanoseconds",
            "startValue": 0,
            "endValue": totals[ti],
            "samples": samples,
            "weights": weights,
        }));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": active,
        "exporter": concat!("perfkit ", env!("CARGO_PKG_VERSION")),
    })
}

/// The speedscope document for `p`, with a 1 ms nominal interval for events whose period is
/// not time ([`document_with_interval`]).
pub fn document(p: &Profile, name: &str) -> serde_json::Value {
    document_with_interval(p, name, 1_000_000)
}

/// Write the speedscope JSON ([`document`]).
pub fn write(p: &Profile, name: &str, w: impl Write) -> io::Result<()> {
    write_with_interval(p, name, 1_000_000, w)
}

/// A JSON string as serde_json writes it.
fn string(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(w, s).map_err(io::Error::other)
}

/// Write the speedscope JSON with the recording's nominal sampling interval: the bytes of
/// [`document_with_interval`] (its keys in serde_json's sorted order, compact), written
/// as they are made.
pub fn write_with_interval(
    p: &Profile,
    name: &str,
    interval_ns: u64,
    w: impl Write,
) -> io::Result<()> {
    let mut w = io::BufWriter::with_capacity(1 << 16, w);
    let per_thread = entries(p, interval_ns);
    let (active, totals) = heaviest(&per_thread);
    w.write_all(b"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"")?;
    write!(w, ",\"activeProfileIndex\":{active},\"exporter\":")?;
    string(&mut w, concat!("perfkit ", env!("CARGO_PKG_VERSION")))?;
    w.write_all(b",\"name\":")?;
    string(&mut w, name)?;
    w.write_all(b",\"profiles\":[")?;
    let off_cpu = p.funcs.len();
    let mut stack = Vec::new();
    let mut first = true;
    for (ti, events) in per_thread.iter().enumerate() {
        if events.is_empty() {
            continue;
        }
        if !first {
            w.write_all(b",")?;
        }
        first = false;
        let t = &p.threads[ti];
        write!(w, "{{\"endValue\":{},\"name\":", totals[ti])?;
        string(&mut w, &format!("{} ({})", t.name(), t.tid))?;
        w.write_all(b",\"samples\":[")?;
        for (i, e) in events.iter().enumerate() {
            stack_of(p, e, off_cpu, &mut stack);
            w.write_all(if i == 0 { b"[" } else { b",[" })?;
            for (j, f) in stack.iter().enumerate() {
                if j > 0 {
                    w.write_all(b",")?;
                }
                write!(w, "{f}")?;
            }
            w.write_all(b"]")?;
        }
        w.write_all(
            b"],\"startValue\":0,\"type\":\"sampled\",\"unit\":\"nanoseconds\",\"weights\":[",
        )?;
        for (i, e) in events.iter().enumerate() {
            if i > 0 {
                w.write_all(b",")?;
            }
            write!(w, "{}", e.weight)?;
        }
        w.write_all(b"]}")?;
    }
    w.write_all(b"],\"shared\":{\"frames\":[")?;
    for (i, f) in p.funcs.iter().enumerate() {
        w.write_all(if i == 0 { b"{" } else { b",{" })?;
        if !f.dso.is_empty() {
            w.write_all(b"\"file\":")?;
            string(&mut w, &f.dso)?;
            w.write_all(b",")?;
        }
        w.write_all(b"\"name\":")?;
        string(&mut w, &f.name)?;
        w.write_all(b"}")?;
    }
    if !p.funcs.is_empty() {
        w.write_all(b",")?;
    }
    w.write_all(b"{\"name\":")?;
    string(&mut w, OFF_CPU)?;
    w.write_all(b"}]}}")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

    /// The streamed writer writes the bytes of the document value, on profiles with
    /// switches, an off-CPU event, and names that need escaping.
    #[test]
    fn written_bytes_are_the_documents() {
        let mut odd = sample_profile();
        odd.funcs[0].name = "quote\"back\\slash\u{1}é".into();
        odd.funcs[1].dso = String::new();
        for (p, interval) in [
            (sample_profile(), 1_000_000),
            (crate::model::testing::off_cpu_profile(), 250_000),
            (odd, 7),
        ] {
            let mut out = Vec::new();
            super::write_with_interval(&p, "na\"me", interval, &mut out).unwrap();
            let value = super::document_with_interval(&p, "na\"me", interval);
            assert_eq!(
                String::from_utf8(out).unwrap(),
                serde_json::to_string(&value).unwrap()
            );
        }
        let mut empty = sample_profile();
        empty.samples.clear();
        empty.switches.clear();
        let mut out = Vec::new();
        super::write(&empty, "e", &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            serde_json::to_string(&super::document(&empty, "e")).unwrap()
        );
    }

    #[test]
    fn document_follows_the_schema() {
        let p = sample_profile();
        let d = super::document(&p, "t");
        assert_eq!(
            d["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        let frames = d["shared"]["frames"].as_array().unwrap();
        let profiles = d["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        let main = &profiles[0];
        assert_eq!(main["type"], "sampled");
        let samples = main["samples"].as_array().unwrap();
        assert_eq!(samples.len(), main["weights"].as_array().unwrap().len());
        assert_eq!(samples.len(), 80);
        // Stacks go from the root to the leaf.
        let first: Vec<&str> = samples[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(first, ["main", "work", "hot_loop"]);
        // Named `comm (tid)`, weighed in nanoseconds: 80 cpu-clock samples of 250 us.
        assert_eq!(main["name"], "app (10)");
        assert_eq!(main["unit"], "nanoseconds");
        assert_eq!(main["weights"][0], 250_000);
        assert_eq!(main["endValue"], 80 * 250_000);
        assert_eq!(d["activeProfileIndex"], 0);
        // The worker was switched out from 5 ms to 6 ms: one off-CPU sample of 1 ms on top
        // of its last stack.
        let worker = &profiles[1];
        assert_eq!(worker["name"], "app-worker (11)");
        let weights = worker["weights"].as_array().unwrap();
        assert_eq!(weights.len(), 21);
        let names = |s: &serde_json::Value| -> Vec<String> {
            s.as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    frames[i.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        let off: Vec<usize> = (0..weights.len())
            .filter(|&i| names(&worker["samples"][i]).last().unwrap() == super::OFF_CPU)
            .collect();
        assert_eq!(off.len(), 1);
        assert_eq!(weights[off[0]], 1_000_000);
        assert_eq!(
            names(&worker["samples"][off[0]]),
            ["main", "idle", super::OFF_CPU]
        );
        assert_eq!(worker["endValue"], 20 * 250_000 + 1_000_000);
    }

    #[test]
    fn off_cpu_event_samples_weigh_their_nanoseconds() {
        let p = crate::model::testing::off_cpu_profile();
        let d = super::document(&p, "t");
        let frames = d["shared"]["frames"].as_array().unwrap();
        let profiles = d["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2, "a profile per thread, not per event");
        assert_eq!(profiles[0]["endValue"], 80 * 250_000);
        let worker = &profiles[1];
        assert_eq!(worker["name"], "app-worker (11)");
        assert_eq!(worker["unit"], "nanoseconds");
        // 20 cpu-clock samples and the offcpu-time sample; the switch record's 1 ms is not
        // counted again.
        let weights = worker["weights"].as_array().unwrap();
        assert_eq!(weights.len(), 21);
        assert_eq!(worker["endValue"], 20 * 250_000 + 5_000_000);
        let last = worker["samples"][20].as_array().unwrap();
        let names: Vec<&str> = last
            .iter()
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(names, ["main", "idle", super::OFF_CPU]);
        assert_eq!(weights[20], 5_000_000);
    }
}
