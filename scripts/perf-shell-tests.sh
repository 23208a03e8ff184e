#!/bin/bash
# Run perf 6.1's own shell tests (/usr/lib/perf-core/tests/shell/*.sh) twice: with the real
# perf, then with perfkit behind a `perf` name (a wrapper first on PATH), each run in its own
# temporary directory with a time limit. Prints a table (test, perf, perfkit: pass, fail,
# skip or timeout from exit 0, 1, 2, 124) and a last line counting perfkit's results on the
# tests perf passes here: "N passed, N failed".
#
# Usage: scripts/perf-shell-tests.sh [TEST...]     (TEST: a name such as stat or stat.sh)
# Environment: PERFKIT (the binary; default target/debug/perfkit, built if missing),
#              PERF_TESTS_DIR (default /usr/lib/perf-core/tests/shell),
#              TEST_TIMEOUT (seconds per test and tool; default 120),
#              VERBOSE=1 (print each failing run's output).
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
tests_dir=${PERF_TESTS_DIR:-/usr/lib/perf-core/tests/shell}
limit=${TEST_TIMEOUT:-120}
perfkit=${PERFKIT:-$root/target/debug/perfkit}

if [ ! -d "$tests_dir" ]; then
    echo "perf-shell-tests: no perf shell tests at $tests_dir (install linux-perf)" >&2
    exit 2
fi
if ! command -v perf >/dev/null 2>&1; then
    echo "perf-shell-tests: perf is not installed" >&2
    exit 2
fi
if [ ! -x "$perfkit" ]; then
    (cd "$root" && cargo build -q -p perfkit-cli) || exit 1
fi
perfkit=$(cd "$(dirname "$perfkit")" && pwd)/$(basename "$perfkit")

work=$(mktemp -d /tmp/perf-shell-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/bin"
printf '#!/bin/sh\nexec %s "$@"\n' "$perfkit" > "$work/bin/perf"
chmod +x "$work/bin/perf"

tests=()
if [ $# -eq 0 ]; then
    for t in "$tests_dir"/*.sh; do tests+=("$(basename "$t" .sh)"); done
else
    for t in "$@"; do tests+=("$(basename "$t" .sh)"); done
fi

# run_one NAME TOOL: runs one test, prints pass/fail/skip/timeout.
run_one() {
    local name=$1 tool=$2 dir rc path=$PATH
    dir=$(mktemp -d "$work/$name.$tool.XXXXXX")
    [ "$tool" = perfkit ] && path=$work/bin:$PATH
    (cd "$dir" && PATH=$path timeout -k 5 "$limit" bash "$tests_dir/$name.sh" \
        >"$dir.log" 2>&1 </dev/null)
    rc=$?
    if [ "${VERBOSE:-0}" = 1 ] && [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
        echo "---- $name with $tool (exit $rc):" >&2
        tail -n 30 "$dir.log" >&2
    fi
    case $rc in
        0) echo pass ;;
        2) echo skip ;;
        124 | 137) echo timeout ;;
        *) echo fail ;;
    esac
}

printf '%-36s %-8s %-8s\n' test perf perfkit
passed=0
failed=0
for name in "${tests[@]}"; do
    if [ ! -f "$tests_dir/$name.sh" ]; then
        printf '%-36s %-8s %-8s\n' "$name" missing missing
        continue
    fi
    p=$(run_one "$name" perf)
    k=$(run_one "$name" perfkit)
    printf '%-36s %-8s %-8s\n' "$name" "$p" "$k"
    if [ "$p" = pass ]; then
        if [ "$k" = pass ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
    fi
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
