//! perf's tool events (`duration_time`, `user_time`, `system_time`), `-r` with `--table`
//! and the per-run runtime, and `--per-cache`, against perf 6.1 here and the kernel's own
//! numbers.

mod common;

use common::{have_perf, perf_stat_stderr, perfkit, skip};

fn kit_stat(args: &[&str]) -> String {
    let out = perfkit()
        .arg("stat")
        .args(args)
        .output()
        .expect("run perfkit");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    err
}

/// The `-x,` row of `event`, split.
fn csv_row<'a>(text: &'a str, event: &str) -> Vec<&'a str> {
    text.lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.get(2) == Some(&event))
        .unwrap_or_else(|| panic!("no {event} in {text}"))
}

/// A busy loop of about `ms` milliseconds of user CPU time.
const SPIN: &str = "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done";

#[test]
fn tool_events_count_wall_and_cpu_time_in_ns() {
    let k = kit_stat(&[
        "-x,",
        "-e",
        "duration_time,user_time,system_time,task-clock",
        "--",
        "sh",
        "-c",
        SPIN,
    ]);
    let num = |ev: &str| -> f64 { csv_row(&k, ev)[0].parse().unwrap_or(0.0) };
    for ev in ["duration_time", "user_time", "system_time"] {
        assert_eq!(csv_row(&k, ev)[1], "ns", "{k}");
    }
    let (dur, user, task) = (num("duration_time"), num("user_time"), num("task-clock"));
    // The wall time covers the CPU time the command used; the kernel's task-clock and
    // the command's rusage agree within the tick rusage is kept in (plus 2 ms).
    assert!(
        dur * 1e-6 >= task * 0.9,
        "duration {dur} ns, task-clock {task} ms: {k}"
    );
    let cpu = (user + num("system_time")) * 1e-6;
    assert!(
        (cpu - task).abs() <= task * 0.2 + 10.0,
        "rusage {cpu} ms vs task-clock {task} ms: {k}"
    );
    // Whole nanoseconds, as perf prints them; the event's runtime is its value.
    assert_eq!(
        csv_row(&k, "duration_time")[3],
        csv_row(&k, "duration_time")[0],
        "{k}"
    );
    if have_perf() {
        let args = [
            "-e",
            "duration_time,user_time,system_time",
            "--",
            "sleep",
            "0.01",
        ];
        let p = perf_stat_stderr(&args);
        let k = kit_stat(&args);
        let layout = |t: &str| -> Vec<String> {
            t.lines()
                .filter(|l| l.contains("_time"))
                .map(|l| {
                    // A value, or `<not counted>` where rusage kept 0 for that side: which
                    // side gets 0 ns of a 1 ms command varies run by run, for both tools.
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let v = if f[0] == "<not" && f[1] == "counted>" {
                        "N"
                    } else {
                        assert!(f[0].parse::<u64>().is_ok(), "{l}");
                        "N"
                    };
                    format!("{v} {}", f[f.len() - 2..].join(" "))
                })
                .collect()
        };
        assert_eq!(layout(&k), layout(&p), "perf:\n{p}\nperfkit:\n{k}");
        // -A: one row, for the first CPU.
        let k = kit_stat(&["-A", "-a", "-e", "duration_time", "--", "sleep", "0.01"]);
        let rows: Vec<&str> = k.lines().filter(|l| l.contains("duration_time")).collect();
        assert_eq!(rows.len(), 1, "{k}");
        assert!(rows[0].starts_with("CPU0 "), "{k}");
    }
}

#[test]
fn repeat_prints_the_last_runs_runtime_and_perfs_table() {
    let k = kit_stat(&["-r", "3", "-x,", "-e", "task-clock", "--", "sh", "-c", SPIN]);
    let row = csv_row(&k, "task-clock");
    let (msec, runtime): (f64, f64) = (row[0].parse().unwrap(), row[4].parse().unwrap());
    // The runtime is one run's (ns), not the sum of three: within 2x of the mean.
    assert!(
        runtime < msec * 1e6 * 2.0 && runtime > msec * 1e6 / 2.0,
        "mean {msec} ms, runtime {runtime} ns: {k}"
    );
    let k = kit_stat(&["-r", "3", "--table", "-e", "task-clock", "true"]);
    let lines: Vec<&str> = k.lines().collect();
    let t = lines
        .iter()
        .position(|l| l.trim() == "# Table of individual measurements:")
        .unwrap_or_else(|| panic!("{k}"));
    let runs: Vec<&str> = lines[t + 1..t + 4].to_vec();
    for r in &runs {
        // ` 0.0011279 (+0.0000545) ##`: the time, its distance from the mean, a bar.
        let f: Vec<&str> = r.split_whitespace().collect();
        assert_eq!(f.len(), 3, "{r}");
        assert!(f[1].starts_with("(+") || f[1].starts_with("(-"), "{r}");
        assert!(f[2].chars().all(|c| c == '#'), "{r}");
        assert_eq!(
            f[0].split('.').nth(1).map(str::len),
            f[1].trim_end_matches(')').split('.').nth(1).map(str::len),
            "{r}"
        );
    }
    assert_eq!(lines[t + 4], "", "{k}");
    assert_eq!(lines[t + 5].trim(), "# Final result:", "{k}");
    assert!(
        lines[t + 6].contains(" +- ") && lines[t + 6].contains("seconds time elapsed"),
        "{k}"
    );
    if have_perf() {
        let mask = |t: &str| -> Vec<String> {
            t.lines()
                .skip_while(|l| !l.contains("# Table"))
                .map(|l| {
                    l.trim_end()
                        .replace(|c: char| c.is_ascii_digit() || c == '#', "")
                        .replace(['+', '-'], "s")
                })
                .collect()
        };
        let p = perf_stat_stderr(&["-r", "3", "--table", "-e", "task-clock", "true"]);
        assert_eq!(mask(&k).len(), mask(&p).len(), "perf:\n{p}\nperfkit:\n{k}");
        let out = perfkit()
            .args(["stat", "--table", "true"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("--table is only supported with -r"));
    }
}

#[test]
fn repeat_prints_no_deviation_where_there_is_none() {
    // alignment-faults opens here and counts 0 in every run: no `( +- )`, as perf.
    let args = ["-r", "3", "-e", "alignment-faults,task-clock", "true"];
    let k = kit_stat(&args);
    let line = |t: &str, ev: &str| -> String {
        t.lines()
            .find(|l| l.contains(ev))
            .unwrap_or_default()
            .to_string()
    };
    assert!(
        line(&k, "alignment-faults").starts_with("                 0 "),
        "{k}"
    );
    assert!(!line(&k, "alignment-faults").contains("( +-"), "{k}");
    assert!(line(&k, "task-clock").contains("( +-"), "{k}");
    // A tool event that read zero in every run stays `<not counted>`.
    let k = kit_stat(&["-r", "2", "-x,", "-e", "duration_time", "true"]);
    assert!(k.starts_with(|c: char| c.is_ascii_digit()), "{k}");
    if have_perf() {
        let p = perf_stat_stderr(&args);
        assert!(!line(&p, "alignment-faults").contains("( +-"), "{p}");
    }
}

#[test]
fn per_cache_groups_cpus_that_share_a_cache() {
    let cpu0 = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache/index0/level");
    if !cpu0.exists() {
        skip("sysfs has no cache topology here");
        return;
    }
    // The highest level's caches, by id, from sysfs: the buckets to expect.
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
    let ncpus = online
        .trim()
        .split(',')
        .map(|r| match r.split_once('-') {
            Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
            None => 1,
        })
        .sum::<usize>();
    let k = kit_stat(&[
        "--per-cache",
        "-a",
        "-x,",
        "-e",
        "cpu-clock",
        "sleep",
        "0.05",
    ]);
    let rows: Vec<Vec<&str>> = k.lines().map(|l| l.split(',').collect()).collect();
    assert!(!rows.is_empty(), "{k}");
    let mut cpus = 0;
    for r in &rows {
        assert!(
            r[0].starts_with("S") && r[0].contains("-L") && r[0].contains("-ID"),
            "{k}"
        );
        cpus += r[1].parse::<usize>().unwrap();
        // Each bucket's cpu-clock is about its CPUs times the wall time.
        let ms: f64 = r[2].parse().unwrap();
        assert!(ms > 0.0, "{k}");
    }
    assert_eq!(cpus, ncpus, "every online CPU in one bucket: {k}");
    let k2 = kit_stat(&[
        "--per-cache=L1",
        "-a",
        "-x,",
        "-e",
        "cpu-clock",
        "sleep",
        "0.05",
    ]);
    assert_eq!(
        k2.lines().count(),
        ncpus,
        "L1 caches are per CPU here: {k2}"
    );
    assert!(k2.lines().all(|l| l.contains("-L1-ID")), "{k2}");
    let out = perfkit()
        .args(["stat", "--per-cache=L9", "-a", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}
