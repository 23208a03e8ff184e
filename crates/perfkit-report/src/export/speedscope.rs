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

use crate::Profile;
use serde_json::json;
use std::collections::HashMap;
use std::io::{self, Write};

/// The name of the frame that stands for the time a thread was switched out.
pub const OFF_CPU: &str = "[off-CPU]";

/// The speedscope document for `p`, with the nominal sampling interval `interval_ns` (for
/// events whose period is not time).
pub fn document_with_interval(p: &Profile, name: &str, interval_ns: u64) -> serde_json::Value {
    let interval = interval_ns.max(1);
    let clock: Vec<bool> = p
        .events
        .iter()
        .map(|e| super::pprof::is_clock(&e.name))
        .collect();
    let off_cpu_event: Vec<bool> = p.events.iter().map(super::weight::is_off_cpu).collect();
    let is = |v: &[bool], event: u32| v.get(event as usize).copied().unwrap_or(false);
    let has_off_cpu_event = p.samples.iter().any(|s| is(&off_cpu_event, s.event));
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
    // Per thread: (time, root-first stack, weight in ns).
    let mut per_thread: Vec<Vec<(u64, Vec<usize>, u64)>> = vec![Vec::new(); p.threads.len()];
    let mut last_time: HashMap<u32, u64> = HashMap::new();
    for s in &p.samples {
        let mut stack: Vec<usize> = p
            .stack_frames(s.stack)
            .map(|f| p.frames[f as usize].func as usize)
            .collect();
        stack.reverse();
        let weight = if is(&off_cpu_event, s.event) {
            stack.push(off_cpu);
            s.period
        } else if is(&clock, s.event) {
            s.period
        } else {
            match last_time.insert(s.thread, s.time) {
                Some(t0) => s.time.saturating_sub(t0).clamp(1, 2 * interval),
                None => interval,
            }
        };
        per_thread[s.thread as usize].push((s.time, stack, weight));
    }
    // Off-CPU intervals: the stack of the thread's sample just before it was switched out.
    let mut out_since: HashMap<u32, u64> = HashMap::new();
    let mut sample_idx: HashMap<u32, usize> = HashMap::new();
    let by_thread: Vec<Vec<(u64, Option<u32>)>> = {
        let mut v = vec![Vec::new(); p.threads.len()];
        for s in p.samples.iter().filter(|s| !is(&off_cpu_event, s.event)) {
            v[s.thread as usize].push((s.time, s.stack));
        }
        v
    };
    let mut off: Vec<(u32, u64, Vec<usize>, u64)> = Vec::new();
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
            let mut stack: Vec<usize> = match i.checked_sub(1) {
                Some(j) => p
                    .stack_frames(samples[j].1)
                    .map(|f| p.frames[f as usize].func as usize)
                    .collect(),
                None => Vec::new(),
            };
            stack.reverse();
            stack.push(off_cpu);
            off.push((sw.thread, t0, stack, sw.time.saturating_sub(t0)));
        }
    }
    for (thread, t0, stack, weight) in off {
        if weight > 0 {
            per_thread[thread as usize].push((t0, stack, weight));
        }
    }
    let mut profiles = Vec::new();
    let mut heaviest = (0, 0u64);
    for (ti, mut events) in per_thread.into_iter().enumerate() {
        if events.is_empty() {
            continue;
        }
        events.sort_by_key(|e| e.0);
        let total: u64 = events.iter().map(|e| e.2).sum();
        if total > heaviest.1 {
            heaviest = (profiles.len(), total);
        }
        let t = &p.threads[ti];
        let (samples, weights): (Vec<Vec<usize>>, Vec<u64>) =
            events.into_iter().map(|(_, s, w)| (s, w)).unzip();
        profiles.push(json!({
            "type": "sampled",
            "name": format!("{} ({})", t.name(), t.tid),
            "unit": "nanoseconds",
            "startValue": 0,
            "endValue": total,
            "samples": samples,
            "weights": weights,
        }));
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": heaviest.0,
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
    serde_json::to_writer(w, &document(p, name)).map_err(io::Error::other)
}

/// Write the speedscope JSON with the recording's nominal sampling interval
/// ([`document_with_interval`]).
pub fn write_with_interval(
    p: &Profile,
    name: &str,
    interval_ns: u64,
    w: impl Write,
) -> io::Result<()> {
    serde_json::to_writer(w, &document_with_interval(p, name, interval_ns))
        .map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

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
