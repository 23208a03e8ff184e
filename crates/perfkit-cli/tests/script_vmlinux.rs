//! `script -k/--vmlinux FILE` and `report -k`: kernel symbols from a vmlinux ELF file,
//! compared with perf 6.1 reading the same file. This machine has no vmlinux, so the test
//! links one: every text symbol of `/proc/kallsyms` at its address (renamed `vm_NAME`, so
//! that a name from the file cannot pass for one from kallsyms), in a `.text` at the
//! kernel's `_text`, with the running kernel's build id; and a second one with another
//! build id, which perf (and perfkit) then leave unused.

mod common;

use common::{have_perf, skip};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn run(tool: &str, args: &[&str]) -> Output {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    cmd.args(args).output().expect("run")
}

/// The assembly of a vmlinux naming kallsyms' text symbols; `None` without readable
/// kernel addresses.
fn vmlinux_source() -> Option<String> {
    let text = std::fs::read_to_string("/proc/kallsyms").ok()?;
    let mut syms: Vec<(u64, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (addr, ty, name) = (f.next()?, f.next()?, f.next()?);
            // Core kernel text only (modules have a fourth field).
            (f.next().is_none() && matches!(ty, "T" | "t"))
                .then(|| Some((u64::from_str_radix(addr, 16).ok()?, name)))?
        })
        .collect();
    let base = syms.iter().find(|s| s.1 == "_text")?.0;
    let end = syms.iter().find(|s| s.1 == "_etext")?.0;
    if base == 0 {
        return None;
    }
    syms.retain(|s| s.0 > base && s.0 < end);
    syms.sort();
    let mut out =
        String::from(".section .text,\"ax\"\n.globl _text\n_text:\n.globl _stext\n_stext:\n");
    let mut names = std::collections::HashSet::new();
    let mut last = 0;
    for (i, &(addr, name)) in syms.iter().enumerate() {
        let nm = format!("vm_{}", name.replace('.', "_"));
        if addr == last || !names.insert(nm.clone()) {
            continue;
        }
        last = addr;
        let next = syms[i + 1..]
            .iter()
            .find(|s| s.0 > addr)
            .map_or(16, |s| s.0 - addr);
        let _ = writeln!(
            out,
            ".org {:#x}\n.globl {nm}\n.type {nm},@function\n{nm}:\n.size {nm}, {next:#x}",
            addr - base
        );
    }
    let _ = writeln!(out, ".org {:#x}", end - base);
    Some(format!("# base {base:#x}\n{out}"))
}

/// Link `source` into `dir/name` with this build id (hex).
fn link(dir: &Path, source: &str, name: &str, build_id: &str) -> Option<PathBuf> {
    let base = source.lines().next()?.strip_prefix("# base ")?.to_string();
    let obj = dir.join("vmlinux.o");
    if !obj.exists() {
        let src = dir.join("vmlinux.S");
        std::fs::write(&src, source).ok()?;
        let st = Command::new("cc")
            .args(["-c", "-o"])
            .arg(&obj)
            .arg(&src)
            .stderr(Stdio::null())
            .status()
            .ok()?;
        if !st.success() {
            return None;
        }
    }
    let out = dir.join(name);
    let st = Command::new("ld")
        .arg(format!("-Ttext={base}"))
        .arg(format!("--build-id=0x{build_id}"))
        .args(["-e", "_text", "-o"])
        .arg(&out)
        .arg(&obj)
        .status()
        .ok()?;
    st.success().then_some(out)
}

#[test]
fn kernel_symbols_from_a_vmlinux_match_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let Some(source) = vmlinux_source() else {
        return skip("kernel addresses are hidden in /proc/kallsyms (not root?)");
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("k.data");
    let f = file.to_str().unwrap();
    let rec = run(
        "perf",
        &[
            "record",
            "-q",
            "-o",
            f,
            "-e",
            "cpu-clock",
            "-c",
            "100000",
            "--",
            "ls",
            "-R",
            "/usr/share/doc",
        ],
    );
    assert!(rec.status.success(), "{rec:?}");
    let id = String::from_utf8_lossy(&run("perf", &["buildid-list", "-k"]).stdout)
        .trim()
        .to_string();
    assert!(!id.is_empty(), "no kernel build id");
    let (Some(good), Some(bad)) = (
        link(dir.path(), &source, "vmlinux", &id),
        link(dir.path(), &source, "vmlinux.other", "0123456789abcdef"),
    ) else {
        return skip("no working cc/ld to link a vmlinux");
    };
    let same = |args: &[&str]| {
        let (perf, kit) = (run("perf", args), run("perfkit", args));
        assert!(perf.status.success(), "perf {args:?}: {perf:?}");
        assert!(kit.status.success(), "perfkit {args:?}: {kit:?}");
        let (a, b) = (
            String::from_utf8_lossy(&perf.stdout).into_owned(),
            String::from_utf8_lossy(&kit.stdout).into_owned(),
        );
        let strip = |s: &str| {
            s.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let (a_lines, b_lines) = (strip(&a), strip(&b));
        assert_eq!(a_lines.len(), b_lines.len(), "{args:?}");
        // Every line naming a vmlinux symbol is perf's; the others name none in either.
        // (A sample outside the vmlinux's text, in a BPF program or a trampoline, is
        // named as each tool names such addresses, which is not this test's subject.)
        if args[0] == "script" {
            for (x, y) in a_lines.iter().zip(&b_lines) {
                if x.contains(" vm_") || y.contains(" vm_") {
                    assert_eq!(y, x, "{args:?}");
                }
            }
        } else {
            let rows = |v: &[String]| {
                let mut r: Vec<String> = v.iter().filter(|l| l.contains(" vm_")).cloned().collect();
                r.sort();
                r
            };
            assert_eq!(rows(&b_lines), rows(&a_lines), "{args:?}");
        }
        a
    };
    let (g, b) = (good.to_str().unwrap(), bad.to_str().unwrap());
    for k in ["-k", "--vmlinux"] {
        let out = same(&["script", "-i", f, k, g, "-F", "comm,tid,ip,sym,symoff,dso"]);
        assert!(out.contains(" vm_"), "no symbol from the vmlinux:\n{out}");
    }
    let report = same(&["report", "-i", f, "-k", g, "--stdio"]);
    assert!(report.contains("[k] vm_"), "{report}");
    // Another kernel's vmlinux: kernel addresses unnamed, in both.
    let out = same(&["script", "-i", f, "-k", b, "-F", "comm,tid,ip,sym,dso"]);
    assert!(!out.contains(" vm_"), "{out}");
    // A file that is not there: refused by both.
    let args = ["script", "-i", f, "-k", "/nonexistent/vmlinux"];
    assert!(!run("perf", &args).status.success());
    let kit = run("perfkit", &args);
    assert!(!kit.status.success());
    assert!(String::from_utf8_lossy(&kit.stderr).contains("Invalid file: /nonexistent/vmlinux"));
}
