#!/usr/bin/env bash
# Memory of storage-node against redis-server holding the same keys.
#
# Usage: tests/bench/storage_node_memory.sh
#
# Builds the release storage-node (`cargo build --release -p storage-node`), starts it and a
# redis-server (`--save '' --appendonly no`) fresh on free loopback ports, loads KEYS_COUNT
# string keys `key:<n>` (n = 0 .. KEYS_COUNT-1) with 16-byte values (`val:<12 digits>`) into
# each by piping a generated RESP file through `redis-cli --pipe` (which returns once every
# reply has arrived), checks with DBSIZE that both hold KEYS_COUNT keys, then reads VmRSS from
# /proc/PID/status of each server and prints both and the ratio node/redis (also for the growth
# over the empty server's RSS). Both servers are stopped by PID when the script exits.
#
# Requires: Linux (/proc), cargo, python3, redis-server and redis-cli.
#
# Environment (defaults in brackets):
#   KEYS_COUNT  number of keys [1000000]
#   NODE_ARGS, REDIS_ARGS, SKIP_BUILD=1, CARGO_TARGET_DIR: see common.sh
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

KEYS_COUNT="${KEYS_COUNT:-1000000}"
require_numbers KEYS_COUNT

require_tools cargo python3 redis-server redis-cli awk
build_node
start_servers

rss_kb() {
    awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}

node_empty="$(rss_kb "$NODE_PID")"
redis_empty="$(rss_kb "$REDIS_PID")"

load_file="$WORK_DIR/load.resp"
# 16-byte values, not integers.
write_set_load "$load_file" "$KEYS_COUNT" 'key:%d' 'val:%012d'

load() {
    local name="$1" port="$2" started ended
    started="$(date +%s.%N)"
    load_resp "$name" "$port" "$load_file" "$KEYS_COUNT"
    ended="$(date +%s.%N)"
    echo "$name: loaded in $(seconds_between "$started" "$ended" 1)s:" \
        "$(tail -1 "$WORK_DIR/$name-pipe.log")" >&2
}

load storage-node "$NODE_PORT"
load redis-server "$REDIS_PORT"

node_rss="$(rss_kb "$NODE_PID")"
redis_rss="$(rss_kb "$REDIS_PID")"
node_growth=$((node_rss - node_empty))
redis_growth=$((redis_rss - redis_empty))

mib() { awk -v kb="$1" 'BEGIN { printf "%.1f MiB", kb / 1024 }'; }
echo
echo "keys: $KEYS_COUNT (key:<n>, 16-byte values), DBSIZE checked on both"
printf '%-14s %14s %14s %12s\n' "" storage-node redis-server node/redis
printf '%-14s %14s %14s %12s\n' "VmRSS empty" "$(mib "$node_empty")" "$(mib "$redis_empty")" \
    "$(ratio "$node_empty" "$redis_empty")"
printf '%-14s %14s %14s %12s\n' "VmRSS loaded" "$(mib "$node_rss")" "$(mib "$redis_rss")" \
    "$(ratio "$node_rss" "$redis_rss")"
printf '%-14s %14s %14s %12s\n' "growth" "$(mib "$node_growth")" "$(mib "$redis_growth")" \
    "$(ratio "$node_growth" "$redis_growth")"
echo "per key: node $((node_growth * 1024 / KEYS_COUNT)) B, redis $((redis_growth * 1024 / KEYS_COUNT)) B"
echo "RSS ratio node/redis: $(ratio "$node_rss" "$redis_rss")"
