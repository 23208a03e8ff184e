//! Reading counters through the library against a bare `read(2)` on the same fd.
//!
//! Run: `cargo bench -p perfkit --bench read`. The library's target is to stay within 5%
//! of the bare system call, for one counter and for a group of four.

use criterion::{Criterion, criterion_group, criterion_main};
use perfkit::{Attr, Counter, Group, GroupCount, Software, Target};
use std::hint::black_box;
use std::os::fd::{AsFd, AsRawFd};

fn bare_read(fd: i32, buf: &mut [u64]) -> isize {
    // SAFETY: buf is a valid writable buffer of size_of_val(buf) bytes; fd is open.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), std::mem::size_of_val(buf)) }
}

fn bench(c: &mut Criterion) {
    let attr = Attr::new(Software::TaskClock).exclude_kernel(true);
    let counter = Counter::open(&attr, &Target::this_process()).expect("open task-clock");
    counter.enable().expect("enable");
    let fd = counter.as_fd().as_raw_fd();

    let mut g = c.benchmark_group("read one counter");
    g.bench_function("bare read(2)", |b| {
        let mut buf = [0u64; 4];
        b.iter(|| black_box(bare_read(fd, &mut buf)))
    });
    g.bench_function("Counter::read", |b| {
        b.iter(|| black_box(counter.read().expect("read")))
    });
    g.finish();

    let mut group = Group::open(&attr, &Target::this_process()).expect("open group");
    for sw in [
        Software::PageFaults,
        Software::ContextSwitches,
        Software::CpuClock,
    ] {
        group
            .add(&Attr::new(sw).exclude_kernel(true), &Target::this_process())
            .expect("add member");
    }
    group.enable().expect("enable group");
    let gfd = group.counter(group.leader()).as_fd().as_raw_fd();
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
