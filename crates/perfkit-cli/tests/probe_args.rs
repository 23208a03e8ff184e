//! `perfkit probe -x BIN 'FUNC[@FILE][:RLN] ARG...'` and `FUNC%return $retval`: the
//! uprobe_events lines (fetch arguments from DWARF: registers, frame offsets through the
//! call frame information, `->` dereferences, types), the messages and `probe -l` are
//! perf 6.1's for the same program, built without and with optimization; and the argument
//! values a probed run records are the ones the program passed.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip};
use std::path::{Path, PathBuf};

const EVENTS: &str = "/sys/kernel/tracing/uprobe_events";

/// perf takes an event name as used when any group has it: these tests probe `work` one at
/// a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PROG_C: &str = "#include <stdio.h>
#include <stdlib.h>
struct point { int x; long y; };
__attribute__((noinline)) int work(int a, long b, struct point *p) {
\tint s = a + (int)b;
\ts += p->x;
\treturn s * 2;
}
int main(int argc, char **argv) {
\tstruct point pt = { 7, 9 };
\tint n = argc > 1 ? atoi(argv[1]) : 3;
\tint t = 0;
\tfor (int i = 0; i < n; i++)
\t\tt += work(42 + i, 1000, &pt);
\tprintf(\"%d\\n\", t);
\treturn 0;
}
";

fn defs(group: &str) -> Vec<String> {
    std::fs::read_to_string(EVENTS)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!(":{group}/")))
        .map(str::to_owned)
        .collect()
}

/// `progargs.c` built with `opt` and -g as a binary named uniquely for this test and level.
fn build(dir: &Path, opt: &str) -> Option<PathBuf> {
    let src = dir.join("progargs.c");
    std::fs::write(&src, PROG_C).unwrap();
    let bin = dir.join(format!("pkargs{}{}", &opt[2..], std::process::id()));
    let ok = std::process::Command::new("cc")
        .args([opt, "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

fn tool(name: &str) -> Command {
    if name == "perf" {
        Command::new("perf")
    } else {
        perfkit()
    }
}

fn listed(name: &str, group: &str) -> Vec<String> {
    String::from_utf8_lossy(&run_ok(tool(name).args(["probe", "-l"])).stdout)
        .lines()
        .filter(|l| l.contains(group))
        .map(str::to_owned)
        .collect()
}

/// Add every spec with perf, then with perfkit: the same stderr, exit status, uprobe_events
/// lines and `probe -l` listings (each tool's listing of each tool's probes).
fn same_as_perf(opt: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !Path::new(EVENTS).exists() {
        return skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), opt) else {
        return skip("no C compiler (cc)");
    };
    let group = format!(
        "probe_{}",
        bin.file_name().unwrap().to_string_lossy().into_owned()
    );
    let specs = [
        "work a b p->x",
        "work%return $retval",
        "w2=work@progargs.c:3 a",
        "w3=work@progargs.c a:u32 b:s64",
        "w4=work p v=a b:x32",
        "main:5 argc argv pt.y pt n",
        "w5=work nosuch",
        "w6=work@other.c a",
    ];
    let mut results = Vec::new();
    for name in ["perf", "perfkit"] {
        let mut said = Vec::new();
        for spec in specs {
            let out = tool(name)
                .args(["probe", "-x"])
                .arg(&bin)
                .arg(spec)
                .output()
                .unwrap();
            said.push((
                spec,
                out.status.code(),
                String::from_utf8(out.stderr).unwrap(),
            ));
        }
        let events = defs(&group);
        assert_eq!(
            listed("perfkit", &group),
            listed("perf", &group),
            "{name}'s probes: perfkit probe -l lists them as perf"
        );
        let list = listed("perfkit", &group);
        run_ok(
            tool(name)
                .args(["probe", "-q", "-d"])
                .arg(format!("{group}:*")),
        );
        assert!(defs(&group).is_empty());
        results.push((said, events, list));
    }
    let (theirs, ours) = (&results[0], &results[1]);
    for (o, t) in ours.0.iter().zip(&theirs.0) {
        assert_eq!(o, t, "messages and exit status");
    }
    assert_eq!(ours.1, theirs.1, "uprobe_events lines");
    assert_eq!(ours.2, theirs.2, "probe -l");
    // What was compared holds arguments at all: registers or frame slots, a dereference.
    let work = ours.1.iter().find(|l| l.contains("/work ")).unwrap();
    assert!(work.contains(" x=+0("), "{work}");
    assert!(ours.1.iter().any(|l| l.contains(" arg1=$retval")));
}

#[test]
fn arguments_without_optimization_are_perfs() {
    same_as_perf("-O0");
}

#[test]
fn arguments_with_optimization_are_perfs() {
    same_as_perf("-O2");
}

/// A run recorded with perfkit on the probes: `script` prints each call's arguments, the
/// values the program passed (a = 42, 43, 44; b = 1000; p->x = 7) and the value each call
/// returned ((a + b + 7) * 2), as `perf script` prints them from the same file.
#[test]
fn recorded_arguments_are_the_values_passed() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if !Path::new(EVENTS).exists() {
        return skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), "-O1") else {
        return skip("no C compiler (cc)");
    };
    let group = format!(
        "probe_{}",
        bin.file_name().unwrap().to_string_lossy().into_owned()
    );
    run_ok(perfkit().args(["probe", "-q", "-x"]).arg(&bin).args([
        "-a",
        "work a b p->x",
        "-a",
        "work%return $retval",
    ]));
    let data = dir.path().join("args.data");
    let recorded = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&data)
        .args(["-e", &format!("{group}:work"), "-e"])
        .arg(format!("{group}:work__return"))
        .arg("--")
        .arg(&bin)
        .arg("3")
        .output()
        .unwrap();
    run_ok(
        perfkit()
            .args(["probe", "-q", "-d"])
            .arg(format!("{group}:*")),
    );
    assert!(recorded.status.success(), "{recorded:?}");
    let script =
        String::from_utf8(run_ok(perfkit().arg("script").arg("-i").arg(&data)).stdout).unwrap();
    let tails = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| l.split_once(") ").map(|x| x.1.to_owned()))
            .collect()
    };
    let expect: Vec<String> = (42..45)
        .flat_map(|a| {
            [
                format!("a={a} b=1000 x=7"),
                format!("arg1={:#x}", (a + 1000 + 7) * 2),
            ]
        })
        .collect();
    assert_eq!(tails(&script), expect, "{script}");
    if have_perf() {
        let theirs = run_ok(Command::new("perf").arg("script").arg("-i").arg(&data)).stdout;
        assert_eq!(tails(&String::from_utf8_lossy(&theirs)), expect);
    }
}
