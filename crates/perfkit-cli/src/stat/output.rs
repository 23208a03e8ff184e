//! Printing counts in perf's layouts: the text table, `-x SEP` CSV and `-j` JSON.

use perfkit_engine::stat::{Row, State, is_percent_metric, rel_stddev_pct};
use serde_json::{Map, Value as Json};
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
        State::Counted if r.unit.is_empty() => group_digits(r.value.round(), big_num),
        State::Counted => format!("{:.2}", r.value),
    }
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

/// The text table row, perf style.
pub fn text_row(r: &Row, interval: Option<f64>, big_num: bool, out: &mut String) {
    if let Some(t) = interval {
        let _ = write!(out, "{t:>16.9} ");
    }
    if !r.label.is_empty() {
        match r.ncpus {
            Some(n) => {
                let _ = write!(out, "{:<12}{n:>8} ", r.label);
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
            None => {
                let _ = write!(out, "{:<10}", r.label);
            }
        }
    }
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
    if let Some((v, unit)) = &r.metric {
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
    if let Some((mean, sd)) = r.stats()
        && r.state == State::Counted
    {
        let _ = write!(out, "  ( +- {:>5.2}% )", rel_stddev_pct(mean, sd));
    }
    if r.state == State::Counted && r.pcnt_running() < 100.0 {
        let _ = write!(out, "  ({:.2}%)", r.pcnt_running());
    }
    let trimmed = out.trim_end().len();
    out.truncate(trimmed);
    out.push('\n');
}

/// The CSV row, in perf's field order.
pub fn csv_row(r: &Row, interval: Option<f64>, sep: &str, out: &mut String) {
    let mut f: Vec<String> = Vec::new();
    if let Some(t) = interval {
        f.push(format!("{t:.9}"));
    }
    if !r.label.is_empty() {
        f.push(r.label.clone());
    }
    if let Some(n) = r.ncpus {
        f.push(n.to_string());
    }
    f.push(match r.state {
        State::Counted if r.is_clock() => format!("{:.2}", r.value / 1e6),
        State::Counted if r.unit.is_empty() => format!("{:.0}", r.value),
        State::Counted => format!("{:.2}", r.value),
        _ => display_value(r, false),
    });
    f.push(display_unit(r).to_string());
    f.push(match &r.cgroup {
        Some(cg) => format!("{}{sep}{cg}", r.event),
        None => r.event.clone(),
    });
    if let Some((mean, sd)) = r.stats() {
        f.push(format!("{:.2}%", rel_stddev_pct(mean, sd)));
    }
    f.push(r.running.to_string());
    f.push(format!("{:.2}", r.pcnt_running()));
    match &r.metric {
        Some((v, unit)) => {
            f.push(format!("{v:.3}"));
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

/// The JSON object for a row (one line). Field names are documented in the README.
pub fn json_row(r: &Row, interval: Option<f64>) -> Json {
    let mut m = Map::new();
    if let Some(t) = interval {
        m.insert("interval".into(), Json::from(t));
    }
    if !r.label.is_empty() {
        m.insert(r.label_kind.into(), Json::from(r.label.clone()));
    }
    if let Some(n) = r.ncpus {
        m.insert("cpus".into(), Json::from(n));
    }
    let counter_value = match r.state {
        State::Counted if r.is_clock() => format!("{:.6}", r.value / 1e6),
        State::Counted => format!("{:.6}", r.value),
        _ => display_value(r, false),
    };
    m.insert("counter-value".into(), Json::from(counter_value));
    m.insert("unit".into(), Json::from(display_unit(r)));
    m.insert("event".into(), Json::from(r.event.clone()));
    if let Some(cg) = &r.cgroup {
        m.insert("cgroup".into(), Json::from(cg.clone()));
    }
    if let Some((mean, sd)) = r.stats() {
        let scale = if r.is_clock() { 1e6 } else { 1.0 };
        m.insert("variance".into(), Json::from(rel_stddev_pct(mean, sd)));
        m.insert("mean".into(), Json::from(mean / scale));
        m.insert("stddev".into(), Json::from(sd / scale));
        m.insert(
            "runs".into(),
            Json::from(r.runs.iter().map(|v| v / scale).collect::<Vec<_>>()),
        );
    }
    m.insert("event-runtime".into(), Json::from(r.running));
    m.insert("pcnt-running".into(), Json::from(r.pcnt_running()));
    if let Some((v, unit)) = &r.metric {
        m.insert("metric-value".into(), Json::from(*v));
        m.insert("metric-unit".into(), Json::from(unit.clone()));
    }
    Json::Object(m)
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
