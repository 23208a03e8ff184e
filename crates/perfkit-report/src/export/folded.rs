//! Folded stacks: `comm;outermost;...;leaf count`, one line per distinct stack, the input
//! of `flamegraph.pl`, inferno and most flamegraph tools. Counts are samples, or
//! nanoseconds for off-CPU time ([`super::weight`]); when several events have samples,
//! each line starts with its event's name, so each event is its own tower.

use crate::Profile;
use std::collections::HashMap;
use std::io::{self, Write};

/// The folded lines, sorted, with sample counts.
pub fn lines(p: &Profile) -> Vec<String> {
    let weights = super::weight::Weights::of(p);
    let mut counts: HashMap<(u32, u32, Option<u32>), u64> = HashMap::new();
    for s in &p.samples {
        let event = if weights.several() { s.event } else { 0 };
        *counts.entry((event, s.thread, s.stack)).or_default() += weights.weight(s);
    }
    let mut folded: HashMap<String, u64> = HashMap::new();
    let mut frames = Vec::new();
    for ((event, thread, stack), n) in counts {
        frames.clear();
        frames.extend(p.stack_frames(stack).map(|f| p.func_of(f).name.as_str()));
        let mut line = String::new();
        if weights.several() {
            let name = p.events.get(event as usize).map_or("", |e| e.name.as_str());
            line.push_str(&name.replace(';', ":"));
            line.push(';');
        }
        line.push_str(&p.threads[thread as usize].name().replace(';', ":"));
        for name in frames.iter().rev() {
            line.push(';');
            line.push_str(&name.replace(';', ":"));
        }
        *folded.entry(line).or_default() += n;
    }
    let mut out: Vec<String> = folded
        .into_iter()
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect();
    out.sort_unstable();
    out
}

/// Write the folded lines.
pub fn write(p: &Profile, mut w: impl Write) -> io::Result<()> {
    for l in lines(p) {
        writeln!(w, "{l}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

    #[test]
    fn folded_counts() {
        let lines = super::lines(&sample_profile());
        assert_eq!(
            lines,
            [
                "app-worker;main;idle 20",
                "app;main;work;do_syscall_64 10",
                "app;main;work;hot_loop 70",
            ]
        );
    }
}
