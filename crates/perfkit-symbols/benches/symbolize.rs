//! Symbolization speed on a real binary (this machine's libc): lookups per second with a
//! warm memo, first lookups of distinct addresses (binary search + demangle), and a cold
//! start (map the file, build the symbol table, first lookup).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use perfkit_symbols::{Options, ProcessMaps, Symbolizer, read_proc_maps};

fn libc_addresses(maps: &ProcessMaps, n: u64) -> Vec<u64> {
    let libc = maps
        .iter()
        .find(|m| m.path.contains("libc.so") || m.path.contains("libc-"))
        .expect("libc mapped in this process");
    let step = ((libc.end - libc.start) / n).max(1);
    (0..n).map(|i| libc.start + i * step + 3).collect()
}

fn bench(c: &mut Criterion) {
    let maps = read_proc_maps(0).expect("own maps");
    let addrs = libc_addresses(&maps, 1000);
    let pid = std::process::id();

    let mut g = c.benchmark_group("libc");
    g.throughput(Throughput::Elements(addrs.len() as u64));

    let mut warm = Symbolizer::new(Options::default());
    for &a in &addrs {
        warm.symbolize(pid, &maps, a);
    }
    g.bench_function("warm_memo_1000", |b| {
        b.iter(|| {
            for &a in &addrs {
                black_box(warm.symbolize(pid, &maps, black_box(a)));
            }
        })
    });

    g.bench_function("first_lookup_1000", |b| {
        b.iter_batched(
            || {
                let mut s = Symbolizer::new(Options::default());
                s.symbolize(pid, &maps, addrs[0] + 1); // file loaded, memo empty for addrs
                s
            },
            |mut s| {
                for &a in &addrs {
                    black_box(s.symbolize(pid, &maps, a));
                }
                s
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();

    let mut g = c.benchmark_group("libc_cold");
    g.sample_size(20);
    g.bench_function("load_and_first_lookup", |b| {
        b.iter(|| {
            let mut s = Symbolizer::new(Options::default());
            black_box(s.symbolize(pid, &maps, addrs[500]))
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
