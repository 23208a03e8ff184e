//! The profile model.

use rustc_hash::FxHashMap as HashMap;

/// Index of a [`Func`] in [`Profile::funcs`].
pub type FuncId = u32;
/// Index of a [`Frame`] in [`Profile::frames`].
pub type FrameId = u32;
/// Index of a [`StackNode`] in [`Profile::stacks`].
pub type StackId = u32;
/// Index of a [`Thread`] in [`Profile::threads`].
pub type ThreadId = u32;

/// A function: a symbol in a shared object (or an unknown address's placeholder).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Func {
    /// Demangled symbol name, or `[unknown]`.
    pub name: String,
    /// The shared object (path, `[kernel.kallsyms]`, `[unknown]`).
    pub dso: String,
    /// Whether this is kernel code.
    pub kernel: bool,
}

/// One code address in a function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    /// The function.
    pub func: FuncId,
    /// The address as sampled.
    pub addr: u64,
    /// The address relative to its file mapping (`addr - start + pgoff`), for user frames in
    /// file-backed mappings: what perf script prints in callchains.
    pub map_offset: Option<u64>,
    /// Offset from the symbol's start (`sym+0x12`), when known.
    pub sym_offset: Option<u64>,
    /// Source file and line, when asked for and known.
    pub srcline: Option<(String, u32)>,
    /// A function inlined at this address (`--inline`): shown in callchains as
    /// `name (inlined)`, never the row a sample's self time goes to.
    pub inlined: bool,
}

/// A node of the call-stack prefix tree: a frame called from `parent`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StackNode {
    /// The frame at this depth.
    pub frame: FrameId,
    /// The caller's node (None at the root).
    pub parent: Option<StackId>,
}

/// A thread (or the main thread of a process).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Thread {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// The name before any COMM record gave it one: perf's `:TID`.
    pub unnamed: String,
    /// Names over time: (time it took the name, name); the last is the current one.
    pub names: Vec<(u64, String)>,
    /// Its cgroup namespace over time (`PERF_RECORD_NAMESPACES`): (time, (dev, inode)).
    pub cgroup_ns: Vec<(u64, (u64, u64))>,
    /// First and last time seen.
    pub start: u64,
    /// Last time seen.
    pub end: u64,
}

impl Thread {
    /// The name at `time`: the latest name taken at or before it; before any, perf's
    /// `:TID` (never a name the thread takes later).
    pub fn name_at(&self, time: u64) -> &str {
        self.names
            .iter()
            .rev()
            .find(|(t, _)| *t <= time)
            .map_or(self.unnamed.as_str(), |(_, n)| n.as_str())
    }
    /// The thread's last name.
    pub fn name(&self) -> &str {
        self.names
            .last()
            .map_or(self.unnamed.as_str(), |(_, n)| n.as_str())
    }
}

/// One sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// perf timestamp (ns).
    pub time: u64,
    /// The thread.
    pub thread: ThreadId,
    /// CPU, if recorded.
    pub cpu: Option<u32>,
    /// Index of the event in [`Profile::events`].
    pub event: u32,
    /// The sample's period (weight for period-based reports).
    pub period: u64,
    /// The leaf of the call stack (the sampled ip is the leaf frame).
    pub stack: Option<StackId>,
    /// Index of its RAW data in [`Profile::raw`] (tracepoint samples).
    pub raw: Option<u32>,
    /// Its callchain holds a context marker perf does not know (`0xffffffffffffffff` in
    /// a corrupt chain, a guest context): perf discards the whole chain, from the leaf
    /// (script, report's callee order) and from the root (children, `-g caller`) alike.
    pub chain_broken: bool,
    /// How many samples this one stands for: 1, or in a folded profile
    /// ([`Profile::folded`]) the number of like samples whose periods `period` sums.
    pub count: u32,
    /// Its cgroup (`PERF_SAMPLE_CGROUP`) as an index into [`Profile::cgroups`]; 0 where
    /// none was recorded. (16 bits keep a sample in 56 bytes.)
    pub cgroup: u16,
}

/// A context switch, for timeline markers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Switch {
    /// The thread.
    pub thread: ThreadId,
    /// When.
    pub time: u64,
    /// Switched out (true) or in.
    pub out: bool,
}

/// An event that was recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EventDesc {
    /// Its name (`cpu-clock`, `cycles:u`, ...).
    pub name: String,
    /// Whether its samples carry callchains (`PERF_SAMPLE_CALLCHAIN`): `script` prints
    /// them on their own lines even when a chain has one frame, as perf does.
    pub callchain: bool,
    /// A tracepoint's format (from the file's tracing data), to print its samples' fields.
    pub trace: Option<Box<TraceEvent>>,
}

/// A tracepoint event's format and parsed print fmt.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// The `format` file.
    pub format: perfkit_trace::tracefs::TraceFormat,
    /// Its `print fmt:`, when it parses.
    pub print: Option<perfkit_trace::printfmt::PrintFmt>,
}

impl TraceEvent {
    /// From a format; the print fmt is parsed once here.
    pub fn new(format: perfkit_trace::tracefs::TraceFormat) -> TraceEvent {
        let print = perfkit_trace::printfmt::PrintFmt::parse(&format.print_fmt)
            .ok()
            .map(|mut p| {
                p.bind(&format);
                p
            });
        TraceEvent { format, print }
    }

    /// A sample's fields as perf script prints them, with what the kernel knew (its
    /// symbols for `%pS`, its printk strings).
    pub fn text(&self, raw: &[u8], kernel: &TraceKernel) -> String {
        let mut out = String::new();
        self.text_into(raw, kernel, &mut out);
        out
    }

    /// [`text`](Self::text), appended to `out`.
    pub fn text_into(&self, raw: &[u8], kernel: &TraceKernel, out: &mut String) {
        perfkit_trace::printfmt::format_record_into(
            &self.format,
            self.print.as_ref(),
            raw,
            Some(kernel),
            out,
        );
    }

    /// Whether the format prints code addresses as symbols (`%pS`).
    pub fn uses_symbols(&self) -> bool {
        self.print.as_ref().is_some_and(|p| p.uses_symbols())
    }
}

/// The RAW payloads of tracepoint samples, one after another in one buffer (an allocation
/// per sample would cost more than many payloads).
#[derive(Clone, Debug, Default)]
pub struct RawStore {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl RawStore {
    /// Keep a payload; its index for [`get`](Self::get).
    pub fn push(&mut self, raw: &[u8]) -> u32 {
        self.bytes.extend_from_slice(raw);
        self.ends.push(self.bytes.len());
        (self.ends.len() - 1) as u32
    }

    /// Payload `i`.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let end = *self.ends.get(i)?;
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j]);
        self.bytes.get(start..end)
    }

    /// Forget every payload (indices start again at 0).
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    /// Number of payloads.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

/// What tracepoint formats need of the traced kernel beyond the records.
#[derive(Clone, Debug, Default)]
pub struct TraceKernel {
    /// Its symbols, kept when a format prints addresses with `%pS`.
    pub symbols: Option<std::sync::Arc<perfkit_symbols::Kallsyms>>,
    /// Its `printk_formats` (address -> string), from the file's tracing data.
    pub printk: HashMap<u64, String>,
}

impl perfkit_trace::printfmt::KernelInfo for TraceKernel {
    fn symbol(&self, addr: u64) -> Option<(String, u64)> {
        let s = self.symbols.as_ref()?.find(addr)?;
        Some((s.name.to_string(), addr - s.start))
    }

    fn printk(&self, addr: u64) -> Option<&str> {
        self.printk.get(&addr).map(String::as_str)
    }
}

/// Why some samples have no symbols, counted for the report header.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UnknownCounts {
    /// Reason -> number of frames that could not be symbolized for it.
    pub by_reason: Vec<(String, u64)>,
}

/// An event group of the recording (`-e '{a,b}'`, the file's HEADER_GROUP_DESC): report
/// shows its events side by side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventGroup {
    /// Its name; None for perf's `anon group`.
    pub name: Option<String>,
    /// Index of its leader in [`Profile::events`]; the other events follow it.
    pub leader: u32,
    /// Number of events, the leader included.
    pub members: u32,
}

/// A profile: everything reports and exports need, symbolized.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    /// Recorded events.
    pub events: Vec<EventDesc>,
    /// Event groups of the recording.
    pub groups: Vec<EventGroup>,
    /// Threads.
    pub threads: Vec<Thread>,
    /// Functions.
    pub funcs: Vec<Func>,
    /// Frames.
    pub frames: Vec<Frame>,
    /// Stack prefix tree.
    pub stacks: Vec<StackNode>,
    /// Samples in time order; in a folded profile ([`Profile::folded`]) one per group of
    /// like samples, in the order of each group's first sample.
    pub samples: Vec<Sample>,
    /// Whether like samples were folded into one as they were read
    /// ([`crate::fold::Aggregation`]): each sample's time is then its group's first.
    pub folded: bool,
    /// In a folded profile, the time of the last sample read (its samples carry their
    /// groups' first times): the end of the span the pprof export gives.
    pub last_sample: u64,
    /// RAW data of tracepoint samples ([`Sample::raw`]).
    pub raw: RawStore,
    /// Context switches.
    pub switches: Vec<Switch>,
    /// The mapped files frames were sampled in (per process), for exports that carry
    /// build ids and file offsets.
    pub images: Vec<crate::Image>,
    /// The image each frame's address is in, when known ([`Profile::image_of`]).
    pub frame_images: HashMap<FrameId, crate::ImageId>,
    /// Lost records and throttling, in time order, for timeline markers.
    pub marks: Vec<crate::Mark>,
    /// Samples the kernel lost, by its own count (PERF_RECORD_LOST_SAMPLES): perf's
    /// "Total Lost Samples".
    pub lost: u64,
    /// Records dropped from full rings, as PERF_RECORD_LOST records said when space came
    /// back (a ring still full at the end says nothing: see `lost`).
    pub lost_records: u64,
    /// Samples whose stack could not be fully unwound (dwarf mode).
    pub incomplete_stacks: u64,
    /// The largest user stack copy recorded (`sample_stack_user`, dwarf mode), for advice.
    pub stack_user_size: u64,
    /// Frames without symbols, by reason.
    pub unknown: UnknownCounts,
    /// Header facts shown by `--header` (hostname, os release, command line ...).
    pub meta: Vec<(String, String)>,
    /// What tracepoint formats need of the traced kernel (symbols, printk strings).
    pub trace_kernel: TraceKernel,
    /// The build id each mapped file was recorded with (MMAP2 or HEADER_BUILD_ID), by path:
    /// what `annotate` needs to read the same file the samples came from.
    pub dso_build_ids: HashMap<String, Vec<u8>>,
    /// Each named function's symbol size in bytes (`--sort symbol_size`).
    pub sym_sizes: HashMap<FuncId, u64>,
    /// The symbols that are data objects, not functions (kallsyms' data and bss lines,
    /// `STT_OBJECT` in perf): a report row prints such a symbol with the offset of its
    /// address (`__start_rodata+0x10`), as perf's `_hist_entry__sym_snprintf`.
    pub data_objects: rustc_hash::FxHashSet<FuncId>,
    /// Objects in the order perf makes its `struct dso`s: the kernel, the file's build-id
    /// table, then each object as its first mapping arrives. perf orders call-graph
    /// branches of equal weight by those structs' addresses, which follow that order.
    pub dso_order: Vec<String>,
    /// A DWARF-unwound leaf whose DWARF function is not its ELF symbol (perf shows every
    /// function DWARF places there as inlined, `init_cpu_features (inlined)` in
    /// `init_cpu_features.constprop.0`): its first frame -> the ELF symbol's frame, which
    /// the sample counts for, as perf's report row.
    pub leaf_symbols: HashMap<FrameId, FrameId>,
    /// The cgroup ids samples carry ([`Sample::cgroup`] indexes it; index 0 is "none").
    pub cgroups: Vec<u64>,
    /// Cgroup paths by id, from `PERF_RECORD_CGROUP` (`record --all-cgroups`).
    pub cgroup_names: HashMap<u64, String>,
    cgroup_ids: HashMap<u64, u16>,
    /// Interning indices: each function, frame and stack node is kept once, in its
    /// `Vec` ([`crate::intern`]).
    func_ids: crate::intern::Index,
    /// The symbol start each function of [`Profile::func_at`] stands for, and the
    /// functions of the same name and object at other starts.
    func_starts: HashMap<FuncId, u64>,
    func_at_ids: HashMap<(FuncId, u64), FuncId>,
    frame_ids: crate::intern::Index,
    stack_ids: crate::intern::Index,
    thread_ids: HashMap<(i32, i32), ThreadId>,
}

impl Profile {
    /// Intern a sample's cgroup id (0: none) as its [`Sample::cgroup`] index; past
    /// 65535 distinct cgroups, the last index stands for the rest.
    pub fn cgroup_index(&mut self, id: u64) -> u16 {
        if id == 0 {
            return 0;
        }
        if self.cgroups.is_empty() {
            self.cgroups.push(0);
        }
        if let Some(&i) = self.cgroup_ids.get(&id) {
            return i;
        }
        let Ok(i) = u16::try_from(self.cgroups.len()) else {
            return u16::MAX;
        };
        self.cgroups.push(id);
        self.cgroup_ids.insert(id, i);
        i
    }

    /// The cgroup id of a sample's [`Sample::cgroup`] index (0: none).
    pub fn cgroup_id(&self, index: u16) -> u64 {
        self.cgroups.get(usize::from(index)).copied().unwrap_or(0)
    }

    /// Intern a function.
    pub fn func(&mut self, f: Func) -> FuncId {
        self.func_ids.intern(&mut self.funcs, f)
    }

    /// Give an interned frame another function (a later naming pass, such as
    /// [`crate::unnamed_functions`]); the frame keeps its id.
    pub fn set_frame_func(&mut self, frame: FrameId, func: FuncId) {
        self.frame_ids
            .reindex(&mut self.frames, frame, |f| f.func = func);
    }

    /// Intern the function of a symbol starting at `start` (an offset in its object): two
    /// symbols of one name and object at different starts (static functions of two source
    /// files) are two functions, as in perf, whose rows and call-graph nodes compare
    /// symbols by object and start address (`sort__sym_cmp`, `match_chain`).
    pub fn func_at(&mut self, f: Func, start: u64) -> FuncId {
        let plain = self.func(f);
        let first = *self.func_starts.entry(plain).or_insert(start);
        if first == start {
            return plain;
        }
        if let Some(&id) = self.func_at_ids.get(&(plain, start)) {
            return id;
        }
        let id = self.funcs.len() as FuncId;
        self.funcs.push(self.funcs[plain as usize].clone());
        self.func_at_ids.insert((plain, start), id);
        self.func_starts.insert(id, start);
        id
    }

    /// Where the symbol of a function made by [`Profile::func_at`] starts in its object.
    pub fn func_start(&self, f: FuncId) -> Option<u64> {
        self.func_starts.get(&f).copied()
    }

    /// Intern a frame.
    pub fn frame(&mut self, f: Frame) -> FrameId {
        self.frame_ids.intern(&mut self.frames, f)
    }

    /// Add a frame that is not interned (never found by [`Profile::frame`]): one its
    /// maker will edit in place (a kernel frame named later) and tells apart itself.
    pub(crate) fn frame_apart(&mut self, f: Frame) -> FrameId {
        self.frames.push(f);
        (self.frames.len() - 1) as FrameId
    }

    /// Intern a stack node.
    pub fn stack(&mut self, frame: FrameId, parent: Option<StackId>) -> StackId {
        self.stack_ids
            .intern(&mut self.stacks, StackNode { frame, parent })
    }

    /// Intern a whole stack given from the outermost caller to the leaf.
    pub fn stack_from_root(
        &mut self,
        frames: impl IntoIterator<Item = FrameId>,
    ) -> Option<StackId> {
        let mut parent = None;
        for f in frames {
            parent = Some(self.stack(f, parent));
        }
        parent
    }

    /// The thread (pid, tid), if it has been seen.
    pub(crate) fn thread_id(&self, pid: i32, tid: i32) -> Option<ThreadId> {
        self.thread_ids.get(&(pid, tid)).copied()
    }

    /// The thread for (pid, tid), created if new.
    pub fn thread(&mut self, pid: i32, tid: i32) -> ThreadId {
        if let Some(&id) = self.thread_ids.get(&(pid, tid)) {
            return id;
        }
        let id = self.threads.len() as ThreadId;
        self.threads.push(Thread {
            pid,
            tid,
            unnamed: format!(":{tid}"),
            ..Thread::default()
        });
        self.thread_ids.insert((pid, tid), id);
        id
    }

    /// The frames of a stack from the leaf up to the outermost caller.
    pub fn stack_frames(&self, leaf: Option<StackId>) -> StackIter<'_> {
        StackIter {
            profile: self,
            next: leaf,
        }
    }

    /// The frame a sample with this stack counts for (its report row): the function its
    /// address is in, not what is inlined there.
    pub fn sample_frame(&self, stack: Option<StackId>) -> Option<FrameId> {
        let mut frames = self.stack_frames(stack);
        let first = frames.next()?;
        if let Some(&f) = self.leaf_symbols.get(&first) {
            return Some(f);
        }
        std::iter::once(first)
            .chain(frames)
            .find(|&f| !self.frames[f as usize].inlined)
    }

    /// Drop the interning tables (after frames were edited in place, they are stale; a
    /// finished profile interns nothing more).
    pub fn forget_interning(&mut self) {
        self.frame_ids.clear();
        self.stack_ids.clear();
    }

    /// The function of a frame.
    pub fn func_of(&self, frame: FrameId) -> &Func {
        &self.funcs[self.frames[frame as usize].func as usize]
    }

    /// The mapped file a frame's address is in, when the recording said.
    pub fn image_of(&self, frame: FrameId) -> Option<&crate::Image> {
        let i = *self.frame_images.get(&frame)?;
        self.images.get(i as usize)
    }

    /// The command the profile is mostly of: the name of the process with the most
    /// samples (its main thread's name), or `None` without samples.
    pub fn main_command(&self) -> Option<&str> {
        let mut per_pid: HashMap<i32, u64> = HashMap::default();
        for s in &self.samples {
            *per_pid
                .entry(self.threads[s.thread as usize].pid)
                .or_default() += u64::from(s.count);
        }
        let (&pid, _) = per_pid.iter().max_by_key(|&(pid, n)| (*n, -*pid))?;
        let t = self
            .threads
            .iter()
            .find(|t| t.pid == pid && t.tid == pid)
            .or_else(|| self.threads.iter().find(|t| t.pid == pid))?;
        Some(t.name())
    }
}

/// Iterator over a stack's frames, leaf first.
pub struct StackIter<'a> {
    profile: &'a Profile,
    next: Option<StackId>,
}

impl Iterator for StackIter<'_> {
    type Item = FrameId;
    fn next(&mut self) -> Option<FrameId> {
        let node = self.profile.stacks.get(self.next? as usize)?;
        self.next = node.parent;
        Some(node.frame)
    }
}

#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// A small profile: two threads of `app`, stacks main->work->hot and main->idle.
    pub fn sample_profile() -> Profile {
        let mut p = Profile::default();
        p.events.push(EventDesc {
            name: "cpu-clock".into(),
            callchain: true,
            trace: None,
        });
        let f = |p: &mut Profile, name: &str, addr: u64, kernel: bool| {
            let func = p.func(Func {
                name: name.into(),
                dso: if kernel {
                    "[kernel.kallsyms]"
                } else {
                    "/usr/bin/app"
                }
                .into(),
                kernel,
            });
            p.frame(Frame {
                func,
                addr,
                map_offset: (!kernel).then_some(addr),
                sym_offset: Some(addr & 0xf),
                srcline: None,
                inlined: false,
            })
        };
        let main = f(&mut p, "main", 0x1000, false);
        let work = f(&mut p, "work", 0x2000, false);
        let hot = f(&mut p, "hot_loop", 0x3004, false);
        let idle = f(&mut p, "idle", 0x4000, false);
        let sys = f(&mut p, "do_syscall_64", 0xffff_0000, true);
        let t1 = p.thread(10, 10);
        p.threads[t1 as usize].names.push((0, "app".into()));
        let t2 = p.thread(10, 11);
        p.threads[t2 as usize].names.push((0, "app-worker".into()));
        let hot_stack = p.stack_from_root([main, work, hot]);
        let idle_stack = p.stack_from_root([main, idle]);
        let sys_stack = p.stack_from_root([main, work, sys]);
        for i in 0..100u64 {
            let (thread, stack) = match i % 10 {
                0..=6 => (t1, hot_stack),
                7 | 8 => (t2, idle_stack),
                _ => (t1, sys_stack),
            };
            p.samples.push(Sample {
                time: 1_000_000 + i * 250_000,
                thread,
                cpu: Some((i % 2) as u32),
                event: 0,
                period: 250_000,
                stack,
                raw: None,
                chain_broken: false,
                count: 1,
                cgroup: 0,
            });
        }
        p.switches.push(Switch {
            thread: t2,
            time: 5_000_000,
            out: true,
        });
        p.switches.push(Switch {
            thread: t2,
            time: 6_000_000,
            out: false,
        });
        p
    }

    /// [`sample_profile`] with off-CPU time as `record --off-cpu` writes it: an
    /// `offcpu-time` event with one sample, the worker's 5 ms off the CPU in `idle`,
    /// stamped after the last sample.
    pub fn off_cpu_profile() -> Profile {
        let mut p = sample_profile();
        p.events.push(EventDesc {
            name: "offcpu-time".into(),
            callchain: true,
            trace: None,
        });
        let mut s = p.samples[7];
        s.event = 1;
        s.period = 5_000_000;
        s.time = p.samples.last().map_or(0, |l| l.time) + 1;
        p.samples.push(s);
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interning_and_stack_walk() {
        let p = testing::sample_profile();
        assert_eq!(p.funcs.len(), 5);
        // main, main>work, main>work>hot, main>idle, main>work>sys
        assert_eq!(p.stacks.len(), 5);
        let names: Vec<&str> = p
            .stack_frames(p.samples[0].stack)
            .map(|f| p.func_of(f).name.as_str())
            .collect();
        assert_eq!(names, ["hot_loop", "work", "main"]);
        assert_eq!(p.threads[1].name_at(5), "app-worker");
    }
}

#[cfg(test)]
mod thread_names {
    use super::Thread;

    #[test]
    fn a_sample_before_the_first_comm_is_unnamed() {
        let t = Thread {
            unnamed: ":4242".into(),
            names: vec![(1000, "worker".into()), (2000, "exec'd".into())],
            ..Thread::default()
        };
        assert_eq!(
            t.name_at(999),
            ":4242",
            "perf prints :TID, not a later name"
        );
        assert_eq!(t.name_at(1000), "worker");
        assert_eq!(t.name_at(1999), "worker");
        assert_eq!(t.name_at(5000), "exec'd");
    }
}

#[cfg(test)]
mod sample_size {
    #[test]
    fn a_sample_stays_in_56_bytes() {
        // Scripts and --time keep every sample: the cgroup index fits in the padding.
        assert_eq!(std::mem::size_of::<super::Sample>(), 56);
    }
}
