//! `perfkit stat`'s machine-readable layouts against `perf stat` 6.1 run here: the same
//! JSON keys in the same order with the same value formats, the same CSV columns, the
//! same `summary` column, and perf's own shell tests passing with perfkit behind `perf`.

mod common;

use common::{have_perf, perf_stat_stderr, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

fn perfkit_stderr(args: &[&str]) -> String {
    let out = perfkit()
        .arg("stat")
        .args(args)
        .output()
        .expect("run perfkit");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Each line with its digits masked (`N`, `F` for decimals), sorted and deduplicated:
/// the layout without the measurements.
fn shape(text: &str) -> Vec<String> {
    // A rate's unit follows the measured value (`/sec`, `K/sec`, `M/sec`).
    let text = text
        .replace("\"K/sec\"", "\"/sec\"")
        .replace("\"M/sec\"", "\"/sec\"")
        .replace(",K/sec", ",/sec")
        .replace(",M/sec", ",/sec")
        .replace(" K/sec ", "  /sec ")
        .replace(" M/sec ", "  /sec ");
    let mut v: Vec<String> = text
        .lines()
        .map(|l| {
            let mut out = String::new();
            let mut in_num = false;
            for c in l.chars() {
                if c.is_ascii_digit() {
                    if !in_num {
                        out.push('N');
                    }
                    in_num = true;
                } else {
                    if !(in_num && c == '.') {
                        in_num = false;
                    }
                    if c != '.' || !out.ends_with('N') {
                        out.push(c);
                    }
                }
            }
            out
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The ordered keys of every JSON line, deduplicated.
fn json_keys(text: &str) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            l.trim_matches(|c| c == '{' || c == '}')
                .split(", \"")
                .map(|kv| kv.trim_matches('"').split('"').next().unwrap_or("").into())
                .collect()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

macro_rules! need_perf {
    () => {
        if !have_perf() {
            skip("perf is not installed");
            return;
        }
    };
}

#[test]
fn json_keys_and_formats_match_perf() {
    need_perf!();
    for args in [
        &["-j", "true"][..],
        &["-j", "-a", "true"],
        &["-j", "-A", "-a", "--no-merge", "-e", "cpu-clock", "true"],
        &["-j", "-I", "100", "--interval-count", "1"],
        &["-j", "--per-core", "-a", "true"],
        &["-j", "--per-die", "-a", "true"],
        &["-j", "--per-socket", "-a", "true"],
        &["-j", "--per-node", "-a", "true"],
        &["-j", "-r", "2", "-e", "page-faults", "true"],
        &["-j", "-e", "cycles,dummy", "true"],
    ] {
        let (p, k) = (perf_stat_stderr(args), perfkit_stderr(args));
        assert_eq!(
            json_keys(&k),
            json_keys(&p),
            "{args:?}\nperf:\n{p}\nperfkit:\n{k}"
        );
        // Formats too: `"pcnt-running" : 100.00`, `"metric-value" : 0.000000`, `(null)`.
        let pick = |t: &str| -> Vec<String> {
            shape(t)
                .into_iter()
                .filter(|l| l.starts_with('{'))
                .collect()
        };
        assert_eq!(pick(&k), pick(&p), "{args:?}\nperf:\n{p}\nperfkit:\n{k}");
    }
}

#[test]
fn csv_layouts_match_perf() {
    need_perf!();
    for args in [
        &["-x,", "-e", "page-faults", "true"][..],
        &["-x,", "-r", "2", "-e", "page-faults,cycles", "true"],
        &[
            "-x,",
            "-I",
            "100",
            "--interval-count",
            "2",
            "--summary",
            "-e",
            "page-faults",
        ],
        &[
            "-x,",
            "-I",
            "100",
            "--interval-count",
            "2",
            "--summary",
            "--no-csv-summary",
            "-e",
            "page-faults",
        ],
        &["-x,", "--per-die", "-a", "-e", "cpu-clock", "true"],
        &[
            "-x,",
            "-A",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "cpu-clock",
        ],
    ] {
        let (p, k) = (perf_stat_stderr(args), perfkit_stderr(args));
        assert_eq!(shape(&k), shape(&p), "{args:?}\nperf:\n{p}\nperfkit:\n{k}");
    }
    // The totals after intervals carry perf's `summary` column unless --no-csv-summary.
    let k = perfkit_stderr(&[
        "-x,",
        "-I",
        "100",
        "--interval-count",
        "1",
        "--summary",
        "-e",
        "page-faults",
    ]);
    assert!(k.lines().any(|l| l.starts_with("         summary,")), "{k}");
}

#[test]
fn text_headers_and_repeat_layout_match_perf() {
    need_perf!();
    for args in [
        &[
            "-A",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "cpu-clock",
        ][..],
        &[
            "--per-core",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "cpu-clock",
        ],
        &[
            "--per-die",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "cpu-clock",
        ],
        &[
            "--per-socket",
            "-a",
            "-I",
            "100",
            "--interval-count",
            "1",
            "-e",
            "cpu-clock",
        ],
    ] {
        let (p, k) = (perf_stat_stderr(args), perfkit_stderr(args));
        let trim = |t: &str| -> Vec<String> {
            shape(t)
                .into_iter()
                .map(|l| l.trim_end().to_string())
                .collect()
        };
        assert_eq!(trim(&k), trim(&p), "{args:?}\nperf:\n{p}\nperfkit:\n{k}");
    }
    // -r: perf's noise column and its precision for the elapsed time.
    // (task-clock varies between runs; page-faults of `true` can be equal in every run,
    // and then perf prints no `+-` on its line.)
    let k = perfkit_stderr(&["-r", "3", "-e", "page-faults,task-clock", "true"]);
    let line = k.lines().find(|l| l.contains("time elapsed")).unwrap();
    let (mean, rest) = line.trim().split_once(" +- ").unwrap();
    let sd = rest.split_whitespace().next().unwrap();
    let sd_v: f64 = sd.parse().unwrap();
    let want = if sd_v >= 1.0 {
        0
    } else {
        (-sd_v.log10()).ceil() as usize + 2
    };
    // The printed deviation rounds, so its own precision may be one digit less.
    let decimals = |s: &str| s.split_once('.').map_or(0, |(_, d)| d.len());
    assert_eq!(decimals(mean), decimals(sd), "{line}");
    assert!(decimals(sd).abs_diff(want) <= 1, "{line}");
    // perf's noise column, `( +- %5.2f%% )`: two spaces after `+-` below 10%, one from 10%
    // (a loaded machine's task-clock can vary that much).
    let noise: Vec<&str> = k
        .match_indices("   ( +- ")
        .map(|(at, m)| &k[at + m.len()..])
        .collect();
    assert!(!noise.is_empty(), "{k}");
    for rest in noise {
        let (field, tail) = rest.split_once('%').expect("a percentage");
        assert!(field.len() >= 5, "{k}");
        assert!(field.trim_start().parse::<f64>().is_ok(), "{k}");
        assert!(tail.starts_with(" )"), "{k}");
    }
}

#[test]
fn system_wide_prints_no_user_and_sys_times() {
    let k = perfkit_stderr(&["-a", "-e", "page-faults", "true"]);
    assert!(
        k.contains("Performance counter stats for 'system wide'"),
        "{k}"
    );
    assert!(!k.contains("seconds user"), "{k}");
    let k = perfkit_stderr(&["-e", "page-faults", "true"]);
    assert!(k.contains("seconds user"), "{k}");
}

#[test]
fn no_target_counts_the_whole_system_until_the_timeout() {
    let k = perfkit_stderr(&["-e", "cpu-clock", "--timeout", "200"]);
    assert!(
        k.contains("Performance counter stats for 'system wide'"),
        "{k}"
    );
    // cpu-clock over every CPU for 200 ms: at least the 200 ms of one CPU's clock.
    let msec: f64 = k
        .lines()
        .find(|l| l.contains("cpu-clock"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.replace(',', "").parse().ok())
        .unwrap();
    assert!(msec >= 190.0, "{k}");
}

#[test]
fn interval_zero_is_no_interval() {
    let k = perfkit_stderr(&["-I", "0", "-e", "page-faults", "true"]);
    assert!(!k.contains("#           time"), "{k}");
    assert_eq!(k.matches("page-faults").count(), 1, "{k}");
}

#[test]
fn per_thread_system_wide_lists_threads_that_counted() {
    let k = perfkit_stderr(&[
        "-x,",
        "--per-thread",
        "-a",
        "-e",
        "cpu-clock",
        "--timeout",
        "200",
    ]);
    let rows: Vec<&str> = k.lines().filter(|l| l.contains("cpu-clock")).collect();
    assert!(!rows.is_empty(), "{k}");
    for r in &rows {
        let f: Vec<&str> = r.split(',').collect();
        // comm-tid, value, unit, event, runtime, percent, metric, metric unit (perf's 8).
        assert_eq!(f.len(), 8, "{r}");
        let (_, tid) = f[0].rsplit_once('-').unwrap();
        tid.parse::<i32>().unwrap();
        assert!(
            f[4].parse::<u64>().unwrap() > 0,
            "threads that counted only: {r}"
        );
    }
}

fn perf_shell_test(name: &str) {
    need_perf!();
    let script = Path::new("/usr/lib/perf-core/tests/shell").join(name);
    if !script.exists() {
        skip(&format!("{} is not installed", script.display()));
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin: PathBuf = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let perf = bin.join("perf");
    std::fs::write(&perf, format!("#!/bin/sh\nexec {} \"$@\"\n", exe.display())).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&perf, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn perf_shell_test_stat_csv_output() {
    perf_shell_test("stat+csv_output.sh");
}

#[test]
fn perf_shell_test_stat_csv_summary() {
    perf_shell_test("stat+csv_summary.sh");
}

#[test]
fn perf_shell_test_stat_json_output() {
    perf_shell_test("stat+json_output.sh");
}

#[test]
fn perf_shell_test_stat_shadow_stat() {
    perf_shell_test("stat+shadow_stat.sh");
}

#[test]
fn perf_shell_test_stat() {
    perf_shell_test("stat.sh");
}
