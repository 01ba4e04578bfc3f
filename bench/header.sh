#!/bin/sh
# The provenance header a bench script puts at the top of what it writes (docs/figures/MANIFEST
# lists the figures and their commands): the command line, the UTC date, the git revision
# (`-dirty` when the tree has uncommitted changes), the kernel and the load average. A figure
# without them cannot be compared with a later one: the build, the kernel and what else ran are
# the conditions.
#
# Usage: bench/header.sh [--md] -- COMMAND [ARGS...]
#   default: lines starting "# " (text, CSV readers that skip comments, TSV)
#   --md:    one HTML comment (Markdown tables: "# " would be a heading there)
set -u
md=0
[ "${1:-}" = "--md" ] && { md=1; shift; }
[ "${1:-}" = "--" ] && shift
here=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ "$rev" != unknown ] && [ -n "$(git -C "$here" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    rev="$rev-dirty"
fi
cmd=$(printf '%s ' "$@")
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
lines="command: ${cmd% }
date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
git revision: $rev
kernel: $(uname -r) ($(nproc) CPUs)
load average: $load"
if [ $md = 1 ]; then
    printf '<!--\n%s\n-->\n' "$lines"
else
    printf '%s\n' "$lines" | sed 's/^/# /'
fi
