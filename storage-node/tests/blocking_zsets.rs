//! BZPOPMIN, BZPOPMAX and BZMPOP with several clients. Each scenario runs against the
//! storage-node and a real redis-server, and the raw replies every client got must be
//! identical. A client is known to be blocked (without sleeping) when CLIENT LIST shows it
//! with its blocking command as the last one run.

use test_harness::{Differential, RawClient};

/// Waits (bounded) until `count` clients show `cmd=<command>` in CLIENT LIST.
fn wait_blocked(observer: &mut RawClient, command: &str, count: usize) {
    let needle = format!("cmd={command} ");
    for _ in 0..20_000 {
        let list = observer.call(&["CLIENT", "LIST"]);
        let text = String::from_utf8_lossy(list.as_bytes().expect("bulk")).into_owned();
        if text.matches(&needle).count() >= count {
            return;
        }
        std::thread::yield_now();
    }
    panic!("clients never blocked on {command}");
}

/// Runs a scenario on both servers and compares every reply it collected.
fn on_both(d: &Differential, scenario: impl Fn(u16) -> Vec<Vec<u8>>) {
    let node = scenario(d.node.port);
    let redis = scenario(d.redis.port);
    let show = |replies: &[Vec<u8>]| -> Vec<String> {
        replies
            .iter()
            .map(|r| String::from_utf8_lossy(r).into_owned())
            .collect()
    };
    assert_eq!(show(&node), show(&redis));
}

fn call(client: &mut RawClient, args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.call_raw(&args)
}

fn send(client: &mut RawClient, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.send(&args);
}

#[test]
fn non_blocking_cases_and_errors_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["ZADD", "z", "1", "a", "2", "b", "3", "c"],
        &["BZPOPMIN", "missing", "z", "0"],
        &["BZPOPMAX", "z", "0"],
        &["BZMPOP", "0", "2", "missing", "z", "MIN", "COUNT", "5"],
        &["BZPOPMIN", "z", "-1"],
        &["BZPOPMIN", "z", "abc"],
        &["BZPOPMIN", "z", "inf"],
        &["BZPOPMIN", "z", "1e400"],
        &["BZMPOP", "x", "1", "z", "MIN"],
        &["BZMPOP", "0", "0", "z", "MIN"],
        &["BZMPOP", "0", "1", "z", "SIDEWAYS"],
        &["BZMPOP", "-1", "1", "z", "MIN"],
        &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "0"],
        &["SET", "str", "x"],
        &["BZPOPMIN", "str", "0"],
        &["BZPOPMIN", "missing", "str", "0"],
        &["BZMPOP", "0", "1", "str", "MAX"],
        &["BZPOPMIN", "z", "1e5000"],
        &["BZPOPMIN", "z", "9223372036854776"],
        &["BZPOPMIN", "z", " 1"],
        &["BZPOPMIN", "z", ""],
    ]);
}

#[test]
fn a_blocked_client_gets_the_member_another_client_adds() {
    let d = Differential::start();
    for protocol in ["2", "3"] {
        on_both(&d, |port| {
            let mut waiter = RawClient::connect(port);
            let mut writer = RawClient::connect(port);
            let mut replies = vec![
                call(&mut waiter, &["HELLO", protocol])
                    .len()
                    .to_string()
                    .into_bytes(),
                call(&mut writer, &["DEL", "z", "y"]),
            ];
            send(&mut waiter, &["BZPOPMIN", "y", "z", "0"]);
            wait_blocked(&mut writer, "bzpopmin", 1);
            replies.push(call(&mut writer, &["ZADD", "z", "2", "b", "1.5", "a"]));
            replies.push(waiter.read_reply().1);
            replies.push(call(&mut writer, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]));
            send(
                &mut waiter,
                &["BZMPOP", "0", "2", "y", "z", "MAX", "COUNT", "3"],
            );
            replies.push(waiter.read_reply().1);
            send(&mut waiter, &["BZMPOP", "0", "1", "y", "MIN", "COUNT", "2"]);
            wait_blocked(&mut writer, "bzmpop", 1);
            replies.push(call(
                &mut writer,
                &["ZADD", "y", "1", "p", "2", "q", "3", "r"],
            ));
            replies.push(waiter.read_reply().1);
            replies.push(call(&mut writer, &["ZRANGE", "y", "0", "-1"]));
            replies.push(call(
                &mut writer,
                &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
            ));
            replies
        });
    }
}

#[test]
fn blocked_clients_are_served_first_come_first_served() {
    let d = Differential::start();
    on_both(&d, |port| {
        let mut first = RawClient::connect(port);
        let mut second = RawClient::connect(port);
        let mut third = RawClient::connect(port);
        let mut writer = RawClient::connect(port);
        let mut replies = vec![call(&mut writer, &["DEL", "z", "other"])];
        send(&mut first, &["BZPOPMAX", "z", "0"]);
        wait_blocked(&mut writer, "bzpopmax", 1);
        send(&mut second, &["BZPOPMAX", "other", "z", "0"]);
        wait_blocked(&mut writer, "bzpopmax", 2);
        send(&mut third, &["BZPOPMAX", "z", "0"]);
        wait_blocked(&mut writer, "bzpopmax", 3);
        // One ZADD with two members serves the two oldest waiters, highest first.
        replies.push(call(&mut writer, &["ZADD", "z", "1", "low", "2", "high"]));
        replies.push(first.read_reply().1);
        replies.push(second.read_reply().1);
        replies.push(call(&mut writer, &["EXISTS", "z"]));
        replies.push(call(&mut writer, &["ZADD", "z", "5", "x"]));
        replies.push(third.read_reply().1);
        replies.push(call(
            &mut writer,
            &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"],
        ));
        replies
    });
}

#[test]
fn timeouts_with_decimals_expire_and_stores_wake_waiters() {
    let d = Differential::start();
    on_both(&d, |port| {
        let mut waiter = RawClient::connect(port);
        let mut writer = RawClient::connect(port);
        let mut replies = vec![call(&mut writer, &["DEL", "z", "src", "dst"])];
        replies.push(call(&mut waiter, &["BZPOPMIN", "z", "0.05"]));
        replies.push(call(&mut waiter, &["BZMPOP", "0.01", "1", "z", "MIN"]));
        call(&mut waiter, &["HELLO", "3"]);
        replies.push(call(&mut waiter, &["BZPOPMAX", "z", "0.02"]));
        // ZUNIONSTORE creating the key wakes a waiter.
        call(&mut writer, &["ZADD", "src", "7", "m"]);
        send(&mut waiter, &["BZPOPMIN", "dst", "0"]);
        wait_blocked(&mut writer, "bzpopmin", 1);
        replies.push(call(&mut writer, &["ZUNIONSTORE", "dst", "1", "src"]));
        replies.push(waiter.read_reply().1);
        replies.push(call(&mut writer, &["EXISTS", "dst"]));
        replies
    });
}
