//! [`Workload`]: the measured command, started after its counters are open and waited for
//! on a thread of its own.

use crate::{Error, Result};
use perfkit::{ChildUsage, ExitStatus, PausedChild};
use std::ffi::OsString;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

type Done = Arc<(Mutex<Option<(ExitStatus, ChildUsage)>>, Condvar)>;

/// A running command. Fork it held before `exec` with [`Workload::prepare`], open the
/// counters on its pid (with `enable_on_exec` they count from its first instruction), then
/// [`start`](Workload::start) it.
#[derive(Debug)]
pub struct Workload {
    pid: i32,
    done: Done,
}

impl Workload {
    /// Fork `command` (program and arguments, looked up in `PATH`) held before `exec`.
    pub fn prepare(command: &[OsString]) -> Result<PausedChild> {
        let (prog, rest) = command
            .split_first()
            .ok_or_else(|| Error::Usage("empty command".into()))?;
        PausedChild::spawn(prog, rest).map_err(Error::Launch)
    }

    /// Let the command run; `on_exit` is called on the waiting thread when it ends.
    pub fn start(
        child: PausedChild,
        on_exit: impl FnOnce(ExitStatus) + Send + 'static,
    ) -> Result<Workload> {
        let pid = child.start().map_err(Error::Launch)?;
        let done: Done = Arc::new((Mutex::new(None), Condvar::new()));
        let d = done.clone();
        std::thread::Builder::new()
            .name("perfkit-wait".into())
            .spawn(move || {
                let Ok((st, usage)) = perfkit::wait_with_usage(pid) else {
                    return;
                };
                if let Ok(mut g) = d.0.lock() {
                    *g = Some((st, usage));
                }
                d.1.notify_all();
                on_exit(st);
            })
            .map_err(|e| Error::io("starting the wait thread", e))?;
        Ok(Workload { pid, done })
    }

    /// The command's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// How it ended and the CPU time it used, once it has.
    pub fn status(&self) -> Option<(ExitStatus, ChildUsage)> {
        self.done.0.lock().ok().and_then(|g| *g)
    }

    /// Wait up to `timeout` for it to end.
    pub fn wait_timeout(&self, timeout: Duration) -> Option<(ExitStatus, ChildUsage)> {
        let g = self.done.0.lock().ok()?;
        let (g, _) = self
            .done
            .1
            .wait_timeout_while(g, timeout, |s| s.is_none())
            .ok()?;
        *g
    }

    /// Send it a signal (forwarding Ctrl-C, ...); a command that already ended is left.
    pub fn signal(&self, sig: i32) {
        if self.status().is_none() {
            let _ = perfkit::kill(self.pid, sig);
        }
    }

    /// End it: SIGTERM, then SIGKILL if it is still there after `grace`. Returns how it
    /// ended.
    pub fn terminate(&self, grace: Duration) -> Option<(ExitStatus, ChildUsage)> {
        self.signal(libc::SIGTERM);
        if let Some(s) = self.wait_timeout(grace) {
            return Some(s);
        }
        self.signal(libc::SIGKILL);
        self.wait_timeout(grace)
    }
}
