#!/usr/bin/env bash
# rtscope set-up: installs what a fresh Debian machine lacks, then builds the release binary.
# Idempotent and quick when everything is already there. Run as root.
#   scripts/setup.sh            install + build
#   scripts/setup.sh --no-build install only
set -euo pipefail
cd "$(dirname "$0")/.."

# clang/llvm/libelf/zlib/pkg-config/bpftool: eBPF skeletons (crates/trace)
# rt-tests/stress-ng/rt-app: reference tools for side-by-side benchmarks
# postgresql: the store's PostgreSQL backend tests; chromium: the HTML report browser test
# iproute2: netns+veth for the net load; sqlite3: inspecting results.db by hand
PKGS=(clang llvm libelf-dev zlib1g-dev pkg-config bpftool make gcc
      rt-tests stress-ng rt-app iproute2 sqlite3 postgresql chromium procps)

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: need root to install: ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# tracefs is where the tracefs fallback and the tests look for kernel events.
if [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

if ! command -v cargo >/dev/null; then
  echo "setup: Rust (cargo) not found; install it with rustup first" >&2
  exit 1
fi

if [ "${1:-}" != "--no-build" ]; then
  cargo build --release --locked -p rtscope-cli
  echo "setup: built $(pwd)/target/release/rtscope"
fi
