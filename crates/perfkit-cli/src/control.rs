//! perf's `--control fd:CTL[,ACK]|fifo:CTL[,ACK]` flag, shared by `stat` and `record`:
//! the spec opened as files (the engine reads the commands, see
//! `perfkit_engine::control`).

use anyhow::{Context, Result};

/// `--control fd:CTL[,ACK]` (descriptors this process inherited) or `fifo:CTL[,ACK]`
/// (paths), opened as files: the control side for reading, the acknowledgement side for
/// writing. A FIFO is opened for reading and writing, as perf does, so opening does not
/// wait for the other side and its end does not look like end of file.
pub fn open_control(spec: &str) -> Result<(std::fs::File, Option<std::fs::File>)> {
    let bad = || {
        anyhow::anyhow!(
            "--control {spec}: give fd:CTL[,ACK] (descriptor numbers) or fifo:CTL[,ACK] (paths)"
        )
    };
    let (kind, rest) = spec.split_once(':').ok_or_else(bad)?;
    let (ctl, ack) = match rest.split_once(',') {
        Some((c, a)) => (c, Some(a)),
        None => (rest, None),
    };
    let open = |path: String, write: bool| -> Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .read(!write || kind == "fifo")
            .write(write || kind == "fifo")
            .open(&path)
            .with_context(|| format!("--control {spec}: opening {path}"))
    };
    let path = |s: &str| -> Result<String> {
        match kind {
            "fd" => {
                let fd: u32 = s.parse().map_err(|_| bad())?;
                Ok(format!("/proc/self/fd/{fd}"))
            }
            "fifo" if !s.is_empty() => Ok(s.to_string()),
            _ => Err(bad()),
        }
    };
    let ctl = open(path(ctl)?, false)?;
    let ack = match ack {
        Some(a) => Some(open(path(a)?, true)?),
        None => None,
    };
    Ok((ctl, ack))
}
