//! The live view of `perfkit top`: rows of the profile built so far (through the same
//! aggregation as `report`), narrowed the ways perf top narrows them (hide kernel or user
//! symbols, zoom into a DSO or thread, a filter string), and the status line.
//!
//! The profile itself grows from the rings through [`crate::Loader`] (symbols resolved as
//! addresses first appear and cached by the symbolizer); this module only looks at it.

use std::fmt::Write as _;

use crate::report::{self, Filter, GraphMode, ReportOptions, SortKey};
use crate::{Profile, StackId};

/// What the view is narrowed to (Enter on a row in the TUI).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Zoom {
    /// Only this shared object (path or file name).
    Dso(String),
    /// Only this thread id.
    Thread(i32),
}

/// How the view is built.
#[derive(Clone, Debug)]
pub struct ViewOptions {
    /// Sort keys (perf top's default: dso, sym).
    pub sort: Vec<SortKey>,
    /// Show a children (cumulative) column (`-g`).
    pub children: bool,
    /// Hide kernel symbols (`-K`).
    pub hide_kernel: bool,
    /// Hide user symbols (`-U`).
    pub hide_user: bool,
    /// Hide rows below this share.
    pub percent_limit: f64,
    /// At most this many rows (`-E`).
    pub entries: Option<usize>,
    /// Only rows whose keys contain this (`/` in the TUI).
    pub filter: Option<String>,
    /// Zoomed into a DSO or thread.
    pub zoom: Option<Zoom>,
    /// Which event to show (an index into the profile's events; Tab in the TUI).
    pub event: usize,
    /// Build each row's call-graph tree ([`ViewRow::graph`]) as perf top `-g` shows it:
    /// report's graph of the row's chains (graph mode, 0.5% threshold, callers first in
    /// children mode). Only events that recorded callchains have one.
    pub graph: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            sort: vec![SortKey::Dso, SortKey::Sym],
            children: false,
            hide_kernel: false,
            hide_user: false,
            percent_limit: 0.0,
            entries: None,
            filter: None,
            zoom: None,
            event: 0,
            graph: false,
        }
    }
}

/// One row.
#[derive(Clone, Debug, PartialEq)]
pub struct ViewRow {
    /// Self share of all samples, in percent.
    pub overhead: f64,
    /// Cumulative share (with `children`).
    pub children: Option<f64>,
    /// Samples with this entry as the leaf.
    pub samples: u64,
    /// The formatted keys, in sort-key order.
    pub keys: Vec<String>,
    /// Whether it is kernel code (`[k]`).
    pub kernel: bool,
    /// The row's call-graph tree as perf top `--stdio -g` prints it under the row (one
    /// string per line, the trailing blank line left out), with [`ViewOptions::graph`];
    /// else empty.
    pub graph: Vec<String>,
}

impl ViewRow {
    /// The symbol's name (without the `[.] ` / `[k] ` mark), when `sym` is a key.
    pub fn symbol(&self, sort: &[SortKey]) -> Option<&str> {
        let i = sort.iter().position(|k| *k == SortKey::Sym)?;
        let k = self.keys.get(i)?;
        Some(k.get(4..).unwrap_or(k))
    }

    /// The row's key of kind `key`, when it is one.
    pub fn key(&self, sort: &[SortKey], key: SortKey) -> Option<&str> {
        let i = sort.iter().position(|k| *k == key)?;
        self.keys.get(i).map(String::as_str)
    }
}

/// A snapshot of the view.
#[derive(Clone, Debug, PartialEq)]
pub struct View {
    /// The shown event's name.
    pub event: String,
    /// The index of the shown event among [`events`](Self::events).
    pub event_index: usize,
    /// Every event of the profile: its name and the samples it has so far.
    pub events: Vec<(String, u64)>,
    /// Samples in the profile (after the zoom).
    pub samples: u64,
    /// Share of the period in the kernel, in percent.
    pub kernel_pct: f64,
    /// Frames that could not be named.
    pub unresolved: u64,
    /// Rows, heaviest first.
    pub rows: Vec<ViewRow>,
}

/// The rows of `p` as `opts` narrow them.
pub fn view(p: &Profile, opts: &ViewOptions) -> View {
    view_with(p, opts, true, &mut Live::default())
}

/// [`view`] for a live profile, with what `live` kept from the last call: a refresh costs
/// a pass over the profile's samples (folded by the builder for a live view) with what
/// each of their stacks stands for already known, not a look at every frame again.
pub fn view_live(p: &Profile, opts: &ViewOptions, live: &mut Live) -> View {
    view_with(p, opts, true, live)
}

/// What a live view keeps between refreshes of a growing profile (see [`view_live`]):
/// the running count of unnamed frames, looking only at the frames added since the last
/// call, and what each stack's leaf is (frames, functions and stacks are only ever added,
/// and named before the profile is looked at). With sort keys that depend on the stack
/// alone (`dso`, `sym`), also each stack's row.
#[derive(Clone, Debug, Default)]
pub struct Live {
    frames_seen: usize,
    count: u64,
    unknown_funcs: Vec<bool>,
    /// Each stack's leaf, by stack id.
    stacks: Vec<StackLeaf>,
    /// Rows by stack, for the sort keys and DSO zoom they were made for.
    rows: Option<StackRows>,
}

/// What a view needs of a stack: its leaf frame (as [`Profile::sample_frame`] gives it),
/// the leaf's function and whether that is kernel code.
#[derive(Clone, Copy, Debug)]
struct StackLeaf {
    frame: u32,
    func: u32,
    kernel: bool,
}

const NONE: u32 = u32::MAX;

/// Each stack's row for sort keys of the stack alone, and the rows' keys.
#[derive(Clone, Debug, Default)]
struct StackRows {
    sort: Vec<SortKey>,
    zoom_dso: Option<String>,
    /// The row of each stack ([`NONE`]: not met yet, [`OUTSIDE`]: outside the zoom).
    by_stack: Vec<u32>,
    /// The row of samples without a stack.
    no_stack: u32,
    /// Each row's keys and a leaf frame of it.
    rows: Vec<(FastKey, Option<u32>)>,
    index: rustc_hash::FxHashMap<FastKey, u32>,
    dso_ids: rustc_hash::FxHashMap<String, u32>,
}

const OUTSIDE: u32 = u32::MAX - 1;

impl Live {
    /// The frames of `p` named `[unknown]`, counting those added since the last call.
    pub fn count(&mut self, p: &Profile) -> u64 {
        for f in &p.funcs[self.unknown_funcs.len().min(p.funcs.len())..] {
            self.unknown_funcs.push(f.name == "[unknown]");
        }
        for f in &p.frames[self.frames_seen.min(p.frames.len())..] {
            if self
                .unknown_funcs
                .get(f.func as usize)
                .copied()
                .unwrap_or(false)
            {
                self.count += 1;
            }
        }
        self.frames_seen = p.frames.len();
        self.count
    }

    /// Learn the leaves of the stacks added since the last call.
    fn learn_stacks(&mut self, p: &Profile) {
        if self.stacks.len() > p.stacks.len() {
            // Another profile: start again.
            *self = Live::default();
        }
        for id in self.stacks.len()..p.stacks.len() {
            let leaf = p.sample_frame(Some(id as StackId));
            self.stacks.push(match leaf {
                Some(f) => {
                    let func = p.frames[f as usize].func;
                    StackLeaf {
                        frame: f,
                        func,
                        kernel: p.funcs[func as usize].kernel,
                    }
                }
                None => StackLeaf {
                    frame: NONE,
                    func: NONE,
                    kernel: false,
                },
            });
        }
    }

    /// The leaf of a sample's stack (after [`learn_stacks`](Self::learn_stacks)).
    fn leaf(&self, stack: Option<StackId>) -> Option<StackLeaf> {
        let l = *self.stacks.get(stack? as usize)?;
        (l.frame != NONE).then_some(l)
    }
}

/// [`view`], with `fast`: self rows by [`self_rows`] where the keys allow (else, and for
/// the children column, report's aggregation).
fn view_with(p: &Profile, opts: &ViewOptions, fast: bool, live: &mut Live) -> View {
    let mut filter = Filter::default();
    match &opts.zoom {
        Some(Zoom::Dso(d)) => filter.dsos = vec![d.clone()],
        Some(Zoom::Thread(t)) => filter.tids = vec![*t],
        None => {}
    }
    filter.drop_threads = true;
    let ropts = ReportOptions {
        sort: opts.sort.clone(),
        children: opts.children,
        graph: if opts.graph {
            GraphMode::Graph
        } else {
            GraphMode::None
        },
        percent_limit: opts.percent_limit,
        filter,
        // A zoomed view (a DSO, a thread) shows shares of what it shows, and its sample
        // count: the status line still names the whole.
        relative: true,
        ..ReportOptions::default()
    };
    // Samples, period and kernel period of each event: which events have a section
    // (report leaves out those without samples), and the kernel share of the shown one.
    let n = p.events.len();
    let (mut counts, mut periods, mut kernel_periods) =
        (vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    // Which functions are unnamed, and each stack's leaf (kept up to date across
    // refreshes of a live view).
    let unresolved_frames = live.count(p);
    live.learn_stacks(p);
    for s in &p.samples {
        let e = s.event as usize;
        if e >= n {
            continue;
        }
        counts[e] += u64::from(s.count);
        periods[e] += s.period;
        if live.leaf(s.stack).is_some_and(|l| l.kernel) {
            kernel_periods[e] += s.period;
        }
    }
    let shown = opts.event.min(n.saturating_sub(1));
    let section = (counts.get(shown).copied().unwrap_or(0) > 0)
        .then(|| counts[..shown].iter().filter(|&&c| c > 0).count());
    let mut rows = Vec::new();
    let (mut samples, mut event) = (
        0,
        p.events
            .get(shown)
            .map_or(String::new(), |e| e.name.clone()),
    );
    let fast = fast
        && !opts.children
        && !opts.graph
        && opts.sort.len() <= MAX_FAST_KEYS
        && opts.sort.iter().all(|k| FAST_KEYS.contains(k));
    let sections = if fast || section.is_none() {
        Vec::new()
    } else {
        report::build(p, &ropts)
    };
    if fast && section.is_some() {
        (rows, samples) = self_rows(p, opts, shown, live);
    } else if let Some(s) = section.and_then(|i| sections.get(i)) {
        samples = s.samples;
        event = s.event.clone();
        for (ri, r) in s.rows.iter().enumerate() {
            let kernel = r.keys.iter().any(|k| k.starts_with("[k] "))
                || r.keys.iter().any(|k| k == "[kernel.kallsyms]");
            if (kernel && opts.hide_kernel) || (!kernel && opts.hide_user) {
                continue;
            }
            if let Some(f) = &opts.filter
                && !r.keys.iter().any(|k| k.contains(f.as_str()))
            {
                continue;
            }
            let overhead = s.pct(r.self_);
            let children = opts.children.then(|| s.pct(r.children));
            if overhead.max(children.unwrap_or(0.0)) < opts.percent_limit {
                continue;
            }
            // As report prints it: a self-only row without self samples shows none.
            let graph = s
                .graphs
                .get(ri)
                .filter(|_| opts.children || r.self_ > 0)
                .map(|g| {
                    g.trim_end_matches('\n')
                        .lines()
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            rows.push(ViewRow {
                overhead,
                children,
                samples: r.samples,
                keys: r.keys.clone(),
                kernel,
                graph,
            });
        }
    }
    if let Some(n) = opts.entries {
        rows.truncate(n);
    }
    let kernel_period = kernel_periods.get(shown).copied().unwrap_or(0);
    let all_period = periods.get(shown).copied().unwrap_or(0);
    View {
        event,
        event_index: shown,
        events: p
            .events
            .iter()
            .zip(&counts)
            .map(|(e, &c)| (e.name.clone(), c))
            .collect(),
        samples,
        kernel_pct: if all_period == 0 {
            0.0
        } else {
            100.0 * kernel_period as f64 / all_period as f64
        },
        unresolved: unresolved_frames,
        rows,
    }
}

/// At most this many sort keys for [`self_rows`] (its keys are fixed-size arrays).
const MAX_FAST_KEYS: usize = 4;

/// The sort keys [`self_rows`] aggregates itself.
const FAST_KEYS: &[SortKey] = &[
    SortKey::Dso,
    SortKey::Sym,
    SortKey::Comm,
    SortKey::Pid,
    SortKey::Tid,
    SortKey::Cpu,
];

/// One key of a row, as ids: cheap to hash at every refresh.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum KeyId {
    /// A function (a named symbol or its DSO's id), or an unnamed frame.
    Func(u32),
    Frame(u32),
    Dso(u32),
    Comm(u32),
    Pid(i32, u32),
    Tid(i32, u32),
    Cpu(Option<u32>),
}

/// A row's keys, as ids.
type FastKey = [KeyId; MAX_FAST_KEYS];

/// Whether every sort key depends on a sample's stack alone (its leaf's function and
/// object), so that a stack's row can be kept from one refresh to the next.
fn stack_only(sort: &[SortKey]) -> bool {
    sort.iter()
        .all(|k| matches!(k, SortKey::Dso | SortKey::Sym))
}

/// Whether a leaf is inside the zoomed DSO `d`.
fn in_dso(p: &Profile, leaf: Option<StackLeaf>, d: &str) -> bool {
    leaf.is_some_and(|l| {
        let dso = &p.funcs[l.func as usize].dso;
        dso == d || perfkit_symbols::dso_short_name(dso) == d
    })
}

/// The stack-and-leaf part of a row's keys: `sym` and `dso` (the others are left as
/// they are). `dso_id` interns an object's name.
fn leaf_keys(
    sort: &[SortKey],
    leaf: Option<StackLeaf>,
    unknown_funcs: &[bool],
    key: &mut FastKey,
    mut dso_id: impl FnMut(u32) -> u32,
) {
    for (slot, k) in key.iter_mut().zip(sort) {
        match k {
            SortKey::Sym => {
                *slot = match leaf {
                    Some(l) if unknown_funcs.get(l.func as usize) == Some(&true) => {
                        KeyId::Frame(l.frame)
                    }
                    Some(l) => KeyId::Func(l.func),
                    None => KeyId::Func(u32::MAX),
                }
            }
            SortKey::Dso => {
                *slot = KeyId::Dso(leaf.map_or(u32::MAX, |l| dso_id(l.func)));
            }
            _ => {}
        }
    }
}

/// The self rows of event `event` without report's general machinery: each sample's leaf
/// is keyed by ids (functions, DSOs and commands interned), summed, and only then are
/// rows formatted, in report's formats and order (period, then first seen). A live view
/// refreshes every few seconds over every sample it keeps, so this is what its cost is:
/// with sort keys of the stack alone, each stack's row is kept in `live` and a sample
/// costs an index and two additions. Returns the rows (narrowed as `opts` says) and the
/// samples they cover.
fn self_rows(
    p: &Profile,
    opts: &ViewOptions,
    event: usize,
    live: &mut Live,
) -> (Vec<ViewRow>, u64) {
    use rustc_hash::FxHashMap as HashMap;
    // (keys, period, samples, leaf frame, thread, cpu, time) in first-seen order.
    type Agg = (FastKey, u64, u64, Option<u32>, u32, Option<u32>, u64);
    let mut agg: Vec<Agg> = Vec::new();
    let (mut total, mut samples) = (0u64, 0u64);
    let zoom_dso = match &opts.zoom {
        Some(Zoom::Dso(d)) => Some(d.as_str()),
        _ => None,
    };
    let zoom_tid = match &opts.zoom {
        Some(Zoom::Thread(t)) => Some(*t),
        _ => None,
    };
    let event = event as u32;
    if stack_only(&opts.sort) {
        let mut rows = live
            .rows
            .take()
            .filter(|r| r.sort == opts.sort && r.zoom_dso.as_deref() == zoom_dso)
            .unwrap_or_else(|| StackRows {
                sort: opts.sort.clone(),
                zoom_dso: zoom_dso.map(str::to_string),
                no_stack: NONE,
                ..StackRows::default()
            });
        rows.by_stack.resize(live.stacks.len(), NONE);
        // Each row's entry in `agg` this time.
        let mut slot: Vec<u32> = vec![NONE; rows.rows.len()];
        for s in &p.samples {
            if s.event != event {
                continue;
            }
            if let Some(tid) = zoom_tid
                && p.threads[s.thread as usize].tid != tid
            {
                continue;
            }
            let known = match s.stack {
                Some(id) => rows.by_stack[id as usize],
                None => rows.no_stack,
            };
            let r = if known != NONE {
                known
            } else {
                let leaf = live.leaf(s.stack);
                let r = if zoom_dso.is_some_and(|d| !in_dso(p, leaf, d)) {
                    OUTSIDE
                } else {
                    let mut key: FastKey = [KeyId::Cpu(None); MAX_FAST_KEYS];
                    let StackRows {
                        dso_ids,
                        index,
                        rows: list,
                        ..
                    } = &mut rows;
                    leaf_keys(&opts.sort, leaf, &live.unknown_funcs, &mut key, |f| {
                        let dso = &p.funcs[f as usize].dso;
                        match dso_ids.get(dso.as_str()) {
                            Some(&id) => id,
                            None => {
                                let id = dso_ids.len() as u32;
                                dso_ids.insert(dso.clone(), id);
                                id
                            }
                        }
                    });
                    *index.entry(key).or_insert_with(|| {
                        list.push((key, leaf.map(|l| l.frame)));
                        (list.len() - 1) as u32
                    })
                };
                match s.stack {
                    Some(id) => rows.by_stack[id as usize] = r,
                    None => rows.no_stack = r,
                }
                r
            };
            if r == OUTSIDE {
                continue;
            }
            total += s.period;
            samples += u64::from(s.count);
            if slot.len() <= r as usize {
                slot.resize(rows.rows.len(), NONE);
            }
            let a = &mut slot[r as usize];
            if *a == NONE {
                *a = agg.len() as u32;
                let (key, leaf) = rows.rows[r as usize];
                agg.push((key, 0, 0, leaf, s.thread, s.cpu, s.time));
            }
            let a = &mut agg[*a as usize];
            a.1 += s.period;
            a.2 += u64::from(s.count);
        }
        live.rows = Some(rows);
    } else {
        let mut dso_ids: HashMap<&str, u32> = HashMap::default();
        let mut comm_ids: HashMap<&str, u32> = HashMap::default();
        // The DSO id of each function, by function id (u32::MAX: not met yet).
        let mut func_dso: Vec<u32> = vec![u32::MAX; p.funcs.len()];
        let mut index: HashMap<FastKey, usize> = HashMap::default();
        for s in p.samples.iter().filter(|s| s.event == event) {
            let t = &p.threads[s.thread as usize];
            if zoom_tid.is_some_and(|tid| t.tid != tid) {
                continue;
            }
            let leaf = live.leaf(s.stack);
            if zoom_dso.is_some_and(|d| !in_dso(p, leaf, d)) {
                continue;
            }
            total += s.period;
            samples += u64::from(s.count);
            let mut comm_id = || {
                let comm = t.name_at(s.time);
                let n = comm_ids.len() as u32;
                *comm_ids.entry(comm).or_insert(n)
            };
            let mut key: FastKey = [KeyId::Cpu(None); MAX_FAST_KEYS];
            for (slot, k) in key.iter_mut().zip(&opts.sort) {
                *slot = match k {
                    SortKey::Comm => KeyId::Comm(comm_id()),
                    // perf's `pid` key is the thread, named as it is named last.
                    SortKey::Pid => KeyId::Pid(t.tid, 0),
                    SortKey::Tid => KeyId::Tid(t.tid, comm_id()),
                    _ => KeyId::Cpu(s.cpu),
                };
            }
            leaf_keys(&opts.sort, leaf, &live.unknown_funcs, &mut key, |f| {
                let id = &mut func_dso[f as usize];
                if *id == u32::MAX {
                    let n = dso_ids.len() as u32;
                    *id = *dso_ids.entry(p.funcs[f as usize].dso.as_str()).or_insert(n);
                }
                *id
            });
            let i = *index.entry(key).or_insert_with(|| {
                agg.push((key, 0, 0, leaf.map(|l| l.frame), s.thread, s.cpu, s.time));
                agg.len() - 1
            });
            agg[i].1 += s.period;
            agg[i].2 += u64::from(s.count);
        }
    }
    // Heaviest first; ties in the order first seen (perf's insertion order).
    let mut order: Vec<usize> = (0..agg.len()).collect();
    order.sort_by(|&a, &b| agg[b].1.cmp(&agg[a].1).then(a.cmp(&b)));
    let pct = |v: u64| {
        if total == 0 {
            0.0
        } else {
            100.0 * v as f64 / total as f64
        }
    };
    let limit = opts.entries.unwrap_or(usize::MAX);
    let mut rows = Vec::new();
    for i in order {
        if rows.len() >= limit {
            break;
        }
        let (_, period, n, leaf, thread, cpu, time) = &agg[i];
        let overhead = pct(*period);
        if overhead < opts.percent_limit {
            // Sorted: the rest are smaller.
            break;
        }
        let func = leaf.map(|f| p.func_of(f));
        let t = &p.threads[*thread as usize];
        let comm = t.name_at(*time);
        let kernel_code = func.is_some_and(|f| f.kernel);
        let mode = if kernel_code { "[k]" } else { "[.]" };
        let keys: Vec<String> = opts
            .sort
            .iter()
            .map(|k| match k {
                SortKey::Comm => comm.to_string(),
                SortKey::Pid => format!("{:>7}:{}", t.tid, t.name()),
                SortKey::Tid => format!("{}:{comm}", t.tid),
                SortKey::Dso => func.map_or("[unknown]".into(), |f| {
                    perfkit_symbols::dso_short_name(&f.dso).into_owned()
                }),
                SortKey::Sym => match (leaf, func) {
                    (Some(fr), Some(f)) if f.name == "[unknown]" => {
                        let fr = &p.frames[*fr as usize];
                        let a = fr.map_offset.unwrap_or(fr.addr);
                        if a == 0 {
                            format!("{mode} 0000000000000000")
                        } else {
                            format!("{mode} {a:#018x}")
                        }
                    }
                    (_, Some(f)) => format!("{mode} {}", f.name),
                    _ => "[.] [unknown]".into(),
                },
                _ => cpu.map_or("-".into(), |c| format!("{c:03}")),
            })
            .collect();
        // Kernel as the keys show it (as for report's rows).
        let kernel = keys
            .iter()
            .any(|k| k.starts_with("[k] ") || k == "[kernel.kallsyms]");
        if (kernel && opts.hide_kernel) || (!kernel && opts.hide_user) {
            continue;
        }
        if let Some(f) = &opts.filter
            && !keys.iter().any(|k| k.contains(f.as_str()))
        {
            continue;
        }
        rows.push(ViewRow {
            overhead,
            children: None,
            samples: *n,
            keys,
            kernel,
            graph: Vec::new(),
        });
    }
    (rows, samples)
}

/// What the status line says beyond the view.
#[derive(Clone, Debug, Default)]
pub struct Status {
    /// Samples per second over the last refresh interval.
    pub rate: f64,
    /// Samples lost so far.
    pub lost: u64,
    /// The sampling frequency or period, as perf shows it (`4000Hz`).
    pub sampling: String,
    /// What is profiled (`all, 2 CPUs`, `pid 1234`).
    pub target: String,
}

/// perf top's status line: rate, kernel share, lost samples, unresolved frames, event.
pub fn status_line(v: &View, st: &Status) -> String {
    format!(
        "   PerfTop: {:>8.0} irqs/sec  kernel:{:4.1}%  lost: {}  unresolved: {}  [{} {}],  ({})",
        st.rate, v.kernel_pct, st.lost, v.unresolved, st.sampling, v.event, st.target
    )
}

/// One row as text, columns padded to `widths` (of the keys).
pub fn row_text(r: &ViewRow, widths: &[usize]) -> String {
    let mut line = String::new();
    if let Some(c) = r.children {
        let _ = write!(line, "{c:>9.2}%");
    }
    let _ = write!(line, "{:>9.2}%", r.overhead);
    let last = r.keys.len().saturating_sub(1);
    for (i, k) in r.keys.iter().enumerate() {
        if i == last {
            let _ = write!(line, "  {k}");
        } else {
            let w = widths.get(i).copied().unwrap_or(0);
            let _ = write!(line, "  {k:<w$}");
        }
    }
    line
}

/// Widths of the key columns of `rows`.
pub fn key_widths(rows: &[ViewRow]) -> Vec<usize> {
    let mut w: Vec<usize> = Vec::new();
    for r in rows {
        for (i, k) in r.keys.iter().enumerate() {
            if w.len() <= i {
                w.push(0);
            }
            w[i] = w[i].max(k.len());
        }
    }
    w
}

/// The `--stdio` screen: status line, a rule, and the rows (perf top --stdio's layout).
pub fn render_stdio(v: &View, st: &Status, width: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", status_line(v, st));
    let _ = writeln!(out, "{}", "-".repeat(width.clamp(20, 200)));
    let _ = writeln!(out);
    let widths = key_widths(&v.rows);
    for r in &v.rows {
        let _ = writeln!(out, "{}", row_text(r, &widths));
        if !r.graph.is_empty() {
            for l in &r.graph {
                let _ = writeln!(out, "{l}");
            }
            // perf top -g leaves a blank line after each tree.
            let _ = writeln!(out);
        }
    }
    out
}

/// The thread with the most samples in `symbol`: (tid, name), for zooming into it.
pub fn hottest_thread(p: &Profile, symbol: &str) -> Option<(i32, String)> {
    let mut by_thread: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for s in &p.samples {
        if let Some(leaf) = p.stack_frames(s.stack).next()
            && p.func_of(leaf).name == symbol
        {
            *by_thread.entry(s.thread).or_default() += u64::from(s.count);
        }
    }
    let (&t, _) = by_thread
        .iter()
        .max_by_key(|(t, n)| (**n, std::cmp::Reverse(**t)))?;
    let t = &p.threads[t as usize];
    Some((t.tid, t.name().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;

    #[test]
    fn self_rows_are_reports_rows() {
        let p = sample_profile();
        for sort in [
            vec![SortKey::Dso, SortKey::Sym],
            vec![SortKey::Sym],
            vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            vec![SortKey::Pid, SortKey::Sym],
            vec![SortKey::Tid, SortKey::Cpu],
            vec![SortKey::Comm],
            vec![SortKey::Dso],
        ] {
            for zoom in [None, Some(Zoom::Thread(11)), Some(Zoom::Dso("app".into()))] {
                for (hide_kernel, entries, filter) in [
                    (false, None, None),
                    (true, Some(2), None),
                    (false, None, Some("o")),
                ] {
                    let opts = ViewOptions {
                        sort: sort.clone(),
                        zoom: zoom.clone(),
                        hide_kernel,
                        entries,
                        filter: filter.map(str::to_string),
                        percent_limit: 1.0,
                        ..ViewOptions::default()
                    };
                    // Rows of equal weight may come in another order (report follows
                    // perf's key comparisons; a live view's ties last one refresh).
                    let norm = |mut v: View| {
                        v.rows.sort_by(|a, b| {
                            b.overhead.total_cmp(&a.overhead).then(a.keys.cmp(&b.keys))
                        });
                        v
                    };
                    assert_eq!(
                        norm(view_with(&p, &opts, true, &mut Live::default())),
                        norm(view_with(&p, &opts, false, &mut Live::default())),
                        "{opts:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_carry_their_call_graph_tree() {
        let p = sample_profile();
        let opts = ViewOptions {
            children: true,
            graph: true,
            ..ViewOptions::default()
        };
        let v = view(&p, &opts);
        let hot = v
            .rows
            .iter()
            .find(|r| r.symbol(&opts.sort) == Some("hot_loop"))
            .unwrap();
        // Every hot_loop sample came through main and work: one chain carrying the row,
        // callers first (children mode), as perf prints it.
        assert_eq!(
            hot.graph,
            [
                "            |",
                "            ---main",
                "               work",
                "               hot_loop",
            ]
        );
        // main's row: its callees branch (hot_loop 70%, idle 20%, the syscall 10%).
        let main = v
            .rows
            .iter()
            .find(|r| r.symbol(&opts.sort) == Some("main"))
            .unwrap();
        let lines: Vec<&str> = main.graph.iter().map(|l| l.trim_end()).collect();
        assert_eq!(
            lines,
            [
                "            |",
                "            ---main",
                "               |",
                "               |--80.00%--work",
                "               |          |",
                "               |          |--70.00%--hot_loop",
                "               |          |",
                "               |           --10.00%--do_syscall_64",
                "               |",
                "                --20.00%--idle",
            ]
        );
        // The --stdio screen prints each tree under its row, then a blank line.
        let screen = render_stdio(&v, &Status::default(), 80);
        assert!(
            screen.contains("[.] hot_loop\n            |\n            ---main\n"),
            "{screen}"
        );
        // Without `graph`, no trees.
        let plain = view(
            &p,
            &ViewOptions {
                children: true,
                ..ViewOptions::default()
            },
        );
        assert!(plain.rows.iter().all(|r| r.graph.is_empty()));
    }

    #[test]
    fn hot_function_leads_and_narrowing_works() {
        let p = sample_profile();
        let v = view(&p, &ViewOptions::default());
        assert_eq!(v.rows[0].keys, ["app", "[.] hot_loop"]);
        assert!((v.rows[0].overhead - 70.0).abs() < 1e-9);
        assert!((v.kernel_pct - 10.0).abs() < 1e-9);
        let k = view(
            &p,
            &ViewOptions {
                hide_user: true,
                ..ViewOptions::default()
            },
        );
        assert_eq!(k.rows.len(), 1);
        assert!(k.rows[0].kernel);
        let f = view(
            &p,
            &ViewOptions {
                filter: Some("idle".into()),
                ..ViewOptions::default()
            },
        );
        assert_eq!(f.rows.len(), 1);
        assert_eq!(
            f.rows[0].symbol(&[SortKey::Dso, SortKey::Sym]),
            Some("idle")
        );
        let z = view(
            &p,
            &ViewOptions {
                zoom: Some(Zoom::Thread(11)),
                ..ViewOptions::default()
            },
        );
        assert_eq!(z.samples, 20);
        assert!((z.rows[0].overhead - 100.0).abs() < 1e-9);
        assert_eq!(hottest_thread(&p, "idle"), Some((11, "app-worker".into())));
        let text = render_stdio(&v, &Status::default(), 80);
        assert!(
            text.lines().nth(3).unwrap().contains("[.] hot_loop"),
            "{text}"
        );
    }
}
