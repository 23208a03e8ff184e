//! `perf inject`'s copy: the records of one perf.data stream written to another, file or
//! pipe mode either way (`perf record -o - | perf inject -o FILE`, `perf inject -i FILE |
//! perf report -i -`), with build ids added for the files mapped (`-b`).
//!
//! The events (attrs, ids, names) go to the new header; perf's own header records of a
//! pipe stream (HEADER_ATTR, EVENT_UPDATE, HEADER_FEATURE, tracing data) are written anew
//! by the writer rather than copied; every other record is copied as it is, and a
//! FINISHED_ROUND ends a round of the output as it ended one of the input.

use std::collections::BTreeSet;
use std::io;

use perfkit_records::Endian;
use perfkit_sys as sys;

use crate::{FileEvent, PerfData, PerfDataWriter, ReadError, record};

/// What [`copy`] adds.
#[derive(Clone, Copy, Debug, Default)]
pub struct InjectOptions {
    /// Add a HEADER_BUILD_ID record for each file mapped (for pipe-mode output; a file
    /// output gets its BUILD_ID section from the writer either way).
    pub build_ids: bool,
    /// `--jit`: replace the mappings of jitdump files by ELF files of the jitted code
    /// ([`crate::jit_inject`]).
    pub jit: bool,
}

/// Why a copy failed.
#[derive(Debug)]
pub enum InjectError {
    /// The input could not be read.
    Read(ReadError),
    /// The output could not be written.
    Write(io::Error),
    /// The input holds something this copy cannot carry over.
    Unsupported(&'static str),
    /// `--jit` could not read a jitdump or write its files.
    Jit(String),
}

impl std::fmt::Display for InjectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InjectError::Read(_) => f.write_str("reading the input"),
            InjectError::Write(_) => f.write_str("writing the output"),
            InjectError::Unsupported(what) => write!(f, "{what} is not supported yet"),
            InjectError::Jit(what) => write!(f, "--jit: {what}"),
        }
    }
}

impl std::error::Error for InjectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InjectError::Read(e) => Some(e),
            InjectError::Write(e) => Some(e),
            InjectError::Unsupported(_) | InjectError::Jit(_) => None,
        }
    }
}

/// The events of `input`, for [`PerfDataWriter::create`] or [`PerfDataWriter::pipe`].
pub fn file_events(input: &PerfData) -> Vec<FileEvent> {
    input
        .attrs
        .iter()
        .map(|a| FileEvent {
            attr: a.attr,
            name: a.name.clone(),
            ids: a.ids.clone(),
        })
        .collect()
}

/// Copy every record of `input` to `out` (made with [`file_events`]); the caller finishes
/// `out`. Returns the number of records copied.
pub fn copy(
    input: &PerfData,
    out: &mut PerfDataWriter,
    opts: InjectOptions,
) -> Result<u64, InjectError> {
    if input.endian != Endian::NATIVE {
        return Err(InjectError::Unsupported(
            "injecting into a file of the other byte order",
        ));
    }
    let mut seen: BTreeSet<(u16, String)> = BTreeSet::new();
    let mut n = 0u64;
    let mut jit = if opts.jit {
        let id = input
            .attrs
            .first()
            .and_then(|a| a.ids.first())
            .copied()
            .unwrap_or(0);
        Some(
            crate::jit_inject::JitInjector::new(input.attrs.iter().map(|a| &a.attr), id)
                .map_err(InjectError::Jit)?,
        )
    } else {
        None
    };
    let mut failure: Option<InjectError> = None;
    // A -z recording is written out decompressed, as perf inject writes it.
    let walked = input.walk_decompressed(|_, type_, misc, body| {
        let r = (|| -> Result<(), InjectError> {
            match type_ {
                sys::PERF_RECORD_HEADER_ATTR
                | sys::PERF_RECORD_HEADER_EVENT_TYPE
                | sys::PERF_RECORD_HEADER_TRACING_DATA
                | sys::PERF_RECORD_EVENT_UPDATE
                | sys::PERF_RECORD_HEADER_FEATURE => return Ok(()),
                sys::PERF_RECORD_FINISHED_ROUND => {
                    return out.finish_round().map_err(InjectError::Write);
                }
                _ => {}
            }
            if let Some(j) = &mut jit
                && let crate::jit_inject::JitAction::Replace(recs) =
                    j.process(type_, body).map_err(InjectError::Jit)?
            {
                for r in &recs {
                    out.write_record(&[r]).map_err(InjectError::Write)?;
                }
                n += recs.len() as u64;
                return Ok(());
            }
            if opts.build_ids
                && let Some(name) = mapped_file(type_, body)
                && seen.insert((misc & 7, name.clone()))
                && let Some(id) = crate::synth::build_id_of(std::path::Path::new(&name))
            {
                out.write_record(&[&build_id_record(misc & 7, &id, &name)])
                    .map_err(InjectError::Write)?;
            }
            let mut header = Vec::with_capacity(8);
            header.extend_from_slice(&type_.to_ne_bytes());
            header.extend_from_slice(&misc.to_ne_bytes());
            header.extend_from_slice(&((8 + body.len()) as u16).to_ne_bytes());
            out.write_record(&[&header, body])
                .map_err(InjectError::Write)?;
            n += 1;
            Ok(())
        })();
        if let Err(e) = r {
            failure = Some(e);
            // Any error ends the walk; the real one is kept in `failure`.
            return Err(ReadError::invalid(0, "inject stopped"));
        }
        Ok(())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    walked.map_err(InjectError::Read)?;
    Ok(n)
}

/// The file an MMAP or MMAP2 record maps (files only: not `[vdso]`, `//anon`, ...).
fn mapped_file(type_: u32, body: &[u8]) -> Option<String> {
    let at = match type_ {
        sys::PERF_RECORD_MMAP => 32,
        sys::PERF_RECORD_MMAP2 => 64,
        _ => return None,
    };
    let name = body.get(at..)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let name = std::str::from_utf8(&name[..end]).ok()?;
    name.starts_with('/').then(|| name.to_owned())
}

/// A HEADER_BUILD_ID record (pid -1, as perf writes for user files) in perf 6.1's layout:
/// 20 bytes of id and its length, the name padded to 64 bytes.
fn build_id_record(cpumode: u16, id: &[u8], name: &str) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(-1i32).to_ne_bytes());
    let mut idb = [0u8; 24];
    let len = id.len().min(20);
    idb[..len].copy_from_slice(&id[..len]);
    idb[20] = len as u8;
    body.extend_from_slice(&idb);
    body.extend_from_slice(name.as_bytes());
    body.resize(4 + 24 + (name.len() + 1).next_multiple_of(64), 0);
    // PERF_RECORD_MISC_BUILD_ID_SIZE: the id's length is in byte 20.
    record(
        sys::PERF_RECORD_HEADER_BUILD_ID,
        cpumode | (1 << 15),
        &body,
        &[],
    )
}
