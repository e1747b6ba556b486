# shellcheck shell=bash
# Shared by the cluster benchmark scripts in this folder (sourced, not run).

# Prints a free loopback port whose cluster-bus port (+10000) is free too.
free_port() {
  python3 - <<'PY'
import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    t = socket.socket()
    try:
        if p < 55000:
            t.bind(("127.0.0.1", p + 10000)); print(p); break
    except OSError:
        pass
    finally:
        t.close(); s.close()
PY
}

# Waits (at most ~10 s) until the server on port $1 answers PING.
wait_ping() { for _ in $(seq 1 200); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.05; done; echo "port $1 not ready"; exit 1; }
