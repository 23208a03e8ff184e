//! Off-CPU time without BPF: how long each task slept, and where, from
//! `sched:sched_switch` samples and the kernel's context-switch records.
//!
//! perf 6.1 (`perf record --off-cpu`) attaches a BPF program to `sched_switch` that
//! remembers when a task went to sleep and with which user stack, adds the time when it
//! comes back, and at the end writes one sample of an `offcpu-time` event (a bpf-output
//! software event) per (task, stack) with the time slept in nanoseconds as its period.
//! perfkit gets the same numbers from the kernel's perf interface alone:
//!
//! * a `sched:sched_switch` counter with period 1 on every place of the recording samples
//!   the task being switched out, with its user call chain (`exclude_callchain_kernel`,
//!   as perf's `BPF_F_USER_STACK`) and the tracepoint's `prev_state`;
//! * the same counter has `context_switch` set, so the kernel also writes a
//!   `PERF_RECORD_SWITCH` when the task is switched back in, with its time.
//!
//! A sleep is the switch-out sample of a task in `S` or `D` (perf's `can_record`: a task
//! preempted while runnable is not off-CPU, nor is an idle kernel thread or a task without
//! a user stack) and the next switch-in of that task. These counters have their own rings
//! that the [`Recorder`](crate::Recorder) drains and folds, so the file holds only the
//! summed samples, laid out as perf's: `PERF_CONTEXT_USER` then the user frames, the first
//! frame as the IP, the CPU as 0. One deliberate difference: perf stamps them with fake
//! times from `~0 << 32` up ("put the samples at last"); perfkit stamps them just after
//! the last real time of the recording, so they also sort last, and `script`/`--time`
//! show times inside the recording.

use crate::open::{OpenOptions, Opened, Place, open};
use crate::sampling::SamplingOptions;
use crate::{Error, EventSpec, Result};
use perfkit::records::{Endian, Record, RecordParser};
use perfkit::sys::{self, attr_flags as f};
use perfkit::{RingBuffer, RingSize};
use perfkit_data::PerfDataWriter;
use std::collections::HashMap;

/// perf's name of the event that carries off-CPU time (`OFFCPU_EVENT`).
pub const OFFCPU_EVENT: &str = "offcpu-time";

/// The sample fields perf allows on the off-CPU event (`OFFCPU_SAMPLE_TYPES`).
pub const OFFCPU_SAMPLE_TYPES: u64 = sys::PERF_SAMPLE_IDENTIFIER
    | sys::PERF_SAMPLE_IP
    | sys::PERF_SAMPLE_TID
    | sys::PERF_SAMPLE_TIME
    | sys::PERF_SAMPLE_ID
    | sys::PERF_SAMPLE_CPU
    | sys::PERF_SAMPLE_PERIOD
    | sys::PERF_SAMPLE_CALLCHAIN
    | sys::PERF_SAMPLE_CGROUP;

/// `TASK_INTERRUPTIBLE` and `TASK_UNINTERRUPTIBLE` as `sched_switch` reports
/// `prev_state` (`S` = 1, `D` = 2).
const SLEEPING: [u64; 2] = [1, 2];

/// The `offcpu-time` event as perf configures it: a bpf-output software event, frequency
/// 1, with a call chain; `sampling_attrs` then adds the command line's fields and
/// [`offcpu_attr`] masks them to perf's allowed set.
pub fn offcpu_spec() -> Result<EventSpec> {
    let mut spec = crate::parse(&["bpf-output".to_string()])?
        .pop()
        .ok_or(Error::NoEvents)?;
    spec.name = OFFCPU_EVENT.to_string();
    Ok(spec)
}

/// Finish the attr of the `offcpu-time` event after `sampling_attrs` (perf's
/// `off_cpu_config` and the `OFFCPU_SAMPLE_TYPES` mask of `evsel__config`).
pub fn offcpu_attr(attr: &mut sys::perf_event_attr) {
    attr.set(f::FREQ, true);
    attr.sample_period = 1;
    attr.sample_type |= sys::PERF_SAMPLE_CALLCHAIN | sys::PERF_SAMPLE_PERIOD;
    attr.sample_type &= OFFCPU_SAMPLE_TYPES;
    for flag in [
        f::MMAP,
        f::MMAP2,
        f::COMM,
        f::COMM_EXEC,
        f::TASK,
        f::MMAP_DATA,
        f::NAMESPACES,
        f::CGROUP,
        f::INHERIT_STAT,
    ] {
        attr.set(flag, false);
    }
    attr.sample_regs_user = 0;
    attr.sample_regs_intr = 0;
    attr.sample_stack_user = 0;
    attr.branch_sample_type = 0;
}

/// Where a task went to sleep.
#[derive(Clone, Debug)]
struct Out {
    pid: i32,
    time: u64,
    stack: Vec<u64>,
}

/// One event of the off-CPU rings, for sorting by time across rings.
#[derive(Debug)]
enum Seen {
    /// A task switched out asleep (`S`/`D`) with this user stack.
    Sleep { tid: i32, out: Out },
    /// A task switched out for another reason (preempted, or no user stack).
    Other { tid: i32, time: u64 },
    /// A task switched in.
    In { tid: i32, time: u64 },
}

impl Seen {
    fn time(&self) -> u64 {
        match self {
            Seen::Sleep { out, .. } => out.time,
            Seen::Other { time, .. } | Seen::In { time, .. } => *time,
        }
    }
}

/// Summed off-CPU time of one task at one user stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffCpuSample {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// User frames, innermost first.
    pub stack: Vec<u64>,
    /// Nanoseconds off the CPU.
    pub time_ns: u64,
    /// Sleeps summed.
    pub count: u64,
}

/// The `sched_switch` counters and rings of a recording, and what they saw so far.
#[derive(Debug)]
pub struct OffCpu {
    opened: Opened,
    rings: Vec<RingBuffer>,
    parser: RecordParser,
    prev_state: (usize, usize),
    /// Tasks asleep now: where they went to sleep.
    asleep: HashMap<i32, Out>,
    /// Switch-ins read before the switch-out they end (another CPU's ring was read
    /// first).
    early_in: HashMap<i32, u64>,
    totals: HashMap<(i32, i32, Vec<u64>), (u64, u64)>,
    batch: Vec<Seen>,
    last_time: u64,
    scratch: Vec<u8>,
}

impl OffCpu {
    /// Open `sched:sched_switch` on `places` (the recording's) with rings of `pages` data
    /// pages per CPU. `sopts` gives the clock (so times compare with the recording's);
    /// `opts` gives inherit and enable-on-exec.
    pub fn open(
        places: &[Place],
        opts: &OpenOptions<'_>,
        sopts: &SamplingOptions,
        pages: usize,
    ) -> Result<OffCpu> {
        let mut specs = crate::parse(&["sched:sched_switch".to_string()])?;
        let tracefs = perfkit_trace::tracefs::find_or_mount_tracefs()
            .map_err(|e| Error::Usage(format!("--off-cpu needs tracefs: {e}")))?;
        let format = perfkit_trace::tracefs::TraceFormat::read(&tracefs, "sched", "sched_switch")
            .map_err(|e| Error::Usage(format!("--off-cpu: sched:sched_switch: {e}")))?;
        let field = format.field("prev_state").ok_or_else(|| {
            Error::Usage("--off-cpu: sched:sched_switch has no prev_state field".to_string())
        })?;
        let prev_state = (field.offset, field.size.min(8));
        for s in &mut specs {
            let a = &mut s.attr;
            a.sample_period = 1;
            a.set(f::FREQ, false);
            a.sample_type = sys::PERF_SAMPLE_IDENTIFIER
                | sys::PERF_SAMPLE_TID
                | sys::PERF_SAMPLE_TIME
                | sys::PERF_SAMPLE_CALLCHAIN
                | sys::PERF_SAMPLE_RAW;
            a.set(f::SAMPLE_ID_ALL, true);
            a.set(f::CONTEXT_SWITCH, true);
            a.set(f::EXCLUDE_CALLCHAIN_KERNEL, true);
            a.set(f::DISABLED, true);
            if let Some(c) = sopts.clockid {
                a.set(f::USE_CLOCKID, true);
                a.clockid = c;
            }
        }
        let opened = open(&specs, places, opts).require_all()?;
        let attr = opened.events[0].attr;
        let mut rings: Vec<RingBuffer> = Vec::new();
        let mut owner: Vec<(i32, usize)> = Vec::new();
        for (pi, place) in opened.places.iter().enumerate() {
            let Some(c) = opened.events[0].slots[pi].counter() else {
                continue;
            };
            match owner.iter().find(|o| o.0 == place.cpu) {
                None => {
                    rings.push(RingBuffer::map(c, RingSize::Pages(pages))?);
                    owner.push((place.cpu, pi));
                }
                Some(&(_, op)) => {
                    if let Some(o) = opened.events[0].slots[op].counter() {
                        c.set_output(Some(o))?;
                    }
                }
            }
        }
        Ok(OffCpu {
            opened,
            rings,
            parser: RecordParser::new(&attr, Endian::NATIVE),
            prev_state,
            asleep: HashMap::new(),
            early_in: HashMap::new(),
            totals: HashMap::new(),
            batch: Vec::new(),
            last_time: 0,
            scratch: Vec::new(),
        })
    }

    /// The rings, to watch with epoll.
    pub fn rings(&self) -> &[RingBuffer] {
        &self.rings
    }

    /// Enable the counters (not needed when they enable at the command's exec).
    pub fn enable(&self) -> Result<()> {
        self.opened.enable()
    }

    /// Disable the counters.
    pub fn disable(&self) {
        self.opened.disable()
    }

    /// The latest time seen in the off-CPU rings.
    pub fn last_time(&self) -> u64 {
        self.last_time
    }

    /// Read every ring and fold what it held.
    pub fn drain(&mut self) -> Result<()> {
        let OffCpu {
            rings,
            parser,
            prev_state,
            batch,
            scratch,
            ..
        } = self;
        for r in rings.iter_mut() {
            r.drain(|rec| {
                let body = rec.data.contiguous(scratch);
                let Ok(p) = parser.parse(rec.type_, rec.misc, body) else {
                    return;
                };
                match p.record {
                    Record::Sample(s) => {
                        let (Some(pid), Some(tid), Some(time)) = (s.pid, s.tid, s.time) else {
                            return;
                        };
                        let state = s.raw.and_then(|raw| read_uint(raw, *prev_state));
                        let stack: Vec<u64> = s
                            .callchain
                            .map(|c| c.iter().filter(|&ip| ip < sys::PERF_CONTEXT_MAX).collect())
                            .unwrap_or_default();
                        let asleep = state.is_some_and(|st| SLEEPING.contains(&st));
                        if asleep && !stack.is_empty() && tid != 0 {
                            batch.push(Seen::Sleep {
                                tid,
                                out: Out { pid, time, stack },
                            });
                        } else {
                            batch.push(Seen::Other { tid, time });
                        }
                    }
                    Record::Switch(_) | Record::SwitchCpuWide(_)
                        if rec.misc & sys::PERF_RECORD_MISC_SWITCH_OUT == 0 =>
                    {
                        if let (Some(tid), Some(time)) = (p.sample_id.tid, p.sample_id.time) {
                            batch.push(Seen::In { tid, time });
                        }
                    }
                    _ => {}
                }
            })
            .map_err(Error::Ring)?;
        }
        self.fold();
        Ok(())
    }

    /// Match the switch-outs and switch-ins read, in time order.
    fn fold(&mut self) {
        let mut batch = std::mem::take(&mut self.batch);
        batch.sort_by_key(Seen::time);
        for seen in batch.drain(..) {
            self.last_time = self.last_time.max(seen.time());
            match seen {
                Seen::Sleep { tid, out } => match self.early_in.remove(&tid) {
                    Some(t_in) if t_in > out.time => self.add(tid, &out, t_in),
                    _ => {
                        self.asleep.insert(tid, out);
                    }
                },
                Seen::Other { tid, .. } => {
                    self.asleep.remove(&tid);
                    self.early_in.remove(&tid);
                }
                Seen::In { tid, time } => match self.asleep.remove(&tid) {
                    Some(out) if out.time <= time => self.add(tid, &out, time),
                    Some(out) => {
                        self.asleep.insert(tid, out);
                    }
                    None => {
                        self.early_in.insert(tid, time);
                    }
                },
            }
        }
        self.batch = batch;
    }

    fn add(&mut self, tid: i32, out: &Out, t_in: u64) {
        let e = self
            .totals
            .entry((out.pid, tid, out.stack.clone()))
            .or_default();
        e.0 += t_in - out.time;
        e.1 += 1;
    }

    /// The summed off-CPU time per task and stack, largest first.
    pub fn samples(&self) -> Vec<OffCpuSample> {
        let mut v: Vec<OffCpuSample> = self
            .totals
            .iter()
            .map(|((pid, tid, stack), &(ns, n))| OffCpuSample {
                pid: *pid,
                tid: *tid,
                stack: stack.clone(),
                time_ns: ns,
                count: n,
            })
            .collect();
        v.sort_by(|a, b| {
            b.time_ns
                .cmp(&a.time_ns)
                .then((a.pid, a.tid, &a.stack).cmp(&(b.pid, b.tid, &b.stack)))
        });
        v
    }

    /// The sums gathered since the last call, largest first, forgetting them: a live view
    /// (`top --off-cpu`) adds each batch to what it shows.
    pub fn take_samples(&mut self) -> Vec<OffCpuSample> {
        let v = self.samples();
        self.totals.clear();
        v
    }

    /// Write the summed samples as samples of the event `attr` with id `id`, stamped
    /// from `after` + 1 ns up; the number written.
    pub fn write(
        &self,
        w: &mut PerfDataWriter,
        attr: &sys::perf_event_attr,
        id: u64,
        after: u64,
    ) -> std::io::Result<u64> {
        let samples = self.samples();
        for (i, s) in samples.iter().enumerate() {
            let rec = encode_sample(attr, id, s, after + 1 + i as u64);
            w.write_record(&[&rec])?;
        }
        if !samples.is_empty() {
            w.finish_round()?;
        }
        Ok(samples.len() as u64)
    }
}

/// An unsigned field of `size` bytes at `offset` in a RAW payload.
fn read_uint(raw: &[u8], (offset, size): (usize, usize)) -> Option<u64> {
    let b = raw.get(offset..offset + size)?;
    let mut v = [0u8; 8];
    v[..size].copy_from_slice(b);
    Some(u64::from_ne_bytes(v))
}

/// A `PERF_RECORD_SAMPLE` of the off-CPU event with id `id`, stamped `time`, fields in the
/// kernel's order (perf's `off_cpu_write`): header included.
pub fn encode_sample(attr: &sys::perf_event_attr, id: u64, s: &OffCpuSample, time: u64) -> Vec<u8> {
    let st = attr.sample_type;
    let mut body: Vec<u64> = Vec::with_capacity(8 + s.stack.len());
    if st & sys::PERF_SAMPLE_IDENTIFIER != 0 {
        body.push(id);
    }
    if st & sys::PERF_SAMPLE_IP != 0 {
        body.push(s.stack.first().copied().unwrap_or(0));
    }
    if st & sys::PERF_SAMPLE_TID != 0 {
        body.push(u64::from(s.pid as u32) | u64::from(s.tid as u32) << 32);
    }
    if st & sys::PERF_SAMPLE_TIME != 0 {
        body.push(time);
    }
    if st & sys::PERF_SAMPLE_ID != 0 {
        body.push(id);
    }
    if st & sys::PERF_SAMPLE_CPU != 0 {
        body.push(0);
    }
    if st & sys::PERF_SAMPLE_PERIOD != 0 {
        body.push(s.time_ns);
    }
    if st & sys::PERF_SAMPLE_CALLCHAIN != 0 {
        body.push(s.stack.len() as u64 + 1);
        body.push(sys::PERF_CONTEXT_USER);
        body.extend(&s.stack);
    }
    if st & sys::PERF_SAMPLE_CGROUP != 0 {
        body.push(0);
    }
    let bytes: Vec<u8> = body.iter().flat_map(|v| v.to_ne_bytes()).collect();
    perfkit_data::record(
        sys::PERF_RECORD_SAMPLE,
        sys::PERF_RECORD_MISC_USER,
        &bytes,
        &[],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn out(pid: i32, time: u64, ip: u64) -> Out {
        Out {
            pid,
            time,
            stack: vec![ip, 0x1000],
        }
    }

    fn empty() -> OffCpu {
        // Only the folding state is used.
        OffCpu {
            opened: Opened {
                places: Vec::new(),
                events: Vec::new(),
                notes: Vec::new(),
            },
            rings: Vec::new(),
            parser: RecordParser::new(&sys::perf_event_attr::default(), Endian::NATIVE),
            prev_state: (0, 8),
            asleep: HashMap::new(),
            early_in: HashMap::new(),
            totals: HashMap::new(),
            batch: Vec::new(),
            last_time: 0,
            scratch: Vec::new(),
        }
    }

    #[test]
    fn sleeps_are_summed_per_stack_and_preemption_is_not_a_sleep() {
        let mut o = empty();
        o.batch = vec![
            Seen::In { tid: 11, time: 150 },
            Seen::Sleep {
                tid: 11,
                out: out(10, 100, 0xa),
            },
            Seen::Sleep {
                tid: 11,
                out: out(10, 200, 0xa),
            },
            Seen::In { tid: 11, time: 260 },
            // Preempted: the next switch-in ends nothing.
            Seen::Other { tid: 11, time: 300 },
            Seen::In { tid: 11, time: 900 },
        ];
        o.fold();
        // A switch-in read before its switch-out (another ring first).
        o.batch = vec![Seen::In {
            tid: 12,
            time: 1000,
        }];
        o.fold();
        o.batch = vec![Seen::Sleep {
            tid: 12,
            out: out(10, 400, 0xb),
        }];
        o.fold();
        let s = o.samples();
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!((s[0].tid, s[0].time_ns, s[0].count), (12, 600, 1));
        assert_eq!((s[1].tid, s[1].time_ns, s[1].count), (11, 110, 2));
        assert_eq!(o.last_time(), 1000);
    }

    #[test]
    fn sample_layout_is_perfs() {
        let mut attr = sys::perf_event_attr {
            sample_type: sys::PERF_SAMPLE_IDENTIFIER
                | sys::PERF_SAMPLE_IP
                | sys::PERF_SAMPLE_TID
                | sys::PERF_SAMPLE_TIME
                | sys::PERF_SAMPLE_PERIOD
                | sys::PERF_SAMPLE_READ,
            ..Default::default()
        };
        offcpu_attr(&mut attr);
        assert_eq!(attr.sample_type, 0x10127, "READ masked, CALLCHAIN added");
        let s = OffCpuSample {
            pid: 5,
            tid: 6,
            stack: vec![0x401000, 0x402000],
            time_ns: 7_000_000,
            count: 3,
        };
        let rec = encode_sample(&attr, 42, &s, 99);
        let words: Vec<u64> = rec[8..]
            .chunks(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(
            words,
            [
                42,
                0x401000,
                5 | 6 << 32,
                99,
                7_000_000,
                3,
                sys::PERF_CONTEXT_USER,
                0x401000,
                0x402000
            ]
        );
        assert_eq!(u16::from_ne_bytes([rec[6], rec[7]]) as usize, rec.len());
    }
}
