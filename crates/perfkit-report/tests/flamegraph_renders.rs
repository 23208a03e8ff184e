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
        eprintln!("skipped: no chromium (.ci/run installs Debian's chromium)");
        return;
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
