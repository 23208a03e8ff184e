//! `perfkit inject --jit`: a program that writes a jitdump (as perf's jvmti agent or V8 do)
//! and runs the code it generated, recorded with `-k 1` by perf and by perfkit; `perf inject
//! --jit` and `perfkit inject --jit` must name the jitted functions alike, on either tool's
//! recording.

mod common;

use common::{have_perf, perf_ok, perfkit, run_ok, skip, stdout_ok};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes `DIR/jit-PID.dump` per the jitdump specification, maps it with PROT_EXEC (the
/// marker perf looks for), generates two x86-64 loops, announces each with a
/// JIT_CODE_LOAD record and runs them: `jitted_hot_loop` 10 times longer than
/// `jitted_cold_loop`. The hot loop's JIT_CODE_DEBUG_INFO puts its loop at `/jit/app.js:11`;
/// its JIT_CODE_UNWINDING_INFO gives it an `.eh_frame` with one FDE over its code.
const JIT: &str = r#"#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static uint64_t mono(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000ULL + t.tv_nsec; }
struct hdr { uint32_t magic, version, total_size, elf_mach, pad1, pid; uint64_t timestamp, flags; };
struct rec { uint32_t id, total_size; uint64_t timestamp; };
struct load { struct rec p; uint32_t pid, tid; uint64_t vma, code_addr, code_size, code_index; };

static int fd;
static void emit_load(const char *name, void *code, size_t size, uint64_t index) {
    struct load l = { { 0, sizeof(l) + strlen(name) + 1 + size, mono() }, getpid(), (uint32_t)syscall(SYS_gettid),
                      (uint64_t)code, (uint64_t)code, size, index };
    write(fd, &l, sizeof(l)); write(fd, name, strlen(name) + 1); write(fd, code, size);
}

/* JIT_CODE_UNWINDING_INFO for the next load of `csize` bytes, laid out as V8 lays it: .eh_frame
   (one CIE, one FDE over the code, a terminator) to sit at the code's end rounded up to 8, then
   .eh_frame_hdr after it, every pointer relative (pcrel/datarel sdata4). */
static void emit_unwind(size_t csize) {
    unsigned char u[72] = {
        /* CIE: length 20, id 0, version 1, "zR", code align 1, data align -8, RA r16,
           augmentation data 1: FDE pointers pcrel|sdata4; def_cfa rsp+8, r16 at cfa-8, 2 nops */
        20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
        /* FDE: length 20, CIE pointer 28, pc_begin (set below), pc_range, no augmentation, 7 nops */
        20, 0, 0, 0, 28, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, /* terminator */
        /* .eh_frame_hdr: version 1, eh_frame_ptr pcrel|sdata4, count udata4, table datarel|sdata4 */
        1, 0x1b, 0x03, 0x3b };
    int32_t aligned = (int32_t)((csize + 7) & ~7u), ehsz = 52;
    int32_t pc_begin = -(aligned + 32), range = (int32_t)csize;
    int32_t hdr[4] = { -(ehsz + 4), 1, -(aligned + ehsz), 24 - ehsz };
    memcpy(u + 32, &pc_begin, 4); memcpy(u + 36, &range, 4);
    memcpy(u + 56, hdr, 16);
    struct { struct rec p; uint64_t unwinding_size, eh_frame_hdr_size, mapped_size; } r =
        { { 4, sizeof(r) + sizeof(u), mono() }, sizeof(u), 20, sizeof(u) };
    write(fd, &r, sizeof(r)); write(fd, u, sizeof(u));
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : ".";
    char path[4096];
    snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
    fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
    if (fd < 0) { perror(path); return 1; }
    struct hdr h = { 0x4A695444, 1, sizeof(h), EM_X86_64, 0, getpid(), mono(), 0 };
    write(fd, &h, sizeof(h));
    /* The marker: perf sees the dump's mapping with PROT_EXEC. */
    void *marker = mmap(NULL, sysconf(_SC_PAGESIZE), PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (marker == MAP_FAILED) { perror("mmap"); return 1; }
    /* Two functions: loop N times (mov ecx,imm32; dec ecx; jnz -4; ret). */
    unsigned char body[] = { 0xb9, 0, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };
    unsigned char *mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    uint32_t big = 200000000, small = 20000000;
    memcpy(mem, body, sizeof(body)); memcpy(mem + 1, &big, 4);
    memcpy(mem + 64, body, sizeof(body)); memcpy(mem + 65, &small, 4);
    /* Source lines of the hot loop: line 10 for its setup, 11 for the loop (JIT_CODE_DEBUG_INFO, before its load). */
    {
        const char *src = "/jit/app.js";
        uint64_t n = 2;
        struct rec d = { 2, 0, mono() };
        size_t esz = 16 + strlen(src) + 1;
        d.total_size = sizeof(d) + 16 + 2 * esz;
        uint64_t addr = (uint64_t)mem;
        write(fd, &d, sizeof(d)); write(fd, &addr, 8); write(fd, &n, 8);
        uint64_t a0 = addr, a1 = addr + 5; uint32_t l0 = 10, l1 = 11, disc = 0;
        write(fd, &a0, 8); write(fd, &l0, 4); write(fd, &disc, 4); write(fd, src, strlen(src) + 1);
        write(fd, &a1, 8); write(fd, &l1, 4); write(fd, &disc, 4); write(fd, src, strlen(src) + 1);
    }
    emit_unwind(sizeof(body));
    emit_load("jitted_hot_loop", mem, sizeof(body), 0);
    emit_load("jitted_cold_loop", mem + 64, sizeof(body), 1);
    ((void (*)(void))mem)();
    ((void (*)(void))(mem + 64))();
    munmap(marker, sysconf(_SC_PAGESIZE));
    close(fd);
    return 0;
}
"#;

fn build(dir: &Path) -> Option<PathBuf> {
    let src = dir.join("jit.c");
    let bin = dir.join("jit");
    std::fs::write(&src, JIT).unwrap();
    let ok = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

/// The `jit-PID.dump` files in `dir`.
fn dumps(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("jit-") && n.ends_with(".dump"))
        })
        .collect();
    v.sort();
    v
}

/// What `readelf` says of the unwinding tables of a jitted function's ELF file: the
/// `.eh_frame`/`.eh_frame_hdr` section rows (name, type, address, size) and the
/// `--debug-dump=frames` text.
fn unwind_tables(so: &Path) -> (Vec<String>, String) {
    let out = |args: &[&str]| {
        let o = Command::new("readelf").args(args).arg(so).output().unwrap();
        assert!(o.status.success(), "readelf {args:?} {}", so.display());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let sections = out(&["-SW"])
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(']').nth(1)?.split_whitespace().collect();
            f[0].starts_with(".eh_frame")
                .then(|| format!("{} {} {} {}", f[0], f[1], f[2], f[4]))
        })
        .collect();
    (sections, out(&["--debug-dump=frames"]))
}

/// The `dso symbol` rows of a `--sort dso,sym` report, with their percentages.
fn rows(report: &str) -> Vec<(f64, String)> {
    report
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains('%'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            let rest = rest.split_whitespace().collect::<Vec<_>>().join(" ");
            Some((pct.trim().parse().ok()?, rest))
        })
        .collect()
}

#[test]
fn jitted_functions_are_named_as_perf_inject_names_them() {
    if !cfg!(target_arch = "x86_64") {
        return skip("the test's generated code is x86-64");
    }
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler");
    };
    let record = |tool: &str, out: &str| -> PathBuf {
        let mut cmd = if tool == "perf" {
            assert_cmd::Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(
            cmd.current_dir(dir.path())
                .args(["record", "-q", "-k", "1", "-o", out])
                .arg(&bin)
                .arg(dir.path()),
        );
        dir.path().join(out)
    };
    let inject = |tool: &str, input: &Path, out: &str| -> PathBuf {
        let mut cmd = if tool == "perf" {
            assert_cmd::Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(
            cmd.args(["inject", "--jit", "-i"])
                .arg(input)
                .arg("-o")
                .arg(dir.path().join(out)),
        );
        dir.path().join(out)
    };
    let report_args = ["report", "--stdio", "--sort", "dso,sym"];
    for recorder in ["perf", "perfkit"] {
        let before = dumps(dir.path());
        let data = record(recorder, &format!("{recorder}.data"));
        let dump = dumps(dir.path())
            .into_iter()
            .find(|d| !before.contains(d))
            .expect("the program wrote its jitdump");
        let pid = dump.to_str().unwrap().rsplit("jit-").next().unwrap();
        let hot_so = dir
            .path()
            .join(format!("jitted-{}-0.so", pid.trim_end_matches(".dump")));
        // perf's injection first (its ELF files), then perfkit's over the same dump (which
        // rewrites them): each is read right after it was made.
        let theirs = inject("perf", &data, &format!("{recorder}.perf-jit.data"));
        let their_rows = rows(&perf_ok(&report_args, &theirs));
        let their_script = perf_ok(&["script", "-F", "tid,time,ip,sym,dso"], &theirs);
        let their_unwind = unwind_tables(&hot_so);
        let ours = inject("perfkit", &data, &format!("{recorder}.kit-jit.data"));
        // JIT_CODE_UNWINDING_INFO: the hot loop's file has perf's .eh_frame (at the code's
        // end rounded up to 8: 0x80 + 10 -> 0x90) and .eh_frame_hdr right after it, and
        // its one FDE covers the code (0x80..0x8a), as in perf's file.
        let our_unwind = unwind_tables(&hot_so);
        assert_eq!(
            our_unwind.0,
            [
                ".eh_frame PROGBITS 0000000000000090 000034",
                ".eh_frame_hdr PROGBITS 00000000000000c4 000014"
            ],
            "{recorder}'s recording: sections"
        );
        assert_eq!(our_unwind.0, their_unwind.0, "{recorder}'s recording");
        let fdes: Vec<&str> = our_unwind.1.lines().filter(|l| l.contains("FDE")).collect();
        assert_eq!(fdes.len(), 1, "{}", our_unwind.1);
        assert!(
            fdes[0].ends_with("pc=0000000000000080..000000000000008a"),
            "{}",
            our_unwind.1
        );
        assert_eq!(
            our_unwind.1, their_unwind.1,
            "{recorder}'s recording: frames"
        );
        let our_rows = rows(&perf_ok(&report_args, &ours));
        assert_eq!(our_rows, their_rows, "{recorder}'s recording: perf report");
        assert_eq!(
            perf_ok(&["script", "-F", "tid,time,ip,sym,dso"], &ours),
            their_script,
            "{recorder}'s recording: perf script"
        );
        // perfkit's report of its own injection: the same rows, the hot loop first.
        let kit_rows = rows(&stdout_ok(perfkit().args(report_args).arg("-i").arg(&ours)));
        assert_eq!(
            kit_rows, their_rows,
            "{recorder}'s recording: perfkit report"
        );
        let hot = &kit_rows[0];
        assert!(
            hot.1.starts_with("jitted-") && hot.1.ends_with(".so [.] jitted_hot_loop"),
            "{kit_rows:?}"
        );
        let cold = kit_rows
            .iter()
            .find(|r| r.1.ends_with("jitted_cold_loop"))
            .expect("the cold loop is named too");
        assert!(hot.0 > 3.0 * cold.0, "{kit_rows:?}");
        // Source lines from JIT_CODE_DEBUG_INFO: perfkit's ELF files carry them as DWARF,
        // which perf's report and perfkit's resolve (perf 6.1's own files here resolve
        // to `??:0`, so this is not compared with perf's injection).
        let srclines = perf_ok(&["report", "--stdio", "--sort", "sym,srcline"], &ours);
        assert!(
            srclines
                .lines()
                .any(|l| l.contains("jitted_hot_loop") && l.contains("app.js:11")),
            "{srclines}"
        );
        let ours_src = stdout_ok(
            perfkit()
                .args(["report", "--stdio", "--sort", "sym,srcline", "-i"])
                .arg(&ours),
        );
        // As perf: the file's name, its directories under `--full-source-path`.
        assert!(
            ours_src
                .lines()
                .any(|l| l.contains("jitted_hot_loop") && l.contains(" app.js:11")),
            "{ours_src}"
        );
        let full_src = stdout_ok(
            perfkit()
                .args(["report", "--stdio", "--full-source-path"])
                .args(["--sort", "sym,srcline", "-i"])
                .arg(&ours),
        );
        assert!(
            full_src
                .lines()
                .any(|l| l.contains("jitted_hot_loop") && l.contains("/jit/app.js:11")),
            "{full_src}"
        );
        // The jitdump's own mapping is gone; the ELF files are next to it.
        let mmaps = perf_ok(&["script", "--show-mmap-events", "-F", "comm"], &ours);
        assert!(!mmaps.contains(".dump"), "{mmaps}");
        assert!(mmaps.contains("jitted-"), "{mmaps}");
    }
}

#[test]
fn jit_needs_a_monotonic_recording_as_perf_says() {
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("plain.data");
    run_ok(
        perfkit()
            .args(["record", "-q", "-o"])
            .arg(&data)
            .args(["--", "true"]),
    );
    let ours = perfkit()
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(dir.path().join("o.data"))
        .output()
        .unwrap();
    let theirs = Command::new("perf")
        .args(["inject", "--jit", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(dir.path().join("p.data"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(!ours.status.success(), "{err}");
    assert!(err.contains("perf record -k 1"), "{err}");
    // perf refuses it with the same words (it exits non-zero too) or, where a version
    // accepts it, at least does not name anything jitted.
    let perf_err = String::from_utf8_lossy(&theirs.stderr);
    if !theirs.status.success() {
        assert!(perf_err.contains("perf record -k 1"), "{perf_err}");
    }
}

/// The call chains of `perf script -F ip,sym`: per sample, its symbols, leaf first.
fn chains(script: &str) -> Vec<Vec<String>> {
    script
        .split("\n\n")
        .map(|s| {
            s.lines()
                .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty())
        .collect()
}

#[test]
fn dwarf_unwinding_goes_through_jitted_code_with_its_eh_frame() {
    if !cfg!(target_arch = "x86_64") {
        return skip("the test's generated code is x86-64");
    }
    if !have_perf() {
        return skip("perf is not installed");
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path()) else {
        return skip("no C compiler");
    };
    for recorder in ["perf", "perfkit"] {
        let data = dir.path().join(format!("{recorder}.data"));
        let mut cmd = if recorder == "perf" {
            assert_cmd::Command::new("perf")
        } else {
            perfkit()
        };
        run_ok(
            cmd.current_dir(dir.path())
                .args(["record", "-q", "-k", "1", "--call-graph", "dwarf", "-o"])
                .arg(&data)
                .arg(&bin)
                .arg(dir.path()),
        );
        let inject = |tool: &str| -> PathBuf {
            let out = dir.path().join(format!("{recorder}.{tool}-jit.data"));
            let mut cmd = if tool == "perf" {
                assert_cmd::Command::new("perf")
            } else {
                perfkit()
            };
            run_ok(
                cmd.args(["inject", "--jit", "-i"])
                    .arg(&data)
                    .arg("-o")
                    .arg(&out),
            );
            out
        };
        // Each injection is read before the next rewrites the ELF files.
        let theirs = perf_ok(&["script", "-F", "ip,sym"], &inject("perf"));
        let ours_data = inject("perfkit");
        let ours = perf_ok(&["script", "-F", "ip,sym"], &ours_data);
        assert_eq!(
            ours, theirs,
            "{recorder}'s recording: perf script call chains"
        );
        // The hot loop has an FDE: perf's DWARF unwinder steps out of it into main. The
        // cold loop has none, so its chains stop at it.
        let chains = chains(&ours);
        let hot: Vec<_> = chains
            .iter()
            .filter(|c| c[0] == "jitted_hot_loop")
            .collect();
        let through = hot.iter().filter(|c| c.get(1).is_some_and(|s| s == "main"));
        assert!(
            !hot.is_empty() && 2 * through.count() >= hot.len(),
            "{recorder}'s recording: {ours}"
        );
        assert!(
            chains
                .iter()
                .filter(|c| c[0] == "jitted_cold_loop")
                .all(|c| c.len() == 1),
            "{recorder}'s recording: {ours}"
        );
        // perfkit's report unwinds it too.
        let report = stdout_ok(
            perfkit()
                .args(["report", "--stdio", "--no-children", "-i"])
                .arg(&ours_data),
        );
        let tree: Vec<&str> = report
            .lines()
            .skip_while(|l| !l.contains("[.] jitted_hot_loop"))
            .take(4)
            .collect();
        assert!(
            tree.iter().any(|l| l.trim() == "main"),
            "{recorder}'s recording: {report}"
        );
    }
}
