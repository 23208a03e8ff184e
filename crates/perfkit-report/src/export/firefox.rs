//! Firefox Profiler processed-profile JSON, built with `fxprof-processed-profile`: one
//! process per pid, one track per thread named `comm (tid)`, samples with their stacks and
//! (for clock events) the CPU time each stands for, and markers: an interval for every
//! time a thread was switched out, lost records, throttling. Off-CPU time
//! (`record --off-cpu`, perf's `offcpu-time` event: one sample per task and stack with the
//! nanoseconds slept, [`super::weight`]) goes to a track of its own per thread,
//! `comm (tid) (off-CPU)`, whose samples weigh their time off the CPU in milliseconds.
//!
//! Frames in a mapped file are given as addresses relative to that library, which carries
//! its build id (`codeId`, and the `breakpadId` derived from it): the profiler shows the
//! names perfkit found (a symbol table per library, built from the profile's functions)
//! and can symbolize the addresses perfkit could not. Frames elsewhere (JIT code, inlined
//! functions) are labels.

use crate::{Image, MarkKind, Profile};
use fxprof_processed_profile::{
    CategoryColor, CategoryHandle, CpuDelta, Frame, FrameFlags, FrameInfo, LibraryHandle,
    LibraryInfo, MarkerFieldFlags, MarkerFieldFormat, MarkerTiming, Profile as Fx,
    ReferenceTimestamp, SamplingInterval, StaticSchemaMarker, StaticSchemaMarkerField,
    StringHandle, Symbol, SymbolTable, Timestamp, WeightType, debugid::DebugId,
};
use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

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

/// Lost records (`PERF_RECORD_LOST`) or a throttled stretch of the recording.
struct DataGap {
    name: StringHandle,
    count: u64,
}

impl StaticSchemaMarker for DataGap {
    const UNIQUE_MARKER_TYPE_NAME: &'static str = "PerfDataGap";
    const DESCRIPTION: Option<&'static str> =
        Some("Samples missing here: records lost from a full ring, or the event throttled");
    const CHART_LABEL: Option<&'static str> = Some("{marker.name} {marker.data.count}");
    const TABLE_LABEL: Option<&'static str> = Some("{marker.name} {marker.data.count}");
    const FIELDS: &'static [StaticSchemaMarkerField] = &[StaticSchemaMarkerField {
        key: "count",
        label: "Records lost",
        format: MarkerFieldFormat::Integer,
        flags: MarkerFieldFlags::empty(),
    }];

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
        self.count as f64
    }
}

/// The profiler's debug id of a GNU build id: its first 16 bytes as a GUID, age 0 (the
/// `breakpadId` symbol servers know Linux files by).
pub fn debug_id(build_id: &[u8]) -> Option<DebugId> {
    let mut guid = [0u8; 16];
    let n = build_id.len().min(16);
    guid[..n].copy_from_slice(&build_id[..n]);
    DebugId::from_guid_age(&guid, 0).ok()
}

/// The libraries of the profile's images: one per file (build id and path), with a symbol
/// table of the functions perfkit named in it; the address of each frame relative to its
/// library.
struct Libs {
    /// Image -> (library, relative address of the image's start).
    of_image: HashMap<u32, (LibraryHandle, u64)>,
}

impl Libs {
    fn new(p: &Profile, fx: &mut Fx) -> Libs {
        // Symbols per library key (path, build id): relative start -> (name, size).
        type Key = (String, Option<Vec<u8>>);
        let mut symbols: HashMap<Key, HashMap<u64, (String, u64)>> = HashMap::new();
        let rel = |im: &Image, addr: u64| -> u64 {
            let base = if im.is_kernel() { 0 } else { im.pgoff };
            addr.wrapping_sub(im.start).wrapping_add(base)
        };
        for (&frame, &image) in &p.frame_images {
            let fr = &p.frames[frame as usize];
            let im = &p.images[image as usize];
            let func = &p.funcs[fr.func as usize];
            let (Some(off), false) = (fr.sym_offset, func.name.starts_with('[')) else {
                continue;
            };
            let at = rel(im, fr.addr);
            let start = at.wrapping_sub(off);
            let e = symbols
                .entry((im.path.clone(), im.build_id.clone()))
                .or_default()
                .entry(start)
                .or_insert_with(|| (func.name.clone(), 1));
            e.1 = e.1.max(off + 1);
        }
        let mut libs: HashMap<Key, LibraryHandle> = HashMap::new();
        let mut of_image = HashMap::new();
        for (i, im) in p.images.iter().enumerate() {
            let key = (im.path.clone(), im.build_id.clone());
            let lib = *libs.entry(key.clone()).or_insert_with(|| {
                let table = symbols.remove(&key).unwrap_or_default();
                let table: Vec<Symbol> = table
                    .into_iter()
                    .filter(|(a, _)| *a <= u64::from(u32::MAX))
                    .map(|(address, (name, size))| Symbol {
                        address: address as u32,
                        size: Some(size.min(u64::from(u32::MAX)) as u32),
                        name,
                    })
                    .collect();
                fx.add_lib(LibraryInfo {
                    name: im.name().to_string(),
                    debug_name: im.name().to_string(),
                    path: im.path.clone(),
                    debug_path: im.path.clone(),
                    debug_id: im
                        .build_id
                        .as_deref()
                        .and_then(debug_id)
                        .unwrap_or_default(),
                    code_id: im.build_id_hex(),
                    arch: Some(std::env::consts::ARCH.to_string()),
                    symbol_table: Some(Arc::new(SymbolTable::new(table))),
                })
            });
            of_image.insert(i as u32, (lib, rel(im, im.start)));
        }
        Libs { of_image }
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
    let jit = fx.add_category("JIT", CategoryColor::Green);
    let ts = |t: u64| Timestamp::from_nanos_since_reference(t.saturating_sub(start));
    let clock: Vec<bool> = p
        .events
        .iter()
        .map(|e| super::pprof::is_clock(&e.name))
        .collect();
    let off_cpu_event: Vec<bool> = p.events.iter().map(super::weight::is_off_cpu).collect();
    let is = |v: &[bool], event: u32| v.get(event as usize).copied().unwrap_or(false);
    let libs = Libs::new(p, &mut fx);
    let mut processes = HashMap::new();
    let mut threads = HashMap::new();
    let mut weight: HashMap<u32, usize> = HashMap::new();
    for s in p.samples.iter().filter(|s| !is(&off_cpu_event, s.event)) {
        *weight.entry(s.thread).or_default() += 1;
    }
    for (ti, t) in p.threads.iter().enumerate() {
        let first = p
            .samples
            .iter()
            .find(|s| s.thread as usize == ti)
            .map_or(start, |s| s.time);
        let process = *processes.entry(t.pid).or_insert_with(|| {
            // The main thread's track takes the process's name: `comm (pid)`, its tid.
            let name = p
                .threads
                .iter()
                .find(|m| m.pid == t.pid && m.tid == t.pid)
                .unwrap_or(t)
                .name();
            fx.add_process(&format!("{name} ({})", t.pid), t.pid as u32, ts(first))
        });
        let th = fx.add_thread(process, t.tid as u32, ts(first), t.tid == t.pid);
        fx.set_thread_name(th, &format!("{} ({})", t.name(), t.tid));
        threads.insert(ti as u32, th);
    }
    // A track per thread with off-CPU time, in the thread's process.
    let mut off_threads = HashMap::new();
    for s in p.samples.iter().filter(|s| is(&off_cpu_event, s.event)) {
        if off_threads.contains_key(&s.thread) {
            continue;
        }
        let t = &p.threads[s.thread as usize];
        let Some(&process) = processes.get(&t.pid) else {
            continue;
        };
        let th = fx.add_thread(process, t.tid as u32, ts(start), false);
        fx.set_thread_name(th, &format!("{} ({}) (off-CPU)", t.name(), t.tid));
        fx.set_thread_samples_weight_type(th, WeightType::TracingMs);
        off_threads.insert(s.thread, th);
    }
    for (i, im) in p.images.iter().enumerate() {
        let Some(&(lib, rel_start)) = libs.of_image.get(&(i as u32)) else {
            continue;
        };
        let Ok(rel_start) = u32::try_from(rel_start) else {
            continue;
        };
        if im.is_kernel() {
            fx.add_kernel_lib_mapping(lib, im.start, im.end, rel_start);
        } else if let Some(&process) = processes.get(&im.pid) {
            fx.add_lib_mapping(process, lib, im.start, im.end, rel_start);
        }
    }
    // The heaviest thread first among the visible ones.
    if let Some((&t, _)) = weight
        .iter()
        .max_by_key(|&(t, n)| (*n, std::cmp::Reverse(*t)))
    {
        fx.add_initial_selected_thread(threads[&t]);
    }
    // Stacks are interned per thread: memoize (thread, stack id) -> handle.
    let mut stacks = HashMap::new();
    for s in &p.samples {
        let off = is(&off_cpu_event, s.event);
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
                    let fr = &p.frames[f as usize];
                    let category = if func.kernel {
                        kernel
                    } else if super::folded::is_jit(func) {
                        jit
                    } else {
                        user
                    };
                    let in_lib = p
                        .frame_images
                        .get(&f)
                        .and_then(|i| Some((i, libs.of_image.get(i)?)))
                        .filter(|_| !fr.inlined);
                    let frame = match in_lib {
                        Some((&i, &(lib, rel_start))) => {
                            let im = &p.images[i as usize];
                            let rel = fr.addr.wrapping_sub(im.start).wrapping_add(rel_start);
                            match u32::try_from(rel) {
                                Ok(rel) => Frame::RelativeAddressFromInstructionPointer(lib, rel),
                                Err(_) => Frame::Label(fx.intern_string(&func.name)),
                            }
                        }
                        None => {
                            let label = if func.name == "[unknown]" {
                                format!("{:#x} ({})", fr.addr, func.dso)
                            } else {
                                func.name.clone()
                            };
                            Frame::Label(fx.intern_string(&label))
                        }
                    };
                    FrameInfo {
                        frame,
                        category_pair: category.into(),
                        flags: FrameFlags::empty(),
                    }
                })
                .collect();
            fx.intern_stack_frames(th, infos.into_iter())
        });
        let (cpu, weight) = if off {
            // Milliseconds off the CPU, rounded.
            let ms = s.period.saturating_add(500_000) / 1_000_000;
            (CpuDelta::ZERO, ms.min(i32::MAX as u64) as i32)
        } else if is(&clock, s.event) {
            (CpuDelta::from_nanos(s.period), 1)
        } else {
            (CpuDelta::ZERO, 1)
        };
        fx.add_sample(th, ts(s.time), handle, cpu, weight);
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
    // Lost records and throttling concern the recording, not one thread: they go on the
    // thread of the mark when known, else on the heaviest thread.
    let heaviest = weight
        .iter()
        .max_by_key(|&(t, n)| (*n, std::cmp::Reverse(*t)))
        .map(|(t, _)| threads[t]);
    let lost = fx.intern_string("Lost records");
    let throttled = fx.intern_string("Throttled");
    let mut throttle_since = None;
    for m in &p.marks {
        let Some(th) = m.thread.and_then(|t| threads.get(&t).copied()).or(heaviest) else {
            continue;
        };
        match m.kind {
            MarkKind::Lost(count) => {
                fx.add_marker(
                    th,
                    MarkerTiming::Instant(ts(m.time)),
                    DataGap { name: lost, count },
                );
            }
            MarkKind::Throttle => throttle_since = Some(m.time),
            MarkKind::Unthrottle => {
                let t0 = throttle_since.take().unwrap_or(m.time);
                fx.add_marker(
                    th,
                    MarkerTiming::Interval(ts(t0), ts(m.time)),
                    DataGap {
                        name: throttled,
                        count: 0,
                    },
                );
            }
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
        assert_eq!(threads[0]["name"], "app (10)");
        assert_eq!(threads[1]["name"], "app-worker (11)");
        let samples = &threads[0]["samples"];
        assert_eq!(samples["length"], 80);
        let strings = threads[0]["stringArray"].as_array().unwrap();
        assert!(strings.iter().any(|s| s == "hot_loop"));
        assert_eq!(threads[1]["markers"]["length"], 1);
        assert!(v["meta"]["categories"].as_array().unwrap().len() >= 3);
    }

    #[test]
    fn libraries_carry_build_ids_and_symbol_tables_and_gaps_are_marked() {
        let mut p = sample_profile();
        p.images.push(crate::Image {
            pid: 10,
            start: 0,
            end: 0x10_0000,
            pgoff: 0,
            path: "/usr/bin/app".into(),
            build_id: Some((1..=20).collect()),
            main: true,
        });
        for f in 0..p.frames.len() as u32 {
            if !p.func_of(f).kernel {
                p.frame_images.insert(f, 0);
            }
        }
        p.marks.push(crate::Mark {
            time: 2_000_000,
            thread: None,
            kind: crate::MarkKind::Lost(7),
        });
        let mut out = Vec::new();
        super::write(&p, "perfkit", 250_000, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let lib = &v["libs"][0];
        assert_eq!(lib["name"], "app");
        assert_eq!(lib["codeId"], "0102030405060708090a0b0c0d0e0f1011121314");
        // The GUID of the first 16 bytes, little-endian fields, age 0.
        assert_eq!(lib["breakpadId"], "0403020106050807090A0B0C0D0E0F100");
        let t = &v["threads"][0];
        // The frames are addresses in the library, named from its symbol table.
        let strings = t["stringArray"].as_array().unwrap();
        assert!(strings.iter().any(|s| s == "hot_loop"));
        let addrs = t["frameTable"]["address"].as_array().unwrap();
        assert!(addrs.iter().any(|a| a == 0x3004));
        // CPU time per sample: cpu-clock periods, in microseconds.
        assert_eq!(t["samples"]["threadCPUDelta"][1], 250);
        // The lost records are a marker on the busiest thread.
        assert_eq!(t["markers"]["length"], 1);
        let data = &t["markers"]["data"][0];
        assert_eq!(data["count"].as_f64(), Some(7.0));
    }

    #[test]
    fn off_cpu_time_is_a_track_weighed_in_milliseconds() {
        let p = crate::model::testing::off_cpu_profile();
        let mut out = Vec::new();
        super::write(&p, "perfkit", 250_000, &mut out).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        let threads = v["threads"].as_array().unwrap();
        assert_eq!(threads.len(), 3);
        let named = |n: &str| threads.iter().find(|t| t["name"] == n).unwrap();
        // The on-CPU tracks keep only their cpu-clock samples.
        assert_eq!(named("app (10)")["samples"]["length"], 80);
        assert_eq!(named("app-worker (11)")["samples"]["length"], 20);
        let off = named("app-worker (11) (off-CPU)");
        assert_eq!(off["samples"]["weightType"], "tracing-ms");
        assert_eq!(off["samples"]["weight"], serde_json::json!([5]));
        let strings = off["stringArray"].as_array().unwrap();
        assert!(strings.iter().any(|s| s == "idle"), "{strings:?}");
    }
}
