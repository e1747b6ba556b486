# shellcheck shell=bash
# Shared by the benchmark scripts in this folder (sourced, not run).
#
# Builds the release storage-node, starts it and a redis-server on free loopback ports, and
# stops both by PID when the calling script exits (normally, on error or on Ctrl-C).
#
# After `start_servers`: NODE_PORT, NODE_PID, REDIS_PORT, REDIS_PID, WORK_DIR are set.
# Environment: NODE_ARGS / REDIS_ARGS add arguments to either server; CARGO_TARGET_DIR is
# honoured; SKIP_BUILD=1 uses the existing release binary, or NODE_BIN's (e.g. a debug build
# for a quick check of a script; its figures mean nothing).

BENCH_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
NODE_BIN="${NODE_BIN:-${CARGO_TARGET_DIR:-$BENCH_REPO/target}/release/storage-node}"
NODE_PID=""
REDIS_PID=""
WORK_DIR=""

# require_numbers NAME...: exits unless each named variable holds a whole number.
require_numbers() {
    local name
    for name in "$@"; do
        case "${!name}" in '' | *[!0-9]*)
            echo "$name must be a number, not '${!name}'" >&2
            exit 2
            ;;
        esac
    done
}

require_tools() {
    local tool
    for tool in "$@"; do
        if ! command -v "$tool" >/dev/null 2>&1; then
            echo "error: '$tool' is not installed" >&2
            exit 2
        fi
    done
}

build_node() {
    if [ "${SKIP_BUILD:-0}" = 1 ] && [ -x "$NODE_BIN" ]; then
        return
    fi
    echo "building storage-node (release)..." >&2
    (cd "$BENCH_REPO" && cargo build --release -p storage-node) >&2 || exit 2
}

# Prints two distinct free loopback ports. Both sockets are held until both are chosen so the
# ports differ; like any port-0 trick there is a short window before the servers bind them.
free_ports() {
    python3 - <<'EOF'
import socket
held = []
for _ in range(2):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print(" ".join(str(s.getsockname()[1]) for s in held))
EOF
}

# Stops each of the given processes (this shell's children) that still runs, and reaps it.
stop_pids() {
    local pid
    for pid in "$@"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
        fi
    done
}

stop_servers() {
    # shellcheck disable=SC2086 # either may be empty
    stop_pids $NODE_PID $REDIS_PID
    NODE_PID=""
    REDIS_PID=""
    if [ -n "$WORK_DIR" ]; then
        rm -rf "$WORK_DIR"
        WORK_DIR=""
    fi
}

# Waits (at most ~10 s) until the server on port $1 answers PING.
wait_ready() {
    local port="$1" name="$2" pid="$3" _
    for _ in $(seq 1 100); do
        if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "error: $name on port $port did not start; its log:" >&2
    cat "$WORK_DIR/$name.log" >&2
    exit 2
}

start_servers() {
    WORK_DIR="$(mktemp -d)"
    trap stop_servers EXIT
    trap 'exit 130' INT TERM
    read -r NODE_PORT REDIS_PORT <<<"$(free_ports)"
    # shellcheck disable=SC2086 # NODE_ARGS / REDIS_ARGS are word lists
    # No save points on either server (the node's default has Redis's): a BGSAVE must not
    # run during a measurement.
    "$NODE_BIN" --port "$NODE_PORT" --bind 127.0.0.1 --dir "$WORK_DIR" --save '' ${NODE_ARGS:-} \
        >"$WORK_DIR/storage-node.log" 2>&1 &
    NODE_PID=$!
    # shellcheck disable=SC2086
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$WORK_DIR" ${REDIS_ARGS:-} >"$WORK_DIR/redis-server.log" 2>&1 &
    REDIS_PID=$!
    wait_ready "$NODE_PORT" storage-node "$NODE_PID"
    wait_ready "$REDIS_PORT" redis-server "$REDIS_PID"
    echo "storage-node: port $NODE_PORT pid $NODE_PID; redis-server $(redis-server --version |
        grep -o 'v=[^ ]*'): port $REDIS_PORT pid $REDIS_PID" >&2
}

# ratio A B: A/B with two decimals, or n/a when either is not a positive number.
ratio() {
    awk -v a="$1" -v b="$2" 'BEGIN {
        if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else printf "n/a"
    }'
}

# median VALUES...: the median of the values (empty ones skipped), or nothing when there are
# none.
median() {
    printf '%s\n' "$@" | grep . | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit
        if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# process_cpu_seconds PID: user + system CPU seconds the process has used (Linux /proc).
process_cpu_seconds() {
    awk -v tick="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / tick }' "/proc/$1/stat" \
        2>/dev/null || echo 0
}

# seconds_between STARTED ENDED [DECIMALS]: ENDED - STARTED (both `date +%s.%N`), with
# DECIMALS decimals [3].
seconds_between() {
    awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { printf "%.*f", d, b - a }'
}

# load_resp NAME PORT FILE KEYS: pipes the RESP commands of FILE into the server NAME on
# PORT (`redis-cli --pipe`, its output in $WORK_DIR/NAME-pipe.log) and checks that it then
# holds KEYS keys; exits on failure.
load_resp() {
    local name="$1" port="$2" file="$3" want="$4" keys
    if ! redis-cli -p "$port" --pipe <"$file" >"$WORK_DIR/$name-pipe.log" 2>&1; then
        echo "error: loading $name failed:" >&2
        cat "$WORK_DIR/$name-pipe.log" >&2
        exit 1
    fi
    keys="$(redis-cli -p "$port" dbsize)"
    if [ "$keys" != "$want" ]; then
        echo "error: $name holds $keys keys, expected $want" >&2
        exit 1
    fi
}

# write_set_load FILE COUNT KEY_FORMAT VALUE_FORMAT: writes COUNT SET commands in RESP to
# FILE, for n = 0 .. COUNT-1 the key KEY_FORMAT % n and the value VALUE_FORMAT % n (Python
# %-formats, e.g. 'key:%012d').
write_set_load() {
    python3 - "$@" <<'EOF'
import sys
path, count = sys.argv[1], int(sys.argv[2])
key_format, value_format = sys.argv[3].encode(), sys.argv[4].encode()
with open(path, "wb") as out:
    batch = []
    for n in range(count):
        key, value = key_format % n, value_format % n
        batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value))
        if len(batch) >= 10000:
            out.write(b"".join(batch))
            batch.clear()
    out.write(b"".join(batch))
EOF
}
