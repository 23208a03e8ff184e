//! Kernel samples in modules and outside every kernel map, named as perf 6.1 names them
//! (issue 16, item 2): a sample inside a module's MMAP is that module's (`[kvm]`), with its
//! symbols from the kallsyms lines tagged `[kvm]`; a kernel-half address that no map covers
//! is `[unknown]`.
//!
//! This machine has no modules, so the test writes the perf.data itself (perfkit's writer):
//! the kernel's MMAP and two module MMAPs as `perf record` synthesizes them from
//! `/proc/modules` (a module file path, and `[name]` for a module without a file), then
//! kernel samples of the idle task in the core kernel, in both modules and in unmapped kernel
//! addresses. Both tools read it with the same `--kallsyms` file and an empty `--symfs`, so
//! neither looks at this machine's kernel, and their `report --stdio` and `script` must be
//! byte for byte the same.

mod common;

use common::{have_perf, skip};
use perfkit::sys::{self, attr_flags as f};
use perfkit_data::{FileEvent, PerfDataWriter, WriteOptions, record, synth};
use std::path::Path;
use std::process::Command;

const TEXT: u64 = 0xffff_ffff_8100_0000;
const KVM: u64 = 0xffff_ffff_c0a0_0000;
const E1000E: u64 = 0xffff_ffff_c0b0_0000;

/// The kallsyms both tools read: core text, then module symbols tagged with their module.
fn kallsyms() -> String {
    [
        format!("{:016x} T _text", TEXT),
        format!("{:016x} T core_fn", TEXT + 0x100),
        format!("{:016x} T core_fn2", TEXT + 0x200),
        format!("{:016x} T _etext", TEXT + 0x10_0000),
        format!("{:016x} t vmx_vcpu_run\t[kvm]", KVM + 0x1000),
        format!("{:016x} T kvm_arch_foo\t[kvm]", KVM + 0x2000),
        format!("{:016x} t e1000_irq\t[e1000e]", E1000E + 0x100),
        format!(
            "{:016x} t ftrace_trampoline\t[__builtin__ftrace]",
            0xffff_ffff_c200_1000u64
        ),
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
    b.resize(b.len().next_multiple_of(8), 0);
    record(
        sys::PERF_RECORD_MMAP,
        sys::PERF_RECORD_MISC_KERNEL,
        &b,
        &synth::sample_id_trailer(attr, -1, 0, 1),
    )
}

/// Write the recording; `ips` are the idle task's kernel sample addresses, in order, each
/// with its callchain (the address, then its callers).
fn write(path: &Path, ips: &[(u64, u64)]) {
    let mut attr = sys::perf_event_attr {
        type_: sys::PERF_TYPE_SOFTWARE,
        config: sys::PERF_COUNT_SW_CPU_CLOCK,
        sample_period: 250_000,
        sample_type: sys::PERF_SAMPLE_IP
            | sys::PERF_SAMPLE_TID
            | sys::PERF_SAMPLE_TIME
            | sys::PERF_SAMPLE_CPU
            | sys::PERF_SAMPLE_PERIOD
            | sys::PERF_SAMPLE_CALLCHAIN,
        ..Default::default()
    };
    attr.set(f::SAMPLE_ID_ALL | f::COMM | f::TASK | f::MMAP, true);
    let event = FileEvent {
        attr,
        name: "cpu-clock".into(),
        ids: vec![1],
    };
    let opts = WriteOptions {
        no_build_ids: true,
        ..Default::default()
    };
    let mut w = PerfDataWriter::create(path, vec![event], opts).unwrap();
    for r in [
        mmap(&attr, TEXT, 0x10_0000, TEXT, "[kernel.kallsyms]_text"),
        mmap(
            &attr,
            KVM,
            0x8000,
            0,
            "/lib/modules/0.0-perfkit-test/kernel/arch/x86/kvm/kvm.ko.xz",
        ),
        mmap(&attr, E1000E, 0x4000, 0, "[e1000e]"),
    ] {
        w.write_record(&[&r]).unwrap();
    }
    for (i, &(ip, caller)) in ips.iter().enumerate() {
        let time = 1_000_000_000 + i as u64 * 250_000;
        let mut body = Vec::new();
        body.extend_from_slice(&ip.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&time.to_ne_bytes());
        body.extend_from_slice(&((i % 2) as u32).to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        body.extend_from_slice(&250_000u64.to_ne_bytes());
        for v in [3, sys::PERF_CONTEXT_KERNEL, ip, caller] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        w.saw_time(time);
        w.write_record(&[&record(
            sys::PERF_RECORD_SAMPLE,
            sys::PERF_RECORD_MISC_KERNEL,
            &body,
            &[],
        )])
        .unwrap();
    }
    w.finish(&["perf".into(), "record".into(), "-a".into()])
        .unwrap();
}

/// What `tool ARGS` prints, which must succeed; report's closing tip line left out (perf
/// picks one at random).
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
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with("# (Tip:") && !l.starts_with("# (Report by"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Write the recording of `ips`, read it with both tools in `script` and `report` modes,
/// and check that they print the same; the perf outputs, for checks of their own.
fn same_as_perf(ips: &[(u64, u64)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("m.data");
    write(&data, ips);
    let ks = dir.path().join("kallsyms");
    std::fs::write(&ks, kallsyms()).unwrap();
    let (d, k) = (data.to_str().unwrap(), ks.to_str().unwrap());
    let mut outs = Vec::new();
    for mode in [
        &["script"][..],
        &["script", "-F", "comm,tid,ip,sym,symoff,dso"],
        &["report", "--stdio", "--no-children"],
        &["report", "--stdio", "--children"],
        &["report", "--stdio", "-g", "none", "--sort", "dso,sym"],
        &["report", "--stdio", "-g", "none", "--sort", "dso"],
    ] {
        let mut args = mode.to_vec();
        args.extend(["-i", d, "--kallsyms", k]);
        let p = run("perf", &args);
        let q = run("perfkit", &args);
        assert_eq!(p, q, "perfkit {args:?} differs from perf's:\n{p}");
        outs.push(p);
    }
    outs
}

/// Addresses of each kind: (sample address, its caller).
const CORE_FN: u64 = TEXT + 0x110;
const CORE_FN2: u64 = TEXT + 0x210;
const VMX: u64 = KVM + 0x1010;
const KVM_FOO: u64 = KVM + 0x2004;
const KVM_NO_SYMBOL: u64 = KVM + 0x10;
const E1000_IRQ: u64 = E1000E + 0x108;
/// A module symbol in kallsyms, but no map: `[unknown]`.
const TRAMPOLINE: u64 = 0xffff_ffff_c200_1010;
/// Between the kernel's map and the modules': `[unknown]`.
const GAP: u64 = 0xffff_ffff_a000_0000;

#[test]
fn module_samples_and_unmapped_kernel_addresses_are_named_as_perf() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let ips = [
        (CORE_FN, VMX + 0x20),
        (VMX, CORE_FN2),
        (KVM_FOO, VMX),
        (KVM_NO_SYMBOL, CORE_FN),
        (E1000_IRQ, KVM_NO_SYMBOL),
        (TRAMPOLINE, GAP),
        (GAP, CORE_FN),
        (CORE_FN2, E1000_IRQ),
        (VMX + 0x10, TRAMPOLINE),
    ];
    let outs = same_as_perf(&ips);
    // What perf prints, so that a change of both cannot pass unseen.
    let dsos: Vec<&str> = outs[5]
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .collect();
    assert_eq!(
        dsos,
        [
            "    66.67%    44.44%  [kvm]            ",
            "    55.56%    22.22%  [kernel.kallsyms]",
            "    33.33%    22.22%  [unknown]        ",
            "    22.22%    11.11%  [e1000e]         ",
        ]
    );
    assert!(
        outs[1].contains("ffffffffc0a00010 [unknown] ([kvm])"),
        "{}",
        outs[1]
    );
}

/// perf names a module's address from kallsyms only when it loaded the core kernel's
/// symbols before it first looked into that module (its `maps__split_kallsyms` drops the
/// symbols of a module already loaded, and a module with no file loads empty), so which
/// samples it names depends on their order, and `report` and `script` disagree. perfkit
/// names them in any order (listed in the README); the rest is as perf prints it.
#[test]
fn a_module_sampled_before_the_core_kernel_is_still_named() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("m.data");
    write(
        &data,
        &[(VMX, KVM_FOO), (CORE_FN, VMX), (KVM_NO_SYMBOL, CORE_FN2)],
    );
    let ks = dir.path().join("kallsyms");
    std::fs::write(&ks, kallsyms()).unwrap();
    let (d, k) = (data.to_str().unwrap(), ks.to_str().unwrap());
    let args = ["script", "-F", "comm,ip,sym,dso", "-i", d, "--kallsyms", k];
    let p = run("perf", &args);
    let q = run("perfkit", &args);
    assert!(
        p.contains("ffffffffc0a01010 [unknown] ([kvm])"),
        "perf now names it:\n{p}"
    );
    let named = p.replace(
        "ffffffffc0a01010 [unknown] ([kvm])",
        "ffffffffc0a01010 vmx_vcpu_run ([kvm])",
    );
    let named = named.replace(
        "ffffffffc0a02004 [unknown] ([kvm])",
        "ffffffffc0a02004 kvm_arch_foo ([kvm])",
    );
    assert_eq!(q, named);
}

/// The kernel's and modules' MMAP lines of `perf script --show-mmap-events` on `file`.
fn kernel_mmap_lines(file: &Path) -> Vec<String> {
    let f = file.to_str().unwrap();
    run("perf", &["script", "--show-mmap-events", "-i", f])
        .lines()
        .filter(|l| l.contains("PERF_RECORD_MMAP -1/0"))
        .map(str::to_string)
        .collect()
}

/// `record` synthesizes the module maps as `perf record` does from `/proc/modules`: one
/// MMAP per module, in address order, with the module's file under `/lib/modules/RELEASE`
/// (from `modules.dep`), or `[name]` for a module without a file; and the kernel's map as
/// perf's (`_text` to `_etext`). This machine has no modules, so the list is read under
/// `PERFKIT_MODULES_ROOT`.
#[test]
fn record_writes_a_map_per_module_as_perf_record() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let release = release.trim();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join(format!("lib/modules/{release}"))).unwrap();
    std::fs::write(
        root.join("proc/modules"),
        "nvme 57344 2 - Live 0xffffffffc0b23000\n\
         kvm_amd 200704 0 - Live 0xffffffffc0a00000\n\
         snd_x 4096 0 - Live 0xffffffffc0c00000\n",
    )
    .unwrap();
    std::fs::write(
        root.join(format!("lib/modules/{release}/modules.dep")),
        "kernel/drivers/nvme/host/nvme.ko.xz: kernel/drivers/nvme/host/nvme-core.ko.xz\n\
         kernel/arch/x86/kvm/kvm-amd.ko.xz: kernel/arch/x86/kvm/kvm.ko.xz\n",
    )
    .unwrap();
    let ours = dir.path().join("perfkit.data");
    let theirs = dir.path().join("perf.data");
    let st = Command::new(env!("CARGO_BIN_EXE_perfkit"))
        .env("PERFKIT_MODULES_ROOT", &root)
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(&ours)
        .args(["--", "true"])
        .status()
        .unwrap();
    assert!(st.success());
    let st = Command::new("perf")
        .args(["record", "-q", "-e", "cpu-clock", "-o"])
        .arg(&theirs)
        .args(["--", "true"])
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let perf_lines = kernel_mmap_lines(&theirs);
    let Some(kernel) = perf_lines
        .iter()
        .find(|l| l.ends_with("[kernel.kallsyms]_text"))
    else {
        return skip("kernel addresses are hidden here (perf wrote no kernel map)");
    };
    let module = |addr: &str, len: &str, file: &str| {
        format!(
            "         swapper     0     0.000000: PERF_RECORD_MMAP -1/0: [{addr}({len}) @ 0]: x {file}"
        )
    };
    assert_eq!(
        kernel_mmap_lines(&ours),
        [
            kernel.clone(),
            module(
                "0xffffffffc0a00000",
                "0x31000",
                &format!("/lib/modules/{release}/kernel/arch/x86/kvm/kvm-amd.ko.xz")
            ),
            module(
                "0xffffffffc0b23000",
                "0xe000",
                &format!("/lib/modules/{release}/kernel/drivers/nvme/host/nvme.ko.xz")
            ),
            module("0xffffffffc0c00000", "0x1000", "[snd_x]"),
        ]
    );
}
