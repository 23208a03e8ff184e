//! perf's `--time` argument: the samples to keep, as perf 6.1 takes it.
//!
//! * `START,STOP`: absolute timestamps in seconds (`2881.06,2881.1`, as `perf script`
//!   prints them); either side may be empty (from the start, to the end);
//! * `P%/N`: the `N`th slice of `P` percent of the recording (`10%/2`: from 10% to 20%);
//! * `A%-B%`: from `A` to `B` percent of the recording;
//!
//! several percent ranges may be joined with commas (`0%-10%,30%-40%`). Percentages are of
//! the span from the first to the last sample.

use std::fmt;

/// A `--time` argument perf would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeSpecError(String);

impl fmt::Display for TimeSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid time string `{}`", self.0)
    }
}

impl std::error::Error for TimeSpecError {}

/// Seconds (`2881.065551`) as nanoseconds.
fn secs(s: &str) -> Option<u64> {
    let (whole, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let w: u64 = whole.parse().ok()?;
    let f: u64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<9}").parse().ok()?
    };
    w.checked_mul(1_000_000_000)?.checked_add(f)
}

fn pct(s: &str) -> Option<f64> {
    let v: f64 = s.strip_suffix('%')?.parse().ok()?;
    (0.0..=100.0).contains(&v).then_some(v)
}

/// The inclusive `[start, end]` ranges (ns) that `spec` selects in a recording whose samples
/// run from `first` to `last`.
pub fn parse(spec: &str, first: u64, last: u64) -> Result<Vec<(u64, u64)>, TimeSpecError> {
    let err = || TimeSpecError(spec.to_string());
    let span = last.saturating_sub(first) as f64;
    let at = |p: f64| first + (span * p / 100.0) as u64;
    if spec.contains('%') {
        let mut out = Vec::new();
        for part in spec.split(',') {
            if let Some((p, n)) = part.split_once('/') {
                let p = pct(p).ok_or_else(err)?;
                let n: u32 = n.parse().map_err(|_| err())?;
                if n == 0 || p <= 0.0 || p * f64::from(n) > 100.0 + 1e-9 {
                    return Err(err());
                }
                out.push((at(p * f64::from(n - 1)), at(p * f64::from(n))));
            } else if let Some((a, b)) = part.split_once('-') {
                let (a, b) = (pct(a).ok_or_else(err)?, pct(b).ok_or_else(err)?);
                if a > b {
                    return Err(err());
                }
                out.push((at(a), at(b)));
            } else {
                return Err(err());
            }
        }
        return Ok(out);
    }
    let (a, b) = spec.split_once(',').ok_or_else(err)?;
    let a = if a.trim().is_empty() {
        0
    } else {
        secs(a.trim()).ok_or_else(err)?
    };
    let b = if b.trim().is_empty() {
        u64::MAX
    } else {
        secs(b.trim()).ok_or_else(err)?
    };
    if a > b {
        return Err(err());
    }
    Ok(vec![(a, b)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_and_percent_forms() {
        assert_eq!(
            parse("2881.06,2881.1", 0, 0).unwrap(),
            [(2_881_060_000_000, 2_881_100_000_000)]
        );
        assert_eq!(parse(",5", 0, 0).unwrap(), [(0, 5_000_000_000)]);
        assert_eq!(parse("5,", 0, 0).unwrap(), [(5_000_000_000, u64::MAX)]);
        assert_eq!(parse("10%/2", 1000, 2000).unwrap(), [(1100, 1200)]);
        assert_eq!(
            parse("0%-10%,50%-100%", 1000, 2000).unwrap(),
            [(1000, 1100), (1500, 2000)]
        );
        for bad in [
            "x",
            "5",
            "3,2",
            "10%/0",
            "60%/2",
            "20%-10%",
            "1.0000000001,",
        ] {
            assert!(parse(bad, 0, 100).is_err(), "{bad}");
        }
    }
}
