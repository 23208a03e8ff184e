//! [`Error`]: why the engine could not open, count or record, and what to do about it.
//!
//! Each variant keeps its cause as [`source`](std::error::Error::source) and does not
//! repeat the cause's text in its own message: print the chain (`{:#}` with anyhow, or
//! walk `source()`) to see everything once.

use std::fmt;
use std::io;

/// A failure of the engine.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// An event string does not parse (the message points at the place with a caret).
    Parse(Box<perfkit_events::ParseError>),
    /// A `--filter` could not be attached to the event before it.
    Filter {
        /// The event string the filter follows.
        event: String,
        /// Why.
        why: String,
    },
    /// The event list is empty.
    NoEvents,
    /// An event could not be opened (the message names event, task and CPU; [`hint`]
    /// says what to do).
    ///
    /// [`hint`]: Error::hint
    Open(Box<perfkit::Error>),
    /// A CPU list (`-C`) is malformed or names CPUs this machine does not have.
    Cpus {
        /// The list as given.
        list: String,
        /// What is wrong with it.
        source: perfkit::cpus::CpuListError,
    },
    /// Nothing to measure: no command, task or CPU was given.
    NoTarget,
    /// A process or thread given by id does not exist.
    NoSuchTask {
        /// `-p` or `-t`.
        flag: &'static str,
        /// The id.
        id: i32,
    },
    /// A task id list has something that is not a positive number.
    BadTaskId {
        /// `-p` or `-t`.
        flag: &'static str,
        /// The item.
        item: String,
    },
    /// The command could not be started.
    Launch(perfkit::LaunchError),
    /// A cgroup could not be opened.
    Cgroup {
        /// The cgroup as given.
        name: String,
        /// The directory opened.
        path: std::path::PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The options contradict each other or are out of range.
    Usage(String),
    /// The ring buffer could not be read.
    Ring(perfkit::RingError),
    /// Writing the perf.data output failed (disk full, closed pipe, ...). The file holds the
    /// data up to the last complete round.
    Write(io::Error),
    /// Another I/O failure, with what was being done.
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        source: io::Error,
    },
}

impl Error {
    /// Advice for the user, where there is some (permission levels with the real value of
    /// `perf_event_paranoid`, missing PMUs, full counters ...).
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::Open(e) => e.hint(),
            Error::Write(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                Some("the reader of the output pipe went away".into())
            }
            Error::Write(e) if e.raw_os_error() == Some(libc::ENOSPC) => {
                Some("free some space or write elsewhere with -o".into())
            }
            _ => None,
        }
    }

    /// Whether the output pipe was closed by its reader (perf dies of SIGPIPE then: 141).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Write(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }

    pub(crate) fn io(what: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(e) => write!(f, "bad event string\n{}", e.to_string().trim_end()),
            Error::Filter { event, why } => write!(f, "{why} (after -e {event})"),
            Error::NoEvents => f.write_str("no events given to -e"),
            Error::Open(e) => {
                write!(f, "{e}")?;
                if let Some(h) = e.hint() {
                    write!(f, "\n  hint: {h}")?;
                }
                Ok(())
            }
            Error::Cpus { list, .. } => write!(f, "-C {list}"),
            Error::NoTarget => f.write_str(
                "nothing to measure: give a command (`-- COMMAND`), -p PID, -t TID, -a or -C CPUS",
            ),
            Error::NoSuchTask { flag, id } => {
                let what = if *flag == "-t" { "thread" } else { "process" };
                write!(f, "{flag} {id}: no such {what}")
            }
            Error::BadTaskId { flag, item } => write!(f, "{flag}: `{item}` is not a task id"),
            Error::Launch(_) => f.write_str("cannot run the command"),
            Error::Cgroup { name, path, .. } => {
                write!(f, "cgroup `{name}`: cannot open {}", path.display())
            }
            Error::Usage(s) => f.write_str(s),
            Error::Ring(_) => f.write_str("reading the ring buffer"),
            Error::Write(_) => {
                f.write_str("writing the profile (it holds the data up to the last complete round)")
            }
            Error::Io { what, .. } => f.write_str(what),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Open(e) => e.source(),
            Error::Cpus { source, .. } => Some(source),
            Error::Launch(e) => Some(e),
            Error::Cgroup { source, .. } | Error::Io { source, .. } => Some(source),
            Error::Ring(e) => Some(e),
            Error::Write(e) => Some(e),
            _ => None,
        }
    }
}

impl From<perfkit::Error> for Error {
    fn from(e: perfkit::Error) -> Error {
        Error::Open(Box::new(e))
    }
}

/// Result with the engine's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
