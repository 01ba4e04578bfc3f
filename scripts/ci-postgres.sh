#!/bin/sh
# Start a throw-away PostgreSQL on 127.0.0.1 for rtscope's store tests, and print the URL.
#   scripts/ci-postgres.sh start   → prints: export RTSCOPE_TEST_PG_URL=postgres://…
#   scripts/ci-postgres.sh stop
# Installs Debian's postgresql if the server binaries are missing. Data lives in
# $RTSCOPE_PG_DIR (default /tmp/rtscope-pg), owned by the `postgres` user (initdb refuses root).
# Port: $RTSCOPE_PG_PORT (default 54329), so a system PostgreSQL on 5432 is left alone.
set -eu
DIR=${RTSCOPE_PG_DIR:-/tmp/rtscope-pg}
PORT=${RTSCOPE_PG_PORT:-54329}
BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)

run_pg() {
    if [ "$(id -u)" = 0 ]; then su postgres -s /bin/sh -c "$*"; else sh -c "$*"; fi
}

case "${1:-start}" in
start)
    if [ -z "$BIN" ] || [ ! -x "$BIN/initdb" ]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
        BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)
    fi
    if [ ! -f "$DIR/PG_VERSION" ]; then
        mkdir -p "$DIR"
        [ "$(id -u)" = 0 ] && chown postgres "$DIR"
        run_pg "$BIN/initdb -D '$DIR' -A trust -U postgres >/dev/null"
    fi
    if ! run_pg "$BIN/pg_ctl -D '$DIR' status" >/dev/null 2>&1; then
        run_pg "$BIN/pg_ctl -D '$DIR' -l '$DIR/server.log' -w \
            -o \"-c listen_addresses=127.0.0.1 -p $PORT -k /tmp -c fsync=off\" start" >/dev/null
    fi
    run_pg "$BIN/psql -h 127.0.0.1 -p $PORT -U postgres -tAc \"SELECT 1 FROM pg_database WHERE datname='rtscope_test'\"" | grep -q 1 ||
        run_pg "$BIN/createdb -h 127.0.0.1 -p $PORT -U postgres rtscope_test"
    echo "export RTSCOPE_TEST_PG_URL=postgres://postgres@127.0.0.1:$PORT/rtscope_test"
    ;;
stop)
    run_pg "$BIN/pg_ctl -D '$DIR' -m fast stop" >/dev/null 2>&1 || true
    ;;
*)
    echo "usage: $0 [start|stop]" >&2
    exit 2
    ;;
esac
