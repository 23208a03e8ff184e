//! Talking to a running daemon: one request per connection to `BASE/control`, one line
//! out, the answer (text to print as it is) back until the daemon closes the socket.

use crate::{Error, Result};
use std::io::{Read, Write};
use std::path::Path;

/// What a client asks the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// The daemon and its sessions; `verbose` adds paths and uptimes, `sep` prints one
    /// line per process with fields separated by it (perf's `-x`).
    List {
        /// `-v`.
        verbose: bool,
        /// `-x SEP`.
        sep: Option<char>,
    },
    /// Send SIGUSR2 to one session, or to all (`None`).
    Signal(Option<String>),
    /// Ping one session's control FIFO, or all.
    Ping(Option<String>),
    /// Stop every session, then the daemon.
    Stop,
}

impl Request {
    /// The request as one line.
    pub fn encode(&self) -> String {
        let name = |n: &Option<String>| n.clone().unwrap_or_default();
        match self {
            Request::List { verbose, sep } => format!(
                "list\t{}\t{}",
                u8::from(*verbose),
                sep.map(String::from).unwrap_or_default()
            ),
            Request::Signal(n) => format!("signal\t{}", name(n)),
            Request::Ping(n) => format!("ping\t{}", name(n)),
            Request::Stop => "stop".to_string(),
        }
    }

    /// Read a line written by [`encode`](Self::encode).
    pub fn decode(line: &str) -> Option<Request> {
        let mut f = line.trim_end_matches(['\n', '\r']).split('\t');
        let name = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_string);
        match f.next()? {
            "list" => Some(Request::List {
                verbose: f.next() == Some("1"),
                sep: f.next().and_then(|s| s.chars().next()),
            }),
            "signal" => Some(Request::Signal(name(f.next()))),
            "ping" => Some(Request::Ping(name(f.next()))),
            "stop" => Some(Request::Stop),
            _ => None,
        }
    }
}

/// Send `req` to the daemon on `base` and return its answer.
pub fn send(base: &Path, req: &Request) -> Result<String> {
    let path = base.join("control");
    let mut sock = std::os::unix::net::UnixStream::connect(&path).map_err(|e| {
        Error::io(
            format!(
                "connect to the daemon at {} (is `daemon start` running on this base?)",
                path.display()
            ),
            e,
        )
    })?;
    let io = |e| Error::io(format!("talking to the daemon at {}", path.display()), e);
    sock.write_all(format!("{}\n", req.encode()).as_bytes())
        .map_err(io)?;
    sock.shutdown(std::net::Shutdown::Write).map_err(io)?;
    let mut answer = String::new();
    sock.read_to_string(&mut answer).map_err(io)?;
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::Request;

    #[test]
    fn requests_survive_the_wire() {
        for r in [
            Request::List {
                verbose: true,
                sep: Some(':'),
            },
            Request::List {
                verbose: false,
                sep: None,
            },
            Request::Signal(Some("size".into())),
            Request::Signal(None),
            Request::Ping(Some("time".into())),
            Request::Ping(None),
            Request::Stop,
        ] {
            assert_eq!(Request::decode(&r.encode()), Some(r));
        }
        assert_eq!(Request::decode("bogus"), None);
    }
}
