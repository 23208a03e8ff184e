//! perf's `--time` argument: the samples to keep, as perf 6.1's `report` and `script` take it
//! (`tools/perf/util/time-utils.c`), accepting and refusing the same strings.
//!
//! * `START,STOP`: absolute timestamps in seconds with up to nine decimals (`2881.06,2881.1`,
//!   as `perf script` prints them); either side may be empty (from the start, to the end;
//!   `0` is empty too); several ranges are separated by spaces (`"1.5,1.6 1.8,"`) and must
//!   not overlap;
//! * `P%/N`: the `N`th slice of `P` percent of the recording (`10%/2`: from 10% to 20%);
//!   `P%` is `P%/1`;
//! * `A%-B%`: from `A` to `B` percent of the recording;
//!
//! percent ranges of one form may be joined with commas (`10%/1,10%/3`, `0%-10%,30%-40%`).
//! Percentages are of the span from the first to the last sample; a slice ends one
//! nanosecond before the next begins, except at the end of the recording. A sample without
//! a timestamp (time 0) is always kept.

use std::fmt;

/// A `--time` argument perf would refuse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeSpecError {
    /// perf's `Invalid time string`.
    Invalid(String),
    /// A percent (or, with `--reltime`, any) range in a recording with no sample times.
    NoSampleTime,
}

impl fmt::Display for TimeSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeSpecError::Invalid(s) => write!(
                f,
                "Invalid time string `{s}`: give START,STOP in seconds (`123.45,123.5`, either \
                 side may be empty; ranges separated by spaces), or percents of the recording \
                 (`10%/2`, `0%-10%,30%-40%`)"
            ),
            TimeSpecError::NoSampleTime => write!(
                f,
                "no first/last sample time in the file (it has no timestamped samples), so \
                 percent and relative ranges have nothing to measure from"
            ),
        }
    }
}

impl std::error::Error for TimeSpecError {}

/// One range as perf keeps it: `0` at either end means open.
#[derive(Clone, Copy, Default)]
struct Range {
    start: u64,
    end: u64,
}

/// C's `strtoul(s, &end, 10)` for what perf passes it: leading blanks, an optional sign,
/// digits. Returns the value and the rest.
fn strtoul(s: &str) -> (u64, &str) {
    let t = s.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let n = t.bytes().take_while(u8::is_ascii_digit).count();
    if n == 0 {
        return (0, s);
    }
    let v = t[..n].parse::<u64>().unwrap_or(u64::MAX);
    (if neg { v.wrapping_neg() } else { v }, &t[n..])
}

/// perf's `parse_nsec_time`: `SEC[.FRACTION]` as nanoseconds.
fn nsec_time(s: &str) -> Option<u64> {
    let (sec, rest) = strtoul(s);
    let nsec = match rest.strip_prefix('.') {
        None if rest.is_empty() => 0,
        None => return None,
        Some(frac) => {
            if frac.len() > 9 {
                return None;
            }
            let padded = format!("{frac:0<9}");
            let (v, rest) = strtoul(&padded);
            if !rest.is_empty() {
                return None;
            }
            v
        }
    };
    Some(sec.wrapping_mul(1_000_000_000).wrapping_add(nsec))
}

/// perf's `perf_time__parse_str`: one `START,STOP`.
fn absolute_one(s: &str) -> Option<Range> {
    let (a, b) = match s.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (s, None),
    };
    let mut r = Range::default();
    if !a.is_empty() {
        r.start = nsec_time(a)?;
    }
    if let Some(b) = b.filter(|b| !b.is_empty()) {
        r.end = nsec_time(b)?;
    }
    (r.end == 0 || r.end >= r.start).then_some(r)
}

/// perf's `perf_time__parse_strs`: space-separated `START,STOP` ranges.
fn absolute(spec: &str) -> Option<Vec<Range>> {
    let num = spec.matches(',').count();
    if num == 0 {
        return None;
    }
    let mut out = Vec::with_capacity(num);
    let mut rest = spec;
    for _ in 0..num - 1 {
        // Up to the value after the next comma, which ends at a blank.
        let comma = rest.find(',')?;
        let after = &rest[comma + 1..];
        let value_at = comma + 1 + (after.len() - after.trim_start().len());
        let value_len = rest[value_at..]
            .find(|c: char| c.is_ascii_whitespace())
            .unwrap_or(rest.len() - value_at);
        if rest[value_at..value_at + value_len].contains(',') {
            return None;
        }
        out.push(absolute_one(&rest[..value_at + value_len])?);
        rest = rest.get(value_at + value_len + 1..).unwrap_or("");
    }
    out.push(absolute_one(rest)?);
    out.windows(2).all(|w| w[0].end < w[1].start).then_some(out)
}

/// perf's `parse_percent`: what comes before the first `%`, as a fraction.
fn percent(s: &str) -> Option<f64> {
    let (num, _) = s.split_once('%')?;
    let t = num.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let v: f64 = if t.is_empty() { 0.0 } else { t.parse().ok()? };
    (!v.is_nan()).then_some(v / 100.0)
}

/// perf's `set_percent_time`.
fn percent_range(from: f64, to: f64, first: u64, last: u64) -> Option<Range> {
    if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) {
        return None;
    }
    let total = last.wrapping_sub(first) as f64;
    let start = first.wrapping_add((from * total).round() as u64);
    let mut end = first.wrapping_add((to * total).round() as u64);
    if end > start && end != last {
        end -= 1;
    }
    Some(Range { start, end })
}

/// `P%/N`.
fn slash(s: &str, first: u64, last: u64) -> Option<Range> {
    let (p, n) = s.split_once('/')?;
    let p = percent(p)?;
    let t = n.trim_start_matches(|c: char| c.is_ascii_whitespace());
    let n: i64 = if t.is_empty() {
        0
    } else {
        t.parse::<i64>().ok()?
    };
    if p <= 0.0 {
        return None;
    }
    let n = n as i32 as f64;
    percent_range(p * (n - 1.0), p * n, first, last)
}

/// `A%-B%`; an empty piece is an open range, as in perf.
fn dash(s: &str, first: u64, last: u64) -> Option<Range> {
    if s.is_empty() {
        return Some(Range::default());
    }
    let (a, b) = s.split_once('-')?;
    percent_range(percent(a)?, percent(b)?, first, last)
}

/// perf's `perf_time__percent_parse_str`.
fn percents(spec: &str, first: u64, last: u64) -> Option<Vec<Range>> {
    let piece: fn(&str, u64, u64) -> Option<Range> = if spec.contains('/') {
        slash
    } else if spec.contains('-') {
        dash
    } else {
        // `P%`: the `%` must end the string.
        return (spec.find('%')? == spec.len() - 1)
            .then(|| slash(&format!("{spec}/1"), first, last))
            .flatten()
            .map(|r| vec![r]);
    };
    let mut parts: Vec<&str> = spec.split(',').collect();
    if parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    parts.into_iter().map(|p| piece(p, first, last)).collect()
}

/// The time ranges `spec` selects, as inclusive `(start, end)` pairs in ns, for a recording
/// whose timestamped samples run from `span.0` to `span.1` (`None`: it has none). With
/// `reltime` (perf script's `--reltime`) the ranges count from the first sample.
pub fn parse(
    spec: &str,
    span: Option<(u64, u64)>,
    reltime: bool,
) -> Result<Vec<(u64, u64)>, TimeSpecError> {
    let has_percent = spec.contains('%');
    let (first, last) = match span {
        Some(s) => s,
        None if has_percent || reltime => return Err(TimeSpecError::NoSampleTime),
        None => (0, 0),
    };
    let ranges = if has_percent {
        percents(spec, first, last)
    } else {
        absolute(spec)
    }
    .ok_or_else(|| TimeSpecError::Invalid(spec.to_string()))?;
    Ok(ranges
        .into_iter()
        .map(|mut r| {
            if reltime {
                r.start = r.start.wrapping_add(first);
                r.end = r.end.wrapping_add(first);
            }
            (r.start, if r.end == 0 { u64::MAX } else { r.end })
        })
        .collect())
}

/// Whether a sample at `time` is in `ranges` (empty: no `--time`, every sample is).
pub fn keeps(ranges: &[(u64, u64)], time: u64) -> bool {
    ranges.is_empty() || time == 0 || ranges.iter().any(|&(a, b)| a <= time && time <= b)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPAN: Option<(u64, u64)> = Some((1000, 2000));

    #[test]
    fn absolute_forms() {
        assert_eq!(
            parse("2881.06,2881.1", None, false).unwrap(),
            [(2_881_060_000_000, 2_881_100_000_000)]
        );
        assert_eq!(parse(",5", None, false).unwrap(), [(0, 5_000_000_000)]);
        assert_eq!(
            parse("5,", None, false).unwrap(),
            [(5_000_000_000, u64::MAX)]
        );
        assert_eq!(
            parse("5,0", None, false).unwrap(),
            [(5_000_000_000, u64::MAX)]
        );
        assert_eq!(
            parse("1.5,1.6  2, 3", None, false).unwrap(),
            [
                (1_500_000_000, 1_600_000_000),
                (2_000_000_000, 3_000_000_000)
            ]
        );
        assert_eq!(
            parse("1.5,1.6 2,", None, false).unwrap(),
            [(1_500_000_000, 1_600_000_000), (2_000_000_000, u64::MAX)]
        );
        assert_eq!(parse("0.5,", SPAN, true).unwrap(), [(500_001_000, 1000)]);
    }

    #[test]
    fn percent_forms() {
        // Slices end one ns before the next one starts, except at the end.
        assert_eq!(parse("10%/2", SPAN, false).unwrap(), [(1100, 1199)]);
        assert_eq!(parse("10%", SPAN, false).unwrap(), [(1000, 1099)]);
        assert_eq!(parse("50%/2", SPAN, false).unwrap(), [(1500, 2000)]);
        assert_eq!(
            parse("0%-10%,50%-100%", SPAN, false).unwrap(),
            [(1000, 1099), (1500, 2000)]
        );
        // perf takes a reversed range (it keeps nothing) and a trailing comma.
        assert_eq!(parse("20%-10%", SPAN, false).unwrap(), [(1200, 1100)]);
        assert_eq!(parse("10%/1,", SPAN, false).unwrap(), [(1000, 1099)]);
        assert_eq!(parse("10%", None, false), Err(TimeSpecError::NoSampleTime));
    }

    #[test]
    fn what_perf_refuses() {
        for bad in [
            "x",
            "5",
            "3,2",
            "1.0000000001,",
            "1,2 ",
            "1,3 2,4",
            "1,2,3",
            "10%/0",
            "60%/2",
            "10%-",
            "10%/2,20%-30%",
            "10%x",
            "-5%-10%",
            "0%-10%,30%",
        ] {
            assert!(
                matches!(parse(bad, SPAN, false), Err(TimeSpecError::Invalid(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn samples_without_time_are_kept() {
        let r = parse("1,2", None, false).unwrap();
        assert!(keeps(&r, 0));
        assert!(keeps(&r, 1_000_000_000));
        assert!(!keeps(&r, 999_999_999));
        assert!(keeps(&[], 5));
    }
}
