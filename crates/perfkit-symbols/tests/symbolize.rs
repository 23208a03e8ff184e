//! Symbolization against real binaries on this machine: this test executable, libc, a C
//! program compiled here (debug info, stripped copy, build-id caches), kallsyms, perf maps.

use std::path::{Path, PathBuf};
use std::process::Command;

use perfkit_symbols::{
    Mapping, Options, PerfMap, ProcessMaps, Symbolizer, UnknownReason, build_id_hex,
    parse_proc_maps, read_proc_maps,
};

#[inline(never)]
fn known_rust_function(x: u64) -> u64 {
    std::hint::black_box(x).wrapping_mul(0x9e37_79b9) ^ 7
}

fn opts_in(tmp: &Path) -> Options {
    Options {
        buildid_dir: Some(tmp.join("no-buildid-cache")),
        debug_dirs: vec![tmp.join("no-debug-dir")],
        perf_map_dir: tmp.to_owned(),
        ..Options::default()
    }
}

#[test]
fn rust_function_in_this_executable() {
    assert_eq!(known_rust_function(1), 0x9e37_79b9 ^ 7);
    let maps = read_proc_maps(0).unwrap();
    let f = known_rust_function as fn(u64) -> u64 as usize as u64;
    let mut sym = Symbolizer::new(Options::default());
    let pid = std::process::id();
    for off in [0u64, 1, 5] {
        let frame = sym.symbolize(pid, &maps, f + off);
        let s = frame
            .symbol
            .as_ref()
            .unwrap_or_else(|| panic!("no symbol: {frame:?}"));
        assert_eq!(&*s.name, "symbolize::known_rust_function", "{frame:?}");
        assert_eq!(s.offset, off);
        assert!(s.size > off);
        assert!(frame.dso.contains("symbolize-"), "{}", frame.dso);
        assert_eq!(frame.unknown_reason, None);
    }
    // Memoized: identical answer, one file loaded for all lookups.
    let a = sym.symbolize(pid, &maps, f + 1);
    let b = sym.symbolize(pid, &maps, f + 1);
    assert_eq!(a, b);
    // Without demangling the raw mangled name comes back.
    let mut raw = Symbolizer::new(Options {
        demangle: false,
        ..Options::default()
    });
    let n = raw.symbolize(pid, &maps, f).symbol.unwrap().name;
    assert!(n.starts_with("_ZN") || n.starts_with("_R"), "{n}");
    assert!(n.contains("known_rust_function"));
}

#[test]
fn libc_function_through_dynsym() {
    let maps = read_proc_maps(0).unwrap();
    let f = libc::getpid as unsafe extern "C" fn() -> libc::pid_t as usize as u64;
    let m = maps.find(f).expect("getpid is mapped");
    assert!(m.path.contains("libc"), "{}", m.path);
    let mut sym = Symbolizer::new(Options::default());
    let frame = sym.symbolize(std::process::id(), &maps, f + 2);
    let s = frame.symbol.expect("getpid symbol");
    // glibc exports getpid under aliases (__getpid); either is the right function.
    assert!(s.name.ends_with("getpid"), "{}", s.name);
    assert_eq!(s.offset, 2);
    assert_eq!(&*frame.dso, m.path.as_str());
}

#[test]
fn vdso_from_own_process() {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap();
    let entries = parse_proc_maps(&text, "maps").unwrap();
    let Some(v) = entries.iter().find(|e| e.mapping.path == "[vdso]") else {
        eprintln!("skipping: no [vdso] mapping");
        return;
    };
    // Find __vdso_getcpu or clock_gettime by symbolizing every 16 bytes of the vDSO.
    let tmp = tempfile::tempdir().unwrap();
    let mut sym = Symbolizer::new(opts_in(tmp.path()));
    let maps = ProcessMaps::from_mappings([v.mapping.clone()]);
    let names: Vec<String> = (v.mapping.start..v.mapping.end)
        .step_by(16)
        .filter_map(|a| {
            sym.symbolize(1, &maps, a)
                .symbol
                .map(|s| s.name.to_string())
        })
        .collect();
    assert!(
        names.iter().any(|n| n.contains("clock_gettime")),
        "{names:?}"
    );
}

#[test]
fn unknown_reasons() {
    let tmp = tempfile::tempdir().unwrap();
    let mut sym = Symbolizer::new(opts_in(tmp.path()));
    let maps = ProcessMaps::from_mappings([Mapping {
        start: 0x40_0000,
        end: 0x50_0000,
        pgoff: 0,
        path: "/nonexistent/binary".into(),
        build_id: None,
    }]);
    let f = sym.symbolize(1, &maps, 0x40_1000);
    assert_eq!(f.unknown_reason, Some(UnknownReason::FileMissing));
    assert_eq!(&*f.dso, "/nonexistent/binary");
    assert_eq!(f.name(), "[unknown]");
    let f = sym.symbolize(1, &maps, 0x60_0000);
    assert_eq!(f.unknown_reason, Some(UnknownReason::NoMapping));
    assert_eq!(&*f.dso, "[unknown]");
    // A file that is not ELF.
    let txt = tmp.path().join("notelf");
    std::fs::write(&txt, "hello").unwrap();
    let m = Mapping {
        start: 0x1000,
        end: 0x2000,
        pgoff: 0,
        path: txt.display().to_string(),
        build_id: None,
    };
    assert_eq!(
        sym.symbolize_in_mapping(&m, 0x1000).unknown_reason,
        Some(UnknownReason::NotElf)
    );
    // Anonymous memory without a JIT map.
    let anon = ProcessMaps::from_mappings([Mapping {
        start: 0x7000_0000,
        end: 0x7000_1000,
        pgoff: 0,
        path: "//anon".into(),
        build_id: None,
    }]);
    let f = sym.symbolize(4242, &anon, 0x7000_0010);
    assert_eq!(f.unknown_reason, Some(UnknownReason::NoJitSymbol));
    assert_eq!(perfkit_symbols::dso_short_name(&f.dso), "[JIT] tid 4242");
}

#[test]
fn jit_perf_map() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("perf-777.map"),
        "7f0000001000 40 LazyCompile:~foo app.js:1\n7f0000002000 100 Builtin:bar\n",
    )
    .unwrap();
    let mut sym = Symbolizer::new(opts_in(tmp.path()));
    let maps = ProcessMaps::from_mappings([Mapping {
        start: 0x7f00_0000_0000,
        end: 0x7f00_0001_0000,
        pgoff: 0,
        path: "//anon".into(),
        build_id: None,
    }]);
    let f = sym.symbolize(777, &maps, 0x7f00_0000_1010);
    let s = f.symbol.unwrap();
    assert_eq!(&*s.name, "LazyCompile:~foo app.js:1");
    assert_eq!(s.offset, 0x10);
    assert_eq!(
        &*f.dso,
        tmp.path().join("perf-777.map").display().to_string()
    );
    assert_eq!(perfkit_symbols::dso_short_name(&f.dso), "[JIT] tid 777");
    assert_eq!(
        perfkit_symbols::dso_short_name("/usr/lib/libc.so.6"),
        "libc.so.6"
    );
    assert_eq!(
        perfkit_symbols::dso_short_name("[kernel.kallsyms]"),
        "[kernel.kallsyms]"
    );
    // Addresses outside any mapping still consult the JIT map.
    let f = sym.symbolize(777, &ProcessMaps::new(), 0x7f00_0000_2004);
    assert_eq!(f.symbol.unwrap().name.as_ref(), "Builtin:bar");
    assert!(
        PerfMap::from_file(&tmp.path().join("perf-777.map"))
            .unwrap()
            .len()
            == 2
    );
    // A broken map is reported once in diagnostics, and lookups say NoJitSymbol.
    std::fs::write(tmp.path().join("perf-778.map"), "zz 10 x\n").unwrap();
    let f = sym.symbolize(778, &maps, 0x7f00_0000_1010);
    assert_eq!(f.unknown_reason, Some(UnknownReason::NoJitSymbol));
    assert!(
        sym.diagnostics()
            .iter()
            .any(|d| d.contains("perf-778.map:1")),
        "{:?}",
        sym.diagnostics()
    );
}

#[test]
fn kernel_symbols_from_fixture_and_hidden() {
    let tmp = tempfile::tempdir().unwrap();
    let k = tmp.path().join("kallsyms");
    std::fs::write(
        &k,
        "ffffffff81000000 T _text\nffffffff81001000 T schedule\nffffffff81001080 t __schedule\n\
         ffffffffc0001000 t nft_do_chain\t[nf_tables]\n",
    )
    .unwrap();
    let mut sym = Symbolizer::new(Options {
        kallsyms: k.clone(),
        ..opts_in(tmp.path())
    });
    let f = sym.symbolize(1, &ProcessMaps::new(), 0xffffffff81001004);
    assert_eq!(f.symbol.as_ref().unwrap().name.as_ref(), "schedule");
    assert_eq!(f.symbol.unwrap().offset, 4);
    assert_eq!(&*f.dso, "[kernel.kallsyms]");
    let f = sym.symbolize(1, &ProcessMaps::new(), 0xffffffffc0001008);
    assert_eq!(f.name(), "nft_do_chain");
    assert_eq!(&*f.dso, "[nf_tables]");
    assert!(!sym.kernel_hidden());

    let z = tmp.path().join("kallsyms0");
    std::fs::write(
        &z,
        "0000000000000000 T _text\n0000000000000000 T schedule\n",
    )
    .unwrap();
    let mut sym = Symbolizer::new(Options {
        kallsyms: z,
        ..opts_in(tmp.path())
    });
    let f = sym.symbolize_kernel(0xffffffff81001004);
    assert_eq!(f.unknown_reason, Some(UnknownReason::KernelHidden));
    assert!(sym.kernel_hidden());
    assert!(
        sym.diagnostics()[0].contains("kptr_restrict"),
        "{:?}",
        sym.diagnostics()
    );

    let mut sym = Symbolizer::new(Options {
        kallsyms: tmp.path().join("missing"),
        ..opts_in(tmp.path())
    });
    assert_eq!(
        sym.symbolize_kernel(0xffffffff81001004).unknown_reason,
        Some(UnknownReason::KernelSymbolsUnavailable)
    );
}

#[test]
fn real_kernel_schedule() {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
        eprintln!("skipping: /proc/kallsyms unreadable");
        return;
    };
    let Some(addr) = text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let a = f.next()?;
        let _t = f.next()?;
        (f.next()? == "schedule")
            .then(|| u64::from_str_radix(a, 16).ok())
            .flatten()
    }) else {
        eprintln!("skipping: no schedule in /proc/kallsyms");
        return;
    };
    let mut sym = Symbolizer::new(Options::default());
    if addr == 0 {
        assert!(sym.kernel_hidden());
        eprintln!(
            "skipping: kernel symbols hidden: {}",
            perfkit_symbols::kernel_hidden_hint()
        );
        return;
    }
    let f = sym.symbolize_kernel(addr + 3);
    assert_eq!(f.name(), "schedule");
    assert_eq!(f.symbol.unwrap().offset, 3);
}

// ---- a C program compiled here ----

const C_SOURCE: &str = r#"#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) int inl(int x) {
    return x * 3 + 1;
}
__attribute__((noinline)) int target_fn(int x) {
    int y = inl(x);
    return y + 2;
}
int main(int argc, char **argv) {
    printf("%p\n", (void *)target_fn);
    fflush(stdout);
    FILE *f = fopen("/proc/self/maps", "r");
    char line[4096];
    while (fgets(line, sizeof line, f)) fputs(line, stdout);
    return target_fn(argc) > 1000;
}
/* Aliases as glibc has them (fstatat64: __GI___fstatat64 and __fstatat64 local, fstatat64
   weak): perf names the address __GI___impl_fn. */
static __attribute__((noinline, used)) int __impl_fn(int x) { return x * 7; }
static __attribute__((used)) int __GI___impl_fn(int) __attribute__((alias("__impl_fn")));
int impl_fn(int) __attribute__((weak, alias("__impl_fn")));
"#;
const TARGET_LINE: u32 = 6;
const INL_BODY_LINE: u32 = 4;

struct CProgram {
    dir: tempfile::TempDir,
    exe: PathBuf,
    addr: u64,
    maps: ProcessMaps,
}

fn build_c_program() -> Option<CProgram> {
    let dir = tempfile::tempdir().ok()?;
    let src = dir.path().join("prog.c");
    std::fs::write(&src, C_SOURCE).ok()?;
    let exe = dir.path().join("prog");
    match Command::new("cc")
        .args(["-g", "-O0", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => {}
        other => {
            eprintln!("skipping: cc unavailable or failed: {other:?}");
            return None;
        }
    }
    let out = Command::new(&exe).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let addr = u64::from_str_radix(lines.next()?.trim_start_matches("0x"), 16).ok()?;
    let rest: String = lines.map(|l| format!("{l}\n")).collect();
    let entries = parse_proc_maps(&rest, "prog maps").ok()?;
    let maps = ProcessMaps::from_mappings(
        entries
            .into_iter()
            .filter(|e| e.executable)
            .map(|e| e.mapping),
    );
    Some(CProgram {
        dir,
        exe,
        addr,
        maps,
    })
}

fn elf_build_id(path: &Path) -> Vec<u8> {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let hex = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .expect("build id note");
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn c_program_symbols_srcline_and_inline() {
    let Some(p) = build_c_program() else { return };
    let tmp = p.dir.path();
    let mut sym = Symbolizer::new(Options {
        srcline: true,
        inline: true,
        ..opts_in(tmp)
    });
    let f = sym.symbolize(1, &p.maps, p.addr);
    let s = f.symbol.clone().unwrap_or_else(|| panic!("{f:?}"));
    assert_eq!(&*s.name, "target_fn");
    assert_eq!(s.offset, 0);
    assert_eq!(&*f.dso, p.exe.display().to_string());
    let line = f.srcline.clone().expect("srcline");
    assert!(line.file.ends_with("prog.c"), "{line}");
    assert_eq!(line.line, TARGET_LINE);
    // Somewhere in target_fn the always_inline `inl` was inlined: its body line, and the
    // chain names it.
    let mut saw_inline = false;
    for a in p.addr..p.addr + s.size {
        let f = sym.symbolize(1, &p.maps, a);
        if let Some(first) = f.inlined.first() {
            assert_eq!(first.function.as_deref(), Some("inl"), "{f:?}");
            assert_eq!(
                first.srcline.as_ref().map(|l| l.line),
                Some(INL_BODY_LINE),
                "{f:?}"
            );
            assert_eq!(f.srcline.as_ref().map(|l| l.line), Some(INL_BODY_LINE));
            assert_eq!(f.name(), "target_fn");
            saw_inline = true;
        }
    }
    assert!(saw_inline, "no address of target_fn reports inlined inl()");
}

#[test]
fn c_program_plt_stubs_named_like_perf() {
    let Some(p) = build_c_program() else { return };
    let out = Command::new("objdump").arg("-d").arg(&p.exe).output();
    let Ok(out) = out else {
        eprintln!("skipping: no objdump");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // objdump's own PLT names are the oracle: "0000000000001030 <puts@plt>:"
    let plts: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            (name.ends_with("@plt"))
                .then(|| Some((u64::from_str_radix(addr, 16).ok()?, name.to_owned())))
                .flatten()
        })
        .collect();
    assert!(!plts.is_empty(), "objdump shows no PLT entries");
    let exe = p.exe.display().to_string();
    let m = p.maps.iter().find(|m| m.path == exe).unwrap().clone();
    let mut sym = Symbolizer::new(opts_in(p.dir.path()));
    let mut checked = 0;
    for (vaddr, name) in plts {
        // .plt.got entries are not named by us (objdump decodes their jumps).
        let probe = Command::new("readelf")
            .arg("-SW")
            .arg(&p.exe)
            .output()
            .unwrap();
        let sections = String::from_utf8_lossy(&probe.stdout).to_string();
        let in_plt_got = sections.lines().any(|l| {
            l.contains(".plt.got") && {
                let f: Vec<&str> = l.split_whitespace().collect();
                let i = f.iter().position(|x| *x == ".plt.got").unwrap();
                let start = u64::from_str_radix(f[i + 2], 16).unwrap();
                let size = u64::from_str_radix(f[i + 4], 16).unwrap();
                (start..start + size).contains(&vaddr)
            }
        });
        if in_plt_got {
            continue;
        }
        // gcc's PIE: text segment vaddr == file offset, so runtime = start - pgoff + vaddr.
        let addr = m.start - m.pgoff + vaddr + 4;
        let f = sym.symbolize_in_mapping(&m, addr);
        assert_eq!(f.name(), name, "{f:?}");
        assert_eq!(f.symbol.unwrap().offset, 4);
        checked += 1;
    }
    assert!(checked >= 2, "puts and printf stubs expected");
}

#[test]
fn c_program_build_id_lookup_and_mismatch() {
    let Some(p) = build_c_program() else { return };
    let tmp = p.dir.path();
    let id = elf_build_id(&p.exe);
    let hex = build_id_hex(&id);
    let exe_path = p.exe.display().to_string();
    let base_mapping = p
        .maps
        .iter()
        .find(|m| m.path == exe_path && m.contains(p.addr))
        .unwrap()
        .clone();

    // 1. The recorded build id matches the file (perf pads it to 20 bytes).
    let mut padded = id.clone();
    padded.resize(20, 0);
    let mut m = Mapping {
        build_id: Some(padded),
        ..base_mapping.clone()
    };
    let mut sym = Symbolizer::new(opts_in(tmp));
    assert_eq!(sym.symbolize_in_mapping(&m, p.addr).name(), "target_fn");

    // 1b. The kernel's " (deleted)" suffix is ignored when looking for the file.
    let del = Mapping {
        path: format!("{} (deleted)", m.path),
        ..m.clone()
    };
    assert_eq!(
        Symbolizer::new(opts_in(tmp))
            .symbolize_in_mapping(&del, p.addr)
            .name(),
        "target_fn"
    );

    // 2. A different build id: the file changed since recording -> BuildIdMismatch.
    m.build_id = Some(vec![0xde; 20]);
    let f = sym.symbolize_in_mapping(&m, p.addr);
    assert_eq!(f.unknown_reason, Some(UnknownReason::BuildIdMismatch));
    assert!(f.symbol.is_none());

    // 3. Stripped binary: no symbols, until its debug copy is found by build id under a
    //    /usr/lib/debug-like root.
    let stripped = tmp.join("prog.stripped");
    assert!(
        Command::new("strip")
            .arg("-o")
            .arg(&stripped)
            .arg(&p.exe)
            .status()
            .unwrap()
            .success()
    );
    let sm = Mapping {
        path: stripped.display().to_string(),
        build_id: Some(id.clone()),
        ..base_mapping.clone()
    };
    let f = Symbolizer::new(opts_in(tmp)).symbolize_in_mapping(&sm, p.addr);
    assert!(f.symbol.is_none());
    assert!(
        matches!(
            f.unknown_reason,
            Some(UnknownReason::NoSymbols | UnknownReason::NoSymbolAtAddress)
        ),
        "{f:?}"
    );
    let debug_root = tmp.join("usr-lib-debug");
    let dbg = debug_root
        .join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    std::fs::create_dir_all(dbg.parent().unwrap()).unwrap();
    assert!(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&p.exe)
            .arg(&dbg)
            .status()
            .unwrap()
            .success()
    );
    let mut sym = Symbolizer::new(Options {
        debug_dirs: vec![debug_root],
        srcline: true,
        ..opts_in(tmp)
    });
    let f = sym.symbolize_in_mapping(&sm, p.addr + 1);
    assert_eq!(f.name(), "target_fn", "{f:?}");
    assert_eq!(f.symbol.as_ref().unwrap().offset, 1);
    assert_eq!(f.srcline.as_ref().map(|l| l.line), Some(TARGET_LINE));

    // 4. Debug link next to the stripped file (no build-id directories at all).
    let linked = tmp.join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    let ldbg = linked.join("prog.debug");
    assert!(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&p.exe)
            .arg(&ldbg)
            .status()
            .unwrap()
            .success()
    );
    let lbin = linked.join("prog");
    assert!(
        Command::new("objcopy")
            .arg("--strip-all")
            .arg(format!("--add-gnu-debuglink={}", ldbg.display()))
            .arg(&p.exe)
            .arg(&lbin)
            .status()
            .unwrap()
            .success()
    );
    let lm = Mapping {
        path: lbin.display().to_string(),
        build_id: None,
        ..base_mapping.clone()
    };
    let f = Symbolizer::new(opts_in(tmp)).symbolize_in_mapping(&lm, p.addr);
    assert_eq!(f.name(), "target_fn", "{f:?}");

    // 5. The file is gone from its path; perf's build-id cache ~/.debug/.build-id/ab/cdef/elf
    //    has it.
    let cache = tmp.join("dot-debug");
    let elf = cache
        .join(".build-id")
        .join(&hex[..2])
        .join(&hex[2..])
        .join("elf");
    std::fs::create_dir_all(elf.parent().unwrap()).unwrap();
    std::fs::copy(&p.exe, &elf).unwrap();
    let gone = Mapping {
        path: "/gone/prog".into(),
        build_id: Some(id.clone()),
        ..base_mapping.clone()
    };
    let f = Symbolizer::new(Options {
        buildid_dir: Some(cache.clone()),
        ..opts_in(tmp)
    })
    .symbolize_in_mapping(&gone, p.addr);
    assert_eq!(f.name(), "target_fn", "{f:?}");
    assert_eq!(&*f.dso, "/gone/prog");
    // Without the cache it is FileMissing.
    let f = Symbolizer::new(opts_in(tmp)).symbolize_in_mapping(&gone, p.addr);
    assert_eq!(f.unknown_reason, Some(UnknownReason::FileMissing));
    // The binary at its path was replaced (mismatch) but the cache holds the recorded one.
    let other = tmp.join("other");
    std::fs::write(tmp.join("o.c"), "int main(void){return 0;}\n").unwrap();
    assert!(
        Command::new("cc")
            .arg("-o")
            .arg(&other)
            .arg(tmp.join("o.c"))
            .status()
            .unwrap()
            .success()
    );
    let replaced = Mapping {
        path: other.display().to_string(),
        build_id: Some(id),
        ..base_mapping
    };
    let f = Symbolizer::new(Options {
        buildid_dir: Some(cache),
        ..opts_in(tmp)
    })
    .symbolize_in_mapping(&replaced, p.addr);
    assert_eq!(f.name(), "target_fn", "{f:?}");
}

#[test]
fn perf_buildid_cache_layout_is_understood() {
    let Some(p) = build_c_program() else { return };
    let tmp = p.dir.path();
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    // perf itself fills its cache: HOME/.debug/.build-id/ab/cdef -> ../../PATH/HEX/{elf,probes}
    let st = Command::new("perf")
        .env("HOME", &home)
        .args(["buildid-cache", "-a"])
        .arg(&p.exe)
        .output();
    match st {
        Ok(o) if o.status.success() => {}
        other => {
            eprintln!("skipping: perf buildid-cache unavailable: {other:?}");
            return;
        }
    }
    let id = elf_build_id(&p.exe);
    let exe = p.exe.display().to_string();
    let m = p
        .maps
        .iter()
        .find(|m| m.path == exe && m.contains(p.addr))
        .unwrap()
        .clone();
    let m = Mapping {
        build_id: Some(id),
        ..m
    };
    // The binary is rebuilt differently in place: its build id no longer matches.
    std::fs::write(tmp.join("o.c"), "int main(void){return 1;}\n").unwrap();
    assert!(
        Command::new("cc")
            .arg("-o")
            .arg(&p.exe)
            .arg(tmp.join("o.c"))
            .status()
            .unwrap()
            .success()
    );
    let f = Symbolizer::new(opts_in(tmp)).symbolize_in_mapping(&m, p.addr);
    assert_eq!(f.unknown_reason, Some(UnknownReason::BuildIdMismatch));
    let f = Symbolizer::new(Options {
        buildid_dir: Some(home.join(".debug")),
        ..opts_in(tmp)
    })
    .symbolize_in_mapping(&m, p.addr);
    assert_eq!(f.name(), "target_fn", "{f:?}");
}

#[test]
fn c_program_aliases_named_as_perf_names_them() {
    let Some(p) = build_c_program() else { return };
    let out = Command::new("nm").arg(&p.exe).output();
    let Ok(out) = out else {
        eprintln!("skipping: no nm");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let at = |name: &str| {
        text.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).unwrap())
        })
    };
    let vaddr = at("__impl_fn").expect("nm lists __impl_fn");
    assert_eq!(at("__GI___impl_fn"), Some(vaddr));
    assert_eq!(at("impl_fn"), Some(vaddr));
    let exe = p.exe.display().to_string();
    let m = p.maps.iter().find(|m| m.path == exe).unwrap().clone();
    let mut sym = Symbolizer::new(opts_in(p.dir.path()));
    // perf's choose_best_symbol: not the weak one; of the two locals with as many leading
    // underscores, the longer name.
    let f = sym.symbolize_in_mapping(&m, m.start - m.pgoff + vaddr + 1);
    assert_eq!(f.name(), "__GI___impl_fn", "{f:?}");
}

#[test]
fn stripped_program_exporting_nothing_leaves_its_plt_stubs_unnamed_as_perf() {
    let Some(p) = build_c_program() else { return };
    // `strip --strip-all` keeps .dynsym, which holds only imports here. perf 6.1 names the
    // PLT stubs (`puts@plt`) only when the symbol table gave it symbols (dso__load), so in
    // this copy they stay unnamed (`[unknown]`, as perf prints the corpus' cxx-stripped).
    let stripped = p.dir.path().join("stripped");
    let ok = Command::new("strip")
        .arg("--strip-all")
        .arg("-o")
        .arg(&stripped)
        .arg(&p.exe)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping: no strip");
        return;
    }
    let text = Command::new("objdump")
        .arg("-d")
        .arg(&p.exe)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    let stubs: Vec<(u64, String)> = text
        .lines()
        .filter_map(|l| {
            let (addr, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            let addr = u64::from_str_radix(addr, 16).ok()?;
            name.ends_with("@plt").then(|| (addr, name.to_owned()))
        })
        .collect();
    let exe = p.exe.display().to_string();
    let m = p.maps.iter().find(|m| m.path == exe).unwrap().clone();
    let mut bare = m.clone();
    bare.path = stripped.display().to_string();
    bare.build_id = None;
    let mut sym = Symbolizer::new(opts_in(p.dir.path()));
    let mut checked = 0;
    for (vaddr, name) in stubs {
        let addr = m.start - m.pgoff + vaddr + 4;
        // The stubs named in the unstripped program (not .plt.got ones) ...
        if sym.symbolize_in_mapping(&m, addr).name() != name {
            continue;
        }
        // ... are not named in the stripped copy.
        let f = sym.symbolize_in_mapping(&bare, addr);
        assert!(f.symbol.is_none(), "{name}: {f:?}");
        checked += 1;
    }
    assert!(checked >= 1, "no PLT stub checked");
}
