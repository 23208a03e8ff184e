//! `perfkit test -w NAME [ARGS]`: perf 6.1's built-in test workloads, which perf's shell
//! tests and scripts profile (`perf record -- perf test -w noploop`). Same names, arguments
//! and behaviour: a CPU-bound loop for `sec` seconds (default 1) in a function named after
//! the workload; `thloop` in two threads, `sqrtloop` in a child process, `leafloop` in
//! `leaf` called by `parent`; `brstack` a short run of calls and branches; `datasym` reads
//! and writes a two-field buffer forever (perf's tests kill it).
//!
//! The loops test the clock every few million iterations instead of taking SIGALRM (no
//! signal handler, no extra thread), so samples fall in the workload's own function.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;

/// Arguments of `perfkit test`.
#[derive(Args, Debug)]
pub struct TestArgs {
    /// Run a built-in workload: noploop, thloop, leafloop, sqrtloop, brstack, datasym.
    #[arg(short = 'w', long = "workload", value_name = "WORKLOAD")]
    pub workload: Option<String>,
    /// The workload's arguments (seconds for the loops).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub args: Vec<String>,
}

/// The workloads, as `perf test -w` names them.
pub const WORKLOADS: &[&str] = &[
    "noploop", "thloop", "leafloop", "sqrtloop", "brstack", "datasym",
];

/// Run `perfkit test`.
pub fn run(args: TestArgs) -> anyhow::Result<u8> {
    let Some(name) = args.workload else {
        bail!(
            "only workloads are supported yet: perfkit test -w {}",
            WORKLOADS.join("|")
        );
    };
    let secs = || -> anyhow::Result<Duration> {
        let s = match args.args.first() {
            Some(a) => a
                .parse::<u64>()
                .with_context(|| format!("{name}: seconds '{a}' is not a number"))?,
            None => 1,
        };
        Ok(Duration::from_secs(s))
    };
    match name.as_str() {
        "noploop" => noploop(Instant::now() + secs()?),
        "thloop" => thloop(Instant::now() + secs()?),
        "leafloop" => parent(Instant::now() + secs()?),
        "sqrtloop" => sqrtloop(secs()?)?,
        // The child half of sqrtloop (a fork, as perf's, would need unsafe code).
        "sqrtloop-child" => sqrt_child(Instant::now() + secs()?),
        "brstack" => brstack_bench(),
        "datasym" => datasym(),
        // perf's line and status (-1), then which workloads there are.
        other => {
            return Err(crate::exit_error(
                255,
                anyhow::anyhow!(
                    "No workload found: {other} (the workloads: {})",
                    WORKLOADS.join(", ")
                ),
            ));
        }
    }
    Ok(0)
}

/// `x`, opaque to the optimizer in release builds; as it is in debug builds, where
/// `black_box` would be a call of its own and take the samples meant for the workload.
#[inline(always)]
fn opaque(x: u64) -> u64 {
    if cfg!(debug_assertions) {
        x
    } else {
        black_box(x)
    }
}

/// Spin until `end`, testing the clock once every million iterations.
#[inline(always)]
fn spin_until(end: Instant, mut step: impl FnMut()) {
    loop {
        let mut i = 0u64;
        while opaque(i) < 1_000_000 {
            step();
            i += 1;
        }
        if Instant::now() >= end {
            return;
        }
    }
}

#[inline(never)]
fn noploop(end: Instant) {
    let mut x = 0u64;
    spin_until(end, || x = opaque(x ^ 1));
}

#[inline(never)]
fn test_loop(end: Instant) {
    let mut x = 0u64;
    spin_until(end, || x = opaque(x.wrapping_add(1)));
}

#[inline(never)]
fn thloop(end: Instant) {
    let t = std::thread::spawn(move || test_loop(end));
    test_loop(end);
    let _ = t.join();
}

#[inline(never)]
fn leaf(end: Instant, b: u64) {
    let mut a = 0u64;
    spin_until(end, || a = opaque(a.wrapping_add(b)));
}

#[inline(never)]
fn parent(end: Instant) {
    leaf(end, black_box(1));
}

fn sqrtloop(secs: Duration) -> anyhow::Result<()> {
    let exe = std::env::current_exe().context("finding perfkit's own executable")?;
    let status = std::process::Command::new(exe)
        .args(["test", "-w", "sqrtloop-child", &secs.as_secs().to_string()])
        .status()
        .context("starting the sqrtloop child")?;
    if !status.success() {
        bail!("the sqrtloop child failed: {status}");
    }
    Ok(())
}

#[inline(never)]
fn sqrt_child(end: Instant) {
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    spin_until(end, || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        black_box(((seed >> 11) as f64).sqrt());
    });
}

#[inline(never)]
fn brstack_bar(x: u64) -> u64 {
    if black_box(x) & 1 == 1 { x + 1 } else { x * 3 }
}

#[inline(never)]
fn brstack_foo(x: u64) -> u64 {
    let mut y = x;
    for i in 0..4 {
        y = brstack_bar(y ^ i);
    }
    y
}

#[inline(never)]
fn brstack_bench() {
    let mut acc = 0u64;
    for i in 0..100_000u64 {
        acc = acc.wrapping_add(brstack_foo(black_box(i)));
    }
    black_box(acc);
}

/// perf's `datasym` buffer: two fields read and written in turn.
#[repr(C)]
struct Buf1 {
    data1: u64,
    reserved: [u8; 56],
    data2: u64,
}

#[inline(never)]
fn datasym() {
    let mut buf1 = Buf1 {
        data1: 0,
        reserved: [0; 56],
        data2: 0,
    };
    loop {
        let b = black_box(&mut buf1);
        b.data1 = b.data1.wrapping_add(1);
        b.data2 = b.data2.wrapping_add(b.data1);
        black_box(&b.reserved);
    }
}
