//! Printing counts in perf's layouts: the text table, `-x SEP` CSV and `-j` JSON.

use perfkit::sys;
use serde_json::{Map, Value as Json};
use std::fmt::Write as _;

/// How a value came out.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    /// Counted (possibly scaled).
    Counted,
    /// Opened but never ran.
    NotCounted,
    /// The machine lacks the event.
    NotSupported,
    /// Opening failed (permission ...).
    Failed,
}

/// One line of output: one event in one aggregation bucket.
#[derive(Clone, Debug)]
pub struct Row {
    /// Bucket label (`CPU0`, `S0-D0-C0`, `bash-1045`), empty when aggregated.
    pub label: String,
    /// Bucket kind for JSON (`cpu`, `core`, `socket`, `node`, `thread`, `cgroup`).
    pub label_kind: &'static str,
    /// CPUs in the bucket (per-core/socket/node).
    pub ncpus: Option<usize>,
    /// Event name as printed.
    pub event: String,
    /// The attr (to recognize clocks and metrics).
    pub attr: sys::perf_event_attr,
    /// Unit after scaling.
    pub unit: String,
    /// Whether a cgroup name follows the event name.
    pub cgroup: Option<String>,
    /// State.
    pub state: State,
    /// Scaled value (mean over runs with -r).
    pub value: f64,
    /// Sum of time_running (ns).
    pub running: u64,
    /// Sum of time_enabled (ns).
    pub enabled: u64,
    /// Every run's value (-r).
    pub runs: Vec<f64>,
    /// Shadow metric: value and unit.
    pub metric: Option<(f64, String)>,
}

impl Row {
    /// Percentage of enabled time the event ran.
    pub fn pcnt_running(&self) -> f64 {
        if self.enabled == 0 {
            100.0
        } else {
            100.0 * self.running as f64 / self.enabled as f64
        }
    }

    /// Mean and standard deviation of the mean (Welford), when there are several runs.
    pub fn stats(&self) -> Option<(f64, f64)> {
        mean_stddev_of_mean(&self.runs)
    }

    /// Whether this is a clock (task-clock, cpu-clock): printed in msec.
    pub fn is_clock(&self) -> bool {
        is_clock(&self.attr)
    }

    fn display_unit(&self) -> &str {
        if self.is_clock() { "msec" } else { &self.unit }
    }

    fn display_value(&self, big_num: bool) -> String {
        match self.state {
            State::NotCounted => "<not counted>".into(),
            State::NotSupported => "<not supported>".into(),
            State::Failed => "<not permitted>".into(),
            State::Counted if self.is_clock() => format!("{:.2}", self.value / 1e6),
            State::Counted if self.unit.is_empty() => group_digits(self.value.round(), big_num),
            State::Counted => format!("{:.2}", self.value),
        }
    }
}

/// Mean and standard deviation of the mean of `xs`, computed with Welford's method.
pub fn mean_stddev_of_mean(xs: &[f64]) -> Option<(f64, f64)> {
    if xs.len() < 2 {
        return None;
    }
    let (mut n, mut mean, mut m2) = (0f64, 0f64, 0f64);
    for &x in xs {
        n += 1.0;
        let d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
    }
    let variance = m2 / (n - 1.0);
    Some((mean, (variance / n).sqrt()))
}

/// Relative standard deviation of the mean, in percent (perf's `( +- x% )`).
pub fn rel_stddev_pct(mean: f64, stddev: f64) -> f64 {
    if mean == 0.0 {
        0.0
    } else {
        100.0 * stddev / mean
    }
}

/// Whether `attr` is task-clock or cpu-clock.
pub fn is_clock(attr: &sys::perf_event_attr) -> bool {
    attr.type_ == sys::PERF_TYPE_SOFTWARE
        && (attr.config == sys::PERF_COUNT_SW_TASK_CLOCK
            || attr.config == sys::PERF_COUNT_SW_CPU_CLOCK)
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

/// Fill in shadow metrics for `rows`, which all belong to one bucket.
///
/// `elapsed_ns` is the wall time of the measurement (for `CPUs utilized`).
pub fn compute_metrics(rows: &mut [Row], elapsed_ns: f64) {
    let find = |rows: &[Row], ty: u32, config: u64| -> Option<f64> {
        rows.iter()
            .find(|r| {
                r.state == State::Counted
                    && r.attr.type_ == ty
                    && (r.attr.config & sys::PERF_HW_EVENT_MASK) == config
            })
            .map(|r| r.value)
    };
    let clock = rows
        .iter()
        .find(|r| r.is_clock() && r.state == State::Counted)
        .map(|r| r.value);
    let hw = |rows: &[Row], id: u64| find(rows, sys::PERF_TYPE_HARDWARE, id);
    let cycles = hw(rows, sys::PERF_COUNT_HW_CPU_CYCLES);
    let branches = hw(rows, sys::PERF_COUNT_HW_BRANCH_INSTRUCTIONS);
    let cache_refs = hw(rows, sys::PERF_COUNT_HW_CACHE_REFERENCES);
    let stalled_fe = hw(rows, sys::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND);
    let stalled_be = hw(rows, sys::PERF_COUNT_HW_STALLED_CYCLES_BACKEND);
    let cache_access = |rows: &[Row], config: u64| {
        // The access count for a miss event: same cache and op, result ACCESS.
        find(rows, sys::PERF_TYPE_HW_CACHE, config & 0xffff)
    };
    let snapshot: Vec<Row> = rows.to_vec();
    for r in rows.iter_mut() {
        if r.state != State::Counted {
            continue;
        }
        let a = &r.attr;
        let pct = |num: f64, den: Option<f64>| den.filter(|d| *d > 0.0).map(|d| 100.0 * num / d);
        r.metric = if r.is_clock() {
            (elapsed_ns > 0.0).then(|| (r.value / elapsed_ns, "CPUs utilized".to_string()))
        } else if a.type_ == sys::PERF_TYPE_HARDWARE {
            match a.config & sys::PERF_HW_EVENT_MASK {
                sys::PERF_COUNT_HW_CPU_CYCLES => clock
                    .filter(|c| *c > 0.0)
                    .map(|c| (r.value / c, "GHz".to_string())),
                sys::PERF_COUNT_HW_INSTRUCTIONS => {
                    let stalled = match (stalled_fe, stalled_be) {
                        (Some(f), Some(b)) => Some(f.max(b)),
                        (f, b) => f.or(b),
                    };
                    match (stalled, cycles) {
                        (Some(s), _) if r.value > 0.0 => {
                            Some((s / r.value, "stalled cycles per insn".to_string()))
                        }
                        (_, Some(c)) if c > 0.0 => {
                            Some((r.value / c, "insn per cycle".to_string()))
                        }
                        _ => None,
                    }
                }
                sys::PERF_COUNT_HW_BRANCH_MISSES => {
                    pct(r.value, branches).map(|p| (p, "of all branches".to_string()))
                }
                sys::PERF_COUNT_HW_CACHE_MISSES => {
                    pct(r.value, cache_refs).map(|p| (p, "of all cache refs".to_string()))
                }
                sys::PERF_COUNT_HW_STALLED_CYCLES_FRONTEND => {
                    pct(r.value, cycles).map(|p| (p, "frontend cycles idle".to_string()))
                }
                sys::PERF_COUNT_HW_STALLED_CYCLES_BACKEND => {
                    pct(r.value, cycles).map(|p| (p, "backend cycles idle".to_string()))
                }
                _ => rate(r.value, clock),
            }
        } else if a.type_ == sys::PERF_TYPE_HW_CACHE && (a.config >> 16) & 0xff == 1 {
            let names = [
                "L1-dcache",
                "L1-icache",
                "LL-cache",
                "dTLB",
                "iTLB",
                "branch",
                "node",
            ];
            let cache = names.get((a.config & 0xff) as usize).unwrap_or(&"cache");
            pct(r.value, cache_access(&snapshot, a.config))
                .map(|p| (p, format!("of all {cache} accesses")))
        } else {
            rate(r.value, clock)
        };
    }
}

fn rate(value: f64, clock_ns: Option<f64>) -> Option<(f64, String)> {
    let secs = clock_ns.filter(|c| *c > 0.0)? / 1e9;
    let per_sec = value / secs;
    Some(if per_sec >= 1e9 {
        (per_sec / 1e9, "G/sec".into())
    } else if per_sec >= 1e6 {
        (per_sec / 1e6, "M/sec".into())
    } else if per_sec >= 1e3 {
        (per_sec / 1e3, "K/sec".into())
    } else {
        (per_sec, "/sec".into())
    })
}

fn is_percent_metric(unit: &str) -> bool {
    unit.starts_with("of all") || unit.ends_with("cycles idle")
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
        r.display_value(big_num),
        r.display_unit(),
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
        _ => r.display_value(false),
    });
    f.push(r.display_unit().to_string());
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
        _ => r.display_value(false),
    };
    m.insert("counter-value".into(), Json::from(counter_value));
    m.insert("unit".into(), Json::from(r.display_unit()));
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
    fn welford_matches_hand_computation() {
        // mean 4, sample variance ((1+1+1+1)+(0)...) computed by hand:
        let xs = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0];
        let (mean, sd) = mean_stddev_of_mean(&xs).unwrap();
        assert!((mean - 5.0).abs() < 1e-12);
        // sum of squared deviations = 32, variance = 32/7, stddev of mean = sqrt(32/7/8)
        assert!((sd - (32.0f64 / 7.0 / 8.0).sqrt()).abs() < 1e-12);
        assert_eq!(mean_stddev_of_mean(&[1.0]), None);
    }

    #[test]
    fn digits() {
        assert_eq!(group_digits(1234567.0, true), "1,234,567");
        assert_eq!(group_digits(123.0, true), "123");
        assert_eq!(group_digits(1234567.0, false), "1234567");
    }
}
