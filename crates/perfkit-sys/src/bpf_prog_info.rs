//! Offsets in the kernel's `struct bpf_prog_info` (`include/uapi/linux/bpf.h`): what
//! `BPF_OBJ_GET_INFO_BY_FD` fills in, and what perf.data's `HEADER_BPF_PROG_INFO` section
//! carries. Only the fields perfkit reads and writes, up to `prog_tags`.

/// Bytes of `name` (`BPF_OBJ_NAME_LEN`), its NUL included.
pub const NAME_LEN: usize = 16;
/// `id` (u32).
pub const ID: usize = 4;
/// `tag` (8 bytes).
pub const TAG: usize = 8;
/// `name`.
pub const NAME: usize = 64;
/// `nr_jited_ksyms` (u32).
pub const NR_JITED_KSYMS: usize = 104;
/// `nr_jited_func_lens` (u32).
pub const NR_JITED_FUNC_LENS: usize = 108;
/// `jited_ksyms` (u64 user pointer).
pub const JITED_KSYMS: usize = 112;
/// `jited_func_lens` (u64 user pointer).
pub const JITED_FUNC_LENS: usize = 120;
/// `btf_id` (u32).
pub const BTF_ID: usize = 128;
/// `nr_prog_tags` (u32).
pub const NR_PROG_TAGS: usize = 180;
/// `prog_tags` (u64 user pointer).
pub const PROG_TAGS: usize = 184;
/// The length asked for, read and written: up to and including `prog_tags`.
pub const LEN: usize = 192;
