#!/usr/bin/env python3
"""Compare cyclictest's own histogram with `rtscope watch`'s timer-lateness histogram of the same
threads (docs/watch.md), and summarise the overhead pairs of bench/watch-overhead.sh.

  watch_compare.py compare CYCLICTEST_H_OUTPUT WATCH_JSON
  watch_compare.py overhead OUTDIR        (alone-N.txt / watched-N.txt, cyclictest -h output)

cyclictest -h prints one line per µs bucket: `bucket count_cpu0 count_cpu1 …`; its latency is
`clock_gettime() after the wake-up - next`, truncated to whole µs. watch's histogram keeps ns.
"""
import json
import random
import sys


def ct_hist(path):
    """All CPUs' cyclictest -h counts merged: {us: count}, plus the per-thread max lines."""
    h = {}
    maxes = []
    for line in open(path):
        if line.startswith("# Max Latencies:"):
            maxes = [int(x) for x in line.split(":")[1].split()]
        if line.startswith("#") or not line.strip():
            continue
        f = line.split()
        try:
            us = int(f[0])
            n = sum(int(x) for x in f[1:])
        except ValueError:
            continue
        if n:
            h[us] = h.get(us, 0) + n
    return h, maxes


def q_us(h, q):
    total = sum(h.values())
    if total == 0:
        return None
    rank = max(1, int(q * total + 0.999999))
    seen = 0
    for k in sorted(h):
        seen += h[k]
        if seen >= rank:
            return k
    return max(h)


def watch_hist(path):
    """The watched threads' timer-lateness histograms merged, in whole µs (truncated, as
    cyclictest counts), from the record's sparse hdrhistogram buckets."""
    rec = json.load(open(path))
    w = rec["kind"]["measurement"]["watch"]
    h = {}
    # cyclictest's main thread (tid == its process id) only waits for the measuring threads.
    threads = [t for t in w["threads"] if t["tid"] not in w["tgids"]]
    for t in threads:
        for lo_ns, n in t["timer_lateness"]["buckets"]:
            us = lo_ns // 1000
            h[us] = h.get(us, 0) + n
    mx = max((t["timer_lateness"]["max_ns"] or 0) for t in threads) / 1000.0
    return h, mx, w


def compare(ct_path, watch_path):
    ch, cmax = ct_hist(ct_path)
    wh, wmax, w = watch_hist(watch_path)
    print(f"cyclictest samples {sum(ch.values())}, watch timer activations {sum(wh.values())}")
    print(f"{'':>8} {'cyclictest us':>14} {'watch us':>10} {'diff':>6}")
    for q in (0.5, 0.9, 0.99, 0.999):
        a, b = q_us(ch, q), q_us(wh, q)
        d = "-" if a is None or b is None else a - b
        print(f"p{q * 100:<7g} {a!s:>14} {b!s:>10} {d!s:>6}")
    print(f"{'max':<8} {max(cmax) if cmax else '-'!s:>14} {wmax:>10.1f}")


def overhead(outdir, pairs=None):
    import glob
    import os
    rows = []
    for a in sorted(glob.glob(os.path.join(outdir, "alone-*.txt"))):
        n = a.rsplit("-", 1)[1].split(".")[0]
        b = os.path.join(outdir, f"watched-{n}.txt")
        if not os.path.exists(b):
            continue
        ha, _ = ct_hist(a)
        hb, _ = ct_hist(b)
        rows.append((q_us(ha, 0.5), q_us(hb, 0.5), q_us(ha, 0.99), q_us(hb, 0.99)))
    if not rows:
        sys.exit("no pairs found")
    rng = random.Random(1)

    def ratio(idx_a, idx_b, sample):
        sa = sum(r[idx_a] for r in sample)
        sb = sum(r[idx_b] for r in sample)
        return sb / sa if sa else float("nan")

    for name, ia, ib in (("median", 0, 1), ("p99", 2, 3)):
        point = ratio(ia, ib, rows)
        boots = sorted(ratio(ia, ib, [rng.choice(rows) for _ in rows]) for _ in range(10000))
        lo, hi = boots[int(0.025 * len(boots))], boots[int(0.975 * len(boots)) - 1]
        print(f"{name}: watched/alone = {point:.3f} (bootstrap 95% over {len(rows)} pairs: {lo:.3f} .. {hi:.3f})")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "overhead":
        overhead(sys.argv[2])
    else:
        sys.exit(__doc__)
