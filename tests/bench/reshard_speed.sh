#!/usr/bin/env bash
# Resharding speed: the admin API's job vs `redis-cli --cluster reshard`, same data, same
# slots, same batch size (keys per MIGRATE), each on its own fresh 3-master Redis Cluster.
# Prints keys per second of each and the ratio job / redis-cli (target: >= 1.0).
#
#   tests/bench/reshard_speed.sh                    # 200,000 keys in 1,000 slots, batch 100
#   KEYS=100000 SLOTS=500 BATCH=10 tests/bench/reshard_speed.sh
#
# The moved slots are the source's lowest SLOTS slots (what both tools pick for a count),
# and every key lives in them. Every process started here is stopped by its PID on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."

KEYS=${KEYS:-200000}
SLOTS=${SLOTS:-1000}
BATCH=${BATCH:-100}
VALUE_BYTES=${VALUE_BYTES:-64}
TOKEN=bench-token

for tool in redis-server redis-cli python3 curl; do
  command -v "$tool" >/dev/null || { echo "missing $tool"; exit 1; }
done
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  cargo build --release --bin slotproxy 2>&1 | grep -E "^(error|warning)" && exit 1 || true
fi
PROXY_BIN=${CARGO_TARGET_DIR:-target}/release/slotproxy

WORK=$(mktemp -d)
PIDS=()
cleanup() { for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

# shellcheck source=tests/bench/cluster_common.sh
source tests/bench/cluster_common.sh

# Starts a 3-master cluster; prints its ports.
start_cluster() {
  local ports=() port
  for _ in 1 2 3; do
    port=$(free_port)
    mkdir -p "$WORK/$port"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$WORK/$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      >"$WORK/$port/log" 2>&1 &
    PIDS+=($!)
    wait_ping "$port"
    ports+=("$port")
  done
  redis-cli --cluster create "${ports[@]/#/127.0.0.1:}" --cluster-replicas 0 --cluster-yes >/dev/null
  for _ in $(seq 1 200); do
    local ok=1
    for port in "${ports[@]}"; do
      redis-cli -p "$port" cluster info | grep -q cluster_state:ok || ok=0
    done
    [ $ok = 1 ] && break
    sleep 0.1
  done
  CLUSTER=("${ports[@]}")
}

node_id() { redis-cli -p "$1" cluster myid; }
owner_of_slot0() {
  local port
  for port in "${CLUSTER[@]}"; do
    redis-cli -p "$port" cluster nodes | grep myself | grep -qE ' 0-[0-9]+' && { echo "$port"; return; }
  done
}

# KEYS keys spread evenly over slots 0..SLOTS-1 (hash tags chosen per slot), loaded with
# redis-cli --pipe straight into the node owning them.
load_data() {
  python3 - "$KEYS" "$SLOTS" "$VALUE_BYTES" >"$WORK/load.resp" <<'PY'
import sys
keys, slots, size = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc
tags, j = {}, 0
while len(tags) < slots:
    t = b"t%d" % j
    s = crc16(t) % 16384
    if s < slots and s not in tags:
        tags[s] = t
    j += 1
value = b"x" * size
out = sys.stdout.buffer
for i in range(keys):
    key = b"{" + tags[i % slots] + b"}:%d" % i
    out.write(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(key), key, len(value), value))
PY
  redis-cli -p "$1" --pipe <"$WORK/load.resp" >/dev/null
}

now() { python3 -c 'import time; print(time.time())'; }

# --- redis-cli --cluster reshard -------------------------------------------------------
start_cluster
SRC=$(owner_of_slot0)
DST=${CLUSTER[0]}; [ "$DST" = "$SRC" ] && DST=${CLUSTER[1]}
load_data "$SRC"
echo "redis-cli: $(redis-cli -p "$SRC" dbsize) keys on the source; moving $SLOTS slots, --cluster-pipeline $BATCH"
T0=$(now)
redis-cli --cluster reshard "127.0.0.1:$SRC" --cluster-from "$(node_id "$SRC")" \
  --cluster-to "$(node_id "$DST")" --cluster-slots "$SLOTS" --cluster-yes \
  --cluster-pipeline "$BATCH" >"$WORK/redis-cli.out" 2>&1
T1=$(now)
CLI_MOVED=$(redis-cli -p "$DST" dbsize)
CLI_SECS=$(python3 -c "print($T1 - $T0)")

# --- the job API ------------------------------------------------------------------------
start_cluster
SRC=$(owner_of_slot0)
DST=${CLUSTER[0]}; [ "$DST" = "$SRC" ] && DST=${CLUSTER[1]}
load_data "$SRC"
printf 'admin:\n  token: %s\n' "$TOKEN" >"$WORK/proxy.yaml"
PPORT=$(free_port); APORT=$(free_port)
"$PROXY_BIN" --config "$WORK/proxy.yaml" --listen "127.0.0.1:$PPORT" --admin "127.0.0.1:$APORT" \
  --seed "127.0.0.1:$SRC" >"$WORK/proxy.log" 2>&1 &
PIDS+=($!)
wait_ping "$PPORT"
echo "job:       $(redis-cli -p "$SRC" dbsize) keys on the source; moving $SLOTS slots, batch $BATCH"
BODY="{\"from\": \"127.0.0.1:$SRC\", \"to\": \"127.0.0.1:$DST\", \"count\": $SLOTS, \"batch\": $BATCH}"
T0=$(now)
JOB=$(curl -sf -X POST -H "Authorization: Bearer $TOKEN" -d "$BODY" "http://127.0.0.1:$APORT/v1/reshard")
ID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["id"])' "$JOB")
for _ in $(seq 1 60000); do
  STATE=$(curl -sf "http://127.0.0.1:$APORT/v1/jobs/$ID")
  case "$STATE" in *'"state":"done"'*|*'"state":"failed"'*) break ;; esac
  sleep 0.01
done
T1=$(now)
case "$STATE" in *'"state":"done"'*) ;; *) echo "job did not finish: $STATE"; exit 1 ;; esac
JOB_MOVED=$(redis-cli -p "$DST" dbsize)
JOB_SECS=$(python3 -c "import json; j = json.loads('''$STATE'''); print(j['finished_at'] - j['created_at'])")
WALL_SECS=$(python3 -c "print($T1 - $T0)")

python3 - "$CLI_MOVED" "$CLI_SECS" "$JOB_MOVED" "$JOB_SECS" "$WALL_SECS" <<'PY'
import sys
cli_keys, cli_s, job_keys, job_s, wall_s = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
cli, job = cli_keys / cli_s, job_keys / job_s
print(f"redis-cli --cluster reshard: {cli_keys} keys in {cli_s:.2f} s = {cli:,.0f} keys/s")
print(f"slotproxy job:               {job_keys} keys in {job_s:.2f} s = {job:,.0f} keys/s (wall incl. polling {wall_s:.2f} s)")
print(f"ratio job / redis-cli: {job / cli:.2f} (job's own start-to-finish time)")
print(f"ratio job / redis-cli: {(job_keys / wall_s) / cli:.2f} (wall clock: POST to the poll that saw it done)")
PY
