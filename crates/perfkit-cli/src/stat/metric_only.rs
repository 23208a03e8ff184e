//! `--metric-only`: one column per metric instead of one line per count, as perf 6.1
//! prints it in its text, CSV and JSON layouts.
//!
//! As perf, rates (`/sec`) and `CPUs utilized` are left out (they describe the counts, not
//! the workload), and an `of all ...` unit is prefixed with its event's name.

use super::output::{interval_stamp, text_label};
use perfkit_engine::stat::{Aggr, Row, State, is_percent_metric};
use std::fmt::Write as _;

/// perf's column width (`METRIC_ONLY_LEN`).
const COLUMN: usize = 20;

/// The layout.
#[derive(Clone, Copy)]
pub enum Layout<'a> {
    /// The text table.
    Text,
    /// `-x SEP`.
    Csv(&'a str),
    /// `-j`.
    Json,
}

fn wanted(unit: &str) -> bool {
    !(unit.contains("/sec") || unit.contains("CPUs utilized"))
}

/// The column header of a row's metric, if it has a column.
fn header(r: &Row) -> Option<String> {
    let (_, unit) = r.metric.as_ref()?;
    if !wanted(unit) {
        return None;
    }
    Some(if unit.starts_with("of all") {
        format!("{} {unit}", r.event)
    } else {
        unit.clone()
    })
}

/// What a row puts in the metric line.
enum Cell {
    /// Its metric's value.
    Value(String),
    /// An empty column: perf gives one to every count that did not run.
    Empty,
    /// Nothing (no metric, or one that has no column).
    None,
}

fn cell(r: &Row) -> Cell {
    if r.state != State::Counted {
        return Cell::Empty;
    }
    match &r.metric {
        Some((v, unit)) if wanted(unit) => Cell::Value(if let Some(d) = r.metric_decimals {
            // A -M metric: perf's "%8.1f" (with a ScaleUnit) or "%8.2f".
            format!("{v:.d$}")
        } else if is_percent_metric(unit) {
            format!("{v:.2}%")
        } else {
            format!("{v:.2}")
        }),
        _ => Cell::None,
    }
}

/// Rows grouped by bucket, in the order buckets first appear.
fn buckets(rows: &[Row]) -> Vec<Vec<&Row>> {
    let mut out: Vec<Vec<&Row>> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|b| b[0].label == r.label) {
            Some(b) => b.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

/// perf's indent before the headers in the text layout, by aggregation.
fn indent(aggr: Aggr) -> usize {
    match aggr {
        Aggr::Core | Aggr::Thread | Aggr::Cache(_) => 24,
        Aggr::Die => 18,
        Aggr::Socket => 12,
        Aggr::Cpu => 6,
        _ => 0,
    }
}

/// The start of perf's `-I` header, before the metric columns.
fn interval_head(aggr: Aggr) -> &'static str {
    match aggr {
        Aggr::Cpu => "#           time CPU    ",
        Aggr::Core => "#           time core            cpus",
        Aggr::Cache(_) => "#           time cache                    cpus",
        Aggr::Die => "#           time die          cpus",
        Aggr::Socket => "#           time socket cpus",
        Aggr::Node => "#           time node   cpus",
        Aggr::Thread => "#           time             comm-pid",
        _ => "#           time",
    }
}

fn csv_aggr_header(aggr: Aggr) -> &'static str {
    match aggr {
        Aggr::Core => "core,cpus,",
        Aggr::Die => "die,cpus",
        Aggr::Socket => "socket,cpus",
        Aggr::Cache(_) => "cache,cpus,",
        Aggr::Cpu => "cpu,",
        Aggr::Thread => "comm-pid,",
        _ => "",
    }
}

/// The header line: printed once before the totals, or before the first interval.
pub fn headers(rows: &[Row], aggr: Aggr, interval: bool, layout: Layout<'_>, out: &mut String) {
    let cols: Vec<String> = buckets(rows)
        .first()
        .map(|b| b.iter().filter_map(|r| header(r)).collect())
        .unwrap_or_default();
    match layout {
        Layout::Text => {
            if interval {
                out.push_str(interval_head(aggr));
                out.push(' ');
            } else {
                out.push_str(&" ".repeat(indent(aggr)));
            }
            for c in &cols {
                let _ = write!(out, "{c:>COLUMN$} ");
            }
        }
        Layout::Csv(sep) => {
            if interval {
                out.push_str(" time");
                out.push_str(sep);
            }
            out.push_str(&csv_aggr_header(aggr).replace(',', sep));
            for c in &cols {
                let _ = write!(out, "{c}{sep}");
            }
        }
        Layout::Json => {
            let units: Vec<String> = cols
                .iter()
                .map(|c| format!("\"unit\" : {}", json_str(c)))
                .collect();
            let _ = write!(out, "{{{}}}", units.join(", "));
        }
    }
    out.push('\n');
}

fn json_str(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// One line per bucket with the metric values (`secs`: the interval's timestamp).
pub fn lines(rows: &[Row], secs: Option<f64>, layout: Layout<'_>, out: &mut String) {
    let bs = buckets(rows);
    if bs.is_empty() {
        out.push('\n');
    }
    for b in bs {
        let first = b[0];
        match layout {
            Layout::Text => {
                if let Some(t) = secs {
                    let _ = write!(out, "{t:>16.9} ");
                }
                text_label(first, out);
                for r in &b {
                    match cell(r) {
                        Cell::Value(v) => {
                            let width = header(r).map_or(COLUMN, |h| COLUMN.max(h.len() + 1));
                            let _ = write!(out, "{v:>width$} ");
                        }
                        Cell::Empty => {
                            let _ = write!(out, "{:COLUMN$} ", "");
                        }
                        Cell::None => {}
                    }
                }
            }
            Layout::Csv(sep) => {
                if let Some(t) = secs {
                    let _ = write!(out, "{}{sep}", interval_stamp(t));
                }
                if !first.label.is_empty() {
                    let _ = write!(out, "{}{sep}", first.label);
                }
                for r in &b {
                    match cell(r) {
                        Cell::Value(v) => {
                            let _ = write!(out, "{v}{sep}");
                        }
                        Cell::Empty => out.push_str(sep),
                        Cell::None => {}
                    }
                }
            }
            Layout::Json => {
                // perf: the interval (or bucket) object, then one object per column.
                if let Some(t) = secs {
                    let _ = write!(out, "{{\"interval\" : {t:.9}}}");
                }
                if !first.label.is_empty() {
                    let label = match first.label_kind {
                        "cpu" => first.label.trim_start_matches("CPU").to_string(),
                        _ => first.label.clone(),
                    };
                    let _ = write!(out, "{{\"{}\" : {}}}", first.label_kind, json_str(&label));
                }
                for r in &b {
                    match cell(r) {
                        Cell::Value(v) => {
                            let _ = write!(out, "{{\"metric-value\" : {}}}", json_str(&v));
                        }
                        Cell::Empty => out.push_str("{\"metric-value\" : \"\"}"),
                        Cell::None => {}
                    }
                }
            }
        }
        out.push('\n');
    }
}
