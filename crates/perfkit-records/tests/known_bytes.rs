//! Every record type decoded from hand-laid bytes to known values, in both byte orders,
//! plus two records written out as literal bytes.

use perfkit_records::*;
use perfkit_sys::*;

#[derive(Clone, Copy)]
enum F<'a> {
    B(u8),
    H(u16),
    W(u32),
    Q(u64),
    S(&'a [u8]),
}
use F::*;

/// Lay out a record: header, then the fields in order, in byte order `e`.
fn rec(e: Endian, type_: u32, misc: u16, fields: &[F]) -> Vec<u8> {
    let mut body = Vec::new();
    for f in fields {
        match *f {
            B(v) => body.push(v),
            H(v) => body.extend(e.u16_bytes(v)),
            W(v) => body.extend(e.u32_bytes(v)),
            Q(v) => body.extend(e.u64_bytes(v)),
            S(s) => body.extend_from_slice(s),
        }
    }
    let mut out = Vec::new();
    out.extend(e.u32_bytes(type_));
    out.extend(e.u16_bytes(misc));
    out.extend(e.u16_bytes((body.len() + 8) as u16));
    out.extend(body);
    out
}

fn attr(sample_type: u64, sample_id_all: bool) -> perf_event_attr {
    let mut a = perf_event_attr::new();
    a.sample_type = sample_type;
    a.set(attr_flags::SAMPLE_ID_ALL, sample_id_all);
    a
}

fn parse<'a>(p: &RecordParser, bytes: &'a [u8]) -> ParsedRecord<'a> {
    let (raw, size) = RawRecord::from_bytes(bytes, p.endian()).unwrap();
    assert_eq!(size, bytes.len());
    let RawData::Single(body) = raw.data else {
        unreachable!()
    };
    p.parse(raw.type_, raw.misc, body).unwrap()
}

const BOTH: [Endian; 2] = [Endian::Little, Endian::Big];

/// TID|TIME|ID|STREAM_ID|CPU|IDENTIFIER trailer fields and the expected SampleId.
fn trailer() -> (Vec<F<'static>>, SampleId) {
    (
        vec![W(11), W(12), Q(1000), Q(7), Q(8), W(3), W(0), Q(7)],
        SampleId {
            pid: Some(11),
            tid: Some(12),
            time: Some(1000),
            id: Some(7),
            stream_id: Some(8),
            cpu: Some(3),
            identifier: Some(7),
        },
    )
}

const ALL_ID: u64 = PERF_SAMPLE_TID
    | PERF_SAMPLE_TIME
    | PERF_SAMPLE_ID
    | PERF_SAMPLE_STREAM_ID
    | PERF_SAMPLE_CPU
    | PERF_SAMPLE_IDENTIFIER;

/// Decode `fields` + trailer as `type_` and compare with `want`.
fn check_nonsample(type_: u32, misc: u16, fields: &[F], want: Record<'_>) {
    for e in BOTH {
        let p = RecordParser::new(&attr(ALL_ID, true), e);
        let (t, sid) = trailer();
        let mut all = fields.to_vec();
        all.extend(t);
        let bytes = rec(e, type_, misc, &all);
        let got = parse(&p, &bytes);
        assert_eq!(got.record, want, "{e:?}");
        assert_eq!(got.sample_id, sid, "{e:?}");
        assert_eq!(got.misc, misc);
        assert_eq!(
            sample_identifier(type_, &RawData::Single(&bytes[8..]), e),
            Some(7)
        );

        // Without sample_id_all: no trailer.
        let p = RecordParser::new(&attr(ALL_ID, false), e);
        let bytes = rec(e, type_, misc, fields);
        let got = parse(&p, &bytes);
        assert_eq!(got.record, want, "{e:?} without sample_id_all");
        assert_eq!(got.sample_id, SampleId::default());
    }
}

#[test]
fn mmap() {
    check_nonsample(
        PERF_RECORD_MMAP,
        PERF_RECORD_MISC_USER | PERF_RECORD_MISC_MMAP_DATA,
        &[
            W(100),
            W(101),
            Q(0x40_0000),
            Q(0x1000),
            Q(0x2000),
            S(b"/bin/ls\0"),
        ],
        Record::Mmap(Mmap {
            pid: 100,
            tid: 101,
            addr: 0x40_0000,
            len: 0x1000,
            pgoff: 0x2000,
            filename: b"/bin/ls",
            data: true,
        }),
    );
}

#[test]
fn lost() {
    check_nonsample(
        PERF_RECORD_LOST,
        0,
        &[Q(7), Q(42)],
        Record::Lost(Lost { id: 7, lost: 42 }),
    );
}

#[test]
fn comm_with_and_without_exec() {
    check_nonsample(
        PERF_RECORD_COMM,
        PERF_RECORD_MISC_COMM_EXEC,
        &[W(5), W(6), S(b"bash\0\0\0\0")],
        Record::Comm(Comm {
            pid: 5,
            tid: 6,
            comm: b"bash",
            exec: true,
        }),
    );
    check_nonsample(
        PERF_RECORD_COMM,
        0,
        &[W(5), W(6), S(b"a-16-byte-name!\0")],
        Record::Comm(Comm {
            pid: 5,
            tid: 6,
            comm: b"a-16-byte-name!",
            exec: false,
        }),
    );
}

#[test]
fn exit_and_fork() {
    let f = [W(1), W(2), W(3), W(4), Q(99)];
    let t = Task {
        pid: 1,
        ppid: 2,
        tid: 3,
        ptid: 4,
        time: 99,
    };
    check_nonsample(PERF_RECORD_EXIT, 0, &f, Record::Exit(t));
    check_nonsample(PERF_RECORD_FORK, 0, &f, Record::Fork(t));
}

#[test]
fn throttle_and_unthrottle() {
    let f = [Q(5), Q(7), Q(8)];
    let t = Throttle {
        time: 5,
        id: 7,
        stream_id: 8,
    };
    check_nonsample(PERF_RECORD_THROTTLE, 0, &f, Record::Throttle(t));
    check_nonsample(PERF_RECORD_UNTHROTTLE, 0, &f, Record::Unthrottle(t));
}

#[test]
fn read_single_and_group() {
    for e in BOTH {
        // Single counter with every read_format bit but GROUP.
        let mut a = attr(0, false);
        a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED
            | PERF_FORMAT_TOTAL_TIME_RUNNING
            | PERF_FORMAT_ID
            | PERF_FORMAT_LOST;
        let p = RecordParser::new(&a, e);
        let bytes = rec(
            e,
            PERF_RECORD_READ,
            0,
            &[W(1), W(2), Q(500), Q(10), Q(9), Q(7), Q(3)],
        );
        let Record::Read(r) = parse(&p, &bytes).record else {
            panic!()
        };
        assert_eq!((r.pid, r.tid), (1, 2));
        assert!(!r.values.is_group());
        assert_eq!(
            (r.values.time_enabled, r.values.time_running),
            (Some(10), Some(9))
        );
        assert_eq!(
            r.values.iter().collect::<Vec<_>>(),
            [ReadValue {
                value: 500,
                id: Some(7),
                lost: Some(3)
            }]
        );

        // Group of two with ID only.
        a.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
        let p = RecordParser::new(&a, e);
        let bytes = rec(
            e,
            PERF_RECORD_READ,
            0,
            &[W(1), W(2), Q(2), Q(500), Q(7), Q(600), Q(8)],
        );
        let Record::Read(r) = parse(&p, &bytes).record else {
            panic!()
        };
        assert!(r.values.is_group());
        assert_eq!(r.values.len(), 2);
        assert_eq!(r.values.time_enabled, None);
        assert_eq!(
            r.values.iter().collect::<Vec<_>>(),
            [
                ReadValue {
                    value: 500,
                    id: Some(7),
                    lost: None
                },
                ReadValue {
                    value: 600,
                    id: Some(8),
                    lost: None
                }
            ]
        );
    }
}

#[test]
fn mmap2_inode_and_build_id_forms() {
    check_nonsample(
        PERF_RECORD_MMAP2,
        PERF_RECORD_MISC_USER,
        &[
            W(10),
            W(11),
            Q(0x1000),
            Q(0x2000),
            Q(0),
            W(8),
            W(1),
            Q(1234),
            Q(5),
            W(5),
            W(2),
            S(b"/usr/lib/libc.so.6\0\0\0\0\0\0"),
        ],
        Record::Mmap2(Mmap2 {
            pid: 10,
            tid: 11,
            addr: 0x1000,
            len: 0x2000,
            pgoff: 0,
            file_id: Mmap2FileId::Inode {
                maj: 8,
                min: 1,
                ino: 1234,
                ino_generation: 5,
            },
            prot: 5,
            flags: 2,
            filename: b"/usr/lib/libc.so.6",
            data: false,
        }),
    );
    let id: [u8; 20] = core::array::from_fn(|i| i as u8 + 1);
    let e = Endian::Big;
    let p = RecordParser::new(&attr(0, false), e);
    let bytes = rec(
        e,
        PERF_RECORD_MMAP2,
        PERF_RECORD_MISC_MMAP_BUILD_ID,
        &[
            W(10),
            W(11),
            Q(0x1000),
            Q(0x2000),
            Q(0),
            B(20),
            B(0),
            H(0),
            S(&id),
            W(5),
            W(2),
            S(b"/x\0\0\0\0\0\0"),
        ],
    );
    let Record::Mmap2(m) = parse(&p, &bytes).record else {
        panic!()
    };
    let Mmap2FileId::BuildId(b) = m.file_id else {
        panic!("inode form")
    };
    assert_eq!(b.as_bytes(), &id[..]);
    check_nonsample(
        PERF_RECORD_MMAP2,
        PERF_RECORD_MISC_MMAP_BUILD_ID,
        &[
            W(10),
            W(11),
            Q(0x1000),
            Q(0x2000),
            Q(0),
            B(3),
            B(0),
            H(0),
            S(&id),
            W(5),
            W(2),
            S(b"/x\0\0\0\0\0\0"),
        ],
        Record::Mmap2(Mmap2 {
            pid: 10,
            tid: 11,
            addr: 0x1000,
            len: 0x2000,
            pgoff: 0,
            file_id: Mmap2FileId::BuildId(BuildId { size: 3, bytes: id }),
            prot: 5,
            flags: 2,
            filename: b"/x",
            data: false,
        }),
    );
    // A build id longer than 20 bytes is an error at its offset (8 + 32).
    let p = RecordParser::new(&attr(0, false), Endian::Little);
    let bytes = rec(
        Endian::Little,
        PERF_RECORD_MMAP2,
        PERF_RECORD_MISC_MMAP_BUILD_ID,
        &[
            W(10),
            W(11),
            Q(0x1000),
            Q(0x2000),
            Q(0),
            B(21),
            B(0),
            H(0),
            S(&id),
            W(5),
            W(2),
            S(b"/x\0\0\0\0\0\0"),
        ],
    );
    let err = p
        .parse(
            PERF_RECORD_MMAP2,
            PERF_RECORD_MISC_MMAP_BUILD_ID,
            &bytes[8..],
        )
        .unwrap_err();
    assert_eq!(err.offset, 40);
    assert!(
        matches!(err.kind, ParseErrorKind::Invalid { value: 21, .. }),
        "{err}"
    );
}

#[test]
fn aux_itrace_lost_samples_hw_id() {
    check_nonsample(
        PERF_RECORD_AUX,
        0,
        &[Q(4096), Q(512), Q(PERF_AUX_FLAG_TRUNCATED)],
        Record::Aux(Aux {
            aux_offset: 4096,
            aux_size: 512,
            flags: 1,
        }),
    );
    check_nonsample(
        PERF_RECORD_ITRACE_START,
        0,
        &[W(3), W(4)],
        Record::ItraceStart(ItraceStart { pid: 3, tid: 4 }),
    );
    check_nonsample(
        PERF_RECORD_LOST_SAMPLES,
        0,
        &[Q(77)],
        Record::LostSamples(LostSamples { lost: 77 }),
    );
    check_nonsample(
        PERF_RECORD_AUX_OUTPUT_HW_ID,
        0,
        &[Q(0xabc)],
        Record::AuxOutputHwId(AuxOutputHwId { hw_id: 0xabc }),
    );
}

#[test]
fn switch_flags() {
    check_nonsample(
        PERF_RECORD_SWITCH,
        0,
        &[],
        Record::Switch(Switch {
            out: false,
            preempt: false,
        }),
    );
    check_nonsample(
        PERF_RECORD_SWITCH,
        PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT,
        &[],
        Record::Switch(Switch {
            out: true,
            preempt: true,
        }),
    );
    check_nonsample(
        PERF_RECORD_SWITCH_CPU_WIDE,
        PERF_RECORD_MISC_SWITCH_OUT,
        &[W(42), W(43)],
        Record::SwitchCpuWide(SwitchCpuWide {
            out: true,
            preempt: false,
            next_prev_pid: 42,
            next_prev_tid: 43,
        }),
    );
}

#[test]
fn namespaces() {
    for e in BOTH {
        let p = RecordParser::new(&attr(0, false), e);
        let bytes = rec(
            e,
            PERF_RECORD_NAMESPACES,
            0,
            &[W(1), W(2), Q(2), Q(4), Q(0xf0000001), Q(4), Q(0xf0000002)],
        );
        let Record::Namespaces(n) = parse(&p, &bytes).record else {
            panic!()
        };
        assert_eq!((n.pid, n.tid, n.len()), (1, 2, 2));
        assert_eq!(
            n.get(UTS_NS_INDEX),
            Some(NamespaceLink {
                dev: 4,
                ino: 0xf0000002
            })
        );
        assert_eq!(n.get(2), None);
    }
}

#[test]
fn ksymbol_bpf_cgroup_text_poke() {
    check_nonsample(
        PERF_RECORD_KSYMBOL,
        0,
        &[
            Q(0xffff_ffff_c000_0000),
            W(256),
            H(PERF_RECORD_KSYMBOL_TYPE_BPF),
            H(0),
            S(b"bpf_prog_1234_f\0"),
        ],
        Record::Ksymbol(Ksymbol {
            addr: 0xffff_ffff_c000_0000,
            len: 256,
            ksym_type: 1,
            flags: 0,
            name: b"bpf_prog_1234_f",
        }),
    );
    check_nonsample(
        PERF_RECORD_BPF_EVENT,
        0,
        &[
            H(PERF_BPF_EVENT_PROG_LOAD),
            H(0),
            W(99),
            S(&[1, 2, 3, 4, 5, 6, 7, 8]),
        ],
        Record::BpfEvent(BpfEvent {
            type_: 1,
            flags: 0,
            id: 99,
            tag: [1, 2, 3, 4, 5, 6, 7, 8],
        }),
    );
    check_nonsample(
        PERF_RECORD_CGROUP,
        0,
        &[Q(123), S(b"/system.slice\0\0\0")],
        Record::Cgroup(Cgroup {
            id: 123,
            path: b"/system.slice",
        }),
    );
    check_nonsample(
        PERF_RECORD_TEXT_POKE,
        0,
        &[
            Q(0xffff_ffff_8100_0000),
            H(5),
            H(2),
            S(&[0x0f, 0x1f, 0x44, 0, 0, 0xeb, 0x10, 0]),
        ],
        Record::TextPoke(TextPoke {
            addr: 0xffff_ffff_8100_0000,
            old_bytes: &[0x0f, 0x1f, 0x44, 0, 0],
            new_bytes: &[0xeb, 0x10],
        }),
    );
}

#[test]
fn unknown_and_user_types_are_kept_raw() {
    for e in BOTH {
        let p = RecordParser::new(&attr(ALL_ID, true), e);
        for type_ in [
            PERF_RECORD_MAX,
            63,
            PERF_RECORD_FINISHED_ROUND,
            PERF_RECORD_HEADER_ATTR,
            5000,
        ] {
            let bytes = rec(e, type_, 3, &[Q(1), Q(2)]);
            let got = parse(&p, &bytes);
            assert_eq!(
                got.record,
                Record::Unknown {
                    type_,
                    misc: 3,
                    data: &bytes[8..]
                }
            );
            assert_eq!(got.record.record_type(), type_);
            assert_eq!(got.sample_id, SampleId::default());
        }
        // A FINISHED_ROUND has an empty body.
        let bytes = rec(e, PERF_RECORD_FINISHED_ROUND, 0, &[]);
        assert_eq!(
            parse(&p, &bytes).record,
            Record::Unknown {
                type_: 68,
                misc: 0,
                data: &[]
            }
        );
    }
}

#[test]
fn sample_with_every_field() {
    for e in BOTH {
        let mut a = attr((PERF_SAMPLE_MAX - 1) & !PERF_SAMPLE_WEIGHT, false);
        a.read_format =
            PERF_FORMAT_GROUP | PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID | PERF_FORMAT_LOST;
        a.branch_sample_type = PERF_SAMPLE_BRANCH_HW_INDEX | PERF_SAMPLE_BRANCH_COUNTERS;
        a.sample_regs_user = 0b1010_0001; // regs 0, 5, 7
        a.sample_regs_intr = 1 << 16;
        let p = RecordParser::new(&a, e);
        let fields = [
            Q(7),        // IDENTIFIER
            Q(0x401000), // IP
            W(100),
            W(101),    // TID
            Q(5000),   // TIME
            Q(0xdead), // ADDR
            Q(7),      // ID
            Q(9),      // STREAM_ID
            W(1),
            W(0),    // CPU, res
            Q(4000), // PERIOD
            Q(1),
            Q(50),
            Q(123),
            Q(7),
            Q(0), // READ: nr, time_enabled, {value, id, lost}
            Q(3),
            Q(PERF_CONTEXT_KERNEL),
            Q(0xffff_ffff_8100_0000),
            Q(PERF_CONTEXT_USER), // CALLCHAIN (nr 3)...
        ];
        // Callchain nr becomes 4 once the last entry is pushed below.
        let mut fields = fields.to_vec();
        fields[16] = Q(4);
        fields.push(Q(0x401000));
        fields.extend([W(12), S(b"rawdata-1234")]); // RAW: size 12 -> 4 + 12 = 16, aligned
        fields.extend([Q(1), Q(77), Q(0x10), Q(0x20), Q(0b11), Q(5)]); // BRANCH_STACK nr 1, hw_idx, entry, counter
        fields.extend([Q(PERF_SAMPLE_REGS_ABI_64), Q(10), Q(15), Q(17)]); // REGS_USER
        fields.extend([Q(16), S(&[0xaa; 16]), Q(8)]); // STACK_USER
        fields.extend([Q(0x0003_0002_0000_0001)]); // WEIGHT_STRUCT
        fields.extend([Q(0x1234), Q(PERF_TXN_ELISION)]); // DATA_SRC, TRANSACTION
        fields.extend([Q(PERF_SAMPLE_REGS_ABI_NONE)]); // REGS_INTR: no regs
        fields.extend([Q(0x9000), Q(55), Q(4096), Q(2097152)]); // PHYS_ADDR, CGROUP, DATA/CODE_PAGE_SIZE
        fields.extend([Q(3), S(b"aux\0\0\0\0\0")]); // AUX: 3 bytes + padding
        let bytes = rec(
            e,
            PERF_RECORD_SAMPLE,
            PERF_RECORD_MISC_KERNEL | PERF_RECORD_MISC_EXACT_IP,
            &fields,
        );
        let got = parse(&p, &bytes);
        assert_eq!(got.cpumode(), PERF_RECORD_MISC_KERNEL);
        let Record::Sample(s) = got.record else {
            panic!()
        };
        assert_eq!(
            (s.identifier, s.ip, s.pid, s.tid, s.time),
            (Some(7), Some(0x401000), Some(100), Some(101), Some(5000))
        );
        assert_eq!(
            (s.addr, s.id, s.stream_id, s.cpu, s.cpu_res, s.period),
            (Some(0xdead), Some(7), Some(9), Some(1), Some(0), Some(4000))
        );
        let r = s.read.unwrap();
        assert_eq!(
            (r.is_group(), r.time_enabled, r.time_running),
            (true, Some(50), None)
        );
        assert_eq!(
            r.iter().collect::<Vec<_>>(),
            [ReadValue {
                value: 123,
                id: Some(7),
                lost: Some(0)
            }]
        );
        let c = s.callchain.unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(
            c.frames().collect::<Vec<_>>(),
            [
                Frame {
                    context: Some(CallchainContext::Kernel),
                    ip: 0xffff_ffff_8100_0000
                },
                Frame {
                    context: Some(CallchainContext::User),
                    ip: 0x401000
                },
            ]
        );
        assert_eq!(s.raw, Some(&b"rawdata-1234"[..]));
        let b = s.branch_stack.unwrap();
        assert_eq!(b.hw_idx, Some(77));
        let entries: Vec<_> = b.entries().collect();
        assert_eq!(
            entries,
            [BranchEntry {
                from: 0x10,
                to: 0x20,
                flags: 0b11
            }]
        );
        assert!(entries[0].mispred() && entries[0].predicted());
        assert_eq!(b.counters().unwrap().collect::<Vec<_>>(), [5]);
        let ru = s.regs_user.unwrap();
        assert_eq!(ru.abi, PERF_SAMPLE_REGS_ABI_64);
        assert_eq!(
            (ru.get(0), ru.get(5), ru.get(7), ru.get(1), ru.get(64)),
            (Some(10), Some(15), Some(17), None, None)
        );
        assert_eq!(ru.iter().collect::<Vec<_>>(), [(0, 10), (5, 15), (7, 17)]);
        let st = s.stack_user.unwrap();
        assert_eq!(
            (st.data, st.dyn_size, st.valid().len()),
            (&[0xaa; 16][..], Some(8), 8)
        );
        assert_eq!(
            s.weight_struct,
            Some(WeightStruct {
                var1_dw: 1,
                var2_w: 2,
                var3_w: 3
            })
        );
        assert_eq!(
            (s.data_src, s.transaction),
            (Some(0x1234), Some(PERF_TXN_ELISION))
        );
        let ri = s.regs_intr.unwrap();
        assert_eq!((ri.abi, ri.len(), ri.get(16)), (0, 0, None));
        assert_eq!(
            (s.phys_addr, s.cgroup, s.data_page_size, s.code_page_size),
            (Some(0x9000), Some(55), Some(4096), Some(2097152))
        );
        assert_eq!(s.aux, Some(&b"aux"[..]));
        assert_eq!(
            sample_identifier(PERF_RECORD_SAMPLE, &RawData::Single(&bytes[8..]), e),
            Some(7)
        );
    }
}

#[test]
fn literal_little_endian_sample() {
    // IP|TID|TIME|CALLCHAIN, written out byte by byte.
    let bytes: [u8; 64] = [
        9, 0, 0, 0, 2, 0, 64, 0, // header: SAMPLE, misc USER, size 64
        0x00, 0x10, 0x40, 0, 0, 0, 0, 0, // ip 0x401000
        0x39, 0x30, 0, 0, 0x3a, 0x30, 0, 0, // pid 12345, tid 12346
        0x00, 0xe1, 0xf5, 0x05, 0, 0, 0, 0, // time 100000000
        2, 0, 0, 0, 0, 0, 0, 0, // nr 2
        0x00, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // PERF_CONTEXT_USER
        0x00, 0x10, 0x40, 0, 0, 0, 0, 0, // 0x401000
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, // not part of the sample
    ];
    let p = RecordParser::new(
        &attr(
            PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN,
            false,
        ),
        Endian::Little,
    );
    let got = p.parse(PERF_RECORD_SAMPLE, 2, &bytes[8..56]).unwrap();
    let Record::Sample(s) = got.record else {
        panic!()
    };
    assert_eq!(
        (s.ip, s.pid, s.tid, s.time),
        (Some(0x401000), Some(12345), Some(12346), Some(100_000_000))
    );
    assert_eq!(
        s.callchain.unwrap().iter().collect::<Vec<_>>(),
        [PERF_CONTEXT_USER, 0x401000]
    );
    assert_eq!(got.sample_id.time, Some(100_000_000));
}

#[test]
fn literal_big_endian_comm_with_trailer() {
    // COMM "sh" with sample_id_all and TID|TIME, big-endian.
    let bytes: [u8; 40] = [
        0, 0, 0, 3, 0x20, 0, 0, 40, // header: COMM, misc COMM_EXEC, size 40
        0, 0, 0, 7, 0, 0, 0, 8, // pid 7, tid 8
        b's', b'h', 0, 0, 0, 0, 0, 0, // "sh"
        0, 0, 0, 7, 0, 0, 0, 8, // trailer pid, tid
        0, 0, 0, 0, 0, 0, 0x01, 0x00, // trailer time 256
    ];
    let p = RecordParser::new(&attr(PERF_SAMPLE_TID | PERF_SAMPLE_TIME, true), Endian::Big);
    let (raw, _) = RawRecord::from_bytes(&bytes, Endian::Big).unwrap();
    let mut scratch = Vec::new();
    let got = p.parse_raw(&raw, &mut scratch).unwrap();
    assert_eq!(
        got.record,
        Record::Comm(Comm {
            pid: 7,
            tid: 8,
            comm: b"sh",
            exec: true
        })
    );
    assert_eq!(
        (got.sample_id.pid, got.sample_id.tid, got.time()),
        (Some(7), Some(8), Some(256))
    );
}

#[test]
fn errors_name_the_field_and_offset() {
    let p = RecordParser::new(
        &attr(PERF_SAMPLE_IP | PERF_SAMPLE_CALLCHAIN, false),
        Endian::Little,
    );
    // Callchain nr says 1000 entries, only 1 present.
    let bytes = rec(
        Endian::Little,
        PERF_RECORD_SAMPLE,
        0,
        &[Q(1), Q(1000), Q(5)],
    );
    let err = p.parse(PERF_RECORD_SAMPLE, 0, &bytes[8..]).unwrap_err();
    assert_eq!(err.offset, 24);
    assert_eq!(
        err.kind,
        ParseErrorKind::Truncated {
            what: "callchain.ips[nr]",
            needed: 8000,
            available: 8
        }
    );
    assert_eq!(
        err.to_string(),
        "PERF_RECORD_SAMPLE at byte 24: truncated: expected callchain.ips[nr] (8000 bytes), only 8 left"
    );
    // A huge nr does not overflow.
    let bytes = rec(
        Endian::Little,
        PERF_RECORD_SAMPLE,
        0,
        &[Q(1), Q(u64::MAX), Q(5)],
    );
    assert!(p.parse(PERF_RECORD_SAMPLE, 0, &bytes[8..]).is_err());
    // A COMM without NUL.
    let p = RecordParser::new(&attr(0, false), Endian::Little);
    let bytes = rec(
        Endian::Little,
        PERF_RECORD_COMM,
        0,
        &[W(1), W(2), S(b"abcdefgh")],
    );
    let err = p.parse(PERF_RECORD_COMM, 0, &bytes[8..]).unwrap_err();
    assert_eq!(err.offset, 16);
    // A header with size < 8.
    let err = RawRecord::from_bytes(&[9, 0, 0, 0, 0, 0, 4, 0], Endian::Little).unwrap_err();
    assert_eq!(err.offset, 6);
}

#[test]
fn multi_parser_rejects_ambiguous_attrs() {
    // ID at offset 8 in one, 0 in the other.
    let a = attr(PERF_SAMPLE_ID | PERF_SAMPLE_IP, true);
    let b = attr(PERF_SAMPLE_ID, true);
    let ids = [1u64];
    assert!(matches!(
        MultiParser::new(Endian::Little, [(&ids[..], &a), (&[2u64][..], &b)]),
        Err(MultiParserError::IdPositionsDiffer { .. })
    ));
    let a = attr(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP, true);
    let b = attr(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID, true);
    let m = MultiParser::new(Endian::Little, [(&ids[..], &a), (&[2u64][..], &b)]).unwrap();
    assert_eq!(
        (m.index_of_id(1), m.index_of_id(2), m.index_of_id(3)),
        (Some(0), Some(1), None)
    );
    // Consecutive ids (found by position) and scattered ones (found by search) alike.
    for (ids_a, ids_b) in [([10u64, 11], [12u64, 13]), ([10, 40], [7, 1000])] {
        let m = MultiParser::new(Endian::Little, [(&ids_a[..], &a), (&ids_b[..], &b)]).unwrap();
        for id in ids_a {
            assert_eq!(m.index_of_id(id), Some(0), "{id}");
        }
        for id in ids_b {
            assert_eq!(m.index_of_id(id), Some(1), "{id}");
        }
        for id in [0, 9, 14, 41, 999, 1001, u64::MAX] {
            assert_eq!(m.index_of_id(id), None, "{id}");
        }
    }
    let bytes = rec(Endian::Little, PERF_RECORD_SAMPLE, 0, &[Q(3), Q(0)]);
    let err = m.parse(PERF_RECORD_SAMPLE, 0, &bytes[8..]).unwrap_err();
    assert_eq!(err.kind, ParseErrorKind::UnknownId(3));
    assert!(matches!(
        MultiParser::new(Endian::Little, [(&ids[..], &a), (&ids[..], &b)]),
        Err(MultiParserError::DuplicateId(1))
    ));
}
