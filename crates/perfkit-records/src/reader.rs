//! The one checked reader every field read goes through.

use crate::{Endian, ParseError};

/// A cursor over a byte slice that reads integers in a fixed byte order and never reads
/// out of bounds: every read is checked and a short slice gives a [`ParseError`] naming
/// the field and its offset.
///
/// `base` is the offset of `data[0]` within the record (8 for a record body, since the
/// header comes first), so errors report offsets within the whole record.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    base: usize,
    endian: Endian,
    record_type: Option<u32>,
}

impl<'a> Reader<'a> {
    /// A reader over `data`, whose first byte is at offset `base` of record type
    /// `record_type` (for error messages).
    #[inline]
    pub fn new(data: &'a [u8], endian: Endian, base: usize, record_type: Option<u32>) -> Self {
        Reader {
            data,
            pos: 0,
            base,
            endian,
            record_type,
        }
    }

    /// The byte order of this reader.
    #[inline]
    pub fn endian(&self) -> Endian {
        self.endian
    }

    /// Offset of the next read within the record.
    #[inline]
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }

    /// The bytes not read yet (the reader does not move).
    #[inline]
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    #[cold]
    #[inline(never)]
    fn short(&self, what: &'static str, needed: u64) -> ParseError {
        ParseError::truncated(
            self.record_type,
            self.offset(),
            what,
            needed,
            self.remaining() as u64,
        )
    }

    /// An [`Invalid`](crate::ParseErrorKind::Invalid) error at the current offset
    /// minus `back` bytes (the start of the field just read).
    #[cold]
    pub fn invalid(&self, back: usize, what: &'static str, value: u64) -> ParseError {
        ParseError::invalid(
            self.record_type,
            self.offset().saturating_sub(back),
            what,
            value,
        )
    }

    #[inline(always)]
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], ParseError> {
        match self.data.get(self.pos..self.pos.wrapping_add(N)) {
            Some(s) => {
                self.pos += N;
                // `s` is exactly N bytes long; the fallback is never taken.
                Ok(s.try_into().unwrap_or([0; N]))
            }
            None => Err(self.short(what, N as u64)),
        }
    }

    /// A `u8`.
    #[inline]
    pub fn u8(&mut self, what: &'static str) -> Result<u8, ParseError> {
        Ok(self.array::<1>(what)?[0])
    }

    /// A `u16` in the reader's byte order.
    #[inline]
    pub fn u16(&mut self, what: &'static str) -> Result<u16, ParseError> {
        Ok(self.endian.u16(self.array(what)?))
    }

    /// A `u32` in the reader's byte order.
    #[inline]
    pub fn u32(&mut self, what: &'static str) -> Result<u32, ParseError> {
        Ok(self.endian.u32(self.array(what)?))
    }

    /// An `i32` (a pid or tid) in the reader's byte order.
    #[inline]
    pub fn i32(&mut self, what: &'static str) -> Result<i32, ParseError> {
        Ok(self.u32(what)? as i32)
    }

    /// A `u64` in the reader's byte order.
    #[inline]
    pub fn u64(&mut self, what: &'static str) -> Result<u64, ParseError> {
        Ok(self.endian.u64(self.array(what)?))
    }

    /// `n` raw bytes.
    #[inline]
    pub fn bytes(&mut self, n: u64, what: &'static str) -> Result<&'a [u8], ParseError> {
        let end = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n));
        match end.and_then(|end| self.data.get(self.pos..end).map(|s| (s, end))) {
            Some((s, end)) => {
                self.pos = end;
                Ok(s)
            }
            None => Err(self.short(what, n)),
        }
    }

    /// `count` items of `item_size` bytes each, as one slice.
    #[inline]
    pub fn array_of(
        &mut self,
        count: u64,
        item_size: u64,
        what: &'static str,
    ) -> Result<&'a [u8], ParseError> {
        match count.checked_mul(item_size) {
            Some(n) => self.bytes(n, what),
            None => Err(self.short(what, u64::MAX)),
        }
    }

    /// Skip padding up to the next multiple of 8 (relative to the record start, which
    /// is 8-byte aligned). Padding missing at the very end of the data is tolerated.
    #[inline]
    pub fn align8(&mut self) {
        let off = self.offset();
        let pad = off.wrapping_neg() & 7;
        self.pos = (self.pos + pad).min(self.data.len());
    }

    /// The rest of the data as a NUL-terminated string: the bytes before the first NUL.
    /// The reader moves to the end. A field without a NUL is an error.
    #[inline]
    pub fn c_string(&mut self, what: &'static str) -> Result<&'a [u8], ParseError> {
        let rest = self.rest();
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                self.pos = self.data.len();
                Ok(rest.get(..n).unwrap_or(rest))
            }
            None => Err(self.short(what, rest.len() as u64 + 1)),
        }
    }
}
