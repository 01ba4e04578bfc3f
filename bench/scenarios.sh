#!/usr/bin/env bash
# Reproduces the three background-load scenarios of Cerqueira & Brandenburg (OSPERT'13, §3.1-3.3)
# with rtscope: idle, cpu-cache (CPU-bound, cache-thrashing) and io (hackbench + direct-I/O disk +
# TCP download loops), each measured with `rtscope measure` at SCHED_FIFO 95 on all CPUs, and
# writes the table of docs/scenarios.md: min, avg with 99 % CI, median, p99, p99.99, max, plus
# the load intensity figures that prove each load really ran.
#
# Usage: bench/scenarios.sh [-D DURATION] [-o OUTDIR] [-P PRESET] [-n]
#   -D  per-scenario duration (default 5m; the paper ran 20 min)
#   -P  measure with --preset PRESET (ospert13: the paper's FIFO 99, -i 1000 -d 500, 20 MiB per
#       core, bonnie++ -D) instead of FIFO 95; the table then also has the paper's format
#   -o  output directory (default bench/out/scenarios-<UTC timestamp>)
#   -n  dry run: print the commands only
# Env: RTSCOPE=path/to/rtscope (default: target/release/rtscope, built if missing);
#      SCENARIOS="idle cpu-cache io" (default), EXTRA_ARGS="..." appended to every measure,
#      SETTLE=10 seconds of pause between scenarios.
# Needs root (SCHED_FIFO, mlockall), python3. Run on an otherwise quiet machine: other users'
# work is load too, and it is not in the table.
set -euo pipefail

cd "$(dirname "$0")/.."
ARGS=("$@")
DURATION=5m
OUT=""
DRY=0
PRESET=""
while getopts "D:o:P:n" opt; do
    case $opt in
        D) DURATION=$OPTARG ;;
        o) OUT=$OPTARG ;;
        P) PRESET=$OPTARG ;;
        n) DRY=1 ;;
        *) echo "usage: $0 [-D DURATION] [-o OUTDIR] [-P PRESET] [-n]" >&2; exit 2 ;;
    esac
done
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-bench/out/scenarios-$STAMP}
SCENARIOS=${SCENARIOS:-"idle cpu-cache io"}
EXTRA_ARGS=${EXTRA_ARGS:-}

RTSCOPE=${RTSCOPE:-target/release/rtscope}
if [[ $DRY -eq 0 && ! -x $RTSCOPE ]]; then
    echo "building $RTSCOPE" >&2
    cargo build --release -p rtscope-cli
fi

run() {
    echo "+ $*" >&2
    if [[ $DRY -eq 0 ]]; then "$@"; fi
}

[[ $DRY -eq 1 ]] || mkdir -p "$OUT"
[[ $DRY -eq 1 ]] || {
    echo "date_utc: $STAMP"
    echo "host: $(hostname)"
    echo "kernel: $(uname -srv)"
    echo "cmdline: $(cat /proc/cmdline)"
    echo "cpus: $(nproc) online=$(cat /sys/devices/system/cpu/online)"
    echo "rtscope: $($RTSCOPE --version 2>/dev/null || echo '?')"
    echo "git: $(git rev-parse --short HEAD 2>/dev/null || echo '?') $(git status --porcelain 2>/dev/null | grep -q . && echo dirty)"
} > "${OUT}/machine.txt"

for s in $SCENARIOS; do
    # shellcheck disable=SC2086 # EXTRA_ARGS is a list of words by design
    if [[ -n $PRESET ]]; then
        cmd=("$RTSCOPE" measure --preset "$PRESET" --load "$s" -D "$DURATION" --json "$OUT/$s.json" $EXTRA_ARGS)
    else
        cmd=("$RTSCOPE" measure --load "$s" -D "$DURATION" -p 95 --policy fifo --json "$OUT/$s.json" $EXTRA_ARGS)
    fi
    [[ $DRY -eq 1 ]] || printf '%q ' "${cmd[@]}" > "$OUT/$s.cmd"
    run "${cmd[@]}"
    # Let the machine settle (disk write-back, TIME_WAIT) before the next scenario.
    [[ $DRY -eq 1 ]] || sleep "${SETTLE:-10}"
done
[[ $DRY -eq 1 ]] && exit 0

bench/header.sh --md -- "$0" "${ARGS[@]}" > "$OUT/table.md"
python3 - "$OUT" $SCENARIOS >> "$OUT/table.md" <<'PY'
import json, math, sys, os

out, scenarios = sys.argv[1], sys.argv[2:]
def us(ns):
    return "n/a" if ns is None else f"{ns / 1000:.1f}"

rows, paper_rows, figs, notes = [], [], [], []
for s in scenarios:
    path = os.path.join(out, f"{s}.json")
    with open(path) as f:
        rec = json.load(f)
    st = rec["kind"]["measurement"]["stats"]
    n, avg, sd = st["samples"], st.get("avg_ns"), st.get("stddev_ns")
    # 99 % CI of the mean under a normal approximation (z = 2.576). Latency samples are not
    # independent (they share caches, ticks and host stalls), so this understates the true
    # uncertainty; it is the figure the paper's slides show, not a guarantee.
    ci = 2.576 * sd / math.sqrt(n) if (n and sd is not None) else None
    pct = {round(p["percent"], 3): p for p in st.get("percentiles", [])}
    def p(x):
        q = pct.get(x)
        if q is None:
            return "n/a"
        return us(q["value_ns"]) + ("" if q.get("reliable", True) else " (*)")
    # The format of the paper's histograms (Figs. 3-5): min, avg, median, max, stdev, samples.
    disk = [l.get("params", {}).get("tool") for l in rec.get("loads", []) if l.get("params", {}).get("tool")]
    paper_rows.append(f"| {s} | {us(st.get('min_ns'))} | {us(avg)} | {us(st.get('median_ns'))} | "
                      f"{us(st.get('max_ns'))} | {us(sd)} | {n} | {', '.join(disk) or '-'} |")
    buckets = rec["kind"]["measurement"].get("histogram", {}).get("buckets", [])
    over_1ms = sum(c for lo, c in buckets if lo >= 1_000_000)
    rows.append(f"| {s} | {n} | {us(st.get('min_ns'))} | "
                f"{us(avg)} ± {f'{ci / 1000:.3f}' if ci is not None else 'n/a'} | {us(st.get('median_ns'))} | "
                f"{p(99.0)} | {p(99.99)} | {us(st.get('max_ns'))} | {over_1ms} |")
    for l in rec.get("loads", []):
        f_ = l.get("figures", {})
        keep = [k for k in (
            "accesses_per_s", "hackbench_messages_per_s", "hackbench_worker_ctx_switches_per_s",
            "disk_write_mb_per_s", "disk_read_mb_per_s", "disk_random_reads_per_s",
            "net_rx_mb_per_s", "sys_ctx_switches_per_s", "sys_interrupts_per_s",
            "sys_softirq_net_rx_per_s", "sys_softirq_block_per_s", "sys_disk_write_mb_per_s",
            "sys_net_lo_rx_mb_per_s", "sys_cpu_busy_pct", "sys_cpu_steal_pct") if k in f_]
        figs.append(f"| {s} | " + ", ".join(f"{k} = {f_[k]:.4g}" for k in keep) + " |")
        notes += [f"{s}: {w}" for w in l.get("warnings", [])]
    notes += [f"{s}: {w}" for w in rec.get("warnings", [])]

print("| scenario | min (µs) | avg (µs) | median (µs) | max (µs) | stdev (µs) | samples | disk load |")
print("|---|---|---|---|---|---|---|---|")
print("\n".join(paper_rows))
print()
print("| scenario | samples | min (µs) | avg ± 99 % CI (µs) | median (µs) | p99 (µs) | p99.99 (µs) | max (µs) | samples ≥ 1 ms |")
print("|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print("\n(*) fewer than 10 samples above this percentile: not reliable.\n")
print("| scenario | load intensity (whole run) |")
print("|---|---|")
print("\n".join(figs))
if notes:
    print("\nWarnings:\n")
    print("\n".join(f"- {n}" for n in notes))
PY
echo "table: $OUT/table.md" >&2
cat "$OUT/table.md"
