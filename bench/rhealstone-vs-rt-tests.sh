#!/bin/sh
# Interleaved comparison of `rtscope rhealstone` with rt-tests' ptsematest, svsematest, pmqtest
# and sigwaittest (used as black boxes). Each round runs every tool once, in the same order, so
# slow drifts of a shared or virtual machine hit all tools alike; the summary gives per-tool
# means over rounds and the ratios rtscope/rt-tests.
#
# Usage (as root): bench/rhealstone-vs-rt-tests.sh [ROUNDS] [LOOPS] [CPU] [OUTDIR]
#   defaults: 5 rounds, 100000 loops, last online CPU, ./rhealstone-vs-rt-tests.out
# Needs: rtscope on PATH (or RTSCOPE=/path/to/rtscope), rt-tests, python3.
set -eu
ROUNDS=${1:-5}
LOOPS=${2:-100000}
CPU=${3:-$(awk -F'[-,]' '{print $NF}' /sys/devices/system/cpu/online)}
OUT=${4:-./rhealstone-vs-rt-tests.out}
RTSCOPE=${RTSCOPE:-rtscope}
PRIO=80
INTERVAL=100   # µs between rt-tests cycles
mkdir -p "$OUT"
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS" >&2
    "$RTSCOPE" rhealstone --cpu "$CPU" --priority "$PRIO" --iterations "$LOOPS" \
        --only intertask_message,semaphore_shuffle --timeout 60s \
        --json "$OUT/rtscope-$r.json" > "$OUT/rtscope-$r.txt"
    ptsematest  -a "$CPU" -p "$PRIO" -i "$INTERVAL" -l "$LOOPS" -q --json="$OUT/ptsematest-$r.json"  > /dev/null
    svsematest  -a "$CPU" -p "$PRIO" -i "$INTERVAL" -l "$LOOPS" -q --json="$OUT/svsematest-$r.json"  > /dev/null
    pmqtest     -a "$CPU" -p "$PRIO" -i "$INTERVAL" -l "$LOOPS" -q --json="$OUT/pmqtest-$r.json"     > /dev/null
    sigwaittest -a "$CPU" -p "$PRIO" -i "$INTERVAL" -l "$LOOPS" -q --json="$OUT/sigwaittest-$r.json" > /dev/null
done
python3 "$(dirname "$0")/rhealstone-vs-rt-tests.py" "$OUT" "$ROUNDS"
