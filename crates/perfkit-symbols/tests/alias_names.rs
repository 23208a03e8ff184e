//! Among aliases at one address perf 6.1 keeps the one `choose_best_symbol` prefers, on
//! names already demangled: a C++ method and an `extern "C"` alias of it (as libLLVM's
//! `llvm::ModulePass::getPotentialPassManagerType` and `LLVMIsMultithreaded`) tie on size
//! and binding, neither has leading underscores once demangled (the mangled `_ZNK...` has
//! one), and the longer name wins.

use std::path::Path;
use std::process::Command;

use perfkit_symbols::{Mapping, Options, ProcessMaps, Symbolizer};

const SOURCE: &str = r#"
namespace llvmish { struct ModulePass { int kind() const; }; }
int llvmish::ModulePass::kind() const { return 3; }
extern "C" int LLVMIsThing() __attribute__((alias("_ZNK7llvmish10ModulePass4kindEv")));
int main() { llvmish::ModulePass p; return p.kind() + LLVMIsThing(); }
"#;

fn skip(why: &str) {
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "CI has g++ and binutils: {why}"
    );
    eprintln!("skipping: {why}");
}

/// `nm`'s address of `name` in `exe`.
fn nm_address(exe: &Path, name: &str) -> Option<u64> {
    let out = Command::new("nm").arg(exe).output().ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).ok())?
    })
}

/// perf's name for the address, from a breakpoint sample there (`None` where perf or
/// breakpoints are not available).
fn perf_name(dir: &Path, exe: &Path, vaddr: u64) -> Option<String> {
    let data = dir.join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-q", "-o"])
        .arg(&data)
        .arg("-e")
        .arg(format!("mem:{vaddr:#x}:x"))
        .arg(exe)
        .output()
        .ok()?;
    if !data.exists() || rec.stderr.windows(5).any(|w| w == b"rror:") {
        return None;
    }
    let out = Command::new("perf")
        .args(["script", "-F", "ip,sym", "-i"])
        .arg(&data)
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // `ADDR NAME`
    text.lines()
        .find_map(|l| l.trim().split_once(' '))
        .map(|(_, name)| name.trim().to_string())
}

#[test]
fn cxx_method_and_c_alias_named_by_demangled_name() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("alias.cpp");
    std::fs::write(&src, SOURCE).unwrap();
    let exe = dir.path().join("alias");
    match Command::new("g++")
        .args(["-O1", "-no-pie", "-Wno-attribute-alias", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => {}
        other => return skip(&format!("g++ unavailable or failed: {other:?}")),
    }
    let Some(vaddr) = nm_address(&exe, "LLVMIsThing") else {
        return skip("no nm");
    };
    assert_eq!(
        nm_address(&exe, "_ZNK7llvmish10ModulePass4kindEv"),
        Some(vaddr)
    );
    // A non-PIE executable: runtime addresses are its vaddrs; map the first 16 MiB.
    let exe_name = exe.display().to_string();
    let maps = ProcessMaps::from_mappings([Mapping {
        start: 0x40_0000,
        end: 0x140_0000,
        pgoff: 0,
        path: exe_name,
        build_id: None,
    }]);
    let mut sym = Symbolizer::new(Options {
        buildid_dir: Some(dir.path().join("no-buildid-cache")),
        debug_dirs: vec![dir.path().join("no-debug-dir")],
        ..Options::default()
    });
    let f = sym.symbolize(1, &maps, vaddr);
    assert_eq!(f.name(), "llvmish::ModulePass::kind", "{f:?}");
    match perf_name(dir.path(), &exe, vaddr) {
        Some(theirs) => assert_eq!(f.name(), theirs),
        None => eprintln!("perf could not record a breakpoint here: compared with the rule only"),
    }
}
