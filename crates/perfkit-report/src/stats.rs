//! `perf report --stats`: how many records of each type a file holds, and how many samples
//! each event has, printed as perf 6.1 prints them.
//!
//! perf counts every record it processes: the ones in the file (COMPRESSED, and in pipe
//! mode HEADER_ATTR and HEADER_FEATURE too) and the kernel records inside compressed ones.
//! The counts here come from two walks of the file: its records as they are
//! ([`PerfData::walk`]: perf's own types) and decompressed ([`PerfData::for_each`]: kernel
//! types and samples per event). A stream can be walked once, so read one into memory
//! first ([`PerfData::from_bytes`]).

use perfkit_data::{Item, PerfData, ReadError};
use perfkit_records::Record;
use perfkit_sys as sys;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Record counts of one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Records per `PERF_RECORD_*` type, kernel records counted decompressed.
    pub by_type: BTreeMap<u32, u64>,
    /// Samples per event (index into the file's attrs).
    pub samples: Vec<u64>,
    /// Event names, as [`PerfData::attrs`] gives them.
    pub names: Vec<String>,
}

/// perf's name of a record type (`perf_event__name`), without the `PERF_RECORD_` prefix.
pub fn record_name(type_: u32) -> Option<&'static str> {
    Some(match type_ {
        0 => "TOTAL",
        sys::PERF_RECORD_MMAP => "MMAP",
        sys::PERF_RECORD_LOST => "LOST",
        sys::PERF_RECORD_COMM => "COMM",
        sys::PERF_RECORD_EXIT => "EXIT",
        sys::PERF_RECORD_THROTTLE => "THROTTLE",
        sys::PERF_RECORD_UNTHROTTLE => "UNTHROTTLE",
        sys::PERF_RECORD_FORK => "FORK",
        sys::PERF_RECORD_READ => "READ",
        sys::PERF_RECORD_SAMPLE => "SAMPLE",
        sys::PERF_RECORD_MMAP2 => "MMAP2",
        sys::PERF_RECORD_AUX => "AUX",
        sys::PERF_RECORD_ITRACE_START => "ITRACE_START",
        sys::PERF_RECORD_LOST_SAMPLES => "LOST_SAMPLES",
        sys::PERF_RECORD_SWITCH => "SWITCH",
        sys::PERF_RECORD_SWITCH_CPU_WIDE => "SWITCH_CPU_WIDE",
        sys::PERF_RECORD_NAMESPACES => "NAMESPACES",
        sys::PERF_RECORD_KSYMBOL => "KSYMBOL",
        sys::PERF_RECORD_BPF_EVENT => "BPF_EVENT",
        sys::PERF_RECORD_CGROUP => "CGROUP",
        sys::PERF_RECORD_TEXT_POKE => "TEXT_POKE",
        sys::PERF_RECORD_AUX_OUTPUT_HW_ID => "AUX_OUTPUT_HW_ID",
        64 => "ATTR",
        65 => "EVENT_TYPE",
        66 => "TRACING_DATA",
        67 => "BUILD_ID",
        68 => "FINISHED_ROUND",
        69 => "ID_INDEX",
        70 => "AUXTRACE_INFO",
        71 => "AUXTRACE",
        72 => "AUXTRACE_ERROR",
        73 => "THREAD_MAP",
        74 => "CPU_MAP",
        75 => "STAT_CONFIG",
        76 => "STAT",
        77 => "STAT_ROUND",
        78 => "EVENT_UPDATE",
        79 => "TIME_CONV",
        80 => "FEATURE",
        81 => "COMPRESSED",
        82 => "FINISHED_INIT",
        83 => "COMPRESSED2",
        _ => return None,
    })
}

impl Stats {
    /// Count the records of `file` (walked twice: see the module docs).
    pub fn of(file: &PerfData) -> Result<Stats, ReadError> {
        let mut by_type = BTreeMap::new();
        // Records the decompressed walk does not deliver: COMPRESSED itself, and the
        // HEADER_ATTR / HEADER_FEATURE records of a pipe-mode stream.
        file.walk(|_, type_, _, _| {
            if matches!(type_, 64 | 80 | 81 | 83) {
                *by_type.entry(type_).or_default() += 1;
            }
            Ok(())
        })?;
        let mut samples = vec![0u64; file.attrs.len()];
        file.for_each(
            |item| {
                if let Item::User { type_, .. } = item {
                    *by_type.entry(type_).or_default() += 1;
                } else if let Item::Event { attr, record } = item {
                    let t = record.record.record_type();
                    *by_type.entry(t).or_default() += 1;
                    if matches!(record.record, Record::Sample(_))
                        && let Some(n) = samples.get_mut(attr)
                    {
                        *n += 1;
                    }
                }
            },
            |_| {},
        )?;
        Ok(Stats {
            by_type,
            samples,
            names: file.attrs.iter().map(|a| a.name.clone()).collect(),
        })
    }

    /// The total of every type.
    pub fn total(&self) -> u64 {
        self.by_type.values().sum()
    }

    /// perf's text: a blank line, `Aggregated stats:` with `NAME events: N ( P%)` per type
    /// seen, then `EVENT stats:` with the samples of each event that has some.
    pub fn render(&self) -> String {
        let mut s = String::from("\nAggregated stats:\n");
        let total = self.total();
        let _ = writeln!(s, "{:>16} events: {:>10}", "TOTAL", total);
        for (&t, &n) in &self.by_type {
            let name = record_name(t).map_or_else(|| format!("UNKNOWN({t})"), str::to_string);
            let pct = if total == 0 {
                0.0
            } else {
                n as f64 * 100.0 / total as f64
            };
            let _ = writeln!(s, "{name:>16} events: {n:>10}  ({pct:4.1}%)");
        }
        for (name, &n) in self.names.iter().zip(&self.samples) {
            // perf's default --skip-empty: events without samples are left out.
            if n > 0 {
                let _ = writeln!(s, "{name} stats:");
                let _ = writeln!(s, "{:>16} events: {n:>10}", "SAMPLE");
            }
        }
        s
    }
}
