//! `perfkit stat --check`: the plan of an event list on a PMU model, nothing counted. The
//! Intel cases use libpfm4's tables with `LIBPFM_FORCE_PMU` (libpfm4 is installed by
//! `.ci/run`); the arm64 PMUv3 case runs in the emulated guest (perfkit-hwtest
//! `check_advice`).

mod common;
use common::{perfkit, skip};

fn have_libpfm() -> bool {
    [
        "/usr/lib/x86_64-linux-gnu/libpfm.so.4",
        "/usr/lib/aarch64-linux-gnu/libpfm.so.4",
    ]
    .iter()
    .any(|p| std::path::Path::new(p).exists())
}

/// `perfkit stat --check -e EVENTS` with `LIBPFM_FORCE_PMU=pmu`: stdout.
fn check(pmu: &str, events: &str) -> String {
    let out = perfkit()
        .env("LIBPFM_FORCE_PMU", pmu)
        .args(["stat", "--check", "-e", events, "--", "false"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "--check {events} on {pmu}: {err}");
    // Nothing ran: no counts, and `false` was not started (its failure would show).
    assert!(!err.contains("Performance counter stats"), "{err}");
    text
}

fn line<'a>(text: &'a str, event: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(event))
        .unwrap_or_else(|| panic!("no line for {event} in:\n{text}"))
}

#[test]
fn seed_example_on_intel_core() {
    if !have_libpfm() {
        return skip("libpfm4 is not installed (apt-get install libpfm4)");
    }
    let text = check("core", "cycles,bus-cycles,r10000013c");
    assert!(text.starts_with("PMU core: 2 generic + 3 fixed"), "{text}");
    assert!(text.contains("2: ref-cycles"), "{text}");
    assert!(
        line(&text, "cycles").contains("fixed counter 1 or any generic"),
        "{text}"
    );
    assert!(
        line(&text, "bus-cycles").contains("generic counters only"),
        "{text}"
    );
    let r = line(&text, "r10000013c");
    assert!(r.contains("bit 32") && r.contains("bus cycles"), "{r}");
    assert!(
        r.contains("generic counters only") && r.contains("not ref-cycles"),
        "{r}"
    );
    // Two generic-only events on two generic counters, cycles on fixed counter 1: the
    // three count at once (as in the patch's `perf stat` output, unscaled).
    assert!(
        text.contains(
            "Plan: {cycles,bus-cycles,r10000013c} count at once, nothing is multiplexed."
        ),
        "{text}"
    );
    // As one group too; a fourth generic-only event breaks the group.
    assert!(check("core", "{cycles,bus-cycles,r10000013c}").contains("count at once"));
    let text = check("core", "{cycles,bus-cycles,r10000013c,branches}");
    assert!(
        text.contains(
            "{cycles,bus-cycles,r10000013c,branches} cannot be scheduled: it needs 4 counters \
             (3 of them generic-only); this PMU has 2 generic + 3 fixed"
        ),
        "{text}"
    );
    assert!(
        text.contains("Split it: '{cycles,bus-cycles,r10000013c}' '{branches}'"),
        "{text}"
    );
}

#[test]
fn fixed_counter_two_holds_one_ref_cycles() {
    if !have_libpfm() {
        return skip("libpfm4 is not installed (apt-get install libpfm4)");
    }
    let text = check("core", "{ref-cycles,r0300}");
    assert!(
        line(&text, "ref-cycles").contains("fixed counter 2 only"),
        "{text}"
    );
    assert!(
        line(&text, "r0300").contains("fixed counter 2 only"),
        "{text}"
    );
    assert!(
        text.contains("ref-cycles and r0300 each need fixed counter 2"),
        "{text}"
    );
    assert!(
        text.contains("Split it: '{ref-cycles}' '{r0300}'"),
        "{text}"
    );
}

#[test]
fn skylake_has_eight_generic_counters() {
    if !have_libpfm() {
        return skip("libpfm4 is not installed (apt-get install libpfm4)");
    }
    let nine = ["branches"; 9].join(",");
    let text = check("skl", &format!("{{{nine}}}"));
    assert!(text.starts_with("PMU skl: 8 generic + 3 fixed"), "{text}");
    assert!(
        text.contains("it needs 9 counters (9 of them generic-only)"),
        "{text}"
    );
    let eight = ["branches"; 8].join(",");
    assert!(
        text.contains(&format!("Split it: '{{{eight}}}' '{{branches}}'")),
        "{text}"
    );
    // Ungrouped, the same events are multiplexed in two sets, and the plan says how to
    // have perfkit schedule them.
    let text = check("skl", &nine);
    assert!(
        text.contains("2 sets that each fit will be multiplexed"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "perfkit stat --event-set '{{{eight}}}' --event-set '{{branches}}'"
        )),
        "{text}"
    );
}

#[test]
fn stat_warns_before_counting_a_group_that_cannot_be_scheduled() {
    if !have_libpfm() {
        return skip("libpfm4 is not installed (apt-get install libpfm4)");
    }
    let out = perfkit()
        .env("LIBPFM_FORCE_PMU", "core")
        .args([
            "stat",
            "-e",
            "{bus-cycles,r10000013c,branches},task-clock",
            "--",
            "true",
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("Warning: {bus-cycles,r10000013c,branches} cannot be scheduled"),
        "{err}"
    );
    assert!(
        err.contains("Split it: '{bus-cycles,r10000013c}' '{branches}'"),
        "{err}"
    );
    // It still counts what it can.
    assert!(err.contains("task-clock"), "{err}");
}

#[test]
fn record_warns_before_opening_a_group_that_cannot_be_scheduled() {
    if !have_libpfm() {
        return skip("libpfm4 is not installed (apt-get install libpfm4)");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = perfkit()
        .env("LIBPFM_FORCE_PMU", "core")
        .args(["record", "-e", "{bus-cycles,r10000013c,branches}", "-o"])
        .arg(dir.path().join("perf.data"))
        .args(["--", "true"])
        .output()
        .unwrap();
    // Without a hardware PMU here the record itself fails after the warning; either way
    // the warning comes first.
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("Warning: {bus-cycles,r10000013c,branches} cannot be scheduled"),
        "{err}"
    );
    assert!(
        err.contains("Split it: '{bus-cycles,r10000013c}' '{branches}'"),
        "{err}"
    );
}
