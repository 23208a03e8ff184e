//! Unnamed code of a stripped library grouped per function from its `.eh_frame`: a
//! library whose two hot functions are static (no symbol once stripped), recorded by perf.
//! perf's report has one row per sampled address; `--unnamed function` (and the exports,
//! by default) has one row per function, named `libwork.so+0xSTART`, whose samples are
//! those of perf's address rows inside the function (bounds from `nm -S` of the same
//! build before stripping).

mod common;

use common::{have_perf, perfkit, stdout_ok};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

const LIB: &str = r#"
static volatile unsigned long sink;
__attribute__((noinline)) static void work_a(long n) { for (long i = 0; i < n; i++) { sink += i; __asm__ volatile(""); } }
__attribute__((noinline)) static void work_b(long n) { for (long i = 0; i < n; i++) { sink ^= i * 3; __asm__ volatile(""); } }
void run(long n) { work_a(n); work_b(n / 2); }
"#;
const MAIN: &str =
    "void run(long);\nint main(void) { for (int k = 0; k < 300; k++) run(1000000); return 0; }\n";

fn sh(dir: &Path, cmd: &str) -> Option<String> {
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// `(start, end)` of work_a and work_b, from `nm -S` before stripping.
fn bounds(nm: &str) -> Vec<(u64, u64)> {
    let mut v = Vec::new();
    for name in ["work_a", "work_b"] {
        let l = nm
            .lines()
            .find(|l| l.ends_with(&format!(" {name}")))
            .unwrap_or_else(|| panic!("{name} not in nm:\n{nm}"));
        let f: Vec<&str> = l.split_whitespace().collect();
        let start = u64::from_str_radix(f[0], 16).unwrap();
        let size = u64::from_str_radix(f[1], 16).unwrap();
        v.push((start, start + size));
    }
    v
}

/// `report -n --sort sym -g none` rows of libwork.so: symbol column → samples.
fn rows(text: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 4 && f[2] == "libwork.so" {
            *m.entry(f[3..].join(" ")).or_default() += f[1].parse::<u64>().unwrap();
        }
    }
    m
}

#[test]
fn stripped_code_is_grouped_per_function_where_eh_frame_bounds_it() {
    if !have_perf() {
        common::skip("perf is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("lib.c"), LIB).unwrap();
    std::fs::write(d.join("main.c"), MAIN).unwrap();
    let Some(nm) = sh(
        d,
        "cc -O1 -g -shared -fPIC -o libwork.so lib.c && nm -S libwork.so && strip libwork.so \
         && cc -O1 -o main main.c -L. -lwork -Wl,-rpath,$PWD",
    ) else {
        common::skip("no C compiler (cc, nm, strip) for the workload");
        return;
    };
    let funcs = bounds(&nm);
    let data = d.join("perf.data");
    sh(d, "perf record -q -g -o perf.data ./main >/dev/null 2>&1").expect("perf record");
    let args = [
        "report",
        "--stdio",
        "--no-children",
        "-g",
        "none",
        "-n",
        "--sort",
        "dso,sym",
    ];
    let perf_rows = rows(&common::perf_ok(&args, &data));
    assert!(
        perf_rows.len() > 2,
        "perf shows one row per address: {perf_rows:?}"
    );
    // The default stays perf's.
    let ours = rows(&stdout_ok(perfkit().args(args).arg("-i").arg(&data)));
    assert_eq!(ours, perf_rows, "perfkit's default rows are perf's");
    // Grouped: one row per function, with the samples of perf's rows inside it.
    let mut want = BTreeMap::new();
    for (sym, n) in &perf_rows {
        // A sample in the exported `run` keeps its name (it has a dynamic symbol).
        let Some(hex) = sym.strip_prefix("[.] 0x") else {
            *want.entry(sym.clone()).or_default() += n;
            continue;
        };
        let addr = u64::from_str_radix(hex, 16)
            .unwrap_or_else(|_| panic!("perf's row {sym:?} is an address"));
        let (start, _) = funcs
            .iter()
            .find(|&&(s, e)| addr >= s && addr < e)
            .unwrap_or_else(|| panic!("{addr:#x} is in neither function {funcs:x?}"));
        *want
            .entry(format!("[.] libwork.so+{start:#x}"))
            .or_default() += n;
    }
    let grouped = rows(&stdout_ok(
        perfkit()
            .args(args)
            .args(["--unnamed", "function", "-i"])
            .arg(&data),
    ));
    assert_eq!(grouped, want);
    // The folded export groups by default: its boxes are the functions, with their samples.
    let folded = stdout_ok(
        perfkit()
            .args(["report", "--format", "folded", "-i"])
            .arg(&data),
    );
    for (name, n) in want.iter().filter(|(k, _)| k.contains("libwork.so+0x")) {
        let name = name.trim_start_matches("[.] ");
        let total: u64 = folded
            .lines()
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(stack, _)| stack.ends_with(&format!(";{name}")))
            .map(|(_, c)| c.parse::<u64>().unwrap())
            .sum();
        assert_eq!(total, *n, "{name} in the folded stacks:\n{folded}");
    }
    // --unnamed address keeps perf's rows in an export too.
    let apart = stdout_ok(
        perfkit()
            .args(["report", "--format", "folded", "--unnamed", "address", "-i"])
            .arg(&data),
    );
    assert!(!apart.contains("libwork.so+0x"), "{apart}");
}
