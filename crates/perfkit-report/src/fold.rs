//! Folding samples as they are read, for reports that need sums, not each sample.
//!
//! A report adds up samples of one thread, thread name, stack and event (and CPU, when it
//! sorts or filters by CPU): it never looks at a sample's own time. The builder, asked to
//! ([`Aggregation`]), keeps one [`Sample`] per such group, with the periods summed and
//! the samples counted ([`Sample::count`]), instead of one per sample: the profile then
//! grows with what a report can show (distinct stacks and threads), not with the file.
//!
//! The groups stay in the order of their first samples, the order a report meets its rows
//! in (perf's insertion order, which decides its ties), and a group's [`Sample::time`] is
//! its first sample's. The thread name a sample counts for is the one it had at its time,
//! and a `COMM` record can carry the same timestamp as samples read before it: samples
//! wait until the time moves on before they are folded, so every name at their time is
//! known by then. The same holds for the thread's cgroup namespace (`--sort cgroup_id`).
//!
//! Tracepoint samples that keep their RAW data (`--sort trace`, perf's default for a file
//! of tracepoints only) fold by the text their row prints ([`TraceRows`]): samples whose
//! fields print alike share one payload, the first one met, and fold like other samples,
//! so memory follows the distinct rows, not the tracepoint hits. Context switches, which
//! only timelines show, are not kept.

use crate::{Profile, Sample, StackId, ThreadId};
use rustc_hash::FxHashMap as HashMap;

/// What a folded profile keeps apart (see the [module](self)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Aggregation {
    /// Keep samples of different CPUs apart (`--sort cpu`, `--cpu`); otherwise a folded
    /// sample has no CPU.
    pub cpu: bool,
}

impl Aggregation {
    /// Fold samples, keeping CPUs apart or not.
    pub fn new(cpu: bool) -> Aggregation {
        Aggregation { cpu }
    }
}

/// (thread, index of its name and of its cgroup namespace at the sample's time, CPU,
/// event, stack, chain broken, cgroup, RAW payload).
type GroupKey = (
    ThreadId,
    u32,
    u32,
    Option<u32>,
    u32,
    Option<StackId>,
    bool,
    u16,
    Option<u32>,
);

/// The folding state of a builder.
#[derive(Debug, Default)]
pub(crate) struct Folder {
    how: Aggregation,
    /// Samples of the latest timestamp, not folded yet, with their class ids
    /// ([`crate::classes`]; `u32::MAX`: none).
    pending: Vec<(Sample, u32)>,
    /// Each group's sample in [`Profile::samples`].
    groups: HashMap<GroupKey, u32>,
    /// By class id: the key and group of the class's last sample. A sample of the class
    /// with the same key joins that group without a lookup in `groups` (forgotten when a
    /// group is full and a successor takes its key).
    classes: Vec<Option<(GroupKey, u32)>>,
}

impl Folder {
    pub fn new(how: Aggregation) -> Folder {
        Folder {
            how,
            ..Folder::default()
        }
    }

    /// What it keeps apart.
    pub fn how(&self) -> Aggregation {
        self.how
    }

    /// Take a sample (records come in time order).
    #[cfg(test)]
    pub fn push(&mut self, p: &mut Profile, s: Sample) {
        self.push_class(p, s, None);
    }

    /// [`push`](Self::push) a sample of class `class` ([`crate::classes`]), if it has one.
    pub fn push_class(&mut self, p: &mut Profile, s: Sample, class: Option<u32>) {
        if self.pending.first().is_some_and(|f| f.0.time != s.time) {
            self.flush(p);
        }
        self.pending.push((s, class.unwrap_or(u32::MAX)));
    }

    /// Samples not folded yet.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Forget the samples not folded yet and every group.
    pub fn clear(&mut self) {
        self.pending.clear();
        self.groups.clear();
        self.classes.clear();
    }

    /// Fold the samples waiting.
    pub fn flush(&mut self, p: &mut Profile) {
        let mut pending = std::mem::take(&mut self.pending);
        for (s, class) in pending.drain(..) {
            self.fold_class(p, s, (class != u32::MAX).then_some(class));
        }
        self.pending = pending;
    }

    /// Fold one sample now (one that stands for [`Sample::count`] like samples, the
    /// decoding threads' merge, adds them all): the name its thread has at its time
    /// picks its group, so the samples waiting go first and any name given at its time
    /// must be known ([`crate::batch`]).
    /// `class`: its class id ([`crate::classes`]), if it has one.
    pub fn fold_class(&mut self, p: &mut Profile, mut s: Sample, class: Option<u32>) {
        if !self.how.cpu {
            s.cpu = None;
        }
        let thread = &p.threads[s.thread as usize];
        let name = thread
            .names
            .iter()
            .rposition(|(t, _)| *t <= s.time)
            .map_or(u32::MAX, |i| i as u32);
        let cgroup_ns = thread
            .cgroup_ns
            .iter()
            .rposition(|(t, _)| *t <= s.time)
            .map_or(u32::MAX, |i| i as u32);
        let key = (
            s.thread,
            name,
            cgroup_ns,
            s.cpu,
            s.event,
            s.stack,
            s.chain_broken,
            s.cgroup,
            s.raw,
        );
        let next = p.samples.len() as u32;
        let slot = class.map(|c| c as usize);
        let known = slot
            .and_then(|c| self.classes.get(c).copied().flatten())
            .filter(|(k, _)| *k == key);
        let i = match known {
            Some((_, i)) => i,
            None => *self.groups.entry(key).or_insert(next),
        };
        let group = match p.samples.get_mut(i as usize) {
            // (A group of 2^32 samples is full: the next go to a new one.)
            Some(g) if i != next && g.count <= u32::MAX - s.count => {
                g.period += s.period;
                g.count += s.count;
                i
            }
            _ => {
                if i != next {
                    // A full group's successor: classes may remember the full one.
                    self.classes.clear();
                }
                self.groups.insert(key, next);
                p.samples.push(s);
                next
            }
        };
        if let Some(c) = slot
            && known.is_none()
        {
            if self.classes.len() <= c {
                self.classes.resize(c + 1, None);
            }
            self.classes[c] = Some((key, group));
        }
    }
}

/// Tracepoint payloads kept once per printed row: a payload whose text (as the `trace`
/// key prints it, [`crate::TraceEvent::text_into`]) was met before for the same event is
/// not kept again, the sample takes the first one's index instead. The text is all a
/// report shows of a payload, so the rows and sums are those of every payload kept.
#[derive(Debug, Default)]
pub(crate) struct TraceRows {
    /// Per event: each text met and the index of its payload in [`Profile::raw`].
    rows: Vec<HashMap<Box<str>, u32>>,
    /// The text being looked up (one buffer for every sample).
    text: String,
    /// The kernel's symbols for `%pS` were asked for ([`Profile::trace_kernel`]).
    pub symbols_read: bool,
}

impl TraceRows {
    /// The index in [`Profile::raw`] of a payload of `event` that prints as `raw` does,
    /// keeping `raw` when none does yet. (The kernel's symbols for `%pS` must be in
    /// [`Profile::trace_kernel`] already.)
    pub fn raw_index(&mut self, p: &mut Profile, event: u32, raw: &[u8]) -> u32 {
        let Some(tr) = p
            .events
            .get(event as usize)
            .and_then(|e| e.trace.as_deref())
        else {
            return p.raw.push(raw);
        };
        self.text.clear();
        tr.text_into(raw, &p.trace_kernel, &mut self.text);
        let e = event as usize;
        if self.rows.len() <= e {
            self.rows.resize_with(e + 1, HashMap::default);
        }
        if let Some(&i) = self.rows[e].get(self.text.as_str()) {
            return i;
        }
        let i = p.raw.push(raw);
        self.rows[e].insert(self.text.as_str().into(), i);
        i
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;

    #[test]
    fn like_samples_fold_in_first_seen_order_and_keep_their_sums() {
        let src = sample_profile();
        let mut p = src.clone();
        p.samples.clear();
        let mut f = Folder::new(Aggregation::new(false));
        for s in &src.samples {
            f.push(&mut p, *s);
        }
        f.flush(&mut p);
        // Three stacks, each on one thread: three groups, in the order of first samples.
        assert_eq!(p.samples.len(), 3);
        let stacks: Vec<_> = p.samples.iter().map(|s| s.stack).collect();
        assert_eq!(
            stacks,
            [
                src.samples[0].stack,
                src.samples[7].stack,
                src.samples[9].stack
            ]
        );
        assert_eq!(
            p.samples.iter().map(|s| u64::from(s.count)).sum::<u64>(),
            100
        );
        assert_eq!(
            p.samples.iter().map(|s| s.period).sum::<u64>(),
            src.samples.iter().map(|s| s.period).sum::<u64>()
        );
        assert_eq!(
            p.samples[0].time, src.samples[0].time,
            "the first sample's time"
        );
        assert!(p.samples.iter().all(|s| s.cpu.is_none()));
    }

    #[test]
    fn a_name_taken_at_a_samples_time_counts_for_samples_read_before_it() {
        let src = sample_profile();
        let mut p = src.clone();
        p.samples.clear();
        let mut f = Folder::new(Aggregation::new(true));
        let t = src.samples[0].thread;
        let at = src.samples[1].time;
        f.push(&mut p, src.samples[0]);
        f.push(&mut p, src.samples[1]);
        // The COMM comes after the sample of its own timestamp.
        p.threads[t as usize].names.push((at, "renamed".into()));
        f.push(&mut p, src.samples[2]);
        f.flush(&mut p);
        assert_eq!(p.samples.len(), 3, "{:?}", p.samples);
        assert_eq!(p.samples[1].time, at);
        assert!(p.samples.iter().all(|s| s.count == 1));
    }
}
