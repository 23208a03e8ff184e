//! Prometheus' text exposition format (version 0.0.4): `# HELP`, `# TYPE` and one line per
//! series, `name{label="value",...} value`, label values escaped as the format asks
//! (backslash, double quote, newline).

use std::fmt::Write;

/// The `Content-Type` of the text format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Writes one metric family after another into a string.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// An empty page.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Start a family: its help text and type (`counter`, `gauge`).
    pub fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {}", help.replace('\n', " "));
        let _ = writeln!(self.out, "# TYPE {name} {kind}");
    }

    /// One series of the current family.
    pub fn series(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                self.out.push_str(k);
                self.out.push_str("=\"");
                escape_into(v, &mut self.out);
                self.out.push('"');
            }
            self.out.push('}');
        }
        self.out.push(' ');
        if value.fract() == 0.0 && value.abs() < 1e15 {
            let _ = write!(self.out, "{}", value as i64);
        } else {
            let _ = write!(self.out, "{value}");
        }
        self.out.push('\n');
    }

    /// The page.
    pub fn finish(self) -> String {
        self.out
    }
}

fn escape_into(v: &str, out: &mut String) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_escapes() {
        let mut e = Exposition::new();
        e.family("perfkit_events_total", "counter", "Counts.");
        e.series(
            "perfkit_events_total",
            &[("event", "task-clock"), ("cgroup", "a\"b\\c\nd")],
            12.0,
        );
        e.series("perfkit_up", &[], 0.5);
        assert_eq!(
            e.finish(),
            "# HELP perfkit_events_total Counts.\n# TYPE perfkit_events_total counter\n\
             perfkit_events_total{event=\"task-clock\",cgroup=\"a\\\"b\\\\c\\nd\"} 12\n\
             perfkit_up 0.5\n"
        );
    }
}
