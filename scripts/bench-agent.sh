#!/bin/sh
# The agent's cost beside a busy workload: CPU share (of one CPU) and RSS every 30 s, and
# in total, for MINUTES minutes (default 10). Extra arguments go to scripts/bench-fleet.py
# (--churn, --perfkit BIN, -- AGENT FLAGS). Run as root with a release build:
#   cargo build --release -p perfkit-cli && scripts/bench-agent.sh 10 --churn
minutes=${1:-10}
[ $# -gt 0 ] && shift
exec python3 "$(dirname "$0")/bench-fleet.py" agent --seconds $((minutes * 60)) "$@"
