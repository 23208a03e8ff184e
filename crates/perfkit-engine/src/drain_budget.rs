//! The bound on the bytes queued between draining threads and the writer.
//!
//! A draining thread copies its rings into blocks that wait for the writer. When the disk
//! (or compression) falls behind, those blocks would pile up in memory without end. With a
//! budget, a draining thread that finds the queue full does not drain: the records stay in
//! its rings, and once a ring is full the kernel drops new ones and counts them in
//! `PERF_RECORD_LOST`, as it does for perf. Memory stays within the budget plus one pass
//! per draining thread (a pass copies at most what its rings hold).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Default budget: far above what a writer that keeps up ever holds (16 busy CPUs at
/// 100 kHz queue a few MiB), far below what would hurt a machine.
pub const DEFAULT_QUEUE_LIMIT: usize = 64 << 20;

/// Bytes queued for the writer, with a limit draining threads wait on.
#[derive(Debug)]
pub(crate) struct Budget {
    queued: Mutex<usize>,
    room: Condvar,
    limit: usize,
    peak: AtomicUsize,
}

impl Budget {
    pub fn new(limit: usize) -> Budget {
        Budget {
            queued: Mutex::new(0),
            room: Condvar::new(),
            limit: limit.max(1),
            peak: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, usize> {
        // The count stays right whatever thread panicked holding the lock.
        self.queued.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wait up to `timeout` for the queue to be under the limit; whether it is.
    pub fn wait_room(&self, timeout: Duration) -> bool {
        let q = self.lock();
        if *q < self.limit {
            return true;
        }
        let (q, _) = self
            .room
            .wait_timeout_while(q, timeout, |q| *q >= self.limit)
            .unwrap_or_else(|p| p.into_inner());
        *q < self.limit
    }

    /// `n` more bytes are queued.
    pub fn add(&self, n: usize) {
        let mut q = self.lock();
        *q += n;
        self.peak.fetch_max(*q, Ordering::Relaxed);
    }

    /// `n` queued bytes were written.
    pub fn written(&self, n: usize) {
        let mut q = self.lock();
        *q = q.saturating_sub(n);
        if *q < self.limit {
            self.room.notify_all();
        }
    }

    /// The most bytes queued at once so far.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_full_queue_holds_back_until_the_writer_frees_room() {
        let b = Arc::new(Budget::new(100));
        assert!(b.wait_room(Duration::ZERO));
        b.add(150);
        assert!(!b.wait_room(Duration::from_millis(1)), "over the limit");
        let b2 = b.clone();
        let writer = std::thread::spawn(move || b2.written(100));
        // Woken by the writer (or, at worst, the timeout after it ran).
        assert!(b.wait_room(Duration::from_secs(60)));
        writer.join().unwrap();
        assert_eq!(b.peak(), 150);
        b.written(1000);
        assert_eq!(*b.lock(), 0, "never below zero");
    }
}
