#!/usr/bin/env bash
# Eviction under a Zipf-distributed cache load: storage-node against redis-server.
#
# Usage: tests/bench/eviction.sh
#
# For each of allkeys-lru and allkeys-lfu and each of ROUNDS rounds, starts a fresh
# storage-node and redis-server (release node, see common.sh) with `maxmemory MAXMEMORY_MB`
# and that policy, then runs tests/bench/eviction_load.py against each in turn, the order
# alternating between rounds (same seed, so the same sequence of keys): KEYS keys of VALUE_BYTES bytes, about twice maxmemory, picked by a Zipf law;
# WRITE_PERCENT% SETs, the rest GETs, a GET that misses refilled by a SET (cache-aside).
# Each run first writes every key once (unmeasured), then stops after OPS operations or
# RUN_SECONDS seconds.
#
# Prints per policy, round and server: hit ratio, operations per second, the server's CPU
# time per operation, evicted keys and peak RSS (VmHWM) over maxmemory; then the node/redis
# ratios of the medians over the rounds, and for throughput and CPU also the median of each
# round's own ratio (its two runs ran back to back, so they share the VM's mood; on this
# kind of shared VM single rounds' ratios have spread from 0.77 to 1.33). One Python client cannot keep either server busy
# (it spends more time per operation than they do), so ops/s is mostly the client's speed;
# the CPU per operation is what each server would need at full load (target: node <= redis).
# The node's CPU includes its busy polling (`busy-poll-usecs`, up to 30 us each time it runs
# out of work), which a client this slow makes it do after every batch: about 1 us an
# operation here. NODE_ARGS='--busy-poll-usecs 0' measures the work alone. Targets: hit ratio and throughput
# ratio >= 1.0, and the node's peak RSS above maxmemory no more than redis-server's.
# maxmemory counts each process's fixed memory too (with one key the node holds about 0.8 MB
# of used_memory, redis-server about 0.9 MB), which is why the default limit is not smaller.
# Throughput is the client's view through one Python client (a plain socket, see
# eviction_load.py): on a shared machine only the ratio means anything, and single runs
# move by about 10%, hence the rounds. It counts the load's GETs and SETs, not the SETs refilling misses
# (see eviction_load.py): a better hit ratio must not read as a slower server.
#
# Requires: Linux (/proc), cargo, python3 with redis-py, redis-server and redis-cli.
#
# Environment (defaults in brackets):
#   MAXMEMORY_MB [64]  VALUE_BYTES [1000]  KEYS [2 * maxmemory / VALUE_BYTES]
#   OPS [600000]  RUN_SECONDS [60]  WRITE_PERCENT [10]  SEED [7]  ROUNDS [5]
#   POLICIES [allkeys-lru allkeys-lfu]
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
ROUNDS="${ROUNDS:-5}"
POLICIES="${POLICIES:-allkeys-lru allkeys-lfu}"
require_numbers MAXMEMORY_MB VALUE_BYTES KEYS OPS SECONDS_LIMIT WRITE_PERCENT SEED ROUNDS

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

# ratio3 A B: A / B with three decimals (hit ratios differ in the third).
ratio3() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.3f", a / b; else printf "n/a" }'
}

# field NAME LINE: the value of NAME=... in LINE.
field() {
    tr ' ' '\n' <<<"$2" | awk -F= -v n="$1" '$1 == n { print $2 }'
}

# over_maxmemory PEAK: how far PEAK is above maxmemory, in MiB (negative if below).
over_maxmemory() {
    awk -v p="$1" -v m="$MAXMEMORY" 'BEGIN { printf "%.1f", (p - m) / 1048576 }'
}

# run WHO: one eviction_load.py run against the node or redis-server just started.
run() {
    if [ "$1" = node ]; then
        python3 "$LOAD" "$NODE_PORT" "$NODE_PID" "$KEYS" "$OPS" "$SECONDS_LIMIT" \
            "$VALUE_BYTES" "$WRITE_PERCENT" "$SEED"
    else
        python3 "$LOAD" "$REDIS_PORT" "$REDIS_PID" "$KEYS" "$OPS" "$SECONDS_LIMIT" \
            "$VALUE_BYTES" "$WRITE_PERCENT" "$SEED"
    fi
}

echo "maxmemory ${MAXMEMORY_MB} MiB, $KEYS keys of $VALUE_BYTES bytes (Zipf 0.99)," \
    "$WRITE_PERCENT% writes, at most $OPS ops or ${SECONDS_LIMIT}s per run, $ROUNDS rounds"
printf '%-12s %-5s %-13s %9s %9s %9s %9s %14s\n' policy round server hit_ratio ops/s \
    "cpu us/op" evicted "peak-max MiB"
summary=()
for policy in $POLICIES; do
    settings="--maxmemory $MAXMEMORY --maxmemory-policy $policy"
    NODE_ARGS="$BASE_NODE_ARGS $settings"
    REDIS_ARGS="$BASE_REDIS_ARGS $settings"
    declare -A hits=() rates=() peaks=() cpus=() latest=()
    rate_ratios=() cpu_ratios=()
    for round in $(seq 1 "$ROUNDS"); do
        start_servers
        # Fresh servers each round, and the order alternates: whichever runs second shares
        # the machine with a server holding 64 MB that the first has just left.
        order="node redis"
        [ $((round % 2)) -eq 0 ] && order="redis node"
        for who in $order; do
            line="$(run "$who")" || exit 1
            hits[$who]+="$(field hit_ratio "$line") "
            rates[$who]+="$(field ops_per_sec "$line") "
            peaks[$who]+="$(over_maxmemory "$(field peak_rss_bytes "$line")") "
            cpus[$who]+="$(field server_cpu_us_per_op "$line") "
            latest[$who-rate]="$(field ops_per_sec "$line")"
            latest[$who-cpu]="$(field server_cpu_us_per_op "$line")"
            printf '%-12s %-5s %-13s %9s %9s %9s %9s %14s\n' "$policy" "$round" \
                "$([ "$who" = node ] && echo storage-node || echo redis-server)" \
                "$(field hit_ratio "$line")" "$(field ops_per_sec "$line")" \
                "$(field server_cpu_us_per_op "$line")" \
                "$(field evicted_keys "$line")" "$(over_maxmemory "$(field peak_rss_bytes "$line")")"
        done
        stop_servers
        # The two runs of a round are minutes apart at most; rounds can be far apart in
        # what the rest of the VM is doing, so each round's own ratio is the fair pairing.
        rate_ratios+=("$(ratio "${latest[node-rate]}" "${latest[redis-rate]}")")
        cpu_ratios+=("$(ratio "${latest[node-cpu]}" "${latest[redis-cpu]}")")
    done
    # shellcheck disable=SC2086 # the lists are space-separated numbers
    summary+=("$policy (medians of $ROUNDS rounds): hit ratio node/redis \
$(median ${hits[node]}) / $(median ${hits[redis]}) = $(ratio3 "$(median ${hits[node]})" \
"$(median ${hits[redis]})"), throughput node/redis $(ratio "$(median ${rates[node]})" \
"$(median ${rates[redis]})") (median of the rounds' own ratios $(median "${rate_ratios[@]}"): \
${rate_ratios[*]}), server CPU per operation node/redis \
$(median ${cpus[node]}) / $(median ${cpus[redis]}) us = $(ratio "$(median ${cpus[node]})" \
"$(median ${cpus[redis]})") (rounds' own ratios: median $(median "${cpu_ratios[@]}"), \
${cpu_ratios[*]}), peak RSS over maxmemory node $(median ${peaks[node]}) MiB vs \
redis $(median ${peaks[redis]}) MiB")
    unset hits rates peaks cpus latest
done
echo
printf '%s\n' "${summary[@]}"
