//! Region errors.

use std::fmt;

/// What went wrong opening, reading or naming a region.
#[derive(Debug)]
pub enum Error {
    /// The event list did not parse.
    Parse(Box<perfkit_events::ParseError>),
    /// The event list was empty.
    NoEvents,
    /// An event did not open or enable for this thread.
    Open(String, Box<perfkit::Error>),
    /// Reading the counters failed.
    Read(Box<perfkit::Error>),
    /// `stop`/`reset` of a region that is not open (or not known) on this thread.
    NotStarted(String),
    /// `next_set` while this region is open on the thread.
    SwitchInRegion(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Parse(_) => write!(f, "bad event list"),
            Error::NoEvents => write!(f, "no events to count: give at least one"),
            Error::Open(name, _) => write!(f, "region counters ({name})"),
            Error::Read(_) => write!(f, "reading the region counters failed"),
            Error::NotStarted(name) => write!(
                f,
                "region {name:?} is not started on this thread: start it (on this thread) \
                 before stopping it"
            ),
            Error::SwitchInRegion(name) => write!(
                f,
                "cannot switch event sets inside region {name:?}: stop it first (a region's \
                 counts come from one set)"
            ),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Parse(e) => Some(e.as_ref()),
            Error::Open(_, e) | Error::Read(e) => Some(e.as_ref()),
            Error::NoEvents | Error::NotStarted(_) | Error::SwitchInRegion(_) => None,
        }
    }
}
