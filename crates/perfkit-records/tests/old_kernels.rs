//! Records as kernels before 3.16 wrote them: MMAP2 without `prot` and `flags` (hotspot's
//! `perf.data.true.v2` has them). perf 6.1 reads such a record's name 8 bytes late
//! (`/usr/bin/true` as `/true`, `[stack]` as garbage); perfkit reads the name.

use perfkit_records::{Endian, Record, RecordParser};
use perfkit_sys as sys;

/// An MMAP2 body: pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, then
/// `middle` (prot and flags, or nothing), then the name padded to 8 bytes.
fn mmap2(middle: &[u8], name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&28388i32.to_le_bytes());
    b.extend_from_slice(&28388i32.to_le_bytes());
    for v in [0x40_0000u64, 0x6000, 0] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    b.extend_from_slice(&0xfdu32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    b.extend_from_slice(&134986833u64.to_le_bytes());
    b.extend_from_slice(&489497562u64.to_le_bytes());
    b.extend_from_slice(middle);
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    while b.len() % 8 != 0 {
        b.push(0);
    }
    b
}

fn parse(body: &[u8]) -> (u32, u32, String) {
    let attr = sys::perf_event_attr::default();
    let p = RecordParser::new(&attr, Endian::Little);
    let rec = p.parse(sys::PERF_RECORD_MMAP2, 2, body).expect("parses");
    let Record::Mmap2(m) = rec.record else {
        panic!("not an MMAP2: {:?}", rec.record)
    };
    (
        m.prot,
        m.flags,
        String::from_utf8_lossy(m.filename).into_owned(),
    )
}

#[test]
fn mmap2_without_prot_and_flags_keeps_its_name() {
    for name in ["/usr/bin/true", "[stack]", "[vdso]", "/x"] {
        assert_eq!(parse(&mmap2(&[], name)), (0, 0, name.to_string()), "{name}");
    }
}

#[test]
fn mmap2_with_prot_and_flags_is_read_as_before() {
    let mut middle = Vec::new();
    middle.extend_from_slice(&5u32.to_le_bytes()); // PROT_READ | PROT_EXEC
    middle.extend_from_slice(&2u32.to_le_bytes()); // MAP_PRIVATE
    assert_eq!(
        parse(&mmap2(&middle, "/usr/lib/libc.so.6")),
        (5, 2, "/usr/lib/libc.so.6".to_string())
    );
    // prot 0 (PROT_NONE) with a name is not mistaken for the old layout either.
    let none = [0u8; 8];
    assert_eq!(parse(&mmap2(&none, "/a")), (0, 0, "/a".to_string()));
}
