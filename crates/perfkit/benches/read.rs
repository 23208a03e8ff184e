//! Reading counters through the library against a bare `read(2)` on the same fd.
//!
//! Run: `cargo bench -p perfkit --bench read`. The library's target is to stay within 5%
//! of the bare system call, for one counter and for a group of four.
//!
//! Criterion measures each function in turn, and on a VM the cost of a system call drifts
//! by 10% or more between one measurement and the next. So each pair is also measured
//! interleaved (blocks of bare and library reads alternating, the median of 200 blocks
//! each) and the ratio printed first: that ratio is the figure to quote.

use criterion::{Criterion, criterion_group, criterion_main};
use perfkit::{Attr, Counter, Group, GroupCount, Software, Target};
use std::hint::black_box;
use std::os::fd::{AsFd, AsRawFd};
use std::time::Instant;

fn bare_read(fd: i32, buf: &mut [u64]) -> isize {
    // SAFETY: buf is a valid writable buffer of size_of_val(buf) bytes; fd is open.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) }
}

/// Median ns per call of `bare` and `lib`, measured in alternating blocks.
fn interleaved(what: &str, mut bare: impl FnMut(), mut lib: impl FnMut()) {
    const BLOCKS: usize = 200;
    const CALLS: u32 = 5000;
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..CALLS {
            f();
        }
        t.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
    };
    let (mut a, mut b) = (Vec::with_capacity(BLOCKS), Vec::with_capacity(BLOCKS));
    for _ in 0..BLOCKS {
        a.push(time(&mut bare));
        b.push(time(&mut lib));
    }
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let (ma, mb) = (a[BLOCKS / 2], b[BLOCKS / 2]);
    println!(
        "{what}: interleaved medians: bare read(2) {ma:.0} ns, library {mb:.0} ns, \
         library/bare {:.3} (target <= 1.05)",
        mb / ma
    );
}

fn bench(c: &mut Criterion) {
    let attr = Attr::new(Software::TaskClock).exclude_kernel(true);
    let counter = Counter::open(&attr, &Target::this_thread()).expect("open task-clock");
    counter.enable().expect("enable");
    let fd = counter.as_fd().as_raw_fd();

    let mut buf = [0u64; 4];
    interleaved(
        "read one counter",
        || {
            black_box(bare_read(fd, &mut buf));
        },
        || {
            black_box(counter.read().expect("read"));
        },
    );

    let mut g = c.benchmark_group("read one counter");
    g.bench_function("bare read(2)", |b| {
        let mut buf = [0u64; 4];
        b.iter(|| black_box(bare_read(fd, &mut buf)))
    });
    g.bench_function("Counter::read", |b| {
        b.iter(|| black_box(counter.read().expect("read")))
    });
    g.finish();

    let mut group = Group::open(&attr, &Target::this_thread()).expect("open group");
    for sw in [
        Software::PageFaults,
        Software::ContextSwitches,
        Software::CpuClock,
    ] {
        group
            .add(&Attr::new(sw).exclude_kernel(true), &Target::this_thread())
            .expect("add member");
    }
    group.enable().expect("enable group");
    let gfd = group.counter(group.leader()).as_fd().as_raw_fd();
    let mut buf = [0u64; 3 + 2 * 4];
    let mut out = GroupCount::default();
    interleaved(
        "read a group of four",
        || {
            black_box(bare_read(gfd, &mut buf));
        },
        || {
            group.read_into(&mut out).expect("read");
            black_box(out.counts()[3].value);
        },
    );

    let mut g = c.benchmark_group("read a group of four");
    g.bench_function("bare read(2)", |b| {
        let mut buf = [0u64; 3 + 2 * 4];
        b.iter(|| black_box(bare_read(gfd, &mut buf)))
    });
    g.bench_function("Group::read_into", |b| {
        let mut out = GroupCount::default();
        b.iter(|| {
            group.read_into(&mut out).expect("read");
            black_box(out.counts()[3].value)
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
