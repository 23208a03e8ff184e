//! A C workload with a known hot loop (`hot`) and a colder one (`cold`, a tenth of the
//! iterations), built with debug info at a chosen optimization level: the subject of the
//! annotate, diff and top tests.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const SOURCE: &str = r#"
#include <stdlib.h>
__attribute__((noinline)) long hot(long n) {
    long s = 0;
    for (long i = 0; i < n; i++) {
        s += i * i;
        if (s & 1) s ^= 0x55;
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}
__attribute__((noinline)) long cold(long n) {
    long s = 1;
    for (long i = 0; i < n; i++) { s = s * 3 + i; __asm__ volatile("" : "+r"(s)); }
    return s;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000000;
    long r = 0;
    int rounds = argc > 2 ? atoi(argv[2]) : 4;
    for (int k = 0; k < rounds || rounds == 0; k++) { r += hot(n / 4); r += cold(n / 40); }
    return (int)(r & 1);
}
"#;

/// Build the workload as `dir/<opt>/hotloop` (the same file name for every build, so
/// profiles of two builds match by name); `None` (after `skip`) without a C compiler.
pub fn build(dir: &Path, opt: &str) -> Option<PathBuf> {
    let sub = dir.join(opt.trim_start_matches('-'));
    std::fs::create_dir_all(&sub).expect("mkdir");
    let src = sub.join("hotloop.c");
    std::fs::write(&src, SOURCE).expect("write source");
    let bin = sub.join("hotloop");
    match Command::new("cc")
        .arg(opt)
        .arg("-g")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .status()
    {
        Ok(s) if s.success() => Some(bin),
        _ => {
            super::skip("no working C compiler (cc) to build the hot-loop workload");
            None
        }
    }
}
