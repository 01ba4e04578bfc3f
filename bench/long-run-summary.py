#!/usr/bin/env python3
"""Figure 4 of docs/long-runs.md from bench/long-run.sh output directories.

Usage: bench/long-run-summary.py LABEL=OUTDIR [LABEL=OUTDIR ...]
Prints a per-minute RSS table (MiB = KiB / 1024; one column per run) and, per run, the
summary figures: RSS range after the first minute, peak (VmHWM), trace file size, events lost,
checkpoints and their cost, samples, from the run's own record (run.json) and stdout.
"""
import glob
import json
import re
import sys

import provenance


def load(d):
    rows = []
    for line in open(f"{d}/minutes.tsv"):
        f = line.split("\t")
        if not f[0].isdigit():
            continue
        rows.append((int(f[0]), int(f[1]), int(f[2]), int(f[3]), float(f[4])))
    recs = glob.glob(f"{d}/run/*/run.json")
    rec = json.load(open(recs[0])) if recs else {}
    out = open(f"{d}/stdout.txt").read()
    header = open(f"{d}/header.txt").read()
    rtt = glob.glob(f"{d}/run/*/trace.rtt")
    return rows, rec, out, header, rtt


def mib(kib):
    return f"{kib / 1024:.1f}"


runs = []
for arg in sys.argv[1:]:
    label, d = arg.split("=", 1)
    runs.append((label, d) + load(d))

provenance.print_header(md=True)
n = max(len(r[2]) for r in runs)
print("| minute | " + " | ".join(f"{r[0]} RSS MiB" for r in runs) + " |")
print("|---|" + "---|" * len(runs))
for m in range(n):
    cells = []
    for r in runs:
        rows = r[2]
        cells.append(mib(rows[m][1]) if m < len(rows) else "")
    print(f"| {m + 1} | " + " | ".join(cells) + " |")
print()
for label, d, rows, rec, out, header, rtt in runs:
    after = [x[1] for x in rows[1:]] or [x[1] for x in rows]
    hwm = max(x[2] for x in rows)
    peak_rec = rec.get("hygiene", {}).get("peak_rss_kib")
    size = None
    if rtt:
        import os
        size = os.path.getsize(rtt[0])
    wall = rec.get("wall_duration_s", 0)
    lost = rec.get("attribution", {}).get("lost_events")
    samples = rec.get("stats", {}).get("samples")
    cp = re.search(r"note: (\d+ checkpoints written[^\n]*)", out)
    loads = re.findall(r"load average (?:before|after): ([^\n]*)", header)
    print(f"**{label}** ({d}): {wall / 60:.1f} min, {samples} samples; load average "
          f"before {loads[0] if loads else '?'}, after {loads[1] if len(loads) > 1 else '?'}")
    print(f"- RSS after minute 1: {mib(min(after))}–{mib(max(after))} MiB; highest VmHWM "
          f"sampled {mib(hwm)} MiB; the record's peak RSS {mib(peak_rec) if peak_rec else '?'} MiB")
    if size is not None:
        print(f"- trace file: {size} bytes ({size / 1e6:.2f} MB) for {wall / 3600:.2f} h "
              f"= {size / 1e6 / max(wall / 3600, 1e-9):.2f} MB/hour")
    print(f"- events lost: {lost}")
    print(f"- checkpoints: {cp.group(1) if cp else 'none reported'}")
    print()
