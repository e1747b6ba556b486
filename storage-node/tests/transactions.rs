//! MULTI / EXEC / DISCARD / WATCH / UNWATCH compared with a real redis-server, with several
//! clients: queuing errors, run-time errors inside EXEC, and every way a WATCH is
//! invalidated (another client's write, the client's own write, expiry, FLUSHALL, FLUSHDB,
//! SWAPDB) or kept (no-op writes, unwatched keys, other databases).

use std::cell::RefCell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use test_harness::{show, Differential, RawClient};

/// One more client on each server, used as a pair.
struct Pair {
    node: RawClient,
    redis: RawClient,
}

impl Pair {
    fn new(d: &Differential) -> Pair {
        let (node, redis) = d.clients();
        Pair { node, redis }
    }

    /// Sends to both and asserts identical reply bytes.
    fn check(&mut self, args: &[&str]) -> Vec<u8> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.node.send(&args);
        self.redis.send(&args);
        let node = self.node.read_reply().1;
        let redis = self.redis.read_reply().1;
        assert_eq!(show(&node), show(&redis), "replies differ for {args:?}");
        node
    }

    /// Switches both clients' protocol (HELLO replies carry client ids, which differ).
    fn hello(&mut self, version: &str) {
        self.node.call(&["HELLO", version]);
        self.redis.call(&["HELLO", version]);
    }

    fn check_all(&mut self, commands: &[&[&str]]) {
        for command in commands {
            self.check(command);
        }
    }
}

/// The main client pair of a differential as a [`Pair`]-like checker.
fn main_pair(d: &mut Differential) -> Pair {
    let mut pair = Pair::new(d);
    pair.check(&["FLUSHALL"]);
    pair
}

#[test]
fn queuing_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["EXEC"],
        &["DISCARD"],
        &["MULTI"],
        &["MULTI"],
        &["WATCH", "k"],
        &["SET", "k", "1"],
        &["INCR", "k"],
        &["UNWATCH"],
        &["EXEC"],
        // Run-time errors stay inside the EXEC array; the other commands still run.
        &["MULTI"],
        &["SET", "s", "abc"],
        &["INCR", "s"],
        &["APPEND", "s", "d"],
        &["GETEX", "s", "EX", "-1"],
        &["GET", "s"],
        &["EXEC"],
        // Queuing errors abort the transaction.
        &["MULTI"],
        &["SET", "x"],
        &["SET", "y", "1"],
        &["EXEC"],
        &["GET", "y"],
        &["MULTI"],
        &["NOSUCHCOMMAND", "a"],
        &["EXEC"],
        &["MULTI"],
        &["CONFIG", "NOSUCH"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "y", "1"],
        &["EXEC", "extra"],
        &["EXEC"],
        &["MULTI"],
        &["DISCARD", "extra"],
        &["EXEC"],
        &["MULTI"],
        &["SET", "y", "2"],
        &["DISCARD"],
        &["GET", "y"],
        &["EXEC"],
        // An empty transaction, and PING / ECHO inside one.
        &["MULTI"],
        &["EXEC"],
        &["MULTI"],
        &["PING"],
        &["ECHO", "hi"],
        &["EXEC"],
        // SUBSCRIBE inside EXEC, SSUBSCRIBE refused there.
        &["MULTI"],
        &["SSUBSCRIBE", "sh"],
        &["EXEC"],
        &["RESET"],
        &["MULTI"],
        &["SET", "z", "1"],
        &["RESET"],
        &["EXEC"],
        &["GET", "z"],
    ]);
}

#[test]
fn subscribe_inside_exec_enters_subscriber_mode() {
    let d = Differential::start();
    let mut pair = Pair::new(&d);
    pair.check_all(&[
        &["MULTI"],
        &["SUBSCRIBE", "ch"],
        &["GET", "k"],
        &["EXEC"],
        &["GET", "k"],
        &["UNSUBSCRIBE"],
        &["GET", "k"],
    ]);
}

#[test]
fn watch_is_invalidated_by_another_clients_write() {
    let mut d = Differential::start();
    let mut a = main_pair(&mut d);
    let mut b = Pair::new(&d);
    for write in [
        &["SET", "k", "2"][..],
        &["DEL", "k"],
        &["INCR", "k"],
        &["APPEND", "k", "x"],
        &["EXPIRE", "k", "100"],
        &["RENAME", "k", "other"],
        &["SETRANGE", "k", "0", "zz"],
        &["SETBIT", "k", "100", "1"],
        &["MOVE", "k", "3"],
    ] {
        a.check_all(&[&["FLUSHALL"], &["SET", "k", "1"], &["WATCH", "k"]]);
        b.check(write);
        a.check_all(&[&["MULTI"], &["SET", "k", "mine"], &["EXEC"], &["GET", "k"]]);
    }
    // A key that does not exist yet, created by someone else.
    a.check_all(&[&["FLUSHALL"], &["WATCH", "new"]]);
    b.check(&["SET", "new", "1"]);
    a.check_all(&[&["MULTI"], &["GET", "new"], &["EXEC"]]);
    // The watcher's own write counts too.
    a.check_all(&[
        &["WATCH", "k"],
        &["SET", "k", "own"],
        &["MULTI"],
        &["GET", "k"],
        &["EXEC"],
    ]);
}

/// Which commands end a WATCH: EXEC (also one aborted for a queuing error, or refused),
/// DISCARD, RESET and UNWATCH do; an UNWATCH queued inside MULTI does not help the EXEC it
/// is part of; WATCH inside MULTI is refused; a dirty client's WATCH adds nothing. After each
/// case another client writes the key and a fresh transaction shows whether the watch is
/// still there.
#[test]
fn watch_state_transitions_match_redis() {
    let mut d = Differential::start();
    let mut a = main_pair(&mut d);
    let mut b = Pair::new(&d);
    let cases: &[&[&[&str]]] = &[
        &[&["WATCH", "k"], &["MULTI"], &["NOSUCHCOMMAND"], &["EXEC"]],
        &[&["WATCH", "k"], &["MULTI"], &["GET"], &["EXEC"]],
        &[&["WATCH", "k"], &["MULTI"], &["SET", "k", "v"], &["EXEC"]],
        &[&["WATCH", "k"], &["MULTI"], &["DISCARD"]],
        &[&["WATCH", "k"], &["RESET"]],
        &[&["WATCH", "k"], &["UNWATCH"]],
        &[&["WATCH", "k"], &["EXEC"]],
        &[&["WATCH", "k"], &["DISCARD"]],
        &[&["WATCH", "k"], &["MULTI"], &["WATCH", "j"], &["EXEC"]],
        &[&["MULTI"], &["WATCH", "k"], &["DISCARD"]],
        &[&["WATCH", "k"], &["WATCH", "j"]],
        &[&["WATCH", "k", "k", "j"]],
    ];
    for case in cases {
        a.check_all(&[&["FLUSHALL"], &["SET", "k", "1"], &["SET", "j", "1"]]);
        a.check_all(case);
        b.check(&["SET", "k", "changed"]);
        a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"], &["UNWATCH"]]);
    }
    // UNWATCH queued inside the transaction runs too late for its EXEC.
    a.check_all(&[&["WATCH", "k"], &["MULTI"], &["UNWATCH"], &["GET", "k"]]);
    b.check(&["SET", "k", "again"]);
    a.check(&["EXEC"]);
    // A dirty client's WATCH changes nothing; UNWATCH clears the dirty state.
    a.check(&["WATCH", "k"]);
    b.check(&["SET", "k", "dirty"]);
    a.check_all(&[
        &["WATCH", "j"],
        &["UNWATCH"],
        &["MULTI"],
        &["GET", "k"],
        &["EXEC"],
    ]);
}

#[test]
fn writes_that_change_nothing_keep_the_watch() {
    let mut d = Differential::start();
    let mut a = main_pair(&mut d);
    let mut b = Pair::new(&d);
    a.check_all(&[
        &["FLUSHALL"],
        &["SET", "k", "abc"],
        &["WATCH", "k", "missing"],
    ]);
    b.check_all(&[
        &["SET", "k", "x", "NX"],
        &["SETNX", "k", "y"],
        &["INCR", "k"],
        &["INCRBYFLOAT", "k", "1"],
        &["SET", "missing", "1", "XX"],
        &["DEL", "missing"],
        &["EXPIRE", "k", "100", "XX"],
        &["PERSIST", "k"],
        &["RENAME", "k", "k"],
        &["RENAMENX", "k", "k"],
        &["COPY", "k", "k2"],
        &["COPY", "k2", "k"],
        &["MOVE", "k2", "0"],
        &["SET", "elsewhere", "1"],
        &["GET", "k"],
        &["SETRANGE", "k", "0", ""],
        &["MSETNX", "k", "1", "zz", "2"],
    ]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    // UNWATCH, DISCARD and EXEC all forget the watched keys.
    a.check(&["WATCH", "k"]);
    a.check(&["UNWATCH"]);
    b.check(&["SET", "k", "changed"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    a.check_all(&[&["WATCH", "k"], &["MULTI"], &["DISCARD"]]);
    b.check(&["SET", "k", "again"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    a.check_all(&[&["WATCH", "k"], &["MULTI"], &["EXEC"]]);
    b.check(&["SET", "k", "third"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    // A dirty watch makes EXEC answer a null array in RESP3 too.
    a.hello("3");
    a.check(&["WATCH", "k"]);
    b.check(&["SET", "k", "fourth"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    a.hello("2");
}

#[test]
fn flushes_and_swapdb_invalidate_watches_on_existing_keys() {
    let mut d = Differential::start();
    let mut a = main_pair(&mut d);
    let mut b = Pair::new(&d);
    let scenarios: &[(&[&[&str]], &[&str])] = &[
        (&[&["SET", "k", "1"]], &["FLUSHALL"]),
        (&[&["SET", "k", "1"]], &["FLUSHDB"]),
        (&[&["SET", "k", "1"]], &["FLUSHALL", "ASYNC"]),
        // The watched key does not exist: flushing changes nothing for it.
        (&[&["SET", "other", "1"]], &["FLUSHALL"]),
        (&[&["SET", "other", "1"]], &["FLUSHDB"]),
        // SWAPDB: the key exists on either side.
        (&[&["SET", "k", "1"]], &["SWAPDB", "0", "1"]),
        (
            &[&["SELECT", "1"], &["SET", "k", "1"], &["SELECT", "0"]],
            &["SWAPDB", "0", "1"],
        ),
        (&[&["SET", "other", "1"]], &["SWAPDB", "0", "1"]),
        (&[&["SET", "k", "1"]], &["SWAPDB", "2", "3"]),
    ];
    for (setup, invalidate) in scenarios {
        a.check(&["FLUSHALL"]);
        a.check_all(setup);
        a.check(&["WATCH", "k"]);
        b.check(invalidate);
        a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    }
    // FLUSHDB of another database leaves db 0's watchers alone.
    a.check_all(&[&["FLUSHALL"], &["SET", "k", "1"], &["WATCH", "k"]]);
    b.check_all(&[&["SELECT", "5"], &["FLUSHDB"], &["SELECT", "0"]]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
}

/// Waits (bounded) until `probe`, given a TTL no longer than the watched key's, is gone on
/// both servers, so the watched key has expired too without anyone touching it.
fn wait_until_gone(pair: &mut Pair, probe: &str) {
    for _ in 0..2000 {
        let node = pair.node.call(&["PTTL", probe]).as_integer();
        let redis = pair.redis.call(&["PTTL", probe]).as_integer();
        if node == Some(-2) && redis == Some(-2) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    panic!("{probe} never expired");
}

#[test]
fn expiry_of_a_watched_key_invalidates_the_watch() {
    let debug = ["--enable-debug-command", "yes"];
    let mut d = Differential::start_with(&debug, &debug);
    let mut a = main_pair(&mut d);
    let mut b = Pair::new(&d);
    // No active expiry: the key stays stored, expired, until EXEC looks at it.
    a.check_all(&[&["DEBUG", "SET-ACTIVE-EXPIRE", "0"], &["SET", "k", "1"]]);
    a.check_all(&[&["PEXPIRE", "k", "50"], &["WATCH", "k"]]);
    b.check(&["SET", "probe", "1", "PX", "50"]);
    wait_until_gone(&mut b, "probe");
    a.check_all(&[
        &["MULTI"],
        &["SET", "done", "1"],
        &["EXEC"],
        &["GET", "done"],
    ]);

    // Removed by a lazy lookup from another client before EXEC.
    a.check_all(&[&["SET", "k", "1", "PX", "50"], &["WATCH", "k"]]);
    b.check(&["SET", "probe", "1", "PX", "50"]);
    wait_until_gone(&mut b, "probe");
    b.check(&["GET", "k"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);

    // Already expired when watched: its removal changes nothing, EXEC runs.
    a.check(&["SET", "k", "1", "PX", "20"]);
    b.check(&["SET", "probe", "1", "PX", "20"]);
    wait_until_gone(&mut b, "probe");
    a.check(&["WATCH", "k"]);
    b.check(&["EXISTS", "k"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    // ... but recreating it does.
    a.check(&["SET", "k", "1", "PX", "20"]);
    b.check(&["SET", "probe", "1", "PX", "20"]);
    wait_until_gone(&mut b, "probe");
    a.check(&["WATCH", "k"]);
    b.check(&["SET", "k", "new"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    // ... and FLUSHALL of an expired watched key is no change either.
    a.check(&["SET", "k", "1", "PX", "20"]);
    b.check(&["SET", "probe", "1", "PX", "20"]);
    wait_until_gone(&mut b, "probe");
    a.check(&["WATCH", "k"]);
    b.check(&["FLUSHALL"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    a.check(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
}

#[test]
fn active_expiry_invalidates_the_watch() {
    let d = Differential::start();
    let mut a = Pair::new(&d);
    let mut b = Pair::new(&d);
    a.check_all(&[&["SET", "k", "1", "PX", "30"], &["WATCH", "k"]]);
    // DBSIZE does not look at the key; wait until active expiry has removed it.
    for _ in 0..2000 {
        let node = b.node.call(&["DBSIZE"]).as_integer();
        let redis = b.redis.call(&["DBSIZE"]).as_integer();
        if node == Some(0) && redis == Some(0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
}

fn client_list_field(line: &str, field: &str) -> String {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(&format!("{field}=")))
        .unwrap_or_default()
        .to_string()
}

/// CLIENT LIST of the other client: its `flags` and `multi` fields.
fn observed(observer: &mut RawClient, id: i64) -> (String, String) {
    let id = id.to_string();
    let frame = observer.call(&["CLIENT", "LIST", "ID", &id]);
    let text = String::from_utf8_lossy(frame.as_bytes().unwrap_or_default()).into_owned();
    (
        client_list_field(&text, "flags"),
        client_list_field(&text, "multi"),
    )
}

#[test]
fn client_list_shows_the_queue_length_and_flags() {
    let d = Differential::start();
    let mut a = Pair::new(&d);
    let mut b = Pair::new(&d);
    let node_id = a.node.call(&["CLIENT", "ID"]).as_integer().unwrap_or(0);
    let redis_id = a.redis.call(&["CLIENT", "ID"]).as_integer().unwrap_or(0);
    let compare = |b: &mut Pair| {
        assert_eq!(
            observed(&mut b.node, node_id),
            observed(&mut b.redis, redis_id)
        );
    };
    compare(&mut b);
    a.check_all(&[&["SET", "k", "1"], &["WATCH", "k"], &["MULTI"]]);
    compare(&mut b);
    a.check_all(&[&["SET", "x", "1"], &["GET", "x"]]);
    compare(&mut b);
    b.check(&["SET", "k", "2"]);
    compare(&mut b);
    a.check(&["SET", "y", "1"]);
    compare(&mut b);
    a.check(&["EXEC"]);
    compare(&mut b);
    a.check(&["SUBSCRIBE", "c"]);
    compare(&mut b);
}

#[test]
fn disconnect_and_reset_forget_watches() {
    let d = Differential::start();
    let mut a = Pair::new(&d);
    let mut b = Pair::new(&d);
    a.check_all(&[&["SET", "k", "1"], &["WATCH", "k"], &["RESET"]]);
    b.check(&["SET", "k", "2"]);
    a.check_all(&[&["MULTI"], &["GET", "k"], &["EXEC"]]);
    // A client that disconnects while watching and queuing leaves nothing behind.
    let mut gone = Pair::new(&d);
    gone.check_all(&[&["WATCH", "k"], &["MULTI"], &["SET", "k", "lost"]]);
    drop(gone);
    b.check(&["SET", "k", "3"]);
    a.check(&["GET", "k"]);
}

#[test]
fn exec_is_atomic_for_other_clients() {
    let d = Differential::start();
    let port = d.node.port;
    let reader = std::thread::spawn(move || {
        let mut c = RawClient::connect(port);
        let mut seen_partial = false;
        for _ in 0..400 {
            let frame = c.call(&["MGET", "x", "y"]);
            let values: Vec<Option<Vec<u8>>> = frame
                .as_array()
                .unwrap_or_default()
                .iter()
                .map(|f| f.as_bytes().map(<[u8]>::to_vec))
                .collect();
            if values.len() == 2 && values[0] != values[1] {
                seen_partial = true;
            }
        }
        seen_partial
    });
    let mut writer = RawClient::connect(port);
    for i in 0..200 {
        let value = i.to_string();
        let mut batch = RawClient::encode(&[b"MULTI"]);
        batch.extend(RawClient::encode(&[b"SET", b"x", value.as_bytes()]));
        batch.extend(RawClient::encode(&[b"SET", b"y", value.as_bytes()]));
        batch.extend(RawClient::encode(&[b"EXEC"]));
        writer.send_raw(&batch);
        for _ in 0..4 {
            writer.read_reply();
        }
    }
    assert!(
        !reader.join().expect("reader thread"),
        "a reader saw x and y differ"
    );
}

/// One step of the random two-client scenario: which client and which command.
fn step() -> impl Strategy<Value = (bool, Vec<String>)> {
    let key = prop::sample::select(&["a", "b"][..]).prop_map(String::from);
    let value = prop::sample::select(&["1", "2", "x"][..]).prop_map(String::from);
    let command = prop_oneof![
        2 => Just(vec!["MULTI".to_string()]),
        2 => Just(vec!["EXEC".to_string()]),
        1 => Just(vec!["DISCARD".to_string()]),
        2 => key.clone().prop_map(|k| vec!["WATCH".into(), k]),
        1 => Just(vec!["UNWATCH".to_string()]),
        3 => (key.clone(), value.clone()).prop_map(|(k, v)| vec!["SET".into(), k, v]),
        1 => (key.clone(), value).prop_map(|(k, v)| vec!["SET".into(), k, v, "NX".into()]),
        2 => key.clone().prop_map(|k| vec!["INCR".into(), k]),
        2 => key.clone().prop_map(|k| vec!["GET".into(), k]),
        1 => key.clone().prop_map(|k| vec!["DEL".into(), k]),
        1 => Just(vec!["SET".to_string()]),
        1 => Just(vec!["FLUSHDB".to_string()]),
        1 => key.prop_map(|k| vec!["EXPIRE".into(), k, "100".into(), "NX".into()]),
    ];
    (any::<bool>(), command)
}

fn compare(clients: &mut [Pair; 2], second: bool, command: &[String]) -> Result<(), TestCaseError> {
    let pair = &mut clients[usize::from(second)];
    let args: Vec<&[u8]> = command.iter().map(|a| a.as_bytes()).collect();
    pair.node.send(&args);
    pair.redis.send(&args);
    let node = pair.node.read_reply().1;
    let redis = pair.redis.read_reply().1;
    if node != redis {
        return Err(TestCaseError::fail(format!(
            "{command:?}: node {} redis {}",
            show(&node),
            show(&redis)
        )));
    }
    Ok(())
}

#[test]
fn random_two_client_transactions_match_redis() {
    let d = Differential::start();
    let clients = RefCell::new([Pair::new(&d), Pair::new(&d)]);
    let runner_config = Config {
        cases: 96,
        failure_persistence: None,
        ..Config::default()
    };
    TestRunner::new(runner_config)
        .run(&prop::collection::vec(step(), 1..30), |steps| {
            let mut clients = clients.borrow_mut();
            for second in [false, true] {
                compare(&mut clients, second, &["RESET".to_string()])?;
            }
            compare(&mut clients, false, &["FLUSHALL".to_string()])?;
            for (second, command) in &steps {
                compare(&mut clients, *second, command)?;
            }
            Ok(())
        })
        .unwrap_or_else(|failure| panic!("{failure}"));
}
