//! Which of `script`'s default columns a file's samples fill: whether any sample carries a
//! CPU, and any a time. Where every event records the same of the two, the attrs say it
//! (as perf knows it before reading a sample); where they disagree (a file of a
//! tracepoint recorded with `-C` and an event without, say), one pass over the samples
//! answers it before the first is printed, so `script` can write each sample as it is
//! built instead of keeping them all to look at first.

use perfkit_data::{PerfData, parse_any};
use perfkit_records::Record;
use perfkit_sys as sys;

/// `(any sample has a CPU, any sample has a non-zero time)` of `file`: from the attrs when
/// they agree, else from a pass over the samples that decodes only them. None where the
/// pass cannot answer as reading the whole file would: a sample that does not decode (the
/// whole read would stop before the samples after it) or a stream that can be read only
/// once.
pub fn sample_columns(file: &PerfData, rereadable: bool) -> Option<(bool, bool)> {
    let mut types = file
        .attrs
        .iter()
        .map(|a| a.attr.sample_type & (sys::PERF_SAMPLE_CPU | sys::PERF_SAMPLE_TIME));
    let first = types.next()?;
    if types.all(|t| t == first) {
        return Some((
            first & sys::PERF_SAMPLE_CPU != 0,
            first & sys::PERF_SAMPLE_TIME != 0,
        ));
    }
    // Counters read in samples can make no sample at all: only the whole read knows.
    if !rereadable
        || file
            .attrs
            .iter()
            .any(|a| a.attr.sample_type & sys::PERF_SAMPLE_READ != 0)
    {
        return None;
    }
    let parser = file.parser().ok()?;
    let (mut cpu, mut time, mut broken) = (false, false, false);
    file.walk_decompressed(|_, type_, misc, body| {
        if type_ != sys::PERF_RECORD_SAMPLE || broken || (cpu && time) {
            return Ok(());
        }
        match parse_any(&parser, type_, misc, body) {
            Ok((_, rec)) => {
                if let Record::Sample(s) = &rec.record {
                    cpu |= s.cpu.is_some();
                    time |= s.time.is_some_and(|t| t != 0);
                }
            }
            Err(_) => broken = true,
        }
        Ok(())
    })
    .ok()?;
    (!broken).then_some((cpu, time))
}
