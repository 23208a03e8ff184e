//! The exports opened in the viewers people open them with, on a recording of a known
//! workload (`workload deep`: two threads whose time goes to `leaf`, under 8 to 40 frames
//! of recursion):
//!
//! * speedscope's own web app (npm `speedscope`), served on a free localhost port and loaded
//!   in headless Chromium through `playwright-core`: the file validates against speedscope's
//!   `file-format-schema.json` (ajv), the app names the thread `workload (TID)`, reads the
//!   axis in time and lists `leaf` first by self time;
//! * `go tool pprof` on the pprof export: `-top`, `-tags` and `-traces` agree with
//!   `perfkit report` on the same file, and the first mapping is the workload with its build
//!   id;
//! * the SVG flamegraph in Chromium at 1400×1000: the hot function's box is on the first
//!   screen, straight and inverted.
//!
//! `.ci/run` installs the tools (chromium, golang-go, npm, and the npm packages into
//! `~/.cache/perfkit-viewers`, or `$PERFKIT_VIEWERS`); without one a test skips with the
//! reason, and fails when `CI=true`. With `PERFKIT_SCREENSHOTS=DIR` the screenshots are kept
//! there (the README's pictures come from this).

mod common;

use common::{perfkit, run_ok, skip, stdout_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The node_modules folder holding speedscope, playwright-core and ajv, if installed.
fn viewers() -> Option<PathBuf> {
    let dir = std::env::var_os("PERFKIT_VIEWERS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/perfkit-viewers")))?
        .join("node_modules");
    let ok = ["speedscope", "playwright-core", "ajv"]
        .iter()
        .all(|m| dir.join(m).join("package.json").exists());
    ok.then_some(dir)
}

fn have(cmd: &str, arg: &str) -> bool {
    Command::new(cmd)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What a browser test needs: node, chromium and the npm packages; else a reason.
fn browser_tools() -> Result<PathBuf, String> {
    if !have("node", "--version") {
        return Err("no node (.ci/run installs Debian's npm)".into());
    }
    if !have("chromium", "--version") {
        return Err("no chromium (.ci/run installs Debian's chromium)".into());
    }
    viewers().ok_or_else(|| {
        "speedscope, playwright-core and ajv are not in ~/.cache/perfkit-viewers \
         (.ci/run installs them with npm)"
            .into()
    })
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/viewers")
        .join(name)
}

/// Run a viewer script with node; its one line of JSON.
fn node(args: &[&std::ffi::OsStr]) -> serde_json::Value {
    let out = Command::new("node").args(args).output().expect("run node");
    assert!(
        out.status.success(),
        "node {:?} failed: {}",
        args,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or("");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn keep_screenshot(png: &Path, name: &str) {
    let bytes = std::fs::read(png).expect("screenshot written");
    assert_eq!(&bytes[1..4], b"PNG");
    // A blank 1400x1000 page compresses to a few hundred bytes.
    assert!(
        bytes.len() > 10_000,
        "screenshot looks blank ({} bytes)",
        bytes.len()
    );
    if let Some(dir) = std::env::var_os("PERFKIT_SCREENSHOTS") {
        std::fs::copy(png, Path::new(&dir).join(name)).unwrap();
    }
}

/// A recording of `workload deep 2 300` with frame-pointer callchains, and the workload.
struct Recording {
    dir: tempfile::TempDir,
    data: PathBuf,
    bin: PathBuf,
}

fn record() -> Option<Recording> {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("workload");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/workload.c");
    let built = Command::new("cc")
        .args(["-O1", "-fno-omit-frame-pointer", "-pthread", "-o"])
        .arg(&bin)
        .arg(src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        skip("no C compiler");
        return None;
    }
    let data = dir.path().join("perf.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(&bin)
            .args(["deep", "2", "300"]),
    );
    Some(Recording { dir, data, bin })
}

fn export(r: &Recording, format: &str, extra: &[&str]) -> PathBuf {
    let ext = match format {
        "flamegraph" => "svg",
        "pprof" => "pb.gz",
        _ => "json",
    };
    let out = r
        .dir
        .path()
        .join(format!("{format}{}.{ext}", extra.join("")));
    run_ok(
        perfkit()
            .args(["report", "-q", "--format", format])
            .args(extra)
            .arg("-o")
            .arg(&out)
            .arg("-i")
            .arg(&r.data),
    );
    out
}

/// `perfkit report --no-children -n --sort sym`: symbol -> (percent, samples).
fn report_rows(r: &Recording) -> Vec<(String, f64, u64)> {
    let text = stdout_ok(
        perfkit()
            .args([
                "report",
                "-q",
                "--stdio",
                "--no-children",
                "-n",
                "--sort",
                "sym",
                "-g",
                "none",
                "-i",
            ])
            .arg(&r.data),
    );
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let pct: f64 = f.next()?.strip_suffix('%')?.parse().ok()?;
            let n: u64 = f.next()?.parse().ok()?;
            let _kind = f.next()?;
            Some((f.collect::<Vec<_>>().join(" "), pct, n))
        })
        .collect()
}

#[test]
fn speedscope_web_app_shows_the_hot_function_in_time() {
    let modules = match browser_tools() {
        Ok(m) => m,
        Err(why) => return skip(&why),
    };
    let Some(r) = record() else { return };
    let json = export(&r, "speedscope", &[]);
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tids: Vec<String> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    assert!(tids.iter().all(|n| n.starts_with("workload (")), "{tids:?}");
    let png = r.dir.path().join("speedscope.png");
    let v = node(&[
        script("speedscope.mjs").as_os_str(),
        modules.as_os_str(),
        json.as_os_str(),
        png.as_os_str(),
    ]);
    assert_eq!(
        v["schemaErrors"],
        serde_json::json!([]),
        "file-format-schema.json: {v}"
    );
    assert_eq!(
        v["errors"],
        serde_json::json!([]),
        "errors in the page: {v}"
    );
    // The toolbar names the thread the app opened: the heaviest, `workload (TID)`.
    let toolbar = v["toolbar"].as_str().unwrap();
    assert!(
        tids.iter().any(|t| toolbar.contains(t.as_str())),
        "{toolbar} names none of {tids:?}"
    );
    // The sandwich view's table: Total, Self, Symbol Name; `leaf` first by self time, and
    // the values are times (nanoseconds in the file), not sample counts.
    let rows: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let head = rows
        .iter()
        .position(|l| l.contains("Symbol Name"))
        .unwrap_or_else(|| panic!("no sandwich table: {rows:?}"));
    let (total, own, name) = (rows[head + 1], rows[head + 2], rows[head + 3]);
    assert_eq!(name, "leaf", "{rows:?}");
    for value in [total, own] {
        let time = value.split_whitespace().next().unwrap();
        assert!(
            ["ns", "µs", "us", "ms", "s"]
                .iter()
                .any(|u| time.ends_with(u) && time[..time.len() - u.len()].parse::<f64>().is_ok()),
            "{value} is not a time"
        );
    }
    // leaf's share of the thread's time: about half (perfkit report says so for the file).
    let pct: f64 = own
        .split('(')
        .nth(1)
        .and_then(|p| p.trim_end_matches(')').trim_end_matches('%').parse().ok())
        .unwrap();
    let report = report_rows(&r);
    let leaf = report
        .iter()
        .find(|x| x.0 == "leaf")
        .expect("leaf in the report");
    assert!(
        (pct - leaf.1).abs() < 10.0,
        "speedscope {pct}% vs report {}% for leaf",
        leaf.1
    );
    keep_screenshot(&png, "speedscope.png");
}

/// Parse `go tool pprof -top` rows: (name, flat).
fn top_rows(text: &str) -> Vec<(String, u64)> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("flat"))
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 6)
                .then(|| (f[5..].join(" "), f[0].parse().ok()))?
                .1
                .map(|n| (f[5..].join(" "), n))
        })
        .collect()
}

#[test]
fn go_tool_pprof_agrees_with_perfkit_report() {
    if !have("go", "version") {
        return skip("no go (.ci/run installs Debian's golang-go)");
    }
    let Some(r) = record() else { return };
    let pb = export(&r, "pprof", &[]);
    let pprof = |args: &[&str]| -> String {
        let out = Command::new("go")
            .args(["tool", "pprof", "-sample_index=samples"])
            .args(args)
            .arg(&pb)
            .env("PPROF_TMPDIR", r.dir.path())
            .output()
            .expect("go tool pprof");
        assert!(
            out.status.success(),
            "go tool pprof {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = report_rows(&r);
    let total: u64 = report.iter().map(|x| x.2).sum();

    // -top: the main file is the workload, and every function's flat samples are the
    // report's self samples.
    let top = pprof(&["-top", "-nodecount=20"]);
    assert!(top.starts_with("File: workload\n"), "{top}");
    assert!(top.contains(&format!("Total samples = {total}")), "{top}");
    let rows = top_rows(&top);
    assert_eq!(rows[0].0, "leaf", "{top}");
    for (name, flat) in rows.iter().filter(|x| x.1 > 0) {
        let want = report.iter().find(|x| &x.0 == name).map(|x| x.2);
        assert_eq!(
            Some(*flat),
            want,
            "{name}: pprof {flat}, report {want:?}\n{top}"
        );
    }
    // The first mapping is the workload, with its build id as in the file.
    let raw = pprof(&["-raw"]);
    let first = raw
        .lines()
        .skip_while(|l| !l.starts_with("Mappings"))
        .nth(1)
        .unwrap_or_else(|| panic!("{raw}"));
    assert!(first.contains(&format!(" {} ", r.bin.display())), "{first}");
    let ids = stdout_ok(perfkit().args(["buildid-list", "-i"]).arg(&r.data));
    let id = ids
        .lines()
        .find(|l| l.ends_with(&*r.bin.to_string_lossy()))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{ids}"));
    assert!(first.contains(id), "{first} lacks build id {id}");
    assert!(first.ends_with("[FN][FL]"), "{first}");

    // -tags: comm, pid and tid labels; per tid, the samples `perfkit script` shows.
    let tags = pprof(&["-tags"]);
    assert!(tags.contains(&format!("comm: Total {total}")), "{tags}");
    let script = stdout_ok(
        perfkit()
            .args(["script", "-q", "-F", "tid", "-i"])
            .arg(&r.data),
    );
    let mut per_tid = std::collections::BTreeMap::<String, f64>::new();
    for l in script.lines().filter(|l| !l.trim().is_empty()) {
        *per_tid.entry(l.trim().to_string()).or_default() += 1.0;
    }
    assert_eq!(per_tid.values().sum::<f64>(), total as f64);
    // ` 1195.0 (50.00%): 18424` lines of the tid section.
    let tag_tids: std::collections::BTreeMap<String, f64> = tags
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("tid:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let (n, tid) = l.split_once("): ")?;
            Some((
                tid.trim().to_string(),
                n.split_whitespace().next()?.parse().ok()?,
            ))
        })
        .collect();
    assert_eq!(tag_tids, per_tid, "{tags}");

    // -traces: the samples whose leaf is `leaf` add up to the report's self samples of leaf.
    let traces = pprof(&["-traces"]);
    let mut leaf_samples = 0;
    for block in traces.split("-----------+") {
        let frames: Vec<&str> = block
            .lines()
            .filter(|l| !l.contains(':') && !l.trim().is_empty() && !l.starts_with('-'))
            .collect();
        if let Some(first) = frames.first() {
            let f: Vec<&str> = first.split_whitespace().collect();
            if f.len() == 2 && f[1] == "leaf" {
                leaf_samples += f[0].parse::<f64>().unwrap() as u64;
            }
        }
        assert!(
            frames.is_empty() || block.contains("comm:  workload"),
            "labels on every trace: {block}"
        );
    }
    let want = report.iter().find(|x| x.0 == "leaf").unwrap().2;
    assert_eq!(leaf_samples, want, "{traces}");
}

#[test]
fn flamegraph_hot_function_on_the_first_screen() {
    let modules = match browser_tools() {
        Ok(m) => m,
        Err(why) => return skip(&why),
    };
    let Some(r) = record() else { return };
    let report = report_rows(&r);
    let total: u64 = report.iter().map(|x| x.2).sum();
    for (extra, func, name) in [
        (&[][..], "leaf", "flamegraph.png"),
        (&["--inverted"][..], "deep_main", "flamegraph-inverted.png"),
    ] {
        let svg = export(&r, "flamegraph", extra);
        let png = r.dir.path().join(name);
        let v = node(&[
            script("svg_first_screen.mjs").as_os_str(),
            modules.as_os_str(),
            svg.as_os_str(),
            std::ffi::OsStr::new(func),
            png.as_os_str(),
        ]);
        assert_eq!(
            v["title"].as_str().unwrap(),
            format!("cpu-clock: {total} samples of workload")
        );
        assert!(v["scrollHeight"].as_f64().unwrap() <= 1000.0, "{v}");
        let boxes = v["boxes"].as_array().unwrap();
        assert!(!boxes.is_empty(), "{func} not drawn: {v}");
        for b in boxes {
            let bottom = b["y"].as_f64().unwrap() + b["height"].as_f64().unwrap();
            assert!(
                b["y"].as_f64().unwrap() >= 0.0 && bottom <= 1000.0,
                "{func} below the fold: {b}"
            );
        }
        // The hot function's boxes take a width on the screen in proportion to its samples.
        let width: f64 = boxes.iter().map(|b| b["width"].as_f64().unwrap()).sum();
        assert!(width > 200.0, "{func}: {width} px in all: {v}");
        keep_screenshot(&png, name);
    }
}

#[test]
fn inverted_needs_the_flamegraph_format() {
    // Among the exports only the flamegraph draws inverted; the refusal comes before the
    // file is read. (Without --format, -G/--inverted is perf's caller-first call graph.)
    let out = perfkit()
        .args([
            "report",
            "--format",
            "speedscope",
            "--inverted",
            "-i",
            "/nonexistent/perf.data",
        ])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--format flamegraph"), "{err}");
    let out = perfkit()
        .args(["report", "--inverted", "-i", "/nonexistent/perf.data"])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("--format flamegraph"), "{err}");
    let out = perfkit()
        .args([
            "report",
            "--format",
            "flamegraph",
            "--max-depth",
            "2",
            "-i",
            "/nonexistent",
        ])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 boxes at least"), "{err}");
}

/// The Firefox Profiler has no offline build to open files in here: the export is checked by
/// what the profiler reads from it, on the same recording.
#[test]
fn firefox_export_has_thread_tracks_cpu_time_and_build_ids() {
    let Some(r) = record() else { return };
    let json = export(&r, "firefox", &[]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let script = stdout_ok(
        perfkit()
            .args(["script", "-q", "-F", "tid", "-i"])
            .arg(&r.data),
    );
    let mut per_tid = std::collections::BTreeMap::<String, u64>::new();
    for l in script.lines().filter(|l| !l.trim().is_empty()) {
        *per_tid.entry(l.trim().to_string()).or_default() += 1;
    }
    let threads = v["threads"].as_array().unwrap();
    for (tid, n) in &per_tid {
        let t = threads
            .iter()
            .find(|t| t["tid"].to_string().trim_matches('"') == tid.as_str())
            .unwrap_or_else(|| panic!("no track for tid {tid}"));
        assert_eq!(t["name"], format!("workload ({tid})"));
        assert_eq!(t["samples"]["length"].as_u64(), Some(*n));
        // cpu-clock: each sample stands for its period of CPU time (µs in the file).
        let cpu: f64 = t["samples"]["threadCPUDelta"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|x| x.as_f64())
            .sum();
        assert!(
            cpu > 0.0 && cpu <= *n as f64 * 1e6,
            "tid {tid}: {cpu} µs for {n} samples"
        );
    }
    let ids = stdout_ok(perfkit().args(["buildid-list", "-i"]).arg(&r.data));
    let id = ids
        .lines()
        .find(|l| l.ends_with(&*r.bin.to_string_lossy()))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{ids}"));
    let lib = v["libs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "workload")
        .unwrap_or_else(|| panic!("no library for the workload: {}", v["libs"]));
    assert_eq!(lib["codeId"].as_str(), Some(id));
    assert_eq!(lib["path"].as_str(), Some(&*r.bin.to_string_lossy()));
    assert!(lib["breakpadId"].as_str().unwrap().len() == 33);
}

/// With context-switch records (perf's `--switch-events`), speedscope gets the time a thread
/// was switched out as `[off-CPU]` samples, and Firefox Profiler off-CPU markers.
#[test]
fn off_cpu_time_from_switch_events() {
    if !common::have_perf() {
        return skip("no perf (.ci/run installs linux-perf)");
    }
    let Some(mut r) = record() else { return };
    // 50 sleeps of 1 ms: at least 50 ms off CPU, 50 switches out.
    r.data = r.dir.path().join("switch.data");
    let out = Command::new("perf")
        .args(["record", "-q", "-g", "--switch-events", "-o"])
        .arg(&r.data)
        .arg("--")
        .arg(&r.bin)
        .args(["sleep", "50"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = export(&r, "speedscope", &[]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let frames = v["shared"]["frames"].as_array().unwrap();
    let off = frames
        .iter()
        .position(|f| f["name"] == "[off-CPU]")
        .expect("an [off-CPU] frame");
    let (mut off_ns, mut n) = (0u64, 0);
    for p in v["profiles"].as_array().unwrap() {
        assert_eq!(p["unit"], "nanoseconds");
        let weights = p["weights"].as_array().unwrap();
        for (s, w) in p["samples"].as_array().unwrap().iter().zip(weights) {
            if s.as_array().unwrap().last().and_then(|x| x.as_u64()) == Some(off as u64) {
                off_ns += w.as_u64().unwrap();
                n += 1;
            }
        }
    }
    assert!(n >= 50, "{n} off-CPU stretches for 50 sleeps");
    assert!(
        off_ns >= 50_000_000,
        "{off_ns} ns off CPU for 50 sleeps of 1 ms"
    );
    let json = export(&r, "firefox", &[]);
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let markers: u64 = v["threads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["markers"]["length"].as_u64().unwrap())
        .sum();
    assert!(markers >= 50, "{markers} off-CPU markers for 50 sleeps");
}
