#!/usr/bin/env bash
# Memory per item of a Bloom filter in storage-node (RedisBloom 2.6's BF.* commands), beside
# redis-server's memory per member of a set holding the same items, for scale (redis-server
# has no RedisBloom here, so the set is the nearest exact structure it offers).
#
# For each BLOOM_ERRORS rate: `BF.RESERVE bf RATE ITEMS` on the node, then ITEMS items with
# BF.MADD (pipelined with redis-cli --pipe); prints BF.INFO's Size (RedisBloom's figure:
# its structures and bit arrays), MEMORY USAGE, bytes per item, and the formula's bound
# `-ln(rate/2) / ln(2)^2 / 8` bytes per item (a scaling filter's first sub-filter gets half
# the rate; the bit array is rounded up to 64-bit words), then the false-positive rate measured over ITEMS other items. The same
# items go into a set on redis-server with SADD: its MEMORY USAGE per member.
#
# Usage: tests/bench/bloom_memory.sh
# Environment: ITEMS [1000000], BLOOM_ERRORS ["0.01 0.001"], plus common.sh's NODE_ARGS,
# REDIS_ARGS, SKIP_BUILD=1.
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

ITEMS="${ITEMS:-1000000}"
BLOOM_ERRORS="${BLOOM_ERRORS:-0.01 0.001}"

require_tools cargo python3 redis-server redis-cli awk
build_node
start_servers

# Writes `COMMAND KEY prefix0 .. prefix{ITEMS-1}` in batches of 1000 as RESP to $4.
generate() {
    python3 - "$1" "$2" "$3" "$4" "$ITEMS" <<'PY'
import sys
command, key, prefix, path, items = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
def cmd(args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out
with open(path, "wb") as out:
    for start in range(0, items, 1000):
        args = [command.encode(), key.encode()]
        args += [b"%s%d" % (prefix.encode(), n) for n in range(start, min(start + 1000, items))]
        out.write(cmd(args))
PY
}

# Counts the 1s BF.MEXISTS answers for `prefix0 ..` on the node (inline commands, one per
# line, which redis-cli runs in turn printing one reply line per item).
count_hits() {
    awk -v n="$ITEMS" -v prefix="$1" 'BEGIN {
        for (start = 0; start < n; start += 1000) {
            line = "BF.MEXISTS bf"
            for (i = start; i < start + 1000 && i < n; i++) line = line " " prefix i
            print line
        }
    }' >"$WORK_DIR/check.txt"
    redis-cli -p "$NODE_PORT" <"$WORK_DIR/check.txt" | grep -c '^1$'
}

for rate in $BLOOM_ERRORS; do
    redis-cli -p "$NODE_PORT" DEL bf >/dev/null
    redis-cli -p "$NODE_PORT" BF.RESERVE bf "$rate" "$ITEMS" >/dev/null
    generate BF.MADD bf item: "$WORK_DIR/add.resp"
    redis-cli -p "$NODE_PORT" --pipe <"$WORK_DIR/add.resp" >/dev/null
    size="$(redis-cli -p "$NODE_PORT" BF.INFO bf SIZE)"
    usage="$(redis-cli -p "$NODE_PORT" MEMORY USAGE bf)"
    false_positives="$(count_hits stranger:)"
    awk -v rate="$rate" -v n="$ITEMS" -v size="$size" -v usage="$usage" -v fp="$false_positives" 'BEGIN {
        bound = -log(rate / 2) / 0.480453013918201 / 8
        printf "BF   rate %-6s %d items: Size %d B, MEMORY USAGE %d B, %.3f B/item (formula %.3f), false positives %.5f\n",
            rate, n, size, usage, size / n, bound, fp / n
    }'
done

generate SADD s item: "$WORK_DIR/sadd.resp"
redis-cli -p "$REDIS_PORT" --pipe <"$WORK_DIR/sadd.resp" >/dev/null
usage="$(redis-cli -p "$REDIS_PORT" MEMORY USAGE s SAMPLES 0)"
awk -v n="$ITEMS" -v usage="$usage" 'BEGIN {
    printf "SADD redis-server %d members: MEMORY USAGE %d B, %.1f B/member\n", n, usage, usage / n
}'
