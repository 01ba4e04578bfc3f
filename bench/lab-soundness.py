#!/usr/bin/env python3
"""The ECRTS'20 soundness experiment in the kernel lab (docs/bound.md, "Soundness in the lab").

For every (kernel, load): `rtscope lab run --kernel K --icount --smp 1 [--preempt full] --
measure -D DUR --trace bpf --bound --load LOAD`, then, from the record brought home: the
observed maximum latency, each interrupt characterization's bound (when it converged), the ratio
bound / observed, where the thread terms came from (in-kernel preemptirq reduction or estimate),
the share of the p99 tail without a guest cause, each IRQ arrival's entry/exit cost the bound
adds to every IRQ instance, and the time-to-bound (first series instant at
which the final bound of the characterization was reached).

A single observed latency above a converged bound is printed as VIOLATION and the script exits 1:
it must be explained (a bug, a missing event, an unmodelled effect), never averaged away.

  bench/lab-soundness.py [--kernels trace,rt-trace] [--loads idle,cpu-cache,io] [--duration 30s]
                         [--rtscope target/release/rtscope] [--out DIR]
                         [--load-flags "--hackbench-groups 1"]
"""
import argparse

import provenance
import json
import os
import subprocess
import sys
import tempfile

CHARS = ["no_interrupts", "worst_single", "single_of_each", "sporadic", "sliding_window",
         "sliding_window_owcet"]
SHORT = {"no_interrupts": "none", "worst_single": "worst1", "single_of_each": "each1",
         "sporadic": "sporadic", "sliding_window": "sw", "sliding_window_owcet": "sw+owcet"}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", default="trace,rt-trace")
    ap.add_argument("--loads", default="idle,cpu-cache,io")
    ap.add_argument("--duration", default="30s")
    ap.add_argument("--smp", default="1")
    ap.add_argument("--rtscope", default="target/release/rtscope")
    ap.add_argument("--out", default=None)
    ap.add_argument("--load-flags", default="",
                    help="more flags for measure, e.g. '--hackbench-groups 1' (split on spaces)")
    a = ap.parse_args()
    provenance.print_header()
    out = a.out or tempfile.mkdtemp(prefix="rtscope-soundness.")
    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, "soundness.db")
    rows = []
    violations = 0
    for k in a.kernels.split(","):
        for load in a.loads.split(","):
            cmd = [a.rtscope, "lab", "run", "--kernel", k, "--icount", "--smp", a.smp, "-q",
                   "--db", db, "--out", out, "--tag", f"soundness={k}/{load}"]
            if k == "trace":
                cmd += ["--preempt", "full"]
            cmd += ["--", "measure", "-D", a.duration, "--trace", "bpf", "--bound"]
            if load != "idle":
                cmd += ["--load", load]
                cmd += a.load_flags.split()
            rc, so, se = run(cmd)
            if rc != 0:
                print(f"# {k}/{load}: lab run failed ({rc}): {se.strip()[-400:]}", file=sys.stderr)
                continue
            rc, so, _ = run([a.rtscope, "runs", "--db", db, "--tag", f"soundness={k}/{load}",
                             "--json", "-"])
            rid = json.loads(so)[-1]["id"]
            rc, so, _ = run([a.rtscope, "show", rid, "--db", db, "--json", "-"])
            rec = json.loads(so)
            # The measurement's parts sit under "kind" in newer records.
            body = rec.get("bound") and rec or (rec.get("kind") or {}).get("measurement") or rec
            b = body.get("bound") or {}
            attr = body.get("attribution") or {}
            for n in (rec.get("hygiene") or {}).get("notes", []):
                if n.startswith("longest D_POID"):
                    print(f"# {k}/{load}: {n}", file=sys.stderr)
            nga = 0.0
            for c in attr.get("causes", []):
                if c["cause"] == "no_guest_activity":
                    nga = c.get("tail_p99_share") or 0.0
            for cb in b.get("cpus", []):
                obs = cb.get("observed_max_latency_ns")
                src = "estimate" if cb.get("thread_estimated") else "preemptirq"
                cells = []
                for ch in CHARS:
                    x = cb["bounds"][ch]
                    if x.get("converged") and x.get("latency_ns") is not None and obs:
                        r = x["latency_ns"] / obs
                        mark = ""
                        if x["latency_ns"] < obs:
                            violations += 1
                            mark = " VIOLATION"
                        cells.append(f"{x['latency_ns']/1000:.1f} ({r:.2f}){mark}")
                    else:
                        cells.append("n.c.")
                # Time-to-bound: the first series instant at which this CPU's sliding-window
                # bound had reached its final value.
                final = cb["bounds"]["sliding_window"].get("latency_ns")
                ttb = "-"
                for p in sorted((p for p in b.get("series") or [] if p["cpu"] == cb["cpu"]),
                                key=lambda p: p["t_s"]):
                    if final is not None and p.get("sliding_window_ns") == final:
                        ttb = f"{p['t_s']:.1f}"
                        break
                rows.append((k, load, cb["cpu"], src, f"{cb['ifl_ns']/1000:.1f}",
                             f"{cb.get('irq_entry_exit_ns', 0)/1000:.2f}",
                             f"{(obs or 0)/1000:.1f}", *cells, f"{nga*100:.0f}%", ttb))
    hdr = ("kernel", "load", "cpu", "thread", "IFL us", "IRQ entry/exit us", "obs max us",
           *[SHORT[c] + " us (ratio)" for c in CHARS], "no_guest_activity", "time to bound s")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print(f"\nrecords: {db}")
    if violations:
        print(f"{violations} VIOLATION(S): an observed latency above a converged bound")
        sys.exit(1)


if __name__ == "__main__":
    main()
