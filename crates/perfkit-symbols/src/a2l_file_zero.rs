//! binutils 2.40's file for the first rows of a DWARF 5 line sequence, which perf 6.1
//! prints (its srcline comes from an `addr2line` child): the line program's file
//! register starts at 1, but binutils before 2.42 (PR 30783) starts each sequence with
//! file entry 0, the unit's own file, and keeps it until the first `DW_LNS_set_file`.
//! GCC sets no file where the sequence begins in file 1, so a function of a header that
//! GCC numbered 1 is named after the unit: `dl-get-cpu-features.c:321` where the line
//! table says `dl-cacheinfo.h:321`. Where entries 0 and 1 are one file (GCC's usual
//! table) nothing changes.

use crate::elf::DwarfReader;
use gimli::{LineInstruction, LineRow, Reader};
use std::sync::Arc;

/// For one unit: the file binutils prints instead, and the address ranges it prints it
/// for (sorted).
pub(crate) struct FileZero {
    name: Arc<str>,
    ranges: Vec<(u64, u64)>,
}

impl FileZero {
    /// What `unit`'s line program makes binutils misname, or `None` when nothing (not
    /// DWARF 5, entries 0 and 1 the same file, or in different directories, which this
    /// does not rebuild).
    pub fn of(unit: gimli::UnitRef<'_, DwarfReader>) -> Option<FileZero> {
        let program = unit.line_program.clone()?;
        let header = program.header().clone();
        if header.version() < 5 {
            return None;
        }
        let (zero, one) = (header.file(0)?, header.file(1)?);
        let name = |f: &gimli::FileEntry<DwarfReader>| -> Option<String> {
            let r = unit.attr_string(f.path_name()).ok()?;
            Some(r.to_string_lossy().ok()?.into_owned())
        };
        let (zero_name, one_name) = (name(zero)?, name(one)?);
        if zero_name == one_name || zero.directory_index() != one.directory_index() {
            return None;
        }
        let mut program = program;
        let mut instructions = header.instructions();
        let mut row = LineRow::new(&header);
        let (mut set_file, mut open, mut ranges) = (false, None::<u64>, Vec::new());
        while let Ok(Some(ins)) = instructions.next_instruction(&header) {
            if matches!(ins, LineInstruction::SetFile(_)) {
                set_file = true;
            }
            if !row.execute(ins, &mut program).ok()? {
                continue;
            }
            let addr = row.address();
            let misnamed = !row.end_sequence() && row.file_index() == 1 && !set_file;
            match (open, misnamed) {
                (None, true) => open = Some(addr),
                (Some(start), false) => {
                    if addr > start {
                        ranges.push((start, addr));
                    }
                    open = None;
                }
                _ => {}
            }
            if row.end_sequence() {
                set_file = false;
            }
            row.reset(&header);
        }
        if ranges.is_empty() {
            return None;
        }
        ranges.sort_unstable();
        let base = zero_name.rsplit('/').next().unwrap_or(&zero_name);
        Some(FileZero {
            name: Arc::from(base),
            ranges,
        })
    }

    /// `path` as binutils prints it at `vaddr`: its file name replaced by the unit's where
    /// `vaddr` lies in a misnamed range.
    pub fn rename(&self, vaddr: u64, path: &str) -> Option<Arc<str>> {
        let i = self
            .ranges
            .partition_point(|r| r.0 <= vaddr)
            .checked_sub(1)?;
        if vaddr >= self.ranges[i].1 {
            return None;
        }
        let dir = path.rfind('/').map_or("", |at| &path[..=at]);
        Some(Arc::from(format!("{dir}{}", self.name)))
    }
}
