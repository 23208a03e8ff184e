//! sysfs PMU and tracefs discovery against fixture trees, RAW decoding, round trips from a
//! name to an attr and back, and the `perfkit list` catalogue over a fixture machine.

mod common;

use common::Fixture;
use perfkit_events::list::{self, Availability, Kind, ListOptions};
use perfkit_events::pmu::{Format, Pmu, read_pmus};
use perfkit_events::{Env, names};
use perfkit_sys as sys;

#[test]
fn sysfs_pmus_are_read_with_formats_aliases_caps_and_cpus() {
    let fx = Fixture::standard();
    let pmus = read_pmus(&fx.sysfs());
    let by = |n: &str| pmus.iter().find(|p| p.name == n).unwrap();

    let cpu = by("cpu");
    assert_eq!(cpu.type_, 4);
    assert!(cpu.is_core);
    assert_eq!(cpu.cpus, None);
    assert_eq!(cpu.nr_addr_filters, Some(2));
    assert_eq!(cpu.caps.get("max_precise").map(String::as_str), Some("3"));
    assert_eq!(cpu.caps.get("branches").map(String::as_str), Some("32"));
    assert_eq!(cpu.formats.len(), 10);
    assert_eq!(
        cpu.aliases["mem-loads"].terms,
        "event=0xcd,umask=0x1,ldlat=3"
    );
    assert_eq!(cpu.aliases["topdown-total-slots"].scale, 4.0);
    assert_eq!(cpu.aliases["cache-misses"].scale, 1.0);

    let power = by("power");
    assert!(!power.is_core);
    assert_eq!(power.cpus, Some(vec![0]));
    assert_eq!(power.aliases["energy-pkg"].unit, "Joules");
    assert_eq!(
        power.aliases["energy-pkg"].scale,
        2.328_306_436_538_696_3e-10
    );

    let imc = by("uncore_imc_1");
    assert_eq!(imc.type_, 21);
    assert_eq!(imc.cpus, Some(vec![0, 18]));
    assert_eq!(imc.aliases["cas_count_read"].unit, "MiB");

    // Every PMU directory with a type became a Pmu; the names are the directory names.
    let mut names: Vec<&str> = pmus.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "breakpoint",
            "cpu",
            "msr",
            "power",
            "software",
            "tracepoint",
            "uncore_imc_0",
            "uncore_imc_1",
            "uprobe"
        ]
    );
}

#[test]
fn a_pmu_without_a_readable_type_is_skipped_not_fatal() {
    let fx = Fixture::standard();
    let bad = fx.sysfs().join("broken_pmu");
    std::fs::create_dir_all(bad.join("format")).unwrap();
    std::fs::write(bad.join("type"), "not-a-number\n").unwrap();
    assert!(Pmu::read(&bad).is_err());
    let pmus = read_pmus(&fx.sysfs());
    assert!(pmus.iter().all(|p| p.name != "broken_pmu"));
    assert!(pmus.iter().any(|p| p.name == "cpu"));
}

#[test]
fn format_bit_ranges_place_and_extract_values() {
    let split = Format::parse("split", "config:0-3,32-35").unwrap();
    assert_eq!(split.width(), 8);
    let mut w = 0u64;
    split.apply(&mut w, 0xa5).unwrap();
    assert_eq!(w, 0x5 | (0xa << 32));
    assert_eq!(split.extract(w), 0xa5);
    // Too wide for the field: refused with the field's maximum.
    assert_eq!(split.apply(&mut w, 0x1ff), Err(0xff));

    let wide = Format::parse("offcore_rsp", "config1:0-63").unwrap();
    assert_eq!(wide.max(), u64::MAX);
    let single = Format::parse("edge", "config:18").unwrap();
    let mut w = 0;
    single.apply(&mut w, 1).unwrap();
    assert_eq!(w, 1 << 18);
    assert!(Format::parse("bad", "config9:0-3").is_err());
    assert!(Format::parse("bad", "config:7-3x").is_err());
}

#[test]
fn hybrid_machines_have_several_core_pmus_with_their_cpus() {
    let fx = Fixture::hybrid();
    let env = fx.env();
    assert!(env.is_hybrid());
    let cores: Vec<(&str, Option<Vec<u32>>)> = env
        .core_pmus()
        .iter()
        .map(|p| (p.name.as_str(), p.cpus.clone()))
        .collect();
    assert!(cores.contains(&("cpu_core", Some(vec![0, 1, 2, 3]))));
    assert!(cores.contains(&("cpu_atom", Some(vec![4, 5, 6, 7]))));
    // A generic hardware event opens once per core PMU, with the PMU type in config's
    // upper word as the kernel's extended hardware type wants.
    let list = env.parse("cycles").unwrap();
    let members = &list
        .groups
        .iter()
        .flat_map(|g| &g.members)
        .collect::<Vec<_>>();
    assert_eq!(members.len(), 2);
    let mut got: Vec<(u32, u64)> = members
        .iter()
        .map(|e| (e.attr.type_, e.attr.config))
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            (sys::PERF_TYPE_HARDWARE, 4 << 32),
            (sys::PERF_TYPE_HARDWARE, 10 << 32)
        ]
    );
}

#[test]
fn tracepoint_names_resolve_to_ids_and_back() {
    let fx = Fixture::standard();
    let env = fx.env();
    let list = env
        .parse("sched:sched_switch,syscalls:sys_enter_*")
        .unwrap();
    let evs: Vec<_> = list.groups.iter().flat_map(|g| &g.members).collect();
    assert_eq!(evs[0].attr.config, 316);
    let back: Vec<String> = evs.iter().map(|e| env.name_of(&e.attr)).collect();
    assert_eq!(
        back,
        [
            "sched:sched_switch",
            "syscalls:sys_enter_openat",
            "syscalls:sys_enter_read",
            "syscalls:sys_enter_write"
        ]
    );
}

/// name -> attr -> name for every symbolic event perf knows, with and without modifiers.
#[test]
fn every_symbolic_name_round_trips() {
    let fx = Fixture::standard();
    let env = fx.env();
    let mut checked = 0;
    let mut canon: Vec<String> = names::HARDWARE
        .iter()
        .chain(names::SOFTWARE)
        .map(|s| s.name.to_string())
        .collect();
    canon.extend(names::all_cache_names().into_iter().map(|(n, _)| n));
    for name in &canon {
        for m in ["", ":u", ":k"] {
            let input = format!("{name}{m}");
            let list = env.parse(&input).unwrap_or_else(|e| panic!("{input}: {e}"));
            let ev = &list.groups[0].members[0];
            assert_eq!(env.name_of(&ev.attr), input, "round trip of {input}");
            checked += 1;
        }
    }
    // Aliases come back as the canonical name, with the same attr.
    for s in names::HARDWARE.iter().chain(names::SOFTWARE) {
        for a in s.aliases {
            let ev = env.parse(a).unwrap().groups[0].members[0].attr;
            assert_eq!(env.name_of(&ev), s.name, "alias {a}");
            assert_eq!(ev.config, s.config);
            checked += 1;
        }
    }
    // Cache spellings perf accepts map to perf's canonical name.
    for (alias, canonical) in [
        ("l1d-load-miss", "L1-dcache-load-misses"),
        ("L1-data-read-access", "L1-dcache-loads"),
        ("Data-TLB-speculative-read-miss", "dTLB-prefetch-misses"),
        ("btb-loads", "branch-loads"),
        ("L2-stores", "LLC-stores"),
    ] {
        let ev = env.parse(alias).unwrap().groups[0].members[0].attr;
        assert_eq!(env.name_of(&ev), canonical, "{alias}");
        checked += 1;
    }
    assert!(checked > 150, "{checked} round trips");
}

#[test]
fn pmu_aliases_round_trip_through_sysfs() {
    let fx = Fixture::standard();
    let env = fx.env();
    for name in [
        "msr/tsc/",
        "msr/smi/",
        "power/energy-pkg/",
        "cpu/mem-loads/",
        "cpu/cache-misses/",
        "uncore_imc_0/cas_count_read/",
    ] {
        let ev = env.parse(name).unwrap().groups[0].members[0].clone();
        assert_eq!(env.name_of(&ev.attr), name);
    }
    // Without an alias: the terms, which parse back to the same words.
    for input in ["cpu/event=0x3c,ldlat=0x5/", "r10000013c"] {
        let a = env.parse(input).unwrap().groups[0].members[0].attr;
        let name = env.name_of(&a);
        let b = env.parse(&name).unwrap().groups[0].members[0].attr;
        assert_eq!(
            (a.type_, a.config, a.config1, a.flags),
            (b.type_, b.config, b.config1, b.flags),
            "{input} -> {name}"
        );
    }
    let ev = env.parse("power/energy-pkg/").unwrap().groups[0].members[0].clone();
    assert_eq!(ev.unit, "Joules");
    assert_eq!(ev.cpus, Some(vec![0]));
    // perf 6.1 matches an alias ignoring case, alone or as a PMU's term (metric tables
    // name `INST_RETIRED` where sysfs has `inst_retired`); the name stays as written.
    for (upper, lower) in [
        ("TSC", "tsc"),
        ("msr/TSC/", "msr/tsc/"),
        ("Energy-Pkg", "energy-pkg"),
        ("CAS_COUNT_READ", "cas_count_read"),
    ] {
        let a = env.parse(upper).unwrap().groups[0].members.clone();
        let b = env.parse(lower).unwrap().groups[0].members.clone();
        assert_eq!(a.len(), b.len(), "{upper}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(
                (x.attr.type_, x.attr.config, x.attr.config1),
                (y.attr.type_, y.attr.config, y.attr.config1),
                "{upper}"
            );
        }
    }
    assert!(env.parse("TSCX").is_err());
}

#[test]
fn the_catalogue_lists_every_kind_of_a_fixture_machine() {
    let fx = Fixture::standard();
    let env = fx.env();
    let opts = ListOptions {
        probe: false,
        libpfm: false,
    };
    let cat = list::catalogue(&env, None, &opts);
    let count = |k: Kind| cat.entries.iter().filter(|e| e.kind == k).count();
    assert_eq!(count(Kind::Hardware), names::HARDWARE.len());
    assert_eq!(count(Kind::Software), names::SOFTWARE.len());
    assert_eq!(count(Kind::Cache), names::all_cache_names().len());
    // msr/tsc, msr/smi, power x2, cpu x3, two uncore imc.
    assert_eq!(count(Kind::Pmu), 9);
    assert_eq!(count(Kind::Tracepoint), 8);
    assert_eq!(count(Kind::Breakpoint), 1);
    assert_eq!(count(Kind::Uprobe), 1);
    assert_eq!(count(Kind::Raw), 2);
    // Grouped by kind, in order.
    assert!(cat.entries.windows(2).all(|w| w[0].kind <= w[1].kind));
    let energy = cat
        .entries
        .iter()
        .find(|e| e.name == "power/energy-pkg/")
        .unwrap();
    assert_eq!(energy.unit.as_deref(), Some("Joules"));
    assert_eq!(energy.encoding.as_deref(), Some("type=9,config=0x2"));
    let cycles = cat.entries.iter().find(|e| e.name == "cycles").unwrap();
    assert_eq!(cycles.aliases, ["cpu-cycles"]);
    assert_eq!(cycles.available, Availability::Unknown);

    // Filters: a kind keyword, a glob, a substring (case-insensitive).
    let sched = list::catalogue(&env, Some("sched:*"), &opts);
    assert_eq!(sched.entries.len(), 3);
    let sw = list::catalogue(&env, Some("sw"), &opts);
    assert!(sw.entries.iter().all(|e| e.kind == Kind::Software));
    let faults = list::catalogue(&env, Some("FAULTS"), &opts);
    let names: Vec<&str> = faults.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "page-faults",
            "minor-faults",
            "major-faults",
            "alignment-faults",
            "emulation-faults"
        ]
    );

    // Text and JSON say the same.
    let mut text = Vec::new();
    list::write_text(&sched, true, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.starts_with("Tracepoints:\n  sched:sched_process_exec"));
    let mut json = Vec::new();
    list::write_json(&sched, &mut json).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["events"].as_array().unwrap().len(), 3);
    assert_eq!(v["events"][1]["name"], "sched:sched_switch");
    assert_eq!(v["events"][1]["encoding"], "type=2,config=0x13c");
    assert_eq!(v["events"][1]["available"]["status"], "unknown");
}

#[test]
fn no_tracefs_is_a_note_not_an_error() {
    let fx = Fixture::standard();
    let env = Env::new(fx.sysfs(), None);
    let cat = list::catalogue(
        &env,
        Some("tracepoint"),
        &ListOptions {
            probe: false,
            libpfm: false,
        },
    );
    assert!(cat.entries.is_empty());
    assert!(cat.notes[0].contains("mount -t tracefs"));
}
