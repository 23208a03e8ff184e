//! The mapped files a profile's frames were sampled in, and the timeline events around its
//! samples (lost records, throttling): what exports need to let a viewer symbolize by
//! build id and to mark gaps in the data.

/// Index of an [`Image`] in [`crate::Profile::images`].
pub type ImageId = u32;

/// One executable mapping of one process (or of the kernel, `pid` -1): where a file was
/// mapped, as its MMAP record said.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Image {
    /// The process (-1: the kernel).
    pub pid: i32,
    /// First mapped address.
    pub start: u64,
    /// One past the last mapped address.
    pub end: u64,
    /// File offset mapped at `start`.
    pub pgoff: u64,
    /// The file (`[kernel.kallsyms]`, `[vdso]`, a path).
    pub path: String,
    /// Its GNU build id, when the recording has it (MMAP2 or the header's build-id table).
    pub build_id: Option<Vec<u8>>,
    /// The process's main executable: the first file it mapped after its exec (or, for a
    /// process that was already running, the first file of its maps).
    pub main: bool,
}

impl Image {
    /// The build id in lower-case hex, trailing zero padding (perf pads to 20 bytes)
    /// removed.
    pub fn build_id_hex(&self) -> Option<String> {
        let id = self.build_id.as_deref()?;
        let len = id.iter().rposition(|&b| b != 0)? + 1;
        // A 16-byte id padded by perf keeps its length; only a run of zeros past 16 or 20
        // bytes is padding.
        let len = if len <= 16 && id.len() >= 16 {
            16
        } else {
            len.max(20.min(id.len()))
        };
        Some(id[..len].iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The file's base name (`libc.so.6`).
    pub fn name(&self) -> &str {
        self.path.rsplit('/').next().unwrap_or(&self.path)
    }

    /// Whether this is the kernel or a kernel module.
    pub fn is_kernel(&self) -> bool {
        self.pid == -1
    }
}

/// What happened at a point of the recording besides samples.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MarkKind {
    /// The kernel dropped this many records from a full ring (PERF_RECORD_LOST).
    Lost(u64),
    /// The kernel throttled the event (too many samples per second).
    Throttle,
    /// ... and let it sample again.
    Unthrottle,
}

/// A timeline event of the recording ([`MarkKind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    /// When (perf time, ns).
    pub time: u64,
    /// The thread whose record it was, when the record said.
    pub thread: Option<crate::ThreadId>,
    /// What.
    pub kind: MarkKind,
}

#[cfg(test)]
mod tests {
    use super::Image;

    #[test]
    fn build_id_hex_drops_perf_padding() {
        let mut i = Image {
            build_id: Some([vec![0xab; 20], vec![0; 4]].concat()),
            ..Image::default()
        };
        assert_eq!(i.build_id_hex().unwrap(), "ab".repeat(20));
        i.build_id = Some([vec![0x12; 16], vec![0; 4]].concat());
        assert_eq!(i.build_id_hex().unwrap(), "12".repeat(16));
        i.build_id = Some(vec![0x12; 20]);
        assert_eq!(i.build_id_hex().unwrap(), "12".repeat(20));
        i.build_id = Some(vec![0; 20]);
        assert_eq!(i.build_id_hex(), None);
    }
}
