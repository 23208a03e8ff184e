//! Sample this process with callchains and print the functions it spent its time in.
//!
//! `cargo run -p perfkit --example sample_self`
//!
//! cpu-clock samples of every thread (one event per CPU: an `inherit` event must be
//! sampled per CPU), callchains from the kernel, symbols from perfkit-symbols. Without
//! frame pointers the user callchain stops early, so the table counts the sampled
//! function itself (the first user frame) and the average callchain depth.

use perfkit::records::Record;
use perfkit::{Attr, RingSize, SampleType, SideBand, Software, open_per_cpu};
use perfkit_symbols::{Options, Symbolizer, read_proc_maps};
use std::collections::HashMap;

#[inline(never)]
fn busy_sum(n: u64) -> u64 {
    (0..n).map(std::hint::black_box).sum()
}

#[inline(never)]
fn busy_product(n: u64) -> u64 {
    (1..n).fold(1u64, |a, b| std::hint::black_box(a.wrapping_mul(b | 1)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let attr = SideBand::COMM.apply(
        Attr::new(Software::CpuClock)
            .sample_freq(4000)
            .sample_type(
                SampleType::IP | SampleType::TID | SampleType::CALLCHAIN | SampleType::PERIOD,
            )
            .exclude_kernel(true)
            .inherit(true),
    );
    let mut samplers = open_per_cpu(&attr, std::process::id() as i32, RingSize::Pages(64))?;
    for s in &samplers {
        s.enable()?;
    }
    let worker = std::thread::spawn(|| busy_product(60_000_000));
    let a = busy_sum(80_000_000);
    let b = worker.join().expect("worker");
    for s in &samplers {
        s.disable()?;
    }

    let maps = read_proc_maps(0)?;
    let mut sym = Symbolizer::new(Options::default());
    let pid = std::process::id();
    let mut by_function: HashMap<String, u64> = HashMap::new();
    let (mut samples, mut depth) = (0u64, 0u64);
    for s in &mut samplers {
        s.for_each_record(|rec| {
            let Record::Sample(smp) = rec.record else {
                return;
            };
            samples += 1;
            depth += smp.callchain.as_ref().map_or(0, |c| c.len() as u64);
            if let Some(ip) = smp.ip {
                let name = sym.symbolize(pid, &maps, ip).name().to_string();
                *by_function.entry(name).or_default() += 1;
            }
        })?;
    }
    println!(
        "{samples} samples (results {a} {b}), mean callchain depth {:.1}",
        depth as f64 / samples.max(1) as f64
    );
    let mut top: Vec<_> = by_function.into_iter().collect();
    top.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    for (name, n) in top.iter().take(10) {
        println!(
            "{:>6.2}%  {name}",
            100.0 * *n as f64 / samples.max(1) as f64
        );
    }
    Ok(())
}
