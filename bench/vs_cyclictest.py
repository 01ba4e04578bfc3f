#!/usr/bin/env python3
"""rtscope measure vs cyclictest, interleaved in one session (issue 2's benchmark).

Both run with identical settings: SCHED_FIFO 95, one pinned thread per online CPU, 1000 us
interval, no distance, mlockall, /dev/cpu_dma_latency held at 0. Pairs alternate which tool goes
first. For each run we take, from the tool's own JSON:
  * min, median and average of the latencies truncated to whole microseconds (cyclictest's
    resolution; rtscope's linear 1 us histogram holds the same view of its samples), and
  * the process CPU time: perf's task-clock over all its threads (measurement threads + main
    thread), exact to the ns; without perf, user+sys from wait4's rusage (tick-sampled).
It prints per-pair values and the median over pairs of the ratios rtscope/cyclictest, each with
its 95 % interval: a percentile bootstrap over pairs (10 000 resamples of the pairs, fixed seed),
so the pair-to-pair spread of this kind of machine shows in the answer instead of hiding behind
one median.

With --trace, rtscope also captures kernel events and explains every sample (its default job's
setting): the ratios are then the tracing overhead on top of the probe.

Take it on a quiet machine: the load average is printed before and after, and a pair whose
1-minute load average exceeded 0.5 when it started is flagged.

usage: bench/vs_cyclictest.py [--pairs 5] [--seconds 30] [--rtscope target/release/rtscope]
                              [--trace] [--extra "--aligned"]
"""
import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time


def bootstrap_ci(values, stat=statistics.median, level=0.95, resamples=10000, seed=1):
    """Percentile bootstrap interval of `stat` over `values` (the pairs): resample the pairs with
    replacement, take the statistic of each resample, and read the two tail quantiles."""
    v = [x for x in values if x == x]  # drop NaN (a zero minimum in the denominator)
    if len(v) < 2:
        return float("nan"), float("nan")
    rng = random.Random(seed)
    stats = sorted(stat(rng.choices(v, k=len(v))) for _ in range(resamples))
    lo = stats[int((1 - level) / 2 * resamples)]
    hi = stats[min(resamples - 1, int((1 + level) / 2 * resamples))]
    return lo, hi


import provenance


def lin_stats(buckets):
    """buckets: list of (us, count) -> (min, median, avg) over whole-us values."""
    buckets = sorted((int(u), int(c)) for u, c in buckets if int(c) > 0)
    n = sum(c for _, c in buckets)
    if n == 0:
        return None
    mn = buckets[0][0]
    rank = (n + 1) // 2
    seen = 0
    med = buckets[-1][0]
    for u, c in buckets:
        seen += c
        if seen >= rank:
            med = u
            break
    avg = sum(u * c for u, c in buckets) / n
    return mn, med, avg, n


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


PERF = shutil.which("perf")


def run(cmd):
    """Runs cmd; returns (CPU seconds, wall seconds). CPU time is perf's task-clock (every
    thread's run time from the scheduler, in ns) when perf is installed: rusage's user+sys is
    sampled at the tick (4 ms at HZ=250), too coarse for processes that run ~10 us at a time."""
    t0 = time.time()
    with tempfile.NamedTemporaryFile(prefix="rtscope-perf-", suffix=".csv") as pf:
        full = ([PERF, "stat", "-x,", "-e", "task-clock", "-o", pf.name, "--"] if PERF else []) + cmd
        p = subprocess.Popen(full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(p.pid, 0)
        err = p.stderr.read().decode(errors="replace")
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"failed: {' '.join(full)}\n{err}")
        cpu = ru.ru_utime + ru.ru_stime
        if PERF:
            for line in open(pf.name):
                f = line.strip().split(",")
                if len(f) > 2 and f[2] == "task-clock":
                    cpu = float(f[0]) / 1e3
    return cpu, time.time() - t0


def cyclictest(secs, hist, out):
    cpu, wall = run(["cyclictest", "-m", "-S", "-p95", "-i1000", "-d0", f"-D{secs}",
                     "-h", str(hist), "-q", f"--json={out}"])
    j = json.load(open(out))
    buckets = []
    for t in j["thread"].values():
        buckets += list(t["histogram"].items())
    return lin_stats(buckets), cpu, wall


def rtscope(binary, secs, hist, out, extra):
    cpu, wall = run([binary, "measure", "-p", "95", "-i", "1000", "-D", f"{secs}s", "-q",
                     "--no-store", "--linear-max", str(hist - 1), "--json", out] + extra)
    j = json.load(open(out))
    buckets = []
    for t in j["kind"]["measurement"]["threads"]:
        buckets += [(u, c) for u, c in t["linear"]["buckets"]]
    return lin_stats(buckets), cpu, wall


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--rtscope", default="target/release/rtscope")
    ap.add_argument("--hist", type=int, default=100000, help="histogram size, us")
    ap.add_argument("--trace", action="store_true", help="rtscope with --trace (tracing overhead)")
    ap.add_argument("--extra", default="", help="more rtscope measure flags")
    a = ap.parse_args()
    extra = (["--trace"] if a.trace else []) + a.extra.split()
    if os.geteuid() != 0:
        sys.exit("needs root")
    d = tempfile.mkdtemp(prefix="rtscope-bench-")
    ratios = {"min": [], "median": [], "avg": [], "cpu": []}
    provenance.print_header()
    print(f"# {a.pairs} pairs x {a.seconds} s, FIFO 95, all CPUs, 1000 us; values in us (truncated), cpu in s")
    print(f"# CPU time from {'perf task-clock' if PERF else 'rusage (tick-sampled: coarse)'}")
    print(f"# rtscope extra flags: {' '.join(extra) or '(none)'}; load average before: {loadavg()}")
    print(f"{'pair':>4} {'tool':<10} {'samples':>8} {'min':>5} {'median':>6} {'avg':>8} {'cpu_s':>7}")
    for i in range(a.pairs):
        order = ["ct", "rt"] if i % 2 == 0 else ["rt", "ct"]
        res = {}
        la = float(loadavg().split()[0])
        if la > 0.5:
            print(f"# pair {i}: load average {la} at its start: not a quiet machine")
        for tool in order:
            if tool == "ct":
                res[tool] = cyclictest(a.seconds, a.hist, f"{d}/ct{i}.json")
            else:
                res[tool] = rtscope(a.rtscope, a.seconds, a.hist, f"{d}/rt{i}.json", extra)
        for tool, name in (("ct", "cyclictest"), ("rt", "rtscope")):
            (mn, med, avg, n), cpu, _ = res[tool]
            print(f"{i:>4} {name:<10} {n:>8} {mn:>5} {med:>6} {avg:>8.2f} {cpu:>7.3f}")
        (cmn, cmed, cavg, _), ccpu, _ = res["ct"]
        (rmn, rmed, ravg, _), rcpu, _ = res["rt"]
        ratios["min"].append(rmn / cmn if cmn else float("nan"))
        ratios["median"].append(rmed / cmed if cmed else float("nan"))
        ratios["avg"].append(ravg / cavg)
        ratios["cpu"].append(rcpu / ccpu)
    print(f"\n# load average after: {loadavg()}")
    print("# median over pairs of rtscope/cyclictest [95 % bootstrap interval over pairs]")
    for k, v in ratios.items():
        lo, hi = bootstrap_ci(v)
        print(f"{k:>7}: {statistics.median(v):.3f} [{lo:.3f}, {hi:.3f}]"
              f"   (per pair: {', '.join(f'{x:.3f}' for x in v)})")


if __name__ == "__main__":
    main()
