#!/usr/bin/env bash
# SET throughput with the append-only file on, storage-node against redis-server in the
# same run, printed as node/redis ratios (target >= 1.0).
#
# Usage: tests/bench/aof_throughput.sh
#
# Both servers run with `--appendonly yes --appendfsync everysec` (each in its own AOF
# directory) and everything else as in storage_node_throughput.sh, which this script runs:
#
#   redis-benchmark -p PORT -t set -n N -r 1000000 -c 50 -P DEPTH --csv    (DEPTH 1 and 16)
#
# Environment (defaults in brackets):
#   FSYNC           appendfsync for both servers [everysec] (always, no)
#   N, ROUNDS, PICK, CLIENTS, KEYSPACE, DEPTHS [1 16], TESTS [set], NODE_ARGS, REDIS_ARGS,
#   SKIP_BUILD=1, CARGO_TARGET_DIR: see storage_node_throughput.sh and common.sh
set -uo pipefail

FSYNC="${FSYNC:-everysec}"
AOF_ARGS="--appendonly yes --appendfsync $FSYNC"
export NODE_ARGS="$AOF_ARGS --appenddirname node-aof ${NODE_ARGS:-}"
export REDIS_ARGS="$AOF_ARGS --appenddirname redis-aof ${REDIS_ARGS:-}"
export TESTS="${TESTS:-set}"
export DEPTHS="${DEPTHS:-1 16}"
echo "AOF on for both servers: appendfsync $FSYNC" >&2
exec "$(dirname "$0")/storage_node_throughput.sh"
