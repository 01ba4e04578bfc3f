#!/bin/sh
# The rt-app compatibility table of docs/rt-app.md: every file of rt-app's examples (Debian's
# rt-app package, /usr/share/doc/rt-app/examples) with its duration cut to D seconds and a fixed
# calibration (ns per loop), run by plain rt-app, by `rtscope taskset run --engine rt-app` and by
# `--engine native`. One Markdown row per file and engine: runs / refused (reason), jobs per
# thread, mean period (µs, rt-app's own column for rt-app; rtscope's T for native).
#
# Usage: bench/rtapp-compat.sh [RTSCOPE] [D] [CALIBRATION_NS]   (root; about 3 × D s per file)
# The merge/ files are fragments for rt-app's merge script (merge.py), not workloads: left out.
set -eu
RTSCOPE=${1:-rtscope}
D=${2:-2}
CAL=${3:-100}
EX=/usr/share/doc/rt-app/examples
WORK=$(mktemp -d /tmp/rtapp-compat.XXXXXX)
trap 'rm -rf "$WORK"' EXIT INT TERM

# A copy of $1 with global.duration = D, global.calibration = CAL and logs in $2 (json-c reads
# comments and trailing commas; python's json does not: strip them the simple way).
prepare() {
    python3 - "$1" "$2" "$D" "$CAL" <<'EOF'
import json, re, sys
src, logdir, d, cal = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
t = open(src).read()
t = re.sub(r'/\*.*?\*/', '', t, flags=re.S)
t = re.sub(r'(?m)^\s*//.*$', '', t)
t = re.sub(r',(\s*[}\]])', r'\1', t)
try:
    j = json.loads(t, object_pairs_hook=lambda p: dict(p))
except Exception as e:
    print("unreadable: %s" % e, file=sys.stderr); sys.exit(3)
g = j.setdefault("global", {})
g["duration"] = d
g["calibration"] = cal
g["logdir"] = logdir
g["log_basename"] = "compat"
g["ftrace"] = False
print(json.dumps(j, indent=1))
EOF
}

# Jobs per thread and mean period of rt-app's logs in $1.
summarise_logs() {
    for f in "$1"/compat-*.log; do
        [ -e "$f" ] || { echo "no logs"; return; }
        awk -v n="$(basename "$f" .log | sed 's/^compat-//')" \
            '!/^#/ && NF >= 4 {j++; p += $4} END {printf "%s: %d jobs, %.0f µs; ", n, j, (j ? p / j : 0)}' "$f"
    done
    echo
}

echo "| file | engine | outcome | jobs per thread, mean period |"
echo "|---|---|---|---|"
find "$EX" -name '*.json' -not -path '*/merge/*' | sort | while read -r f; do
    name=${f#"$EX"/}
    dir="$WORK/$(echo "$name" | tr / _)"
    mkdir -p "$dir/plain"
    if ! prepare "$f" "$dir/plain" > "$dir/file.json" 2> "$dir/prep.err"; then
        # Not JSON for Python: run the file as shipped (in its own directory, for its "./"
        # logdir), so rt-app and rtscope say what they make of it.
        echo "| $name | (rewrite) | not rewritten: $(head -c 100 "$dir/prep.err") | |"
        if (cd "$dir/plain" && timeout -s KILL 15 rt-app "$f" > "$dir/plain.out" 2>&1); then
            echo "| $name | rt-app | runs (as shipped) | $(summarise_logs "$dir/plain") |"
        else
            echo "| $name | rt-app | fails ($?): $(grep -v notice "$dir/plain.out" | tail -1 | head -c 100) | |"
        fi
        for engine in rt-app native; do
            if timeout -s TERM $((D + 10)) "$RTSCOPE" taskset run --engine "$engine" --rt-app "$f" \
                -D "${D}s" --no-store > /dev/null 2> "$dir/$engine.err"; then
                echo "| $name | --engine $engine | runs (as shipped) | |"
            else
                echo "| $name | --engine $engine | refused/failed ($?): $(tail -1 "$dir/$engine.err" | sed 's/|/\\|/g' | head -c 160) | |"
            fi
        done
        continue
    fi
    # Plain rt-app, bounded (a file may loop forever with duration ignored).
    if timeout -s TERM $((D + 5)) rt-app "$dir/file.json" > "$dir/plain.out" 2>&1; then
        echo "| $name | rt-app | runs | $(summarise_logs "$dir/plain") |"
    else
        echo "| $name | rt-app | fails ($?): $(grep -v notice "$dir/plain.out" | tail -1 | head -c 100) | $(summarise_logs "$dir/plain") |"
    fi
    for engine in rt-app native; do
        out="$dir/$engine.json"
        if timeout -s TERM $((D + 10)) "$RTSCOPE" taskset run --engine "$engine" --rt-app "$dir/file.json" \
            -D "${D}s" --no-store --json "$out" > /dev/null 2> "$dir/$engine.err"; then
            row=$(python3 - "$out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
k = r.get("kind", {})
t = k.get("taskset") or k.get("Taskset") or {}
v = t.get("rt_app")
if v:
    print("; ".join("%s: %d jobs, %.0f µs" % (x["name"], x["jobs"], x["mean_period_us"]) for x in v["threads"]))
else:
    print("; ".join("%s: %d jobs, T %.0f µs" % (x["id"], x["jobs"], x["period_ns"] / 1e3) for x in t.get("tasks", [])))
EOF
)
            echo "| $name | --engine $engine | runs | $row |"
        else
            echo "| $name | --engine $engine | refused/failed ($?): $(tail -1 "$dir/$engine.err" | sed 's/|/\\|/g' | head -c 160) | |"
        fi
    done
done
