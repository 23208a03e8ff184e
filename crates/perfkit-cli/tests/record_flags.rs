//! `perfkit record`'s perf flags against perf 6.1 on this machine: each sets the attr bits
//! perf sets (compared through `perf evlist -v` of both files), perf reads the files and
//! `perf script -F` shows the fields; the end-of-record lines are perf's, byte for byte.

mod common;

use assert_cmd::Command;
use common::{have_perf, perf_ok, perfkit, run_ok};
use std::path::{Path, PathBuf};

macro_rules! need_perf {
    () => {
        if !have_perf() {
            common::skip("perf is not installed");
            return;
        }
    };
}

/// `perf evlist -v` of `file`.
fn evlist(file: &Path) -> String {
    perf_ok(&["evlist", "-v"], file)
}

/// Record `true` with `-e cpu-clock FLAGS` by perf and by perfkit; both files' paths.
fn both(dir: &Path, name: &str, flags: &[&str], cmd: &[&str]) -> (PathBuf, PathBuf) {
    let (p, k) = (
        dir.join(format!("{name}.perf")),
        dir.join(format!("{name}.kit")),
    );
    run_ok(
        Command::new("perf")
            .args(["record", "-q", "-e", "cpu-clock"])
            .args(flags)
            .arg("-o")
            .arg(&p)
            .arg("--")
            .args(cmd),
    );
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock"])
            .args(flags)
            .arg("-o")
            .arg(&k)
            .arg("--")
            .args(cmd),
    );
    (p, k)
}

/// A shell loop that keeps a CPU busy for a while (samples for every flag).
const SPIN: &[&str] = &[
    "sh",
    "-c",
    "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done",
];

/// Flags, and a `perf script -F` field with a text its output must contain.
type Case<'a> = (&'a [&'a str], Option<(&'a str, &'a str)>);

#[test]
fn flags_set_the_attr_bits_perf_sets_and_perf_reads_the_fields() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    // flag(s), and the `perf script -F` field whose values the samples must carry.
    let cases: &[Case] = &[
        (&["-s"], None),
        (&["-d"], Some(("addr", ""))),
        (&["--phys-data"], Some(("phys_addr", ""))),
        (&["--data-page-size"], Some(("data_page_size", ""))),
        (&["-T"], None),
        (&["-P"], Some(("period", ""))),
        (&["-R"], Some(("cpu", ""))),
        (&["-N", "-B", "--no-bpf-event"], None),
        (&["--no-bpf-event"], None),
        (&["-c", "10000"], None),
        (&["-c", "10000", "-P"], Some(("period", "10000"))),
        (&["-c", "10000", "-T"], None),
        (&["-i", "-T"], None),
        (&["--user-regs=ax,bx"], Some(("uregs", "AX:"))),
        (&["--intr-regs"], Some(("iregs", "R15:"))),
        (&["--intr-regs=di,r8"], Some(("iregs", "DI:"))),
        (&["--all-user"], None),
        (&["--all-kernel"], None),
        (&["-k", "monotonic_raw"], None),
        (&["-k", "4"], None),
        (&["-k", "boottime"], None),
        (&["--namespaces"], None),
        (&["--all-cgroups"], None),
        (&["--mmap-flush", "1M"], None),
        (&["-D", "10"], None),
    ];
    for (i, (flags, field)) in cases.iter().enumerate() {
        let (p, k) = both(dir.path(), &format!("c{i}"), flags, SPIN);
        assert_eq!(evlist(&p), evlist(&k), "{flags:?}: the attrs perf opened");
        let script = perf_ok(&["script"], &k);
        if let Some((f, want)) = field {
            let out = perf_ok(&["script", "-F", &format!("ip,{f}")], &k);
            assert!(!out.trim().is_empty(), "{flags:?}: no samples: {script}");
            assert!(out.contains(want), "{flags:?}: {f} missing: {out}");
        }
    }
}

#[test]
fn end_of_record_lines_are_perfs() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    // The same lines with the numbers blanked (sizes differ by the features written).
    let shape = |s: &str| -> Vec<String> {
        s.lines()
            .filter(|l| l.starts_with("[ perf record:"))
            .map(|l| {
                let mut out = String::new();
                let mut last_digit = false;
                for c in l.chars() {
                    let d = c.is_ascii_digit();
                    if !(d && last_digit) {
                        out.push(if d { '9' } else { c });
                    }
                    last_digit = d;
                }
                out
            })
            .collect()
    };
    for flags in [
        &["-o", "f.data"][..],
        &["-z", "-o", "z.data"],
        &["--timestamp-filename", "-o", "t.data"],
        &["-o", "-"],
    ] {
        let perf = Command::new("perf")
            .current_dir(dir.path())
            .args(["record", "-e", "cpu-clock", "-c", "100000"])
            .args(flags)
            .args(SPIN)
            .output()
            .unwrap();
        let ours = perfkit()
            .current_dir(dir.path())
            .args(["record", "-e", "cpu-clock", "-c", "100000"])
            .args(flags)
            .args(SPIN)
            .output()
            .unwrap();
        assert!(perf.status.success() && ours.status.success());
        // perf prints `FILE.<timestamp>` literally in its last line; perfkit names the
        // file it wrote (a deliberate difference: the digits blank to the same shape).
        let (p, o) = (
            String::from_utf8_lossy(&perf.stderr).replace(".<timestamp>", ".9"),
            String::from_utf8_lossy(&ours.stderr),
        );
        assert_eq!(shape(&p), shape(&o), "{flags:?}:\nperf:\n{p}\nours:\n{o}");
    }
    // --timestamp-filename: the file is renamed as the Dump line says.
    let ours = run_ok(perfkit().current_dir(dir.path()).args([
        "record",
        "--timestamp-filename",
        "-o",
        "u.data",
        "true",
    ]));
    let err = String::from_utf8_lossy(&ours.stderr);
    let dumped = err
        .lines()
        .find_map(|l| l.strip_prefix("[ perf record: Dump ")?.strip_suffix(" ]"))
        .unwrap_or_else(|| panic!("{err}"));
    let stamp = dumped.strip_prefix("u.data.").unwrap();
    assert_eq!(stamp.len(), 16, "YYYYMMDDhhmmsscc as perf: {stamp}");
    assert!(
        err.contains(&format!("MB {dumped} ")),
        "the last line names the file written: {err}"
    );
    assert!(dir.path().join(dumped).is_file());
    assert!(!dir.path().join("u.data").exists());
}

#[test]
fn register_lists_and_bad_values_as_perf() {
    need_perf!();
    let first = |o: &std::process::Output| {
        String::from_utf8_lossy(&o.stderr)
            .lines()
            .next()
            .unwrap_or("")
            .to_string()
    };
    for flag in ["--intr-regs=?", "--user-regs=?"] {
        let p = Command::new("perf")
            .args(["record", flag])
            .output()
            .unwrap();
        let o = perfkit().args(["record", flag]).output().unwrap();
        assert_eq!(o.status.code(), Some(0));
        assert_eq!(first(&p), first(&o), "{flag}");
    }
    for bad in [
        &["--user-regs=foo"][..],
        &["-k", "bogus"],
        &["-j", "bogus"],
        &["--max-size", "lots"],
    ] {
        let o = perfkit()
            .args(["record", "-o", "/nonexistent/x"])
            .args(bad)
            .arg("true")
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{bad:?}");
        assert!(!e.contains("panicked"), "{bad:?}: {e}");
        assert!(
            e.contains(bad[bad.len() - 1].trim_start_matches("--user-regs=")),
            "{bad:?}: the error names the value: {e}"
        );
    }
}

#[test]
fn branch_stacks_are_refused_as_perf_refuses_them_here() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    let p = Command::new("perf")
        .args(["record", "-e", "cpu-clock", "-b", "-o"])
        .arg(dir.path().join("p"))
        .arg("true")
        .output()
        .unwrap();
    if p.status.success() {
        common::skip("this PMU has branch stacks");
        return;
    }
    for flags in [&["-b"][..], &["-j", "any_call,u"]] {
        let o = perfkit()
            .args(["record", "-e", "cpu-clock", "-o"])
            .arg(dir.path().join("k"))
            .args(flags)
            .arg("true")
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0));
        assert!(
            e.contains(
                "cpu-clock: PMU Hardware or event type doesn't support branch stack sampling"
            ),
            "{e}"
        );
    }
}

#[test]
fn delay_starts_sampling_late_and_minus_one_never() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    // -D -1: nothing sampled, but the command's side band is there (the tracking event).
    let f = dir.path().join("never.data");
    let o = run_ok(
        perfkit()
            .args(["record", "-e", "cpu-clock", "-D", "-1", "-o"])
            .arg(&f)
            .args(SPIN),
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("Events disabled"));
    let script = perf_ok(&["script", "-F", "event"], &f);
    assert!(!script.contains("cpu-clock"), "{script}");
    let mmaps = perf_ok(&["script", "--show-task-events"], &f);
    assert!(mmaps.contains("PERF_RECORD_COMM"), "{mmaps}");
    // -D 300: the first cpu-clock sample comes at least 300 ms after the exec.
    let f = dir.path().join("late.data");
    let o = run_ok(
        perfkit()
            .args(["record", "-e", "cpu-clock", "-D", "300", "-o"])
            .arg(&f)
            .args([
                "sh",
                "-c",
                "i=0; while [ $i -lt 600000 ]; do i=$((i+1)); done",
            ]),
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("Events enabled"));
    let out = perf_ok(&["script", "--show-task-events", "-F", "time,event"], &f);
    let time_of = |l: &str| -> f64 {
        l.split_whitespace()
            .find_map(|w| w.strip_suffix(':')?.parse().ok())
            .unwrap()
    };
    let exec = out
        .lines()
        .find(|l| l.contains("PERF_RECORD_COMM: sh") || l.contains("PERF_RECORD_COMM exec"))
        .map(time_of)
        .unwrap_or_else(|| panic!("{out}"));
    let first = out
        .lines()
        .find(|l| l.contains("cpu-clock"))
        .map(time_of)
        .unwrap_or_else(|| panic!("no sample after the delay: {out}"));
    assert!(first - exec >= 0.3, "exec {exec}, first sample {first}");
}

#[test]
fn max_size_stops_the_recording_as_perf_does() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("max.data");
    let o = run_ok(
        perfkit()
            .args([
                "record",
                "-e",
                "cpu-clock",
                "-F",
                "10000",
                "-m",
                "4",
                "--max-size=20K",
                "-o",
            ])
            .arg(&f)
            .args([
                "sh",
                "-c",
                "i=0; while [ $i -lt 3000000 ]; do i=$((i+1)); done; echo finished",
            ]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("[ perf record: perf size limit reached ("),
        "{err}"
    );
    assert!(
        !String::from_utf8_lossy(&o.stdout).contains("finished"),
        "the command was ended"
    );
    perf_ok(&["report", "--stdio"], &f);
}

/// The `.build-id/xx/yyyy` links of a cache directory, as build ids.
fn cached_ids(dir: &Path) -> std::collections::BTreeSet<String> {
    let mut out = std::collections::BTreeSet::new();
    for d in std::fs::read_dir(dir.join(".build-id"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for l in std::fs::read_dir(d.path()).into_iter().flatten().flatten() {
            if l.path().exists() {
                out.insert(format!(
                    "{}{}",
                    d.file_name().to_string_lossy(),
                    l.file_name().to_string_lossy()
                ));
            }
        }
    }
    out
}

/// The build ids of `perf buildid-list -i FILE`.
fn listed_ids(file: &Path) -> std::collections::BTreeSet<String> {
    perf_ok(&["buildid-list"], file)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|id| id.len() == 40)
        .map(str::to_string)
        .collect()
}

#[test]
fn record_fills_the_build_id_cache_as_perf_does_unless_n_or_b() {
    need_perf!();
    let dir = tempfile::tempdir().unwrap();
    let run = |tool: &str, cache: &str, flags: &[&str], out: &str| {
        let mut cmd = if tool == "perf" {
            Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(
            cmd.current_dir(dir.path())
                .arg("--buildid-dir")
                .arg(dir.path().join(cache))
                .args(["record", "-q", "-e", "cpu-clock"])
                .args(flags)
                .args(["-o", out])
                .args(SPIN),
        );
        dir.path().join(out)
    };
    let theirs = run("perf", "perf-cache", &[], "p.data");
    let ours = run("perfkit", "kit-cache", &[], "k.data");
    let (their_cache, our_cache) = (
        cached_ids(&dir.path().join("perf-cache")),
        cached_ids(&dir.path().join("kit-cache")),
    );
    assert!(!our_cache.is_empty(), "perfkit cached nothing");
    // Every binary of perfkit's table is cached, and everything perf cached from its own
    // recording of the same command (the sampled files and the kernel) is in perfkit's
    // cache too, but the vdso (perfkit's table does not name it).
    assert_eq!(
        our_cache,
        listed_ids(&ours),
        "cache = perfkit's build-id table"
    );
    let vdso: Vec<String> = perf_ok(&["buildid-list"], &theirs)
        .lines()
        .filter(|l| l.ends_with("[vdso]"))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect();
    for id in &their_cache {
        assert!(
            our_cache.contains(id) || vdso.contains(id),
            "perf cached {id}, perfkit did not: {our_cache:?}"
        );
    }
    // perf's layout: perf finds the kernel's entry perfkit made.
    let kernel = perf_ok(&["buildid-list"], &ours)
        .lines()
        .find(|l| l.ends_with("[kernel.kallsyms]"))
        .and_then(|l| l.split_whitespace().next().map(str::to_string));
    if let Some(k) = kernel {
        let kallsyms = dir
            .path()
            .join("kit-cache/[kernel.kallsyms]")
            .join(&k)
            .join("kallsyms");
        assert!(kallsyms.is_file(), "{}", kallsyms.display());
    }
    // A second recording finds everything cached and changes nothing.
    run("perfkit", "kit-cache", &[], "k2.data");
    assert_eq!(cached_ids(&dir.path().join("kit-cache")), our_cache);
    // -N: no cache; -B: no build-id table and no cache, as perf.
    for (flags, name) in [(&["-N"][..], "n"), (&["-B"][..], "b")] {
        for tool in ["perf", "perfkit"] {
            let cache = format!("{tool}-{name}-cache");
            let f = run(tool, &cache, flags, &format!("{tool}-{name}.data"));
            assert!(
                cached_ids(&dir.path().join(&cache)).is_empty(),
                "{tool} {flags:?} filled the cache"
            );
            let header = perf_ok(&["report", "--header-only"], &f);
            let missing = header
                .lines()
                .find(|l| l.starts_with("# missing features:"))
                .unwrap_or("");
            assert_eq!(
                missing.split_whitespace().any(|w| w == "BUILD_ID"),
                name == "b",
                "{tool} {flags:?}: {missing}"
            );
        }
    }
}
