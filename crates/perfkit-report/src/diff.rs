//! Comparing profiles (`perf diff`): entries of a baseline and of one or more newer
//! profiles matched by their sort keys (shared object and symbol by default: names, not
//! addresses, so two builds of a program match), with perf diff's computations:
//!
//! * delta: new% − baseline% (each relative to its file's total period);
//! * delta-abs: the same, ordered by its absolute value (perf's default);
//! * ratio: new period / baseline period;
//! * wdiff:W1,W2: new period × W2 − baseline period × W1.
//!
//! [`differential_folded`] and [`differential_flamegraph`] give the same comparison as
//! inferno's diff-folded lines (`stack before after`) and an SVG whose colours show what
//! grew (red) and shrank (blue).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::Profile;

/// What to compute against the baseline (`-c`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Compute {
    /// new% − baseline%, ordered by value.
    Delta,
    /// new% − baseline%, ordered by absolute value (the default).
    DeltaAbs,
    /// new period / baseline period.
    Ratio,
    /// new period × w2 − baseline period × w1.
    Wdiff(i64, i64),
}

impl Compute {
    /// Parse perf's `-c` values: `delta`, `delta-abs`, `ratio`, `wdiff:W1,W2`.
    pub fn parse(s: &str) -> Result<Compute, String> {
        match s {
            "delta" => Ok(Compute::Delta),
            "delta-abs" => Ok(Compute::DeltaAbs),
            "ratio" => Ok(Compute::Ratio),
            w if w.starts_with("wdiff") => {
                let ws = w
                    .strip_prefix("wdiff:")
                    .ok_or("wdiff needs weights: wdiff:W1,W2")?;
                let (a, b) = ws
                    .split_once(',')
                    .ok_or("wdiff needs two weights: wdiff:W1,W2")?;
                let p = |x: &str| {
                    x.trim()
                        .parse::<i64>()
                        .map_err(|_| format!("wdiff weight '{x}' is not an integer"))
                };
                Ok(Compute::Wdiff(p(a)?, p(b)?))
            }
            other => Err(format!(
                "unknown computation '{other}': use delta, delta-abs, ratio or wdiff:W1,W2"
            )),
        }
    }

    fn header(self) -> &'static str {
        match self {
            Compute::Delta => "Delta",
            Compute::DeltaAbs => "Delta Abs",
            Compute::Ratio => "Ratio",
            Compute::Wdiff(..) => "Weighted diff",
        }
    }

    fn width(self) -> usize {
        match self {
            Compute::Delta => 7,
            Compute::DeltaAbs => 9,
            Compute::Ratio | Compute::Wdiff(..) => 14,
        }
    }
}

/// A key entries are matched by (`--sort`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// Shared object (file name).
    Dso,
    /// Symbol, as `[.] name` / `[k] name`.
    Sym,
    /// Command name.
    Comm,
    /// Process id and command (`pid:comm`).
    Pid,
}

impl Key {
    /// Parse a `--sort` key.
    pub fn parse(s: &str) -> Option<Key> {
        match s {
            "dso" => Some(Key::Dso),
            "sym" | "symbol" => Some(Key::Sym),
            "comm" => Some(Key::Comm),
            "pid" => Some(Key::Pid),
            _ => None,
        }
    }

    fn header(self) -> &'static str {
        match self {
            Key::Dso => "Shared Object",
            Key::Sym => "Symbol",
            Key::Comm => "Command",
            Key::Pid => "Pid:Command",
        }
    }
}

/// How to compare.
#[derive(Clone, Debug)]
pub struct Options {
    /// The computation (`-c`).
    pub compute: Compute,
    /// Sort keys (default dso, sym).
    pub keys: Vec<Key>,
    /// Show periods (`-p`): the baseline's and each new file's.
    pub periods: bool,
    /// Show how each value is computed (`-F`, `--formula`).
    pub formula: bool,
    /// Only entries the baseline and a new file both have (`-b`, `--baseline-only`).
    pub baseline_only: bool,
    /// Sort by the values of this file first (`-o N`; 0: the baseline's periods; default
    /// 1, the first new file's computed values).
    pub order: usize,
    /// Percentages of what the filters keep (`--percentage relative`), instead of each
    /// file's whole period (`absolute`, perf diff's default).
    pub relative: bool,
    /// Only entries of these shared objects (`-d`, names or paths).
    pub dsos: Vec<String>,
    /// Only entries of these commands (`-C`).
    pub comms: Vec<String>,
    /// Only entries of these symbols (`-S`).
    pub symbols: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            compute: Compute::DeltaAbs,
            keys: vec![Key::Dso, Key::Sym],
            periods: false,
            formula: false,
            baseline_only: false,
            order: 1,
            relative: false,
            dsos: Vec::new(),
            comms: Vec::new(),
            symbols: Vec::new(),
        }
    }
}

impl Options {
    /// The key columns shown: perf leaves out a column a filter narrows to one value.
    pub fn shown_keys(&self) -> Vec<Key> {
        self.keys
            .iter()
            .copied()
            .filter(|k| match k {
                Key::Dso => self.dsos.len() != 1,
                Key::Comm => self.comms.len() != 1,
                Key::Sym => self.symbols.len() != 1,
                Key::Pid => true,
            })
            .collect()
    }
}

/// One matched entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The key values, in [`Options::shown_keys`] order.
    pub keys: Vec<String>,
    /// Period in each file (baseline first); `None` where the entry is absent.
    pub periods: Vec<Option<u64>>,
    /// Share of each file's total period, in percent (what the values are computed from).
    pub percents: Vec<Option<f64>>,
    /// The baseline's share as printed (with `-b`, of the entries kept).
    pub baseline_shown: Option<f64>,
}

impl Row {
    /// The computed value of new file `i` (1-based) against the baseline; `None` where perf
    /// prints nothing (or N/A for a ratio).
    pub fn value(&self, i: usize, c: Compute) -> Option<f64> {
        let new_pct = self.percents[i]?;
        let old_pct = self.percents[0].unwrap_or(0.0);
        let old = self.periods[0].unwrap_or(0);
        let new = self.periods[i].unwrap_or(0);
        match c {
            Compute::Delta | Compute::DeltaAbs => Some(new_pct - old_pct),
            Compute::Ratio => (old > 0).then(|| new as f64 / old as f64),
            // perf computes it only against a baseline entry (else N/A).
            Compute::Wdiff(w1, w2) => self.periods[0]
                .is_some()
                .then(|| (new as i64 * w2 - old as i64 * w1) as f64),
        }
    }
}

/// The comparison of one event.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    /// The event's name.
    pub event: String,
    /// Total period of each file (what percentages are of).
    pub totals: Vec<u64>,
    /// Rows in perf diff's order: entries with a computed value first, by value (absolute
    /// for delta-abs), then the baseline's entries absent from the new file.
    pub rows: Vec<Row>,
}

/// Whether sample `s` passes the `-d`/`-C`/`-S` filters.
fn kept(p: &Profile, s: &crate::Sample, opts: &Options) -> bool {
    if opts.dsos.is_empty() && opts.comms.is_empty() && opts.symbols.is_empty() {
        return true;
    }
    let leaf = p.sample_frame(s.stack);
    let func = leaf.map(|f| p.func_of(f));
    let t = &p.threads[s.thread as usize];
    let dso_ok = opts.dsos.is_empty()
        || func.is_some_and(|f| {
            let short = perfkit_symbols::dso_short_name(&f.dso);
            opts.dsos.iter().any(|d| *d == f.dso || *d == short)
        });
    let comm_ok = opts.comms.is_empty() || opts.comms.iter().any(|c| c == t.name_at(s.time));
    let sym_ok = opts.symbols.is_empty() || func.is_some_and(|f| opts.symbols.contains(&f.name));
    dso_ok && comm_ok && sym_ok
}

fn key_values(p: &Profile, s: &crate::Sample, keys: &[Key]) -> Vec<String> {
    let leaf = p.sample_frame(s.stack);
    let func = leaf.map(|f| p.func_of(f));
    let t = &p.threads[s.thread as usize];
    keys.iter()
        .map(|k| match k {
            Key::Dso => func.map_or("[unknown]".into(), |f| {
                perfkit_symbols::dso_short_name(&f.dso).into_owned()
            }),
            Key::Sym => match func {
                Some(f) => format!("[{}] {}", if f.kernel { 'k' } else { '.' }, f.name),
                None => "[.] [unknown]".into(),
            },
            Key::Comm => t.name_at(s.time).to_string(),
            // perf: the pid right-aligned in 7 columns.
            Key::Pid => format!("{:>7}:{}", t.pid, t.name_at(s.time)),
        })
        .collect()
}

/// Compare `profiles` (the baseline first) event by event: an event of the baseline is
/// matched by name in the others (modifiers aside when no name is the same).
pub fn diff(profiles: &[&Profile], opts: &Options) -> Vec<Diff> {
    let Some(base) = profiles.first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (bi, ev) in base.events.iter().enumerate() {
        let n = profiles.len();
        let mut index: HashMap<Vec<String>, usize> = HashMap::new();
        let mut rows: Vec<Row> = Vec::new();
        let mut totals = vec![0u64; n];
        for (fi, p) in profiles.iter().enumerate() {
            let Some(ei) = (if fi == 0 {
                Some(bi)
            } else {
                // perf matches events by type and config: `cpu-clock:ppp` (perf record's
                // fallback) is perfkit's `cpu-clock`. Names without modifiers stand for that.
                let base = |n: &str| n.split(':').next().unwrap_or(n).to_string();
                p.events.iter().position(|e| e.name == ev.name).or_else(|| {
                    p.events
                        .iter()
                        .position(|e| base(&e.name) == base(&ev.name))
                })
            }) else {
                continue;
            };
            let keys = opts.shown_keys();
            for s in p.samples.iter().filter(|s| s.event as usize == ei) {
                let keep = kept(p, s, opts);
                if keep || !opts.relative {
                    totals[fi] += s.period;
                }
                if !keep {
                    continue;
                }
                let k = key_values(p, s, &keys);
                let r = *index.entry(k.clone()).or_insert_with(|| {
                    rows.push(Row {
                        keys: k,
                        periods: vec![None; n],
                        percents: vec![None; n],
                        baseline_shown: None,
                    });
                    rows.len() - 1
                });
                *rows[r].periods[fi].get_or_insert(0) += s.period;
            }
        }
        for r in &mut rows {
            for (fi, p) in r.periods.iter().enumerate() {
                r.percents[fi] = p.map(|p| 100.0 * p as f64 / totals[fi].max(1) as f64);
            }
            r.baseline_shown = r.percents[0];
        }
        if opts.baseline_only {
            // perf drops the entries without a match on both sides; the baseline column is
            // then a share of what is left (the computed values keep the whole).
            rows.retain(|r| r.periods[0].is_some() && r.periods[1..].iter().any(Option::is_some));
            let kept: u64 = rows.iter().filter_map(|r| r.periods[0]).sum();
            for r in &mut rows {
                r.baseline_shown = r.periods[0].map(|p| 100.0 * p as f64 / kept.max(1) as f64);
            }
        }
        sort_rows(&mut rows, opts.compute, opts.order);
        out.push(Diff {
            event: ev.name.clone(),
            totals,
            rows,
        });
    }
    out
}

/// perf diff's order, column by column: the first new file's value (descending; by
/// magnitude for delta-abs; an entry it has without a value, like a ratio without baseline,
/// next; entries it lacks last), then the baseline's period, then the next file's value,
/// and so on; the keys break what ties remain.
fn sort_rows(rows: &mut [Row], c: Compute, order: usize) {
    let n = rows.first().map_or(0, |r| r.periods.len());
    let col = |r: &Row, i: usize| -> (u8, f64) {
        match r.value(i, c) {
            Some(v) => (2, if c == Compute::DeltaAbs { v.abs() } else { v }),
            None if r.periods[i].is_some() => (1, r.periods[i].unwrap_or(0) as f64),
            None => (0, 0.0),
        }
    };
    let base = |a: &Row, b: &Row| b.periods[0].unwrap_or(0).cmp(&a.periods[0].unwrap_or(0));
    // -o N: that file's column first (0: the baseline's period), then perf's usual order.
    let order = order.min(n.saturating_sub(1));
    rows.sort_by(|a, b| {
        if order == 0 {
            let o = base(a, b);
            if o.is_ne() {
                return o;
            }
        } else if order > 1 {
            let (ca, cb) = (col(a, order), col(b, order));
            let o = cb.0.cmp(&ca.0).then(cb.1.total_cmp(&ca.1));
            if o.is_ne() {
                return o;
            }
        }
        for i in 1..n {
            let (ca, cb) = (col(a, i), col(b, i));
            let o = cb.0.cmp(&ca.0).then(cb.1.total_cmp(&ca.1));
            if o.is_ne() {
                return o;
            }
            if i == 1 {
                let o = base(a, b);
                if o.is_ne() {
                    return o;
                }
            }
        }
        a.keys.cmp(&b.keys)
    });
}

/// perf diff's `-F` text: how the value of new file `i` is computed.
fn formula(r: &Row, i: usize, c: Compute, totals: &[u64]) -> String {
    let Some(new) = r.periods[i] else {
        return String::new();
    };
    let old = r.periods[0].unwrap_or(0);
    match c {
        Compute::Delta | Compute::DeltaAbs => format!(
            "({new} * 100 / {}) - ({old} * 100 / {})",
            totals[i], totals[0]
        ),
        Compute::Ratio => format!("{new} / {old}"),
        Compute::Wdiff(w1, w2) => format!("({new} * {w2}) - ({old} * {w1})"),
    }
}

fn cell(r: &Row, i: usize, c: Compute) -> String {
    match (c, r.value(i, c)) {
        (Compute::Delta | Compute::DeltaAbs, Some(v)) => format!("{v:+.2}%"),
        (Compute::Delta | Compute::DeltaAbs, _) => String::new(),
        (Compute::Ratio, Some(v)) => format!("{v:.6}"),
        (Compute::Ratio, None) if r.percents[i].is_some() => "N/A".into(),
        (Compute::Ratio, None) => String::new(),
        (Compute::Wdiff(..), Some(v)) => format!("{}", v as i64),
        (Compute::Wdiff(..), None) if r.percents[i].is_some() => "N/A".into(),
        (Compute::Wdiff(..), None) => String::new(),
    }
}

/// Print as `perf diff` does. `files` names the inputs (baseline first); with more than
/// two, a "Data files" list heads each event and columns carry `/N`.
pub fn write_stdio<W: Write + ?Sized>(
    out: &mut W,
    diffs: &[Diff],
    files: &[String],
    opts: &Options,
) -> io::Result<()> {
    let many = files.len() > 2;
    for (di, d) in diffs.iter().enumerate() {
        if di > 0 {
            writeln!(out)?;
        }
        writeln!(out, "# Event '{}'", d.event)?;
        writeln!(out, "#")?;
        if many {
            writeln!(out, "# Data files:")?;
            for (i, f) in files.iter().enumerate() {
                let tag = if i == 0 { "(Baseline)" } else { "" };
                writeln!(out, "#  [{i}] {f} {tag}")?;
            }
            writeln!(out, "#")?;
        }
        // Columns: (header, width, values).
        let mut cols: Vec<(String, usize, Vec<String>)> = Vec::new();
        let suffix = |i: usize| if many { format!("/{i}") } else { String::new() };
        let pct = |v: Option<f64>| v.map_or(String::new(), |p| format!("{p:.2}%"));
        let base_head = format!("Baseline{}", suffix(0));
        cols.push((
            base_head.clone(),
            base_head.len(),
            d.rows.iter().map(|r| pct(r.baseline_shown)).collect(),
        ));
        if opts.periods {
            cols.push((
                "Base period".into(),
                14,
                d.rows
                    .iter()
                    .map(
                        |r| match (r.periods[0], r.periods[1..].iter().any(Option::is_some)) {
                            (Some(p), _) => p.to_string(),
                            // perf shows a zero base period for an entry only the new file has.
                            (None, true) => "0".into(),
                            (None, false) => String::new(),
                        },
                    )
                    .collect(),
            ));
        }
        for i in 1..files.len() {
            let head = format!("{}{}", opts.compute.header(), suffix(i));
            let w = head.len().max(opts.compute.width());
            cols.push((
                head,
                w,
                d.rows.iter().map(|r| cell(r, i, opts.compute)).collect(),
            ));
            if opts.formula {
                cols.push((
                    format!("Formula{}", suffix(i)),
                    70,
                    d.rows
                        .iter()
                        .map(|r| formula(r, i, opts.compute, &d.totals))
                        .collect(),
                ));
            }
            if opts.periods {
                cols.push((
                    format!("Period{}", suffix(i)),
                    14,
                    d.rows
                        .iter()
                        .map(|r| r.periods[i].map_or(String::new(), |p| p.to_string()))
                        .collect(),
                ));
            }
        }
        let keys = opts.shown_keys();
        let key_w: Vec<usize> = keys
            .iter()
            .enumerate()
            .map(|(k, key)| {
                d.rows
                    .iter()
                    .map(|r| r.keys[k].len())
                    .max()
                    .unwrap_or(0)
                    .max(key.header().len())
            })
            .collect();
        let mut head = String::from("#");
        let mut dots = String::from("#");
        for (i, (h, w, _)) in cols.iter().enumerate() {
            head.push_str(&format!("{}{h:>w$}", if i == 0 { " " } else { "  " }));
            dots.push_str(&format!(
                "{}{}",
                if i == 0 { " " } else { "  " },
                ".".repeat(*w)
            ));
        }
        for (k, key) in keys.iter().enumerate() {
            let w = key_w[k];
            // perf right-aligns the pid column's header (its values lead with the pid).
            if *key == Key::Pid {
                head.push_str(&format!("  {:>w$}", key.header()));
            } else {
                head.push_str(&format!("  {:<w$}", key.header()));
            }
            dots.push_str(&format!("  {}", ".".repeat(w)));
        }
        writeln!(out, "{head}")?;
        writeln!(out, "{dots}")?;
        writeln!(out, "#")?;
        for (ri, r) in d.rows.iter().enumerate() {
            let mut line = String::new();
            for (i, (_, w, vals)) in cols.iter().enumerate() {
                let w = if i == 0 { w + 1 } else { *w };
                line.push_str(&format!(
                    "{}{:>w$}",
                    if i == 0 { " " } else { "  " },
                    vals[ri]
                ));
            }
            let nk = keys.len();
            for (k, v) in r.keys.iter().enumerate() {
                // perf pads every key column but a trailing symbol.
                if k + 1 == nk && keys[k] == Key::Sym {
                    line.push_str(&format!("  {v}"));
                } else {
                    line.push_str(&format!("  {v:<w$}", w = key_w[k]));
                }
            }
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// inferno's diff-folded lines (`stack before after`) for two profiles: stacks matched by
/// their names (command and function names), so two builds compare.
pub fn differential_folded(old: &Profile, new: &Profile) -> io::Result<Vec<u8>> {
    let before = crate::export::folded::lines(old).join("\n");
    let after = crate::export::folded::lines(new).join("\n");
    let mut out = Vec::new();
    inferno::differential::from_readers(
        inferno::differential::Options::default(),
        before.as_bytes(),
        after.as_bytes(),
        &mut out,
    )
    .map_err(io::Error::other)?;
    Ok(out)
}

/// A differential flamegraph (SVG): the new profile's stacks, red where they grew and blue
/// where they shrank against the old one, as inferno draws diff-folded input.
pub fn differential_flamegraph(
    old: &Profile,
    new: &Profile,
    title: &str,
    w: impl Write,
) -> io::Result<()> {
    let folded = differential_folded(old, new)?;
    let text = String::from_utf8_lossy(&folded);
    if text.trim().is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the profiles have no samples to draw",
        ));
    }
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = title.to_string();
    opts.count_name = "samples".to_string();
    inferno::flamegraph::from_lines(&mut opts, text.lines(), w).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;

    #[test]
    fn computations_follow_perf_diff() {
        let old = sample_profile();
        let mut new = sample_profile();
        // The new profile spends half the hot_loop samples' period.
        let hot = new.funcs.iter().position(|f| f.name == "hot_loop").unwrap() as u32;
        let is_hot: Vec<bool> = new
            .samples
            .iter()
            .map(|s| {
                let leaf = new.stack_frames(s.stack).next().unwrap();
                new.frames[leaf as usize].func == hot
            })
            .collect();
        for (s, hot) in new.samples.iter_mut().zip(is_hot) {
            if hot {
                s.period /= 2;
            }
        }
        let d = &diff(&[&old, &new], &Options::default())[0];
        let row = |name: &str| d.rows.iter().find(|r| r.keys[1].ends_with(name)).unwrap();
        let h = row("hot_loop");
        // old: 70 of 100 samples; new: 35 of 65 periods.
        assert!((h.percents[0].unwrap() - 70.0).abs() < 1e-9);
        assert!((h.value(1, Compute::DeltaAbs).unwrap() - (3500.0 / 65.0 - 70.0)).abs() < 1e-9);
        assert!((h.value(1, Compute::Ratio).unwrap() - 0.5).abs() < 1e-12);
        let w = h.value(1, Compute::Wdiff(1, 2)).unwrap();
        assert_eq!(w as i64, (70 * 125_000 * 2 - 70 * 250_000) as i64);
        assert_eq!(d.rows[0].keys[1], "[.] hot_loop", "largest |delta| first");
        assert_eq!(Compute::parse("wdiff:3,4"), Ok(Compute::Wdiff(3, 4)));
        assert!(Compute::parse("wdiff").is_err());
        assert!(Compute::parse("nope").unwrap_err().contains("delta-abs"));
    }

    #[test]
    fn diff_folded_has_both_counts() {
        let old = sample_profile();
        let mut new = sample_profile();
        new.samples.truncate(50);
        let text = String::from_utf8(differential_folded(&old, &new).unwrap()).unwrap();
        assert!(text.contains("app;main;work;hot_loop 70 35"), "{text}");
    }
}
