//! perf's `HEADER_BPF_BTF` feature section: the BTF (BPF Type Format) of the BPF programs
//! of `HEADER_BPF_PROG_INFO`, by BTF id (`write_bpf_btf` / `process_bpf_btf`). perf names
//! a program's functions from it (`bpf_prog_TAG_FUNC`, the function's BTF name found
//! through the program's `func_info`), and `report --header` prints one
//! `# btf info of id N` line per BTF.
//!
//! The section is a u32 count, then per BTF: u32 id, u32 size and that many bytes of raw
//! BTF, with no padding. Raw BTF ([`type_name`]) is a header (magic `0xeB9F` in its own
//! byte order, version, flags, header length, then the offsets and lengths of the type
//! and string sections), the types (ids from 1, each a 12-byte `struct btf_type` and
//! kind-specific data) and NUL-terminated strings.

use crate::features::Cursor;
use perfkit_records::Endian;

/// One BTF of the section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BpfBtf {
    /// Its id (a program's `btf_id`).
    pub id: u32,
    /// The raw BTF.
    pub data: Vec<u8>,
}

/// The BTFs of a `HEADER_BPF_BTF` section in id order (perf keeps them by id); `None`
/// when the section is malformed.
pub fn parse(section: &[u8], endian: Endian) -> Option<Vec<BpfBtf>> {
    let mut c = Cursor::new(section, endian);
    let n = c.u32()? as usize;
    let mut out = Vec::with_capacity(n.min(section.len() / 8));
    for _ in 0..n {
        let id = c.u32()?;
        let size = c.u32()? as usize;
        out.push(BpfBtf {
            id,
            data: c.bytes(size)?.to_vec(),
        });
    }
    out.sort_by_key(|b| b.id);
    out.dedup_by_key(|b| b.id);
    Some(out)
}

/// The `HEADER_BPF_BTF` section of `btfs` in this machine's byte order, in id order, as
/// perf writes it (a count of 0 when there are none).
pub fn write(btfs: &[BpfBtf]) -> Vec<u8> {
    let mut sorted: Vec<&BpfBtf> = btfs.iter().collect();
    sorted.sort_by_key(|b| b.id);
    let mut out = Vec::new();
    out.extend_from_slice(&(sorted.len() as u32).to_ne_bytes());
    for b in sorted {
        out.extend_from_slice(&b.id.to_ne_bytes());
        out.extend_from_slice(&(b.data.len() as u32).to_ne_bytes());
        out.extend_from_slice(&b.data);
    }
    out
}

/// `BTF_MAGIC`.
const MAGIC: u16 = 0xeb9f;

/// The byte order, types and strings of the raw BTF `btf`; `None` for bad magic or
/// sections past its end.
fn sections(btf: &[u8]) -> Option<(Endian, &[u8], &[u8])> {
    let endian = match btf.get(..2)? {
        [0x9f, 0xeb] => Endian::Little,
        [0xeb, 0x9f] => Endian::Big,
        _ => return None,
    };
    debug_assert_eq!(MAGIC.to_le_bytes(), [0x9f, 0xeb]);
    let u32_at = |o: usize| -> Option<usize> {
        Some(Cursor::new(btf.get(o..o + 4)?, endian).u32()? as usize)
    };
    let hdr_len = u32_at(4)?;
    let (type_off, type_len) = (u32_at(8)?, u32_at(12)?);
    let (str_off, str_len) = (u32_at(16)?, u32_at(20)?);
    let types = btf.get(hdr_len + type_off..hdr_len + type_off + type_len)?;
    let strings = btf.get(hdr_len + str_off..hdr_len + str_off + str_len)?;
    Some((endian, types, strings))
}

/// The string at `off` in the raw BTF `btf`'s strings (a line info's file name or source
/// line); `None` past them or in BTF it cannot read.
pub fn string(btf: &[u8], off: u32) -> Option<String> {
    let (_, _, strings) = sections(btf)?;
    let s = strings.get(off as usize..)?;
    let s = &s[..s.iter().position(|&b| b == 0)?];
    Some(String::from_utf8_lossy(s).into_owned())
}

/// The name of type `type_id` in the raw BTF `btf` (a function's, for
/// `func_info`); `None` for a type it does not have, an unnamed one, or BTF it cannot
/// read (bad magic, offsets past its end, an unknown kind before the type).
pub fn type_name(btf: &[u8], type_id: u32) -> Option<String> {
    let (endian, types, strings) = sections(btf)?;
    let t32 = |o: usize| -> Option<u32> { Cursor::new(types.get(o..o + 4)?, endian).u32() };
    let mut at = 0usize;
    for id in 1.. {
        if at >= types.len() {
            return None;
        }
        let (name_off, info) = (t32(at)?, t32(at + 4)?);
        if id == type_id {
            let name = strings.get(name_off as usize..)?;
            let name = &name[..name.iter().position(|&b| b == 0)?];
            return (!name.is_empty()).then(|| String::from_utf8_lossy(name).into_owned());
        }
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        // The kind-specific data after the 12-byte `struct btf_type`.
        let extra = match kind {
            // INT, VAR, DECL_TAG: one u32.
            1 | 14 | 17 => 4,
            // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
            2 | 7..=12 | 16 | 18 => 0,
            // ARRAY: type, index type, count.
            3 => 12,
            // STRUCT, UNION: members of 12 bytes; DATASEC: variables of 12.
            4 | 5 | 15 => vlen * 12,
            // ENUM, FUNC_PROTO: 8 bytes each.
            6 | 13 => vlen * 8,
            // ENUM64.
            19 => vlen * 12,
            _ => return None,
        };
        at += 12 + extra;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw BTF (this machine's byte order) of an `int`, a `struct s { int a; int b; }`, a
    /// `int (*)(int x)` prototype and the functions `main_fn` and `sub_fn` of it.
    pub(crate) fn sample_btf() -> Vec<u8> {
        let strings = b"\0int\0s\0a\0b\0x\0main_fn\0sub_fn\0";
        let off = |name: &[u8]| -> u32 {
            strings.windows(name.len()).position(|w| w == name).unwrap() as u32
        };
        let mut types = Vec::new();
        let mut t = |v: &[u32]| {
            for x in v {
                types.extend_from_slice(&x.to_ne_bytes());
            }
        };
        t(&[off(b"int\0"), 1 << 24, 4, 32]); // 1: INT
        t(&[
            off(b"s\0"),
            (4 << 24) | 2,
            8,
            off(b"a\0"),
            1,
            0,
            off(b"b\0"),
            1,
            32,
        ]); // 2: STRUCT
        t(&[0, (13 << 24) | 1, 1, off(b"x\0"), 1]); // 3: FUNC_PROTO
        t(&[off(b"main_fn\0"), 12 << 24, 3]); // 4: FUNC
        t(&[off(b"sub_fn\0"), 12 << 24, 3]); // 5: FUNC
        let mut b = Vec::new();
        b.extend_from_slice(&MAGIC.to_ne_bytes());
        b.extend_from_slice(&[1, 0]);
        for v in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strings.len() as u32,
        ] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&types);
        b.extend_from_slice(strings);
        b
    }

    #[test]
    fn names_of_types_past_every_kind_of_record() {
        let b = sample_btf();
        assert_eq!(type_name(&b, 1).as_deref(), Some("int"));
        assert_eq!(type_name(&b, 4).as_deref(), Some("main_fn"));
        assert_eq!(type_name(&b, 5).as_deref(), Some("sub_fn"));
        assert_eq!(type_name(&b, 3), None, "a prototype has no name");
        assert_eq!(type_name(&b, 6), None);
        assert_eq!(type_name(&b[..30], 4), None, "cut short");
        assert_eq!(type_name(b"not btf at all, not at all", 1), None);
        assert_eq!(string(&b, 5).as_deref(), Some("s"));
        assert_eq!(string(&b, 0).as_deref(), Some(""));
        assert_eq!(string(&b, 999), None);
    }

    #[test]
    fn section_reads_back_in_id_order() {
        let btfs = vec![
            BpfBtf {
                id: 40,
                data: sample_btf(),
            },
            BpfBtf {
                id: 7,
                data: vec![1, 2, 3],
            },
        ];
        let s = write(&btfs);
        // Count, then id, size and bytes, unpadded.
        assert_eq!(s.len(), 4 + 8 + 3 + 8 + sample_btf().len());
        assert_eq!(&s[4..8], &7u32.to_ne_bytes());
        let back = parse(&s, Endian::NATIVE).unwrap();
        assert_eq!(back.iter().map(|b| b.id).collect::<Vec<_>>(), [7, 40]);
        assert_eq!(back[1].data, sample_btf());
        assert_eq!(write(&[]), 0u32.to_ne_bytes());
        assert!(parse(&s[..s.len() - 1], Endian::NATIVE).is_none());
    }
}
