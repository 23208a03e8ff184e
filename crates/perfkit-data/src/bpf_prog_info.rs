//! perf's `HEADER_BPF_PROG_INFO` feature section: the BPF programs loaded while the
//! recording ran, as `struct bpf_prog_info` with its arrays (perf's `perf_bpil`, written by
//! `write_bpf_prog_info`), read for `report --header` (`# bpf_prog_info ID: NAME addr ...`).
//!
//! The section is a u32 count, then per program: u32 `info_len`, u32 `data_len`, u64 the
//! bitmap of arrays included, `info_len` bytes of the kernel's `struct bpf_prog_info`
//! (its array fields hold offsets into the data that follows, not pointers), and
//! `data_len` bytes of arrays. Fields are read at their offsets in
//! `include/uapi/linux/bpf.h`; a shorter `info` reads as zeros past its end, as perf pads it.
//!
//! Besides the functions' addresses, lengths and tags, perf keeps the JIT-compiled code, the
//! BTF function info (which names each function from the program's BTF, in
//! `HEADER_BPF_BTF`: [`crate::bpf_btf`]) and the line info; a program is kept here in that
//! same form ([`BpfProgInfo::info`], [`arrays`](BpfProgInfo::arrays),
//! [`data`](BpfProgInfo::data)) and written back as it was read.

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
    /// perf's form of the program (`struct perf_bpil`): the kernel's `struct
    /// bpf_prog_info`, its array fields holding offsets into [`data`](Self::data). Empty
    /// for a program described by the fields above only: [`write`] then lays out its
    /// functions' three arrays.
    pub info: Vec<u8>,
    /// The bitmap of the arrays in `data` (bit `i`: `perfkit_sys::bpf_prog_info::ARRAYS[i]`).
    pub arrays: u64,
    /// The arrays.
    pub data: Vec<u8>,
    /// The byte order of `info` and `data`.
    pub endian: Endian,
}

/// One `struct bpf_line_info`: where a source line starts in the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineInfo {
    /// The first BPF instruction of the line.
    pub insn_off: u32,
    /// The file name's offset in the BTF's strings.
    pub file_name_off: u32,
    /// The source line's text's offset in the BTF's strings.
    pub line_off: u32,
    /// `line << 10 | column`.
    pub line_col: u32,
}

impl BpfProgInfo {
    /// A program known by its id, tag, name, BTF id and functions only (its arrays are
    /// made by [`write`]).
    pub fn new(
        id: u32,
        tag: [u8; 8],
        name: String,
        btf_id: u32,
        functions: Vec<(u64, u32, [u8; 8])>,
    ) -> BpfProgInfo {
        BpfProgInfo {
            id,
            tag,
            name,
            btf_id,
            functions,
            info: Vec::new(),
            arrays: 0,
            data: Vec::new(),
            endian: Endian::NATIVE,
        }
    }

    /// A program in perf's form (`info`, `arrays`, `data`: see the fields), as the kernel
    /// gives it or a file holds it; `None` when its arrays are not in `data`.
    pub fn from_parts(
        info: Vec<u8>,
        arrays: u64,
        data: Vec<u8>,
        endian: Endian,
    ) -> Option<BpfProgInfo> {
        let mut full = [0u8; at::LEN];
        let k = info.len().min(at::LEN);
        full[..k].copy_from_slice(&info[..k]);
        let mut p = BpfProgInfo {
            id: u32_at(&full, at::ID, endian)?,
            tag: full[at::TAG..at::TAG + 8].try_into().ok()?,
            name: {
                let name = &full[at::NAME..at::NAME + at::NAME_LEN];
                let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(at::NAME_LEN)];
                String::from_utf8_lossy(name).into_owned()
            },
            btf_id: u32_at(&full, at::BTF_ID, endian)?,
            functions: Vec::new(),
            info,
            arrays,
            data,
            endian,
        };
        let nr = u32_at(&full, at::NR_JITED_KSYMS, endian)? as usize;
        if nr > 0
            && nr == u32_at(&full, at::NR_JITED_FUNC_LENS, endian)? as usize
            && nr == u32_at(&full, at::NR_PROG_TAGS, endian)? as usize
        {
            let (ksyms, lens, tags) = (p.array(3)?, p.array(4)?, p.array(8)?);
            let mut functions = Vec::with_capacity(nr);
            for i in 0..nr {
                functions.push((
                    u64_at(ksyms, i * 8, endian)?,
                    u32_at(lens, i * 4, endian)?,
                    tags.get(i * 8..i * 8 + 8)?.try_into().ok()?,
                ));
            }
            p.functions = functions;
        }
        Some(p)
    }

    /// A field of `info` (zero past its end, as perf pads a shorter one).
    fn field_u32(&self, o: usize) -> u32 {
        u32_at(&self.info, o, self.endian).unwrap_or(0)
    }

    /// Array `bit` of `data` (its bytes: count × record size), `None` when the file does
    /// not have it or it runs past the data; empty when it has no records.
    fn array(&self, bit: usize) -> Option<&[u8]> {
        if self.arrays & (1 << bit) == 0 {
            return None;
        }
        let (ptr, count, size) = at::ARRAYS[bit];
        let size = match size {
            at::RecSize::Fixed(n) => n,
            at::RecSize::At(o) => self.field_u32(o),
        } as usize;
        let n = self.field_u32(count) as usize;
        let off = u64_at(&self.info, ptr, self.endian).unwrap_or(0) as usize;
        self.data.get(off..off.checked_add(n.checked_mul(size)?)?)
    }

    /// The JIT-compiled code of every function, one after another (`jited_prog_insns`),
    /// empty when not kept.
    pub fn jited_insns(&self) -> &[u8] {
        self.array(0).unwrap_or(&[])
    }

    /// The BTF type id of each function (`func_info`), in function order; empty without.
    pub fn func_type_ids(&self) -> Vec<u32> {
        let rec = self.field_u32(at::FUNC_INFO_REC_SIZE) as usize;
        match self.array(5) {
            Some(a) if rec >= 8 => a
                .chunks_exact(rec)
                .filter_map(|r| u32_at(r, 4, self.endian))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The line info (`line_info`) with the JIT code address of each record
    /// (`jited_line_info`), where both are kept with as many records.
    pub fn lines(&self) -> Vec<(LineInfo, u64)> {
        let (rec, jrec) = (
            self.field_u32(at::LINE_INFO_REC_SIZE) as usize,
            self.field_u32(at::JITED_LINE_INFO_REC_SIZE) as usize,
        );
        let (Some(lines), Some(addrs)) = (self.array(6), self.array(7)) else {
            return Vec::new();
        };
        if rec < 16 || jrec < 8 {
            return Vec::new();
        }
        let e = self.endian;
        lines
            .chunks_exact(rec)
            .zip(addrs.chunks_exact(jrec))
            .filter_map(|(l, a)| {
                Some((
                    LineInfo {
                        insn_off: u32_at(l, 0, e)?,
                        file_name_off: u32_at(l, 4, e)?,
                        line_off: u32_at(l, 8, e)?,
                        line_col: u32_at(l, 12, e)?,
                    },
                    u64_at(a, 0, e)?,
                ))
            })
            .collect()
    }

    /// The name perf gives function `i` (`synthesize_bpf_prog_name`): with the program's
    /// BTF (`btf`, from the file's `HEADER_BPF_BTF`) and its function info,
    /// `bpf_prog_TAG_FUNC` after the function's BTF name; else as
    /// [`function_name`](Self::function_name).
    pub fn function_name_with(&self, i: usize, btf: Option<&[u8]>) -> String {
        let named = btf
            .zip(self.func_type_ids().get(i))
            .and_then(|(b, &t)| crate::bpf_btf::type_name(b, t));
        match named {
            Some(n) => {
                let mut s = self.function_name_prefix(i);
                s.push('_');
                s.push_str(&n);
                s
            }
            None => self.function_name(i),
        }
    }

    /// `bpf_prog_TAG` of function `i`.
    fn function_name_prefix(&self, i: usize) -> String {
        let mut s = String::from("bpf_prog_");
        for b in self.functions.get(i).map_or(self.tag, |f| f.2) {
            s.push_str(&format!("{b:02x}"));
        }
        s
    }

    /// The name perf prints for function `i` without the program's BTF
    /// (`synthesize_bpf_prog_name`): `bpf_prog_TAG_NAME` for a program of one function,
    /// `bpf_prog_TAG_F` for each function of one with subprograms, `bpf_prog_TAG` for an
    /// unnamed one.
    pub fn function_name(&self, i: usize) -> String {
        let mut s = self.function_name_prefix(i);
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
        let arrays = c.u64()?;
        let info = c.bytes(info_len)?.to_vec();
        let data = c.bytes(data_len)?.to_vec();
        out.push(BpfProgInfo::from_parts(info, arrays, data, endian)?);
    }
    out.sort_by_key(|p| p.id);
    Some(out)
}

fn u32_at(b: &[u8], o: usize, endian: Endian) -> Option<u32> {
    Cursor::new(b.get(o..o.checked_add(4)?)?, endian).u32()
}

fn u64_at(b: &[u8], o: usize, endian: Endian) -> Option<u64> {
    Cursor::new(b.get(o..o.checked_add(8)?)?, endian).u64()
}

/// The `HEADER_BPF_PROG_INFO` section of `progs`, in this machine's byte order, as perf
/// writes it (`write_bpf_prog_info`), in id order. A program in perf's form (read from
/// the kernel: its code, function and line info included) is written as it is; one known
/// by its fields only gets `info_len` bytes of `struct bpf_prog_info` holding its id,
/// tag, name, BTF id and the counts and offsets of three arrays (the JIT-compiled
/// functions' addresses, lengths and tags), each array padded to 8 bytes as perf lays
/// them out.
pub fn write(progs: &[BpfProgInfo]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(progs.len() as u32).to_ne_bytes());
    let mut sorted: Vec<&BpfProgInfo> = progs.iter().collect();
    sorted.sort_by_key(|p| p.id);
    for p in sorted {
        if !p.info.is_empty() && p.endian == Endian::NATIVE {
            out.extend_from_slice(&(p.info.len() as u32).to_ne_bytes());
            out.extend_from_slice(&(p.data.len() as u32).to_ne_bytes());
            out.extend_from_slice(&p.arrays.to_ne_bytes());
            out.extend_from_slice(&p.info);
            out.extend_from_slice(&p.data);
            continue;
        }
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
        // The bitmap: addresses, lengths, tags.
        out.extend_from_slice(&((1u64 << 3) | (1 << 4) | (1 << 8)).to_le_bytes());
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

    /// The fields perf prints of each program.
    type Shown = (u32, [u8; 8], String, u32, Vec<(u64, u32, [u8; 8])>);

    fn shown(progs: &[BpfProgInfo]) -> Vec<Shown> {
        progs
            .iter()
            .map(|p| (p.id, p.tag, p.name.clone(), p.btf_id, p.functions.clone()))
            .collect()
    }

    #[test]
    fn what_is_written_reads_back() {
        let progs = vec![
            BpfProgInfo::new(
                3,
                [0xf7, 0x90, 0x4b, 0x1e, 0x51, 0x16, 0x6c, 0x13],
                "perfkit_spin".into(),
                0,
                vec![(0xffff_ffff_c002_204c, 35, [0xf7; 8])],
            ),
            // Three functions: an odd count of 4-byte lengths, padded to 8 bytes.
            BpfProgInfo::new(
                12,
                [1; 8],
                "with_subprogs".into(),
                40,
                vec![
                    (0xffff_ffff_c010_0000, 120, [1; 8]),
                    (0xffff_ffff_c010_0100, 16, [2; 8]),
                    (0xffff_ffff_c010_0200, 8, [3; 8]),
                ],
            ),
            // Neither a name nor JIT-compiled functions.
            BpfProgInfo::new(7, [9; 8], String::new(), 0, Vec::new()),
        ];
        let section = write(&progs);
        let mut want = progs.clone();
        want.sort_by_key(|p| p.id);
        let got = parse(&section, Endian::NATIVE).unwrap();
        assert_eq!(shown(&got), shown(&want));
        // Written in id order (3, 7, 12). The last program's layout, as perf lays it out:
        // 3 addresses (24 bytes), 3 lengths (12, padded to 16), 3 tags (24), after a
        // 16-byte head and the info.
        let last = 4 + (16 + at::LEN + 8 + 8 + 8) + (16 + at::LEN);
        let data_len = u32::from_ne_bytes(section[last + 4..last + 8].try_into().unwrap());
        assert_eq!(data_len, 24 + 16 + 24);
        let arrays = u64::from_ne_bytes(section[last + 8..last + 16].try_into().unwrap());
        assert_eq!(arrays, (1 << 3) | (1 << 4) | (1 << 8));
        assert_eq!(section.len(), last + 16 + at::LEN + 64);
        // What was read is written back byte for byte.
        assert_eq!(write(&got), section);
    }

    /// A program in perf's form with every array perf keeps: its code, BTF function
    /// info and line info read back.
    #[test]
    fn code_function_and_line_info_read_back() {
        let mut info = vec![0u8; at::LEN];
        let mut put = |o: usize, v: &[u8]| info[o..o + v.len()].copy_from_slice(v);
        put(at::ID, &21u32.to_ne_bytes());
        put(at::TAG, &[5; 8]);
        put(at::BTF_ID, &9u32.to_ne_bytes());
        let code = [0x55u8, 0x48, 0x89, 0xe5, 0xc9, 0xc3]; // push rbp; mov rbp,rsp; leave; ret
        let mut data = Vec::new();
        let mut array = |data: &mut Vec<u8>, bytes: &[u8], ptr: usize, count: usize, n: u32| {
            put(ptr, &(data.len() as u64).to_ne_bytes());
            put(count, &n.to_ne_bytes());
            data.extend_from_slice(bytes);
            data.resize(data.len().next_multiple_of(8), 0);
        };
        array(
            &mut data,
            &code,
            at::JITED_PROG_INSNS,
            at::JITED_PROG_LEN,
            6,
        );
        array(
            &mut data,
            &0xc000u64.to_ne_bytes(),
            at::JITED_KSYMS,
            at::NR_JITED_KSYMS,
            1,
        );
        array(
            &mut data,
            &6u32.to_ne_bytes(),
            at::JITED_FUNC_LENS,
            at::NR_JITED_FUNC_LENS,
            1,
        );
        let finfo: Vec<u8> = [0u32, 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
        array(&mut data, &finfo, at::FUNC_INFO, at::NR_FUNC_INFO, 1);
        let line: Vec<u8> = [0u32, 1, 30, (7 << 10) | 2]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        array(&mut data, &line, at::LINE_INFO, at::NR_LINE_INFO, 1);
        array(
            &mut data,
            &0xc004u64.to_ne_bytes(),
            at::JITED_LINE_INFO,
            at::NR_JITED_LINE_INFO,
            1,
        );
        array(&mut data, &[5; 8], at::PROG_TAGS, at::NR_PROG_TAGS, 1);
        put(at::FUNC_INFO_REC_SIZE, &8u32.to_ne_bytes());
        put(at::LINE_INFO_REC_SIZE, &16u32.to_ne_bytes());
        put(at::JITED_LINE_INFO_REC_SIZE, &8u32.to_ne_bytes());
        let p = BpfProgInfo::from_parts(info, at::PERF_ARRAYS, data, Endian::NATIVE).unwrap();
        let section = write(std::slice::from_ref(&p));
        let back = parse(&section, Endian::NATIVE).unwrap();
        assert_eq!(back, [p]);
        let q = &back[0];
        assert_eq!(q.jited_insns(), code);
        assert_eq!(q.functions, [(0xc000, 6, [5; 8])]);
        assert_eq!(q.func_type_ids(), [4]);
        let lines = q.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(
            (lines[0].0.line_off, lines[0].0.line_col >> 10, lines[0].1),
            (30, 7, 0xc004)
        );
        // A count past the data: no array, not a panic.
        let mut bad = q.clone();
        bad.data.truncate(4);
        assert!(bad.jited_insns().is_empty() && bad.lines().is_empty());
    }

    #[test]
    fn names_as_perf_gives_them_without_btf() {
        let tag = [0xf7, 0x90, 0x4b, 0x1e, 0x51, 0x16, 0x6c, 0x13];
        let mut p = BpfProgInfo::new(
            7,
            tag,
            "perfkit_spin".into(),
            0,
            vec![(0xffff_ffff_c002_204c, 35, tag)],
        );
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
