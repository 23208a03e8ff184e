//! The BPF programs loaded in the kernel, as `perf record` lists them at its start
//! (`perf_event__synthesize_bpf_events`): each program's id, tag, name and the address and
//! length of each of its JIT-compiled functions, which a recording describes with
//! `PERF_RECORD_KSYMBOL` and `PERF_RECORD_BPF_EVENT` records so that samples in programs
//! loaded before it started can be named; and, as perf keeps them for its
//! `HEADER_BPF_PROG_INFO` section, the program's info with the arrays perf asks for (its
//! JIT code, BTF function info and line info: [`bpf_program`]) and its BTF ([`bpf_btf`]).
//!
//! Read through the `bpf(2)` system call: `BPF_PROG_GET_NEXT_ID` walks the ids,
//! `BPF_PROG_GET_FD_BY_ID` opens each, and `BPF_OBJ_GET_INFO_BY_FD` fills the kernel's
//! `struct bpf_prog_info` (read here at its fields' offsets in `include/uapi/linux/bpf.h`;
//! the kernel copies at most the length it is given, so an older or newer kernel's larger
//! struct is no problem). All of this needs `CAP_SYS_ADMIN` (or `CAP_BPF`); without it the
//! list is an error, which a recorder treats as "no programs", as perf does.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// One loaded BPF program. The names perf gives its functions, and the file section that
/// lists it, are perf.data matters: `perfkit_data::bpf_prog_info::BpfProgInfo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfProgram {
    /// The program's id (`bpftool prog` shows it).
    pub id: u32,
    /// Its tag: a hash of its instructions.
    pub tag: [u8; 8],
    /// The name it was loaded with (at most 15 bytes), empty if none.
    pub name: String,
    /// The id of its BTF, 0 without: with BTF the kernel names its functions from it.
    pub btf_id: u32,
    /// Each JIT-compiled function (the program, then its subprograms): address, length in
    /// bytes and tag.
    pub functions: Vec<(u64, u32, [u8; 8])>,
    /// The kernel's `struct bpf_prog_info` as perf keeps it (`struct perf_bpil`):
    /// [`info::LEN`] bytes whose array fields hold offsets into [`data`](Self::data), not
    /// pointers.
    pub info: Vec<u8>,
    /// The bitmap of the arrays in `data` (bit `i`: `info::ARRAYS[i]`).
    pub arrays: u64,
    /// The arrays perf keeps ([`info::PERF_ARRAYS`]: JIT code, function addresses,
    /// lengths and tags, BTF function info, line info), in `info::ARRAYS` order, each
    /// padded to 8 bytes.
    pub data: Vec<u8>,
}

const BPF_PROG_GET_NEXT_ID: i32 = 11;
const BPF_PROG_GET_FD_BY_ID: i32 = 13;
const BPF_OBJ_GET_INFO_BY_FD: i32 = 15;
const BPF_BTF_GET_FD_BY_ID: i32 = 19;

/// Offsets in `struct bpf_prog_info` (the kernel ABI, in perfkit-sys).
use perfkit_sys::bpf_prog_info as info;

/// A `union bpf_attr`: 128 bytes cover every command used here (the kernel reads the
/// size it is given and zero past it).
#[repr(C, align(8))]
struct Attr([u8; 128]);

impl Attr {
    fn new() -> Attr {
        Attr([0; 128])
    }

    fn put(&mut self, at: usize, v: &[u8]) -> &mut Attr {
        self.0[at..at + v.len()].copy_from_slice(v);
        self
    }
}

/// `bpf(cmd, attr)`: its result (a descriptor for the `GET_FD` commands).
fn bpf(cmd: i32, attr: &mut Attr) -> io::Result<i64> {
    // SAFETY: attr is 128 bytes, readable and writable, alive across the call (the kernel
    // writes `next_id` back into it); the pointers inside it (info buffers) are the
    // caller's and outlive the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.0.as_mut_ptr(), 128usize) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// `BPF_OBJ_GET_INFO_BY_FD` into `info` (of [`info::LEN`] bytes).
fn get_info(fd: &OwnedFd, info: &mut [u8; info::LEN]) -> io::Result<()> {
    get_info_raw(fd, info)
}

/// `BPF_OBJ_GET_INFO_BY_FD` into `buf` (the kernel fills at most its length, and reads
/// the pointers and counts it holds).
fn get_info_raw(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let mut attr = Attr::new();
    attr.put(0, &(fd.as_raw_fd() as u32).to_ne_bytes())
        .put(4, &(buf.len() as u32).to_ne_bytes())
        .put(8, &(buf.as_mut_ptr() as u64).to_ne_bytes());
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).map(drop)
}

/// The program of id `id` as perf reads it (`get_bpf_prog_info_linear` with the arrays
/// perf asks for), or `None` if it is not loaded (any more).
pub fn bpf_program(id: u32) -> io::Result<Option<BpfProgram>> {
    let fd = match bpf(BPF_PROG_GET_FD_BY_ID, Attr::new().put(0, &id.to_ne_bytes())) {
        Ok(fd) => {
            // SAFETY: the kernel just gave us this new descriptor, owned by no one else.
            unsafe { OwnedFd::from_raw_fd(fd as i32) }
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    // First pass: the counts and record sizes of the arrays.
    let mut first = [0u8; info::LEN];
    get_info(&fd, &mut first)?;
    let count = |b: &[u8], i: usize| -> (u32, u32) {
        let (_, n, size) = info::ARRAYS[i];
        let size = match size {
            info::RecSize::Fixed(s) => s,
            info::RecSize::At(at) => u32_at(b, at),
        };
        (u32_at(b, n), size)
    };
    let mut offsets = [0usize; info::ARRAYS.len()];
    let mut len = 0usize;
    for (i, o) in offsets.iter_mut().enumerate() {
        if info::PERF_ARRAYS & (1 << i) != 0 {
            *o = len;
            let (n, size) = count(&first, i);
            len += (n as usize * size as usize).next_multiple_of(8);
        }
    }
    // Second pass: the same counts, with room for the arrays (u64s: 8-byte aligned).
    let mut data = vec![0u64; len / 8];
    let base = data.as_mut_ptr() as u64;
    let mut second = [0u8; info::LEN];
    for (i, &(ptr, n, size)) in info::ARRAYS.iter().enumerate() {
        if info::PERF_ARRAYS & (1 << i) == 0 {
            continue;
        }
        let (count, rec) = count(&first, i);
        second[n..n + 4].copy_from_slice(&count.to_ne_bytes());
        if let info::RecSize::At(at) = size {
            second[at..at + 4].copy_from_slice(&rec.to_ne_bytes());
        }
        second[ptr..ptr + 8].copy_from_slice(&(base + offsets[i] as u64).to_ne_bytes());
    }
    get_info(&fd, &mut second)?;
    let data: Vec<u8> = data.iter().flat_map(|w| w.to_ne_bytes()).collect();
    // The kernel keeps the pointers it was given; perf keeps offsets into the data.
    for (i, &(ptr, ..)) in info::ARRAYS.iter().enumerate() {
        if info::PERF_ARRAYS & (1 << i) != 0 {
            second[ptr..ptr + 8].copy_from_slice(&(offsets[i] as u64).to_ne_bytes());
        }
    }
    let array = |i: usize| -> &[u8] {
        let (n, size) = count(&second, i);
        let at = offsets[i];
        data.get(at..at + n as usize * size as usize).unwrap_or(&[])
    };
    let (ksyms, lens, tags) = (array(3), array(4), array(8));
    let name = &second[info::NAME..info::NAME + 16];
    let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(16)];
    let tag: [u8; 8] = second[info::TAG..info::TAG + 8]
        .try_into()
        .expect("8 bytes");
    let functions = ksyms
        .chunks_exact(8)
        .enumerate()
        .map(|(i, a)| {
            let lenb = lens.get(i * 4..i * 4 + 4);
            let t = tags.get(i * 8..i * 8 + 8);
            (
                u64::from_ne_bytes(a.try_into().expect("8 bytes")),
                lenb.map_or(0, |l| u32_at(l, 0)),
                t.map_or(tag, |t| t.try_into().expect("8 bytes")),
            )
        })
        .collect();
    Ok(Some(BpfProgram {
        id: u32_at(&second, info::ID),
        tag,
        name: String::from_utf8_lossy(name).into_owned(),
        btf_id: u32_at(&second, info::BTF_ID),
        functions,
        info: second.to_vec(),
        arrays: info::PERF_ARRAYS,
        data,
    }))
}

/// The raw BTF of id `id` (what `btf__get_raw_data` gives perf for its
/// `HEADER_BPF_BTF` section), or `None` if it is gone.
pub fn bpf_btf(id: u32) -> io::Result<Option<Vec<u8>>> {
    let fd = match bpf(BPF_BTF_GET_FD_BY_ID, Attr::new().put(0, &id.to_ne_bytes())) {
        Ok(fd) => {
            // SAFETY: the kernel just gave us this new descriptor, owned by no one else.
            unsafe { OwnedFd::from_raw_fd(fd as i32) }
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    // `struct bpf_btf_info`: btf (u64 pointer), btf_size (u32), id (u32), name (u64),
    // name_len (u32), kernel_btf (u32). First its size, then its bytes.
    let mut btf_info = [0u8; 32];
    get_info_raw(&fd, &mut btf_info)?;
    let size = u32_at(&btf_info, 8) as usize;
    let mut blob = vec![0u8; size];
    let mut btf_info = [0u8; 32];
    btf_info[..8].copy_from_slice(&(blob.as_mut_ptr() as u64).to_ne_bytes());
    btf_info[8..12].copy_from_slice(&(size as u32).to_ne_bytes());
    get_info_raw(&fd, &mut btf_info)?;
    blob.truncate(u32_at(&btf_info, 8) as usize);
    Ok(Some(blob))
}

/// Every loaded BPF program, in id order. An error when the kernel refuses to list them
/// (`EPERM` without privileges, `ENOSYS` without BPF).
pub fn bpf_programs() -> io::Result<Vec<BpfProgram>> {
    let mut out = Vec::new();
    let mut id = 0u32;
    loop {
        // `start_id` at offset 0; the kernel writes `next_id` at offset 4.
        let mut attr = Attr::new();
        attr.put(0, &id.to_ne_bytes());
        match bpf(BPF_PROG_GET_NEXT_ID, &mut attr) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(out),
            Err(e) => return Err(e),
        }
        id = u32_at(&attr.0, 4);
        if let Some(p) = bpf_program(id)? {
            out.push(p);
        }
    }
}
