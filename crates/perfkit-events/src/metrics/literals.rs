//! The values of perf's `#literals` on this machine (perf 6.1's `expr__get_literal`).
//!
//! `#num_cpus` is the highest present CPU plus one; `#num_packages`, `#num_dies` and
//! `#num_cores` count the distinct `package_cpus_list`, `die_cpus_list` and
//! `core_cpus_list` (else `thread_siblings_list`) strings of the online CPUs' topology;
//! `#smt_on` (any case) is `/sys/devices/system/cpu/smt/active` == 1, else whether a core
//! lists more than one CPU; `#core_wide` is true only when counting system-wide with SMT
//! off (perf also checks the CPU list when SMT is on; perfkit says false there);
//! `#system_tsc_freq` is the frequency in the model name (`@ 2.10GHz`) of an Intel CPU,
//! 0 elsewhere (perf asks CPUID leaf 0x15 first).

use std::collections::BTreeSet;
use std::fs;

/// Literal values for one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Literals {
    /// `#num_cpus`.
    pub num_cpus: f64,
    /// `#num_packages`.
    pub num_packages: f64,
    /// `#num_dies`.
    pub num_dies: f64,
    /// `#num_cores`.
    pub num_cores: f64,
    /// `#smt_on`.
    pub smt_on: bool,
    /// `#core_wide`.
    pub core_wide: bool,
    /// `#system_tsc_freq`, in Hz.
    pub tsc_freq: f64,
}

const CPU: &str = "/sys/devices/system/cpu";

/// CPUs in a list like `0-3,8`.
fn cpu_list(s: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            out.extend(a..=b);
        }
    }
    out
}

fn distinct(cpus: &[u32], files: &[&str]) -> f64 {
    let mut seen = BTreeSet::new();
    for c in cpus {
        let text = files
            .iter()
            .find_map(|f| fs::read_to_string(format!("{CPU}/cpu{c}/topology/{f}")).ok());
        if let Some(t) = text {
            seen.insert(t.trim().to_string());
        }
    }
    seen.len() as f64
}

impl Literals {
    /// This machine's values; `system_wide`: counting every CPU (`-a`).
    pub fn system(system_wide: bool) -> Literals {
        let read = |f: &str| fs::read_to_string(format!("{CPU}/{f}")).unwrap_or_default();
        let online = cpu_list(&read("online"));
        let num_cpus = cpu_list(&read("present"))
            .into_iter()
            .max()
            .map_or(0.0, |m| f64::from(m) + 1.0);
        let cores = ["core_cpus_list", "thread_siblings_list"];
        let smt_on = match read("smt/active").trim().parse::<i32>() {
            Ok(v) => v == 1,
            Err(_) => online.iter().any(|c| {
                cores.iter().any(|f| {
                    fs::read_to_string(format!("{CPU}/cpu{c}/topology/{f}"))
                        .is_ok_and(|t| cpu_list(&t).len() > 1)
                })
            }),
        };
        Literals {
            num_cpus,
            num_packages: distinct(&online, &["package_cpus_list", "core_siblings_list"]),
            num_dies: distinct(&online, &["die_cpus_list"]),
            num_cores: distinct(&online, &cores),
            smt_on,
            core_wide: system_wide && !smt_on,
            tsc_freq: tsc_freq(&fs::read_to_string("/proc/cpuinfo").unwrap_or_default()),
        }
    }

    /// The value of `#name` as perf names it (`None`: perf does not know it).
    pub fn get(&self, name: &str) -> Option<f64> {
        let flag = |b: bool| if b { 1.0 } else { 0.0 };
        Some(match name {
            "#num_cpus" => self.num_cpus,
            "#num_packages" => self.num_packages,
            "#num_dies" => self.num_dies,
            "#num_cores" => self.num_cores,
            "#core_wide" => flag(self.core_wide),
            n if n.eq_ignore_ascii_case("#smt_on") => flag(self.smt_on),
            n if n.eq_ignore_ascii_case("#system_tsc_freq") => self.tsc_freq,
            _ => return None,
        })
    }
}

/// An Intel CPU's nominal frequency from its model name (`... @ 2.10GHz`), in Hz.
fn tsc_freq(cpuinfo: &str) -> f64 {
    if !cpuinfo.contains("GenuineIntel") {
        return 0.0;
    }
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.rsplit_once('@'))
        .and_then(|(_, f)| f.trim().strip_suffix("GHz")?.trim().parse::<f64>().ok())
        .map_or(0.0, |ghz| ghz * 1e9)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_and_names() {
        let l = Literals::system(false);
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(l.num_cpus >= 1.0 && l.num_cores >= 1.0 && l.num_packages >= 1.0);
        assert!(l.num_cores <= l.num_cpus && l.num_packages <= l.num_cores);
        assert!(l.num_cpus >= cpus.min(l.num_cpus));
        assert!(!l.core_wide, "core_wide needs system-wide counting");
        assert_eq!(Literals::system(true).core_wide, !l.smt_on);
        assert_eq!(l.get("#SMT_on"), l.get("#smt_on"));
        assert_eq!(l.get("#Num_cores"), None);
        assert_eq!(cpu_list("0-2,5\n"), [0, 1, 2, 5]);
        assert_eq!(
            tsc_freq("vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.10GHz\n"),
            2.1e9
        );
        assert_eq!(
            tsc_freq("vendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC @ 2GHz\n"),
            0.0
        );
    }
}
