//! Samples in BPF programs named as perf 6.1 names them (issue 16): from the recording's
//! `PERF_RECORD_KSYMBOL` records, each JIT-compiled function an object of its own called
//! `bpf_prog_TAG_NAME`, not from this machine's kallsyms (which forgets a program once it
//! is unloaded). And `record` writes those records as `perf record` does: the kernel's for
//! programs loaded while it runs, synthesized ones (with `PERF_RECORD_BPF_EVENT`) for
//! programs loaded before it started.
//!
//! The workload (`fixtures/bpf_spin.c`) loads a socket filter `perfkit_spin` that loops in
//! the kernel and runs it with `BPF_PROG_TEST_RUN`; loading needs root (CI runs as root).

mod common;

use common::{have_perf, perf_ok, perfkit, run_ok, skip, stdout_ok};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Build the workload; `None` (after `skip`) without a C compiler or the rights to load a
/// BPF program.
/// One test at a time: each loads programs named perfkit_spin and records the whole
/// system, so another test's programs would be in its recording.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

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
    let out = Command::new(&bin).arg("1").output().expect("run bpf_spin");
    if out.status.code() == Some(2) {
        skip(&format!(
            "the kernel refuses to load a BPF program here (root needed): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
        return None;
    }
    assert!(out.status.success(), "bpf_spin 1: {out:?}");
    Some(bin)
}

/// A running workload, killed when dropped (also when a test fails: a spinner left
/// running would be in the next test's recordings).
struct Spinner(std::process::Child);

impl Spinner {
    fn id(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) -> std::io::Result<()> {
        self.0.kill()
    }

    fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.0.wait()
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Start `bin` running its program until killed (the kernel's test loop stops at a
/// signal), once it is loaded: the process and the program's id.
fn spin_until_killed(bin: &Path) -> (Spinner, String) {
    let mut spin = Command::new(bin)
        .arg("4000000000")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn bpf_spin");
    let mut line = String::new();
    BufReader::new(spin.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let id = line
        .trim()
        .strip_prefix("loaded ")
        .unwrap_or_else(|| panic!("bpf_spin printed {line:?}, not `loaded ID`"))
        .to_string();
    (Spinner(spin), id)
}

/// `tool ARGS -i FILE`'s output without report's closing tip line (perf picks one at
/// random, perfkit prints its own).
fn shown(tool: &str, args: &[&str], file: &Path) -> String {
    let text = if tool == "perf" {
        perf_ok(args, file)
    } else {
        stdout_ok(perfkit().args(args).arg("-i").arg(file))
    };
    text.lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// perfkit's `script` and `report` of `file` are perf's, in the modes that name samples.
fn same_as_perf(file: &Path) {
    for args in [
        &["script", "-F", "comm,tid,ip,sym,symoff,dso"][..],
        &["report", "--stdio", "--no-children"],
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"],
    ] {
        let p = shown("perf", args, file);
        let q = shown("perfkit", args, file);
        assert_eq!(q, p, "perfkit {args:?} differs from perf's");
    }
}

/// The share of samples perf's `report --sort dso,sym` gives the program, which must be
/// named `bpf_prog_TAG_perfkit_spin` in both columns; its tag. `extra`: more options (a
/// filter).
fn program_share(file: &Path, extra: &[&str]) -> (f64, String) {
    let args = [
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"][..],
        extra,
    ]
    .concat();
    let text = perf_ok(&args, file);
    let line = text
        .lines()
        .find(|l| l.contains("_perfkit_spin"))
        .unwrap_or_else(|| panic!("no BPF program row:\n{text}"));
    let f: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(f.len(), 4, "{line}");
    assert_eq!(f[1], f[3], "object and symbol are the program: {line}");
    assert_eq!(f[2], "[k]");
    let tag = f[1]
        .strip_prefix("bpf_prog_")
        .and_then(|r| r.strip_suffix("_perfkit_spin"))
        .unwrap_or_else(|| panic!("{line}"));
    assert!(
        tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit()),
        "{line}"
    );
    (f[0].trim_end_matches('%').parse().unwrap(), tag.to_string())
}

/// Record `bin 100000` (about half a second of BPF code) with `tool`.
fn record(tool: &str, bin: &Path, out: &Path) {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let o = cmd
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(out)
        .arg("--")
        .arg(bin)
        .arg("100000")
        .stdout(Stdio::null())
        .output()
        .expect("record");
    assert!(o.status.success(), "{tool} record: {o:?}");
}

#[test]
fn samples_in_a_bpf_program_are_named_from_its_ksymbol_record() {
    let _one = one_at_a_time();
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    for tool in ["perf", "perfkit"] {
        let data = dir.path().join(format!("{tool}.data"));
        record(tool, &bin, &data);
        // The program is unloaded now: only the file's records can name it.
        let (share, tag) = program_share(&data, &[]);
        // Verification and loading take a small part of the task's CPU time; the loop in
        // the program nearly all the rest, whatever else the machine does.
        assert!(share > 50.0, "{tool}'s file: {share}% in the program");
        // The tag is the kernel's, which the BPF_EVENT record carries too.
        let events = perf_ok(&["script", "--show-bpf-events"], &data);
        assert!(
            events.contains("PERF_RECORD_BPF_EVENT type 1, flags 0, id ")
                && events.contains(&format!(
                    "type 1 flags 0x0 name bpf_prog_{tag}_perfkit_spin"
                )),
            "{tool}'s file:\n{events}"
        );
        same_as_perf(&data);
        // Its JIT code is in the file (HEADER_BPF_PROG_INFO): annotate disassembles it.
        let sym = format!("bpf_prog_{tag}_perfkit_spin");
        annotated_loop(&data, &sym);
    }
}

/// `perfkit annotate --stdio` of the BPF function `sym` in `file`: its JIT code, read from
/// the file, disassembled at the program's address, with nearly all samples in the loop
/// of 20000 (`cmp $0x4e20`) the workload's program runs. (perf 6.1 here cannot annotate
/// BPF code: it is built without libbfd, and says "Please link with binutils's libopcode
/// to enable BPF annotation".)
fn annotated_loop(file: &Path, sym: &str) -> String {
    let text = stdout_ok(
        perfkit()
            .args(["annotate", "--stdio", "-i"])
            .arg(file)
            .arg(sym),
    );
    let addr = perf_ok(&["script", "--show-bpf-events"], file)
        .lines()
        .find(|l| l.contains("PERF_RECORD_KSYMBOL") && l.ends_with(sym))
        .and_then(|l| {
            let at = l.find(" addr ")? + 6;
            l[at..].split_whitespace().next().map(str::to_string)
        })
        .unwrap_or_else(|| panic!("no KSYMBOL record of {sym}"));
    assert!(
        text.contains(&format!(": 5    {addr:0>16} <{sym}>:")),
        "{addr}:\n{text}"
    );
    let insns: Vec<(f64, &str)> = text
        .lines()
        .filter_map(|l| {
            let (pct, rest) = l.split_once(" : ")?;
            Some((pct.trim().parse().ok()?, rest))
        })
        .collect();
    let in_loop: f64 = insns
        .iter()
        .filter(|(_, t)| {
            t.contains("add    $0x1,") || t.contains("cmp    $0x4e20,") || t.contains("jb ")
        })
        .map(|(p, _)| p)
        .sum();
    if !cfg!(target_arch = "x86_64") {
        return text;
    }
    assert!(
        insns.iter().any(|(_, t)| t.contains("cmp    $0x4e20,")),
        "{text}"
    );
    assert!(in_loop > 90.0, "{in_loop}% in the loop:\n{text}");
    text
}

/// A program loaded before the recording starts is described by the records `record`
/// synthesizes at its start, the same as perf's (address, length, type, name, id).
/// System-wide (`-a`).
#[test]
fn record_describes_the_programs_loaded_before_it() {
    let _one = one_at_a_time();
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let (mut spin, prog_id) = spin_until_killed(&bin);
    let pid = spin.id();
    let ours = dir.path().join("perfkit.data");
    let theirs = dir.path().join("perf.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock", "-a", "-o"])
            .arg(&ours)
            .args(["--", "sleep", "0.5"]),
    );
    let o = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-a", "-o"])
        .arg(&theirs)
        .args(["--", "sleep", "0.5"])
        .output()
        .unwrap();
    spin.kill().unwrap();
    spin.wait().unwrap();
    assert!(o.status.success(), "perf record: {o:?}");
    // The records of this program (others may be loaded: systemd's), as perf prints them.
    let program_records = |file: &Path| -> Vec<String> {
        let text = perf_ok(&["script", "--show-bpf-events"], file);
        let lines: Vec<&str> = text.lines().collect();
        let ksym = lines
            .iter()
            .find(|l| l.contains("PERF_RECORD_KSYMBOL") && l.ends_with("_perfkit_spin"))
            .unwrap_or_else(|| panic!("no KSYMBOL record of the program:\n{text}"));
        let event = lines
            .iter()
            .find(|l| {
                l.ends_with(&format!(
                    "PERF_RECORD_BPF_EVENT type 1, flags 0, id {prog_id}"
                ))
            })
            .unwrap_or_else(|| panic!("no BPF_EVENT record of program {prog_id}:\n{text}"));
        // Synthesized: at time 0, before any sample.
        for l in [ksym, event] {
            assert!(l.contains(" 0.000000: "), "{l}");
        }
        vec![ksym.to_string(), event.to_string()]
    };
    assert_eq!(program_records(&ours), program_records(&theirs));
    // perf's HEADER_BPF_PROG_INFO section (every program loaded, with its functions'
    // addresses and sizes), printed by `report --header-only` as perf prints it.
    let prog_info = |tool: &str, file: &Path| -> Vec<String> {
        shown(tool, &["report", "--header-only"], file)
            .lines()
            .filter(|l| l.starts_with("# bpf_prog_info ") || l.starts_with("# \tsub_prog "))
            .map(str::to_string)
            .collect()
    };
    let spin_line = |lines: &[String]| -> String {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("# bpf_prog_info {prog_id}: bpf_prog_")))
            .unwrap_or_else(|| panic!("no bpf_prog_info line of program {prog_id}: {lines:?}"))
            .clone()
    };
    let want = prog_info("perf", &theirs);
    let perfs_line = spin_line(&want);
    assert!(
        perfs_line.contains("_perfkit_spin addr 0xffffffff"),
        "{perfs_line}"
    );
    assert_eq!(prog_info("perfkit", &theirs), want);
    // perfkit writes the section: perf reads perfkit's file as its own, and prints what
    // perfkit prints of it.
    let written = prog_info("perf", &ours);
    assert_eq!(prog_info("perfkit", &ours), written);
    // The spinner's line (id, name, address, size) is the one in perf's recording.
    assert_eq!(spin_line(&written), perfs_line);
    // Every program both recordings list (one may have come or gone between them) with
    // the same names (from the BTF both files carry, where a program has one), addresses
    // and sizes.
    let places = |lines: &[String]| -> std::collections::BTreeMap<String, Vec<String>> {
        let mut by_prog = std::collections::BTreeMap::<String, Vec<String>>::new();
        let mut prog = String::new();
        for l in lines {
            if let Some(rest) = l.strip_prefix("# bpf_prog_info ") {
                prog = rest.split(':').next().unwrap().to_string();
            }
            if l.contains(" addr ") {
                let at = l.find("bpf_prog_").unwrap_or(0);
                by_prog
                    .entry(prog.clone())
                    .or_default()
                    .push(l[at..].to_string());
            }
        }
        by_prog
    };
    let (a, b) = (places(&written), places(&want));
    let both: Vec<&String> = a.keys().filter(|k| b.contains_key(*k)).collect();
    assert!(both.contains(&&prog_id), "{a:?} {b:?}");
    for k in both {
        assert_eq!(a[k], b[k], "program {k}");
    }
    // The samples in the program, as both tools name them (the machine's other tasks are
    // left out: their names, and the column widths they set, are not this test's subject).
    let (share, _) = program_share(&ours, &[]);
    assert!(share > 0.0, "{share}% in the program");
    let in_program = |tool: &str, args: &[&str]| -> Vec<String> {
        shown(tool, args, &ours)
            .lines()
            .filter(|l| l.contains("_perfkit_spin"))
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect()
    };
    for args in [
        &["script", "-F", "pid,tid,ip,sym,symoff,dso"][..],
        &["report", "--stdio", "--no-children", "--sort", "dso,sym"],
        &[
            "report",
            "--stdio",
            "--no-children",
            "--sort",
            "pid,dso,sym",
        ],
    ] {
        let p = in_program("perf", args);
        assert!(!p.is_empty(), "perf {args:?}: no sample in the program");
        assert!(p.iter().all(|l| !l.contains("[unknown]")), "{p:?}");
        assert_eq!(in_program("perfkit", args), p, "perfkit {args:?}");
    }
    // Every sample in the program is the spinner's.
    let script = in_program("perf", &["script", "-F", "pid,tid,ip,sym,symoff,dso"]);
    assert!(
        script
            .iter()
            .all(|l| l.trim_start().starts_with(&format!("{pid}/{pid} "))),
        "{script:?}"
    );
}

/// Two programs of one name (the same code loaded twice, at two addresses) are one row, as
/// in perf: perf keeps a BPF program's symbol at the start of its own map (0), and tells
/// symbols apart by that start.
#[test]
fn programs_of_one_name_are_one_row() {
    let _one = one_at_a_time();
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let (mut spin, _) = spin_until_killed(&bin);
    // The second copy loads, runs and goes while the recording runs.
    let file = dir.path().join("perfkit.data");
    let second = format!("sleep 0.2; {} 3000 >/dev/null; sleep 0.2", bin.display());
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock", "-a", "-o"])
            .arg(&file)
            .args(["--", "sh", "-c", &second]),
    );
    spin.kill().unwrap();
    spin.wait().unwrap();
    // Both programs' places, from their KSYMBOL records.
    let events = perf_ok(&["script", "--show-bpf-events"], &file);
    let mut places: Vec<(u64, u64)> = events
        .lines()
        .filter(|l| {
            l.contains("PERF_RECORD_KSYMBOL")
                && l.contains("flags 0x0 ")
                && l.ends_with("_perfkit_spin")
        })
        .map(|l| {
            let word = |key: &str| {
                let at = l.find(key).unwrap() + key.len();
                l[at..].split_whitespace().next().unwrap().to_string()
            };
            (
                u64::from_str_radix(&word(" addr "), 16).unwrap(),
                word(" len ").parse().unwrap(),
            )
        })
        .collect();
    places.sort();
    places.dedup();
    assert_eq!(
        places.len(),
        2,
        "two programs named perfkit_spin:\n{events}"
    );
    // Samples in each of them.
    let ips: Vec<u64> = perf_ok(&["script", "-F", "ip"], &file)
        .lines()
        .filter_map(|l| u64::from_str_radix(l.trim(), 16).ok())
        .collect();
    for (start, len) in &places {
        let n = ips
            .iter()
            .filter(|&&ip| ip >= *start && ip < start + len)
            .count();
        assert!(n > 0, "no sample in the program at {start:#x}");
    }
    for sort in ["dso,sym", "sym", "pid,sym"] {
        let args = ["report", "--stdio", "--no-children", "--sort", sort];
        let rows = |tool: &str| -> Vec<String> {
            shown(tool, &args, &file)
                .lines()
                .filter(|l| l.contains("_perfkit_spin"))
                .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect()
        };
        let theirs = rows("perf");
        if sort != "pid,sym" {
            assert_eq!(theirs.len(), 1, "perf --sort {sort}: {theirs:?}");
        }
        assert_eq!(rows("perfkit"), theirs, "--sort {sort}");
    }
}

/// Record `bin ARGS` with `tool` (a command target: the program loads during the
/// recording).
fn record_command(tool: &str, out: &Path, command: &[&str]) {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let o = cmd
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(out)
        .arg("--")
        .args(command)
        .stdout(Stdio::null())
        .output()
        .expect("record");
    assert!(o.status.success(), "{tool} record: {o:?}");
}

/// The BPF lines of `report --header-only` (`bpf_prog_info`, `sub_prog`, `btf info`).
fn bpf_header(tool: &str, file: &Path) -> Vec<String> {
    shown(tool, &["report", "--header-only"], file)
        .lines()
        .filter(|l| {
            l.starts_with("# bpf_prog_info ")
                || l.starts_with("# \tsub_prog ")
                || l.starts_with("# btf info of id ")
        })
        .map(str::to_string)
        .collect()
}

/// A program loaded while the recording runs (a command target that loads it) is in the
/// file's HEADER_BPF_PROG_INFO, read by the record side-band thread as perf 6.1's does;
/// with its BTF in HEADER_BPF_BTF, which names its two functions (`perfkit_main`,
/// `perfkit_sub`) in both tools' `report --header-only`; and its code and line info,
/// which `annotate` shows.
#[test]
fn programs_loaded_during_the_recording_are_in_its_header() {
    let _one = one_at_a_time();
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let bin = bin.to_str().unwrap();
    let mut tags = Vec::new();
    for tool in ["perf", "perfkit"] {
        // Without BTF: one line, perf's name for a program of one function.
        let plain = dir.path().join(format!("{tool}-plain.data"));
        record_command(tool, &plain, &[bin, "20000"]);
        let lines = bpf_header("perf", &plain);
        assert_eq!(bpf_header("perfkit", &plain), lines, "{tool}'s file");
        let spin: Vec<&String> = lines
            .iter()
            .filter(|l| l.contains("_perfkit_spin addr 0xffffffff"))
            .collect();
        assert_eq!(spin.len(), 1, "{tool}'s file: {lines:?}");
        assert!(
            lines.iter().all(|l| !l.starts_with("# btf info")),
            "{lines:?}"
        );
        // With BTF, function and line info.
        let file = dir.path().join(format!("{tool}.data"));
        record_command(tool, &file, &[bin, "20000", "btf"]);
        let lines = bpf_header("perf", &file);
        assert_eq!(bpf_header("perfkit", &file), lines, "{tool}'s file");
        let at = lines
            .iter()
            .position(|l| l.starts_with("# bpf_prog_info ") && l.ends_with(':'))
            .unwrap_or_else(|| panic!("{tool}'s file: no program of two functions: {lines:?}"));
        let main = &lines[at + 1];
        let sub = &lines[at + 2];
        assert!(
            main.starts_with("# \tsub_prog 0: bpf_prog_")
                && main.contains("_perfkit_main addr 0xffffffff"),
            "{lines:?}"
        );
        assert!(
            sub.starts_with("# \tsub_prog 1: bpf_prog_")
                && sub.contains("_perfkit_sub addr 0xffffffff"),
            "{lines:?}"
        );
        // Its BTF: one, the program's (no other program with BTF loads meanwhile here).
        assert!(
            lines.iter().any(|l| l.starts_with("# btf info of id ")),
            "{lines:?}"
        );
        let name = sub.split_whitespace().nth(3).unwrap().to_string();
        // The samples are in the subprogram's loop; annotate shows it with the line info
        // the program was loaded with (lines 20 and 21, text `r1 += 1`).
        let text = annotated_loop(&file, &name);
        assert!(text.contains("         : 21   r1 += 1\n"), "{text}");
        tags.push(
            lines[at + 1..at + 3]
                .iter()
                .map(|l| l.split(" addr ").next().unwrap().to_string())
                .collect::<Vec<_>>(),
        );
    }
    // The same names (tags are hashes of the code) in both tools' files.
    assert_eq!(tags[0], tags[1]);
}

/// The `PERF_RECORD_HEADER_FEATURE` records of a pipe-mode stream: (feature bit, payload).
fn pipe_features(stream: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let u32_at = |o: usize| u32::from_ne_bytes(stream[o..o + 4].try_into().unwrap());
    let mut out = Vec::new();
    let mut at = 16;
    while at + 8 <= stream.len() {
        let (type_, size) = (
            u32_at(at),
            usize::from(u16::from_ne_bytes(
                stream[at + 6..at + 8].try_into().unwrap(),
            )),
        );
        assert!(size >= 8, "record at {at} of size {size}");
        if type_ == 80 {
            let feat = u64::from_ne_bytes(stream[at + 8..at + 16].try_into().unwrap());
            out.push((feat, stream[at + 16..at + size].to_vec()));
        }
        // HEADER_TRACING_DATA: its blob follows the record.
        if type_ == 66 {
            at += u32_at(at + 8) as usize;
        }
        at += size;
    }
    out
}

/// Pipe mode (`record -o -`): perf 6.1 writes its BPF sections as HEADER_FEATURE records
/// before it lists any program, so both are empty (a count of 0), whatever is loaded;
/// perfkit writes the same two records.
#[test]
fn pipe_mode_writes_perfs_empty_bpf_sections() {
    let _one = one_at_a_time();
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    // A program loaded before and during the recordings.
    let (mut spin, _) = spin_until_killed(&bin);
    let bpf = |tool: &str| -> Vec<(u64, Vec<u8>)> {
        let mut cmd = if tool == "perf" {
            Command::new("perf")
        } else {
            Command::new(env!("CARGO_BIN_EXE_perfkit"))
        };
        let o = cmd
            .args([
                "record",
                "-q",
                "-e",
                "cpu-clock",
                "-o",
                "-",
                "--",
                "sh",
                "-c",
            ])
            // The workload's own output would go into the stream.
            .arg(format!("{} 3000 >/dev/null", bin.display()))
            .stderr(Stdio::null())
            .output()
            .expect("record");
        assert!(o.status.success(), "{tool} record -o -: {o:?}");
        // The stream reads back: both tools report its samples.
        let stream = dir.path().join(format!("{tool}.pipe"));
        std::fs::write(&stream, &o.stdout).unwrap();
        for reader in ["perf", "perfkit"] {
            let text = shown(
                reader,
                &["report", "--stdio", "--no-children", "--sort", "dso"],
                &stream,
            );
            assert!(
                text.lines()
                    .any(|l| l.contains("% ") && !l.starts_with('#')),
                "{reader} report of {tool}'s stream:\n{text}"
            );
        }
        pipe_features(&o.stdout)
            .into_iter()
            .filter(|(f, _)| *f == 25 || *f == 26)
            .collect()
    };
    let theirs = bpf("perf");
    let ours = bpf("perfkit");
    spin.kill().unwrap();
    spin.wait().unwrap();
    assert_eq!(theirs, [(25, vec![0; 4]), (26, vec![0; 4])]);
    assert_eq!(ours, theirs);
}

/// Without the programs' info (`--no-bpf-event`: the section lists none, as perf's does)
/// `annotate` of a BPF symbol fails and says why, naming the section and the option.
#[test]
fn annotate_says_why_without_the_programs_code() {
    let _one = one_at_a_time();
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = bpf_spin(dir.path()) else {
        return;
    };
    let file = dir.path().join("perfkit.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-e", "cpu-clock", "--no-bpf-event", "-o"])
            .arg(&file)
            .arg("--")
            .arg(&bin)
            .arg("20000"),
    );
    let report = stdout_ok(
        perfkit()
            .args(["report", "--stdio", "--no-children", "--sort", "sym", "-i"])
            .arg(&file),
    );
    let sym = report
        .split_whitespace()
        .find(|w| w.starts_with("bpf_prog_") && w.ends_with("_perfkit_spin"))
        .unwrap_or_else(|| panic!("no sample named after the program:\n{report}"))
        .to_string();
    let out = perfkit()
        .args(["annotate", "--stdio", "-i"])
        .arg(&file)
        .arg(&sym)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains(&format!("cannot annotate {sym}"))
            && err.contains("HEADER_BPF_PROG_INFO section has no BPF function at 0xffffffff")
            && err.contains("--no-bpf-event"),
        "{out:?}"
    );
}
