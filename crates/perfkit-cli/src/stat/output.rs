//! Printing counts in perf's layouts: the text table, `-x SEP` CSV and `-j` JSON.

use perfkit_engine::stat::{Aggr, Row, State, Tool, is_percent_metric, rel_stddev_pct};
use perfkit_events::metrics::csv_number;
use std::fmt::Write as _;

fn display_unit(r: &Row) -> &str {
    if r.is_clock() { "msec" } else { &r.unit }
}

fn display_value(r: &Row, big_num: bool) -> String {
    match r.state {
        State::NotCounted => "<not counted>".into(),
        State::NotSupported => "<not supported>".into(),
        State::Failed => "<not permitted>".into(),
        State::Counted if r.is_clock() => format!("{:.2}", r.value / 1e6),
        State::Counted if integral(r) => group_digits(r.value.round(), big_num),
        State::Counted => format!("{:.2}", r.value),
    }
}

/// perf prints counts without decimals unless the event is scaled by a fraction: events
/// without a unit, and its tool events (whole nanoseconds).
fn integral(r: &Row) -> bool {
    r.unit.is_empty() || Tool::of(&r.attr).is_some()
}

fn group_digits(v: f64, big_num: bool) -> String {
    let s = format!("{v:.0}");
    if !big_num {
        return s;
    }
    let (sign, digits) = s.strip_prefix('-').map_or(("", s.as_str()), |d| ("-", d));
    let mut out = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    format!("{sign}{out}")
}

/// perf's `-I` header line of the text layout, with the label columns of `aggr`.
pub fn interval_header(aggr: Aggr) -> &'static str {
    match aggr {
        Aggr::Cpu => "#           time CPU                    counts unit events",
        Aggr::Core => "#           time core            cpus             counts unit events",
        Aggr::Die => "#           time die          cpus             counts unit events",
        Aggr::Socket => "#           time socket cpus             counts unit events",
        Aggr::Node => "#           time node   cpus             counts unit events",
        Aggr::Cache(_) => {
            "#           time cache                    cpus             counts unit events"
        }
        Aggr::Thread => "#           time             comm-pid                  counts unit events",
        _ => "#           time             counts unit events",
    }
}

/// An interval's timestamp as perf prints it (`%6lu.%09lu`).
pub fn interval_stamp(secs: f64) -> String {
    format!("{secs:>16.9}")
}

/// perf's `get_precision`: the decimals that show the first significant digit of `sd`.
pub fn precision(sd: f64) -> usize {
    if sd > 1.0 || sd <= 0.0 {
        0
    } else {
        (-sd.log10()).ceil() as usize
    }
}

/// `--table`: every run's elapsed time, its distance from the mean and a bar of `#`s (one
/// more for each 5% away from the mean), then the `# Final result:` heading, as perf.
pub fn run_table(elapsed: &[f64], mean: f64, p: usize, out: &mut String) {
    let first = format!(" {mean:>17.p$}");
    let indent = first.len() - first.trim_start().len();
    let _ = writeln!(out, "{:indent$}# Table of individual measurements:", "");
    for &run in elapsed {
        // perf: 1 + |(int)(100 * (run - mean) / run) / 5|, in C's integer arithmetic.
        let pct = if run > 0.0 {
            (100.0 * (run - mean) / run) as i64
        } else {
            0
        };
        let bars = 1 + (pct / 5).unsigned_abs() as usize;
        let _ = writeln!(
            out,
            " {run:>17.p$} ({:+.p$}) {}",
            run - mean,
            "#".repeat(bars)
        );
    }
    let _ = writeln!(out, "\n{:indent$}# Final result:", "");
}

/// A row's bucket label in the text layout, as perf pads it.
pub fn text_label(r: &Row, out: &mut String) {
    if r.label.is_empty() {
        return;
    }
    match r.ncpus {
        // perf: the last id left-aligned in 8 columns (core, die) or 5 (socket,
        // node), a space, the number of CPUs in 4.
        // perf 6.5: the cache label left-aligned in 24 columns.
        Some(n) if r.label_kind == "cache" => {
            let _ = write!(out, "{:<24} {n:>4} ", r.label);
        }
        Some(n) => {
            let (cut, width) = match r.label_kind {
                "core" => (r.label.rfind('C').map_or(0, |i| i + 1), 8),
                "die" => (r.label.rfind('D').map_or(0, |i| i + 1), 8),
                _ => (1.min(r.label.len()), 5),
            };
            let (head, id) = r.label.split_at(cut);
            let _ = write!(out, "{head}{id:<width$} {n:>4} ");
        }
        // perf: the command right-aligned in 16 columns, `-`, the tid left-aligned in 8.
        None if r.label_kind == "thread" => match r.label.rsplit_once('-') {
            Some((comm, tid)) => {
                let _ = write!(out, "{comm:>16}-{tid:<8} ");
            }
            None => {
                let _ = write!(out, "{:>25} ", r.label);
            }
        },
        // perf: `CPU%-7d` and the separator.
        None => {
            let _ = write!(out, "{:<10} ", r.label);
        }
    }
}

/// The text table row, perf style.
pub fn text_row(r: &Row, interval: Option<f64>, big_num: bool, out: &mut String) {
    if let Some(t) = interval {
        let _ = write!(out, "{t:>16.9} ");
    }
    text_label(r, out);
    let name = match &r.cgroup {
        Some(cg) => format!("{} {cg}", r.event),
        None => r.event.clone(),
    };
    let _ = write!(
        out,
        "{:>18} {:<4} {:<32}",
        display_value(r, big_num),
        display_unit(r),
        name
    );
    if let (Some((v, unit)), Some(d)) = (&r.metric, r.metric_decimals) {
        // A -M metric as perf's generic_metric prints it: "%8.Nf", then the unit padded
        // to perf's METRIC_LEN (35) after " # ".
        let value = format!("{v:>8.d$}");
        let pad = 35usize.saturating_sub(3 + value.len() + 1);
        let _ = write!(out, " # {value} {unit:<pad$}");
    } else if let Some((v, unit)) = &r.metric {
        if is_percent_metric(unit) {
            let _ = write!(out, " # {v:>7.2}% {unit:<22}");
        } else if unit.contains("per") {
            let _ = write!(out, " # {v:>8.2}  {unit:<21}");
        } else {
            let _ = write!(out, " # {v:>8.3} {unit:<22}");
        }
    } else if r.stats().is_some() || (r.state == State::Counted && r.pcnt_running() < 100.0) {
        let _ = write!(out, "{:34}", "");
    }
    // perf prints the deviation only when there is one.
    if let Some((mean, sd)) = r.stats()
        && r.state == State::Counted
        && rel_stddev_pct(mean, sd) != 0.0
    {
        let _ = write!(out, "   ( +-{:>6.2}% )", rel_stddev_pct(mean, sd));
    }
    if r.state == State::Counted && r.pcnt_running() < 100.0 {
        let _ = write!(out, "  ({:.2}%)", r.pcnt_running());
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('\n');
}

/// The CSV row, in perf's field order.
/// `prefix` is the interval column when there is one (`     1.000123456` or perf's
/// `summary`); `runs > 1` adds the relative standard deviation column.
pub fn csv_row(r: &Row, prefix: Option<&str>, runs: usize, sep: &str, out: &mut String) {
    let mut f: Vec<String> = Vec::new();
    if let Some(p) = prefix {
        f.push(p.to_string());
    }
    if !r.label.is_empty() {
        f.push(r.label.clone());
    }
    if let Some(n) = r.ncpus {
        f.push(n.to_string());
    }
    f.push(match r.state {
        State::Counted if r.is_clock() => format!("{:.2}", r.value / 1e6),
        State::Counted if integral(r) => format!("{:.0}", r.value),
        State::Counted => format!("{:.2}", r.value),
        _ => display_value(r, false),
    });
    f.push(display_unit(r).to_string());
    f.push(match &r.cgroup {
        Some(cg) => format!("{}{sep}{cg}", r.event),
        None => r.event.clone(),
    });
    if runs > 1 {
        let pct = r.stats().map_or(0.0, |(m, sd)| rel_stddev_pct(m, sd));
        f.push(format!("{pct:.2}%"));
    }
    f.push(r.running.to_string());
    f.push(format!("{:.2}", r.pcnt_running()));
    match &r.metric {
        Some((v, unit)) => {
            f.push(match r.metric_decimals {
                Some(d) => csv_number(*v, d),
                None => format!("{v:.3}"),
            });
            f.push(unit.clone());
        }
        None => {
            f.push(String::new());
            f.push(String::new());
        }
    }
    out.push_str(&f.join(sep));
    out.push('\n');
}

/// The JSON line for a row, written as perf 6.1 writes it: its keys in its order,
/// `"key" : value` pairs, `%f` numbers, and `metric-value`/`metric-unit` on every row
/// (`0.000000` and `(null)` where an event has no metric, an empty unit where it did not
/// count). `runs > 1` adds `variance` (the relative standard deviation in percent).
pub fn json_row(r: &Row, interval: Option<f64>, runs: usize) -> String {
    let s = |v: &str| serde_json::to_string(v).unwrap_or_else(|_| "\"\"".into());
    let mut f: Vec<(&str, String)> = Vec::new();
    if let Some(t) = interval {
        f.push(("interval", format!("{t:.9}")));
    }
    if !r.label.is_empty() {
        // perf names a CPU by its number alone.
        let label = match r.label_kind {
            "cpu" => r.label.trim_start_matches("CPU").to_string(),
            _ => r.label.clone(),
        };
        f.push((r.label_kind, s(&label)));
    }
    if let Some(n) = r.ncpus {
        f.push(("aggregate-number", n.to_string()));
    }
    let counter_value = match r.state {
        State::Counted if r.is_clock() => format!("{:.6}", r.value / 1e6),
        State::Counted => format!("{:.6}", r.value),
        _ => display_value(r, false),
    };
    f.push(("counter-value", s(&counter_value)));
    f.push(("unit", s(display_unit(r))));
    f.push(("event", s(&r.event)));
    if let Some(cg) = &r.cgroup {
        f.push(("cgroup", s(cg)));
    }
    if runs > 1 {
        let pct = r.stats().map_or(0.0, |(m, sd)| rel_stddev_pct(m, sd));
        f.push(("variance", format!("{pct:.2}")));
    }
    f.push(("event-runtime", r.running.to_string()));
    f.push(("pcnt-running", format!("{:.2}", r.pcnt_running())));
    let (value, unit) = match (&r.metric, r.state) {
        (Some((v, unit)), State::Counted) => (*v, unit.as_str()),
        (_, State::Counted) => (0.0, "(null)"),
        _ => (0.0, ""),
    };
    f.push(("metric-value", format!("{value:.6}")));
    f.push(("metric-unit", s(unit)));
    let body: Vec<String> = f
        .into_iter()
        .map(|(k, v)| format!("\"{k}\" : {v}"))
        .collect();
    format!("{{{}}}", body.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits() {
        assert_eq!(group_digits(1234567.0, true), "1,234,567");
        assert_eq!(group_digits(123.0, true), "123");
        assert_eq!(group_digits(1234567.0, false), "1234567");
    }
}
