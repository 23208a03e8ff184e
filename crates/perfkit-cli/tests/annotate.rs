//! `perfkit annotate` against `perf annotate --stdio` on perf's and perfkit's recordings of
//! a C workload with a known hot loop.

mod common;

use common::{have_perf, hotloop, perfkit, run_ok, skip, stdout_ok};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

/// `(address, percent)` of each instruction line of `--stdio` text (`   24.40 :   11d7:  add`).
fn insn_percents(text: &str) -> HashMap<u64, f64> {
    let mut m = HashMap::new();
    for line in text.lines() {
        let Some((pct, rest)) = line.split_once(" : ") else {
            continue;
        };
        let Ok(pct) = pct.trim().parse::<f64>() else {
            continue;
        };
        let Some((addr, _)) = rest.trim_start().split_once(':') else {
            continue;
        };
        if let Ok(a) = u64::from_str_radix(addr.trim(), 16) {
            m.insert(a, pct);
        }
    }
    m
}

fn perf_annotate(file: &Path, sym: &str) -> Option<String> {
    let out = Command::new("perf")
        .args(["annotate", "--stdio", "-s", sym, "-i"])
        .arg(file)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success() && !insn_percents(&text).is_empty()).then_some(text)
}

fn compare_with_perf(file: &Path) {
    let Some(theirs) = perf_annotate(file, "hot") else {
        skip("perf annotate gave no instructions (is objdump, from binutils, installed?)");
        return;
    };
    let ours = stdout_ok(
        perfkit()
            .args(["annotate", "--stdio", "-s", "hot", "-q", "-i"])
            .arg(file),
    );
    let (p, k) = (insn_percents(&theirs), insn_percents(&ours));
    assert!(
        ours.contains("Source code & Disassembly of hotloop for "),
        "{ours}"
    );
    // Same instructions (perf's objdump and our disassembler agree on every address).
    let mut pa: Vec<u64> = p.keys().copied().collect();
    let mut ka: Vec<u64> = k.keys().copied().collect();
    pa.sort_unstable();
    ka.sort_unstable();
    assert_eq!(
        pa, ka,
        "instruction addresses differ\nperf:\n{theirs}\nperfkit:\n{ours}"
    );
    // The same hottest instructions, and every share within 1 point.
    let hottest = |m: &HashMap<u64, f64>| {
        let mut v: Vec<(u64, f64)> = m.iter().map(|(a, p)| (*a, *p)).collect();
        v.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        v
    };
    let (hp, hk) = (hottest(&p), hottest(&k));
    assert!(hp[0].1 > 5.0, "a hot loop has hot instructions: {hp:?}");
    assert_eq!(
        hp[0].0, hk[0].0,
        "hottest instruction\nperf:\n{theirs}\nperfkit:\n{ours}"
    );
    for (a, pct) in &p {
        assert!(
            (pct - k[a]).abs() <= 1.0,
            "{a:x}: perf {pct} perfkit {}\nperf:\n{theirs}\nperfkit:\n{ours}",
            k[a]
        );
    }
    let total: f64 = k.values().sum();
    assert!(
        (total - 100.0).abs() < 0.5,
        "local percentages sum to 100: {total}"
    );
}

fn record(dir: &Path, with_perf: bool) -> Option<std::path::PathBuf> {
    if !have_perf() {
        skip("perf is not installed");
        return None;
    }
    let bin = hotloop::build(dir, "-O2")?;
    let data = dir.join(if with_perf {
        "perf.data"
    } else {
        "perfkit.data"
    });
    if with_perf {
        let st = Command::new("perf")
            .args(["record", "-q", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin)
            .arg("100000000")
            .status()
            .expect("perf record");
        assert!(st.success());
    } else {
        run_ok(
            perfkit()
                .args(["record", "-q", "-o"])
                .arg(&data)
                .arg("--")
                .arg(&bin)
                .arg("100000000"),
        );
    }
    Some(data)
}

#[test]
fn annotate_of_perfs_recording_matches_perf_annotate() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(data) = record(dir.path(), true) {
        compare_with_perf(&data);
    }
}

#[test]
fn annotate_of_perfkits_recording_matches_perf_annotate() {
    let dir = tempfile::tempdir().unwrap();
    if let Some(data) = record(dir.path(), false) {
        compare_with_perf(&data);
    }
}

#[test]
fn annotate_json_sources_percent_types_and_errors() {
    let dir = tempfile::tempdir().unwrap();
    let Some(data) = record(dir.path(), false) else {
        return;
    };
    let json = stdout_ok(
        perfkit()
            .args(["annotate", "-s", "hot", "--format", "json", "-q", "-i"])
            .arg(&data),
    );
    let v: serde_json::Value = serde_json::from_str(&json).expect("json");
    let a = &v[0];
    assert_eq!(a["symbol"], "hot");
    assert_eq!(a["percent_type"], "LocalPeriod");
    let lines = a["lines"].as_array().unwrap();
    let insns: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "insn").collect();
    let hits: u64 = insns.iter().map(|l| l["hits"].as_u64().unwrap()).sum();
    assert_eq!(
        hits,
        a["hits"].as_u64().unwrap(),
        "every sample lands on an instruction"
    );
    // Source lines from DWARF name the loop's lines of hotloop.c.
    assert!(
        lines.iter().any(|l| l["kind"] == "source"
            && l["file"].as_str().unwrap().ends_with("hotloop.c")
            && l["text"].as_str().is_some_and(|t| t.contains("s += i * i"))),
        "{json}"
    );
    // The loop's backward jump names its target inside hot.
    assert!(
        insns
            .iter()
            .any(|l| l["text"].as_str().unwrap().contains("<hot+0x")),
        "{json}"
    );
    // --no-source: instructions only. Global percentages are below local ones.
    let plain = stdout_ok(
        perfkit()
            .args(["annotate", "-s", "hot", "--no-source", "-q", "-i"])
            .arg(&data),
    );
    assert!(!plain.contains("s += i * i"), "{plain}");
    let global = stdout_ok(
        perfkit()
            .args([
                "annotate",
                "-s",
                "hot",
                "--percent-type",
                "global-hits",
                "-q",
                "-i",
            ])
            .arg(&data),
    );
    assert!(global.contains("percent: global hits"), "{global}");
    let gsum: f64 = insn_percents(&global).values().sum();
    assert!(
        gsum < 100.0 && gsum > 50.0,
        "hot is most but not all samples: {gsum}"
    );
    let raw = stdout_ok(
        perfkit()
            .args(["annotate", "-s", "hot", "--asm-raw", "-l", "-q", "-i"])
            .arg(&data),
    );
    assert!(raw.contains("Sorted summary for file"), "{raw}");
    assert!(raw.contains(" c3 "), "ret's encoding is shown: {raw}");
    // report --annotate SYMBOL is the same view.
    let via_report = stdout_ok(
        perfkit()
            .args(["report", "--annotate", "hot", "-i"])
            .arg(&data),
    );
    assert_eq!(insn_percents(&via_report), insn_percents(&plain));
    // Errors: a symbol without samples, a bad percent type.
    let out = perfkit()
        .args(["annotate", "-s", "no_such_function", "-q", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no_such_function"));
    let out = perfkit()
        .args(["annotate", "--percent-type", "bogus", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("local-period"));
}
