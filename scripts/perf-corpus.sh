#!/usr/bin/env bash
# Records a corpus of perf 6.1 recordings for comparing perfkit's report/script with perf's
# (scripts/perf-corpus-compare.py). Everything goes OUTSIDE the repository: recordings are
# never committed.
#
#   scripts/perf-corpus.sh [DIR]        (default /work/corpora/perf61)
#
# DIR/bin holds the workloads (built here with gcc/g++ -fno-omit-frame-pointer), DIR/*.data the
# recordings; DIR/README lists each file with the perf command that made it. The workloads'
# binaries must stay where they are: the recordings name them by path.
# Needs root (system-wide recordings, tracepoints, uprobes), perf 6.1, gcc, g++.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/work/corpora/perf61}
SRC="$ROOT/scripts/corpus"
FIX="$ROOT/crates/perfkit-cli/tests/fixtures"
BIN="$OUT/bin"
mkdir -p "$BIN"
rm -f "$OUT"/*.data "$OUT"/*.data.old "$OUT/README"
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true

cc_fp="gcc -O1 -g -fno-omit-frame-pointer"
set -e
$cc_fp -pthread -o "$BIN/workload" "$FIX/workload.c"
$cc_fp -pthread -no-pie -o "$BIN/workload-nopie" "$FIX/workload.c"
$cc_fp -pthread -o "$BIN/workload-stripped" "$FIX/workload.c" && strip "$BIN/workload-stripped"
gcc -O2 -g -o "$BIN/workload-nofp" -pthread "$FIX/workload.c"
gcc -O2 -g -fno-omit-frame-pointer -o "$BIN/inline" "$FIX/inline.c"
gcc -O1 -o "$BIN/jit" "$FIX/jit.c"
$cc_fp -o "$BIN/memfd" "$SRC/memfd.c"
$cc_fp -o "$BIN/execs" "$SRC/execs.c"
$cc_fp -o "$BIN/forks" "$SRC/forks.c"
g++ -O0 -g -fno-omit-frame-pointer -o "$BIN/cxx-O0" "$SRC/cxx.cpp"
g++ -O2 -g -fno-omit-frame-pointer -o "$BIN/cxx-O2" "$SRC/cxx.cpp"
g++ -O2 -fno-omit-frame-pointer -o "$BIN/cxx-stripped" "$SRC/cxx.cpp" && strip "$BIN/cxx-stripped"
set +e
W="$BIN/workload"

n=0
# rec NAME PERF-RECORD-ARGS... -- COMMAND...: one recording, DIR/NAME.data
rec() {
    local name=$1; shift
    local out="$OUT/$name.data"
    if perf record -q -o "$out" "$@" >/dev/null 2>"$OUT/$name.err"; then :; fi
    if [ -s "$out" ]; then
        n=$((n + 1)); rm -f "$OUT/$name.err"
        echo "$name.data: perf record $*" >>"$OUT/README"
    else
        echo "FAILED $name: perf record $* ($(tail -1 "$OUT/$name.err"))" >&2
    fi
}
# pipe NAME ARGS...: the same, in pipe mode (perf record -o -)
pipe() {
    local name=$1; shift
    perf record -q -o - "$@" 2>/dev/null >"$OUT/$name.data"
    n=$((n + 1)); echo "$name.data: perf record -o - $*" >>"$OUT/README"
}

# frame pointers
rec fp-spin -g -- $W spin 300
rec fp-threads -g -- $W threads 4 150
rec fp-deep -g -- $W deep 2 200
rec nocg-spin -- $W spin 300
rec nocg-threads -- $W threads 3 150
rec freq-999 -F 999 -g -- $W spin 300
rec period-c -c 100000 -- $W spin 300
rec period-c-g -c 200000 -g -- $W threads 2 150
rec period-attr -e cpu-clock/period=200000/ -g -- $W spin 300
rec task-clock -e task-clock -g -- $W threads 2 150
rec user-only -e cpu-clock:u -g -- $W spin 300
rec nofp-g -g -- "$BIN/workload-nofp" deep 1 300
rec nopie-g -g -- "$BIN/workload-nopie" spin 300
rec stripped-g -g -- "$BIN/workload-stripped" deep 1 300
rec inline-g -g -- "$BIN/inline" 150000000
rec cxx-O0-g -g -- "$BIN/cxx-O0" 300
rec cxx-O2-g -g -- "$BIN/cxx-O2" 300
rec cxx-stripped-g -g -- "$BIN/cxx-stripped" 300
rec cxx-nocg -- "$BIN/cxx-O2" 300
rec jit-g -g -- "$BIN/jit"
rec memfd-g -g -- "$BIN/memfd" 300000000
rec execve-g -g -- "$BIN/execs" 150 "$W" spin 150
rec forks-g -g -- "$BIN/forks" 3 100
rec forks-noinherit --no-inherit -g -- "$BIN/forks" 2 100
rec shell-g -g -- bash -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
rec coreutils-g -g -- sh -c 'seq 1 300000 | sort -r | md5sum >/dev/null'
rec python-g -g -- python3 -c 'sum(i*i for i in range(1500000))'
rec sample-cpu --sample-cpu -g -- $W threads 2 150
rec stat-s -s -g -- $W threads 2 150
rec raw-R -R -- $W spin 200
rec clock-mono -k mono -g -- $W spin 200
rec multi-event -e cpu-clock,page-faults -g -- $W pages 3000
rec page-faults-c1 -e page-faults -c 1 -g -- $W pages 2000
rec faults-minmaj -e minor-faults,major-faults -- $W pages 1000
rec ctxsw-c1 -e context-switches -c 1 -g -- $W sleep 50
# DWARF unwinding
rec dwarf-spin --call-graph dwarf -- $W spin 200
rec dwarf-deep --call-graph dwarf -- $W deep 1 200
rec dwarf-4096 --call-graph dwarf,4096 -- $W deep 1 200
rec dwarf-threads --call-graph dwarf -- $W threads 2 100
rec dwarf-cxx --call-graph dwarf -- "$BIN/cxx-O2" 200
rec dwarf-stripped --call-graph dwarf -- "$BIN/workload-stripped" spin 200
rec dwarf-inline --call-graph dwarf -- "$BIN/inline" 100000000
rec dwarf-nofp --call-graph dwarf -- "$BIN/workload-nofp" deep 1 200
rec dwarf-execve --call-graph dwarf -- "$BIN/execs" 100 "$W" spin 100
rec dwarf-memfd --call-graph dwarf -- "$BIN/memfd" 200000000
# system wide
rec sys-g -a -g -- $W threads 2 200
rec sys-nocg -a -- sleep 0.3
rec sys-kernel -a -e cpu-clock:k -g -- sleep 0.3
rec sys-switch -a --switch-events -- $W sleep 30
rec sys-cgroups -a --all-cgroups -g -- $W spin 200
rec sys-sched-switch -a -e sched:sched_switch -- $W sleep 30
rec sys-sched-wakeup -a -e sched:sched_wakeup,sched:sched_switch -g -- $W sleep 30
rec sys-openat -a -e syscalls:sys_enter_openat -- ls /
rec sys-timer -a -e timer:hrtimer_start,timer:hrtimer_expire_entry -- sleep 0.2
# tracepoints and syscalls
rec tp-getpid -e syscalls:sys_enter_getpid -- $W getpid 2000
rec tp-getpid-g -e syscalls:sys_enter_getpid -g -- $W getpid 500
rec tp-raw-syscalls -e raw_syscalls:sys_enter,raw_syscalls:sys_exit -- $W sleep 20
rec tp-write -e syscalls:sys_enter_write,syscalls:sys_exit_write -- sh -c 'for i in 1 2 3 4 5; do echo $i; done >/dev/null'
rec tp-exec -e sched:sched_process_exec,sched:sched_process_fork -- "$BIN/forks" 2 20
rec tp-and-cpu -e cpu-clock,sched:sched_switch -g -- $W sleep 30
rec switch-events --switch-events -g -- $W sleep 30
# uprobes and breakpoints
if perf probe -q -x "$W" probe_target 2>/dev/null; then
    rec uprobe -e probe_workload:probe_target -- $W calls 3000
    rec uprobe-g -e probe_workload:probe_target -g -- $W calls 500
    perf probe -q -d 'probe_workload:*' 2>/dev/null
fi
addr=$(nm "$BIN/workload-nopie" | awk '$3 == "probe_target" { print $1 }')
rec bp-exec -e "mem:0x$addr:x" -- "$BIN/workload-nopie" calls 3000
rec bp-exec-g -e "mem:0x$addr:x" -g -- "$BIN/workload-nopie" calls 500
# groups
rec group -e '{cpu-clock,task-clock}' -- $W spin 200
rec group-g -e '{cpu-clock,page-faults}' -g -- $W pages 2000
rec group-two -e '{cpu-clock,task-clock}' -e page-faults -- $W pages 2000
# compression, pipe mode, per-thread, zero samples
rec zstd -z -g -- $W deep 1 200
rec zstd-nocg -z -- $W spin 200
pipe pipe-g -g -- $W spin 200
pipe pipe-nocg -- $W threads 2 100
pipe pipe-tp -e syscalls:sys_enter_getpid -- $W getpid 300
rec per-thread --per-thread -- $W threads 2 100
rec per-thread-g --per-thread -g -- $W spin 200
rec zero-samples -e major-faults -- true
rec zero-samples-g -e syscalls:sys_enter_getpid -g -- true
rec zero-samples-sys -a -e syscalls:sys_enter_reboot -- sleep 0.1

rm -f "$OUT"/*.data.old
echo "$n recordings in $OUT (list: $OUT/README)"
