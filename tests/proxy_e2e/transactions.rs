//! MULTI/EXEC/WATCH through the proxy.

use slotproxy::resp::Frame;
use test_harness::RawClient;

fn ok() -> Frame {
    Frame::Simple("OK".into())
}

fn queued() -> Frame {
    Frame::Simple("QUEUED".into())
}

pub fn multi_exec_in_one_slot(port: u16) {
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "{u}a", "1"]), queued());
    assert_eq!(c.call(&["INCR", "{u}a"]), queued());
    assert_eq!(c.call(&["GET", "{u}b"]), queued());
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![ok(), Frame::Integer(2), Frame::Null])
    );
    // A transaction with no keys.
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["PING"]), queued());
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Array(vec![Frame::Simple("PONG".into())])
    );
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Error("ERR EXEC without MULTI".into())
    );
    assert_eq!(
        c.call(&["DISCARD"]),
        Frame::Error("ERR DISCARD without MULTI".into())
    );
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(
        c.call(&["MULTI"]),
        Frame::Error("ERR MULTI calls can not be nested".into())
    );
    assert_eq!(c.call(&["SET", "{u}c", "1"]), queued());
    assert_eq!(c.call(&["DISCARD"]), ok());
    assert_eq!(c.call(&["GET", "{u}c"]), Frame::Null);
    // Runtime errors are inside the EXEC array; the rest still runs.
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "{u}s", "abc"]), queued());
    assert_eq!(c.call(&["INCR", "{u}s"]), queued());
    assert_eq!(c.call(&["SET", "{u}t", "1"]), queued());
    let exec = c.call(&["EXEC"]);
    let items = exec.as_array().expect("exec array");
    assert_eq!(items.len(), 3);
    assert!(items[1].is_error());
    assert_eq!(c.call(&["GET", "{u}t"]), Frame::bulk("1"));
}

pub fn cross_slot_multi_aborts(port: u16) {
    let mut c = RawClient::connect(port);
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "a", "1"]), queued());
    assert_eq!(
        c.call(&["SET", "b", "2"]),
        Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into())
    );
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Error("EXECABORT Transaction discarded because of previous errors.".into())
    );
    assert_eq!(c.call(&["MULTI"]), ok());
    assert!(c.call(&["NOSUCHCMD"]).is_error());
    assert_eq!(
        c.call(&["EXEC"]),
        Frame::Error("EXECABORT Transaction discarded because of previous errors.".into())
    );
    assert_eq!(c.call(&["MULTI"]), ok());
    assert!(c.call(&["GET"]).is_error());
    assert!(c.call(&["EXEC"]).is_error());
    // The cross-slot EVAL is refused outright.
    assert_eq!(
        c.call(&["EVAL", "return 1", "2", "a", "b"]),
        Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into())
    );
}

pub fn watch_detects_changes(port: u16) {
    let mut c = RawClient::connect(port);
    let mut other = RawClient::connect(port);
    c.call(&["SET", "{w}k", "0"]);
    assert_eq!(c.call(&["WATCH", "{w}k"]), ok());
    other.call(&["SET", "{w}k", "changed"]);
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "{w}k", "mine"]), queued());
    assert_eq!(c.call(&["EXEC"]), Frame::NullArray);
    assert_eq!(c.call(&["GET", "{w}k"]), Frame::bulk("changed"));
    // Unchanged: the transaction runs.
    assert_eq!(c.call(&["WATCH", "{w}k"]), ok());
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(c.call(&["SET", "{w}k", "mine"]), queued());
    assert_eq!(c.call(&["EXEC"]), Frame::Array(vec![ok()]));
    assert_eq!(
        c.call(&["WATCH", "{w}k", "other"]),
        Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into())
    );
    assert_eq!(c.call(&["UNWATCH"]), ok());
    assert_eq!(c.call(&["MULTI"]), ok());
    assert_eq!(
        c.call(&["WATCH", "x"]),
        Frame::Error("ERR WATCH inside MULTI is not allowed".into())
    );
    assert_eq!(c.call(&["DISCARD"]), ok());
}

/// Client libraries send a transaction in one write (`MULTI`, the commands, `EXEC`), often
/// several back to back mixed with other commands. The same bytes are fed to the proxy in
/// every two-part split and one byte at a time; the replies must not depend on the split.
pub fn pipelined_transactions_in_every_split(port: u16) {
    let script: &[(&[&str], Frame)] = &[
        (&["SET", "{p}n", "0"], ok()),
        (&["MULTI"], ok()),
        (&["INCR", "{p}n"], queued()),
        (&["INCR", "{p}n"], queued()),
        (
            &["EXEC"],
            Frame::Array(vec![Frame::Integer(1), Frame::Integer(2)]),
        ),
        (&["GET", "{p}n"], Frame::bulk("2")),
        (&["MULTI"], ok()),
        (&["SET", "{p}q", "x"], queued()),
        (&["DISCARD"], ok()),
        (&["WATCH", "{p}n"], ok()),
        (&["GET", "{p}n"], Frame::bulk("2")),
        (&["MULTI"], ok()),
        (&["SET", "{p}n", "10"], queued()),
        (&["EXEC"], Frame::Array(vec![ok()])),
        (&["MULTI"], ok()),
        (&["GET", "{p}n"], queued()),
        (
            &["SET", "{other}n", "1"],
            Frame::Error("CROSSSLOT Keys in request don't hash to the same slot".into()),
        ),
        (
            &["EXEC"],
            Frame::Error("EXECABORT Transaction discarded because of previous errors.".into()),
        ),
        (&["GET", "{p}q"], Frame::Null),
        (&["PING"], Frame::Simple("PONG".into())),
    ];
    let mut bytes = Vec::new();
    for (args, _) in script {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        bytes.extend_from_slice(&RawClient::encode(&args));
    }
    let expect_all = |c: &mut RawClient, split: &str| {
        for (args, expected) in script {
            let (reply, _) = c.read_reply();
            assert_eq!(&reply, expected, "{args:?} with the bytes split {split}");
        }
    };
    let mut c = RawClient::connect(port);
    for at in 0..=bytes.len() {
        c.send_raw(&bytes[..at]);
        c.send_raw(&bytes[at..]);
        expect_all(&mut c, &format!("at byte {at}"));
    }
    for byte in &bytes {
        c.send_raw(std::slice::from_ref(byte));
    }
    expect_all(&mut c, "one byte at a time");
    // Many transactions back to back in one write.
    let mut many = Vec::new();
    for _ in 0..50 {
        many.extend_from_slice(&bytes);
    }
    c.send_raw(&many);
    for _ in 0..50 {
        expect_all(&mut c, "50 times in one write");
    }
}
