#!/usr/bin/env bash
# Writes the machine-made seeds of the fuzzing corpus (crates/session/tests/corpus/README.md).
# Needs root (measurement and tracing) and a built target/release/rtscope.
set -euo pipefail
cd "$(dirname "$0")/.."
R=${RTSCOPE:-target/release/rtscope}
C=crates/session/tests/corpus
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$R" trace record -D 1s --no-store -o "$C/rtt/record-1s.rtt" >/dev/null
"$R" run -D 5s -q --no-store -o "$T/run" >/dev/null
cp "$T"/run/*/trace.rtt "$C/rtt/flight-5s.rtt"
cp "$T"/run/*/run.json "$C/run-record/run-5s-traced.json"
"$R" measure -D 1s -q --no-store --json "$C/run-record/measure-1s.json" >/dev/null
"$R" taskset gen -n 5 -u 0.6 --seed 7 -o "$C/taskset-json/gen-5.json"
"$R" taskset gen -n 5 -u 0.6 --seed 7 --format toml -o "$C/taskset-toml/gen-5.toml"
if command -v cyclictest >/dev/null; then
    cyclictest -m -S -p 95 -i 1000 -D 2 -h 50 -q --json="$C/cyclictest-json/rt-tests-h50.json" \
        >"$C/cyclictest-text/rt-tests-h50.txt"
fi
ls -la "$C"/*/
