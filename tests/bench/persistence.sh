#!/usr/bin/env bash
# RDB persistence of storage-node against redis-server holding the same keys.
#
# Usage: tests/bench/persistence.sh
#
# Builds the release storage-node, starts it and a redis-server fresh on free loopback ports
# (both without save points; files node.rdb / redis.rdb in one scratch directory), loads
# KEYS_COUNT keys `key:<12 digits>` of mixed types (40% strings, 15% each lists, hashes,
# sets and sorted sets of 5 elements; a tenth with a TTL) through `redis-cli --pipe`, checks
# DBSIZE on both, then prints node/redis ratios for:
#   1. SAVE time: the wall time of `redis-cli SAVE` (target <= 1.0);
#   2. load time: each server restarted on its file; the time its log reports for the load
#      (node: "DB loaded from disk: ... in X seconds", redis: "DB loaded from disk: X
#      seconds"), DBSIZE checked again (target <= 1.0);
#   3. BGSAVE memory under a writer: `redis-benchmark -t set -r KEYS_COUNT` (random existing
#      keys) runs while BGSAVE does; the node's extra memory is the peak VmRSS during the
#      BGSAVE minus VmRSS just before it (its INFO rdb_last_cow_size, the pre-images, is
#      shown too); redis-server's is its INFO rdb_last_cow_size (the fork's copy-on-write)
#      (target <= 0.5);
#   4. client stall during BGSAVE: a PING loop on its own connection, started before BGSAVE
#      is sent and stopped when it is over: p99.9 and max latency (redis-server's include
#      its fork) (target <= 1.0).
# Both servers are stopped by PID when the script exits.
#
# Requires: Linux (/proc), cargo, python3, redis-server, redis-cli, redis-benchmark.
#
# Environment (defaults in brackets):
#   KEYS_COUNT  number of keys [1000000]
#   WRITERS     redis-benchmark clients writing during BGSAVE [4]
#   NODE_ARGS, REDIS_ARGS, SKIP_BUILD=1, NODE_BIN, CARGO_TARGET_DIR: see common.sh
set -uo pipefail

# shellcheck source=tests/bench/common.sh
source "$(dirname "$0")/common.sh"

KEYS_COUNT="${KEYS_COUNT:-1000000}"
WRITERS="${WRITERS:-4}"
require_numbers KEYS_COUNT WRITERS

require_tools cargo python3 redis-server redis-cli redis-benchmark awk
build_node
NODE_ARGS="--dbfilename node.rdb ${NODE_ARGS:-}"
REDIS_ARGS="--dbfilename redis.rdb ${REDIS_ARGS:-}"
start_servers

load_file="$WORK_DIR/load.resp"
python3 - "$KEYS_COUNT" "$load_file" <<'EOF'
import sys
count, path = int(sys.argv[1]), sys.argv[2]

def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
    return b"".join(out)

with open(path, "wb") as out:
    batch = []
    for n in range(count):
        key = b"key:%012d" % n
        kind = n % 20
        if kind < 8:
            batch.append(command(b"SET", key, b"value:%d" % n))
        elif kind < 11:
            batch.append(command(b"RPUSH", key, b"a", b"%d" % n, b"c", b"dd", b"e"))
        elif kind < 14:
            batch.append(command(b"HSET", key, b"f1", b"%d" % n, b"f2", b"x", b"f3", b"y",
                                 b"f4", b"z", b"f5", b"w"))
        elif kind < 17:
            batch.append(command(b"SADD", key, b"m1", b"m2", b"%d" % n, b"m4", b"m5"))
        else:
            batch.append(command(b"ZADD", key, b"1", b"a", b"2", b"b", b"3", b"%d" % n,
                                 b"4", b"d", b"5", b"e"))
        if n % 10 == 0:
            batch.append(command(b"EXPIRE", key, b"1000000"))
        if len(batch) >= 10000:
            out.write(b"".join(batch))
            batch.clear()
    out.write(b"".join(batch))
EOF

load_resp storage-node "$NODE_PORT" "$load_file" "$KEYS_COUNT"
load_resp redis-server "$REDIS_PORT" "$load_file" "$KEYS_COUNT"

# 1. SAVE time.
save_seconds() {
    local port="$1" started ended reply
    started="$(date +%s.%N)"
    reply="$(redis-cli -p "$port" save)"
    ended="$(date +%s.%N)"
    if [ "$reply" != OK ]; then
        echo "error: SAVE on port $port answered $reply" >&2
        exit 1
    fi
    seconds_between "$started" "$ended"
}
node_save="$(save_seconds "$NODE_PORT")"
redis_save="$(save_seconds "$REDIS_PORT")"

# 2. Load time: restart each server on its file.
stop_pid() {
    kill "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
stop_pid "$NODE_PID"
# shellcheck disable=SC2086 # NODE_ARGS is a word list
"$NODE_BIN" --port "$NODE_PORT" --bind 127.0.0.1 --dir "$WORK_DIR" --save "" ${NODE_ARGS} \
    >"$WORK_DIR/storage-node.log" 2>&1 &
NODE_PID=$!
stop_pid "$REDIS_PID"
# shellcheck disable=SC2086
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$WORK_DIR" ${REDIS_ARGS} >"$WORK_DIR/redis-server.log" 2>&1 &
REDIS_PID=$!
wait_ready "$NODE_PORT" storage-node "$NODE_PID"
wait_ready "$REDIS_PORT" redis-server "$REDIS_PID"
for port in "$NODE_PORT" "$REDIS_PORT"; do
    keys="$(redis-cli -p "$port" dbsize)"
    if [ "$keys" != "$KEYS_COUNT" ]; then
        echo "error: port $port loaded $keys keys, expected $KEYS_COUNT" >&2
        exit 1
    fi
done
node_load="$(grep -o 'DB loaded from disk: .* in [0-9.]* seconds' "$WORK_DIR/storage-node.log" |
    grep -o '[0-9.]* seconds' | grep -o '[0-9.]*')"
redis_load="$(grep -o 'DB loaded from disk: [0-9.]* seconds' "$WORK_DIR/redis-server.log" |
    grep -o '[0-9.]*')"

# 3 and 4. BGSAVE under a writer, with a PING loop watching the stalls.
cat >"$WORK_DIR/probe.py" <<'EOF'
"""probe.py ping PORT STOPFILE  |  probe.py bgsave PORT PID"""
import os, socket, sys, time

def connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s

def call(s, raw):
    s.sendall(raw)
    data = b""
    while not data.endswith(b"\r\n"):
        data += s.recv(65536)
    if data.startswith(b"$"):
        size = int(data[1:data.index(b"\r\n")])
        while len(data) < data.index(b"\r\n") + 2 + size + 2:
            data += s.recv(65536)
    return data

def info(s):
    text = call(s, b"*2\r\n$4\r\nINFO\r\n$11\r\npersistence\r\n").decode()
    return dict(l.split(":", 1) for l in text.split("\r\n") if ":" in l)

def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

mode, port = sys.argv[1], int(sys.argv[2])
if mode == "ping":
    stop, s, lat = sys.argv[3], connect(port), []
    call(s, b"*1\r\n$4\r\nPING\r\n")
    open(stop + ".ready", "w").close()
    deadline = time.monotonic() + 3600
    while not os.path.exists(stop) and time.monotonic() < deadline:
        t = time.perf_counter()
        call(s, b"*1\r\n$4\r\nPING\r\n")
        lat.append(time.perf_counter() - t)
    lat.sort()
    p999 = lat[min(len(lat) - 1, int(len(lat) * 0.999))] if lat else 0
    print(f"{p999 * 1e6:.0f} {(lat[-1] if lat else 0) * 1e6:.0f} {len(lat)}")
else:
    pid, s = int(sys.argv[3]), connect(port)
    before = peak = rss_kb(pid)
    started = time.monotonic()
    reply = call(s, b"*1\r\n$6\r\nBGSAVE\r\n")
    if not reply.startswith(b"+"):
        sys.exit(f"BGSAVE answered {reply!r}")
    deadline = started + 3600
    while info(s).get("rdb_bgsave_in_progress") != "0" and time.monotonic() < deadline:
        peak = max(peak, rss_kb(pid))
        time.sleep(0.005)
    took = time.monotonic() - started
    fields = info(s)
    if fields.get("rdb_last_bgsave_status") != "ok":
        sys.exit("BGSAVE failed")
    print(f"{peak - before} {int(fields['rdb_last_cow_size']) // 1024} {took:.3f}")
EOF

bgsave_probe() {
    local port="$1" pid="$2" name="$3" writer pinger stop="$WORK_DIR/stop-$3"
    rm -f "$stop" "$stop.ready"
    redis-benchmark -p "$port" -t set -r "$KEYS_COUNT" -n 2000000000 -c "$WRITERS" -q \
        >/dev/null 2>&1 &
    writer=$!
    python3 "$WORK_DIR/probe.py" ping "$port" "$stop" >"$WORK_DIR/ping-$name" &
    pinger=$!
    # The PING loop runs before BGSAVE is sent.
    for _ in $(seq 1 100); do
        [ -e "$stop.ready" ] && break
        sleep 0.1
    done
    python3 "$WORK_DIR/probe.py" bgsave "$port" "$pid" >"$WORK_DIR/bgsave-$name" || exit 1
    touch "$stop"
    wait "$pinger"
    kill "$writer" 2>/dev/null
    wait "$writer" 2>/dev/null
}
bgsave_probe "$NODE_PORT" "$NODE_PID" node
bgsave_probe "$REDIS_PORT" "$REDIS_PID" redis
read -r node_growth node_cow node_bg_time <"$WORK_DIR/bgsave-node"
read -r _ redis_cow redis_bg_time <"$WORK_DIR/bgsave-redis"
read -r node_p999 node_max node_pings <"$WORK_DIR/ping-node"
read -r redis_p999 redis_max redis_pings <"$WORK_DIR/ping-redis"

echo
echo "keys: $KEYS_COUNT of mixed types, DBSIZE checked on both before and after the reload"
printf '%-34s %14s %14s %11s\n' "" storage-node redis-server node/redis
printf '%-34s %14s %14s %11s\n' "SAVE (s)" "$node_save" "$redis_save" \
    "$(ratio "$node_save" "$redis_save")"
printf '%-34s %14s %14s %11s\n' "load at start (s)" "$node_load" "$redis_load" \
    "$(ratio "$node_load" "$redis_load")"
printf '%-34s %14s %14s %11s\n' "BGSAVE extra memory (KiB)" "$node_growth" "$redis_cow" \
    "$(ratio "$node_growth" "$redis_cow")"
printf '%-34s %14s %14s\n' "  rdb_last_cow_size (KiB)" "$node_cow" "$redis_cow"
printf '%-34s %14s %14s\n' "  BGSAVE duration (s)" "$node_bg_time" "$redis_bg_time"
printf '%-34s %14s %14s %11s\n' "PING p99.9 during BGSAVE (us)" "$node_p999" "$redis_p999" \
    "$(ratio "$node_p999" "$redis_p999")"
printf '%-34s %14s %14s %11s\n' "PING max during BGSAVE (us)" "$node_max" "$redis_max" \
    "$(ratio "$node_max" "$redis_max")"
printf '%-34s %14s %14s\n' "  PINGs measured" "$node_pings" "$redis_pings"
echo "targets: SAVE and load <= 1.0, BGSAVE extra memory <= 0.5, PING stalls <= 1.0"
