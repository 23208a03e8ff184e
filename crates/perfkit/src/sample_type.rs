//! [`SampleType`]: `perf_event_attr.sample_type` as a typed set of `PERF_SAMPLE_*` bits,
//! with names, the kernel's companion-field rules, and a probe of what the kernel accepts.

use crate::attr::Attr;
use crate::counter::Counter;
use crate::error::Error;
use crate::target::Target;
use perfkit_sys::{self as sys, attr_flags as f};

/// `perf_event_attr.sample_type`: the fields every `PERF_RECORD_SAMPLE` carries, one
/// `PERF_SAMPLE_*` bit each, with names (`IP|TID|TIME`, as `perf evlist -v` prints them)
/// and the kernel's rules about companion fields checked before `perf_event_open`.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SampleType(pub(crate) u64);

use sys::PERF_SAMPLE_NAMES as SAMPLE_NAMES;

impl SampleType {
    /// No field.
    pub const EMPTY: SampleType = SampleType(0);
    /// `PERF_SAMPLE_IP`: the instruction pointer.
    pub const IP: SampleType = SampleType(sys::PERF_SAMPLE_IP);
    /// `PERF_SAMPLE_TID`: pid and tid.
    pub const TID: SampleType = SampleType(sys::PERF_SAMPLE_TID);
    /// `PERF_SAMPLE_TIME`: the timestamp (perf clock, or `clockid`).
    pub const TIME: SampleType = SampleType(sys::PERF_SAMPLE_TIME);
    /// `PERF_SAMPLE_ADDR`: the data address (faults, memory events).
    pub const ADDR: SampleType = SampleType(sys::PERF_SAMPLE_ADDR);
    /// `PERF_SAMPLE_READ`: the counter value(s) in `read_format` layout.
    pub const READ: SampleType = SampleType(sys::PERF_SAMPLE_READ);
    /// `PERF_SAMPLE_CALLCHAIN`: kernel and user frames (`exclude_callchain_*` trim them).
    pub const CALLCHAIN: SampleType = SampleType(sys::PERF_SAMPLE_CALLCHAIN);
    /// `PERF_SAMPLE_ID`: the event id (of the group leader for grouped reads).
    pub const ID: SampleType = SampleType(sys::PERF_SAMPLE_ID);
    /// `PERF_SAMPLE_CPU`: cpu and a reserved word.
    pub const CPU: SampleType = SampleType(sys::PERF_SAMPLE_CPU);
    /// `PERF_SAMPLE_PERIOD`: the period of this sample.
    pub const PERIOD: SampleType = SampleType(sys::PERF_SAMPLE_PERIOD);
    /// `PERF_SAMPLE_STREAM_ID`: the id of the event that was inherited from.
    pub const STREAM_ID: SampleType = SampleType(sys::PERF_SAMPLE_STREAM_ID);
    /// `PERF_SAMPLE_RAW`: raw data (the tracepoint's record).
    pub const RAW: SampleType = SampleType(sys::PERF_SAMPLE_RAW);
    /// `PERF_SAMPLE_BRANCH_STACK`: the last branch records (needs a PMU with LBR/BRBE).
    pub const BRANCH_STACK: SampleType = SampleType(sys::PERF_SAMPLE_BRANCH_STACK);
    /// `PERF_SAMPLE_REGS_USER`: user registers chosen by `sample_regs_user`.
    pub const REGS_USER: SampleType = SampleType(sys::PERF_SAMPLE_REGS_USER);
    /// `PERF_SAMPLE_STACK_USER`: `sample_stack_user` bytes of the user stack.
    pub const STACK_USER: SampleType = SampleType(sys::PERF_SAMPLE_STACK_USER);
    /// `PERF_SAMPLE_WEIGHT`: a 64-bit cost (latency) of the sample.
    pub const WEIGHT: SampleType = SampleType(sys::PERF_SAMPLE_WEIGHT);
    /// `PERF_SAMPLE_DATA_SRC`: memory hierarchy level of the access.
    pub const DATA_SRC: SampleType = SampleType(sys::PERF_SAMPLE_DATA_SRC);
    /// `PERF_SAMPLE_IDENTIFIER`: the id at a fixed place (first word after the header).
    pub const IDENTIFIER: SampleType = SampleType(sys::PERF_SAMPLE_IDENTIFIER);
    /// `PERF_SAMPLE_TRANSACTION`: transactional memory abort information.
    pub const TRANSACTION: SampleType = SampleType(sys::PERF_SAMPLE_TRANSACTION);
    /// `PERF_SAMPLE_REGS_INTR`: interrupted-context registers (`sample_regs_intr`).
    pub const REGS_INTR: SampleType = SampleType(sys::PERF_SAMPLE_REGS_INTR);
    /// `PERF_SAMPLE_PHYS_ADDR`: the physical data address.
    pub const PHYS_ADDR: SampleType = SampleType(sys::PERF_SAMPLE_PHYS_ADDR);
    /// `PERF_SAMPLE_AUX`: `aux_sample_size` bytes of the group leader's AUX area.
    pub const AUX: SampleType = SampleType(sys::PERF_SAMPLE_AUX);
    /// `PERF_SAMPLE_CGROUP`: the cgroup id.
    pub const CGROUP: SampleType = SampleType(sys::PERF_SAMPLE_CGROUP);
    /// `PERF_SAMPLE_DATA_PAGE_SIZE`: page size of the data address.
    pub const DATA_PAGE_SIZE: SampleType = SampleType(sys::PERF_SAMPLE_DATA_PAGE_SIZE);
    /// `PERF_SAMPLE_CODE_PAGE_SIZE`: page size of the ip.
    pub const CODE_PAGE_SIZE: SampleType = SampleType(sys::PERF_SAMPLE_CODE_PAGE_SIZE);
    /// `PERF_SAMPLE_WEIGHT_STRUCT`: the weight as three smaller fields (excludes
    /// `WEIGHT`).
    pub const WEIGHT_STRUCT: SampleType = SampleType(sys::PERF_SAMPLE_WEIGHT_STRUCT);
    /// Every bit the ABI defines (below `PERF_SAMPLE_MAX`). Not openable as is: `WEIGHT`
    /// and `WEIGHT_STRUCT` exclude each other.
    pub const ALL: SampleType = SampleType(sys::PERF_SAMPLE_MAX - 1);

    /// From raw bits; `None` if a bit at or above `PERF_SAMPLE_MAX` is set.
    pub const fn from_bits(bits: u64) -> Option<SampleType> {
        if bits & !Self::ALL.0 == 0 {
            Some(SampleType(bits))
        } else {
            None
        }
    }

    /// The raw `sample_type` bits.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: SampleType) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The bits of `self` not in `other`.
    pub const fn difference(self, other: SampleType) -> SampleType {
        SampleType(self.0 & !other.0)
    }

    /// The single bits set, lowest first.
    pub fn iter(self) -> impl Iterator<Item = SampleType> {
        (0..64)
            .map(|b| 1u64 << b)
            .filter(move |b| self.0 & b != 0)
            .map(SampleType)
    }

    /// The `PERF_SAMPLE_*` suffix of a single bit (`"CALLCHAIN"`), `None` for several
    /// bits or an unknown one.
    pub fn name(self) -> Option<&'static str> {
        SAMPLE_NAMES
            .iter()
            .find(|(b, _)| *b == self.0)
            .map(|(_, n)| *n)
    }

    /// The kernel's rules on the fields that go with these bits (from
    /// `perf_copy_attr` / `perf_event_open` in kernel/events/core.c), checked against
    /// `attr` so a mistake gets a sentence instead of a bare EINVAL: `WEIGHT` and
    /// `WEIGHT_STRUCT` exclude each other, `REGS_USER`/`REGS_INTR` need a register mask,
    /// `STACK_USER` a size that is a multiple of 8 below 65535, and `READ` on an
    /// `inherit` event needs `TID`. (`AUX` with `aux_sample_size` 0 is accepted and adds
    /// nothing; with a size it needs an AUX event as group leader, which only the kernel
    /// can tell.)
    pub fn check(self, attr: &Attr) -> std::result::Result<(), String> {
        let raw = attr.raw();
        if self.contains(Self::WEIGHT | Self::WEIGHT_STRUCT) {
            return Err(
                "PERF_SAMPLE_WEIGHT and PERF_SAMPLE_WEIGHT_STRUCT exclude each other".into(),
            );
        }
        if self.contains(Self::REGS_USER) && raw.sample_regs_user == 0 {
            return Err("PERF_SAMPLE_REGS_USER needs a register mask in sample_regs_user".into());
        }
        if self.contains(Self::REGS_INTR) && raw.sample_regs_intr == 0 {
            return Err("PERF_SAMPLE_REGS_INTR needs a register mask in sample_regs_intr".into());
        }
        if self.contains(Self::STACK_USER)
            && (raw.sample_stack_user % 8 != 0 || raw.sample_stack_user >= u32::from(u16::MAX))
        {
            return Err(format!(
                "PERF_SAMPLE_STACK_USER: sample_stack_user {} must be a multiple of 8 below 65535",
                raw.sample_stack_user
            ));
        }
        if self.contains(Self::READ) && raw.has(f::INHERIT) && !self.contains(Self::TID) {
            return Err("PERF_SAMPLE_READ on an inherit event needs PERF_SAMPLE_TID".into());
        }
        Ok(())
    }

    /// Which of `wanted`'s bits the kernel accepts for `attr`'s event on `target`:
    /// opens the event once per bit, with the companion fields a bit needs filled in
    /// when `attr` leaves them zero (a register mask of the stack pointer and ip,
    /// 1 KiB of user stack, 4 KiB of AUX, `TID` for `READ`), and keeps the kernel's
    /// error for each refused bit (BRANCH_STACK needs a PMU with branch records, AUX an
    /// AUX event as group leader; a software event gets EINVAL or EOPNOTSUPP).
    pub fn probe(wanted: SampleType, attr: &Attr, target: &Target<'_>) -> SampleSupport {
        let mut support = SampleSupport::default();
        for bit in wanted.iter() {
            let mut a = (*attr).sample_type(bit).disabled(true);
            let raw = a.raw_mut();
            if raw.sample_period == 0 {
                raw.sample_period = 1;
            }
            if bit == Self::REGS_USER && raw.sample_regs_user == 0 {
                raw.sample_regs_user = probe_regs_mask();
            }
            if bit == Self::REGS_INTR && raw.sample_regs_intr == 0 {
                raw.sample_regs_intr = probe_regs_mask();
            }
            if bit == Self::STACK_USER && raw.sample_stack_user == 0 {
                raw.sample_stack_user = 1024;
            }
            if bit == Self::AUX && raw.aux_sample_size == 0 {
                raw.aux_sample_size = 4096;
            }
            if bit == Self::READ {
                raw.sample_type |= sys::PERF_SAMPLE_TID;
            }
            match Counter::open(&a, target) {
                Ok(_) => support.supported |= bit,
                Err(e) => support.refused.push((bit, e)),
            }
        }
        support
    }
}

/// The stack pointer and instruction pointer in the arch's `perf_regs.h` numbering
/// (x86: `PERF_REG_X86_SP` 7, `PERF_REG_X86_IP` 8; arm64: `PERF_REG_ARM64_SP` 31,
/// `PERF_REG_ARM64_PC` 32), register 0 elsewhere.
fn probe_regs_mask() -> u64 {
    if cfg!(target_arch = "x86_64") {
        (1 << 7) | (1 << 8)
    } else if cfg!(target_arch = "aarch64") {
        (1 << 31) | (1 << 32)
    } else {
        1
    }
}

/// The result of [`SampleType::probe`].
#[derive(Debug, Default)]
pub struct SampleSupport {
    /// The bits the kernel accepted.
    pub supported: SampleType,
    /// The bits it refused, each with its error (errno kept).
    pub refused: Vec<(SampleType, Error)>,
}

impl std::ops::BitOr for SampleType {
    type Output = SampleType;
    fn bitor(self, rhs: SampleType) -> SampleType {
        SampleType(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for SampleType {
    fn bitor_assign(&mut self, rhs: SampleType) {
        self.0 |= rhs.0;
    }
}

impl std::ops::BitAnd for SampleType {
    type Output = SampleType;
    fn bitand(self, rhs: SampleType) -> SampleType {
        SampleType(self.0 & rhs.0)
    }
}

impl std::fmt::Display for SampleType {
    /// `IP|TID|TIME`; unknown bits as hex (`IP|0x4000000`); `0` when empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0 == 0 {
            return f.write_str("0");
        }
        let mut first = true;
        let mut unknown = 0u64;
        for bit in self.iter() {
            match bit.name() {
                Some(n) => {
                    if !first {
                        f.write_str("|")?;
                    }
                    f.write_str(n)?;
                    first = false;
                }
                None => unknown |= bit.0,
            }
        }
        if unknown != 0 {
            if !first {
                f.write_str("|")?;
            }
            write!(f, "{unknown:#x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for SampleType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SampleType({self})")
    }
}

/// A name in a sample-type list that is not a `PERF_SAMPLE_*` suffix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownSampleField {
    /// The unrecognised name.
    pub name: String,
    /// Its byte offset in the parsed string.
    pub offset: usize,
}

impl std::fmt::Display for UnknownSampleField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown sample field {:?} at offset {} (known: {})",
            self.name,
            self.offset,
            SAMPLE_NAMES
                .iter()
                .map(|(_, n)| n.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

impl std::error::Error for UnknownSampleField {}

impl std::str::FromStr for SampleType {
    type Err = UnknownSampleField;

    /// Names separated by `|` or `,`, case-insensitive, with or without the
    /// `PERF_SAMPLE_` prefix: `"ip,tid,time"`, `"IP|CALLCHAIN"`.
    fn from_str(s: &str) -> std::result::Result<SampleType, UnknownSampleField> {
        let mut out = SampleType::EMPTY;
        let mut offset = 0;
        for part in s.split(['|', ',']) {
            let name = part.trim();
            let lead = part.len() - part.trim_start().len();
            if !name.is_empty() {
                let upper = name.to_ascii_uppercase();
                let bare = upper.strip_prefix("PERF_SAMPLE_").unwrap_or(&upper);
                match SAMPLE_NAMES.iter().find(|(_, n)| *n == bare) {
                    Some((b, _)) => out.0 |= b,
                    None => {
                        return Err(UnknownSampleField {
                            name: name.to_string(),
                            offset: offset + lead,
                        });
                    }
                }
            }
            offset += part.len() + 1;
        }
        Ok(out)
    }
}

impl From<u64> for SampleType {
    /// Raw `PERF_SAMPLE_*` bits, unchecked (bits the kernel does not know make the open
    /// fail with EINVAL, explained by [`Counter::open`]); see [`SampleType::from_bits`]
    /// for a checked conversion.
    fn from(bits: u64) -> SampleType {
        SampleType(bits)
    }
}
