//! Read a counter from user space through its user page (`rdpmc` on x86_64, `mrs` on
//! arm64) when the kernel gives the event a hardware counter index, with `read(2)` as
//! the fallback; prints which source served each read.
//!
//! `cargo run -p perfkit --example user_read`
//!
//! Without a hardware PMU (virtual machines) instructions are not supported and the
//! software task-clock is read with `read(2)`.

use perfkit::{Attr, Hardware, ReadSource, SelfMonitor, Software, Target};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let me = Target::this_thread();
    let hw = perfkit::arm64_user_access(Attr::new(Hardware::Instructions), true);
    let (name, monitor) = match SelfMonitor::open(&hw, &me) {
        Ok(m) => ("instructions", m),
        Err(e) if e.is_not_supported() => {
            println!("instructions: not supported here ({e}); using task-clock");
            (
                "task-clock",
                SelfMonitor::open(&Attr::new(Software::TaskClock), &me)?,
            )
        }
        Err(e) => return Err(e.into()),
    };
    monitor.counter().enable()?;
    let mut last = monitor.read()?;
    for round in 1..=3 {
        let v: u64 = (0..1_000_000u64).map(std::hint::black_box).sum();
        let now = monitor.read()?;
        let source = match now.source {
            ReadSource::UserPage => "user page (no system call)",
            ReadSource::Syscall => "read(2)",
        };
        println!(
            "round {round}: {name} +{} via {source} (sum {v})",
            now.value - last.value
        );
        last = now;
    }
    if let Some(why) = monitor.why_not_user_readable() {
        println!("why read(2): {why}");
    }
    Ok(())
}
