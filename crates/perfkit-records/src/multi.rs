//! Streams carrying records of several events (several attrs).

use crate::{Endian, ParseError, ParseErrorKind, ParsedRecord, RawData, RawRecord, RecordParser};
use perfkit_sys::{PERF_RECORD_SAMPLE, PERF_RECORD_USER_TYPE_START, perf_event_attr};

/// Why a [`MultiParser`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MultiParserError {
    /// No attrs were given.
    NoAttrs,
    /// Two attrs put the event id at different places, so a record's attr cannot be
    /// found before knowing it; set `PERF_SAMPLE_IDENTIFIER` on every attr.
    IdPositionsDiffer {
        /// The first attr's index.
        first: usize,
        /// The disagreeing attr's index.
        other: usize,
    },
    /// Several attrs and at least one has no event id (neither IDENTIFIER nor ID).
    NoIdPosition {
        /// The attr's index.
        index: usize,
    },
    /// The same id was given for two attrs.
    DuplicateId(u64),
}

impl core::fmt::Display for MultiParserError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MultiParserError::NoAttrs => write!(f, "no event attrs given"),
            MultiParserError::IdPositionsDiffer { first, other } => write!(
                f,
                "attrs {first} and {other} place the sample id differently; \
                 set PERF_SAMPLE_IDENTIFIER on every event"
            ),
            MultiParserError::NoIdPosition { index } => write!(
                f,
                "attr {index} samples no id (PERF_SAMPLE_IDENTIFIER or PERF_SAMPLE_ID), \
                 so its records cannot be told apart from the other events'"
            ),
            MultiParserError::DuplicateId(id) => write!(f, "id {id} is given for two attrs"),
        }
    }
}

impl std::error::Error for MultiParserError {}

/// Parses a stream whose records come from several events: finds each record's attr by
/// its event id (the `PERF_SAMPLE_IDENTIFIER` position: first u64 of a sample, last u64 of
/// other records; or `PERF_SAMPLE_ID` where every attr puts it at the same place), then
/// decodes it with that attr's [`RecordParser`].
///
/// Records without an id (perf tool records, non-sample records without `sample_id_all`)
/// are parsed with the first attr, as perf does.
#[derive(Clone, Debug)]
pub struct MultiParser {
    parsers: Vec<RecordParser>,
    /// `(id, attr index)`, sorted by id.
    ids: Vec<(u64, usize)>,
    /// The first id when the ids are consecutive (the kernel hands them out in order, so
    /// they usually are): then `ids[id - first]` finds an id without a search.
    dense_from: Option<u64>,
    sample_pos: Option<usize>,
    nonsample_from_end: Option<usize>,
}

impl MultiParser {
    /// Build from `(ids, attr)` pairs: each attr with the ids of its event instances
    /// (one per cpu/thread it was opened on; `PERF_EVENT_IOC_ID`, or the ids section of a
    /// perf.data file).
    pub fn new<'i, I>(endian: Endian, attrs: I) -> Result<Self, MultiParserError>
    where
        I: IntoIterator<Item = (&'i [u64], &'i perf_event_attr)>,
    {
        let mut parsers = Vec::new();
        let mut ids = Vec::new();
        for (index, (attr_ids, attr)) in attrs.into_iter().enumerate() {
            parsers.push(RecordParser::new(attr, endian));
            ids.extend(attr_ids.iter().map(|&id| (id, index)));
        }
        let first = parsers.first().ok_or(MultiParserError::NoAttrs)?;
        let sample_pos = first.sample_id_offset();
        let nonsample_from_end = first.nonsample_id_from_end();
        if parsers.len() > 1 {
            for (index, p) in parsers.iter().enumerate() {
                if p.sample_id_offset().is_none() {
                    return Err(MultiParserError::NoIdPosition { index });
                }
                if p.sample_id_offset() != sample_pos
                    || p.nonsample_id_from_end() != nonsample_from_end
                {
                    return Err(MultiParserError::IdPositionsDiffer {
                        first: 0,
                        other: index,
                    });
                }
            }
        }
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(MultiParserError::DuplicateId(w[0].0));
        }
        let dense_from = match (ids.first(), ids.last()) {
            (Some(&(lo, _)), Some(&(hi, _))) if hi - lo == ids.len() as u64 - 1 => Some(lo),
            _ => None,
        };
        Ok(MultiParser {
            parsers,
            ids,
            dense_from,
            sample_pos,
            nonsample_from_end,
        })
    }

    /// The parser of attr `index`.
    pub fn parser(&self, index: usize) -> Option<&RecordParser> {
        self.parsers.get(index)
    }

    /// Number of attrs.
    pub fn len(&self) -> usize {
        self.parsers.len()
    }

    /// Whether there are no attrs (never true for a built parser).
    pub fn is_empty(&self) -> bool {
        self.parsers.is_empty()
    }

    /// The attr index of the event with id `id`.
    pub fn index_of_id(&self, id: u64) -> Option<usize> {
        if let Some(lo) = self.dense_from {
            return usize::try_from(id.checked_sub(lo)?)
                .ok()
                .and_then(|at| self.ids.get(at))
                .map(|&(_, index)| index);
        }
        self.ids
            .binary_search_by_key(&id, |&(i, _)| i)
            .ok()
            .and_then(|at| self.ids.get(at))
            .map(|&(_, index)| index)
    }

    /// The attr index a record belongs to: `Ok(index)`, the first attr for records that
    /// carry no id, or an error for an id that no attr has (or a body too short to hold
    /// its id).
    pub fn attr_index(&self, type_: u32, data: &RawData<'_>) -> Result<usize, ParseError> {
        if self.parsers.len() == 1 {
            return Ok(0);
        }
        let endian = self.parsers.first().map_or(Endian::NATIVE, |p| p.endian());
        let at = if type_ == PERF_RECORD_SAMPLE {
            self.sample_pos
        } else if type_ < PERF_RECORD_USER_TYPE_START {
            match self.nonsample_from_end {
                Some(back) => match data.len().checked_sub(back) {
                    Some(at) => Some(at),
                    None => {
                        return Err(ParseError::truncated(
                            Some(type_),
                            crate::HEADER_SIZE,
                            "sample_id trailer",
                            back as u64,
                            data.len() as u64,
                        ));
                    }
                },
                None => None,
            }
        } else {
            None
        };
        let Some(at) = at else { return Ok(0) };
        let Some(id) = data.u64_at(at, endian) else {
            return Err(ParseError::truncated(
                Some(type_),
                crate::HEADER_SIZE + at,
                "event id",
                8,
                data.len().saturating_sub(at) as u64,
            ));
        };
        self.index_of_id(id).ok_or(ParseError {
            record_type: Some(type_),
            offset: crate::HEADER_SIZE + at,
            kind: ParseErrorKind::UnknownId(id),
        })
    }

    /// Find the record's attr and parse it; returns the attr index with the record.
    pub fn parse_raw<'b>(
        &self,
        raw: &RawRecord<'b>,
        scratch: &'b mut Vec<u8>,
    ) -> Result<(usize, ParsedRecord<'b>), ParseError> {
        let index = self.attr_index(raw.type_, &raw.data)?;
        let p = self.parsers.get(index).ok_or(ParseError {
            record_type: Some(raw.type_),
            offset: 0,
            kind: ParseErrorKind::UnknownId(u64::MAX),
        })?;
        Ok((index, p.parse_raw(raw, scratch)?))
    }

    /// Like [`parse_raw`](Self::parse_raw) for a contiguous body.
    pub fn parse<'a>(
        &self,
        type_: u32,
        misc: u16,
        body: &'a [u8],
    ) -> Result<(usize, ParsedRecord<'a>), ParseError> {
        let index = self.attr_index(type_, &RawData::Single(body))?;
        let p = self.parsers.get(index).ok_or(ParseError {
            record_type: Some(type_),
            offset: 0,
            kind: ParseErrorKind::UnknownId(u64::MAX),
        })?;
        Ok((index, p.parse(type_, misc, body)?))
    }

    /// Like [`parse`](Self::parse) for a whole record as this machine's kernel writes it:
    /// the 8-byte header (type, misc, size, in native byte order) then the body. Bytes
    /// past the header's size are not read.
    pub fn parse_native<'a>(&self, rec: &'a [u8]) -> Result<(usize, ParsedRecord<'a>), ParseError> {
        let Some(h) = rec.get(..8) else {
            return Err(ParseError::truncated(
                None,
                0,
                "header",
                8,
                rec.len() as u64,
            ));
        };
        let type_ = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]);
        let misc = u16::from_ne_bytes([h[4], h[5]]);
        let size = usize::from(u16::from_ne_bytes([h[6], h[7]]));
        let Some(body) = rec.get(8..size) else {
            return Err(ParseError::truncated(
                Some(type_),
                0,
                "record",
                size as u64,
                rec.len() as u64,
            ));
        };
        self.parse(type_, misc, body)
    }
}
