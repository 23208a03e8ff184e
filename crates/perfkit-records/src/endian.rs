//! Byte order of a record stream.

/// The byte order records were written in.
///
/// The live ring buffer is always [`Endian::NATIVE`]; a perf.data file says its own order
/// through its magic (`PERFILE2` read as a little-endian u64 versus byte-swapped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Least significant byte first (x86_64, arm64, riscv64, ...).
    Little,
    /// Most significant byte first (s390x, big-endian ppc64, ...).
    Big,
}

impl Endian {
    /// The byte order of the machine this code runs on.
    pub const NATIVE: Endian = if cfg!(target_endian = "big") {
        Endian::Big
    } else {
        Endian::Little
    };

    /// The other byte order.
    pub const fn swapped(self) -> Endian {
        match self {
            Endian::Little => Endian::Big,
            Endian::Big => Endian::Little,
        }
    }

    /// A `u16` from two bytes in this order.
    #[inline(always)]
    pub const fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    /// A `u32` from four bytes in this order.
    #[inline(always)]
    pub const fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    /// A `u64` from eight bytes in this order.
    #[inline(always)]
    pub const fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }

    /// A `u64` from a chunk that is known to be 8 bytes long (from `chunks_exact(8)`);
    /// a shorter chunk (impossible there) reads as 0 rather than panicking.
    #[inline(always)]
    pub(crate) fn u64_chunk(self, c: &[u8]) -> u64 {
        self.u64(c.try_into().unwrap_or([0; 8]))
    }

    /// The bytes of `v` in this order (used by encoders and tests).
    pub const fn u64_bytes(self, v: u64) -> [u8; 8] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// The bytes of `v` in this order.
    pub const fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// The bytes of `v` in this order.
    pub const fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }
}
