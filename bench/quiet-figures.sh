#!/bin/bash
# The figures of docs/rhealstone.md, scenarios.md, fleet.md (trace bursts) and tasksets.md
# (one-core runs with the runtime allowance, the WSS sweep), one after the other, on a quiet
# machine (nothing else running: check uptime first). Release build. Needs root.
set -u
cd "$(dirname "$0")/.."
OUT=${1:-bench/out/quiet-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p $OUT
{ date -u; uptime; git rev-parse --short HEAD; } > $OUT/start.txt
./target/release/rtscope rhealstone --iterations 1000000 --irq-iterations 20000 --json $OUT/rhealstone-quiet.json --tag machine=quiet --no-store > $OUT/rhealstone.txt 2>&1
{ date -u; uptime; } > $OUT/after-rhealstone.txt
RTSCOPE=target/release/rtscope SETTLE=5 bench/scenarios.sh -P ospert13 -D 2m -o $OUT/scenarios > $OUT/scenarios.txt 2>&1
{ date -u; uptime; } > $OUT/after-scenarios.txt
for mode in untraced traced burst; do
  case $mode in
    untraced) extra="" ;;
    traced) extra="--trace bpf" ;;
    burst) extra="--trace bpf --trace-burst 5s/20s" ;;
  esac
  python3 - "$mode" $extra > $OUT/monitor-$mode.txt 2>&1 <<'PY'
import resource, subprocess, sys, time
mode, extra = sys.argv[1], sys.argv[2:]
def stat():
    f = open("/proc/stat").readline().split()[1:]
    v = list(map(int, f))
    return sum(v), v[3] + v[4]
a = stat()
t0 = time.time()
p = subprocess.run(["./target/release/rtscope", "monitor", "-D", "40s", "--no-store", "-q",
                    "--listen", "127.0.0.1:0", "--window", "10s", *extra],
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
b = stat()
busy = 100 * (1 - (b[1] - a[1]) / max(1, b[0] - a[0]))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = r.ru_utime + r.ru_stime
print(f"{mode}: exit {p.returncode}, wall {time.time()-t0:.1f} s, CPU {cpu:.2f} s = {100*cpu/40:.2f} % of a CPU, maxrss {r.ru_maxrss/1024:.1f} MiB, machine busy {busy:.2f} % (all CPUs, /proc/stat)")
print(p.stderr[-300:])
PY
done
{ date -u; uptime; } > $OUT/after-monitor.txt
RTSCOPE=target/release/rtscope PART_MODE=uni SETS=10 DURATION=5 PART_R_ONLY="0.6 0.7 0.8" UNI_MARGIN_US=50 UNI_POLICIES=deadline SKIP_GLOBAL=1 WORK=cputime bench/tasksets.sh experiment $OUT/tasksets > $OUT/tasksets.txt 2>&1
{ date -u; uptime; } > $OUT/after-tasksets.txt
RTSCOPE=target/release/rtscope SETS=3 DURATION=5 bench/tasksets.sh wss $OUT/wss > $OUT/wss.txt 2>&1
{ date -u; uptime; } > $OUT/end.txt
echo "$OUT"
