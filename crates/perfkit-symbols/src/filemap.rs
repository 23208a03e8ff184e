//! Read-only file contents shared between the symbol table, DWARF and unwind data.
//!
//! Files are memory-mapped (debug files reach hundreds of MB and only a few pages of them
//! are touched), with a read fallback for files that cannot be mapped (procfs, empty
//! files). This is the only `unsafe` in the crate.

use std::fs::File;
use std::io::{self, Read};
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

enum Storage {
    Map(memmap2::Mmap),
    Owned(Vec<u8>),
}

/// The bytes of one file, mapped once and shared (`Arc`) by everything that reads it.
pub struct FileBytes {
    storage: Storage,
}

impl FileBytes {
    /// Map `path` read-only (`mmap(PROT_READ, MAP_PRIVATE)`).
    pub fn open(path: &Path) -> io::Result<Arc<FileBytes>> {
        let mut file = File::open(path)?;
        let len = file.metadata()?.len();
        if len == 0 {
            // procfs/sysfs files report size 0 and cannot be mapped: read them.
            let mut buf = Vec::new();
            file.read_to_end(&mut buf)?;
            return Ok(Arc::new(FileBytes {
                storage: Storage::Owned(buf),
            }));
        }
        // SAFETY: the mapping is private and read-only. If another process truncates or
        // rewrites the file while it is mapped, reads may see the new bytes or fault
        // (SIGBUS); every symbolizer that maps binaries (perf, gdb, blazesym) accepts this,
        // and binaries being profiled are not normally rewritten in place (package managers
        // and linkers replace them by rename, which leaves our mapping intact).
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(Arc::new(FileBytes {
            storage: Storage::Map(map),
        }))
    }

    /// Wrap bytes already in memory (tests, data read from `/proc/PID/mem`).
    pub fn from_vec(bytes: Vec<u8>) -> Arc<FileBytes> {
        Arc::new(FileBytes {
            storage: Storage::Owned(bytes),
        })
    }

    /// Let the pages read so far leave this process's memory: they stay in the page cache
    /// and are read again where touched. After a huge library's symbol table was scanned
    /// whole, only the pages of the names looked up from then on count in the RSS.
    pub fn release_pages(&self) {
        if let Storage::Map(m) = &self.storage {
            // SAFETY: the mapping is read-only and never written, so MADV_DONTNEED only
            // drops its page-table entries: a later read faults the same file bytes in
            // again, and every slice into the mapping keeps its contents. A failure leaves
            // the pages where they are.
            let _ = unsafe { m.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Map(m) => m,
            Storage::Owned(v) => v,
        }
    }
}

/// A byte range of a shared file: section data handed to framehop without copying.
#[derive(Clone)]
pub struct SectionBytes {
    file: Arc<FileBytes>,
    range: Range<usize>,
}

impl SectionBytes {
    /// The bytes `range` of `file`; `None` if the range is outside the file.
    pub fn new(file: Arc<FileBytes>, range: Range<usize>) -> Option<SectionBytes> {
        if range.start <= range.end && range.end <= file.bytes().len() {
            Some(SectionBytes { file, range })
        } else {
            None
        }
    }

    /// The range of `sub` inside `file`, if `sub` is a sub-slice of it (object's section
    /// data are sub-slices of the file bytes).
    pub fn of_subslice(file: &Arc<FileBytes>, sub: &[u8]) -> Option<SectionBytes> {
        let base = file.bytes().as_ptr() as usize;
        let start = (sub.as_ptr() as usize).checked_sub(base)?;
        SectionBytes::new(file.clone(), start..start + sub.len())
    }
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.file.bytes()[self.range.clone()]
    }
}
