//! What `report` names and how wide it prints it, against perf 6.1 on recordings perf makes
//! here: the command column sized by the name each row's thread has last (perf caches
//! `thread__comm_len` of the entry's thread when it sorts the output) and cut to it; a
//! tracepoint's text measured only once another sample was compared with it, and cut to
//! the column; a function inlined into two functions as two rows (children mode, on a
//! DWARF recording). Report's last comment line (perf's random tip) is not compared.

mod common;

use common::{have_perf, perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Standard output without report's last comment line.
fn body(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !(l.starts_with("# (Tip:") || l.starts_with("# (Report by")))
        .filter(|l| !l.starts_with("# (Cannot load tips"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// perf's and perfkit's output of `ARGS -i FILE`, each after `tidy`; asserted equal.
fn same_as_perf(args: &[&str], file: &Path, tidy: impl Fn(String) -> String) -> String {
    let theirs = Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    let ours = perfkit().args(args).arg("-i").arg(file).output().unwrap();
    assert!(ours.status.success(), "perfkit {args:?}");
    let (t, o) = (tidy(body(&theirs.stdout)), tidy(body(&ours.stdout)));
    if o != t {
        let first = t.lines().zip(o.lines()).position(|(a, b)| a != b);
        let at = first.unwrap_or(t.lines().count().min(o.lines().count()));
        let show = |s: &str| {
            let lines: Vec<&str> = s.lines().skip(at.saturating_sub(3)).take(10).collect();
            lines.join("\n")
        };
        panic!(
            "{args:?} on {} differs from perf at line {at}:\n--- perf\n{}\n--- perfkit\n{}",
            file.display(),
            show(&t),
            show(&o)
        );
    }
    t
}

fn compile(dir: &Path, name: &str, compiler: &str, src: &Path, flags: &[&str]) -> Option<PathBuf> {
    let out = dir.join(name);
    let ok = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(out)
}

fn perf_record(data: &Path, args: &[&str], cmd: &[&str]) -> bool {
    Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(data)
        .args(args)
        .arg("--")
        .args(cmd)
        .output()
        .is_ok_and(|o| o.status.success())
}

const RENAME: &str = r#"
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
static volatile unsigned long x;
static void spin(long n) { for (long i = 0; i < n; i++) x += i; }
int main(void) {
    spin(20000000);
    if (fork() == 0) {
        prctl(PR_SET_NAME, "longer-name-xyz");
        spin(40000000);
        prctl(PR_SET_NAME, "b");
        spin(20000000);
        _exit(0);
    }
    wait(0);
    return 0;
}
"#;

#[test]
fn command_column_is_sized_by_each_threads_last_name() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("rename.c");
    std::fs::write(&src, RENAME).unwrap();
    let Some(bin) = compile(dir.path(), "rename", "cc", &src, &["-O1"]) else {
        return skip("no C compiler");
    };
    let data = dir.path().join("rename.data");
    // A fixed period: every phase of the program gets samples whatever the load.
    assert!(perf_record(
        &data,
        &["-e", "cpu-clock", "-c", "100000"],
        &[bin.to_str().unwrap()]
    ));
    for args in [
        &["report", "--stdio", "--no-children"][..],
        &["report", "--stdio", "--no-children", "--sort", "comm"],
        &["report", "--stdio", "--no-children", "--sort", "dso,comm"],
    ] {
        let perf = same_as_perf(args, &data, |s| s);
        // The row of the long name belongs to a thread that ends as `b`: its name is cut
        // to the longest last name (`rename`, 6) or the header (`Command`, 7).
        let cut = perf
            .lines()
            .any(|l| l.split_whitespace().any(|w| w == "longer-"));
        assert!(cut, "{perf}");
        assert!(!perf.contains("longer-name-xyz"), "{perf}");
    }
}

/// perf and the sched tracepoints (tracefs mounted where we may), or a skip.
fn tracepoints_ready() -> bool {
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .output();
    }
    if Path::new("/sys/kernel/tracing/events/sched/sched_process_exec").exists() {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI runs as root: tracefs must be mountable");
    }
    skip("sched tracepoints are not available (tracefs)");
    false
}

#[test]
fn a_lone_tracepoint_text_is_cut_to_its_column() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !tracepoints_ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let ev = ["-e", "sched:sched_process_exec"];
    // One exec: no other sample is compared with it, so perf never measures its text
    // and prints as much of it as `Trace output` is wide. Three execs: every text is
    // measured and printed whole.
    for (name, cmd, whole) in [
        ("one", &["/bin/true"][..], false),
        ("three", &["/bin/sh", "-c", "/bin/true; /bin/true"], true),
    ] {
        let data = dir.path().join(format!("{name}.data"));
        assert!(perf_record(&data, &ev, cmd));
        for args in [
            &["report", "--stdio", "--no-children"][..],
            &["report", "--stdio", "--no-children", "--sort", "comm,trace"],
            &["report", "--stdio", "--no-children", "--sort", "trace,comm"],
        ] {
            let perf = same_as_perf(args, &data, |s| s);
            let rows: Vec<&str> = perf.lines().filter(|l| l.contains("% ")).collect();
            assert!(rows.iter().all(|l| l.contains("filename=")), "{perf}");
            assert_eq!(rows.iter().all(|l| l.contains("old_pid=")), whole, "{perf}");
        }
    }
}

#[test]
fn inlined_functions_are_told_apart_by_the_function_they_are_inlined_into() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/corpus/cxx.cpp");
    let flags = ["-O2", "-g", "-fno-omit-frame-pointer"];
    let Some(bin) = compile(dir.path(), "cxx-O2", "g++", &src, &flags) else {
        return skip("g++ is missing");
    };
    let data = dir.path().join("dwarf-cxx.data");
    assert!(perf_record(
        &data,
        &["--call-graph", "dwarf"],
        &[bin.to_str().unwrap(), "200"]
    ));
    // Children mode: the rows of functions inlined in the program, as (name, children
    // share). A sample whose DWARF stack the two unwinders end differently (one in a few
    // hundred) may move a share by a sample, so shares are compared to 0.5%.
    let inlined_rows = |out: &[u8]| -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = String::from_utf8_lossy(out)
            .lines()
            .filter(|l| l.contains("  cxx-O2   cxx-O2  ") && l.ends_with(" (inlined)"))
            .filter_map(|l| {
                let pct = l
                    .split_whitespace()
                    .next()?
                    .strip_suffix('%')?
                    .parse()
                    .ok()?;
                Some((l.split("[.] ").nth(1)?.to_string(), pct))
            })
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        v
    };
    let args = ["report", "--stdio", "-i"];
    let perf = Command::new("perf").args(args).arg(&data).output().unwrap();
    let ours = perfkit().args(args).arg(&data).output().unwrap();
    let (theirs, mine) = (inlined_rows(&perf.stdout), inlined_rows(&ours.stdout));
    let names = |v: &[(String, f64)]| v.iter().map(|r| r.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&mine),
        names(&theirs),
        "inlined rows: perfkit (left), perf (right)"
    );
    for (m, t) in mine.iter().zip(&theirs) {
        assert!(
            (m.1 - t.1).abs() <= 0.5,
            "{} {}% where perf has {}%",
            m.0,
            m.1,
            t.1
        );
    }
    // std::sort's comparison lambda is inlined into two functions: perf makes a row of it
    // for each.
    let lambda = theirs
        .iter()
        .filter(|r| r.0 == "operator() (inlined)")
        .count();
    assert!(lambda >= 2, "{theirs:?}");
}
