//! `perfkit agent`: every window's profile reaches a Pyroscope-style ingest endpoint that
//! is down at first and comes up later (spooled, then sent); the profiles written to the
//! directory are read by `go tool pprof` with the known workload's hot function on top;
//! `perfkit report` merges the directory and filters it by label; `--no-symbolize` leaves
//! build ids and addresses.

mod common;
#[path = "../../perfkit-fleet/tests/common/stores.rs"]
mod stores;

use perfkit_report::export::pprof::PprofProfile;
use prost::Message;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WORKLOAD: &str = r#"
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) double fleet_hot_function(double x) {
    for (int i = 0; i < 2000000; i++) x = x * 1.0000001 + 0.5;
    return x;
}
__attribute__((noinline)) void fleet_caller(double *x) { *x = fleet_hot_function(*x); }
int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 5, x = 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        fleet_caller(&x);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    return x == 0;
}
"#;

struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .is_some_and(|l| l.split_whitespace().nth(1) == Some("0"))
    })
}

/// The workload, built with frame pointers as `dir/name` (each test its own name, so that
/// each finds its own workload's samples by `comm`); None (after a skip) without a compiler.
fn workload(dir: &Path, name: &str) -> Option<PathBuf> {
    let src = dir.join("fleet_workload.c");
    std::fs::write(&src, WORKLOAD).unwrap();
    let bin = dir.join(name);
    let ok = Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        common::skip("no C compiler");
        return None;
    }
    Some(bin)
}

fn decode(gz: &[u8]) -> PprofProfile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("gzip");
    PprofProfile::decode(&raw[..]).expect("a pprof profile")
}

/// Answer HTTP/1.1 requests on `listener` until the test ends as Pyroscope's `/ingest`
/// does (its rules: `stores.rs`), keeping each accepted request's query and profile.
fn serve_ingest(listener: TcpListener, got: Arc<Mutex<Vec<stores::Accepted>>>) {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let got = got.clone();
        std::thread::spawn(move || {
            stores::serve_connection(stream, &|r: &stores::Request| {
                let (answer, accepted) = stores::pyroscope_ingest(r);
                assert!(
                    accepted.is_some(),
                    "Pyroscope would refuse {}: {}",
                    r.target,
                    String::from_utf8_lossy(&answer.body)
                );
                got.lock().unwrap().extend(accepted);
                answer
            })
        });
    }
}

/// CPU seconds (user + system) of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    // USER_HZ is 100 on Linux.
    ticks / 100.0
}

fn have_go() -> bool {
    Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn every_profile_reaches_an_endpoint_that_was_down_and_pprof_reads_them() {
    if !is_root() {
        return common::skip("needs root (system-wide sampling)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(work) = workload(tmp.path(), "fleetwl_top") else {
        return;
    };
    // A port nobody listens on yet: the endpoint is down.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let busy = Killed(Command::new(&work).arg("300").spawn().unwrap());
    let cpu_before = cpu_seconds(busy.0.id());
    let out_dir = tmp.path().join("profiles");
    let spool = tmp.path().join("spool");
    let windows = 4;
    let agent = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        // `record --continuous` is the agent.
        .args(["record", "--continuous", "-a", "-g", "-w", "3"])
        .args(["--count", &windows.to_string(), "-v"])
        .arg("-d")
        .arg(&out_dir)
        .arg("--spool-dir")
        .arg(&spool)
        .arg("--pyroscope")
        .arg(format!("http://127.0.0.1:{port}"))
        .args(["--name", "fleet-test", "--host", "test-host"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut agent = Killed(agent);
    // Down for the first two windows: they wait in the spool.
    let t = Instant::now();
    while std::fs::read_dir(&spool).map_or(0, |d| d.count()) < 2 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "two profiles spooled while the endpoint is down"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let got = Arc::new(Mutex::new(Vec::new()));
    let listener = TcpListener::bind(("127.0.0.1", port)).expect("the port is still free");
    {
        let got = got.clone();
        std::thread::spawn(move || serve_ingest(listener, got));
    }
    let status = agent.0.wait().unwrap();
    let workload_cpu = cpu_seconds(busy.0.id()) - cpu_before;
    let mut err = String::new();
    agent
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(status.success(), "agent failed: {err}");
    let got = got.lock().unwrap();
    assert_eq!(
        got.len(),
        windows,
        "every window's profile was received once the endpoint came up: {err}"
    );
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "the spool is empty once everything was sent"
    );
    let mut froms = Vec::new();
    for g in got.iter() {
        assert_eq!(
            g.labels,
            [
                ("__name__".to_string(), "fleet-test".to_string()),
                ("host".into(), "test-host".into())
            ]
        );
        assert_eq!(g.query["format"], "pprof");
        let from: u64 = g.query["from"].parse().unwrap();
        froms.push(from);
        let p = &g.profile;
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(s(p.sample_type[0].r#type), "samples");
        assert_eq!(s(p.sample_type[1].r#type), "cpu");
        assert_eq!(s(p.sample_type[1].unit), "nanoseconds");
        assert!(!p.sample.is_empty(), "a window has samples");
        let keys: std::collections::BTreeSet<&str> = p
            .sample
            .iter()
            .flat_map(|x| &x.label)
            .map(|l| s(l.key))
            .collect();
        for k in ["comm", "process", "pid", "host"] {
            assert!(keys.contains(k), "label {k} in {keys:?}");
        }
    }
    froms.sort();
    froms.dedup();
    assert!(froms.len() >= windows - 1, "distinct windows: {froms:?}");

    // The directory holds the same four; go tool pprof reads them.
    let files: Vec<PathBuf> = {
        let mut f: Vec<PathBuf> = std::fs::read_dir(&out_dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".pb.gz"))
            .collect();
        f.sort();
        f
    };
    assert_eq!(files.len(), windows);
    // perfkit report merges the directory; the workload's samples by label.
    let report = common::stdout_ok(
        common::perfkit()
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--sort",
                "sym",
                "--label",
            ])
            .arg("comm=fleetwl_top")
            .arg("-i")
            .arg(&out_dir),
    );
    let first_row = report
        .lines()
        .find(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
        .unwrap_or("");
    assert!(
        first_row.contains("fleet_hot_function"),
        "the workload's hot function leads the merged report:\n{report}"
    );
    let samples_line = report
        .lines()
        .find(|l| l.starts_with("# Samples:"))
        .unwrap();
    let n: u64 = samples_line
        .split_whitespace()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    // At most 19 samples per second of the workload's CPU time while the agent ran (a
    // little longer than its windows), with room for sampling noise; at least one.
    let expected = workload_cpu * 19.0;
    assert!(
        n >= 1 && (n as f64) <= expected * 1.5 + 4.0,
        "{n} samples of the workload for {workload_cpu:.2} s of its CPU time at 19 Hz: {samples_line}"
    );
    if !have_go() {
        return common::skip("go is not installed (Debian package golang-go)");
    }
    for f in &files {
        let out = Command::new("go")
            .args(["tool", "pprof", "-top", "-tagfocus=comm=fleetwl_top"])
            .arg(f)
            .env("HOME", tmp.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "go tool pprof: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The workload's samples in this window ("Showing nodes accounting for N, ..."):
        // on a loaded machine a window can hold none or a few of them, taken anywhere
        // (startup, exit); the merged report above already showed the hot function
        // leads over all windows, so a window is checked once it has a few samples.
        let shown: f64 = text
            .lines()
            .find_map(|l| l.trim().strip_prefix("Showing nodes accounting for "))
            .and_then(|r| r.split(',').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no sample count in go tool pprof -top:\n{text}"));
        if shown < 4.0 {
            continue;
        }
        let top = text
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("flat"))
            .nth(1)
            .unwrap_or("");
        if !top.contains("fleet_hot_function") {
            let traces = Command::new("go")
                .args(["tool", "pprof", "-traces", "-tagfocus=comm=fleetwl_top"])
                .arg(f)
                .env("HOME", tmp.path())
                .output()
                .unwrap();
            panic!(
                "go tool pprof -top of {}: the hot function first:\n{text}\n{}",
                f.display(),
                String::from_utf8_lossy(&traces.stdout)
            );
        }
    }
}

#[test]
fn no_symbolize_leaves_build_ids_and_addresses() {
    if !is_root() {
        return common::skip("needs root (system-wide sampling)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let Some(work) = workload(tmp.path(), "fleetwl_nosym") else {
        return;
    };
    let _busy = Killed(Command::new(&work).arg("300").spawn().unwrap());
    let out_dir = tmp.path().join("profiles");
    common::run_ok(
        common::perfkit()
            .args(["agent", "-w", "3", "--count", "1", "--no-symbolize", "-d"])
            .arg(&out_dir),
    );
    let file = std::fs::read_dir(&out_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".pb.gz"))
        .unwrap();
    let p = decode(&std::fs::read(&file).unwrap());
    let s = |i: i64| p.string_table[i as usize].as_str();
    let m = p
        .mapping
        .iter()
        .find(|m| s(m.filename) == work.to_str().unwrap())
        .expect("a mapping of the workload");
    assert!(!m.has_functions);
    // Its build id, as the file's note has it.
    let readelf = Command::new("readelf").arg("-n").arg(&work).output();
    if let Ok(o) = readelf {
        let notes = String::from_utf8_lossy(&o.stdout);
        if let Some(id) = notes
            .lines()
            .find_map(|l| l.trim().strip_prefix("Build ID: "))
        {
            assert_eq!(s(m.build_id), id.trim());
        }
    }
    assert!(!s(m.build_id).is_empty(), "the mapping carries a build id");
    let locs: Vec<_> = p.location.iter().filter(|l| l.mapping_id == m.id).collect();
    assert!(!locs.is_empty());
    assert!(
        locs.iter().all(|l| l.line.is_empty()
            && l.address >= m.memory_start
            && l.address < m.memory_limit)
    );
    // go tool pprof symbolizes them from the local binary (same build id).
    if !have_go() {
        return common::skip("go is not installed (Debian package golang-go)");
    }
    let out = Command::new("go")
        .args(["tool", "pprof", "-top", "-tagfocus=comm=fleetwl_nosym"])
        .arg(&file)
        .env("HOME", tmp.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("fleet_hot_function"),
        "go tool pprof symbolizes the addresses with the binary:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
