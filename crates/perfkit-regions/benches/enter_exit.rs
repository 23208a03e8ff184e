//! Overhead of a region: one `enter` + guard drop (two reads of every event plus the
//! bookkeeping) against one bare read of the same counters through the same reader.
//!
//! Run: `cargo bench -p perfkit-regions --bench enter_exit`. Events: `$PERFKIT_BENCH_EVENTS`,
//! else `instructions,cycles` where they open (user-page reads), else
//! `task-clock,page-faults` (one `read(2)` of a group: this machine has no PMU). After
//! criterion's runs it prints the ratio (pair / bare read) from a plain timed loop.

use criterion::{Criterion, criterion_group, criterion_main};
use perfkit_regions::Regions;
use std::hint::black_box;
use std::time::Instant;

fn regions() -> Regions {
    if let Ok(ev) = std::env::var("PERFKIT_BENCH_EVENTS") {
        return Regions::new(&ev).expect("PERFKIT_BENCH_EVENTS");
    }
    for ev in ["instructions,cycles", "task-clock,page-faults"] {
        if let Ok(r) = Regions::new(ev) {
            if r.thread_init().is_ok() {
                return r;
            }
        }
    }
    panic!("neither instructions,cycles nor task-clock,page-faults opens here")
}

fn bench(c: &mut Criterion) {
    let r = regions();
    r.thread_init().expect("open");
    let mut buf = r.reading();
    let path = {
        let _g = r.enter("probe").expect("enter");
        drop(_g);
        r.report().read_paths[0].clone()
    };
    eprintln!("events {:?}, read path {path}", r.events());
    let mut g = c.benchmark_group("region overhead");
    g.bench_function("bare read of the counters", |b| {
        b.iter(|| r.read_counters(black_box(&mut buf)).expect("read"))
    });
    g.bench_function("enter + exit", |b| {
        b.iter(|| drop(black_box(r.enter("bench").expect("enter"))))
    });
    g.finish();

    // Alternate the two, several rounds, and keep each one's best round: a shared, loaded
    // machine slows whichever runs at a bad moment.
    let n = 50_000;
    let round = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as f64 / n as f64
    };
    let (mut bare, mut pair) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..10 {
        bare = bare.min(round(&mut || {
            r.read_counters(black_box(&mut buf)).expect("read")
        }));
        pair = pair.min(round(&mut || {
            drop(black_box(r.enter("bench").expect("enter")))
        }));
    }
    eprintln!(
        "bare read {bare:.1} ns, enter+exit {pair:.1} ns: ratio {:.2} (path {path})",
        pair / bare
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
