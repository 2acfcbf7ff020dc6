# Sourced by .ci/run: a throwaway PostgreSQL server for the tests marked `postgres`.
#
# Installs Debian's `postgresql` package when no server binaries are present, creates a
# cluster in a fresh temporary folder (trust authentication, superuser `autotune`), starts it
# on a free loopback port (its Unix socket in the same folder), and exports
# AUTOTUNE_TEST_POSTGRES_URL for the tests. The server is stopped and the folder removed when
# the sourcing shell exits. initdb and postgres refuse to run as root: as root they run as
# the `postgres` user the package creates.

_pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }

if [ ! -x "$(_pg_bin)/initdb" ]; then
    echo "postgres.sh: installing Debian's postgresql package" >&2
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
PG_BIN="$(_pg_bin)"
PG_DIR="$(mktemp -d -t autotune-pg.XXXXXX)"
chmod 755 "$PG_DIR"
if [ "$(id -u)" = 0 ]; then
    chown postgres: "$PG_DIR"
    _as_pg() { runuser -u postgres -- "$@"; }
else
    _as_pg() { "$@"; }
fi
PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"

_pg_stop() {
    _as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" stop -m fast >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
trap _pg_stop EXIT

_as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U autotune --auth=trust -E UTF8 >/dev/null
_as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w start \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -c unix_socket_directories=$PG_DIR -c max_connections=200" \
    >/dev/null || { cat "$PG_DIR/server.log" >&2; exit 1; }
export AUTOTUNE_TEST_POSTGRES_URL="postgresql+psycopg://autotune@127.0.0.1:$PG_PORT/postgres"
echo "postgres.sh: PostgreSQL $("$PG_BIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$PG_PORT" >&2
