//! A C program that sleeps 5 x 40 ms in a known function (the subject of the off-CPU
//! tests of `record --off-cpu` and `top --off-cpu`), and tracefs mounted for them.

use std::path::{Path, PathBuf};

/// Sleeps 5 x 40 ms in `sleep_in_known_function` through a raw `nanosleep` syscall (so the
/// sampled user IP is in that function, not in libc), spins a little, and prints the
/// nanoseconds it measured around the sleeps (CLOCK_MONOTONIC) and the nanoseconds asked.
pub const SLEEPER: &str = r#"
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static long now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
__attribute__((noinline)) void sleep_in_known_function(long ns) {
    struct timespec t = { 0, ns };
#if defined(__x86_64__)
    long r;
    __asm__ volatile("syscall" : "=a"(r) : "a"((long)SYS_nanosleep), "D"(&t), "S"(0L) : "rcx", "r11", "memory");
#else
    nanosleep(&t, 0);
#endif
}
__attribute__((noinline)) void spin(void) { volatile long x = 0; for (long i = 0; i < 3000000; i++) x += i; }
int main(void) {
    long measured = 0, asked = 0;
    for (int i = 0; i < 5; i++) {
        long t0 = now();
        sleep_in_known_function(40000000L);
        measured += now() - t0;
        asked += 40000000L;
    }
    spin();
    printf("%ld %ld\n", measured, asked);
    return 0;
}
"#;

/// Build the sleeper in `dir`; `None` without a working C compiler.
pub fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("sleeper.c");
    let bin = dir.join("sleeper");
    std::fs::write(&src, SLEEPER).unwrap();
    let ok = std::process::Command::new("cc")
        .args(["-O1", "-g", "-fno-omit-frame-pointer", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// Whether sched:sched_switch can be used (tracefs mounted here if it was not).
pub fn tracefs_ready() -> bool {
    if Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists() {
        return true;
    }
    let _ = std::process::Command::new("mount")
        .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
        .status();
    Path::new("/sys/kernel/tracing/events/sched/sched_switch").exists()
}
