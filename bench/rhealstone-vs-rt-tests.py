#!/usr/bin/env python3
"""Summarise bench/rhealstone-vs-rt-tests.sh: mean over rounds of each tool's average latency
and the ratio rtscope / rt-tests for the closest pairs.

rt-tests report whole microseconds for min/max and a 2-decimal average; rtscope reports ns.
Pairs (closest kernel path, not identical methods -- see docs/rhealstone.md). For the semaphores
rtscope's side is the shuffle's release_to_own part (release -> the waiter owns it, the hand-over
rt-tests time), not the whole shuffle:
  semaphore_shuffle/futex     vs ptsematest  (pthread mutex = futex hand-over)
  semaphore_shuffle/sysv_sem  vs svsematest  (SysV semaphore)
  intertask_message/posix_mq  vs pmqtest     (POSIX message queue)
  intertask_message/pipe      vs sigwaittest (no Rhealstone counterpart; shown for scale)
"""
import json
import statistics
import sys

import provenance

out, rounds = sys.argv[1], int(sys.argv[2])
PAIRS = [("semaphore_shuffle", "futex", "release_to_own", "ptsematest"),
         ("semaphore_shuffle", "sysv_sem", "release_to_own", "svsematest"),
         ("intertask_message", "posix_mq", None, "pmqtest"),
         ("intertask_message", "pipe", None, "sigwaittest")]


def rt_avg(tool, r):
    d = json.load(open(f"{out}/{tool}-{r}.json"))
    t = d["thread"]["0"]
    rec = t.get("receiver", t)
    return float(rec["avg"]), float(rec["min"]), float(rec["max"])


def rs_avg(metric, variant, part, r):
    d = json.load(open(f"{out}/rtscope-{r}.json"))
    for m in d["kind"]["rhealstone"]["metrics"]:
        if m["metric"] == metric and m["variant"] == variant:
            s = m["stats"]
            if part is not None:
                s = next(p["stats"] for p in m["parts"] if p["name"] == part)
            return s["avg_ns"] / 1000, s["min_ns"] / 1000, s["max_ns"] / 1000
    raise KeyError((metric, variant))


provenance.print_header()
print(f"{'rtscope metric/variant[/part]':42} {'mean_us':>8} {'min':>6} {'max':>8} | {'rt-tests':12} {'avg_us':>7} {'min':>4} {'max':>6} | {'ratio':>6}")
for metric, variant, part, tool in PAIRS:
    a = [rs_avg(metric, variant, part, r) for r in range(1, rounds + 1)]
    b = [rt_avg(tool, r) for r in range(1, rounds + 1)]
    ma, mb = statistics.mean(x[0] for x in a), statistics.mean(x[0] for x in b)
    sa = statistics.stdev(x[0] for x in a) if rounds > 1 else 0.0
    sb = statistics.stdev(x[0] for x in b) if rounds > 1 else 0.0
    name = metric + "/" + variant + ("/" + part if part else "")
    print(f"{name:42} {ma:8.2f} {min(x[1] for x in a):6.2f} {max(x[2] for x in a):8.1f} | "
          f"{tool:12} {mb:7.2f} {min(x[1] for x in b):4.0f} {max(x[2] for x in b):6.0f} | {ma / mb:6.2f}"
          f"   (sd over rounds: {sa:.2f} / {sb:.2f})")
