//! `perfkit stat --regions`: C programs written for LIKWID's marker API and PAPI's
//! high-level API, compiled against Debian's headers, run unchanged (linked against the
//! real libraries and preloaded with perfkit's, or linked against perfkit's) and their
//! regions count exactly: calls = entries, page-faults of N fresh pages ≈ N.

mod common;
use common::{perfkit, skip};
use std::path::{Path, PathBuf};
use std::process::Command;

const PAGES: u64 = 300;

/// Build the marker cdylib (a no-op when it is fresh) and return its directory: the same
/// target directory as the perfkit binary under test.
fn marker_dir() -> PathBuf {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_perfkit"));
    let dir = exe.parent().unwrap().to_path_buf();
    let mut cmd = Command::new(env!("CARGO"));
    cmd.args(["build", "-q", "-p", "perfkit-markers"]);
    if dir.ends_with("release") {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("cargo build -p perfkit-markers");
    assert!(st.success(), "cargo build -p perfkit-markers failed");
    assert!(
        dir.join("libperfkit_markers.so").is_file(),
        "{}",
        dir.display()
    );
    dir
}

/// Compile fixture `src` with `flags`, or None (after a skip) without cc or the header.
fn compile(src: &str, header: &str, out: &Path, flags: &[&str]) -> Option<PathBuf> {
    if !Path::new(header).exists() {
        skip(&format!(
            "{header} is missing (apt-get install likwid libpapi-dev)"
        ));
        return None;
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(src);
    let o = Command::new("cc")
        .arg("-O1")
        .arg("-o")
        .arg(out)
        .arg(&src)
        .args(flags)
        .output();
    match o {
        Ok(o) if o.status.success() => Some(out.to_path_buf()),
        Ok(o) => panic!(
            "cc {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => {
            skip(&format!("no C compiler: {e}"));
            None
        }
    }
}

/// One `-x ;` line: region;thread;calls;time-ns;value;event;enabled;running.
#[derive(Debug)]
struct Line {
    region: String,
    thread: String,
    calls: u64,
    time_ns: u64,
    value: u64,
    event: String,
}

fn parse(csv: &str) -> Vec<Line> {
    // The program's own warnings share standard error with the -x lines.
    csv.lines()
        .filter(|l| !l.is_empty() && !l.starts_with("perfkit-markers:"))
        .map(|l| {
            let f: Vec<&str> = l.split(';').collect();
            assert_eq!(f.len(), 8, "{l}");
            Line {
                region: f[0].into(),
                thread: f[1].into(),
                calls: f[2].parse().unwrap(),
                time_ns: f[3].parse().unwrap(),
                value: f[4].parse().unwrap_or_else(|_| panic!("{l}")),
                event: f[5].into(),
            }
        })
        .collect()
}

fn run_regions(prog: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> Vec<Line> {
    let dir = marker_dir();
    let mut c = perfkit();
    c.env("PERFKIT_MARKERS_LIB", dir.join("libperfkit_markers.so"));
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = c
        .args([
            "stat",
            "--regions",
            "-e",
            "page-faults,task-clock",
            "-x",
            ";",
            "--",
        ])
        .arg(prog)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{err}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    parse(&err)
}

fn check_touch(lines: &[Line], thread: &str, reps: u64) {
    let pf = lines
        .iter()
        .find(|l| l.region == "touch" && l.thread == thread && l.event == "page-faults")
        .unwrap_or_else(|| panic!("no touch/{thread} page-faults in {lines:?}"));
    assert_eq!(pf.calls, reps, "{pf:?}");
    let want = PAGES * reps;
    assert!(
        (want..=want + 32 * reps).contains(&pf.value),
        "page-faults {} for {reps} x {PAGES} fresh pages",
        pf.value
    );
    let tc = lines
        .iter()
        .find(|l| l.region == "touch" && l.thread == thread && l.event == "task-clock")
        .unwrap();
    // task-clock (the scheduler's clock) within the region's CLOCK_MONOTONIC span, up to
    // the two clocks' disagreement.
    assert!(
        tc.value > 0 && tc.value <= tc.time_ns + tc.time_ns / 50 + 20_000 * reps,
        "{tc:?}"
    );
}

#[test]
fn likwid_program_linked_against_perfkit() {
    let dir = marker_dir();
    let tmp = tempfile::tempdir().unwrap();
    let Some(prog) = compile(
        "regions_likwid.c",
        "/usr/include/likwid-marker.h",
        &tmp.path().join("lw"),
        &[
            "-DLIKWID_PERFMON",
            "-pthread",
            &format!("-L{}", dir.display()),
            &format!("-Wl,-rpath,{}", dir.display()),
            "-lperfkit_markers",
        ],
    ) else {
        return;
    };
    let lines = run_regions(&prog, &[&PAGES.to_string(), "3", "2"], &[]);
    let threads: Vec<&str> = {
        let mut t: Vec<&str> = lines
            .iter()
            .filter(|l| l.region == "touch" && l.thread != "SUM")
            .map(|l| l.thread.as_str())
            .collect();
        t.dedup();
        t
    };
    assert_eq!(threads.len(), 2, "{lines:?}");
    for t in &threads {
        check_touch(&lines, t, 3);
    }
    check_touch(&lines, "SUM", 6);
    let idle: Vec<&Line> = lines
        .iter()
        .filter(|l| l.region == "idle" && l.thread == "SUM")
        .collect();
    assert_eq!(idle[0].calls, 2, "{idle:?}");
}

#[test]
fn likwid_next_group_switches_event_sets() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(prog) = compile(
        "regions_likwid.c",
        "/usr/include/likwid-marker.h",
        &tmp.path().join("lw"),
        &["-DLIKWID_PERFMON", "-pthread", "-llikwid"],
    ) else {
        return;
    };
    let dir = marker_dir();
    let out = perfkit()
        .env("PERFKIT_MARKERS_LIB", dir.join("libperfkit_markers.so"))
        .args([
            "stat",
            "--regions",
            "-e",
            "page-faults;task-clock",
            "-j",
            "--",
        ])
        .arg(&prog)
        .args([&PAGES.to_string(), "4", "1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.contains("\"touch\"")).unwrap()).unwrap();
    assert_eq!(v["calls"], 4);
    // Sets alternate after each call: page-faults counted in calls 0 and 2 only.
    let pf = &v["events"][0];
    assert_eq!(pf["event"], "page-faults");
    let (en, run) = (
        pf["enabled-ns"].as_u64().unwrap(),
        pf["running-ns"].as_u64().unwrap(),
    );
    assert!(run > 0 && run < en, "{v}");
    assert_eq!(en, v["time-ns"].as_u64().unwrap());
    // counter-value is the estimate over the whole region time: above the raw 2 x PAGES.
    let est: u64 = pf["counter-value"].as_str().unwrap().parse().unwrap();
    assert!(est > 2 * PAGES, "{v}");
}

#[test]
fn likwid_program_linked_against_likwid_runs_under_preload() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(prog) = compile(
        "regions_likwid.c",
        "/usr/include/likwid-marker.h",
        &tmp.path().join("lw"),
        &["-DLIKWID_PERFMON", "-pthread", "-llikwid"],
    ) else {
        return;
    };
    let lines = run_regions(&prog, &[&PAGES.to_string(), "4", "1"], &[]);
    let tid = lines
        .iter()
        .find(|l| l.region == "touch")
        .unwrap()
        .thread
        .clone();
    check_touch(&lines, &tid, 4);
}

#[test]
fn papi_program_linked_against_papi_runs_under_preload() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(prog) = compile(
        "regions_papi.c",
        "/usr/include/papi.h",
        &tmp.path().join("pp"),
        &["-lpapi"],
    ) else {
        return;
    };
    let lines = run_regions(&prog, &[&PAGES.to_string(), "5"], &[]);
    let tid = lines
        .iter()
        .find(|l| l.region == "touch")
        .unwrap()
        .thread
        .clone();
    // PAPI_hl_read adds the first half of the last call without completing it: still 5.
    check_touch(&lines, &tid, 5);
}

#[test]
fn json_and_table_and_errors() {
    let dir = marker_dir();
    let tmp = tempfile::tempdir().unwrap();
    let Some(prog) = compile(
        "regions_papi.c",
        "/usr/include/papi.h",
        &tmp.path().join("pp"),
        &[
            &format!("-L{}", dir.display()),
            &format!("-Wl,-rpath,{}", dir.display()),
            "-lperfkit_markers",
        ],
    ) else {
        return;
    };
    let lib = dir.join("libperfkit_markers.so");
    let out = perfkit()
        .env("PERFKIT_MARKERS_LIB", &lib)
        .args(["stat", "--regions", "-e", "page-faults", "-j", "--"])
        .arg(&prog)
        .args(["64", "2"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let v: serde_json::Value =
        serde_json::from_str(err.lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(v["region"], "touch");
    assert_eq!(v["calls"], 2);
    assert_eq!(v["events"][0]["event"], "page-faults");
    let pf: u64 = v["events"][0]["counter-value"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((128..=128 + 64).contains(&pf), "{v}");
    // page-faults alone: no derived metric applies.
    assert_eq!(v["metrics"], serde_json::json!({}));

    let out = perfkit()
        .env("PERFKIT_MARKERS_LIB", &lib)
        .args(["stat", "--regions", "-e", "page-faults", "--"])
        .arg(&prog)
        .args(["64", "2"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Region touch") && err.contains("page-faults"),
        "{err}"
    );

    let out = perfkit()
        .args(["stat", "--regions", "-e", "no-such-event", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-e"));
    let out = perfkit()
        .env("PERFKIT_MARKERS_LIB", tmp.path().join("nope.so"))
        .args(["stat", "--regions", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cargo build -p perfkit-markers"));
    for bad in [&["-a"][..], &["-r", "3"], &["-I", "100"]] {
        let out = perfkit()
            .args(["stat", "--regions"])
            .args(bad)
            .args(["--", "true"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("drop -p/-t/-a"),
            "{bad:?}"
        );
    }
    // A program without markers: no regions, its exit status.
    let out = perfkit()
        .env("PERFKIT_MARKERS_LIB", &lib)
        .args(["stat", "--regions", "--", "sh", "-c", "exit 7"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No regions"));
}

#[test]
fn an_event_that_does_not_open_is_one_error() {
    // instructions open only with a hardware PMU; where they do, there is nothing to check.
    if perfkit_regions_probe() {
        return;
    }
    let out = perfkit()
        .args(["stat", "--regions", "-e", "instructions", "--", "true"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-e") && err.contains("instructions"), "{err}");
}

fn perfkit_regions_probe() -> bool {
    perfkit::Counter::open(
        &perfkit::Attr::new(perfkit::Hardware::Instructions),
        &perfkit::Target::this_thread(),
    )
    .is_ok()
}
