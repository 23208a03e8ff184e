//! Tracepoint samples that keep their RAW data (`report --sort trace`, perf's default for
//! a file of tracepoints only) fold by the text of their row: a folded load keeps one
//! payload per event and printed text, and one sample per group, where the load that
//! keeps every sample keeps a payload per sample. The recording is perf's, of two
//! processes passing a byte back and forth (`perf bench sched pipe`): thousands of context
//! switches and wake-ups that print a handful of distinct texts.

use perfkit_report::fold::Aggregation;
use perfkit_report::load::{LoadOptions, load, open};
use std::collections::{HashMap, HashSet};
use std::process::Command;

fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}

#[test]
fn tracepoint_payloads_are_kept_once_per_printed_row() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let file = dir.path().join("pipe.data");
    let rec = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch,sched:sched_wakeup",
            "-o",
        ])
        .arg(&file)
        .args(["--", "perf", "bench", "sched", "pipe", "-l", "3000"])
        .output();
    match rec {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            return skip(&format!(
                "perf cannot record sched tracepoints here (root, tracefs?): {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Err(e) => return skip(&format!("perf is not installed: {e}")),
    }
    let data = open(&file).expect("open the recording");
    let mut opts = LoadOptions::default();
    opts.threads = Some(1);
    let (kept, _) = load(&data, &opts).expect("load, keeping every sample");
    // Every (event, text) of the samples one by one, and each group's sums.
    let text = |p: &perfkit_report::Profile, s: &perfkit_report::Sample| {
        let ev = p.events[s.event as usize].trace.as_ref().expect("a format");
        let raw = p
            .raw
            .get(s.raw.expect("RAW data") as usize)
            .expect("payload");
        (s.event, ev.text(raw, &p.trace_kernel))
    };
    let texts: HashSet<_> = kept.samples.iter().map(|s| text(&kept, s)).collect();
    assert_eq!(kept.raw.len(), kept.samples.len(), "a payload per sample");
    assert!(
        kept.samples.len() >= 6_000,
        "each of 3000 round trips switches and wakes: {} samples",
        kept.samples.len()
    );
    assert!(
        texts.len() * 20 < kept.samples.len(),
        "the ping-pong prints few texts: {} for {} samples",
        texts.len(),
        kept.samples.len()
    );
    let mut sums: HashMap<_, (u64, u64)> = HashMap::new();
    for s in &kept.samples {
        let e = sums.entry((s.thread, text(&kept, s))).or_default();
        e.0 += s.period;
        e.1 += 1;
    }
    for threads in [1, 3] {
        let mut opts = opts.clone();
        opts.threads = Some(threads);
        opts.aggregate = Some(Aggregation::new(false));
        let (folded, _) = load(&data, &opts).expect("folded load");
        // One payload per printed text, and no sample group twice.
        assert_eq!(folded.raw.len(), texts.len(), "{threads} threads");
        let mut got: HashMap<_, (u64, u64)> = HashMap::new();
        for s in &folded.samples {
            let e = got.entry((s.thread, text(&folded, s))).or_default();
            e.0 += s.period;
            e.1 += u64::from(s.count);
        }
        assert_eq!(got, sums, "{threads} threads: sums per thread and row");
        assert!(folded.samples.len() * 10 < kept.samples.len());
    }
}
