//! perf's text for the source line of an address (`--sort srcline`, `script -F srcline`).
//!
//! As perf 6.1's `srcline_from_fileline`: `FILE:LINE` with the file's directories left
//! out unless `--full-source-path`. An address without a source line is named as perf
//! names it: `SYMBOL+OFFSET` (the offset in decimal from the symbol's start) where the
//! caller shows symbols and there is one, else `OBJECT[ADDRESS]` (the object's short name
//! and the address as objdump numbers it, in hex); `??:0` with no mapped object.

use crate::model::{FrameId, Profile};

/// perf's `SRCLINE_UNKNOWN`: an address in no mapped object.
pub const UNKNOWN: &str = "??:0";

/// The source line text of frame `frame` (`None`: no frame), appended to `out`.
/// `with_sym`: name an address without a line by its symbol and offset (perf's report
/// key); otherwise by object and address (perf script's field). `full_path`: keep the
/// file's directories (`--full-source-path`).
pub fn push_srcline(
    p: &Profile,
    frame: Option<FrameId>,
    with_sym: bool,
    full_path: bool,
    out: &mut String,
) {
    use std::fmt::Write as _;
    let Some(f) = frame else {
        out.push_str(UNKNOWN);
        return;
    };
    let fr = &p.frames[f as usize];
    if let Some((file, line)) = &fr.srcline {
        let file = if full_path { file } else { file_name(file) };
        let _ = write!(out, "{file}:{line}");
        return;
    }
    let func = p.func_of(f);
    if func.dso.is_empty() || func.dso == "[unknown]" {
        out.push_str(UNKNOWN);
        return;
    }
    if with_sym
        && func.name != "[unknown]"
        && let Some(off) = fr.sym_offset
    {
        let name = func.name.strip_suffix(" (inlined)").unwrap_or(&func.name);
        let _ = write!(out, "{name}+{off}");
        return;
    }
    // The objdump address: file-relative in user objects, the address in the kernel.
    let addr = if func.kernel {
        fr.addr
    } else {
        fr.map_offset.unwrap_or(fr.addr)
    };
    let _ = write!(
        out,
        "{}[{addr:x}]",
        perfkit_symbols::dso_short_name(&func.dso)
    );
}

/// A source file's name without its directories (perf's `srcfile`, and `srcline` without
/// `--full-source-path`).
pub(crate) fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// [`push_srcline`] as a new string.
pub fn srcline(p: &Profile, frame: Option<FrameId>, with_sym: bool, full_path: bool) -> String {
    let mut s = String::new();
    push_srcline(p, frame, with_sym, full_path, &mut s);
    s
}
