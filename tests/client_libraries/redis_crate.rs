//! The Rust `redis` crate (0.27), as an application uses it, through slotproxy: plain commands,
//! pipelines, MULTI/EXEC pipelines, the WATCH optimistic lock under contention, pub/sub,
//! scripts, a blocking pop woken by another client, and the async (tokio) connection. The
//! caller runs it once with RESP2 and once with RESP3 (`?protocol=resp3`, which 0.27 speaks:
//! HELLO 3 at connect, maps and push frames).

use std::collections::HashMap;
use std::thread;
use std::time::{Duration, Instant};

use redis::{Commands, Connection, RedisResult};
use test_harness::{blocked_clients, RawClient};

/// Every read gives up after this long, so a proxy that never answers fails the test.
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Bounds a retry loop: it only turns a livelock into a failure.
const MAX_ATTEMPTS_PER_INCREMENT: usize = 10_000;

pub struct Target {
    pub proxy_port: u16,
    /// The cluster's masters, read only to see that a BLPOP really blocks.
    pub node_ports: Vec<u16>,
    pub resp3: bool,
}

impl Target {
    fn client(&self) -> redis::Client {
        let protocol = if self.resp3 { "resp3" } else { "resp2" };
        redis::Client::open(format!(
            "redis://127.0.0.1:{}/?protocol={protocol}",
            self.proxy_port
        ))
        .expect("client URL")
    }

    fn connect(&self) -> Connection {
        let con = self
            .client()
            .get_connection()
            .expect("connect to the proxy");
        con.set_read_timeout(Some(READ_TIMEOUT))
            .expect("read timeout");
        con
    }

    /// A prefix that keeps the RESP2 and RESP3 runs apart.
    fn prefix(&self) -> &'static str {
        if self.resp3 {
            "rs3"
        } else {
            "rs2"
        }
    }
}

pub fn run_all(target: &Target) {
    plain_commands(target);
    pipelines(target);
    transactions(target);
    optimistic_lock_under_contention(target);
    pubsub(target);
    scripts(target);
    blocking_pop_woken_by_another_client(target);
    async_connection(target);
}

fn plain_commands(target: &Target) {
    let p = target.prefix();
    let mut con = target.connect();
    let pong: String = redis::cmd("PING").query(&mut con).expect("PING");
    assert_eq!(pong, "PONG");
    let () = con.set(format!("{p}:s"), "v").expect("SET");
    let value: Option<String> = con.get(format!("{p}:s")).expect("GET");
    assert_eq!(value.as_deref(), Some("v"));
    let missing: Option<String> = con.get(format!("{p}:missing")).expect("GET missing");
    assert_eq!(missing, None);
    assert_eq!(con.incr::<_, _, i64>(format!("{p}:n"), 5).expect("INCR"), 5);
    let () = con
        .hset_multiple(format!("{p}:h"), &[("a", "1"), ("b", "2")])
        .expect("HSET");
    let hash: HashMap<String, String> = con.hgetall(format!("{p}:h")).expect("HGETALL");
    assert_eq!(
        hash,
        HashMap::from([("a".into(), "1".into()), ("b".into(), "2".into())])
    );
    let score: f64 = con
        .zadd(format!("{p}:z"), "m", 1.5)
        .and_then(|_: i64| con.zscore(format!("{p}:z"), "m"))
        .expect("ZADD, ZSCORE");
    assert_eq!(score, 1.5);
    // Keys over many slots: split and merged by the proxy.
    let pairs: Vec<(String, String)> = (0..50)
        .map(|i| (format!("{p}:multi:{i}"), i.to_string()))
        .collect();
    let () = con.mset(&pairs).expect("MSET over slots");
    let keys: Vec<&String> = pairs.iter().map(|(k, _)| k).collect();
    let values: Vec<String> = con.mget(&keys).expect("MGET over slots");
    assert_eq!(
        values,
        pairs.iter().map(|(_, v)| v.clone()).collect::<Vec<_>>()
    );
    let wrong: RedisResult<i64> = con.lpush(format!("{p}:s"), "x");
    assert_eq!(
        wrong.expect_err("LPUSH on a string").code(),
        Some("WRONGTYPE")
    );
}

fn pipelines(target: &Target) {
    let p = target.prefix();
    let mut con = target.connect();
    let mut pipe = redis::pipe();
    for i in 0..200 {
        pipe.set(format!("{p}:pipe:{i}"), i).ignore();
    }
    for i in 0..200 {
        pipe.get(format!("{p}:pipe:{i}"));
    }
    let values: Vec<i64> = pipe.query(&mut con).expect("pipeline");
    assert_eq!(values, (0..200).collect::<Vec<i64>>());
}

fn transactions(target: &Target) {
    let p = target.prefix();
    let mut con = target.connect();
    let tag = format!("{{{p}:tx}}");
    let (incremented, pushed, missing): (i64, i64, Option<String>) = redis::pipe()
        .atomic()
        .set(format!("{tag}a"), 1)
        .ignore()
        .incr(format!("{tag}a"), 1)
        .lpush(format!("{tag}l"), "x")
        .get(format!("{tag}missing"))
        .query(&mut con)
        .expect("MULTI/EXEC");
    assert_eq!((incremented, pushed, missing), (2, 1, None));
    // Keys in different slots: the proxy refuses the transaction as a whole.
    let cross: RedisResult<()> = redis::pipe()
        .atomic()
        .set(format!("{p}:a"), 1)
        .set(format!("{p}:b"), 2)
        .query(&mut con);
    let error = cross.expect_err("a cross-slot transaction ran");
    assert!(
        matches!(error.code(), Some("CROSSSLOT" | "EXECABORT")),
        "{error}"
    );
    let a: Option<String> = con.get(format!("{p}:a")).expect("GET");
    assert_eq!(a, None, "nothing of the refused transaction ran");
}

/// One increment with WATCH, GET, then MULTI/SET/EXEC in one write; false when EXEC
/// answered null (the key changed since WATCH).
fn try_increment(con: &mut Connection, key: &str) -> bool {
    redis::cmd("WATCH").arg(key).exec(con).expect("WATCH");
    let value: i64 = con.get(key).expect("GET");
    let done: Option<((),)> = redis::pipe()
        .atomic()
        .set(key, value + 1)
        .query(con)
        .expect("EXEC");
    done.is_some()
}

fn optimistic_lock_under_contention(target: &Target) {
    let key = format!("{{{}:race}}counter", target.prefix());
    let per_client = 150;
    let mut setup = target.connect();
    let () = setup.set(&key, 0).expect("SET");
    // Nobody else writes: the lock never fails.
    for _ in 0..20 {
        assert!(try_increment(&mut setup, &key), "uncontended EXEC failed");
    }
    let () = setup.set(&key, 0).expect("SET");
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let mut con = target.connect();
            let key = key.clone();
            thread::spawn(move || {
                let (mut successes, mut conflicts) = (0, 0);
                for _ in 0..per_client {
                    let mut attempts = 0;
                    while !try_increment(&mut con, &key) {
                        conflicts += 1;
                        attempts += 1;
                        assert!(
                            attempts < MAX_ATTEMPTS_PER_INCREMENT,
                            "an increment never got through"
                        );
                    }
                    successes += 1;
                }
                (successes, conflicts)
            })
        })
        .collect();
    let mut successes = 0;
    for worker in workers {
        let (done, _conflicts) = worker.join().expect("WATCH worker");
        successes += done;
    }
    assert_eq!(successes, 2 * per_client);
    let counter: i64 = setup.get(&key).expect("GET");
    assert_eq!(
        counter, successes,
        "the counter equals the successful EXECs"
    );
}

fn pubsub(target: &Target) {
    let p = target.prefix();
    let channel = format!("{p}:chan");
    let mut subscriber = target.connect();
    let mut publisher = target.connect();
    let mut ps = subscriber.as_pubsub();
    ps.set_read_timeout(Some(READ_TIMEOUT)).expect("timeout");
    ps.psubscribe(format!("{p}:pat:*")).expect("PSUBSCRIBE");
    ps.subscribe(&channel).expect("SUBSCRIBE");
    // In RESP3 the crate does not wait for the confirmations: publish once the node has
    // the subscriptions (the pattern's came first on the same connection).
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let counts: Vec<(String, i64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(&channel)
            .query(&mut publisher)
            .expect("PUBSUB NUMSUB");
        if counts == [(channel.clone(), 1)] {
            break;
        }
        assert!(Instant::now() < deadline, "the subscription never showed");
        thread::sleep(Duration::from_millis(5));
    }
    let receivers: i64 = publisher.publish(&channel, "hello").expect("PUBLISH");
    assert_eq!(receivers, 1);
    let message = ps.get_message().expect("message");
    assert_eq!(message.get_channel_name(), channel);
    assert_eq!(message.get_payload::<String>().expect("payload"), "hello");
    let receivers: i64 = publisher
        .publish(format!("{p}:pat:x"), "world")
        .expect("PUBLISH");
    assert_eq!(receivers, 1);
    let message = ps.get_message().expect("pmessage");
    assert!(message.from_pattern());
    assert_eq!(
        message.get_pattern::<String>().expect("pattern"),
        format!("{p}:pat:*")
    );
    assert_eq!(message.get_payload::<String>().expect("payload"), "world");
    ps.unsubscribe(&channel).expect("UNSUBSCRIBE");
    ps.punsubscribe(format!("{p}:pat:*")).expect("PUNSUBSCRIBE");
    drop(ps);
    let pong: String = redis::cmd("PING")
        .query(&mut subscriber)
        .expect("PING after pub/sub");
    assert_eq!(pong, "PONG");
}

fn scripts(target: &Target) {
    let p = target.prefix();
    let mut con = target.connect();
    let set: String = redis::cmd("EVAL")
        .arg("return redis.call('SET', KEYS[1], ARGV[1])")
        .arg(1)
        .arg(format!("{p}:script"))
        .arg("v")
        .query(&mut con)
        .expect("EVAL");
    assert_eq!(set, "OK");
    let sha: String = redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg("return redis.call('INCRBY', KEYS[1], ARGV[1])")
        .query(&mut con)
        .expect("SCRIPT LOAD");
    let counted: i64 = redis::cmd("EVALSHA")
        .arg(&sha)
        .arg(1)
        .arg(format!("{p}:counter"))
        .arg(3)
        .query(&mut con)
        .expect("EVALSHA");
    assert_eq!(counted, 3);
    // Script::invoke sends EVALSHA and loads the script on NOSCRIPT.
    redis::cmd("SCRIPT")
        .arg("FLUSH")
        .exec(&mut con)
        .expect("SCRIPT FLUSH");
    let script = redis::Script::new(&format!(
        "return redis.call('INCRBY', KEYS[1], ARGV[1]) + {}",
        p.len()
    ));
    let counted: i64 = script
        .key(format!("{p}:counter"))
        .arg(2)
        .invoke(&mut con)
        .expect("Script::invoke");
    assert_eq!(counted, 5 + p.len() as i64);
    let cross: RedisResult<String> = redis::cmd("EVAL")
        .arg("return 1")
        .arg(2)
        .arg(format!("{p}:x"))
        .arg(format!("{p}:y"))
        .query(&mut con);
    assert_eq!(
        cross.expect_err("cross-slot EVAL").code(),
        Some("CROSSSLOT")
    );
}

fn blocked_on_nodes(node_ports: &[u16]) -> usize {
    node_ports
        .iter()
        .map(|&port| blocked_clients(&mut RawClient::connect(port)))
        .sum()
}

fn blocking_pop_woken_by_another_client(target: &Target) {
    let key = format!("{}:blocking", target.prefix());
    let mut waiter = target.connect();
    let mut pusher = target.connect();
    let before = blocked_on_nodes(&target.node_ports);
    let waiting = {
        let key = key.clone();
        thread::spawn(move || -> Option<(String, String)> {
            waiter.blpop(&key, 25.0).expect("BLPOP")
        })
    };
    // Push only once the BLPOP really blocks on its node.
    let deadline = Instant::now() + Duration::from_secs(20);
    while blocked_on_nodes(&target.node_ports) <= before {
        assert!(Instant::now() < deadline, "the BLPOP never blocked");
        thread::sleep(Duration::from_millis(5));
    }
    let pushed: i64 = pusher.rpush(&key, "woken").expect("RPUSH");
    assert_eq!(pushed, 1);
    assert_eq!(
        waiting.join().expect("BLPOP thread"),
        Some((key, "woken".to_string()))
    );
}

/// The tokio multiplexed connection: concurrent requests, a pipeline and a transaction.
fn async_connection(target: &Target) {
    let p = target.prefix();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let client = target.client();
    runtime.block_on(async move {
        let con = tokio::time::timeout(READ_TIMEOUT, client.get_multiplexed_tokio_connection())
            .await
            .expect("connect in time")
            .expect("async connect");
        // Spawned together, so the multiplexed connection pipelines them.
        let requests: Vec<_> = (0..100)
            .map(|i| {
                let mut con = con.clone();
                tokio::spawn(async move {
                    let key = format!("{p}:async:{i}");
                    let () = redis::AsyncCommands::set(&mut con, &key, i)
                        .await
                        .expect("SET");
                    let value: i64 = redis::AsyncCommands::get(&mut con, &key)
                        .await
                        .expect("GET");
                    value
                })
            })
            .collect();
        let mut all = Vec::new();
        for request in requests {
            let value = tokio::time::timeout(READ_TIMEOUT, request)
                .await
                .expect("reply in time")
                .expect("request task");
            all.push(value);
        }
        assert_eq!(all, (0..100).collect::<Vec<i64>>());
        let mut con = con;
        let tag = format!("{{{p}:atx}}");
        let (a, b): (i64, i64) = redis::pipe()
            .atomic()
            .incr(format!("{tag}a"), 1)
            .incr(format!("{tag}a"), 1)
            .query_async(&mut con)
            .await
            .expect("async MULTI/EXEC");
        assert_eq!((a, b), (1, 2));
    });
}
