//! `perfkit stat` with perfmon2-style event sets scheduled by perfkit: `--event-set` and -e
//! groups, `--switch-every MS`, `--switch-on EVENT:N`, with and without -I. This machine
//! has no PMU, so software events stand in; the exact-count comparisons with kernel
//! multiplexing run on the emulated arm64 PMU (perfkit-hwtest `event_sets_*`).

mod common;
use common::perfkit;

/// The command's stderr after a successful run.
fn stat(args: &[&str]) -> String {
    let out = perfkit().arg("stat").args(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "perfkit stat {args:?}:\n{err}");
    err
}

/// The footer's `set N: {..} active P% of T ms, K activations` lines: (P, T, K).
fn set_lines(text: &str) -> Vec<(f64, f64, u64)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            if !l.starts_with("set ") {
                return None;
            }
            let (_, rest) = l.split_once("active ")?;
            let (pct, rest) = rest.split_once("% of ")?;
            let (ms, rest) = rest.split_once(" ms, ")?;
            let (k, _) = rest.split_once(' ')?;
            Some((pct.parse().ok()?, ms.parse().ok()?, k.parse().ok()?))
        })
        .collect()
}

/// `(N switches)` from the footer.
fn switches(text: &str) -> u64 {
    let l = text
        .lines()
        .find(|l| l.contains(" Event sets: "))
        .unwrap_or_else(|| panic!("no event-set footer in:\n{text}"));
    let (_, rest) = l.split_once('(').unwrap();
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// The value and running share of an event's row (`VALUE [unit] EVENT ... (P%)`).
fn row(text: &str, event: &str) -> (f64, f64) {
    let l = text
        .lines()
        .find(|l| {
            let mut w = l.split_whitespace();
            let v = w.next();
            let n = w.next();
            v.is_some_and(|v| v.replace(',', "").parse::<f64>().is_ok())
                && (n == Some(event) || (n == Some("msec") && w.next() == Some(event)))
        })
        .unwrap_or_else(|| panic!("no {event} row in:\n{text}"));
    let v = l.split_whitespace().next().unwrap().replace(',', "");
    let pct = l
        .rsplit_once('(')
        .and_then(|(_, p)| p.trim_end_matches([')', '%']).parse().ok())
        .unwrap_or(100.0);
    (v.parse().unwrap(), pct)
}

const BUSY: &[&str] = &[
    "--",
    env!("CARGO_BIN_EXE_perfkit"),
    "test",
    "-w",
    "noploop",
    "1",
];

#[test]
fn time_switched_sets_share_the_run_and_scale_to_it() {
    let mut args = vec![
        "--event-set",
        "task-clock,page-faults",
        "--event-set",
        "{cpu-clock,context-switches}",
        "--switch-every",
        "20",
    ];
    args.extend_from_slice(BUSY);
    let text = stat(&args);
    let sets = set_lines(&text);
    assert_eq!(sets.len(), 2, "{text}");
    // The sets take turns: together they cover the whole counted time, each had turns.
    let share: f64 = sets.iter().map(|s| s.0).sum();
    assert!(
        (share - 100.0).abs() < 0.02,
        "shares sum to {share}:\n{text}"
    );
    assert!(sets.iter().all(|s| s.0 > 0.0 && s.2 >= 2), "{text}");
    // Activations alternate: set 1 has one more or as many as set 2.
    assert!(
        sets[0].2 == sets[1].2 || sets[0].2 == sets[1].2 + 1,
        "{text}"
    );
    assert_eq!(switches(&text), sets[0].2 + sets[1].2 - 1, "{text}");
    // task-clock runs at 1 ns per ns whenever it runs: scaled to the run it is the whole
    // counted time (the kernel's enabled times of both sets), to rounding.
    let total_ms = sets[0].1;
    let (tc, tc_pct) = row(&text, "task-clock");
    assert!(
        (tc - total_ms).abs() <= 0.01 + total_ms * 1e-4,
        "task-clock {tc} ms vs {total_ms} ms:\n{text}"
    );
    // Each event's running share is its set's share.
    assert!((tc_pct - sets[0].0).abs() < 0.02, "{text}");
    let (_, cs_pct) = row(&text, "context-switches");
    assert!((cs_pct - sets[1].0).abs() < 0.02, "{text}");
    // task-clock's rate never changes, so its stated bound is 0.
    let bound = text
        .lines()
        .find(|l| l.contains("task-clock") && l.contains("+-"))
        .unwrap_or_else(|| panic!("no bound for task-clock:\n{text}"));
    assert!(bound.contains("+- 0.000%"), "{bound}");
}

#[test]
fn groups_in_e_are_sets_and_intervals_rescale() {
    let mut args = vec![
        "-I",
        "200",
        "-x",
        ",",
        "-e",
        "{task-clock},{cpu-clock}",
        "--switch-every",
        "10",
    ];
    args.extend_from_slice(BUSY);
    let text = stat(&args);
    // Every full interval has both events, their shares adding up to 100%.
    let mut intervals = std::collections::BTreeMap::<String, Vec<f64>>::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split(',').collect();
        if f.len() > 6 && (f[3] == "task-clock" || f[3] == "cpu-clock") {
            intervals
                .entry(f[0].to_string())
                .or_default()
                .push(f[5].parse().unwrap_or(-1.0));
        }
    }
    assert!(intervals.len() >= 4, "{text}");
    let mut seen = 0;
    // The last interval ends with the command's exit, when the kernel folds the exited
    // task's counters into their parents; its shares are not checked (seen 100% + 100%).
    let last = intervals.keys().next_back().cloned();
    for (t, pcts) in intervals.iter().filter(|(t, _)| Some(*t) != last.as_ref()) {
        assert_eq!(pcts.len(), 2, "interval {t}:\n{text}");
        // An interval in which the command ran only while one set was active (a loaded
        // machine) shows the other `<not counted>` and the counted one at 100%.
        let counted: Vec<f64> = pcts.iter().copied().filter(|&p| p > 0.0).collect();
        if counted.is_empty() {
            continue; // the command did not run at all in this interval
        }
        let sum: f64 = counted.iter().sum();
        assert!((sum - 100.0).abs() < 0.05, "interval {t}: {pcts:?}\n{text}");
        seen += 1;
    }
    // Whether an interval saw both sets depends on when the loaded machine ran the
    // command; that some interval counted is certain (it runs for a second).
    assert!(seen >= 1, "no interval counted anything:\n{text}");
}

#[test]
fn overflow_switching_switches_once_per_period() {
    // dd's 8 MiB buffer faults about 2048 pages in; the count of the same command alone
    // gives the scale of how many switches 50-fault periods can make.
    let dd = [
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=8M",
        "count=1",
    ];
    let mut alone = vec!["-e", "page-faults"];
    alone.extend_from_slice(&dd);
    let faults = row(&stat(&alone), "page-faults").0;
    assert!(faults > 2000.0, "{faults}");
    let mut args = vec![
        "-e",
        "{page-faults},{minor-faults}",
        "--switch-on",
        "page-faults:50",
    ];
    args.extend_from_slice(&dd);
    let text = stat(&args);
    let n = switches(&text) as f64;
    // One switch per overflow: never more than the faults allow (10% for the runs'
    // difference), and most of them arrive before the command ends.
    assert!(
        n <= faults * 1.1 / 50.0,
        "{n} switches for {faults} faults:\n{text}"
    );
    assert!(
        n >= faults * 0.5 / 50.0,
        "{n} switches for {faults} faults:\n{text}"
    );
    let sets = set_lines(&text);
    assert_eq!(sets.len(), 2, "{text}");
    assert!(sets.iter().all(|s| s.2 >= 5), "{text}");
}

#[test]
fn bad_switching_flags_are_refused() {
    for (args, want) in [
        (
            vec!["--event-set", "task-clock", "--switch-every", "0"],
            "--switch-every 0",
        ),
        (
            vec![
                "-e",
                "{task-clock},{cpu-clock}",
                "--switch-on",
                "task-clock",
            ],
            "EVENT:N",
        ),
        (
            vec![
                "-e",
                "{task-clock},{cpu-clock}",
                "--switch-on",
                "bogus-event:10",
            ],
            "bogus-event",
        ),
        (vec!["--event-set", "task-clock", "-D", "100"], "drop -D"),
        (vec!["--event-set", " "], "--event-set"),
    ] {
        let mut a = vec!["stat"];
        a.extend_from_slice(&args);
        a.extend_from_slice(&["--", "true"]);
        let out = perfkit().args(&a).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{a:?} succeeded:\n{err}");
        assert!(err.contains(want), "{a:?}: expected {want:?} in:\n{err}");
    }
}
