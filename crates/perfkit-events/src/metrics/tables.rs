//! perfkit's metric tables and how one is chosen for a CPU, as perf chooses them.
//!
//! The tables themselves are generated ([`super::generated`], by
//! `scripts/gen-metric-tables.py`) from perf 6.1's pmu-events JSON
//! (`tools/perf/pmu-events/arch/<arch>/<model>/*.json` in the Linux tree), keeping only
//! the metrics: their events resolve through the event parser (sysfs aliases, libpfm4).
//! Each table carries its `mapfile.csv` key: on x86 a POSIX extended regex over perf's
//! CPUID string `vendor-family-model-stepping` (family decimal, model and stepping hex,
//! `AuthenticAMD-25-[[:xdigit:]]+`), on arm64 a MIDR (`0x00000000410fd070`, variant and
//! revision zero).
//!
//! Licence note: perfkit is MIT-licensed, but the generated table data (metric names,
//! descriptions, formulas) comes from the Linux kernel's perf JSON files, which are
//! GPL-2.0 like the rest of the kernel tree.

use super::Metric;
use super::generated::TABLES;

/// One CPU model's metrics under its `mapfile.csv` key.
pub(super) struct Table {
    /// `x86` or `arm64`: which CPUID strings the key is compared with.
    pub arch: &'static str,
    /// The key: a regex (x86) or a MIDR (arm64).
    pub cpuid: &'static str,
    /// The model directory's name (`amdzen3`).
    pub name: &'static str,
    /// The metrics, in the JSON's order.
    pub metrics: &'static [Metric],
}

/// The table for perf's CPUID string `cpuid` (`AuthenticAMD-25-11-1`,
/// `0x00000000410fd070`), the first in mapfile order whose key matches it, as perf's
/// `strcmp_cpuid_str` matches: the whole CPUID must match; on x86, a key without a
/// stepping is compared with the CPUID less its stepping.
pub(super) fn for_cpuid(cpuid: &str) -> Option<&'static Table> {
    TABLES.iter().find(|t| key_matches(t, cpuid))
}

/// Every CPUID key perfkit has a table for, with the table's name.
pub(super) fn keys() -> impl Iterator<Item = (&'static str, &'static str)> {
    TABLES.iter().map(|t| (t.cpuid, t.name))
}

fn key_matches(t: &Table, cpuid: &str) -> bool {
    let subject = if t.arch == "x86" {
        // perf (arch/x86/util/header.c): a "full" CPUID has exactly three dashes
        // (`V-F-M-S`); a full key never matches a shorter CPUID, and a key that is not
        // full must match the CPUID up to its last dash (no stepping).
        let full = |s: &str| s.matches('-').count() == 3;
        match (full(t.cpuid), full(cpuid)) {
            (true, false) => return false,
            (false, true) => cpuid.rsplit_once('-').map_or(cpuid, |(head, _)| head),
            _ => cpuid,
        }
    } else {
        cpuid
    };
    let pattern = format!(
        "^(?:{})$",
        t.cpuid
            .replace("[[:xdigit:]]", "[0-9a-fA-F]")
            .replace("[[:digit:]]", "[0-9]")
    );
    regex::Regex::new(&pattern).is_ok_and(|re| re.is_match(subject))
}
