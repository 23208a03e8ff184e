//! The ELF file `perf inject --jit` writes for one piece of jitted code
//! (`jitted-PID-N.so`): the code as `.text` at [`TEXT_OFFSET`] (file offset and address
//! alike, under one `PT_LOAD` segment), one `STT_FUNC` symbol over it with the JIT's name,
//! and a `.note.gnu.build-id`, so that every symbolizer (perf's, perfkit's, addr2line)
//! names samples in it. The injected MMAP2 maps the code's address to file offset
//! [`TEXT_OFFSET`], as perf's (`GEN_ELF_TEXT_OFFSET`).
//!
//! With the JIT's line table (`JIT_CODE_DEBUG_INFO`) the file also gets a minimal DWARF 4
//! `.debug_line` (one sequence over `.text`) and the `.debug_info`/`.debug_abbrev` of one
//! compilation unit covering it, so source lines (`--sort srcline`, `addr2line`) resolve.
//!
//! With the JIT's unwinding info (`JIT_CODE_UNWINDING_INFO`) the file gets `.eh_frame` at
//! the code's end rounded up to 8 and `.eh_frame_hdr` right after it, file offset and
//! address alike, inside the `PT_LOAD` segment, as perf's genelf places them: the JIT wrote
//! their pointers relative to that layout (pc- and data-relative), so the bytes are copied
//! as they are and DWARF unwinders (perf's, gdb's, readelf) find the code's FDEs.
//!
//! Written here, not with a general ELF writer: the layout is fixed and small (header,
//! one segment, five to eight sections), and perf's readers only need these parts.

/// File offset and address of `.text`: the ELF and program headers rounded up to 16, as
/// perf's `GEN_ELF_TEXT_OFFSET`.
pub const TEXT_OFFSET: u64 = (64 + 56u64).next_multiple_of(16);

/// `e_machine` of this machine's code (when a jitdump says 0).
pub const fn native_machine() -> u16 {
    if cfg!(target_arch = "x86_64") {
        62
    } else if cfg!(target_arch = "aarch64") {
        183
    } else if cfg!(target_arch = "riscv64") {
        243
    } else {
        0
    }
}

/// A 160-bit build id of the function (its name and code): two loads of the same code under
/// the same name share it, any other pair differs (FNV-1a in five lanes).
pub fn build_id(name: &str, code: &[u8]) -> [u8; 20] {
    let mut out = [0u8; 20];
    for (lane, chunk) in out.chunks_mut(4).enumerate() {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (lane as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        for &b in name.as_bytes().iter().chain(&[0u8]).chain(code) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        h ^= h >> 29;
        chunk.copy_from_slice(&(h as u32).to_ne_bytes());
    }
    out
}

fn pad_to(v: &mut Vec<u8>, align: usize) {
    v.resize(v.len().next_multiple_of(align), 0);
}

fn w16(v: &mut Vec<u8>, x: u16) {
    v.extend_from_slice(&x.to_ne_bytes());
}
fn w32(v: &mut Vec<u8>, x: u32) {
    v.extend_from_slice(&x.to_ne_bytes());
}
fn w64(v: &mut Vec<u8>, x: u64) {
    v.extend_from_slice(&x.to_ne_bytes());
}

/// One section header's fields.
struct Shdr {
    name: u32,
    type_: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
    info: u32,
    align: u64,
    entsize: u64,
}

/// One row of a jitted function's line table: offset in its code, line, source file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRow {
    /// Offset from the start of the code.
    pub offset: u64,
    /// Line number.
    pub line: u32,
    /// Source file name.
    pub file: String,
}

fn uleb(v: &mut Vec<u8>, mut x: u64) {
    loop {
        let b = (x & 0x7f) as u8;
        x >>= 7;
        if x == 0 {
            v.push(b);
            return;
        }
        v.push(b | 0x80);
    }
}

fn sleb(v: &mut Vec<u8>, mut x: i64) {
    loop {
        let b = (x & 0x7f) as u8;
        x >>= 7;
        let done = (x == 0 && b & 0x40 == 0) || (x == -1 && b & 0x40 != 0);
        v.push(if done { b } else { b | 0x80 });
        if done {
            return;
        }
    }
}

/// `.debug_line`, `.debug_abbrev` and `.debug_info` of one unit named `name` over
/// `.text` (`size` bytes at [`TEXT_OFFSET`]) with line table `rows`.
fn dwarf_sections(name: &str, size: u64, rows: &[LineRow]) -> [(&'static str, Vec<u8>); 3] {
    // .debug_line, DWARF 4: header, then one sequence.
    let mut files: Vec<&str> = Vec::new();
    for r in rows {
        if !files.contains(&r.file.as_str()) {
            files.push(&r.file);
        }
    }
    let mut hdr = vec![1, 1, 1, (-5i8) as u8, 14, 13];
    hdr.extend_from_slice(&[0, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1]);
    hdr.push(0); // no include directories
    for f in &files {
        hdr.extend_from_slice(f.as_bytes());
        hdr.extend_from_slice(&[0, 0, 0, 0]); // NUL, dir, mtime, length
    }
    hdr.push(0);
    let set_address = |p: &mut Vec<u8>, a: u64| {
        p.extend_from_slice(&[0, 9, 2]);
        w64(p, a);
    };
    let mut prog = Vec::new();
    let mut line = 1i64;
    let mut file = 1u64;
    for r in rows {
        let f = files.iter().position(|&x| x == r.file).unwrap_or(0) as u64 + 1;
        if f != file {
            prog.push(4);
            uleb(&mut prog, f);
            file = f;
        }
        set_address(&mut prog, TEXT_OFFSET + r.offset.min(size));
        prog.push(3);
        sleb(&mut prog, i64::from(r.line) - line);
        line = i64::from(r.line);
        prog.push(1); // DW_LNS_copy
    }
    set_address(&mut prog, TEXT_OFFSET + size);
    prog.extend_from_slice(&[0, 1, 1]); // DW_LNE_end_sequence
    let mut line_sec = Vec::new();
    w32(&mut line_sec, (2 + 4 + hdr.len() + prog.len()) as u32);
    w16(&mut line_sec, 4);
    w32(&mut line_sec, hdr.len() as u32);
    line_sec.extend_from_slice(&hdr);
    line_sec.extend_from_slice(&prog);
    // One compile unit: name, stmt_list, low_pc, high_pc (as a length).
    let abbrev = vec![
        1, 0x11, 0, // abbrev 1: DW_TAG_compile_unit, no children
        0x03, 0x08, // DW_AT_name, DW_FORM_string
        0x10, 0x17, // DW_AT_stmt_list, DW_FORM_sec_offset
        0x11, 0x01, // DW_AT_low_pc, DW_FORM_addr
        0x12, 0x07, // DW_AT_high_pc, DW_FORM_data8
        0, 0, 0,
    ];
    let mut die = vec![1];
    die.extend_from_slice(files.first().copied().unwrap_or(name).as_bytes());
    die.push(0);
    w32(&mut die, 0);
    w64(&mut die, TEXT_OFFSET);
    w64(&mut die, size);
    let mut info = Vec::new();
    w32(&mut info, (2 + 4 + 1 + die.len()) as u32);
    w16(&mut info, 4);
    w32(&mut info, 0);
    info.push(8);
    info.extend_from_slice(&die);
    [
        (".debug_line", line_sec),
        (".debug_abbrev", abbrev),
        (".debug_info", info),
    ]
}

/// The ELF image of function `name` with machine code `code` for `e_machine` `machine`
/// (0: this machine's), in this machine's byte order.
pub fn image(name: &str, code: &[u8], machine: u16) -> Vec<u8> {
    image_with_lines(name, code, machine, &[])
}

/// [`image`] with the function's line table (`.debug_line` and one DWARF unit when
/// `rows` is not empty).
pub fn image_with_lines(name: &str, code: &[u8], machine: u16, rows: &[LineRow]) -> Vec<u8> {
    image_full(name, code, machine, rows, None)
}

/// The JIT's unwinding tables of one function, as `JIT_CODE_UNWINDING_INFO` carries them.
#[derive(Clone, Copy, Debug)]
pub struct Unwind<'a> {
    /// `.eh_frame`, placed at the code's end rounded up to 8.
    pub eh_frame: &'a [u8],
    /// `.eh_frame_hdr`, placed right after `.eh_frame`.
    pub eh_frame_hdr: &'a [u8],
}

/// Where `.eh_frame` of a function of `code_size` bytes goes (file offset and address):
/// the code's end rounded up to 8, as perf's genelf and the JITs that write the tables.
pub const fn eh_frame_offset(code_size: u64) -> u64 {
    (TEXT_OFFSET + code_size).next_multiple_of(8)
}

/// [`image_with_lines`] with the JIT's unwinding tables (`.eh_frame`, `.eh_frame_hdr`).
pub fn image_full(
    name: &str,
    code: &[u8],
    machine: u16,
    rows: &[LineRow],
    unwind: Option<Unwind<'_>>,
) -> Vec<u8> {
    let machine = if machine == 0 {
        native_machine()
    } else {
        machine
    };
    let mut v = vec![0u8; TEXT_OFFSET as usize];
    v.extend_from_slice(code);
    // .eh_frame and .eh_frame_hdr where the JIT's relative pointers expect them.
    let mut unwind_at = Vec::new();
    if let Some(u) = unwind {
        pad_to(&mut v, 8);
        debug_assert_eq!(v.len() as u64, eh_frame_offset(code.len() as u64));
        for (n, bytes) in [(".eh_frame", u.eh_frame), (".eh_frame_hdr", u.eh_frame_hdr)] {
            unwind_at.push((n, v.len() as u64, bytes.len() as u64));
            v.extend_from_slice(bytes);
        }
    }
    // The loaded part: the code and its unwinding tables.
    let text_end = v.len() as u64;
    // .note.gnu.build-id
    pad_to(&mut v, 4);
    let note_at = v.len() as u64;
    w32(&mut v, 4);
    w32(&mut v, 20);
    w32(&mut v, 3); // NT_GNU_BUILD_ID
    v.extend_from_slice(b"GNU\0");
    v.extend_from_slice(&build_id(name, code));
    let note_size = v.len() as u64 - note_at;
    // .symtab: the null symbol, then the function.
    pad_to(&mut v, 8);
    let symtab_at = v.len() as u64;
    v.extend_from_slice(&[0; 24]);
    w32(&mut v, 1);
    v.push(0x12); // STB_GLOBAL, STT_FUNC
    v.push(0);
    w16(&mut v, 1); // .text
    w64(&mut v, TEXT_OFFSET);
    w64(&mut v, code.len() as u64);
    // .strtab
    let strtab_at = v.len() as u64;
    v.push(0);
    v.extend_from_slice(name.as_bytes());
    v.push(0);
    let strtab_size = v.len() as u64 - strtab_at;
    // DWARF, with the line table.
    let dwarf = if rows.is_empty() {
        Vec::new()
    } else {
        dwarf_sections(name, code.len() as u64, rows).to_vec()
    };
    let mut dwarf_at = Vec::new();
    for (_, bytes) in &dwarf {
        dwarf_at.push(v.len() as u64);
        v.extend_from_slice(bytes);
    }
    // .shstrtab
    let mut names = String::from("\0.text\0.note.gnu.build-id\0.symtab\0.strtab\0.shstrtab\0");
    for n in dwarf
        .iter()
        .map(|d| d.0)
        .chain(unwind_at.iter().map(|u| u.0))
    {
        names.push_str(n);
        names.push('\0');
    }
    let off = |n: &str| names.find(&format!("\0{n}\0")).map_or(0, |i| i + 1) as u32;
    let shstr_at = v.len() as u64;
    v.extend_from_slice(names.as_bytes());
    pad_to(&mut v, 8);
    let shoff = v.len() as u64;
    let mut sections = vec![
        Shdr {
            name: 0,
            type_: 0,
            flags: 0,
            addr: 0,
            offset: 0,
            size: 0,
            link: 0,
            info: 0,
            align: 0,
            entsize: 0,
        },
        Shdr {
            name: off(".text"),
            type_: 1, // SHT_PROGBITS
            flags: 6, // SHF_ALLOC | SHF_EXECINSTR
            addr: TEXT_OFFSET,
            offset: TEXT_OFFSET,
            size: code.len() as u64,
            link: 0,
            info: 0,
            align: 16,
            entsize: 0,
        },
        Shdr {
            name: off(".note.gnu.build-id"),
            type_: 7, // SHT_NOTE
            flags: 2, // SHF_ALLOC
            addr: note_at,
            offset: note_at,
            size: note_size,
            link: 0,
            info: 0,
            align: 4,
            entsize: 0,
        },
        Shdr {
            name: off(".symtab"),
            type_: 2,
            flags: 0,
            addr: 0,
            offset: symtab_at,
            size: 48,
            link: 4,
            info: 1,
            align: 8,
            entsize: 24,
        },
        Shdr {
            name: off(".strtab"),
            type_: 3,
            flags: 0,
            addr: 0,
            offset: strtab_at,
            size: strtab_size,
            link: 0,
            info: 0,
            align: 1,
            entsize: 0,
        },
        Shdr {
            name: off(".shstrtab"),
            type_: 3,
            flags: 0,
            addr: 0,
            offset: shstr_at,
            size: names.len() as u64,
            link: 0,
            info: 0,
            align: 1,
            entsize: 0,
        },
    ];
    for ((n, bytes), at) in dwarf.iter().zip(&dwarf_at) {
        sections.push(Shdr {
            name: off(n),
            type_: 1,
            flags: 0,
            addr: 0,
            offset: *at,
            size: bytes.len() as u64,
            link: 0,
            info: 0,
            align: 1,
            entsize: 0,
        });
    }
    for &(n, at, size) in &unwind_at {
        sections.push(Shdr {
            name: off(n),
            type_: 1,
            flags: 2, // SHF_ALLOC
            addr: at,
            offset: at,
            size,
            link: 0,
            info: 0,
            align: if n == ".eh_frame" { 8 } else { 4 },
            entsize: 0,
        });
    }
    for s in &sections {
        w32(&mut v, s.name);
        w32(&mut v, s.type_);
        w64(&mut v, s.flags);
        w64(&mut v, s.addr);
        w64(&mut v, s.offset);
        w64(&mut v, s.size);
        w32(&mut v, s.link);
        w32(&mut v, s.info);
        w64(&mut v, s.align);
        w64(&mut v, s.entsize);
    }
    // The ELF header and the one PT_LOAD segment (offset 0 at address 0: file offsets and
    // addresses agree).
    let mut h = Vec::with_capacity(TEXT_OFFSET as usize);
    h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2]);
    h.push(if cfg!(target_endian = "little") { 1 } else { 2 });
    h.push(1);
    h.resize(16, 0);
    w16(&mut h, 3); // ET_DYN
    w16(&mut h, machine);
    w32(&mut h, 1);
    w64(&mut h, TEXT_OFFSET); // e_entry
    w64(&mut h, 64); // e_phoff
    w64(&mut h, shoff);
    w32(&mut h, 0);
    w16(&mut h, 64);
    w16(&mut h, 56);
    w16(&mut h, 1);
    w16(&mut h, 64);
    w16(&mut h, sections.len() as u16);
    w16(&mut h, 5); // .shstrtab
    w32(&mut h, 1); // PT_LOAD
    w32(&mut h, 5); // PF_R | PF_X
    w64(&mut h, 0);
    w64(&mut h, 0);
    w64(&mut h, 0);
    w64(&mut h, text_end);
    w64(&mut h, text_end);
    w64(&mut h, 0x1000);
    v[..h.len()].copy_from_slice(&h);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_has_the_code_the_symbol_and_the_build_id() {
        let code = [0x55, 0x48, 0x89, 0xe5, 0x5d, 0xc3];
        let img = image("jitted_fn", &code, 0);
        let at = TEXT_OFFSET as usize;
        assert_eq!(&img[at..at + code.len()], &code);
        assert_eq!(&img[..4], b"\x7fELF");
        assert_eq!(u16::from_ne_bytes([img[18], img[19]]), native_machine());
        let id = build_id("jitted_fn", &code);
        assert!(img.windows(20).any(|w| w == id));
        assert_ne!(id, build_id("other", &code));
        assert!(img.windows(10).any(|w| w == b"jitted_fn\0"));
    }

    #[test]
    fn line_rows_resolve_through_dwarf() {
        use object::{Object, ObjectSection};
        let code = [0x90u8; 32];
        let rows = [
            LineRow {
                offset: 0,
                line: 10,
                file: "app.js".into(),
            },
            LineRow {
                offset: 16,
                line: 12,
                file: "app.js".into(),
            },
        ];
        let img = image_with_lines("f", &code, 0, &rows);
        let obj = object::File::parse(&*img).unwrap();
        let load =
            |id: gimli::SectionId| -> Result<gimli::EndianSlice<'_, gimli::RunTimeEndian>, ()> {
                let data = obj
                    .section_by_name(id.name())
                    .and_then(|s| s.data().ok())
                    .unwrap_or(&[]);
                Ok(gimli::EndianSlice::new(data, gimli::RunTimeEndian::Little))
            };
        let dwarf = gimli::Dwarf::load(load).unwrap();
        let ctx = addr2line::Context::from_dwarf(dwarf).unwrap();
        let at = |a: u64| {
            let l = ctx.find_location(a).unwrap().unwrap();
            (l.file.unwrap().to_string(), l.line.unwrap())
        };
        assert_eq!(at(TEXT_OFFSET + 4), ("app.js".to_string(), 10));
        assert_eq!(at(TEXT_OFFSET + 20), ("app.js".to_string(), 12));
    }

    /// `.eh_frame` (a CIE, an FDE over `code_size` bytes of code, a terminator) and
    /// `.eh_frame_hdr` as a JIT writes them, relative to perf's layout.
    fn jit_tables(code_size: u64) -> (Vec<u8>, Vec<u8>) {
        let mut eh = vec![
            20, 0, 0, 0, 0, 0, 0, 0, 1, b'z', b'R', 0, 1, 0x78, 16, 1, 0x1b,
        ];
        eh.extend_from_slice(&[0x0c, 7, 8, 0x90, 1, 0, 0]);
        let gap = (eh_frame_offset(code_size) - TEXT_OFFSET) as i32;
        eh.extend_from_slice(&[20, 0, 0, 0, 28, 0, 0, 0]);
        eh.extend_from_slice(&(-(gap + 32)).to_le_bytes());
        eh.extend_from_slice(&(code_size as i32).to_le_bytes());
        eh.extend_from_slice(&[0; 8 + 4]);
        let n = eh.len() as i32;
        let mut hdr = vec![1, 0x1b, 0x03, 0x3b];
        for x in [-(n + 4), 1, -(gap + n), 24 - n] {
            hdr.extend_from_slice(&x.to_le_bytes());
        }
        (eh, hdr)
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn unwinding_tables_sit_after_the_code_and_their_fde_covers_it() {
        use gimli::UnwindSection;
        use object::{Object, ObjectSection, ObjectSegment};
        let code = [0x90u8; 10];
        let (eh, hdr) = jit_tables(code.len() as u64);
        let unwind = Unwind {
            eh_frame: &eh,
            eh_frame_hdr: &hdr,
        };
        let img = image_full("f", &code, 0, &[], Some(unwind));
        let obj = object::File::parse(&*img).unwrap();
        let sec = |n: &str| obj.section_by_name(n).unwrap();
        let (ehs, hdrs) = (sec(".eh_frame"), sec(".eh_frame_hdr"));
        assert_eq!(ehs.address(), 0x90);
        assert_eq!(ehs.file_range(), Some((0x90, eh.len() as u64)));
        assert_eq!(hdrs.address(), 0x90 + eh.len() as u64);
        assert_eq!(hdrs.data().unwrap(), &hdr[..]);
        // The loaded segment covers both tables.
        let seg = obj.segments().next().unwrap();
        assert_eq!(
            seg.address() + seg.size(),
            hdrs.address() + hdr.len() as u64
        );
        // Through the header's binary search table, as unwinders look it up.
        let le = gimli::LittleEndian;
        let bases = gimli::BaseAddresses::default()
            .set_eh_frame(ehs.address())
            .set_eh_frame_hdr(hdrs.address())
            .set_text(TEXT_OFFSET);
        let parsed = gimli::EhFrameHdr::new(hdrs.data().unwrap(), le)
            .parse(&bases, 8)
            .unwrap();
        let frame = gimli::EhFrame::new(ehs.data().unwrap(), le);
        let fde = parsed
            .table()
            .unwrap()
            .fde_for_address(
                &frame,
                &bases,
                TEXT_OFFSET + 5,
                gimli::EhFrame::cie_from_offset,
            )
            .unwrap();
        assert_eq!(
            (fde.initial_address(), fde.len()),
            (TEXT_OFFSET, code.len() as u64)
        );
        assert!(
            frame
                .fde_for_address(&bases, TEXT_OFFSET + 10, gimli::EhFrame::cie_from_offset)
                .is_err()
        );
    }
}
