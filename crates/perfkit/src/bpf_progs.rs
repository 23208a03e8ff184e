//! The BPF programs loaded in the kernel, as `perf record` lists them at its start
//! (`perf_event__synthesize_bpf_events`): each program's id, tag, name and the address and
//! length of each of its JIT-compiled functions, which a recording describes with
//! `PERF_RECORD_KSYMBOL` and `PERF_RECORD_BPF_EVENT` records so that samples in programs
//! loaded before it started can be named.
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
}

const BPF_PROG_GET_NEXT_ID: i32 = 11;
const BPF_PROG_GET_FD_BY_ID: i32 = 13;
const BPF_OBJ_GET_INFO_BY_FD: i32 = 15;

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
    use std::os::fd::AsRawFd;
    let mut attr = Attr::new();
    attr.put(0, &(fd.as_raw_fd() as u32).to_ne_bytes())
        .put(4, &(info::LEN as u32).to_ne_bytes())
        .put(8, &(info.as_mut_ptr() as u64).to_ne_bytes());
    bpf(BPF_OBJ_GET_INFO_BY_FD, &mut attr).map(drop)
}

/// The program of id `id`, or `None` if it went away meanwhile.
fn program(id: u32) -> io::Result<Option<BpfProgram>> {
    let fd = match bpf(BPF_PROG_GET_FD_BY_ID, Attr::new().put(0, &id.to_ne_bytes())) {
        Ok(fd) => {
            // SAFETY: the kernel just gave us this new descriptor, owned by no one else.
            unsafe { OwnedFd::from_raw_fd(fd as i32) }
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut info = [0u8; info::LEN];
    get_info(&fd, &mut info)?;
    let n = u32_at(&info, info::NR_JITED_KSYMS) as usize;
    let nlens = u32_at(&info, info::NR_JITED_FUNC_LENS) as usize;
    let ntags = u32_at(&info, info::NR_PROG_TAGS) as usize;
    let mut ksyms = vec![0u64; n];
    let mut lens = vec![0u32; nlens];
    let mut tags = vec![[0u8; 8]; ntags];
    // Second pass: the same counts, with buffers for the arrays.
    let mut info2 = [0u8; info::LEN];
    let mut put = |at: usize, v: &[u8]| info2[at..at + v.len()].copy_from_slice(v);
    put(info::NR_JITED_KSYMS, &(n as u32).to_ne_bytes());
    put(info::NR_JITED_FUNC_LENS, &(nlens as u32).to_ne_bytes());
    put(
        info::JITED_KSYMS,
        &(ksyms.as_mut_ptr() as u64).to_ne_bytes(),
    );
    put(
        info::JITED_FUNC_LENS,
        &(lens.as_mut_ptr() as u64).to_ne_bytes(),
    );
    put(info::NR_PROG_TAGS, &(ntags as u32).to_ne_bytes());
    put(info::PROG_TAGS, &(tags.as_mut_ptr() as u64).to_ne_bytes());
    get_info(&fd, &mut info2)?;
    let name = &info2[info::NAME..info::NAME + 16];
    let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(16)];
    let tag: [u8; 8] = info2[info::TAG..info::TAG + 8].try_into().expect("8 bytes");
    let functions = ksyms
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            (
                a,
                lens.get(i).copied().unwrap_or(0),
                tags.get(i).copied().unwrap_or(tag),
            )
        })
        .collect();
    Ok(Some(BpfProgram {
        id: u32_at(&info2, info::ID),
        tag,
        name: String::from_utf8_lossy(name).into_owned(),
        btf_id: u32_at(&info2, info::BTF_ID),
        functions,
    }))
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
        if let Some(p) = program(id)? {
            out.push(p);
        }
    }
}
