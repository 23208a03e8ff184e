//! Read a group of events in one `read(2)` (`PERF_FORMAT_GROUP`) and scale them for
//! multiplexing: software events always run, so they come out exact; on a machine with
//! a PMU, a group larger than its counters shows how scaling reports it.
//!
//! `cargo run -p perfkit --example group_read`

use perfkit::{Attr, Group, Scaled, Software, Target};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let me = Target::this_thread();
    let mut group = Group::open(&Attr::new(Software::TaskClock), &me)?;
    let faults = group.add(&Attr::new(Software::PageFaults), &me)?;
    let switches = group.add(&Attr::new(Software::ContextSwitches), &me)?;
    let leader = group.leader();

    group.enable()?;
    let buf = vec![7u8; 4 << 20];
    std::thread::sleep(std::time::Duration::from_millis(5));
    let sum: u64 = buf.iter().map(|&b| u64::from(b)).sum();
    group.disable()?;

    let counts = group.read()?;
    println!(
        "group enabled {} ns, running {} ns (sum {sum})",
        counts.time_enabled.unwrap_or(0),
        counts.time_running.unwrap_or(0)
    );
    for (name, member) in [
        ("task-clock", leader),
        ("page-faults", faults),
        ("context-switches", switches),
    ] {
        let c = &counts[member];
        let how = match c.scaled() {
            Scaled::Exact(v) => format!("{v} (exact)"),
            Scaled::Scaled {
                estimate,
                running_fraction,
                ..
            } => format!("{estimate} (scaled, ran {:.0}%)", running_fraction * 100.0),
            Scaled::NotCounted => "<not counted>".into(),
        };
        println!("{name:>17}: {how}   id {}", c.id.unwrap_or(0));
    }
    Ok(())
}
