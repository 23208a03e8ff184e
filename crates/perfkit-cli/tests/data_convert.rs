//! `perfkit data convert --to-json` writes the file `perf data convert --to-json` writes,
//! byte for byte, for perf's and perfkit's recordings (with and without call chains, with
//! a cpu field).

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip};

#[test]
fn json_is_perfs_json() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| dir.path().join(n);
    run_ok(
        Command::new("perf")
            .args([
                "record",
                "-q",
                "-g",
                "--sample-cpu",
                "-e",
                "task-clock",
                "-o",
            ])
            .arg(d("perf.data"))
            .args(["--", "ls", "/"]),
    );
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "task-clock:u", "-o"])
            .arg(d("perfkit.data"))
            .args(["--", "ls", "/"]),
    );
    for input in ["perf.data", "perfkit.data"] {
        let theirs = d(&format!("{input}.perf.json"));
        let ours = d(&format!("{input}.perfkit.json"));
        run_ok(
            Command::new("perf")
                .args(["data", "convert", "--to-json"])
                .arg(&theirs)
                .arg("-i")
                .arg(d(input)),
        );
        run_ok(
            perfkit()
                .args(["data", "convert", "--to-json"])
                .arg(&ours)
                .arg("-i")
                .arg(d(input)),
        );
        let want = std::fs::read_to_string(&theirs).unwrap();
        assert!(want.contains("\"samples\": ["), "{want}");
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), want, "{input}");
        let parsed: serde_json::Value = serde_json::from_str(&want).unwrap();
        assert!(!parsed["samples"].as_array().unwrap().is_empty());
    }
}

#[test]
fn an_existing_output_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "task-clock", "-o"])
            .arg(&data)
            .arg("true"),
    );
    let out = dir.path().join("out.json");
    std::fs::write(&out, "keep").unwrap();
    let r = perfkit()
        .args(["data", "convert", "--to-json"])
        .arg(&out)
        .arg("-i")
        .arg(&data)
        .output()
        .unwrap();
    // perf 6.1's words and status.
    assert_eq!(r.status.code(), Some(255), "{r:?}");
    let said = "Output file exists. Use --force to overwrite it.";
    assert!(String::from_utf8_lossy(&r.stderr).contains(said), "{r:?}");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    if have_perf() {
        let p = std::process::Command::new("perf")
            .args(["data", "convert", "--to-json"])
            .arg(&out)
            .arg("-i")
            .arg(&data)
            .output()
            .unwrap();
        assert_eq!(p.status.code(), r.status.code(), "{p:?}");
        assert!(String::from_utf8_lossy(&p.stderr).contains(said), "{p:?}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "keep");
    }
    run_ok(
        perfkit()
            .args(["data", "convert", "-f", "--to-json"])
            .arg(&out)
            .arg("-i")
            .arg(&data),
    );
    assert!(
        std::fs::read_to_string(&out)
            .unwrap()
            .starts_with("{\n\t\"linux-perf-json-version\": 1,")
    );
}
