//! `report --hierarchy`: the rows of a report folded into one level per sort key, as perf
//! prints them. Each entry carries the total of the rows under it; entries of a level are
//! ordered by weight, then by their key as perf compares it; the call graph of a row is
//! printed under its last level.
//!
//! The layout follows perf's `hist_entry__hierarchy_fprintf`: an entry is indented three
//! columns per level, its overhead columns come first, then the indentation of the deepest
//! level, then the key (padded to its column's width, except symbols). The header joins
//! the sort keys' names with ` / `.

use crate::report::{ReportOptions, Section, SortKey, perf_key_order};
use rustc_hash::FxHashMap as HashMap;
use std::fmt::Write as _;

/// Columns of indentation per level.
const INDENT: usize = 3;

/// One entry of the hierarchy.
#[derive(Default)]
struct Entry {
    key: String,
    period: u64,
    samples: u64,
    /// The part of `period` sampled in the kernel.
    sys: u64,
    /// The report row this entry is, at the last level.
    row: Option<usize>,
    children: Vec<Entry>,
    index: HashMap<String, usize>,
}

impl Entry {
    fn child(&mut self, key: &str) -> &mut Entry {
        let i = match self.index.get(key) {
            Some(&i) => i,
            None => {
                self.children.push(Entry {
                    key: key.to_string(),
                    ..Entry::default()
                });
                self.index.insert(key.to_string(), self.children.len() - 1);
                self.children.len() - 1
            }
        };
        &mut self.children[i]
    }

    /// Heaviest first at every level; ties in perf's key order.
    fn sort(&mut self, keys: &[SortKey]) {
        let Some((&k, rest)) = keys.split_first() else {
            return;
        };
        self.children.sort_by(|a, b| {
            b.period.cmp(&a.period).then_with(|| {
                // (No cgroup names here: cgroups of equal weight go by name.)
                perf_key_order(
                    &[k],
                    std::slice::from_ref(&a.key),
                    std::slice::from_ref(&b.key),
                    &HashMap::default(),
                )
            })
        });
        for c in &mut self.children {
            c.sort(rest);
        }
    }
}

/// The overhead columns of an entry, each with its header (perf's first hierarchy node).
fn overhead_columns(opts: &ReportOptions) -> Vec<&'static str> {
    let mut cols = Vec::new();
    if opts.overhead {
        cols.push("Overhead");
        if opts.cpu_util {
            cols.push("     sys");
            cols.push("     usr");
        }
    }
    if opts.show_samples {
        cols.push("     Samples");
    }
    if opts.show_period {
        cols.push("      Period");
    }
    cols
}

/// Append one section's header and entries to `out`.
pub(crate) fn render_section(s: &Section, opts: &ReportOptions, out: &mut String) {
    let keys = &opts.sort;
    let levels = keys.len().max(1);
    let mut root = Entry::default();
    for (ri, r) in s.rows.iter().enumerate() {
        let mut e = &mut root;
        for k in &r.keys {
            e = e.child(k);
            e.period += r.self_;
            e.samples += r.samples;
            e.sys += r.sys;
        }
        e.row = Some(ri);
    }
    root.sort(keys);

    // Column widths: the widest key of each level, at least its header.
    let widths: Vec<usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            s.rows
                .iter()
                .map(|r| r.keys[i].chars().count())
                .chain([k.header().len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let names: Vec<&str> = keys.iter().map(|k| k.header().trim_start()).collect();
    let joined = names.join(" / ");
    let key_width = widths
        .iter()
        .enumerate()
        .map(|(d, w)| d * INDENT + w)
        .chain([joined.len()])
        .max()
        .unwrap_or(0);
    let deepest = (levels - 1) * INDENT;
    let cols = overhead_columns(opts);
    let _ = write!(out, "# {:deepest$}", "");
    for c in &cols {
        let _ = write!(out, "{c}  ");
    }
    let _ = writeln!(out, "{joined}");
    let _ = write!(out, "# {}", ".".repeat(deepest));
    let dots: Vec<String> = cols.iter().map(|c| ".".repeat(c.len())).collect();
    let _ = writeln!(out, "{}  {}", dots.join(".."), ".".repeat(key_width));
    out.push_str("#\n");
    let ctx = Ctx {
        s,
        opts,
        keys,
        widths: &widths,
        deepest,
        cols: &cols,
    };
    for e in &root.children {
        ctx.entry(e, 0, out);
    }
}

struct Ctx<'a> {
    s: &'a Section,
    opts: &'a ReportOptions,
    keys: &'a [SortKey],
    widths: &'a [usize],
    deepest: usize,
    cols: &'a [&'static str],
}

impl Ctx<'_> {
    fn visible(&self, e: &Entry) -> bool {
        self.s.pct(e.period) >= self.opts.percent_limit
    }

    fn entry(&self, e: &Entry, depth: usize, out: &mut String) {
        if !self.visible(e) {
            return;
        }
        let _ = write!(out, "{:1$}", "", depth * INDENT);
        for c in self.cols {
            match c.trim() {
                "Overhead" => {
                    let _ = write!(out, "  {:>7.2}%", self.s.pct(e.period));
                }
                "sys" => {
                    let _ = write!(out, "  {:>7.2}%", self.s.pct(e.sys));
                }
                "usr" => {
                    let _ = write!(out, "  {:>7.2}%", self.s.pct(e.period - e.sys));
                }
                "Samples" => {
                    let _ = write!(out, "  {:>12}", e.samples);
                }
                _ => {
                    let _ = write!(out, "  {:>12}", e.period);
                }
            }
        }
        let _ = write!(out, "{:1$}  ", "", self.deepest);
        let key = self.keys[depth];
        if matches!(key, SortKey::Sym | SortKey::Symoff) {
            out.push_str(&e.key);
        } else {
            // perf pads the value to the column and then trims its left (`pid`'s
            // right-aligned thread id).
            let padded = format!("{:1$}", e.key, self.widths[depth]);
            out.push_str(padded.trim_start());
        }
        out.push('\n');
        if let Some(ri) = e.row {
            if let Some(g) = self.s.graphs.get(ri) {
                out.push_str(g);
            }
            return;
        }
        if !e.children.iter().any(|c| self.visible(c)) {
            // perf: every sub-entry is under the limit.
            // perf: the overhead columns' width (with their separators) plus 4.
            let overhead: usize = self.cols.iter().map(|c| c.len() + 2).sum::<usize>() + 2;
            let indent = (self.keys.len() + depth) * INDENT + overhead;
            let _ = writeln!(
                out,
                "{:indent$}no entry >= {:.2}%",
                "", self.opts.percent_limit
            );
            return;
        }
        for c in &e.children {
            self.entry(c, depth + 1, out);
        }
    }
}
