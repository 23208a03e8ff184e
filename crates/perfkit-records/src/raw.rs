//! Unparsed records: the header, the body as one or two slices, and a stream iterator.

use crate::{Endian, ParseError, Reader};
use perfkit_sys::{PERF_RECORD_SAMPLE, PERF_RECORD_USER_TYPE_START};

/// Size of `struct perf_event_header`.
pub const HEADER_SIZE: usize = 8;

/// `struct perf_event_header`, decoded in a given byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// `PERF_RECORD_*` (below 64: kernel records; 64 and up: perf tool records).
    pub type_: u32,
    /// `PERF_RECORD_MISC_*` bits.
    pub misc: u16,
    /// Size of the record including this header.
    pub size: u16,
}

impl RecordHeader {
    /// Decode the 8 header bytes at the start of `bytes`.
    pub fn parse(bytes: &[u8], endian: Endian) -> Result<Self, ParseError> {
        let mut r = Reader::new(bytes, endian, 0, None);
        let type_ = r.u32("perf_event_header.type")?;
        let misc = r.u16("perf_event_header.misc")?;
        let size = r.u16("perf_event_header.size")?;
        Ok(RecordHeader { type_, misc, size })
    }
}

/// The body of a record (the bytes after its header): one slice, or two when the record
/// wraps around the end of the ring buffer.
///
/// # Why a split body is copied
///
/// A record wraps the ring at most once per pass over the buffer, so split records are
/// rare. Parsing them across the split directly would put a branch on every field read of
/// every record, and lazily decoded parts (callchains, registers, strings) would need a
/// two-slice representation too. Instead [`RawData::contiguous`] copies a split body into
/// a caller-provided scratch `Vec` (reused, so it allocates only until it has grown to the
/// largest record seen, at most 64 KiB) and every parser works on a plain `&[u8]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawData<'a> {
    /// The whole body in one slice.
    Single(&'a [u8]),
    /// The body's first part (up to the end of the ring) and its second part (from the
    /// start of the ring).
    Split(&'a [u8], &'a [u8]),
}

impl<'a> RawData<'a> {
    /// Total length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            RawData::Single(a) => a.len(),
            RawData::Split(a, b) => a.len() + b.len(),
        }
    }

    /// Whether the body is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The body as one slice: borrowed as is when [`Single`](Self::Single), else copied
    /// into `scratch` (cleared first) and borrowed from there.
    #[inline]
    pub fn contiguous<'b>(&self, scratch: &'b mut Vec<u8>) -> &'b [u8]
    where
        'a: 'b,
    {
        match *self {
            RawData::Single(a) => a,
            RawData::Split(a, b) => {
                scratch.clear();
                scratch.extend_from_slice(a);
                scratch.extend_from_slice(b);
                scratch
            }
        }
    }

    /// The 8 bytes at `offset` as a `u64` (reading across the split if needed), or
    /// `None` if they are not all there.
    pub fn u64_at(&self, offset: usize, endian: Endian) -> Option<u64> {
        let mut buf = [0u8; 8];
        match *self {
            RawData::Single(a) => buf.copy_from_slice(a.get(offset..offset.checked_add(8)?)?),
            RawData::Split(a, b) => {
                for (i, byte) in buf.iter_mut().enumerate() {
                    let at = offset.checked_add(i)?;
                    *byte = match a.get(at) {
                        Some(v) => *v,
                        None => *b.get(at - a.len())?,
                    };
                }
            }
        }
        Some(endian.u64(buf))
    }
}

/// A record as it comes off the ring buffer or out of a file: its type, `misc` bits and
/// body, not decoded yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawRecord<'a> {
    /// `PERF_RECORD_*`.
    pub type_: u32,
    /// `PERF_RECORD_MISC_*` bits.
    pub misc: u16,
    /// The bytes after the 8-byte header (`header.size - 8` of them).
    pub data: RawData<'a>,
}

impl<'a> RawRecord<'a> {
    /// The record at the start of `bytes` (header included) and its total size.
    ///
    /// Errors when the header's size is below 8 or beyond `bytes`.
    pub fn from_bytes(bytes: &'a [u8], endian: Endian) -> Result<(Self, usize), ParseError> {
        let h = RecordHeader::parse(bytes, endian)?;
        let size = usize::from(h.size);
        if size < HEADER_SIZE {
            return Err(ParseError::invalid(
                Some(h.type_),
                6,
                "perf_event_header.size (at least 8)",
                u64::from(h.size),
            ));
        }
        match bytes.get(HEADER_SIZE..size) {
            Some(body) => Ok((
                RawRecord {
                    type_: h.type_,
                    misc: h.misc,
                    data: RawData::Single(body),
                },
                size,
            )),
            None => Err(ParseError::truncated(
                Some(h.type_),
                HEADER_SIZE,
                "record body (perf_event_header.size - 8)",
                (size - HEADER_SIZE) as u64,
                bytes.len().saturating_sub(HEADER_SIZE) as u64,
            )),
        }
    }

    /// Whether this is a perf tool record (`type >= PERF_RECORD_USER_TYPE_START`).
    #[inline]
    pub fn is_user_type(&self) -> bool {
        self.type_ >= PERF_RECORD_USER_TYPE_START
    }
}

/// The `PERF_SAMPLE_IDENTIFIER` value of a record body, for streams whose attrs all set
/// `PERF_SAMPLE_IDENTIFIER` (and `sample_id_all` for non-sample records).
///
/// For `PERF_RECORD_SAMPLE` it is the first u64 of the body; for other kernel records it is
/// the last u64 (the end of the `sample_id` trailer). Perf tool records (type 64 and up)
/// have none. `None` also when the body is too short.
pub fn sample_identifier(type_: u32, data: &RawData<'_>, endian: Endian) -> Option<u64> {
    if type_ == PERF_RECORD_SAMPLE {
        data.u64_at(0, endian)
    } else if type_ < PERF_RECORD_USER_TYPE_START {
        data.u64_at(data.len().checked_sub(8)?, endian)
    } else {
        None
    }
}

/// Iterator over the records of a contiguous buffer (a perf.data data section, a copy of
/// a ring buffer, a pipe's payload): yields each record's offset in the buffer and the
/// [`RawRecord`]. After a malformed header it yields that error and then stops.
#[derive(Clone, Debug)]
pub struct Records<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
    failed: bool,
}

impl<'a> Records<'a> {
    /// Records of `data`, in byte order `endian`.
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Records {
            data,
            pos: 0,
            endian,
            failed: false,
        }
    }

    /// Offset of the next record.
    pub fn offset(&self) -> usize {
        self.pos
    }
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<(usize, RawRecord<'a>), ParseError>;

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let rest = self.data.get(self.pos..)?;
        if rest.is_empty() {
            return None;
        }
        match RawRecord::from_bytes(rest, self.endian) {
            Ok((rec, size)) => {
                let at = self.pos;
                self.pos += size;
                Some(Ok((at, rec)))
            }
            Err(mut e) => {
                self.failed = true;
                // Report the offset within the stream: the record starts at self.pos.
                e.offset += self.pos;
                e.record_type = None;
                Some(Err(e))
            }
        }
    }
}
