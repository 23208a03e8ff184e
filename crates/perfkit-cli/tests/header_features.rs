//! The machine's feature sections perfkit's `record` writes (NUMA_TOPOLOGY, PMU_MAPPINGS,
//! CACHE, MEM_TOPOLOGY, PMU_CAPS; in pipe mode also CMDLINE, EVENT_DESC and SAMPLE_TIME):
//! `perf report --header-only -I` prints the same lines for them as for perf 6.1's file of
//! the same command on this machine, the same features are missing, and perfkit's own
//! `report --header-only -I` reads perfkit's file and stream back as perf does.

mod common;

use common::{have_perf, skip};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// `TOOL record -q -o OUT -- true`; pipe mode (`-o -`) into a file.
fn record(tool: &str, dir: &Path, pipe: bool) -> PathBuf {
    let path = dir.join(format!("{tool}{}.data", if pipe { "-pipe" } else { "" }));
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.args(["record", "-q", "-o"]);
    if pipe {
        cmd.arg("-").stdout(File::create(&path).expect("create"));
    } else {
        cmd.arg(&path);
    }
    let st = cmd
        .args(["--", "true"])
        .stderr(Stdio::null())
        .status()
        .expect("record");
    assert!(st.success(), "{tool} record (pipe: {pipe})");
    path
}

/// `TOOL report --header-only -I` of `file` (pipe mode: on standard input).
fn header(tool: &str, file: &Path, pipe: bool) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.args(["report", "--header-only", "-I", "-i"]);
    if pipe {
        cmd.arg("-").stdin(File::open(file).expect("open"));
    } else {
        cmd.arg(file);
    }
    let out = cmd.stderr(Stdio::null()).output().expect("report");
    assert!(out.status.success(), "{tool} report of {}", file.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The lines of the machine's sections (free memory left out: it varies run to run), and
/// the missing features.
fn machine_lines(h: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut in_mem = false;
    for l in h.lines() {
        let keep = l.starts_with("# node")
            || l.starts_with("# pmu mappings:")
            || l.starts_with("# CPU cache info:")
            || l.starts_with("#  L")
            || l.starts_with("# memory nodes")
            || l.starts_with("# missing features:")
            || (in_mem && l.starts_with("#  ") && l.contains("]: "));
        in_mem = l.starts_with("# memory nodes") || (in_mem && l.contains("]: "));
        if keep {
            v.push(l.split(", free =").next().unwrap_or(l).to_string());
        }
    }
    v
}

/// Each PMU of sysfs, as perf prints it (`name = type`).
fn sysfs_pmus() -> Vec<String> {
    std::fs::read_dir("/sys/bus/event_source/devices")
        .map(|d| {
            d.flatten()
                .filter_map(|e| {
                    let ty = std::fs::read_to_string(e.path().join("type")).ok()?;
                    Some(format!(
                        "{} = {}",
                        e.file_name().to_string_lossy(),
                        ty.trim()
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn file_sections_as_perf_writes_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs = record("perf", dir.path(), false);
    let ours = record("perfkit", dir.path(), false);
    let (pf, pk) = (header("perf", &theirs, false), header("perf", &ours, false));
    let lines = machine_lines(&pk);
    assert_eq!(lines, machine_lines(&pf), "perfkit's:\n{pk}\nperf's:\n{pf}");
    // What the sections say is this machine's.
    let pmus = lines
        .iter()
        .find(|l| l.starts_with("# pmu mappings:"))
        .expect("a pmu mappings line");
    for p in sysfs_pmus() {
        assert!(pmus.contains(&p), "{p} missing from {pmus}");
    }
    assert!(pmus.contains("software = 1"), "{pmus}");
    if Path::new("/sys/devices/system/node/node0").exists() {
        assert!(lines.iter().any(|l| l.starts_with("# node0 meminfo")));
    }
    let missing = lines.last().expect("a missing features line");
    for feat in ["NUMA_TOPOLOGY", "PMU_MAPPINGS", "PMU_CAPS"] {
        assert!(!missing.contains(&format!(" {feat} ")), "{missing}");
    }
    // perfkit reads its own file back as perf does, every line.
    assert_eq!(header("perfkit", &ours, false), pk);
}

#[test]
fn pipe_features_as_perf_sends_them() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let theirs = record("perf", dir.path(), true);
    let ours = record("perfkit", dir.path(), true);
    let (pf, pk) = (header("perf", &theirs, true), header("perf", &ours, true));
    assert_eq!(
        machine_lines(&pk),
        machine_lines(&pf),
        "perfkit's:\n{pk}\nperf's:\n{pf}"
    );
    // The command line, the event and perf's zero sample times, as in perf's stream.
    let starts = |h: &str, p: &str| h.lines().any(|l| l.starts_with(p));
    for p in [
        "# cmdline : ",
        "# event : name = cpu-clock",
        "# pmu mappings: ",
        "# time of first sample : 0.000000",
        "# time of last sample : 0.000000",
    ] {
        assert!(starts(&pf, p), "perf's stream has no `{p}`:\n{pf}");
        assert!(starts(&pk, p), "perfkit's stream has no `{p}`:\n{pk}");
    }
    let cmdline = pk.lines().find(|l| l.starts_with("# cmdline : ")).unwrap();
    assert!(cmdline.ends_with(" record -q -o - -- true "), "{cmdline}");
    // perfkit reads its own stream back as perf does.
    assert_eq!(header("perfkit", &ours, true), pk);
}
