#!/usr/bin/env bash
# The linear passes of the analysis (docs/reliability.md "Linear passes, measured"): the
# time-to-bound series (normal, and with the bound growing at every instant) and the one-sweep
# attribution, ns per event at 1 M, 10 M and 100 M events. Take it on an idle machine.
#   bench/linear-passes.sh > docs/figures/reliability/linear-passes.txt
set -euo pipefail
cd "$(dirname "$0")/.."
bench/header.sh "$0 $*"
echo "## series_growth"
cargo bench -q -p rtscope-analysis --bench series_growth 2>/dev/null
echo "## series_growth RTSCOPE_BENCH_GROWING=1"
RTSCOPE_BENCH_GROWING=1 cargo bench -q -p rtscope-analysis --bench series_growth 2>/dev/null
echo "## attribution_sweep"
cargo bench -q -p rtscope-analysis --bench attribution_sweep 2>/dev/null
uptime
