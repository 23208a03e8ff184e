//! BPF programs loaded while `top` and `agent` run, as perf top shows them: their samples
//! are named `bpf_prog_TAG_NAME` (the kernel's own name for the JIT-compiled function, as
//! `/proc/kallsyms` lists it while the program is loaded) from the `PERF_RECORD_KSYMBOL`
//! records of the sampling event, and `top` runs perf top's BPF side-band thread, which
//! reads each program's JIT code, function and line info when it loads: its row still
//! annotates, with the program's source lines, after the program is gone.
//!
//! The workload (`fixtures/bpf_spin.c`, `btf` mode) loads `perfkit_btf`, whose function
//! `perfkit_sub` loops 20000 times (`cmp $0x4e20`) on source line `r1 += 1`, and runs it
//! in the kernel (`BPF_PROG_TEST_RUN`). Loading needs root (CI runs as root). (perf 6.1
//! here cannot annotate BPF code: it is built without libbfd.)

mod common;

use common::skip;
use perfkit_report::export::pprof::PprofProfile;
use prost::Message;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One test at a time: each loads programs of one name and watches the whole system.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Build the workload; `None` (after `skip`) without a C compiler or the rights to load a
/// BPF program.
fn bpf_spin(dir: &Path) -> Option<PathBuf> {
    let bin = dir.join("bpf_spin");
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/bpf_spin.c");
    let built = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(src)
        .status();
    if !built.is_ok_and(|s| s.success()) {
        skip("no working C compiler (cc) to build the BPF workload");
        return None;
    }
    let out = Command::new(&bin)
        .args(["1", "btf"])
        .output()
        .expect("run bpf_spin");
    if out.status.code() == Some(2) {
        skip(&format!(
            "the kernel refuses to load a BPF program here (root needed): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    assert!(out.status.success(), "bpf_spin 1 btf: {out:?}");
    Some(bin)
}

/// A process killed when dropped (also when a test fails).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run the workload's program `repeat` times (in the kernel), then unload it by exiting;
/// the kernel's name of its looping function, read from `/proc/kallsyms` while it is
/// loaded (`bpf_prog_TAG_perfkit_sub`).
fn spin_and_unload(bin: &Path, repeat: &str) -> String {
    let mut child = Command::new(bin)
        .args([repeat, "btf"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bpf_spin");
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 7];
    out.read_exact(&mut first)
        .expect("bpf_spin says `loaded ID`");
    assert_eq!(&first, b"loaded ", "bpf_spin's output");
    let kallsyms = std::fs::read_to_string("/proc/kallsyms").unwrap();
    let name = kallsyms
        .lines()
        .filter(|l| l.ends_with("[bpf]"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .find(|n| n.starts_with("bpf_prog_") && n.ends_with("_perfkit_sub"))
        .unwrap_or_else(|| panic!("no bpf_prog_*_perfkit_sub in /proc/kallsyms"))
        .to_string();
    let st = child.wait().unwrap();
    assert!(st.success(), "bpf_spin {repeat} btf: {st}");
    name
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
    /// Wait (up to two minutes: the machine may be loaded) for the screen to satisfy `ok`.
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
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

/// A program loaded, run and unloaded while `top` runs: its row is named as perf top
/// names it (the kernel's `bpf_prog_TAG_perfkit_sub`, in both the DSO and symbol
/// columns), and annotating it shows its JIT code from the side-band thread's copy (the
/// kernel no longer has it) with the program's source line.
#[test]
fn top_names_and_annotates_a_program_loaded_while_it_runs() {
    let _one = one_at_a_time();
    if Command::new("tmux").arg("-V").output().is_err() {
        return skip("tmux is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let exe = assert_cmd::cargo::cargo_bin("perfkit");
    let t = Tmux {
        name: format!("perfkit-top-bpf-{}", std::process::id()),
    };
    // A long delay: the program's samples stay in the view (decay is per refresh).
    let cmd = format!("{} top -a -d 5", exe.display());
    let st = t.cmd(&[
        "new-session",
        "-d",
        "-s",
        &t.name,
        "-x",
        "160",
        "-y",
        "40",
        &cmd,
    ]);
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    t.wait_for("the first rows", |s| first_row(s).contains('%'));
    // Loaded after top started, unloaded before its row is annotated.
    let name = spin_and_unload(&bin, "150000");
    let keys: Vec<String> = "/perfkit_sub".chars().map(String::from).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    t.keys(&keys);
    t.keys(&["Enter"]);
    let s = t.wait_for("the program's row", |s| {
        first_row(s).contains("perfkit_sub")
    });
    let row = first_row(&s);
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols[1..], [name.as_str(), "[k]", name.as_str()], "{s}");
    // a: its code, as the side-band thread read it, with the source line it loops on.
    t.keys(&["Home", "a"]);
    let s = t.wait_for("the annotation", |s| {
        s.contains(&format!("Annotate {name} (")) || s.contains("cannot annotate")
    });
    assert!(!s.contains("cannot annotate"), "{s}");
    if cfg!(target_arch = "x86_64") {
        assert!(s.contains("cmp    $0x4e20,"), "{s}");
    }
    assert!(s.contains("r1 += 1"), "{s}");
    t.keys(&["q"]);
    t.keys(&["q"]);
}

fn decode(gz: &[u8]) -> PprofProfile {
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut raw)
        .expect("gzip");
    PprofProfile::decode(&raw[..]).expect("a pprof profile")
}

/// A program loaded while `agent` runs names its samples in the window it loads in (from
/// its KSYMBOL record) and in the windows after (from the records each window's file
/// starts with), as the kernel names it; no frame that `bpf_test_run` calls is left
/// unnamed.
#[test]
fn agent_names_a_program_loaded_while_it_runs() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let out_dir = dir.path().join("profiles");
    let agent = Killed(
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
            .args(["agent", "-w", "2", "--count", "4", "-F", "499", "-d"])
            .arg(&out_dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // Loaded once the agent samples (it makes its scratch directory after it enabled its
    // events), then loaded again and run until the agent is done.
    let start = Instant::now();
    while !out_dir.join(".work").exists() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the agent did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let mut spins = Killed(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "while :; do {} 50000 btf >/dev/null || exit 1; done",
                bin.display()
            ))
            .spawn()
            .unwrap(),
    );
    // While it spins, the kernel's name of the looping function.
    let name = loop {
        let k = std::fs::read_to_string("/proc/kallsyms").unwrap();
        if let Some(n) = k
            .lines()
            .filter(|l| l.ends_with("[bpf]"))
            .filter_map(|l| l.split_whitespace().nth(2))
            .find(|n| n.starts_with("bpf_prog_") && n.ends_with("_perfkit_sub"))
        {
            break n.to_string();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut agent = agent;
    let st = agent.0.wait().unwrap();
    assert!(st.success(), "agent: {st}");
    let _ = spins.0.kill();
    let _ = spins.0.wait();
    let mut named = 0i64;
    let mut below_test_run = Vec::new();
    for f in std::fs::read_dir(&out_dir).unwrap().flatten() {
        if !f.path().to_string_lossy().ends_with(".pb.gz") {
            continue;
        }
        let p = decode(&std::fs::read(f.path()).unwrap());
        let s = |i: i64| p.string_table[i as usize].as_str();
        let func = |id: u64| p.function.iter().find(|f| f.id == id).map(|f| s(f.name));
        let loc_names = |id: u64| -> Vec<&str> {
            p.location
                .iter()
                .find(|l| l.id == id)
                .map(|l| l.line.iter().filter_map(|x| func(x.function_id)).collect())
                .unwrap_or_default()
        };
        for smp in &p.sample {
            let frames: Vec<Vec<&str>> = smp.location_id.iter().map(|&l| loc_names(l)).collect();
            // What bpf_test_run calls (the program, or the kernel's own helpers) is
            // named.
            if let Some(i) = frames.iter().position(|f| f.contains(&"bpf_test_run"))
                && i > 0
            {
                let callee = &frames[i - 1];
                below_test_run.push(format!("{:?}", frames[..i].to_vec()));
                assert!(
                    !callee.is_empty()
                        && callee
                            .iter()
                            .all(|n| *n != "[unknown]" && !n.starts_with("0x")),
                    "{}: a sample below bpf_test_run unnamed: {callee:?}",
                    f.path().display()
                );
                if frames[0].contains(&name.as_str()) {
                    named += smp.value.first().copied().unwrap_or(0);
                }
            }
        }
    }
    assert!(
        named > 0,
        "no sample named {name}; samples below bpf_test_run: {below_test_run:?}"
    );
}
