//! perf's `HEADER_BPF_PROG_INFO` feature section: the BPF programs loaded while the
//! recording ran, as `struct bpf_prog_info` with its arrays (perf's `perf_bpil`, written by
//! `write_bpf_prog_info`), read for `report --header` (`# bpf_prog_info ID: NAME addr ...`).
//!
//! The section is a u32 count, then per program: u32 `info_len`, u32 `data_len`, u64 the
//! bitmap of arrays included, `info_len` bytes of the kernel's `struct bpf_prog_info`
//! (its array fields hold offsets into the data that follows, not pointers), and
//! `data_len` bytes of arrays. Fields are read at their offsets in
//! `include/uapi/linux/bpf.h`; a shorter `info` reads as zeros past its end, as perf pads it.

use crate::features::Cursor;
use perfkit_records::Endian;

/// Offsets in `struct bpf_prog_info` (the kernel ABI, in perfkit-sys).
use perfkit_sys::bpf_prog_info as at;

/// The bits of the arrays bitmap (perf's `PERF_BPIL_*`) for the arrays written here.
mod array {
    pub const JITED_KSYMS: u64 = 1 << 3;
    pub const JITED_FUNC_LENS: u64 = 1 << 4;
    pub const PROG_TAGS: u64 = 1 << 8;
}

/// One program of the section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfProgInfo {
    /// The program's id.
    pub id: u32,
    /// Its tag.
    pub tag: [u8; 8],
    /// The name it was loaded with, empty if none.
    pub name: String,
    /// Its BTF id (0: none).
    pub btf_id: u32,
    /// Each JIT-compiled function: address, length and tag; empty where the counts of the
    /// three arrays disagree (perf then prints nothing for the program).
    pub functions: Vec<(u64, u32, [u8; 8])>,
}

impl BpfProgInfo {
    /// The name perf prints for function `i` without the program's BTF
    /// (`synthesize_bpf_prog_name`): `bpf_prog_TAG_NAME` for a program of one function,
    /// `bpf_prog_TAG_F` for each function of one with subprograms, `bpf_prog_TAG` for an
    /// unnamed one.
    pub fn function_name(&self, i: usize) -> String {
        let mut s = String::from("bpf_prog_");
        for b in self.functions.get(i).map_or(self.tag, |f| f.2) {
            s.push_str(&format!("{b:02x}"));
        }
        if self.functions.len() == 1 && i == 0 {
            if !self.name.is_empty() {
                s.push('_');
                s.push_str(&self.name);
            }
        } else {
            s.push_str("_F");
        }
        s
    }
}

/// The programs of a `HEADER_BPF_PROG_INFO` section in perf's order (by id); `None` when
/// the section is malformed.
pub fn parse(section: &[u8], endian: Endian) -> Option<Vec<BpfProgInfo>> {
    let mut c = Cursor::new(section, endian);
    let n = c.u32()? as usize;
    let mut out = Vec::with_capacity(n.min(section.len() / 16));
    for _ in 0..n {
        let info_len = c.u32()? as usize;
        let data_len = c.u32()? as usize;
        let _arrays = c.u64()?;
        let info = c.bytes(info_len)?;
        let data = c.bytes(data_len)?;
        let mut full = [0u8; at::LEN];
        let k = info.len().min(at::LEN);
        full[..k].copy_from_slice(&info[..k]);
        let u32_at =
            |b: &[u8], o: usize| -> Option<u32> { Cursor::new(b.get(o..o + 4)?, endian).u32() };
        let u64_at =
            |b: &[u8], o: usize| -> Option<u64> { Cursor::new(b.get(o..o + 8)?, endian).u64() };
        let id = u32_at(&full, at::ID)?;
        let tag: [u8; 8] = full[at::TAG..at::TAG + 8].try_into().ok()?;
        let name = &full[at::NAME..at::NAME + 16];
        let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(16)];
        let nr = u32_at(&full, at::NR_JITED_KSYMS)? as usize;
        let mut functions = Vec::new();
        if nr == u32_at(&full, at::NR_JITED_FUNC_LENS)? as usize
            && nr == u32_at(&full, at::NR_PROG_TAGS)? as usize
        {
            let (ksyms, lens, tags) = (
                u64_at(&full, at::JITED_KSYMS)? as usize,
                u64_at(&full, at::JITED_FUNC_LENS)? as usize,
                u64_at(&full, at::PROG_TAGS)? as usize,
            );
            for i in 0..nr {
                let addr = u64_at(data, ksyms.checked_add(i * 8)?)?;
                let len = u32_at(data, lens.checked_add(i * 4)?)?;
                let t = tags.checked_add(i * 8)?;
                let tag: [u8; 8] = data.get(t..t + 8)?.try_into().ok()?;
                functions.push((addr, len, tag));
            }
        }
        out.push(BpfProgInfo {
            id,
            tag,
            name: String::from_utf8_lossy(name).into_owned(),
            btf_id: u32_at(&full, at::BTF_ID)?,
            functions,
        });
    }
    out.sort_by_key(|p| p.id);
    Some(out)
}

/// The `HEADER_BPF_PROG_INFO` section of `progs`, in this machine's byte order, as perf
/// writes it (`write_bpf_prog_info`): per program `info_len` bytes of `struct
/// bpf_prog_info` (perf reads a shorter one as zero-padded) holding its id, tag, name,
/// BTF id and the counts and offsets of three arrays (the JIT-compiled functions'
/// addresses, lengths and tags), each array padded to 8 bytes as perf lays them out. The
/// program's instructions and line info, which perf also keeps, are not written.
pub fn write(progs: &[BpfProgInfo]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(progs.len() as u32).to_ne_bytes());
    for p in progs {
        let n = p.functions.len();
        let mut info = [0u8; at::LEN];
        let mut put = |o: usize, v: &[u8]| info[o..o + v.len()].copy_from_slice(v);
        put(at::ID, &p.id.to_ne_bytes());
        put(at::TAG, &p.tag);
        let name = p.name.as_bytes();
        put(at::NAME, &name[..name.len().min(at::NAME_LEN - 1)]);
        put(at::BTF_ID, &p.btf_id.to_ne_bytes());
        let lens_at = n * 8;
        let tags_at = lens_at + (n * 4).next_multiple_of(8);
        for (count, offset, data_at) in [
            (at::NR_JITED_KSYMS, at::JITED_KSYMS, 0),
            (at::NR_JITED_FUNC_LENS, at::JITED_FUNC_LENS, lens_at),
            (at::NR_PROG_TAGS, at::PROG_TAGS, tags_at),
        ] {
            put(count, &(n as u32).to_ne_bytes());
            put(offset, &(data_at as u64).to_ne_bytes());
        }
        let mut data = vec![0u8; tags_at + n * 8];
        for (i, (addr, len, tag)) in p.functions.iter().enumerate() {
            data[i * 8..i * 8 + 8].copy_from_slice(&addr.to_ne_bytes());
            data[lens_at + i * 4..lens_at + i * 4 + 4].copy_from_slice(&len.to_ne_bytes());
            data[tags_at + i * 8..tags_at + i * 8 + 8].copy_from_slice(tag);
        }
        out.extend_from_slice(&(at::LEN as u32).to_ne_bytes());
        out.extend_from_slice(&(data.len() as u32).to_ne_bytes());
        let arrays = array::JITED_KSYMS | array::JITED_FUNC_LENS | array::PROG_TAGS;
        out.extend_from_slice(&arrays.to_ne_bytes());
        out.extend_from_slice(&info);
        out.extend_from_slice(&data);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One program as perf writes it: `info_len` bytes of info, then its arrays (addresses,
    /// lengths, tags of `n` functions) at the offsets the info names.
    fn program(id: u32, name: &str, funcs: &[(u64, u32, u8)], counts: [u32; 3]) -> Vec<u8> {
        let mut info = vec![0u8; at::LEN];
        info[at::ID..at::ID + 4].copy_from_slice(&id.to_le_bytes());
        info[at::TAG..at::TAG + 8].copy_from_slice(&[0xab; 8]);
        info[at::NAME..at::NAME + name.len()].copy_from_slice(name.as_bytes());
        let n = funcs.len();
        let mut data = Vec::new();
        for f in funcs {
            data.extend_from_slice(&f.0.to_le_bytes());
        }
        let lens = data.len();
        for f in funcs {
            data.extend_from_slice(&f.1.to_le_bytes());
        }
        let tags = data.len();
        for f in funcs {
            data.extend_from_slice(&[f.2; 8]);
        }
        for (o, v) in [
            (at::NR_JITED_KSYMS, counts[0]),
            (at::NR_JITED_FUNC_LENS, counts[1]),
            (at::NR_PROG_TAGS, counts[2]),
        ] {
            info[o..o + 4].copy_from_slice(&v.to_le_bytes());
        }
        for (o, v) in [
            (at::JITED_KSYMS, 0),
            (at::JITED_FUNC_LENS, lens),
            (at::PROG_TAGS, tags),
        ] {
            info[o..o + 8].copy_from_slice(&(v as u64).to_le_bytes());
        }
        assert_eq!(n * 20, data.len());
        let mut out = Vec::new();
        out.extend_from_slice(&(at::LEN as u32).to_le_bytes());
        out.extend_from_slice(&(data.len() as u32).to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&info);
        out.extend_from_slice(&data);
        out
    }

    #[test]
    fn programs_and_their_functions_in_id_order() {
        let mut section = 3u32.to_le_bytes().to_vec();
        section.extend(program(
            9,
            "two",
            &[(0xc000, 40, 1), (0xc100, 8, 2)],
            [2, 2, 2],
        ));
        section.extend(program(4, "spin", &[(0xd000, 35, 0xab)], [1, 1, 1]));
        // Counts that disagree: perf prints nothing for it.
        section.extend(program(5, "odd", &[(0xe000, 1, 3)], [1, 1, 0]));
        let p = parse(&section, Endian::Little).unwrap();
        assert_eq!(p.iter().map(|p| p.id).collect::<Vec<_>>(), [4, 5, 9]);
        assert_eq!(p[0].functions, [(0xd000, 35, [0xab; 8])]);
        assert_eq!(p[0].function_name(0), "bpf_prog_abababababababab_spin");
        assert!(p[1].functions.is_empty());
        assert_eq!(p[2].functions, [(0xc000, 40, [1; 8]), (0xc100, 8, [2; 8])]);
        assert_eq!(p[2].function_name(1), "bpf_prog_0202020202020202_F");
        // Truncated: an error, not a panic.
        assert!(parse(&section[..section.len() - 1], Endian::Little).is_none());
    }

    #[test]
    fn what_is_written_reads_back() {
        let progs = vec![
            BpfProgInfo {
                id: 3,
                tag: [0xf7, 0x90, 0x4b, 0x1e, 0x51, 0x16, 0x6c, 0x13],
                name: "perfkit_spin".into(),
                btf_id: 0,
                functions: vec![(0xffff_ffff_c002_204c, 35, [0xf7; 8])],
            },
            // Three functions: an odd count of 4-byte lengths, padded to 8 bytes.
            BpfProgInfo {
                id: 12,
                tag: [1; 8],
                name: "with_subprogs".into(),
                btf_id: 40,
                functions: vec![
                    (0xffff_ffff_c010_0000, 120, [1; 8]),
                    (0xffff_ffff_c010_0100, 16, [2; 8]),
                    (0xffff_ffff_c010_0200, 8, [3; 8]),
                ],
            },
            // Neither a name nor JIT-compiled functions.
            BpfProgInfo {
                id: 7,
                tag: [9; 8],
                name: String::new(),
                btf_id: 0,
                functions: Vec::new(),
            },
        ];
        let section = write(&progs);
        let endian = if cfg!(target_endian = "little") {
            Endian::Little
        } else {
            Endian::Big
        };
        let mut want = progs.clone();
        want.sort_by_key(|p| p.id);
        assert_eq!(parse(&section, endian).unwrap(), want);
        // The second program's layout, as perf lays it out: 3 addresses (24 bytes), 3
        // lengths (12, padded to 16), 3 tags (24), after a 16-byte head and the info.
        let first = 4 + 16 + at::LEN + 8 + 8 + 8;
        let data_len = u32::from_ne_bytes(section[first + 4..first + 8].try_into().unwrap());
        assert_eq!(data_len, 24 + 16 + 24);
        let arrays = u64::from_ne_bytes(section[first + 8..first + 16].try_into().unwrap());
        assert_eq!(arrays, (1 << 3) | (1 << 4) | (1 << 8));
        assert_eq!(section.len(), first + 16 + at::LEN + 64 + 16 + at::LEN);
    }

    #[test]
    fn names_as_perf_gives_them_without_btf() {
        let tag = [0xf7, 0x90, 0x4b, 0x1e, 0x51, 0x16, 0x6c, 0x13];
        let mut p = BpfProgInfo {
            id: 7,
            tag,
            name: "perfkit_spin".into(),
            btf_id: 0,
            functions: vec![(0xffff_ffff_c002_204c, 35, tag)],
        };
        assert_eq!(p.function_name(0), "bpf_prog_f7904b1e51166c13_perfkit_spin");
        p.name.clear();
        assert_eq!(p.function_name(0), "bpf_prog_f7904b1e51166c13");
        // With subprograms, each function by its own tag and `_F`.
        p.name = "main".into();
        p.functions
            .push((0xffff_ffff_c002_2100, 16, [1, 2, 3, 4, 5, 6, 7, 8]));
        assert_eq!(p.function_name(0), "bpf_prog_f7904b1e51166c13_F");
        assert_eq!(p.function_name(1), "bpf_prog_0102030405060708_F");
    }
}
