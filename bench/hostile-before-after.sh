#!/bin/sh
# Peak RSS, time and exit of two rtscope binaries on the hostile-reader corpus
# (crates/cli/tests/hostile_readers.rs writes it when RTSCOPE_HOSTILE_DIR is set):
#
#   RTSCOPE_HOSTILE_DIR=/tmp/hostile cargo test -p rtscope-cli --test hostile_readers
#   bench/hostile-before-after.sh /tmp/hostile BEFORE_BIN AFTER_BIN
#
# Each run is capped at 3 GiB of address space and 60 s (what the audit's runs were killed
# at), so a binary that believes a crafted claim fails here instead of taking the machine.
set -u
"$(dirname "$0")/header.sh" -- "$0" "$@"
dir=$1; before=$2; after=$3
cases='
threads|import @/threads/q.txt --no-store
threads|import @/threads/ct.json --no-store
threads|import @/threads/h.txt --no-store
threads|import @/threads/v.txt --no-store
record|import run @/record/rec.json --no-store
record|show hostile-0001 --db @/record/results.db
record|compare hostile-0001 hostile-0001 --db @/record/results.db
trace|analyze @/trace/cpus_x_snapshots.rtt
trace|analyze @/trace/one_timestamp.rtt
trace|bound --trace @/trace/one_timestamp.rtt
trace|analyze @/trace/unattributed.rtt --json @/trace/unattributed.json
trace|analyze @/trace/overlapping_windows.rtt
trace|analyze @/trace/lost.rtt
bound|bound --input @/bound/cpus.json
bound|bound --input @/bound/sources.json
bound|bound --rtsl-db @/bound/vectors.db
bound|bound --rtsl-db @/bound/view.db
store|runs --db @/store/view.db
store|compare x1 x2 --db @/store/view.db
edges|import @/edges/edge0.txt --no-store
edges|import @/edges/edge1.txt --no-store
edges|import @/edges/edge2.txt --no-store
edges|import @/edges/edge3.txt --no-store
edges|import @/edges/edge4.txt --no-store
edges|import @/edges/edge5.txt --no-store
'
measure() {
    bin=$1; shift
    out=$(mktemp)
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %M' -o "$out.time" timeout -s KILL 60 prlimit --as=3221225472 "$bin" "$@" >/dev/null 2>"$out.err"
    code=$?
    # GNU time puts "Command exited with non-zero status N" before the figures.
    read -r secs kib <<EOT
$(tail -n 1 "$out.time" 2>/dev/null)
EOT
    case "$kib" in ''|*[!0-9]*) secs=?; kib=0 ;; esac
    msg=$(grep -v '^Command\|^\s*$' "$out.err" | head -1 | cut -c1-110)
    printf '%s s, %s MiB, exit %s: %s' "$secs" "$((kib / 1024))" "$code" "$msg"
    rm -f "$out" "$out.time" "$out.err"
}
echo "$cases" | while IFS='|' read -r group args; do
    [ -z "$group" ] && continue
    args=$(echo "$args" | sed "s|@|$dir|g")
    echo "## $args"
    echo "   before: $(measure "$before" $args)"
    echo "   after:  $(measure "$after" $args)"
done
