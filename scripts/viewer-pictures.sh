#!/usr/bin/env bash
# The README's pictures of perfkit's exports in their viewers, from one recording of a known
# workload: one process burning CPU in `spin`, another in `leaf` under 8 to 40 frames of
# recursion (crates/perfkit-cli/tests/fixtures/workload.c).
#
#   scripts/viewer-pictures.sh [OUT_DIR]     (default docs/pictures)
#
# Needs what the viewer tests need (.ci/run installs it): chromium, go, node with speedscope,
# playwright-core and ajv in ~/.cache/perfkit-viewers (or $PERFKIT_VIEWERS).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/docs/pictures}")
modules=${PERFKIT_VIEWERS:-$HOME/.cache/perfkit-viewers}/node_modules
shots=$root/crates/perfkit-cli/tests/viewers
mkdir -p "$out"
cargo build -q --release -p perfkit-cli --manifest-path "$root/Cargo.toml"
export PATH=$root/target/release:$PATH

work=$(mktemp -d)
trap 'kill "${pprof_pid:-}" 2>/dev/null; rm -rf "$work"' EXIT
cd "$work"
cc -O1 -fno-omit-frame-pointer -pthread -o workload "$root/crates/perfkit-cli/tests/fixtures/workload.c"
perfkit record -q -g -o perf.data -- sh -c './workload threads 1 400 & ./workload deep 1 400; wait'

perfkit report -q --format flamegraph -o flame.svg
node "$shots/svg_first_screen.mjs" "$modules" flame.svg spin "$out/flamegraph.png" >/dev/null

perfkit report -q --format speedscope -o speedscope.json
node "$shots/speedscope.mjs" "$modules" speedscope.json "$out/speedscope.png" >/dev/null

perfkit report -q --format pprof -o profile.pb.gz
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
go tool pprof -http="127.0.0.1:$port" -no_browser profile.pb.gz >pprof.log 2>&1 &
pprof_pid=$!
for _ in $(seq 50); do grep -qs "Serving web UI" pprof.log && break; sleep 0.2; done
node "$shots/screenshot.mjs" "$modules" "http://127.0.0.1:$port/ui/top" "$out/pprof.png" 1500 >/dev/null

ls -l "$out"
