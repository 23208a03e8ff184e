//! Equal call-graph siblings in perf 6.1's order when one library is loaded at other
//! addresses in other processes. perf orders named siblings by the symbol's start in its
//! file (`sym->start` in `match_chain_dso_addresses`), never by where a process loaded it:
//! two processes each call `getppid` 200 times through `via_a` or `via_b` of one library,
//! the second with another library preloaded so that its copy sits lower in memory than the
//! first's. Each branch weighs exactly as much (a tracepoint counts each call), so only the
//! order rule decides, and the load addresses put the two functions in the opposite order
//! to the file's.

mod common;

use common::{have_perf, perf_ok, perfkit, skip, stdout_ok};
use std::path::Path;
use std::process::Command;

const LIB: &str = r#"
#include <unistd.h>
__attribute__((noinline)) long wrap(int i) {
    long r = getppid();
    __asm__ volatile("" ::: "memory");
    return r + i;
}
__attribute__((noinline)) long via_a(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += wrap(i);
    return s;
}
__attribute__((noinline)) long via_b(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += wrap(i) ^ i;
    return s;
}
"#;

const PROG: &str = r#"
long via_a(int);
long via_b(int);
int main(int argc, char **argv) {
    return (int)((argv[1][0] == 'a' ? via_a(200) : via_b(200)) & 1);
}
"#;

fn gcc(dir: &Path, args: &[&str]) -> bool {
    Command::new("gcc")
        .current_dir(dir)
        .args(["-O1", "-fno-omit-frame-pointer"])
        .args(args)
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn siblings_of_a_library_loaded_apart_keep_perfs_order() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    if !Path::new("/sys/kernel/tracing/events/syscalls/sys_enter_getppid").exists() {
        return skip("tracefs is not mounted");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("foo.c"), LIB).unwrap();
    std::fs::write(dir.join("prog.c"), PROG).unwrap();
    let rpath = format!("-Wl,-rpath,{}", dir.display());
    if !gcc(dir, &["-shared", "-fPIC", "-o", "libfoo.so", "foo.c"])
        || !gcc(dir, &["-o", "prog", "prog.c", "-L.", "-lfoo", &rpath])
    {
        return skip("gcc is missing");
    }
    // A library to preload, which the second process maps before libfoo.
    let libm = Command::new("gcc")
        .arg("-print-file-name=libm.so.6")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    assert!(Path::new(&libm).is_absolute(), "no libm.so.6: {libm:?}");
    let data = dir.join("t.data");
    let script = format!("setarch -R ./prog a && LD_PRELOAD={libm} setarch -R ./prog b",);
    let st = Command::new("perf")
        .current_dir(dir)
        .args([
            "record",
            "-q",
            "-g",
            "-e",
            "syscalls:sys_enter_getppid",
            "-o",
        ])
        .arg(&data)
        .args(["--", "sh", "-c", &script])
        .status()
        .unwrap();
    assert!(st.success(), "perf record");
    // The case this is about: each function exactly 200 times, and the library's code
    // mapped lower in the second process (via_b's) than in the first (via_a's), so that
    // the load addresses order the two functions against their order in the file.
    let chains = perf_ok(&["script", "-F", "ip,sym"], &data);
    let count = |f: &str| {
        chains
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some(f))
            .count()
    };
    assert_eq!((count("via_a"), count("via_b")), (200, 200), "{chains}");
    let mmaps = perf_ok(&["script", "--show-mmap-events"], &data);
    let bases: Vec<u64> = mmaps
        .lines()
        .filter(|l| {
            l.contains("PERF_RECORD_MMAP") && l.contains("r-xp") && l.ends_with("libfoo.so")
        })
        .filter_map(|l| {
            let hex = l.split("[0x").nth(1)?.split('(').next()?;
            u64::from_str_radix(hex, 16).ok()
        })
        .collect();
    assert_eq!(bases.len(), 2, "{mmaps}");
    assert!(bases[0] > bases[1], "libfoo's code at {bases:x?}");
    for args in [
        &["report", "--stdio", "--no-children"][..],
        &["report", "--stdio", "--children"],
        &["report", "--stdio", "--no-children", "-g", "fractal"],
        &["report", "--stdio", "--no-children", "-g", "caller"],
    ] {
        let keep = |s: &str| -> String {
            s.lines()
                .filter(|l| !l.starts_with("# ("))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let perf = keep(&perf_ok(args, &data));
        let ours = keep(&stdout_ok(perfkit().args(args).arg("-i").arg(&data)));
        assert_eq!(ours, perf, "{args:?}");
        // perf's order is the file's, the later start first.
        if args.len() == 3 {
            let (ia, ib) = (perf.find("--via_a"), perf.find("--via_b"));
            assert!(ia.is_some() && ib.is_some() && ib < ia, "{perf}");
        }
    }
}
