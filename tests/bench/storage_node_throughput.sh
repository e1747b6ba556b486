#!/usr/bin/env bash
# Throughput of storage-node against redis-server, measured with redis-benchmark.
#
# Usage: tests/bench/storage_node_throughput.sh
#
# Builds the release storage-node (`cargo build --release -p storage-node`), starts it and a
# redis-server (`--save '' --appendonly no`) on free loopback ports, and for each pipeline depth
# and each test runs, alternating the servers run by run (node, redis, node, redis, ...):
#
#   redis-benchmark -p PORT -t TEST -n N -r 1000000 -c 50 -P DEPTH --csv
#
# It then prints a table (test, depth, node rps, redis rps, node/redis) taking the best (or
# median) of the rounds per server, plus "paired": the median of each round's own ratio (the
# order within a round alternates), then the median CPU use during the runs as node/redis
# percentages of one core: of redis-benchmark ("client") and of the server. A client near
# 100% on both sides means the row measures redis-benchmark's one thread, not the servers
# (their ratio is then a tie within noise); the node's server figure includes busy polling
# (`busy-poll-usecs`), which spins on an idle moment instead of sleeping. A final line per
# test follows, and a warning for runs under 2 s. A test the node does not
# support (redis-benchmark stops with "Error from server: ...") is shown with that error and a
# ratio of n/a; the script goes on. Both servers are stopped by PID when the script exits.
#
# Requires: cargo, python3, redis-server, redis-cli and redis-benchmark (Redis 7.0 tools).
#
# Environment (defaults in brackets):
#   N               requests per run [1000000]; use e.g. N=20000 for a quick check
#   TESTS           comma-separated redis-benchmark -t names [set,get,incr,mset]
#                   (e.g. TESTS=set,get,lpush,rpush,lpop,rpop,sadd,hset,spop,zadd,lrange)
#   EXTRA_COMMANDS  newline-separated custom commands, each a shell-quoted word list run as
#                   `redis-benchmark ... WORDS`, e.g. $'PUBLISH chan msg\nEVAL "return 1" 0'
#                   HyperLogLog:
#                     EXTRA_COMMANDS=$'PFADD hll __rand_int__\nPFCOUNT hll\nPFCOUNT hll hll'
#                   (PFADD fills one key, dense after a few thousand elements; PFCOUNT hll
#                   then mostly answers from the cached count, while PFCOUNT hll hll merges
#                   the registers and estimates on every call)
#                   GEO (issue 18): GEOADD into one set, then GEOSEARCH BYRADIUS in it (the
#                   __rand_int__ digits become the coordinates' decimals, all in Sicily):
#                   EXTRA_COMMANDS=$'GEOADD geo:bench 13.__rand_int__ 38.__rand_int__ m:__rand_int__
#                   GEOSEARCH geo:bench FROMLONLAT 13.5 38.5 BYRADIUS 500 m ASC COUNT 10'
#   STREAMS=1       adds the stream rows (issue 19): XADD with `*` into one stream, XRANGE of
#                   10 entries, XREADGROUP COUNT 1 of a group (each read adds a pending
#                   entry) and XACK of pending entries. Before the runs both servers get
#                   bench:range (10 entries) and bench:pel (STREAM_PEL entries, ids
#                   1-0 .. STREAM_PEL-0, all read into group g's PEL); XACK takes
#                   __rand_int__-0, so with KEYSPACE=STREAM_PEL every ack hits an id that
#                   was pending once (the first run acks most of them, later ones few)
#   STREAM_PEL      entries of bench:pel [200000]
#   DEPTHS          pipeline depths [1 16]
#   ROUNDS          runs per server, test and depth [2]
#   PICK            best | median of the rounds [best]
#   CLIENTS         parallel connections (-c) [50]
#   KEYSPACE        random key range (-r) [1000000]
#   RUN_TIMEOUT     seconds before one redis-benchmark run is abandoned [900]
#   NODE_ARGS, REDIS_ARGS, SKIP_BUILD=1, CARGO_TARGET_DIR: see common.sh
#
# Bloom filters (storage-node's RedisBloom 2.6 commands; redis-server has no RedisBloom, so its
# column shows the error and SADD/SISMEMBER give its figures for scale):
#   EXTRA_COMMANDS=$'BF.ADD bf __rand_int__\nBF.EXISTS bf __rand_int__\nSADD s __rand_int__\nSISMEMBER s __rand_int__'
# (BF.ADD creates a default filter, capacity 100 at 1%, and scales it as items come; for a
# filter sized up front run `redis-cli -p NODE_PORT BF.RESERVE bf 0.01 1000000` first with
# NODE_ARGS unchanged. Memory per item: tests/bench/bloom_memory.sh.)
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

N="${N:-1000000}"
TESTS="${TESTS:-set,get,incr,mset}"
EXTRA_COMMANDS="${EXTRA_COMMANDS:-}"
DEPTHS="${DEPTHS:-1 16}"
ROUNDS="${ROUNDS:-2}"
PICK="${PICK:-best}"
CLIENTS="${CLIENTS:-50}"
KEYSPACE="${KEYSPACE:-1000000}"
RUN_TIMEOUT="${RUN_TIMEOUT:-900}"
case "$PICK" in best | median) ;; *)
    echo "PICK must be best or median" >&2
    exit 2
    ;;
esac

require_tools cargo python3 redis-server redis-cli redis-benchmark awk timeout
build_node
start_servers

STREAM_PEL="${STREAM_PEL:-200000}"
if [ "${STREAMS:-0}" = 1 ]; then
    # The streams the stream rows read: the same on both servers.
    python3 - "$WORK_DIR/streams.resp" "$STREAM_PEL" <<'PY'
import sys
path, pel = sys.argv[1], int(sys.argv[2])
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
with open(path, "wb") as out:
    for n in range(1, 11):
        out.write(cmd(b"XADD", b"bench:range", b"%d-1" % n, b"field", b"value%d" % n))
    for n in range(1, pel + 1):
        out.write(cmd(b"XADD", b"bench:pel", b"%d-0" % n, b"field", b"value123"))
    out.write(cmd(b"XGROUP", b"CREATE", b"bench:pel", b"g", b"0"))
    out.write(cmd(b"XGROUP", b"CREATE", b"bench:stream", b"g", b"$", b"MKSTREAM"))
    out.write(cmd(b"XREADGROUP", b"GROUP", b"g", b"setup", b"STREAMS", b"bench:pel", b">"))
PY
    for port in "$NODE_PORT" "$REDIS_PORT"; do
        load_resp streams "$port" "$WORK_DIR/streams.resp" 3
    done
    # Shell-quoted words (the spec is eval'ed): `*` and `>` as they are.
    EXTRA_COMMANDS+=$'\n'"XADD bench:stream '*' field __rand_int__"
    EXTRA_COMMANDS+=$'\n'"XRANGE bench:range - + COUNT 10"
    EXTRA_COMMANDS+=$'\n'"XREADGROUP GROUP g reader COUNT 1 STREAMS bench:stream '>'"
    EXTRA_COMMANDS+=$'\n'"XACK bench:pel g __rand_int__-0"
fi

# The benchmarks: "t:NAME" for a -t test, "c:WORDS" for a custom command.
specs=()
IFS=',' read -ra names <<<"$TESTS"
for name in "${names[@]}"; do
    name="$(echo "$name" | tr -d '[:space:]')"
    [ -n "$name" ] && specs+=("t:$name")
done
while IFS= read -r line; do
    [ -n "${line// /}" ] && specs+=("c:$line")
done <<<"$EXTRA_COMMANDS"

declare -A samples # "depth|spec#|server|row" -> rps values, space-separated
declare -A rows    # "depth|spec#" -> row names in order, newline-separated
declare -A errors  # "depth|spec#|server" -> error text
declare -A usage   # "depth|spec#|server|wall/client/server" -> seconds or CPU %, per run

# children_cpu_seconds: sets CHILDREN_CPU to the user + system CPU seconds of this shell's
# finished children, so the difference around one redis-benchmark run is that run's CPU.
# `times` has to run in this shell itself: in a subshell (a pipe or `$(...)`) it would count
# the subshell's own children only.
children_cpu_seconds() {
    local file="$WORK_DIR/times"
    times >"$file"
    # Second line: children's user and system time, each as e.g. 1m2.345s.
    CHILDREN_CPU="$(awk 'NR == 2 {
        total = 0
        for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); total += p[1] * 60 + p[2] }
        printf "%.2f", total
    }' "$file")"
}

# percent_of BEFORE AFTER WALL: (AFTER - BEFORE) CPU seconds as a percentage of WALL seconds.
percent_of() {
    awk -v a="$1" -v b="$2" -v w="$3" 'BEGIN { if (w > 0) printf "%.0f", (b - a) * 100 / w }'
}

# bench SERVER PORT DEPTH SPEC#: one redis-benchmark run, recorded in the arrays above.
bench() {
    local server="$1" port="$2" depth="$3" index="$4" spec="${specs[$4]}"
    local out err status
    local -a what
    if [ "${spec:0:2}" = "t:" ]; then
        what=(-t "${spec:2}")
    else
        eval "what=(${spec:2})"
    fi
    out="$(mktemp)"
    err="$(mktemp)"
    local pid="$NODE_PID" started ended server_before server_after client_before client_after
    [ "$server" = redis ] && pid="$REDIS_PID"
    server_before="$(process_cpu_seconds "$pid")"
    children_cpu_seconds
    client_before="$CHILDREN_CPU"
    started="$(date +%s.%N)"
    timeout "$RUN_TIMEOUT" redis-benchmark -h 127.0.0.1 -p "$port" -n "$N" -r "$KEYSPACE" \
        -c "$CLIENTS" -P "$depth" --csv "${what[@]}" >"$out" 2>"$err"
    status=$?
    ended="$(date +%s.%N)"
    children_cpu_seconds
    client_after="$CHILDREN_CPU"
    server_after="$(process_cpu_seconds "$pid")"
    local wall
    wall="$(seconds_between "$started" "$ended" 2)"
    usage["$depth|$index|$server|wall"]+="$wall "
    usage["$depth|$index|$server|client"]+="$(percent_of "$client_before" "$client_after" "$wall") "
    usage["$depth|$index|$server|server"]+="$(percent_of "$server_before" "$server_after" "$wall") "
    # CSV rows: "TEST","rps",...; the header row starts with "test".
    local got=0 row rps
    while IFS=$'\t' read -r row rps; do
        got=1
        samples["$depth|$index|$server|$row"]+="$rps "
        if ! grep -qxF -- "$row" <<<"${rows["$depth|$index"]:-}"; then
            rows["$depth|$index"]+="$row"$'\n'
        fi
    done < <(awk -F'","' 'NR > 1 && /^"/ { gsub(/^"/, "", $1); print $1 "\t" $2 }' "$out")
    if [ "$status" -ne 0 ] || [ "$got" = 0 ]; then
        local message
        # Prefer the server's error over redis-benchmark's warnings (it warns, for one, when
        # CONFIG GET is not answered).
        message="$(grep -h -m1 'Error from server' "$err" "$out" | sed 's/^Error from server: //')"
        [ -z "$message" ] && message="$(grep -hv -e '^"test"' -e '^WARNING' "$err" "$out" | grep -m1 .)"
        [ "$status" = 124 ] && message="timed out after ${RUN_TIMEOUT}s"
        errors["$depth|$index|$server"]="${message:-exit status $status}"
        echo "  $server: error: ${errors["$depth|$index|$server"]}" >&2
    else
        echo "  $server: $(awk -F'","' 'NR > 1 { print $2 }' "$out" | paste -sd' ') rps" >&2
    fi
    rm -f "$out" "$err"
}

# pick VALUES...: the best or the median of the values, or nothing.
pick() {
    printf '%s\n' "$@" | grep . | sort -g | awk -v pick="$PICK" '
        { v[NR] = $1 }
        END {
            if (NR == 0) exit
            if (pick == "best") print v[NR]
            else if (NR % 2) print v[(NR + 1) / 2]
            else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2
        }'
}

echo "N=$N clients=$CLIENTS keyspace=$KEYSPACE rounds=$ROUNDS pick=$PICK" >&2
for depth in $DEPTHS; do
    for index in "${!specs[@]}"; do
        for round in $(seq 1 "$ROUNDS"); do
            echo "${specs[$index]#?:} -P $depth round $round/$ROUNDS" >&2
            # Which server runs first alternates too: the second of a pair runs on a
            # machine the first has just warmed (or heated).
            if [ $((round % 2)) -eq 1 ]; then
                bench node "$NODE_PORT" "$depth" "$index"
                bench redis "$REDIS_PORT" "$depth" "$index"
            else
                bench redis "$REDIS_PORT" "$depth" "$index"
                bench node "$NODE_PORT" "$depth" "$index"
            fi
        done
    done
done

# cell DEPTH SPEC# SERVER ROW: the picked rps, or "error: ..." when the server failed the test.
cell() {
    local values
    # shellcheck disable=SC2086 # the values are space-separated numbers
    values="$(pick ${samples["$1|$2|$3|$4"]:-})"
    if [ -n "$values" ]; then
        echo "$values"
    elif [ -n "${errors["$1|$2|$3"]:-}" ]; then
        echo "error: ${errors["$1|$2|$3"]}"
    else
        echo "n/a"
    fi
}

# paired DEPTH SPEC# ROW: the median of the rounds' own node/redis ratios (a round's two
# runs are back to back; rounds can be far apart in what the rest of the machine does).
paired() {
    local -a node redis
    read -ra node <<<"${samples["$1|$2|node|$3"]:-}"
    read -ra redis <<<"${samples["$1|$2|redis|$3"]:-}"
    local i ratios=()
    for i in "${!node[@]}"; do
        [ -n "${redis[$i]:-}" ] && ratios+=("$(ratio "${node[$i]}" "${redis[$i]}")")
    done
    local middle
    middle="$(median "${ratios[@]/n\/a/}")"
    if [ -n "$middle" ]; then printf '%.2f\n' "$middle"; else echo n/a; fi
}

# usage_cell DEPTH SPEC# KIND: the median of KIND (client or server CPU %) over the runs, node
# then redis, as "node/redis".
usage_cell() {
    local server middle values=()
    for server in node redis; do
        # shellcheck disable=SC2086 # space-separated numbers
        middle="$(median ${usage["$1|$2|$server|$3"]:-})"
        values+=("$([ -n "$middle" ] && printf '%.0f' "$middle" || echo '?')")
    done
    printf '%s/%s' "${values[0]}" "${values[1]}"
}

declare -A summary # row -> "ratio (-P depth), ..."
summary_order=()
echo
printf '%-40s %5s %14s %14s %10s %7s %11s %11s\n' test depth "node rps" "redis rps" node/redis \
    paired "client CPU%" "server CPU%"
short_runs=()
for depth in $DEPTHS; do
    for index in "${!specs[@]}"; do
        names_here="${rows["$depth|$index"]:-}"
        [ -z "$names_here" ] && names_here="${specs[$index]#?:}"$'\n'
        while IFS= read -r row; do
            [ -z "$row" ] && continue
            node="$(cell "$depth" "$index" node "$row")"
            redis="$(cell "$depth" "$index" redis "$row")"
            r="$(ratio "$node" "$redis")"
            pr="$(paired "$depth" "$index" "$row")"
            printf '%-40s %5s %14s %14s %10s %7s %11s %11s\n' "$row" "$depth" "${node%%:*}" \
                "${redis%%:*}" "$r" "$pr" "$(usage_cell "$depth" "$index" client)" \
                "$(usage_cell "$depth" "$index" server)"
            for server in node redis; do
                text="$(cell "$depth" "$index" "$server" "$row")"
                [ "${text:0:6}" = "error:" ] && echo "    $server $text"
            done
            [ -z "${summary["$row"]:-}" ] && summary_order+=("$row")
            summary["$row"]+="${summary["$row"]:+, }$r (paired $pr) at -P $depth"
        done <<<"$names_here"
        # shellcheck disable=SC2086 # space-separated numbers
        shortest="$(printf '%s\n' ${usage["$depth|$index|node|wall"]:-} \
            ${usage["$depth|$index|redis|wall"]:-} | sort -g | head -1)"
        if [ -n "$shortest" ] && awk -v s="$shortest" 'BEGIN { exit !(s < 2) }'; then
            short_runs+=("${specs[$index]#?:} -P $depth: ${shortest} s")
        fi
    done
done
if [ "${#short_runs[@]}" -gt 0 ]; then
    echo
    echo "warning: runs shorter than 2 s (raise N): redis-benchmark times a run in whole" \
        "milliseconds and its $CLIENTS connections open inside it, so such ratios move by several" \
        "percent from run to run. Shortest run of each:"
    printf '  %s\n' "${short_runs[@]}"
fi
echo
for row in "${summary_order[@]}"; do
    echo "$row: node/redis ${summary["$row"]}"
done
