#!/usr/bin/env bash
# A long traced and bounded `rtscope run` with its memory and trace file sampled every minute
# (docs/long-runs.md): RSS (current and peak) of the rtscope process, the size of the run's
# trace file, and at the end the run's events lost, checkpoint cost and peak RSS from its record.
#
# Usage: bench/long-run.sh [-D DURATION] [-o OUTDIR] [-- more rtscope run flags, e.g. --load io]
# Needs root. The run is stored in a results database of its own under OUTDIR (its checkpoints
# every 10 minutes go there), its files in OUTDIR/run.
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS=("$@")
DURATION=1h
OUT=""
while getopts "D:o:" opt; do
    case $opt in
        D) DURATION=$OPTARG ;;
        o) OUT=$OPTARG ;;
        *) echo "usage: $0 [-D DURATION] [-o OUTDIR] [-- rtscope run flags]" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
OUT=${OUT:-bench/out/long-run-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT"
RTSCOPE=${RTSCOPE:-target/release/rtscope}
[ -x "$RTSCOPE" ] || cargo build --release --locked -q -p rtscope-cli
LOG="$OUT/minutes.tsv"
bench/header.sh -- "$0" "${ARGS[@]}" | tee "$OUT/header.txt"
echo "# $(date -u +%FT%TZ) $(uname -r) nproc=$(nproc); load average before: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/header.txt"
echo "# $RTSCOPE run -D $DURATION -q --db $OUT/results.db -o $OUT/run $*" | tee -a "$OUT/header.txt"
"$RTSCOPE" run -D "$DURATION" -q --db "$OUT/results.db" -o "$OUT/run" "$@" \
    >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" &
PID=$!
trap 'kill -INT $PID 2>/dev/null || true; wait $PID || true' INT TERM
printf "minute\trss_kib\tpeak_rss_kib\ttrace_bytes\tload1\n" | tee "$LOG"
m=0
while kill -0 $PID 2>/dev/null; do
    sleep 60 &
    wait $! || true
    kill -0 $PID 2>/dev/null || break
    m=$((m + 1))
    rss=$(awk '/^VmRSS/{print $2}' /proc/$PID/status 2>/dev/null || echo -)
    hwm=$(awk '/^VmHWM/{print $2}' /proc/$PID/status 2>/dev/null || echo -)
    tb=$(find "$OUT/run" -name '*.rtt*' -printf '%s\n' 2>/dev/null | sort -n | tail -1)
    printf "%d\t%s\t%s\t%s\t%s\n" $m "$rss" "$hwm" "${tb:-0}" "$(cut -d' ' -f1 /proc/loadavg)" | tee -a "$LOG"
done
wait $PID || echo "# rtscope exited with $?"
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/header.txt"
tail -n 40 "$OUT/stdout.txt"
ls -la "$OUT/run"/* 2>/dev/null | tail -n 8
