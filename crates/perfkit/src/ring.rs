//! [`RingBuffer`]: the mmap'ed perf ring buffer (user page + `2^n` data pages), read
//! without copying; [`RingRecords`] / [`BackwardRecords`]: the record walk over any byte
//! slice, so the wrap-around logic is testable without a kernel.
//!
//! # Layout (include/uapi/linux/perf_event.h)
//!
//! `mmap(fd, (1 + 2^n) * page_size)`: page 0 is `struct perf_event_mmap_page` (the user
//! page), the data area follows at `data_offset` for `data_size` bytes. `data_head` counts
//! bytes the kernel has written (it only grows; `& (data_size - 1)` gives the offset),
//! `data_tail` is how far user space has read. A record that crosses the end of the data
//! area continues at its start: it is delivered as [`RawData::Split`].
//!
//! # Modes
//!
//! * **Consuming** ([`RingMode::Consume`], `PROT_READ | PROT_WRITE`): user space writes
//!   `data_tail`; the kernel never overwrites unread data and counts what it had to drop in
//!   `PERF_RECORD_LOST` records.
//! * **Overwrite** ([`RingMode::Overwrite`], `PROT_READ` only): the tail is never written;
//!   the kernel overwrites the oldest data. Forward rings are read from the last position
//!   if the kernel has not lapped it ([`RingError::Overrun`] otherwise).
//! * **Backward** (attr `write_backward`, always mapped read-only here, as perf does): the
//!   kernel writes from the end downwards and `data_head` decreases; read newest first
//!   from `data_head` with [`RingBuffer::records_backward`].
//!
//! # Reading a ring the kernel may overwrite
//!
//! In consume mode the kernel writes only beyond `data_head` and never past `data_tail`,
//! so the bytes a walk hands out stay put until the tail moves, which needs the walk's
//! records to be gone (`&mut RingBuffer`): those walks are zero-copy. An overwrite-mode
//! (forward or backward) ring has no tail: the kernel may write over any byte at any
//! time, so handing out slices of it would let safe code read bytes the kernel is
//! writing. Its walks pause the ring's output (`PERF_EVENT_IOC_PAUSE_OUTPUT` 1), read
//! `data_head`, copy the data area into a buffer the ring owns, resume the output (0),
//! and walk the copy: no record is torn, the kernel is paused only for one copy (not for
//! as long as the caller looks at records, which would lose more samples), and nothing
//! the caller or another user of the event does can change bytes a record borrows. A
//! ring paused with [`RingBuffer::pause`] stays paused. Records the kernel would have
//! written during the copy are dropped by the kernel, as in perf's flight-recorder reads.

use crate::counter::Counter;
use crate::error::{Error, ErrorKind, Op, Result};
use perfkit_records::{HEADER_SIZE, RawData, RawRecord};
use perfkit_sys::{self as sys, perf_event_mmap_page};
use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering, fence};

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf takes no pointers.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 { v as usize } else { 4096 }
}

/// A problem found while walking the records of a ring (not an OS error).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingError {
    /// A record header is inconsistent: size below 8 or running past the kernel's head.
    /// `position` is the ring position (unmasked) of the header.
    BadRecord {
        /// Ring position of the header.
        position: u64,
        /// The header's size field.
        size: u16,
        /// Bytes left between the header and the head.
        available: u64,
    },
    /// An overwrite-mode ring was lapped: the kernel wrote `behind` bytes since the last
    /// read, more than the ring holds, so record boundaries are lost. Reading resumes at
    /// the head.
    Overrun {
        /// Bytes written since the last read position.
        behind: u64,
        /// The data area size.
        data_size: u64,
    },
    /// The output of an overwrite-mode ring could not be paused for reading
    /// (`PERF_EVENT_IOC_PAUSE_OUTPUT` failed with `errno`): nothing was read.
    PauseFailed {
        /// The errno of the ioctl.
        errno: i32,
    },
    /// `head - tail` is larger than the data area (a corrupt or foreign user page).
    BadPositions {
        /// `data_head`.
        head: u64,
        /// `data_tail` (or the read position).
        tail: u64,
        /// The data area size.
        data_size: u64,
    },
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::BadRecord {
                position,
                size,
                available,
            } => write!(
                f,
                "corrupt ring record at position {position:#x}: header size {size} \
                 (at least 8 and at most the {available} bytes up to data_head)"
            ),
            RingError::Overrun { behind, data_size } => write!(
                f,
                "overwrite ring lapped: {behind} bytes written since the last read, the ring \
                 holds {data_size}; records in between are lost (read more often or use a \
                 bigger ring)"
            ),
            RingError::PauseFailed { errno } => write!(
                f,
                "cannot pause the overwrite ring's output (PERF_EVENT_IOC_PAUSE_OUTPUT, errno \
                 {errno}) to read it without the kernel writing over the records: nothing \
                 was read"
            ),
            RingError::BadPositions {
                head,
                tail,
                data_size,
            } => write!(
                f,
                "inconsistent ring positions: data_head {head:#x}, data_tail {tail:#x}, \
                 data_size {data_size:#x}"
            ),
        }
    }
}

impl std::error::Error for RingError {}

/// Read the 8-byte header at masked offset `off` of `data` (which may wrap, though the
/// kernel keeps records 8-byte aligned so it never does in practice).
#[inline]
fn header_at(data: &[u8], off: usize) -> (u32, u16, u16) {
    // A whole header at `off` (always, in a ring the kernel wrote): one 8-byte read
    // instead of eight masked ones (a tenth of a draining thread's CPU at -F max).
    if let Some(h) = data.get(off..off + HEADER_SIZE) {
        let type_ = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
        let misc = u16::from_ne_bytes([h[4], h[5]]);
        let size = u16::from_ne_bytes([h[6], h[7]]);
        return (type_, misc, size);
    }
    let mut h = [0u8; HEADER_SIZE];
    let n = data.len();
    for (i, b) in h.iter_mut().enumerate() {
        *b = data[(off + i) & (n - 1)];
    }
    let type_ = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
    let misc = u16::from_ne_bytes([h[4], h[5]]);
    let size = u16::from_ne_bytes([h[6], h[7]]);
    (type_, misc, size)
}

/// The body of a record of `size` bytes whose header is at masked offset `off`.
#[inline]
fn body_at(data: &[u8], off: usize, size: usize) -> RawData<'_> {
    let n = data.len();
    let start = (off + HEADER_SIZE) & (n - 1);
    let len = size - HEADER_SIZE;
    if start + len <= n {
        RawData::Single(&data[start..start + len])
    } else {
        RawData::Split(&data[start..], &data[..start + len - n])
    }
}

/// The whole record whose header is at `at` of `buf` (its size already checked).
/// The piece [`RingBuffer::drain_copy`] copies before walking its headers: within the
/// first-level caches, and larger than any record (their size is a `u16`).
const COPY_PIECE: usize = 64 << 10;

#[inline]
fn record_at(buf: &[u8], at: usize) -> RawRecord<'_> {
    let type_ = u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
    let misc = u16::from_ne_bytes([buf[at + 4], buf[at + 5]]);
    let size = u16::from_ne_bytes([buf[at + 6], buf[at + 7]]) as usize;
    RawRecord {
        type_,
        misc,
        data: RawData::Single(&buf[at + HEADER_SIZE..at + size]),
    }
}

fn check_data(data: &[u8]) -> bool {
    data.len().is_power_of_two() && data.len() >= HEADER_SIZE
}

/// Records of a ring lent out in place by [`RingBuffer::lease`]: at most two runs of bytes
/// (two where they wrap around the end of the data area), which the kernel does not write
/// until the lease is given back with [`RingBuffer::release`] or its space is freed with
/// [`free`](Self::free). `Send`: a writer thread can `write` them straight from the ring.
#[derive(Debug)]
pub struct RingLease {
    map: std::sync::Arc<Mapping>,
    data_offset: usize,
    data_size: usize,
    start: u64,
    end: u64,
    /// [`free`](Self::free) published the tail past the bytes: nothing is lent any more.
    freed: bool,
}

impl RingLease {
    /// Let the kernel reuse the lent bytes now, from the thread that holds the lease (a
    /// writer that has just written them), instead of when the lease goes back to its ring:
    /// publishes `data_tail` at the lease's end, as perf does right after its `write`. The
    /// ring keeps its order (it lends nothing more until [`RingBuffer::release`] gets the
    /// lease back, and publishes no tail before then), so a ring whose reader is asleep
    /// until its next wakeup still has all its space for the kernel meanwhile. Afterwards
    /// the lease is empty.
    pub fn free(&mut self) {
        if self.freed {
            return;
        }
        // SAFETY: a lease's mapping is a consume-mode ring's (only those lend), mapped
        // readable and writable with its user page first, and alive while `self.map` is.
        let ctl = unsafe { RingControl::new(self.map.ptr.cast()) };
        // The full fence in set_tail orders every read of the lent bytes before it.
        ctl.set_tail(self.end);
        self.freed = true;
    }

    /// The lent bytes, in order: the second part is empty unless they wrap (both are
    /// empty once [`free`](Self::free)d).
    pub fn parts(&self) -> [&[u8]; 2] {
        let data = data_area(&self.map, self.data_offset, self.data_size);
        if self.freed {
            return [&data[..0], &data[..0]];
        }
        let off = (self.start & (self.data_size as u64 - 1)) as usize;
        let len = self.len();
        if off + len <= data.len() {
            [&data[off..off + len], &data[..0]]
        } else {
            [&data[off..], &data[..off + len - data.len()]]
        }
    }

    /// The whole record at offset `at` of the lent bytes, contiguous (copied into
    /// `scratch` where it wraps the end of the data area); None where none starts there.
    pub fn record<'a>(&'a self, at: usize, scratch: &'a mut Vec<u8>) -> Option<&'a [u8]> {
        let [a, b] = self.parts();
        if at < a.len() {
            // Headers are 8-byte aligned, so a header never wraps.
            let h = a.get(at..at + HEADER_SIZE)?;
            let size = u16::from_ne_bytes([h[6], h[7]]) as usize;
            if at + size <= a.len() {
                return Some(&a[at..at + size]);
            }
            let more = b.get(..at + size - a.len())?;
            scratch.clear();
            scratch.extend_from_slice(&a[at..]);
            scratch.extend_from_slice(more);
            return Some(&scratch[..]);
        }
        let at = at - a.len();
        let h = b.get(at..at + HEADER_SIZE)?;
        let size = u16::from_ne_bytes([h[6], h[7]]) as usize;
        b.get(at..at + size)
    }

    /// Bytes lent (0 once [`free`](Self::free)d).
    pub fn len(&self) -> usize {
        if self.freed {
            return 0;
        }
        self.end.wrapping_sub(self.start) as usize
    }

    /// Whether nothing was pending.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Forward walk over the records between two ring positions of a data area, oldest
/// first, without copying.
///
/// Works on any byte slice whose length is a power of two (the ring's data area, or a
/// test buffer). Positions are the kernel's free-running byte counts (`data_tail`,
/// `data_head`), masked with `len - 1` to index. A record crossing the end of the slice
/// comes out as [`RawData::Split`]. After an error the walk ends.
#[derive(Clone, Debug)]
pub struct RingRecords<'a> {
    data: &'a [u8],
    pos: u64,
    end: u64,
    failed: bool,
    pending: Option<RingError>,
}

impl<'a> RingRecords<'a> {
    /// Records in `data` from position `tail` up to `head`.
    ///
    /// Errors if `data`'s length is not a power of two of at least 8, or if `head - tail`
    /// exceeds it.
    pub fn new(data: &'a [u8], tail: u64, head: u64) -> Result<Self, RingError> {
        let span = head.wrapping_sub(tail);
        if !check_data(data) || span > data.len() as u64 {
            return Err(RingError::BadPositions {
                head,
                tail,
                data_size: data.len() as u64,
            });
        }
        Ok(RingRecords {
            data,
            pos: tail,
            end: head,
            failed: false,
            pending: None,
        })
    }

    /// A walk that yields `err` once and ends at `head` (used for overruns).
    fn failing(data: &'a [u8], head: u64, err: RingError) -> Self {
        RingRecords {
            data,
            pos: head,
            end: head,
            failed: false,
            pending: Some(err),
        }
    }

    /// The ring position of the next record (the tail to publish once everything before
    /// it is done with).
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// The head this walk stops at.
    pub fn head(&self) -> u64 {
        self.end
    }

    /// Bytes not walked yet.
    pub fn remaining(&self) -> u64 {
        self.end.wrapping_sub(self.pos)
    }
}

impl<'a> Iterator for RingRecords<'a> {
    type Item = Result<RawRecord<'a>, RingError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending.take() {
            self.failed = true;
            return Some(Err(e));
        }
        if self.failed || self.pos == self.end {
            return None;
        }
        let available = self.end.wrapping_sub(self.pos);
        let off = (self.pos & (self.data.len() as u64 - 1)) as usize;
        let (type_, misc, size) = if available >= HEADER_SIZE as u64 {
            header_at(self.data, off)
        } else {
            (0, 0, 0)
        };
        if (size as usize) < HEADER_SIZE || u64::from(size) > available {
            self.failed = true;
            return Some(Err(RingError::BadRecord {
                position: self.pos,
                size,
                available,
            }));
        }
        let data = body_at(self.data, off, size as usize);
        self.pos = self.pos.wrapping_add(u64::from(size));
        Some(Ok(RawRecord { type_, misc, data }))
    }
}

/// Walk over a `write_backward` ring, newest record first.
///
/// The kernel writes records at decreasing positions: `data_head` is the newest
/// record's start and each record's successor (older) begins right after it. The walk
/// goes from `head` up to `end` (the head of the previous read; 0 at first), stops early
/// at a zero header (never written) and at the first record that would reach beyond
/// `head + len` (partly overwritten).
#[derive(Clone, Debug)]
pub struct BackwardRecords<'a> {
    data: &'a [u8],
    head: u64,
    pos: u64,
    end: u64,
    done: bool,
}

impl<'a> BackwardRecords<'a> {
    /// Records in `data` from `head` (newest) up to `end` (exclusive).
    pub fn new(data: &'a [u8], head: u64, end: u64) -> Result<Self, RingError> {
        if !check_data(data) {
            return Err(RingError::BadPositions {
                head,
                tail: end,
                data_size: data.len() as u64,
            });
        }
        Ok(BackwardRecords {
            data,
            head,
            pos: head,
            end,
            done: false,
        })
    }

    /// The position reached (where the walk stopped).
    pub fn position(&self) -> u64 {
        self.pos
    }
}

impl<'a> Iterator for BackwardRecords<'a> {
    type Item = Result<RawRecord<'a>, RingError>;

    fn next(&mut self) -> Option<Self::Item> {
        let len = self.data.len() as u64;
        if self.done || self.pos == self.end {
            return None;
        }
        let used = self.pos.wrapping_sub(self.head);
        if used + HEADER_SIZE as u64 > len {
            self.done = true;
            return None;
        }
        let off = (self.pos & (len - 1)) as usize;
        let (type_, misc, size) = header_at(self.data, off);
        if size == 0 {
            // Never written: the ring had not filled up yet.
            self.done = true;
            return None;
        }
        if (size as usize) < HEADER_SIZE || size % 8 != 0 {
            self.done = true;
            return Some(Err(RingError::BadRecord {
                position: self.pos,
                size,
                available: len - used,
            }));
        }
        if used + u64::from(size) > len {
            // Its tail was overwritten by newer records.
            self.done = true;
            return None;
        }
        let data = body_at(self.data, off, size as usize);
        self.pos = self.pos.wrapping_add(u64::from(size));
        Some(Ok(RawRecord { type_, misc, data }))
    }
}

/// The kernel/user handshake on `data_head` and `data_tail`, with the memory ordering
/// include/uapi/linux/perf_event.h requires. This is the only code that touches them.
///
/// * **Head** (written by the kernel after the record bytes, with `smp_wmb()` between):
///   loaded with `Acquire` ordering, which is the header's "read `data_head`, then
///   `smp_rmb()`": no read of record bytes can be ordered before the head load, so every
///   byte below the head is seen complete.
/// * **Tail** (read by the kernel before it overwrites): a full fence (`smp_mb()`,
///   `SeqCst`) and then the store, so all our reads of the records being released happen
///   before the kernel can see the new tail and reuse their space.
/// * The AUX head/tail pair follows the same rules.
#[derive(Debug)]
pub struct RingControl {
    page: NonNull<perf_event_mmap_page>,
}

impl RingControl {
    /// Wrap a user page.
    ///
    /// # Safety
    /// `page` must point to a `perf_event_mmap_page` (a perf mmap's first page, or memory
    /// laid out like one) that stays mapped while this value exists, 8-byte aligned.
    /// [`set_tail`](Self::set_tail) additionally needs the page writable.
    pub unsafe fn new(page: NonNull<perf_event_mmap_page>) -> RingControl {
        RingControl { page }
    }

    fn word(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: per `new`'s contract the page is mapped for our lifetime; the field at
        // `offset` is an aligned u64 that only the kernel (head) or we (tail) write,
        // accessed solely through atomics here.
        unsafe { AtomicU64::from_ptr(self.page.as_ptr().cast::<u8>().add(offset).cast()) }
    }

    /// `data_head`, with acquire ordering (the header's `smp_rmb()` after the load).
    #[inline]
    pub fn head(&self) -> u64 {
        self.word(std::mem::offset_of!(perf_event_mmap_page, data_head))
            .load(Ordering::Acquire)
    }

    /// `data_tail` as last published.
    #[inline]
    pub fn tail(&self) -> u64 {
        self.word(std::mem::offset_of!(perf_event_mmap_page, data_tail))
            .load(Ordering::Relaxed)
    }

    /// Publish `tail`: a full fence (`smp_mb()`), then the store.
    #[inline]
    pub fn set_tail(&self, tail: u64) {
        fence(Ordering::SeqCst);
        self.word(std::mem::offset_of!(perf_event_mmap_page, data_tail))
            .store(tail, Ordering::Relaxed);
    }

    /// `aux_head`, with acquire ordering.
    #[inline]
    pub fn aux_head(&self) -> u64 {
        self.word(std::mem::offset_of!(perf_event_mmap_page, aux_head))
            .load(Ordering::Acquire)
    }

    /// `aux_tail` as last published.
    #[inline]
    pub fn aux_tail(&self) -> u64 {
        self.word(std::mem::offset_of!(perf_event_mmap_page, aux_tail))
            .load(Ordering::Relaxed)
    }

    /// Publish `aux_tail`: full fence, then the store.
    #[inline]
    pub fn set_aux_tail(&self, tail: u64) {
        fence(Ordering::SeqCst);
        self.word(std::mem::offset_of!(perf_event_mmap_page, aux_tail))
            .store(tail, Ordering::Relaxed);
    }
}

/// How big a ring to map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingSize {
    /// Exactly this many data pages; must be a power of two (the kernel's rule: 1+3
    /// pages is EINVAL).
    Pages(usize),
    /// At least this many data bytes, rounded up to a power-of-two number of pages.
    Bytes(usize),
}

impl RingSize {
    /// The number of data pages.
    pub fn data_pages(self) -> Option<usize> {
        let ps = page_size();
        match self {
            RingSize::Pages(n) => n.is_power_of_two().then_some(n),
            RingSize::Bytes(b) => b.max(1).div_ceil(ps).checked_next_power_of_two(),
        }
    }
}

/// Whether user space publishes the tail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingMode {
    /// Writable mapping: records are consumed and the kernel never overwrites unread data.
    Consume,
    /// Read-only mapping: the kernel overwrites the oldest data (flight recorder).
    Overwrite,
}

/// perf's default data pages per ring: `kernel.perf_event_mlock_kb` less one page (the
/// user page), in pages, rounded down to a power of two; 512 KiB when the sysctl cannot be
/// read. With the kernel's default of 516 KiB that is 128 pages of 4 KiB (512 KiB), and
/// a larger `perf_event_mlock_kb` gives larger rings, as it does to perf.
pub fn default_data_pages() -> usize {
    let page = page_size();
    let kb = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok());
    default_pages_for(kb, page)
}

/// [`default_data_pages`] for a given sysctl value and page size.
fn default_pages_for(mlock_kb: Option<usize>, page: usize) -> usize {
    let kb = match mlock_kb {
        Some(kb) => kb.saturating_sub(page / 1024),
        None => 512,
    };
    floor_power_of_two((kb * 1024 / page).max(1))
}

/// The largest power of two not above `n` (`n` > 0): ring data areas are powers of two.
fn floor_power_of_two(n: usize) -> usize {
    1 << (usize::BITS - 1 - n.leading_zeros())
}

/// Most bytes per CPU [`recorder_data_pages`] gives a ring beyond perf's default.
pub const PRIVILEGED_RING_BYTES: usize = 4 << 20;

/// Most bytes [`recorder_data_pages`] maps in all the rings together.
pub const PRIVILEGED_RINGS_TOTAL: usize = 256 << 20;

/// The default data pages per ring of a recorder over `cpus` rings: perf's
/// [`default_data_pages`], or, when this process may lock any amount of memory
/// (`CAP_IPC_LOCK`, which root has: the kernel then charges no limit for perf rings),
/// up to [`PRIVILEGED_RING_BYTES`] per CPU within [`PRIVILEGED_RINGS_TOTAL`] in all
/// (4 MiB per CPU up to 64 CPUs), never less than perf's. A bigger ring holds the
/// samples of a busy CPU longer (at 100 kHz with call chains about 0.4 s instead of
/// 50 ms), so a draining thread that is scheduled late loses none.
pub fn recorder_data_pages(cpus: usize) -> usize {
    let base = default_data_pages();
    if !can_lock_any_memory() {
        return base;
    }
    privileged_pages_for(base, cpus, page_size())
}

/// [`recorder_data_pages`] for a privileged process.
fn privileged_pages_for(base: usize, cpus: usize, page: usize) -> usize {
    let per_cpu = PRIVILEGED_RING_BYTES.min(PRIVILEGED_RINGS_TOTAL / cpus.max(1));
    floor_power_of_two((per_cpu / page).max(1)).max(base)
}

/// Whether the process has `CAP_IPC_LOCK` in its effective set (`CapEff` of
/// `/proc/self/status`).
pub fn can_lock_any_memory() -> bool {
    crate::caps::effective(crate::caps::CAP_IPC_LOCK)
}

/// An explanation of an mmap failure for lack of lockable memory (EPERM/ENOMEM).
pub fn mlock_hint(bytes: usize) -> String {
    let kb = std::fs::read_to_string("/proc/sys/kernel/perf_event_mlock_kb")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: rl is a valid, writable rlimit.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut rl) } == 0;
    let memlock = if !ok {
        "unknown".to_string()
    } else if rl.rlim_cur == libc::RLIM_INFINITY {
        "unlimited".to_string()
    } else {
        format!("{} KiB", rl.rlim_cur / 1024)
    };
    let per_cpu = kb.map_or("unknown".to_string(), |k| format!("{k} KiB"));
    format!(
        "the ring needs {} KiB of locked memory; perf rings are charged first to \
         kernel.perf_event_mlock_kb ({per_cpu} per user, per CPU) and then to \
         RLIMIT_MEMLOCK ({memlock}): use a smaller ring, raise `sysctl \
         kernel.perf_event_mlock_kb=<KiB>` or `ulimit -l <KiB>`, or run with CAP_IPC_LOCK \
         (root)",
        bytes.div_ceil(1024)
    )
}

/// The data area `[offset, offset + len)` of a ring mapping, borrowed from it.
///
/// The kernel writes only at and beyond `data_head` (consume mode), so the bytes a walk
/// looks at (tail..head) are stable until the tail is published, which takes
/// `&mut RingBuffer` and so cannot happen while these borrows live. Overwrite-mode rings
/// may be overwritten while read: their walks read a paused copy instead
/// ([`RingBuffer::records`]).
fn data_area(map: &Mapping, offset: usize, len: usize) -> &[u8] {
    assert!(offset.checked_add(len).is_some_and(|end| end <= map.len));
    // SAFETY: the range lies inside the live mapping (asserted above), which outlives
    // the returned borrow.
    unsafe { std::slice::from_raw_parts(map.ptr.as_ptr().add(offset), len) }
}

/// A mapping that unmaps itself.
#[derive(Debug)]
pub(crate) struct Mapping {
    pub(crate) ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: plain shared memory, unmapped once when the last owner drops it. Threads only
// read it as bytes ([`RingLease`]: bytes the kernel no longer writes until the tail is
// published, which only the ring's owner does), or reach the head/tail through atomics.
unsafe impl Send for Mapping {}
// SAFETY: as above: shared reads of bytes nobody writes while they are read.
unsafe impl Sync for Mapping {}

impl Mapping {
    pub(crate) fn new(
        fd: BorrowedFd<'_>,
        len: usize,
        prot: i32,
        offset: u64,
    ) -> io::Result<Mapping> {
        // SAFETY: a fresh shared mapping chosen by the kernel (addr NULL) of a perf fd;
        // no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                prot,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(p.cast()).map_or_else(
            || Err(io::Error::other("mmap returned NULL")),
            |ptr| Ok(Mapping { ptr, len }),
        )
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len are exactly a mapping we made and nobody else unmaps it;
        // borrows of it end with the owner's borrows.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// The AUX area of a ring (`aux_offset`/`aux_size` in the user page, mapped separately).
///
/// Its bytes are read with [`RingBuffer::aux_pending`]: only the part between
/// `aux_tail` and `aux_head` is complete, the PMU writes the rest at any time, so the
/// whole area is never handed out.
#[derive(Debug)]
pub struct AuxArea {
    map: Mapping,
    offset: u64,
    /// Position up to which AUX bytes were handed out (not yet published as aux_tail).
    read_pos: u64,
}

impl AuxArea {
    /// The file offset it was mapped at (`aux_offset`).
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// Its size in bytes (`aux_size`).
    pub fn size(&self) -> usize {
        self.map.len
    }
}

/// `PERF_EVENT_IOC_PAUSE_OUTPUT` on a raw fd.
fn pause_output(fd: BorrowedFd<'_>, pause: bool) -> io::Result<()> {
    // SAFETY: integer-argument ioctl on a live fd.
    let r = unsafe {
        sys::ioctl::ioctl_arg(
            fd.as_raw_fd(),
            sys::PERF_EVENT_IOC_PAUSE_OUTPUT,
            libc::c_ulong::from(pause),
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Copy `src` (a live mapping the kernel may write) into `dst` with volatile word loads,
/// so the compiler makes no assumption about the bytes staying put.
fn copy_volatile(src: &Mapping, offset: usize, len: usize, dst: &mut Vec<u8>) {
    assert!(offset.checked_add(len).is_some_and(|end| end <= src.len));
    assert!(offset % 8 == 0 && len % 8 == 0);
    dst.clear();
    dst.reserve(len);
    // SAFETY: the range lies inside the live mapping (asserted above) and is 8-byte
    // aligned (the mapping is page aligned, offset and len multiples of 8); volatile
    // reads of plain u64 words that the kernel may be writing at the same time.
    let base = unsafe { src.ptr.as_ptr().add(offset) }.cast::<u64>();
    for i in 0..len / 8 {
        // SAFETY: i * 8 < len, inside the range checked above.
        let w = unsafe { std::ptr::read_volatile(base.add(i)) };
        dst.extend_from_slice(&w.to_ne_bytes());
    }
}

/// The mmap'ed ring buffer of one event (and of the events redirected to it with
/// `PERF_EVENT_IOC_SET_OUTPUT`).
///
/// Holds a duplicate of the event's file descriptor, for `poll`/epoll and
/// `PERF_EVENT_IOC_PAUSE_OUTPUT`.
///
/// ```
/// use perfkit::{Attr, Counter, RingBuffer, RingSize, Software, Target, sys};
/// let attr = Attr::new(Software::PageFaults)
///     .sample_period(1)
///     .sample_type(sys::PERF_SAMPLE_IP);
/// let counter = Counter::open(&attr, &Target::this_thread())?;
/// let mut ring = RingBuffer::map(&counter, RingSize::Pages(8))?;
/// counter.enable()?;
/// let buf = vec![1u8; 64 << 10]; // 16 fresh pages
/// counter.disable()?;
/// // Zero-copy records, oldest first; the tail is published on the next call.
/// let samples = ring
///     .records()
///     .filter_map(Result::ok)
///     .filter(|r| r.type_ == sys::PERF_RECORD_SAMPLE)
///     .count();
/// assert!(samples > 0, "{}", buf.len());
/// # Ok::<(), perfkit::Error>(())
/// ```
pub struct RingBuffer {
    /// Shared with the [`RingLease`]s lent out, which read it in place.
    map: std::sync::Arc<Mapping>,
    ctl: RingControl,
    fd: OwnedFd,
    name: String,
    pid: i32,
    cpu: i32,
    data_offset: usize,
    data_size: usize,
    mode: RingMode,
    backward: bool,
    /// Position up to which records were handed out (not yet published as the tail).
    read_pos: u64,
    aux: Option<AuxArea>,
    /// Whether the user paused the output with [`RingBuffer::pause`].
    user_paused: std::cell::Cell<bool>,
    /// The copy of an overwrite-mode ring's data area that its walks read.
    copy: Vec<u8>,
    /// The start of the bytes lent out by [`lease`](RingBuffer::lease) and not given
    /// back: the tail is not published past it.
    leased: Option<u64>,
}

// SAFETY: the mapping is plain shared memory; all shared-state access (head/tail) goes
// through atomics, and record slices are only handed out under &mut self.
unsafe impl Send for RingBuffer {}

impl fmt::Debug for RingBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RingBuffer")
            .field("event", &self.name)
            .field("data_size", &self.data_size)
            .field("mode", &self.mode)
            .field("backward", &self.backward)
            .field("read_pos", &self.read_pos)
            .finish()
    }
}

impl RingBuffer {
    /// Map a ring for `counter`: `mmap(fd, (1 + pages) * page_size)`. [`RingMode::Consume`]
    /// unless the event is `write_backward` (then always overwrite/read-only).
    pub fn map(counter: &Counter, size: RingSize) -> Result<RingBuffer> {
        let mode = if counter.attr().raw().has(sys::attr_flags::WRITE_BACKWARD) {
            RingMode::Overwrite
        } else {
            RingMode::Consume
        };
        Self::map_with(counter, size, mode)
    }

    /// Map with an explicit mode.
    pub fn map_with(counter: &Counter, size: RingSize, mode: RingMode) -> Result<RingBuffer> {
        let backward = counter.attr().raw().has(sys::attr_flags::WRITE_BACKWARD);
        let (pid, cpu) = counter_target(counter);
        Self::map_inner(
            counter.as_fd(),
            counter.name(),
            pid,
            cpu,
            size,
            mode,
            backward,
        )
    }

    /// Map the ring of any perf event fd (one opened elsewhere, for example with
    /// [`perfkit_sys::perf_event_open`]): `mmap(fd, (1 + pages) * page_size)`, writable
    /// for [`RingMode::Consume`], read-only for [`RingMode::Overwrite`].
    ///
    /// `backward` must say whether the event was opened with `write_backward` (the fd
    /// does not tell); a backward ring is always mapped read-only. Errors name the event
    /// as `perf event fd N` with pid and cpu unknown (-1).
    pub fn map_fd(
        fd: BorrowedFd<'_>,
        size: RingSize,
        mode: RingMode,
        backward: bool,
    ) -> Result<RingBuffer> {
        let mode = if backward { RingMode::Overwrite } else { mode };
        let name = format!("perf event fd {}", fd.as_raw_fd());
        Self::map_inner(fd, &name, -1, -1, size, mode, backward)
    }

    fn map_inner(
        fd: BorrowedFd<'_>,
        name: &str,
        pid: i32,
        cpu: i32,
        size: RingSize,
        mode: RingMode,
        backward: bool,
    ) -> Result<RingBuffer> {
        let err = |e: io::Error| Error::new(Op::Mmap, e, name, pid, cpu);
        let ps = page_size();
        let pages = size.data_pages().ok_or_else(|| {
            err(io::Error::from_raw_os_error(libc::EINVAL)).with_detail(format!(
                "the data area must be a power-of-two number of pages ({size:?} is not)"
            ))
        })?;
        let len = (pages + 1)
            .checked_mul(ps)
            .ok_or_else(|| err(io::Error::from_raw_os_error(libc::ENOMEM)))?;
        let prot = match mode {
            RingMode::Consume => libc::PROT_READ | libc::PROT_WRITE,
            RingMode::Overwrite => libc::PROT_READ,
        };
        let map = Mapping::new(fd, len, prot, 0).map_err(|e| {
            let errno = e.raw_os_error().unwrap_or(0);
            let e = err(e);
            match errno {
                libc::EPERM | libc::ENOMEM => e.with_detail(mlock_hint(len)),
                libc::EINVAL => e.with_detail(
                    "the kernel refused the ring: a per-task `inherit` event for any CPU \
                     (cpu=-1) cannot be mmap'ed (open one event per CPU), the size must be \
                     1 + 2^n pages, and an event redirected with SET_OUTPUT (or already \
                     mapped) only maps with the size of the ring it writes to",
                ),
                libc::EBUSY => e.with_kind(ErrorKind::InvalidOperation).with_detail(
                    "the event's output is redirected to another ring (SET_OUTPUT): read \
                     that ring instead",
                ),
                _ => e,
            }
        })?;
        let fd = fd.try_clone_to_owned().map_err(err)?;
        // SAFETY: the first page of a perf mmap is the user page; it lives as long as
        // `map`, which the RingBuffer owns alongside `ctl`.
        let ctl = unsafe { RingControl::new(map.ptr.cast()) };
        // SAFETY: the user page is mapped; data_offset/data_size are set by the kernel at
        // mmap time and not changed afterwards.
        let (mut data_offset, mut data_size) = unsafe {
            let p = map.ptr.cast::<perf_event_mmap_page>().as_ptr();
            (
                std::ptr::read_volatile(&raw const (*p).data_offset) as usize,
                std::ptr::read_volatile(&raw const (*p).data_size) as usize,
            )
        };
        if data_offset == 0 || data_size != pages * ps || data_offset + data_size > len {
            // Kernels before 4.1 leave these zero.
            data_offset = ps;
            data_size = pages * ps;
        }
        let read_pos = if mode == RingMode::Consume {
            ctl.tail()
        } else {
            ctl.head()
        };
        Ok(RingBuffer {
            map: std::sync::Arc::new(map),
            ctl,
            fd,
            name: name.to_string(),
            pid,
            cpu,
            data_offset,
            data_size,
            mode,
            backward,
            read_pos: if backward { 0 } else { read_pos },
            aux: None,
            user_paused: std::cell::Cell::new(false),
            copy: Vec::new(),
            leased: None,
        })
    }

    fn err(&self, op: Op, e: io::Error) -> Error {
        Error::new(op, e, self.name.clone(), self.pid, self.cpu)
    }

    /// The head/tail handshake of this ring.
    pub fn control(&self) -> &RingControl {
        &self.ctl
    }

    /// Size of the data area in bytes (a power of two).
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// Whether the event writes backwards (`write_backward`).
    pub fn is_backward(&self) -> bool {
        self.backward
    }

    /// The mapping mode.
    pub fn mode(&self) -> RingMode {
        self.mode
    }

    /// The user page, read through volatile loads (the kernel updates it).
    pub fn user_page_ptr(&self) -> NonNull<perf_event_mmap_page> {
        self.map.ptr.cast()
    }

    /// Bytes between the read position and the kernel's head.
    pub fn pending_bytes(&self) -> u64 {
        self.ctl.head().wrapping_sub(self.read_pos)
    }

    /// Publish everything handed out so far as consumed (`data_tail`). Done
    /// automatically at the start of every [`records`](Self::records) call.
    pub fn consume(&mut self) {
        if self.mode == RingMode::Consume && !self.backward && self.leased.is_none() {
            self.ctl.set_tail(self.read_pos);
        }
    }

    /// The records written since the last call, oldest first, without copying.
    ///
    /// First publishes the tail for everything the previous walk handed out (the borrow
    /// checker guarantees its records are gone). The walk snapshots `data_head`; records
    /// written meanwhile come with the next call. In overwrite mode the walk pauses the
    /// ring's output for as long as it lives (see the module docs), and if the kernel
    /// lapped the read position it yields one [`RingError::Overrun`] and restarts at the
    /// head. For `write_backward` rings use [`records_backward`](Self::records_backward).
    pub fn records(&mut self) -> RingWalk<'_> {
        self.consume();
        let (data, head) = match self.overwrite_snapshot() {
            Err(e) => {
                let pos = self.read_pos;
                return RingWalk {
                    inner: RingRecords::failing(&[0; HEADER_SIZE], pos, e),
                    read_pos: &mut self.read_pos,
                };
            }
            Ok(Some(head)) => (&self.copy[..], head),
            Ok(None) => (
                data_area(&self.map, self.data_offset, self.data_size),
                self.ctl.head(),
            ),
        };
        let data_size = self.data_size as u64;
        let behind = head.wrapping_sub(self.read_pos);
        let start = self.read_pos;
        self.read_pos = head;
        let backward = self.backward;
        let inner = if backward {
            RingRecords::failing(
                data,
                head,
                RingError::BadPositions {
                    head,
                    tail: start,
                    data_size,
                },
            )
        } else if behind > data_size {
            RingRecords::failing(data, head, RingError::Overrun { behind, data_size })
        } else {
            match RingRecords::new(data, start, head) {
                Ok(w) => w,
                Err(e) => RingRecords::failing(data, head, e),
            }
        };
        // The walk stops at `head`; read_pos is set to where it actually ended when it
        // is dropped.
        RingWalk {
            inner,
            read_pos: &mut self.read_pos,
        }
    }

    /// For an overwrite-mode ring: pause the output (unless paused by the user), read
    /// `data_head`, copy the data area into `self.copy`, resume; returns the head.
    /// `None` for consume-mode rings, which are read in place.
    fn overwrite_snapshot(&mut self) -> Result<Option<u64>, RingError> {
        if self.mode != RingMode::Overwrite {
            return Ok(None);
        }
        let pause = !self.user_paused.get();
        let failed = |e: io::Error| RingError::PauseFailed {
            errno: e.raw_os_error().unwrap_or(0),
        };
        if pause {
            pause_output(self.fd.as_fd(), true).map_err(failed)?;
        }
        let head = self.ctl.head();
        copy_volatile(&self.map, self.data_offset, self.data_size, &mut self.copy);
        if pause {
            pause_output(self.fd.as_fd(), false).map_err(failed)?;
        }
        Ok(Some(head))
    }

    /// Walk every pending record through `f`, then publish the tail. Returns the number
    /// of records; stops at the first [`RingError`].
    pub fn drain(
        &mut self,
        mut f: impl FnMut(RawRecord<'_>),
    ) -> std::result::Result<usize, RingError> {
        let mut n = 0;
        {
            let walk = self.records();
            for r in walk {
                f(r?);
                n += 1;
            }
        }
        self.consume();
        Ok(n)
    }

    /// Copy every pending record to the end of `out` as the kernel wrote it (header
    /// included), copying the pending bytes in pieces of 64 KiB instead of one record at
    /// a time, then publish the tail. `f` gets each record's offset in `out` and the
    /// record there, as soon as the piece that ends it is copied (its header is then still
    /// in the cache); returns the number of records.
    ///
    /// What a recorder that writes the records unchanged needs: a pass costs a `memcpy`
    /// and a walk over the headers. A record whose header is inconsistent ends the copy
    /// there with [`RingError::BadRecord`] (`out` keeps the records before it). Rings not
    /// read in place (overwrite or backward mode) are copied record by record.
    pub fn drain_copy(
        &mut self,
        out: &mut Vec<u8>,
        mut f: impl FnMut(usize, RawRecord<'_>),
    ) -> std::result::Result<usize, RingError> {
        if self.mode != RingMode::Consume || self.backward {
            let mut n = 0;
            self.drain(|rec| {
                let at = out.len();
                let size = (HEADER_SIZE + rec.data.len()) as u16;
                out.extend_from_slice(&rec.type_.to_ne_bytes());
                out.extend_from_slice(&rec.misc.to_ne_bytes());
                out.extend_from_slice(&size.to_ne_bytes());
                match rec.data {
                    RawData::Single(a) => out.extend_from_slice(a),
                    RawData::Split(a, b) => {
                        out.extend_from_slice(a);
                        out.extend_from_slice(b);
                    }
                }
                f(at, record_at(out, at));
                n += 1;
            })?;
            return Ok(n);
        }
        let head = self.ctl.head();
        let tail = self.read_pos;
        let span = head.wrapping_sub(tail);
        let data_size = self.data_size as u64;
        if span > data_size {
            return Err(RingError::BadPositions {
                head,
                tail,
                data_size,
            });
        }
        let data = data_area(&self.map, self.data_offset, self.data_size);
        let start = out.len();
        let off = (tail & (data_size - 1)) as usize;
        let span = span as usize;
        let (first, second) = if off + span <= data.len() {
            (&data[off..off + span], &data[..0])
        } else {
            (&data[off..], &data[..off + span - data.len()])
        };
        out.reserve(span);
        // Copied and walked a piece at a time: the headers are read while the piece is in
        // the cache. A copy of the whole span (megabytes) goes around the cache, and a walk
        // after it missed the cache at every record.
        let mut at = start;
        let mut n = 0;
        let mut failed = None;
        'copy: for piece in first.chunks(COPY_PIECE).chain(second.chunks(COPY_PIECE)) {
            out.extend_from_slice(piece);
            let end = out.len();
            // Headers are 8-byte aligned in the ring, so a whole header is always there.
            while at + HEADER_SIZE <= end {
                let size = u16::from_ne_bytes([out[at + 6], out[at + 7]]) as usize;
                if size < HEADER_SIZE {
                    failed = Some(RingError::BadRecord {
                        position: tail.wrapping_add((at - start) as u64),
                        size: size as u16,
                        available: (end - at - HEADER_SIZE) as u64,
                    });
                    break 'copy;
                }
                if at + size > end {
                    // The rest of it comes with the next piece.
                    break;
                }
                f(at, record_at(out, at));
                n += 1;
                at += size;
            }
        }
        let end = out.len();
        if failed.is_none() && at < end {
            // The last record runs past the kernel's head.
            failed = Some(RingError::BadRecord {
                position: tail.wrapping_add((at - start) as u64),
                size: u16::from_ne_bytes([out[at + 6], out[at + 7]]),
                available: (end - at - HEADER_SIZE) as u64,
            });
        }
        out.truncate(at);
        self.read_pos = tail.wrapping_add((at - start) as u64);
        self.consume();
        match failed {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }

    /// Lend out every pending record in place, without copying: `f` gets each record's
    /// offset in the lent bytes and the record (split where it wraps the end of the data
    /// area). The kernel writes nothing over the lent bytes until they are given back with
    /// [`release`](Self::release), which publishes the tail, or freed by their holder
    /// ([`RingLease::free`]); meanwhile later walks go on after them but publish nothing. The lease may go to another thread (a writer that
    /// `write`s the bytes straight from the ring, as perf does) and keeps the mapping alive.
    ///
    /// `Ok(None)` where nothing can be lent: a ring not read in place (overwrite or
    /// backward mode), or one whose last lease is still out. A record whose header is
    /// inconsistent is a [`RingError::BadRecord`], and nothing is lent.
    pub fn lease(
        &mut self,
        mut f: impl FnMut(usize, RawRecord<'_>),
    ) -> std::result::Result<Option<RingLease>, RingError> {
        if self.mode != RingMode::Consume || self.backward || self.leased.is_some() {
            return Ok(None);
        }
        let start = self.read_pos;
        let head = self.ctl.head();
        let data = data_area(&self.map, self.data_offset, self.data_size);
        let mut walk = RingRecords::new(data, start, head)?;
        loop {
            let at = walk.position().wrapping_sub(start) as usize;
            match walk.next() {
                None => break,
                Some(Ok(r)) => f(at, r),
                Some(Err(e)) => return Err(e),
            }
        }
        self.read_pos = head;
        self.leased = Some(start);
        Ok(Some(RingLease {
            map: self.map.clone(),
            data_offset: self.data_offset,
            data_size: self.data_size,
            start,
            end: head,
            freed: false,
        }))
    }

    /// Give back a [`lease`](Self::lease) of this ring whose bytes are done with, and
    /// publish the tail past them (and past whatever was walked after them). A lease of
    /// another ring, or one given back already, changes nothing.
    pub fn release(&mut self, lease: RingLease) {
        if std::sync::Arc::ptr_eq(&lease.map, &self.map) && self.leased == Some(lease.start) {
            self.leased = None;
            self.consume();
        }
    }

    /// `PERF_EVENT_IOC_PAUSE_OUTPUT`: stop (`true`) or resume the kernel's writes.
    ///
    /// While paused by this call, walks leave the output paused; otherwise the walks of
    /// an overwrite-mode ring pause and resume it themselves.
    pub fn pause(&self, pause: bool) -> Result<()> {
        pause_output(self.fd.as_fd(), pause)
            .map_err(|e| self.err(Op::Ioctl("PERF_EVENT_IOC_PAUSE_OUTPUT"), e))?;
        self.user_paused.set(pause);
        Ok(())
    }

    /// The records of a `write_backward` ring written since the last call, newest
    /// first, read from a copy taken with the output paused (see the module docs).
    pub fn records_backward(&mut self) -> BackwardWalk<'_> {
        let head = match self.overwrite_snapshot() {
            Ok(Some(head)) => head,
            Ok(None) => self.ctl.head(),
            Err(e) => {
                let pos = self.read_pos;
                return BackwardWalk {
                    inner: BackwardRecords {
                        data: &[],
                        head: pos,
                        pos,
                        end: pos,
                        done: true,
                    },
                    pending: Some(e),
                };
            }
        };
        let end = self.read_pos;
        self.read_pos = head;
        let data = if self.mode == RingMode::Overwrite {
            &self.copy[..]
        } else {
            data_area(&self.map, self.data_offset, self.data_size)
        };
        // Cannot fail: data_size is a power of two >= one page.
        let inner = BackwardRecords::new(data, head, end).unwrap_or(BackwardRecords {
            data,
            head,
            pos: head,
            end: head,
            done: true,
        });
        BackwardWalk {
            inner,
            pending: None,
        }
    }

    /// The AUX bytes the PMU completed since the last [`aux_consume`](Self::aux_consume)
    /// (`aux_tail..aux_head`), without copying; split in two where they wrap around the
    /// end of the area. `None` without an AUX area ([`map_aux`](Self::map_aux)).
    ///
    /// The AUX area is always mapped writable here (consume mode), so the PMU writes
    /// only beyond `aux_head` and never past `aux_tail`: the bytes handed out stay put
    /// until `aux_consume`, which needs them gone.
    pub fn aux_pending(&mut self) -> Option<Result<RawData<'_>, RingError>> {
        let aux = self.aux.as_mut()?;
        let head = self.ctl.aux_head();
        let tail = aux.read_pos;
        let len = aux.map.len;
        let span = head.wrapping_sub(tail);
        if span > len as u64 || !len.is_power_of_two() {
            return Some(Err(RingError::BadPositions {
                head,
                tail,
                data_size: len as u64,
            }));
        }
        aux.read_pos = head;
        // SAFETY: the AUX mapping lives as long as `self`, which this borrow keeps
        // borrowed; the bytes tail..head are complete and not written again before
        // aux_tail moves past them (aux_consume, which needs &mut self).
        let all = unsafe { std::slice::from_raw_parts(aux.map.ptr.as_ptr(), len) };
        let start = (tail & (len as u64 - 1)) as usize;
        let span = span as usize;
        Some(Ok(if start + span <= len {
            RawData::Single(&all[start..start + span])
        } else {
            RawData::Split(&all[start..], &all[..start + span - len])
        }))
    }

    /// Publish everything [`aux_pending`](Self::aux_pending) handed out as consumed
    /// (`aux_tail`).
    pub fn aux_consume(&mut self) {
        if let Some(aux) = &self.aux {
            self.ctl.set_aux_tail(aux.read_pos);
        }
    }

    /// Map the AUX area: write `aux_offset` (just after the data area) and `aux_size`
    /// into the user page, then `mmap(fd, aux_size, aux_offset)`. Needs a consume-mode
    /// (writable) ring and a PMU with an AUX area (Intel PT, ARM SPE/CoreSight...).
    pub fn map_aux(&mut self, size: RingSize) -> Result<&AuxArea> {
        let ps = page_size();
        let pages = size.data_pages().ok_or_else(|| {
            self.err(Op::Mmap, io::Error::from_raw_os_error(libc::EINVAL))
                .with_detail("the AUX area must be a power-of-two number of pages")
        })?;
        if self.mode != RingMode::Consume {
            return Err(self
                .err(Op::Mmap, io::Error::from_raw_os_error(libc::EACCES))
                .with_detail("the AUX area needs a writable (consume-mode) ring"));
        }
        let aux_size = (pages * ps) as u64;
        let aux_offset = (self.data_offset + self.data_size) as u64;
        let page = self.user_page_ptr().as_ptr();
        // SAFETY: the user page is mapped writable (consume mode) for our lifetime.
        unsafe {
            std::ptr::write_volatile(&raw mut (*page).aux_offset, aux_offset);
            std::ptr::write_volatile(&raw mut (*page).aux_size, aux_size);
        }
        let map = Mapping::new(
            self.fd.as_fd(),
            aux_size as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            aux_offset,
        )
        .map_err(|e| {
            let errno = e.raw_os_error().unwrap_or(0);
            let e = self.err(Op::Mmap, e);
            match errno {
                libc::EOPNOTSUPP => e.with_kind(ErrorKind::NotSupported).with_detail(
                    "this event's PMU has no AUX area (only PMUs such as intel_pt, \
                     arm_spe or cs_etm have one; software events never do)",
                ),
                libc::EINVAL => e.with_detail(format!(
                    "the kernel rejected aux_offset {aux_offset:#x} / aux_size {aux_size:#x}"
                )),
                libc::EPERM | libc::ENOMEM => e.with_detail(mlock_hint(aux_size as usize)),
                _ => e,
            }
        })?;
        let read_pos = self.ctl.aux_tail();
        Ok(self.aux.insert(AuxArea {
            map,
            offset: aux_offset,
            read_pos,
        }))
    }

    /// `aux_offset` and `aux_size` as the user page holds them.
    pub fn aux_request(&self) -> (u64, u64) {
        let page = self.user_page_ptr().as_ptr();
        // SAFETY: the user page is mapped for our lifetime.
        unsafe {
            (
                std::ptr::read_volatile(&raw const (*page).aux_offset),
                std::ptr::read_volatile(&raw const (*page).aux_size),
            )
        }
    }
}

impl AsFd for RingBuffer {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// The (pid, cpu) a counter was opened for, as its errors report them.
pub(crate) fn counter_target(c: &Counter) -> (i32, i32) {
    let e = c.make_error(Op::Other(String::new()), io::Error::from_raw_os_error(0));
    (e.pid(), e.cpu())
}

/// A walk over a ring's pending records ([`RingBuffer::records`]). When dropped early,
/// the read position moves only past the records handed out, so the rest come again.
/// An overwrite-mode ring's walk reads a copy taken with the output paused.
#[derive(Debug)]
pub struct RingWalk<'a> {
    inner: RingRecords<'a>,
    read_pos: &'a mut u64,
}

impl<'a> RingWalk<'a> {
    /// Bytes not walked yet.
    pub fn remaining(&self) -> u64 {
        self.inner.remaining()
    }
}

/// A walk over a `write_backward` ring, newest first ([`RingBuffer::records_backward`]),
/// over a copy taken with the output paused.
#[derive(Debug)]
pub struct BackwardWalk<'a> {
    inner: BackwardRecords<'a>,
    pending: Option<RingError>,
}

impl<'a> Iterator for BackwardWalk<'a> {
    type Item = Result<RawRecord<'a>, RingError>;
    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.pending.take() {
            return Some(Err(e));
        }
        self.inner.next()
    }
}

impl<'a> Iterator for RingWalk<'a> {
    type Item = Result<RawRecord<'a>, RingError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.inner.next()
    }
}

impl Drop for RingWalk<'_> {
    fn drop(&mut self) {
        if self.inner.pending.is_none() {
            *self.read_pos = self.inner.position();
        }
        if self.inner.failed && self.inner.remaining() != 0 {
            // A corrupt record: skip to the head rather than loop on it.
            *self.read_pos = self.inner.head();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(buf: &mut [u8], pos: u64, type_: u32, size: u16, fill: u8) {
        let n = buf.len();
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&type_.to_ne_bytes());
        bytes.extend_from_slice(&0u16.to_ne_bytes());
        bytes.extend_from_slice(&size.to_ne_bytes());
        bytes.resize(size as usize, fill);
        for (i, b) in bytes.iter().enumerate() {
            buf[(pos as usize + i) & (n - 1)] = *b;
        }
    }

    #[test]
    fn default_ring_follows_perf_event_mlock_kb_as_perf() {
        assert_eq!(default_pages_for(Some(516), 4096), 128);
        assert_eq!(default_pages_for(None, 4096), 128);
        // 2052 KiB less a page: 512 pages; 1000 KiB: 249 pages, rounded down to 128.
        assert_eq!(default_pages_for(Some(2052), 4096), 512);
        assert_eq!(default_pages_for(Some(1000), 4096), 128);
        assert_eq!(default_pages_for(Some(0), 4096), 1);
    }

    #[test]
    fn privileged_rings_are_4_mib_per_cpu_within_256_mib() {
        // 2 and 64 CPUs: 4 MiB (1024 pages of 4 KiB) each; 128 CPUs: 2 MiB; never
        // below perf's default (a larger perf_event_mlock_kb, or 4096 CPUs).
        assert_eq!(privileged_pages_for(128, 2, 4096), 1024);
        assert_eq!(privileged_pages_for(128, 64, 4096), 1024);
        assert_eq!(privileged_pages_for(128, 128, 4096), 512);
        assert_eq!(privileged_pages_for(128, 96, 4096), 512);
        assert_eq!(privileged_pages_for(128, 4096, 4096), 128);
        assert_eq!(privileged_pages_for(2048, 2, 4096), 2048);
        // 64 KiB pages: 64 of them.
        assert_eq!(privileged_pages_for(8, 2, 65536), 64);
    }

    #[test]
    fn sizes() {
        let ps = page_size();
        assert_eq!(RingSize::Pages(4).data_pages(), Some(4));
        assert_eq!(RingSize::Pages(3).data_pages(), None);
        assert_eq!(RingSize::Bytes(1).data_pages(), Some(1));
        assert_eq!(RingSize::Bytes(3 * ps).data_pages(), Some(4));
    }

    #[test]
    fn forward_walk_splits_at_the_end() {
        let mut buf = vec![0u8; 64];
        // Positions far beyond the buffer length: only the mask matters.
        let base = 64 * 1000 + 32;
        rec(&mut buf, base, 9, 16, 0xaa);
        rec(&mut buf, base + 16, 3, 24, 0xbb);
        rec(&mut buf, base + 40, 4, 8, 0);
        let recs: Vec<_> = RingRecords::new(&buf, base, base + 48)
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(recs.len(), 3);
        assert_eq!(recs[0].data, RawData::Single(&[0xaa; 8][..]));
        match recs[1].data {
            RawData::Split(a, b) => {
                assert_eq!(a, &[0xbb; 8][..]);
                assert_eq!(b, &[0xbb; 8][..]);
            }
            other => panic!("expected split, got {other:?}"),
        }
        assert_eq!(recs[2].type_, 4);
        assert!(recs[2].data.is_empty());
    }
}
