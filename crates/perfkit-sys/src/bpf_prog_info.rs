//! Offsets in the kernel's `struct bpf_prog_info` (`include/uapi/linux/bpf.h`): what
//! `BPF_OBJ_GET_INFO_BY_FD` fills in, and what perf.data's `HEADER_BPF_PROG_INFO` section
//! carries. Only the fields perfkit reads and writes, up to `attach_btf_id` (the end of
//! the struct as perf 6.1 knows it).

/// Bytes of `name` (`BPF_OBJ_NAME_LEN`), its NUL included.
pub const NAME_LEN: usize = 16;
/// `id` (u32).
pub const ID: usize = 4;
/// `tag` (8 bytes).
pub const TAG: usize = 8;
/// `jited_prog_len` (u32): bytes of JIT-compiled code.
pub const JITED_PROG_LEN: usize = 16;
/// `jited_prog_insns` (u64 user pointer).
pub const JITED_PROG_INSNS: usize = 24;
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
/// `func_info_rec_size` (u32).
pub const FUNC_INFO_REC_SIZE: usize = 132;
/// `func_info` (u64 user pointer): `struct bpf_func_info` (insn_off, type_id) records.
pub const FUNC_INFO: usize = 136;
/// `nr_func_info` (u32).
pub const NR_FUNC_INFO: usize = 144;
/// `nr_line_info` (u32).
pub const NR_LINE_INFO: usize = 148;
/// `line_info` (u64 user pointer): `struct bpf_line_info` records.
pub const LINE_INFO: usize = 152;
/// `jited_line_info` (u64 user pointer): one code address per line info record.
pub const JITED_LINE_INFO: usize = 160;
/// `nr_jited_line_info` (u32).
pub const NR_JITED_LINE_INFO: usize = 168;
/// `line_info_rec_size` (u32).
pub const LINE_INFO_REC_SIZE: usize = 172;
/// `jited_line_info_rec_size` (u32).
pub const JITED_LINE_INFO_REC_SIZE: usize = 176;
/// `nr_prog_tags` (u32).
pub const NR_PROG_TAGS: usize = 180;
/// `prog_tags` (u64 user pointer).
pub const PROG_TAGS: usize = 184;
/// The length asked for, read and written: `sizeof(struct bpf_prog_info)` in perf 6.1's
/// headers (up to and including `attach_btf_id`, padded to 8), which is the `info_len`
/// perf writes.
pub const LEN: usize = 232;

/// The arrays of the struct as perf lists them (`enum perf_bpil_array`: the bit of each in
/// a section's bitmap is its index), each as (offset of its pointer, offset of its count,
/// its record size: `Fixed(n)` bytes or `At(offset)` of the field that holds it). perf
/// lays a program's arrays out in this order, each padded to 8 bytes.
pub const ARRAYS: [(usize, usize, RecSize); 9] = [
    (JITED_PROG_INSNS, JITED_PROG_LEN, RecSize::Fixed(1)),
    // xlated_prog_insns / xlated_prog_len
    (32, 20, RecSize::Fixed(1)),
    // map_ids / nr_map_ids
    (56, 52, RecSize::Fixed(4)),
    (JITED_KSYMS, NR_JITED_KSYMS, RecSize::Fixed(8)),
    (JITED_FUNC_LENS, NR_JITED_FUNC_LENS, RecSize::Fixed(4)),
    (FUNC_INFO, NR_FUNC_INFO, RecSize::At(FUNC_INFO_REC_SIZE)),
    (LINE_INFO, NR_LINE_INFO, RecSize::At(LINE_INFO_REC_SIZE)),
    (
        JITED_LINE_INFO,
        NR_JITED_LINE_INFO,
        RecSize::At(JITED_LINE_INFO_REC_SIZE),
    ),
    (PROG_TAGS, NR_PROG_TAGS, RecSize::Fixed(8)),
];

/// The size of one record of an array of [`ARRAYS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecSize {
    /// Always this many bytes.
    Fixed(u32),
    /// Given by the u32 field at this offset.
    At(usize),
}

/// The bits of the arrays perf asks for and keeps (`perf_event__synthesize_one_bpf_prog`,
/// `perf_env__add_bpf_info`): JIT code, function addresses and lengths, BTF function
/// info, line info (source and JIT) and the functions' tags.
pub const PERF_ARRAYS: u64 = 1 | (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8);
