//! `-M`/`--metrics`, metric groups, `perfkit list metric|metricgroup`, `--metric-only`,
//! `--topdown` and `-T`, against perf 6.1 on this machine: an AMD family-19h CPU without a
//! `cpu` PMU, so every metric's events are missing and both tools print the same error
//! (the same missing event, in perf's event order) and count their default events.

mod common;

use common::{have_perf, perfkit, skip};
use std::process::Command;

fn perf(args: &[&str]) -> (i32, String, String) {
    let out = Command::new("perf").args(args).output().expect("run perf");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn kit(args: &[&str]) -> (i32, String, String) {
    let out = perfkit().args(args).output().expect("run perfkit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Digits and runs of spaces made equal, and perfkit's trimmed line ends: the layout.
fn mask(t: &str) -> String {
    let mut out = String::new();
    for line in t.lines() {
        let mut l = String::new();
        for c in line.trim_end().chars() {
            let c = if c.is_ascii_digit() { 'N' } else { c };
            if !(c == 'N' && l.ends_with('N')) {
                l.push(c);
            }
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// Whether perf 6.1 has metric tables for this CPU (it lists metrics).
fn perf_has_metrics() -> bool {
    have_perf() && !perf(&["list", "--raw-dump", "metrics"]).1.trim().is_empty()
}

#[test]
fn metric_lists_are_perfs() {
    if !perf_has_metrics() {
        skip("perf 6.1 has no metric table for this CPU");
        return;
    }
    for args in [
        &["list", "metric"][..],
        &["list", "metricgroup"],
        &["list", "--raw-dump", "metrics"],
        &["list", "--raw-dump", "metricgroups"],
        &["list", "--details", "metric"],
    ] {
        let (pc, p, _) = perf(args);
        let (kc, k, ke) = kit(args);
        assert_eq!((kc, pc), (0, 0), "{args:?}: {ke}");
        assert_eq!(k, p, "{args:?}");
    }
}

#[test]
fn every_metric_and_group_is_tried_as_perf_tries_it() {
    if !perf_has_metrics() {
        skip("perf 6.1 has no metric table for this CPU");
        return;
    }
    let (_, metrics, _) = perf(&["list", "--raw-dump", "metrics"]);
    let (_, groups, _) = perf(&["list", "--raw-dump", "metricgroups"]);
    let cpu_pmu = std::path::Path::new("/sys/bus/event_source/devices/cpu").exists();
    for name in metrics.split_whitespace().chain(groups.split_whitespace()) {
        let (pc, _, p) = perf(&["stat", "-M", name, "-x,", "true"]);
        let (kc, _, k) = kit(&["stat", "-M", name, "-x,", "true"]);
        assert_eq!(kc, pc, "-M {name}: exit\nperf:\n{p}\nperfkit:\n{k}");
        if cpu_pmu {
            continue;
        }
        // Both print perf's two lines naming the same missing event (perf's event order),
        // then count the default events.
        let head = |t: &str| t.lines().take(2).map(str::to_string).collect::<Vec<_>>();
        assert_eq!(head(&k), head(&p), "-M {name}");
        assert!(k.starts_with("event syntax error: '{"), "{name}: {k}");
        let events = |t: &str| -> Vec<String> {
            t.lines()
                .filter_map(|l| l.split(',').nth(2).map(str::to_string))
                .collect()
        };
        assert_eq!(
            events(&k),
            events(&p),
            "-M {name}\nperf:\n{p}\nperfkit:\n{k}"
        );
        assert!(k.contains("<not supported>,,cycles"), "{k}");
    }
    // Names are matched ignoring case, and a name that is not there is said so.
    for list in [
        "TLB",
        "tlb,l3_cache",
        "l2_cache,tlb",
        "l2_cache",
        "data_fabric",
    ] {
        for flag in ["--metric-no-merge", "--metric-no-group"] {
            let (_, _, p) = perf(&["stat", "-M", list, flag, "-x,", "true"]);
            let (_, _, k) = kit(&["stat", "-M", list, flag, "-x,", "true"]);
            let head = |t: &str| t.lines().take(2).map(str::to_string).collect::<Vec<_>>();
            assert_eq!(head(&k), head(&p), "-M {list} {flag}");
        }
    }
    let (pc, _, p) = perf(&["stat", "-M", "nosuch", "-e", "task-clock", "-x,", "true"]);
    let (kc, _, k) = kit(&["stat", "-M", "nosuch", "-e", "task-clock", "-x,", "true"]);
    assert_eq!((kc, k.lines().next()), (pc, p.lines().next()), "{k}");
    assert!(k.contains(",task-clock,"), "{k}");
}

#[test]
fn metric_only_layouts_are_perfs() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    for extra in [
        &[][..],
        &["-x,"],
        &["-j"],
        &["-I", "100", "-x,"],
        &["-I", "100", "-j"],
        &["-I", "100"],
        &["-A", "-a"],
        &["-x,", "-A", "-a"],
        &["--per-core", "-a"],
    ] {
        let mut args = vec!["stat", "--metric-only"];
        args.extend_from_slice(extra);
        args.extend(["-e", "task-clock", "--", "sleep", "0.25"]);
        let (pc, _, p) = perf(&args);
        let (kc, _, k) = kit(&args);
        assert_eq!((kc, pc), (0, 0), "{args:?}: {k}");
        // Interval lines depend on timing; perf and perfkit print one per 100 ms.
        let head = |t: &str| mask(t).lines().take(4).collect::<Vec<_>>().join("\n");
        assert_eq!(head(&k), head(&p), "{args:?}\nperf:\n{p}\nperfkit:\n{k}");
        if !extra.contains(&"-I") {
            assert_eq!(mask(&k), mask(&p), "{args:?}\nperf:\n{p}\nperfkit:\n{k}");
        }
    }
    let (pc, _, p) = perf(&["stat", "--metric-only", "-r", "2", "true"]);
    let (kc, _, k) = kit(&["stat", "--metric-only", "-r", "2", "true"]);
    assert!(pc != 0 && kc != 0, "{p} {k}");
    assert!(k.contains("--metric-only is not supported with -r"), "{k}");
}

#[test]
fn topdown_and_transactions_say_what_perf_says() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    if std::path::Path::new("/sys/bus/event_source/devices/cpu").exists() {
        skip("this machine has a cpu PMU: these messages are for machines without one");
        return;
    }
    for (args, said) in [
        (
            &["stat", "--topdown", "true"][..],
            "top down event configuration requires system-wide mode (-a)",
        ),
        (
            &["stat", "--topdown", "-a", "true"],
            "System does not support topdown",
        ),
        (&["stat", "-T", "true"], "Cannot set up transaction events"),
    ] {
        let (pc, _, p) = perf(args);
        let (kc, _, k) = kit(args);
        assert!(pc != 0, "{args:?}: {p}");
        assert_eq!(kc, pc, "{args:?}: perf's exit status (-EINVAL): {p} / {k}");
        assert!(p.contains(said), "perf: {p}");
        assert!(k.contains(said), "perfkit: {k}");
        assert!(!k.contains("panicked"), "{k}");
    }
}
