//! `report --stdio`: rows of Children/Self percentages by sort key, with call graphs, in
//! perf's layout.
//!
//! Samples are first aggregated by (thread, stack, cpu, event) so each distinct stack is
//! walked once, whatever the number of samples that share it; children totals then cost one
//! walk per distinct stack, not per sample (perf's children mode walks every sample's chain,
//! which is why it is seven times slower than its self mode).

use crate::callgraph;
use crate::{FrameId, FuncId, Profile, Sample, StackId};
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;

/// A `--sort` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SortKey {
    /// Command (thread name at the sample's time).
    Comm,
    /// Process id (`pid:comm`).
    Pid,
    /// Thread id (`tid:comm`).
    Tid,
    /// Shared object.
    Dso,
    /// Symbol.
    Sym,
    /// CPU.
    Cpu,
    /// Source file and line.
    Srcline,
    /// Symbol plus offset.
    Symoff,
    /// The first caller matching the parent pattern (`[other]` if none).
    Parent,
    /// A tracepoint sample's fields as its print fmt formats them (`N/A` for other
    /// samples; perf's default key for files of tracepoints only).
    Trace,
    /// The source file of the sampled address (blank where unknown).
    Srcfile,
    /// The sample's cgroup (`PERF_SAMPLE_CGROUP`, named by the file's
    /// `PERF_RECORD_CGROUP`s; `N/A` without one, `unknown` for an id never named).
    Cgroup,
    /// The thread's cgroup namespace, `DEV/0xINODE` (`record --namespaces`; `0/0x0`
    /// without).
    CgroupId,
    /// The size of the symbol (`unknown` without one).
    SymbolSize,
    /// perf's `ipc_null`: the IPC column of a file without branch cycles (`-      -`);
    /// perf adds it after `symbol_size`.
    IpcNull,
}

impl SortKey {
    /// Parse one key name.
    pub fn parse(s: &str) -> Option<SortKey> {
        Some(match s {
            "comm" => SortKey::Comm,
            "pid" => SortKey::Pid,
            "tid" => SortKey::Tid,
            "dso" => SortKey::Dso,
            "sym" | "symbol" => SortKey::Sym,
            "cpu" => SortKey::Cpu,
            "srcline" => SortKey::Srcline,
            "symoff" => SortKey::Symoff,
            "parent" => SortKey::Parent,
            "trace" => SortKey::Trace,
            "srcfile" => SortKey::Srcfile,
            "cgroup" => SortKey::Cgroup,
            "cgroup_id" => SortKey::CgroupId,
            "symbol_size" => SortKey::SymbolSize,
            "ipc_null" => SortKey::IpcNull,
            _ => return None,
        })
    }
    /// Every key name, for error messages.
    pub const NAMES: &'static str = "comm, pid, tid, dso, sym, cpu, srcline, srcfile, symoff, parent, trace, cgroup, \
         cgroup_id, symbol_size, ipc_null";

    /// perf's keys of branch-stack reports (`record -b`/`-j`): without branch stacks in
    /// the file perf refuses them.
    pub const BRANCH_KEYS: &'static [&'static str] = &[
        "dso_from",
        "dso_to",
        "symbol_from",
        "symbol_to",
        "mispredict",
        "abort",
        "in_tx",
        "cycles",
        "srcline_from",
        "srcline_to",
        "ipc_lbr",
        "addr_from",
        "addr_to",
    ];

    pub(crate) fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid => "    Pid:Command",
            SortKey::Tid => "Tid:Command",
            SortKey::Dso => "Shared Object",
            SortKey::Sym => "Symbol",
            SortKey::Cpu => "CPU",
            SortKey::Srcline => "Source:Line",
            SortKey::Symoff => "Symbol",
            SortKey::Parent => "Parent symbol",
            SortKey::Trace => "Trace output",
            SortKey::Srcfile => "Source File",
            SortKey::Cgroup => "Cgroup",
            SortKey::CgroupId => "cgroup id (dev/inode)",
            SortKey::SymbolSize => "Symbol size",
            SortKey::IpcNull => "IPC   [IPC Coverage]",
        }
    }
}

/// Call-graph display (`-g`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphMode {
    /// No call graphs.
    None,
    /// Tree, percentages relative to the total.
    Graph,
    /// Tree, percentages relative to the parent.
    Fractal,
    /// Each chain on its own, with its percentage.
    Flat,
    /// `percent chain;chain;chain` lines.
    Folded,
}

/// Options of the report.
#[derive(Clone, Debug)]
pub struct ReportOptions {
    /// Sort keys (default comm, dso, sym).
    pub sort: Vec<SortKey>,
    /// Children (cumulative) column.
    pub children: bool,
    /// Call-graph mode.
    pub graph: GraphMode,
    /// Hide call-graph branches below this percentage.
    pub graph_threshold: f64,
    /// Show callers first (`caller`) instead of callees (`callee`); None = perf's default
    /// (caller with children, callee without).
    pub caller_order: Option<bool>,
    /// Hide rows below this percentage.
    pub percent_limit: f64,
    /// Show sample counts (`-n`).
    pub show_samples: bool,
    /// Filters.
    pub filter: Filter,
    /// The `--time` argument as given, which perf repeats in each section's header.
    pub time_slices: Option<String>,
    /// Pattern of the `parent` sort key (perf's default `^sys_|^do_page_fault`).
    pub parent_pattern: Vec<String>,
    /// Overhead column(s) (perf's `-F` without `overhead` leaves them out, and then rows
    /// are ordered by their keys).
    pub overhead: bool,
    /// Period column (`--show-total-period`, `-F period`).
    pub show_period: bool,
    /// `--percentage relative`: percentages (and the header's totals) of the samples the
    /// filters keep; perf's default (false, `absolute`) keeps them relative to every
    /// sample, so a filtered row shows the same share as unfiltered.
    pub relative: bool,
    /// `--hierarchy`: one level per sort key, each entry's total over its sub-entries
    /// (see [`crate::hierarchy`]).
    pub hierarchy: bool,
    /// Header notes of sort keys left out because a filter pins them (`comm: wl`; see
    /// [`crate::elide`]).
    pub notes: Vec<String>,
    /// Callchain entries used per sample, leaf first (`--max-stack`, perf's default 127).
    pub max_stack: usize,
    /// `--ignore-callees REGEX`: a sample whose chain passes a function matching it counts
    /// for that function, as perf does (see [`perf_chain`]).
    pub ignore_callees: Option<String>,
    /// `--showcpuutilization`: `sys` and `usr` columns (the self period in kernel and in
    /// user code).
    pub cpu_util: bool,
    /// `--symbol-filter STR`: only entries whose symbol name contains it (perf hides the
    /// others; percentages stay those of every sample).
    pub symbol_filter: Option<String>,
    /// `-x`/`--exclude-other`: only entries with a parent (`--parent`).
    pub exclude_other: bool,
    /// DSOs named by their path (perf's `-v`), not their file name.
    pub long_dso: bool,
    /// `--full-source-path`: `srcline` names files with their directories.
    pub full_source_path: bool,
    /// perf's `-v` symbol column: each symbol after its address and the letter of where
    /// its symbols were read ([`perfkit_symbols::symtab_origin`]), looked up in this
    /// build-id cache and `--symfs` root.
    pub sym_origin: Option<(PathBuf, Option<PathBuf>)>,
    /// Events shown together (`--group`).
    pub group: GroupView,
}

impl Default for ReportOptions {
    fn default() -> Self {
        ReportOptions {
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            children: true,
            graph: GraphMode::Graph,
            graph_threshold: 0.5,
            caller_order: None,
            percent_limit: 0.0,
            show_samples: false,
            filter: Filter::default(),
            time_slices: None,
            parent_pattern: vec!["^sys_".into(), "^do_page_fault".into()],
            overhead: true,
            show_period: false,
            relative: false,
            hierarchy: false,
            notes: Vec::new(),
            max_stack: 127,
            ignore_callees: None,
            cpu_util: false,
            symbol_filter: None,
            exclude_other: false,
            long_dso: false,
            full_source_path: false,
            sym_origin: None,
            group: GroupView::Recorded,
        }
    }
}

/// Which events a report shows together (perf's `--group`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum GroupView {
    /// The recording's event groups, each in one section (perf's default).
    #[default]
    Recorded,
    /// As recorded; a file without groups shows all its events as one (`--group`).
    Forced,
    /// Every event in a section of its own (`--no-group`).
    Off,
}

/// Sample filters.
#[derive(Clone, Debug, Default)]
pub struct Filter {
    /// Only these commands.
    pub comms: Vec<String>,
    /// Only these pids.
    pub pids: Vec<i32>,
    /// Only these tids.
    pub tids: Vec<i32>,
    /// Only samples whose leaf is in these DSOs (path or file name).
    pub dsos: Vec<String>,
    /// Only samples whose leaf is one of these symbols.
    pub symbols: Vec<String>,
    /// Only these CPUs.
    pub cpus: Vec<u32>,
    /// Only samples in one of these [start, end] ranges (perf timestamps, ns; empty: all;
    /// see [`crate::timespec`]).
    pub time: Vec<(u64, u64)>,
    /// The thread filters drop the other threads' samples before anything is counted (a
    /// live view zoomed into a thread), instead of hiding rows as perf's report does (see
    /// `Row::hidden`).
    pub drop_threads: bool,
}

impl Filter {
    /// Whether sample `s` is in the CPUs and time ranges asked for: perf's report skips
    /// the others before counting anything (unlike the comm, pid, tid, dso and symbol
    /// filters, which only hide entries).
    pub fn keep_place(&self, s: &Sample) -> bool {
        (self.cpus.is_empty() || s.cpu.is_some_and(|c| self.cpus.contains(&c)))
            && crate::timespec::keeps(&self.time, s.time)
    }

    /// Whether a sample of thread `t` while it is named `comm` passes the thread filters
    /// (`--comm`, `--pid`, `--tid`: perf's `thread__is_filtered`).
    pub fn keep_thread(&self, t: &crate::Thread, comm: &str) -> bool {
        self.keep_comm(comm)
            && (self.pids.is_empty() || self.pids.contains(&t.pid))
            && (self.tids.is_empty() || self.tids.contains(&t.tid))
    }

    /// Whether a sample of a thread named `comm` passes `--comm`.
    fn keep_comm(&self, comm: &str) -> bool {
        self.comms.is_empty() || self.comms.iter().any(|c| c == comm)
    }

    /// Whether sample `s` passes every filter.
    pub fn keep(&self, p: &Profile, s: &Sample) -> bool {
        let t = &p.threads[s.thread as usize];
        // (The thread's name at the sample's time is looked up only for a filter.)
        let thread_filters =
            !self.comms.is_empty() || !self.pids.is_empty() || !self.tids.is_empty();
        if thread_filters && !self.keep_thread(t, t.name_at(s.time)) {
            return false;
        }
        self.keep_leaf(p, s)
    }

    /// Whether sample `s` passes the filters other than the thread's: CPUs, times, and
    /// its leaf's object and symbol.
    fn keep_leaf(&self, p: &Profile, s: &Sample) -> bool {
        if !self.cpus.is_empty() && !s.cpu.is_some_and(|c| self.cpus.contains(&c)) {
            return false;
        }
        if !crate::timespec::keeps(&self.time, s.time) {
            return false;
        }
        if !self.dsos.is_empty() || !self.symbols.is_empty() {
            let Some(leaf) = p.sample_frame(s.stack) else {
                return false;
            };
            let f = p.func_of(leaf);
            if !self.dsos.is_empty()
                && !self
                    .dsos
                    .iter()
                    .any(|d| *d == f.dso || perfkit_symbols::dso_short_name(&f.dso) == d.as_str())
            {
                return false;
            }
            if !self.symbols.is_empty() && !self.symbols.contains(&f.name) {
                return false;
            }
        }
        true
    }
}

/// One row of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The formatted sort-key columns.
    pub keys: Vec<String>,
    /// Cumulative period (this entry anywhere in the chain).
    pub children: u64,
    /// Period with this entry as the leaf.
    pub self_: u64,
    /// Samples with this entry as the leaf.
    pub samples: u64,
    /// The part of `self_` sampled in the kernel (`--showcpuutilization`).
    pub sys: u64,
    /// Representative frame (for the call graph).
    frame: Option<FrameId>,
    /// The aggregated stacks that contribute, with the entry's depth in each (leaf = 0).
    contrib: Vec<(u32, u16)>,
    /// The last aggregated stack that counted this row's children.
    last_stack: Option<u32>,
    /// The longest chain added to the row (perf's `callchain->max_depth`, children mode).
    max_depth: u32,
    /// The aggregated stack that created the row (u32::MAX: a row only other events of
    /// its group have).
    first: u32,
    /// The thread of the row's first sample (perf's entry keeps it).
    thread: u32,
    /// The order rows were made in (perf's order of making its entries).
    seq: u32,
    /// Made by a callchain entry (children), not a sample's own address: perf's entry
    /// then keeps the address as it ran (`-v` prints it), not relative to its file.
    from_chain: bool,
    /// The other events of its group, in group order (empty without groups).
    pub members: Vec<MemberStat>,
    /// The privilege level (`[k]` or `[.]`) of a frame outside every mapping, as perf's
    /// walk left it when the row was made (None: the frame's own).
    kernel: Option<bool>,
    /// Made by a sample of a thread that `--comm`/`--pid`/`--tid` leave out. As perf's
    /// `he->filtered`, the sample that makes an entry decides whether it is shown; the
    /// samples merged into it later count whatever their thread (perf's entries of one
    /// command, object and symbol merge every process's samples): a row shown, and its
    /// graph, can hold other processes' samples, and a row another process made first is
    /// not shown.
    hidden: bool,
}

/// A row's values for one other event of its group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberStat {
    /// Period with this entry as the leaf.
    pub self_: u64,
    /// Cumulative period.
    pub children: u64,
    /// Samples with this entry as the leaf.
    pub samples: u64,
}

/// One other event of a group's section: its samples and period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberTotal {
    /// Samples.
    pub samples: u64,
    /// Period percentages are of.
    pub total: u64,
}

/// One event's section of the report (or one event group's, shown together).
#[derive(Clone, Debug)]
pub struct Section {
    /// Event name, or perf's description of the group (`anon group { a, b }`).
    pub event: String,
    /// The group's other events (empty for an event alone).
    pub members: Vec<MemberTotal>,
    /// The event leads a group of several, shown together or apart (perf's header then
    /// says `events`).
    pub leads_group: bool,
    /// Samples after filtering.
    pub samples: u64,
    /// Total period after filtering.
    pub total: u64,
    /// Rows, heaviest first.
    pub rows: Vec<Row>,
    pub(crate) graphs: Vec<String>,
}

impl Section {
    /// Percentage of the total.
    pub fn pct(&self, v: u64) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            100.0 * v as f64 / self.total as f64
        }
    }
}

/// The events one section shows: an event alone, or a group's (its leader first).
struct View {
    events: Vec<u32>,
    /// Its first event leads a group of several, shown apart or not (perf's header then
    /// says `events`).
    leads: bool,
    /// The event's name, or perf's description of the group.
    title: String,
}

/// The sections' events, in the recording's order: a group where it starts (perf prints
/// its leader's section only), other events alone.
fn views(p: &Profile, opts: &ReportOptions) -> Vec<View> {
    let n = p.events.len() as u32;
    let alone = |i: u32| View {
        events: vec![i],
        leads: false,
        title: p.events[i as usize].name.clone(),
    };
    let names = |events: &[u32]| {
        events
            .iter()
            .map(|&i| p.events[i as usize].name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let groups: Vec<&crate::EventGroup> = p
        .groups
        .iter()
        .filter(|g| g.members > 1 && g.leader + g.members <= n)
        .collect();
    if opts.group == GroupView::Off {
        // perf still forms the groups (`--no-group` forces one leader, as `--group`,
        // on a file without groups): a leader's header says `events`.
        return (0..n)
            .map(|i| View {
                leads: if groups.is_empty() {
                    i == 0 && n > 1
                } else {
                    groups.iter().any(|g| g.leader == i)
                },
                ..alone(i)
            })
            .collect();
    }
    if groups.is_empty() {
        if opts.group == GroupView::Forced && n > 1 {
            // perf's forced leader: every event, named without braces.
            let events: Vec<u32> = (0..n).collect();
            let title = names(&events);
            return vec![View {
                events,
                leads: true,
                title,
            }];
        }
        return (0..n).map(alone).collect();
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < n {
        match groups.iter().find(|g| g.leader == i) {
            Some(g) => {
                let events: Vec<u32> = (i..i + g.members).collect();
                let title = format!(
                    "{} {{ {} }}",
                    g.name.as_deref().unwrap_or("anon group"),
                    names(&events)
                );
                out.push(View {
                    events,
                    leads: true,
                    title,
                });
                i += g.members;
            }
            None => {
                out.push(alone(i));
                i += 1;
            }
        }
    }
    out
}

/// (thread, stack, cpu, comm-time-bucket, trace text id, chain discarded: see
/// [`Sample::chain_broken`], cgroup texts: see [`Ids::cgroup_texts`]).
type AggKey = (
    u32,
    Option<StackId>,
    Option<u32>,
    u64,
    u32,
    bool,
    (u32, u32),
);

/// One event's samples aggregated by stack and its rows, before their text is formatted.
struct EventRows {
    agg: Vec<(AggKey, (u64, u64))>,
    rows: HashMap<RowKey, (Row, Seed)>,
    /// The period and samples percentages are of (every sample, or the kept ones with
    /// `--percentage relative`).
    total: u64,
    count: u64,
    /// The period and number of every sample in the CPUs and times asked for.
    all_total: u64,
    all_count: u64,
}

/// Aggregate event `ei`'s samples and make its rows.
#[allow(clippy::too_many_arguments)]
fn event_rows<'p>(
    p: &'p Profile,
    opts: &ReportOptions,
    ei: usize,
    ids: &mut Ids<'p>,
    caller_first: bool,
    ignore: Option<&regex::Regex>,
    by_trace: bool,
) -> EventRows {
    let by_cgroup = opts
        .sort
        .iter()
        .any(|k| matches!(k, SortKey::Cgroup | SortKey::CgroupId));
    // (thread, stack, cpu, comm-time-bucket, trace) -> (period, samples), in the order
    // of their first samples (perf's insertion order). The time only matters for the
    // thread's name, so it is reduced to the index of that name.
    let mut index: HashMap<AggKey, usize> = HashMap::default();
    // Whether perf's entries are per command (`--comm X` left the column out, not the key).
    let by_comm =
        opts.sort.contains(&SortKey::Comm) || opts.notes.iter().any(|n| n.starts_with("comm: "));
    let mut agg: Vec<(AggKey, (u64, u64))> = Vec::new();
    let (mut total, mut count) = (0u64, 0u64);
    // Every sample in the CPUs and times asked for: the base of absolute percentages.
    let (mut all_total, mut all_count) = (0u64, 0u64);
    for s in p.samples.iter().filter(|s| s.event as usize == ei) {
        if !opts.filter.keep_place(s) {
            continue;
        }
        let n = u64::from(s.count);
        all_total += s.period;
        all_count += n;
        // A sample of a thread the filters leave out still counts (see Row::hidden), but
        // where the rows are per command, one of another command makes rows of its own,
        // never shown: it is left out at once.
        let t = &p.threads[s.thread as usize];
        if !opts.filter.keep_leaf(p, s)
            || (by_comm && !opts.filter.keep_comm(t.name_at(s.time)))
            || (opts.filter.drop_threads && !opts.filter.keep_thread(t, t.name_at(s.time)))
        {
            continue;
        }
        let name_idx = t
            .names
            .iter()
            .rposition(|(tt, _)| *tt <= s.time)
            .unwrap_or(0) as u64;
        let cpu = if opts.sort.contains(&SortKey::Cpu) {
            s.cpu
        } else {
            None
        };
        // A tracepoint's text (`--sort trace`), interned: 0 is `N/A`.
        let trace = if by_trace { ids.trace_text(p, s) } else { 0 };
        // perf discards a chain with an unknown context marker in either order.
        let cut = s.chain_broken;
        let cg = if by_cgroup {
            ids.cgroup_texts(p, s)
        } else {
            (0, 0)
        };
        let key = (s.thread, s.stack, cpu, name_idx, trace, cut, cg);
        let i = *index.entry(key).or_insert_with(|| {
            agg.push((key, (0, 0)));
            agg.len() - 1
        });
        let e = &mut agg[i].1;
        e.0 += s.period;
        e.1 += n;
    }
    // Rows are keyed by interned ids; their text is formatted once, at the end.
    let mut rows: HashMap<RowKey, (Row, Seed)> = HashMap::default();
    let mut frames: Vec<FrameId> = Vec::new();
    for (ai, &((thread, stack, cpu, name_idx, trace, cut, cg), (period, n))) in
        agg.iter().enumerate()
    {
        let t = &p.threads[thread as usize];
        let comm = t
            .names
            .get(name_idx as usize)
            .map_or(t.unnamed.as_str(), |(_, n)| n.as_str());
        let comm_id = ids.comm(comm);
        let hidden = !opts.filter.keep_thread(t, comm);
        frames.clear();
        frames.extend(p.stack_frames(stack));
        let in_chain = if cut {
            // perf discarded the chain: the sample still counts for its address.
            &frames[..0]
        } else {
            &frames[..]
        };
        let (chain, root) = perf_chain(p, in_chain, opts, caller_first, ignore);
        let parent = ids.parent_of(p, chain, caller_first);
        let seed = |f: Option<FrameId>| Seed {
            frame: f,
            trace,
            thread,
            name_idx,
            cpu,
            parent,
            cg,
        };
        // Self time goes to the function the address is in, not to what is inlined there
        // (a DWARF leaf's ELF symbol: Profile::sample_frame).
        let leaf = root.or_else(|| p.sample_frame(stack).or(frames.first().copied()));
        let mut leaf_key = ids.key(p, &opts.sort, leaf, comm_id, t, cpu, parent, (trace, cg));
        // perf keys an unnamed address by its file offset where the sample is its own
        // entry and by the address it ran at where a callchain reaches it: two entries.
        if let (Some(i), Some(f)) = (opts.sort.iter().position(|k| *k == SortKey::Sym), leaf) {
            let fr = &p.frames[f as usize];
            if let Some(off) = fr.map_offset.filter(|&o| o != fr.addr)
                && p.func_of(f).name == "[unknown]"
            {
                leaf_key[i] = ids.unnamed_id(1, off);
            }
        }
        let seq = rows.len() as u32;
        let (r, _) = rows.entry(leaf_key).or_insert_with(|| {
            let mut r = Row::new(leaf, ai as u32, thread);
            r.seq = seq;
            r.hidden = hidden;
            (r, seed(leaf))
        });
        r.self_ += period;
        r.samples += n;
        if leaf.is_some_and(|f| p.func_of(f).kernel) {
            r.sys += period;
        }
        if cut {
            // No chain: no graph, no callers.
            if opts.children {
                r.children += period;
                r.last_stack = Some(ai as u32);
            }
        } else if !opts.children {
            r.contrib.push((ai as u32, 0));
        } else {
            // perf's own entry of the sample (its symbol, which an inlined leaf is not)
            // comes first and holds the whole chain.
            let len = chain.len();
            r.last_stack = Some(ai as u32);
            r.children += period;
            r.max_depth = r.max_depth.max(len as u32);
            r.contrib.push((ai as u32, SELF));
            // Then every entry of the chain, counted once per stack however often it
            // recurs there (a row remembers the last stack, by index, that counted it),
            // in perf's walk: from the outermost caller in caller order, from the leaf
            // in callee order.
            let order: Box<dyn Iterator<Item = usize>> = if caller_first {
                Box::new((0..len).rev())
            } else {
                Box::new(0..len)
            };
            // perf's walk reuses one location: a frame outside every mapping keeps the
            // privilege level of the frame walked before it (the sample's own first).
            let mut kernel = leaf.is_some_and(|f| p.func_of(f).kernel);
            for depth in order {
                let f = chain[depth];
                let func = p.func_of(f);
                let unmapped = func.dso == "[unknown]";
                if !unmapped {
                    kernel = func.kernel;
                }
                let k = ids.key(p, &opts.sort, Some(f), comm_id, t, cpu, parent, (trace, cg));
                let seq = rows.len() as u32;
                let (r, _) = rows.entry(k).or_insert_with(|| {
                    let mut r = Row::new(Some(f), ai as u32, thread);
                    r.seq = seq;
                    r.hidden = hidden;
                    r.from_chain = true;
                    r.kernel = unmapped.then_some(kernel);
                    (r, seed(Some(f)))
                });
                if r.last_stack == Some(ai as u32) {
                    continue;
                }
                r.last_stack = Some(ai as u32);
                r.children += period;
                // perf's callchain max_depth: the length of the chain it adds.
                let chain_len = if caller_first { depth + 1 } else { len - depth };
                r.max_depth = r.max_depth.max(chain_len as u32);
                r.contrib
                    .push((ai as u32, depth.min(SELF as usize - 1) as u16));
            }
        }
    }
    // perf's relative total: the rows shown (its total_non_filtered_period).
    for (r, _) in rows.values().filter(|(r, _)| !r.hidden) {
        total += r.self_;
        count += r.samples;
    }
    let (total, count) = if opts.relative {
        (total, count)
    } else {
        (all_total, all_count)
    };
    EventRows {
        agg,
        rows,
        total,
        count,
        all_total,
        all_count,
    }
}

/// Build the sections of a report: one per event that has samples.
pub fn build(p: &Profile, opts: &ReportOptions) -> Vec<Section> {
    let mut sections = Vec::new();
    let patterns: &[String] = if opts.sort.contains(&SortKey::Parent) {
        &opts.parent_pattern
    } else {
        &[]
    };
    let mut ids = Ids::new(p, patterns, opts.long_dso, opts.full_source_path);
    let caller_first = opts.caller_order.unwrap_or(opts.children);
    let ignore = chain_regex(opts);
    let by_trace = opts.sort.contains(&SortKey::Trace);
    for view in views(p, opts) {
        let lead = view.events[0] as usize;
        let ev = &p.events[lead];
        let EventRows {
            agg,
            mut rows,
            total,
            count,
            all_total,
            all_count,
        } = event_rows(
            p,
            opts,
            lead,
            &mut ids,
            caller_first,
            ignore.as_ref(),
            by_trace,
        );
        // The other events of a group: their rows join the leader's (perf's hists__match
        // and dummy entries), each with its own share; a row only they have shows zero
        // for the leader and no call graph.
        let nm = view.events.len() - 1;
        let mut members = Vec::with_capacity(nm);
        let mut any = all_count > 0;
        for (mi, &m) in view.events[1..].iter().enumerate() {
            let er = event_rows(
                p,
                opts,
                m as usize,
                &mut ids,
                caller_first,
                ignore.as_ref(),
                by_trace,
            );
            any |= er.all_count > 0;
            members.push(MemberTotal {
                samples: er.count,
                total: er.total,
            });
            for (k, (row, seed)) in er.rows {
                let seq = rows.len() as u32;
                let (r, _) = rows.entry(k).or_insert_with(|| {
                    let mut d = Row::new(row.frame, u32::MAX, row.thread);
                    d.seq = seq;
                    d.kernel = row.kernel;
                    d.from_chain = row.from_chain;
                    d.hidden = row.hidden;
                    (d, seed)
                });
                r.members.resize(nm, MemberStat::default());
                r.members[mi] = MemberStat {
                    self_: row.self_,
                    children: row.children,
                    samples: row.samples,
                };
            }
        }
        if !any {
            continue;
        }
        for (r, _) in rows.values_mut() {
            r.members.resize(nm, MemberStat::default());
        }
        // perf's `-v` origin letter of each object, looked up once.
        let mut origins: HashMap<String, char> = HashMap::default();
        let rows: HashMap<RowKey, Row> = rows
            .into_iter()
            .map(|(k, (mut row, seed))| {
                let t = &p.threads[seed.thread as usize];
                let comm = t
                    .names
                    .get(seed.name_idx as usize)
                    .map_or(t.unnamed.as_str(), |(_, n)| n.as_str());
                let parent = seed.parent.map(|f| p.funcs[f as usize].name.as_str());
                // As perf: a sampled address unnamed is printed relative to its file, one
                // reached only through callchains (children) as it ran.
                let sampled = row.self_ > 0;
                let origin = opts.sym_origin.as_ref().map(|(dir, symfs)| {
                    let dso = seed
                        .frame
                        .map_or("[unknown]", |f| p.func_of(f).dso.as_str());
                    *origins.entry(dso.to_string()).or_insert_with(|| {
                        let id = p.dso_build_ids.get(dso).map(Vec::as_slice);
                        perfkit_symbols::symtab_origin(dso, id, dir, symfs.as_deref())
                    })
                });
                row.keys = opts
                    .sort
                    .iter()
                    .map(|k| {
                        let at = Place {
                            frame: seed.frame,
                            kernel: row.kernel,
                            sampled,
                            long_dso: opts.long_dso,
                            full_source_path: opts.full_source_path,
                            origin,
                            from_chain: row.from_chain,
                        };
                        match k {
                            SortKey::Trace => return ids.texts[seed.trace as usize].clone(),
                            SortKey::Cgroup => return ids.texts[seed.cg.0 as usize].clone(),
                            SortKey::CgroupId => return ids.texts[seed.cg.1 as usize].clone(),
                            _ => {}
                        }
                        // (perf's `pid` key names the thread as it is named last.)
                        let comm = if *k == SortKey::Pid { t.name() } else { comm };
                        format_key(p, *k, at, comm, t.tid, seed.cpu, parent)
                    })
                    .collect();
                (k, row)
            })
            .collect();
        let mut rows: Vec<Row> = rows.into_values().collect();
        if opts.symbol_filter.is_some() || opts.exclude_other {
            rows.retain(|r| entry_shown(p, opts, r));
        }
        let weight = |r: &Row| if opts.children { r.children } else { r.self_ };
        let by_keys =
            |a: &Row, b: &Row| perf_key_order(&opts.sort, &a.keys, &b.keys, &p.cgroup_names);
        // perf's overhead sort of a group: the leader's, then each other event's.
        let by_members = |a: &Row, b: &Row| {
            let (x, y) = (a.members.iter(), b.members.iter());
            y.map(|m| m.self_).cmp(x.map(|m| m.self_))
        };
        if opts.overhead && opts.children && opts.graph != GraphMode::None {
            // perf's children sort: the children column; equal ones put callers above
            // callees (the longer callchain first in caller order, the shorter in callee
            // order), but only between entries of one thread (the thread of the entry's
            // first sample); then the self column and the keys. perf skips the depth step
            // without callchains shown (`-g none`: its use_callchain is off). Not being
            // transitive, that comparison gives perf's order only by inserting the
            // entries as perf does: in the order of its entry tree, into a red-black tree.
            // perf's entries come from its entry tree, through its collapse tree: each
            // built by inserting the entries in turn with that (not transitive) comparison.
            rows.sort_by_key(|r| r.seq);
            for _ in 0..2 {
                rows = crate::rb_order::rb_order(rows, |new, node| {
                    entry_cmp(p, &opts.sort, node, new).is_lt()
                });
            }
            rows = crate::rb_order::rb_order(rows, |a, b| {
                weight(a)
                    .cmp(&weight(b))
                    .reverse()
                    .then_with(|| {
                        if a.thread != b.thread {
                            std::cmp::Ordering::Equal
                        } else if caller_first {
                            b.max_depth.cmp(&a.max_depth)
                        } else {
                            a.max_depth.cmp(&b.max_depth)
                        }
                    })
                    .then_with(|| b.self_.cmp(&a.self_))
                    .then_with(|| by_members(a, b))
                    .then_with(|| perf_sort_order(&opts.sort, &a.keys, &b.keys, &p.cgroup_names))
                    .is_lt()
            });
        } else if opts.overhead {
            // perf's output sort: the overhead column, then the keys; rows equal in all of
            // them (unnamed symbols: perf's `sort__sym_sort` has nothing to compare) in the
            // order of perf's collapsed tree, where their addresses decided.
            rows.sort_by_key(|r| r.seq);
            for _ in 0..2 {
                rows = crate::rb_order::rb_order(rows, |new, node| {
                    entry_cmp(p, &opts.sort, node, new).is_lt()
                });
            }
            rows.sort_by(|a, b| {
                weight(b)
                    .cmp(&weight(a))
                    .then_with(|| b.self_.cmp(&a.self_))
                    .then_with(|| by_members(a, b))
                    .then_with(|| perf_sort_order(&opts.sort, &a.keys, &b.keys, &p.cgroup_names))
            });
        } else {
            rows.sort_by(by_keys);
        }
        // Hidden rows take their place in perf's output tree (its order is built by
        // inserting every entry, filtered or not), but are not printed.
        rows.retain(|r| !r.hidden);
        let mut section = Section {
            event: view.title,
            members,
            leads_group: view.leads,
            samples: count,
            total,
            rows,
            graphs: Vec::new(),
        };
        // (--hierarchy applies the limit to each level's entries.)
        if !opts.hierarchy {
            section
                .rows
                .retain(|r| section_pct(total, weight(r)) >= opts.percent_limit);
        }
        // Only an event that recorded callchains gets graphs.
        if opts.graph != GraphMode::None && ev.callchain {
            // perf prints graph percentages of every sample, relative or not, but its
            // threshold is of the report's total: the same threshold over every sample.
            let scaled;
            let gopts = if total != all_total && all_total > 0 {
                scaled = ReportOptions {
                    graph_threshold: opts.graph_threshold * total as f64 / all_total as f64,
                    ..opts.clone()
                };
                &scaled
            } else {
                opts
            };
            let ranks = dso_ranks(p);
            section.graphs = section
                .rows
                .iter()
                .map(|r| call_graph(p, gopts, &agg, r, all_total, &ranks))
                .collect();
        }
        sections.push(section);
    }
    sections
}

fn section_pct(total: u64, v: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        100.0 * v as f64 / total as f64
    }
}

/// A pattern of `--parent` or `--ignore-callees`: perf's extended regular expression.
pub fn pattern(re: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(re)
}

/// The `--ignore-callees` pattern, where callchains are used (perf resolves none for a
/// self-only report without graphs).
fn chain_regex(opts: &ReportOptions) -> Option<regex::Regex> {
    let re = opts.ignore_callees.as_deref()?;
    if !opts.children && opts.graph == GraphMode::None {
        return None;
    }
    pattern(re).ok()
}

/// Whether a row passes the entry filters (`--symbol-filter`, `--exclude-other`).
fn entry_shown(p: &Profile, opts: &ReportOptions, r: &Row) -> bool {
    if let Some(want) = &opts.symbol_filter {
        let name = r.frame.map(|f| p.func_of(f).name.as_str());
        if !name.is_some_and(|n| n != "[unknown]" && n.contains(want.as_str())) {
            return false;
        }
    }
    if opts.exclude_other
        && let Some(i) = opts.sort.iter().position(|k| *k == SortKey::Parent)
        && r.keys.get(i).is_some_and(|k| k == "[other]")
    {
        return false;
    }
    true
}

/// What perf keeps of a sample's callchain (leaf first) and the frame the sample counts
/// for when that is not its leaf. perf walks the chain in display order (the outermost
/// caller first when callers come first), keeping `--max-stack` entries; with
/// `--ignore-callees`, a matching function restarts the chain at itself and becomes the
/// sample's entry: the outermost match when the leaf comes first (its callees are
/// dropped), the innermost when callers come first (its callers are dropped).
fn perf_chain<'f>(
    p: &Profile,
    frames: &'f [FrameId],
    opts: &ReportOptions,
    caller_first: bool,
    ignore: Option<&regex::Regex>,
) -> (&'f [FrameId], Option<FrameId>) {
    let chain = kept_chain(frames, opts.max_stack, caller_first);
    let Some(re) = ignore else {
        return (chain, None);
    };
    let hit = |f: &FrameId| {
        let name = &p.func_of(*f).name;
        name != "[unknown]" && re.is_match(name)
    };
    if caller_first {
        match chain.iter().position(hit) {
            Some(i) => (&chain[..=i], Some(chain[i])),
            None => (chain, None),
        }
    } else {
        match chain.iter().rposition(hit) {
            Some(j) => (&chain[j..], Some(chain[j])),
            None => (chain, None),
        }
    }
}

/// A row's contribution that is the sample's own entry (not a callchain depth).
const SELF: u16 = u16::MAX;

/// The callchain entries perf keeps of a sample (`--max-stack`), leaf first: the first
/// `max` from the leaf, or, when callers come first, the `max` outermost callers (perf
/// walks the chain in display order and stops there).
fn kept_chain(frames: &[FrameId], max: usize, caller_first: bool) -> &[FrameId] {
    if frames.len() <= max {
        frames
    } else if caller_first {
        &frames[frames.len() - max..]
    } else {
        &frames[..max]
    }
}

/// A row's identity: one interned id per sort key (unused slots zero).
type RowKey = [u64; 9];

/// What a row's text is formatted from.
#[derive(Clone, Copy)]
struct Seed {
    frame: Option<FrameId>,
    /// Index of the sample's trace text (`--sort trace`).
    trace: u32,
    thread: u32,
    name_idx: u64,
    cpu: Option<u32>,
    parent: Option<FuncId>,
    /// The sample's cgroup texts ([`Ids::cgroup_texts`]).
    cg: (u32, u32),
}

impl Row {
    fn new(frame: Option<FrameId>, first: u32, thread: u32) -> Row {
        Row {
            first,
            thread,
            seq: 0,
            from_chain: false,
            members: Vec::new(),
            kernel: None,
            keys: Vec::new(),
            children: 0,
            self_: 0,
            samples: 0,
            sys: 0,
            frame,
            contrib: Vec::new(),
            last_stack: None,
            max_depth: 0,
            hidden: false,
        }
    }
}

/// Interned ids for the sort keys.
struct Ids<'p> {
    comms: HashMap<&'p str, u64>,
    dso_of_func: Vec<u64>,
    /// `srcfile` rows, by file name.
    srcfiles: HashMap<&'p str, u64>,
    /// Each frame's `srcline` row (`u64::MAX`: not yet made): its printed text, interned
    /// in [`Ids::texts`] (perf's `sort__srcline_cmp` compares the texts).
    srcline_of_frame: Vec<u64>,
    full_source_path: bool,
    parent_match: Vec<Option<bool>>,
    patterns: Option<regex::Regex>,
    /// Symbols as perf's `sort__sym_cmp` tells them apart: (object, start, size).
    syms: HashMap<(u64, u64, u64), u64>,
    /// Inlined functions as perf tells them apart: by name and the range of the symbol
    /// they are inlined into (function, that symbol's start in its file).
    inlined: HashMap<(FuncId, u64), u64>,
    /// Unnamed addresses, told apart by value (0 and 0x8000000000000000 are two rows), in
    /// two spaces: addresses they ran at (0) and file offsets (1).
    unnamed: HashMap<(u8, u64), u64>,
    /// Trace texts (`--sort trace`), interned: index 0 is `N/A`.
    texts: Vec<String>,
    text_ids: HashMap<String, u32>,
}

impl<'p> Ids<'p> {
    /// `long_dso`: objects are told apart by path (perf's `-v`); otherwise, as perf's
    /// `sort__dso_cmp`, by short name, so two objects of one file name make one row.
    fn new(
        p: &'p Profile,
        patterns: &'p [String],
        long_dso: bool,
        full_source_path: bool,
    ) -> Ids<'p> {
        let mut dsos: HashMap<std::borrow::Cow<'p, str>, u64> = HashMap::default();
        let dso_of_func = p
            .funcs
            .iter()
            .map(|f| {
                let n = dsos.len() as u64;
                let name = if long_dso {
                    std::borrow::Cow::Borrowed(f.dso.as_str())
                } else {
                    perfkit_symbols::dso_short_name(&f.dso)
                };
                *dsos.entry(name).or_insert(n)
            })
            .collect();
        Ids {
            comms: HashMap::default(),
            dso_of_func,
            syms: HashMap::default(),
            inlined: HashMap::default(),
            unnamed: HashMap::default(),
            srcfiles: HashMap::default(),
            srcline_of_frame: Vec::new(),
            full_source_path,
            parent_match: vec![None; p.funcs.len()],
            texts: vec!["N/A".into()],
            text_ids: HashMap::default(),
            patterns: (!patterns.is_empty())
                .then(|| pattern(&patterns.join("|")).ok())
                .flatten(),
        }
    }

    /// The `srcline` row of frame `frame`: one per text perf prints for it.
    fn srcline_id(&mut self, p: &Profile, frame: Option<FrameId>) -> u64 {
        let Some(f) = frame else {
            return u64::from(self.intern_text(crate::srcline::UNKNOWN.into()));
        };
        let i = f as usize;
        if self.srcline_of_frame.len() <= i {
            self.srcline_of_frame
                .resize(p.frames.len().max(i + 1), u64::MAX);
        }
        if self.srcline_of_frame[i] == u64::MAX {
            let text = crate::srcline::srcline(p, frame, true, self.full_source_path);
            self.srcline_of_frame[i] = u64::from(self.intern_text(text));
        }
        self.srcline_of_frame[i]
    }

    /// A text's index in [`Ids::texts`], interned.
    fn intern_text(&mut self, text: String) -> u32 {
        if let Some(&i) = self.text_ids.get(&text) {
            return i;
        }
        let i = self.texts.len() as u32;
        self.texts.push(text.clone());
        self.text_ids.insert(text, i);
        i
    }

    /// The sample's `cgroup` and `cgroup_id` texts, interned: perf's cgroup name (`N/A`
    /// without a cgroup id, `unknown` for one no CGROUP record named) and its thread's
    /// cgroup namespace `DEV/0xINODE` at the sample's time.
    fn cgroup_texts(&mut self, p: &Profile, s: &Sample) -> (u32, u32) {
        let name = match p.cgroup_id(s.cgroup) {
            0 => "N/A".to_string(),
            id => p
                .cgroup_names
                .get(&id)
                .map_or_else(|| "unknown".to_string(), String::clone),
        };
        let t = &p.threads[s.thread as usize];
        let (dev, ino) = t
            .cgroup_ns
            .iter()
            .rev()
            .find(|(tt, _)| *tt <= s.time)
            .map_or((0, 0), |(_, ns)| *ns);
        (
            self.intern_text(name),
            self.intern_text(format!("{dev}/0x{ino:x}")),
        )
    }

    /// The index of sample `s`'s trace text as perf's `trace` key prints it (0: `N/A`, not
    /// a tracepoint sample).
    fn trace_text(&mut self, p: &Profile, s: &Sample) -> u32 {
        let ev = &p.events[s.event as usize];
        let (Some(tr), Some(raw)) = (&ev.trace, s.raw.and_then(|r| p.raw.get(r as usize))) else {
            return 0;
        };
        let mut text = String::new();
        tr.text_into(raw, &p.trace_kernel, &mut text);
        let n = self.texts.len() as u32;
        *self.text_ids.entry(text).or_insert_with_key(|t| {
            self.texts.push(t.clone());
            n
        })
    }

    fn comm(&mut self, name: &'p str) -> u64 {
        let n = self.comms.len() as u64;
        *self.comms.entry(name).or_insert(n)
    }

    /// The first entry of the chain, in perf's walking order (callers first or the leaf
    /// first), whose symbol matches the parent pattern.
    fn parent_of(&mut self, p: &Profile, chain: &[FrameId], caller_first: bool) -> Option<FuncId> {
        let re = self.patterns.as_ref()?;
        let mut hit = |f: &FrameId| {
            let func = p.frames[*f as usize].func;
            let name = &p.funcs[func as usize].name;
            let hit = *self.parent_match[func as usize]
                .get_or_insert_with(|| name != "[unknown]" && re.is_match(name));
            hit.then_some(func)
        };
        if caller_first {
            chain.iter().rev().find_map(&mut hit)
        } else {
            chain.iter().find_map(&mut hit)
        }
    }

    /// The `sym` key of named function `f`: perf compares symbols by object (its short
    /// name, as the `dso` key) and then start and end, so same-named statics at two
    /// addresses are two rows, and one library's symbol in two copies of it is one.
    fn sym_id(&mut self, p: &Profile, f: FuncId) -> u64 {
        let Some(start) = p.func_start(f) else {
            return u64::from(f);
        };
        let size = p.sym_sizes.get(&f).copied().unwrap_or(0);
        let key = (self.dso_of_func[f as usize], start, size);
        let n = self.syms.len() as u64;
        // (Apart from function ids and unnamed addresses.)
        *self.syms.entry(key).or_insert((1 << 62) | n)
    }

    /// The `sym` key of an unnamed address: perf's `sort__sym_cmp` compares the whole
    /// address (`space` 0: where it ran; 1: its offset in its file).
    fn unnamed_id(&mut self, space: u8, addr: u64) -> u64 {
        let n = self.unnamed.len() as u64;
        // (Apart from function, symbol and inline ids.)
        *self.unnamed.entry((space, addr)).or_insert((1 << 63) | n)
    }

    /// The `sym` key of a function inlined at frame `fr`: perf gives an inline frame a
    /// symbol of its own spanning the symbol it is inlined into (`new_inline_sym`) and
    /// compares two by name, then by whether their ranges overlap, then by start
    /// (`_sort__sym_cmp`): one function inlined into two functions is two rows.
    fn inlined_id(&mut self, p: &Profile, fr: FrameId, f: FuncId) -> u64 {
        let frame = &p.frames[fr as usize];
        let Some(off) = frame.sym_offset else {
            return u64::from(f);
        };
        let start = frame.map_offset.unwrap_or(frame.addr).wrapping_sub(off);
        let n = self.inlined.len() as u64;
        *self.inlined.entry((f, start)).or_insert((1 << 61) | n)
    }

    #[allow(clippy::too_many_arguments)]
    fn key(
        &mut self,
        p: &'p Profile,
        sort: &[SortKey],
        frame: Option<FrameId>,
        comm: u64,
        t: &crate::Thread,
        cpu: Option<u32>,
        parent: Option<FuncId>,
        (trace, cg): (u32, (u32, u32)),
    ) -> RowKey {
        let mut key = [0u64; 9];
        let func = frame.map(|f| p.frames[f as usize].func);
        for (slot, k) in key.iter_mut().zip(sort) {
            *slot = match k {
                SortKey::Comm => comm,
                // perf's `pid` key is the thread.
                SortKey::Pid => t.tid as u32 as u64,
                SortKey::Tid => t.tid as u32 as u64,
                SortKey::Dso => func.map_or(u64::MAX, |f| self.dso_of_func[f as usize]),
                SortKey::Sym => match (frame, func) {
                    // Unknown symbols are told apart by address, as perf does.
                    (Some(fr), Some(f)) if p.funcs[f as usize].name == "[unknown]" => {
                        self.unnamed_id(0, p.frames[fr as usize].addr)
                    }
                    (Some(fr), Some(f)) if p.frames[fr as usize].inlined => {
                        self.inlined_id(p, fr, f)
                    }
                    (_, Some(f)) => self.sym_id(p, f),
                    _ => u64::MAX,
                },
                SortKey::Symoff => frame.map_or(u64::MAX, u64::from),
                SortKey::Cpu => cpu.map_or(u64::MAX, u64::from),
                SortKey::Srcline => self.srcline_id(p, frame),
                SortKey::Parent => parent.map_or(u64::MAX, u64::from),
                SortKey::Trace => u64::from(trace),
                SortKey::Srcfile => match frame.and_then(|f| p.frames[f as usize].srcline.as_ref())
                {
                    Some((file, _)) => {
                        let n = self.srcfiles.len() as u64;
                        *self
                            .srcfiles
                            .entry(crate::srcline::file_name(file))
                            .or_insert(n)
                    }
                    None => u64::MAX,
                },
                SortKey::Cgroup => u64::from(cg.0),
                SortKey::CgroupId => u64::from(cg.1),
                SortKey::IpcNull => 0,
                // perf keeps symbols of one size apart (its entries still carry their
                // symbol): one row per symbol, as `sym`.
                SortKey::SymbolSize => match (frame, func) {
                    (Some(fr), Some(f)) if p.funcs[f as usize].name == "[unknown]" => {
                        self.unnamed_id(0, p.frames[fr as usize].addr)
                    }
                    (_, Some(f)) => u64::from(f),
                    _ => u64::MAX,
                },
            };
        }
        key
    }
}

/// perf's entry comparison (`hist_entry__cmp`, which orders its entry trees): whether an
/// entry `new` goes left of `node` (Less) or right. Key by key: commands and objects by
/// name (no object last); symbols by start address in their object, unnamed ones after
/// the named by address, but a pair with an inlined function by name, descending (perf's
/// `_sort__sym_cmp` compares those names the other way round); other keys as
/// [`perf_key_order`].
fn entry_cmp(p: &Profile, sort: &[SortKey], node: &Row, new: &Row) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    struct Sym<'a> {
        unnamed: bool,
        inlined: bool,
        name: &'a str,
        at: u64,
    }
    let sym = |r: &Row| -> Sym<'_> {
        let Some(f) = r.frame else {
            return Sym {
                unnamed: true,
                inlined: false,
                name: "",
                at: 0,
            };
        };
        let fr = &p.frames[f as usize];
        let func = p.func_of(f);
        if func.name == "[unknown]" {
            let ip = if r.self_ > 0 {
                fr.map_offset.unwrap_or(fr.addr)
            } else {
                fr.addr
            };
            return Sym {
                unnamed: true,
                inlined: false,
                name: "",
                at: ip,
            };
        }
        let at = fr.map_offset.unwrap_or(fr.addr);
        Sym {
            unnamed: false,
            inlined: fr.inlined,
            name: func.name.strip_suffix(" (inlined)").unwrap_or(&func.name),
            at: at.wrapping_sub(fr.sym_offset.unwrap_or(0)),
        }
    };
    for (i, k) in sort.iter().enumerate() {
        let o = match k {
            SortKey::Sym => {
                let (a, b) = (sym(node), sym(new));
                match (a.unnamed, b.unnamed) {
                    // perf's `_sort__addr_cmp`: `(int64_t)(right_ip - left_ip)`, a
                    // difference that wraps, so an address 2^63 or more above another
                    // (`0xdfdfdfdf00000000` beside `0x564e4b93c830`) sorts below it.
                    (true, true) => (b.at.wrapping_sub(a.at) as i64).cmp(&0),
                    (false, true) => Ordering::Greater,
                    (true, false) => Ordering::Less,
                    _ if a.inlined || b.inlined => a.name.cmp(b.name).then_with(|| b.at.cmp(&a.at)),
                    _ => b.at.cmp(&a.at),
                }
            }
            _ => perf_key_order(&[*k], &new.keys[i..=i], &node.keys[i..=i], &p.cgroup_names),
        };
        if o.is_ne() {
            return o;
        }
    }
    Ordering::Equal
}

/// Rows of equal weight in perf's order: key by key, each as perf's sort function compares
/// it. Symbols compare by name without the `[k]`/`[.]` mark, unnamed addresses after every
/// named symbol (perf's `cmp_null`), in address order; rows without a DSO after the others;
/// cgroups by id (`cgroups`: their names, from the profile), their namespaces by device
/// and inode, the larger first (perf's `sort__cgroup_id_cmp` compares them the other way
/// round); other keys as strings.
pub(crate) fn perf_key_order(
    sort: &[SortKey],
    a: &[String],
    b: &[String],
    cgroups: &HashMap<u64, String>,
) -> std::cmp::Ordering {
    for ((k, x), y) in sort.iter().zip(a).zip(b) {
        let o = match k {
            SortKey::Cgroup => {
                let id = |name: &str| match name {
                    "N/A" => 0,
                    name => cgroups
                        .iter()
                        .find(|(_, n)| *n == name)
                        .map_or(u64::MAX, |(id, _)| *id),
                };
                id(x).cmp(&id(y))
            }
            SortKey::CgroupId => {
                let ns = |s: &str| -> (u64, u64) {
                    let (dev, ino) = s.split_once("/0x").unwrap_or((s, "0"));
                    (
                        dev.parse().unwrap_or(0),
                        u64::from_str_radix(ino, 16).unwrap_or(0),
                    )
                };
                ns(y).cmp(&ns(x))
            }
            SortKey::Sym | SortKey::Symoff => {
                let name = |s: &str| -> (bool, String) {
                    // After the `[k] ` mark (and `-v`'s address and origin before it).
                    let n = match s.find("[.] ").or_else(|| s.find("[k] ")) {
                        Some(i) => &s[i + 4..],
                        None => s.get(4..).unwrap_or(s),
                    };
                    let unnamed = n.starts_with("0x")
                        || (n.len() == 16 && n.bytes().all(|c| c.is_ascii_hexdigit()))
                        || n == "[unknown]";
                    (unnamed, n.to_string())
                };
                name(x).cmp(&name(y))
            }
            // Sizes by number, a symbol without one as size 0.
            SortKey::SymbolSize => {
                let n = |s: &str| s.parse::<u64>().unwrap_or(0);
                n(x).cmp(&n(y))
            }
            // No map: after every DSO, as perf's cmp_null puts it.
            SortKey::Dso => (x == "[unknown]", x).cmp(&(y == "[unknown]", y)),
            // The thread by its tid, signed (perf's `sort__thread_cmp`: `-1::-1` before
            // `0:swapper`), then the text.
            SortKey::Pid | SortKey::Tid => {
                let tid = |s: &str| -> i64 {
                    s.trim_start()
                        .split(':')
                        .next()
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0)
                };
                tid(x).cmp(&tid(y)).then_with(|| x.cmp(y))
            }
            _ => x.cmp(y),
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    a.cmp(b)
}

/// perf's output comparison of two entries' keys (`hist_entry__sort`), without the
/// last resort that makes [`perf_key_order`] a total order: two unnamed symbols are equal
/// there (`sort__sym_sort` is `cmp_null` without symbols), so such entries keep the order
/// of perf's collapsed tree, where their addresses decided.
fn perf_sort_order(
    sort: &[SortKey],
    a: &[String],
    b: &[String],
    cgroups: &HashMap<u64, String>,
) -> std::cmp::Ordering {
    for (i, k) in sort.iter().enumerate() {
        let (x, y) = (&a[i..=i], &b[i..=i]);
        if matches!(k, SortKey::Sym | SortKey::Symoff)
            && is_unnamed_key(&x[0])
            && is_unnamed_key(&y[0])
        {
            continue;
        }
        let o = perf_key_order(&[*k], x, y, cgroups);
        if o.is_ne() {
            return o;
        }
    }
    std::cmp::Ordering::Equal
}

/// A row's frame, and whether it was sampled (else only reached through callchains).
struct Place {
    frame: Option<FrameId>,
    /// The privilege level shown, when not the function's own.
    kernel: Option<bool>,
    sampled: bool,
    /// DSOs by their path (`-v`), not their short name.
    long_dso: bool,
    /// `--full-source-path`.
    full_source_path: bool,
    /// With `-v`: the letter of where the row's object's symbols come from (perf's
    /// `dso__symtab_origin`), printed with the address before the symbol.
    origin: Option<char>,
    /// The row was made by a callchain entry ([`Row::from_chain`]).
    from_chain: bool,
}

/// Whether a symbol key (`[.] NAME`) names no symbol: an address or `[unknown]`.
fn is_unnamed_key(key: &str) -> bool {
    let name = key.rsplit("] ").next().unwrap_or(key);
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    name == "[unknown]"
        || name.strip_prefix("0x").is_some_and(hex)
        || (name.len() == 16 && hex(name))
}

/// An unnamed address as perf prints it (`%#.16llx`: zero has no `0x`): sampled ones
/// relative to their file mapping, callchain ones as they ran.
fn unnamed_addr(fr: &crate::Frame, sampled: bool) -> String {
    let a = if sampled {
        fr.map_offset.unwrap_or(fr.addr)
    } else {
        fr.addr
    };
    if a == 0 {
        "0000000000000000".into()
    } else {
        format!("{a:#018x}")
    }
}

#[allow(clippy::too_many_arguments)]
fn format_key(
    p: &Profile,
    key: SortKey,
    at: Place,
    comm: &str,
    tid: i32,
    cpu: Option<u32>,
    parent: Option<&str>,
) -> String {
    let frame = at.frame;
    let func = frame.map(|f| p.func_of(f));
    let mode = |kernel: bool| {
        if at.kernel.unwrap_or(kernel) {
            "[k]"
        } else {
            "[.]"
        }
    };
    match key {
        SortKey::Comm => comm.to_string(),
        // perf's `pid` key: the thread, its id in 7 columns and its current name.
        SortKey::Pid => format!("{tid:>7}:{comm}"),
        SortKey::Tid => format!("{tid}:{comm}"),
        SortKey::Dso => func.map_or("[unknown]".into(), |f| {
            if at.long_dso {
                f.dso.clone()
            } else {
                perfkit_symbols::dso_short_name(&f.dso).into_owned()
            }
        }),
        SortKey::Sym => {
            // perf's `-v`: the address (`%-#18llx`: the sampled one relative to its file,
            // kernel addresses as they are) and the origin letter first.
            let mut s = String::new();
            if let Some(o) = at.origin {
                let ip = match (frame, func) {
                    (Some(fr), Some(f)) => {
                        let fr = &p.frames[fr as usize];
                        if f.kernel || at.from_chain {
                            fr.addr
                        } else {
                            fr.map_offset.unwrap_or(fr.addr)
                        }
                    }
                    _ => 0,
                };
                let ip = if ip == 0 {
                    "0".to_string()
                } else {
                    format!("{ip:#x}")
                };
                let _ = write!(s, "{ip:<18} {o} ");
            }
            s.push_str(&match (frame, func) {
                (Some(fr), Some(f)) if f.name == "[unknown]" => {
                    let fr = &p.frames[fr as usize];
                    format!("{} {}", mode(f.kernel), unnamed_addr(fr, at.sampled))
                }
                // A data object: with the distance of the row's address from the
                // symbol's start where it ran (perf's `_hist_entry__sym_snprintf`).
                (Some(fr), Some(f)) if p.data_objects.contains(&p.frames[fr as usize].func) => {
                    let fr = &p.frames[fr as usize];
                    let ip = if f.kernel || at.from_chain {
                        fr.addr
                    } else {
                        fr.map_offset.unwrap_or(fr.addr)
                    };
                    let start = fr.addr.wrapping_sub(fr.sym_offset.unwrap_or(0));
                    format!(
                        "{} {}+{:#x}",
                        mode(f.kernel),
                        f.name,
                        ip.wrapping_sub(start)
                    )
                }
                (_, Some(f)) => format!("{} {}", mode(f.kernel), f.name),
                _ => "[.] [unknown]".into(),
            });
            s
        }
        SortKey::Symoff => match (frame, func) {
            (Some(fr), Some(f)) => {
                let fr = &p.frames[fr as usize];
                match fr.sym_offset {
                    Some(off) if f.name != "[unknown]" => {
                        format!("{} {}+{off:#x}", mode(f.kernel), f.name)
                    }
                    _ => format!("{} {}", mode(f.kernel), unnamed_addr(fr, at.sampled)),
                }
            }
            _ => "[.] [unknown]".into(),
        },
        SortKey::Cpu => cpu.map_or("-".into(), |c| format!("{c:03}")),
        SortKey::Srcline => crate::srcline::srcline(p, frame, true, at.full_source_path),
        SortKey::Parent => parent.unwrap_or("[other]").to_string(),
        SortKey::Srcfile => frame
            .and_then(|f| p.frames[f as usize].srcline.as_ref())
            .map_or(String::new(), |(file, _)| {
                crate::srcline::file_name(file).to_string()
            }),
        SortKey::Trace | SortKey::Cgroup => "N/A".into(),
        SortKey::CgroupId => "0/0x0".into(),
        SortKey::SymbolSize => frame
            .and_then(|f| p.sym_sizes.get(&p.frames[f as usize].func))
            .map_or("unknown".into(), u64::to_string),
        SortKey::IpcNull => "-      -".into(),
    }
}

/// A call tree node for `-g folded`.
#[derive(Default)]
struct Node {
    name: String,
    weight: u64,
    children: Vec<Node>,
}

impl Node {
    fn insert(&mut self, path: &[String], w: u64) {
        self.weight += w;
        if let Some((first, rest)) = path.split_first() {
            let i = match self.children.iter().position(|c| c.name == *first) {
                Some(i) => i,
                None => {
                    self.children.push(Node {
                        name: first.clone(),
                        ..Node::default()
                    });
                    self.children.len() - 1
                }
            };
            self.children[i].insert(rest, w);
        }
    }
    fn sort(&mut self) {
        self.children
            .sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| a.name.cmp(&b.name)));
        for c in &mut self.children {
            c.sort();
        }
    }
}

fn frame_label(p: &Profile, f: FrameId) -> String {
    let func = p.func_of(f);
    if func.name == "[unknown]" {
        // perf's `%#llx`: zero without `0x`.
        match p.frames[f as usize].addr {
            0 => "0".into(),
            a => format!("{a:#x}"),
        }
    } else {
        func.name.clone()
    }
}

/// Each function's object in perf's order of `struct dso` pointers, which follows the
/// order perf made them ([`Profile::dso_order`]); objects never mapped come after, the
/// kernel's first.
fn dso_ranks(p: &Profile) -> Vec<u64> {
    let mut seen: HashMap<&str, u64> = HashMap::default();
    for d in &p.dso_order {
        let n = seen.len() as u64;
        seen.entry(d.as_str()).or_insert(n);
    }
    let mut kernel_first: Vec<&crate::Func> = p.funcs.iter().filter(|f| f.kernel).collect();
    kernel_first.extend(p.funcs.iter().filter(|f| !f.kernel));
    for f in kernel_first {
        let n = seen.len() as u64;
        seen.entry(f.dso.as_str()).or_insert(n);
    }
    p.funcs.iter().map(|f| seen[f.dso.as_str()]).collect()
}

/// A frame as the call graph matches, orders and prints it.
fn graph_entry(p: &Profile, ranks: &[u64], f: FrameId) -> callgraph::Entry {
    let fr = &p.frames[f as usize];
    let func = &p.funcs[fr.func as usize];
    let unnamed = func.name == "[unknown]";
    // perf orders named siblings by `sym->start`, an address in the object's file: the same
    // function of one library loaded at other addresses (ASLR, another process) has one
    // start, so the order among siblings is the file's order, not the load addresses'.
    let start = match fr.sym_offset {
        Some(off) if !unnamed => fr.map_offset.unwrap_or(fr.addr).wrapping_sub(off),
        _ => fr.addr,
    };
    // No object (no mapping) is perf's NULL pointer: before every object.
    let rank = if func.dso == "[unknown]" {
        0
    } else {
        ranks[fr.func as usize] + 1
    };
    // perf's `match_chain` compares an unnamed frame by its object and address: frames
    // outside every mapping (no object) match by address, whichever privilege level the
    // walk gave them (perfkit's [k]/[.] of such a frame is two functions).
    let key = match (unnamed, rank) {
        (true, 0) => (u32::MAX, fr.addr),
        (true, _) => (fr.func, fr.addr),
        (false, _) => (fr.func, 0),
    };
    callgraph::Entry {
        key,
        order: (rank, start),
        ip: (rank, fr.addr),
        named: !unnamed,
        label: frame_label(p, f),
        inlined: fr.inlined,
    }
}

/// The call graph text under one row.
fn call_graph(
    p: &Profile,
    opts: &ReportOptions,
    agg: &[(AggKey, (u64, u64))],
    row: &Row,
    total: u64,
    ranks: &[u64],
) -> String {
    // (A row only other events of its group have shows no graph, as perf's dummy entry.)
    if row.frame.is_none() || row.contrib.is_empty() {
        return String::new();
    }
    let caller_first = opts.caller_order.unwrap_or(opts.children);
    let ignore = chain_regex(opts);
    // What perf keeps of a stack (`--max-stack`, `--ignore-callees`) and whether the row
    // is the sample's own entry there.
    let kept = |stack, pos: u16| {
        let full: Vec<FrameId> = p.stack_frames(stack).collect(); // leaf first
        let (chain, _) = perf_chain(p, &full, opts, caller_first, ignore.as_ref());
        (chain.to_vec(), pos == SELF)
    };
    let mut out = String::new();
    if opts.graph == GraphMode::Folded {
        let mut root = Node::default();
        for &(ai, pos) in &row.contrib {
            let ((_, stack, _, _, _, _, _), (period, _)) = agg[ai as usize];
            let (frames, is_self) = kept(stack, pos);
            let path: Vec<String> = if opts.children && !is_self {
                frames[..=pos as usize]
                    .iter()
                    .rev()
                    .map(|&f| frame_label(p, f))
                    .collect()
            } else if caller_first {
                frames.iter().rev().map(|&f| frame_label(p, f)).collect()
            } else {
                frames.iter().map(|&f| frame_label(p, f)).collect()
            };
            root.insert(&path, period);
        }
        root.sort();
        let mut chains = Vec::new();
        collect_chains(&root, &mut Vec::new(), &mut chains);
        for (chain, w) in chains {
            let pct = section_pct(total, w);
            if pct >= opts.graph_threshold {
                let _ = writeln!(out, "{pct:.2}% {}", chain.join(";"));
            }
        }
        return out;
    }
    let mut tree = callgraph::Tree::new();
    for &(ai, pos) in &row.contrib {
        let ((_, stack, _, _, _, _, _), (period, _)) = agg[ai as usize];
        let (frames, is_self) = kept(stack, pos);
        let pos = pos as usize;
        if opts.children && !is_self && caller_first {
            // The entry's callees, from the entry down to the leaf.
            let chain = frames[..=pos].iter().rev();
            tree.add(chain.map(|&f| graph_entry(p, ranks, f)), period);
        } else if opts.children && !is_self {
            // The entry's callers, from the entry up to the root.
            let chain = frames[pos..].iter();
            tree.add(chain.map(|&f| graph_entry(p, ranks, f)), period);
        } else if caller_first {
            tree.add(
                frames.iter().rev().map(|&f| graph_entry(p, ranks, f)),
                period,
            );
        } else {
            tree.add(frames.iter().map(|&f| graph_entry(p, ranks, f)), period);
        }
    }
    let layout = match opts.graph {
        GraphMode::Fractal => callgraph::Layout::Fractal,
        GraphMode::Flat => callgraph::Layout::Flat,
        _ => callgraph::Layout::Graph,
    };
    let parent = if opts.children {
        row.children
    } else {
        row.self_
    };
    let skip_first = opts.sort.first() == Some(&SortKey::Sym);
    tree.render(
        layout,
        total,
        parent,
        opts.graph_threshold,
        skip_first,
        &mut out,
    );
    out
}

fn collect_chains(n: &Node, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, u64)>) {
    let own = n.weight - n.children.iter().map(|c| c.weight).sum::<u64>();
    if own > 0 && !prefix.is_empty() {
        out.push((prefix.clone(), own));
    }
    for c in &n.children {
        prefix.push(c.name.clone());
        collect_chains(c, prefix, out);
        prefix.pop();
    }
}

/// What perfkit knows that perf's report does not say: samples with incomplete stacks,
/// frames without symbols by reason. The CLI prints these on standard error, so the report
/// itself is perf's, line for line.
pub fn notes(p: &Profile) -> Vec<String> {
    let mut v = Vec::new();
    if p.incomplete_stacks > 0 {
        v.push(stack_advice(p.incomplete_stacks, p.stack_user_size));
    }
    for (reason, n) in &p.unknown.by_reason {
        v.push(format!("{n} frames without symbols: {reason}"));
    }
    v
}

/// The advice for samples whose user stack copy ran out: a size larger than the one
/// recorded (twice it, up to the kernel's largest, 65528 bytes).
fn stack_advice(samples: u64, recorded: u64) -> String {
    const MAX: u64 = 65528;
    if recorded >= MAX {
        return format!(
            "{samples} samples have incomplete stacks: the user stack copy ran out at \
             dwarf,{recorded}, the largest the kernel copies; deeper stacks need \
             --call-graph fp or lbr"
        );
    }
    let next = if recorded == 0 {
        16384
    } else {
        (recorded * 2).min(MAX)
    };
    format!(
        "{samples} samples have incomplete stacks (the user stack copy ran out): record with \
         a larger --call-graph dwarf,SIZE (for example dwarf,{next})"
    )
}

/// Render the sections in perf's `--stdio` layout.
pub fn render(p: &Profile, sections: &[Section], opts: &ReportOptions) -> String {
    let mut out = String::new();
    out.push_str(
        "# To display the perf.data header info, please use --header/--header-only options.\n#\n",
    );
    if !p.samples.iter().any(|s| opts.filter.keep_place(s)) {
        // perf prints nothing more for a file without samples (or none in the CPUs and
        // times asked for).
        return out;
    }
    for n in &opts.notes {
        let _ = writeln!(out, "# {n}");
    }
    out.push_str("#\n");
    let _ = writeln!(out, "# Total Lost Samples: {}\n#", p.lost);
    for (si, s) in sections.iter().enumerate() {
        // A group's header counts every event's samples and period.
        let samples = s.samples + s.members.iter().map(|m| m.samples).sum::<u64>();
        let total = s.total + s.members.iter().map(|m| m.total).sum::<u64>();
        let plural = if s.leads_group { "s" } else { "" };
        let _ = writeln!(
            out,
            "# Samples: {} of event{plural} '{}'{}",
            human(samples),
            s.event,
            opts.time_slices
                .as_ref()
                .map_or(String::new(), |t| format!(" (time slices: {t})"))
        );
        let _ = writeln!(out, "# Event count (approx.): {total}\n#");
        if opts.hierarchy {
            crate::hierarchy::render_section(s, opts, &mut out);
            if si + 1 < sections.len() {
                out.push_str("\n\n");
            }
            continue;
        }
        let mut headers: Vec<String> = Vec::new();
        if !opts.overhead {
        } else if opts.children {
            headers.push("Children".into());
            headers.push("    Self".into());
        } else {
            headers.push("Overhead".into());
        }
        if opts.cpu_util && opts.overhead {
            headers.push("     sys".into());
            headers.push("     usr".into());
        }
        if opts.show_samples {
            headers.push("     Samples".into());
        }
        if opts.show_period {
            headers.push("      Period".into());
        }
        // perf widens the object column to 16 when a row's symbol is unresolved
        // (`hists__set_unres_dso_col_len`).
        // Without a symbol column, the symbol is that of the row's first sample.
        let unresolved = match opts.sort.iter().position(|k| *k == SortKey::Sym) {
            Some(i) => s.rows.iter().any(|r| {
                let n = r.keys[i].get(4..).unwrap_or("");
                n.starts_with("0x") || n == "0000000000000000" || n == "[unknown]"
            }),
            None => s
                .rows
                .iter()
                .any(|r| r.frame.is_none_or(|f| p.func_of(f).name == "[unknown]")),
        };
        let widths: Vec<usize> = opts
            .sort
            .iter()
            .enumerate()
            .map(|(i, k)| {
                // (and the symbol column to 22: `[.] 0x` and 16 digits).
                let floor = match k {
                    SortKey::Dso if unresolved => 16,
                    SortKey::Sym if unresolved => 22,
                    _ => 0,
                };
                // (perf sizes an inlined function's column by its name alone and
                // prints ` (inlined)` past it.)
                let width = |key: &str| match k {
                    // perf's `-v` column: an unnamed symbol's width leaves the prefix out.
                    SortKey::Sym if opts.sym_origin.is_some() && is_unnamed_key(key) => 0,
                    SortKey::Sym => key
                        .strip_suffix(" (inlined)")
                        .unwrap_or(key)
                        .chars()
                        .count(),
                    _ => key.chars().count(),
                };
                // perf sizes the command column by the name each row's thread has at the
                // end (`thread__comm_len` of the entry's thread, its first sample's), not
                // by the row's own name, and cuts longer names to it (`%-*.*s`): a row
                // `pyenv-version-f` whose thread execs `bash` afterwards counts 4.
                // perf measures a tracepoint's text only once its entry has been compared
                // with another sample's (`sort__trace_cmp` makes it on demand), so the
                // text of a row whose preceding keys no other sample shares counts
                // nothing, and is cut to the column (perf's `%-.*s`): a lone sample
                // prints as much of its text as `Trace output` is wide.
                let prefixes: HashMap<&[String], u64> = if *k == SortKey::Trace {
                    let mut m = HashMap::default();
                    for r in &s.rows {
                        *m.entry(&r.keys[..i]).or_insert(0) += r.samples.max(1);
                    }
                    m
                } else {
                    HashMap::default()
                };
                let len = |r: &Row| match k {
                    SortKey::Comm => p.threads[r.thread as usize].name().chars().count(),
                    // perf sizes a data object's row by its name (`namelen`) and prints
                    // the `+0x...` offset past the column.
                    SortKey::Sym
                        if r.frame.is_some_and(|f| {
                            p.data_objects.contains(&p.frames[f as usize].func)
                        }) =>
                    {
                        let key = &r.keys[i];
                        width(key.rfind("+0x").map_or(key, |at| &key[..at]))
                    }
                    SortKey::Trace if prefixes.get(&r.keys[..i]).is_none_or(|&n| n < 2) => 0,
                    _ => width(&r.keys[i]),
                };
                s.rows
                    .iter()
                    .map(len)
                    .chain([k.header().len(), floor])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut line = String::from("#");
        let mut dots = String::from("#");
        // A group's columns hold one value per event (8 or 12 characters each).
        let events = 1 + s.members.len();
        for h in &headers {
            let w = h.len().max(8) * events;
            let _ = write!(line, " {:>w$} ", h.trim_start());
            let _ = write!(dots, " {} ", ".".repeat(w));
        }
        for (k, w) in opts.sort.iter().zip(&widths) {
            let _ = write!(line, " {:<w$} ", k.header());
            let _ = write!(dots, " {} ", ".".repeat(*w));
        }
        // perf pads every column to its width and drops only the last separator.
        let _ = writeln!(out, "{}", line.strip_suffix(' ').unwrap_or(&line));
        let _ = writeln!(out, "{}", dots.strip_suffix(' ').unwrap_or(&dots));
        out.push_str("#\n");
        for (ri, r) in s.rows.iter().enumerate() {
            let mut l = String::new();
            // One value per event of the group (` %6.2f%%` each), the leader's first.
            let pcts = |l: &mut String, lead: u64, of: fn(&MemberStat) -> u64| {
                let _ = write!(l, " {:>6.2}%", s.pct(lead));
                for (m, t) in r.members.iter().zip(&s.members) {
                    let _ = write!(l, " {:>6.2}%", section_pct(t.total, of(m)));
                }
            };
            if !opts.overhead {
                l.push(' ');
            } else if opts.children {
                l.push_str("  ");
                pcts(&mut l, r.children, |m| m.children);
                l.push_str("  ");
                pcts(&mut l, r.self_, |m| m.self_);
                l.push(' ');
            } else {
                l.push_str("  ");
                pcts(&mut l, r.self_, |m| m.self_);
                l.push(' ');
            }
            if opts.cpu_util && opts.overhead {
                let usr = r.self_ - r.sys;
                let _ = write!(l, " {:>7.2}%  {:>7.2}% ", s.pct(r.sys), s.pct(usr));
            }
            if opts.show_samples {
                let _ = write!(l, " {:>12}", r.samples);
                for m in &r.members {
                    let _ = write!(l, " {:>11}", m.samples);
                }
                l.push(' ');
            }
            if opts.show_period {
                let _ = write!(l, " {:>12}", r.self_);
                for m in &r.members {
                    let _ = write!(l, " {:>11}", m.self_);
                }
                l.push(' ');
            }
            let mut before_last = 0;
            for ((k, w), key) in r.keys.iter().zip(&widths).zip(&opts.sort) {
                before_last = l.len();
                if *key == SortKey::SymbolSize {
                    let _ = write!(l, " {k:>w$} ");
                } else if matches!(key, SortKey::Comm | SortKey::Trace) {
                    let _ = write!(l, " {k:<w$.w$} ");
                } else {
                    let _ = write!(l, " {k:<w$} ");
                }
            }
            // A symbol (or cgroup, or its namespace, or a source line) in the last column is
            // not padded (perf's entry prints its name as it is); other last columns are.
            if opts.sort.last() == Some(&SortKey::Trace) {
                // The text as it is, after the separator (even when empty).
                let last = r.keys.last().map_or("", |k| k.as_str());
                let w = widths.last().copied().unwrap_or(0);
                let _ = writeln!(out, "{} {last:.w$}", &l[..before_last]);
            } else if matches!(
                opts.sort.last(),
                Some(
                    SortKey::Sym
                        | SortKey::Symoff
                        | SortKey::Cgroup
                        | SortKey::CgroupId
                        | SortKey::Srcline
                ) | None
            ) {
                let _ = writeln!(out, "{}", l.trim_end());
            } else {
                let _ = writeln!(out, "{}", l.strip_suffix(' ').unwrap_or(&l));
            }
            if let Some(g) = s.graphs.get(ri)
                && !g.is_empty()
                && (opts.children || r.self_ > 0)
            {
                out.push_str(g);
                if opts.graph == GraphMode::Graph || opts.graph == GraphMode::Fractal {
                    // perf leaves a blank line after each graph (already added).
                }
            }
        }
        if si + 1 < sections.len() {
            out.push_str("\n\n");
        }
    }
    out.push_str("\n\n#\n# (Report by perfkit)\n#\n");
    out
}

/// perf's sample count: `591 ` (unit column blank), `1K`, `2M`.
fn human(n: u64) -> String {
    if n >= 1_000_000 {
        format!("{}M", n / 1_000_000)
    } else if n >= 1000 {
        format!("{}K", n / 1000)
    } else {
        format!("{n} ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_of_equal_weight_follow_their_signed_tid() {
        let key = |tid: i32, comm: &str| vec![format!("{tid:>7}:{comm}")];
        let cg = HashMap::default();
        let order = |a: Vec<String>, b: Vec<String>| perf_key_order(&[SortKey::Pid], &a, &b, &cg);
        assert!(order(key(-1, ":-1"), key(0, "swapper")).is_lt());
        assert!(order(key(0, "swapper"), key(36, "kcompactd0")).is_lt());
        assert!(order(key(36, "b"), key(14428, "a")).is_lt());
        assert!(order(key(7, "a"), key(7, "b")).is_lt());
    }
    use crate::model::testing::sample_profile;

    fn pct_of(s: &Section, sym: &str) -> (f64, f64) {
        let r = s
            .rows
            .iter()
            .find(|r| r.keys.last().is_some_and(|k| k.ends_with(sym)))
            .unwrap();
        (s.pct(r.children), s.pct(r.self_))
    }

    #[test]
    fn a_broken_chain_is_discarded_in_caller_order_too() {
        // perf 6.1's thread__resolve_callchain_sample hands every context marker to
        // add_callchain_ip in caller order as in callee order (find_prev_cpumode), and an
        // unknown one resets the cursor: the sample keeps its own entry, no chain. Children
        // mode walks callers first (sys-cgroups' `--children --sort cgroup_id` graph).
        let mut p = sample_profile();
        for s in &mut p.samples {
            s.chain_broken = true;
        }
        let s = &build(&p, &ReportOptions::default())[0];
        assert_eq!(s.samples, 100);
        assert!(!s.rows.is_empty());
        for r in &s.rows {
            assert_eq!(r.children, r.self_, "{:?}", r.keys);
        }
        assert!(s.rows.iter().all(|r| !r.keys[2].ends_with("main")));
    }

    #[test]
    fn children_and_self() {
        let p = sample_profile();
        // The command is part of the default key: app's main and app-worker's main differ.
        let s = &build(&p, &ReportOptions::default())[0];
        assert_eq!(s.samples, 100);
        assert_eq!(pct_of(s, "main"), (80.0, 0.0));
        let by_sym = ReportOptions {
            sort: vec![SortKey::Dso, SortKey::Sym],
            ..ReportOptions::default()
        };
        let s = &build(&p, &by_sym)[0];
        assert_eq!(pct_of(s, "main"), (100.0, 0.0));
        let s = &build(&p, &ReportOptions::default())[0];
        assert_eq!(pct_of(s, "work"), (80.0, 0.0));
        assert_eq!(pct_of(s, "hot_loop"), (70.0, 70.0));
        assert_eq!(pct_of(s, "do_syscall_64"), (10.0, 10.0));
        // Heaviest first: app's main and work (80 each) before hot_loop (70).
        assert!(s.rows[0].keys[2].ends_with("main"));
        assert!(s.rows[1].keys[2].ends_with("work"));
        assert_eq!(s.rows[0].keys[1], "app");
        assert_eq!(s.rows[0].keys[0], "app");
        let k = s
            .rows
            .iter()
            .find(|r| r.keys[2].contains("do_syscall_64"))
            .unwrap();
        assert_eq!(k.keys[2], "[k] do_syscall_64");
        assert_eq!(k.keys[1], "[kernel.kallsyms]");
    }

    #[test]
    fn no_children_sort_keys_and_filters() {
        let p = sample_profile();
        let opts = ReportOptions {
            children: false,
            sort: vec![SortKey::Tid, SortKey::Sym],
            ..ReportOptions::default()
        };
        let s = &build(&p, &opts)[0];
        assert_eq!(s.rows.len(), 3);
        assert_eq!(s.rows[0].keys, ["10:app", "[.] hot_loop"]);
        assert_eq!(s.pct(s.rows[0].self_), 70.0);
        let opts = ReportOptions {
            children: false,
            filter: Filter {
                comms: vec!["app-worker".into()],
                ..Filter::default()
            },
            ..ReportOptions::default()
        };
        // perf's default --percentage absolute: the share of every sample.
        let s = &build(&p, &opts)[0];
        assert_eq!(s.samples, 100);
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.pct(s.rows[0].self_), 20.0);
        let relative = ReportOptions {
            relative: true,
            ..opts
        };
        let s = &build(&p, &relative)[0];
        assert_eq!(s.samples, 20);
        assert_eq!(s.rows.len(), 1);
        assert_eq!(s.pct(s.rows[0].self_), 100.0);
        let opts = ReportOptions {
            children: false,
            percent_limit: 15.0,
            ..ReportOptions::default()
        };
        assert_eq!(build(&p, &opts)[0].rows.len(), 2);
    }

    #[test]
    fn stack_advice_asks_for_more_than_recorded() {
        assert!(stack_advice(3, 8192).contains("dwarf,16384"));
        assert!(stack_advice(3, 32768).contains("dwarf,65528"));
        assert!(!stack_advice(3, 32768).contains("dwarf,16384"));
        assert!(stack_advice(3, 65528).contains("largest"));
    }

    #[test]
    fn rendered_like_perf() {
        let p = sample_profile();
        let opts = ReportOptions::default();
        let text = render(&p, &build(&p, &opts), &opts);
        assert!(
            text.contains("# Samples: 100  of event 'cpu-clock'"),
            "{text}"
        );
        assert!(text.contains("# Children      Self  Command"), "{text}");
        assert!(
            text.contains("    80.00%     0.00%  app         app                [.] main"),
            "{text}"
        );
        assert!(
            !text.contains("--20.00%--idle"),
            "app-worker's samples are not under app's main"
        );
        assert!(text.contains("---main"), "{text}");
        assert!(text.contains("--70.00%--hot_loop"), "{text}");
        let opts = ReportOptions {
            graph: GraphMode::Folded,
            ..ReportOptions::default()
        };
        let text = render(&p, &build(&p, &opts), &opts);
        assert!(text.contains("70.00% main;work;hot_loop"), "{text}");
    }
}
