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

/// IP/SP/BP and a copy of the stack from SP, captured three calls deep.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn capture_deep(depth: u32) -> ([u64; 3], Vec<u8>) {
    use std::io::{Read, Seek, SeekFrom};
    if depth > 0 {
        let r = capture_deep(black_box(depth - 1));
        black_box(&r);
        return r;
    }
    let (ip, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers into outputs; touches no memory.
    unsafe {
        std::arch::asm!("lea {ip}, [rip]", "mov {sp}, rsp", "mov {bp}, rbp",
            ip = out(reg) ip, sp = out(reg) sp, bp = out(reg) bp,
            options(nomem, nostack, preserves_flags));
    }
    let text = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let all = perfkit_symbols::parse_proc_maps(&text, "maps").expect("maps parse");
    let m = all
        .iter()
        .find(|e| e.mapping.contains(sp))
        .expect("stack mapping");
    let len = (m.mapping.end - sp).min(64 * 1024) as usize;
    let mut mem = std::fs::File::open("/proc/self/mem").expect("mem");
    mem.seek(SeekFrom::Start(sp)).expect("seek");
    let mut stack = vec![0u8; len];
    mem.read_exact(&mut stack).expect("read stack");
    ([bp, sp, ip], stack)
}

#[cfg(target_arch = "x86_64")]
fn bench_unwind(c: &mut Criterion) {
    use perfkit_symbols::unwind::x86_64_regs::UNWIND_MASK;
    use perfkit_symbols::{Arch, Unwinder, UserRegs};
    let (regs, stack) = capture_deep(8);
    let maps = read_proc_maps(0).expect("own maps");
    let pid = std::process::id();
    let mut sym = Symbolizer::new(Options::default());
    let mut unw = Unwinder::new();
    let r = UserRegs {
        abi: 2,
        mask: UNWIND_MASK,
        values: &regs,
    };
    let out = unw.unwind(&mut sym, Arch::X86_64, pid, &maps, &r, &stack);
    assert!(out.frames.len() > 10, "{out:?}");
    let mut g = c.benchmark_group("unwind");
    g.throughput(Throughput::Elements(1));
    g.bench_function(format!("sample_{}_frames", out.frames.len()), |b| {
        b.iter(|| black_box(unw.unwind(&mut sym, Arch::X86_64, pid, &maps, &r, black_box(&stack))))
    });
    g.bench_function("sample_unwind_and_symbolize", |b| {
        b.iter(|| {
            let out = unw.unwind(&mut sym, Arch::X86_64, pid, &maps, &r, black_box(&stack));
            for a in out.lookup_addresses() {
                black_box(sym.symbolize(pid, &maps, a));
            }
        })
    });
    g.finish();
}

#[cfg(not(target_arch = "x86_64"))]
fn bench_unwind(_: &mut Criterion) {}

criterion_group!(benches, bench, bench_unwind);
criterion_main!(benches);
