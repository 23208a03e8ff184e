//! `perfkit probe -x`: uprobes defined as perf 6.1 defines them (the same uprobe_events line
//! for the same function), seen by perf (`perf probe -l`), and removed by globs.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip};
use std::path::Path;

const EVENTS: &str = "/sys/kernel/tracing/uprobe_events";

/// Lines of uprobe_events for `group`.
fn defs(group: &str) -> Vec<String> {
    std::fs::read_to_string(EVENTS)
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!(":{group}/")))
        .map(str::to_owned)
        .collect()
}

/// A binary with a function `target_fn`, named uniquely so its probe group is this test's.
fn build(dir: &Path) -> Option<std::path::PathBuf> {
    let src = dir.join("t.c");
    std::fs::write(
        &src,
        "__attribute__((noinline)) int target_fn(int x) { return x * 3; }\n\
         int main(int argc, char **argv) { (void)argv; return target_fn(argc) == 3 ? 0 : 1; }\n",
    )
    .unwrap();
    let bin = dir.join(format!("pkprobe{}", std::process::id()));
    let ok = std::process::Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

#[test]
fn uprobes_are_defined_as_perf_defines_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !Path::new(EVENTS).exists() {
        return skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler (cc)");
    };
    let group = format!("probe_pkprobe{}", std::process::id());

    run_ok(
        Command::new("perf")
            .args(["probe", "-q", "-x"])
            .arg(&bin)
            .args(["-a", "target_fn", "-a", "target_fn%return"]),
    );
    let theirs = defs(&group);
    assert_eq!(theirs.len(), 2, "{theirs:?}");
    run_ok(
        Command::new("perf")
            .args(["probe", "-q", "-d"])
            .arg(format!("{group}:*")),
    );
    assert!(defs(&group).is_empty());

    let out = run_ok(perfkit().args(["probe", "-x"]).arg(&bin).args([
        "-a",
        "target_fn",
        "-a",
        "target_fn%return",
    ]));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "  {group}:target_fn (on target_fn in {})",
            bin.display()
        )),
        "{err}"
    );
    assert_eq!(defs(&group), theirs);
    let listed = run_ok(Command::new("perf").args(["probe", "-l"])).stdout;
    assert!(String::from_utf8_lossy(&listed).contains(&format!("{group}:target_fn__return")));

    // A second probe of the same name is refused, or named _1 with -f.
    let out = perfkit()
        .args(["probe", "-q", "-x"])
        .arg(&bin)
        .arg("target_fn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(239), "-EEXIST, as perf");
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    run_ok(
        perfkit()
            .args(["probe", "-q", "-f", "-x"])
            .arg(&bin)
            .arg("target_fn"),
    );
    assert!(
        defs(&group)
            .iter()
            .any(|l| l.contains(&format!("{group}/target_fn_1 ")))
    );

    run_ok(
        perfkit()
            .args(["probe", "-q", "-d"])
            .arg(format!("{group}:*")),
    );
    assert!(defs(&group).is_empty());
}

#[test]
fn bad_probes_fail_with_perfs_messages() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler (cc)");
    };
    let out = perfkit()
        .args(["probe", "-x"])
        .arg(&bin)
        .arg("no_such_fn")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Probe point 'no_such_fn' not found."));
    // Kernel probes: refused with the reason (no kprobes here).
    let out = perfkit()
        .args(["probe", "-a", "vfs_getname"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(254));
    assert!(String::from_utf8_lossy(&out.stderr).contains("kernel probes need kprobe_events"));
    let funcs = run_ok(
        perfkit()
            .args(["probe", "-x"])
            .arg(&bin)
            .args(["--funcs", "target*"]),
    )
    .stdout;
    assert_eq!(String::from_utf8_lossy(&funcs), "target_fn\n");
}

/// A -O0 -g binary with a multi-line function `work`, named uniquely for its probe group.
const LINES_C: &str = "#include <stdio.h>

static volatile long sink;

__attribute__((noinline)) long work(long n)
{
\tlong acc = 0;
\tfor (long i = 0; i < n; i++) {
\t\tacc += i * 3;
\t\tsink = acc;
\t}
\tif (acc > 100)
\t\tacc -= 7;
\treturn acc;
}

int main(void)
{
\tprintf(\"%ld\\n\", work(1000));
\treturn 0;
}
";

/// stderr lines that name probes or errors, as `perf probe` prints them.
fn probe_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("(on ") || l.contains("rror") || l.contains("try to probe"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn line_probes_and_listings_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !Path::new(EVENTS).exists() {
        return skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("lines.c");
    std::fs::write(&src, LINES_C).unwrap();
    let name = format!("pklines{}", std::process::id());
    let bin = dir.path().join(&name);
    let ok = std::process::Command::new("cc")
        .args(["-O0", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return skip("no C compiler (cc)");
    }
    let group = format!("probe_{name}");
    // -L: the same listing, numbered where code begins.
    let theirs = run_ok(
        Command::new("perf")
            .args(["probe", "-x"])
            .arg(&bin)
            .args(["-L", "work"]),
    );
    let ours = run_ok(
        perfkit()
            .args(["probe", "-x"])
            .arg(&bin)
            .args(["-L", "work"]),
    );
    assert_eq!(
        String::from_utf8_lossy(&ours.stdout),
        String::from_utf8_lossy(&theirs.stdout)
    );
    assert!(String::from_utf8_lossy(&ours.stdout).contains("      4  \t\tacc += i * 3;"));
    // Relative lines, file lines, the function itself, line 0, and lines that share the
    // entry address (refused with perf's hint): the same messages and the same
    // uprobe_events lines, listed alike by `probe -l`.
    let specs = [
        "work:4",
        "work:8",
        "lines.c:13",
        "work:2",
        "work%return",
        "work:0",
        "work:1",
        "lines.c:6",
        "work:5",
        "work:40",
    ];
    let mut results = Vec::new();
    for tool in ["perf", "perfkit"] {
        let mut said = Vec::new();
        for spec in specs {
            let mut cmd = if tool == "perf" {
                Command::new("perf")
            } else {
                perfkit()
            };
            let out = cmd
                .args(["probe", "-x"])
                .arg(&bin)
                .args(["-a", spec])
                .output()
                .unwrap();
            said.push((spec, out.status.code(), probe_lines(&out)));
        }
        let events = defs(&group);
        let list: Vec<String> =
            String::from_utf8_lossy(&run_ok(Command::new("perf").args(["probe", "-l"])).stdout)
                .lines()
                .filter(|l| l.contains(&group))
                .map(str::to_owned)
                .collect();
        let our_list: Vec<String> =
            String::from_utf8_lossy(&run_ok(perfkit().args(["probe", "-l"])).stdout)
                .lines()
                .filter(|l| l.contains(&group))
                .map(str::to_owned)
                .collect();
        assert_eq!(
            our_list, list,
            "{tool}'s probes: perfkit probe -l lists them as perf"
        );
        let mut del = if tool == "perf" {
            Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(del.args(["probe", "-q", "-d"]).arg(format!("{group}:*")));
        assert!(defs(&group).is_empty(), "{tool} -d removed every line");
        results.push((said, events));
    }
    let (theirs, ours) = (&results[0], &results[1]);
    assert_eq!(ours.1, theirs.1, "uprobe_events lines");
    assert_eq!(ours.0, theirs.0, "messages and exit codes");
    assert!(ours.1.iter().filter(|l| l.contains("/work_L4 ")).count() >= 1);
}

/// `-L` with perf's range forms: relative ranges (`FUNC:A-B`, `FUNC:A+N`, `FUNC:A`),
/// `FUNC@FILE`, file ranges (`FILE`, `FILE:A-B`, `FILE:A+N`), ranges past the function or
/// the file, a missing function and a reversed range: the same listing, messages and exit
/// status as perf's.
#[test]
fn line_ranges_are_perfs() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("ranges.c");
    std::fs::write(&src, LINES_C).unwrap();
    let bin = dir.path().join("ranges");
    let ok = std::process::Command::new("cc")
        .args(["-O0", "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return skip("no C compiler (cc)");
    }
    let specs = [
        "work:1-3",
        "work:2+3",
        "work:6",
        "work:0-40",
        "work@ranges.c",
        "work@ranges.c:3-4",
        "main",
        "ranges.c",
        "ranges.c:7-12",
        "ranges.c:15+3",
        "ranges.c:17",
        "nosuch:1-2",
        "nosuch.c:1-2",
    ];
    for spec in specs {
        let run = |tool: &mut Command| {
            let o = tool
                .args(["probe", "-x"])
                .arg(&bin)
                .args(["-L", spec])
                .output()
                .unwrap();
            (
                o.status.code(),
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            )
        };
        let theirs = run(&mut Command::new("perf"));
        let ours = run(&mut perfkit());
        assert_eq!(ours, theirs, "-L {spec}");
    }
    // A reversed range: perf's words, and perf's usage status.
    let o = perfkit()
        .args(["probe", "-x"])
        .arg(&bin)
        .args(["-L", "work:4-2"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(129));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("Start line must be smaller than end line"),
        "{o:?}"
    );
}
