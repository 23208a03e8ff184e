//! `perfkit stat` as a user runs it: exit statuses, output formats parsed back, statistics
//! checked by hand, aggregation that adds up, and agreement with `perf stat`.

mod common;

use assert_cmd::Command;
use common::perfkit;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The C workload, compiled once per test run (None if no C compiler).
fn workload() -> Option<&'static PathBuf> {
    static W: OnceLock<Option<PathBuf>> = OnceLock::new();
    W.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("perfkit-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok()?;
        let out = dir.join("workload");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/workload.c");
        let ok = std::process::Command::new("cc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&out)
            .arg(src)
            .status()
            .ok()?
            .success();
        ok.then_some(out)
    })
    .as_ref()
}

macro_rules! need_workload {
    () => {
        match workload() {
            Some(w) => w,
            None => {
                common::skip("no C compiler to build the workload");
                return;
            }
        }
    };
}

fn stderr_of(cmd: &mut Command) -> (i32, String) {
    let out = cmd.output().expect("run perfkit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn csv_rows(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect()
}

fn json_rows(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).expect("valid JSON line"))
        .collect()
}

/// The CPU time thread `tid` of process `pid` has run, in ms: the kernel's sum_exec_runtime
/// (first field of /proc/PID/task/TID/schedstat), the quantity task-clock counts.
fn cpu_ms(pid: u32, tid: i32) -> f64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).unwrap();
    let ns: f64 = text.split_whitespace().next().unwrap().parse().unwrap();
    ns / 1e6
}

/// How far cpu_ms may lag a running thread (its runtime is brought up to date at scheduler
/// ticks and switches), plus the jitter of a counting window's edges, in ms.
const CPU_MS_SLACK: f64 = 12.0;

/// A task-clock count `ms` taken during a window of `window_ms` wall time inside an interval
/// of `wall_ms`, in which the thread ran `cpu_ms` (measured around the interval): the count
/// is at most that CPU time, and at least what is left of it after the thread ran for all of
/// the interval outside the window. These bounds hold whatever the load of the machine.
fn assert_within_cpu_time(ms: f64, cpu_ms: f64, wall_ms: f64, window_ms: f64, what: &str) {
    let outside = (wall_ms - window_ms).max(0.0);
    assert!(
        ms <= cpu_ms + CPU_MS_SLACK,
        "{what}: {ms} msec counted, but the thread ran only {cpu_ms} ms"
    );
    assert!(
        ms >= cpu_ms - outside - CPU_MS_SLACK,
        "{what}: {ms} msec counted, but the thread ran {cpu_ms} ms of which at most \
         {outside} ms outside the {window_ms} ms window"
    );
}

#[test]
fn exit_status_is_passed_through() {
    let (code, _) = stderr_of(perfkit().args(["stat", "--", "sh", "-c", "exit 3"]));
    assert_eq!(code, 3);
    let (code, _) = stderr_of(perfkit().args(["stat", "--", "true"]));
    assert_eq!(code, 0);
}

#[test]
fn signal_death_gives_128_plus_signal() {
    let (code, err) = stderr_of(perfkit().args(["stat", "--", "sh", "-c", "kill -TERM $$"]));
    assert_eq!(code, 128 + 15, "{err}");
    // The counts are still printed.
    assert!(err.contains("task-clock"), "{err}");
}

#[test]
fn missing_command_exits_127() {
    let (code, err) = stderr_of(perfkit().args(["stat", "--", "no-such-command-xyz"]));
    assert_eq!(code, 127);
    assert!(
        err.contains("no-such-command-xyz: command not found"),
        "{err}"
    );
}

#[test]
fn bad_arguments_name_the_argument() {
    let (code, err) = stderr_of(perfkit().args(["stat", "-p", "2147483000"]));
    assert_ne!(code, 0);
    assert!(err.contains("-p 2147483000: no such process"), "{err}");
    let (code, err) = stderr_of(perfkit().args(["stat", "-C", "0-4096", "--", "true"]));
    assert_ne!(code, 0);
    assert!(
        err.contains("-C 0-4096") && err.contains("does not exist"),
        "{err}"
    );
    let (code, err) = stderr_of(perfkit().args(["stat", "-e", "no-such-event", "--", "true"]));
    assert_ne!(code, 0);
    assert!(err.contains("-e") && err.contains("no-such-event"), "{err}");
    assert!(err.contains("perfkit list"), "{err}");
}

#[test]
fn default_output_has_perf_layout_and_not_supported_rows() {
    let (code, err) = stderr_of(perfkit().args(["stat", "--", "true"]));
    assert_eq!(code, 0);
    assert!(
        err.contains(" Performance counter stats for 'true':"),
        "{err}"
    );
    for ev in [
        "task-clock",
        "context-switches",
        "cpu-migrations",
        "page-faults",
    ] {
        assert!(err.contains(ev), "{ev} missing: {err}");
    }
    assert!(err.contains("msec task-clock"), "{err}");
    assert!(err.contains("CPUs utilized"), "{err}");
    assert!(err.contains("seconds time elapsed"), "{err}");
    assert!(
        err.contains("seconds user") && err.contains("seconds sys"),
        "{err}"
    );
    let hw_here = perfkit::Counter::open(
        &perfkit::Attr::new(perfkit::Hardware::CpuCycles).exclude_kernel(true),
        &perfkit::Target::this_thread(),
    )
    .is_ok();
    if !hw_here {
        for ev in ["cycles", "instructions", "branches", "branch-misses"] {
            assert!(
                err.lines()
                    .any(|l| l.contains("<not supported>") && l.trim_end().ends_with(ev)),
                "{ev} not shown as <not supported>: {err}"
            );
        }
        assert_eq!(err.matches("no hardware counters").count(), 1, "{err}");
    }
}

#[test]
fn csv_fields_in_perf_order() {
    let w = need_workload!();
    let (code, err) = stderr_of(
        perfkit()
            .args(["stat", "-x", ",", "-e", "task-clock,page-faults", "--"])
            .arg(w)
            .args(["pages", "500"]),
    );
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 2, "{err}");
    let tc = &rows[0];
    assert_eq!(tc.len(), 7, "{tc:?}");
    assert!(tc[0].parse::<f64>().unwrap() > 0.0);
    assert_eq!(tc[1], "msec");
    assert_eq!(tc[2], "task-clock");
    assert!(tc[3].parse::<u64>().unwrap() > 0, "runtime");
    assert_eq!(tc[4], "100.00");
    assert!(tc[5].parse::<f64>().unwrap() > 0.0);
    assert_eq!(tc[6], "CPUs utilized");
    let pf = &rows[1];
    let faults: u64 = pf[0].parse().unwrap();
    assert!((500..600).contains(&faults), "{faults}");
    assert_eq!(pf[1], "");
    assert_eq!(pf[2], "page-faults");
    assert_eq!(pf[6], "K/sec");
    // The rate metric is count / task-clock seconds.
    let rate = pf[5].parse::<f64>().unwrap() * 1e3;
    let expect = faults as f64 / (tc[0].parse::<f64>().unwrap() / 1e3);
    assert!((rate / expect - 1.0).abs() < 0.01, "{rate} vs {expect}");
}

#[test]
fn repeat_statistics_match_a_hand_computation() {
    let w = need_workload!();
    let (code, err) = stderr_of(
        perfkit()
            .args([
                "stat",
                "-r",
                "5",
                "-j",
                "-e",
                "page-faults,task-clock",
                "--",
            ])
            .arg(w)
            .args(["pages", "300"]),
    );
    assert_eq!(code, 0, "{err}");
    let rows = json_rows(&err);
    let pf = rows.iter().find(|r| r["event"] == "page-faults").unwrap();
    // perf 6.1's JSON for -r: the mean as the counter value and `variance`, the relative
    // standard deviation of the mean in percent, with two decimals.
    let mean: f64 = pf["counter-value"].as_str().unwrap().parse().unwrap();
    assert!((300.0..400.0).contains(&mean), "{mean}");
    let pct = pf["variance"].as_f64().unwrap();
    assert!((0.0..10.0).contains(&pct), "{pct}");
    assert!(err.contains("\"variance\" : "), "{err}");
    assert!(pf.get("runs").is_none(), "perf has no per-run list: {err}");

    // The text form prints the relative deviation (on task-clock, which varies between
    // runs: page-faults can be equal in every run, and then perf prints no `+-`).
    let (_, text) = stderr_of(
        perfkit()
            .args(["stat", "-r", "3", "-e", "page-faults,task-clock", "--"])
            .arg(w)
            .args(["pages", "300"]),
    );
    assert!(text.contains("(3 runs)"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains("task-clock") && l.contains("( +- ")),
        "{text}"
    );
    assert!(text.contains("seconds time elapsed  ( +- "), "{text}");
}

#[test]
fn json_lines_have_stable_fields() {
    let (code, err) = stderr_of(perfkit().args(["stat", "-j", "--", "true"]));
    assert_eq!(code, 0);
    let rows = json_rows(&err);
    assert!(rows.len() >= 8, "{err}");
    for r in &rows {
        for f in [
            "counter-value",
            "unit",
            "event",
            "event-runtime",
            "pcnt-running",
        ] {
            assert!(r.get(f).is_some(), "{f} missing in {r}");
        }
    }
    let tc = rows.iter().find(|r| r["event"] == "task-clock").unwrap();
    assert_eq!(tc["unit"], "msec");
    assert_eq!(tc["metric-unit"], "CPUs utilized");
    assert!(
        tc["counter-value"]
            .as_str()
            .unwrap()
            .parse::<f64>()
            .unwrap()
            > 0.0
    );
}

#[test]
fn interval_mode_prints_one_line_per_event_per_interval() {
    let w = need_workload!();
    let (code, err) = stderr_of(
        perfkit()
            .args([
                "stat",
                "-I",
                "100",
                "--interval-count",
                "3",
                "-x",
                ",",
                "-e",
                "task-clock,page-faults",
                "--",
            ])
            .arg(w)
            .args(["spin", "2000"]),
    );
    assert_eq!(code, 0, "stopped by the interval count: {err}");
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 6, "{err}");
    let mut last = 0.0;
    let mut faults = 0;
    for (i, r) in rows.iter().enumerate() {
        let t: f64 = r[0].trim().parse().unwrap();
        assert!(t >= last);
        assert_eq!(
            r[3],
            if i % 2 == 0 {
                "task-clock"
            } else {
                "page-faults"
            }
        );
        if i % 2 == 1 {
            faults += r[1].parse::<u64>().unwrap();
            continue;
        }
        // How much the workload ran depends on the load of the machine; these relations
        // do not. Each interval counts its own time (not the total so far): one spinning
        // thread runs at most the interval's wall time (loosely: perfkit may be preempted
        // between reading the counts and the clock).
        let tc: f64 = r[1].parse().expect(&err);
        let wall_ms = (t - last) * 1000.0;
        assert!(
            tc > 0.0 && tc <= wall_ms * 1.1 + 20.0,
            "{tc} msec in {wall_ms} ms: {err}"
        );
        // The count is in msec: the kernel's running time (ns) of the counter says the same.
        let running_ms = r[4].parse::<f64>().unwrap() / 1e6;
        assert!((tc - running_ms).abs() <= 0.01 + tc * 0.001, "{err}");
        // CPUs utilized: task-clock over the interval's length.
        let cpus: f64 = r[6].parse().unwrap();
        assert!((cpus - tc / wall_ms).abs() <= 0.002 + 0.01 * cpus, "{err}");
        last = t;
    }
    // Interval counts are deltas: the intervals' page faults add up to (not three times)
    // the page faults of a whole run of the workload.
    let (code, whole) = stderr_of(
        perfkit()
            .args(["stat", "-x", ",", "-e", "page-faults", "--"])
            .arg(w)
            .args(["spin", "1"]),
    );
    assert_eq!(code, 0, "{whole}");
    let whole: u64 = csv_rows(&whole)[0][0].parse().unwrap();
    assert!(whole > 10, "{whole} page faults");
    assert!(
        faults > 0 && faults <= whole + whole / 10,
        "{faults} in the intervals, {whole} in all: {err}"
    );
}

#[test]
fn per_cpu_rows_add_up_to_the_aggregate() {
    if !is_root() {
        common::skip("system-wide counting needs root");
        return;
    }
    // cpu-clock counts every CPU for the whole counting window, which duration_time of
    // the same run measures: the relation holds whatever the machine's load stretches.
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-a",
        "-A",
        "-x",
        ",",
        "-e",
        "cpu-clock,duration_time",
        "--",
        "sleep",
        "0.2",
    ]));
    assert_eq!(code, 0, "{err}");
    let all = csv_rows(&err);
    let rows: Vec<&Vec<String>> = all.iter().filter(|r| r[3] == "cpu-clock").collect();
    let window_ms = |rows: &[Vec<String>], col: usize| -> f64 {
        let r = rows
            .iter()
            .find(|r| r[col] == "duration_time")
            .unwrap_or_else(|| panic!("no duration_time row: {err}"));
        r[col - 2].parse::<f64>().unwrap() / 1e6
    };
    let window = window_ms(&all, 3);
    let ncpu = std::thread::available_parallelism().unwrap().get();
    assert_eq!(rows.len(), ncpu, "{err}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r[0], format!("CPU{i}"));
        let ms: f64 = r[1].parse().unwrap();
        assert!(
            ms >= 180.0 && ms <= window * 1.05 + 1.0 && ms >= window * 0.8,
            "CPU{i}: {ms} ms in a {window} ms window: {err}"
        );
    }
    let sum: f64 = rows.iter().map(|r| r[1].parse::<f64>().unwrap()).sum();

    let (_, err) = stderr_of(perfkit().args([
        "stat",
        "-a",
        "-x",
        ",",
        "-e",
        "cpu-clock,duration_time",
        "--",
        "sleep",
        "0.2",
    ]));
    let all = csv_rows(&err);
    let agg: f64 = all
        .iter()
        .find(|r| r[2] == "cpu-clock")
        .unwrap_or_else(|| panic!("{err}"))[0]
        .parse()
        .unwrap();
    let agg_window = window_ms(&all, 2);
    // The aggregate is the per-CPU rows summed: every CPU for this run's window.
    assert!(
        (agg / (agg_window * ncpu as f64) - 1.0).abs() < 0.15,
        "aggregate {agg} ms for {ncpu} CPUs in a {agg_window} ms window (per-CPU run: {sum} ms in {window} ms)"
    );

    // -C restricts to the listed CPUs.
    let (_, err) = stderr_of(perfkit().args([
        "stat",
        "-C",
        "0",
        "-A",
        "-x",
        ",",
        "-e",
        "cpu-clock",
        "--",
        "sleep",
        "0.1",
    ]));
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], "CPU0");
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines()
                .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

#[test]
fn attach_to_a_running_process_per_thread() {
    let w = need_workload!();
    let mut child = std::process::Command::new(w)
        .args(["threads", "3", "1500"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let pid = child.id().to_string();
    let tids = perfkit::threads_of(child.id() as i32).unwrap();
    assert_eq!(tids.len(), 4, "main thread + 3 workers");
    // The CPU times are read inside the wall-clock interval, the count's window inside both.
    let t0 = std::time::Instant::now();
    let before: Vec<f64> = tids.iter().map(|&t| cpu_ms(child.id(), t)).collect();
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "--per-thread",
        "-p",
        &pid,
        "-x",
        ",",
        "-e",
        "task-clock",
        "--timeout",
        "300",
    ]));
    let ran: Vec<f64> = tids
        .iter()
        .zip(&before)
        .map(|(&t, b)| cpu_ms(child.id(), t) - b)
        .collect();
    let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
    child.kill().ok();
    child.wait().ok();
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 4, "{err}");
    let mut total = 0.0;
    let mut seen = Vec::new();
    for r in &rows {
        let (comm, tid) = r[0].rsplit_once('-').unwrap();
        assert_eq!(comm, "workload");
        let tid: i32 = tid.parse().unwrap();
        let i = tids.iter().position(|&t| t == tid).expect(&err);
        seen.push(tid);
        // The main thread waits for its workers and may not run at all in the window:
        // then it is not counted, as perf prints it.
        if r[1] == "<not counted>" {
            assert_eq!(
                tid.to_string(),
                pid,
                "only the waiting main thread may not run"
            );
            continue;
        }
        let ms: f64 = r[1].parse().unwrap();
        // Each thread's count agrees with the CPU time the kernel says it ran, however
        // little a loaded machine gave it.
        assert_within_cpu_time(ms, ran[i], wall_ms, 300.0, &format!("thread {tid}"));
        total += ms;
    }
    seen.sort();
    let mut want = tids.clone();
    want.sort();
    assert_eq!(seen, want, "one row per thread: {err}");
    // perf's order: by count, the largest first, threads that did not run last.
    let counts: Vec<f64> = rows.iter().filter_map(|r| r[1].parse().ok()).collect();
    assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{err}");
    assert!(
        rows.iter()
            .skip_while(|r| r[1] != "<not counted>")
            .all(|r| r[1] == "<not counted>"),
        "{err}"
    );
    // The spinning workers ran in the window; all together on at most every CPU.
    let cpus = std::thread::available_parallelism().unwrap().get() as f64;
    assert!(
        total > 0.0 && total <= cpus * wall_ms + CPU_MS_SLACK,
        "{total} msec in {wall_ms} ms"
    );
}

#[test]
fn attach_stops_when_the_process_exits() {
    let mut child = std::process::Command::new("sleep")
        .arg("0.3")
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-p",
        &child.id().to_string(),
        "-e",
        "task-clock,context-switches",
    ]));
    child.wait().ok();
    assert_eq!(code, 0, "{err}");
    assert!(t0.elapsed().as_secs_f64() < 3.0);
    assert!(err.contains("process id"), "{err}");
}

/// Counts of deterministic software events agree with `perf stat` within 2%.
#[test]
fn agrees_with_perf_stat() {
    let w = need_workload!();
    if std::process::Command::new("perf")
        .arg("--version")
        .output()
        .is_err()
    {
        common::skip("perf is not installed");
        return;
    }
    let count = |tool: &str, ev: &str, args: &[&str]| -> f64 {
        let mut cmd = std::process::Command::new(if tool == "perf" {
            "perf".into()
        } else {
            assert_cmd::cargo::cargo_bin("perfkit")
        });
        let out = cmd
            .args(["stat", "-x", ",", "-e", ev, "--"])
            .arg(w)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        csv_rows(&err)
            .iter()
            .find(|r| r.get(2).is_some_and(|e| e == ev))
            .unwrap_or_else(|| panic!("{tool}: {err}"))[0]
            .parse()
            .unwrap()
    };
    let ours = count("perfkit", "page-faults", &["pages", "5000"]);
    let perf = count("perf", "page-faults", &["pages", "5000"]);
    assert!(
        (ours / perf - 1.0).abs() < 0.02,
        "page-faults {ours} vs perf {perf}"
    );
    let ours = count("perfkit", "context-switches", &["sleep", "200"]);
    let perf = count("perf", "context-switches", &["sleep", "200"]);
    assert!(
        (ours / perf - 1.0).abs() < 0.02,
        "context-switches {ours} vs perf {perf}"
    );
    assert!((200.0..215.0).contains(&ours), "{ours}");
}

#[test]
fn output_file_and_append() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("out.txt");
    let fs = f.to_str().unwrap();
    perfkit()
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "task-clock",
            "-o",
            fs,
            "--",
            "true",
        ])
        .assert()
        .success();
    perfkit()
        .args([
            "stat",
            "-x",
            ",",
            "-e",
            "page-faults",
            "-o",
            fs,
            "--append",
            "--",
            "true",
        ])
        .assert()
        .success();
    let text = std::fs::read_to_string(&f).unwrap();
    let rows = csv_rows(&text);
    assert_eq!(rows.len(), 2, "{text}");
    assert_eq!(rows[0][2], "task-clock");
    assert_eq!(rows[1][2], "page-faults");
}

#[test]
fn verbose_prints_attrs() {
    let (code, err) = stderr_of(perfkit().args(["stat", "-v", "-e", "page-faults", "--", "true"]));
    assert_eq!(code, 0);
    assert!(err.contains("perf_event_attr:"), "{err}");
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("type") && l.trim_end().ends_with('1')),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.trim_start().starts_with("config") && l.contains("0x2")),
        "{err}"
    );
}

#[test]
fn delay_and_pre_post_commands() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("m");
    let m = marker.to_str().unwrap();
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-r",
        "2",
        "--pre",
        &format!("echo pre >> {m}"),
        "--post",
        &format!("echo post >> {m}"),
        "-e",
        "task-clock",
        "--",
        "true",
    ]));
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "pre\npost\npre\npost\n"
    );
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-D",
        "100",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "0.3",
    ]));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("Events enabled"), "{err}");
}

fn cgroup2_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() > 2 && f[2] == "cgroup2").then(|| f[1].into())
    })
}

#[test]
fn cgroup_counting_with_g_and_for_each_cgroup() {
    let w = need_workload!();
    if !is_root() {
        common::skip("cgroup counting needs root");
        return;
    }
    let Some(root) = cgroup2_root() else {
        eprintln!("skipped: no cgroup2 mount");
        return;
    };
    let busy = format!("perfkit-busy-{}", std::process::id());
    let idle = format!("perfkit-idle-{}", std::process::id());
    for cg in [&busy, &idle] {
        if std::fs::create_dir(root.join(cg)).is_err() {
            eprintln!("skipped: cannot create cgroups under {}", root.display());
            return;
        }
    }
    let script = format!(
        "echo $$ > {}/cgroup.procs && exec {} spin 200",
        root.join(&busy).display(),
        w.display()
    );
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-a",
        "-x",
        ",",
        "-e",
        "task-clock",
        "--for-each-cgroup",
        &format!("{busy},{idle}"),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    for cg in [&busy, &idle] {
        let _ = std::fs::remove_dir(root.join(cg));
    }
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 2, "{err}");
    // value,unit,event,cgroup,...
    assert_eq!(rows[0][3], busy);
    assert_eq!(rows[1][3], idle);
    let busy_ms: f64 = rows[0][0].parse().unwrap();
    assert!(
        (150.0..=260.0).contains(&busy_ms),
        "{busy_ms} msec in the busy cgroup"
    );
    let idle_ms: f64 = rows[1][0].parse().unwrap_or(0.0);
    assert!(idle_ms < 5.0, "{idle_ms} msec in the idle cgroup");
}

#[test]
fn sigint_is_forwarded_to_the_command() {
    let w = need_workload!();
    let bin = assert_cmd::cargo::cargo_bin("perfkit");
    let child = std::process::Command::new(bin)
        .args(["stat", "-e", "task-clock", "--"])
        .arg(w)
        .args(["spin", "10000"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    perfkit::kill(child.id() as i32, libc::SIGINT).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed().as_secs_f64() < 2.0, "the command did not stop");
    assert_eq!(out.status.code(), Some(130), "died of SIGINT: 128 + 2");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("msec task-clock"),
        "counts still printed: {err}"
    );
}

#[test]
fn no_permission_says_what_to_do() {
    use std::os::unix::process::CommandExt;
    if !is_root() {
        common::skip("needs root to run as another user");
        return;
    }
    let paranoid = perfkit::read_paranoid().unwrap_or(2);
    if paranoid < 1 {
        eprintln!("skipped: perf_event_paranoid {paranoid} allows everything");
        return;
    }
    let bin = assert_cmd::cargo::cargo_bin("perfkit");
    let out = std::process::Command::new(&bin)
        .args(["stat", "-a", "-e", "cpu-clock", "--", "true"])
        .uid(65534)
        .gid(65534)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!("perf_event_paranoid is {paranoid}")),
        "{err}"
    );
    // Whole CPUs need 0 or less; user space only would not help.
    assert!(err.contains("sysctl kernel.perf_event_paranoid=0"), "{err}");
    assert!(!err.contains(":u"), "{err}");
    if paranoid >= 2 {
        // Counting one's own command falls back to user space only, and says so in names.
        let out = std::process::Command::new(&bin)
            .args(["stat", "-e", "task-clock,page-faults", "--", "true"])
            .uid(65534)
            .gid(65534)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert!(err.contains("task-clock:u"), "{err}");
    }
}

#[test]
fn per_socket_and_per_node_buckets_count_their_cpus() {
    if !is_root() {
        common::skip("system-wide counting needs root");
        return;
    }
    let ncpu = std::thread::available_parallelism().unwrap().get();
    for (flag, prefix) in [
        ("--per-socket", "S"),
        ("--per-node", "N"),
        ("--per-core", "S"),
    ] {
        let (code, err) = stderr_of(perfkit().args([
            "stat",
            "-a",
            flag,
            "-x",
            ",",
            "-e",
            "cpu-clock",
            "--",
            "sleep",
            "0.05",
        ]));
        assert_eq!(code, 0, "{flag}: {err}");
        let rows = csv_rows(&err);
        assert!(!rows.is_empty(), "{flag}: {err}");
        // label, number of CPUs in the bucket, value, ...
        let cpus: usize = rows.iter().map(|r| r[1].parse::<usize>().unwrap()).sum();
        assert_eq!(cpus, ncpu, "{flag}: every CPU in exactly one bucket: {err}");
        for r in &rows {
            assert!(r[0].starts_with(prefix), "{flag}: {r:?}");
            assert_eq!(r[4], "cpu-clock");
        }
    }
}

#[test]
fn interval_summary_and_no_scale() {
    let w = need_workload!();
    let (code, err) = stderr_of(
        perfkit()
            .args([
                "stat",
                "-I",
                "100",
                "--summary",
                "-x",
                ",",
                "-e",
                "page-faults",
                "--",
            ])
            .arg(w)
            .args(["pages", "2000"]),
    );
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    // Interval rows have a timestamp first; the totals have perf's `summary` there.
    let (summary, intervals): (Vec<_>, Vec<_>) =
        rows.iter().partition(|r| r[0].trim() == "summary");
    assert!(!intervals.is_empty(), "{err}");
    assert_eq!(summary.len(), 1, "{err}");
    assert!(rows.iter().all(|r| r.len() == 8), "{err}");
    let total: f64 = summary[0][1].parse().unwrap();
    let sum: f64 = intervals
        .iter()
        .map(|r| r[1].parse::<f64>().unwrap_or(0.0))
        .sum();
    assert!(
        (total - sum).abs() <= 1.0,
        "summary {total} vs intervals {sum}"
    );
    assert!(total >= 2000.0);

    // --no-scale prints raw counts: for a software event they equal the scaled ones.
    let (code, err) = stderr_of(
        perfkit()
            .args(["stat", "--no-scale", "-x", ",", "-e", "page-faults", "--"])
            .arg(w)
            .args(["pages", "1000"]),
    );
    assert_eq!(code, 0, "{err}");
    let v: f64 = csv_rows(&err)[0][0].parse().unwrap();
    assert!((1000.0..1100.0).contains(&v), "{v}");
}

#[test]
fn thread_target_counts_one_thread() {
    let w = need_workload!();
    let mut child = std::process::Command::new(w)
        .args(["threads", "2", "1000"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    let tids = perfkit::threads_of(child.id() as i32).unwrap();
    let worker = tids
        .iter()
        .copied()
        .find(|&t| t != child.id() as i32)
        .unwrap();
    let t0 = std::time::Instant::now();
    let before = cpu_ms(child.id(), worker);
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-t",
        &worker.to_string(),
        "-x",
        ",",
        "-e",
        "task-clock",
        "--timeout",
        "200",
    ]));
    let ran = cpu_ms(child.id(), worker) - before;
    let wall_ms = t0.elapsed().as_secs_f64() * 1000.0;
    child.kill().ok();
    child.wait().ok();
    assert_eq!(code, 0, "{err}");
    let ms: f64 = csv_rows(&err)[0][0].parse().unwrap();
    // The worker's count, not the process's (the other worker spins too): what the kernel
    // says that thread ran, however little a loaded machine gave it.
    assert_within_cpu_time(ms, ran, wall_ms, 200.0, "worker");
    assert!(ms > 0.0, "{err}");
}

#[test]
fn event_syntax_tracepoints_uprobes_groups() {
    let w = need_workload!();
    let tracing = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .any(|t| {
            std::path::Path::new(t)
                .join("events/syscalls/sys_enter_getpid")
                .exists()
        });
    if !tracing {
        common::skip("no syscalls tracepoints (tracefs not mounted or no permission)");
        return;
    }
    // A group, a tracepoint counted exactly, a glob that expands, and a modifier.
    let (code, err) = stderr_of(
        perfkit()
            .args([
                "stat",
                "-x",
                ",",
                "-e",
                "{task-clock,page-faults}:u,syscalls:sys_enter_getpid",
                "-e",
                "syscalls:sys_enter_getp*id",
                "--",
            ])
            .arg(w)
            .args(["getpid", "1234"]),
    );
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    let names: Vec<&str> = rows.iter().map(|r| r[2].as_str()).collect();
    assert_eq!(
        names[..3],
        ["task-clock:u", "page-faults:u", "syscalls:sys_enter_getpid"]
    );
    assert!(names.contains(&"syscalls:sys_enter_getppid"), "{names:?}");
    let getpid: Vec<u64> = rows
        .iter()
        .filter(|r| r[2] == "syscalls:sys_enter_getpid")
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(getpid, [1234, 1234], "{err}");
    assert!(
        rows[1][0].parse::<u64>().unwrap() > 0,
        "page faults counted"
    );

    // A tracepoint filter applies to the -e before it.
    let (code, err) = stderr_of(
        perfkit()
            .args([
                "stat",
                "-x",
                ",",
                "-e",
                "raw_syscalls:sys_enter",
                "--filter",
            ])
            .arg(format!("id == {}", libc_getpid_nr()))
            .args(["--"])
            .arg(w)
            .args(["getpid", "500"]),
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(csv_rows(&err)[0][0], "500", "{err}");

    // A uprobe on a function of the program, resolved from its ELF symbol table.
    let uprobe = format!("uprobe:{}:probe_target", w.display());
    let (code, err) = stderr_of(
        perfkit()
            .args(["stat", "-x", ",", "-e", &uprobe, "--"])
            .arg(w)
            .args(["calls", "777"]),
    );
    if err.contains("uprobe")
        && code != 0
        && !std::path::Path::new("/sys/bus/event_source/devices/uprobe").exists()
    {
        eprintln!("skipped uprobe part: no uprobe PMU: {err}");
        return;
    }
    assert_eq!(code, 0, "{err}");
    assert_eq!(csv_rows(&err)[0][0], "777", "{err}");
}

/// getpid's system call number on this architecture.
fn libc_getpid_nr() -> i64 {
    if cfg!(target_arch = "x86_64") {
        39
    } else {
        172
    }
}

#[test]
fn malformed_events_point_at_the_position() {
    for (arg, col, want) in [
        ("cyclez", 0, "did you mean `cycles`"),
        ("cycles,,instructions", 7, "^"),
        ("{cycles,instructions", 0, "^"),
        ("cycles:q", 7, "modifier"),
        ("nosuch:tracepoint", 0, "perfkit list"),
    ] {
        let (code, err) = stderr_of(perfkit().args(["stat", "-e", arg, "--", "true"]));
        assert_eq!(code, 1, "{arg}: {err}");
        assert!(err.contains(want), "{arg}: {err}");
        // The caret sits under the offending byte of the echoed string.
        let lines: Vec<&str> = err.lines().collect();
        let echo = lines
            .iter()
            .position(|l| l.contains(&format!("'{arg}'")))
            .expect(&err);
        let start = lines[echo].find('\'').unwrap() + 1;
        let caret = lines[echo + 1].find('^').expect(&err);
        assert_eq!(caret, start + col, "{arg}: {err}");
    }
}

#[test]
fn an_error_at_the_end_of_a_70000_character_event_list_is_an_error_not_a_panic() {
    // A caret past column 65,535 once panicked (format widths are 16 bits).
    let arg = format!("{}cpu-clockz", "task-clock,".repeat(6400));
    let (code, err) = stderr_of(perfkit().args(["stat", "-e", &arg, "--", "true"]));
    assert_eq!(code, 1, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(err.contains("unknown event `cpu-clockz`"), "{err}");
    // The end of the list is shown, the caret under `cpu-clockz`.
    let lines: Vec<&str> = err.lines().collect();
    let echo = lines
        .iter()
        .position(|l| l.ends_with(",task-clock,cpu-clockz'"))
        .expect(&err);
    let caret = lines[echo + 1].find('^').expect(&err);
    assert_eq!(caret, lines[echo].len() - "cpu-clockz'".len(), "{err}");
    assert!(lines[echo].len() < 200, "{err}");
}

#[test]
fn intervals_where_the_command_did_not_run_are_not_counted() {
    let (code, err) = stderr_of(perfkit().args([
        "stat",
        "-I",
        "100",
        "--interval-count",
        "3",
        "-x",
        ",",
        "-e",
        "task-clock",
        "--",
        "sleep",
        "1",
    ]));
    assert_eq!(code, 0, "{err}");
    let rows = csv_rows(&err);
    assert_eq!(rows.len(), 3, "{err}");
    // `sleep` runs at its start, then sleeps through the next intervals: perf prints those
    // as not counted rather than as 0 msec.
    assert_ne!(rows[0][1], "<not counted>", "{err}");
    assert_eq!(rows[1][1], "<not counted>", "{err}");
    assert_eq!(rows[2][1], "<not counted>", "{err}");
}
