//! The live view of `perfkit top`: rows of the profile built so far (through the same
//! aggregation as `report`), narrowed the ways perf top narrows them (hide kernel or user
//! symbols, zoom into a DSO or thread, a filter string), and the status line.
//!
//! The profile itself grows from the rings through [`crate::Loader`] (symbols resolved as
//! addresses first appear and cached by the symbolizer); this module only looks at it.

use std::fmt::Write as _;

use crate::Profile;
use crate::report::{self, Filter, GraphMode, ReportOptions, SortKey};

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
    let mut filter = Filter::default();
    match &opts.zoom {
        Some(Zoom::Dso(d)) => filter.dsos = vec![d.clone()],
        Some(Zoom::Thread(t)) => filter.tids = vec![*t],
        None => {}
    }
    let ropts = ReportOptions {
        sort: opts.sort.clone(),
        children: opts.children,
        graph: GraphMode::None,
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
    for s in &p.samples {
        let e = s.event as usize;
        if e >= n {
            continue;
        }
        counts[e] += 1;
        periods[e] += s.period;
        if p.stack_frames(s.stack)
            .next()
            .is_some_and(|f| p.func_of(f).kernel)
        {
            kernel_periods[e] += s.period;
        }
    }
    let shown = opts.event.min(n.saturating_sub(1));
    let section = (counts.get(shown).copied().unwrap_or(0) > 0)
        .then(|| counts[..shown].iter().filter(|&&c| c > 0).count());
    let sections = report::build(p, &ropts);
    let mut rows = Vec::new();
    let (mut samples, mut event) = (
        0,
        p.events
            .get(shown)
            .map_or(String::new(), |e| e.name.clone()),
    );
    if let Some(s) = section.and_then(|i| sections.get(i)) {
        samples = s.samples;
        event = s.event.clone();
        for r in &s.rows {
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
            rows.push(ViewRow {
                overhead,
                children,
                samples: r.samples,
                keys: r.keys.clone(),
                kernel,
            });
        }
    }
    if let Some(n) = opts.entries {
        rows.truncate(n);
    }
    let kernel_period = kernel_periods.get(shown).copied().unwrap_or(0);
    let all_period = periods.get(shown).copied().unwrap_or(0);
    let unresolved = p
        .frames
        .iter()
        .filter(|f| p.funcs[f.func as usize].name == "[unknown]")
        .count() as u64;
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
        unresolved,
        rows,
    }
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
    }
    out
}

/// The leaf function of each sample whose name is `symbol`: how its samples were reached.
/// The `limit` most common caller chains (callers of the leaf, nearest first, at most
/// `depth` deep), with their share of the symbol's samples in percent.
pub fn callers(p: &Profile, symbol: &str, depth: usize, limit: usize) -> Vec<(f64, Vec<String>)> {
    let mut counts: std::collections::HashMap<Vec<u32>, u64> = std::collections::HashMap::new();
    let mut total = 0u64;
    for s in &p.samples {
        let mut frames = p.stack_frames(s.stack);
        let Some(leaf) = frames.next() else { continue };
        if p.func_of(leaf).name != symbol {
            continue;
        }
        total += 1;
        let chain: Vec<u32> = frames
            .take(depth)
            .map(|f| p.frames[f as usize].func)
            .collect();
        *counts.entry(chain).or_default() += 1;
    }
    let mut v: Vec<(u64, Vec<u32>)> = counts.into_iter().map(|(c, n)| (n, c)).collect();
    v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    v.into_iter()
        .take(limit)
        .map(|(n, chain)| {
            (
                100.0 * n as f64 / total.max(1) as f64,
                chain
                    .iter()
                    .map(|&f| p.funcs[f as usize].name.clone())
                    .collect(),
            )
        })
        .collect()
}

/// The thread with the most samples in `symbol`: (tid, name), for zooming into it.
pub fn hottest_thread(p: &Profile, symbol: &str) -> Option<(i32, String)> {
    let mut by_thread: std::collections::HashMap<u32, u64> = std::collections::HashMap::new();
    for s in &p.samples {
        if let Some(leaf) = p.stack_frames(s.stack).next()
            && p.func_of(leaf).name == symbol
        {
            *by_thread.entry(s.thread).or_default() += 1;
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
        let c = callers(&p, "hot_loop", 4, 3);
        assert_eq!(c, [(100.0, vec!["work".to_string(), "main".to_string()])]);
        let text = render_stdio(&v, &Status::default(), 80);
        assert!(
            text.lines().nth(3).unwrap().contains("[.] hot_loop"),
            "{text}"
        );
    }
}
