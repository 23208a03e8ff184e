//! `perfkit record --off-cpu`: a program that sleeps in a known function shows that
//! function leading the `offcpu-time` event, with the time it slept, in perfkit's report,
//! script and exports and in perf's report and script of the same file.

mod common;

use common::sleeper::{build, tracefs_ready};
use common::{have_perf, perf_ok, perfkit, run_ok, skip, stdout_ok};

/// The rows of the `offcpu-time` section of a `--stdio` report: (percent, rest).
fn offcpu_rows(report: &str) -> Vec<(f64, String)> {
    let Some(at) = report.find("of event 'offcpu-time'") else {
        return Vec::new();
    };
    report[at..]
        .lines()
        .skip(1)
        .take_while(|l| !l.starts_with("# Samples:"))
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            Some((pct.trim().parse().ok()?, rest.trim().to_string()))
        })
        .collect()
}

fn event_count(report: &str, event: &str) -> Option<u64> {
    let at = report.find(&format!("of event '{event}'"))?;
    let line = report[at..]
        .lines()
        .find(|l| l.starts_with("# Event count (approx.):"))?;
    line.rsplit(' ').next()?.parse().ok()
}

#[test]
fn off_cpu_time_leads_with_the_sleeping_function() {
    if !tracefs_ready() {
        return skip("tracefs with sched:sched_switch is not available");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler");
    };
    let data = dir.path().join("off.data");
    let out = run_ok(
        perfkit()
            .args(["record", "--off-cpu", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin),
    );
    let printed = String::from_utf8_lossy(&out.stdout);
    let mut nums = printed
        .split_whitespace()
        .map(|n| n.parse::<u64>().unwrap());
    let (measured, asked) = (nums.next().unwrap(), nums.next().unwrap());

    // perfkit report: its own event, led by the sleeping function, weighted by time.
    let report = stdout_ok(
        perfkit()
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "sym",
                "-g",
                "none",
                "-i",
            ])
            .arg(&data),
    );
    let rows = offcpu_rows(&report);
    assert!(!rows.is_empty(), "no offcpu-time section:\n{report}");
    assert!(
        rows[0].1.contains("sleep_in_known_function") && rows[0].0 > 90.0,
        "the sleeping function leads: {rows:?}"
    );
    let total = event_count(&report, "offcpu-time").unwrap();
    // The kernel's switch-out comes after the syscall started and its switch-in before it
    // returned: the time off the CPU lies within what the program measured around the
    // sleeps, and (nanosleep never returns early) close to what it asked for.
    assert!(
        total <= measured && total * 10 >= asked * 9,
        "off-CPU {total} ns, asked {asked}, measured {measured}"
    );
    // The on-CPU event is still there, with its own samples.
    assert!(report.contains("of event 'cpu-clock'") || report.contains("of event 'cycles'"));

    // script: the off-CPU sample with its period and its chain.
    let script = stdout_ok(perfkit().args(["script", "-i"]).arg(&data));
    let line = script
        .lines()
        .find(|l| l.contains("offcpu-time:"))
        .unwrap_or_else(|| panic!("no offcpu-time sample in script:\n{script}"));
    assert!(script.contains("sleep_in_known_function"), "{script}");
    let period: u64 = line
        .split_whitespace()
        .find_map(|w| w.parse().ok().filter(|&n: &u64| n > 1_000_000))
        .unwrap();
    assert!(period <= total, "{line}");

    // Exports: the folded stacks carry the event as their root, in nanoseconds.
    let folded = stdout_ok(
        perfkit()
            .args(["report", "--format", "folded", "-i"])
            .arg(&data),
    );
    let off: u64 = folded
        .lines()
        .filter(|l| l.starts_with("offcpu-time;"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(off, total, "{folded}");
    assert!(
        folded
            .lines()
            .any(|l| l.starts_with("offcpu-time;") && l.contains("sleep_in_known_function")),
        "{folded}"
    );
    let ss = dir.path().join("p.speedscope.json");
    run_ok(
        perfkit()
            .args(["report", "--format", "speedscope", "-o"])
            .arg(&ss)
            .arg("-i")
            .arg(&data),
    );
    // speedscope: a profile per thread in nanoseconds; each off-CPU sample is its stack with
    // an `[off-CPU]` frame on top, weighing its time (the switch records are not counted
    // again), under the sleeping function.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&ss).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let name = |i: &serde_json::Value| frames[i.as_u64().unwrap() as usize]["name"].as_str();
    let (mut off_ns, mut under_sleeper) = (0u64, false);
    for prof in doc["profiles"].as_array().unwrap() {
        assert_eq!(prof["unit"], "nanoseconds", "{}", prof["name"]);
        let samples = prof["samples"].as_array().unwrap();
        let weights = prof["weights"].as_array().unwrap();
        for (stack, w) in samples.iter().zip(weights) {
            let stack = stack.as_array().unwrap();
            if stack.last().and_then(name) == Some("[off-CPU]") {
                off_ns += w.as_u64().unwrap();
                under_sleeper |= stack
                    .iter()
                    .any(|f| name(f) == Some("sleep_in_known_function"));
            }
        }
    }
    assert_eq!(off_ns, total, "speedscope's off-CPU time");
    assert!(
        under_sleeper,
        "no off-CPU sample under the sleeping function"
    );
    let ff = dir.path().join("p.firefox.json");
    run_ok(
        perfkit()
            .args(["report", "--format", "firefox", "-o"])
            .arg(&ff)
            .arg("-i")
            .arg(&data),
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&ff).unwrap()).unwrap();
    let track = doc["threads"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"].as_str().unwrap().ends_with("(off-CPU)"))
        .expect("an off-CPU track");
    assert_eq!(track["samples"]["weightType"], "tracing-ms");
    let ms: u64 = track["samples"]["weight"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert!(
        ms.abs_diff(total / 1_000_000)
            <= 1 + track["samples"]["weight"].as_array().unwrap().len() as u64
    );

    if !have_perf() {
        return skip("perf is not installed");
    }
    // perf reads the file: the same event, count, leading symbol and script lines.
    let theirs = perf_ok(
        &[
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "sym",
            "-g",
            "none",
        ],
        &data,
    );
    assert_eq!(event_count(&theirs, "offcpu-time"), Some(total), "{theirs}");
    let their_rows = offcpu_rows(&theirs);
    assert_eq!(their_rows.first().map(|r| &r.1), rows.first().map(|r| &r.1));
    let their_script = perf_ok(&["script"], &data);
    let pick = |s: &str| -> Vec<String> {
        s.split("\n\n")
            .filter(|b| b.contains("offcpu-time:"))
            .map(|b| b.trim().to_string())
            .collect()
    };
    assert_eq!(pick(&script), pick(&their_script));
    // Attrs as perf describes them: a bpf-output event named offcpu-time, frequency 1,
    // with perf's OFFCPU_SAMPLE_TYPES fields.
    let evlist = perf_ok(&["evlist", "-v"], &data);
    let off = evlist
        .lines()
        .find(|l| l.starts_with("offcpu-time:"))
        .unwrap_or_else(|| panic!("{evlist}"));
    for want in [
        "type: 1",
        "config: 0xa",
        "{ sample_period, sample_freq }: 1,",
        "sample_type: IP|TID|TIME|CALLCHAIN|PERIOD|IDENTIFIER",
        "freq: 1",
    ] {
        assert!(off.contains(want), "{want}: {off}");
    }
}

/// perf 6.1 as Debian builds it has no BPF skeletons: it ignores `--off-cpu` with a
/// warning and records no off-CPU event. perfkit records it there.
#[test]
fn perf_here_ignores_off_cpu_and_perfkit_does_not() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !tracefs_ready() {
        return skip("tracefs with sched:sched_switch is not available");
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs = dir.path().join("perf.data");
    let out = std::process::Command::new("perf")
        .args(["record", "--off-cpu", "-o"])
        .arg(&theirs)
        .args(["--", "sleep", "0.05"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let evlist = perf_ok(&["evlist"], &theirs);
    if err.contains("BUILD_BPF_SKEL") {
        assert!(!evlist.contains("offcpu-time"), "{evlist}");
    } else {
        // A perf with BPF skeletons: both files carry the event.
        assert!(evlist.contains("offcpu-time"), "{evlist}");
    }
    let ours = dir.path().join("perfkit.data");
    run_ok(
        perfkit()
            .args(["record", "--off-cpu", "-o"])
            .arg(&ours)
            .args(["--", "sleep", "0.05"]),
    );
    let evlist = perf_ok(&["evlist"], &ours);
    assert!(evlist.lines().any(|l| l == "offcpu-time"), "{evlist}");
    let report = perf_ok(&["report", "--stdio", "--sort", "comm"], &ours);
    let total = event_count(&report, "offcpu-time").unwrap();
    assert!(
        total >= 45_000_000,
        "sleep 0.05 slept {total} ns:\n{report}"
    );
}
