#!/usr/bin/env bash
# Eviction under a Zipf-distributed cache load: storage-node against redis-server.
#
# Usage: tests/bench/eviction.sh
#
# For each of allkeys-lru and allkeys-lfu, starts a fresh storage-node and redis-server
# (release node, see common.sh) with `maxmemory MAXMEMORY_MB` and that policy, then runs
# tests/bench/eviction_load.py against each in turn (same seed, so the same sequence of
# keys): KEYS keys of VALUE_BYTES bytes, about twice maxmemory, picked by a Zipf law;
# WRITE_PERCENT% SETs, the rest GETs, a GET that misses refilled by a SET (cache-aside).
# Each run first writes every key once (unmeasured), then stops after OPS operations or
# RUN_SECONDS seconds.
#
# Prints per policy and server: hit ratio, operations per second, evicted keys and peak RSS
# (VmHWM) over maxmemory; then the node/redis ratios. Targets: hit ratio and throughput
# ratio >= 1.0, and the node's peak RSS above maxmemory no more than redis-server's.
# maxmemory counts each process's fixed memory too (the node starts at about 1.6 MB of
# used_memory, redis-server at about 0.9 MB), which is why the default limit is not smaller.
# Throughput is the client's view through one Python client: on a shared machine only the
# ratio means anything. It counts the load's GETs and SETs, not the SETs refilling misses
# (see eviction_load.py): a better hit ratio must not read as a slower server.
#
# Requires: Linux (/proc), cargo, python3 with redis-py, redis-server and redis-cli.
#
# Environment (defaults in brackets):
#   MAXMEMORY_MB [64]  VALUE_BYTES [1000]  KEYS [2 * maxmemory / VALUE_BYTES]
#   OPS [600000]  RUN_SECONDS [60]  WRITE_PERCENT [10]  SEED [7]
# (not SECONDS: bash keeps its own SECONDS, the time since the shell started, always set)
#   NODE_ARGS, REDIS_ARGS, SKIP_BUILD=1, CARGO_TARGET_DIR: see common.sh
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

MAXMEMORY_MB="${MAXMEMORY_MB:-64}"
VALUE_BYTES="${VALUE_BYTES:-1000}"
KEYS="${KEYS:-$((2 * MAXMEMORY_MB * 1024 * 1024 / VALUE_BYTES))}"
OPS="${OPS:-600000}"
SECONDS_LIMIT="${RUN_SECONDS:-60}"
WRITE_PERCENT="${WRITE_PERCENT:-10}"
SEED="${SEED:-7}"
require_numbers MAXMEMORY_MB VALUE_BYTES KEYS OPS SECONDS_LIMIT WRITE_PERCENT SEED

require_tools cargo python3 redis-server redis-cli awk
python3 -c 'import redis' 2>/dev/null || {
    echo "error: python3's redis module (redis-py) is not installed" >&2
    exit 2
}
build_node

LOAD="$(dirname "$0")/eviction_load.py"
MAXMEMORY=$((MAXMEMORY_MB * 1024 * 1024))
BASE_NODE_ARGS="${NODE_ARGS:-}"
BASE_REDIS_ARGS="${REDIS_ARGS:-}"

# field NAME LINE: the value of NAME=... in LINE.
field() {
    tr ' ' '\n' <<<"$2" | awk -F= -v n="$1" '$1 == n { print $2 }'
}

# over_maxmemory PEAK: how far PEAK is above maxmemory, in MiB (negative if below).
over_maxmemory() {
    awk -v p="$1" -v m="$MAXMEMORY" 'BEGIN { printf "%.1f", (p - m) / 1048576 }'
}

echo "maxmemory ${MAXMEMORY_MB} MiB, $KEYS keys of $VALUE_BYTES bytes (Zipf 0.99)," \
    "$WRITE_PERCENT% writes, at most $OPS ops or ${SECONDS_LIMIT}s per run"
printf '%-12s %-13s %9s %9s %9s %14s\n' policy server hit_ratio ops/s evicted "peak-max MiB"
summary=()
for policy in allkeys-lru allkeys-lfu; do
    settings="--maxmemory $MAXMEMORY --maxmemory-policy $policy"
    NODE_ARGS="$BASE_NODE_ARGS $settings"
    REDIS_ARGS="$BASE_REDIS_ARGS $settings"
    start_servers
    node="$(python3 "$LOAD" "$NODE_PORT" "$NODE_PID" "$KEYS" "$OPS" "$SECONDS_LIMIT" \
        "$VALUE_BYTES" "$WRITE_PERCENT" "$SEED")" || exit 1
    redis="$(python3 "$LOAD" "$REDIS_PORT" "$REDIS_PID" "$KEYS" "$OPS" "$SECONDS_LIMIT" \
        "$VALUE_BYTES" "$WRITE_PERCENT" "$SEED")" || exit 1
    stop_servers
    for who in node redis; do
        line="${!who}"
        printf '%-12s %-13s %9s %9s %9s %14s\n' "$policy" \
            "$([ "$who" = node ] && echo storage-node || echo redis-server)" \
            "$(field hit_ratio "$line")" "$(field ops_per_sec "$line")" \
            "$(field evicted_keys "$line")" "$(over_maxmemory "$(field peak_rss_bytes "$line")")"
    done
    summary+=("$policy: hit ratio node/redis $(ratio "$(field hit_ratio "$node")" \
        "$(field hit_ratio "$redis")"), throughput node/redis $(ratio \
        "$(field ops_per_sec "$node")" "$(field ops_per_sec "$redis")"), peak RSS over \
maxmemory node $(over_maxmemory "$(field peak_rss_bytes "$node")") MiB vs redis \
$(over_maxmemory "$(field peak_rss_bytes "$redis")") MiB")
done
echo
printf '%s\n' "${summary[@]}"
