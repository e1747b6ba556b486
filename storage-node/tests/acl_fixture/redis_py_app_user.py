"""The ACL end to end as a redis-py user sees it: a user with `~app:* +@read` reads its own
keys, is refused other keys and writes (redis-py raises NoPermissionError), and ACL LOG
shows both refusals. Run against a storage-node and a redis-server alike; exits non-zero
with a message on the first difference from what Redis 7.0 does."""

import sys

import redis

port = int(sys.argv[1])
admin = redis.Redis(port=port, socket_timeout=30)
admin.acl_log_reset()
admin.acl_setuser("app", enabled=True, passwords=["+apppw"], keys=["app:*"], commands=["+@read"])
admin.set("app:1", "hello")

app = redis.Redis(port=port, username="app", password="apppw", socket_timeout=30)
assert app.get("app:1") == b"hello"
for refused in (lambda: app.get("other:1"), lambda: app.set("app:1", "x")):
    try:
        refused()
    except redis.exceptions.NoPermissionError as e:
        print("refused:", e)
    else:
        sys.exit("a refused command succeeded")

entries = admin.acl_log()
seen = [(e["reason"], e["object"], e["username"], e["context"], e["count"]) for e in entries]
expected = [("command", "set", "app", "toplevel", 1), ("key", "other:1", "app", "toplevel", 1)]
if seen != expected:
    sys.exit(f"ACL LOG {seen} != {expected}")
for entry in entries:
    # redis-py parses client-info into a dict of CLIENT LIST's fields.
    assert entry["client-info"]["user"] == "app", entry
    assert float(entry["age-seconds"]) >= 0, entry
print("ok")
