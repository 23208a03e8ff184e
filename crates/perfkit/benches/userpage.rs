//! Self-monitoring reads: [`SelfMonitor::read`] (user page seqlock, then `read(2)` because
//! this machine's events have `index == 0`) against a bare `read(2)` on the same fd, and
//! the user-page snapshot alone (the part a hardware counter read would add to).
//!
//! Run: `cargo bench -p perfkit --bench userpage`. On a machine with a PMU and user
//! access, `SelfMonitor::read` takes the rdpmc/mrs path and no system call at all.

use criterion::{Criterion, criterion_group, criterion_main};
use perfkit::{Attr, ReadSource, SelfMonitor, Software, Target};
use std::hint::black_box;
use std::os::fd::{AsFd, AsRawFd};

fn bare_read(fd: i32, buf: &mut [u64]) -> isize {
    // SAFETY: buf is a valid writable buffer of size_of_val(buf) bytes; fd is open.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) }
}

fn bench(c: &mut Criterion) {
    let attr = Attr::new(Software::TaskClock).exclude_kernel(true);
    let m = SelfMonitor::open(&attr, &Target::this_thread()).expect("open task-clock");
    m.counter().enable().expect("enable");
    let fd = m.counter().as_fd().as_raw_fd();
    let source = m.read().expect("read").source;
    eprintln!(
        "SelfMonitor::read source here: {source:?}{}",
        if source == ReadSource::Syscall {
            format!(" ({})", m.why_not_user_readable().unwrap_or_default())
        } else {
            String::new()
        }
    );

    let mut g = c.benchmark_group("self-monitoring read");
    g.bench_function("bare read(2)", |b| {
        let mut buf = [0u64; 4];
        b.iter(|| black_box(bare_read(fd, &mut buf)))
    });
    g.bench_function("Counter::read", |b| {
        b.iter(|| black_box(m.counter().read().expect("read")))
    });
    g.bench_function("SelfMonitor::read", |b| {
        b.iter(|| black_box(m.read().expect("read")))
    });
    g.bench_function("user page snapshot only", |b| {
        b.iter(|| black_box(m.page().read()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
