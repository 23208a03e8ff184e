//! [`Targets`]: many places to open one event on (the threads of a process, a list of
//! threads, a list of CPUs), each a `pid`/`cpu` pair of `perf_event_open`.
//!
//! The kernel attaches a per-task event to exactly one task (thread): counting a whole
//! process takes one event per thread, read and summed ([`crate::CounterSet`]).

use crate::error::{Error, ErrorKind, Op, Result};
use crate::target::Target;

/// A list of `(pid, cpu)` places for `perf_event_open` (pid -1 = every task on the CPU,
/// cpu -1 = any CPU).
///
/// ```
/// use perfkit::Targets;
/// let me = Targets::this_process()?;
/// assert!(me.len() >= 1); // at least the calling thread
/// assert!(me.iter().all(|t| t.cpu_arg() == -1));
/// let cpus = Targets::cpus(&[0]);
/// assert_eq!(cpus.places(), [(-1, 0)]);
/// # Ok::<(), perfkit::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Targets {
    places: Vec<(i32, i32)>,
    listed: bool,
}

impl Targets {
    /// Every thread of the calling process (the tids in `/proc/self/task`), on any CPU.
    ///
    /// The list is taken once: threads started later are not in it. Open the event with
    /// `inherit` to count them too (the kernel copies an inherited event into every
    /// thread or process a counted thread creates).
    pub fn this_process() -> Result<Targets> {
        // SAFETY: getpid takes no arguments and cannot fail.
        let pid = unsafe { libc::getpid() };
        Self::process(pid)
    }

    /// Every thread of process `pid` (the tids in `/proc/PID/task`), on any CPU. Same
    /// caveat as [`this_process`](Self::this_process): threads started later need
    /// `inherit`.
    pub fn process(pid: i32) -> Result<Targets> {
        let tids = crate::launch::threads_of(pid).map_err(|e| {
            let missing = matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ESRCH));
            let err = Error::new(Op::ListThreads, e, "", pid, -1);
            if missing {
                err.with_kind(ErrorKind::NoSuchTask)
                    .with_detail(format!("no process {pid} (/proc/{pid}/task)"))
            } else {
                err
            }
        })?;
        Ok(Targets {
            places: tids.into_iter().map(|t| (t, -1)).collect(),
            listed: true,
        })
    }

    /// These threads (by tid), each on any CPU.
    pub fn threads(tids: &[i32]) -> Targets {
        Targets {
            places: tids.iter().map(|&t| (t, -1)).collect(),
            listed: false,
        }
    }

    /// Every task on each of these CPUs (`pid` -1: needs root or `perf_event_paranoid`
    /// <= 0).
    pub fn cpus(cpus: &[u32]) -> Targets {
        Targets {
            places: cpus.iter().map(|&c| (-1, c as i32)).collect(),
            listed: false,
        }
    }

    /// Each of this list's tasks once per CPU of `cpus` (tasks × CPUs places): the form
    /// an `inherit` sampling event needs, since a per-task event for any CPU cannot be
    /// mmap'ed. CPU-wide places stay as they are.
    pub fn on_cpus(&self, cpus: &[u32]) -> Targets {
        let mut places = Vec::new();
        for &(pid, cpu) in &self.places {
            if cpu >= 0 {
                places.push((pid, cpu));
            } else {
                places.extend(cpus.iter().map(|&c| (pid, c as i32)));
            }
        }
        Targets {
            places,
            listed: self.listed,
        }
    }

    /// The `(pid, cpu)` pairs.
    pub fn places(&self) -> &[(i32, i32)] {
        &self.places
    }

    /// The number of places.
    pub fn len(&self) -> usize {
        self.places.len()
    }

    /// Whether there is no place at all.
    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }

    /// Whether the threads were listed from `/proc` ([`this_process`](Self::this_process),
    /// [`process`](Self::process)): such a thread may exit before its event is opened,
    /// which [`crate::CounterSet::open`] tolerates.
    pub fn is_listed_from_proc(&self) -> bool {
        self.listed
    }

    /// Each place as a [`Target`].
    pub fn iter(&self) -> TargetsIter<'_> {
        TargetsIter(self.places.iter())
    }
}

/// The [`Target`] of one `(pid, cpu)` place.
fn place(pid: i32, cpu: i32) -> Target<'static> {
    match (pid, u32::try_from(cpu)) {
        (-1, Ok(c)) => Target::cpu(c),
        (p, Ok(c)) => Target::pid_on_cpu(p, c),
        (p, Err(_)) => Target::pid(p),
    }
}

/// The iterator of [`Targets::iter`].
#[derive(Clone, Debug)]
pub struct TargetsIter<'a>(std::slice::Iter<'a, (i32, i32)>);

impl Iterator for TargetsIter<'_> {
    type Item = Target<'static>;
    fn next(&mut self) -> Option<Target<'static>> {
        self.0.next().map(|&(pid, cpu)| place(pid, cpu))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for TargetsIter<'_> {}

impl<'a> IntoIterator for &'a Targets {
    type Item = Target<'static>;
    type IntoIter = TargetsIter<'a>;
    fn into_iter(self) -> TargetsIter<'a> {
        self.iter()
    }
}
