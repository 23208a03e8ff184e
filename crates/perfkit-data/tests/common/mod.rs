//! Shared by the integration tests: perf script's sample lines and ours.
#![allow(dead_code)]

use perfkit_data::{Item, PerfData};
use perfkit_records::Record;
use std::path::Path;
use std::process::Command;

/// (pid, tid, time in µs, ip) of a sample.
pub type Sample = (i32, i32, u64, u64);

pub fn have_perf() -> bool {
    Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Lines of `perf script -G -F pid,tid,time,ip`.
pub fn parse_script(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('\t'))
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let (pid, tid) = it.next()?.split_once('/')?;
            let time = it.next()?.trim_end_matches(':');
            let (s, us) = time.split_once('.')?;
            let ip = u64::from_str_radix(it.next()?, 16).ok()?;
            Some((
                pid.parse().ok()?,
                tid.parse().ok()?,
                s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?,
                ip,
            ))
        })
        .collect()
}

/// What `perf script` prints for `file`.
pub fn perf_samples(file: &Path) -> Vec<Sample> {
    let out = Command::new("perf")
        .args(["script", "-G", "-F", "pid,tid,time,ip", "-i"])
        .arg(file)
        .output()
        .expect("perf script runs");
    parse_script(&String::from_utf8_lossy(&out.stdout))
}

/// The samples our reader delivers, in its order.
pub fn samples_of(data: &PerfData) -> Vec<Sample> {
    let mut v = Vec::new();
    data.for_each(
        |item| {
            if let Item::Event { record: rec, .. } = item
                && let Record::Sample(s) = &rec.record
            {
                v.push((
                    s.pid.unwrap_or(-1),
                    s.tid.unwrap_or(-1),
                    s.time.unwrap_or(0) / 1000,
                    s.ip.unwrap_or(0),
                ));
            }
        },
        |_| {},
    )
    .expect("every record reads");
    v
}
