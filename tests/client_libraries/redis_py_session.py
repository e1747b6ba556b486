#!/usr/bin/env python3
"""redis-py, as an application uses it, against slotproxy.

Run by tests/client_libraries.rs (one run per backend): every scenario runs in RESP2 and in
RESP3 (`protocol=3`). Exits non-zero on the first failure (an uncaught exception), so the Rust
test fails; a missing redis-py is a failure too, never a skip.

    python3 tests/client_libraries/redis_py_session.py --port PROXY --nodes P1,P2,P3

`--nodes` are the cluster's masters, read only to see that a BLPOP is really blocked before
another client pushes (the proxy's INFO has no blocked_clients).
"""

import argparse
import sys
import threading
import time

import redis

# Every read gives up after this long, so a proxy that never answers fails the run.
SOCKET_TIMEOUT = 30
# Bounds on the retry loops: generous, they only turn a livelock into a failure.
MAX_ATTEMPTS_PER_INCREMENT = 10_000
WAIT_LIMIT_SECONDS = 20


def connect(port, protocol, **extra):
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        protocol=protocol,
        socket_timeout=SOCKET_TIMEOUT,
        socket_connect_timeout=SOCKET_TIMEOUT,
        **extra,
    )


def check(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


def plain_commands(r, p):
    check(r.ping(), True, "PING")
    check(r.set(f"{p}:s", "v"), True, "SET")
    check(r.get(f"{p}:s"), b"v", "GET")
    check(r.incrby(f"{p}:n", 5), 5, "INCRBY")
    check(r.hset(f"{p}:h", mapping={"a": "1", "b": "2"}), 2, "HSET")
    check(r.hgetall(f"{p}:h"), {b"a": b"1", b"b": b"2"}, "HGETALL")
    check(r.rpush(f"{p}:l", "x", "y", "z"), 3, "RPUSH")
    check(r.lrange(f"{p}:l", 0, -1), [b"x", b"y", b"z"], "LRANGE")
    check(r.sadd(f"{p}:set", "m1", "m2"), 2, "SADD")
    check(r.smembers(f"{p}:set"), {b"m1", b"m2"}, "SMEMBERS")
    check(r.zadd(f"{p}:z", {"one": 1, "two": 2}), 2, "ZADD")
    # RESP2 gives (member, score) tuples, RESP3 lists.
    check(
        [tuple(pair) for pair in r.zrange(f"{p}:z", 0, -1, withscores=True)],
        [(b"one", 1.0), (b"two", 2.0)],
        "ZRANGE WITHSCORES",
    )
    check(r.expire(f"{p}:s", 100), True, "EXPIRE")
    ttl = r.ttl(f"{p}:s")
    if not 0 < ttl <= 100:
        raise AssertionError(f"TTL: {ttl}")
    # Keys over many slots: split by the proxy, merged in key order.
    keys = [f"{p}:multi:{i}" for i in range(50)]
    check(r.mset({k: k for k in keys}), True, "MSET over slots")
    check(r.mget(keys), [k.encode() for k in keys], "MGET over slots")
    check(r.delete(*keys), 50, "DEL over slots")
    try:
        r.lpush(f"{p}:s", "x")
        raise AssertionError("LPUSH on a string did not fail")
    except redis.ResponseError as e:
        check(str(e).split(" ")[0], "WRONGTYPE", "LPUSH on a string")


def pipelines(r, p):
    pipe = r.pipeline(transaction=False)
    for i in range(200):
        pipe.set(f"{p}:pipe:{i}", i)
    for i in range(200):
        pipe.get(f"{p}:pipe:{i}")
    replies = pipe.execute()
    check(replies[:200], [True] * 200, "pipelined SETs")
    check(replies[200:], [str(i).encode() for i in range(200)], "pipelined GETs")
    # An error inside a pipeline is that command's reply only.
    pipe = r.pipeline(transaction=False)
    pipe.set(f"{p}:pipe:str", "x").incr(f"{p}:pipe:str").get(f"{p}:pipe:str")
    replies = pipe.execute(raise_on_error=False)
    check(replies[0], True, "pipeline SET")
    check(isinstance(replies[1], redis.ResponseError), True, "pipeline INCR error")
    check(replies[2], b"x", "pipeline GET after the error")


def transactions(r, p):
    tag = f"{{{p}:tx}}"
    pipe = r.pipeline(transaction=True)
    pipe.set(f"{tag}a", 1).incr(f"{tag}a").lpush(f"{tag}l", "x").get(f"{tag}missing")
    check(pipe.execute(), [True, 2, 1, None], "MULTI/EXEC")
    # Several keys of one slot (hash tag) in one transaction.
    pipe = r.pipeline(transaction=True)
    pipe.mset({f"{tag}k1": "1", f"{tag}k2": "2"}).mget(f"{tag}k1", f"{tag}k2")
    check(pipe.execute(), [True, [b"1", b"2"]], "MSET/MGET in MULTI")
    # Keys of different slots: the proxy refuses the transaction as a whole.
    pipe = r.pipeline(transaction=True)
    pipe.set(f"{p}:a", 1).set(f"{p}:b", 2)
    try:
        pipe.execute()
        raise AssertionError("a cross-slot transaction ran")
    except redis.ResponseError as e:
        check("CROSSSLOT" in str(e) or "EXECABORT" in str(e), True, f"cross-slot: {e}")
    check(r.get(f"{p}:a"), None, "nothing of the aborted transaction ran")


def optimistic_lock_uncontended(r, p):
    """WATCH k; GET k; MULTI; SET k; EXEC (the last three in one write), with nobody else
    touching k: must never raise WatchError."""
    key = f"{{{p}:lock}}k"
    r.set(key, 0)
    for i in range(50):
        with r.pipeline() as pipe:
            pipe.watch(key)
            value = int(pipe.get(key))
            pipe.multi()
            pipe.set(key, value + 1)
            check(pipe.execute(), [True], f"uncontended optimistic lock, round {i}")
    check(r.get(key), b"50", "uncontended counter")
    # transaction() is redis-py's helper for the same loop.
    def add_ten(pipe):
        value = int(pipe.get(key))
        pipe.multi()
        pipe.set(key, value + 10)

    r.transaction(add_ten, key)
    check(r.get(key), b"60", "Redis.transaction helper")


def optimistic_lock_contended(port, protocol, p):
    """Two clients each add 1 a number of times with WATCH/GET/MULTI/SET/EXEC, retrying
    on WatchError. A lost update would leave the counter below the successful EXECs."""
    key = f"{{{p}:race}}counter"
    per_client = 150
    setup = connect(port, protocol)
    setup.set(key, 0)
    results = {}

    def worker(name):
        r = connect(port, protocol)
        successes = conflicts = 0
        try:
            for _ in range(per_client):
                for _attempt in range(MAX_ATTEMPTS_PER_INCREMENT):
                    with r.pipeline() as pipe:
                        try:
                            pipe.watch(key)
                            value = int(pipe.get(key))
                            pipe.multi()
                            pipe.set(key, value + 1)
                            pipe.execute()
                            successes += 1
                            break
                        except redis.WatchError:
                            conflicts += 1
                else:
                    raise AssertionError("an increment never got through")
            results[name] = (successes, conflicts, None)
        except Exception as e:  # reported by the main thread
            results[name] = (successes, conflicts, e)

    threads = [threading.Thread(target=worker, args=(n,)) for n in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
        check(t.is_alive(), False, "a WATCH worker finished")
    for name, (_, _, error) in results.items():
        if error is not None:
            raise AssertionError(f"worker {name}: {error!r}")
    successes = sum(s for s, _, _ in results.values())
    check(successes, 2 * per_client, "successful EXECs")
    check(int(setup.get(key)), successes, "counter equals the successful EXECs")


def pubsub(port, protocol, p):
    subscriber = connect(port, protocol)
    publisher = connect(port, protocol)
    ps = subscriber.pubsub()
    ps.subscribe(f"{p}:chan")
    ps.psubscribe(f"{p}:pat:*")
    confirmations = [wait_message(ps) for _ in range(2)]
    check(
        sorted(m["type"] for m in confirmations),
        ["psubscribe", "subscribe"],
        "subscription confirmations",
    )
    check(publisher.publish(f"{p}:chan", "hello"), 1, "PUBLISH reaches one subscriber")
    message = wait_message(ps)
    check((message["type"], message["channel"], message["data"]),
          ("message", f"{p}:chan".encode(), b"hello"), "message")
    check(publisher.publish(f"{p}:pat:x", "world"), 1, "PUBLISH to a pattern")
    message = wait_message(ps)
    check((message["type"], message["pattern"], message["channel"], message["data"]),
          ("pmessage", f"{p}:pat:*".encode(), f"{p}:pat:x".encode(), b"world"), "pmessage")
    check(publisher.pubsub_numsub(f"{p}:chan"), [(f"{p}:chan".encode(), 1)], "PUBSUB NUMSUB")
    ps.unsubscribe()
    ps.punsubscribe()
    ps.close()
    # The subscriber's connection went back to the pool usable for commands.
    check(subscriber.ping(), True, "PING after pub/sub")


def wait_message(ps):
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while time.monotonic() < deadline:
        message = ps.get_message(timeout=1.0)
        if message is not None:
            return message
    raise AssertionError("no pub/sub message within the limit")


def scripts(r, p):
    key = f"{p}:script"
    check(r.eval("return redis.call('SET', KEYS[1], ARGV[1])", 1, key, "v"), b"OK", "EVAL SET")
    check(r.eval("return redis.call('GET', KEYS[1])", 1, key), b"v", "EVAL GET")
    check(r.eval("return {1, 2, 'three'}", 0), [1, 2, b"three"], "EVAL array")
    sha = r.script_load("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    check(r.script_exists(sha), [True], "SCRIPT EXISTS")
    check(r.evalsha(sha, 1, f"{p}:counter", 3), 3, "EVALSHA")
    # register_script: EVALSHA, and EVAL after NOSCRIPT.
    body = f"return redis.call('INCRBY', KEYS[1], ARGV[1]) * 0 + {len(p)}"
    r.script_flush()
    script = r.register_script(body)
    check(script(keys=[f"{p}:counter"], args=[2]), len(p), "registered script")
    check(r.get(f"{p}:counter"), b"5", "the registered script ran once")
    try:
        r.eval("return redis.call('GET', KEYS[1])", 2, f"{p}:x", f"{p}:y")
        raise AssertionError("a cross-slot EVAL ran")
    except redis.ResponseError as e:
        check(str(e).startswith("CROSSSLOT"), True, f"cross-slot EVAL: {e}")
    try:
        r.eval("return redis.call('NOSUCH')", 0)
        raise AssertionError("a failing script succeeded")
    except redis.ResponseError:
        pass
    # A script inside a transaction (pipelined with its keys in one slot).
    pipe = r.pipeline(transaction=True)
    pipe.set(f"{{{p}}}x", 1)
    pipe.eval("return redis.call('INCR', KEYS[1])", 1, f"{{{p}}}x")
    check(pipe.execute(), [True, 2], "EVAL in MULTI")


def blocked_on_nodes(nodes):
    total = 0
    for port in nodes:
        info = redis.Redis(host="127.0.0.1", port=port, socket_timeout=SOCKET_TIMEOUT).info("clients")
        total += int(info["blocked_clients"])
    return total


def blocking_pop(port, protocol, nodes, p):
    key = f"{p}:blocking"
    waiter = connect(port, protocol)
    pusher = connect(port, protocol)
    before = blocked_on_nodes(nodes)
    result = {}

    def wait():
        try:
            result["reply"] = waiter.blpop([key], timeout=25)
        except Exception as e:  # reported by the main thread
            result["error"] = e

    thread = threading.Thread(target=wait)
    thread.start()
    # Push only once the BLPOP is really blocked on its node.
    deadline = time.monotonic() + WAIT_LIMIT_SECONDS
    while blocked_on_nodes(nodes) <= before:
        if time.monotonic() > deadline:
            raise AssertionError("the BLPOP never blocked on a node")
        time.sleep(0.005)
    check(pusher.rpush(key, "woken"), 1, "RPUSH")
    thread.join(timeout=30)
    check(thread.is_alive(), False, "BLPOP returned")
    if "error" in result:
        raise result["error"]
    reply = result.get("reply")
    check(reply and list(reply), [key.encode(), b"woken"], "BLPOP reply")
    check(waiter.blpop([f"{p}:never"], timeout=0.1), None, "BLPOP timeout")


def resp3_shapes(r, p):
    """Replies whose RESP3 type matters to the library: maps, sets, doubles, nulls."""
    r.hset(f"{p}:h3", mapping={"f": "v"})
    check(r.hgetall(f"{p}:h3"), {b"f": b"v"}, "HGETALL map")
    r.zadd(f"{p}:z3", {"a": 1.5})
    check(r.zscore(f"{p}:z3", "a"), 1.5, "ZSCORE double")
    check(r.get(f"{p}:nothing"), None, "GET null")
    hello = r.execute_command("HELLO", "3")
    check(hello[b"proto"], 3, "HELLO 3")


def client_name(port, protocol, p):
    r = connect(port, protocol, client_name=f"{p}-app")
    name = r.client_getname()
    # redis-py decodes this reply in RESP2 only.
    name = name.decode() if isinstance(name, bytes) else name
    check(name, f"{p}-app", "CLIENT GETNAME after connect")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--nodes", required=True, help="the masters' ports, comma separated")
    args = parser.parse_args()
    nodes = [int(n) for n in args.nodes.split(",")]
    print(f"redis-py {redis.__version__}", flush=True)
    for protocol in (2, 3):
        p = f"py{protocol}"
        r = connect(args.port, protocol)
        steps = [
            ("plain commands", lambda: plain_commands(r, p)),
            ("pipelines", lambda: pipelines(r, p)),
            ("transactions", lambda: transactions(r, p)),
            ("optimistic lock", lambda: optimistic_lock_uncontended(r, p)),
            ("optimistic lock, 2 clients", lambda: optimistic_lock_contended(args.port, protocol, p)),
            ("pub/sub", lambda: pubsub(args.port, protocol, p)),
            ("scripts", lambda: scripts(r, p)),
            ("blocking pop", lambda: blocking_pop(args.port, protocol, nodes, p)),
            ("client name", lambda: client_name(args.port, protocol, p)),
        ]
        if protocol == 3:
            steps.append(("RESP3 reply types", lambda: resp3_shapes(r, p)))
        for name, step in steps:
            print(f"RESP{protocol} {name}", flush=True)
            step()
    print("all redis-py scenarios passed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
