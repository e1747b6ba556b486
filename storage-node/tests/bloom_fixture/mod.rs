//! What the Bloom filter tests share: replies read as text or integers, and BF.MADD /
//! BF.MEXISTS pipelined in batches.

use slotproxy::resp::Frame;
use test_harness::RawClient;

pub fn raw(client: &mut RawClient, args: &[&str]) -> String {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    String::from_utf8_lossy(&client.call_raw(&args)).into_owned()
}

pub fn int(client: &mut RawClient, args: &[&str]) -> i64 {
    match client.call(args) {
        Frame::Integer(n) => n,
        other => panic!("{args:?}: {other:?}"),
    }
}

/// Pipelined `BF.MADD`/`BF.MEXISTS` of `prefix0 .. prefix{n-1}`, 1000 items a command;
/// returns how many answered 1.
pub fn pipelined(c: &mut RawClient, command: &str, key: &str, prefix: &str, n: usize) -> usize {
    const BATCH: usize = 1000;
    const DEPTH: usize = 16;
    let mut ones = 0;
    let mut pending = 0;
    let mut start = 0;
    while start < n || pending > 0 {
        while start < n && pending < DEPTH {
            let items: Vec<String> = (start..(start + BATCH).min(n))
                .map(|i| format!("{prefix}{i}"))
                .collect();
            let mut args: Vec<&[u8]> = vec![command.as_bytes(), key.as_bytes()];
            args.extend(items.iter().map(|s| s.as_bytes()));
            c.send(&args);
            start += BATCH;
            pending += 1;
        }
        let (frame, _) = c.read_reply();
        let items = frame.as_array().expect("array reply");
        ones += items.iter().filter(|f| f.as_integer() == Some(1)).count();
        pending -= 1;
    }
    ones
}
