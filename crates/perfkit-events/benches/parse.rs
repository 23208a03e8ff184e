//! Parser throughput on common event strings, against a fixture-free system Env.
use criterion::{Criterion, criterion_group, criterion_main};
use perfkit_events::Env;

fn bench(c: &mut Criterion) {
    let env = Env::new("/nonexistent", None);
    for s in [
        "cycles",
        "{cycles:u,instructions:u,branch-misses}:S",
        "L1-dcache-load-misses,r10000013c,mem:0x1000/8:w",
    ] {
        c.bench_function(&format!("parse {s}"), |b| {
            b.iter(|| env.parse(std::hint::black_box(s)).map(|l| l.len()).ok())
        });
    }
    let sys = Env::system();
    let _ = sys.parse("sched:sched_switch");
    c.bench_function("parse syscalls:sys_enter_* (system tracefs)", |b| {
        b.iter(|| sys.parse("syscalls:sys_enter_*").map(|l| l.len()).ok())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
