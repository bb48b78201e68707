#!/usr/bin/env bash
# Starts the real services the tests use, on loopback only: Redis, the Upstash REST server in front of it,
# PostgreSQL and a WebSocket proxy for the Neon driver. Installs Debian packages when missing.
# Usage: scripts/services.sh start | ensure | stop | env
set -euo pipefail
STATE=${MYCELIUM_SERVICES_STATE:-/tmp/mycelium-services}
PGBIN=/usr/lib/postgresql/15/bin
PGDATA="$STATE/pgdata"
ROOT=$(cd "$(dirname "$0")/.." && pwd)

print_env() {
  cat <<ENV
export REDIS_URL=redis://127.0.0.1:6379
export UPSTASH_REDIS_REST_URL=http://127.0.0.1:8079
export UPSTASH_REDIS_REST_TOKEN=local-token
export DATABASE_URL=postgres://app:app@127.0.0.1:5433/app
export NEON_WS_PROXY=127.0.0.1:6543
export WRANGLER_SEND_METRICS=false
ENV
}

install_packages() {
  local need=()
  command -v redis-server >/dev/null || need+=(redis-server)
  [ -x "$PGBIN/pg_ctl" ] || need+=(postgresql)
  command -v websockify >/dev/null || need+=(websockify) # the outage tests' private Postgres proxies
  command -v chromium >/dev/null || need+=(chromium)
  command -v curl >/dev/null || need+=(curl)
  command -v python3 >/dev/null || need+=(python3)
  command -v flock >/dev/null || need+=(util-linux)
  if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

wait_for() { # name, command
  for _ in $(seq 100); do if eval "$2" >/dev/null 2>&1; then return 0; fi; sleep 0.1; done
  echo "service $1 did not come up" >&2; return 1
}

start() {
  install_packages
  stop >/dev/null 2>&1 || true
  mkdir -p "$STATE"; : > "$STATE/pids"
  redis-server --bind 127.0.0.1 --port 6379 --daemonize yes --save '' --appendonly no \
    --pidfile "$STATE/redis.pid" --logfile "$STATE/redis.log"
  wait_for redis "redis-cli -h 127.0.0.1 ping | grep -q PONG"

  rm -rf "$PGDATA"; install -d -o postgres -g postgres "$PGDATA"
  echo postgres > "$STATE/pwfile"; chown postgres "$STATE/pwfile"
  # Passwords are checked, but sent as they are over loopback: the Neon driver's SCRAM handshake spent about 0.2 s
  # of client CPU on each connection, and the tests open thousands.
  runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth-local=trust \
    --auth-host=password --pwfile="$STATE/pwfile" -E UTF8 >/dev/null
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -o \
    "-c listen_addresses=127.0.0.1 -p 5433 -k $PGDATA -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
    start >/dev/null
  psql "postgresql://postgres:postgres@127.0.0.1:5433/postgres" -qc "CREATE ROLE app LOGIN PASSWORD 'app'" \
    -c "CREATE DATABASE app OWNER app" >/dev/null

  # The Neon driver's WebSocket proxy needs `ws` from node_modules: `npm ci` first.
  [ -f "$ROOT/node_modules/ws/package.json" ] || { echo "services: run npm ci first (the Postgres WebSocket proxy uses ws)" >&2; return 1; }
  nohup node "$ROOT/scripts/ws-proxy.mjs" 6543 5433 > "$STATE/ws-proxy.log" 2>&1 &
  echo "$!" >> "$STATE/pids"
  SHIM_PORT=8079 SHIM_TOKEN=local-token nohup node "$ROOT/scripts/upstash-rest-server.mjs" > "$STATE/shim.log" 2>&1 &
  echo "$!" >> "$STATE/pids"
  wait_for upstash-rest "curl -sf http://127.0.0.1:8079/health"
  wait_for ws-proxy "(exec 3<>/dev/tcp/127.0.0.1/6543)"
  echo "services up: redis :6379, upstash-rest :8079, postgres :5433, ws-proxy :6543"
}

stop() {
  if [ -f "$STATE/pids" ]; then while read -r p; do kill "$p" 2>/dev/null || true; done < "$STATE/pids"; fi
  redis-cli -h 127.0.0.1 -p 6379 shutdown nosave 2>/dev/null || true
  [ -d "$PGDATA" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop 2>/dev/null || true
}

# Start only what is not answering already (a developer's running services are left alone).
ensure() {
  if redis-cli -h 127.0.0.1 ping 2>/dev/null | grep -q PONG && curl -sf http://127.0.0.1:8079/health >/dev/null 2>&1 \
    && (exec 3<>/dev/tcp/127.0.0.1/6543) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/5433) 2>/dev/null; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] && ! command -v redis-server >/dev/null; then
    echo "tests need redis-server, postgresql, websockify and chromium (Debian packages); run as root once: $0 start" >&2
    return 1
  fi
  start
}

case "${1:-start}" in
  start) start ;;
  ensure) ensure ;;
  stop) stop ;;
  env) print_env ;;
  *) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
