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

/// A perf.data file of one process that mapped `bin` at its link address (a non-PIE
/// executable, file offset 0) with `samples` as (address, count), cpu-clock, period 1.
fn synthetic_recording(path: &Path, bin: &Path, samples: &[(u64, u64)]) {
    use perfkit::sys::{self, attr_flags as f};
    use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 1,
        sample_type: sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::MMAP, true);
    let event = FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    };
    let mut w = PerfDataWriter::create(path, vec![event], WriteOptions::default()).unwrap();
    let pid = 4242u32;
    let trailer = synth::sample_id_trailer(&attr, pid as i32, pid as i32, 1);
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(b"hotloop\0");
    w.write_record(&[&record(sys::PERF_RECORD_COMM, 0, &body, &trailer)])
        .unwrap();
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    for v in [0x40_0000u64, 0x10_0000, 0] {
        body.extend_from_slice(&v.to_ne_bytes());
    }
    body.extend_from_slice(bin.to_str().unwrap().as_bytes());
    body.push(0);
    body.resize(body.len().next_multiple_of(8), 0);
    w.write_record(&[&record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_USER,
        &body,
        &trailer,
    )])
    .unwrap();
    let mut time = 1_000_000u64;
    for &(ip, n) in samples {
        for _ in 0..n {
            time += 1000;
            let mut body = Vec::new();
            body.extend_from_slice(&ip.to_ne_bytes());
            body.extend_from_slice(&pid.to_ne_bytes());
            body.extend_from_slice(&pid.to_ne_bytes());
            body.extend_from_slice(&time.to_ne_bytes());
            w.saw_time(time);
            w.write_record(&[&record(
                sys::PERF_RECORD_SAMPLE,
                sys::PERF_RECORD_MISC_USER,
                &body,
                &[],
            )])
            .unwrap();
        }
    }
    w.finish(&["perf".into(), "record".into()]).unwrap();
}

/// `(address, mnemonic)` of each instruction of `sym` in `objdump -d` output.
fn objdump_insns(objdump: &str, bin: &Path, sym: &str) -> Vec<(u64, String)> {
    let out = Command::new(objdump)
        .args(["-d", "--no-show-raw-insn"])
        .arg(bin)
        .output()
        .expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .skip_while(|l| !l.ends_with(&format!("<{sym}>:")))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let (addr, rest) = l.trim().split_once(':')?;
            let mnemonic = rest.split_whitespace().next()?.to_string();
            Some((u64::from_str_radix(addr.trim(), 16).ok()?, mnemonic))
        })
        .collect()
}

#[test]
fn annotate_of_an_arm64_binary_matches_its_disassembly() {
    let (gcc, objdump) = ("aarch64-linux-gnu-gcc", "aarch64-linux-gnu-objdump");
    if Command::new(gcc).arg("--version").output().is_err()
        || Command::new(objdump).arg("--version").output().is_err()
    {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI installs gcc-aarch64-linux-gnu: {gcc} and {objdump} must exist");
        }
        skip("no aarch64 cross compiler and objdump (gcc-aarch64-linux-gnu)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("hotloop.c");
    std::fs::write(&src, hotloop::SOURCE).unwrap();
    let bin = dir.path().join("hotloop");
    let st = Command::new(gcc)
        .args(["-O2", "-g", "-no-pie", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let insns = objdump_insns(objdump, &bin, "hot");
    assert!(insns.len() > 4, "hot has instructions: {insns:?}");
    // Samples on the first five instructions: 1, 2, 3, 4 and 10 of them.
    let counts = [1u64, 2, 3, 4, 10];
    let samples: Vec<(u64, u64)> = insns
        .iter()
        .zip(counts)
        .map(|((a, _), n)| (*a, n))
        .collect();
    let data = dir.path().join("perf.data");
    synthetic_recording(&data, &bin, &samples);
    let ours = stdout_ok(
        perfkit()
            .args([
                "annotate",
                "--stdio",
                "--no-source",
                "-s",
                "hot",
                "-q",
                "-i",
            ])
            .arg(&data),
    );
    let pcts = insn_percents(&ours);
    // Every instruction objdump shows, at the same address with the same mnemonic.
    let mut addrs: Vec<u64> = pcts.keys().copied().collect();
    addrs.sort_unstable();
    assert_eq!(
        addrs,
        insns.iter().map(|i| i.0).collect::<Vec<_>>(),
        "{ours}"
    );
    for (addr, mnemonic) in &insns {
        let line = ours
            .lines()
            .find(|l| l.contains(&format!(" {addr:x}:")))
            .unwrap_or_else(|| panic!("{addr:x} in\n{ours}"));
        let ours_m = line
            .split_once(&format!("{addr:x}:"))
            .and_then(|(_, r)| r.split_whitespace().next())
            .unwrap_or("");
        assert_eq!(ours_m, mnemonic, "{line}");
    }
    // The shares are the samples' (20 in all).
    for ((addr, _), n) in insns.iter().zip(counts) {
        let want = 100.0 * n as f64 / 20.0;
        assert!(
            (pcts[addr] - want).abs() < 0.01,
            "{addr:x}: {}\n{ours}",
            pcts[addr]
        );
    }
}

#[test]
fn kernel_functions_are_annotated_from_kcore_or_say_why_not() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("k.data");
    // dd between /dev/zero and /dev/null spends its time in the kernel.
    run_ok(perfkit().args(["record", "-q", "-o"]).arg(&data).args([
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=64k",
        "count=40000",
    ]));
    let report = stdout_ok(
        perfkit()
            .args(["report", "--stdio", "-q", "--sort", "sym", "-i"])
            .arg(&data),
    );
    let Some(ksym) = report
        .lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.split_once("[k] ").map(|(_, s)| s.trim().to_string()))
    else {
        skip("no kernel samples (kernel symbols hidden?)");
        return;
    };
    let out = perfkit()
        .args(["annotate", "--stdio", "-q", "-s", &ksym, "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if Path::new("/proc/kcore").exists() {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stderr}");
        // Most of the function's samples fall on its instructions (samples past the size
        // the kernel's symbol table gives it, if any, are not shown).
        let sum: f64 = insn_percents(&text).values().sum();
        assert!(sum > 50.0 && sum < 100.5, "{text}");
    } else {
        assert!(!out.status.success());
        assert!(
            stderr.contains("CONFIG_PROC_KCORE") && stderr.contains("--vmlinux"),
            "{stderr}"
        );
    }
    // A memory image that holds the function (nops where it lies): read at its running
    // address, each sample on the instruction (byte) it hit.
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let mut addrs: Vec<(u64, &str)> = kallsyms
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let a = u64::from_str_radix(it.next()?, 16).ok()?;
            let _ = it.next()?;
            Some((a, it.next()?))
        })
        .filter(|(a, _)| *a != 0)
        .collect();
    addrs.sort_unstable();
    let Some(i) = addrs.iter().position(|(_, n)| *n == ksym) else {
        skip("the kernel symbol is not in /proc/kallsyms");
        return;
    };
    let start = addrs[i].0;
    let size = addrs[i + 1..]
        .iter()
        .find(|(a, _)| *a > start)
        .map_or(4096, |(a, _)| a - start);
    if cfg!(not(target_arch = "x86_64")) {
        return;
    }
    // Room past the next symbol too, in case the symbolizer sizes the function otherwise.
    let kcore = dir.path().join("kcore");
    std::fs::write(
        &kcore,
        core_file(start, &vec![0x90; 2 * size as usize + 4096]),
    )
    .unwrap();
    let text = stdout_ok(
        perfkit()
            .args(["annotate", "--stdio", "-q", "-s", &ksym, "--kcore"])
            .arg(&kcore)
            .arg("-i")
            .arg(&data),
    );
    let pcts = insn_percents(&text);
    assert!(!pcts.is_empty(), "{text}");
    let insn_lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(" : ") && l.contains(":   "))
        .collect();
    assert!(
        insn_lines.iter().all(|l| l.trim_end().ends_with("nop")),
        "one nop per byte:\n{text}"
    );
    let sum: f64 = pcts.values().sum();
    assert!(sum > 50.0 && sum < 100.5, "{text}");
    assert!(text.contains(&format!("{start:x}:")), "{text}");
}

/// A minimal x86-64 ELF core file: one PT_LOAD mapping `code` at `vaddr`.
fn core_file(vaddr: u64, code: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 64 + 56];
    f[..4].copy_from_slice(b"\x7fELF");
    f[4] = 2;
    f[5] = 1;
    f[6] = 1;
    f[16..18].copy_from_slice(&4u16.to_le_bytes());
    f[18..20].copy_from_slice(&62u16.to_le_bytes());
    f[20..24].copy_from_slice(&1u32.to_le_bytes());
    f[32..40].copy_from_slice(&64u64.to_le_bytes());
    f[52..54].copy_from_slice(&64u16.to_le_bytes());
    f[54..56].copy_from_slice(&56u16.to_le_bytes());
    f[56..58].copy_from_slice(&1u16.to_le_bytes());
    let ph = &mut f[64..120];
    ph[..4].copy_from_slice(&1u32.to_le_bytes());
    ph[4..8].copy_from_slice(&5u32.to_le_bytes());
    ph[8..16].copy_from_slice(&120u64.to_le_bytes());
    ph[16..24].copy_from_slice(&vaddr.to_le_bytes());
    ph[32..40].copy_from_slice(&(code.len() as u64).to_le_bytes());
    ph[40..48].copy_from_slice(&(code.len() as u64).to_le_bytes());
    f.extend_from_slice(code);
    f
}
