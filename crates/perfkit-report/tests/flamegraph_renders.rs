//! The SVG flamegraph opens in a real browser (headless Chromium): it renders to a
//! non-blank picture, its script runs, and the hot functions' names are in the page.

use perfkit_report::{EventDesc, Frame, Func, Profile, Sample};
use std::path::Path;
use std::process::Command;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|c| {
            Command::new(c)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// Skip for want of something CI has: say why, or fail when `CI=true`.
fn skip(reason: &str) {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("CI=true and this test would skip: {reason}");
    }
    eprintln!("skipped: {reason}");
}

fn profile() -> Profile {
    let mut p = Profile::default();
    p.events.push(EventDesc {
        name: "cpu-clock".into(),
        callchain: true,
        trace: None,
    });
    let frame = |p: &mut Profile, name: &str, addr| {
        let func = p.func(Func {
            name: name.into(),
            dso: "/usr/bin/demo".into(),
            kernel: false,
        });
        p.frame(Frame {
            func,
            addr,
            map_offset: None,
            sym_offset: None,
            srcline: None,
            inlined: false,
        })
    };
    let main = frame(&mut p, "main", 0x10);
    let parse = frame(&mut p, "parse_input_records", 0x20);
    let hash = frame(&mut p, "compute_sha256_digest", 0x30);
    let t = p.thread(1, 1);
    p.threads[t as usize].names.push((0, "demo".into()));
    let hot = p.stack_from_root([main, hash]);
    let warm = p.stack_from_root([main, parse]);
    for i in 0..1000u64 {
        p.samples.push(Sample {
            time: i * 1000,
            thread: t,
            cpu: Some(0),
            event: 0,
            period: 1000,
            stack: if i % 4 == 0 { warm } else { hot },
            raw: None,
            chain_broken: false,
            count: 1,
            cgroup: 0,
        });
    }
    p
}

fn run(browser: &str, args: &[&str], url: &Path) -> std::process::Output {
    let profile_dir = tempfile::tempdir().unwrap();
    Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--user-data-dir={}", profile_dir.path().display()))
        .args(args)
        .arg(format!("file://{}", url.display()))
        .output()
        .expect("run chromium")
}

#[test]
fn flamegraph_renders_in_chromium() {
    let Some(browser) = chromium() else {
        return skip("no chromium (.ci/run installs Debian's chromium)");
    };
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("profile.svg");
    let mut f = std::fs::File::create(&svg).unwrap();
    perfkit_report::export::flamegraph::write(&profile(), "perfkit test", &mut f).unwrap();
    drop(f);

    // The DOM after scripts ran carries the frames' names and the inferno script's state.
    let out = run(browser, &["--dump-dom"], &svg);
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        dom.contains("compute_sha256_digest"),
        "hot function missing from the DOM"
    );
    assert!(dom.contains("parse_input_records"));
    assert!(
        dom.contains("<svg"),
        "not rendered as SVG: {}",
        &dom[..dom.len().min(300)]
    );

    // A screenshot that is not blank: the flamegraph's frames are drawn.
    let png = dir.path().join("shot.png");
    let out = run(
        browser,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1200,600",
            "--hide-scrollbars",
        ],
        &svg,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[1..4], b"PNG");
    // A blank 1200x600 page compresses to a few hundred bytes; drawn frames and text
    // take kilobytes.
    assert!(
        bytes.len() > 8_000,
        "screenshot looks blank ({} bytes)",
        bytes.len()
    );
    if let Ok(keep) = std::env::var("PERFKIT_KEEP_SCREENSHOT") {
        std::fs::copy(&png, keep).unwrap();
    }
}

/// (y, height) of the boxes whose tooltip starts with `func (`.
fn boxes(svg: &str, func: &str) -> Vec<(f64, f64)> {
    let attr = |s: &str, name: &str| -> f64 {
        let at = s.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
        s[at..].split('"').next().unwrap().parse().unwrap()
    };
    svg.split("<title>")
        .skip(1)
        .filter(|g| g.starts_with(&format!("{func} (")))
        .map(|g| {
            let rect = &g[g.find("<rect").unwrap()..];
            (attr(rect, "y"), attr(rect, "height"))
        })
        .collect()
}

#[test]
fn one_garbage_stack_does_not_push_the_hot_frames_below_the_fold() {
    // The profile above plus one sample whose frame-pointer walk went through 127 garbage
    // frames.
    let mut p = profile();
    let garbage: Vec<_> = (0..127u64)
        .map(|i| {
            let func = p.func(Func {
                name: "[unknown]".into(),
                dso: "[unknown]".into(),
                kernel: false,
            });
            p.frame(Frame {
                func,
                addr: 0xdead_0000 + i * 8,
                map_offset: None,
                sym_offset: None,
                srcline: None,
                inlined: false,
            })
        })
        .collect();
    let mut s = p.samples[0];
    s.stack = p.stack_from_root(garbage);
    p.samples.push(s);
    let mut out = Vec::new();
    perfkit_report::export::flamegraph::write_with(
        &p,
        &perfkit_report::export::flamegraph::Options::default(),
        &mut out,
    )
    .unwrap();
    let svg = String::from_utf8(out).unwrap();
    let height: f64 = svg
        .split("height=\"")
        .nth(1)
        .and_then(|h| h.split('"').next())
        .unwrap()
        .parse()
        .unwrap();
    assert!(height <= 1000.0, "the SVG is {height} px high");
    let hot = boxes(&svg, "compute_sha256_digest");
    assert_eq!(hot.len(), 1);
    for (y, h) in hot {
        assert!(
            y + h <= 1000.0,
            "hot frame at y={y}, below a 1000 px screen"
        );
    }
    assert!(
        svg.contains("\u{2026} 79 frames"),
        "the cut frames are counted"
    );
    assert!(svg.contains("cpu-clock: 1001 samples of demo"));

    let Some(browser) = chromium() else {
        return skip("no chromium (.ci/run installs Debian's chromium)");
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.svg");
    std::fs::write(&file, &svg).unwrap();
    let png = dir.path().join("shot.png");
    let out = run(
        browser,
        &[
            &format!("--screenshot={}", png.display()),
            "--window-size=1400,1000",
            "--hide-scrollbars",
        ],
        &file,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert!(
        bytes.len() > 8_000,
        "screenshot looks blank ({} bytes)",
        bytes.len()
    );
}
