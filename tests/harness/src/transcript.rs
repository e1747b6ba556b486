//! Transcripts of several clients: commands sent as words, replies shown as text, and the
//! same scenario run on a storage-node and on a real redis-server, transcripts compared.

use crate::{show, Differential, RawClient};

/// Sends a command without reading its reply (a blocking command, a pipeline).
pub fn send(client: &mut RawClient, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    client.send(&args);
}

/// Sends a command and shows its reply.
pub fn call(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    show(&client.call_raw(&args))
}

/// Shows the next reply.
pub fn reply(client: &mut RawClient) -> String {
    show(&client.read_reply().1)
}

/// Runs `scenario` against each server (given its port) and compares the transcripts.
pub fn same_on_both(scenario: impl Fn(u16) -> Vec<String>) {
    let d = Differential::start();
    let node = scenario(d.node.port);
    let redis = scenario(d.redis.port);
    assert_eq!(node, redis);
}
