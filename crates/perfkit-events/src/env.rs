//! Where the parser looks things up: the sysfs PMU directory, tracefs, and libpfm4. All
//! injectable, so tests parse against fixture trees.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::TracefsError;
use crate::pfm::Pfm;
use crate::pmu::{Pmu, read_pmus};

/// The sysfs directory of PMUs on a real machine.
pub const SYSFS_PMUS: &str = "/sys/bus/event_source/devices";

/// Whether and how to use libpfm4 for names perf does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PfmSetting {
    /// Never use libpfm4.
    Disabled,
    /// `dlopen("libpfm.so.4")` on first use, if it is installed.
    System,
    /// Load the library at this path.
    Path(PathBuf),
}

/// The environment the parser resolves names in.
///
/// [`Env::system`] reads the machine; [`Env::new`] takes a fixture tree: `sysfs` is a
/// directory laid out like `/sys/bus/event_source/devices` (one sub-directory per PMU with
/// `type`, `format/`, `events/`, ...), `tracefs` one laid out like `/sys/kernel/tracing`
/// (`events/<subsys>/<event>/{id,format}`).
#[derive(Debug)]
pub struct Env {
    /// PMU directory (`/sys/bus/event_source/devices`).
    pub sysfs: PathBuf,
    /// tracefs mount point, if any.
    pub tracefs: Option<PathBuf>,
    /// libpfm4 use.
    pub pfm: PfmSetting,
    pmus: OnceLock<Vec<Pmu>>,
    pfm_lib: OnceLock<Option<Pfm>>,
    /// Where tracefs was looked for, when `tracefs` is None (for the error).
    tracefs_tried: Vec<PathBuf>,
}

impl Env {
    /// This machine: sysfs PMUs, tracefs where it is mounted (not mounting it; see
    /// [`crate::tracefs::find_or_mount_tracefs`]), libpfm4 if installed.
    ///
    /// tracefs mounted where this user cannot read it is still its mount point, so that
    /// [`Env::tracefs_status`] can say so rather than "not mounted".
    pub fn system() -> Env {
        let tracefs = crate::tracefs::find_tracefs().or_else(|| {
            let mounts = crate::tracefs_error::tracefs_mounts();
            crate::tracefs::TRACEFS_PATHS
                .iter()
                .map(PathBuf::from)
                .find(|p| mounts.contains(p))
                .or_else(|| mounts.into_iter().next())
        });
        let mut env = Env::new(SYSFS_PMUS, tracefs).with_pfm(PfmSetting::System);
        env.tracefs_tried = crate::tracefs::TRACEFS_PATHS.map(PathBuf::from).to_vec();
        env
    }

    /// A fixture environment, with libpfm4 disabled.
    pub fn new(sysfs: impl Into<PathBuf>, tracefs: Option<PathBuf>) -> Env {
        Env {
            sysfs: sysfs.into(),
            tracefs,
            pfm: PfmSetting::Disabled,
            pmus: OnceLock::new(),
            pfm_lib: OnceLock::new(),
            tracefs_tried: Vec::new(),
        }
    }

    /// Choose libpfm4 use.
    pub fn with_pfm(mut self, pfm: PfmSetting) -> Env {
        self.pfm = pfm;
        self.pfm_lib = OnceLock::new();
        self
    }

    /// Every PMU, read once.
    pub fn pmus(&self) -> &[Pmu] {
        self.pmus.get_or_init(|| read_pmus(&self.sysfs))
    }

    /// The PMU named `name`.
    pub fn pmu(&self, name: &str) -> Option<&Pmu> {
        self.pmus().iter().find(|p| p.name == name)
    }

    /// The PMU whose dynamic type is `ty`.
    pub fn pmu_by_type(&self, ty: u32) -> Option<&Pmu> {
        self.pmus().iter().find(|p| p.type_ == ty)
    }

    /// The core (CPU) PMUs: one on ordinary machines (`cpu`), several on hybrid ones.
    pub fn core_pmus(&self) -> Vec<&Pmu> {
        self.pmus().iter().filter(|p| p.is_core).collect()
    }

    /// Whether generic hardware events must be opened once per core PMU (more than one).
    pub fn is_hybrid(&self) -> bool {
        self.core_pmus().len() > 1
    }

    /// libpfm4, loaded on first use (None if disabled or not installed).
    pub fn pfm(&self) -> Option<&Pfm> {
        self.pfm_lib
            .get_or_init(|| match &self.pfm {
                PfmSetting::Disabled => None,
                PfmSetting::System => Pfm::load(None).ok(),
                PfmSetting::Path(p) => Pfm::load(Some(p)).ok(),
            })
            .as_ref()
    }

    /// The tracefs root, if known.
    pub fn tracefs(&self) -> Option<&Path> {
        self.tracefs.as_deref()
    }

    /// The tracefs root if tracepoints can be looked up in it (its `events` directory reads),
    /// else why not: not mounted, or not readable by this user. Reads the directory each
    /// call.
    pub fn tracefs_status(&self) -> Result<&Path, TracefsError> {
        let Some(t) = self.tracefs() else {
            return Err(TracefsError::NotMounted {
                tried: self.tracefs_tried.clone(),
            });
        };
        match std::fs::read_dir(t.join("events")) {
            Ok(_) => Ok(t),
            Err(e) => Err(TracefsError::from_read_error(t, e)),
        }
    }

    /// Parse an event list (`-e` argument). See [`crate::parse`].
    pub fn parse(&self, input: &str) -> Result<crate::EventList, crate::ParseError> {
        crate::parse::parse(self, input)
    }

    /// The name perf would print for `attr`, resolving tracepoint ids through tracefs and
    /// dynamic PMU types through sysfs (`sched:sched_switch`, `msr/tsc/`); see
    /// [`crate::names::name_of`] for the rest.
    pub fn name_of(&self, attr: &perfkit_sys::perf_event_attr) -> String {
        let m = crate::names::modifier_suffix(attr);
        if attr.type_ == perfkit_sys::PERF_TYPE_TRACEPOINT {
            if let Some(n) = self
                .tracefs()
                .and_then(|t| crate::tracefs::name_of_id(t, attr.config))
            {
                return format!("{n}{m}");
            }
        }
        // The core PMU's raw type: its sysfs alias when one matches; `rNNN` cannot carry
        // config1..3, so those need the `cpu/config=...,config1=.../` form.
        if attr.type_ == perfkit_sys::PERF_TYPE_RAW {
            if let Some(p) = self.pmu_by_type(attr.type_) {
                if let Some(n) = crate::parse::pmu_alias_name(p, attr) {
                    return crate::names::with_modifiers(n, &m);
                }
                if (attr.config1, attr.config2, attr.config3) != (0, 0, 0) {
                    return crate::names::with_modifiers(crate::parse::pmu_terms_name(p, attr), &m);
                }
            }
        }
        // Hybrid machines: a hardware or cache event of one core PMU (its type in the
        // high 32 bits of config) is `cpu_core/cycles/`.
        let pmu_bits = attr.config >> perfkit_sys::PERF_PMU_TYPE_SHIFT;
        if matches!(
            attr.type_,
            perfkit_sys::PERF_TYPE_HARDWARE | perfkit_sys::PERF_TYPE_HW_CACHE
        ) && pmu_bits != 0
            && let Some(p) = self.pmu_by_type(pmu_bits as u32)
        {
            let mut plain = *attr;
            plain.config &= perfkit_sys::PERF_HW_EVENT_MASK;
            let base = crate::names::base_name(&plain);
            if !base.contains(':') {
                return crate::names::with_modifiers(format!("{}/{base}/", p.name), &m);
            }
        }
        if attr.type_ >= perfkit_sys::PERF_TYPE_MAX {
            if let Some(p) = self.pmu_by_type(attr.type_) {
                return crate::names::with_modifiers(crate::parse::pmu_event_name(p, attr), &m);
            }
        }
        crate::names::name_of(attr)
    }
}
