//! [`Group`]: events scheduled together and read at once (`PERF_FORMAT_GROUP`).

use crate::attr::Attr;
use crate::counter::{Count, Counter, read_words};
use crate::error::{Op, Result};
use crate::target::Target;
use perfkit_sys as sys;
use std::io;
use std::ops::Index;
use std::os::fd::AsFd;

/// Identifies a member of a [`Group`] (the leader is the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MemberId(usize);

impl MemberId {
    /// Position in the group, 0 = leader.
    pub fn index(self) -> usize {
        self.0
    }
}

/// A group of counters that the kernel schedules as one and reads in one `read(2)`.
///
/// The leader is opened with `read_format = GROUP | ID | TOTAL_TIME_ENABLED |
/// TOTAL_TIME_RUNNING` (plus `LOST` if its attr asks), so every member's value comes back
/// with its id and the group's times. A group larger than the PMU never runs: its read
/// shows `time_running == 0` and [`Count::scaled`] says [`crate::Scaled::NotCounted`].
///
/// ```
/// use perfkit::{Attr, Group, Scaled, Software, Target};
/// let me = Target::this_thread();
/// let mut group = Group::open(&Attr::new(Software::TaskClock), &me)?;
/// let faults = group.add(&Attr::new(Software::PageFaults), &me)?;
/// group.enable()?;
/// let buf = vec![1u8; 1 << 20];
/// group.disable()?;
/// let counts = group.read()?;
/// assert!(counts[group.leader()].value > 0);
/// assert!(matches!(counts[faults].scaled(), Scaled::Exact(n) if n > 0), "{}", buf.len());
/// # Ok::<(), perfkit::Error>(())
/// ```
#[derive(Debug)]
pub struct Group {
    members: Vec<Counter>,
    ids: Vec<u64>,
    read_format: u64,
}

/// The result of reading a [`Group`]: one [`Count`] per member, indexed by [`MemberId`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupCount {
    /// Nanoseconds the group was enabled.
    pub time_enabled: Option<u64>,
    /// Nanoseconds the group was on the PMU.
    pub time_running: Option<u64>,
    counts: Vec<Count>,
    buf: Vec<u64>,
}

impl GroupCount {
    /// The members' counts, in group order.
    pub fn counts(&self) -> &[Count] {
        &self.counts
    }
    /// One member's count.
    pub fn get(&self, m: MemberId) -> Option<&Count> {
        self.counts.get(m.0)
    }
}

impl Index<MemberId> for GroupCount {
    type Output = Count;
    fn index(&self, m: MemberId) -> &Count {
        &self.counts[m.0]
    }
}

impl Group {
    /// Open the leader of a new group.
    pub fn open(leader: &Attr, target: &Target<'_>) -> Result<Group> {
        let rf = sys::PERF_FORMAT_GROUP
            | sys::PERF_FORMAT_ID
            | sys::PERF_FORMAT_TOTAL_TIME_ENABLED
            | sys::PERF_FORMAT_TOTAL_TIME_RUNNING
            | (leader.raw().read_format & sys::PERF_FORMAT_LOST);
        let attr = leader.read_format(rf);
        let c = Counter::open(&attr, target)?;
        let id = c.id()?;
        Ok(Group {
            members: vec![c],
            ids: vec![id],
            read_format: rf,
        })
    }

    /// Add a member (opened disabled=false so it follows the leader's state).
    pub fn add(&mut self, attr: &Attr, target: &Target<'_>) -> Result<MemberId> {
        let attr = attr
            .disabled(false)
            .read_format(self.read_format & !sys::PERF_FORMAT_GROUP);
        let c = Counter::open_in_group(&attr, target, &self.members[0])?;
        let id = c.id()?;
        self.members.push(c);
        self.ids.push(id);
        Ok(MemberId(self.members.len() - 1))
    }

    /// The leader's id.
    pub fn leader(&self) -> MemberId {
        MemberId(0)
    }

    /// A member's counter.
    pub fn counter(&self, m: MemberId) -> &Counter {
        &self.members[m.0]
    }

    /// Number of members, leader included.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always false: a group has its leader.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Enable every member (`PERF_IOC_FLAG_GROUP`).
    pub fn enable(&self) -> Result<()> {
        self.members[0].enable_group()
    }
    /// Disable every member.
    pub fn disable(&self) -> Result<()> {
        self.members[0].disable_group()
    }
    /// Zero every member's count.
    pub fn reset(&self) -> Result<()> {
        self.members[0].reset_group()
    }

    /// Read every member in one `read(2)`.
    pub fn read(&self) -> Result<GroupCount> {
        let mut out = GroupCount::default();
        self.read_into(&mut out)?;
        Ok(out)
    }

    /// Read into `out`, reusing its buffers (no allocation after the first call).
    pub fn read_into(&self, out: &mut GroupCount) -> Result<()> {
        let lost = self.read_format & sys::PERF_FORMAT_LOST != 0;
        let per = 2 + usize::from(lost);
        let words = 3 + per * self.members.len();
        out.buf.resize(words, 0);
        let leader = &self.members[0];
        let n = read_words(leader.as_fd(), &mut out.buf).map_err(|e| {
            let e = if e.raw_os_error() == Some(libc::ENOSPC) {
                io::Error::other("read buffer too small for the group (ENOSPC)")
            } else {
                e
            };
            leader.make_error(Op::Read, e)
        })?;
        let short = || {
            leader.make_error(
                Op::Read,
                io::Error::new(io::ErrorKind::UnexpectedEof, "short group read"),
            )
        };
        let b = out.buf.get(..n).ok_or_else(short)?;
        let (&nr, rest) = b.split_first().ok_or_else(short)?;
        let (&enabled, rest) = rest.split_first().ok_or_else(short)?;
        let (&running, rest) = rest.split_first().ok_or_else(short)?;
        out.time_enabled = Some(enabled);
        out.time_running = Some(running);
        out.counts.clear();
        out.counts.resize(self.members.len(), Count::default());
        for entry in rest.chunks_exact(per).take(nr as usize) {
            let id = entry[1];
            if let Some(slot) = self.ids.iter().position(|&m| m == id) {
                out.counts[slot] = Count {
                    value: entry[0],
                    time_enabled: Some(enabled),
                    time_running: Some(running),
                    id: Some(id),
                    lost: entry.get(2).copied().filter(|_| lost),
                };
            }
        }
        Ok(())
    }
}
