//! The values of perf's `#literals` on this machine (perf 6.1's `expr__get_literal`).
//!
//! `#num_cpus` is the highest present CPU plus one; `#num_packages`, `#num_dies` and
//! `#num_cores` count the distinct `package_cpus_list`, `die_cpus_list` and
//! `core_cpus_list` (else `thread_siblings_list`) strings of the online CPUs' topology;
//! `#smt_on` (any case) is `/sys/devices/system/cpu/smt/active` == 1, else whether a core
//! lists more than one CPU; `#core_wide` is true only when counting system-wide with SMT
//! off (perf also checks the CPU list when SMT is on; perfkit says false there);
//! `#system_tsc_freq` is perf's `arch_get_tsc_freq` (x86): 0 unless CPUID's vendor is
//! Intel's; CPUID leaf 0x15 (crystal clock × numerator / denominator) where the CPU has
//! it and fills it in, else the frequency in `/proc/cpuinfo`'s first `model name` with
//! ` @ ` (`Intel(R) Xeon(R) Gold 6154 CPU @ 3.00GHz`: 3e9); 0 on other architectures.

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
    perfkit_sys::cpulist::ranges(s)
        .flatten()
        .flat_map(|(a, b)| a..=b)
        .collect()
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
            tsc_freq: tsc_freq(tsc_cpuid().as_ref(), &|| {
                fs::read_to_string("/proc/cpuinfo").unwrap_or_default()
            }),
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

/// What `#system_tsc_freq` is computed from: CPUID's vendor string and highest basic
/// leaf, and leaf 0x15's EAX (denominator), EBX (numerator) and ECX (crystal Hz).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TscCpuid {
    vendor: String,
    max_leaf: u32,
    leaf15: (u32, u32, u32),
}

/// This CPU's answers (none off x86_64).
fn tsc_cpuid() -> Option<TscCpuid> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__cpuid, __cpuid_count};
        // SAFETY: CPUID exists on every x86_64 CPU and only reads identification
        // registers (the intrinsics are safe functions from Rust 1.87 on; the block is for
        // the workspace's older minimum).
        #[allow(unsafe_code, unused_unsafe)]
        let (l0, l15) = unsafe { (__cpuid(0), __cpuid_count(0x15, 0)) };
        let vendor: Vec<u8> = [l0.ebx, l0.edx, l0.ecx]
            .iter()
            .flat_map(|r| r.to_le_bytes())
            .collect();
        Some(TscCpuid {
            vendor: String::from_utf8_lossy(&vendor).into_owned(),
            max_leaf: l0.eax,
            leaf15: (l15.eax, l15.ebx, l15.ecx),
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// perf's `arch_get_tsc_freq` for these CPUID answers and `/proc/cpuinfo` text, in Hz.
fn tsc_freq(id: Option<&TscCpuid>, cpuinfo: &dyn Fn() -> String) -> f64 {
    let Some(id) = id.filter(|id| id.vendor.contains("Intel")) else {
        return 0.0;
    };
    match id.leaf15 {
        (a, b, c) if id.max_leaf >= 0x15 && a != 0 && b != 0 && c != 0 => {
            f64::from(c) * f64::from(b) / f64::from(a)
        }
        _ => cpuinfo_tsc_freq(&cpuinfo()),
    }
}

/// perf's `cpuinfo_tsc_freq`: the first `model name` line with ` @ ` and a number after
/// it (`sscanf(" @ %lfGHz")`), in GHz, as Hz; 0 when none has one.
fn cpuinfo_tsc_freq(cpuinfo: &str) -> f64 {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("model name"))
        .find_map(|l| {
            let rest = l.get(11..)?;
            let after = &rest[rest.find(" @ ")? + 3..];
            super::scale_unit::strtod(after).map(|(v, _)| v)
        })
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
    }

    #[test]
    fn tsc_frequency_as_perf_finds_it() {
        let intel = |max_leaf, leaf15| TscCpuid {
            vendor: "GenuineIntel".into(),
            max_leaf,
            leaf15,
        };
        let xeon = || "model name\t: Intel(R) Xeon(R) Gold 6154 CPU @ 3.00GHz\n".to_string();
        // Leaf 0x15 filled in: crystal 25 MHz x 168 / 2 = 2.1 GHz, whatever the model says.
        assert_eq!(
            tsc_freq(Some(&intel(0x16, (2, 168, 25_000_000))), &xeon),
            2.1e9
        );
        // Leaf 0x15 present but not enumerated (ECX 0), or beyond the highest leaf: the
        // model name's frequency.
        assert_eq!(tsc_freq(Some(&intel(0x16, (2, 168, 0))), &xeon), 3e9);
        assert_eq!(tsc_freq(Some(&intel(0x14, (2, 168, 25))), &xeon), 3e9);
        // perf reads the number even without `GHz` after it, and skips lines without ` @ `.
        let two = || "model name\t: Some CPU\nmodel name\t: X @ 2.5\n".to_string();
        assert_eq!(tsc_freq(Some(&intel(1, (0, 0, 0))), &two), 2.5e9);
        let none = || "model name\t: Intel(R) Core(TM) i7\n".to_string();
        assert_eq!(tsc_freq(Some(&intel(1, (0, 0, 0))), &none), 0.0);
        // Not Intel (CPUID's vendor, not /proc/cpuinfo's), or not x86: 0.
        let amd = TscCpuid {
            vendor: "AuthenticAMD".into(),
            max_leaf: 0x16,
            leaf15: (2, 168, 25_000_000),
        };
        assert_eq!(tsc_freq(Some(&amd), &xeon), 0.0);
        assert_eq!(tsc_freq(None, &xeon), 0.0);
        // This machine: CPUID answers, and the literal is what they give.
        if let Some(id) = tsc_cpuid() {
            assert_eq!(id.vendor.len(), 12);
            let l = Literals::system(false);
            let cpuinfo = || std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
            assert_eq!(l.tsc_freq, tsc_freq(Some(&id), &cpuinfo));
            assert_eq!(l.get("#SYSTEM_TSC_FREQ"), Some(l.tsc_freq));
        }
    }
}
