#!/usr/bin/env bash
# The test suite, exactly as CI runs it (.ci/run calls this). Run as root on the target machine:
# real-kernel tests (seconds each) and the kernel lab's tests (QEMU) are part of it.
set -euo pipefail
cd "$(dirname "$0")/.."
# Packages, then the lab kernels the lab tests boot (built once, cached in ~/.cache/rtscope/kernels).
scripts/setup.sh --no-build --test --lab

# PostgreSQL on 127.0.0.1 for the store's second backend; the browser for the report test.
eval "$(scripts/ci-postgres.sh start)"
# Every test that cannot run says why through the testkit (`rtscope_testkit::skipped`), which
# appends to this file: cargo captures a passing test's output, so this is how a skip reaches
# the log.
RTSCOPE_SKIP_LOG=$(mktemp /tmp/rtscope-skips.XXXXXX)
export RTSCOPE_SKIP_LOG
trap 'scripts/ci-postgres.sh stop >/dev/null 2>&1 || true; rm -f "$RTSCOPE_SKIP_LOG"' EXIT
scripts/ci-chromium.sh >/dev/null

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Real-kernel tests share the CPUs, tracefs and DEADLINE bandwidth: one test at a time.
status=0
cargo test --workspace --locked --no-fail-fast -- --test-threads=1 || status=$?

# What this machine cannot do, and so may skip: a lab kernel the set-up does not build.
allowed=()
if ! "${CARGO_TARGET_DIR:-target}"/debug/rtscope lab list --json - 2>/dev/null | grep -q '"preset": *"rt-trace"'; then
  allowed+=("no rt-trace kernel in the lab cache")
fi
n=$(wc -l < "$RTSCOPE_SKIP_LOG")
echo "== skipped tests: $n"
bad=0
while IFS=$'\t' read -r bin test reason; do
  ok=0
  for a in "${allowed[@]}"; do
    case "$reason" in *"$a"*) ok=1 ;; esac
  done
  if [ $ok = 1 ]; then
    echo "SKIPPED ($bin $test): $reason"
  else
    echo "SKIPPED, but this machine can run it ($bin $test): $reason"
    bad=1
  fi
done < "$RTSCOPE_SKIP_LOG"
if [ $status -ne 0 ]; then
  exit $status
fi
if [ $bad -ne 0 ]; then
  echo "test.sh: a test skipped what this machine can do (above)" >&2
  exit 1
fi
