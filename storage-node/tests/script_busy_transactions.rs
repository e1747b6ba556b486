//! Transactions and the `allow_busy` commands while a script or function is busy, compared
//! with a real redis-server: MULTI is accepted, queued commands answer BUSY (SCRIPT KILL is
//! queued inside MULTI, as Redis does), EXEC answers `EXECABORT ... BUSY ...` and leaves
//! MULTI, so nothing of the transaction ever runs; FUNCTION STATS shows the busy function.
//! Every wait is bounded (polling PING until BUSY, as in `script_busy.rs`).

use slotproxy::resp::Frame;
use test_harness::{show, RawClient, ServerProcess};

fn call(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    show(&client.call_raw(&args))
}

/// Sends PING until the server answers a BUSY error. Panics if it never does.
fn wait_for_busy(client: &mut RawClient) {
    for _ in 0..500 {
        match client.call(&["PING"]) {
            Frame::Error(e) if e.starts_with(b"BUSY ") => return,
            Frame::Simple(s) if s == "PONG".as_bytes() => continue,
            other => panic!("unexpected reply while waiting for BUSY: {other:?}"),
        }
    }
    panic!("the server never answered BUSY");
}

fn both(scenario: impl Fn(u16) -> Vec<String>) {
    let node = ServerProcess::storage_node(&[]);
    let redis = ServerProcess::redis_server(&[]);
    assert_eq!(scenario(node.port), scenario(redis.port));
}

fn transaction_while_busy(port: u16, resp3: bool) -> Vec<String> {
    let mut looping = RawClient::connect(port);
    let mut client = RawClient::connect(port);
    let mut killer = RawClient::connect(port);
    if resp3 {
        call(&mut client, &["HELLO", "3"]);
    }
    let mut seen = vec![
        call(
            &mut killer,
            &["CONFIG", "SET", "busy-reply-threshold", "100"],
        ),
        call(&mut client, &["SET", "x", "before"]),
    ];
    looping.send(&[b"EVAL", b"while true do end", b"0"]);
    wait_for_busy(&mut client);
    // A transaction refused by BUSY never runs, even partly.
    for command in [
        // Refused before BUSY, as Redis checks them first.
        &["NOSUCHCOMMAND"][..],
        &["GET"],
        &["EXEC"],
        &["DISCARD"],
        &["MULTI"],
        &["MULTI"],
        &["SET", "x", "in-multi"],
        &["SCRIPT", "KILL"],
        &["INCR", "counter"],
        &["EXEC"],
        // EXEC left MULTI: DISCARD has nothing to discard.
        &["EXEC"],
        &["MULTI"],
        &["DISCARD"],
    ] {
        seen.push(call(&mut client, command));
    }
    seen.push(call(&mut killer, &["SCRIPT", "KILL"]));
    seen.push(show(&looping.read_reply().1));
    seen.push(call(&mut client, &["GET", "x"]));
    seen.push(call(&mut client, &["EXISTS", "counter"]));
    seen.push(call(&mut client, &["EXEC"]));
    // A transaction opened while busy and finished after the kill runs normally.
    looping.send(&[b"EVAL", b"while true do end", b"0"]);
    wait_for_busy(&mut client);
    seen.push(call(&mut client, &["MULTI"]));
    seen.push(call(&mut killer, &["SCRIPT", "KILL"]));
    seen.push(show(&looping.read_reply().1));
    seen.push(call(&mut client, &["SET", "x", "after"]));
    seen.push(call(&mut client, &["EXEC"]));
    seen.push(call(&mut client, &["GET", "x"]));
    seen
}

#[test]
fn a_transaction_meeting_a_busy_script_is_discarded_whole() {
    both(|port| transaction_while_busy(port, false));
    both(|port| transaction_while_busy(port, true));
}

const LIBRARY: &str = "#!lua name=lib\n\
    redis.register_function{function_name='loop', callback=function() while true do end end, \
    flags={'no-writes'}}";

/// FUNCTION STATS's reply with the running time (which differs run to run) masked.
fn masked_stats(client: &mut RawClient) -> String {
    let stats = call(client, &["FUNCTION", "STATS"]);
    match stats.find("duration_ms") {
        Some(at) => {
            let rest = &stats[at..];
            // `duration_ms\r\n:<n>\r\n`: drop the number.
            let colon = rest.find(':').map_or(0, |c| c + 1);
            let end = rest[colon..].find('\\').map_or(rest.len(), |e| colon + e);
            format!("{}{}{}", &stats[..at + colon], "N", &rest[end..])
        }
        None => stats,
    }
}

fn function_while_busy(port: u16, resp3: bool) -> Vec<String> {
    let mut looping = RawClient::connect(port);
    let mut client = RawClient::connect(port);
    if resp3 {
        call(&mut client, &["HELLO", "3"]);
    }
    let mut seen = vec![
        call(
            &mut client,
            &["CONFIG", "SET", "busy-reply-threshold", "100"],
        ),
        call(&mut client, &["FUNCTION", "LOAD", LIBRARY]),
        masked_stats(&mut client),
    ];
    looping.send(&[b"FCALL", b"loop", b"0"]);
    wait_for_busy(&mut client);
    seen.push(masked_stats(&mut client));
    seen.push(call(&mut client, &["MULTI"]));
    seen.push(call(&mut client, &["GET", "x"]));
    seen.push(call(&mut client, &["EXEC"]));
    seen.push(call(&mut client, &["SCRIPT", "KILL"]));
    seen.push(call(&mut client, &["FUNCTION", "KILL"]));
    seen.push(show(&looping.read_reply().1));
    seen.push(masked_stats(&mut client));
    // During an EVAL script, FUNCTION STATS answers BUSY.
    looping.send(&[b"EVAL", b"while true do end", b"0"]);
    wait_for_busy(&mut client);
    seen.push(masked_stats(&mut client));
    seen.push(call(&mut client, &["SCRIPT", "KILL"]));
    seen.push(show(&looping.read_reply().1));
    seen
}

#[test]
fn function_stats_and_kill_work_while_a_function_is_busy() {
    both(|port| function_while_busy(port, false));
    both(|port| function_while_busy(port, true));
}

#[test]
fn watch_sent_while_busy_is_answered_once_the_script_ends() {
    both(|port| {
        let mut looping = RawClient::connect(port);
        let mut client = RawClient::connect(port);
        let mut killer = RawClient::connect(port);
        let mut seen = vec![call(
            &mut killer,
            &["CONFIG", "SET", "busy-reply-threshold", "100"],
        )];
        looping.send(&[b"EVAL", b"while true do end", b"0"]);
        wait_for_busy(&mut client);
        client.send(&[b"WATCH", b"w"]);
        seen.push(call(&mut killer, &["SCRIPT", "KILL"]));
        seen.push(show(&looping.read_reply().1));
        seen.push(show(&client.read_reply().1));
        seen.push(call(&mut client, &["MULTI"]));
        seen.push(call(&mut client, &["SET", "w", "1"]));
        seen.push(call(&mut client, &["EXEC"]));
        seen
    });
}
