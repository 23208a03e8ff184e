//! `script`'s sample address (`-F addr` with `sym`, `symoff`, `dso`) named in the
//! recording's kernel maps, as perf 6.1 names it (issue 16): a kernel address takes the
//! core kernel's symbols inside `[kernel.kallsyms]`'s map only, a module's inside its map
//! (`[kvm]`), a BPF program's from its KSYMBOL record, and is `[unknown]` outside every map
//! (a gap between maps), as the sample's ip is. perf's core kernel map reaches past the
//! recorded `_etext` to the end of the last core kallsyms symbol (a page past its page):
//! the second test checks the ip path against perf there too.
//!
//! Kernel addresses in the addr field come from breakpoints and faults on kernel data,
//! which this machine cannot produce at will (kernel execute breakpoints are refused, its
//! kallsyms lists no data), so the test writes the perf.data itself (perfkit's writer): a
//! page-fault event with `PERF_SAMPLE_ADDR` (perf names such addresses), the kernel's and a
//! module's MMAP, a BPF program's KSYMBOL, and samples whose addresses fall in each. Both
//! tools read it with the same `--kallsyms` file, and their `script` must be the same.

mod common;

use common::{have_perf, skip};
use perfkit::sys::{self, attr_flags as f};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
use std::path::Path;
use std::process::Command;

const TEXT: u64 = 0xffff_ffff_8100_0000;
const ETEXT: u64 = TEXT + 0x10_0000;
const KVM: u64 = 0xffff_ffff_c0a0_0000;
const BPF: u64 = 0xffff_ffff_c0c0_0040;
const BPF_NAME: &str = "bpf_prog_0123456789abcdef_spin";

fn kallsyms() -> String {
    [
        format!("{TEXT:016x} T _text"),
        format!("{:016x} T core_fn", TEXT + 0x100),
        format!("{:016x} T core_fn2", TEXT + 0x200),
        format!("{ETEXT:016x} T _etext"),
        format!("{:016x} D __start_rodata", ETEXT + 0x1000),
        format!("{:016x} t vmx_vcpu_run\t[kvm]", KVM + 0x1000),
        format!("{:016x} T kvm_arch_foo\t[kvm]", KVM + 0x2000),
    ]
    .join("\n")
        + "\n"
}

fn mmap(attr: &sys::perf_event_attr, start: u64, len: u64, pgoff: u64, name: &str) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&u32::MAX.to_ne_bytes());
    b.extend_from_slice(&0u32.to_ne_bytes());
    for v in [start, len, pgoff] {
        b.extend_from_slice(&v.to_ne_bytes());
    }
    b.extend_from_slice(name.as_bytes());
    b.push(0);
    record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &b,
        &synth::sample_id_trailer(attr, -1, 0, 1),
    )
}

/// In the `samples` of [`write`]: the BPF program's unregistering KSYMBOL record, not a
/// sample.
const UNREGISTER: (u64, u64) = (0, 0);

/// Write the recording: the idle task's page-fault samples, one per (ip, address) of
/// `samples` (or [`UNREGISTER`]).
fn write(path: &Path, samples: &[(u64, u64)]) {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_PAGE_FAULTS,
        sample_period: 1,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_ADDR
            | sys::PERF_SAMPLE_CPU
            | sys::PERF_SAMPLE_PERIOD,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::TASK | f::MMAP, true);
    let event = FileEvent {
        attr,
        name: "page-faults".into(),
        ids: vec![1],
    };
    let opts = WriteOptions {
        no_build_ids: true,
        ..Default::default()
    };
    let mut w = PerfDataWriter::create(path, vec![event], opts).unwrap();
    for r in [
        mmap(&attr, TEXT, ETEXT - TEXT, TEXT, "[kernel.kallsyms]_text"),
        mmap(
            &attr,
            KVM,
            0x8000,
            0,
            "/lib/modules/0.0-perfkit-test/kernel/arch/x86/kvm/kvm.ko",
        ),
        synth::ksymbol_bpf(&attr, 1, BPF, 0x40, BPF_NAME),
    ] {
        w.write_record(&[&r]).unwrap();
    }
    for (i, &(ip, addr)) in samples.iter().enumerate() {
        let time = 1_000_000_000 + i as u64 * 1000;
        w.saw_time(time);
        if (ip, addr) == UNREGISTER {
            let mut body = Vec::new();
            body.extend_from_slice(&BPF.to_ne_bytes());
            body.extend_from_slice(&0x40u32.to_ne_bytes());
            body.extend_from_slice(&sys::PERF_RECORD_KSYMBOL_TYPE_BPF.to_ne_bytes());
            body.extend_from_slice(&sys::PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER.to_ne_bytes());
            body.extend_from_slice(BPF_NAME.as_bytes());
            body.push(0);
            // sample_id: pid, tid, time, cpu.
            let mut id = vec![0; 8];
            id.extend_from_slice(&time.to_ne_bytes());
            id.extend_from_slice(&[0; 8]);
            w.write_record(&[&record(sys::PERF_RECORD_KSYMBOL, 0, &body, &id)])
                .unwrap();
            continue;
        }
        let mut body = Vec::new();
        body.extend_from_slice(&ip.to_ne_bytes());
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&addr.to_ne_bytes());
        body.extend_from_slice(&[0; 8]);
        body.extend_from_slice(&1u64.to_ne_bytes());
        w.write_record(&[&record(
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_KERNEL,
            &body,
            &[],
        )])
        .unwrap();
    }
    w.finish(&["perf".into(), "record".into(), "-a".into(), "-d".into()])
        .unwrap();
}

fn run(tool: &str, args: &[&str]) -> String {
    let mut cmd = if tool == "perf" {
        Command::new("perf")
    } else {
        Command::new(env!("CARGO_BIN_EXE_perfkit"))
    };
    let out = cmd.args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{tool} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Kernel addresses of each kind, in and out of the recording's maps.
const ADDRS: [u64; 11] = [
    TEXT + 0x208,          // core_fn2+0x8
    KVM + 0x1010,          // vmx_vcpu_run+0x10 ([kvm])
    KVM + 0x10,            // in kvm's map, no symbol
    BPF + 0x10,            // the BPF program
    ETEXT + 0x1010,        // a kallsyms line past _etext: perf's map reaches it
    0xffff_ffff_a000_0000, // between the kernel's and the modules' maps
    TEXT + 0x104,          // core_fn+0x4
    ETEXT + 0x10,          // _etext+0x10
    ETEXT + 0x1fff,        // the last core symbol's last byte (its page, and one more)
    ETEXT + 0x2000,        // past it: no map
    TEXT - 0x10,           // before _text: no map
];

/// Write `samples`, read them with both tools in each of `modes` (with `--kallsyms`), check
/// that they print the same; perf's outputs.
fn same_as_perf(samples: &[(u64, u64)], modes: &[&[&str]]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("addr.data");
    write(&data, samples);
    let ks = dir.path().join("kallsyms");
    std::fs::write(&ks, kallsyms()).unwrap();
    let (d, k) = (data.to_str().unwrap(), ks.to_str().unwrap());
    let mut outs = Vec::new();
    for mode in modes {
        let mut args = mode.to_vec();
        args.extend(["-i", d, "--kallsyms", k]);
        let p: String = run("perf", &args)
            .lines()
            .filter(|l| !l.starts_with("# (Tip:"))
            .map(|l| format!("{l}\n"))
            .collect();
        let q: String = run("perfkit", &args)
            .lines()
            .filter(|l| !l.starts_with("# (Report by"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(q, p, "perfkit {args:?}");
        outs.push(p);
    }
    outs
}

#[test]
fn kernel_sample_addresses_are_named_in_the_recordings_kernel_maps() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let samples: Vec<(u64, u64)> = ADDRS.iter().map(|&a| (TEXT + 0x110, a)).collect();
    let outs = same_as_perf(
        &samples,
        &[
            &["script", "-F", "comm,ip,sym,addr,dso"],
            &["script", "-F", "addr,sym,symoff,dso"],
            &["script", "-F", "ip,addr,sym,symoff,dso"],
        ],
    );
    // What perf prints, so that a change of both cannot pass unseen.
    let named: Vec<String> = outs[1]
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        named,
        [
            "ffffffff81000208 core_fn2+0x8 ([kernel.kallsyms])",
            "ffffffffc0a01010 vmx_vcpu_run+0x10 ([kvm])",
            "ffffffffc0a00010 [unknown] ([kvm])",
            "ffffffffc0c00050 bpf_prog_0123456789abcdef_spin+0x10 (bpf_prog_0123456789abcdef_spin)",
            "ffffffff81101010 __start_rodata+0x10 ([kernel.kallsyms])",
            "ffffffffa0000000 [unknown] ([unknown])",
            "ffffffff81000104 core_fn+0x4 ([kernel.kallsyms])",
            "ffffffff81100010 _etext+0x10 ([kernel.kallsyms])",
            "ffffffff81101fff __start_rodata+0xfff ([kernel.kallsyms])",
            "ffffffff81102000 [unknown] ([unknown])",
            "ffffffff80fffff0 [unknown] ([unknown])",
        ]
    );
}

/// The sample's ip, at the same addresses: named the same way.
#[test]
fn kernel_ips_past_etext_are_in_perfs_kernel_map() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let samples: Vec<(u64, u64)> = ADDRS.iter().map(|&a| (a, a)).collect();
    let outs = same_as_perf(
        &samples,
        // `report` too: perf prints a data symbol's row (`__start_rodata`) with the offset
        // of the row's first sample, a text symbol's (`_etext`) without.
        &[
            &["script", "-F", "comm,ip,sym,symoff,dso"],
            &["script", "-F", "ip,sym,dso"],
            &["report", "--stdio"],
            &["report", "--stdio", "--sort", "dso,sym"],
            &["report", "--stdio", "--sort", "sym,dso"],
        ],
    );
    assert!(
        outs[0].contains("ffffffff81101010 __start_rodata+0x10 ([kernel.kallsyms])")
            && outs[0].contains("ffffffff81102000 [unknown] ([unknown])"),
        "{}",
        outs[0]
    );
    // The row of both samples in `__start_rodata` carries the first one's offset.
    let rows: Vec<&str> = outs[2].lines().filter(|l| l.contains("[k] ")).collect();
    assert!(
        rows.iter()
            .any(|l| l.trim_end().ends_with("[k] __start_rodata+0x10") && l.contains("18.18%")),
        "{}",
        outs[2]
    );
    assert!(
        rows.iter().any(|l| l.trim_end().ends_with("[k] _etext")),
        "{}",
        outs[2]
    );
}

/// A BPF program's unregistering KSYMBOL record removes its map: a later sample at the
/// same address is `[unknown]`, as in perf, though kallsyms may name it.
#[test]
fn an_unregistered_bpf_program_no_longer_names_its_addresses() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let samples = [
        (BPF + 0x10, BPF + 0x20),
        UNREGISTER,
        (BPF + 0x10, BPF + 0x20),
    ];
    let outs = same_as_perf(
        &samples,
        &[
            &["script", "-F", "ip,sym,symoff,dso,addr"],
            &["report", "--stdio", "--sort", "dso,sym"],
        ],
    );
    // perf prints the address before the ip.
    let lines: Vec<String> = outs[0]
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        lines,
        [
            "ffffffffc0c00060 bpf_prog_0123456789abcdef_spin+0x20 (bpf_prog_0123456789abcdef_spin) ffffffffc0c00050 bpf_prog_0123456789abcdef_spin+0x10 (bpf_prog_0123456789abcdef_spin)",
            "ffffffffc0c00060 [unknown] ([unknown]) ffffffffc0c00050 [unknown] ([unknown])",
        ]
    );
}
