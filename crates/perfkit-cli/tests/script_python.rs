//! `perfkit script -s FILE.py` against `perf script -s` 6.1 (built with libpython) on the
//! same perf recording: `process_event`, `trace_begin`/`trace_end`, and db-export mode as
//! perf's `script.sh` shell test drives it.

mod common;

use common::{have_perf, skip};
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn python() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn script(tool: &str, file: &Path, py: &Path) -> Output {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.arg("script")
        .arg("-i")
        .arg(file)
        .arg("-s")
        .arg(py)
        .output()
        .expect("script -s")
}

fn lines_with(o: &Output, prefix: &str) -> Vec<String> {
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn process_event_sees_perfs_samples() {
    if !have_perf() || !python() {
        return skip("perf or python3 is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "page-faults", "-c", "1", "-o"])
        .arg(&file)
        .args(["--", "ls", "/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let py = dir.path().join("events.py");
    std::fs::write(
        &py,
        "def trace_begin():\n    print('begin')\n\
         def process_event(d):\n    s = d['sample']\n    \
         print('ev %s %s %d %d %d %d' % (d['ev_name'], d['comm'], s['pid'], s['tid'], s['time'], s['period']))\n\
         def trace_end():\n    print('end')\n",
    )
    .unwrap();
    let perf = script("perf", &file, &py);
    let kit = script("perfkit", &file, &py);
    let evs = lines_with(&perf, "ev ");
    assert!(evs.len() > 10, "{perf:?}");
    assert_eq!(lines_with(&kit, "ev "), evs);
    assert_eq!(lines_with(&kit, "begin").len(), 1);
    assert_eq!(lines_with(&kit, "end").len(), 1);
    // The whole dictionary, in perf's key order (all but the mapping's build id and
    // range, which perfkit does not pass yet).
    std::fs::write(
        &py,
        "def process_event(d):\n    \
         print('ev', {k: v for k, v in d.items() if not k.startswith('dso_')})\n",
    )
    .unwrap();
    let perf = lines_with(&script("perf", &file, &py), "ev ");
    let kit = lines_with(&script("perfkit", &file, &py), "ev ");
    assert_eq!(kit.len(), perf.len());
    // Every line, PLT stubs included (`ls` faults in its own and libc's PLT).
    assert_eq!(kit, perf);
    assert!(perf.len() > 10);
}

/// What perf's `script.sh` does: db-export mode with callchains.
#[test]
fn db_export_tables_as_perf_script_sh_uses_them() {
    if !have_perf() || !python() {
        return skip("perf or python3 is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-g", "-o"])
        .arg(&file)
        .args(["--", "ls", "/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let py = dir.path().join("db_test.py");
    std::fs::write(
        &py,
        "perf_db_export_mode = True\nperf_db_export_calls = False\n\
         perf_db_export_callchains = True\n\n\
         def sample_table(*args):\n    print(f'sample_table({args})')\n\n\
         def call_path_table(*args):\n    print(f'call_path_table({args}')\n\n\
         def thread_table(*args):\n    print(f'thread_table({args})')\n",
    )
    .unwrap();
    let perf = script("perf", &file, &py);
    let kit = script("perfkit", &file, &py);
    // The same samples in the same order: time (field 9) and period (15) of each.
    let key = |l: &String| {
        let f: Vec<&str> = l.trim_end_matches("))").split(", ").collect();
        (f[9].to_string(), f[15].to_string(), f[10].to_string())
    };
    let (a, b) = (
        lines_with(&perf, "sample_table"),
        lines_with(&kit, "sample_table"),
    );
    assert!(!a.is_empty());
    assert_eq!(
        b.iter().map(key).collect::<Vec<_>>(),
        a.iter().map(key).collect::<Vec<_>>()
    );
    assert_eq!(
        b[0].split(", ").count(),
        a[0].split(", ").count(),
        "25 columns"
    );
    // Threads are exported with (id, machine, process, pid, tid) as perf does.
    let threads = |o: &Output| {
        lines_with(o, "thread_table")
            .iter()
            .map(|l| l.split(", ").skip(3).collect::<Vec<_>>().join(","))
            .collect::<Vec<_>>()
    };
    assert_eq!(threads(&kit), threads(&perf));
    assert!(!lines_with(&kit, "call_path_table").is_empty());
    // `perf version --build-options` says python scripts run, as script.sh checks.
    let v = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .args(["version", "--build-options"])
        .output()
        .unwrap();
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.lines().any(|l| l.contains("libpython: [ on  ]")), "{v}");
}

/// The script's own arguments come after `--` (perf takes them after the script's name);
/// options perfkit lacks are still refused, not passed to a script.
#[test]
fn script_arguments_and_unknown_options() {
    if !have_perf() || !python() {
        return skip("perf or python3 is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&file)
        .args(["--", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let py = dir.path().join("argv.py");
    std::fs::write(
        &py,
        "import sys\ndef trace_end():\n    print('argv', sys.argv[1:])\n",
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .arg("script")
        .arg("-i")
        .arg(&file)
        .arg("-s")
        .arg(&py)
        .args(["--", "a", "-b"])
        .output()
        .unwrap();
    assert_eq!(lines_with(&out, "argv"), ["argv ['a', '-b']"]);
    let perf = Command::new("perf")
        .arg("script")
        .arg("-i")
        .arg(&file)
        .arg("-s")
        .arg(&py)
        .args(["a", "-b"])
        .output()
        .unwrap();
    assert_eq!(lines_with(&perf, "argv"), ["argv ['a', '-b']"]);
    let out = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .args(["script", "--dsos", "x", "-i"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("perf's option --dsos is not supported yet")
    );
}

/// Tracepoint handlers get perf's arguments (common fields, then the event's own in
/// format order), and `trace_unhandled` perf's dictionary.
#[test]
fn tracepoint_handlers_get_perfs_arguments() {
    if !have_perf() || !python() {
        return skip("perf or python3 is not installed");
    }
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    if !Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        return skip("tracefs is not mounted and cannot be (needs root)");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let st = Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch",
            "-e",
            "sched:sched_process_exec",
            "-o",
        ])
        .arg(&file)
        .args(["--", "sh", "-c", "sleep 0.01; ls >/dev/null"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let py = dir.path().join("tp.py");
    std::fs::write(
        &py,
        "def sched__sched_switch(event_name, context, common_cpu, common_secs, common_nsecs, \
         common_pid, common_comm, common_callchain, prev_comm, prev_pid, prev_prio, prev_state, \
         next_comm, next_pid, next_prio):\n    \
         print('sw', event_name, common_cpu, common_secs, common_nsecs, common_pid, common_comm, \
         repr(prev_comm), prev_pid, prev_prio, prev_state, repr(next_comm), next_pid, next_prio)\n\
         def trace_unhandled(event_name, context, fields):\n    \
         print('unhandled', event_name, sorted(fields.items()))\n",
    )
    .unwrap();
    let perf = script("perf", &file, &py);
    let kit = script("perfkit", &file, &py);
    let sw = lines_with(&perf, "sw ");
    assert!(!sw.is_empty(), "{perf:?}");
    assert_eq!(lines_with(&kit, "sw "), sw);
    let unhandled = lines_with(&perf, "unhandled ");
    assert!(!unhandled.is_empty());
    assert_eq!(lines_with(&kit, "unhandled "), unhandled);
}

/// Every field of every sample as the script gets it (the repr of the whole dictionary:
/// kernel addresses past 2**63, callchain lists of dictionaries, attr and raw_buf bytes,
/// tracepoints' raw payloads) is the same text when `script` streams the samples as when
/// it keeps them (`PERFKIT_SCRIPT_KEEP=1`), and perf's for the fields perf has.
#[test]
fn every_field_as_kept_and_as_perf() {
    if !have_perf() || !python() {
        return skip("perf or python3 is not installed");
    }
    if !Path::new("/sys/kernel/tracing/events").exists() {
        let _ = Command::new("mount")
            .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
            .status();
    }
    let tracing = Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists();
    if !tracing {
        skip("tracefs is not mounted and cannot be (needs root): no tracepoint samples");
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("perf.data");
    let mut record = Command::new("perf");
    record.args(["record", "-q", "-g", "-e", "cpu-clock", "-F", "2000"]);
    if tracing {
        record.args(["-e", "sched:sched_switch"]);
    }
    let st = record
        .arg("-o")
        .arg(&file)
        .args([
            "--",
            "sh",
            "-c",
            "i=0; while [ $i -lt 40000 ]; do i=$((i+1)); done; sleep 0.01; ls / >/dev/null",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let py = dir.path().join("all.py");
    std::fs::write(&py, "def process_event(d):\n    print('ev', repr(d))\n").unwrap();
    let kit = lines_with(&script("perfkit", &file, &py), "ev ");
    let kept = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .env("PERFKIT_SCRIPT_KEEP", "1")
        .arg("script")
        .arg("-i")
        .arg(&file)
        .arg("-s")
        .arg(&py)
        .output()
        .expect("script -s");
    assert_eq!(kit, lines_with(&kept, "ev "));
    assert!(kit.len() > 20, "{} samples", kit.len());
    assert!(kit.iter().any(|l| l.contains("'callchain': [{")));
    assert!(kit.iter().any(|l| l.contains("'ip': 184467")));
    if tracing {
        assert!(
            kit.iter()
                .any(|l| l.contains("'ev_name': 'sched:sched_switch'"))
        );
        assert!(
            kit.iter()
                .any(|l| l.contains("'raw_buf': b'") && !l.contains("'raw_buf': b'',"))
        );
    }
    // perf's values: the dictionary but for the mapping's build id and range, which perfkit
    // does not pass, and each callchain entry's address, dso and symbol name (perfkit's
    // entries lack perf's `sym_off`, give a symbol's start as its end and binding 1, and name
    // the dso `[unknown]` where perf leaves it out). perf 6.1 hands `process_event` no tracepoint sample (perfkit
    // does, where the script has no handler for it), so those are left out.
    std::fs::write(
        &py,
        "def process_event(d):\n    \
         if ':' in d['ev_name']: return\n    \
         print('ev', repr({k: v for k, v in d.items() if not k.startswith('dso_') and k != 'callchain'}))\n    \
         print('cc', [(c['ip'], c.get('dso', '[unknown]'), c['sym']['name'] if 'sym' in c else None) \
         for c in d['callchain']])\n",
    )
    .unwrap();
    let perf = script("perf", &file, &py);
    let kit = script("perfkit", &file, &py);
    for prefix in ["ev ", "cc "] {
        let want = lines_with(&perf, prefix);
        assert!(want.len() > 20, "{perf:?}");
        assert_eq!(lines_with(&kit, prefix), want, "{prefix}lines");
    }
}
