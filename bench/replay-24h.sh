#!/usr/bin/env bash
# The 24-hour equivalent of a long traced and bounded run, without waiting 24 hours: a generated
# event-and-sample stream (2 CPUs x 1 kHz by default: timer IRQ, hrtimer, wake-up and switch per
# period, a 250 Hz tick with its TIMER softirq, a device IRQ with NET_RX, a busy SCHED_OTHER task,
# NMIs and host stalls; crates/testkit/src/synth.rs) replayed through the streaming analysis
# (attribution, online bound, time-to-bound series) in 100 ms steps, as the session does.
# Prints per simulated hour the wall time, peak RSS and the analysis heap, then the run's causes
# and bounds. Targets: wall < 10 min, peak RSS <= 64 MiB.
#
# Usage: bench/replay-24h.sh [--hours H] [--cpus N] [--interval-us US] [--seed S] [--every-s S]
# Run on a quiet machine: the wall time is the figure.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -q -p rtscope-session --example replay
bench/header.sh -- "$0" "$@"
/usr/bin/env time -v target/release/examples/replay "$@" 2> >(grep -E "Maximum resident|Elapsed" >&2)
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
