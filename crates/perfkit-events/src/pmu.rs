//! PMU discovery from sysfs (`/sys/bus/event_source/devices/<pmu>/`): the dynamic `type`,
//! the `format/` bit layouts that map term names onto `config`, `config1`, `config2`,
//! `config3`, the `events/` aliases with their `.scale` and `.unit`, `caps/`, `cpumask` /
//! `cpus`, and `nr_addr_filters`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Which attr word a format field writes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
pub enum ConfigWord {
    /// `attr.config`
    Config,
    /// `attr.config1`
    Config1,
    /// `attr.config2`
    Config2,
    /// `attr.config3`
    Config3,
}

impl ConfigWord {
    /// The sysfs spelling (`config`, `config1` ...).
    pub fn name(self) -> &'static str {
        match self {
            ConfigWord::Config => "config",
            ConfigWord::Config1 => "config1",
            ConfigWord::Config2 => "config2",
            ConfigWord::Config3 => "config3",
        }
    }
    fn parse(s: &str) -> Option<ConfigWord> {
        Some(match s {
            "config" => ConfigWord::Config,
            "config1" => ConfigWord::Config1,
            "config2" => ConfigWord::Config2,
            "config3" => ConfigWord::Config3,
            _ => return None,
        })
    }
    /// The attr field this word names.
    pub fn field(self, attr: &mut perfkit_sys::perf_event_attr) -> &mut u64 {
        match self {
            ConfigWord::Config => &mut attr.config,
            ConfigWord::Config1 => &mut attr.config1,
            ConfigWord::Config2 => &mut attr.config2,
            ConfigWord::Config3 => &mut attr.config3,
        }
    }
}

/// A `format/<name>` file: `config:0-7,32-35` means the value's low 8 bits go to config
/// bits 0-7 and its next 4 bits to config bits 32-35.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Format {
    /// Term name (the file name).
    pub name: String,
    /// Target word.
    pub word: ConfigWord,
    /// Inclusive bit ranges, lowest value bits first.
    pub ranges: Vec<(u32, u32)>,
}

impl Format {
    /// Parse the contents of a format file (`config:0-7,32-35`, `config1:0-63`, `config:21`).
    pub fn parse(name: &str, text: &str) -> Result<Format, String> {
        let text = text.trim();
        let (word, ranges) = text
            .split_once(':')
            .ok_or_else(|| format!("format `{name}`: expected `config:BITS`, got `{text}`"))?;
        let word = ConfigWord::parse(word.trim())
            .ok_or_else(|| format!("format `{name}`: unknown attr word `{word}`"))?;
        let mut out = Vec::new();
        for r in ranges.split(',') {
            let r = r.trim();
            let (lo, hi) = match r.split_once('-') {
                Some((a, b)) => (a.trim(), b.trim()),
                None => (r, r),
            };
            let lo: u32 = lo
                .parse()
                .map_err(|_| format!("format `{name}`: bad bit `{lo}`"))?;
            let hi: u32 = hi
                .parse()
                .map_err(|_| format!("format `{name}`: bad bit `{hi}`"))?;
            if lo > hi || hi > 63 {
                return Err(format!("format `{name}`: bad bit range `{r}`"));
            }
            out.push((lo, hi));
        }
        Ok(Format {
            name: name.to_string(),
            word,
            ranges: out,
        })
    }

    /// Number of value bits the field holds.
    pub fn width(&self) -> u32 {
        self.ranges.iter().map(|(lo, hi)| hi - lo + 1).sum()
    }

    /// The bits of its word this field occupies.
    pub fn mask(&self) -> u64 {
        self.ranges.iter().fold(0, |m, &(lo, hi)| {
            let w = hi - lo + 1;
            m | if w >= 64 {
                u64::MAX
            } else {
                ((1u64 << w) - 1) << lo
            }
        })
    }

    /// Largest value the field holds.
    pub fn max(&self) -> u64 {
        let w = self.width();
        if w >= 64 { u64::MAX } else { (1u64 << w) - 1 }
    }

    /// Scatter `value` into `word` at this field's bits (clearing them first); `Err` if
    /// `value` does not fit.
    pub fn apply(&self, word: &mut u64, value: u64) -> Result<(), u64> {
        if value > self.max() {
            return Err(self.max());
        }
        let mut v = value;
        for &(lo, hi) in &self.ranges {
            let w = hi - lo + 1;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            *word &= !(mask << lo);
            *word |= (v & mask) << lo;
            v = if w >= 64 { 0 } else { v >> w };
        }
        Ok(())
    }

    /// Gather this field's value back out of `word` (inverse of [`apply`](Self::apply)).
    pub fn extract(&self, word: u64) -> u64 {
        let mut v = 0u64;
        let mut shift = 0u32;
        for &(lo, hi) in &self.ranges {
            let w = hi - lo + 1;
            let mask = if w >= 64 { u64::MAX } else { (1u64 << w) - 1 };
            if shift < 64 {
                v |= ((word >> lo) & mask) << shift;
            }
            shift += w;
        }
        v
    }
}

/// An `events/<name>` alias: the term list it stands for, and its scale and unit.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Alias {
    /// Alias name (`tsc`, `energy-pkg`).
    pub name: String,
    /// The file's terms (`event=0x3c,umask=0x00`).
    pub terms: String,
    /// `<name>.scale`, 1.0 if absent.
    pub scale: f64,
    /// `<name>.unit`, empty if absent.
    pub unit: String,
}

/// One PMU under `/sys/bus/event_source/devices`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Pmu {
    /// Directory name (`cpu`, `msr`, `uprobe`, `cpu_core`).
    pub name: String,
    /// The dynamic `attr.type` (`type` file).
    pub type_: u32,
    /// `format/` fields by name.
    pub formats: BTreeMap<String, Format>,
    /// `events/` aliases by name.
    pub aliases: BTreeMap<String, Alias>,
    /// `caps/` files (name -> trimmed contents).
    pub caps: BTreeMap<String, String>,
    /// CPUs from `cpumask` (uncore PMUs: the CPU to open on) or `cpus` (hybrid core PMUs).
    pub cpus: Option<Vec<u32>>,
    /// `nr_addr_filters`, if the PMU takes address filters.
    pub nr_addr_filters: Option<u32>,
    /// Whether this is a core (CPU) PMU: named `cpu`, or with a `cpus` file as on hybrid
    /// and heterogeneous machines (`cpu_core`, `cpu_atom`, `armv8_cortex_a53`).
    pub is_core: bool,
}

impl Pmu {
    /// The `events/` alias `name`, matched ignoring case as perf 6.1 matches aliases
    /// (`TSC` is `msr/tsc/`, `INST_RETIRED` is `armv8_pmuv3_0/inst_retired/`).
    pub fn alias(&self, name: &str) -> Option<&Alias> {
        self.aliases.get(name).or_else(|| {
            self.aliases
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, a)| a)
        })
    }

    /// Read one PMU directory. Unreadable optional files are skipped; a missing or bad
    /// `type` is an error.
    pub fn read(dir: &Path) -> Result<Pmu, String> {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ty = fs::read_to_string(dir.join("type"))
            .map_err(|e| format!("{}: {e}", dir.join("type").display()))?;
        let type_ = ty
            .trim()
            .parse()
            .map_err(|_| format!("{}: bad type `{}`", dir.join("type").display(), ty.trim()))?;
        let mut formats = BTreeMap::new();
        for (fname, path) in list_dir(&dir.join("format")) {
            if let Ok(text) = fs::read_to_string(&path) {
                if let Ok(f) = Format::parse(&fname, &text) {
                    formats.insert(fname, f);
                }
            }
        }
        let mut aliases = BTreeMap::new();
        let edir = dir.join("events");
        for (ename, path) in list_dir(&edir) {
            if ename.contains('.') {
                continue; // .scale, .unit, .per-pkg, .snapshot
            }
            let Ok(terms) = fs::read_to_string(&path) else {
                continue;
            };
            let scale = fs::read_to_string(edir.join(format!("{ename}.scale")))
                .ok()
                .and_then(|s| s.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            let unit = fs::read_to_string(edir.join(format!("{ename}.unit")))
                .map(|s| s.trim().to_string())
                .unwrap_or_default();
            aliases.insert(
                ename.clone(),
                Alias {
                    name: ename,
                    terms: terms.trim().to_string(),
                    scale,
                    unit,
                },
            );
        }
        let mut caps = BTreeMap::new();
        for (cname, path) in list_dir(&dir.join("caps")) {
            if let Ok(t) = fs::read_to_string(&path) {
                caps.insert(cname, t.trim().to_string());
            }
        }
        let cpus_file = fs::read_to_string(dir.join("cpus")).ok();
        let cpumask = fs::read_to_string(dir.join("cpumask")).ok();
        let cpus = cpus_file
            .as_deref()
            .or(cpumask.as_deref())
            .and_then(|s| parse_cpu_list(s.trim()).ok());
        let nr_addr_filters = fs::read_to_string(dir.join("nr_addr_filters"))
            .ok()
            .and_then(|s| s.trim().parse().ok());
        let is_core = name == "cpu" || cpus_file.is_some();
        Ok(Pmu {
            name,
            type_,
            formats,
            aliases,
            caps,
            cpus,
            nr_addr_filters,
            is_core,
        })
    }
}

/// Sorted `(name, path)` of the entries of `dir` (empty if it cannot be read).
pub(crate) fn list_dir(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut v: Vec<(String, PathBuf)> = rd
        .filter_map(|e| e.ok())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    v.sort();
    v
}

/// Parse a kernel CPU list (`0-3,8,10-11`).
pub fn parse_cpu_list(s: &str) -> Result<Vec<u32>, String> {
    let mut out = Vec::new();
    for range in perfkit_sys::cpulist::ranges(s) {
        match range {
            Some((a, b)) if b - a <= 65536 => out.extend(a..=b),
            Some((a, b)) => return Err(format!("bad CPU range `{a}-{b}`")),
            None => return Err(format!("bad CPU list `{s}`")),
        }
    }
    Ok(out)
}

/// Every PMU under `devices` (normally `/sys/bus/event_source/devices`), sorted by name.
/// PMUs whose `type` cannot be read are skipped.
pub fn read_pmus(devices: &Path) -> Vec<Pmu> {
    list_dir(devices)
        .into_iter()
        .filter_map(|(_, p)| Pmu::read(&p).ok())
        .collect()
}
