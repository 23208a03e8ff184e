//! Tracepoints end to end against perf 6.1: files perfkit records carry the tracing data
//! (HEADER_TRACING_DATA) perf needs to format them, in file and pipe mode; `perfkit script`
//! prints the same lines as `perf script` for them and for perf's own files.

mod common;

use common::{have_perf, perf_ok, perfkit, run_ok, stdout_ok};
use std::path::Path;
use std::process::Stdio;

/// perf and tracefs, or a printed reason to skip.
fn ready() -> bool {
    if !have_perf() {
        common::skip("perf is not installed");
        return false;
    }
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = std::process::Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        common::skip("tracefs is not mounted and cannot be (needs root)");
        return false;
    }
    true
}

fn perf_script(input: &Path, stdin_file: bool) -> (String, String) {
    let mut c = std::process::Command::new("perf");
    c.arg("script");
    if stdin_file {
        c.args(["-i", "-"])
            .stdin(std::fs::File::open(input).unwrap());
    } else {
        c.arg("-i").arg(input).stdin(Stdio::null());
    }
    let out = c.output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn perfkit_script(input: &Path) -> String {
    stdout_ok(perfkit().args(["script", "-q", "-i"]).arg(input))
}

/// The `event: fields` part of each tracepoint line.
fn trace_parts(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| {
            ["sched:", "raw_syscalls:", "sock:", "tcp:"]
                .iter()
                .any(|e| l.contains(e))
        })
        .map(|l| {
            let i = l.find(": ").map_or(0, |i| i + 2);
            l[i..].split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

/// The (perfkit, perf) line pairs that differ, the line counts being equal; counted and
/// the first few shown.
fn differing_lines<'a>(ours: &'a str, theirs: &'a str, what: &str) -> Vec<(&'a str, &'a str)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (ours.lines().collect(), theirs.lines().collect());
    assert_eq!(a.len(), b.len(), "{what}: line counts");
    let differ: Vec<(&str, &str)> = a.into_iter().zip(b).filter(|(x, y)| x != y).collect();
    eprintln!(
        "{what}: {} lines, {} differ",
        ours.lines().count(),
        differ.len()
    );
    for (x, y) in differ.iter().take(5) {
        eprintln!("  perfkit: {x}\n  perf:    {y}");
    }
    differ
}

/// Lines equal, whole.
fn assert_same_lines(ours: &str, theirs: &str, what: &str) {
    let differ = differing_lines(ours, theirs, what);
    assert!(
        differ.is_empty(),
        "{what}: {} of {} lines differ",
        differ.len(),
        ours.lines().count()
    );
}

const WORKLOAD: &[&str] = &[
    "sh",
    "-c",
    "for i in 1 2 3 4 5; do ls / >/dev/null; done; sleep 0.05",
];

#[test]
fn perfkit_tracepoint_files_are_formatted_by_perf_and_by_perfkit_alike() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tp.data");
    run_ok(
        perfkit()
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch",
                "-e",
                "sched:sched_process_exec",
                "-e",
                "raw_syscalls:sys_enter",
                "--filter",
                "id == 39 || id == 257",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .args(WORKLOAD),
    );
    let (theirs, err) = perf_script(&file, false);
    assert!(!err.contains("Error"), "perf script complained: {err}");
    let ours = perfkit_script(&file);
    let parts = trace_parts(&theirs);
    // perf formats every sample: exec of ls with its filename, syscalls with their args.
    assert!(
        parts.iter().any(
            |l| l.starts_with("sched:sched_process_exec: filename=/usr/bin/ls")
                || l.starts_with("sched:sched_process_exec: filename=/bin/ls")
        ),
        "{theirs}"
    );
    assert!(
        parts
            .iter()
            .any(|l| l.starts_with("raw_syscalls:sys_enter: NR 257 (")),
        "{theirs}"
    );
    // The filter kept only getpid (39) and openat (257).
    assert!(
        parts
            .iter()
            .filter(|l| l.starts_with("raw_syscalls:"))
            .all(|l| l.contains("NR 39 ") || l.contains("NR 257 ")),
        "{theirs}"
    );
    assert_same_lines(&ours, &theirs, "perfkit file");
    // perf report opens it.
    assert!(perf_ok(&["report", "--stdio"], &file).contains("sched:sched_switch"));
}

#[test]
fn pipe_mode_carries_the_tracing_data() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pipe.data");
    let out = run_ok(
        perfkit()
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch",
                "-a",
                "-o",
                "-",
                "--",
            ])
            .args(WORKLOAD),
    );
    std::fs::write(&file, &out.stdout).unwrap();
    let (theirs, err) = perf_script(&file, true);
    assert!(!err.contains("Error"), "perf script complained: {err}");
    assert!(
        trace_parts(&theirs)
            .iter()
            .all(|l| l.contains("prev_comm="))
    );
    assert!(!theirs.is_empty());
    assert_same_lines(&perfkit_script(&file), &theirs, "perfkit pipe");
}

#[test]
fn perfs_own_tracepoint_files_print_the_same() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    run_ok(
        assert_cmd::Command::new("perf")
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch",
                "-e",
                "raw_syscalls:sys_enter",
                "-o",
            ])
            .arg(&file)
            .arg("--")
            .args(WORKLOAD),
    );
    let (theirs, _) = perf_script(&file, false);
    assert!(trace_parts(&theirs).len() > 10, "{theirs}");
    assert_same_lines(&perfkit_script(&file), &theirs, "perf file");
    // JSON: the fields by name.
    let first = stdout_ok(perfkit().args(["script", "-q", "--json", "-i"]).arg(&file))
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|o| o["event"] == "sched:sched_switch")
        .expect("a sched_switch sample");
    assert!(first["fields"]["prev_pid"].is_number(), "{first}");
    assert!(first["fields"]["next_comm"].is_string(), "{first}");
    assert!(
        first["trace"].as_str().unwrap().starts_with("prev_comm="),
        "{first}"
    );
}

/// TCP over IPv4 and IPv6 on loopback: socket tracepoints whose print fmts use the kernel's
/// `%pI4`, `%pI6c` and `%pISpc` extensions.
const SOCKETS: &str = "
import socket
for fam, host in ((socket.AF_INET, '127.0.0.1'), (socket.AF_INET6, '::1')):
    s = socket.socket(fam); s.bind((host, 0)); s.listen()
    c = socket.create_connection((host, s.getsockname()[1])); a, _ = s.accept()
    c.close(); a.close(); s.close()
";

#[test]
fn socket_addresses_print_as_perf_prints_them() {
    if !ready() {
        return;
    }
    if !std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("skipped: python3 (the socket workload) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let events = [
        "-e",
        "sock:inet_sock_set_state",
        "-e",
        "tcp:tcp_destroy_sock",
    ];
    for (who, file) in [("perf", "perf.data"), ("perfkit", "perfkit.data")] {
        let file = dir.path().join(file);
        let mut cmd = if who == "perf" {
            assert_cmd::Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(
            cmd.args(["record", "-q", "-a"])
                .args(events)
                .arg("-o")
                .arg(&file)
                .args(["--", "python3", "-c", SOCKETS]),
        );
        let (theirs, _) = perf_script(&file, false);
        let parts = trace_parts(&theirs);
        assert!(
            parts
                .iter()
                .any(|l| l.contains("saddr=127.0.0.1") && l.contains("::ffff:127.0.0.1")),
            "{who}: {theirs}"
        );
        assert!(
            parts.iter().any(|l| l.contains("saddrv6=::1")),
            "{who}: {theirs}"
        );
        assert_same_lines(&perfkit_script(&file), &theirs, &format!("{who} file"));
    }
}

/// A system-wide recording of many subsystems' tracepoints (kernel symbols through `%pS`,
/// printk strings, flag and symbol tables, unsigned comparisons): `perfkit script` prints
/// every line as `perf script` does, except two fields that libtraceevent evaluates
/// wrongly, where perfkit prints what the kernel itself prints:
/// `timer:timer_start`'s `flags & (A | B | C | D)` (perf: `(flags & A) | B | C | D`) and
/// `kmem:mm_page_alloc_extfrag`'s `fragmenting` (`order < (a < b ? a : b)`).
#[test]
fn many_subsystems_print_as_perf_prints_them() {
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("many.data");
    let mut cmd = assert_cmd::Command::new("perf");
    cmd.args(["record", "-q", "-a", "-o"]).arg(&file);
    for e in [
        "sched:*",
        "timer:*",
        "irq:*",
        "kmem:kmalloc",
        "kmem:kfree",
        "kmem:mm_page_alloc",
        "kmem:mm_page_alloc_extfrag",
        "workqueue:*",
        "writeback:*",
        "rcu:*",
        "ipi:*",
        "mmap:*",
        "signal:*",
        "task:*",
    ] {
        cmd.args(["-e", e]);
    }
    let dd = format!(
        "dd if=/dev/zero of={} bs=64k count=64 conv=fsync 2>/dev/null; ls -R /usr/share/doc >/dev/null",
        dir.path().join("dd.out").display()
    );
    run_ok(cmd.args(["--", "sh", "-c", &dd]));
    let (theirs, _) = perf_script(&file, false);
    let ours = perfkit_script(&file);
    let lines = ours.lines().count();
    assert!(lines > 1000, "{lines} lines");
    let differ = differing_lines(
        &ours,
        &theirs,
        "many subsystems (differences only in libtraceevent's two mis-evaluated fields)",
    );
    // Equal once the mis-evaluated field's value is taken out.
    let without = |l: &str, field: &str| match l.split_once(field) {
        Some((head, tail)) => format!("{head}{}", tail.split_once(' ').map_or("", |t| t.1)),
        None => l.to_string(),
    };
    for &(x, y) in &differ {
        let field = if y.contains("timer:timer_start:") {
            " flags="
        } else if y.contains("kmem:mm_page_alloc_extfrag:") {
            " fragmenting="
        } else {
            panic!("perfkit: {x}\nperf:    {y}")
        };
        assert_eq!(without(x, field), without(y, field), "{field}");
    }
    // The formats used the kernel's symbols and printk strings, as perf did.
    assert!(
        theirs
            .lines()
            .any(|l| l.contains("call_site=") && l.contains("+0x"))
    );
    assert!(
        ours.lines()
            .filter(|l| l.contains("rcu:rcu_utilization:"))
            .all(|l| l.contains(" Start ") || l.contains(" End ")),
        "rcu_utilization prints its printk strings"
    );
}
