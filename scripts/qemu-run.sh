#!/usr/bin/env bash
# Run a command inside a throw-away Debian kernel under QEMU (TCG, no KVM needed), with a busybox
# initramfs that holds the given binaries and the shared libraries they need. Used by tests that
# need a kernel configuration the host does not have (crates/bench/tests/taskset_cgroup_v2.rs:
# cgroup v2 cpuset partitions, while the host has the cpuset controller on cgroup v1).
#
#   scripts/qemu-run.sh [options] -- 'guest shell command'
#   scripts/qemu-run.sh --check          exit 0 if qemu, busybox and a kernel are available,
#                                        else print "MISSING: <what>" and exit 3
# Options:
#   -k KERNEL   6.1 | 6.12 (newest cached linux-image-<series>*-amd64-unsigned .deb), or a path
#               to a vmlinuz or a kernel .deb [default: $RTSCOPE_QEMU_KERNEL or 6.1]
#   -f FILE     copy FILE into the guest's /bin (with the libraries ldd lists); repeatable
#   -s N        guest CPUs [default: 4]     -m MEM  guest memory [default: 1G]
#   -t SECS     wall-clock limit for the whole VM [default: 120]
#
# The guest mounts proc, sysfs, devtmpfs, tmpfs on /tmp, tracefs, and cgroup2 ONLY on
# /sys/fs/cgroup (cgroup_no_v1=all: no v1 hierarchy can hold the cpuset controller), runs the
# command with busybox sh in /tmp, prints "RTSCOPE-QEMU-EXIT=<code>" and powers off. The script
# exits with the command's code, 124 on timeout, 125 if the guest never reported one.
# Kernels are cached in ${RTSCOPE_QEMU_CACHE:-~/.cache/rtscope/qemu} (scripts/setup.sh fetches
# them with apt-get download). The console output goes to stdout.
set -euo pipefail

CACHE=${RTSCOPE_QEMU_CACHE:-$HOME/.cache/rtscope/qemu}
KERNEL=${RTSCOPE_QEMU_KERNEL:-6.1}
SMP=4
MEM=1G
TIMEOUT=120
FILES=()
CHECK=0

usage() { sed -n '2,22p' "$0" >&2; exit 2; }

while [ $# -gt 0 ]; do
	case "$1" in
	--check) CHECK=1; shift ;;
	-k) KERNEL=$2; shift 2 ;;
	-f) FILES+=("$2"); shift 2 ;;
	-s) SMP=$2; shift 2 ;;
	-m) MEM=$2; shift 2 ;;
	-t) TIMEOUT=$2; shift 2 ;;
	--) shift; break ;;
	*) usage ;;
	esac
done
CMD=${1:-}

missing() { echo "MISSING: $*"; exit 3; }

# The kernel: a vmlinuz, a .deb, or the newest cached .deb of a series.
find_kernel() {
	local k=$1 deb
	if [ -f "$k" ]; then
		case "$k" in *.deb) deb=$k ;; *) echo "$k"; return 0 ;; esac
	else
		deb=$(ls "$CACHE"/linux-image-"$k".*-amd64-unsigned_*.deb 2>/dev/null | sort -V | tail -1 || true)
		[ -n "$deb" ] || return 1
	fi
	local dir="$CACHE/x-$(basename "$deb" .deb)"
	if [ ! -d "$dir/boot" ]; then
		rm -rf "$dir.tmp" && mkdir -p "$dir.tmp"
		dpkg-deb -x "$deb" "$dir.tmp" >/dev/null
		mv "$dir.tmp" "$dir"
	fi
	ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -1
}

command -v qemu-system-x86_64 >/dev/null || missing "qemu-system-x86_64 (apt-get install qemu-system-x86)"
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || missing "busybox (apt-get install busybox-static)"
VMLINUZ=$(find_kernel "$KERNEL" || true)
[ -n "$VMLINUZ" ] && [ -f "$VMLINUZ" ] || missing "kernel '$KERNEL' in $CACHE (scripts/setup.sh downloads linux-image-*-amd64-unsigned)"
if [ "$CHECK" = 1 ]; then
	echo "OK: $(qemu-system-x86_64 --version | head -1); $BUSYBOX; $VMLINUZ"
	exit 0
fi
[ -n "$CMD" ] || usage

WORK=$(mktemp -d /tmp/rtscope-qemu.XXXXXX)
QPID=
cleanup() {
	# Only the QEMU this script started (its pid), never by name.
	if [ -n "$QPID" ] && kill -0 "$QPID" 2>/dev/null; then kill "$QPID" 2>/dev/null || true; fi
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ROOT=$WORK/root
mkdir -p "$ROOT"/{bin,dev,proc,sys,tmp,etc,lib64,lib/x86_64-linux-gnu}

# A file and the libraries ldd lists, at the same paths.
add_file() {
	local src=$1 dst=$2 lib
	cp -L "$src" "$ROOT/$dst"
	for lib in $(ldd "$src" 2>/dev/null | grep -o '/[^ ]*' || true); do
		[ -f "$lib" ] || continue
		mkdir -p "$ROOT/$(dirname "$lib")"
		[ -e "$ROOT/$lib" ] || cp -L "$lib" "$ROOT/$lib"
	done
}
add_file "$BUSYBOX" bin/busybox
for f in "${FILES[@]}"; do
	[ -f "$f" ] || { echo "qemu-run: -f $f: no such file" >&2; exit 2; }
	add_file "$f" "bin/$(basename "$f")"
	chmod +x "$ROOT/bin/$(basename "$f")"
done
printf '%s\n' "$CMD" > "$ROOT/cmd.sh"
cat > "$ROOT/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
echo
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup
echo "RTSCOPE-QEMU-START $(uname -r) cpus=$(nproc)"
cd /tmp
sh /cmd.sh
echo "RTSCOPE-QEMU-EXIT=$?"
sync
poweroff -f
EOF
chmod +x "$ROOT/init"
if command -v cpio >/dev/null; then CPIO=cpio; else CPIO="$BUSYBOX cpio"; fi
(cd "$ROOT" && find . | $CPIO -o -H newc 2>/dev/null | gzip -1) > "$WORK/initrd.gz"

LOG=$WORK/console.log
# quiet: no boot messages; cgroup_no_v1=all: cgroup2 only; panic=-1 + -no-reboot: a guest panic
# ends QEMU at once.
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max -smp "$SMP" -m "$MEM" \
	-kernel "$VMLINUZ" -initrd "$WORK/initrd.gz" \
	-append "console=ttyS0 quiet loglevel=3 panic=-1 cgroup_no_v1=all rdinit=/init" \
	-nographic -monitor none -serial "file:$LOG" -no-reboot -nodefaults &
QPID=$!
set +e
wait "$QPID"
qrc=$?
set -e
QPID=
# Firmware noise (SeaBIOS screen-control escapes) removed.
sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e 's/\x1bc//g' -e 's/\r//g' "$LOG" > "$LOG.txt"
cat "$LOG.txt"
rc=$(sed -n 's/^RTSCOPE-QEMU-EXIT=\([0-9]*\)$/\1/p' "$LOG.txt" | tail -1)
if [ -n "$rc" ]; then exit "$rc"; fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "qemu-run: timed out after ${TIMEOUT}s" >&2
	exit 124
fi
if ! grep -q '^RTSCOPE-QEMU-START' "$LOG.txt"; then
	echo "qemu-run: the guest never reached the command (boot failure or panic: kernel messages above; qemu exit $qrc)" >&2
else
	echo "qemu-run: the guest did not report an exit code (crash or panic in the command: kernel messages above; qemu exit $qrc)" >&2
fi
exit 125
