#!/bin/sh
# Compare perfkit's demangling with binutils' c++filt (libiberty, which perf 6.1 links) over
# the C++ symbols of binaries: `-v` names (c++filt -i) and default names (c++filt -p -i).
# Usage: scripts/demangle-vs-cxxfilt.sh BINARY... ; prints the counts and keeps the
# differing names in $OUT (default /tmp/demangle-diff).
set -eu
OUT=${OUT:-/tmp/demangle-diff}
mkdir -p "$OUT"
cargo build -q --release -p perfkit-symbols --example demangle
EX=target/release/examples/demangle
for bin in "$@"; do
    base=$(basename "$bin")
    { nm --defined-only "$bin" 2>/dev/null; nm -D --defined-only "$bin" 2>/dev/null; } |
        awk '{print $NF}' | sed 's/@.*//' | grep '^_Z' | sort -u > "$OUT/$base.names" || true
    n=$(wc -l < "$OUT/$base.names")
    for mode in v p; do
        if [ $mode = v ]; then flags="-i"; exflag=""; else flags="-p -i"; exflag="-p"; fi
        c++filt $flags < "$OUT/$base.names" > "$OUT/$base.$mode.cxxfilt"
        $EX $exflag < "$OUT/$base.names" > "$OUT/$base.$mode.perfkit"
        paste -d '\n' "$OUT/$base.names" "$OUT/$base.$mode.cxxfilt" "$OUT/$base.$mode.perfkit" |
            awk 'NR%3==1{m=$0} NR%3==2{c=$0} NR%3==0{ if (c != $0) print m "\n  c++filt: " c "\n  perfkit: " $0 }' \
            > "$OUT/$base.$mode.diff"
        d=$(grep -c '^  c++filt' "$OUT/$base.$mode.diff" || true)
        echo "$base -$mode: $d of $n names differ from c++filt ($OUT/$base.$mode.diff)"
    done
done
