#!/usr/bin/env bash
# Replication, master side: storage-node against redis-server as the master of one
# redis-server 7.0 replica each, in the same run.
#
# Usage: tests/bench/replication.sh
#
# Builds the release storage-node, starts it and a redis-server fresh on free loopback ports
# (both with `repl-diskless-sync-delay 0`, Redis's other replication defaults: diskless
# sync), loads KEYS_COUNT string keys `key:<12 digits>` into both through `redis-cli --pipe`
# and checks DBSIZE, then prints node/redis ratios for:
#   1. full sync time: a redis-server replica is started with --replicaof; the time until it
#      reports master_link_status:up and holds KEYS_COUNT keys (target <= 1.0);
#   2. SET throughput of the master with its replica attached, `redis-benchmark -t set
#      -r KEYS_COUNT -n REQUESTS -c CLIENTS` at -P 1 and at -P 16 (target >= 1.0);
#   3. the replica's lag in bytes under the -P 16 load: master_repl_offset minus the
#      replica's acknowledged offset (INFO replication, slave0 offset=), sampled every
#      100 ms during the run: the largest and the mean (shown, no target).
# All four servers are stopped by PID when the script exits.
#
# Requires: Linux, cargo, python3, redis-server, redis-cli, redis-benchmark.
#
# Environment (defaults in brackets):
#   KEYS_COUNT  keys loaded before the full sync [1000000]
#   REQUESTS    SETs per throughput run [1000000]
#   CLIENTS     redis-benchmark connections [50]
#   NODE_ARGS, REDIS_ARGS, SKIP_BUILD=1, NODE_BIN, CARGO_TARGET_DIR: see common.sh
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

KEYS_COUNT="${KEYS_COUNT:-1000000}"
REQUESTS="${REQUESTS:-1000000}"
CLIENTS="${CLIENTS:-50}"
require_numbers KEYS_COUNT REQUESTS CLIENTS

require_tools cargo python3 redis-server redis-cli redis-benchmark awk
build_node
NODE_ARGS="--repl-diskless-sync-delay 0 ${NODE_ARGS:-}"
REDIS_ARGS="--repl-diskless-sync-delay 0 ${REDIS_ARGS:-}"
start_servers

REPLICA_PIDS=""
stop_replicas() {
    # shellcheck disable=SC2086 # a word list
    stop_pids $REPLICA_PIDS
    REPLICA_PIDS=""
}
trap 'stop_replicas; stop_servers' EXIT

load_file="$WORK_DIR/load.resp"
write_set_load "$load_file" "$KEYS_COUNT" 'key:%012d' 'value:%d'

load_resp storage-node "$NODE_PORT" "$load_file" "$KEYS_COUNT"
load_resp redis-server "$REDIS_PORT" "$load_file" "$KEYS_COUNT"

field() {
    redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v f="$3" '$1 == f { print $2 }'
}

# 1. Full sync: a replica started now, timed until it is up with every key. Runs in this
# shell (not in a $(...)) so that the replica's PID is known to stop_replicas; sets
# SYNC_PORT and SYNC_SECONDS.
full_sync() {
    local name="$1" master_port="$2" port pid started ended
    port="$(free_ports | cut -d' ' -f1)"
    mkdir -p "$WORK_DIR/replica-$name"
    started="$(date +%s.%N)"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$WORK_DIR/replica-$name" --replicaof 127.0.0.1 "$master_port" \
        >"$WORK_DIR/replica-$name.log" 2>&1 &
    pid=$!
    REPLICA_PIDS="$REPLICA_PIDS $pid"
    # At most an hour, checked every 50 ms.
    for _ in $(seq 1 72000); do
        if [ "$(field "$port" replication master_link_status 2>/dev/null)" = up ] &&
            [ "$(redis-cli -p "$port" dbsize 2>/dev/null)" = "$KEYS_COUNT" ]; then
            ended="$(date +%s.%N)"
            SYNC_PORT="$port"
            SYNC_SECONDS="$(seconds_between "$started" "$ended")"
            return
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            break
        fi
        sleep 0.05
    done
    echo "error: the replica of $name did not sync; its log:" >&2
    cat "$WORK_DIR/replica-$name.log" >&2
    exit 1
}
full_sync storage-node "$NODE_PORT"
node_replica="$SYNC_PORT" node_sync="$SYNC_SECONDS"
full_sync redis-server "$REDIS_PORT"
redis_replica="$SYNC_PORT" redis_sync="$SYNC_SECONDS"

# 2 and 3. SET throughput with the replica attached; the lag sampled under -P 16.
cat >"$WORK_DIR/lag.py" <<'EOF'
"""lag.py PORT STOPFILE: the master's unacknowledged bytes every 100 ms: max and mean."""
import os, re, socket, sys, time
port, stop = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
def info():
    s.sendall(b"*2\r\n$4\r\nINFO\r\n$11\r\nreplication\r\n")
    data = b""
    while b"\r\n" not in data:
        data += s.recv(65536)
    size = int(data[1:data.index(b"\r\n")])
    while len(data) < data.index(b"\r\n") + 2 + size + 2:
        data += s.recv(65536)
    return data.decode()
lags = []
deadline = time.monotonic() + 3600
while not os.path.exists(stop) and time.monotonic() < deadline:
    text = info()
    end = int(re.search(r"master_repl_offset:(\d+)", text).group(1))
    acked = re.search(r"slave0:.*offset=(\d+)", text)
    if acked:
        lags.append(end - int(acked.group(1)))
    time.sleep(0.1)
print(f"{max(lags) if lags else 0} {sum(lags) // max(len(lags), 1)}")
EOF

throughput() {
    local port="$1" pipeline="$2"
    redis-benchmark -p "$port" -t set -r "$KEYS_COUNT" -n "$REQUESTS" -c "$CLIENTS" \
        -P "$pipeline" -q 2>/dev/null | tr '\r' '\n' | grep -o 'SET: [0-9.]*' | grep -o '[0-9.]*' |
        tail -1
}

measure() {
    local name="$1" port="$2" stop="$WORK_DIR/stop-$1" sampler p1 p16
    p1="$(throughput "$port" 1)"
    rm -f "$stop"
    python3 "$WORK_DIR/lag.py" "$port" "$stop" >"$WORK_DIR/lag-$name" &
    sampler=$!
    p16="$(throughput "$port" 16)"
    touch "$stop"
    wait "$sampler"
    echo "$p1 $p16 $(cat "$WORK_DIR/lag-$name")"
}
read -r node_p1 node_p16 node_lag_max node_lag_mean <<<"$(measure node "$NODE_PORT")"
read -r redis_p1 redis_p16 redis_lag_max redis_lag_mean <<<"$(measure redis "$REDIS_PORT")"

# Both replicas hold what their master holds at the end.
for pair in "$NODE_PORT:$node_replica" "$REDIS_PORT:$redis_replica"; do
    master="${pair%%:*}" replica="${pair##*:}"
    for _ in $(seq 1 600); do
        [ "$(field "$master" replication master_repl_offset)" = \
            "$(field "$replica" replication master_repl_offset)" ] && break
        sleep 0.1
    done
    if [ "$(redis-cli -p "$master" dbsize)" != "$(redis-cli -p "$replica" dbsize)" ]; then
        echo "error: the replica on port $replica differs from its master in DBSIZE" >&2
        exit 1
    fi
done

echo
echo "keys: $KEYS_COUNT strings; each master has one redis-server replica; SETs: $REQUESTS," \
    "$CLIENTS clients"
printf '%-36s %14s %14s %11s\n' "" storage-node redis-server node/redis
printf '%-36s %14s %14s %11s\n' "full sync (s)" "$node_sync" "$redis_sync" \
    "$(ratio "$node_sync" "$redis_sync")"
printf '%-36s %14s %14s %11s\n' "SET/s with a replica, -P 1" "$node_p1" "$redis_p1" \
    "$(ratio "$node_p1" "$redis_p1")"
printf '%-36s %14s %14s %11s\n' "SET/s with a replica, -P 16" "$node_p16" "$redis_p16" \
    "$(ratio "$node_p16" "$redis_p16")"
printf '%-36s %14s %14s\n' "replica lag at -P 16, max (bytes)" "$node_lag_max" "$redis_lag_max"
printf '%-36s %14s %14s\n' "replica lag at -P 16, mean (bytes)" "$node_lag_mean" \
    "$redis_lag_mean"
echo "targets: full sync <= 1.0, SET throughput >= 1.0"
