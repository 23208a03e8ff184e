//! `perfkit top` live on this machine: `--stdio` screens of a known workload, and the
//! terminal UI driven in tmux (screens read with `capture-pane`, keys sent with
//! `send-keys`).

mod common;

use common::{hotloop, perfkit, skip, sleeper, stdout_ok};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The screens of `--stdio` output whose status line names `event`, last first: their rows.
fn screens_of<'a>(text: &'a str, event: &str) -> Vec<Vec<&'a str>> {
    let mut v: Vec<Vec<&str>> = text
        .split("   PerfTop:")
        .filter(|s| {
            s.lines()
                .next()
                .is_some_and(|l| l.contains(&format!(" {event}],")))
        })
        .map(|s| {
            s.lines()
                .skip_while(|l| !l.starts_with("---"))
                .skip(1)
                .filter(|l| l.contains('%'))
                .collect()
        })
        .collect();
    v.reverse();
    v
}

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

#[test]
fn stdio_shows_every_event_and_off_cpu_time() {
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = hotloop::build(dir.path(), "-O2") else {
        return;
    };
    // Two events: each refresh prints a screen of each, and hot leads both.
    let out = stdout_ok(
        perfkit()
            .args(["top", "--stdio", "-d", "1", "--refreshes", "2"])
            .args(["-e", "cpu-clock", "-e", "task-clock", "--"])
            .arg(&bin)
            .args(["400000000", "0"]),
    );
    for ev in ["cpu-clock", "task-clock"] {
        let screens = screens_of(&out, ev);
        assert!(!screens.is_empty(), "a screen of {ev}:\n{out}");
        assert!(
            screens[0].first().is_some_and(|r| r.ends_with("[.] hot")),
            "hot leads {ev}:\n{out}"
        );
    }

    // --off-cpu: a program sleeping in a known function leads the offcpu-time screen.
    if !sleeper::tracefs_ready() {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("CI has tracefs: sched:sched_switch must be usable for top --off-cpu");
        }
        skip("no tracefs here: sched:sched_switch is needed for --off-cpu");
        return;
    }
    let Some(sleeper) = sleeper::build(dir.path()) else {
        skip("no working C compiler (cc) to build the sleeper");
        return;
    };
    let out = stdout_ok(
        perfkit()
            .args(["top", "--stdio", "-d", "5", "--off-cpu", "--"])
            .arg(&sleeper),
    );
    let screens = screens_of(&out, "offcpu-time");
    assert!(!screens.is_empty(), "an offcpu-time screen:\n{out}");
    let lead = screens[0].first().copied().unwrap_or("");
    assert!(
        lead.ends_with("[.] sleep_in_known_function"),
        "the sleeping function leads off-CPU time:\n{out}"
    );
    // Self share (the last percentage before the keys): most of the time off the CPU.
    let pct: Vec<f64> = lead
        .split('%')
        .filter_map(|p| p.trim().parse().ok())
        .collect();
    assert!(pct.last().is_some_and(|&p| p > 50.0), "{out}");
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
    /// The screen with its attributes as escape sequences (reverse video marks the
    /// selected row).
    fn screen_attrs(&self) -> String {
        String::from_utf8_lossy(
            &self
                .cmd(&["capture-pane", "-e", "-p", "-t", &self.name])
                .stdout,
        )
        .into_owned()
    }
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", self.name.as_str()];
        args.extend_from_slice(keys);
        assert!(self.cmd(&args).status.success());
    }
    /// Wait (up to a minute: the machine may be loaded) for the screen to satisfy `ok`.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_on(what, || self.screen(), ok)
    }
    /// [`wait_for`](Self::wait_for) on the screen with attributes.
    fn wait_for_attrs(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        self.wait_on(what, || self.screen_attrs(), ok)
    }
    fn wait_on(&self, what: &str, read: impl Fn() -> String, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = read();
            if ok(&s) {
                return s;
            }
            assert!(
                start.elapsed() < Duration::from_secs(120),
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

/// The index (among the rows below the rule) of the row shown in reverse video.
fn selected_row(screen_with_attrs: &str) -> Option<usize> {
    screen_with_attrs
        .lines()
        .skip_while(|l| !l.contains("---"))
        .skip(1)
        .position(|l| l.contains("\x1b[7m"))
}

/// The rows below the rule that carry a percentage.
fn rows_of(screen: &str) -> Vec<&str> {
    screen
        .lines()
        .skip_while(|l| !l.starts_with("---"))
        .skip(1)
        .filter(|l| l.contains('%'))
        .collect()
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
    // Two events (Tab switches between them).
    let cmd = format!(
        "{} top -d 1 -e cpu-clock -e task-clock -- {} 400000000 0",
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

    // Enter: perf top's menu for the row; its second entry zooms into hot's DSO, and only
    // hotloop rows remain. d: out again.
    t.keys(&["Home", "Enter"]);
    let s = t.wait_for("the row's menu", |s| {
        s.contains("Annotate hot") && s.contains("Zoom into hotloop DSO")
    });
    assert!(
        s.contains("Zoom into hotloop(") && s.contains("Switch to event task-clock"),
        "{s}"
    );
    t.keys(&["Down", "Enter"]);
    let s = t.wait_for("zoom into hotloop", |s| {
        s.contains("zoomed into DSO hotloop")
    });
    let rows = rows_of(&s);
    assert!(
        !rows.is_empty() && rows.iter().all(|r| r.contains("hotloop")),
        "{s}"
    );
    t.keys(&["d"]);
    t.wait_for("zoom out", |s| s.contains("zoomed out"));
    // d on the row zooms into its DSO directly; t into its hottest thread; again: out.
    t.keys(&["Home", "d"]);
    t.wait_for("d zooms", |s| s.contains("zoomed into DSO hotloop"));
    t.keys(&["d"]);
    t.wait_for("zoom out", |s| s.contains("zoomed out"));
    t.keys(&["Home", "t"]);
    t.wait_for("thread zoom", |s| s.contains("zoomed into thread hotloop("));
    t.keys(&["t"]);
    t.wait_for("zoom out", |s| s.contains("zoomed out"));
    // Esc leaves the menu without doing anything.
    t.keys(&["Enter"]);
    t.wait_for("menu", |s| s.contains("Enter: do, Esc: back"));
    t.keys(&["Escape"]);
    t.wait_for("menu closed", |s| !s.contains("Enter: do, Esc: back"));

    // PgDn/PgUp/Down/Up move the selection (reverse video) once there are two rows.
    t.wait_for("two rows", |s| rows_of(s).len() >= 2);
    t.keys(&["Home", "PageDown"]);
    t.wait_for_attrs("PgDn moves down", |s| {
        selected_row(s).is_some_and(|r| r > 0)
    });
    t.keys(&["PageUp"]);
    t.wait_for_attrs("PgUp back to the top", |s| selected_row(s) == Some(0));
    t.keys(&["Down"]);
    t.wait_for_attrs("Down", |s| selected_row(s) == Some(1));
    t.keys(&["Up"]);
    t.wait_for_attrs("Up", |s| selected_row(s) == Some(0));

    // E/C: call-graph trees under the rows (no -g: says how to get them), then gone.
    t.keys(&["E"]);
    t.wait_for("chains", |s| {
        s.contains("(no call chains recorded: run top with -g)")
    });
    t.keys(&["C"]);
    t.wait_for("no chains", |s| !s.contains("no call chains recorded"));

    // Tab: the second event (hot leads it too); Tab again: back to the first.
    t.keys(&["Tab"]);
    t.wait_for("task-clock view", |s| {
        s.lines()
            .next()
            .is_some_and(|l| l.contains(" task-clock],"))
            && s.contains("event 2/2")
            && first_row(s).ends_with("[.] hot")
    });
    t.keys(&["Tab"]);
    t.wait_for("cpu-clock view", |s| {
        s.lines().next().is_some_and(|l| l.contains(" cpu-clock],"))
    });

    // It follows the terminal's size.
    assert!(
        t.cmd(&["resize-window", "-t", &t.name, "-x", "90", "-y", "30"])
            .status
            .success()
    );
    t.wait_for("resized", |s| {
        s.lines()
            .nth(1)
            .is_some_and(|l| l.trim_end().len() == 90 && l.starts_with("---"))
            && s.lines().count() <= 30
    });

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
    wait_gone(&t);

    // Ctrl-C quits too.
    let t = Tmux {
        name: format!("perfkit-top-c-{}", std::process::id()),
    };
    let cmd = format!(
        "{} top -d 1 -- {} 400000000 0",
        exe.display(),
        bin.display()
    );
    let st = t.cmd(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "100",
        "-y",
        "30",
        &cmd,
    ]);
    assert!(st.status.success());
    t.wait_for("rows", |s| first_row(s).contains('%'));
    t.keys(&["C-c"]);
    wait_gone(&t);
}

/// Wait (generously) for the tmux session of a quitting top to end.
fn wait_gone(t: &Tmux) {
    let start = Instant::now();
    while t.alive() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "top did not quit"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The lines under the row ending `row` in the last `--stdio` screen: its call-graph tree,
/// up to the blank line after it.
fn tree_under<'a>(text: &'a str, row: &str) -> Vec<&'a str> {
    let last = text.rsplit("   PerfTop:").next().unwrap_or("");
    last.lines()
        .skip_while(|l| !l.ends_with(row))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

#[test]
fn g_shows_each_rows_call_graph_tree_in_stdio_and_the_tui() {
    let dir = tempfile::tempdir().unwrap();
    // Frame pointers, so the kernel's callchains reach main.
    let Some(bin) = hotloop::build(dir.path(), "-fno-omit-frame-pointer") else {
        return;
    };
    // --stdio -g: each row, then its tree as perf top --stdio -g prints it (perf report's
    // graph: callers first in children mode); hot's callers include main.
    let out = stdout_ok(
        perfkit()
            .args(["top", "--stdio", "-g", "-d", "1", "--refreshes", "2"])
            .args(["-s", "sym", "--"])
            .arg(&bin)
            .args(["400000000", "0"]),
    );
    let tree = tree_under(&out, "[.] hot");
    assert!(
        tree.first().is_some_and(|l| l.trim() == "|"),
        "a tree under hot:\n{out}"
    );
    let main_at = tree.iter().position(|l| {
        l.trim_start()
            .trim_start_matches(['|', '-'])
            .ends_with("main")
            || l.contains("--main")
    });
    let hot_at = tree.iter().rposition(|l| l.trim_end().ends_with("hot"));
    assert!(
        main_at.is_some() && hot_at.is_some() && main_at < hot_at,
        "main above hot in hot's tree (callers first):\n{out}"
    );
    // The row itself has the children and self columns.
    let row = out
        .rsplit("   PerfTop:")
        .next()
        .unwrap()
        .lines()
        .find(|l| l.ends_with("[.] hot"))
        .unwrap();
    assert_eq!(row.matches('%').count(), 2, "{row}");

    if Command::new("tmux").arg("-V").output().is_err() {
        skip("tmux is not installed");
        return;
    }
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let t = Tmux {
        name: format!("perfkit-top-g-{}", std::process::id()),
    };
    let cmd = format!(
        "{} top -g -d 1 -s sym -- {} 400000000 0",
        exe.display(),
        bin.display()
    );
    assert!(
        t.cmd(&[
            "new-session",
            "-d",
            "-s",
            &t.name,
            "-x",
            "120",
            "-y",
            "40",
            &cmd
        ])
        .status
        .success()
    );
    t.wait_for("rows", |s| {
        rows_of(s).iter().any(|r| r.ends_with("[.] hot"))
    });
    // Only hot's row (the filter), then Enter unfolds its tree: main among its callers.
    t.keys(&["/", "]", " ", "h", "o", "t", "Enter"]);
    t.wait_for("filtered to hot", |s| {
        first_row(s).ends_with("[.] hot") && rows_of(s).len() == 1
    });
    t.keys(&["Home", "Enter"]);
    let s = t.wait_for("hot's tree", |s| {
        s.lines().any(|l| l.trim() == "|") && s.lines().any(|l| l.contains("main"))
    });
    let below: Vec<&str> = s
        .lines()
        .skip_while(|l| !l.ends_with("[.] hot"))
        .skip(1)
        .collect();
    assert!(
        below.first().is_some_and(|l| l.trim() == "|"),
        "the tree starts under the row:\n{s}"
    );
    assert!(below.iter().any(|l| l.contains("main")), "{s}");
    // Enter again folds it; E unfolds every row's, C folds them all.
    t.keys(&["Enter"]);
    t.wait_for("folded", |s| !s.lines().any(|l| l.contains("main")));
    t.keys(&["E"]);
    t.wait_for("E: every tree", |s| s.lines().any(|l| l.contains("main")));
    t.keys(&["C"]);
    t.wait_for("C: no tree", |s| !s.lines().any(|l| l.contains("main")));
    // + also unfolds the row.
    t.keys(&["+"]);
    t.wait_for("+: the tree", |s| s.lines().any(|l| l.contains("main")));
    t.keys(&["q"]);
    wait_gone(&t);
}
