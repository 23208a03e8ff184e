//! `perfkit report` and `perfkit script` on files recorded here by `perf record`: the same
//! sample counts, the same top symbols (within 0.5 percentage points), the same script
//! lines, and exports that parse back with the hot functions in them.

mod common;

use common::{have_perf, perfkit, run_ok, stdout_ok};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

struct Fixture {
    _dir: tempfile::TempDir,
    fp: PathBuf,
    plain: PathBuf,
    threads: PathBuf,
    dwarf: PathBuf,
    execs: PathBuf,
    ours: PathBuf,
}

/// Record the fixtures once: the C workload with frame pointers, perf record -g, plain, and
/// a two-thread run.
fn fixture() -> Option<&'static Fixture> {
    static F: OnceLock<Option<Fixture>> = OnceLock::new();
    F.get_or_init(|| {
        if !have_perf() {
            return None;
        }
        let dir = tempfile::tempdir().ok()?;
        let w = dir.path().join("workload");
        let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/workload.c");
        let ok = std::process::Command::new("cc")
            .args(["-O1", "-g", "-fno-omit-frame-pointer", "-pthread", "-o"])
            .arg(&w)
            .arg(src)
            .status()
            .ok()?
            .success();
        if !ok {
            return None;
        }
        let rec = |name: &str, extra: &[&str], args: &[&str]| -> Option<PathBuf> {
            let out = dir.path().join(name);
            let st = std::process::Command::new("perf")
                .args(["record", "-q", "-o"])
                .arg(&out)
                .args(extra)
                .arg("--")
                .arg(&w)
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status()
                .ok()?;
            st.success().then_some(out)
        };
        Some(Fixture {
            fp: rec("fp.data", &["-g"], &["spin", "300"])?,
            plain: rec("plain.data", &[], &["spin", "300"])?,
            threads: rec("threads.data", &["-g"], &["threads", "2", "300"])?,
            dwarf: rec("dwarf.data", &["--call-graph", "dwarf"], &["spin", "300"])?,
            execs: {
                // A program that execs another: the command name changes mid-profile.
                let out = dir.path().join("execs.data");
                let ok = std::process::Command::new("perf")
                    .args(["record", "-q", "-g", "-o"])
                    .arg(&out)
                    .args(["--", "sh", "-c"])
                    .arg(format!(
                        "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exec {} spin 300",
                        w.display()
                    ))
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .status()
                    .ok()?
                    .success();
                ok.then_some(out)?
            },
            ours: {
                // A file written by perfkit record.
                let out = dir.path().join("ours.data");
                let ok = std::process::Command::new(assert_cmd::cargo::cargo_bin("perfkit"))
                    .args(["record", "-q", "-g", "-o"])
                    .arg(&out)
                    .arg("--")
                    .arg(&w)
                    .args(["threads", "2", "300"])
                    .status()
                    .ok()?
                    .success();
                ok.then_some(out)?
            },
            _dir: dir,
        })
    })
    .as_ref()
}

macro_rules! need_fixture {
    () => {
        match fixture() {
            Some(f) => f,
            None => {
                common::skip("needs perf and a C compiler to record fixtures");
                return;
            }
        }
    };
}

fn perf_stdout(args: &[&str], file: &Path) -> String {
    let out = std::process::Command::new("perf")
        .args(args)
        .arg("-i")
        .arg(file)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `perfkit record -q FLAGS -o DATA -- COMMAND`, which must succeed.
fn record_ok<S: AsRef<std::ffi::OsStr>>(
    data: &Path,
    flags: &[&str],
    command: impl IntoIterator<Item = S>,
) {
    run_ok(
        perfkit()
            .args(["record", "-q"])
            .args(flags)
            .arg("-o")
            .arg(data)
            .arg("--")
            .args(command),
    );
}

/// `tests/fixtures/NAME.c` compiled with `flags` into `dir`, or a printed reason to skip.
fn build_fixture(dir: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let bin = dir.join(name);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/{name}.c"));
    let built = std::process::Command::new("cc")
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        common::skip("no C compiler");
    }
    built.then_some(bin)
}

/// (percent, symbol) rows of a `--no-children` report.
fn rows(text: &str) -> Vec<(f64, String)> {
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains('%') && l.contains('['))
        .filter_map(|l| {
            let pct: f64 = l
                .split_whitespace()
                .next()?
                .trim_end_matches('%')
                .parse()
                .ok()?;
            // The symbol follows the `[.] ` / `[k] ` marker (the dso may have brackets too).
            let at = l.find("[.] ").or_else(|| l.find("[k] "))?;
            let sym = l[at + 4..].trim().to_string();
            Some((pct, sym))
        })
        .collect()
}

fn samples_line(text: &str) -> String {
    text.lines()
        .find(|l| l.starts_with("# Samples:"))
        .unwrap_or("")
        .to_string()
}

#[test]
fn report_matches_perf_report() {
    let f = need_fixture!();
    for file in [&f.fp, &f.plain, &f.threads, &f.dwarf, &f.execs, &f.ours] {
        for children in [false, true] {
            let mode = if children {
                "--children"
            } else {
                "--no-children"
            };
            let ours = stdout_ok(
                perfkit()
                    .args(["report", "--stdio", "-q", mode, "-i"])
                    .arg(file),
            );
            let theirs = perf_stdout(&["report", "--stdio", mode], file);
            assert_eq!(
                samples_line(&ours),
                samples_line(&theirs),
                "{}",
                file.display()
            );
            let (a, b) = (rows(&ours), rows(&theirs));
            assert!(!a.is_empty(), "{ours}");
            // The top five symbols agree within half a percentage point.
            for (pct, sym) in b.iter().take(5) {
                // perf expands inlined functions into rows of their own for dwarf
                // profiles; perfkit names the function they were inlined into.
                // perf prints unresolved addresses as bare hex (`0000000000000000`);
                // perfkit says `[unknown]` with the reason in the header.
                // (In children mode a caller's address is printed as it ran, `0x...`.)
                let hex = sym.strip_prefix("0x").unwrap_or(sym);
                let unresolved = hex.chars().all(|c| c.is_ascii_hexdigit());
                if *pct < 1.0 || sym.ends_with("(inlined)") || unresolved {
                    continue;
                }
                let mine = a.iter().find(|(_, s)| s == sym).map(|r| r.0);
                let mine = mine.unwrap_or_else(|| panic!("{sym} missing in:\n{ours}"));
                assert!(
                    (mine - pct).abs() <= 0.5,
                    "{sym}: perfkit {mine}% vs perf {pct}% ({mode}, {})",
                    file.display()
                );
            }
        }
    }
}

#[test]
fn script_matches_perf_script() {
    let f = need_fixture!();
    for file in [&f.fp, &f.plain, &f.threads, &f.execs, &f.ours] {
        let ours = stdout_ok(perfkit().args(["script", "-q", "-i"]).arg(file));
        let theirs = perf_stdout(&["script"], file);
        let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
        assert_eq!(a.len(), b.len(), "line counts for {}", file.display());
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        // Identical but for rare symbol-resolution differences (vDSO aliases, ...).
        assert!(
            same as f64 >= 0.99 * b.len() as f64,
            "{same} of {} lines identical for {}",
            b.len(),
            file.display()
        );
    }
}

#[test]
fn script_json_and_fields() {
    let f = need_fixture!();
    let text = stdout_ok(perfkit().args(["script", "-q", "--json", "-i"]).arg(&f.fp));
    let n = perf_stdout(&["script", "-F", "ip"], &f.plain)
        .lines()
        .count();
    let objs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert!(!objs.is_empty() && n > 0);
    assert!(objs.iter().any(|o| o["sym"] == "spin"));
    for o in &objs {
        assert_eq!(o["type"], "sample");
        assert!(o["callchain"].is_array());
        assert!(o["pid"].as_i64().unwrap() > 0);
    }
    let text = stdout_ok(
        perfkit()
            .args(["script", "-q", "-F", "comm,tid,ip,sym", "-i"])
            .arg(&f.plain),
    );
    let line = text.lines().find(|l| l.contains("spin")).unwrap();
    assert!(line.trim_start().starts_with("workload"), "{line}");
    assert!(!line.contains("cpu-clock"), "event not asked for: {line}");
    // As perf 6.1: sym is a part of ip, and shows nothing without it.
    let text = stdout_ok(
        perfkit()
            .args(["script", "-q", "-F", "comm,tid,sym", "-i"])
            .arg(&f.plain),
    );
    assert!(text.lines().count() > 0 && !text.contains("spin"), "{text}");
}

#[test]
fn exports_parse_back_with_hot_functions() {
    let f = need_fixture!();
    let dir = tempfile::tempdir().unwrap();
    for fmt in ["folded", "flamegraph", "firefox", "speedscope", "pprof"] {
        let out = dir.path().join(format!("out.{fmt}"));
        perfkit()
            .args(["report", "-q", "--format", fmt, "-o"])
            .arg(&out)
            .arg("-i")
            .arg(&f.fp)
            .assert()
            .success();
        let bytes = std::fs::read(&out).unwrap();
        match fmt {
            "folded" => {
                let t = String::from_utf8(bytes).unwrap();
                assert!(
                    t.lines()
                        .any(|l| l.starts_with("workload;") && l.contains(";main;spin ")),
                    "{t}"
                );
            }
            "flamegraph" => {
                let t = String::from_utf8(bytes).unwrap();
                assert!(t.contains("<svg") && t.contains("spin"));
            }
            "firefox" => {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let t = &v["threads"][0];
                assert!(t["samples"]["length"].as_u64().unwrap() > 100);
                assert!(
                    t["stringArray"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|s| s == "spin")
                );
            }
            "speedscope" => {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                assert_eq!(
                    v["$schema"],
                    "https://www.speedscope.app/file-format-schema.json"
                );
                let frames = v["shared"]["frames"].as_array().unwrap();
                assert!(frames.iter().any(|f| f["name"] == "spin"));
            }
            "pprof" => {
                use prost::Message;
                use std::io::Read;
                let mut raw = Vec::new();
                flate2::read::GzDecoder::new(&bytes[..])
                    .read_to_end(&mut raw)
                    .unwrap();
                let p = perfkit_report::export::pprof::PprofProfile::decode(&raw[..]).unwrap();
                assert!(p.string_table.iter().any(|s| s == "spin"));
                let total: i64 = p.sample.iter().map(|s| s.value[0]).sum();
                assert!(total > 100);
            }
            _ => unreachable!(),
        }
    }
}

#[test]
fn truncated_file_reports_what_was_read_then_fails() {
    let f = need_fixture!();
    let bytes = std::fs::read(&f.plain).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.data");
    // Cut in the middle of the data section (header: data offset and size at bytes 40..56).
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (data_off, data_size) = (word(40), word(48));
    std::fs::write(&cut, &bytes[..data_off + data_size / 2]).unwrap();
    let out = perfkit()
        .args(["report", "--stdio", "-q", "--no-children", "-i"])
        .arg(&cut)
        .output()
        .unwrap();
    let (o, e) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_ne!(out.status.code(), Some(0));
    assert!(o.contains("spin"), "the readable part is reported: {o}");
    assert!(e.contains("byte"), "the error names the offset: {e}");
    // A missing file and a non-perf file.
    let out = perfkit()
        .args(["report", "-i", "/nonexistent/perf.data"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("perfkit record"));
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"definitely not a profile").unwrap();
    let out = perfkit()
        .args(["report", "-i"])
        .arg(&junk)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a perf.data file"));
}

#[test]
fn dwarf_stacks_are_unwound() {
    let f = need_fixture!();
    let text = stdout_ok(
        perfkit()
            .args([
                "report",
                "--stdio",
                "-q",
                "--no-children",
                "-g",
                "folded",
                "-i",
            ])
            .arg(&f.dwarf),
    );
    // The user stack of the hot function is unwound from the copied registers and stack:
    // spin's callers are there, as perf shows them.
    let line = text
        .lines()
        .find(|l| l.contains("% spin;main;"))
        .unwrap_or_else(|| panic!("no unwound chain for spin:\n{text}"));
    assert!(line.contains("_start"), "{line}");
    let pct: f64 = line.split('%').next().unwrap().trim().parse().unwrap();
    assert!(pct > 90.0, "{line}");
}

#[test]
fn commands_that_exec_change_name() {
    let f = need_fixture!();
    let text = stdout_ok(
        perfkit()
            .args([
                "report",
                "--stdio",
                "-q",
                "--no-children",
                "--sort",
                "comm",
                "-i",
            ])
            .arg(&f.execs),
    );
    // Both the shell (before exec) and the workload (after) appear as commands.
    assert!(
        text.lines().any(|l| l.trim_end().ends_with("workload")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.trim_end().ends_with(" sh")),
        "{text}"
    );
}

#[test]
fn inline_shows_inlined_functions_in_callchains() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build_fixture(
        dir.path(),
        "inline",
        &["-O2", "-g", "-fno-omit-frame-pointer"],
    ) else {
        return;
    };
    let data = dir.path().join("inline.data");
    record_ok(&data, &["-g"], [bin.as_os_str(), "100000000".as_ref()]);
    let args = ["report", "--stdio", "--no-children", "-i"];
    let with = stdout_ok(perfkit().args(args).arg(&data).arg("--inline"));
    let without = stdout_ok(perfkit().args(args).arg(&data));
    // Self time stays with the real function; the chain shows what is inlined into it,
    // innermost first.
    let top = rows(&with);
    assert_eq!(top[0].1, "outer", "{with}");
    let lines: Vec<&str> = with.lines().map(str::trim).collect();
    let at = |s: &str| lines.iter().position(|l| l.trim_start_matches("---") == s);
    let (i, m, o) = (
        at("inner (inlined)").expect(&with),
        at("middle (inlined)").expect(&with),
        at("outer").expect(&with),
    );
    assert!(i < m && m < o, "{with}");
    assert!(!without.contains("(inlined)"), "{without}");
    assert_eq!(rows(&without)[0].1, "outer", "{without}");

    // `script --inline`: the same frames in each callchain, at the address of the function
    // they are inlined into, and `inlined: true` in JSON; without it, none.
    let script = stdout_ok(
        perfkit()
            .args(["script", "-q", "--inline", "-i"])
            .arg(&data),
    );
    let chain_with_inner: Vec<&str> = script
        .split("\n\n")
        .find(|s| s.contains("inner (inlined)"))
        .expect(&script)
        .lines()
        .skip(1)
        .map(str::trim)
        .collect();
    let addr = |l: &str| l.split_whitespace().next().unwrap().to_string();
    assert!(
        chain_with_inner[0].contains("inner (inlined)"),
        "{chain_with_inner:?}"
    );
    assert!(
        chain_with_inner[1].contains("middle (inlined)"),
        "{chain_with_inner:?}"
    );
    assert!(
        chain_with_inner[2].contains(" outer+0x"),
        "{chain_with_inner:?}"
    );
    assert_eq!(addr(chain_with_inner[0]), addr(chain_with_inner[2]));
    let plain = stdout_ok(perfkit().args(["script", "-q", "-i"]).arg(&data));
    assert!(!plain.contains("(inlined)"));
    let json = stdout_ok(
        perfkit()
            .args(["script", "-q", "--json", "--inline", "-i"])
            .arg(&data),
    );
    let o: serde_json::Value = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|o| o["callchain"][0]["sym"] == "inner (inlined)")
        .expect(&json);
    // (Other samples, in ld.so's start-up for one, may have inlined frames of their own.)
    assert_eq!(o["callchain"][0]["inlined"], true);
    assert_eq!(o["callchain"][1]["sym"], "middle (inlined)");
    assert_eq!(
        o["sym"], "outer",
        "the sample's own symbol is the real function"
    );
}

/// The `comm` of each `-F comm,tid` line whose tid is 0 (the idle task).
fn idle_comms(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.split_whitespace().nth(1) == Some("0"))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect()
}

/// A perf.data file as `perf record -a -e cpu-clock` writes it: a COMM of task 4242
/// `worker`, then samples of the idle task (pid and tid 0) on CPUs 0 and 1 between samples of
/// that task. Returns the number of idle samples.
fn write_idle_samples(path: &Path) -> usize {
    use perfkit::sys::{self, attr_flags as f};
    use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 250_000,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_CPU
            | sys::PERF_SAMPLE_PERIOD,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::TASK, true);
    let event = FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    };
    let mut w = PerfDataWriter::create(path, vec![event], WriteOptions::default()).unwrap();
    let (pid, comm) = (4242u32, b"worker\0");
    let mut body = Vec::new();
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(&pid.to_ne_bytes());
    body.extend_from_slice(comm);
    body.resize(body.len().next_multiple_of(8), 0);
    let trailer = synth::sample_id_trailer(&attr, pid as i32, pid as i32, 1);
    w.write_record(&[&record(sys::PERF_RECORD_COMM, 0, &body, &trailer)])
        .unwrap();
    let mut idle = 0;
    for i in 0..12u64 {
        // Every third sample is the task's (user space), the others the idle task's
        // (kernel), alternating CPUs.
        let (pid, ip, misc) = if i % 3 == 0 {
            (pid, 0x40_1000 + i, sys::PERF_RECORD_MISC_USER)
        } else {
            idle += 1;
            (0, 0xffff_ffff_8100_0000 + i, sys::PERF_RECORD_MISC_KERNEL)
        };
        let time = 1_000_000_000 + i * 250_000;
        let mut body = Vec::new();
        body.extend_from_slice(&ip.to_ne_bytes());
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&pid.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&((i % 2) as u32).to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&250_000u64.to_ne_bytes());
        w.saw_time(time);
        w.write_record(&[&record(sys::PERF_RECORD_SAMPLE, misc, &body, &[])])
            .unwrap();
    }
    w.finish(&["perf".into(), "record".into(), "-a".into()])
        .unwrap();
    idle
}

#[test]
fn script_names_the_idle_task_swapper() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let fields = ["-F", "comm,tid"];
    let script = |data: &Path| {
        let ours = stdout_ok(
            perfkit()
                .args(["script", "-q"])
                .args(fields)
                .arg("-i")
                .arg(data),
        );
        (ours, perf_stdout(&["script", "-F", "comm,tid"], data))
    };
    // A real system-wide recording has idle samples only if a CPU was idle, which on a
    // loaded machine none is: its idle lines, however many, are perf's.
    let data = dir.path().join("all.data");
    record_ok(&data, &["-a"], ["sleep", "0.3"]);
    let (ours, theirs) = script(&data);
    let (a, b) = (idle_comms(&ours), idle_comms(&theirs));
    assert_eq!(a, b, "perfkit:\n{ours}\nperf:\n{theirs}");
    assert!(a.iter().all(|c| c == "swapper"), "{a:?}");
    // A file with idle samples for certain.
    let data = dir.path().join("idle.data");
    let idle = write_idle_samples(&data);
    let (ours, theirs) = script(&data);
    assert_eq!(
        idle_comms(&theirs),
        vec!["swapper"; idle],
        "perf:\n{theirs}"
    );
    // (perf ends these lines with a space, perfkit does not.)
    let trimmed = |t: &str| t.lines().map(str::trim_end).collect::<Vec<_>>().join("\n");
    assert_eq!(trimmed(&ours), trimmed(&theirs));
    assert!(ours.contains("worker  4242"), "{ours}");
}

#[test]
fn jit_code_is_named_from_the_perf_map_as_perf_names_it() {
    if !have_perf() || !cfg!(target_arch = "x86_64") {
        eprintln!("skipped: needs perf and x86-64 (the fixture writes x86-64 code)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build_fixture(dir.path(), "jit", &["-O1"]) else {
        return;
    };
    let data = dir.path().join("jit.data");
    run_ok(
        assert_cmd::Command::new("perf")
            .args(["record", "-q", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin),
    );
    // script prints the map's path (perf's long name), report `[JIT] tid PID` (its short
    // name); the lines agree with perf's.
    let fields = ["script", "-F", "comm,ip,sym,dso"];
    let theirs = perf_stdout(&fields, &data);
    let ours = stdout_ok(perfkit().args(fields).arg("-q").arg("-i").arg(&data));
    assert_eq!(ours, theirs);
    assert!(
        ours.lines()
            .filter(|l| l.contains("jitted_loop (/tmp/perf-") && l.ends_with(".map)"))
            .count()
            > 10,
        "{ours}"
    );
    let rows = stdout_ok(
        perfkit()
            .args(["report", "--stdio", "-q", "--sort", "dso,sym", "-i"])
            .arg(&data),
    );
    let top = rows.lines().find(|l| l.contains('%')).unwrap_or("");
    assert!(
        top.contains("[JIT] tid ") && top.contains("jitted_loop"),
        "{rows}"
    );
    // The maps the fixture wrote are its own to remove.
    for l in ours.lines() {
        if let Some(p) = l.split(" (").nth(1).and_then(|p| p.strip_suffix(')'))
            && p.starts_with("/tmp/perf-")
        {
            let _ = std::fs::remove_file(p);
        }
    }
}
