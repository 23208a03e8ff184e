//! Firefox Profiler processed-profile JSON, built with `fxprof-processed-profile`: one
//! process per pid, one thread per tid, samples with their stacks, and an interval marker
//! for every time a thread was switched out.

use crate::Profile;
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, FrameFlags, FrameInfo, MarkerTiming, Profile as Fx,
    ReferenceTimestamp, SamplingInterval, StaticSchemaMarker, StaticSchemaMarkerField,
    StringHandle, Timestamp, WeightType,
};
use std::collections::HashMap;
use std::io::{self, Write};

struct OffCpu {
    name: StringHandle,
}

impl StaticSchemaMarker for OffCpu {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "OffCpu";
    const DESCRIPTION: Option<&'static str> =
        Some("The thread was switched out (PERF_RECORD_SWITCH)");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[];

    fn name(&self, _: &mut Fx) -> StringHandle {
        self.name
    }
    fn category(&self, _: &mut Fx) -> CategoryHandle {
        CategoryHandle::OTHER
    }
    fn string_field_value(&self, _: u32) -> StringHandle {
        self.name
    }
    fn number_field_value(&self, _: u32) -> f64 {
        0.0
    }
}

/// Build the Firefox profile. `interval_ns` is the nominal sampling interval.
pub fn build(p: &Profile, product: &str, interval_ns: u64) -> Fx {
    let start = p.samples.iter().map(|s| s.time).min().unwrap_or(0);
    let mut fx = Fx::new(
        product,
        ReferenceTimestamp::from_millis_since_unix_epoch(0.0),
        SamplingInterval::from_nanos(interval_ns.max(1)),
    );
    let user = fx.add_category("User", CategoryColor::Yellow);
    let kernel = fx.add_category("Kernel", CategoryColor::Orange);
    let ts = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(start));
    let mut processes = HashMap::new();
    let mut threads = HashMap::new();
    for (ti, t) in p.threads.iter().enumerate() {
        let first = p
            .samples
            .iter()
            .find(|s| s.thread as usize == ti)
            .map_or(start, |s| s.time);
        let process = *processes.entry(t.pid).or_insert_with(|| {
            let name = p
                .threads
                .iter()
                .find(|m| m.pid == t.pid && m.tid == t.pid)
                .unwrap_or(t)
                .name()
                .to_string();
            fx.add_process(&name, t.pid as u32, ts(first))
        });
        let th = fx.add_thread(process, t.tid as u32, ts(first), t.tid == t.pid);
        fx.set_thread_name(th, t.name());
        threads.insert(ti as u32, th);
    }
    // Off-CPU time (`offcpu-time` samples, one per task and stack with the nanoseconds
    // slept) goes to a track of its own per thread, weighed in milliseconds.
    let weights = super::weight::Weights::of(p);
    let mut off_threads = HashMap::new();
    for s in &p.samples {
        let off = p
            .events
            .get(s.event as usize)
            .is_some_and(super::weight::is_off_cpu);
        if !off || off_threads.contains_key(&s.thread) {
            continue;
        }
        let t = &p.threads[s.thread as usize];
        let Some(&process) = processes.get(&t.pid) else {
            continue;
        };
        let th = fx.add_thread(process, t.tid as u32, ts(start), false);
        fx.set_thread_name(th, &format!("{} (off-CPU)", t.name()));
        fx.set_thread_samples_weight_type(th, WeightType::TracingMs);
        off_threads.insert(s.thread, th);
    }
    // Stacks are interned per thread: memoize (thread, stack id) -> handle.
    let mut stacks = HashMap::new();
    for s in &p.samples {
        let off = weights.in_nanos(s.event)
            && p.events
                .get(s.event as usize)
                .is_some_and(super::weight::is_off_cpu);
        let track = if off {
            off_threads.get(&s.thread)
        } else {
            threads.get(&s.thread)
        };
        let Some(&th) = track else {
            continue;
        };
        let handle = *stacks.entry((off, s.thread, s.stack)).or_insert_with(|| {
            let mut frames: Vec<u32> = p.stack_frames(s.stack).collect();
            frames.reverse();
            let infos: Vec<FrameInfo> = frames
                .iter()
                .map(|&f| {
                    let func = p.func_of(f);
                    let label = if func.name == "[unknown]" {
                        format!("{:#x} ({})", p.frames[f as usize].addr, func.dso)
                    } else {
                        func.name.clone()
                    };
                    FrameInfo {
                        frame: fxprof_processed_profile::Frame::Label(fx.intern_string(&label)),
                        category_pair: if func.kernel { kernel } else { user }.into(),
                        flags: FrameFlags::empty(),
                    }
                })
                .collect();
            fx.intern_stack_frames(th, infos.into_iter())
        });
        let weight = if off {
            (s.period.saturating_add(500_000) / 1_000_000).min(i32::MAX as u64) as i32
        } else {
            1
        };
        fx.add_sample(th, ts(s.time), handle, CpuDelta::ZERO, weight);
    }
    let off_cpu = fx.intern_string("Off CPU");
    let mut out_since: HashMap<u32, u64> = HashMap::new();
    for sw in &p.switches {
        let Some(&th) = threads.get(&sw.thread) else {
            continue;
        };
        if sw.out {
            out_since.insert(sw.thread, sw.time);
        } else if let Some(t0) = out_since.remove(&sw.thread) {
            fx.add_marker(
                th,
                MarkerTiming::Interval(ts(t0), ts(sw.time)),
                OffCpu { name: off_cpu },
            );
        }
    }
    fx
}

/// Write the Firefox Profiler JSON.
pub fn write(p: &Profile, product: &str, interval_ns: u64, w: impl Write) -> io::Result<()> {
    serde_json::to_writer(w, &build(p, product, interval_ns)).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

    #[test]
    fn processed_profile_has_threads_samples_and_markers() {
        let mut out = Vec::new();
        super::write(&sample_profile(), "perfkit", 250_000, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 2);
        assert_eq!(threads[0]["name"], "app");
        let samples = &threads[0]["samples"];
        assert_eq!(samples["length"], 80);
        let strings = threads[0]["stringArray"].as_array().unwrap();
        assert!(strings.iter().any(|s| s == "hot_loop"));
        assert_eq!(threads[1]["markers"]["length"], 1);
        assert!(v["meta"]["categories"].as_array().unwrap().len() >= 3);
    }
}
