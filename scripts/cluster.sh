#!/bin/sh
# A local cluster with real parts: a throwaway PostgreSQL cluster, N
# agentloop replicas sharing it, and HAProxy in front. It prints one URL and
# stops everything cleanly on Ctrl-C (or SIGTERM). It never touches a system
# PostgreSQL cluster: its own lives in a temporary directory, on a unix
# socket there.
#
#   scripts/cluster.sh [-n REPLICAS] [-p PORT] [-b AGENTLOOP_BINARY]
#
# Environment: REPLICAS (2), PORT (8080; 0 picks a free one), AGENTLOOP_BIN
# (built from this checkout when unset), CLUSTER_DIR (a new temporary
# directory when unset; the cluster writes its state there: pids, logs,
# haproxy.cfg, and "url").
set -eu
cd "$(dirname "$0")/.."
REPLICAS=${REPLICAS:-2}
PORT=${PORT:-8080}
BIN=${AGENTLOOP_BIN:-}
while getopts n:p:b: opt; do
  case $opt in
    n) REPLICAS=$OPTARG ;;
    p) PORT=$OPTARG ;;
    b) BIN=$OPTARG ;;
    *) echo "usage: $0 [-n REPLICAS] [-p PORT] [-b AGENTLOOP_BINARY]" >&2; exit 2 ;;
  esac
done
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo

pg_bin() { ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1; }
missing=
[ -n "$(pg_bin)" ] && [ -x "$(pg_bin)/initdb" ] || missing="$missing postgresql"
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || missing="$missing haproxy"
if [ -n "$missing" ]; then
  echo "installing:$missing" >&2
  $SUDO apt-get update -qq
  # shellcheck disable=SC2086
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
PGBIN=$(pg_bin)
HAPROXY=$(command -v haproxy || echo /usr/sbin/haproxy)

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
[ "$PORT" = 0 ] && PORT=$(free_port)

DIR=${CLUSTER_DIR:-$(mktemp -d /tmp/agentloop-cluster.XXXXXX)}
mkdir -p "$DIR"
chmod 755 "$DIR"

if [ -z "$BIN" ]; then
  BIN=$DIR/agentloop
  go build -o "$BIN" ./cmd/agentloop
fi

# PostgreSQL refuses to run as root: run it as the postgres user then, on a
# data directory that user owns.
AS=
if [ "$(id -u)" = 0 ]; then
  AS="runuser -u postgres --"
fi
mkdir -p "$DIR/pg" "$DIR/sock"
[ -z "$AS" ] || chown postgres "$DIR/pg" "$DIR/sock"
PGUSER=$(if [ -n "$AS" ]; then echo postgres; else id -un; fi)
$AS "$PGBIN/initdb" -D "$DIR/pg/data" -U "$PGUSER" -A trust --no-sync >"$DIR/initdb.log" 2>&1
$AS "$PGBIN/pg_ctl" -D "$DIR/pg/data" -l "$DIR/pg/postgres.log" -w \
  -o "-c listen_addresses='' -k $DIR/sock -c fsync=off -c max_connections=200" start >/dev/null
$AS "$PGBIN/createdb" -h "$DIR/sock" -U "$PGUSER" agentloop
DB="postgres:///agentloop?host=$DIR/sock&user=$PGUSER"
echo "$DB" >"$DIR/db"

pids=
stop() {
  trap - INT TERM EXIT
  for p in $pids; do kill -TERM "$p" 2>/dev/null || true; done
  for p in $pids; do wait "$p" 2>/dev/null || true; done
  $AS "$PGBIN/pg_ctl" -D "$DIR/pg/data" -m fast -w stop >/dev/null 2>&1 || true
  [ -n "${CLUSTER_DIR:-}" ] || rm -rf "$DIR"
  echo "cluster stopped" >&2
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

servers=
ports=
i=1
while [ "$i" -le "$REPLICAS" ]; do
  rport=$(free_port)
  "$BIN" serve --addr "127.0.0.1:$rport" --db "$DB" --replica-id "replica-$i" >"$DIR/replica-$i.log" 2>&1 &
  echo $! >"$DIR/replica-$i.pid"
  pids="$pids $!"
  ports="$ports $rport"
  servers="$servers
    server replica-$i 127.0.0.1:$rport check cookie replica-$i"
  i=$((i + 1))
done

# WebSocket-aware: a WebSocket (or a long SSE stream) is a tunnel with a long
# timeout; health checks ask each replica's readiness endpoint; a browser
# sticks to one replica by cookie, so a race's live view is served by the
# replica that runs it. SDK clients carry no cookie and are balanced. A
# request already sent to a replica that dies is never re-sent: the client
# sees the error and recovers, as it would in production.
# HAProxy sizes maxconn from the file-descriptor limit it can raise.
cat >"$DIR/haproxy.cfg" <<EOF
defaults
    mode http
    option http-server-close
    timeout connect 2s
    timeout client 60m
    timeout server 60m
    timeout tunnel 60m
    timeout http-request 30s
    # A request whose replica died before it connected goes to another.
    retries 3
    option redispatch
frontend agentloop
    bind 127.0.0.1:$PORT
    default_backend replicas
backend replicas
    balance roundrobin
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1
    default-server inter 500ms fall 2 rise 2
    cookie agentloop_replica insert indirect nocache httponly$servers
EOF
"$HAPROXY" -f "$DIR/haproxy.cfg" -db >"$DIR/haproxy.log" 2>&1 &
echo $! >"$DIR/haproxy.pid"
pids="$pids $!"

# Ready when every replica and the balancer answer the readiness probe.
URL="http://127.0.0.1:$PORT"
for target in $(for p in $ports; do echo "http://127.0.0.1:$p"; done) "$URL"; do
  tries=0
  until [ "$(curl -s -o /dev/null -w '%{http_code}' "$target/readyz")" = 200 ]; do
    tries=$((tries + 1))
    if [ $tries -gt 300 ]; then
      echo "$target did not become ready; logs in $DIR" >&2
      exit 1
    fi
    sleep 0.1
  done
done
echo "$URL" >"$DIR/url"
echo "agentloop cluster: $REPLICAS replicas on PostgreSQL behind HAProxy"
echo "  $URL   (state and logs: $DIR; Ctrl-C stops everything)"
wait
