//! perf 6.1's `stat` options that were refused before: `--quiet`, `--json-output`,
//! `--scale`, `-g/--group` and `--interval-clear`, each run beside perf with the same
//! arguments.

mod common;

use common::{have_perf, perfkit, skip};
use std::process::{Command, Output};

fn perf(args: &[&str]) -> Output {
    Command::new("perf").args(args).output().expect("run perf")
}

fn kit(args: &[&str]) -> Output {
    perfkit().args(args).output().expect("run perfkit")
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The event names of `stat`'s text rows, in order.
fn events(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains("msec ") || l.trim_start().starts_with(char::is_numeric))
        .filter(|l| !l.contains("seconds"))
        .filter_map(|l| {
            let l = l.split('#').next().unwrap_or_default();
            l.split_whitespace().last().map(str::to_string)
        })
        .collect()
}

#[test]
fn quiet_prints_nothing_and_keeps_the_exit_status() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    for (cmd, code) in [("true", 0), ("false", 1)] {
        let args = ["stat", "--quiet", "-e", "task-clock", cmd];
        let (p, k) = (perf(&args), kit(&args));
        // The command's status, as perf's (perf 6.1 itself now and then exits 0 after
        // `false` when other tests run beside it, so its status is not compared).
        assert_eq!(k.status.code(), Some(code), "{args:?}: {k:?}");
        assert!(p.stderr.is_empty() && p.stdout.is_empty(), "perf: {p:?}");
        assert!(k.stderr.is_empty() && k.stdout.is_empty(), "perfkit: {k:?}");
    }
}

#[test]
fn json_output_and_scale_are_perfs_long_names() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    // --json-output is -j: the same keys, in the same order, as perf's line.
    let keys = |o: &Output| -> Vec<String> {
        let t = err(o);
        let line = t.lines().find(|l| l.starts_with('{')).unwrap_or_default();
        line.split("\" : ")
            .filter_map(|p| p.rsplit('"').next().map(str::to_string))
            .collect()
    };
    let args = ["stat", "--json-output", "-e", "task-clock", "true"];
    let (p, k) = (perf(&args), kit(&args));
    assert!(p.status.success() && k.status.success(), "{p:?} {k:?}");
    assert!(keys(&k).len() > 5, "{}", err(&k));
    assert_eq!(
        keys(&k),
        keys(&p),
        "perf:\n{}\nperfkit:\n{}",
        err(&p),
        err(&k)
    );
    // --scale (the default) after --no-scale: accepted, the same rows as perf's.
    let args = [
        "stat",
        "--no-scale",
        "--scale",
        "-e",
        "task-clock,page-faults",
        "true",
    ];
    let (p, k) = (perf(&args), kit(&args));
    assert!(p.status.success() && k.status.success(), "{p:?} {k:?}");
    assert_eq!(
        events(&err(&k)),
        ["task-clock", "page-faults"],
        "{}",
        err(&k)
    );
    assert_eq!(events(&err(&k)), events(&err(&p)), "{}", err(&p));
}

#[test]
fn group_puts_the_events_into_one_group() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let args = ["stat", "-g", "-e", "task-clock,page-faults", "true"];
    let (p, k) = (perf(&args), kit(&args));
    assert!(p.status.success() && k.status.success(), "{p:?} {k:?}");
    assert_eq!(
        events(&err(&k)),
        events(&err(&p)),
        "{}\n{}",
        err(&p),
        err(&k)
    );
    // The attrs opened are those of `-e '{task-clock,page-faults}'`.
    let attrs = |o: &Output| -> Vec<String> {
        err(o)
            .lines()
            .filter(|l| l.starts_with("  ") && !l.contains("msec") && !l.contains("seconds"))
            .filter(|l| !l.trim_start().starts_with(char::is_numeric))
            .map(str::to_string)
            .collect()
    };
    let g = kit(&["stat", "-v", "-g", "-e", "task-clock,page-faults", "true"]);
    let braces = kit(&["stat", "-v", "-e", "{task-clock,page-faults}", "true"]);
    assert!(
        attrs(&g).iter().any(|l| l.contains("disabled")),
        "{}",
        err(&g)
    );
    assert_eq!(attrs(&g), attrs(&braces));
    // A group written already, or a filter, is refused with what to write instead.
    let k = kit(&["stat", "-g", "-e", "{task-clock},page-faults", "true"]);
    assert_eq!(k.status.code(), Some(1), "{k:?}");
    assert!(err(&k).contains("-e '{a,b}'"), "{}", err(&k));
}

#[test]
fn interval_clear_clears_the_screen_and_repeats_the_header() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let args = [
        "stat",
        "-a",
        "-I",
        "100",
        "--interval-count",
        "2",
        "--interval-clear",
        "-e",
        "cpu-clock",
    ];
    let (p, k) = (perf(&args), kit(&args));
    if !p.status.success() {
        return skip("perf stat -a is not permitted here (run as root)");
    }
    assert!(k.status.success(), "{k:?}");
    for (who, o) in [("perf", &p), ("perfkit", &k)] {
        let out = String::from_utf8_lossy(&o.stdout);
        assert_eq!(out.matches("\x1b[H\x1b[2J").count(), 2, "{who}: {out:?}");
        let e = err(o);
        let headers = e
            .lines()
            .filter(|l| l.starts_with("#") && l.contains("time"))
            .count();
        assert_eq!(headers, 2, "{who}: one header per interval:\n{e}");
        assert_eq!(events(&e), ["cpu-clock", "cpu-clock"], "{who}:\n{e}");
    }
}
