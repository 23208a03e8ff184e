//! `perfkit top` live on this machine: `--stdio` screens of a known workload, and the
//! terminal UI driven in tmux (screens read with `capture-pane`, keys sent with
//! `send-keys`).

mod common;

use common::{hotloop, perfkit, skip, stdout_ok};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The rows of the last screen of `--stdio` output (after the last rule).
fn last_screen_rows(text: &str) -> Vec<&str> {
    let screens: Vec<&str> = text.split("   PerfTop:").collect();
    let last = screens.last().copied().unwrap_or("");
    last.lines()
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .filter(|l| l.contains('%'))
        .collect()
}

#[test]
fn stdio_shows_the_hot_function_first_and_narrows_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = hotloop::build(dir.path(), "-O2") else {
        return;
    };
    // A command: top ends when it does (or after two screens).
    let out = stdout_ok(
        perfkit()
            .args(["top", "--stdio", "-d", "1", "--refreshes", "2", "--"])
            .arg(&bin)
            .args(["400000000", "0"]),
    );
    assert!(
        out.contains("PerfTop:") && out.contains("irqs/sec"),
        "{out}"
    );
    assert!(
        out.contains("unresolved:") && out.contains("lost:"),
        "{out}"
    );
    let rows = last_screen_rows(&out);
    assert!(rows[0].ends_with("[.] hot"), "the hot loop leads:\n{out}");
    let pct: f64 = rows[0].trim().split('%').next().unwrap().parse().unwrap();
    assert!(pct > 50.0, "{out}");

    // -p on a running process, -K (no kernel rows), -E and --percent-limit.
    let mut child = Command::new(&bin).args(["400000000", "0"]).spawn().unwrap();
    let pid = child.id().to_string();
    let out = perfkit()
        .args([
            "top",
            "--stdio",
            "-d",
            "1",
            "--refreshes",
            "2",
            "-K",
            "-E",
            "3",
        ])
        .args(["-p", &pid])
        .output()
        .unwrap();
    let limited = perfkit()
        .args(["top", "--stdio", "-d", "1", "--refreshes", "1"])
        .args(["--percent-limit", "30", "-p", &pid])
        .output()
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = last_screen_rows(&text);
    assert!(!rows.is_empty() && rows.len() <= 3, "{text}");
    assert!(
        rows.iter().all(|r| !r.contains("[k]")),
        "-K hides kernel rows:\n{text}"
    );
    assert!(rows[0].ends_with("[.] hot"), "{text}");
    let text = String::from_utf8_lossy(&limited.stdout);
    let rows = last_screen_rows(&text);
    assert_eq!(rows.len(), 1, "only hot is above 30%:\n{text}");

    // Bad flags say what to do.
    let out = perfkit()
        .args(["top", "--stdio", "-d", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("delay"));
    let out = perfkit()
        .args(["top", "--stdio", "-s", "bogus"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown key"));
}

struct Tmux {
    name: String,
}

impl Tmux {
    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux").args(args).output().expect("tmux")
    }
    fn screen(&self) -> String {
        String::from_utf8_lossy(&self.cmd(&["capture-pane", "-p", "-t", &self.name]).stdout)
            .into_owned()
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.name.as_str()];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }
    /// Wait (up to a minute: the machine may be loaded) for the screen to satisfy `ok`.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what}; screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    fn alive(&self) -> bool {
        self.cmd(&["has-session", "-t", &self.name])
            .status
            .success()
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-session", "-t", &self.name]);
    }
}

/// The first row below the rule.
fn first_row(screen: &str) -> String {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .nth(1)
        .unwrap_or("")
        .to_string()
}

#[test]
fn tui_in_tmux_sorts_zooms_annotates_filters_saves_and_quits() {
    if Command::new("tmux").arg("-V").output().is_err() {
        skip("tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = hotloop::build(dir.path(), "-O2") else {
        return;
    };
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let t = Tmux {
        name: format!("perfkit-top-{}", std::process::id()),
    };
    let cmd = format!(
        "{} top -d 1 -- {} 400000000 0",
        exe.display(),
        bin.display()
    );
    let dir_s = dir.path().to_str().unwrap();
    let st = t.cmd(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "120",
        "-y",
        "40",
        "-c",
        dir_s,
        &cmd,
    ]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );

    // The hot function leads, with the status line above it.
    let s = t.wait_for("hot to lead", |s| first_row(s).ends_with("[.] hot"));
    assert!(s.lines().next().unwrap().contains("PerfTop:"), "{s}");
    assert!(s.contains("cpu-clock") || s.contains("cycles"), "{s}");

    // s: next sort keys (sym only): the row loses its DSO column.
    t.keys(&["s"]);
    let s = t.wait_for("sort by sym", |s| s.contains("sorted by sym"));
    assert!(
        first_row(&s).split_whitespace().nth(1) == Some("[.]"),
        "{s}"
    );
    // S: back to dso,sym.
    t.keys(&["S"]);
    t.wait_for("sort by dso,sym", |s| {
        s.contains("sorted by dso,sym") && first_row(s).contains("hotloop")
    });

    // Enter: zoom into hot's DSO; only hotloop rows remain. Enter again: out.
    t.keys(&["Enter"]);
    let s = t.wait_for("zoom into hotloop", |s| {
        s.contains("zoomed into DSO hotloop")
    });
    let rows: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .filter(|l| l.contains('%'))
        .collect();
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.contains("hotloop")),
        "{s}"
    );
    t.keys(&["Enter"]);
    t.wait_for("zoom out", |s| s.contains("zoomed out"));

    // a: annotate hot in place, hottest instruction in view; q goes back.
    t.keys(&["Home", "a"]);
    let s = t.wait_for("annotation", |s| {
        s.contains("Annotate hot (") && s.contains("<hot+0x")
    });
    let hot_insn = s.lines().any(|l| {
        l.split(" : ")
            .next()
            .and_then(|p| p.trim().parse::<f64>().ok())
            .is_some_and(|p| p > 5.0)
    });
    assert!(hot_insn, "an instruction with a large share is shown:\n{s}");
    t.keys(&["q"]);
    t.wait_for("rows again", |s| first_row(s).contains("%"));

    // /: filter to cold.
    t.keys(&["/", "c", "o", "l", "d", "Enter"]);
    t.wait_for("filtered to cold", |s| {
        first_row(s).ends_with("[.] cold") && !s.contains("[.] hot\n")
    });

    // P: the view goes to perf.hist.0.
    t.keys(&["P"]);
    t.wait_for("saved", |s| s.contains("view written to perf.hist.0"));
    let saved = std::fs::read_to_string(Path::new(dir_s).join("perf.hist.0")).unwrap();
    assert!(
        saved.contains("PerfTop:") && saved.contains("[.] cold"),
        "{saved}"
    );

    // q quits: the session ends (and the workload with it).
    t.keys(&["q"]);
    let start = Instant::now();
    while t.alive() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "top did not quit"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
