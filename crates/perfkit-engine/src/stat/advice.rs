//! Group advice: before anything opens, which counters each event needs on this machine's
//! core PMU, whether each `{...}` group can ever be scheduled (and a split when it cannot),
//! and whether the whole list fits at once or will be multiplexed (`perfkit stat --check`).
//!
//! What the PMU has comes from, in order: libpfm4's tables when `LIBPFM_FORCE_PMU` names a
//! PMU (counters per PMU model: `core` is 2 generic + 3 fixed); an arm64 PMUv3 in sysfs,
//! whose generic counters are counted by growing a group until the kernel refuses it (plus
//! the dedicated cycle counter); libpfm4's detected PMU otherwise. Which event needs which
//! counter is the kernel's constraint knowledge, written out here: on Intel, instructions
//! may use fixed counter 0, cycles fixed counter 1, ref-cycles (the pseudo-code 0x0300)
//! only fixed counter 2, bus-cycles (0x013c) only generic counters, since on fixed counter
//! 2 that code counts reference cycles (Eranian's 2010 constraint patch); bits above 31 of
//! a raw config are not event-select bits. On arm64, cycles may use the cycle counter.

use crate::EventSpec;
use perfkit::sys;
use std::fmt::Write;

/// The counters of a PMU and where that knowledge came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmuModel {
    /// The PMU's name (`core`, `armv8_pmuv3_0`).
    pub name: String,
    /// Where the numbers came from.
    pub source: String,
    /// Generic counters.
    pub generic: u32,
    /// Fixed counters: what each counts.
    pub fixed: Vec<String>,
    kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Intel,
    Arm,
    Other,
}

/// The Intel fixed counters, by index.
const INTEL_FIXED: [&str; 4] = [
    "instructions (INST_RETIRED.ANY)",
    "cycles (CPU_CLK_UNHALTED.CORE)",
    "ref-cycles (CPU_CLK_UNHALTED.REF)",
    "slots (TOPDOWN.SLOTS)",
];

impl PmuModel {
    /// The model of this machine's core PMU (see the module docs), or `None` where there
    /// is no hardware PMU and no libpfm4 model.
    pub fn detect() -> Option<PmuModel> {
        let forced = std::env::var("LIBPFM_FORCE_PMU")
            .ok()
            .filter(|v| !v.is_empty());
        if forced.is_none()
            && let Some(m) = arm_probe()
        {
            return Some(m);
        }
        let pfm = perfkit_events::pfm::Pfm::load(None).ok()?;
        let p = pfm.pmus().into_iter().find(|p| p.generic > 0)?;
        Some(PmuModel::from_counts(
            &p.name,
            &p.desc,
            p.generic,
            p.fixed,
            match &forced {
                Some(f) => format!("libpfm4 tables, LIBPFM_FORCE_PMU={f}"),
                None if !std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() => {
                    "libpfm4 tables, detected; this kernel exposes no core PMU, so hardware \
                     events will not count here"
                        .into()
                }
                None => "libpfm4 tables, detected".into(),
            },
        ))
    }

    /// A model from counter numbers (`desc` starting with `Intel` gives Intel's fixed
    /// counters and constraints).
    pub fn from_counts(
        name: &str,
        desc: &str,
        generic: u32,
        fixed: u32,
        source: String,
    ) -> PmuModel {
        let intel = desc.starts_with("Intel");
        PmuModel {
            name: name.to_string(),
            source,
            generic,
            fixed: if intel {
                INTEL_FIXED
                    .iter()
                    .take(fixed as usize)
                    .map(|s| s.to_string())
                    .collect()
            } else {
                (0..fixed).map(|i| format!("fixed counter {i}")).collect()
            },
            kind: if intel { Kind::Intel } else { Kind::Other },
        }
    }

    /// An arm64 PMUv3 with `generic` event counters and the cycle counter.
    pub fn arm(name: &str, generic: u32, source: String) -> PmuModel {
        PmuModel {
            name: name.to_string(),
            source,
            generic,
            fixed: vec!["cycles (the cycle counter PMCCNTR)".into()],
            kind: Kind::Arm,
        }
    }

    /// `6 generic + 3 fixed (...)` / `6 generic + the cycle counter`.
    pub fn describe(&self) -> String {
        match self.kind {
            Kind::Arm => format!("{} generic + the cycle counter", self.generic),
            _ if self.fixed.is_empty() => format!("{} generic", self.generic),
            _ => format!(
                "{} generic + {} fixed ({})",
                self.generic,
                self.fixed.len(),
                self.fixed
                    .iter()
                    .enumerate()
                    .map(|(i, f)| format!("{i}: {f}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn all_generic(&self) -> u64 {
        (1u64 << self.generic) - 1
    }
    fn fixed_bit(&self, i: u32) -> u64 {
        if (i as usize) < self.fixed.len() {
            1u64 << (self.generic + i)
        } else {
            0
        }
    }

    /// Which counters `attr` may use (bits: generic 0.., then fixed), and why; `None`
    /// for events that take no PMU counter (software, tracepoints, other PMUs).
    pub fn need(&self, attr: &sys::perf_event_attr) -> Option<(u64, String)> {
        let g = self.all_generic();
        let gen_only = |what: &str| (g, format!("{what}: any generic counter"));
        match attr.type_ {
            sys::PERF_TYPE_HARDWARE | sys::PERF_TYPE_RAW | sys::PERF_TYPE_HW_CACHE => {}
            _ => return None,
        }
        if attr.type_ == sys::PERF_TYPE_HW_CACHE {
            return Some(gen_only("cache event"));
        }
        match self.kind {
            Kind::Arm => {
                let cycles = (attr.type_ == sys::PERF_TYPE_HARDWARE && attr.config == 0)
                    || (attr.type_ == sys::PERF_TYPE_RAW && attr.config == 0x11);
                Some(if cycles {
                    (
                        g | self.fixed_bit(0),
                        "CPU_CYCLES (0x11): the cycle counter or any generic counter".into(),
                    )
                } else {
                    gen_only("PMUv3 event")
                })
            }
            Kind::Other => Some(gen_only("event")),
            Kind::Intel => Some(self.intel_need(attr)),
        }
    }

    fn intel_need(&self, attr: &sys::perf_event_attr) -> (u64, String) {
        let g = self.all_generic();
        if attr.type_ == sys::PERF_TYPE_HARDWARE {
            return match attr.config {
                0 => (
                    g | self.fixed_bit(1),
                    "cycles (0x003c): fixed counter 1 or any generic counter".into(),
                ),
                1 => (
                    g | self.fixed_bit(0),
                    "instructions (0x00c0): fixed counter 0 or any generic counter".into(),
                ),
                6 => (
                    g,
                    "bus-cycles (0x013c): generic counters only; on fixed counter 2 the same \
                     code would count reference cycles"
                        .into(),
                ),
                9 => (
                    self.fixed_bit(2),
                    "ref-cycles (pseudo-code 0x0300): fixed counter 2 only; it has no generic \
                     event code"
                        .into(),
                ),
                _ => (g, "generic hardware event: any generic counter".into()),
            };
        }
        let cfg = attr.config;
        let code = cfg & 0xffff;
        let mut why = String::new();
        let high = cfg >> 32;
        if high & 1 != 0 {
            why.push_str(
                "config bit 32 is not an event-select bit: in the constraint patch it is the \
                 bus-cycles marker (0x013c|1<<32 stays on the generic counters), current \
                 kernels drop it on this PMU (Haswell and later: in_tx); ",
            );
        }
        if high & !1 != 0 {
            why.push_str("config bits 33-63 are not event-select bits (the kernel drops them); ");
        }
        let (mask, what) = match code {
            0x0300 => (
                self.fixed_bit(2),
                "ref-cycles: fixed counter 2 only".to_string(),
            ),
            0x00c0 => (
                g | self.fixed_bit(0),
                "INST_RETIRED.ANY: fixed counter 0 or any generic counter".into(),
            ),
            0x003c => (
                g | self.fixed_bit(1),
                "CPU_CLK_UNHALTED.CORE: fixed counter 1 or any generic counter".into(),
            ),
            0x013c => (
                g,
                "event 0x3c umask 0x01 counts bus cycles, as bus-cycles, on the generic \
                 counters only (not ref-cycles, which is fixed counter 2)"
                    .into(),
            ),
            _ => (g, format!("raw 0x{code:04x}: any generic counter")),
        };
        why.push_str(&what);
        (mask, why)
    }
}

/// Warnings for the `{...}` groups of `specs` that can never be scheduled on this
/// machine's PMU model, each with a split (what `stat` and `record` print before opening).
/// Nothing is looked up for lists without a group of counter events.
pub fn group_warnings(specs: &[EventSpec]) -> Vec<String> {
    let counter = |a: &sys::perf_event_attr| {
        matches!(
            a.type_,
            sys::PERF_TYPE_HARDWARE | sys::PERF_TYPE_HW_CACHE | sys::PERF_TYPE_RAW
        )
    };
    // Only groups that could fail on some PMU cost a look-up (loading libpfm4 takes
    // milliseconds): three or more counter events (the smallest PMUs have two generic
    // counters), or two that may both want Intel's fixed counter 2.
    let fixed2 = |a: &sys::perf_event_attr| {
        (a.type_ == sys::PERF_TYPE_HARDWARE && a.config == 9)
            || (a.type_ == sys::PERF_TYPE_RAW && a.config & 0xffff == 0x0300)
    };
    let mut risky = false;
    let mut i = 0;
    while i < specs.len() {
        let mut j = i;
        while j < specs.len() && specs[j].group == specs[i].group {
            j += 1;
        }
        let g = &specs[i..j];
        let n = g.iter().filter(|s| s.grouped && counter(&s.attr)).count();
        let f2 = g.iter().filter(|s| s.grouped && fixed2(&s.attr)).count();
        risky |= n >= 3 || f2 >= 2;
        i = j;
    }
    if !risky {
        return Vec::new();
    }
    match PmuModel::detect() {
        Some(pmu) => CheckPlan::new(pmu, specs).warnings(),
        None => Vec::new(),
    }
}

/// An arm64 PMUv3 in sysfs, its generic counters found on the kernel: the largest group of
/// `instructions:u` on this thread that the kernel both accepts and schedules (enabled over
/// some work, its `time_running` is above 0). Accepting is not enough: a group the kernel
/// takes at open may still never get its counters.
fn arm_probe() -> Option<PmuModel> {
    let dir = std::fs::read_dir("/sys/bus/event_source/devices").ok()?;
    let name = dir
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("armv8_pmuv3") || n.contains("pmuv3"))?;
    let attr = perfkit::Attr::new(perfkit::Hardware::Instructions)
        .exclude_kernel(true)
        .exclude_hv(true)
        .disabled(true);
    let t = perfkit::Target::this_thread();
    let group = |k: usize| -> Option<perfkit::Group> {
        let mut g = perfkit::Group::open(&attr, &t).ok()?;
        for _ in 1..k {
            g.add(&attr, &t).ok()?;
        }
        Some(g)
    };
    let scheduled = |g: &perfkit::Group| -> bool {
        if g.enable().is_err() {
            return false;
        }
        let mut x = 0u64;
        for i in 0..200_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let _ = g.disable();
        g.read().is_ok_and(|c| c.time_running.unwrap_or(0) > 0)
    };
    let mut opened = 1;
    while opened < 64 && group(opened + 1).is_some() {
        opened += 1;
    }
    let n = (1..=opened)
        .rev()
        .find(|&k| group(k).is_some_and(|g| scheduled(&g)))?;
    Some(PmuModel::arm(
        &name,
        n as u32,
        format!(
            "sysfs {name}; {n} generic counters: a group of {n} instructions:u is scheduled{}",
            if opened > n {
                format!(", one of {opened} opens but never runs")
            } else {
                format!(", {} does not open", n + 1)
            }
        ),
    ))
}

/// Whether events with these counter masks can all count at once: a matching of events to
/// distinct counters (Kuhn's augmenting paths; a few dozen events at most).
pub fn fits(masks: &[u64]) -> bool {
    let mut owner: [Option<usize>; 64] = [None; 64];
    fn place(e: usize, masks: &[u64], seen: &mut u64, owner: &mut [Option<usize>; 64]) -> bool {
        for c in 0..64 {
            if masks[e] & (1 << c) == 0 || *seen & (1 << c) != 0 {
                continue;
            }
            *seen |= 1 << c;
            if owner[c].is_none_or(|o| place(o, masks, seen, owner)) {
                owner[c] = Some(e);
                return true;
            }
        }
        false
    }
    (0..masks.len()).all(|e| place(e, masks, &mut 0, &mut owner))
}

/// Pack `items` (indices into `masks`) in order into as few bins that each fit as first-fit
/// finds; an item that fits nowhere even alone gets a bin of its own.
fn pack(items: &[usize], masks: &[u64]) -> Vec<Vec<usize>> {
    let mut bins: Vec<Vec<usize>> = Vec::new();
    for &i in items {
        let slot = bins.iter_mut().find(|b| {
            let m: Vec<u64> = b
                .iter()
                .chain(std::iter::once(&i))
                .map(|&j| masks[j])
                .collect();
            fits(&m)
        });
        match slot {
            Some(b) => b.push(i),
            None => bins.push(vec![i]),
        }
    }
    bins
}

/// The plan of an event list on a PMU model.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckPlan {
    /// The PMU model used.
    pub pmu: PmuModel,
    /// Per event: name, the counters it may use (None: takes no PMU counter), why.
    pub events: Vec<(String, Option<u64>, String)>,
    /// Groups (indices into `events`) that can never be scheduled, with the reason and
    /// a split into groups that can.
    pub impossible: Vec<(Vec<usize>, String, Vec<Vec<usize>>)>,
    /// Sets of groups that fit together (one set: everything counts at once).
    pub sets: Vec<Vec<usize>>,
}

impl CheckPlan {
    /// Plan `specs` (as parsed for stat) on `pmu`.
    pub fn new(pmu: PmuModel, specs: &[EventSpec]) -> CheckPlan {
        let events: Vec<(String, Option<u64>, String)> = specs
            .iter()
            .map(|s| match pmu.need(&s.attr) {
                Some((m, why)) => (s.name.clone(), Some(m), why),
                None => (
                    s.name.clone(),
                    None,
                    "no PMU counter (software or other PMU)".into(),
                ),
            })
            .collect();
        let masks: Vec<u64> = events.iter().map(|e| e.1.unwrap_or(0)).collect();
        let counted = |ix: &[usize]| -> Vec<usize> {
            ix.iter()
                .copied()
                .filter(|&i| events[i].1.is_some())
                .collect()
        };
        // The groups, in order, as index lists.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            match groups.last_mut() {
                Some(g) if specs[g[0]].group == s.group => g.push(i),
                _ => groups.push(vec![i]),
            }
        }
        let mut impossible = Vec::new();
        let mut schedulable: Vec<Vec<usize>> = Vec::new();
        for g in &groups {
            let hw = counted(g);
            let m: Vec<u64> = hw.iter().map(|&i| masks[i]).collect();
            if fits(&m) {
                schedulable.push(g.clone());
                continue;
            }
            let why = group_why(&pmu, &events, &hw);
            let split = pack(&hw, &masks);
            // The plan goes on with the split.
            schedulable.extend(split.iter().cloned());
            impossible.push((g.clone(), why, split));
        }
        // Sets: first-fit of whole schedulable groups.
        let mut sets: Vec<Vec<usize>> = Vec::new();
        for g in schedulable {
            let slot = sets.iter_mut().find(|s| {
                let m: Vec<u64> = counted(s)
                    .iter()
                    .chain(counted(&g).iter())
                    .map(|&j| masks[j])
                    .collect();
                fits(&m)
            });
            match slot {
                Some(s) => s.extend(g),
                None => sets.push(g),
            }
        }
        CheckPlan {
            pmu,
            events,
            impossible,
            sets,
        }
    }

    fn names(&self, ix: &[usize]) -> String {
        ix.iter()
            .map(|&i| self.events[i].0.as_str())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// A warning per group that cannot be scheduled (what `stat` and `record` print).
    pub fn warnings(&self) -> Vec<String> {
        self.impossible
            .iter()
            .map(|(g, why, split)| {
                format!(
                    "{{{}}} cannot be scheduled: {why}; it would never count. Split it: {}",
                    self.names(g),
                    split
                        .iter()
                        .map(|s| format!("'{{{}}}'", self.names(s)))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            })
            .collect()
    }

    /// The plan as `perfkit stat --check` prints it.
    pub fn text(&self) -> String {
        let mut s = format!(
            "PMU {}: {} counters ({})\n",
            self.pmu.name,
            self.pmu.describe(),
            self.pmu.source
        );
        s.push_str("Events:\n");
        for (name, _, why) in &self.events {
            let _ = writeln!(s, "  {name:<24} {why}");
        }
        for w in self.warnings() {
            let _ = writeln!(s, "{w}");
        }
        match self.sets.len() {
            0 => {}
            1 => {
                let _ = writeln!(
                    s,
                    "Plan: {{{}}} count at once, nothing is multiplexed.",
                    self.names(&self.sets[0])
                );
            }
            n => {
                let _ = writeln!(
                    s,
                    "Plan: the list needs more counters than the PMU has; {n} sets that each fit \
                     will be multiplexed (by the kernel, or by perfkit with these flags):"
                );
                for (i, set) in self.sets.iter().enumerate() {
                    let _ = writeln!(s, "  set {}: {{{}}}", i + 1, self.names(set));
                }
                let flags: Vec<String> = self
                    .sets
                    .iter()
                    .map(|set| format!("--event-set '{{{}}}'", self.names(set)))
                    .collect();
                let _ = writeln!(s, "  perfkit stat {} --switch-every 10", flags.join(" "));
            }
        }
        s
    }
}

/// Why a group of counted events (indices) cannot fit: too many for the generic counters,
/// or two events wanting the same fixed counter.
fn group_why(pmu: &PmuModel, events: &[(String, Option<u64>, String)], hw: &[usize]) -> String {
    let g = pmu.all_generic();
    let generic_only = hw
        .iter()
        .filter(|&&i| events[i].1.is_some_and(|m| m & !g == 0))
        .count();
    let fixed_only = hw
        .iter()
        .filter(|&&i| events[i].1.is_some_and(|m| m & g == 0))
        .count();
    let mut why = format!(
        "it needs {} counters ({generic_only} of them generic-only{}); this PMU has {}",
        hw.len(),
        if fixed_only > 0 {
            format!(", {fixed_only} fixed-only")
        } else {
            String::new()
        },
        pmu.describe()
    );
    // Two events that only one fixed counter can take.
    for (k, f) in pmu.fixed.iter().enumerate() {
        let bit = pmu.fixed_bit(k as u32);
        let only: Vec<&str> = hw
            .iter()
            .filter(|&&i| events[i].1 == Some(bit))
            .map(|&i| events[i].0.as_str())
            .collect();
        if only.len() > 1 {
            let _ = write!(
                why,
                "; {} each need fixed counter {k} ({f}), which holds one event",
                only.join(" and ")
            );
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matching_respects_fixed_and_generic() {
        // 2 generic (bits 0-1) + fixed 0-2 (bits 2-4).
        let g = 0b11;
        assert!(fits(&[g | 1 << 3, g, g])); // cycles on fixed 1, two generic-only
        assert!(!fits(&[g, g, g])); // three generic-only on two counters
        assert!(!fits(&[1 << 4, 1 << 4])); // two ref-cycles
        assert!(fits(&[g | 1 << 2, g, g])); // instructions moves to fixed 0
    }

    #[test]
    fn arm_group_of_seven_splits_six_and_one() {
        let pmu = PmuModel::arm("armv8_pmuv3_0", 6, "test".into());
        let i = "instructions:u";
        let seven = [i; 7].join(",");
        let specs = crate::parse(&[format!("{{{seven}}}")]).unwrap();
        let text = CheckPlan::new(pmu.clone(), &specs).text();
        let six = [i; 6].join(",");
        assert!(text.contains("6 generic + the cycle counter"), "{text}");
        assert!(
            text.contains("cannot be scheduled: it needs 7 counters"),
            "{text}"
        );
        assert!(
            text.contains(&format!("Split it: '{{{six}}}' '{{{i}}}'")),
            "{text}"
        );
        let specs = crate::parse(&[format!("{{cycles:u,{six}}}")]).unwrap();
        let text = CheckPlan::new(pmu, &specs).text();
        assert!(text.contains("count at once"), "{text}");
    }

    #[test]
    fn intel_core_seed_example() {
        let pmu = PmuModel::from_counts("core", "Intel Core", 2, 3, "test".into());
        let hw = |c| {
            let mut a = sys::perf_event_attr::new();
            a.type_ = sys::PERF_TYPE_HARDWARE;
            a.config = c;
            a
        };
        let raw = |c| {
            let mut a = sys::perf_event_attr::new();
            a.type_ = sys::PERF_TYPE_RAW;
            a.config = c;
            a
        };
        let (cy, _) = pmu.need(&hw(0)).unwrap();
        let (bus, why_bus) = pmu.need(&hw(6)).unwrap();
        let (r, why_r) = pmu.need(&raw(0x1_0000_013c)).unwrap();
        let (refc, _) = pmu.need(&hw(9)).unwrap();
        assert_eq!(bus, 0b11, "bus-cycles: generic only");
        assert_eq!(r, 0b11, "r10000013c: generic only, as bus-cycles");
        assert_eq!(refc, 1 << 4, "ref-cycles: fixed counter 2 only");
        assert_eq!(cy, 0b11 | 1 << 3, "cycles: fixed 1 or generic");
        assert!(why_bus.contains("generic counters only"), "{why_bus}");
        assert!(
            why_r.contains("bit 32") && why_r.contains("bus cycles"),
            "{why_r}"
        );
        assert!(fits(&[cy, bus, r]));
        assert!(!fits(&[cy, bus, r, 0b11]));
    }
}
