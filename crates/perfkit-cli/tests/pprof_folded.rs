//! `report --format pprof` folds like samples as it reads them (memory follows the distinct
//! stacks and threads, not the file): its bytes must be those of the path that keeps every
//! sample (`PERFKIT_REPORT_KEEP=1`), on one reading thread and on several, on a generated
//! file and on real recordings (perfkit's and perf's).
//!
//! What the output keeps fixed: samples heaviest first, ties by location ids, then thread
//! (tid, pid), then labels; thread names enter the string table in that order. So the same
//! file gives the same bytes on every run (two processes hash differently). With `--time`
//! the folded path lists only the locations of the samples in the ranges (see the test).

mod common;

use common::{have_perf, perfkit, run_ok, skip};
use perfkit_report::export::pprof::PprofProfile;
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};

#[allow(dead_code)] // the example's `main` and argument parsing are not used here
#[path = "../../perfkit-report/examples/gen-perf-data.rs"]
mod generator;

/// The gzipped pprof of `file`, with these variables set.
fn pprof(file: &Path, env: &[(&str, &str)]) -> Vec<u8> {
    let mut cmd = perfkit();
    cmd.args(["report", "--format", "pprof", "-i"]).arg(file);
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_ok(&mut cmd).stdout
}

fn decode(gz: &[u8]) -> PprofProfile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("gunzip the pprof");
    PprofProfile::decode(&raw[..]).expect("decode the pprof")
}

/// The sample times `perfkit script` shows (ns), in order.
fn sample_times(file: &Path) -> Vec<u64> {
    let out = run_ok(
        perfkit()
            .args(["script", "-F", "time", "--ns", "-i"])
            .arg(file),
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let (s, ns) = l.trim().trim_end_matches(':').split_once('.')?;
            Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
        })
        .collect()
}

/// Compare the folded export (1 and 3 reading threads) with the kept one, byte for byte,
/// and check the folded one's values against the file's samples; returns the samples.
fn folded_is_kept(file: &Path) -> u64 {
    let kept = same_bytes(file);
    let p = decode(&kept);
    let times = sample_times(file);
    let samples: i64 = p.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(
        samples as usize,
        times.len(),
        "{}: samples/count against script's samples",
        file.display()
    );
    assert!(!times.is_empty(), "{}: no samples", file.display());
    assert_eq!(
        p.duration_nanos as u64,
        times[times.len() - 1] - times[0],
        "{}: duration from the first sample to the last",
        file.display()
    );
    // Heaviest first, ties by location ids then tid.
    for w in p.sample.windows(2) {
        let tid = |s: &perfkit_report::export::pprof::PprofSample| s.label[2].num;
        assert!(
            (-w[0].value[0], &w[0].location_id, tid(&w[0]))
                <= (-w[1].value[0], &w[1].location_id, tid(&w[1])),
            "{}: samples out of order",
            file.display()
        );
    }
    samples as u64
}

#[test]
fn folded_pprof_is_the_kept_one_on_a_generated_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gen.data");
    let mut a = generator::Args::new(30_000, file.clone());
    a.processes = 6;
    a.threads = 3;
    a.paths = 200;
    if let Err(e) = generator::run(a) {
        return skip(&format!("cannot generate a perf.data file here: {e}"));
    }
    let n = folded_is_kept(&file);
    assert!(n >= 30_000, "{n} samples of 30000");
    // Fewer pprof samples than file samples: they were merged.
    let p = decode(&pprof(&file, &[]));
    assert!(p.sample.len() < n as usize, "{} of {n}", p.sample.len());
}

/// The kept export of `file` after checking that the folded one (1 and 3 reading threads)
/// has the same bytes.
fn same_bytes(file: &Path) -> Vec<u8> {
    let kept = pprof(
        file,
        &[
            ("PERFKIT_REPORT_KEEP", "1"),
            ("PERFKIT_REPORT_THREADS", "1"),
        ],
    );
    for threads in ["1", "3"] {
        let folded = pprof(file, &[("PERFKIT_REPORT_THREADS", threads)]);
        assert!(
            folded == kept,
            "pprof of {} on {threads} threads differs from PERFKIT_REPORT_KEEP=1's \
             (first difference at byte {})",
            file.display(),
            kept.iter()
                .zip(&folded)
                .position(|(a, b)| a != b)
                .unwrap_or(kept.len().min(folded.len()))
        );
    }
    kept
}

/// A sample as plain values: its frames (address, function, file, line), values and labels
/// (key, string, number, unit).
type Plain = (
    Vec<(u64, String, String, i64)>,
    Vec<i64>,
    Vec<(String, String, i64, String)>,
);

/// The samples of `p` as plain values, sorted.
fn plain_samples(p: &PprofProfile) -> Vec<Plain> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out: Vec<Plain> = p
        .sample
        .iter()
        .map(|x| {
            let frames = x
                .location_id
                .iter()
                .map(|&id| {
                    let l = &p.location[id as usize - 1];
                    assert_eq!(l.id, id);
                    let line = &l.line[0];
                    let f = &p.function[line.function_id as usize - 1];
                    (l.address, s(f.name), s(f.filename), line.line)
                })
                .collect();
            let labels = x
                .label
                .iter()
                .map(|l| (s(l.key), s(l.str), l.num, s(l.num_unit)))
                .collect();
            (frames, x.value.clone(), labels)
        })
        .collect();
    out.sort();
    out
}

/// With `--time`, the folded export never reads the samples outside the ranges: its
/// samples, values, labels and span are the kept path's, but its locations, functions and
/// mappings are only those of the samples in the ranges (the kept path lists every
/// sample's, referenced or not).
#[test]
fn folded_pprof_with_time_ranges_has_the_kept_samples() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gen.data");
    let mut a = generator::Args::new(12_000, file.clone());
    a.processes = 4;
    a.threads = 3;
    a.paths = 100;
    if let Err(e) = generator::run(a) {
        return skip(&format!("cannot generate a perf.data file here: {e}"));
    }
    let times = sample_times(&file);
    let (first, last) = (times[0], times[times.len() - 1]);
    // The generator's samples run from about 1.00 s to 1.19 s.
    for spec in ["1.05,1.1", "10%/2", "0%-10%,30%-40%"] {
        let run = |env: &[(&str, &str)]| {
            let mut cmd = perfkit();
            cmd.args(["report", "--format", "pprof", "--time", spec, "-i"])
                .arg(&file);
            for (k, v) in env {
                cmd.env(k, v);
            }
            decode(&run_ok(&mut cmd).stdout)
        };
        let kept = run(&[
            ("PERFKIT_REPORT_KEEP", "1"),
            ("PERFKIT_REPORT_THREADS", "1"),
        ]);
        let samples = plain_samples(&kept);
        let n: i64 = kept.sample.iter().map(|x| x.value[0]).sum();
        assert!(
            n > 0 && (n as usize) < times.len(),
            "--time {spec}: {n} samples of {}",
            times.len()
        );
        assert!(kept.duration_nanos > 0 && (kept.duration_nanos as u64) < last - first);
        for threads in ["1", "3"] {
            let folded = run(&[("PERFKIT_REPORT_THREADS", threads)]);
            assert!(
                plain_samples(&folded) == samples,
                "--time {spec} on {threads} threads: samples differ from the kept path's"
            );
            assert_eq!(folded.duration_nanos, kept.duration_nanos, "--time {spec}");
            assert_eq!(folded.period, kept.period, "--time {spec}");
            assert!(folded.location.len() <= kept.location.len());
            assert!(folded.mapping.len() <= kept.mapping.len());
        }
    }
}

#[test]
fn folded_pprof_is_the_kept_one_on_recordings() {
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(bin) = common::hotloop::build(dir.path(), "-O1") else {
        return;
    };
    let mut files: Vec<PathBuf> = Vec::new();
    let ours = dir.path().join("rec.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-g", "-F", "2000", "-o"])
            .arg(&ours)
            .arg("--")
            .arg(&bin)
            .args(["200000000", "2"]),
    );
    files.push(ours);
    if have_perf() {
        let theirs = dir.path().join("perf.data");
        let st = std::process::Command::new("perf")
            .args(["record", "-q", "-g", "-F", "2000", "-o"])
            .arg(&theirs)
            .arg("--")
            .arg(&bin)
            .args(["200000000", "2"])
            .status()
            .expect("run perf");
        assert!(st.success(), "perf record failed: {st}");
        files.push(theirs);
    } else {
        skip("perf is not installed: only perfkit's recording is compared");
    }
    for f in &files {
        let n = folded_is_kept(f);
        assert!(n > 0, "{}: no samples", f.display());
    }
    // perf's recordings of many kinds (system-wide, tracepoints, forks, exec, DWARF, JIT,
    // several events), where this machine keeps a corpus of them.
    let corpus = Path::new("/work/corpora/perf61");
    for name in [
        "tp-getpid",
        "sys-sched-switch",
        "sys-g",
        "forks-g",
        "execve-g",
        "cxx-O2-g",
        "dwarf-threads",
        "multi-event",
        "jit-g",
        "ctxsw-c1",
    ] {
        let f = corpus.join(format!("{name}.data"));
        if f.exists() {
            same_bytes(&f);
        }
    }
}
