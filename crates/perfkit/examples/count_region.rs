//! Count a region of code: CPU time, page faults and context switches of this process
//! (every thread), plus cycles and instructions where the machine has a hardware PMU.
//!
//! `cargo run -p perfkit --example count_region`

use perfkit::{Attr, CounterSet, Event, Hardware, Software, Targets};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let events: [(&str, Event); 5] = [
        ("task-clock (ns)", Software::TaskClock.into()),
        ("page-faults", Software::PageFaults.into()),
        ("context-switches", Software::ContextSwitches.into()),
        ("cycles", Hardware::CpuCycles.into()),
        ("instructions", Hardware::Instructions.into()),
    ];
    let targets = Targets::this_process()?;
    // One counter per thread and event; `inherit` covers threads started in the region.
    let mut sets = Vec::new();
    for (name, event) in events {
        match CounterSet::open(&Attr::new(event).inherit(true), &targets) {
            Ok(set) => sets.push((name, Some(set))),
            Err(e) if e.is_not_supported() => sets.push((name, None)),
            Err(e) => return Err(e.into()),
        }
    }
    for set in sets.iter().filter_map(|(_, s)| s.as_ref()) {
        set.enable()?;
    }

    // The region: some arithmetic, a fresh buffer (page faults), and a worker thread.
    let worker = std::thread::spawn(|| (0..20_000_000u64).map(std::hint::black_box).sum::<u64>());
    let buf = vec![1u8; 8 << 20];
    let here: u64 = (0..20_000_000u64).map(std::hint::black_box).sum();
    let there = worker.join().expect("worker");

    for set in sets.iter().filter_map(|(_, s)| s.as_ref()) {
        set.disable()?;
    }
    println!(
        "region result {} ({} bytes touched)",
        here + there,
        buf.len()
    );
    for (name, set) in &sets {
        match set {
            Some(set) => {
                let c = set.read()?;
                match c.scaled().value() {
                    Some(v) => println!("{v:>16} {name}"),
                    None => println!("{:>16} {name}", "<not counted>"),
                }
            }
            None => println!("{:>16} {name}", "<not supported>"),
        }
    }
    Ok(())
}
