#!/usr/bin/env bash
# Summary bound vs exact bound on the same recorded trace (docs/long-runs.md).
#
# For each load: one traced and bounded `rtscope measure` that keeps every event
# (`--trace-file-mode all`); the run's own bound is the streaming one (online summary: arrival
# curves on a geometric grid of window lengths); then `rtscope bound --trace` recomputes the
# bound exactly from the same file (every interrupt instance, every window). Prints, per CPU and
# characterization, both bounds and their ratio (summary / exact; >= 1 by construction).
#
# Usage: bench/bound-summary-vs-exact.sh [-D DURATION] [-o OUTDIR]   (LOADS="idle io")
# Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS=("$@")
DURATION=60s
OUT=""
while getopts "D:o:" opt; do
    case $opt in
        D) DURATION=$OPTARG ;;
        o) OUT=$OPTARG ;;
        *) echo "usage: $0 [-D DURATION] [-o OUTDIR]" >&2; exit 2 ;;
    esac
done
OUT=${OUT:-bench/out/bound-summary-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RTSCOPE=${RTSCOPE:-target/release/rtscope}
[ -x "$RTSCOPE" ] || cargo build --release --locked -q -p rtscope-cli
bench/header.sh -- "$0" "${ARGS[@]}" | tee "$OUT/summary.txt"
for load in ${LOADS:-idle io}; do
    extra=()
    [ "$load" = idle ] || extra=(--load "$load")
    "$RTSCOPE" measure -q --no-store -D "$DURATION" --trace --bound "${extra[@]}" \
        --trace-file "$OUT/$load.rtt" --trace-file-mode all --json "$OUT/$load.run.json"
    "$RTSCOPE" bound --trace "$OUT/$load.rtt" --json >"$OUT/$load.exact.json"
    python3 - "$load" "$OUT/$load.run.json" "$OUT/$load.exact.json" <<'EOF' | tee -a "$OUT/summary.txt"
import json, sys
load, run, exact = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
m = run["kind"]["measurement"]
online = m["bound"]
info = online.get("online_summary") or {}
print(f"\n## {load}: {m['stats']['samples']} samples, {run['wall_duration_s']:.0f} s; "
      f"grid ratio {info.get('grid_ratio')}, {info.get('grid_points')} window lengths")
print(f"{'cpu':>3} {'characterization':<22} {'exact us':>12} {'summary us':>12} {'ratio':>7}")
ex = {c["cpu"]: c for c in exact["cpus"]}
for c in online["cpus"]:
    e = ex.get(c["cpu"])
    if e is None:
        continue
    for name in ["no_interrupts", "worst_single", "single_of_each", "sporadic",
                 "sliding_window", "sliding_window_owcet"]:
        a, b = e["bounds"][name]["latency_ns"], c["bounds"][name]["latency_ns"]
        fa = f"{a/1e3:12.1f}" if a is not None else f"{'no conv.':>12}"
        fb = f"{b/1e3:12.1f}" if b is not None else f"{'no conv.':>12}"
        r = f"{b/a:7.3f}" if a and b else f"{'-':>7}"
        print(f"{c['cpu']:>3} {name:<22} {fa} {fb} {r}")
EOF
done
