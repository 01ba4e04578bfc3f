#!/usr/bin/env bash
# rtscope set-up: installs what a fresh Debian machine lacks, then builds the release binary.
# Idempotent and quick when everything is already there. Run as root.
#   scripts/setup.sh                 install + build (what `rtscope run` needs)
#   scripts/setup.sh --no-build      install only
#   scripts/setup.sh --test          also what the test suite uses beside rtscope: PostgreSQL,
#                                    chromium, Prometheus, bonnie++, QEMU, the shells whose
#                                    completion scripts the package test checks, dpkg-dev
#   scripts/setup.sh --lab           also the kernel lab: QEMU, linux-source-6.12 and the lab
#                                    kernels (RTSCOPE_LAB_KERNELS, default "trace"; ~17 min each
#                                    on 2 CPUs)
# The main job does not need the lab kernels: `rtscope lab kernel build` (or `--lab` here, or the
# test suite's own set-up) builds them when something needs them.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=1
LAB=0
TEST=0
for a in "$@"; do
  case "$a" in
    --no-build) BUILD=0 ;;
    --lab) LAB=1 ;;
    --test) TEST=1 ;;
    *) echo "setup: unknown option $a (accepted: --no-build, --test, --lab)" >&2; exit 2 ;;
  esac
done
# What the rest needs, said before anything is changed.
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: needs root (it installs Debian packages and mounts tracefs): run it with sudo" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null || ! command -v dpkg-query >/dev/null; then
  echo "setup: needs apt-get and dpkg (a Debian or Ubuntu machine); elsewhere install the packages listed in scripts/setup.sh by hand" >&2
  exit 1
fi
if ! command -v cargo >/dev/null; then
  echo "setup: Rust (cargo) not found: install it with rustup (https://rustup.rs), then run this again" >&2
  exit 1
fi

# What the main job needs: clang/llvm/libelf/zlib/pkg-config/bpftool build the eBPF skeletons
# (crates/trace); rt-tests/stress-ng/rt-app are the reference tools and workload engines the
# verbs call (cyclictest beside `measure`, stress-ng loads, `taskset run --engine rt-app`).
PKGS=(clang llvm libelf-dev zlib1g-dev pkg-config bpftool make gcc procps
      rt-tests stress-ng rt-app)
# The test suite's own tools, with --test:
# postgresql: the store's PostgreSQL backend tests; chromium: the HTML report browser test
# iproute2: netns+veth for the net load; sqlite3: inspecting results.db by hand
# bonnie++: the disk load as OSPERT'13 ran it (--disk-tool bonnie++, --preset ospert13)
# prometheus: the monitor's test scrapes it with the real server and lints with promtool
# dpkg-dev, zsh, fish: the package test (dpkg-shlibdeps, `zsh -n`/`fish -n` on the completions)
if [ $TEST = 1 ]; then
  PKGS+=(iproute2 sqlite3 postgresql chromium bonnie++ prometheus dpkg-dev zsh fish)
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The prometheus package starts its own server on :9090; the tests start theirs.
  if printf '%s\n' "${missing[@]}" | grep -qx prometheus; then
    systemctl disable --now prometheus >/dev/null 2>&1 || service prometheus stop >/dev/null 2>&1 || true
  fi
fi

# tracefs is where the tracefs fallback and the tests look for kernel events.
if [ -d /sys/kernel/tracing ] && [ ! -e /sys/kernel/tracing/events ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

# QEMU (TCG) + busybox + a stock Debian kernel: crates/bench/tests/taskset_cgroup_v2.rs boots it
# with scripts/qemu-run.sh to test cgroup v2 cpuset partitions (this host binds cpuset to v1).
# Kernels go to ~/.cache/rtscope/qemu (RTSCOPE_QEMU_CACHE); RTSCOPE_QEMU_SERIES="6.1 6.12" adds
# the 6.12 kernel (RTSCOPE_QEMU_KERNEL=6.12 runs the test on it). rtla: the reference the lab
# tests run beside `measure --probe timerlat` and `noise` in the trace kernel (lab_rtla.rs).
if [ $TEST = 1 ] || [ $LAB = 1 ]; then
QPKGS=(qemu-system-x86 busybox-static rtla)
qmissing=()
for p in "${QPKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || qmissing+=("$p")
done
if [ ${#qmissing[@]} -gt 0 ]; then
  echo "setup: installing ${qmissing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${qmissing[@]}" >/dev/null
fi
QCACHE=${RTSCOPE_QEMU_CACHE:-$HOME/.cache/rtscope/qemu}
mkdir -p "$QCACHE"
for series in ${RTSCOPE_QEMU_SERIES:-6.1}; do
  if ls "$QCACHE"/linux-image-"$series".*-amd64-unsigned_*.deb >/dev/null 2>&1; then
    continue
  fi
  pat="^linux-image-${series//./\\.}\\.[0-9].*-amd64-unsigned\$"
  pkg=$(apt-cache search --names-only "$pat" | awk '{print $1}' | grep -v -e cloud -e '-rt-' | sort -V | tail -1)
  if [ -z "$pkg" ]; then
    echo "setup: no linux-image-$series*-amd64-unsigned in the apt index (the QEMU test will print SKIPPED)" >&2
    continue
  fi
  echo "setup: fetching $pkg into $QCACHE"
  (cd "$QCACHE" && apt-get download -q "$pkg" 2>&1 | grep -v -e '^W: Download is performed unsandboxed' || true)
done
fi

if [ $BUILD = 1 ]; then
  cargo build --release --locked -p rtscope-cli
  echo "setup: built ${CARGO_TARGET_DIR:-$(pwd)/target}/release/rtscope"
fi

[ $LAB = 1 ] || exit 0

# The kernel lab (crates/lab, docs/lab.md): Debian's linux-source-6.12 and what building it needs,
# then the kernels the lab tests boot, built once and cached in ~/.cache/rtscope/kernels (a rerun
# is a cache hit in a second). RTSCOPE_LAB_KERNELS chooses the presets ("" for none).
LPKGS=(linux-source-6.12 flex bison bc libssl-dev dwarves xz-utils cpio)
lmissing=()
for p in "${LPKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || lmissing+=("$p")
done
if [ ${#lmissing[@]} -gt 0 ]; then
  echo "setup: installing ${lmissing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${lmissing[@]}" >/dev/null
fi
LAB_KERNELS=${RTSCOPE_LAB_KERNELS-trace}
if [ -n "$LAB_KERNELS" ]; then
  if [ $BUILD = 0 ]; then
    cargo build --locked -q -p rtscope-cli
    RTSCOPE=${CARGO_TARGET_DIR:-target}/debug/rtscope
  else
    RTSCOPE=${CARGO_TARGET_DIR:-target}/release/rtscope
  fi
  for preset in $LAB_KERNELS; do
    t0=$(date +%s)
    "$RTSCOPE" lab kernel build --preset "$preset" -q
    echo "setup: lab kernel $preset ready ($(( $(date +%s) - t0 )) s)"
  done
fi
