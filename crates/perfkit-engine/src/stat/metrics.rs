//! Shadow metrics (`CPUs utilized`, `GHz`, `insn per cycle`, `of all branches`, rates)
//! and the statistics of repeated runs, as perf computes them.

use super::{Row, State};
use perfkit::sys;

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

/// Whether a metric unit is a percentage (printed with `%`).
pub fn is_percent_metric(unit: &str) -> bool {
    unit.starts_with("of all") || unit.ends_with("cycles idle")
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
}
