//! CPU numbers: which CPUs exist and are online (sysfs), CPU lists such as `0,2-3` (the
//! syntax of sysfs and of `perf -C`), and where each CPU sits (socket, die, core, node).
//!
//! The per-CPU `cpu` argument of `perf_event_open` must name an online CPU; numbers are
//! not dense when CPUs are offline (a machine may have CPUs `0,2-3` online), so walk
//! [`online`] rather than `0..nproc`.
//!
//! ```
//! let online = perfkit::cpus::online()?;
//! let possible = perfkit::cpus::possible()?;
//! assert!(!online.is_empty());
//! assert!(online.iter().all(|c| possible.contains(c)));
//! // A user's list is checked against the CPUs that exist, as it is parsed.
//! let first = perfkit::cpus::parse_list(&online[0].to_string(), &possible)?;
//! assert_eq!(first, [online[0]]);
//! let err = perfkit::cpus::parse_list("0-4294967295", &[0, 1]).unwrap_err();
//! assert!(err.to_string().contains("this machine's CPUs are 0-1"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::Path;

/// The most CPUs a sysfs list is trusted to hold (the kernel's `NR_CPUS` is at most 8192).
const SYSFS_MAX_CPUS: u64 = 1 << 16;

/// The online CPUs (`/sys/devices/system/cpu/online`), ascending.
pub fn online() -> io::Result<Vec<u32>> {
    read_sysfs_list("/sys/devices/system/cpu/online")
}

/// The CPUs that exist or may be hot-plugged (`/sys/devices/system/cpu/possible`),
/// ascending: the numbers a CPU list may use.
pub fn possible() -> io::Result<Vec<u32>> {
    read_sysfs_list("/sys/devices/system/cpu/possible")
}

/// Whether `cpu` is online now.
pub fn is_online(cpu: u32) -> io::Result<bool> {
    Ok(online()?.binary_search(&cpu).is_ok())
}

fn read_sysfs_list(path: &str) -> io::Result<Vec<u32>> {
    let text = std::fs::read_to_string(path)?;
    let all = [(0u64, SYSFS_MAX_CPUS - 1)];
    parse_ranges(&text, &Allowed::Ranges(&all)).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{path} does not hold a CPU list: {e}"),
        )
    })
}

/// A CPU list that cannot be used, with what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CpuListError {
    /// The list names no CPU at all (``, `,`).
    Empty {
        /// The list as given.
        list: String,
    },
    /// Not a number or a range at byte `offset`.
    Syntax {
        /// The list as given.
        list: String,
        /// Byte offset of the bad item.
        offset: usize,
        /// The bad item.
        item: String,
    },
    /// A range that runs backwards (`5-2`).
    Backwards {
        /// The range's first number.
        start: u64,
        /// The range's last number.
        end: u64,
    },
    /// A CPU number (or one inside a range) that this machine does not have.
    NoSuchCpu {
        /// The first CPU that does not exist.
        cpu: u64,
        /// The range it was part of, when it came from one.
        range: Option<(u64, u64)>,
        /// The CPUs that do exist, as a list (`0-1`).
        available: String,
    },
    /// CPUs that exist but are offline (see [`check_online`]).
    NotOnline {
        /// The offline CPUs asked for.
        cpus: Vec<u32>,
        /// The online CPUs, as a list.
        online: String,
    },
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuListError::Empty { list } => write!(
                f,
                "the CPU list `{list}` names no CPU: give CPU numbers and ranges such as 0,2-3"
            ),
            CpuListError::Syntax { list, offset, item } => write!(
                f,
                "`{item}` at offset {offset} of the CPU list `{list}` is not a CPU number or \
                 a range: write numbers and ranges such as 0,2-3"
            ),
            CpuListError::Backwards { start, end } => write!(
                f,
                "the CPU range {start}-{end} runs backwards: write {end}-{start}"
            ),
            CpuListError::NoSuchCpu {
                cpu,
                range,
                available,
            } => {
                write!(f, "CPU {cpu}")?;
                if let Some((a, b)) = range {
                    write!(f, " (in {a}-{b})")?;
                }
                write!(f, " does not exist: this machine's CPUs are {available}")
            }
            CpuListError::NotOnline { cpus, online } => {
                let (s, are) = if cpus.len() == 1 {
                    ("", "is")
                } else {
                    ("s", "are")
                };
                write!(
                    f,
                    "CPU{s} {} {are} offline: the online CPUs are {online} (bring one online \
                     with `echo 1 > /sys/devices/system/cpu/cpuN/online`, or leave it out)",
                    format_list(cpus)
                )
            }
        }
    }
}

impl std::error::Error for CpuListError {}

/// What a list may name: a sorted list of CPUs, or sorted inclusive ranges.
enum Allowed<'a> {
    Cpus(&'a [u32]),
    Ranges(&'a [(u64, u64)]),
}

impl Allowed<'_> {
    /// The first CPU of `a..=b` that is not allowed, found without expanding the range.
    fn first_missing(&self, a: u64, b: u64) -> Option<u64> {
        match self {
            Allowed::Cpus(cpus) => {
                // The allowed CPUs at or after `a`, in order: each must be the next one.
                let start = cpus.partition_point(|&c| u64::from(c) < a);
                let mut want = a;
                for &c in &cpus[start..] {
                    if want > b {
                        return None;
                    }
                    if u64::from(c) != want {
                        return Some(want);
                    }
                    want += 1;
                }
                (want <= b).then_some(want)
            }
            Allowed::Ranges(ranges) => {
                let mut want = a;
                for &(lo, hi) in ranges.iter() {
                    if want < lo {
                        return Some(want);
                    }
                    if want <= hi {
                        if b <= hi {
                            return None;
                        }
                        want = hi + 1;
                    }
                }
                Some(want)
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Allowed::Cpus([]) => "none".into(),
            Allowed::Cpus(cpus) => format_list(cpus),
            Allowed::Ranges(r) => r
                .iter()
                .map(|(a, b)| {
                    if a == b {
                        a.to_string()
                    } else {
                        format!("{a}-{b}")
                    }
                })
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

/// Parse a CPU list such as `0,2-3` (commas between numbers and inclusive ranges; spaces
/// and a trailing newline are ignored) into ascending, de-duplicated CPU numbers.
///
/// Every number and every range is checked against `allowed` (the CPUs that exist, as
/// [`possible`] gives them, ascending) while it is parsed, before anything is expanded:
/// `0-4294967295` is an error naming CPU 2 on a 2-CPU machine, found in a few steps and
/// with no allocation beyond the `allowed` CPUs. An empty list is an error.
pub fn parse_list(s: &str, allowed: &[u32]) -> Result<Vec<u32>, CpuListError> {
    let mut sorted;
    let allowed = if allowed.windows(2).all(|w| w[0] < w[1]) {
        allowed
    } else {
        sorted = allowed.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        &sorted[..]
    };
    parse_ranges(s, &Allowed::Cpus(allowed))
}

fn parse_ranges(s: &str, allowed: &Allowed<'_>) -> Result<Vec<u32>, CpuListError> {
    let mut out: Vec<u32> = Vec::new();
    let mut offset = 0;
    for part in s.split(',') {
        let item = part.trim();
        let here = offset + (part.len() - part.trim_start().len());
        offset += part.len() + 1;
        if item.is_empty() {
            continue;
        }
        let syntax = || CpuListError::Syntax {
            list: s.trim().to_string(),
            offset: here,
            item: item.to_string(),
        };
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (number(a).ok_or_else(syntax)?, number(b).ok_or_else(syntax)?),
            None => {
                let n = number(item).ok_or_else(syntax)?;
                (n, n)
            }
        };
        if b < a {
            return Err(CpuListError::Backwards { start: a, end: b });
        }
        if let Some(cpu) = allowed.first_missing(a, b) {
            return Err(CpuListError::NoSuchCpu {
                cpu,
                range: (a != b).then_some((a, b)),
                available: allowed.describe(),
            });
        }
        // Every CPU of a..=b is allowed, so the range is no longer than the allowed list.
        out.extend((a..=b).map(|c| c as u32));
    }
    if out.is_empty() {
        return Err(CpuListError::Empty {
            list: s.trim().to_string(),
        });
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A plain decimal number. Anything up to `u64::MAX` parses, so that a number beyond the
/// CPUs is reported as a CPU that does not exist rather than as bad syntax.
fn number(s: &str) -> Option<u64> {
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The CPUs of `cpus` that are not in `online` (both ascending or not).
pub fn offline_among(cpus: &[u32], online: &[u32]) -> Vec<u32> {
    cpus.iter()
        .copied()
        .filter(|c| !online.contains(c))
        .collect()
}

/// Check that every CPU of `cpus` is online, giving one [`CpuListError::NotOnline`]
/// naming all the offline ones otherwise.
pub fn check_online(cpus: &[u32], online: &[u32]) -> Result<(), CpuListError> {
    let off = offline_among(cpus, online);
    if off.is_empty() {
        return Ok(());
    }
    Err(CpuListError::NotOnline {
        cpus: off,
        online: format_list(online),
    })
}

/// Write CPUs the way sysfs does: ascending, consecutive runs as ranges (`0-3,6`).
pub fn format_list(cpus: &[u32]) -> String {
    let mut v = cpus.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if i == j {
            out.push_str(&v[i].to_string());
        } else {
            out.push_str(&format!("{}-{}", v[i], v[j]));
        }
        i = j + 1;
    }
    out
}

/// Where one CPU sits (`/sys/devices/system/cpu/cpuN/topology` and the NUMA node whose
/// `cpulist` holds it); a field sysfs does not provide reads as 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CpuPlace {
    /// `physical_package_id`
    pub socket: i32,
    /// `die_id`
    pub die: i32,
    /// `core_id`
    pub core: i32,
    /// NUMA node (`/sys/devices/system/node/nodeN/cpulist`).
    pub node: i32,
}

fn read_i32(p: &Path) -> i32 {
    std::fs::read_to_string(p)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The topology of every CPU in `cpus` (for per-socket, per-die, per-core and per-node
/// aggregation).
pub fn places(cpus: &[u32]) -> BTreeMap<u32, CpuPlace> {
    let mut node_of = BTreeMap::new();
    if let Ok(dir) = std::fs::read_dir("/sys/devices/system/node") {
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(n) = name.to_str().and_then(|s| s.strip_prefix("node")) else {
                continue;
            };
            let Ok(n) = n.parse::<i32>() else { continue };
            let all = [(0u64, SYSFS_MAX_CPUS - 1)];
            if let Ok(list) = std::fs::read_to_string(e.path().join("cpulist"))
                && let Ok(list) = parse_ranges(&list, &Allowed::Ranges(&all))
            {
                for c in list {
                    node_of.insert(c, n);
                }
            }
        }
    }
    cpus.iter()
        .map(|&c| {
            let t = format!("/sys/devices/system/cpu/cpu{c}/topology");
            let t = Path::new(&t);
            (
                c,
                CpuPlace {
                    socket: read_i32(&t.join("physical_package_id")),
                    die: read_i32(&t.join("die_id")),
                    core: read_i32(&t.join("core_id")),
                    node: node_of.get(&c).copied().unwrap_or(0),
                },
            )
        })
        .collect()
}

/// Pin the calling thread to `cpus` (`sched_setaffinity(0, ...)`): a recorder's draining
/// thread runs beside the rings it drains, as perf's `--threads` affinity masks ask. An
/// empty list, or CPUs beyond the kernel's `cpu_set_t`, is an `InvalidInput` error.
pub fn pin_current_thread(cpus: &[u32]) -> io::Result<()> {
    if cpus.is_empty()
        || cpus
            .iter()
            .any(|&c| c as usize >= libc::CPU_SETSIZE as usize)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cannot pin a thread to CPUs {}", format_list(cpus)),
        ));
    }
    // SAFETY: cpu_set_t is plain bits; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        // SAFETY: c < CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c as usize, &mut set) };
    }
    // SAFETY: a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Give the calling thread the nice value `nice` (`setpriority(PRIO_PROCESS, gettid())`;
/// on Linux nice is per thread). Lowering it below the current value needs
/// `CAP_SYS_NICE` (root): without it this is the kernel's `EACCES`/`EPERM`, and the
/// thread keeps its priority. A recorder's draining threads use it so that a ring is
/// emptied as soon as the kernel wakes them, even when every CPU is busy.
pub fn set_current_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid takes no arguments.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority takes only integers.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Run the calling thread under `SCHED_FIFO` at real-time priority `priority` (1 is the
/// lowest), with `SCHED_RESET_ON_FORK` so that threads and processes it starts get the
/// normal policy back. Needs `CAP_SYS_NICE` (root) or an `RLIMIT_RTPRIO` allowing it;
/// otherwise the kernel's `EPERM`, and the thread keeps its policy. A recorder's
/// draining and writing threads use it: they sleep until a ring needs them, then run
/// before the busy tasks they sample (the kernel's real-time throttling keeps the
/// others 5% of each CPU whatever happens).
pub fn set_current_thread_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; param is a valid sched_param.
    let r = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const EIGHT: [u32; 8] = [0, 1, 2, 3, 4, 5, 6, 7];

    #[test]
    fn thread_priorities_are_the_calling_threads_own() {
        std::thread::spawn(|| {
            // SAFETY: gettid/getpriority/sched_getscheduler take only integers.
            let tid = unsafe { libc::gettid() } as libc::id_t;
            // Raising the nice value is allowed to anyone.
            set_current_thread_nice(7).expect("nice 7");
            // SAFETY: as above.
            assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }, 7);
            // CAP_SYS_NICE is what SCHED_FIFO needs; a container's root may lack it.
            let sys_nice = crate::caps::effective(crate::caps::CAP_SYS_NICE);
            match set_current_thread_realtime(1) {
                Ok(()) => {
                    // SAFETY: as above.
                    let policy = unsafe { libc::sched_getscheduler(0) };
                    assert_eq!(policy & !libc::SCHED_RESET_ON_FORK, libc::SCHED_FIFO);
                    assert!(policy & libc::SCHED_RESET_ON_FORK != 0, "{policy:#x}");
                    // A thread it starts is back to the normal policy.
                    // SAFETY: as above.
                    let child = std::thread::spawn(|| unsafe { libc::sched_getscheduler(0) });
                    assert_eq!(child.join().unwrap(), libc::SCHED_OTHER);
                }
                Err(e) => assert!(!sys_nice, "CAP_SYS_NICE allows SCHED_FIFO: {e}"),
            }
        })
        .join()
        .unwrap();
        // The test thread itself is untouched.
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
    }

    #[test]
    fn lists_with_offline_holes() {
        assert_eq!(parse_list("0,2-3", &EIGHT).unwrap(), vec![0, 2, 3]);
        assert_eq!(parse_list("3,1,1-2\n", &EIGHT).unwrap(), vec![1, 2, 3]);
        assert_eq!(parse_list(" 7 , 0-1 ", &EIGHT).unwrap(), vec![0, 1, 7]);
        // Allowed lists with holes (a machine whose possible CPUs are 0,2-3).
        let holes = [0, 2, 3];
        assert_eq!(parse_list("2-3", &holes).unwrap(), vec![2, 3]);
        let e = parse_list("0-3", &holes).unwrap_err();
        assert_eq!(
            e,
            CpuListError::NoSuchCpu {
                cpu: 1,
                range: Some((0, 3)),
                available: "0,2-3".into()
            }
        );
        assert_eq!(
            e.to_string(),
            "CPU 1 (in 0-3) does not exist: this machine's CPUs are 0,2-3"
        );
        // Unsorted allowed lists are accepted.
        assert_eq!(parse_list("1", &[3, 1]).unwrap(), vec![1]);
    }

    #[test]
    fn bad_lists_say_what_to_do() {
        let e = parse_list("9999", &[0, 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 9999 does not exist: this machine's CPUs are 0-1"
        );
        for empty in ["", ",", " , ,", "\n"] {
            assert!(
                matches!(parse_list(empty, &EIGHT), Err(CpuListError::Empty { .. })),
                "{empty:?}"
            );
        }
        let e = parse_list("0,1-x", &EIGHT).unwrap_err();
        assert_eq!(
            e,
            CpuListError::Syntax {
                list: "0,1-x".into(),
                offset: 2,
                item: "1-x".into()
            }
        );
        for bad in ["-1", "1-", "a", "1--2", "+1", "0x1", "1 2"] {
            assert!(
                matches!(parse_list(bad, &EIGHT), Err(CpuListError::Syntax { .. })),
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_list("3-1", &EIGHT).unwrap_err().to_string(),
            "the CPU range 3-1 runs backwards: write 1-3"
        );
        // Beyond u64: a syntax error, not a panic.
        assert!(parse_list("99999999999999999999999", &EIGHT).is_err());
    }

    #[test]
    fn absurd_ranges_fail_fast_without_expanding() {
        // 2^32 CPUs would be 16 GiB as u32s; the check must come before any expansion.
        let e = parse_list("0-4294967295", &[0, 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPU 2 (in 0-4294967295) does not exist: this machine's CPUs are 0-1"
        );
        let e = parse_list("0-18446744073709551615", &EIGHT).unwrap_err();
        assert!(matches!(e, CpuListError::NoSuchCpu { cpu: 8, .. }), "{e:?}");
        // Many huge ranges: each fails at once.
        let many = vec!["0-4294967295"; 10_000].join(",");
        assert!(parse_list(&many, &EIGHT).is_err());
        // The sysfs parser bounds ranges too.
        let all = [(0, SYSFS_MAX_CPUS - 1)];
        assert!(parse_ranges("0-4294967295", &Allowed::Ranges(&all)).is_err());
        assert_eq!(
            parse_ranges("0,2-3\n", &Allowed::Ranges(&all)).unwrap(),
            vec![0, 2, 3]
        );
    }

    #[test]
    fn online_checks_and_formatting() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_list(&[5, 1, 0]), "0-1,5");
        assert_eq!(format_list(&[]), "");
        assert!(check_online(&[0, 2], &[0, 2, 3]).is_ok());
        let e = check_online(&[0, 1, 5], &[0, 2, 3]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "CPUs 1,5 are offline: the online CPUs are 0,2-3 (bring one online with \
             `echo 1 > /sys/devices/system/cpu/cpuN/online`, or leave it out)"
        );
        assert_eq!(offline_among(&[3, 1], &[0, 1]), vec![3]);
    }

    #[test]
    fn this_machine() {
        let online = online().expect("sysfs online list");
        let possible = possible().expect("sysfs possible list");
        assert!(!online.is_empty());
        assert!(online.iter().all(|c| possible.contains(c)));
        assert!(is_online(online[0]).unwrap());
        let places = places(&online);
        assert_eq!(places.len(), online.len());
        // Agrees with the number of CPUs the kernel schedules on.
        // SAFETY: sysconf takes no pointers.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        assert_eq!(online.len() as i64, n);
    }
}
