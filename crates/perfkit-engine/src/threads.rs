//! `--threads`: which draining thread owns the ring of which CPU.
//!
//! perf's spellings: `cpu` (one thread per CPU, the value of a bare `--threads`), `core`
//! (CPUs sharing a core), `package`, `numa`, or masks `CPUS/AFFINITY:CPUS/AFFINITY:...`,
//! where CPUS are the CPUs whose rings a thread drains and AFFINITY the CPUs it runs on.
//! Masks are filtered by the recorded CPUs (`-C`) as perf filters them, and they may not
//! overlap. Unlike perf, which then writes one file per thread in a directory, perfkit
//! merges every thread's records into one perf.data (see [`Recorder`](crate::Recorder)).
//!
//! Without `--threads`, [`DrainLayout::default_for`] keeps one draining thread while at
//! most [`CPUS_PER_DEFAULT_DRAINER`] CPUs are recorded, and otherwise shares the rings
//! among threads owning that many consecutive CPUs each. Draining threads are never the
//! writing thread: the rings are drained while the writer writes the side-band preamble
//! of a system-wide recording (counting starts before it), compresses (`-z`), or switches
//! files.

use std::collections::BTreeMap;
use std::fmt;

/// How rings are shared among draining threads (perf's `--threads` values).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ThreadSpec {
    /// One thread per recorded CPU (`cpu`, or `--threads` with no value).
    Cpu,
    /// One thread per core (CPUs with the same package, die and core id).
    Core,
    /// One thread per package (socket).
    Package,
    /// One thread per NUMA node.
    Numa,
    /// `CPUS/AFFINITY:...`, as given.
    Masks(String),
}

impl ThreadSpec {
    /// Read a `--threads` value (empty: `cpu`). Masks are checked by
    /// [`DrainLayout::new`], which knows the recorded CPUs.
    pub fn parse(s: &str) -> ThreadSpec {
        match s {
            "" | "cpu" => ThreadSpec::Cpu,
            "core" => ThreadSpec::Core,
            "package" => ThreadSpec::Package,
            "numa" => ThreadSpec::Numa,
            other => ThreadSpec::Masks(other.to_string()),
        }
    }
}

/// One draining thread: the CPUs whose rings it drains, and the CPUs it may run on
/// (empty: anywhere).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Drainer {
    /// CPUs whose rings this thread drains.
    pub cpus: Vec<u32>,
    /// CPUs the thread is pinned to (`sched_setaffinity`); empty for no pinning.
    pub affinity: Vec<u32>,
}

/// Every draining thread of a recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DrainLayout {
    /// The threads, each owning disjoint CPUs.
    pub drainers: Vec<Drainer>,
}

/// Without `--threads`, one draining thread per this many recorded CPUs.
pub const CPUS_PER_DEFAULT_DRAINER: usize = 4;

/// A `--threads` value that cannot be used, with perf's words and errno (perf exits with
/// `-errno` as its status: 234 for EINVAL, 237 for ENODEV).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadSpecError {
    /// perf's line (`Intersecting maps mask: 0`), or empty where perf prints only the
    /// general line.
    pub message: String,
    /// The errno perf returns.
    pub errno: i32,
}

impl ThreadSpecError {
    fn new(message: impl Into<String>, errno: i32) -> ThreadSpecError {
        ThreadSpecError {
            message: message.into(),
            errno,
        }
    }

    /// perf's exit status for this error (`-errno` as a byte).
    pub fn exit_code(&self) -> u8 {
        (256 - self.errno.clamp(1, 255)) as u8
    }
}

impl fmt::Display for ThreadSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.message.is_empty() {
            writeln!(f, "{}", self.message)?;
        }
        write!(f, "Failed to initialize parallel data streaming masks")
    }
}

impl std::error::Error for ThreadSpecError {}

const EINVAL: i32 = 22;
const ENODEV: i32 = 19;

impl DrainLayout {
    /// The threads for `spec` over the recorded CPUs `cpus` (ascending); `possible` are
    /// the CPUs that exist (a mask naming another is refused, as perf refuses it).
    pub fn new(
        spec: &ThreadSpec,
        cpus: &[u32],
        possible: &[u32],
    ) -> Result<DrainLayout, ThreadSpecError> {
        let grouped = |key: &dyn Fn(&perfkit::cpus::CpuPlace) -> (i32, i32, i32)| {
            let places = perfkit::cpus::places(cpus);
            let mut groups: BTreeMap<(i32, i32, i32), Vec<u32>> = BTreeMap::new();
            for (&c, p) in &places {
                groups.entry(key(p)).or_default().push(c);
            }
            let mut drainers: Vec<Drainer> = groups
                .into_values()
                .map(|cpus| Drainer {
                    affinity: cpus.clone(),
                    cpus,
                })
                .collect();
            drainers.sort_by_key(|d| d.cpus.first().copied());
            drainers
        };
        let drainers = match spec {
            ThreadSpec::Cpu => cpus
                .iter()
                .map(|&c| Drainer {
                    cpus: vec![c],
                    affinity: vec![c],
                })
                .collect(),
            ThreadSpec::Core => grouped(&|p| (p.socket, p.die, p.core)),
            ThreadSpec::Package => grouped(&|p| (p.socket, 0, 0)),
            ThreadSpec::Numa => grouped(&|p| (p.node, 0, 0)),
            ThreadSpec::Masks(s) => masks(s, cpus, possible)?,
        };
        Ok(DrainLayout { drainers })
    }

    /// The layout used without `--threads`: one thread (no pinning) for up to
    /// [`CPUS_PER_DEFAULT_DRAINER`] CPUs, else one per that many consecutive CPUs.
    pub fn default_for(cpus: &[u32]) -> DrainLayout {
        DrainLayout {
            drainers: cpus
                .chunks(CPUS_PER_DEFAULT_DRAINER)
                .map(|c| Drainer {
                    cpus: c.to_vec(),
                    affinity: Vec::new(),
                })
                .collect(),
        }
    }

    /// Whether one thread drains every ring.
    pub fn is_single(&self) -> bool {
        self.drainers.len() <= 1
    }
}

/// A CPU list of a mask (`0,2-4`): numbers and inclusive ranges; None when it is not one.
fn cpu_list(s: &str) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for range in perfkit::sys::cpulist::ranges(s) {
        let (a, b) = range.filter(|(a, b)| b - a <= 1 << 16)?;
        out.extend(a..=b);
    }
    if out.is_empty() {
        return None;
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

/// `CPUS/AFFINITY:...` into drainers, with perf's checks in perf's order.
fn masks(spec: &str, cpus: &[u32], possible: &[u32]) -> Result<Vec<Drainer>, ThreadSpecError> {
    let mut drainers: Vec<Drainer> = Vec::new();
    for part in spec.split(':').filter(|p| !p.is_empty()) {
        let Some((maps, affinity)) = part.split_once('/') else {
            return Err(ThreadSpecError::new(
                "Invalid thread maps or affinity specs",
                EINVAL,
            ));
        };
        if maps.is_empty() || affinity.is_empty() {
            return Err(ThreadSpecError::new("", EINVAL));
        }
        let read = |s: &str, what: &str| -> Result<Vec<u32>, ThreadSpecError> {
            match cpu_list(s) {
                Some(l) if l.iter().all(|c| possible.contains(c)) => Ok(l),
                _ => Err(ThreadSpecError::new(
                    format!("Failed to initialize {what} thread mask"),
                    ENODEV,
                )),
            }
        };
        let maps_cpus: Vec<u32> = read(maps, "maps")?
            .into_iter()
            .filter(|c| cpus.contains(c))
            .collect();
        let aff: Vec<u32> = read(affinity, "affinity")?;
        if maps_cpus.is_empty() {
            return Err(ThreadSpecError::new(
                format!("Empty maps mask: {maps}"),
                EINVAL,
            ));
        }
        if drainers
            .iter()
            .any(|d| d.cpus.iter().any(|c| maps_cpus.contains(c)))
        {
            return Err(ThreadSpecError::new(
                format!("Intersecting maps mask: {maps}"),
                EINVAL,
            ));
        }
        if drainers
            .iter()
            .any(|d| d.affinity.iter().any(|c| aff.contains(c)))
        {
            return Err(ThreadSpecError::new(
                format!("Intersecting affinity mask: {affinity}"),
                EINVAL,
            ));
        }
        drainers.push(Drainer {
            cpus: maps_cpus,
            affinity: aff,
        });
    }
    if drainers.is_empty() {
        return Err(ThreadSpecError::new(
            "Invalid thread maps or affinity specs",
            EINVAL,
        ));
    }
    Ok(drainers)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: [u32; 2] = [0, 1];

    fn layout(s: &str, cpus: &[u32]) -> Result<Vec<Drainer>, ThreadSpecError> {
        DrainLayout::new(&ThreadSpec::parse(s), cpus, &[0, 1, 2, 3, 4, 5, 6, 7]).map(|l| l.drainers)
    }

    #[test]
    fn perf_spellings() {
        assert_eq!(ThreadSpec::parse(""), ThreadSpec::Cpu);
        assert_eq!(ThreadSpec::parse("numa"), ThreadSpec::Numa);
        let d = layout("cpu", &TWO).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[1].cpus, vec![1]);
        assert_eq!(d[1].affinity, vec![1]);
    }

    #[test]
    fn user_masks_as_perf_documents_them() {
        let all: Vec<u32> = (0..8).collect();
        let d = layout("0,2-4/2-4:1,5-7/5-7", &all).unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].cpus, vec![0, 2, 3, 4]);
        assert_eq!(d[0].affinity, vec![2, 3, 4]);
        assert_eq!(d[1].cpus, vec![1, 5, 6, 7]);
        // Filtered by the recorded CPUs (-C 0-4); a trailing ':' is accepted.
        let d = layout("0,2-4/2-4:1,5-7/5-7:", &[0, 1, 2, 3, 4]).unwrap();
        assert_eq!(d[1].cpus, vec![1]);
    }

    #[test]
    fn bad_masks_fail_with_perfs_words_and_status() {
        let e = |s: &str, cpus: &[u32]| layout(s, cpus).unwrap_err();
        let x = e("0", &TWO);
        assert_eq!(x.message, "Invalid thread maps or affinity specs");
        assert_eq!(x.exit_code(), 234);
        assert_eq!(e("0/0:0/1", &TWO).message, "Intersecting maps mask: 0");
        assert_eq!(e("0/1:1/1", &TWO).message, "Intersecting affinity mask: 1");
        assert_eq!(e("1/1", &[0]).message, "Empty maps mask: 1");
        let x = e("0,9/0", &TWO);
        assert_eq!(x.message, "Failed to initialize maps thread mask");
        assert_eq!(x.exit_code(), 237);
        assert_eq!(
            e("0/9", &TWO).message,
            "Failed to initialize affinity thread mask"
        );
        assert_eq!(
            e("/", &TWO).to_string(),
            "Failed to initialize parallel data streaming masks"
        );
        assert!(
            e("x", &TWO)
                .to_string()
                .ends_with("\nFailed to initialize parallel data streaming masks")
        );
    }

    #[test]
    fn default_keeps_one_thread_on_small_machines() {
        assert!(DrainLayout::default_for(&[0, 1]).is_single());
        let sixteen: Vec<u32> = (0..16).collect();
        let d = DrainLayout::default_for(&sixteen);
        assert_eq!(d.drainers.len(), 4);
        assert_eq!(d.drainers[3].cpus, vec![12, 13, 14, 15]);
    }
}
