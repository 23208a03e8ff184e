#!/usr/bin/env bash
# The library's hardware-counter paths, tested on a real (emulated) PMU.
#
# This machine has no hardware PMU, but qemu-system-aarch64 under TCG emulates an ARMv8
# PMUv3 (6 event counters + the cycle counter) and with `-icount shift=0` its instruction
# counts are exact and repeatable. This script, run from the repository root as root with
# no arguments:
#
#   1. installs qemu-system-arm, the aarch64 cross linker, cpio (apt) and the Rust aarch64
#      standard library (rustup);
#   2. downloads a Debian arm64 kernel and busybox (cached in $PERFKIT_ARM64_CACHE,
#      default /var/cache/perfkit-arm64, so a second run downloads nothing);
#   3. cross-builds perfkit-hwtest and the perfkit command for aarch64, statically linked;
#   4. packs them into an initramfs whose /init runs the tests;
#   5. boots it twice: `-cpu max` (64-bit event counters) and `-cpu cortex-a57` (32-bit
#      event counters), with `-icount shift=0`;
#   6. in each guest, after the tests, records the hot-loop program (tests/common/hotloop.rs,
#      cross-built) with `perfkit record -e cycles:u` and annotates it with `perfkit annotate --stdio`; the
#      host checks that against aarch64-linux-gnu-objdump (the `annotate_in_guest` line);
#      and counts perf 6.1's hip08 `retiring` metric with `perfkit stat -M` (`metric_in_guest`);
#   7. prints every test's PASS/FAIL line, `N passed, M failed`, and the boot-to-result time.
#
# Exit status 0 only when every test ran and passed. A step that fails says which and why.
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
CACHE=${PERFKIT_ARM64_CACHE:-/var/cache/perfkit-arm64}
TARGET=aarch64-unknown-linux-gnu
export DEBIAN_FRONTEND=noninteractive
STEP=start

fail() {
    echo "arm64-pmu-test: FAILED in step '$STEP': $*" >&2
    exit 1
}
step() {
    STEP=$1
    echo "== $STEP"
}
# Run a command; on failure, stop with its last lines of output.
run() {
    local log
    log=$(mktemp)
    if ! "$@" >"$log" 2>&1; then
        tail -n 25 "$log" >&2
        rm -f "$log"
        fail "\`$*\` failed"
    fi
    rm -f "$log"
}

[ "$(id -u)" = 0 ] || { STEP=checks; fail "run as root (it installs packages and runs qemu)"; }
mkdir -p "$CACHE" || { STEP=checks; fail "cannot create the cache directory $CACHE"; }
t_start=$(date +%s.%N)

# --- 1. host tools ------------------------------------------------------------------------
step "host packages (qemu-system-arm, gcc-aarch64-linux-gnu, cpio)"
need=()
command -v qemu-system-aarch64 >/dev/null || need+=(qemu-system-arm)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-arm64-cross)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
    run apt-get update -qq
    run apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

step "Rust standard library for $TARGET"
if ! rustc --print target-libdir --target "$TARGET" 2>/dev/null | xargs -I{} test -d {}; then
    command -v rustup >/dev/null ||
        fail "no rustup to add the $TARGET target; install it with https://rustup.rs"
    run rustup target add "$TARGET"
fi

# --- 2. guest kernel and busybox ----------------------------------------------------------
step "arm64 kernel and busybox (cache: $CACHE)"
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    run dpkg --add-architecture arm64
    run apt-get update -qq
fi
kernel_deb=$(ls "$CACHE"/linux-image-*_arm64.deb 2>/dev/null | head -n 1)
busybox_deb=$(ls "$CACHE"/busybox-static_*_arm64.deb 2>/dev/null | head -n 1)
if [ -z "$kernel_deb" ] || [ -z "$busybox_deb" ]; then
    # The current stock kernel: what the linux-image-arm64 metapackage points at.
    kpkg=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
        sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -n 1)
    if [ -z "$kpkg" ]; then
        run apt-get update -qq
        kpkg=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
            sed -n 's/^ *Depends: \(linux-image-[0-9][^:]*\).*/\1/p' | head -n 1)
    fi
    [ -n "$kpkg" ] || fail "apt knows no linux-image-arm64:arm64 (is the Debian arm64 archive reachable?)"
    cd "$CACHE" || fail "cannot enter $CACHE"
    run apt-get download "$kpkg:arm64" busybox-static:arm64
    cd "$ROOT" || fail "cannot return to $ROOT"
    kernel_deb=$(ls "$CACHE"/linux-image-*_arm64.deb 2>/dev/null | head -n 1)
    busybox_deb=$(ls "$CACHE"/busybox-static_*_arm64.deb 2>/dev/null | head -n 1)
    [ -n "$kernel_deb" ] && [ -n "$busybox_deb" ] || fail "the downloads did not produce the .deb files"
fi
if [ ! -d "$CACHE/kernel" ]; then
    run dpkg-deb -x "$kernel_deb" "$CACHE/kernel.tmp"
    mv "$CACHE/kernel.tmp" "$CACHE/kernel"
fi
if [ ! -d "$CACHE/busybox" ]; then
    run dpkg-deb -x "$busybox_deb" "$CACHE/busybox.tmp"
    mv "$CACHE/busybox.tmp" "$CACHE/busybox"
fi
vmlinuz=$(ls "$CACHE"/kernel/boot/vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$vmlinuz" ] || fail "no boot/vmlinuz-* in $kernel_deb"
[ -x "$CACHE/busybox/bin/busybox" ] || fail "no bin/busybox in $busybox_deb"

# --- 3. cross-build -----------------------------------------------------------------------
step "cross-build perfkit-hwtest and perfkit for $TARGET (static)"
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUSTFLAGS="-C target-feature=+crt-static"
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
target_dir=${CARGO_TARGET_DIR:-$ROOT/target}
run cargo build --release --locked --target "$TARGET" -p perfkit-hwtest -p perfkit-cli -p perfkit-markers
bin_dir=$target_dir/$TARGET/release
[ -x "$bin_dir/perfkit-hwtest" ] && [ -x "$bin_dir/perfkit" ] || fail "no binaries in $bin_dir"

# The LIKWID and PAPI programs, written against Debian's headers (likwid, libpapi-dev on
# the host; the headers are architecture-independent) and linked statically against
# perfkit's marker library: the guest has no dynamic loader for LD_PRELOAD.
step "cross-compile the LIKWID and PAPI region programs"
hdrs=$(mktemp -d)
c_progs=()
for h in likwid-marker.h likwid.h bstrlib.h papi.h papiStdEventDefs.h; do
    [ -e "/usr/include/$h" ] && cp "/usr/include/$h" "$hdrs/"
done
for prog in spin_likwid spin_papi; do
    hdr=likwid-marker.h
    [ "$prog" = spin_papi ] && hdr=papi.h
    if [ ! -e "$hdrs/$hdr" ]; then
        echo "arm64-pmu-test: no /usr/include/$hdr (apt-get install likwid libpapi-dev): $prog not built" >&2
        continue
    fi
    run aarch64-linux-gnu-gcc -static -O1 -DLIKWID_PERFMON -I"$hdrs" -o "$hdrs/$prog" \
        "crates/perfkit-hwtest/fixtures/$prog.c" "$bin_dir/libperfkit_markers.a" -lpthread -ldl -lm
    c_progs+=("$hdrs/$prog")
done

# The hot-loop workload of the annotate tests (crates/perfkit-cli/tests/common/hotloop.rs),
# static: the guest records it with `perfkit record` and annotates it with `perfkit annotate`.
step "cross-compile the annotate workload (hotloop.c)"
sed -n '/SOURCE: &str = r#"/,/^"#;/p' crates/perfkit-cli/tests/common/hotloop.rs | sed '1d;$d' \
    >"$hdrs/hotloop.c"
[ -s "$hdrs/hotloop.c" ] || fail "no C source in crates/perfkit-cli/tests/common/hotloop.rs"
run aarch64-linux-gnu-gcc -static -O2 -g -o "$hdrs/hotloop" "$hdrs/hotloop.c"
c_progs+=("$hdrs/hotloop")

# --- 4. initramfs -------------------------------------------------------------------------
step "initramfs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,proc,sys,dev,tmp}
cp "$CACHE/busybox/bin/busybox" "$rootfs/bin/busybox"
cp "$bin_dir/perfkit-hwtest" "$bin_dir/perfkit" "$rootfs/bin/"
# Without their debug info: the guest's root file system lives in its 512 MB of memory, and
# the unstripped binaries (over 130 MB) left /tmp too little room for a recording.
aarch64-linux-gnu-strip --strip-debug "$rootfs/bin/perfkit-hwtest" "$rootfs/bin/perfkit" ||
    fail "aarch64-linux-gnu-strip failed (apt-get install binutils-aarch64-linux-gnu)"
[ ${#c_progs[@]} -gt 0 ] && cp "${c_progs[@]}" "$rootfs/bin/"
cp "$hdrs/hotloop" "$work/hotloop"
rm -rf "$hdrs"
cat >"$rootfs/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
# No address-space randomisation: the same command runs the same instructions.
echo 0 >/proc/sys/kernel/randomize_va_space
cpu=$(sed -n 's/.*hwtest.cpu=\([^ ]*\).*/\1/p' /proc/cmdline)
echo "HWTEST-BEGIN cpu=$cpu"
/bin/perfkit-hwtest --cpu "$cpu"
echo "HWTEST-END status=$?"
# annotate end to end: a recording of the hot loop made here, on the emulated PMU's
# user-mode instruction counter, annotated here (the host checks it against objdump).
if [ -x /bin/hotloop ]; then
    echo "ANNOTATE-BEGIN"
    cd /tmp
    # Emulated interrupts are slow: the kernel has lowered its sample-rate limit during the
    # tests (to a sample per tick or so). Restore it, then stop it from lowering it again.
    echo 100000 >/proc/sys/kernel/perf_event_max_sample_rate
    echo 100 >/proc/sys/kernel/perf_cpu_time_max_percent
    # Sampled on the cycle counter: under -icount shift=0 a cycle is one instruction's
    # nanosecond, and qemu raises the cycle counter's overflow interrupt when it overflows,
    # but an event counter's (instructions) only at the next timer tick (4M instructions),
    # so instructions:u at this period gives one sample per tick; its count is printed too.
    # (The recorded command's exit status is its result's low bit: not checked.)
    /bin/perfkit record -q -e cycles:u -c 20011 -o /tmp/perf.data -- /bin/hotloop 40000000 1 \
        >/dev/null 2>/tmp/record.err
    echo "ANNOTATE-RECORD status=$?"
    cat /tmp/record.err
    /bin/perfkit record -q -e instructions:u -c 20011 -o /tmp/insn.data -- /bin/hotloop 40000000 1 \
        >/dev/null 2>&1
    echo "ANNOTATE-INSN-SAMPLES $(/bin/perfkit script -F sym -i /tmp/insn.data 2>/dev/null | grep -cw hot)"
    /bin/perfkit report --stats -i /tmp/insn.data 2>/dev/null | grep -E "LOST|THROTTLE" |
        sed 's/^/ANNOTATE-INSN-STATS /'
    rm -f /tmp/insn.data
    /bin/perfkit report --stdio -q --sort sym -i /tmp/perf.data 2>&1 | head -n 5
    /bin/perfkit annotate --stdio --no-source -q -s hot -i /tmp/perf.data 2>&1
    echo "ANNOTATE-END status=$?"
    # A metric from perf 6.1's table of an arm64 core (HiSilicon hip08, chosen by its MIDR
    # as perf would) counted on the emulated PMU: `retiring` is INST_RETIRED /
    # (CPU_CYCLES * 4), both events qemu's PMUv3 has (the host checks the value).
    echo "METRIC-BEGIN"
    PERFKIT_CPUID=0x00000000480fd010 /bin/perfkit stat -x, -M retiring -- /bin/hotloop 4000000 1 \
        2>&1 >/dev/null
    echo "METRIC-END status=$?"
fi
poweroff -f
EOF
chmod +x "$rootfs/init"
(cd "$rootfs" && find . | cpio -o -H newc --quiet | gzip -1 >"$work/initrd.gz") ||
    fail "cpio/gzip of the initramfs failed"

# --- 5. boot ------------------------------------------------------------------------------
# The guest's `perfkit annotate --stdio` of `hot` against aarch64-linux-gnu-objdump of the
# same binary: every instruction at objdump's address with objdump's mnemonic, the shares
# summing to 100%, and the hottest instruction inside the hot loop (from the target of its
# backward branch to that branch). Prints one PASS or FAIL line.
check_annotate() {
    python3 - "$1" "$work/hotloop" <<'PY'
import re, subprocess, sys
log, binary = sys.argv[1], sys.argv[2]
lines = open(log, errors="replace").read().splitlines()
if "ANNOTATE-BEGIN" not in lines:
    print("FAIL annotate_in_guest: the guest printed no ANNOTATE-BEGIN"); sys.exit()
body = lines[lines.index("ANNOTATE-BEGIN") + 1:]
end = next((l for l in body if l.startswith("ANNOTATE-END")), None)
rec = next((l for l in body if l.startswith("ANNOTATE-RECORD")), "")
if not rec or end != "ANNOTATE-END status=0":
    print("FAIL annotate_in_guest: %s, %s: %s" % (rec, end, " | ".join(body[:30]))); sys.exit()
text = body[:body.index(end)]
m = next((re.search(r"\((\d+) samples", l) for l in text if "samples, percent" in l), None)
nsamples = int(m.group(1)) if m else 0
ours = {}
for l in text:
    m = re.match(r"\s*([0-9.]+) :\s+([0-9a-f]+):\s+(\S+)", l)
    if m:
        ours[int(m.group(2), 16)] = (float(m.group(1)), m.group(3))
dump = subprocess.run(["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", binary],
                      capture_output=True, text=True).stdout.splitlines()
start = next(i for i, l in enumerate(dump) if l.endswith("<hot>:"))
theirs = {}
loop = None
for l in dump[start + 1:]:
    if not l.strip():
        break
    m = re.match(r"\s*([0-9a-f]+):\s+(\S+)\s*(.*)", l)
    if not m:
        continue
    a = int(m.group(1), 16)
    theirs[a] = m.group(2)
    t = re.match(r"([0-9a-f]+) <hot\+", m.group(3))
    if m.group(2).startswith(("b", "cb", "tb")) and t and int(t.group(1), 16) < a:
        loop = (int(t.group(1), 16), a)
# hot(40000000 / 4) runs its loop 10M times, every instruction of the loop each time (at -O2
# the `if` is a csel), one cycle each under -icount shift=0, sampled every 20011 cycles: 3498
# samples for its 7 instructions on both CPUs, exactly; 1% is left for qemu's rare extra counts.
ITERATIONS, PERIOD, LOW, HIGH = 10_000_000, 20011, 0.99, 1.01
loop_len = len([a for a in theirs if loop and loop[0] <= a <= loop[1]])
expected = ITERATIONS * loop_len // PERIOD
insn = next((l.split()[1] for l in body if l.startswith("ANNOTATE-INSN-SAMPLES ")), "?")
print("INFO annotate_in_guest: instructions:u at the same period gave %s samples in hot, cycles:u "
      "the number checked below: qemu raises an event counter's overflow interrupt only at the "
      "next timer tick" % insn)
for l in body:
    if l.startswith("ANNOTATE-INSN-STATS "):
        print("INFO annotate_in_guest: instructions:u recording: " + " ".join(l.split()[1:]))
bad = [a for a in theirs if a not in ours or ours[a][1] != theirs[a]]
total = sum(p for p, _ in ours.values())
hot_addr, (hot_pct, hot_m) = max(ours.items(), key=lambda kv: kv[1][0]) if ours else (0, (0, ""))
if not ours or bad or set(ours) != set(theirs):
    print("FAIL annotate_in_guest: instructions differ from objdump at %s: %s"
          % ([hex(a) for a in bad][:5], " | ".join(text[:40])))
elif loop is None:
    print("FAIL annotate_in_guest: objdump shows no backward branch in hot")
elif not LOW * expected <= nsamples <= HIGH * expected:
    print("FAIL annotate_in_guest: %d samples in hot, want %d-%d (%d iterations of its %d-instruction "
          "loop at period %d): %s" % (nsamples, LOW * expected, HIGH * expected, ITERATIONS, loop_len,
                                      PERIOD, " | ".join(text[:12])))
elif abs(total - 100.0) > 0.5 or not loop[0] <= hot_addr <= loop[1]:
    print("FAIL annotate_in_guest: shares sum to %.2f%%, hottest %x (%s, %.2f%%) outside the loop %x-%x"
          % (total, hot_addr, hot_m, hot_pct, loop[0], loop[1]))
else:
    print("PASS annotate_in_guest: perfkit record -e cycles:u + annotate --stdio in the guest: "
          "%d samples in hot (%d expected), its %d instructions as objdump lists them, hottest %x `%s` %.2f%% "
          "inside the loop %x-%x (shares sum to %.2f%%)"
          % (nsamples, expected, len(ours), hot_addr, hot_m, hot_pct, loop[0], loop[1], total))
PY
}

# The guest's `stat -M retiring` (hip08's table): both events counted, and the metric the
# value of its formula over the two counts as printed. Prints one PASS or FAIL line.
check_metric() {
    python3 - "$1" <<'PY'
import sys
lines = open(sys.argv[1], errors="replace").read().splitlines()
try:
    body = lines[lines.index("METRIC-BEGIN") + 1:]
    end = next(i for i, l in enumerate(body) if l.startswith("METRIC-END"))
except (ValueError, StopIteration):
    print("FAIL metric_in_guest: no METRIC-BEGIN/END in the guest's output"); sys.exit()
body, status = body[:end], body[end]
counts, metric = {}, None
for l in body:
    f = l.split(",")
    if len(f) >= 3 and f[2].upper() in ("INST_RETIRED", "CPU_CYCLES") and f[0].isdigit():
        counts[f[2].upper()] = int(f[0])
    if len(f) >= 2 and f[-1].strip() == "retiring" and f[-2].strip():
        metric = float(f[-2])
# (stat passes the command's exit status on: hotloop's is its result's low bit, not checked.)
if len(counts) != 2 or metric is None:
    print("FAIL metric_in_guest: %s, counts %s, metric %s: %s" % (status, counts, metric, " | ".join(body)))
    sys.exit()
want = counts["INST_RETIRED"] / (counts["CPU_CYCLES"] * 4)
if counts["INST_RETIRED"] < 4000000 or abs(metric - want) > 0.006:
    print("FAIL metric_in_guest: retiring %s, want %.4f from INST_RETIRED %d / (CPU_CYCLES %d * 4)"
          % (metric, want, counts["INST_RETIRED"], counts["CPU_CYCLES"]))
else:
    print("PASS metric_in_guest: stat -M retiring (perf 6.1's hip08 table) on the emulated PMU: "
          "%s = INST_RETIRED %d / (CPU_CYCLES %d * 4)" % (metric, counts["INST_RETIRED"], counts["CPU_CYCLES"]))
PY
}

passed=0
failed=0
boot() {
    local cpu=$1 name=$2 log=$work/console-$2.log
    step "boot -cpu $cpu"
    local t0 t1
    t0=$(date +%s.%N)
    timeout 600 qemu-system-aarch64 -M virt -cpu "$cpu" -smp 1 -m 512 -nographic \
        -no-reboot -nic none -kernel "$vmlinuz" -initrd "$work/initrd.gz" \
        -append "console=ttyAMA0 rdinit=/init panic=-1 quiet hwtest.cpu=$name" \
        -icount shift=0 </dev/null >"$log" 2>&1
    local rc=$?
    t1=$(date +%s.%N)
    tr -d '\r' <"$log" >"$log.txt"
    if ! grep -q '^HWTEST-END' "$log.txt"; then
        tail -n 30 "$log.txt" >&2
        fail "the guest (-cpu $cpu) did not finish its tests (qemu exit $rc)"
    fi
    check_annotate "$log.txt" >>"$log.txt"
    check_metric "$log.txt" >>"$log.txt"
    grep -E '^(PASS|FAIL|SKIP|INFO) ' "$log.txt" | sed "s/^/[$name] /"
    passed=$((passed + $(grep -c '^PASS ' "$log.txt")))
    failed=$((failed + $(grep -c '^FAIL ' "$log.txt")))
    printf '[%s] boot to result: %.1f s\n' "$name" "$(echo "$t1 - $t0" | bc -l)"
}
command -v bc >/dev/null || { STEP=checks; run apt-get install -y -qq --no-install-recommends bc; }
boot "max,pauth-impdef=on" max
boot "cortex-a57" cortex-a57

t_end=$(date +%s.%N)
echo "$passed passed, $failed failed"
printf 'total time: %.1f s\n' "$(echo "$t_end - $t_start" | bc -l)"
[ "$passed" -gt 0 ] || fail "no test reported a result"
[ "$failed" -eq 0 ]
