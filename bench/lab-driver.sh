#!/bin/sh
# The kernel lab's test-driver figures (docs/pdlt.md "The paper's own test driver", docs/rhealstone.md
# "In the lab: Tables 1-2"): the PDLT scan of heursch-2001's driver with 0/1/2/3/23 preemption
# points under preempt=none, 0 under voluntary/full and PREEMPT_RT (Figs. 3-8), and the Rhealstone
# primaries with the device interrupt per kernel and model. All under -icount (emulated time: the
# host's load does not reach it). About 3 minutes. Output in $OUT (default bench/out/lab-driver).
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/lab-driver}
mkdir -p "$OUT"
R=./target/debug/rtscope
[ -x ./target/release/rtscope ] && R=./target/release/rtscope
bench/header.sh -- "$0" "$@" | tee "$OUT/header.txt"
{ date -u; uptime; } > "$OUT/before.txt"
for spec in "trace none 0" "trace none 1" "trace none 2" "trace none 3" "trace none 23" \
            "trace voluntary 0" "trace full 0" "rt-trace - 0" "rt-trace - 23"; do
    set -- $spec
    tag="pdlt-$1-$2-p$3"
    pre=""
    [ "$2" != "-" ] && pre="--preempt $2"
    # shellcheck disable=SC2086
    $R lab run --kernel "$1" $pre --icount --smp 1 --out "$OUT/$tag" --no-store -- \
        pdlt --syscall driver --points "$3" --step 5us --csv "$tag.csv" --svg "$tag.svg" --json "$tag.json" \
        > "$OUT/$tag.txt" 2>&1
    grep -E 'points;|interrupt response' "$OUT/$tag.txt" | sed "s/^/$tag: /"
done
for spec in "trace none" "trace full" "rt-trace -"; do
    set -- $spec
    tag="rhealstone-$1-$2"
    pre=""
    [ "$2" != "-" ] && pre="--preempt $2"
    # shellcheck disable=SC2086
    $R lab run --kernel "$1" $pre --icount --smp 1 --timeout 900s --out "$OUT/$tag" --no-store -- \
        rhealstone --iterations 20000 --irq-iterations 20000 --no-variants --json "$tag.json" \
        > "$OUT/$tag.txt" 2>&1
    grep -E '^(preemption|intertask|semaphore_shuffle|interrupt)' "$OUT/$tag.txt" | sed "s/^/$tag: /"
done
{ date -u; uptime; } > "$OUT/after.txt"
