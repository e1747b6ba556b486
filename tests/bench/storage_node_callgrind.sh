#!/usr/bin/env bash
# Instructions per request of storage-node and redis-server under a fixed redis-benchmark load,
# counted by valgrind's callgrind. Unlike wall-clock throughput this does not depend on what
# else the machine is doing, so it suits before/after comparisons of one change.
#
# Usage: tests/bench/storage_node_callgrind.sh
#
# For each test: starts the server under callgrind, zeroes the counters once it answers PING,
# runs `redis-benchmark -n N -P DEPTH -c CLIENTS -r KEYSPACE -t TEST`, dumps the counters and
# prints the instructions (Ir) per request. The dump files are kept in OUT_DIR for
# `callgrind_annotate OUT_DIR/<server>-<test>.out`.
#
# Environment (defaults in brackets):
#   N [100000], DEPTH [16], CLIENTS [50], KEYSPACE [1000000], TESTS [set,get,incr,zpopmin],
#   SERVERS [node redis], OUT_DIR [/tmp/callgrind-<pid>], SKIP_BUILD=1: see common.sh
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

N="${N:-100000}"
DEPTH="${DEPTH:-16}"
CLIENTS="${CLIENTS:-50}"
KEYSPACE="${KEYSPACE:-1000000}"
TESTS="${TESTS:-set,get,incr,zpopmin}"
SERVERS="${SERVERS:-node redis}"
OUT_DIR="${OUT_DIR:-/tmp/callgrind-$$}"

require_tools valgrind callgrind_control redis-server redis-cli redis-benchmark python3
build_node
mkdir -p "$OUT_DIR"

# run_one SERVER TEST: one measured run; prints "SERVER TEST Ir/request".
run_one() {
    local server="$1" test="$2" port pid i out="$OUT_DIR/$1-$2.out"
    port="$(free_ports | cut -d' ' -f1)"
    rm -f "$out"
    local -a cmd
    if [ "$server" = node ]; then
        # Busy polling would count its spinning as instructions; it is a wall-clock matter.
        cmd=("$NODE_BIN" --port "$port" --busy-poll-usecs 0)
    else
        cmd=(redis-server --port "$port" --save '' --appendonly no)
    fi
    valgrind --tool=callgrind --callgrind-out-file="$out" "${cmd[@]}" \
        >"$OUT_DIR/$server-$test.log" 2>&1 &
    pid=$!
    for i in $(seq 1 300); do
        [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
        sleep 0.1
    done
    callgrind_control -z "$pid" >/dev/null 2>&1
    redis-benchmark -p "$port" -n "$N" -P "$DEPTH" -c "$CLIENTS" -r "$KEYSPACE" -t "$test" \
        -q >/dev/null 2>&1
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    # The dump taken by -d is "<out>.1"; its summary line is the total since the zeroing.
    local total
    total="$(awk '/^summary:/ { print $2 }' "$out.1" 2>/dev/null)"
    if [ -z "$total" ]; then
        echo "$server $test: no dump (see $OUT_DIR/$server-$test.log)" >&2
        return
    fi
    printf '%-6s %-10s %10d Ir/request\n' "$server" "$test" "$((total / N))"
}

IFS=',' read -ra tests <<<"$TESTS"
for test in "${tests[@]}"; do
    for server in $SERVERS; do
        run_one "$server" "$test"
    done
done
echo "dumps: $OUT_DIR" >&2
