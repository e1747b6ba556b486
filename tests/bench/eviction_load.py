"""Zipf-distributed cache load for tests/bench/eviction.sh (one server, one policy).

Usage: eviction_load.py PORT PID KEYS OPS SECONDS VALUE_BYTES WRITE_PERCENT SEED

A cache-aside client: every key is written once first (unmeasured, in an order unrelated to
its popularity); then each operation picks a key by a Zipf law (exponent 0.99) over KEYS
keys; WRITE_PERCENT of operations are SETs, the rest GETs, and a GET that misses is followed
by the SET that refills the cache. Commands go in pipelines of 64. Stops after OPS
operations or SECONDS seconds, whichever comes first, and prints one line of
`name=value` pairs: ops, seconds, ops_per_sec, commands, gets, hits, hit_ratio,
evicted_keys, peak_rss_bytes (the server's VmHWM), used_memory.

An operation is what the application asks for: a GET or a SET of the load. The SETs that
refill a miss are extra commands (`commands` counts them too) but not operations: counted
as operations, a server with more misses would be paid for them, and one with a better hit
ratio would look slower for doing less work.
"""

import bisect
import random
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
    done = commands = gets = hits = 0
    started = time.monotonic()
    deadline = started + seconds
    while done < ops and time.monotonic() < deadline:
        batch = []
        for _ in range(PIPELINE):
            key = names[min(bisect.bisect_left(cdf, rng.random()), keys - 1)]
            batch.append((key, rng.randrange(100) < write_percent))
        pipe = client.pipeline(transaction=False)
        for key, write in batch:
            if write:
                pipe.set(key, value)
            else:
                pipe.get(key)
        replies = pipe.execute()
        refill = client.pipeline(transaction=False)
        misses = 0
        for (key, write), reply in zip(batch, replies):
            if write:
                continue
            gets += 1
            if reply is None:
                refill.set(key, value)
                misses += 1
            else:
                hits += 1
        if misses:
            refill.execute()
        done += len(batch)
        commands += len(batch) + misses
    took = time.monotonic() - started
    info = client.info()
    print(
        f"ops={done} seconds={took:.2f} ops_per_sec={done / took:.0f} commands={commands} "
        f"gets={gets} hits={hits} "
        f"hit_ratio={hits / max(gets, 1):.4f} evicted_keys={int(info.get('evicted_keys', 0)) - evicted_before} "
        f"peak_rss_bytes={peak_rss(pid)} used_memory={info.get('used_memory', 0)}"
    )


if __name__ == "__main__":
    main()
