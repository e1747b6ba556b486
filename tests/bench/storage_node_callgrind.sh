#!/usr/bin/env bash
# Instructions per request of storage-node and redis-server under a fixed redis-benchmark load,
# counted by valgrind's callgrind. Unlike wall-clock throughput this does not depend on what
# else the machine is doing, so it suits before/after comparisons of one change.
#
# Usage: tests/bench/storage_node_callgrind.sh
#
# For each test: starts the server under callgrind, runs the PREPARE commands, zeroes the
# counters, runs `redis-benchmark -n N -P DEPTH -c CLIENTS -r KEYSPACE -t TEST` (or the custom
# command), dumps the counters and prints the instructions (Ir) per request. The dump files
# are kept in OUT_DIR for `callgrind_annotate OUT_DIR/<server>-<test>.out`.
#
# Environment (defaults in brackets):
#   N [100000], DEPTH [16], CLIENTS [50], KEYSPACE [1000000], TESTS [set,get,incr,zpopmin],
#   SERVERS [node redis], OUT_DIR [/tmp/callgrind-<pid>], BENCH_TIMEOUT seconds [1800],
#   SKIP_BUILD=1: see common.sh
#   VALGRIND_ARGS   more callgrind options, e.g. --cache-sim=yes for cache misses per function
#   COMMANDS        newline-separated custom commands measured after the TESTS, each
#                   `NAME: WORDS` (NAME names the dump files; WORDS are shell-quoted and run
#                   as `redis-benchmark ... WORDS`, with __rand_int__ as redis-benchmark has it)
#   PREPARE         newline-separated commands each run PREPARE_N [100000] times (same -r and
#                   -P) on every fresh server before its counters are zeroed, so a command
#                   is measured on data, not on an empty key
#   PREPARE_ONCE    newline-separated commands each run once with redis-cli after PREPARE
#                   (shell-quoted words; for setup that cannot repeat, as XGROUP CREATE)
#
# HyperLogLog and GEO as the throughput script measures them (issue 18): PFADD on a dense HLL,
# PFCOUNT of one key (its cached count) and of three (a merge and an estimate per call),
# GEOADD into a set of 100,000 positions and GEOSEARCH BYRADIUS in it:
#   TESTS= PREPARE=$'PFADD hll __rand_int__\nPFADD hll2 __rand_int__\nPFADD hll3 __rand_int__
#   GEOADD geo:bench 13.__rand_int__ 38.__rand_int__ m:__rand_int__' COMMANDS=$'pfadd: PFADD hll __rand_int__
#   pfcount: PFCOUNT hll
#   pfcount3: PFCOUNT hll hll2 hll3
#   geoadd: GEOADD geo:bench 13.__rand_int__ 38.__rand_int__ m:__rand_int__
#   geosearch: GEOSEARCH geo:bench FROMLONLAT 13.5 38.5 BYRADIUS 500 m ASC COUNT 10' \
#   N=20000 tests/bench/storage_node_callgrind.sh
#
# Streams as the throughput script measures them (issue 19): XADD with `*`, XRANGE of 10
# entries, XREADGROUP COUNT 1 with `>` (each read adds a pending entry) and XACK of ids that
# are pending (bench:pel holds 1-0 .. 100000-0, all read into group g's PEL):
#   TESTS= KEYSPACE=100000 PREPARE_N=100000 PREPARE=$'XADD bench:stream \'*\' field __rand_int__
#   XADD bench:range \'*\' field __rand_int__' PREPARE_ONCE=$'XGROUP CREATE bench:stream g 0
#   EVAL "for i=1,100000 do redis.call(\'XADD\', KEYS[1], i..\'-0\', \'field\', \'value\') end" 1 bench:pel
#   XGROUP CREATE bench:pel g 0
#   XREADGROUP GROUP g setup STREAMS bench:pel \'>\'' COMMANDS=$'xadd: XADD bench:stream \'*\' field __rand_int__
#   xrange: XRANGE bench:range - + COUNT 10
#   xreadgroup: XREADGROUP GROUP g reader COUNT 1 STREAMS bench:stream \'>\'
#   xack: XACK bench:pel g __rand_int__-0' N=20000 tests/bench/storage_node_callgrind.sh
#
# Any failed step (server not starting, redis-benchmark failing or getting error replies,
# no dump) stops the script with exit status 1 and prints no figure for that run.
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

N="${N:-100000}"
DEPTH="${DEPTH:-16}"
CLIENTS="${CLIENTS:-50}"
KEYSPACE="${KEYSPACE:-1000000}"
TESTS="${TESTS-set,get,incr,zpopmin}"
COMMANDS="${COMMANDS:-}"
PREPARE="${PREPARE:-}"
PREPARE_ONCE="${PREPARE_ONCE:-}"
PREPARE_N="${PREPARE_N:-100000}"
require_numbers N DEPTH CLIENTS KEYSPACE PREPARE_N
SERVERS="${SERVERS:-node redis}"
OUT_DIR="${OUT_DIR:-/tmp/callgrind-$$}"

require_tools valgrind callgrind_control redis-server redis-cli redis-benchmark python3
build_node
mkdir -p "$OUT_DIR"

SERVER_PID=""
stop_server() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null
        wait "$SERVER_PID" 2>/dev/null
    fi
    SERVER_PID=""
}
trap stop_server EXIT
trap 'exit 130' INT TERM

# fail SERVER TEST MESSAGE: a run that did not measure what it claims ends the script, so a
# broken run never prints a figure (dividing a partial count by N would look like a result).
fail() {
    echo "error: $1 $2: $3 (server log: $OUT_DIR/$1-$2.log)" >&2
    exit 1
}

# benchmark PORT COUNT WHAT...: redis-benchmark sending COUNT requests of WHAT (`-t TEST` or
# a command's words); prints its output. redis-benchmark exits non-zero on an error reply;
# bounded because it retries forever (spinning a CPU) when the server goes away.
benchmark() {
    local port="$1" count="$2"
    shift 2
    timeout "${BENCH_TIMEOUT:-1800}" redis-benchmark -p "$port" -n "$count" -P "$DEPTH" \
        -c "$CLIENTS" -r "$KEYSPACE" -q "$@" 2>&1
}

# run_one SERVER TEST WHAT...: one measured run of WHAT (as for `benchmark`); prints
# "SERVER TEST Ir/request".
run_one() {
    local server="$1" test="$2" port i out="$OUT_DIR/$1-$2.out" bench rc line
    shift 2
    local -a prepare_words
    port="$(free_ports | cut -d' ' -f1)"
    rm -f "$out" "$out".*
    local -a cmd
    if [ "$server" = node ]; then
        # Busy polling would count its spinning as instructions; it is a wall-clock matter.
        # No save points, as redis-server's: a BGSAVE must not run during the measurement.
        cmd=("$NODE_BIN" --port "$port" --busy-poll-usecs 0 --save '')
    else
        cmd=(redis-server --port "$port" --save '' --appendonly no)
    fi
    valgrind --tool=callgrind ${VALGRIND_ARGS:-} --callgrind-out-file="$out" "${cmd[@]}" \
        >"$OUT_DIR/$server-$test.log" 2>&1 &
    SERVER_PID=$!
    for i in $(seq 1 300); do
        [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
        kill -0 "$SERVER_PID" 2>/dev/null || fail "$server" "$test" "the server exited while starting"
        sleep 0.1
    done
    [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] ||
        fail "$server" "$test" "the server did not answer PING within 30 s"
    while IFS= read -r line; do
        [ -z "${line// /}" ] && continue
        eval "prepare_words=($line)"
        bench="$(benchmark "$port" "$PREPARE_N" "${prepare_words[@]}")"
        rc=$?
        if [ "$rc" -ne 0 ] || ! grep -q 'requests per second' <<<"$bench"; then
            fail "$server" "$test" "preparing with '$line' failed (exit $rc): $(tail -c 300 <<<"$bench")"
        fi
    done <<<"$PREPARE"
    while IFS= read -r line; do
        [ -z "${line// /}" ] && continue
        eval "prepare_words=($line)" || fail "$server" "$test" "PREPARE_ONCE line '$line' does not parse"
        bench="$(timeout "${BENCH_TIMEOUT:-1800}" redis-cli -p "$port" "${prepare_words[@]}" 2>&1 | head -c 300)"
        if grep -q '^ERR\|^(error)\|^WRONGTYPE\|^NOGROUP\|^BUSYGROUP' <<<"$bench"; then
            fail "$server" "$test" "preparing with '$line' failed: $bench"
        fi
    done <<<"$PREPARE_ONCE"
    callgrind_control -z "$SERVER_PID" >/dev/null 2>&1 ||
        fail "$server" "$test" "callgrind_control -z could not zero the counters"
    bench="$(benchmark "$port" "$N" "$@")"
    rc=$?
    if [ "$rc" -ne 0 ] || ! grep -q 'requests per second' <<<"$bench"; then
        fail "$server" "$test" "redis-benchmark failed (exit $rc): $(tail -c 300 <<<"$bench")"
    fi
    kill -0 "$SERVER_PID" 2>/dev/null || fail "$server" "$test" "the server died during the run"
    callgrind_control -d "$SERVER_PID" >/dev/null 2>&1 ||
        fail "$server" "$test" "callgrind_control -d could not dump the counters"
    stop_server
    # The dump taken by -d is "<out>.1"; its summary line is the total since the zeroing.
    local total
    total="$(awk '/^summary:/ { print $2 }' "$out.1" 2>/dev/null)"
    if ! [[ "$total" =~ ^[0-9]+$ ]] || [ "$total" -eq 0 ]; then
        fail "$server" "$test" "no instruction count in $out.1"
    fi
    printf '%-6s %-10s %10d Ir/request\n' "$server" "$test" "$((total / N))"
}

IFS=',' read -ra tests <<<"$TESTS"
for test in "${tests[@]}"; do
    for server in $SERVERS; do
        run_one "$server" "$test" -t "$test"
    done
done
while IFS= read -r line; do
    [ -z "${line// /}" ] && continue
    name="${line%%:*}"
    if [ "$name" = "$line" ] || ! [[ "$name" =~ ^[A-Za-z0-9_.-]+$ ]]; then
        echo "error: COMMANDS line '$line' is not 'NAME: WORDS'" >&2
        exit 2
    fi
    eval "words=(${line#*:})"
    for server in $SERVERS; do
        # shellcheck disable=SC2154 # words is set by the eval
        run_one "$server" "$name" "${words[@]}"
    done
done <<<"$COMMANDS"
echo "dumps: $OUT_DIR" >&2
