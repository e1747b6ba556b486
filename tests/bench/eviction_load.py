"""Zipf-distributed cache load for tests/bench/eviction.sh (one server, one policy).

Usage: eviction_load.py PORT PID KEYS OPS SECONDS VALUE_BYTES WRITE_PERCENT SEED

A cache-aside client: every key is written once first (unmeasured, in an order unrelated to
its popularity); then each operation picks a key by a Zipf law (exponent 0.99) over KEYS
keys; WRITE_PERCENT of operations are SETs, the rest GETs, and a GET that misses is followed
by the SET that refills the cache. Commands go in pipelines of 64. Stops after OPS
operations or SECONDS seconds, whichever comes first, and prints one line of
`name=value` pairs: ops, seconds, ops_per_sec, commands, server_cpu_us_per_op (the server
process's user and system CPU time over the measured part, per operation: what a server
would need to serve the load at its own full speed), gets, hits, hit_ratio, evicted_keys,
peak_rss_bytes (the server's VmHWM), used_memory.

An operation is what the application asks for: a GET or a SET of the load. The SETs that
refill a miss are extra commands (`commands` counts them too) but not operations: counted
as operations, a server with more misses would be paid for them, and one with a better hit
ratio would look slower for doing less work.

The timed loop is as lean as Python allows, so that ops/s says something about the server:
the whole sequence of keys is drawn before the clock starts (the same draws in the same
order as one batch at a time, so the hit ratios do not change), and commands and replies go
over a plain socket with a minimal RESP reader. Through redis-py's pipelines the client
spent about 17 us an operation against the server's 2-3, and the ratio of two servers' ops/s
moved between 0.87 and 1.08 from run to run on the same binaries.
"""

import bisect
import os
import random
import socket
import sys
import time

import redis

PIPELINE = 64
ZIPF_EXPONENT = 0.99


def zipf_cdf(keys):
    weights = [1.0 / (rank**ZIPF_EXPONENT) for rank in range(1, keys + 1)]
    total = sum(weights)
    cdf, running = [], 0.0
    for w in weights:
        running += w / total
        cdf.append(running)
    return cdf


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def cpu_seconds(pid):
    """User plus system CPU time the process has used, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        # The command name (field 2) may hold spaces; the fields after it are fixed.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def command(*parts):
    """One command in RESP."""
    out = [b"*%d\r\n" % len(parts)]
    for part in parts:
        out.append(b"$%d\r\n%s\r\n" % (len(part), part))
    return b"".join(out)


class Replies:
    """Reads RESP replies from a socket: just enough RESP for SET and GET."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()
        self.pos = 0

    def _fill(self):
        if self.pos:
            del self.buf[: self.pos]
            self.pos = 0
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("server closed the connection")
        self.buf += chunk

    def read(self, count):
        """The next `count` replies: True for a bulk string, None for a nil, "OK"..."""
        replies = []
        while len(replies) < count:
            end = self.buf.find(b"\r\n", self.pos)
            if end < 0:
                self._fill()
                continue
            kind = self.buf[self.pos]
            if kind == ord("$"):
                length = int(self.buf[self.pos + 1 : end])
                if length < 0:
                    self.pos = end + 2
                    replies.append(None)
                    continue
                if len(self.buf) < end + 2 + length + 2:
                    self._fill()
                    continue
                self.pos = end + 2 + length + 2
                replies.append(True)
            elif kind == ord("+"):
                self.pos = end + 2
                replies.append("OK")
            else:
                raise RuntimeError(bytes(self.buf[self.pos : end]).decode(errors="replace"))
        return replies


def main():
    port, pid, keys, ops, seconds, value_bytes, write_percent, seed = map(int, sys.argv[1:9])
    rng = random.Random(seed)
    cdf = zipf_cdf(keys)
    # Rank 1 is the hottest key; ranks are scattered over the key names.
    names = [f"key:{n}" for n in range(keys)]
    rng.shuffle(names)
    value = b"v" * value_bytes
    client = redis.Redis(port=port)
    # Every key written once first (not measured), so the measured run starts evicting
    # from a full cache instead of filling an empty one. The order is shuffled apart from
    # the ranks: written hottest first (as `names` lists them), the cache a server kept of
    # the preload depended on which end of it its eviction favoured, and the result on the
    # clock. The node's ties (newest arrival first) kept the hot end whenever the preload
    # fell within one clock second, which read as an LFU hit ratio of 0.92 against
    # redis-server's 0.87 and an LRU one that flipped between 0.865 and 0.90 from run to
    # run; preloaded in an unrelated order both servers start from the same random cache.
    preload = names[:]
    random.Random(seed + 1).shuffle(preload)
    for start in range(0, keys, 1000):
        pipe = client.pipeline(transaction=False)
        for name in preload[start : start + 1000]:
            pipe.set(name, value)
        pipe.execute()
    evicted_before = int(client.info("stats").get("evicted_keys", 0))
    # Drawn before the clock starts, in the order the batches would draw them.
    batches = []
    for _ in range(0, ops, PIPELINE):
        batch = []
        for _ in range(PIPELINE):
            key = names[min(bisect.bisect_left(cdf, rng.random()), keys - 1)]
            batch.append((key.encode(), rng.randrange(100) < write_percent))
        batches.append(batch)
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    replies = Replies(sock)
    done = commands = gets = hits = 0
    cpu_before = cpu_seconds(pid)
    started = time.monotonic()
    deadline = started + seconds
    for batch in batches:
        if done >= ops or time.monotonic() >= deadline:
            break
        sock.sendall(
            b"".join(
                command(b"SET", key, value) if write else command(b"GET", key)
                for key, write in batch
            )
        )
        refill = []
        for (key, write), reply in zip(batch, replies.read(len(batch))):
            if write:
                continue
            gets += 1
            if reply is None:
                refill.append(command(b"SET", key, value))
            else:
                hits += 1
        if refill:
            sock.sendall(b"".join(refill))
            replies.read(len(refill))
        done += len(batch)
        commands += len(batch) + len(refill)
    took = time.monotonic() - started
    server_cpu = cpu_seconds(pid) - cpu_before
    info = client.info()
    print(
        f"ops={done} seconds={took:.2f} ops_per_sec={done / took:.0f} commands={commands} "
        f"server_cpu_us_per_op={server_cpu * 1e6 / max(done, 1):.2f} "
        f"gets={gets} hits={hits} "
        f"hit_ratio={hits / max(gets, 1):.4f} evicted_keys={int(info.get('evicted_keys', 0)) - evicted_before} "
        f"peak_rss_bytes={peak_rss(pid)} used_memory={info.get('used_memory', 0)}"
    )


if __name__ == "__main__":
    main()
