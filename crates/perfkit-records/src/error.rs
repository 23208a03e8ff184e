//! The parse error: what was expected, where in the record, and in which record type.

use core::fmt;

/// A record could not be parsed: it is shorter than its fields say, or a field holds a
/// value the ABI does not allow.
///
/// [`offset`](Self::offset) counts bytes from the start of the record, the 8-byte
/// `perf_event_header` included (so the first body field is at offset 8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The `PERF_RECORD_*` type of the record, when the error is inside a record.
    pub record_type: Option<u32>,
    /// Byte offset within the record where the expected field starts.
    pub offset: usize,
    /// What went wrong.
    pub kind: ParseErrorKind,
}

/// The kinds of [`ParseError`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParseErrorKind {
    /// Fewer bytes are left than the field `what` needs.
    Truncated {
        /// The field that was being read.
        what: &'static str,
        /// Bytes the field needs.
        needed: u64,
        /// Bytes left in the record at `offset`.
        available: u64,
    },
    /// The field `what` holds a value the ABI does not allow.
    Invalid {
        /// The field, and what it must be.
        what: &'static str,
        /// The value found.
        value: u64,
    },
    /// A record's sample id is not among the ids given to a
    /// [`MultiParser`](crate::MultiParser).
    UnknownId(u64),
}

impl ParseError {
    /// A truncation error.
    #[cold]
    pub(crate) fn truncated(
        record_type: Option<u32>,
        offset: usize,
        what: &'static str,
        needed: u64,
        available: u64,
    ) -> Self {
        ParseError {
            record_type,
            offset,
            kind: ParseErrorKind::Truncated {
                what,
                needed,
                available,
            },
        }
    }

    /// An invalid-value error.
    #[cold]
    pub(crate) fn invalid(
        record_type: Option<u32>,
        offset: usize,
        what: &'static str,
        value: u64,
    ) -> Self {
        ParseError {
            record_type,
            offset,
            kind: ParseErrorKind::Invalid { what, value },
        }
    }
}

/// The kernel name of a record type (`PERF_RECORD_MMAP`, ...), or `None` when unknown.
pub fn record_type_name(type_: u32) -> Option<&'static str> {
    use perfkit_sys::*;
    Some(match type_ {
        PERF_RECORD_MMAP => "PERF_RECORD_MMAP",
        PERF_RECORD_LOST => "PERF_RECORD_LOST",
        PERF_RECORD_COMM => "PERF_RECORD_COMM",
        PERF_RECORD_EXIT => "PERF_RECORD_EXIT",
        PERF_RECORD_THROTTLE => "PERF_RECORD_THROTTLE",
        PERF_RECORD_UNTHROTTLE => "PERF_RECORD_UNTHROTTLE",
        PERF_RECORD_FORK => "PERF_RECORD_FORK",
        PERF_RECORD_READ => "PERF_RECORD_READ",
        PERF_RECORD_SAMPLE => "PERF_RECORD_SAMPLE",
        PERF_RECORD_MMAP2 => "PERF_RECORD_MMAP2",
        PERF_RECORD_AUX => "PERF_RECORD_AUX",
        PERF_RECORD_ITRACE_START => "PERF_RECORD_ITRACE_START",
        PERF_RECORD_LOST_SAMPLES => "PERF_RECORD_LOST_SAMPLES",
        PERF_RECORD_SWITCH => "PERF_RECORD_SWITCH",
        PERF_RECORD_SWITCH_CPU_WIDE => "PERF_RECORD_SWITCH_CPU_WIDE",
        PERF_RECORD_NAMESPACES => "PERF_RECORD_NAMESPACES",
        PERF_RECORD_KSYMBOL => "PERF_RECORD_KSYMBOL",
        PERF_RECORD_BPF_EVENT => "PERF_RECORD_BPF_EVENT",
        PERF_RECORD_CGROUP => "PERF_RECORD_CGROUP",
        PERF_RECORD_TEXT_POKE => "PERF_RECORD_TEXT_POKE",
        PERF_RECORD_AUX_OUTPUT_HW_ID => "PERF_RECORD_AUX_OUTPUT_HW_ID",
        _ => return None,
    })
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.record_type {
            Some(t) => match record_type_name(t) {
                Some(name) => write!(f, "{name}")?,
                None => write!(f, "record type {t}")?,
            },
            None => write!(f, "record stream")?,
        }
        write!(f, " at byte {}: ", self.offset)?;
        match &self.kind {
            ParseErrorKind::Truncated {
                what,
                needed,
                available,
            } => write!(
                f,
                "truncated: expected {what} ({needed} bytes), only {available} left"
            ),
            ParseErrorKind::Invalid { what, value } => {
                write!(f, "invalid {what}: found {value} ({value:#x})")
            }
            ParseErrorKind::UnknownId(id) => {
                write!(f, "sample id {id} belongs to none of the given attrs")
            }
        }
    }
}

impl std::error::Error for ParseError {}
