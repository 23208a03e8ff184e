//! Property tests: for random attrs and random records of every type, in both byte
//! orders, the parse of the record as one slice, the parse of the record split in two at
//! EVERY byte position, and a separately written reference decoder all agree with the
//! model the record was encoded from. Every prefix of every record parses to an error
//! (with an offset inside the data given) or, where only padding was cut, to the same
//! value, and never panics.

mod common;

use common::*;
use perfkit_records::*;
use perfkit_sys::*;
use proptest::prelude::*;

fn check_all_splits(e: Endian, cfg: &Cfg, m: &MRecord) -> Result<(), TestCaseError> {
    let bytes = encode(e, cfg, m);
    let reference = ref_decode(e, cfg, &bytes);
    prop_assert_eq!(
        reference.as_ref(),
        Some(m),
        "reference decoder disagrees with the model"
    );

    let parser = RecordParser::new(&cfg.attr(), e);
    let (raw, size) =
        RawRecord::from_bytes(&bytes, e).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(size, bytes.len());
    let mut scratch = Vec::new();
    let single = parser
        .parse_raw(&raw, &mut scratch)
        .map_err(|err| TestCaseError::fail(err.to_string()))?;
    prop_assert_eq!(&to_model(&single, cfg), m);
    let single = single.clone();

    let body = body(&bytes);
    let sid = sample_identifier(m.body.type_(), &RawData::Single(body), e);
    let rid = parser.record_id(m.body.type_(), &RawData::Single(body));
    for k in 0..=body.len() {
        let data = RawData::Split(&body[..k], &body[k..]);
        prop_assert_eq!(data.len(), body.len());
        let split_raw = RawRecord {
            type_: raw.type_,
            misc: raw.misc,
            data,
        };
        let mut scratch = Vec::new();
        let split = parser
            .parse_raw(&split_raw, &mut scratch)
            .map_err(|err| TestCaseError::fail(format!("split at {k}: {err}")))?;
        prop_assert_eq!(&split, &single, "split at {}", k);
        prop_assert_eq!(sample_identifier(m.body.type_(), &data, e), sid);
        prop_assert_eq!(parser.record_id(m.body.type_(), &data), rid);
    }
    Ok(())
}

fn check_prefixes(e: Endian, cfg: &Cfg, m: &MRecord) -> Result<(), TestCaseError> {
    let bytes = encode(e, cfg, m);
    let parser = RecordParser::new(&cfg.attr(), e);
    let body = body(&bytes);
    let type_ = m.body.type_();
    let unknown = matches!(m.body, MBody::Unknown { .. });
    let strict = !unknown && (type_ == PERF_RECORD_SAMPLE || !cfg.sample_id_all);
    for n in 0..body.len() {
        match parser.parse(type_, m.misc, &body[..n]) {
            Err(err) => {
                prop_assert!(
                    err.offset <= 8 + n,
                    "offset {} beyond the {} bytes given",
                    err.offset,
                    8 + n
                );
                prop_assert!(err.offset >= 8);
                prop_assert_eq!(err.record_type, Some(type_));
                prop_assert!(!err.to_string().is_empty());
            }
            Ok(p) => {
                // Only padding (or the sample_id trailer's position) may differ.
                if unknown {
                    let Record::Unknown { data, .. } = p.record else {
                        panic!("not unknown")
                    };
                    prop_assert_eq!(data, &body[..n]);
                }
                if strict {
                    prop_assert_eq!(
                        &to_model(&p, cfg),
                        m,
                        "prefix {} of {} parsed to another value",
                        n,
                        body.len()
                    );
                }
            }
        }
    }
    // Every prefix of the whole record through the stream iterator: no panic, an
    // error for a cut record.
    for n in 0..bytes.len() {
        let mut it = Records::new(&bytes[..n], e);
        if n > 0 {
            let first = it.next().expect("one item");
            prop_assert!(first.is_err());
        }
        prop_assert!(it.next().is_none());
    }
    Ok(())
}

macro_rules! per_kind {
    ($($name:ident = $kind:expr),* $(,)?) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, .. ProptestConfig::default() })]
            $(
                #[test]
                fn $name((e, cfg, m) in record_of_kind($kind)) {
                    check_all_splits(e, &cfg, &m)?;
                    check_prefixes(e, &cfg, &m)?;
                }
            )*
        }
    };
}

per_kind! {
    mmap_every_split_and_prefix = 0,
    lost_every_split_and_prefix = 1,
    comm_every_split_and_prefix = 2,
    exit_every_split_and_prefix = 3,
    throttle_every_split_and_prefix = 4,
    unthrottle_every_split_and_prefix = 5,
    fork_every_split_and_prefix = 6,
    read_every_split_and_prefix = 7,
    sample_every_split_and_prefix = 8,
    mmap2_every_split_and_prefix = 9,
    aux_every_split_and_prefix = 10,
    itrace_start_every_split_and_prefix = 11,
    lost_samples_every_split_and_prefix = 12,
    switch_every_split_and_prefix = 13,
    switch_cpu_wide_every_split_and_prefix = 14,
    namespaces_every_split_and_prefix = 15,
    ksymbol_every_split_and_prefix = 16,
    bpf_event_every_split_and_prefix = 17,
    cgroup_every_split_and_prefix = 18,
    text_poke_every_split_and_prefix = 19,
    aux_output_hw_id_every_split_and_prefix = 20,
    unknown_kernel_type_every_split_and_prefix = 21,
    user_type_every_split_and_prefix = 22,
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, .. ProptestConfig::default() })]

    /// Arbitrary bytes as any record type under any attr: never a panic.
    #[test]
    fn garbage_never_panics(e in endian(), cfg in cfg(), type_ in 0u32..80, misc in any::<u16>(), body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let parser = RecordParser::new(&cfg.attr(), e);
        if let Err(err) = parser.parse(type_, misc, &body) {
            prop_assert!(err.offset <= 8 + body.len());
            prop_assert!(!err.to_string().is_empty());
        }
        for (_, raw) in Records::new(&body, e).flatten() {
            let mut s = Vec::new();
            let _ = parser.parse_raw(&raw, &mut s);
        }
    }

    /// A stream of random records of several attrs (all with IDENTIFIER and
    /// sample_id_all): the multi-attr parser finds each record's attr.
    #[test]
    fn multi_parser_finds_the_attr(
        e in endian(),
        base in cfg(),
        picks in proptest::collection::vec((0usize..3, 0u32..=20), 1..12),
    ) {
        let mut cfgs = Vec::new();
        for i in 0..3u64 {
            let mut c = base;
            c.sample_type |= PERF_SAMPLE_IDENTIFIER;
            // Vary the rest of the sample layout between attrs.
            c.sample_type ^= (i * 0x1f) & (PERF_SAMPLE_CALLCHAIN | PERF_SAMPLE_IP | PERF_SAMPLE_PERIOD | PERF_SAMPLE_RAW);
            c.sample_id_all = true;
            cfgs.push(c);
        }
        let attrs: Vec<_> = cfgs.iter().map(Cfg::attr).collect();
        let ids: Vec<Vec<u64>> = (0..3u64).map(|i| vec![100 + i, 200 + i]).collect();
        let multi = MultiParser::new(e, ids.iter().map(Vec::as_slice).zip(attrs.iter())).unwrap();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut stream = Vec::new();
        let mut expected = Vec::new();
        for (which, kind) in picks {
            let c = cfgs[which];
            let (misc, mut body) = body_strategy(c, kind).new_tree(&mut runner).unwrap().current();
            let mut sid = sid_strategy(c).new_tree(&mut runner).unwrap().current();
            let id = ids[which][kind as usize % 2];
            sid.identifier = Some(id);
            if let MBody::Sample(s) = &mut body { s.identifier = Some(id) }
            let is_sample = matches!(body, MBody::Sample(_));
            let m = MRecord { misc, body, sid: if is_sample { MSampleId::default() } else { sid } };
            stream.extend(encode(e, &c, &m));
            expected.push((which, m));
        }
        let mut scratch = Vec::new();
        let mut got = 0;
        for (r, (which, m)) in Records::new(&stream, e).zip(&expected) {
            let (_, raw) = r.unwrap();
            let want = match &m.body {
                MBody::Sample(s) => s.identifier,
                MBody::Unknown { .. } => None,
                _ => m.sid.identifier,
            };
            if want.is_some() {
                prop_assert_eq!(sample_identifier(raw.type_, &raw.data, e), want);
            }
            let (index, parsed) = multi.parse_raw(&raw, &mut scratch).unwrap();
            prop_assert_eq!(index, *which);
            prop_assert_eq!(&to_model(&parsed, &cfgs[index]), m);
            got += 1;
        }
        prop_assert_eq!(got, expected.len());
    }
}
