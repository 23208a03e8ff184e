//! The `perfkit list` catalogue: every event this machine can name, grouped by kind, with a
//! short description and whether it opens here.
//!
//! [`catalogue`] gathers the entries: the generalized hardware, software and cache events,
//! the aliases of every sysfs PMU (`msr/tsc/`), the raw, breakpoint and uprobe syntaxes,
//! tracepoints from tracefs, and libpfm4's events when the library is installed. With
//! [`ListOptions::probe`] each entry is tried with `perf_event_open` (disabled, on this
//! process) and marked available or not, with the kernel's reason; [`write_text`] and
//! [`write_json`] print them.
//!
//! Probing is cheap for everything but tracepoints: registering a tracepoint patches kernel
//! text, and a machine has thousands. When more than [`TRACEPOINT_PROBE_LIMIT`] tracepoints
//! match, one is opened and its answer stands for every tracepoint whose `id` file is
//! readable (the permission check is the same for all of them); the entry says so.

use std::io::{self, Write};

use perfkit::{Attr, Counter, ErrorKind, Target};
use perfkit_sys::{self as sys, perf_event_attr};
use serde::Serialize;

use crate::Env;
use crate::glob;
use crate::names;

/// Above this many matching tracepoints, one stands for all when probing.
pub const TRACEPOINT_PROBE_LIMIT: usize = 64;

/// The kind of an entry, in the order `perfkit list` prints them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Kind {
    /// Generalized hardware events (`PERF_TYPE_HARDWARE`).
    Hardware,
    /// Software events (`PERF_TYPE_SOFTWARE`).
    Software,
    /// Hardware cache events (`PERF_TYPE_HW_CACHE`).
    Cache,
    /// Aliases of a sysfs PMU (`pmu/alias/`).
    Pmu,
    /// Raw encodings: `rNNN`, `pmu/config=.../`.
    Raw,
    /// Hardware breakpoints: `mem:ADDR`.
    Breakpoint,
    /// User-space probes: `uprobe:BINARY:SYMBOL`.
    Uprobe,
    /// Tracepoints from tracefs (`subsys:event`).
    Tracepoint,
    /// PMU-specific events named by libpfm4 (`pmu::event`).
    Libpfm,
}

impl Kind {
    /// Every kind, in print order.
    pub const ALL: [Kind; 9] = [
        Kind::Hardware,
        Kind::Software,
        Kind::Cache,
        Kind::Pmu,
        Kind::Raw,
        Kind::Breakpoint,
        Kind::Uprobe,
        Kind::Tracepoint,
        Kind::Libpfm,
    ];

    /// The heading `perfkit list` prints above this kind's entries.
    pub fn heading(self) -> &'static str {
        match self {
            Kind::Hardware => "Hardware events",
            Kind::Software => "Software events",
            Kind::Cache => "Hardware cache events",
            Kind::Pmu => "Kernel PMU events (sysfs)",
            Kind::Raw => "Raw hardware event descriptors",
            Kind::Breakpoint => "Hardware breakpoints",
            Kind::Uprobe => "User-space probes",
            Kind::Tracepoint => "Tracepoints",
            Kind::Libpfm => "PMU events from libpfm4",
        }
    }

    /// The words that select this kind as a `perfkit list` filter (perf's `hw`, `sw`,
    /// `cache`, `tracepoint`, `pmu` and a few more).
    pub fn keywords(self) -> &'static [&'static str] {
        match self {
            Kind::Hardware => &["hw", "hardware"],
            Kind::Software => &["sw", "software"],
            Kind::Cache => &["cache", "hwcache"],
            Kind::Pmu => &["pmu"],
            Kind::Raw => &["raw"],
            Kind::Breakpoint => &["breakpoint", "bp", "mem"],
            Kind::Uprobe => &["uprobe", "uprobes"],
            Kind::Tracepoint => &["tracepoint", "tracepoints", "tp"],
            Kind::Libpfm => &["pfm", "libpfm", "libpfm4"],
        }
    }

    /// The kind a filter word names, if it is one of [`Kind::keywords`].
    pub fn from_keyword(word: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.keywords().iter().any(|w| w.eq_ignore_ascii_case(word)))
    }
}

/// Whether an entry opens on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "status", content = "reason")]
pub enum Availability {
    /// `perf_event_open` succeeded.
    Yes,
    /// It did not; the reason, in words.
    No(String),
    /// Not probed (probing off, or a syntax entry with nothing to open).
    Unknown,
}

impl Availability {
    /// `Some(true)` / `Some(false)` / `None` for unknown.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Availability::Yes => Some(true),
            Availability::No(_) => Some(false),
            Availability::Unknown => None,
        }
    }
}

/// One line of `perfkit list`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    /// What to write after `-e` (`cycles`, `msr/tsc/`, `sched:sched_switch`).
    pub name: String,
    /// Other accepted spellings (`cpu-cycles`).
    pub aliases: Vec<String>,
    /// Its kind.
    pub kind: Kind,
    /// A short description.
    pub description: String,
    /// The sysfs PMU it belongs to, for PMU and libpfm4 events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmu: Option<String>,
    /// The unit from sysfs (`Joules`), for PMU aliases with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    /// The scale from sysfs, for PMU aliases with one other than 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<f64>,
    /// `type=N,config=0x...` for entries with a fixed encoding.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub encoding: Option<String>,
    /// Whether it opens here.
    pub available: Availability,
    #[serde(skip)]
    attr: Option<perf_event_attr>,
    #[serde(skip)]
    cpu: Option<u32>,
}

impl Entry {
    fn new(kind: Kind, name: impl Into<String>, description: impl Into<String>) -> Entry {
        Entry {
            name: name.into(),
            aliases: Vec::new(),
            kind,
            description: description.into(),
            pmu: None,
            unit: None,
            scale: None,
            encoding: None,
            available: Availability::Unknown,
            attr: None,
            cpu: None,
        }
    }

    fn with_attr(mut self, attr: perf_event_attr) -> Entry {
        self.encoding = Some(encoding(&attr));
        self.attr = Some(attr);
        self
    }

    /// The attr this entry opens, when it has a fixed encoding.
    pub fn attr(&self) -> Option<&perf_event_attr> {
        self.attr.as_ref()
    }

    /// `name OR alias OR ...`, as perf list prints names.
    pub fn display_name(&self) -> String {
        let mut s = self.name.clone();
        for a in &self.aliases {
            s.push_str(" OR ");
            s.push_str(a);
        }
        s
    }

    fn matches(&self, pat: &str) -> bool {
        let lower = |s: &str| s.to_ascii_lowercase();
        let pat = lower(pat);
        let one = |name: &str| {
            let name = lower(name);
            if glob::is_glob(&pat) {
                glob::matches(&pat, &name)
            } else {
                name.contains(&pat)
            }
        };
        one(&self.name) || self.aliases.iter().any(|a| one(a))
    }
}

/// `type=N,config=0x...[,config1=..][,config2=..][,config3=..]`.
fn encoding(attr: &perf_event_attr) -> String {
    let mut s = format!("type={},config={:#x}", attr.type_, attr.config);
    names::push_extra_configs(attr, &mut s);
    s
}

/// What to gather.
#[derive(Clone, Debug)]
pub struct ListOptions {
    /// Try to open every entry to say whether it is available.
    pub probe: bool,
    /// Include libpfm4's events (can be thousands).
    pub libpfm: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions {
            probe: true,
            libpfm: true,
        }
    }
}

/// A gathered list, with notes worth one line each (e.g. "no hardware PMU here").
#[derive(Clone, Debug, Default, Serialize)]
pub struct Catalogue {
    /// The entries, grouped by kind in [`Kind::ALL`] order.
    pub entries: Vec<Entry>,
    /// Remarks about the machine, printed once at the end.
    pub notes: Vec<String>,
}

fn base_attr(type_: u32, config: u64) -> perf_event_attr {
    let mut a = perf_event_attr::new();
    a.type_ = type_;
    a.config = config;
    a.set(sys::attr_flags::DISABLED, true);
    a
}

/// Gather the catalogue. Each filter is a kind keyword (`hw`, `sw`, `cache`, `pmu`, `raw`,
/// `breakpoint`, `uprobe`, `tracepoint`, `pfm`) or a glob / substring matched against names
/// and aliases, case-insensitively, as in `perf list`; an entry is listed when it matches
/// any filter, or always when there are none.
pub fn catalogue(env: &Env, filter: Option<&str>, opts: &ListOptions) -> Catalogue {
    catalogue_of(env, filter.as_slice(), opts)
}

/// [`catalogue`] with several filters (their union, each entry once, in catalogue order).
pub fn catalogue_of(env: &Env, filters: &[&str], opts: &ListOptions) -> Catalogue {
    let kinds: Vec<Kind> = filters
        .iter()
        .filter_map(|f| Kind::from_keyword(f))
        .collect();
    let patterns: Vec<&str> = filters
        .iter()
        .copied()
        .filter(|f| Kind::from_keyword(f).is_none())
        .collect();
    let wanted = |k: Kind| filters.is_empty() || !patterns.is_empty() || kinds.contains(&k);
    let mut entries = Vec::new();
    let mut notes = Vec::new();

    if wanted(Kind::Hardware) {
        for s in names::HARDWARE {
            let mut e = Entry::new(Kind::Hardware, s.name, s.desc)
                .with_attr(base_attr(sys::PERF_TYPE_HARDWARE, s.config));
            e.aliases = s.aliases.iter().map(|a| a.to_string()).collect();
            entries.push(e);
        }
    }
    if wanted(Kind::Software) {
        for s in names::SOFTWARE {
            let mut e = Entry::new(Kind::Software, s.name, s.desc)
                .with_attr(base_attr(sys::PERF_TYPE_SOFTWARE, s.config));
            e.aliases = s.aliases.iter().map(|a| a.to_string()).collect();
            entries.push(e);
        }
    }
    if wanted(Kind::Cache) {
        for (name, config) in names::all_cache_names() {
            let desc = cache_description(config);
            entries.push(
                Entry::new(Kind::Cache, name, desc)
                    .with_attr(base_attr(sys::PERF_TYPE_HW_CACHE, config)),
            );
        }
    }
    if wanted(Kind::Pmu) {
        for pmu in env.pmus() {
            for alias in pmu.aliases.values() {
                let name = format!("{}/{}/", pmu.name, alias.name);
                let mut e = Entry::new(
                    Kind::Pmu,
                    name.clone(),
                    format!("{} event {} ({})", pmu.name, alias.name, alias.terms),
                );
                e.pmu = Some(pmu.name.clone());
                e.unit = (!alias.unit.is_empty()).then(|| alias.unit.clone());
                e.scale = (alias.scale != 1.0).then_some(alias.scale);
                match env.parse(&name) {
                    Ok(list) => {
                        if let Some(ev) = list.groups.first().and_then(|g| g.members.first()) {
                            e = e.with_attr(ev.attr);
                            e.cpu = ev.cpus.as_ref().and_then(|c| c.first().copied());
                        }
                    }
                    Err(err) => e.available = Availability::No(err.message.clone()),
                }
                entries.push(e);
            }
        }
    }
    if wanted(Kind::Raw) {
        let core = env.core_pmus();
        let core_name = core.first().map_or("cpu", |p| p.name.as_str()).to_string();
        let mut r = Entry::new(
            Kind::Raw,
            "rNNN",
            "a raw event: NNN is the hex config the core PMU takes (up to 64 bits)",
        );
        let mut t = Entry::new(
            Kind::Raw,
            format!("{core_name}/t1=v1[,t2=v2,...]/modifier"),
            "a PMU event by its sysfs format terms (see /sys/bus/event_source/devices/*/format)",
        );
        if opts.probe && core.is_empty() {
            let why = "no core PMU here (no hardware counters)".to_string();
            r.available = Availability::No(why.clone());
            t.available = Availability::No(why);
        }
        entries.push(r);
        entries.push(t);
    }
    if wanted(Kind::Breakpoint) {
        let mut e = Entry::new(
            Kind::Breakpoint,
            "mem:<addr>[/len][:access]",
            "hardware breakpoint: count accesses (r, w, x) to an address",
        );
        // A write watch on a local: the same open `stat -e mem:` would do.
        static WATCHED: u64 = 0;
        let mut a = base_attr(sys::PERF_TYPE_BREAKPOINT, 0);
        a.bp_type = sys::HW_BREAKPOINT_W;
        a.config1 = std::ptr::addr_of!(WATCHED) as u64; // bp_addr
        a.config2 = 8; // bp_len
        e.attr = Some(a);
        entries.push(e);
    }
    if wanted(Kind::Uprobe) {
        let mut u = Entry::new(
            Kind::Uprobe,
            "uprobe:<binary>:<symbol>[+offset]",
            "count calls of a function in a program or library (uretprobe: for returns)",
        );
        u.pmu = Some("uprobe".into());
        if opts.probe {
            u.available = match env.pmu("uprobe") {
                Some(_) => Availability::Yes,
                None => Availability::No("no uprobe PMU in sysfs (CONFIG_UPROBE_EVENTS)".into()),
            };
        }
        entries.push(u);
    }
    if wanted(Kind::Tracepoint) {
        match env.tracefs_status() {
            Ok(tfs) => {
                for subsys in crate::tracefs::subsystems(tfs) {
                    for event in crate::tracefs::events_of(tfs, &subsys) {
                        let name = format!("{subsys}:{event}");
                        let mut e = Entry::new(Kind::Tracepoint, name, "tracepoint");
                        match crate::tracefs::event_id(tfs, &subsys, &event) {
                            Ok(id) => e = e.with_attr(base_attr(sys::PERF_TYPE_TRACEPOINT, id)),
                            Err(err) => {
                                e.available =
                                    Availability::No(match std::error::Error::source(&err) {
                                        Some(cause) => format!("{err}: {cause}"),
                                        None => err.to_string(),
                                    })
                            }
                        }
                        entries.push(e);
                    }
                }
            }
            // Not mounted, or not readable by this user: which, and what to do.
            Err(e) => notes.push(format!("{e}, so no tracepoints are listed. {}", e.advice())),
        }
    }
    // Opening and closing a tracepoint costs the kernel tens of milliseconds (it patches
    // text); when the answer for all of them will come from one, start it now so it
    // overlaps the rest of the work.
    let tracepoint_probe = opts
        .probe
        .then(|| {
            entries
                .iter()
                .find(|e| e.kind == Kind::Tracepoint)
                .and_then(|e| e.attr)
        })
        .flatten()
        .map(|attr| std::thread::spawn(move || probe_attr(&attr, None)));
    if wanted(Kind::Libpfm) && opts.libpfm {
        if let Some(pfm) = env.pfm() {
            for ev in pfm.events() {
                let mut e = Entry::new(Kind::Libpfm, ev.name.clone(), ev.desc.clone());
                e.pmu = ev.name.split("::").next().map(str::to_string);
                entries.push(e);
            }
        }
    }

    if !filters.is_empty() {
        entries.retain(|e| kinds.contains(&e.kind) || patterns.iter().any(|p| e.matches(p)));
    }
    // libpfm4 encodings only for what survived the filter (there can be thousands).
    if let Some(pfm) = env.pfm() {
        for e in entries.iter_mut().filter(|e| e.kind == Kind::Libpfm) {
            match pfm.encode(&e.name) {
                Ok(enc) => *e = e.clone().with_attr(enc.attr),
                // Events whose unit mask must be chosen have no encoding of their own.
                Err(err) if err.contains("unit mask") => {
                    e.description
                        .push_str(" (takes a unit mask: pmu::EVENT:UMASK)");
                }
                Err(err) => e.available = Availability::No(format!("libpfm4: {err}")),
            }
        }
    }
    if opts.probe {
        probe_all(env, &mut entries, &mut notes, tracepoint_probe);
    }
    entries.sort_by_key(|e| e.kind);
    Catalogue { entries, notes }
}

fn cache_description(config: u64) -> String {
    let cache = names::CACHES
        .get((config & 0xff) as usize)
        .map_or("?", |c| c[0]);
    let op = names::CACHE_OPS
        .get(((config >> 8) & 0xff) as usize)
        .map_or("?", |o| o[1]);
    let what = if (config >> 16) & 0xff == 0 {
        "accesses"
    } else {
        "misses"
    };
    format!("{cache} {what} by {op}")
}

/// Open `attr` disabled on this process (or on `cpu` for uncore PMUs); retry without kernel
/// counting where paranoia forbids it, as `perf stat` does for unprivileged users.
fn probe_attr(attr: &perf_event_attr, cpu: Option<u32>) -> Availability {
    let target = match cpu {
        Some(c) => Target::cpu(c),
        None => Target::this_thread(),
    };
    let try_open = |a: &perf_event_attr| Counter::open(&Attr::from_raw(*a), &target).map(drop);
    let first = match try_open(attr) {
        Ok(()) => return Availability::Yes,
        Err(e) => e,
    };
    // As perf: PMUs that know nothing of guests (msr, uncore) refuse exclude_guest/host.
    let guest_bits = sys::attr_flags::EXCLUDE_GUEST | sys::attr_flags::EXCLUDE_HOST;
    if first.errno() == libc::EINVAL && attr.flags & guest_bits != 0 {
        let mut a = *attr;
        a.flags &= !guest_bits;
        if try_open(&a).is_ok() {
            return Availability::Yes;
        }
    }
    if first.kind() == ErrorKind::Permission && cpu.is_none() {
        let mut a = *attr;
        a.set(sys::attr_flags::EXCLUDE_KERNEL, true);
        a.set(sys::attr_flags::EXCLUDE_HV, true);
        if try_open(&a).is_ok() {
            return Availability::Yes;
        }
    }
    Availability::No(reason(&first))
}

fn reason(e: &perfkit::Error) -> String {
    match e.kind() {
        ErrorKind::NotSupported => "not supported here".into(),
        ErrorKind::Permission => {
            let p = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "?".into());
            format!("no permission (perf_event_paranoid={p}; run as root or lower it)")
        }
        ErrorKind::NoFreeCounter => "no free counter or breakpoint slot".into(),
        _ => {
            let io = e.io_error();
            format!("the kernel refused it: {io}")
        }
    }
}

fn probe_all(
    env: &Env,
    entries: &mut [Entry],
    notes: &mut Vec<String>,
    tracepoint_probe: Option<std::thread::JoinHandle<Availability>>,
) {
    let tracepoints = entries
        .iter()
        .filter(|e| e.kind == Kind::Tracepoint && e.attr.is_some())
        .count();
    let mut tracepoint_answer: Option<Availability> = None;
    let mut probe = tracepoint_probe;
    for e in entries.iter_mut() {
        if e.available != Availability::Unknown {
            continue;
        }
        let Some(attr) = e.attr else { continue };
        if e.kind == Kind::Tracepoint && tracepoints > TRACEPOINT_PROBE_LIMIT {
            let a = match (&mut tracepoint_answer, &mut probe) {
                (Some(a), _) => a,
                (slot, pending) => {
                    let answer = pending
                        .take()
                        .and_then(|h| h.join().ok())
                        .unwrap_or_else(|| probe_attr(&attr, None));
                    slot.insert(answer)
                }
            };
            e.available = a.clone();
            continue;
        }
        if e.kind == Kind::Libpfm
            && attr.type_ >= sys::PERF_TYPE_MAX
            && env.pmu_by_type(attr.type_).is_none()
        {
            e.available = Availability::No(format!(
                "libpfm4 encodes it for PMU type {}, which this machine does not have",
                attr.type_
            ));
            continue;
        }
        e.available = probe_attr(&attr, e.cpu);
    }
    let hw: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.kind == Kind::Hardware)
        .collect();
    if !hw.is_empty() && hw.iter().all(|e| e.available.as_bool() == Some(false)) {
        notes.push(
            "no hardware event opens here (a VM without a virtual PMU, or no PMU driver): \
             only software events, tracepoints, breakpoints and probes are available"
                .into(),
        );
    }
    if tracepoints > TRACEPOINT_PROBE_LIMIT {
        notes.push(format!(
            "{tracepoints} tracepoints: one was opened to check access and stands for all \
             (name fewer, e.g. `perfkit list 'sched:*'`, to try each)"
        ));
    }
}

/// Print the catalogue for people: a heading per kind, one event per line with its
/// description (unless `desc` is false) and, when it does not open here, why.
pub fn write_text(cat: &Catalogue, desc: bool, w: &mut impl Write) -> io::Result<()> {
    write_text_with(cat, desc, false, w)
}

/// [`write_text`], with each entry's encoding (`type=N,config=0x...`) on a line of its own
/// below it when `details` is set (`perf list --details`).
pub fn write_text_with(
    cat: &Catalogue,
    desc: bool,
    details: bool,
    w: &mut impl Write,
) -> io::Result<()> {
    let mut last: Option<Kind> = None;
    for e in &cat.entries {
        if last != Some(e.kind) {
            if last.is_some() {
                writeln!(w)?;
            }
            writeln!(w, "{}:", e.kind.heading())?;
            last = Some(e.kind);
        }
        let name = e.display_name();
        let mut line = format!("  {name:<50}");
        if desc && !e.description.is_empty() && e.kind != Kind::Tracepoint {
            line.push(' ');
            line.push_str(&e.description);
        }
        if let Some(u) = &e.unit {
            line.push_str(&format!(" [unit: {u}]"));
        }
        if let Availability::No(why) = &e.available {
            line.push_str(&format!("  <{why}>"));
        }
        writeln!(w, "{}", line.trim_end())?;
        if details && let Some(enc) = &e.encoding {
            writeln!(w, "       [{enc}]")?;
        }
    }
    if cat.entries.is_empty() {
        writeln!(w, "no events match")?;
    }
    for n in &cat.notes {
        writeln!(w)?;
        writeln!(w, "note: {n}")?;
    }
    Ok(())
}

/// Print the names only, each followed by a space and no newline at the end, as
/// `perf list --raw-dump` prints them for shell completion.
pub fn write_raw_dump(cat: &Catalogue, w: &mut impl Write) -> io::Result<()> {
    for e in &cat.entries {
        write!(w, "{} ", e.name)?;
    }
    Ok(())
}

/// Print the catalogue as one JSON document: `{"events": [...], "notes": [...]}`; each
/// event has `name`, `aliases`, `kind`, `description`, optional `pmu`, `unit`, `scale`,
/// `encoding`, and `available` as `{"status": "yes"|"no"|"unknown", "reason": ...}`.
pub fn write_json(cat: &Catalogue, w: &mut impl Write) -> io::Result<()> {
    #[derive(Serialize)]
    struct Doc<'a> {
        events: &'a [Entry],
        notes: &'a [String],
    }
    serde_json::to_writer_pretty(
        &mut *w,
        &Doc {
            events: &cat.entries,
            notes: &cat.notes,
        },
    )?;
    writeln!(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_select_kinds() {
        assert_eq!(Kind::from_keyword("hw"), Some(Kind::Hardware));
        assert_eq!(Kind::from_keyword("SW"), Some(Kind::Software));
        assert_eq!(Kind::from_keyword("tracepoint"), Some(Kind::Tracepoint));
        assert_eq!(Kind::from_keyword("cycles"), None);
    }

    #[test]
    fn names_match_by_glob_or_substring() {
        let mut e = Entry::new(Kind::Hardware, "cycles", "");
        e.aliases = vec!["cpu-cycles".into()];
        assert!(e.matches("cycl"));
        assert!(e.matches("CPU-*"));
        assert!(!e.matches("instr*"));
    }

    #[test]
    fn encodings_name_every_config_word_in_use() {
        let mut a = base_attr(8, 0x3c);
        a.config2 = 5;
        assert_eq!(encoding(&a), "type=8,config=0x3c,config2=0x5");
    }
}
