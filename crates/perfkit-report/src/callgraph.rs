//! The call graph under a report row, built and printed as perf 6.1's `--stdio` does.
//!
//! perf keeps a row's chains in a radix tree: a node holds a run of frames that every chain
//! through it shares, and splits where chains part or where one ends. Frames are matched by
//! function (perf's default `function` key), unnamed ones by address. Each node's children
//! are ordered by their cumulative weight, heaviest first; equal weights keep perf's
//! insertion order (object, then function start address, both descending). Nodes lighter
//! than the threshold are dropped: in `graph` mode a share of the whole event, rounded down
//! to a whole period (perf's `u64` of `total * percent / 100`); in `fractal` mode a share of
//! the parent's children, rounded up.
//!
//! Printing follows perf's `ui/stdio/hist.c`: a `|` line before each branch, `--P%--`
//! before a branch's first frame, a lone root chain carrying the whole row printed as
//! `---name` without a percentage, the depth's pipes kept in a 32-bit mask (perf's `int`,
//! whose shifts wrap on x86), and in `fractal` mode a `[...]` line for what the threshold
//! hid. `flat` prints every node that ends chains, as the whole path from the root with the
//! node's cumulative percentage.

use std::fmt::Write as _;

/// The call-graph layouts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `graph`: percentages of the event's total.
    Graph,
    /// `fractal`: percentages of the parent.
    Fractal,
    /// `flat`: one chain per node that ends chains.
    Flat,
}

/// A frame of a chain as the graph matches and orders it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// What two frames must share to merge (the function, or an unnamed address).
    pub key: (u32, u64),
    /// perf's insertion order among siblings: (object rank, start address); larger first.
    pub order: (u64, u64),
    /// The text printed.
    pub label: String,
    /// A function found inlined: perf orders it among its siblings by name.
    pub inlined: bool,
    /// (object rank, address it ran at): perf's order where a symbol is missing.
    pub ip: (u64, u64),
    /// Whether it has a symbol.
    pub named: bool,
}

/// A frame's text as perf prints it in a graph: made with `scnprintf` into a 1024-byte
/// buffer (`callchain_list__sym_name`), so cut to 1023 bytes, its ` (inlined)` mark
/// included (a C++ name with its parameters under `-v` reaches that).
fn printed_label(label: &str) -> &str {
    const MAX: usize = 1023;
    if label.len() <= MAX {
        return label;
    }
    let mut end = MAX;
    while !label.is_char_boundary(end) {
        end -= 1;
    }
    &label[..end]
}

impl Entry {
    /// The name without perf's ` (inlined)` mark.
    fn name(&self) -> &str {
        self.label.strip_suffix(" (inlined)").unwrap_or(&self.label)
    }

    /// Whether two frames are one node (perf's `match_chain`): the same function, or where
    /// either is inlined, the same name (`match_chain_strings`), so a function that is
    /// inlined in one chain and called in another is one node, named as the first chain
    /// that made it.
    fn matches(&self, other: &Entry) -> bool {
        self.key == other.key || ((self.inlined || other.inlined) && self.name() == other.name())
    }
}

struct Node {
    entry: usize,
    hit: u64,
    cumul: u64,
    children: Vec<usize>,
}

/// A row's chains, as a tree of single frames (runs are formed when printing).
pub(crate) struct Tree {
    entries: Vec<Entry>,
    nodes: Vec<Node>,
}

impl Tree {
    pub(crate) fn new() -> Tree {
        Tree {
            entries: Vec::new(),
            nodes: vec![Node {
                entry: usize::MAX,
                hit: 0,
                cumul: 0,
                children: Vec::new(),
            }],
        }
    }

    /// Add one chain (in display order) with its weight.
    pub(crate) fn add(&mut self, chain: impl Iterator<Item = Entry>, weight: u64) {
        let mut at = 0;
        self.nodes[0].cumul += weight;
        for e in chain {
            let found = self.nodes[at]
                .children
                .iter()
                .copied()
                .find(|&c| self.entries[self.nodes[c].entry].matches(&e));
            at = match found {
                Some(c) => c,
                None => {
                    self.entries.push(e);
                    self.nodes.push(Node {
                        entry: self.entries.len() - 1,
                        hit: 0,
                        cumul: 0,
                        children: Vec::new(),
                    });
                    let n = self.nodes.len() - 1;
                    self.nodes[at].children.push(n);
                    n
                }
            };
            self.nodes[at].cumul += weight;
        }
        self.nodes[at].hit += weight;
    }

    /// The radix node starting at trie node `n`: its frames and the trie node it ends at.
    fn run(&self, n: usize) -> (Vec<usize>, usize) {
        let mut frames = vec![n];
        let mut at = n;
        while self.nodes[at].hit == 0 && self.nodes[at].children.len() == 1 {
            at = self.nodes[at].children[0];
            frames.push(at);
        }
        (frames, at)
    }

    /// The radix children of the run ending at trie node `end`, in perf's rb_root_in order:
    /// each inserted, in the order it was first met, into a red-black tree where it goes
    /// left of every node smaller than itself (perf's `append_chain_children` with
    /// `match_chain`). perf compares a pair with an inlined function by name
    /// (`match_chain_strings`) and other pairs by object and address, which is not
    /// transitive: only the same tree gives the same order.
    fn kids(&self, end: usize) -> Vec<usize> {
        let entry = |n: &usize| &self.entries[self.nodes[*n].entry];
        let perf_cmp = |a: &Entry, b: &Entry| {
            if a.inlined || b.inlined {
                a.name().cmp(b.name()).then_with(|| a.order.cmp(&b.order))
            } else if a.named && b.named {
                a.order.cmp(&b.order)
            } else {
                a.ip.cmp(&b.ip)
            }
        };
        crate::rb_order::rb_order(self.nodes[end].children.clone(), |new, node| {
            perf_cmp(entry(node), entry(new)).is_lt()
        })
    }

    /// The children kept and sorted as perf's `sort_chain_graph_*`: heaviest first, ties in
    /// insertion order.
    fn sorted(&self, end: usize, min_hit: u64) -> Vec<usize> {
        let mut k: Vec<usize> = self
            .kids(end)
            .into_iter()
            .filter(|&c| self.nodes[c].cumul >= min_hit)
            .collect();
        k.sort_by(|&a, &b| self.nodes[b].cumul.cmp(&self.nodes[a].cumul));
        k
    }

    fn children_hit(&self, end: usize) -> u64 {
        self.nodes[end]
            .children
            .iter()
            .map(|&c| self.nodes[c].cumul)
            .sum()
    }

    /// Print the graph. `total`: the event's total period; `parent`: the row's period
    /// (self, or children in children mode); `percent`: the threshold; `skip_first`: leave
    /// out the first frame of a lone root chain (perf does when `--sort` starts with `sym`).
    pub(crate) fn render(
        &self,
        layout: Layout,
        total: u64,
        parent: u64,
        percent: f64,
        skip_first: bool,
        out: &mut String,
    ) {
        let start = out.len();
        let p = Printer {
            tree: self,
            layout,
            percent,
        };
        match layout {
            Layout::Flat => p.flat(total, out),
            Layout::Graph | Layout::Fractal => {
                let min_hit = match layout {
                    Layout::Fractal => p.rel_min(0),
                    _ => (total as f64 * (percent / 100.0)) as u64,
                };
                let roots = self.sorted(0, min_hit);
                let mut margin = 0;
                let mut end = 0;
                let mut level = roots.clone();
                if roots.len() == 1 && self.nodes[roots[0]].cumul == parent {
                    let (frames, e) = self.run(roots[0]);
                    let mut printed = false;
                    for (i, &f) in frames.iter().enumerate() {
                        if i == 0 && skip_first {
                            continue;
                        }
                        if !printed {
                            let _ = write!(out, "{}|\n{}---", margin_str(0), margin_str(0));
                            margin = 3;
                            printed = true;
                        } else {
                            out.push_str(&margin_str(margin));
                        }
                        let _ = writeln!(
                            out,
                            "{}",
                            printed_label(&self.entries[self.nodes[f].entry].label)
                        );
                    }
                    end = e;
                    level = match layout {
                        Layout::Fractal => self.sorted(end, p.rel_min(end)),
                        _ => self.sorted(end, min_hit),
                    };
                }
                let base = match layout {
                    Layout::Fractal => parent,
                    _ => total,
                };
                let _ = end;
                p.graph(&level, base, 1, 1, margin, min_hit, out);
                if out.len() > start {
                    out.push('\n');
                }
            }
        }
    }
}

fn margin_str(extra: usize) -> String {
    " ".repeat(12 + extra)
}

/// perf's `1 << i` on an `int`: x86 shifts by `i % 32`.
fn bit(i: usize) -> u32 {
    1u32 << (i % 32)
}

fn pct(v: u64, total: u64) -> String {
    let p = if total == 0 {
        0.0
    } else {
        v as f64 * 100.0 / total as f64
    };
    format!("{p:.2}%")
}

struct Printer<'t> {
    tree: &'t Tree,
    layout: Layout,
    percent: f64,
}

impl Printer<'_> {
    /// fractal's threshold under the run ending at `end`: a share of its children, rounded up.
    fn rel_min(&self, end: usize) -> u64 {
        (self.tree.children_hit(end) as f64 * (self.percent / 100.0)).ceil() as u64
    }

    #[allow(clippy::too_many_arguments)]
    fn graph(
        &self,
        level: &[usize],
        total: u64,
        depth: usize,
        mask: u32,
        margin: usize,
        abs_min: u64,
        out: &mut String,
    ) {
        let t = self.tree;
        let rel = self.layout == Layout::Fractal;
        let mut remaining = total;
        let mut new_mask = mask;
        for (i, &c) in level.iter().enumerate() {
            let cumul = t.nodes[c].cumul;
            remaining = remaining.wrapping_sub(cumul);
            if i + 1 == level.len() && (!rel || remaining == 0) {
                new_mask &= !bit(depth - 1);
            }
            // The separator keeps the old mask.
            out.push_str(&margin_str(margin));
            for d in 0..depth {
                out.push_str(if mask & bit(d) != 0 {
                    "|          "
                } else {
                    "           "
                });
            }
            out.push('\n');
            let (frames, end) = t.run(c);
            for (k, &f) in frames.iter().enumerate() {
                self.line(
                    cumul,
                    &t.entries[t.nodes[f].entry].label,
                    depth,
                    new_mask,
                    k == 0,
                    total,
                    margin,
                    out,
                );
            }
            let (next_total, next) = if rel {
                (t.children_hit(end), t.sorted(end, self.rel_min(end)))
            } else {
                (total, t.sorted(end, abs_min))
            };
            self.graph(
                &next,
                next_total,
                depth + 1,
                new_mask | bit(depth),
                margin,
                abs_min,
                out,
            );
        }
        if rel && remaining != 0 && remaining != total {
            new_mask &= !bit(depth - 1);
            self.line(
                remaining, "[...]", depth, new_mask, true, total, margin, out,
            );
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn line(
        &self,
        value: u64,
        label: &str,
        depth: usize,
        mask: u32,
        first: bool,
        total: u64,
        margin: usize,
        out: &mut String,
    ) {
        out.push_str(&margin_str(margin));
        for d in 0..depth {
            out.push(if mask & bit(d) != 0 { '|' } else { ' ' });
            if first && d == depth - 1 {
                let _ = write!(out, "--{}--", pct(value, total));
            } else {
                out.push_str("          ");
            }
        }
        out.push_str(printed_label(label));
        out.push('\n');
    }

    /// perf's `flat`: every radix node that ends chains, in post order, heaviest first.
    fn flat(&self, total: u64, out: &mut String) {
        let t = self.tree;
        let min_hit = (total as f64 * (self.percent / 100.0)) as u64;
        // (hit, path of trie nodes from the root)
        let mut found: Vec<(u64, Vec<usize>)> = Vec::new();
        fn walk(
            t: &Tree,
            start: usize,
            path: &mut Vec<usize>,
            min: u64,
            found: &mut Vec<(u64, Vec<usize>)>,
        ) {
            let (frames, end) = t.run(start);
            let len = path.len();
            path.extend(&frames);
            for c in t.kids(end) {
                walk(t, c, path, min, found);
            }
            let hit = t.nodes[end].hit;
            if hit > 0 && hit >= min {
                found.push((t.nodes[start].cumul, path.clone()));
            }
            path.truncate(len);
        }
        for c in t.kids(0) {
            walk(t, c, &mut Vec::new(), min_hit, &mut found);
        }
        // Sorted by own hit in perf; the run's own hit is what `found` filtered on, but the
        // value printed is the cumulative one. Keep insertion order among equals.
        let mut keyed: Vec<(u64, usize)> = found
            .iter()
            .enumerate()
            .map(|(i, (_, path))| (t.nodes[*path.last().unwrap()].hit, i))
            .collect();
        keyed.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (_, i) in keyed {
            let (cumul, path) = &found[i];
            let _ = writeln!(out, "           {}", pct(*cumul, total));
            for &n in path {
                let _ = writeln!(
                    out,
                    "                {}",
                    printed_label(&t.entries[t.nodes[n].entry].label)
                );
            }
            out.push('\n');
        }
    }
}
