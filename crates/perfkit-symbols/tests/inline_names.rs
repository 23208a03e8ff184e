//! Inline chains named as perf 6.1 names them: perf (built without libbfd, as Debian's)
//! asks GNU `addr2line -i -f` for each address, once, in the order it meets them, and
//! binutils' answer for the innermost function depends on what it was asked before. A
//! C++ program built here is asked address by address of its text, in the same order, of
//! `symbolize_chain` and of one `addr2line` process: the names must agree everywhere.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use perfkit_symbols::{Mapping, Options, ProcessMaps, Symbolizer, demangle};

const CXX_SOURCE: &str = r#"
#include <algorithm>
#include <map>
#include <string>
#include <vector>
int main(int argc, char **argv) {
    unsigned seed = argc;
    long sink = 0;
    for (int round = 0; round < argc; round++) {
        std::vector<long> v(2000);
        for (auto &x : v) x = (seed = seed * 1103515245 + 12345) % 100000;
        std::sort(v.begin(), v.end(), [](long a, long b) { return a % 977 < b % 977 || (a % 977 == b % 977 && a < b); });
        std::map<std::string, int> m;
        for (int i = 0; i < 50; i++) m[std::to_string(v[i])] += i;
        sink += m.size() + v[0];
    }
    return (int)sink & 1;
}
"#;

fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

fn skip(why: &str) {
    assert!(!ci(), "CI has g++ and binutils: {why}");
    eprintln!("skipping: {why}");
}

/// `.text`'s address range, from `readelf -S`.
fn text_range(exe: &Path) -> Option<(u64, u64)> {
    let out = Command::new("readelf").arg("-SW").arg(exe).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains(" .text "))?;
    let f: Vec<&str> = line
        .split(|c: char| c.is_whitespace() || c == ']')
        .filter(|s| !s.is_empty())
        .collect();
    let i = f.iter().position(|s| *s == ".text")?;
    let addr = u64::from_str_radix(f[i + 2], 16).ok()?;
    let size = u64::from_str_radix(f[i + 4], 16).ok()?;
    Some((addr, addr + size))
}

/// `addr2line -a -i -f`'s function names for each address, in the order asked.
fn addr2line_names(exe: &Path, addrs: &[u64]) -> Vec<Vec<String>> {
    let mut child = Command::new("addr2line")
        .args(["-a", "-i", "-f", "-e"])
        .arg(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("addr2line runs");
    let mut input = String::new();
    for a in addrs {
        input.push_str(&format!("{a:x}\n"));
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut all: Vec<Vec<String>> = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.starts_with("0x") && l.len() == 18 {
            all.push(Vec::new());
            continue;
        }
        // A record: the function, then its file:line.
        all.last_mut().unwrap().push(l.to_string());
        lines.next();
    }
    all
}

#[test]
fn inline_chain_names_follow_addr2line_state() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("prog.cpp");
    std::fs::write(&src, CXX_SOURCE).unwrap();
    let exe = dir.path().join("prog");
    match Command::new("g++")
        .args(["-O2", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => {}
        other => return skip(&format!("g++ unavailable or failed: {other:?}")),
    }
    if Command::new("addr2line").arg("--version").output().is_err() {
        return skip("no addr2line");
    }
    let (lo, hi) = text_range(&exe).expect("readelf shows .text");
    // gcc's PIE maps its text at file offset == vaddr: map the whole file at `base`.
    let base = 0x5555_5555_0000u64;
    let len = std::fs::metadata(&exe).unwrap().len();
    let maps = ProcessMaps::from_mappings([Mapping {
        start: base,
        end: base + len.next_multiple_of(4096),
        pgoff: 0,
        path: exe.display().to_string(),
        build_id: None,
    }]);
    let opts = Options {
        buildid_dir: Some(dir.path().join("no-buildid-cache")),
        debug_dirs: vec![dir.path().join("no-debug-dir")],
        perf_map_dir: dir.path().to_owned(),
        ..Options::default()
    };
    // The addresses perf would look up: those in a symbol with DWARF functions there.
    let mut probe = Symbolizer::new(opts.clone());
    let addrs: Vec<u64> = (lo..hi)
        .filter(|&a| {
            let f = probe.symbolize_chain(1, &maps, base + a);
            f.symbol.is_some() && !f.inlined.is_empty()
        })
        .collect();
    assert!(addrs.len() > 500, "only {} addresses", addrs.len());
    let theirs = addr2line_names(&exe, &addrs);
    assert_eq!(theirs.len(), addrs.len());
    let mut sym = Symbolizer::new(opts);
    let (mut elf_named_inline, mut dwarf_named_later) = (0, 0);
    let mut first_seen: std::collections::HashMap<String, String> = Default::default();
    for (&a, want) in addrs.iter().zip(&theirs) {
        let f = sym.symbolize_chain(1, &maps, base + a);
        let ours: Vec<String> = f
            .inlined
            .iter()
            .map(|i| i.function.as_deref().unwrap_or("??").to_string())
            .collect();
        let want: Vec<String> = want.iter().map(|n| demangle(n).into_owned()).collect();
        assert_eq!(ours, want, "at {a:#x}");
        let symbol = f.symbol.as_ref().unwrap().name.to_string();
        if ours.len() > 1 && ours[0] == symbol {
            elf_named_inline += 1;
            first_seen.insert(symbol.clone(), ours[1].clone());
        } else if ours.len() > 1 && first_seen.contains_key(&symbol) {
            dwarf_named_later += 1;
        }
    }
    // The stateful rule was exercised both ways: an inlined innermost function named by its
    // ELF symbol the first time, and by DWARF at later addresses of the same symbol.
    assert!(
        elf_named_inline > 0,
        "no inlined frame took its symbol's name"
    );
    assert!(
        dwarf_named_later > 0,
        "no later inlined frame kept its DWARF name"
    );
}
