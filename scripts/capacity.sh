#!/bin/bash
# Runs the capacity targets of docs/capacity.md and prints their medians as a
# markdown table. Each run starts a fresh `agentloop serve` in its own process
# on a free port, puts one load on it with `agentloop bench load`, and stops
# it; every load runs RUNS times back to back. A floor row runs `agentloop bench
# floor` instead: the same streams' writes with no engine, the cheapest any
# server could send them on this machine.
#
#   scripts/capacity.sh                      # builds the binary under /tmp
#   AGENTLOOP_BIN=/tmp/agentloop scripts/capacity.sh
#   RUNS=3 DURATION=12s ONLY='ws-256|instant' scripts/capacity.sh
#
# The figures are only as quiet as the machine: the last column says how many
# cores other work took during the runs, with what the hypervisor stole.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
DURATION=${DURATION:-12s}
ONLY=${ONLY:-.}
if ! command -v jq >/dev/null; then # installed by name, like every tool the scripts need
  SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq >/dev/null
fi

WORK=$(mktemp -d /tmp/agentloop-capacity.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

BIN=${AGENTLOOP_BIN:-}
if [ -z "$BIN" ]; then
  BIN=$WORK/agentloop
  go build -o "$BIN" ./cmd/agentloop
fi

start_server() {
  rm -f "$WORK"/serve.db*
  : >"$WORK/serve.out"
  "$BIN" serve --addr 127.0.0.1:0 --db "$WORK/serve.db" >"$WORK/serve.out" 2>"$WORK/serve.log" &
  SERVER_PID=$!
  URL=
  for _ in $(seq 200); do
    URL=$(sed -n 's/^listening on //p' "$WORK/serve.out")
    if [ -n "$URL" ]; then return 0; fi
    sleep 0.05
  done
  echo "agentloop serve did not start:" >&2
  cat "$WORK/serve.log" >&2
  exit 1
}

stop_server() {
  kill "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
}

# One streaming load: NAME TRANSPORT CONNS PROFILE TARGET. Prints one table row.
load_row() {
  local name=$1 transport=$2 conns=$3 profile=$4 target=$5 runs=$WORK/$1.jsonl
  [[ $name =~ $ONLY ]] || return 0
  : >"$runs"
  for _ in $(seq "$RUNS"); do
    start_server
    "$BIN" bench load --server "$URL" --transport "$transport" --conns "$conns" --profile "$profile" \
      --duration "$DURATION" --traces=false --json >"$WORK/run.json"
    stop_server
    # CPU per token from the raw counters, so that an older binary's report
    # (without the per-token fields) is read the same way.
    jq -c '{
      share: (if .target_tokens_per_second > 0 and .streams > 0 then 100 * .streams_at_95pct_target / .streams else null end),
      p50: .inter_token_gap.p50_ms, p99: .inter_token_gap.p99_ms, p999: .inter_token_gap_p999_ms,
      tps: .steady_tokens_per_second, cores: .engine.cpu_cores,
      engine_us: (if .tokens > 0 then 1e6 * .engine.cpu_seconds / .tokens else 0 end),
      client_us: (if .tokens > 0 then 1e6 * (.host.client_cpu_seconds // (.host.client_cores * .wall_seconds)) / .tokens else 0 end),
      deltas_per_token: (if .tokens > 0 then .deltas / .tokens else 0 end),
      errors: .errors,
      other: (([.host.machine_busy_cores - .engine.cpu_cores - .host.client_cores, 0] | max) + (.host.machine_steal_cores // 0))
    }' "$WORK/run.json" >>"$runs"
  done
  jq -rs --arg name "$name" --arg target "$target" '
    def med: map(select(. != null)) | sort | if length == 0 then null else .[length / 2 | floor] end;
    def f($d): if . == null then "–" else (. * pow(10; $d) | round) / pow(10; $d) | tostring end;
    "| \($name) | \($target) | \(map(.share) | med | f(2)) | \(map(.p50) | med | f(2)) / \(map(.p99) | med | f(2)) / \(map(.p999) | med | f(2)) | \(map(.tps) | med | f(0)) | \(map(.cores) | med | f(2)) | \(map(.engine_us) | med | f(2)) | \(map(.client_us) | med | f(2)) | \(map(.deltas_per_token) | med | f(2)) | \(map(.errors) | add) | \(map(.other) | med | f(2)) |"
  ' "$runs"
}

# The same pattern with nothing but the writes (bench floor): NAME CONNS RATE
# TARGET. Prints one table row, in the engine's columns: the writer's cores
# and CPU per frame, the readers' CPU per frame, writes per frame.
floor_row() {
  local name=$1 conns=$2 rate=$3 target=$4 runs=$WORK/$1.jsonl
  [[ $name =~ $ONLY ]] || return 0
  : >"$runs"
  for _ in $(seq "$RUNS"); do
    "$BIN" bench floor --conns "$conns" --rate "$rate" --duration "$DURATION" --json >"$WORK/run.json"
    jq -c '{fps: .frames_per_second, cores: .writer_cores, writer_us: .writer_cpu_us_per_frame,
      reader_us: .reader_cpu_us_per_frame, writes_per_frame: (.writes / .frames),
      other: (([.machine_busy_cores - .writer_cores - .reader_cores, 0] | max) + (.machine_steal_cores // 0))}' "$WORK/run.json" >>"$runs"
  done
  jq -rs --arg name "$name" --arg target "$target" '
    def med: sort | .[length / 2 | floor];
    def f($d): (. * pow(10; $d) | round) / pow(10; $d) | tostring;
    "| \($name) | \($target) | – | – | \(map(.fps) | med | f(0)) | \(map(.cores) | med | f(2)) | \(map(.writer_us) | med | f(2)) | \(map(.reader_us) | med | f(2)) | \(map(.writes_per_frame) | med | f(2)) | 0 | \(map(.other) | med | f(2)) |"
  ' "$runs"
}

# Idle connections: NAME CONNS TARGET. Prints one table row.
idle_row() {
  local name=$1 conns=$2 target=$3 runs=$WORK/$1.jsonl
  [[ $name =~ $ONLY ]] || return 0
  : >"$runs"
  for _ in $(seq "$RUNS"); do
    start_server
    "$BIN" bench load --server "$URL" --idle --conns "$conns" --duration "$DURATION" --json >"$WORK/run.json"
    stop_server
    jq -c '{kib: (.rss_bytes_per_conn / 1024), held: .held, conns: .conns, errors: .errors}' "$WORK/run.json" >>"$runs"
  done
  jq -rs --arg name "$name" --arg target "$target" '
    def med: sort | .[length / 2 | floor];
    "| \($name) | \($target) | held \(map(.held) | min) / \(.[0].conns) | RSS \(map(.kib) | med * 10 | round / 10) KiB per connection | | | | | | \(map(.errors) | add) | |"
  ' "$runs"
}

echo "Medians of $RUNS runs of $DURATION each; $(nproc) cores; $(date -u '+%Y-%m-%d %H:%M UTC')."
echo
echo "| load | target | streams ≥ 95 % of target (%) | gap p50 / p99 / p99.9 (ms) | tok/s (steady) | engine cores | engine µs CPU / token | load generator µs CPU / token | deltas / token | errors | other work + steal (cores) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
load_row ws-256-spark ws 256 spark "every stream ≥ 950 tok/s; gap p99 ≤ 3 ms; engine ≤ 0.5 cores"
floor_row floor-256x1000 256 1000 "(writes alone: the floor under ws-256-spark)"
load_row sse-256-spark sse 256 spark "the same"
load_row ws-512-spark ws 512 spark "≥ 99.9 % of streams ≥ 950 tok/s; gap p99 ≤ 5 ms"
floor_row floor-512x1000 512 1000 "(writes alone: the floor under ws-512-spark)"
load_row ws-64-burst ws 64 burst "every stream ≥ 3,800 tok/s"
floor_row floor-64x4000 64 4000 "(writes alone: the floor under ws-64-burst)"
load_row ws-1-instant ws 1 instant "(the engine's ceiling)"
load_row ws-128-instant ws 128 instant "≥ 600k tok/s in total"
load_row ws-256-instant ws 256 instant "(the engine's ceiling)"
idle_row ws-1000-idle 1000 "≤ 32 KiB each"
