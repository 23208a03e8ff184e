//! How perf 6.1 prints a metric's value (`generic_metric` in its `stat-shadow.c`).
//!
//! A metric with a `ScaleUnit` (`100%`, `1GHz`, `1per_instr`, `3e-5MiB`) has its value
//! multiplied by the number the unit starts with, read as C's `strtod` reads it (perf's
//! `perf_pmu__convert_scale`), and is printed `%8.1f` followed by the rest of the unit, two
//! spaces and the metric's name (`    12.3 %  tma_retiring`), cut to 63 bytes as perf's
//! 64-byte buffer cuts it; a formula with a `?` (perf's runtime parameter) adds `_0` to the
//! name. A metric without one is printed `%8.2f` followed by its name.

/// A `ScaleUnit` split as perf splits it: the factor and the unit after it.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleUnit<'a> {
    /// The number the text starts with (0 when it starts with none, as `strtod` says).
    pub scale: f64,
    /// The rest of the text (all of it when no number was read).
    pub unit: &'a str,
}

impl<'a> ScaleUnit<'a> {
    /// Split `text` as C's `strtod(text, &end)` does: leading white space, a sign, then a
    /// decimal number with an optional exponent, a hexadecimal one (`0x1p3`), `inf`,
    /// `infinity` or `nan`; `unit` is what follows.
    pub fn parse(text: &'a str) -> ScaleUnit<'a> {
        match strtod(text) {
            Some((scale, used)) => ScaleUnit {
                scale,
                unit: &text[used..],
            },
            None => ScaleUnit {
                scale: 0.0,
                unit: text,
            },
        }
    }
}

/// The number at the start of `s` and the bytes it takes, as `strtod` reads it.
pub(super) fn strtod(s: &str) -> Option<(f64, usize)> {
    let b = s.as_bytes();
    // C's isspace: space, \t, \n, \v, \f, \r.
    let mut i = b
        .iter()
        .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'))
        .count();
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let lower = rest.to_ascii_lowercase();
    for (word, v) in [
        ("infinity", f64::INFINITY),
        ("inf", f64::INFINITY),
        ("nan", f64::NAN),
    ] {
        if lower.starts_with(word) {
            return Some((sign * v, i + word.len()));
        }
    }
    let digits = |from: usize, hex: bool| {
        b[from..]
            .iter()
            .take_while(|c| {
                if hex {
                    c.is_ascii_hexdigit()
                } else {
                    c.is_ascii_digit()
                }
            })
            .count()
    };
    let hex = lower.starts_with("0x")
        && (digits(i + 2, true) > 0 || b.get(i + 2) == Some(&b'.') && digits(i + 3, true) > 0);
    let start = if hex { i + 2 } else { i };
    let int = digits(start, hex);
    let mut end = start + int;
    let mut frac = 0;
    if b.get(end) == Some(&b'.') {
        frac = digits(end + 1, hex);
        if int + frac > 0 {
            end += 1 + frac;
        }
    }
    if int + frac == 0 {
        return None;
    }
    let mantissa_end = end;
    // The exponent: `e` (decimal) or `p` (hexadecimal, a power of two), taken only when
    // digits follow it.
    let mut exp: i32 = 0;
    let marker = if hex { b'p' } else { b'e' };
    if b.get(end).map(u8::to_ascii_lowercase) == Some(marker) {
        let mut j = end + 1;
        let eneg = match b.get(j) {
            Some(b'-') => {
                j += 1;
                true
            }
            Some(b'+') => {
                j += 1;
                false
            }
            _ => false,
        };
        let n = digits(j, false);
        if n > 0 {
            let e: i32 = s[j..j + n].parse().unwrap_or(i32::MAX);
            exp = if eneg { -e } else { e };
            end = j + n;
        }
    }
    let value = if hex {
        let text: String = s[start..mantissa_end]
            .chars()
            .filter(|c| *c != '.')
            .collect();
        let m = u128::from_str_radix(&text, 16).unwrap_or(u128::MAX) as f64;
        m * 2f64.powi(exp - 4 * frac as i32)
    } else {
        let text = format!("{}e{exp}", &s[start..mantissa_end]);
        text.parse::<f64>().unwrap_or(0.0)
    };
    Some((sign * value, end))
}

/// A metric's value as perf 6.1 prints it.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricText {
    /// The value, scaled by the `ScaleUnit`'s factor.
    pub value: f64,
    /// What follows the value: the name, or the unit, two spaces and the name.
    pub unit: String,
    /// Digits after the point: 1 with a `ScaleUnit` (`%8.1f`), else 2 (`%8.2f`).
    pub decimals: usize,
}

impl MetricText {
    /// The text of metric `name` (formula `expr`, `ScaleUnit` `scale_unit`) for `value`.
    pub fn of(name: &str, expr: &str, scale_unit: Option<&str>, value: f64) -> MetricText {
        let Some(su) = scale_unit else {
            return MetricText {
                value,
                unit: name.to_string(),
                decimals: 2,
            };
        };
        let ScaleUnit { scale, unit } = ScaleUnit::parse(su);
        let mut text = if expr.contains('?') {
            format!("{unit}  {name}_0")
        } else {
            format!("{unit}  {name}")
        };
        // perf's 64-byte buffer: 63 bytes and the terminating NUL.
        if text.len() > 63 {
            let mut cut = 63;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        MetricText {
            value: value * scale,
            unit: text,
            decimals: 1,
        }
    }

    /// The value as perf's CSV output writes it: printed `%8.Nf`, its leading spaces
    /// skipped, cut at the first byte that is not a digit or a point (so perf writes
    /// nothing for a negative value, nor for `inf` or `nan`).
    pub fn csv_value(&self) -> String {
        csv_number(self.value, self.decimals)
    }
}

/// `value` as perf's CSV metric column writes it with `%8.<decimals>f`.
pub fn csv_number(value: f64, decimals: usize) -> String {
    let printed = c_fixed(value, decimals);
    printed
        .trim_start_matches(' ')
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect()
}

/// `value` printed as C's `%.Nf` prints it (`inf`, `-inf`, `nan` where Rust says `inf`,
/// `-inf`, `NaN`).
fn c_fixed(value: f64, decimals: usize) -> String {
    if value.is_nan() {
        return if value.is_sign_negative() {
            "-nan"
        } else {
            "nan"
        }
        .into();
    }
    format!("{value:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_units_split_as_strtod_splits_them() {
        // Every ScaleUnit in perf 6.1's tables for the CPUs perfkit embeds, and a few
        // strtod corners, worked out from C's rules.
        let cases: [(&str, f64, &str); 14] = [
            ("100%", 100.0, "%"),
            ("1%", 1.0, "%"),
            ("1GHz", 1.0, "GHz"),
            ("1per_instr", 1.0, "per_instr"),
            ("1ns", 1.0, "ns"),
            ("1MB/s", 1.0, "MB/s"),
            ("4Bytes", 4.0, "Bytes"),
            ("1core clocks", 1.0, "core clocks"),
            ("3e-5MiB", 3e-5, "MiB"),
            ("6.1e-5MiB", 6.1e-5, "MiB"),
            // An `e` with no digits after it is the unit's.
            ("2emu", 2.0, "emu"),
            (" .5x", 0.5, "x"),
            ("0x10p1Hz", 32.0, "Hz"),
            ("-1.5e+2s", -150.0, "s"),
        ];
        for (text, scale, unit) in cases {
            let s = ScaleUnit::parse(text);
            assert_eq!((s.scale, s.unit), (scale, unit), "{text}");
        }
        // No number: strtod reads nothing, so the factor is 0 and the unit is all of it.
        assert_eq!(
            ScaleUnit::parse("%"),
            ScaleUnit {
                scale: 0.0,
                unit: "%"
            }
        );
        assert_eq!(ScaleUnit::parse(".e1").unit, ".e1");
        assert!(ScaleUnit::parse("nanx").scale.is_nan());
        assert_eq!(ScaleUnit::parse("infx").unit, "x");
    }

    #[test]
    fn metric_text_is_perfs() {
        // tma_retiring = 0.4567 with "100%": 45.67, printed "%8.1f" as "    45.7".
        let t = MetricText::of("tma_retiring", "a / b", Some("100%"), 0.4567);
        assert_eq!(t.unit, "%  tma_retiring");
        assert_eq!(t.decimals, 1);
        assert!((t.value - 45.67).abs() < 1e-9);
        assert_eq!(format!("{:8.1$}", t.value, t.decimals), "    45.7");
        assert_eq!(t.csv_value(), "45.7");
        // 2.1e9 cycles / 1e9 / 1 s with "1GHz".
        let t = MetricText::of("cpu_operating_frequency", "x", Some("1GHz"), 2.1);
        assert_eq!(
            (t.value, t.unit.as_str()),
            (2.1, "GHz  cpu_operating_frequency")
        );
        // A formula with perf's runtime parameter `?` is named `NAME_0`.
        let t = MetricText::of("m", "a * ?", Some("1per_instr"), 3.0);
        assert_eq!(t.unit, "per_instr  m_0");
        // Without a ScaleUnit: the value as it is, "%8.2f", the name alone.
        let t = MetricText::of("SMT_2T_Utilization", "0", None, 0.0);
        assert_eq!(
            (t.value, t.unit.as_str(), t.decimals),
            (0.0, "SMT_2T_Utilization", 2)
        );
        assert_eq!(t.csv_value(), "0.00");
        // perf's 64-byte buffer keeps 63 bytes of "unit  name".
        let long = "x".repeat(70);
        let t = MetricText::of(&long, "a", Some("100%"), 1.0);
        assert_eq!(t.unit.len(), 63);
        assert!(t.unit.starts_with("%  xxx"));
        // perf's CSV cut: nothing for a negative value or nan.
        assert_eq!(csv_number(-0.5, 2), "");
        assert_eq!(csv_number(f64::NAN, 2), "");
        assert_eq!(csv_number(12345.678, 1), "12345.7");
    }
}
