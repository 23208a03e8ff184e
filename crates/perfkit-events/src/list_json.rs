//! `perfkit list -j`: the list in perf's JSON (`perf list -j`, which perf gained after 6.1):
//! one array of objects, an event as `Unit`, `EventName`, `EventAlias`, `ScaleUnit`,
//! `EventType`, `BriefDescription`, a metric as `MetricGroup`, `MetricName`, `MetricExpr`,
//! `BriefDescription`, keys in perf's order, tab-indented and escaped as perf writes them.
//!
//! perf lists no uprobe syntax; its libpfm4 events, when built with libpfm4, carry the type
//! `libpfm4 event` here.

use std::io::{self, Write};

use crate::list::{Catalogue, Kind};
use crate::metrics::Metrics;

/// perf's `EventType` for entries of `kind`; `None` for kinds perf does not list.
pub fn event_type(kind: Kind) -> Option<&'static str> {
    Some(match kind {
        Kind::Hardware => "Hardware event",
        Kind::Software => "Software event",
        Kind::Cache => "Hardware cache event",
        Kind::Pmu => "Kernel PMU event",
        Kind::Raw => "Raw event descriptor",
        Kind::Breakpoint => "Hardware breakpoint",
        Kind::Tracepoint => "Tracepoint event",
        Kind::Libpfm => "libpfm4 event",
        Kind::Uprobe => return None,
    })
}

/// perf's escaping: `\n` as `\\n`, `\` and `"` with a backslash before them.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Writes `[`, the objects separated by `,\n`, and `]` as perf does.
struct JsonList<'w, W: Write> {
    w: &'w mut W,
    any: bool,
}

impl<W: Write> JsonList<'_, W> {
    fn object(&mut self, pairs: &[(&str, Option<&str>)]) -> io::Result<()> {
        writeln!(self.w, "{}{{", if self.any { ",\n" } else { "" })?;
        self.any = true;
        let mut first = true;
        for (k, v) in pairs {
            let Some(v) = v.filter(|v| !v.is_empty()) else {
                continue;
            };
            let sep = if first { "" } else { ",\n" };
            write!(self.w, "{sep}\t\"{k}\": \"{}\"", escape(v))?;
            first = false;
        }
        write!(self.w, "{}}}", if first { "" } else { "\n" })
    }
}

/// Print the catalogue's events, then `metrics`, as perf's `list -j` does.
pub fn write_perf_json(cat: &Catalogue, metrics: &Metrics, w: &mut impl Write) -> io::Result<()> {
    writeln!(w, "[")?;
    let mut list = JsonList { w, any: false };
    for e in &cat.entries {
        let Some(ty) = event_type(e.kind) else {
            continue;
        };
        let alias = e.aliases.join(" OR ");
        let scale_unit = e.unit.as_ref().map(|u| match e.scale {
            Some(s) => format!("{s}{u}"),
            None => u.clone(),
        });
        list.object(&[
            ("Unit", e.pmu.as_deref()),
            ("EventName", Some(&e.name)),
            ("EventAlias", Some(&alias)),
            ("ScaleUnit", scale_unit.as_deref()),
            ("EventType", Some(ty)),
            ("BriefDescription", Some(&e.description)),
        ])?;
    }
    for m in &metrics.metrics {
        let groups = m.groups.join(";");
        list.object(&[
            ("MetricGroup", Some(&groups)),
            ("MetricName", Some(m.name)),
            ("MetricExpr", Some(m.expr)),
            ("BriefDescription", Some(m.description)),
        ])?;
    }
    let any = list.any;
    writeln!(w, "{}]", if any { "\n" } else { "" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_written_as_perf_writes_them() {
        let mut out = Vec::new();
        let mut l = JsonList {
            w: &mut out,
            any: false,
        };
        l.object(&[("EventName", Some("a\"b")), ("EventAlias", Some(""))])
            .unwrap();
        l.object(&[("EventName", Some("c\\d\ne")), ("Unit", None)])
            .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\n\t\"EventName\": \"a\\\"b\"\n},\n{\n\t\"EventName\": \"c\\\\d\\ne\"\n}"
        );
    }
}
