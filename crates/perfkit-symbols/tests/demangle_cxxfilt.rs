//! C++ names demangled as perf 6.1 prints them, checked against binutils' `c++filt`
//! (libiberty, the demangler perf links): every `_Z` symbol of libstdc++ and of the C++
//! corpus program (scripts/corpus/cxx.cpp built at -O0), with parameters (`c++filt -i`,
//! perf's `-v`) and without (`c++filt -p -i`, perf's default). Parameter packs of
//! reference type (`Args&&...`), vtables, local names and expanded argument packs are
//! among them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use perfkit_symbols::{Demangling, demangle, demangle_all, demangle_with_params};

fn skip(why: &str) {
    assert!(
        std::env::var("CI").map_or(true, |v| v != "true"),
        "CI has g++ and binutils: {why}"
    );
    eprintln!("skipped: {why}");
}

/// The `_Z` names in `bin`'s symbol tables (static and dynamic), each once, without
/// symbol versions.
fn cxx_names(bin: &Path) -> Vec<String> {
    let mut names = Vec::new();
    for dynamic in [false, true] {
        let mut cmd = Command::new("nm");
        if dynamic {
            cmd.arg("-D");
        }
        let Ok(out) = cmd.arg("--defined-only").arg(bin).output() else {
            return Vec::new();
        };
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some(n) = l.split_whitespace().last()
                && n.starts_with("_Z")
            {
                names.push(n.split('@').next().unwrap_or(n).to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// `c++filt ARGS` over `names`, one line each.
fn cxxfilt(args: &[&str], names: &[String]) -> Option<Vec<String>> {
    let mut child = Command::new("c++filt")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let input = names.join("\n") + "\n";
    let mut stdin = child.stdin.take()?;
    let writer = std::thread::spawn(move || {
        use std::io::Write;
        stdin.write_all(input.as_bytes())
    });
    let out = child.wait_with_output().ok()?;
    writer.join().ok()?.ok()?;
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect(),
    )
}

/// The names whose demangling differs from c++filt's, with both spellings.
fn differences(names: &[String], params: bool) -> Vec<String> {
    let args: &[&str] = if params { &["-i"] } else { &["-p", "-i"] };
    let theirs = cxxfilt(args, names).expect("c++filt runs");
    assert_eq!(theirs.len(), names.len());
    names
        .iter()
        .zip(&theirs)
        .filter_map(|(n, t)| {
            let ours = if params {
                demangle_with_params(n)
            } else {
                demangle(n)
            };
            (ours != *t).then(|| format!("{n}\n  c++filt: {t}\n  perfkit: {ours}"))
        })
        .collect()
}

fn libstdcxx() -> Option<PathBuf> {
    gcc_file("libstdc++.so.6")
}

/// Where g++ finds `file`.
fn gcc_file(file: &str) -> Option<PathBuf> {
    let out = Command::new("g++")
        .arg(format!("-print-file-name={file}"))
        .output()
        .ok()?;
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let p = std::fs::canonicalize(p).ok()?;
    p.is_absolute().then_some(p)
}

#[test]
fn libstdcxx_names_are_cxxfilts() {
    if Command::new("c++filt").arg("--version").output().is_err() {
        return skip("no c++filt (binutils)");
    }
    let Some(lib) = libstdcxx() else {
        return skip("no g++ to find libstdc++.so.6");
    };
    let names = cxx_names(&lib);
    assert!(
        names.len() > 1000,
        "{}: {} names",
        lib.display(),
        names.len()
    );
    for params in [true, false] {
        let d = differences(&names, params);
        assert!(
            d.is_empty(),
            "{} of {} differ:\n{}",
            d.len(),
            names.len(),
            d.join("\n")
        );
    }
}

#[test]
fn corpus_program_names_are_cxxfilts() {
    if Command::new("c++filt").arg("--version").output().is_err() {
        return skip("no c++filt (binutils)");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/corpus/cxx.cpp");
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("cxx-O0");
    let built = Command::new("g++")
        .args(["-O0", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !built {
        return skip("no g++");
    }
    let names = cxx_names(&bin);
    assert!(names.len() > 100, "{} names", names.len());
    // Parameter packs of reference type, a vtable and an expanded pack are among them.
    assert!(names.iter().any(|n| n.contains("DpOT_")));
    assert!(names.iter().any(|n| n.starts_with("_ZTV")));
    assert!(names.iter().any(|n| n.contains("XspT0_E")));
    assert_eq!(differences(&names, false), Vec::<String>::new());
    // Among them `std::swap<long>`, whose `enable_if<...>::type` return type cpp_demangle
    // cannot parse: perfkit asks c++filt for such a name (demangle_fallback.rs).
    assert!(names.iter().any(|n| n.contains("enable_ifIXsr")));
    assert_eq!(differences(&names, true), Vec::<String>::new());
}

#[test]
fn names_only_cxxfilt_demangles_are_its_in_one_batch() {
    if Command::new("c++filt").arg("--version").output().is_err() {
        return skip("no c++filt (binutils)");
    }
    let Some(archive) = gcc_file("libstdc++.a") else {
        return skip("no g++ to find libstdc++.a");
    };
    // libstdc++.a's objects keep GCC's comdat constructors and destructors (`C5`/`D5`),
    // which cpp_demangle refuses: some 470 names go to c++filt, where perfkit used to run
    // one c++filt per name. Construction vtables, local classes' vtables and type
    // information, data in an anonymous namespace and a second unnamed type are shapes
    // cpp_demangle gets wrong: c++filt's too. Every name is c++filt's.
    let names = cxx_names(&archive);
    assert!(
        names.len() > 5000,
        "{}: {} names",
        archive.display(),
        names.len()
    );
    let only_cxxfilt: Vec<String> = names
        .iter()
        .filter(|n| n.contains("C5E") || n.contains("D5E") || n.contains("enable_ifIXsr"))
        .cloned()
        .collect();
    assert!(only_cxxfilt.len() > 100, "{}", only_cxxfilt.len());
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    for (how, args) in [
        (Demangling::Signatures, &["-i"][..]),
        (Demangling::Names, &["-p", "-i"]),
    ] {
        let theirs = cxxfilt(args, &names).expect("c++filt runs");
        let batch = demangle_all(&refs, how);
        let mut compared = 0;
        for ((n, t), b) in names.iter().zip(&theirs).zip(&batch) {
            // The batch and one name at a time agree.
            assert_eq!(*b, how.apply(n), "{n}");
            // Nothing c++filt demangles is left mangled.
            if t != n {
                assert_ne!(b, n, "{how:?}: {n} left as it is; c++filt: {t}");
            }
            if only_cxxfilt.contains(n) {
                assert_eq!(b, t, "{how:?}: {n}");
                compared += 1;
            }
        }
        assert_eq!(compared, only_cxxfilt.len());
    }
    assert!(names.iter().any(|n| n.starts_with("_ZTC")));
    assert!(names.iter().any(|n| n.starts_with("_ZN12_GLOBAL__N_1")));
    for params in [true, false] {
        let d = differences(&names, params);
        assert!(
            d.is_empty(),
            "{} of {} differ:\n{}",
            d.len(),
            names.len(),
            d.join("\n")
        );
    }
}

#[test]
fn libllvm_names_are_cxxfilts() {
    if Command::new("c++filt").arg("--version").output().is_err() {
        return skip("no c++filt (binutils)");
    }
    // libLLVM is not a package CI installs: where none is here, this is a plain skip.
    let Some(lib) = ["libLLVM-15.so.1", "libLLVM-14.so.1"]
        .iter()
        .map(|l| Path::new("/usr/lib/x86_64-linux-gnu").join(l))
        .find(|p| p.exists())
    else {
        return eprintln!("skipped: no libLLVM-15 or -14 here (libllvm15)");
    };
    // 39,391 names in libLLVM-15, 35 of which cpp_demangle renders in shapes it gets
    // wrong (qualified packs among the parameters, lambdas of local names in template
    // arguments, scoped names after a qualifier): those come from c++filt.
    let names = cxx_names(&lib);
    assert!(names.len() > 30_000, "{}: {}", lib.display(), names.len());
    for params in [true, false] {
        let d = differences(&names, params);
        assert!(
            d.is_empty(),
            "{}: {} of {} differ:\n{}",
            lib.display(),
            d.len(),
            names.len(),
            d.join("\n")
        );
    }
}
