#!/usr/bin/env bash
# Task-set experiments of issue 8 (Lelli 2014 thesis Tables 2.1–2.2, scaled to this machine).
#
#   bench/tasksets.sh experiment [OUT_DIR]   # the full experiment (long: ~45 min at the defaults)
#   bench/tasksets.sh quick [OUT_DIR]        # 1 set per point, 2 s runs: checks the harness (~2 min)
#   bench/tasksets.sh rtapp [OUT_DIR]        # one rt-app workload under real rt-app and rtscope
#   bench/tasksets.sh wss [OUT_DIR]          # working-set sweep, one core (WSS_R, SETS, DURATION)
#   bench/tasksets.sh summary OUT_DIR        # tables (miss % with 95 % CI, verdict vs observed)
#
# Environment: RTSCOPE (binary, default target/release/rtscope), SETS (sets per point, 10),
# PART_R_ONLY (the per-core loads R to run), UNI_MARGIN_US, UNI_POLICIES (PART_MODE=uni),
# DURATION (s per run, 10), NTASKS (8), SEED (1), WORK (calibrated|cputime, calibrated),
# PART_MODE (binpack|uni, binpack): binpack generates one set of U = R·CPUs and packs it
# worst-fit onto per-CPU root domains (fails near the admission limit: bins cannot be filled
# exactly); uni runs the thesis's per-core load directly: a set of NTASKS/2 tasks with U = R in
# a one-CPU root domain on PART_CPU (default: the last CPU) — partitioned CPUs are independent
# uniprocessors, so one core at load R is one partition of the thesis's experiment.
# Every run is bounded (--duration) and stores nothing in the DB (--no-store): results are the
# per-run RunRecord JSON files in OUT_DIR. Needs root.
set -euo pipefail

RTSCOPE=${RTSCOPE:-target/release/rtscope}
SETS=${SETS:-10}
DURATION=${DURATION:-10}
NTASKS=${NTASKS:-8}
SEED=${SEED:-1}
WORK=${WORK:-calibrated}
HEADER=("$(dirname "$0")/header.sh" --md -- "$0" "$@")
MODE=${1:-quick}
OUT=${2:-/tmp/rtscope-tasksets-$(date +%Y%m%d-%H%M%S)}

# Partitioned: per-CPU load R on m CPUs (U = R·m); global: total loads up to the admission limit
# ((0.95 − 0.05 fair server) × 2 CPUs = 1.8, runtime margin 1.1 → U ≤ 1.63).
CPUS=$(nproc)
PART_R="0.6 0.7 0.8 0.9"
GLOBAL_U=${GLOBAL_U:-"1.2 1.3 1.4 1.5 1.6"}

run_one() { # set policy placement tag…
	local set=$1 policy=$2 placement=$3 tag=$4; shift 4
	local out="$OUT/runs/$tag.json"
	[ -s "$out" ] && return 0 # resumable
	"$RTSCOPE" taskset run "$set" --policy "$policy" --placement "$placement" --fit worst \
		--bin-test deadline --duration "$DURATION" --work "$WORK" --no-store -q --json "$out" "$@" \
		|| echo "run failed: $tag (exit $?)" | tee -a "$OUT/failures.txt"
}

part_uni() { # per-core load R on one CPU (its own root domain)
	local r=$1 cpu=${PART_CPU:-$((CPUS - 1))} n=$((NTASKS / 2))
	"$RTSCOPE" taskset gen -n "$n" -u "$r" --umax "$r" --cmin 50us --seed "$SEED" --cpu-count 1 \
		--count "$SETS" -o "$OUT/sets/uni-$r/" >/dev/null
	# Runtime Q = C × margin + UNI_MARGIN_US (default 0: no absolute allowance); Σ Q/P must stay
	# within the per-CPU limit (0.95 − 0.05 fair server = 0.90 here): margin 1.1 while
	# R·1.1 ≤ 0.90, else 0.90/R. UNI_POLICIES (default "deadline other fifo") picks the policies.
	local margin mus=${UNI_MARGIN_US:-0}
	margin=$(python3 -c "print(min(1.1, 0.90/$r))")
	for s in "$OUT/sets/uni-$r"/set-*.json; do
		i=$(basename "$s" .json)
		for p in ${UNI_POLICIES:-deadline other fifo}; do
			case $p in
			fifo) run_one "$s" fifo partitioned "uni-$r-$i-fifo" --cpus "$cpu" --priorities rm --margin "$margin" --margin-add "${mus}us" ;;
			*) run_one "$s" "$p" partitioned "uni-$r-$i-$p" --cpus "$cpu" --margin "$margin" --margin-add "${mus}us" ;;
			esac
		done
	done
}

# The thesis's working-set sweep: one core at load WSS_R (0.7), jobs of calibrated random
# accesses over 16 KiB, 256 KiB and 2 × the last-level cache (sysfs), so preemptions and
# migrations cost cache refills; kind "wssK" in the summary (K in KiB).
wss_sweep() {
	mkdir -p "$OUT/sets" "$OUT/runs"
	{ date -u; uname -a; nproc; "$RTSCOPE" --version; } > "$OUT/machine.txt"
	local r=${WSS_R:-0.7} cpu=${PART_CPU:-$((CPUS - 1))} n=$((NTASKS / 2))
	local WORK=calibrated # seen by run_one: the jobs' work is accesses over the working set
	local llc_kb
	llc_kb=$(cat /sys/devices/system/cpu/cpu0/cache/index*/size 2>/dev/null | sed 's/K$//' | sort -n | tail -1)
	"$RTSCOPE" taskset gen -n "$n" -u "$r" --umax "$r" --cmin 50us --seed "$SEED" --cpu-count 1 \
		--count "$SETS" -o "$OUT/sets/wss-$r/" >/dev/null
	for kb in 16 256 $((2 * ${llc_kb:-8192})); do
		for s in "$OUT/sets/wss-$r"/set-*.json; do
			i=$(basename "$s" .json)
			for p in ${UNI_POLICIES:-deadline other fifo}; do
				local extra=()
				[ "$p" = fifo ] && extra=(--priorities rm)
				run_one "$s" "$p" partitioned "wss$kb-$r-$i-$p" --cpus "$cpu" \
					--access random --wss-kb "$kb" --margin-add "${UNI_MARGIN_US:-50}us" "${extra[@]}"
			done
		done
	done
	summary
}

experiment() {
	mkdir -p "$OUT/sets" "$OUT/runs"
	{ date -u; uname -a; nproc; cat /proc/sys/kernel/sched_rt_runtime_us; "$RTSCOPE" --version; } > "$OUT/machine.txt"
	for r in ${PART_R_ONLY:-$PART_R}; do
		[ "${SKIP_PART:-0}" = 1 ] && break
		if [ "${PART_MODE:-binpack}" = uni ]; then
			part_uni "$r"
			continue
		fi
		u=$(python3 -c "print(round($r*$CPUS, 3))")
		"$RTSCOPE" taskset gen -n "$NTASKS" -u "$u" --umax "$r" --cmin 50us --seed "$SEED" \
			--count "$SETS" -o "$OUT/sets/part-$r/" >/dev/null
		# Runtime margin: 1.1 (thesis: "slightly larger than C"), but per-CPU load × margin must
		# stay within 0.95 − fair server: at R = 0.9 only margin 1.0 can be admitted.
		margin=$(python3 -c "print(1.1 if $r*1.1 <= 0.90 else 1.0)")
		for s in "$OUT/sets/part-$r"/set-*.json; do
			i=$(basename "$s" .json)
			run_one "$s" deadline partitioned "part-$r-$i-deadline" --margin "$margin"
			run_one "$s" other partitioned "part-$r-$i-other" --margin "$margin"
			run_one "$s" fifo partitioned "part-$r-$i-fifo" --priorities rm --margin "$margin"
		done
	done
	[ "${SKIP_GLOBAL:-0}" = 1 ] && GLOBAL_U=""
	for u in $GLOBAL_U; do
		"$RTSCOPE" taskset gen -n "$NTASKS" -u "$u" --cmin 50us --seed "$SEED" \
			--count "$SETS" -o "$OUT/sets/global-$u/" >/dev/null
		for s in "$OUT/sets/global-$u"/set-*.json; do
			i=$(basename "$s" .json)
			run_one "$s" deadline global "global-$u-$i-deadline"
			run_one "$s" other global "global-$u-$i-other"
			run_one "$s" fifo global "global-$u-$i-fifo" --priorities rm
		done
	done
	summary
}

summary() {
	"${HEADER[@]}"
	python3 - "$OUT" <<'PY'
import json, math, os, sys, collections
out = sys.argv[1]
runs = collections.defaultdict(list)   # (kind, load, policy) -> [miss %]
verd = collections.Counter()           # (policy, predicted, observed-miss) -> n
rates = collections.defaultdict(list)  # (kind, load, policy) -> [(migrations/s, ctx switches/s)]
tq = {1: 12.71, 2: 4.30, 3: 3.18, 4: 2.78, 5: 2.57, 6: 2.45, 7: 2.36, 8: 2.31, 9: 2.26, 10: 2.23,
      15: 2.13, 20: 2.09, 30: 2.04}
def t95(df):
    k = max(x for x in tq if x <= df) if df >= 1 else 1
    return tq[k] if df < 30 else 1.96
for f in sorted(os.listdir(os.path.join(out, "runs"))):
    rec = json.load(open(os.path.join(out, "runs", f)))
    b = rec["kind"]["taskset"]
    kind, load, _, policy = f[:-5].split("-", 3)[0], f.split("-")[1], None, b["config"]["policy"]
    runs[(kind, float(load), policy)].append(b["miss_pct"])
    rates[(kind, float(load), policy)].append((b.get("migrations_per_s"), b.get("context_switches_per_s")))
    timing = [p for p in b["predictions"] if p["test"] != "kernel-admission"]
    if any(p["verdict"] == "not_schedulable" for p in timing):
        pred = "not-schedulable"
    elif timing and all(any(q["scope"] == s and q["verdict"] == "schedulable" for q in timing)
                        for s in {p["scope"] for p in timing}):
        pred = "schedulable"
    else:
        pred = "inconclusive"
    if policy == "other":
        pred = "n/a (CFS)"
    verd[(kind, policy, pred, "misses" if b["total_misses"] else "no miss")] += 1
def mean_of(xs):
    xs = [x for x in xs if x is not None]
    return f"{sum(xs) / len(xs):.1f}" if xs else "-"
print("| kind | load | policy | sets | miss % mean | 95 % CI | max | migrations/s | ctx switches/s |")
print("|---|---|---|---|---|---|---|---|---|")
for (kind, load, policy), v in sorted(runs.items()):
    n = len(v); m = sum(v) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1)) if n > 1 else float("nan")
    ci = t95(n - 1) * sd / math.sqrt(n) if n > 1 else float("nan")
    r = rates[(kind, load, policy)]
    print(f"| {kind} | {load:g} | {policy} | {n} | {m:.3f} | ±{ci:.3f} | {max(v):.3f} | "
          f"{mean_of(x[0] for x in r)} | {mean_of(x[1] for x in r)} |")
print()
print("| kind | policy | predicted | observed | sets |")
print("|---|---|---|---|---|")
for (kind, policy, pred, obs), n in sorted(verd.items()):
    print(f"| {kind} | {policy} | {pred} | {obs} | {n} |")
PY
}

rtapp() {
	mkdir -p "$OUT/rtapp"
	local wl="$OUT/rtapp/workload.json"
	cat > "$wl" <<JSON
{
	"tasks" : {
		"t10" : { "policy" : "SCHED_FIFO", "priority" : 50, "run" : 2000, "timer" : { "ref" : "unique", "period" : 10000 } },
		"t25" : { "policy" : "SCHED_FIFO", "priority" : 40, "run" : 5000, "timer" : { "ref" : "unique", "period" : 25000 } },
		"t40" : { "policy" : "SCHED_FIFO", "priority" : 30, "run" : 8000, "timer" : { "ref" : "unique", "period" : 40000 } }
	},
	"global" : { "duration" : 5, "calibration" : "CPU0", "default_policy" : "SCHED_OTHER", "lock_pages" : true,
	             "logdir" : "$OUT/rtapp", "log_basename" : "rtapp" }
}
JSON
	rt-app "$wl" > "$OUT/rtapp/rt-app.stdout" 2>&1
	"$RTSCOPE" taskset run --rt-app "$wl" --no-store --json "$OUT/rtapp/rtscope.json" > "$OUT/rtapp/rtscope.txt"
	python3 - "$OUT/rtapp" <<'PY'
import json, glob, os, sys
d = sys.argv[1]
print("| task | tool | jobs | run/exec avg µs (C) | misses (slack<0 / finish>D) | wake-up/start delay avg µs | max µs |")
print("|---|---|---|---|---|---|---|")
rec = json.load(open(os.path.join(d, "rtscope.json")))["kind"]["taskset"]
for log in sorted(glob.glob(os.path.join(d, "rtapp-*.log"))):
    name = os.path.basename(log)[len("rtapp-"):].rsplit("-", 1)[0]
    rows = [l.split() for l in open(log) if not l.startswith("#") and l.strip()]
    run = [int(r[2]) for r in rows]; slack = [int(r[7]) for r in rows]; c = int(rows[0][8]); wu = [int(r[10]) for r in rows]
    print(f"| {name} | rt-app | {len(rows)} | {sum(run)/len(run):.0f} ({c}) | {sum(1 for s in slack if s < 0)} | {sum(wu)/len(wu):.0f} | {max(wu)} |")
    t = next(t for t in rec["tasks"] if rec["set"]["tasks"][t["id"]].get("name") == name)
    print(f"| {name} | rtscope | {t['jobs']} | {t['avg_exec_ns']/1e3:.0f} ({t['wcet_ns']//1000}) | {t['misses']} | {t['avg_start_delay_ns']/1e3:.0f} | {t['max_start_delay_ns']//1000} |")
PY
}

case "$MODE" in
experiment) experiment ;;
quick) SETS=1 DURATION=2 GLOBAL_U="1.2 1.6" PART_R="0.6 0.9" experiment ;;
rtapp) rtapp ;;
wss) wss_sweep ;;
summary) summary ;;
*) echo "usage: $0 experiment|quick|rtapp|wss|summary [OUT_DIR]" >&2; exit 2 ;;
esac
echo "results in $OUT" >&2
