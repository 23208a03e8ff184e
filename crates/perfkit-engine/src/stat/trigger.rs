//! The designated counter of overflow-based set switching ([`super::Switching::On`]): an
//! event opened on the run's places with `sample_period = N` and no ring, whose every
//! overflow the kernel signals (`O_ASYNC`, `F_SETSIG`, `F_SETOWN_EX`) to one thread of
//! perfkit that waits for it with `sigtimedwait` and hands it on.
//!
//! Per-task counters that follow children (`inherit`) cannot have a ring mapped per task,
//! so a ring and `poll` would not work for a command; the signal does: inherited events
//! signal through their parent's file.

use crate::open::{OpenOptions, OpenedEvent};
use crate::{Error, Place, Result};
use perfkit::{AsyncSignal, SignalWaiter};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The running designated counter and its waiting thread.
#[derive(Debug)]
pub struct Trigger {
    event: OpenedEvent,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Trigger {
    /// Open `event` with `period` on `places` and call `on_overflow` once per overflow
    /// (from another thread) until the trigger is dropped.
    pub fn start(
        event: &str,
        period: u64,
        places: &[Place],
        opts: &OpenOptions<'_>,
        on_overflow: impl Fn() + Send + 'static,
    ) -> Result<Trigger> {
        let mut specs = crate::parse(&[event.to_string()])?;
        if specs.len() != 1 {
            return Err(Error::Usage(format!(
                "--switch-on {event}: give one event, not a list or group"
            )));
        }
        let mut spec = specs.remove(0);
        spec.attr = perfkit::Attr::from_raw(spec.attr)
            .sample_period(period)
            .disabled(true)
            .raw()
            .to_owned();
        spec.leader = true;
        let stop = Arc::new(AtomicBool::new(false));
        let (tid_tx, tid_rx) = std::sync::mpsc::channel();
        let stop2 = stop.clone();
        // A real-time signal, so overflows queue instead of merging.
        let sig = perfkit::rt_signal(4);
        let thread = std::thread::Builder::new()
            .name("perfkit-switch".into())
            .spawn(move || {
                let waiter = match SignalWaiter::block_in_this_thread(sig) {
                    Ok(w) => w,
                    Err(e) => {
                        let _ = tid_tx.send(Err(e));
                        return;
                    }
                };
                let _ = tid_tx.send(Ok(waiter.thread()));
                while !stop2.load(Ordering::SeqCst) {
                    if waiter.wait(Duration::from_millis(20)) && !stop2.load(Ordering::SeqCst) {
                        on_overflow();
                    }
                }
            })
            .map_err(|e| Error::io("starting the set-switching thread", e))?;
        let tid = tid_rx
            .recv()
            .map_err(|_| Error::Usage("the set-switching thread ended at once".into()))?
            .map_err(|e| Error::io("blocking the overflow signal (--switch-on)", e))?;
        let mut opened = crate::open(&[spec], places, opts).events;
        let mut trigger = Trigger {
            event: opened.remove(0),
            stop,
            thread: Some(thread),
        };
        let notify = AsyncSignal {
            signal: sig,
            thread: Some(tid),
        };
        let mut any = false;
        for slot in &mut trigger.event.slots {
            if let crate::Slot::Failed(_) = slot
                && let crate::Slot::Failed(e) = std::mem::replace(slot, crate::Slot::Skipped)
            {
                return Err(Error::Open(Box::new(e)));
            }
            if let Some(c) = slot.counter() {
                notify
                    .apply(c.as_fd())
                    .map_err(|e| Error::io("setting up overflow signals (--switch-on)", e))?;
                if !opts.enable_on_exec {
                    c.enable().map_err(|e| Error::Open(Box::new(e)))?;
                }
                any = true;
            }
        }
        if !any {
            return Err(Error::Usage(format!(
                "--switch-on {event}: the event opened nowhere"
            )));
        }
        Ok(trigger)
    }

    /// The designated event's count so far, summed over places.
    pub fn count(&self) -> u64 {
        self.event
            .counters()
            .filter_map(|c| c.read().ok())
            .map(|c| c.value)
            .sum()
    }
}

impl Drop for Trigger {
    /// Stop counting and end the waiting thread (a signal still queued to it goes with it).
    fn drop(&mut self) {
        for c in self.event.counters() {
            let _ = c.disable();
        }
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
