//! `perf script -D`: every record of a file in file order, raw and decoded.

use crate::error::LoadError;
use perfkit_data::PerfData;
use perfkit_sys::perf_event_attr;
use std::io::Write;

/// Write every record of `file`'s data section in file order (compressed records as they
/// are): its offset, size, `PERF_RECORD_*` type and misc, then the decoded record (or why
/// it does not decode). Each attr comes first, described by `describe_attr` (the CLI prints
/// it like `perf -vv`). A malformed record ends the dump with [`LoadError::Read`] after
/// everything before it was written.
pub fn dump_raw(
    file: &PerfData,
    describe_attr: impl Fn(&perf_event_attr) -> String,
    out: &mut dyn Write,
) -> Result<(), LoadError> {
    let parser = file.parser().map_err(LoadError::Read)?;
    for (i, a) in file.attrs.iter().enumerate() {
        writeln!(
            out,
            "# attr {i}: {} ids {:?}\n{}",
            a.name,
            a.ids,
            describe_attr(&a.attr)
        )
        .map_err(LoadError::Write)?;
    }
    let mut written = Ok(());
    let r = file.walk(|off, type_, misc, body| {
        if written.is_err() {
            return Ok(());
        }
        let name = perfkit_records::record_type_name(type_).unwrap_or("unknown");
        written = writeln!(
            out,
            "\n{off:#x} [{:#x}]: event: {type_} ({name}) misc {misc:#x}",
            body.len() + 8
        )
        .and_then(|()| match parser.parse(type_, misc, body) {
            Ok((i, rec)) => writeln!(out, "  attr {i}: {:?}", rec.record),
            Err(e) => writeln!(out, "  (not decoded: {e})"),
        });
        Ok(())
    });
    written.map_err(LoadError::Write)?;
    r.map_err(LoadError::Read)
}
