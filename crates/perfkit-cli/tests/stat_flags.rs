//! `perfkit stat`'s event-choosing and output flags against `perf stat` 6.1 here: `-d`
//! levels, `-n`, `--all-user`/`--all-kernel`, `--log-fd`, `-S`. Metrics, `--topdown` and
//! `-T` are in `stat_metrics.rs`.

mod common;

use common::{have_perf, perfkit, skip};
use std::process::Command;

fn perf_stderr(args: &[&str]) -> String {
    let out = Command::new("perf")
        .arg("stat")
        .args(args)
        .output()
        .expect("run perf");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn perfkit_out(args: &[&str]) -> (i32, String) {
    let out = perfkit()
        .arg("stat")
        .args(args)
        .output()
        .expect("run perfkit");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The event column of `-x,` output.
fn csv_events(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.split(',').nth(2).map(str::to_string))
        .collect()
}

/// The first field of the `-x,` row of `event`, as a number.
fn csv_count(text: &str, event: &str) -> f64 {
    text.lines()
        .find(|l| l.split(',').nth(2) == Some(event))
        .and_then(|l| l.split(',').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {event} in {text}"))
}

#[test]
fn detailed_levels_count_perfs_event_lists() {
    if !have_perf() {
        skip("perf is not installed");
        return;
    }
    for d in ["-d", "-dd", "-ddd"] {
        let p = perf_stderr(&[d, "-x,", "true"]);
        let (code, k) = perfkit_out(&[d, "-x,", "true"]);
        assert_eq!(code, 0, "{k}");
        assert_eq!(
            csv_events(&k),
            csv_events(&p),
            "{d}\nperf:\n{p}\nperfkit:\n{k}"
        );
        // Missing here: `<not supported>`, as perf prints them.
        assert!(k.contains("<not supported>,,L1-dcache-loads"), "{k}");
    }
}

#[test]
fn null_prints_only_the_times_as_perf() {
    let (code, k) = perfkit_out(&["-n", "true"]);
    assert_eq!(code, 0, "{k}");
    assert!(
        k.contains("Performance counter stats for 'true':\n\n"),
        "{k}"
    );
    assert!(k.contains("seconds time elapsed"), "{k}");
    assert!(!k.contains("task-clock"), "{k}");
    if have_perf() {
        let mask = |t: &str| t.replace(|c: char| c.is_ascii_digit(), "N");
        assert_eq!(mask(&k), mask(&perf_stderr(&["-n", "true"])));
    }
    let (_, k) = perfkit_out(&["-n", "-x,", "true"]);
    assert_eq!(k, "", "perf prints nothing for -n -x");
}

#[test]
fn all_user_and_all_kernel_split_the_page_faults() {
    let count = |flag: &str| {
        let (code, k) = perfkit_out(&[flag, "-x,", "-e", "page-faults", "true"]);
        assert_eq!(code, 0, "{k}");
        csv_count(&k, "page-faults")
    };
    let (all, user, kernel) = (
        count("--no-big-num"),
        count("--all-user"),
        count("--all-kernel"),
    );
    // `true` faults mostly from user space (its loader and libc), a few times in the kernel.
    assert!(user > kernel, "user {user} kernel {kernel}");
    assert!(user <= all + 5.0 && kernel < all, "{all} {user} {kernel}");
    if have_perf() {
        let p = perf_stderr(&["--all-kernel", "-x,", "-e", "page-faults", "true"]);
        assert!((csv_count(&p, "page-faults") - kernel).abs() <= 5.0, "{p}");
    }
    let (code, k) = perfkit_out(&["--all-user", "--all-kernel", "true"]);
    assert_ne!(code, 0);
    assert!(k.contains("exclude each other"), "{k}");
}

#[test]
fn log_fd_writes_the_counts_to_that_descriptor() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("counts");
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "exec {} stat --log-fd 3 -x, -e page-faults true 3>{}",
            exe.display(),
            file.display()
        ))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(!String::from_utf8_lossy(&out.stderr).contains("page-faults"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(csv_count(&text, "page-faults") > 10.0, "{text}");
    let (code, k) = perfkit_out(&["--log-fd", "987", "true"]);
    assert_ne!(code, 0);
    assert!(k.contains("--log-fd 987"), "{k}");
}

#[test]
fn sync_first_then_counts() {
    let (code, k) = perfkit_out(&["-S", "-x,", "-e", "page-faults", "true"]);
    assert_eq!(code, 0, "{k}");
    assert!(csv_count(&k, "page-faults") > 10.0, "{k}");
}
