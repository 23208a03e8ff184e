//! Metrics and metric groups (`perf stat -M`, `perf list metric`): named formulas over
//! events, chosen for the CPU this runs on.
//!
//! perf compiles its metric tables into the binary and picks one by the CPU's identity
//! string (x86 `vendor-family-model-stepping`, arm64 MIDR) against its `mapfile.csv`
//! keys. perfkit embeds a few of perf 6.1's tables, generated from its JSON
//! ([`tables`]), and picks one the same way; on any other CPU there are none and
//! [`Metrics::for_cpuid`] says so. `PERFKIT_CPUID` (or perf's own `PERF_CPUID`) in the
//! environment stands for this machine's identity, to list and test another CPU's table.
//! The formulas are parsed and evaluated by [`expr`].
//!
//! ```
//! use perfkit_events::metrics::{CpuId, Metrics};
//! let m = Metrics::for_cpu(&CpuId { vendor: "AuthenticAMD".into(), family: 0x19, model: 0x11, stepping: 1 });
//! let found = m.resolve("tlb").unwrap();
//! assert_eq!(found[0].name, "l1_itlb_misses");
//! assert_eq!(Metrics::for_cpuid("GenuineIntel-6-96-0").table, "elkhartlake");
//! assert!(Metrics::for_cpu(&CpuId::default()).is_empty());
//! ```

pub mod expr;
#[rustfmt::skip]
mod generated;
mod ids;
mod literals;
mod scale_unit;
mod tables;

pub use expr::{Expr, ExprError};
pub use ids::IdMap;
pub use literals::Literals;
pub use scale_unit::{MetricText, ScaleUnit, csv_number};

/// One metric: a formula over events, with perf's name, groups and description.
#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    /// perf's name (`branch_misprediction_ratio`).
    pub name: &'static str,
    /// The metric groups it belongs to (`branch_prediction`).
    pub groups: &'static [&'static str],
    /// One line of description.
    pub description: &'static str,
    /// The formula, in perf's metric syntax (`d_ratio(ex_ret_brn_misp, ex_ret_brn)`).
    pub expr: &'static str,
    /// Whether `perf list` shows it (not a metric that is also an event and in no group:
    /// perf finds those with `-M` but does not list them).
    pub listed: bool,
    /// The JSON's `ScaleUnit` (`100%`, `1GHz`, `1per_instr`): the factor the value is
    /// multiplied by and the unit printed before the name ([`ScaleUnit`]).
    pub scale_unit: Option<&'static str>,
    /// The JSON's `MetricConstraint`: perf 6.1 knows `NO_NMI_WATCHDOG` (the events are
    /// counted outside a group while the NMI watchdog holds a counter).
    pub constraint: Option<&'static str>,
}

impl Metric {
    /// How perf 6.1 prints `value`, this metric's result ([`MetricText::of`]).
    pub fn text(&self, value: f64) -> MetricText {
        MetricText::of(self.name, self.expr, self.scale_unit, value)
    }

    /// Whether perf 6.1 counts this metric's events outside a group here: its constraint
    /// is `NO_NMI_WATCHDOG` and the NMI watchdog is on (`nmi_watchdog` > 0, as
    /// `/proc/sys/kernel/nmi_watchdog` says on this machine).
    pub fn ungrouped(&self, nmi_watchdog: bool) -> bool {
        self.constraint == Some("NO_NMI_WATCHDOG") && nmi_watchdog
    }

    /// The formula, parsed.
    pub fn parsed(&self) -> Result<Expr, ExprError> {
        Expr::parse(self.expr)
    }

    /// The events the formula reads, in the order they first appear.
    pub fn events(&self) -> Vec<String> {
        self.parsed().map(|e| e.events()).unwrap_or_default()
    }
}

/// Who made the CPU and which one it is (`/proc/cpuinfo`'s `vendor_id`, `cpu family`,
/// `model`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuId {
    /// `GenuineIntel`, `AuthenticAMD`, ...
    pub vendor: String,
    /// `cpu family`.
    pub family: u32,
    /// `model`.
    pub model: u32,
    /// `stepping`.
    pub stepping: u32,
}

impl CpuId {
    /// This machine's CPU, from `/proc/cpuinfo` (the default, matching no table, when it
    /// cannot be read).
    pub fn system() -> CpuId {
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|s| CpuId::from_cpuinfo(&s))
            .unwrap_or_default()
    }

    /// perf's CPUID string for it (`AuthenticAMD-25-11-1`: family decimal, model and
    /// stepping hex), empty when the vendor is unknown.
    pub fn perf_cpuid(&self) -> String {
        if self.vendor.is_empty() {
            return String::new();
        }
        format!(
            "{}-{}-{:X}-{:X}",
            self.vendor, self.family, self.model, self.stepping
        )
    }

    /// The identity in the first processor block of a `/proc/cpuinfo` text.
    pub fn from_cpuinfo(text: &str) -> CpuId {
        let mut id = CpuId::default();
        for line in text.lines() {
            if line.trim().is_empty() && !id.vendor.is_empty() {
                break;
            }
            let Some((k, v)) = line.split_once(':') else {
                continue;
            };
            let v = v.trim();
            match k.trim() {
                "vendor_id" => id.vendor = v.to_string(),
                "cpu family" => id.family = v.parse().unwrap_or(0),
                "model" => id.model = v.parse().unwrap_or(0),
                "stepping" => id.stepping = v.parse().unwrap_or(0),
                _ => {}
            }
        }
        id
    }
}

/// The metrics of one CPU.
#[derive(Clone, Debug, Default)]
pub struct Metrics {
    /// The table's name (`amdzen3`), empty when the CPU has none.
    pub table: &'static str,
    /// perf's CPUID string the table was chosen by (`AuthenticAMD-25-11-1`).
    pub cpuid: String,
    /// The metrics, in the order of perf's compiled table (jevents' sort: file topic,
    /// then name), the order perf finds a group's members in.
    pub metrics: Vec<Metric>,
}

impl Metrics {
    /// This machine's metrics (or those of the CPU `PERFKIT_CPUID`/`PERF_CPUID` names).
    pub fn system() -> Metrics {
        Metrics::for_cpuid(&system_cpuid())
    }

    /// The metrics perfkit has for `cpu` (none for a CPU it has no table for).
    pub fn for_cpu(cpu: &CpuId) -> Metrics {
        Metrics::for_cpuid(&cpu.perf_cpuid())
    }

    /// The metrics for perf's CPUID string (`AuthenticAMD-25-11-1`,
    /// `0x00000000410fd070`): the first table whose mapfile key matches, as perf.
    pub fn for_cpuid(cpuid: &str) -> Metrics {
        match tables::for_cpuid(cpuid) {
            Some(t) => Metrics {
                table: t.name,
                cpuid: cpuid.to_string(),
                metrics: t.metrics.to_vec(),
            },
            None => Metrics {
                cpuid: cpuid.to_string(),
                ..Metrics::default()
            },
        }
    }

    /// Why there are no metrics: `no metrics for this CPU (CPUID ...)` and what to do.
    pub fn none_message(&self) -> String {
        let mut names: Vec<&str> = tables::keys().map(|(_, n)| n).collect();
        names.dedup();
        let id = if self.cpuid.is_empty() {
            "unknown"
        } else {
            &self.cpuid
        };
        format!(
            "no metrics for this CPU (CPUID {id}): perfkit has perf 6.1's metric tables for {} \
             only; PERFKIT_CPUID=<perf CPUID> selects one",
            names.join(", ")
        )
    }

    /// `m`'s formula with the other metrics it names replaced by their formulas, as perf
    /// resolves metric references (`CPI`: `1 / IPC`, read as `1 / (INST_RETIRED.ANY /
    /// cycles)`); a reference nested deeper than perf's limit of 10 is left as an event.
    pub fn expanded(&self, m: &Metric) -> Result<Expr, ExprError> {
        self.expand(m, 0)
    }

    fn expand(&self, m: &Metric, depth: usize) -> Result<Expr, ExprError> {
        let e = m.parsed()?;
        if depth >= 10 {
            return Ok(e);
        }
        let mut err = None;
        let out = e.substitute(&mut |name| {
            let r = self
                .metrics
                .iter()
                .find(|o| o.name != m.name && o.name.eq_ignore_ascii_case(name))?;
            match self.expand(r, depth + 1) {
                Ok(x) => Some(x),
                Err(e) => {
                    err.get_or_insert(e);
                    None
                }
            }
        });
        match err {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    /// The events perf 6.1 opens for `m`, in its order (perf's `__add_metric`): the
    /// formula's ids collected into the root map, then every id that names another
    /// metric taken out and that metric's ids added in turn (each referenced metric once,
    /// a reference back to a metric being added refused as perf refuses recursion).
    pub fn perf_ids(
        &self,
        m: &Metric,
        literal: &dyn Fn(&str) -> Option<f64>,
    ) -> Result<IdMap, ExprError> {
        let mut root = IdMap::default();
        let mut refs: Vec<&str> = Vec::new();
        self.add_ids(m, &mut root, &mut refs, &[], literal)?;
        Ok(root)
    }

    fn add_ids<'a>(
        &'a self,
        m: &'a Metric,
        root: &mut IdMap,
        refs: &mut Vec<&'a str>,
        visited: &[&str],
        literal: &dyn Fn(&str) -> Option<f64>,
    ) -> Result<(), ExprError> {
        if visited.contains(&m.name) {
            return Err(ExprError {
                at: 0,
                what: format!("recursion detected for {}", m.name),
            });
        }
        let ids = m.parsed()?.perf_ids(literal)?;
        *root = ids.union(std::mem::take(root));
        let pending: Vec<(String, &Metric)> = root
            .iter()
            .filter_map(|id| {
                let r = self
                    .metrics
                    .iter()
                    .find(|o| o.name.eq_ignore_ascii_case(id))?;
                Some((id.to_string(), r))
            })
            .collect();
        for (id, _) in &pending {
            root.remove(id);
        }
        let mut path = visited.to_vec();
        path.push(m.name);
        for (_, r) in pending {
            if refs.contains(&r.name) {
                continue;
            }
            refs.push(r.name);
            self.add_ids(r, root, refs, &path, literal)?;
        }
        Ok(())
    }

    /// Whether there are no metrics.
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
    }

    /// The metric groups, sorted, each once; metrics in no group are in perf's
    /// `No_group`.
    pub fn groups(&self) -> Vec<&'static str> {
        let mut g: Vec<&'static str> = self
            .metrics
            .iter()
            .filter(|m| m.listed)
            .flat_map(|m| {
                if m.groups.is_empty() {
                    &[NO_GROUP][..]
                } else {
                    m.groups
                }
            })
            .copied()
            .collect();
        g.sort_unstable();
        g.dedup();
        g
    }

    /// The metrics of a group (`No_group`: those in none, as perf matches it).
    pub fn of_group(&self, group: &str) -> Vec<&Metric> {
        self.metrics
            .iter()
            .filter(|m| {
                if m.groups.is_empty() {
                    group.eq_ignore_ascii_case(NO_GROUP)
                } else {
                    m.groups.iter().any(|g| g.eq_ignore_ascii_case(group))
                }
            })
            .collect()
    }

    /// A metric or a group by name, as perf 6.1 matches them (`match_metric`): every
    /// metric whose name or `;`-separated group list holds `name` (ignoring case) at its
    /// first occurrence as a whole item, `all` for every metric, `No_group` for those in
    /// none; in table order. `None` when nothing matches.
    pub fn resolve(&self, name: &str) -> Option<Vec<&Metric>> {
        let found: Vec<&Metric> = self
            .metrics
            .iter()
            .filter(|m| {
                let groups = (!m.groups.is_empty()).then(|| m.groups.join(";"));
                match_metric(groups.as_deref(), name) || match_metric(Some(m.name), name)
            })
            .collect();
        (!found.is_empty()).then_some(found)
    }
}

/// perf's `match_metric(n, list)`.
fn match_metric(n: Option<&str>, list: &str) -> bool {
    if list == "all" {
        return true;
    }
    let Some(n) = n else {
        return list.eq_ignore_ascii_case(NO_GROUP);
    };
    let (hay, needle) = (n.to_ascii_lowercase(), list.to_ascii_lowercase());
    let Some(at) = hay.find(&needle) else {
        return false;
    };
    let before = hay[..at].bytes().last();
    let after = hay.as_bytes().get(at + needle.len());
    matches!(before, None | Some(b';' | b' ')) && matches!(after, None | Some(b';'))
}

/// perf's CPUID string for this machine: `PERFKIT_CPUID`, else perf's `PERF_CPUID`, else
/// the CPU's own (arm64: `midr_el1` of cpu0 with variant and revision cleared, as perf;
/// elsewhere `/proc/cpuinfo`'s vendor, family, model and stepping).
pub fn system_cpuid() -> String {
    for var in ["PERFKIT_CPUID", "PERF_CPUID"] {
        if let Ok(v) = std::env::var(var)
            && !v.is_empty()
        {
            return v;
        }
    }
    if cfg!(target_arch = "aarch64") {
        let midr =
            std::fs::read_to_string("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1")
                .ok()
                .and_then(|s| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).ok());
        return midr.map_or_else(String::new, midr_cpuid);
    }
    CpuId::system().perf_cpuid()
}

/// perf's arm64 CPUID string for a MIDR: variant (bits 23:20) and revision (3:0) cleared,
/// 16 hex digits (`0x00000000410fd070`).
pub fn midr_cpuid(midr: u64) -> String {
    format!("0x{:016x}", midr & !0x00f0_000f)
}

/// Whether the NMI watchdog is on (perf's `sysctl__nmi_watchdog_enabled`:
/// `/proc/sys/kernel/nmi_watchdog` greater than 0; off when it cannot be read).
pub fn nmi_watchdog_enabled() -> bool {
    std::fs::read_to_string("/proc/sys/kernel/nmi_watchdog")
        .ok()
        .and_then(|s| s.trim().parse::<i64>().ok())
        .is_some_and(|v| v > 0)
}

/// perf's name for the group of metrics that name none.
const NO_GROUP: &str = "No_group";

/// What `perf list metric`, `metricgroup` and `--raw-dump metrics|metricgroups` print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    /// `perf list metric`: each metric with its description (and formula with details).
    Metrics,
    /// `perf list metricgroup`: the group names.
    Groups,
}

impl Listing {
    /// The listing a `perf list` filter word asks for.
    pub fn of_filter(word: &str) -> Option<Listing> {
        match word {
            "metric" | "metrics" => Some(Listing::Metrics),
            "metricgroup" | "metricgroups" => Some(Listing::Groups),
            _ => None,
        }
    }
}

impl Metrics {
    /// Write a listing as perf 6.1 does: `raw` is `--raw-dump` (names, space separated),
    /// `details` adds each metric's formula. A CPU without a table gets perf's empty
    /// heading and a line saying there are none.
    pub fn write_listing(
        &self,
        what: Listing,
        raw: bool,
        details: bool,
        out: &mut dyn std::io::Write,
    ) -> std::io::Result<()> {
        // perf collects the lines in a sorted string list: by name, each line once.
        let mut listed: Vec<&Metric> = self.metrics.iter().filter(|m| m.listed).collect();
        listed.sort_by_key(|m| (m.name, m.description));
        listed.dedup_by_key(|m| (m.name, m.description));
        let names: Vec<&str> = match what {
            Listing::Metrics => listed.iter().map(|m| m.name).collect(),
            Listing::Groups => self.groups(),
        };
        if raw {
            // perf: metric names joined by spaces, groups each followed by one.
            return match what {
                Listing::Metrics => writeln!(out, "{}", names.join(" ")),
                Listing::Groups => names.iter().try_for_each(|n| write!(out, "{n} ")),
            };
        }
        let heading = match what {
            Listing::Metrics => "Metrics",
            Listing::Groups => "Metric Groups",
        };
        writeln!(out, "\n{heading}:\n")?;
        if self.is_empty() {
            return writeln!(out, "  ({})", self.none_message());
        }
        match what {
            Listing::Metrics => {
                for m in listed {
                    // perf prints its NULL description (an empty one in the JSON) so.
                    let desc = if m.description.is_empty() {
                        "(null)"
                    } else {
                        m.description
                    };
                    writeln!(out, "  {}\n       [{desc}]", m.name)?;
                    if details {
                        writeln!(out, "       [{}]", m.expr)?;
                    }
                }
            }
            Listing::Groups => {
                for g in names {
                    writeln!(out, "{g}")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_by_cpuid_and_references() {
        let zen1 = Metrics::for_cpuid("AuthenticAMD-23-2F-0");
        let zen2 = Metrics::for_cpuid("AuthenticAMD-23-30-0");
        assert_eq!((zen1.table, zen2.table), ("amdzen1", "amdzen2"));
        assert_eq!(Metrics::for_cpuid("AuthenticAMD-25-11").table, "amdzen3");
        assert_eq!(
            Metrics::for_cpuid("GenuineIntel-6-9C-3").table,
            "elkhartlake"
        );
        for none in [
            "GenuineIntel-6-96-0-1",
            "0x00000000410fd070",
            "AuthenticAMD-26-1-0",
            "",
        ] {
            let m = Metrics::for_cpuid(none);
            assert!(m.is_empty(), "{none}");
            assert!(m.none_message().contains(&format!(
                "(CPUID {})",
                if none.is_empty() { "unknown" } else { none }
            )));
        }
        assert_eq!(midr_cpuid(0x411f_d073), "0x00000000410fd070");
        let ehl = Metrics::for_cpuid("GenuineIntel-6-96-0");
        assert_eq!(ehl.groups(), ["No_group"]);
        assert_eq!(ehl.of_group("no_GROUP").len(), 11);
        let cpi = ehl.resolve("cpi").unwrap()[0];
        let e = ehl.expanded(cpi).unwrap();
        assert_eq!(e.events(), ["INST_RETIRED.ANY", "cycles"]);
        let v = e.eval(&mut |n| Some(if n == "cycles" { 300.0 } else { 100.0 }));
        assert_eq!(v, Some(3.0));
        let k = ehl.resolve("Kernel_Utilization").unwrap()[0];
        assert_eq!(ehl.expanded(k).unwrap().events(), ["cycles:k", "cycles"]);
    }

    #[test]
    fn cpuinfo_identity() {
        let id = CpuId::from_cpuinfo(
            "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 17\n\
             model name\t: AMD EPYC\n\nprocessor\t: 1\nvendor_id\t: Other\n",
        );
        assert_eq!(
            id,
            CpuId {
                vendor: "AuthenticAMD".into(),
                family: 25,
                model: 17,
                stepping: 0
            }
        );
    }

    #[test]
    fn every_formula_parses_and_names_events() {
        let m = Metrics::for_cpu(&CpuId {
            vendor: "AuthenticAMD".into(),
            family: 25,
            model: 1,
            stepping: 0,
        });
        assert_eq!(m.metrics.len(), 13);
        for metric in &m.metrics {
            let e = metric
                .parsed()
                .unwrap_or_else(|e| panic!("{}: {e}", metric.name));
            assert!(!e.events().is_empty(), "{}", metric.name);
            assert!(!metric.groups.is_empty(), "{}", metric.name);
        }
        assert_eq!(
            m.groups(),
            [
                "branch_prediction",
                "data_fabric",
                "decoder",
                "l2_cache",
                "l3_cache",
                "tlb"
            ]
        );
        assert_eq!(m.resolve("L2_CACHE").map(|v| v.len()), Some(7));
        assert!(m.resolve("nosuch").is_none());
    }
}
