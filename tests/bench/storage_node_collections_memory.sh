#!/usr/bin/env bash
# Memory of collections in storage-node against redis-server, three shapes, each loaded into
# a fresh pair of servers:
#   zset        one sorted set with ZSET_MEMBERS members (default 1,000,000)
#   hash        one hash with HASH_FIELDS fields (default 1,000,000)
#   small       SMALL_HASHES hashes of 10 fields each (default 100,000)
#   stream      one stream of STREAM_ENTRIES entries `field value123` (default 1,000,000),
#               explicit increasing ids, default node sizes
# Prints VmRSS of both servers and the ratio node/redis per shape (target: at most 1.2).
#
# Usage: tests/bench/storage_node_collections_memory.sh [zset|hash|small|stream ...]
# Environment: ZSET_MEMBERS, HASH_FIELDS, SMALL_HASHES, STREAM_ENTRIES, plus common.sh's NODE_ARGS,
# REDIS_ARGS, SKIP_BUILD=1.
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

ZSET_MEMBERS="${ZSET_MEMBERS:-1000000}"
HASH_FIELDS="${HASH_FIELDS:-1000000}"
SMALL_HASHES="${SMALL_HASHES:-100000}"
STREAM_ENTRIES="${STREAM_ENTRIES:-1000000}"
SHAPES=("$@")
[ "${#SHAPES[@]}" -eq 0 ] && SHAPES=(zset hash small stream)

require_tools cargo python3 redis-server redis-cli awk
build_node
export SKIP_BUILD=1

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
mib() { awk -v kb="$1" 'BEGIN { printf "%.1f MiB", kb / 1024 }'; }

# Writes the RESP commands of one shape to $2; prints what the server must then report.
generate() {
    python3 - "$1" "$2" "$ZSET_MEMBERS" "$HASH_FIELDS" "$SMALL_HASHES" "$STREAM_ENTRIES" <<'PY'
import sys
shape, path = sys.argv[1], sys.argv[2]
zset_members, hash_fields, small_hashes, stream_entries = map(int, sys.argv[3:7])
def cmd(*args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
with open(path, "wb") as out:
    if shape == "zset":
        for start in range(0, zset_members, 100):
            args = [b"ZADD", b"bigzset"]
            for n in range(start, min(start + 100, zset_members)):
                args += [b"%d" % (n * 7 % 1000003), b"member:%d" % n]
            out.write(cmd(*args))
        print("ZCARD bigzset", zset_members)
    elif shape == "hash":
        for start in range(0, hash_fields, 100):
            args = [b"HSET", b"bighash"]
            for n in range(start, min(start + 100, hash_fields)):
                args += [b"field:%d" % n, b"value:%d" % n]
            out.write(cmd(*args))
        print("HLEN bighash", hash_fields)
    elif shape == "stream":
        for n in range(stream_entries):
            out.write(cmd(b"XADD", b"bigstream", b"%d-1" % (1000 + n), b"field", b"value123"))
        print("XLEN bigstream", stream_entries)
    else:
        for h in range(small_hashes):
            args = [b"HSET", b"user:%d" % h]
            for f in range(10):
                args += [b"f%d" % f, b"v%d-%d" % (h, f)]
            out.write(cmd(*args))
        print("DBSIZE", small_hashes)
PY
}

for shape in "${SHAPES[@]}"; do
    start_servers
    node_empty="$(rss_kb "$NODE_PID")"
    redis_empty="$(rss_kb "$REDIS_PID")"
    check="$(generate "$shape" "$WORK_DIR/$shape.resp")"
    read -r -a check_cmd <<<"${check% *}"
    expected="${check##* }"
    for port in "$NODE_PORT" "$REDIS_PORT"; do
        redis-cli -p "$port" --pipe <"$WORK_DIR/$shape.resp" >"$WORK_DIR/$shape-$port.log" 2>&1 ||
            { echo "loading $shape into port $port failed"; cat "$WORK_DIR/$shape-$port.log"; exit 1; }
        got="$(redis-cli -p "$port" "${check_cmd[@]}")"
        [ "$got" = "$expected" ] || { echo "port $port: ${check_cmd[*]} = $got, expected $expected"; exit 1; }
    done
    node_rss="$(rss_kb "$NODE_PID")"
    redis_rss="$(rss_kb "$REDIS_PID")"
    printf '%-6s node %12s (empty %s)  redis %12s (empty %s)  node/redis %s  growth ratio %s\n' \
        "$shape" "$(mib "$node_rss")" "$(mib "$node_empty")" "$(mib "$redis_rss")" "$(mib "$redis_empty")" \
        "$(ratio "$node_rss" "$redis_rss")" "$(ratio $((node_rss - node_empty)) $((redis_rss - redis_empty)))"
    stop_servers
done
