#!/usr/bin/env bash
# Tracing overhead benchmark for docs/tracing.md (issue 4): interleaved runs of `rtscope measure`
# with tracing off, eBPF and tracefs, idle and under `rtscope load io`; per run: avg and median
# latency, trace bytes per second per CPU (file and kernel buffer), events/s, lost events; then
# `rtscope analyze` throughput on each trace. Pairs are interleaved (off, bpf, tracefs rotated
# each round) so drift in the machine's state hits every mode alike.
#
# Usage: bench/tracing-overhead.sh [-D DURATION] [-n PAIRS] [-o OUTDIR] [-x]
#   -D  duration of each measure run (default 60s)
#   -n  rounds of (off, bpf, tracefs) per load (default 5; the issue asks for >= 5)
#   -o  output directory (default bench/out/tracing-<UTC timestamp>)
#   -x  dry run: print the commands only
# Env: RTSCOPE=path (default target/release/rtscope, built if missing); LOADS="idle io";
#      MODES="off bpf tracefs"; CPUS=all online; INTERVAL_US=1000;
#      TRACE_VIA=measure|record: `measure --trace=M --trace-file F` (once the lead wires it) or a
#      concurrent `rtscope trace record` on the same CPUs (works today; the .rtt then has no
#      samples, so attribution is not exercised but overhead, bytes and loss are the same capture).
# Needs root. Run on an otherwise quiet machine (other users' work is load too).
set -euo pipefail
cd "$(dirname "$0")/.."
ARGS=("$@")

DURATION=60s
PAIRS=5
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
OUT=${OUT:-bench/out/tracing-$STAMP}
LOADS=${LOADS:-"idle io"}
MODES=${MODES:-"off bpf tracefs"}
CPUS=${CPUS:-$(cat /sys/devices/system/cpu/online)}
INTERVAL_US=${INTERVAL_US:-1000}
RTSCOPE=${RTSCOPE:-target/release/rtscope}
if [[ $DRY -eq 0 && ! -x $RTSCOPE ]]; then
    echo "building $RTSCOPE" >&2
    cargo build --release -p rtscope-cli
fi
if [[ -z ${TRACE_VIA:-} ]]; then
    if "$RTSCOPE" measure --help 2>/dev/null | grep -q -- "--trace-file"; then TRACE_VIA=measure; else TRACE_VIA=record; fi
fi

secs() { # 60s / 2m / 500ms / 90 -> seconds (integer, rounded up)
    local d=$1
    case $d in
        *ms) echo $(( (${d%ms} + 999) / 1000 )) ;;
        *s) echo "${d%s}" ;;
        *m) echo $(( ${d%m} * 60 )) ;;
        *h) echo $(( ${d%h} * 3600 )) ;;
        *) echo "$d" ;;
    esac
}
DSEC=$(secs "$DURATION")

run() {
    echo "+ $*" >&2
    if [[ $DRY -eq 0 ]]; then "$@"; fi
}

[[ $DRY -eq 1 ]] || mkdir -p "$OUT"
{
    echo "date_utc: $STAMP"
    echo "host: $(hostname) kernel: $(uname -r) cpus: $CPUS"
    echo "duration: $DURATION pairs: $PAIRS loads: $LOADS modes: $MODES trace_via: $TRACE_VIA"
    echo "command: $0 $*"
} | if [[ $DRY -eq 1 ]]; then cat >&2; else tee "$OUT/README.txt" >&2; fi

LOAD_PID=""
cleanup() {
    if [[ -n $LOAD_PID ]]; then kill -INT "$LOAD_PID" 2>/dev/null || true; wait "$LOAD_PID" 2>/dev/null || true; fi
}
trap cleanup EXIT INT TERM

for load in $LOADS; do
    if [[ $load != idle ]]; then
        # The load runs through all rounds of this load; it is stopped before the next load.
        echo "+ $RTSCOPE load $load --cpus $CPUS &" >&2
        if [[ $DRY -eq 0 ]]; then
            "$RTSCOPE" load "$load" --cpus "$CPUS" --json "$OUT/load-$load.json" >"$OUT/load-$load.log" 2>&1 &
            LOAD_PID=$!
            sleep 5
        fi
    fi
    modes=($MODES)
    for ((i = 0; i < PAIRS; i++)); do
        # Rotate the order each round: off,bpf,tracefs / bpf,tracefs,off / ...
        for ((k = 0; k < ${#modes[@]}; k++)); do
            mode=${modes[$(((i + k) % ${#modes[@]}))]}
            base="$OUT/$load-$mode-$i"
            margs=(measure -q --no-store -D "$DURATION" --cpus "$CPUS" -i "$INTERVAL_US" --json "$base.json")
            if [[ $mode == off ]]; then
                run "$RTSCOPE" "${margs[@]}" >"$base.log" 2>&1 || [[ $DRY -eq 1 ]]
            elif [[ $TRACE_VIA == measure ]]; then
                run "$RTSCOPE" "${margs[@]}" --trace="$mode" --trace-file "$base.rtt" >"$base.log" 2>&1 || [[ $DRY -eq 1 ]]
            else
                echo "+ $RTSCOPE trace record -D $((DSEC + 3))s --cpus $CPUS --mechanism $mode -o $base.rtt &" >&2
                if [[ $DRY -eq 0 ]]; then
                    "$RTSCOPE" trace record -D "$((DSEC + 3))s" --cpus "$CPUS" --mechanism "$mode" -o "$base.rtt" >"$base.trace.log" 2>&1 &
                    tpid=$!
                    sleep 1.5
                fi
                run "$RTSCOPE" "${margs[@]}" >"$base.log" 2>&1 || [[ $DRY -eq 1 ]]
                if [[ $DRY -eq 0 ]]; then wait "$tpid"; fi
            fi
        done
    done
    cleanup
    LOAD_PID=""
    # Analyse after the load has stopped: the throughput is the analyser's on a quiet core, not
    # its share of CPUs the load keeps busy.
    if [[ $DRY -eq 0 ]]; then
        for f in "$OUT/$load"-*.rtt; do
            [[ -e $f ]] || continue
            "$RTSCOPE" analyze --json --worst 1 "$f" >"${f%.rtt}.analyze.json" 2>/dev/null || true
        done
    fi
done

[[ $DRY -eq 1 ]] && exit 0

bench/header.sh --md -- "$0" "${ARGS[@]}" | tee "$OUT/summary.md"
python3 - "$OUT" "$DSEC" <<'EOF' | tee -a "$OUT/summary.md"
import json, os, sys, statistics as st, glob
out, dsec = sys.argv[1], float(sys.argv[2])
def load(p):
    try:
        with open(p) as f: return json.load(f)
    except Exception: return None
rows = {}
for p in sorted(glob.glob(os.path.join(out, "*-*-*.json"))):
    name = os.path.basename(p)
    if name.endswith(".analyze.json") or name.startswith("load-"): continue
    load_, mode, i = name[:-5].rsplit("-", 2)
    r = load(p)
    if not r: continue
    s = r.get("stats", {})
    rec = {"avg": s.get("avg_ns"), "median": s.get("median_ns"), "max": s.get("max_ns")}
    a = load(os.path.join(out, f"{load_}-{mode}-{i}.analyze.json"))
    rtt = os.path.join(out, f"{load_}-{mode}-{i}.rtt")
    if a:
        m = a["meta"]; ncpu = max(1, len(m["cpus"])); dur = max(1e-9, (m["end_ns"] - m["start_ns"]) / 1e9)
        rec.update(events_s=a["events"] / dur, file_kbs_cpu=os.path.getsize(rtt) / 1024 / dur / ncpu,
                   kernel_kbs_cpu=m["kernel_bytes"] / 1024 / dur / ncpu, lost=sum(m["lost_per_cpu"].values()),
                   left_out_s=m.get("filtered_events", 0) / dur,
                   analyze_meps=a["analysis_events_per_second"] / 1e6)
    rows.setdefault((load_, mode), {})[int(i)] = rec
print(f"# tracing overhead — {out}\n")
print("Δ columns: median over rounds of the paired difference (same round, tracing off); median us: median over runs.\n")
print("| load | mode | runs | avg us (mean) | Δavg vs off us | median us | Δmedian vs off us | events/s recorded | left out/s | file KB/s/CPU | kernel KB/s/CPU | lost | analyze M ev/s |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (ld, mode), runs in sorted(rows.items()):
    off = rows.get((ld, "off"), {})
    davg = [runs[i]["avg"] - off[i]["avg"] for i in runs if i in off and runs[i]["avg"] is not None and off[i]["avg"] is not None]
    dmed = [runs[i]["median"] - off[i]["median"] for i in runs if i in off and runs[i]["median"] is not None and off[i]["median"] is not None]
    def mean(k):
        v = [r[k] for r in runs.values() if r.get(k) is not None]
        return st.mean(v) if v else float("nan")
    def med(k):
        v = [r[k] for r in runs.values() if r.get(k) is not None]
        return st.median(v) if v else float("nan")
    f = lambda x: "-" if x != x else f"{x:.2f}"
    print(f"| {ld} | {mode} | {len(runs)} | {f(mean('avg')/1e3)} | {f(st.median(davg)/1e3) if davg and mode!='off' else '-'} | "
          f"{f(med('median')/1e3)} | {f(st.median(dmed)/1e3) if dmed and mode!='off' else '-'} | {f(mean('events_s'))} | {f(mean('left_out_s'))} | "
          f"{f(mean('file_kbs_cpu'))} | {f(mean('kernel_kbs_cpu'))} | {f(mean('lost'))} | {f(mean('analyze_meps'))} |")
EOF
