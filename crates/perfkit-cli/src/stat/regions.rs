//! `perfkit stat --regions`: run a command with the marker library and print its regions.

use super::StatArgs;
use crate::exit_error;
use anyhow::{Context, Result, bail};
use perfkit_regions::{EventCount, RegionResult, RegionsReport, launch};
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;

/// Where the marker library is: `$PERFKIT_MARKERS_LIB`, else next to the perfkit binary,
/// else in `../lib` from it.
fn marker_library() -> PathBuf {
    if let Some(p) = std::env::var_os("PERFKIT_MARKERS_LIB") {
        return p.into();
    }
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    let next = dir.join("libperfkit_markers.so");
    if next.is_file() {
        return next;
    }
    let lib = dir.join("../lib/libperfkit_markers.so");
    if lib.is_file() { lib } else { next }
}

pub fn run(args: &StatArgs) -> Result<u8> {
    if args.command.is_empty() {
        bail!(
            "--regions runs a command: give one after -- (perfkit stat --regions -e EVENTS -- ./app)"
        );
    }
    if args.pid.is_some()
        || args.tid.is_some()
        || args.all_cpus
        || args.cpu.is_some()
        || args.cgroup.is_some()
        || args.interval.is_some()
        || args.repeat > 1
    {
        bail!(
            "--regions counts the regions of one run of a command it starts, on its threads: \
             drop -p/-t/-a/-C/-G/-I/-r"
        );
    }
    let events = if args.events.is_empty() {
        "task-clock,page-faults".to_string()
    } else {
        args.events.join(",")
    };
    // Check the events here (parse and open for this thread) so a bad list is one clear
    // error, not a warning from every marker call of the program.
    perfkit_regions::Regions::new(&events)
        .and_then(|r| r.thread_init())
        .context("-e")?;
    let (status, report) = launch::run(&marker_library(), &events, &args.command)?;
    let text = if args.json {
        json(&report)
    } else if let Some(sep) = &args.sep {
        csv(&report, sep)
    } else if report.threads.is_empty() {
        format!(
            "No regions: {} made no LIKWID marker or PAPI hl calls (or did not reach \
             likwid_markerClose / exit).\n",
            args.command[0].to_string_lossy()
        )
    } else {
        format!(
            "\n Regions of '{}' (events read by {}):\n\n{}",
            args.command
                .iter()
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" "),
            dedup(&report.read_paths),
            report.table()
        )
    };
    match &args.output {
        Some(p) => {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(args.append)
                .truncate(!args.append)
                .open(p)
                .with_context(|| format!("opening {}", p.display()))?;
            f.write_all(text.as_bytes())?;
        }
        None => std::io::stderr().write_all(text.as_bytes())?,
    }
    match (status.code(), status.signal()) {
        (Some(c), _) => Ok(c as u8),
        (None, Some(s)) => Err(exit_error(
            (128 + s) as u8,
            anyhow::anyhow!("{} killed by signal {s}", args.command[0].to_string_lossy()),
        )),
        _ => Ok(1),
    }
}

fn dedup(v: &[String]) -> String {
    let mut out: Vec<&str> = Vec::new();
    for s in v {
        if !out.contains(&s.as_str()) {
            out.push(s);
        }
    }
    out.join(", ")
}

/// Every (region, thread) of the report, then the per-region sums over threads (thread
/// `SUM`) where more than one thread entered it.
fn rows(r: &RegionsReport) -> Vec<(String, RegionResult)> {
    let mut out = Vec::new();
    for (sum, n) in r.summed() {
        for t in &r.threads {
            if let Some(x) = t.regions.iter().find(|x| x.name == sum.name) {
                out.push((t.tid.to_string(), x.clone()));
            }
        }
        if n > 1 {
            out.push(("SUM".to_string(), sum));
        }
    }
    out
}

/// `-x SEP`: one line per region, thread and event:
/// `region SEP thread SEP calls SEP time-ns SEP value SEP event SEP enabled-ns SEP running-ns`.
fn csv(r: &RegionsReport, sep: &str) -> String {
    let mut s = String::new();
    for (thread, x) in rows(r) {
        for (ev, c) in r.events.iter().zip(&x.counts) {
            let f = [
                x.name.clone(),
                thread.clone(),
                x.calls.to_string(),
                x.time_ns.to_string(),
                value(c),
                ev.clone(),
                c.enabled_ns.to_string(),
                c.running_ns.to_string(),
            ];
            s.push_str(&f.join(sep));
            s.push('\n');
        }
    }
    s
}

fn value(c: &EventCount) -> String {
    match c.scaled() {
        Some(v) if c.running_ns < c.enabled_ns => format!("{v:.0}"),
        Some(_) => c.value.to_string(),
        None => "<not counted>".into(),
    }
}

/// `-j`: one JSON object per region and thread.
fn json(r: &RegionsReport) -> String {
    let mut s = String::new();
    for (thread, x) in rows(r) {
        let events: Vec<serde_json::Value> = r
            .events
            .iter()
            .zip(&x.counts)
            .map(|(ev, c)| {
                serde_json::json!({
                    "event": ev,
                    "counter-value": value(c),
                    "enabled-ns": c.enabled_ns,
                    "running-ns": c.running_ns,
                })
            })
            .collect();
        let metrics: serde_json::Map<String, serde_json::Value> = r
            .metrics(&x)
            .into_iter()
            .map(|(n, v)| (n.to_string(), serde_json::json!(v)))
            .collect();
        let o = serde_json::json!({
            "region": x.name,
            "thread": thread,
            "calls": x.calls,
            "time-ns": x.time_ns,
            "events": events,
            "metrics": metrics,
        });
        s.push_str(&o.to_string());
        s.push('\n');
    }
    s
}
