//! Metric tables chosen by CPUID as perf chooses them: with the same CPUID in the
//! environment (`PERF_CPUID` for perf, `PERFKIT_CPUID` or `PERF_CPUID` for perfkit), both
//! list the same metrics and groups, descriptions and formulas, for every CPU model
//! perfkit has a table for (AMD families 17h and 19h, Intel Elkhart Lake, Intel Skylake-X
//! with its top-down (TMA) metrics). perf here is an x86 build, which has no arm64 tables:
//! HiSilicon hip08's is checked against its JSON's content instead. A CPU without a table
//! gets perfkit's "no metrics for this CPU (CPUID ...)".

mod common;

use common::{have_perf, perfkit, skip};
use std::process::Command;

/// (exit status, stdout) of `perf ARGS` with PERF_CPUID=`cpuid`.
fn perf(cpuid: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new("perf")
        .env("PERF_CPUID", cpuid)
        .args(args)
        .output()
        .expect("run perf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// (exit status, stdout, stderr) of `perfkit ARGS` with `var`=`cpuid`.
fn kit(var: &str, cpuid: &str, args: &[&str]) -> (i32, String, String) {
    let out = perfkit()
        .env_remove("PERF_CPUID")
        .env_remove("PERFKIT_CPUID")
        .env(var, cpuid)
        .args(args)
        .output()
        .expect("run perfkit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const LISTINGS: [&[&str]; 5] = [
    &["list", "metric"],
    &["list", "metricgroup"],
    &["list", "--raw-dump", "metrics"],
    &["list", "--raw-dump", "metricgroups"],
    &["list", "--details", "metric"],
];

#[test]
fn each_table_lists_as_perf_for_its_cpuid() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    // (CPUID, the metrics perf 6.1 lists for it): zen1 and zen2 share family 23 and are
    // told apart by the model regex; Elkhart Lake's metrics have no group (`No_group`);
    // a CPUID without a stepping matches a key without one.
    for (cpuid, count) in [
        ("AuthenticAMD-23-1-0", 11),
        ("AuthenticAMD-23-2F-2", 11),
        ("AuthenticAMD-23-31-0", 11),
        ("AuthenticAMD-25-11-1", 13),
        ("AuthenticAMD-25-A0-0", 13),
        ("AuthenticAMD-25-11", 13),
        ("GenuineIntel-6-96-1", 11),
        ("GenuineIntel-6-9C-0", 11),
        ("GenuineIntel-6-55-4", 218),
        ("GenuineIntel-6-55-0", 218),
    ] {
        let (_, raw) = perf(cpuid, &["list", "--raw-dump", "metrics"]);
        assert_eq!(
            raw.split_whitespace().count(),
            count,
            "perf, {cpuid}: {raw}"
        );
        for args in LISTINGS {
            let (pc, p) = perf(cpuid, args);
            for var in ["PERFKIT_CPUID", "PERF_CPUID"] {
                let (kc, k, ke) = kit(var, cpuid, args);
                assert_eq!((kc, pc), (0, 0), "{var}={cpuid} {args:?}: {ke}");
                assert_eq!(k, p, "{var}={cpuid} {args:?}");
            }
        }
    }
    // zen1 and zen2 differ in one event name; the model picks the table.
    let zen1 = perf("AuthenticAMD-23-1-0", &["list", "--details", "metric"]).1;
    let zen2 = perf("AuthenticAMD-23-31-0", &["list", "--details", "metric"]).1;
    assert!(zen1.contains("bp_l1_tlb_miss_l2_miss]"), "{zen1}");
    assert!(zen2.contains("bp_l1_tlb_miss_l2_tlb_miss]"), "{zen2}");
}

/// stderr of `perf stat -M NAME -x, true` with PERF_CPUID=`cpuid`.
fn perf_stat_m(cpuid: &str, name: &str) -> (i32, String) {
    let out = Command::new("perf")
        .env("PERF_CPUID", cpuid)
        .args(["stat", "-M", name, "-x,", "true"])
        .output()
        .expect("run perf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn each_tables_metrics_are_tried_as_perf_tries_them() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        // With a core PMU the other CPU's events may open or not; the error lines
        // compared below are those of a machine without one (this VM and CI).
        skip("this machine has a `cpu` PMU: another CPU's events are not all missing");
        return;
    }
    // Every metric and group of each table (Skylake-X: every third group and every eighth
    // metric): both tools name the same first missing event in perf's event order: the
    // ids perf's parser collects (an `if` on a constant such as `#SMT_on` or
    // `#core_wide < 1` keeps one branch), metric references resolved as perf resolves
    // them, `pmu@term\,term@` written `pmu/term,term,metric-id=.../`, tool events last.
    // Left out: Kernel_Utilization (`cycles:k`), which perf refuses at open time here and
    // perfkit counts as <not supported>.
    for cpuid in [
        "AuthenticAMD-23-1-0",
        "AuthenticAMD-23-31-0",
        "AuthenticAMD-25-11-1",
        "GenuineIntel-6-96-0",
        "GenuineIntel-6-55-4",
    ] {
        let (_, metrics) = perf(cpuid, &["list", "--raw-dump", "metrics"]);
        let (_, groups) = perf(cpuid, &["list", "--raw-dump", "metricgroups"]);
        // Skylake-X's 84 groups and 218 metrics: a third of the groups, an eighth of the
        // metrics (each name runs both tools; a loaded machine makes that slow).
        let (gstep, mstep) = if cpuid == "GenuineIntel-6-55-4" {
            (3, 8)
        } else {
            (1, 1)
        };
        let names: Vec<&str> = groups
            .split_whitespace()
            .step_by(gstep)
            .chain(metrics.split_whitespace().step_by(mstep))
            .chain(["all"])
            .collect();
        let mut tried = 0;
        for name in names {
            if name == "Kernel_Utilization" {
                continue;
            }
            let (pc, p) = perf_stat_m(cpuid, name);
            let (kc, _, k) = kit("PERFKIT_CPUID", cpuid, &["stat", "-M", name, "-x,", "true"]);
            let head = |t: &str| t.lines().take(2).map(str::to_string).collect::<Vec<_>>();
            assert_eq!(kc, pc, "{cpuid} -M {name}\nperf:\n{p}\nperfkit:\n{k}");
            assert_eq!(head(&k), head(&p), "{cpuid} -M {name}");
            // Most name events this machine has no PMU for (perf's syntax error);
            // Elkhart Lake's CLKS is `cycles`, which both count as <not supported>.
            if k.starts_with("event syntax error: '{") {
                tried += 1;
            } else {
                // Skylake-X's SMT_2T_Utilization is `... if #SMT_on else 0`: without SMT
                // it needs no event, and both count duration_time for it.
                assert!(
                    k.contains("<not supported>,,cycles,") || k.contains(",ns,duration_time,"),
                    "{cpuid} {name}: {k}"
                );
            }
        }
        assert!(tried >= 9, "{cpuid}: {tried} names failed as perf's do");
    }
}

#[test]
fn a_cpu_without_a_table_says_so() {
    // arm64 Cortex-A57 (qemu's `-cpu cortex-a57`): perf 6.1 has its events but no
    // metrics; an AMD family perf has no table for; an Intel model perf has but perfkit
    // does not embed (Sapphire Rapids).
    for cpuid in [
        "0x00000000410fd070",
        "AuthenticAMD-26-1-0",
        "GenuineIntel-6-8F-4",
    ] {
        let (kc, k, ke) = kit("PERFKIT_CPUID", cpuid, &["list", "metric"]);
        assert_eq!(kc, 0, "{ke}");
        assert!(
            k.contains(&format!("no metrics for this CPU (CPUID {cpuid})")),
            "{cpuid}: {k}"
        );
        let (_, raw, _) = kit("PERFKIT_CPUID", cpuid, &["list", "--raw-dump", "metrics"]);
        assert_eq!(raw.trim(), "", "{cpuid}");
        let (_, _, ke) = kit(
            "PERFKIT_CPUID",
            cpuid,
            &["stat", "-M", "IPC", "-e", "task-clock", "-x,", "true"],
        );
        assert!(
            ke.starts_with(&format!(
                "Cannot find metric or group `IPC' (no metrics for this CPU (CPUID {cpuid})"
            )),
            "{cpuid}: {ke}"
        );
        assert!(ke.contains(",task-clock,"), "{ke}");
    }
}

#[test]
fn hip08_lists_its_json() {
    // HiSilicon hip08 (MIDR 0x480fd010), the one arm64 core with metrics in perf 6.1:
    // 33 top-down metrics in TopDownL1..L3. perf here is an x86 build without arm64
    // tables, so the listing is checked against the JSON's entries in perf's layout.
    let cpuid = "0x00000000480fd010";
    let (kc, raw, ke) = kit("PERFKIT_CPUID", cpuid, &["list", "--raw-dump", "metrics"]);
    assert_eq!(kc, 0, "{ke}");
    let names: Vec<&str> = raw.split_whitespace().collect();
    assert_eq!(names.len(), 33, "{raw}");
    assert!(names.windows(2).all(|w| w[0] < w[1]), "sorted: {raw}");
    let (_, groups, _) = kit(
        "PERFKIT_CPUID",
        cpuid,
        &["list", "--raw-dump", "metricgroups"],
    );
    assert_eq!(groups, "TopDownL1 TopDownL2 TopDownL3 ");
    let (_, details, _) = kit("PERFKIT_CPUID", cpuid, &["list", "--details", "metric"]);
    assert!(
        details.starts_with("\nMetrics:\n\n  backend_bound\n"),
        "{details}"
    );
    assert!(
        details.contains(
            "  retiring\n       [Retiring L1 topdown metric]\n       [INST_RETIRED / (CPU_CYCLES * 4)]\n"
        ),
        "{details}"
    );
    // A formula's `pmu@event\=0x201d@` keeps its escape in the listing, as perf prints it.
    assert!(
        details.contains("[armv8_pmuv3_0@event\\=0x201d@ / CPU_CYCLES]"),
        "{details}"
    );
}

/// stderr of `perf stat ARGS true` with PERF_CPUID=`cpuid`.
fn perf_stat(cpuid: &str, args: &[&str]) -> String {
    let out = Command::new("perf")
        .env("PERF_CPUID", cpuid)
        .arg("stat")
        .args(args)
        .arg("true")
        .output()
        .expect("run perf");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The lines of a stat output that carry the metric, the counts and times (which differ
/// run to run) replaced by `N`, trailing blanks dropped (perfkit trims them).
fn metric_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for l in text.lines() {
        if !l.contains("SMT_2T_Utilization")
            && !l.trim_start().starts_with(|c: char| c.is_ascii_digit())
        {
            continue;
        }
        if l.contains("seconds") {
            continue;
        }
        let mut masked = String::new();
        let mut digits = false;
        let mut after_quote = String::new();
        // Counts and runtimes: any run of digits longer than 2 (the metric is 0.00).
        for c in l.trim_end().chars() {
            if c.is_ascii_digit() {
                after_quote.push(c);
                digits = true;
                continue;
            }
            if digits {
                masked.push_str(if after_quote.len() > 2 {
                    "N"
                } else {
                    &after_quote
                });
                after_quote.clear();
                digits = false;
            }
            masked.push(c);
        }
        if digits {
            masked.push_str(if after_quote.len() > 2 {
                "N"
            } else {
                &after_quote
            });
        }
        // The text layout's count column is right-aligned to the count's width.
        out.push(masked.trim_start().to_string());
    }
    out
}

#[test]
fn metric_values_print_as_perfs() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        skip("this machine has a `cpu` PMU: Skylake-X's SMT_2T_Utilization may need events");
        return;
    }
    // Skylake-X's SMT_2T_Utilization is `... if #SMT_on else 0`: without SMT it needs no
    // event, both count duration_time for it and print its value, 0, as perf's
    // generic_metric prints a metric without a ScaleUnit ("%8.2f" and its name), in every
    // layout. (Its ScaleUnit metrics all need a core PMU; their formatting is checked in
    // perfkit-events' scale_unit tests against values worked out from perf's rules.)
    let cpuid = "GenuineIntel-6-55-4";
    let smt = std::fs::read_to_string("/sys/devices/system/cpu/smt/active")
        .is_ok_and(|s| s.trim() == "1");
    if smt {
        // Not something CI lacks: this CPU has SMT, where the metric needs core events.
        eprintln!("skipped: SMT is on: SMT_2T_Utilization needs core events here");
        return;
    }
    for args in [
        &["-M", "SMT_2T_Utilization"][..],
        &["-M", "SMT_2T_Utilization", "-x,"],
        &["-M", "SMT_2T_Utilization", "-j"],
        &["-M", "SMT_2T_Utilization", "--metric-only"],
        &["-M", "SMT_2T_Utilization", "--metric-only", "-x,"],
        &["-M", "SMT_2T_Utilization", "--metric-no-group", "-x,"],
        &["-M", "SMT_2T_Utilization", "--metric-no-merge"],
        &["-M", "SMT_2T_Utilization", "--metric-no-merge", "-x,"],
        &["-M", "SMT_2T_Utilization", "--metric-no-merge", "-j"],
        &[
            "-M",
            "SMT_2T_Utilization",
            "--metric-no-merge",
            "--metric-no-group",
            "-x,",
        ],
    ] {
        let theirs = metric_lines(&perf_stat(cpuid, args));
        let mut full = vec!["stat"];
        full.extend_from_slice(args);
        full.push("true");
        let (_, _, ours) = kit("PERFKIT_CPUID", cpuid, &full);
        let ours = metric_lines(&ours);
        assert!(!theirs.is_empty(), "{args:?}");
        assert!(
            theirs
                .iter()
                .any(|l| l.contains("0.00") || l.contains("\"metric-value\" : 0.N,")),
            "{args:?}: {theirs:?}"
        );
        assert_eq!(ours, theirs, "{args:?}");
    }
}

/// The `Parsing metric events '...'` lines of `TOOL stat -v -M LIST true`.
fn parsing_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.starts_with("Parsing metric events '"))
        .map(str::to_string)
        .collect()
}

#[test]
fn metric_event_strings_are_perfs() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        skip("this machine has a `cpu` PMU: another CPU's events are not all missing");
        return;
    }
    // With -v both tools print the whole event string built for the metrics (perf's
    // "Parsing metric events"), not only the 56 bytes of the syntax error: the ids in
    // perf's hash-map order, `{...}:W` groups, NO_NMI_WATCHDOG/--metric-no-group sets
    // ungrouped, and every tool event of the list added to every set (IPC's set gets
    // L1D_Cache_Fill_BW's duration_time). With --metric-no-merge (perf's
    // metric_no_merge) a set keeps only its own tool events and, with --metric-no-group,
    // the first metric's own events make the first set, not every metric's combined; every
    // third list is tried with each of those layouts (and --metric-no-group alone).
    let layouts: [&[&str]; 4] = [
        &[],
        &["--metric-no-group"],
        &["--metric-no-merge"],
        &["--metric-no-merge", "--metric-no-group"],
    ];
    let mut tried = 0;
    let mut differs_from_merged = 0;
    for cpuid in [
        "AuthenticAMD-23-31-0",
        "AuthenticAMD-25-11-1",
        "GenuineIntel-6-96-0",
        "GenuineIntel-6-55-4",
    ] {
        let (_, metrics) = perf(cpuid, &["list", "--raw-dump", "metrics"]);
        let (_, groups) = perf(cpuid, &["list", "--raw-dump", "metricgroups"]);
        let step = if cpuid == "GenuineIntel-6-55-4" { 6 } else { 1 };
        let mut lists: Vec<String> = groups
            .split_whitespace()
            .chain(metrics.split_whitespace())
            .step_by(step)
            .filter(|n| *n != "Kernel_Utilization")
            .map(str::to_string)
            .collect();
        if cpuid == "GenuineIntel-6-55-4" {
            for l in [
                "L1D_Cache_Fill_BW,IPC",
                "IPC,SMT_2T_Utilization,L1D_Cache_Fill_BW",
                "Page_Walks_Utilization,UNCORE_FREQ",
                "TopdownL1,GFLOPs",
            ] {
                lists.push(l.to_string());
            }
        }
        for (i, list) in lists.iter().enumerate() {
            let mut merged = Vec::new();
            for (l, layout) in layouts.iter().enumerate() {
                if l > 0 && i % 3 != 0 {
                    continue;
                }
                let mut args = vec!["stat", "-v"];
                args.extend_from_slice(layout);
                args.extend(["-M", list, "true"]);
                let out = Command::new("perf")
                    .env("PERF_CPUID", cpuid)
                    .args(&args)
                    .output()
                    .expect("run perf");
                let theirs = parsing_lines(&String::from_utf8_lossy(&out.stderr));
                let (_, _, ours) = kit("PERFKIT_CPUID", cpuid, &args);
                let ours = parsing_lines(&ours);
                assert!(!theirs.is_empty(), "{cpuid} {list} {layout:?}");
                assert_eq!(ours, theirs, "{cpuid} -M {list} {layout:?}");
                if l == 0 {
                    merged = theirs;
                } else if theirs != merged {
                    differs_from_merged += 1;
                }
                tried += 1;
            }
        }
    }
    assert!(tried > 60, "{tried}");
    // The layouts are not all the same strings (the flags are exercised).
    assert!(differs_from_merged > 10, "{differs_from_merged}");
}
