//! perf's `--control` channel, shared by `stat` and `record`: commands read from a
//! descriptor or FIFO (`enable`, `disable`, `ping`, `stop`) and the `ack\n\0` written back.
//!
//! perf ends a command at a newline, a NUL or the end of what one read returned (its
//! daemon writes `ping` with no newline), so the reader splits each read the same way
//! rather than waiting for a line.

use std::io::{Read, Write};

/// A command read from the control descriptor (perf's `--control`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlCmd {
    /// `enable` (all events) or `enable NAME`.
    Enable(Option<String>),
    /// `disable` or `disable NAME`.
    Disable(Option<String>),
    /// `ping`: only the acknowledgement.
    Ping,
    /// `stop`: end as if the command had ended.
    Stop,
}

impl ControlCmd {
    /// Parse one command (without its terminator); unknown commands are `None`.
    pub fn parse(line: &str) -> Option<ControlCmd> {
        let line = line.trim();
        let (word, arg) = match line.split_once(' ') {
            Some((w, a)) => (w, Some(a.trim().to_string()).filter(|a| !a.is_empty())),
            None => (line, None),
        };
        match word {
            "enable" => Some(ControlCmd::Enable(arg)),
            "disable" => Some(ControlCmd::Disable(arg)),
            "ping" => Some(ControlCmd::Ping),
            "stop" => Some(ControlCmd::Stop),
            _ => None,
        }
    }
}

/// The commands in one read: split at newlines and NULs, the unterminated rest counting
/// as a command too (perf's reading). Empty pieces are dropped; unknown words are kept as
/// `Err(word)` so the caller can say it ignored them.
pub fn split_commands(chunk: &[u8]) -> Vec<Result<ControlCmd, String>> {
    chunk
        .split(|&b| b == b'\n' || b == 0)
        .map(|piece| String::from_utf8_lossy(piece).trim().to_string())
        .filter(|piece| !piece.is_empty())
        .map(|piece| ControlCmd::parse(&piece).ok_or(piece))
        .collect()
}

/// Read commands from `ctl` until it ends or `each` returns false (runs on the caller's
/// thread: spawn one for it). Unknown commands are reported on standard error, as perf
/// warns, and skipped.
pub fn read_commands(mut ctl: std::fs::File, mut each: impl FnMut(ControlCmd) -> bool) {
    let mut buf = [0u8; 4096];
    loop {
        let n = match ctl.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        for cmd in split_commands(&buf[..n]) {
            match cmd {
                Ok(cmd) => {
                    if !each(cmd) {
                        return;
                    }
                }
                Err(word) => eprintln!("perfkit: unknown --control command `{word}` ignored"),
            }
        }
    }
}

/// Write perf's acknowledgement (`ack\n` and the C string's NUL) to `ack`.
pub fn acknowledge(ack: &mut std::fs::File) -> std::io::Result<()> {
    ack.write_all(b"ack\n\0")
}

#[cfg(test)]
mod tests {
    use super::{ControlCmd, split_commands};

    #[test]
    fn control_lines_as_perf_reads_them() {
        assert_eq!(ControlCmd::parse("enable"), Some(ControlCmd::Enable(None)));
        assert_eq!(
            ControlCmd::parse("disable task-clock\n"),
            Some(ControlCmd::Disable(Some("task-clock".into())))
        );
        assert_eq!(ControlCmd::parse("ping"), Some(ControlCmd::Ping));
        assert_eq!(ControlCmd::parse("stop"), Some(ControlCmd::Stop));
        assert_eq!(ControlCmd::parse("bogus"), None);
        assert_eq!(ControlCmd::parse(""), None);
    }

    #[test]
    fn a_read_splits_at_newlines_nuls_and_its_end() {
        assert_eq!(split_commands(b"ping"), vec![Ok(ControlCmd::Ping)]);
        assert_eq!(
            split_commands(b"enable\ndisable cpu-clock\0stop"),
            vec![
                Ok(ControlCmd::Enable(None)),
                Ok(ControlCmd::Disable(Some("cpu-clock".into()))),
                Ok(ControlCmd::Stop)
            ]
        );
        assert_eq!(split_commands(b"\n\n"), vec![]);
        assert_eq!(
            split_commands(b"snapshot\n"),
            vec![Err("snapshot".to_string())]
        );
    }
}
