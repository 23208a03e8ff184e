//! `-M`/`--metrics`: metrics and metric groups from the CPU's metric table
//! ([`perfkit_events::metrics`]), turned into events to count and, after counting, into
//! values on the rows.
//!
//! As perf 6.1 does: a name that is neither a metric nor a group gets `Cannot find metric
//! or group`; a metric whose events this machine cannot name gets perf's event syntax
//! error naming the first missing one; either way counting goes on (with perf's default
//! events when nothing else is left).

use super::perf_order::perf_order;
use super::rows::{Row, State};
use crate::{EventSpec, Result};
use perfkit_events::metrics::{Expr, Metric, Metrics};

/// A metric being counted: its formula and the events it reads.
#[derive(Clone, Debug)]
pub struct MetricUse {
    /// perf's name, printed after the value.
    pub name: String,
    /// The formula.
    pub expr: Expr,
    /// The event names the formula reads (the specs' names).
    pub events: Vec<String>,
}

/// What `-M LIST` adds to a plan.
#[derive(Debug, Default)]
pub(super) struct Resolved {
    pub specs: Vec<EventSpec>,
    pub metrics: Vec<MetricUse>,
    pub notes: Vec<String>,
}

/// perf's way of quoting an event string in a syntax error: at most 56 bytes, then `..`.
fn quoted(s: &str) -> String {
    if s.len() <= 58 {
        return s.to_string();
    }
    let mut cut = 56;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}..", &s[..cut])
}

/// Resolve `list` (comma separated) against `table`; `no_group`: perf's
/// `--metric-no-group`.
pub(super) fn resolve(table: &Metrics, list: &str, no_group: bool) -> Result<Resolved> {
    let mut out = Resolved::default();
    // perf 6.1: each name's metrics put at the head of the list, then the list sorted by
    // the number of events, most first (stably).
    let mut chosen: Vec<&Metric> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match table.resolve(name) {
            Some(ms) => {
                for m in ms {
                    if !chosen.iter().any(|c| c.name == m.name) {
                        chosen.insert(0, m);
                    }
                }
            }
            None => {
                let hint = if table.is_empty() {
                    format!(" ({})", table.none_message())
                } else {
                    String::new()
                };
                out.notes
                    .push(format!("Cannot find metric or group `{name}'{hint}"));
                // perf stops at the first bad name and counts nothing of the list.
                return Ok(Resolved {
                    notes: out.notes,
                    ..Resolved::default()
                });
            }
        }
    }
    chosen.sort_by_key(|m| {
        std::cmp::Reverse(table.expanded(m).map(|e| e.events().len()).unwrap_or(0))
    });
    // Each metric's events as one group (`{...}:W`); with --metric-no-group, every
    // metric's events in one list, ungrouped, each event once (perf's combined map).
    let own: Vec<(&Metric, Expr, Vec<String>)> = chosen
        .iter()
        .filter_map(|m| match table.expanded(m) {
            Ok(e) => {
                let ev = perf_order(&e.events());
                Some((*m, e, ev))
            }
            Err(e) => {
                out.notes.push(format!(
                    "metric `{}': its formula does not parse: {e}",
                    m.name
                ));
                None
            }
        })
        .collect();
    let sets: Vec<(Vec<usize>, Vec<String>)> = if no_group {
        let all: Vec<String> = own.iter().flat_map(|o| o.2.clone()).collect();
        vec![((0..own.len()).collect(), perf_order(&all))]
    } else {
        own.iter()
            .enumerate()
            .map(|(i, o)| (vec![i], o.2.clone()))
            .collect()
    };
    for (members, events) in sets {
        let list = events
            .iter()
            .map(|e| format!("{e}/metric-id={e}/"))
            .collect::<Vec<_>>()
            .join(",");
        let shown = if no_group {
            list
        } else {
            format!("{{{list}}}:W")
        };
        match crate::parse(&[events.join(",")]) {
            Ok(mut specs) => {
                let base = out.specs.last().map_or(0, |s| s.group + 1);
                let n = specs.len();
                for (i, s) in specs.iter_mut().enumerate() {
                    s.group = if no_group { base + i } else { base };
                    s.leader = no_group || i == 0;
                    s.grouped = !no_group && n > 1;
                }
                out.specs.extend(specs);
                for i in members {
                    let (m, expr, events) = &own[i];
                    out.metrics.push(MetricUse {
                        name: m.name.to_string(),
                        expr: expr.clone(),
                        events: events.clone(),
                    });
                }
            }
            Err(_) => {
                // perf's parser stops at the first event it cannot name.
                let missing = events
                    .iter()
                    .find(|e| crate::parse(&[(*e).clone()]).is_err())
                    .cloned()
                    .unwrap_or_default();
                out.notes.push(format!(
                    "event syntax error: '{}'\n{:21}\\___ Cannot find PMU `{missing}'. Missing \
                     kernel support?",
                    quoted(&shown),
                    ""
                ));
                // perf gives up on the whole list at the first metric it cannot set up.
                return Ok(Resolved {
                    notes: out.notes,
                    ..Resolved::default()
                });
            }
        }
    }
    Ok(out)
}

/// Put each metric's value on the row of its first event, in one bucket's rows.
pub fn apply(metrics: &[MetricUse], rows: &mut [Row]) {
    for m in metrics {
        let value = m.expr.eval(&mut |name| {
            rows.iter()
                .find(|r| r.event == name && r.state == State::Counted)
                .map(|r| r.value)
        });
        let (Some(v), Some(first)) = (value, m.events.first()) else {
            continue;
        };
        if let Some(r) = rows.iter_mut().find(|r| &r.event == first) {
            r.metric = Some((v, m.name.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfkit_events::metrics::CpuId;

    #[test]
    fn names_and_missing_events_as_perf() {
        let zen = Metrics::for_cpu(&CpuId {
            vendor: "AuthenticAMD".into(),
            family: 25,
            model: 17,
            stepping: 1,
        });
        let r = resolve(&zen, "nosuch", false).unwrap();
        assert_eq!(r.notes, ["Cannot find metric or group `nosuch'"]);
        assert!(r.specs.is_empty());
        // No `cpu` PMU on the test machines: the first event is missing.
        let r = resolve(&zen, "branch_misprediction_ratio", false).unwrap();
        if r.specs.is_empty() {
            assert_eq!(
                r.notes[0],
                "event syntax error: '{ex_ret_brn/metric-id=ex_ret_brn/,ex_ret_brn_misp/metric..'\n\
                 \x20                    \\___ Cannot find PMU `ex_ret_brn'. Missing kernel support?"
            );
        }
        assert!(quoted("short") == "short");
    }

    fn row(event: &str, value: f64, state: State) -> Row {
        Row {
            label: String::new(),
            label_kind: "",
            ncpus: None,
            event: event.into(),
            attr: Default::default(),
            unit: String::new(),
            cgroup: None,
            state,
            value,
            running: 1,
            enabled: 1,
            runs: Vec::new(),
            metric: None,
        }
    }

    #[test]
    fn a_metric_lands_on_its_first_event() {
        let m = MetricUse {
            name: "branch_misprediction_ratio".into(),
            expr: Expr::parse("d_ratio(ex_ret_brn_misp, ex_ret_brn)").unwrap(),
            events: vec!["ex_ret_brn_misp".into(), "ex_ret_brn".into()],
        };
        let mut rows = vec![
            row("task-clock", 5.0, State::Counted),
            row("ex_ret_brn_misp", 25.0, State::Counted),
            row("ex_ret_brn", 1000.0, State::Counted),
        ];
        apply(std::slice::from_ref(&m), &mut rows);
        assert_eq!(
            rows[1].metric,
            Some((0.025, "branch_misprediction_ratio".to_string()))
        );
        assert_eq!(rows[0].metric, None);
        // An event that did not count leaves the metric without a value.
        let mut rows = vec![
            row("ex_ret_brn_misp", 25.0, State::Counted),
            row("ex_ret_brn", 0.0, State::NotCounted),
        ];
        apply(&[m], &mut rows);
        assert_eq!(rows[0].metric, None);
    }
}
