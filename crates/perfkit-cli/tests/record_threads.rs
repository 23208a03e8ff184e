//! `perfkit record --threads`: rings drained by several threads still make one perf.data
//! that perf 6.1 reads in order, with the samples perfkit says it wrote and the lost count
//! it printed; bad `--threads` values fail as perf's do.

mod common;

use common::{have_perf, perfkit};
use std::path::Path;

/// Samples, and lost samples (the larger of the PERF_RECORD_LOST and
/// PERF_RECORD_LOST_SAMPLES totals, as perfkit counts them), read from the file.
fn file_counts(path: &Path) -> (usize, u64) {
    let f = perfkit_data::PerfData::open(path).expect("perf.data");
    let (mut samples, mut lost, mut lost_samples) = (0usize, 0u64, 0u64);
    let u64_at = |b: &[u8], at: usize| u64::from_ne_bytes(b[at..at + 8].try_into().unwrap());
    f.walk_decompressed(|_, type_, _, body| {
        match type_ {
            perfkit::sys::PERF_RECORD_SAMPLE => samples += 1,
            perfkit::sys::PERF_RECORD_LOST => lost += u64_at(body, 8),
            perfkit::sys::PERF_RECORD_LOST_SAMPLES => lost_samples += u64_at(body, 0),
            _ => {}
        }
        Ok(())
    })
    .expect("walk");
    (samples, lost.max(lost_samples))
}

/// The number in perfkit's summary line.
fn reported_samples(stderr: &str) -> usize {
    stderr
        .lines()
        .find(|l| l.starts_with("[ perf record: Captured and wrote "))
        .and_then(|l| l.rsplit_once(" samples)"))
        .and_then(|(s, _)| s.rsplit_once('(')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no summary in {stderr}"))
}

/// The lost count perfkit printed (0 when it printed none).
fn reported_lost(stderr: &str) -> u64 {
    stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix("perfkit: ")?
                .split_once(" samples were lost")
        })
        .map_or(0, |(n, _)| n.parse().expect("lost count"))
}

fn sample_lines(script: &str) -> usize {
    script
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('\t'))
        .count()
}

/// `perf ARGS -i FILE`: its standard output and error; it must succeed.
fn perf(args: &[&str], file: &Path) -> (String, String) {
    let o = std::process::Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .expect("run perf");
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "perf {args:?}: {err}");
    (String::from_utf8_lossy(&o.stdout).into_owned(), err)
}

#[test]
fn threaded_recordings_are_one_file_perf_reads_in_order() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let cpus = perfkit::cpus::online().unwrap();
    // A user-defined layout: each thread drains one CPU's ring and runs on that CPU.
    let masks: Vec<String> = cpus.iter().map(|c| format!("{c}/{c}")).collect();
    let user = format!("--threads={}", masks.join(":"));
    let dir = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("perfkit");
    let bin = bin.to_str().unwrap();
    let cases: [(&str, String, &[&str]); 5] = [
        ("cpu", "--threads".to_string(), &[]),
        ("cpu-zstd", "--threads=cpu".to_string(), &["-z"]),
        ("user", user, &[]),
        ("core", "--threads=core".to_string(), &[]),
        ("package", "--threads=package".to_string(), &[]),
    ];
    for (name, flag, extra) in cases {
        {
            let out = dir.path().join(format!("{name}.data"));
            // Two busy threads for a second (perf's thloop), sampled on every CPU.
            let o = perfkit()
                .args(["record", "-a", "-g", "-F", "2000", &flag])
                .args(extra)
                .arg("-o")
                .arg(&out)
                .args(["--", bin, "test", "-w", "thloop", "1"])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr).into_owned();
            assert!(o.status.success(), "{name}: {err}");
            let (samples, lost) = file_counts(&out);
            assert!(samples > 0, "{name}: no samples");
            if extra.is_empty() {
                assert_eq!(samples, reported_samples(&err), "{name}: summary");
            }
            assert_eq!(lost, reported_lost(&err), "{name}: lost as printed: {err}");
            // perf reads every sample, in order (perf warns about records that come after
            // a round that should have held them).
            let (script, perr) = perf(&["script", "-F", "comm,tid,cpu,time,ip"], &out);
            assert_eq!(sample_lines(&script), samples, "{name}: perf script");
            assert!(!perr.contains("out of order"), "{name}: {perr}");
            let (report, perr) = perf(&["report", "--stdio", "--no-children"], &out);
            assert!(!perr.contains("out of order"), "{name}: {perr}");
            let total = report
                .lines()
                .find_map(|l| l.strip_prefix("# Samples: "))
                .unwrap_or_else(|| panic!("{name}: {report}"));
            assert!(!total.starts_with('0'), "{name}: {total}");
            // perfkit reads it back with the same samples.
            let ours = perfkit()
                .args(["script", "-q", "-F", "comm,tid,cpu,time,ip", "-i"])
                .arg(&out)
                .output()
                .unwrap();
            assert!(ours.status.success());
            assert_eq!(
                sample_lines(&String::from_utf8_lossy(&ours.stdout)),
                samples,
                "{name}: perfkit script"
            );
            // Both CPUs' rings made it into the file (the workload runs on every CPU).
            for c in &cpus {
                let tag = format!("[{c:03}]");
                assert!(script.contains(&tag), "{name}: no sample of CPU {c}");
            }
        }
    }
}

#[test]
fn bad_threads_values_fail_as_perfs() {
    let cpus = perfkit::cpus::online().unwrap();
    let last = cpus.last().copied().unwrap_or(0);
    // Far beyond any CPU (perf treats CPUs just past the last possible one as empty
    // masks, and those beyond its bitmap as errors: perfkit refuses both as errors).
    let beyond = 4096;
    let cases = [
        (
            "0".to_string(),
            234,
            "Invalid thread maps or affinity specs",
        ),
        (
            "x".to_string(),
            234,
            "Invalid thread maps or affinity specs",
        ),
        ("0/0:0/0".to_string(), 234, "Intersecting maps mask: 0"),
        (
            format!("{beyond}/0"),
            237,
            "Failed to initialize maps thread mask",
        ),
        (
            format!("0/{beyond}"),
            237,
            "Failed to initialize affinity thread mask",
        ),
    ];
    for (spec, code, words) in cases {
        let threads = format!("--threads={spec}");
        let args = ["record", "-a", "-o", "/dev/null", &threads, "--", "true"];
        let o = perfkit().args(args).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{spec}: {err}");
        assert!(err.contains(words), "{spec}: {err}");
        assert!(
            err.contains("Failed to initialize parallel data streaming masks"),
            "{spec}: {err}"
        );
        // perf says the same, with the same status.
        if have_perf() {
            let p = std::process::Command::new("perf")
                .args(args)
                .output()
                .unwrap();
            let perr = String::from_utf8_lossy(&p.stderr);
            assert_eq!(p.status.code(), Some(code), "perf {spec}: {perr}");
            assert!(perr.contains(words), "perf {spec}: {perr}");
        }
    }
    // -C filters the masks: a mask of only other CPUs is empty.
    if last > 0 {
        let o = perfkit()
            .args(["record", "-C", "0", "-o", "/dev/null"])
            .arg(format!("--threads={last}/{last}"))
            .args(["--", "true"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(234), "{err}");
        assert!(err.contains(&format!("Empty maps mask: {last}")), "{err}");
    }
}
