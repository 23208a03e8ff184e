//! Where the functions of a file without symbols begin: every `.eh_frame` FDE (the call
//! frame information the unwinder reads) covers the code of one function, so the FDE that
//! holds an address gives the start of its function. Reports use it to group the unnamed
//! addresses of a stripped library per function (`libgomp.so.1+0x1de40`) instead of one
//! row per address.

use gimli::UnwindSection;
use object::{Object, ObjectSection, ObjectSegment};

/// The function ranges (`.eh_frame` FDEs) of one ELF file, in file offsets.
#[derive(Clone, Debug, Default)]
pub struct FunctionBounds {
    /// `(start, end)` file offsets, sorted by start.
    ranges: Vec<(u64, u64)>,
    /// The file's GNU build id.
    build_id: Option<Vec<u8>>,
}

impl FunctionBounds {
    /// Read the FDEs of an ELF file's `.eh_frame`. `None` when the bytes are not an ELF
    /// file or it has no `.eh_frame`. A malformed entry ends the walk: the ranges read
    /// before it are kept.
    pub fn from_elf(data: &[u8]) -> Option<FunctionBounds> {
        let obj = object::File::parse(data).ok()?;
        let section = obj.section_by_name(".eh_frame")?;
        let bytes = section.data().ok()?;
        let endian = if obj.is_little_endian() {
            gimli::RunTimeEndian::Little
        } else {
            gimli::RunTimeEndian::Big
        };
        let mut eh = gimli::EhFrame::new(bytes, endian);
        eh.set_address_size(if obj.is_64() { 8 } else { 4 });
        let mut bases = gimli::BaseAddresses::default().set_eh_frame(section.address());
        if let Some(text) = obj.section_by_name(".text") {
            bases = bases.set_text(text.address());
        }
        if let Some(got) = obj.section_by_name(".got") {
            bases = bases.set_got(got.address());
        }
        // Addresses are virtual; the caller's are file offsets (what a mapping's pgoff
        // counts): map them through the loaded segments.
        let segments: Vec<(u64, u64, u64)> = obj
            .segments()
            .filter_map(|s| {
                let (off, size) = s.file_range();
                (size > 0).then_some((s.address(), size, off))
            })
            .collect();
        let to_offset = |svma: u64| {
            segments
                .iter()
                .find(|&&(va, size, _)| svma >= va && svma - va < size)
                .map(|&(va, _, off)| svma - va + off)
        };
        let mut ranges = Vec::new();
        let mut entries = eh.entries(&bases);
        while let Ok(Some(entry)) = entries.next() {
            let gimli::CieOrFde::Fde(partial) = entry else {
                continue;
            };
            let Ok(fde) = partial.parse(gimli::EhFrame::cie_from_offset) else {
                continue;
            };
            if fde.len() == 0 {
                continue;
            }
            if let Some(start) = to_offset(fde.initial_address()) {
                ranges.push((start, start + fde.len()));
            }
        }
        ranges.sort_unstable();
        let build_id = obj.build_id().ok().flatten().map(<[u8]>::to_vec);
        Some(FunctionBounds { ranges, build_id })
    }

    /// The file offset where the function holding file offset `offset` begins, when an
    /// FDE covers it.
    pub fn function_start(&self, offset: u64) -> Option<u64> {
        let i = self.ranges.partition_point(|&(start, _)| start <= offset);
        let (start, end) = *self.ranges.get(i.checked_sub(1)?)?;
        (offset < end).then_some(start)
    }

    /// The file's GNU build id, when it has one.
    pub fn build_id(&self) -> Option<&[u8]> {
        self.build_id.as_deref()
    }

    /// How many functions the file's FDEs describe.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether no FDE was read.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_binary_has_its_functions_bounded() {
        let exe = std::fs::read("/proc/self/exe").unwrap();
        let b = FunctionBounds::from_elf(&exe).expect("an ELF file with .eh_frame");
        assert!(b.len() > 100, "{}", b.len());
        // Every range maps to its own start; an offset past the last range to nothing.
        for &(start, end) in b.ranges.iter().take(50) {
            assert_eq!(b.function_start(start), Some(start));
            assert!(matches!(b.function_start(end - 1), Some(s) if s < end));
        }
        assert_eq!(b.function_start(u64::MAX), None);
        assert!(FunctionBounds::from_elf(b"not an elf").is_none());
    }
}
