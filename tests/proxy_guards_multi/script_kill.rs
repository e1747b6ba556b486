//! A runaway script started through the proxy can be stopped through it, and meanwhile the
//! node's -BUSY reaches other clients unchanged.

use std::time::Duration;

use slotproxy::resp::Frame;
use test_harness::RawClient;

use crate::{eventually, text};

const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";
const BUSY: &str =
    "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.";

pub fn kill_through_the_proxy(port: u16) {
    let mut admin = RawClient::connect(port);
    assert_eq!(
        admin.call(&["SCRIPT", "KILL"]),
        Frame::Error(NOTBUSY.into())
    );
    assert_eq!(
        admin.call(&["FUNCTION", "KILL"]),
        Frame::Error(NOTBUSY.into())
    );
    // Nodes answer others (SCRIPT KILL included) once a script ran this long: well inside
    // the proxy's operation timeout.
    assert_eq!(
        admin.call(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        Frame::Simple("OK".into())
    );
    // A read-only endless loop (a script that wrote could not be killed).
    let mut runner = RawClient::connect(port);
    runner.send(&[
        b"EVAL",
        b"local i = 0 while true do i = i + 1 end",
        b"1",
        b"{busy}key",
    ]);
    // Another client, on the other shared connection to that node (two per node, handed out
    // in turn), gets the node's -BUSY as Redis words it once the script is past the threshold.
    let mut observer = RawClient::connect(port);
    eventually(
        Duration::from_secs(60),
        "-BUSY from the script's node",
        || match observer.call(&["GET", "{busy}key"]) {
            Frame::Null => false,
            other => {
                assert_eq!(other, Frame::Error(BUSY.into()));
                true
            }
        },
    );
    // The script starts asynchronously: NOTBUSY until it runs, then OK.
    eventually(
        Duration::from_secs(60),
        "SCRIPT KILL to stop the script",
        || {
            let reply = admin.call(&["SCRIPT", "KILL"]);
            if reply == Frame::Simple("OK".into()) {
                return true;
            }
            assert_eq!(reply, Frame::Error(NOTBUSY.into()));
            false
        },
    );
    let (reply, _) = runner.read_reply();
    assert!(
        text(&reply).contains("Script killed by user with SCRIPT KILL"),
        "{reply:?}"
    );
    // The node serves again, on the same connection.
    assert_eq!(runner.call(&["GET", "{busy}key"]), Frame::Null);
    assert_eq!(
        admin.call(&["SCRIPT", "KILL"]),
        Frame::Error(NOTBUSY.into())
    );
    // FUNCTION KILL stops a function the same way, wherever FCALL without keys ran it.
    let library = "#!lua name=spinlib\nredis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}";
    assert_eq!(
        admin.call(&["FUNCTION", "LOAD", "REPLACE", library]),
        Frame::bulk("spinlib")
    );
    runner.send(&[b"FCALL", b"spin", b"0"]);
    eventually(
        Duration::from_secs(60),
        "FUNCTION KILL to stop the function",
        || {
            let reply = admin.call(&["FUNCTION", "KILL"]);
            if reply == Frame::Simple("OK".into()) {
                return true;
            }
            assert_eq!(reply, Frame::Error(NOTBUSY.into()));
            false
        },
    );
    let (reply, _) = runner.read_reply();
    assert!(text(&reply).contains("killed"), "{reply:?}");
    assert_eq!(
        admin.call(&["FUNCTION", "KILL"]),
        Frame::Error(NOTBUSY.into())
    );
    assert_eq!(
        admin.call(&["FUNCTION", "FLUSH"]),
        Frame::Simple("OK".into())
    );
}
