#!/usr/bin/env bash
# The cost of `rtscope watch` to the process it watches (docs/watch.md, "Overhead"): cyclictest
# alone versus cyclictest watched by `rtscope watch --comm cyclictest`, interleaved pairs (the
# order inside each pair alternates, so drift in the machine's state hits both alike); the
# ratio of median and p99 latency with its bootstrap 95 % interval over pairs
# (bench/watch_compare.py overhead). Target: the median's upper end <= 1.05.
#
# Usage: bench/watch-overhead.sh [-D DURATION] [-n PAIRS] [-o OUTDIR] [-x]
#   -D  each cyclictest run (default 60s)   -n  pairs (default 20)
#   -o  output directory (default bench/out/watch-overhead-<UTC timestamp>)   -x  dry run
# Env: RTSCOPE=path (default target/release/rtscope, built if missing).
# Needs root. Run on an otherwise quiet machine: other work is load too.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=60s
PAIRS=20
OUT=""
DRY=0
while getopts "D:n:o:x" opt; do
    case $opt in
        D) DURATION=$OPTARG ;;
        n) PAIRS=$OPTARG ;;
        o) OUT=$OPTARG ;;
        x) DRY=1 ;;
        *) echo "usage: $0 [-D DURATION] [-n PAIRS] [-o OUTDIR] [-x]" >&2; exit 2 ;;
    esac
done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-bench/out/watch-overhead-$STAMP}
RTSCOPE=${RTSCOPE:-target/release/rtscope}
if [[ $DRY -eq 0 && ! -x $RTSCOPE ]]; then
    cargo build --release -p rtscope-cli
fi
[[ $DRY -eq 1 ]] || mkdir -p "$OUT"
{
    echo "date_utc: $STAMP"
    echo "host: $(hostname) kernel: $(uname -r) cpus: $(nproc)"
    echo "duration: $DURATION pairs: $PAIRS"
    echo "command: $0 $*"
} | if [[ $DRY -eq 1 ]]; then cat >&2; else tee "$OUT/README.txt" >&2; fi
CT=(cyclictest -m -p95 -i1000 -h 400 -q -D "$DURATION" -a -t)
alone() {
    echo "+ ${CT[*]} > $OUT/alone-$1.txt" >&2
    [[ $DRY -eq 1 ]] && return
    "${CT[@]}" > "$OUT/alone-$1.txt"
}
watched() {
    echo "+ $RTSCOPE watch --comm cyclictest --no-store -q --json $OUT/watch-$1.json & ${CT[*]}" >&2
    [[ $DRY -eq 1 ]] && return
    "${CT[@]}" > "$OUT/watched-$1.txt" &
    local ct=$!
    # The watch attaches while cyclictest starts its threads; it ends when cyclictest exits.
    sleep 0.2
    "$RTSCOPE" watch --comm cyclictest --no-store -q --json "$OUT/watch-$1.json" || true
    wait "$ct"
}
for i in $(seq 1 "$PAIRS"); do
    if (( i % 2 )); then alone "$i"; watched "$i"; else watched "$i"; alone "$i"; fi
done
[[ $DRY -eq 1 ]] || python3 bench/watch_compare.py overhead "$OUT" | tee "$OUT/summary.txt"
