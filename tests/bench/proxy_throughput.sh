#!/usr/bin/env bash
# Proxy benchmark: slotproxy vs twemproxy (Debian's nutcracker) vs a direct cluster client,
# in one run, alternating, on this machine. Prints throughput ratios, then slotproxy's RSS
# with 10,000 idle client connections.
#
#   tests/bench/proxy_throughput.sh            # N=1000000 requests per run, 2 rounds
#   N=200000 ROUNDS=1 tests/bench/proxy_throughput.sh
#   PROXY_ARGS="--workers 1" tests/bench/proxy_throughput.sh   # extra slotproxy flags
#   PROXY_BIN=target/debug/slotproxy N=1000 ROUNDS=1 IDLE_CLIENTS=100 ...  # smoke run, no build
#
# Backends: a 3-master Redis Cluster (redis-server 7.0, cluster mode) behind slotproxy and
# behind `redis-benchmark --cluster`; 3 standalone redis-servers behind twemproxy (ketama).
# Every process started here is stopped by its PID on exit.
#
# Each row compares the same command stream only (the table's legend says it again):
# - SET, GET: one random key per request; "direct" is `redis-benchmark --cluster`, a
#   cluster-aware client talking to the masters itself.
# - MSET: 10 random keys, so across slots and servers; the proxies split it. There is no
#   direct figure: a cluster client cannot send it, and `redis-benchmark --cluster` would
#   hash-tag all 10 keys into one slot, a different workload.
# - MSET1: 10 keys in one slot (hash tag {bench}); "direct" sends the very same commands
#   to that slot's master without a proxy. twemproxy is not configured with hash tags, so
#   it has no figure here.
set -euo pipefail
cd "$(dirname "$0")/../.."

N=${N:-1000000}
ROUNDS=${ROUNDS:-2}
TESTS=${TESTS:-set,get,mset}
CLIENTS=${CLIENTS:-50}
IDLE_CLIENTS=${IDLE_CLIENTS:-10000}

for tool in redis-server redis-cli redis-benchmark nutcracker python3; do
  command -v "$tool" >/dev/null || { echo "missing $tool (apt-get install redis-server redis-tools nutcracker)"; exit 1; }
done
if [ -z "${PROXY_BIN:-}" ]; then
  cargo build --release --bin slotproxy 2>&1 | grep -E "^(error|warning)" && exit 1 || true
  PROXY_BIN=target/release/slotproxy
fi

WORK=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# shellcheck source=tests/bench/cluster_common.sh
source tests/bench/cluster_common.sh

start_redis() { # port dir [args...]
  local port=$1 dir=$2; shift 2
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" "$@" >"$dir/log" 2>&1 &
  PIDS+=($!)
  wait_ping "$port"
}

# The cluster.
CLUSTER_PORTS=()
for i in 1 2 3; do
  p=$(free_port); CLUSTER_PORTS+=("$p")
  start_redis "$p" "$WORK/c$p" --cluster-enabled yes --cluster-config-file nodes.conf
done
redis-cli --cluster create $(printf '127.0.0.1:%s ' "${CLUSTER_PORTS[@]}") --cluster-replicas 0 --cluster-yes >/dev/null
for _ in $(seq 1 200); do
  ok=1; for p in "${CLUSTER_PORTS[@]}"; do redis-cli -p "$p" cluster info | grep -q cluster_state:ok || ok=0; done
  [ $ok = 1 ] && break; sleep 0.1
done

# slotproxy in front of it.
PROXY_PORT=$(free_port)
"$PROXY_BIN" ${PROXY_ARGS:-} --listen "127.0.0.1:$PROXY_PORT" --admin 127.0.0.1:0 --seed "127.0.0.1:${CLUSTER_PORTS[0]}" >"$WORK/proxy.log" 2>&1 &
PROXY_PID=$!; PIDS+=($PROXY_PID)
wait_ping "$PROXY_PORT"

# twemproxy in front of three standalone servers.
TW_SERVERS=""
for i in 1 2 3; do
  p=$(free_port); start_redis "$p" "$WORK/s$p"
  TW_SERVERS+="    - 127.0.0.1:$p:1"$'\n'
done
TW_PORT=$(free_port)
cat >"$WORK/nutcracker.yml" <<YML
bench:
  listen: 127.0.0.1:$TW_PORT
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  server_connections: 1
  servers:
$TW_SERVERS
YML
# Its stats port too is a free one (the default, 22222, would clash with any other nutcracker).
nutcracker -c "$WORK/nutcracker.yml" -o "$WORK/nutcracker.log" -s "$(free_port)" &
PIDS+=($!)
wait_ping "$TW_PORT"

# The master of the slot of hash tag {bench}: the only node that stores a key with that tag.
ONE_SLOT_MASTER=""
for p in "${CLUSTER_PORTS[@]}"; do
  if [ "$(redis-cli -p "$p" SET '{bench}probe' 1)" = OK ]; then ONE_SLOT_MASTER=$p; redis-cli -p "$p" DEL '{bench}probe' >/dev/null; fi
done
[ -n "$ONE_SLOT_MASTER" ] || { echo "no master took {bench}probe"; exit 1; }
ONE_SLOT_MSET=(MSET)
for i in $(seq 1 10); do ONE_SLOT_MSET+=("{bench}:$i:__rand_int__" xxx); done
# SET/GET only: `--cluster` would turn MSET into a one-slot MSET (see the header).
DIRECT_TESTS=$(echo "$TESTS" | tr "," "\n" | { grep -vix mset || true; } | paste -sd, -)
HAS_MSET=$(echo "$TESTS" | tr ',' '\n' | grep -cix mset || true)

# rps per test for one target: "test rps" lines (a failed run prints nothing: n/a below).
bench() { # port depth tests [--cluster]
  [ -n "$3" ] || return 0
  redis-benchmark -p "$1" -t "$3" -n "$N" -r 1000000 -c "$CLIENTS" -P "$2" ${4:-} --csv 2>/dev/null \
    | python3 -c '
import csv, sys
for row in csv.reader(sys.stdin):
    if len(row) >= 2 and row[0] != "test":
        print(row[0].split(" ")[0], row[1])'
}

# The 10-key one-slot MSET against one target, as an "MSET1 rps" line.
bench_one_slot() { # port depth
  [ "$HAS_MSET" -gt 0 ] || return 0
  redis-benchmark -p "$1" -n "$N" -r 1000000 -c "$CLIENTS" -P "$2" --csv "${ONE_SLOT_MSET[@]}" 2>/dev/null \
    | python3 -c '
import csv, sys
for row in csv.reader(sys.stdin):
    if len(row) >= 2 and row[0] != "test":
        print("MSET1", row[1])'
}

declare -A BEST
record() { # target depth
  while read -r test rps; do
    key="$1|$2|$test"
    prev=${BEST[$key]:-0}
    BEST[$key]=$(python3 -c "print(max(float('$prev'), float('$rps')))")
  done
}

for depth in 1 16; do
  for round in $(seq 1 "$ROUNDS"); do
    record slotproxy "$depth" < <(bench "$PROXY_PORT" "$depth" "$TESTS")
    record twemproxy "$depth" < <(bench "$TW_PORT" "$depth" "$TESTS")
    record direct "$depth" < <(bench "${CLUSTER_PORTS[0]}" "$depth" "$DIRECT_TESTS" --cluster)
    record slotproxy "$depth" < <(bench_one_slot "$PROXY_PORT" "$depth")
    record direct "$depth" < <(bench_one_slot "$ONE_SLOT_MASTER" "$depth")
  done
done

cat <<LEGEND

Requests per second (best of $ROUNDS), $CLIENTS clients, pipeline depth P; n/a: not measured
because no like-for-like workload exists for that column.
  SET, GET  one random key per request; direct = redis-benchmark --cluster on the masters
  MSET      10 random keys across slots, split by the proxy; direct n/a (a cluster client
            cannot send it; --cluster would hash-tag it into one slot)
  MSET1     10 keys in one slot ({bench}); direct = the same commands sent straight to that
            slot's master (port $ONE_SLOT_MASTER); twemproxy n/a (no hash tags configured)
LEGEND
ROWS=$(echo "$TESTS" | tr ',' ' ' | tr 'a-z' 'A-Z')
[ "$HAS_MSET" -gt 0 ] && ROWS="$ROWS MSET1"
printf '\n%-6s %-3s %14s %14s %14s %12s %12s\n' test P slotproxy twemproxy direct "sp/twem" "sp/direct"
for depth in 1 16; do
  for test in $ROWS; do
    sp=${BEST["slotproxy|$depth|$test"]:-0}; tw=${BEST["twemproxy|$depth|$test"]:-0}; di=${BEST["direct|$depth|$test"]:-0}
    python3 - "$test" "$depth" "$sp" "$tw" "$di" <<'PY'
import sys
t, d, sp, tw, di = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:])
r = lambda a, b: f"{a / b:.2f}" if a and b else "n/a"
v = lambda x: f"{x:.0f}" if x else "n/a"
print(f"{t:<6} {d:<3} {v(sp):>14} {v(tw):>14} {v(di):>14} {r(sp, tw):>12} {r(sp, di):>12}")
PY
  done
done

# RSS with idle clients: open them, make each one round-trip once, then measure.
ulimit -n $((IDLE_CLIENTS + 1024)) 2>/dev/null || true
rss_kb() { awk '/VmRSS/ {print $2}' "/proc/$1/status"; }
before=$(rss_kb "$PROXY_PID")
python3 - "$PROXY_PORT" "$IDLE_CLIENTS" "$WORK/idle.ready" <<'PY' &
import socket, sys, time, os, resource
port, count, ready = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
resource.setrlimit(resource.RLIMIT_NOFILE, (count + 1024, count + 1024))
socks = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"PING\r\n")
    socks.append(s)
for s in socks:
    assert s.recv(16) == b"+PONG\r\n"
open(ready, "w").close()
time.sleep(600)  # held open until the script kills this process
PY
IDLE_PID=$!; PIDS+=($IDLE_PID)
for _ in $(seq 1 1200); do [ -f "$WORK/idle.ready" ] && break; sleep 0.1; done
[ -f "$WORK/idle.ready" ] || { echo "idle clients did not connect"; exit 1; }
after=$(rss_kb "$PROXY_PID")
python3 -c "print(f'\nslotproxy RSS: {$before/1024:.1f} MB idle, {$after/1024:.1f} MB with $IDLE_CLIENTS idle clients (target <= 100 MB)')"
