#!/usr/bin/env bash
# The test suite, exactly as CI runs it (.ci/run calls this). Run as root on the target machine:
# real-kernel tests (seconds each) are part of it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --no-build

# PostgreSQL on 127.0.0.1 for the store's second backend; the browser for the report test.
eval "$(scripts/ci-postgres.sh start)"
trap 'scripts/ci-postgres.sh stop >/dev/null 2>&1 || true' EXIT
scripts/ci-chromium.sh >/dev/null

cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# Real-kernel tests share the CPUs, tracefs and DEADLINE bandwidth: one test at a time.
cargo test --workspace --locked -- --test-threads=1
