//! Folded stacks: `comm;outermost;...;leaf count`, one line per distinct stack, the input
//! of `flamegraph.pl`, inferno and most flamegraph tools. Counts are samples, or
//! nanoseconds for off-CPU time ([`super::weight`]); when several events have samples,
//! each line starts with its event's name, so each event is its own tower.

use crate::{Frame, Func, Profile};
use std::collections::HashMap;
use std::io::{self, Write};

/// How to fold stacks.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct FoldOptions {
    /// Suffix frames with the annotations flamegraph tools colour by (FlameGraph's and
    /// inferno's `--color=java`): `_[k]` kernel, `_[j]` JIT-compiled or interpreted code,
    /// `_[i]` inlined. The tools strip them from the names they draw.
    pub annotate: bool,
    /// Cut stacks deeper than this many boxes (the event and comm boxes included): the root
    /// side is kept
    /// and the leaf, and the frames between them become one `… N frames` box. 0: no limit.
    pub max_depth: usize,
}

/// The name of the box that stands for `n` frames cut out of a deep stack.
pub fn elided(n: usize) -> String {
    format!("\u{2026} {n} frames")
}

/// Whether a function is JIT-compiled or interpreted code: named through a JIT's perf map
/// (`/tmp/perf-PID.map`), an injected `jitted-*.so`, or unnamed in anonymous memory.
pub fn is_jit(f: &Func) -> bool {
    f.dso.starts_with("[JIT]")
        || f.dso.starts_with("//anon")
        || (f.dso.starts_with("/tmp/perf-") && f.dso.ends_with(".map"))
        || f.dso
            .rsplit('/')
            .next()
            .is_some_and(|n| n.starts_with("jitted-"))
}

fn annotated(f: &Func, fr: &Frame, annotate: bool) -> String {
    let name = f.name.replace(';', ":");
    if !annotate {
        return name;
    }
    let tag = if f.kernel {
        "_[k]"
    } else if fr.inlined {
        "_[i]"
    } else if is_jit(f) {
        "_[j]"
    } else {
        ""
    };
    name + tag
}

/// The folded lines, sorted, with their counts (samples, or nanoseconds off the CPU).
pub fn lines(p: &Profile) -> Vec<String> {
    lines_with(p, &FoldOptions::default())
}

/// The folded lines with options, sorted, with their counts.
pub fn lines_with(p: &Profile, opts: &FoldOptions) -> Vec<String> {
    let weights = super::weight::Weights::of(p);
    let mut counts: HashMap<(u32, u32, Option<u32>), u64> = HashMap::new();
    for s in &p.samples {
        let event = if weights.several() { s.event } else { 0 };
        *counts.entry((event, s.thread, s.stack)).or_default() += weights.weight(s);
    }
    let mut folded: HashMap<String, u64> = HashMap::new();
    let mut frames: Vec<String> = Vec::new();
    for ((event, thread, stack), n) in counts {
        frames.clear();
        if weights.several() {
            let name = p.events.get(event as usize).map_or("", |e| e.name.as_str());
            frames.push(name.replace(';', ":"));
        }
        frames.push(p.threads[thread as usize].name().replace(';', ":"));
        let mut leaf_first: Vec<String> = p
            .stack_frames(stack)
            .map(|f| annotated(p.func_of(f), &p.frames[f as usize], opts.annotate))
            .collect();
        leaf_first.reverse();
        frames.extend(leaf_first);
        if opts.max_depth >= 3 && frames.len() > opts.max_depth {
            let keep = opts.max_depth - 2;
            let cut = frames.len() - keep - 1;
            let leaf = frames.pop().unwrap_or_default();
            frames.truncate(keep);
            frames.push(elided(cut));
            frames.push(leaf);
        }
        *folded.entry(frames.join(";")).or_default() += n;
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

    #[test]
    fn annotations_and_depth_bound() {
        let mut o = super::FoldOptions {
            annotate: true,
            ..super::FoldOptions::default()
        };
        let lines = super::lines_with(&sample_profile(), &o);
        assert!(lines.contains(&"app;main;work;do_syscall_64_[k] 10".to_string()));
        assert!(lines.contains(&"app;main;work;hot_loop 70".to_string()));
        // Depth 3: comm, then the cut box, then the leaf.
        o.max_depth = 3;
        let lines = super::lines_with(&sample_profile(), &o);
        assert!(
            lines.contains(&"app;\u{2026} 2 frames;hot_loop 70".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"app-worker;main;idle 20".to_string()),
            "{lines:?}"
        );
    }

    #[test]
    fn off_cpu_time_is_a_root_of_its_own_in_nanoseconds() {
        let p = crate::model::testing::off_cpu_profile();
        let o = super::FoldOptions {
            max_depth: 4,
            ..super::FoldOptions::default()
        };
        let lines = super::lines_with(&p, &o);
        // The event's box counts in the depth bound; cpu-clock beside off-CPU time weighs
        // its period (250 us a sample).
        assert!(
            lines.contains(&"cpu-clock;app;\u{2026} 2 frames;hot_loop 17500000".to_string()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"offcpu-time;app-worker;main;idle 5000000".to_string()),
            "{lines:?}"
        );
    }
}
