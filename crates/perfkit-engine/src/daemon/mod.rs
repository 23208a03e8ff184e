//! `perf daemon`: a background process that runs `record` sessions named in a perf config
//! file and answers `list`, `ping`, `signal` and `stop` over a Unix socket.
//!
//! The layout under the base directory is perf 6.1's, so tools written for perf's daemon
//! find everything where they look:
//!
//! ```text
//! BASE/lock                  the daemon's pid, flock(2)ed while it runs
//! BASE/control               the Unix socket clients talk to
//! BASE/output                the daemon's log
//! BASE/session-NAME/         each session's working directory (its perf.data files)
//! BASE/session-NAME/output   the session's record output
//! BASE/session-NAME/control  FIFO: commands to `record --control`
//! BASE/session-NAME/ack      FIFO: record's acknowledgements
//! ```
//!
//! * [`config`] reads `daemon.base` and the `[session-NAME] run = ...` sections.
//! * [`server`] is the daemon: it starts each session as `EXE record
//!   --control=fifo:control,ack RUN`, restarts sessions whose `run` changed when the
//!   config file changes, ends removed ones (`stop` on the control FIFO, then SIGTERM,
//!   then SIGKILL, as perf), and answers requests.
//! * [`client`] sends one request and returns the daemon's answer, printed as perf does.

pub mod client;
pub mod config;
pub mod server;

pub use client::{Request, send};
pub use config::{DaemonConfig, find_config};
pub use server::{ServeOptions, check_lock, serve};
