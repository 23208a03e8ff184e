//! Decoded inputs on their way from a decoding thread to the builder, with like samples
//! merged on the way when the builder folds them (`report`): the aggregation's per-sample
//! work then runs on the decoding threads, and the builder's on what is distinct.
//!
//! A batch holds its inputs in the decoder's order: side-band inputs as they are, owned
//! ([`Input::into_static`]), and samples in runs (the samples between two side-band inputs).
//! In a run, a sample with the same thread, event, cgroup, cpumode and callchain (and CPU,
//! when the report keeps CPUs apart; the ip, when there is no callchain) as an earlier one
//! of the run is merged into it, which then stands for both. Tracepoint samples (RAW data)
//! and samples with user stacks (DWARF unwinding) are never merged.
//!
//! The builder must end with the profile the single-threaded path builds, byte for byte
//! ([`Batch::replay`]). Within a run nothing changes the maps, the names or the chains'
//! stacks ([`crate::chain_memo`]): a merged sample's others would get its stack. A sample
//! folds under the name its thread had at its time, known once the time moves on
//! ([`crate::fold`]): every sample of a run but its last timestamp's is folded within the
//! run, under the names from before it; the merged samples fold at once if each one's
//! thread had one name from the earliest to the latest of its others, and the last
//! timestamp's samples go one by one as before. Groups then appear in the order of their
//! first samples, with the same sums; each sample's time still moves its thread's first
//! and last times. Where a merged sample's thread changed names within its times, the run
//! is given one sample at a time, as read. (A group of 2^32 samples would split one
//! merge later than on one thread: no file comes near.)

use crate::build::{Builder, Input, SampleInput, SampleSink, UserStack};
use crate::classes::{ChainKey, Classes, chain_hash};
use crate::fold::Aggregation;
use crate::load::Fed;
use rustc_hash::FxHashMap as HashMap;
use std::hash::{Hash, Hasher};
use std::ops::Range;
use std::sync::Arc;

/// Inputs per batch when like samples are merged: the more a batch holds, the more of its
/// samples merge (gen-perf-data's 1.5M samples: 1.5 samples a head in batches of 4096,
/// 2.4 in batches of 32768), and the more memory waits between the threads (about 150
/// bytes an input).
pub(crate) const MERGED_BATCH: usize = 16384;

/// A sample ([`Input::Sample`]'s fields: its slices empty, kept as ranges into the
/// batch's buffers), and the like samples of its run merged into it.
struct Head {
    sample: SampleInput<'static>,
    callchain: Range<usize>,
    /// The user stack's abi, mask, registers and stack copy.
    user: Option<(u64, u64, Range<usize>, Range<usize>)>,
    raw: Option<Range<usize>>,
    /// Samples it stands for (itself included).
    count: u32,
    /// Their earliest and latest times.
    times: (u64, u64),
    /// Where it is in [`Batch::seq`].
    first: usize,
    /// Its class ([`crate::classes`]), if it has an id.
    class: Option<u32>,
}

/// One sample as read: its head (itself, or the sample it is merged into), its own time
/// and period.
#[derive(Clone, Copy)]
struct Seen {
    head: u32,
    time: u64,
    period: u64,
}

enum Entry {
    /// Samples [`Batch::seq`]`[seq]`, whose heads are [`Batch::heads`]`[heads]`.
    Run {
        seq: Range<usize>,
        heads: Range<usize>,
    },
    Input(Input<'static>),
    Mark(crate::Mark),
}

/// Inputs in the decoder's order (see the [module](self)); `done` is how far into the data
/// section the reader was.
#[derive(Default)]
pub(crate) struct Batch {
    entries: Vec<Entry>,
    heads: Vec<Head>,
    seq: Vec<Seen>,
    words: Vec<u64>,
    bytes: Vec<u8>,
    pub(crate) done: usize,
    /// Merge like samples (the builder folds them so).
    fold: Option<Aggregation>,
    /// The builder's sample classes, to give each merged sample's ([`crate::classes`]).
    classes: Option<Arc<Classes>>,
    /// Give no classes (the builder, waiting for this thread, does their work faster).
    no_classes: bool,
    /// Heads by the hash of what they are merged by (stale ones, of earlier runs, are
    /// told by their index).
    index: HashMap<u64, u32>,
    /// Where the open run starts in `seq` and `heads`.
    run: (usize, usize),
    /// Replay's scratch: each head's thread, and its count and period less the run's
    /// last timestamp's samples.
    scratch: Vec<(u32, u32, u64)>,
    /// Inputs and marks taken.
    taken: usize,
    /// Runs with merged samples given one by one (for tests).
    #[cfg(test)]
    unmerged: usize,
}

/// What merged samples must share besides their callchain (see the [module](self)), in
/// two parts: what the chain's stack depends on ([`crate::classes`]), and event, thread,
/// cgroup and CPU (`cpu`: the report keeps CPUs apart).
fn class_key(s: &SampleInput<'_>, cpu: bool) -> (ChainKey, (u32, i32, u64, Option<u32>)) {
    (
        (
            s.pid,
            s.kernel,
            if s.callchain.is_empty() { s.ip } else { 0 },
        ),
        (s.event, s.tid, s.cgroup, if cpu { s.cpu } else { None }),
    )
}

impl Batch {
    /// An empty batch; `fold`: how the builder folds samples (None: it keeps each), and
    /// its sample classes ([`Builder::merging`]).
    pub(crate) fn new(fold: Option<(Aggregation, Arc<Classes>)>) -> Batch {
        let (fold, classes) = fold.unzip();
        Batch {
            fold,
            classes,
            ..Batch::default()
        }
    }

    /// Forget the inputs, keeping the buffers.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.heads.clear();
        self.seq.clear();
        self.words.clear();
        self.bytes.clear();
        self.index.clear();
        self.run = (0, 0);
        self.taken = 0;
    }

    /// Whether to give the samples pushed from now on their class ids (with classes,
    /// [`new`](Self::new)): it takes this thread some of the builder's work, worth it
    /// only while the builder is the slower of the two.
    pub(crate) fn give_classes(&mut self, on: bool) {
        self.no_classes = !on;
    }

    /// Inputs and marks taken (a sample merged into another counts).
    pub(crate) fn len(&self) -> usize {
        self.taken
    }

    fn words(&mut self, w: &[u64]) -> Range<usize> {
        let start = self.words.len();
        self.words.extend_from_slice(w);
        start..self.words.len()
    }

    fn bytes(&mut self, b: &[u8]) -> Range<usize> {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(b);
        start..self.bytes.len()
    }

    /// End the open run of samples, if any.
    fn close_run(&mut self) {
        let (seq, heads) = self.run;
        if self.seq.len() > seq {
            self.entries.push(Entry::Run {
                seq: seq..self.seq.len(),
                heads: heads..self.heads.len(),
            });
        }
        self.run = (self.seq.len(), self.heads.len());
    }

    /// Take what the decoder gave.
    pub(crate) fn push(&mut self, fed: Fed<'_>) {
        self.taken += 1;
        match fed {
            Fed::Mark(m) => {
                self.close_run();
                self.entries.push(Entry::Mark(m));
            }
            Fed::Input(Input::Sample(sample)) => self.sample(sample),
            Fed::Input(input) => {
                self.close_run();
                if let Some(input) = input.into_static() {
                    self.entries.push(Entry::Input(input));
                }
            }
        }
    }

    fn sample(&mut self, s: SampleInput<'_>) {
        let merge = match self.fold {
            Some(how) if s.user.is_none() && s.raw.is_none() => {
                let key = class_key(&s, how.cpu);
                let chain = chain_hash(&key.0, s.callchain);
                let mut h = rustc_hash::FxHasher::default();
                (chain, key.1).hash(&mut h);
                Some((key, h.finish(), chain))
            }
            _ => None,
        };
        let cpu_apart = self.fold.is_some_and(|f| f.cpu);
        if let Some((key, hash, _)) = merge
            && let Some(&i) = self.index.get(&hash)
            && i as usize >= self.run.1
        {
            let h = &self.heads[i as usize];
            let chain = &self.words[h.callchain.clone()];
            let head = SampleInput {
                callchain: chain,
                ..h.sample
            };
            if class_key(&head, cpu_apart) == key && *chain == *s.callchain && h.count < u32::MAX {
                let h = &mut self.heads[i as usize];
                h.count += 1;
                h.times = (h.times.0.min(s.time), h.times.1.max(s.time));
                self.seq.push(Seen {
                    head: i,
                    time: s.time,
                    period: s.period,
                });
                return;
            }
        }
        let class = merge.and_then(|(key, _, chain)| {
            self.classes
                .as_ref()
                .filter(|_| !self.no_classes)
                .and_then(|c| c.id(chain, key.0, s.callchain, key.1))
        });
        let i = self.heads.len() as u32;
        let head = Head {
            callchain: self.words(s.callchain),
            user: s
                .user
                .map(|u| (u.abi, u.mask, self.words(u.regs), self.bytes(u.stack))),
            raw: s.raw.map(|r| self.bytes(r)),
            sample: SampleInput {
                callchain: &[],
                user: None,
                raw: None,
                ..s
            },
            count: 1,
            times: (s.time, s.time),
            first: self.seq.len(),
            class,
        };
        self.heads.push(head);
        if let Some((_, hash, _)) = merge {
            self.index.insert(hash, i);
        }
        self.seq.push(Seen {
            head: i,
            time: s.time,
            period: s.period,
        });
    }

    /// The sample of head `h` with `time` and `period`.
    fn input(&self, h: usize, time: u64, period: u64) -> SampleInput<'_> {
        let h = &self.heads[h];
        SampleInput {
            time,
            period,
            callchain: &self.words[h.callchain.clone()],
            user: h.user.as_ref().map(|(abi, mask, regs, stack)| UserStack {
                abi: *abi,
                mask: *mask,
                regs: &self.words[regs.clone()],
                stack: &self.bytes[stack.clone()],
            }),
            raw: h.raw.clone().map(|r| &self.bytes[r]),
            ..h.sample
        }
    }

    /// Give every input to the builder as the single-threaded path would have (see the
    /// [module](self); samples going to `sink` when it streams, [`Builder::push_to`]).
    pub(crate) fn replay(&mut self, b: &mut Builder, sink: &mut SampleSink<'_>) {
        self.close_run();
        let mut entries = std::mem::take(&mut self.entries);
        for e in entries.drain(..) {
            match e {
                Entry::Mark(m) => b.mark(m),
                Entry::Input(i) => b.push_to(i, sink),
                Entry::Run { seq, heads } => {
                    #[cfg(test)]
                    if heads.len() < seq.len() && b.folding().is_some() {
                        self.unmerged += 1;
                    }
                    if !self.replay_merged(b, seq.clone(), heads) {
                        for s in &self.seq[seq] {
                            let class = self.heads[s.head as usize].class;
                            b.push_class(
                                self.input(s.head as usize, s.time, s.period),
                                class,
                                sink,
                            );
                        }
                    }
                }
            }
        }
        self.entries = entries;
    }

    /// Give the builder a run's merged samples, if that gives the profile the samples
    /// one by one give (see the [module](self)); false: nothing was given.
    fn replay_merged(&mut self, b: &mut Builder, seq: Range<usize>, heads: Range<usize>) -> bool {
        if heads.len() == seq.len() || b.folding().is_none() {
            return false;
        }
        let run = &self.seq[seq.clone()];
        // The samples of the run's last timestamp: they may fold under a name given later.
        let last = run[run.len() - 1].time;
        let tail = seq.start
            + run
                .iter()
                .rposition(|s| s.time != last)
                .map_or(0, |i| i + 1);
        if tail == seq.start
            || self.heads[heads.clone()].iter().any(|h| {
                h.count > 1 && !b.one_name_between(h.sample.pid, h.sample.tid, h.times.0, h.times.1)
            })
        {
            return false;
        }
        #[cfg(test)]
        {
            self.unmerged -= 1;
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.resize(heads.len(), (u32::MAX, 0, 0));
        for s in &self.seq[seq.start..tail] {
            let x = &mut scratch[s.head as usize - heads.start];
            x.1 += 1;
            x.2 += s.period;
        }
        // The samples waiting fold before the run's, under the same names.
        b.flush_folder();
        for (h, x) in heads.clone().zip(scratch.iter_mut()) {
            if self.heads[h].first < tail {
                let time = self.heads[h].sample.time;
                x.0 = b.push_merged(self.input(h, time, x.2), x.1, self.heads[h].class);
            }
        }
        for s in &self.seq[seq.start..tail] {
            let thread = scratch[s.head as usize - heads.start].0;
            if thread != u32::MAX {
                b.touch_thread(thread, s.time);
            }
        }
        for s in &self.seq[tail..seq.end] {
            let class = self.heads[s.head as usize].class;
            b.push_class(
                self.input(s.head as usize, s.time, s.period),
                class,
                &mut |_, _| {},
            );
        }
        self.scratch = scratch;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EventDesc;
    use perfkit_symbols::Options;
    use perfkit_sys as sys;
    use std::borrow::Cow;

    /// Records of a few threads with names given between, at and out of their samples'
    /// times, tracepoint-like RAW samples, one thread that never gets a name, several CPUs
    /// and cgroups: each input with the batch it is cut into after it (`true`).
    fn records() -> Vec<(Input<'static>, bool)> {
        const CHAINS: [&[u64]; 4] = [
            &[sys::PERF_CONTEXT_USER, 0x1000, 0x2000, 0x3000],
            &[sys::PERF_CONTEXT_USER, 0x1000, 0x2100],
            &[
                sys::PERF_CONTEXT_KERNEL,
                0xffff_ffff_8100_0000,
                sys::PERF_CONTEXT_USER,
                0x1000,
            ],
            &[],
        ];
        let mut out = Vec::new();
        let comm = |tid: i32, name: &'static str, time: u64| Input::Comm {
            pid: 10,
            tid,
            name: Cow::Borrowed(name),
            exec: false,
            time,
        };
        let mut rng = 7u64;
        let mut next = move |n: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % n
        };
        out.push((comm(10, "main", 1), false));
        out.push((comm(11, "worker", 1), false));
        let mut time = 100;
        for i in 0..3000u64 {
            // Several samples share a timestamp (one per CPU at each tick).
            if next(3) == 0 {
                time += 10;
            }
            let tid = [10, 11, 12][next(3) as usize];
            let raw: Option<&'static [u8]> = (next(50) == 0).then_some(&b"rawdata"[..]);
            out.push((
                Input::Sample(SampleInput {
                    event: u32::from(next(8) == 0),
                    pid: 10,
                    tid,
                    time,
                    cpu: Some(next(2) as u32),
                    period: 1000 + next(100),
                    ip: 0x1000 + next(2) * 0x10,
                    kernel: false,
                    callchain: CHAINS[next(4) as usize],
                    user: None,
                    raw,
                    cgroup: if next(8) == 0 { 5 } else { 0 },
                }),
                next(800) == 0,
            ));
            if i == 1200 || i == 2100 {
                // The process maps its code anew: the stacks of the classes met
                // before change (their frames are in another object).
                let path = if i == 1200 {
                    "/nonexistent/a.so"
                } else {
                    "/nonexistent/b.so"
                };
                out.push((
                    Input::Mmap {
                        pid: 10,
                        mapping: perfkit_symbols::Mapping {
                            start: 0x1000,
                            end: 0x3000,
                            pgoff: 0,
                            path: path.into(),
                            build_id: None,
                        },
                    },
                    false,
                ));
            }
            match i % 500 {
                // A name at the latest samples' time, given after them.
                100 => out.push((comm(11, "renamed", time), false)),
                // A name from before the samples read after it, and one from after them
                // (out of order): the samples around it fold under different names.
                250 => out.push((comm(10, "early", time.saturating_sub(25)), false)),
                260 => out.push((comm(11, "late", time + 40), false)),
                400 => out.push((Input::Lost { count: 3 }, false)),
                _ => {}
            }
        }
        out
    }

    fn builder(how: Option<Aggregation>) -> Builder {
        let event = |name: &str, trace| EventDesc {
            name: name.into(),
            callchain: true,
            trace,
        };
        let mut b = Builder::new(
            vec![event("cpu-clock", None), event("task-clock", None)],
            Options::default(),
        );
        if let Some(how) = how {
            b.aggregate(how);
        }
        b
    }

    /// What a report can see of a profile.
    fn seen(b: Builder) -> String {
        let p = b.finish();
        format!(
            "{:?}\n{:?}\n{} stacks {} frames {:?}",
            p.samples,
            p.threads,
            p.stacks.len(),
            p.frames.len(),
            p.cgroups
        )
    }

    #[test]
    fn merged_runs_build_the_profile_samples_one_by_one_build() {
        let records = records();
        for how in [
            None,
            Some(Aggregation::new(false)),
            Some(Aggregation::new(true)),
        ] {
            let mut one = builder(how);
            for (r, _) in &records {
                one.push(r.clone());
            }
            let mut merged = builder(how);
            let mut batch = Batch::new(merged.merging());
            let mut sink = |_: &crate::Profile, _: &[crate::Sample]| {};
            let (mut heads, mut samples) = (0, 0);
            for (r, cut) in &records {
                batch.push(Fed::Input(r.clone()));
                if *cut {
                    heads += batch.heads.len();
                    samples += batch.seq.len();
                    batch.replay(&mut merged, &mut sink);
                    batch.clear();
                }
            }
            heads += batch.heads.len();
            samples += batch.seq.len();
            batch.replay(&mut merged, &mut sink);
            assert_eq!(samples, 3000);
            if how.is_some() {
                assert!(heads * 2 < samples, "{heads} heads for {samples} samples");
                // Most heads found what their class was made into before.
                assert!(
                    merged.class_hits * 2 > heads,
                    "{} of {heads} heads found by their class",
                    merged.class_hits
                );
                // Runs where a name changed within a merged sample's times.
                assert!(batch.unmerged > 0, "every run merged");
            }
            let (one, merged) = (seen(one), seen(merged));
            assert!(one.len() > 1000);
            assert_eq!(one, merged, "{how:?}");
        }
    }
}
