//! `SCRIPT KILL` and `FUNCTION KILL` through the proxy.
//!
//! A script started through the proxy runs on the master of its keys (or any master), and
//! while it runs that node answers other connections `-BUSY ...` and leaves the connection
//! that sent the script unread. So the kill goes to every master, each on a fresh
//! connection of its own (the shared one may be queued behind the very script to stop), and
//! the replies merge as one server's would:
//! - `+OK` if some master stopped its script;
//! - otherwise a node's error other than NOTBUSY, as the node worded it (`-UNKILLABLE ...`
//!   for a script that already wrote, or a node that could not be reached);
//! - otherwise `-NOTBUSY No scripts in execution right now.`, as Redis says it.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::super::forward::error_reply;
use super::super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::resp::{request_bytes, Proto};

/// Redis's default `busy-reply-threshold`, in milliseconds.
const BUSY_THRESHOLD_MS: u64 = 5000;

/// Redis's reply when no script runs.
const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";

pub async fn kill(proxy: Arc<Proxy>, args: Vec<Bytes>, addrs: Vec<String>, proto: Proto) -> Bytes {
    let request = request_bytes(&args);
    let config = proxy.config.load();
    let connect = Duration::from_millis(config.timeouts.connect_ms);
    // A node busy with a script reads other connections only once the script has run for
    // `busy-reply-threshold` (5 s by default): allow for that on top of the usual wait.
    let operation = Duration::from_millis(config.timeouts.operation_ms.max(1) + BUSY_THRESHOLD_MS);
    let attempts: Vec<_> = addrs
        .into_iter()
        .map(|addr| {
            let proxy = proxy.clone();
            let request = request.clone();
            tokio::spawn(async move {
                let mut conn = Dedicated::open(&addr, proto, &proxy.dedicated, connect)
                    .await
                    .map_err(|e| error_reply(&e.to_reply()))?;
                match tokio::time::timeout(operation, conn.call(&request)).await {
                    Ok(Ok(reply)) => Ok(reply),
                    Ok(Err(e)) => Err(error_reply(&e.to_reply())),
                    Err(_) => Err(error_reply(&format!(
                        "ERR slotproxy: {addr} did not answer within {} ms",
                        operation.as_millis()
                    ))),
                }
            })
        })
        .collect();
    let mut other_error: Option<Bytes> = None;
    let mut killed = false;
    for attempt in attempts {
        let reply = match attempt.await {
            Ok(Ok(reply)) | Ok(Err(reply)) => reply,
            Err(_) => error_reply("ERR slotproxy: SCRIPT KILL task failed"),
        };
        if reply.starts_with(b"+OK") {
            killed = true;
        } else if !reply.starts_with(b"-NOTBUSY") && other_error.is_none() {
            other_error = Some(reply);
        }
    }
    if killed {
        return Bytes::from_static(b"+OK\r\n");
    }
    other_error.unwrap_or_else(|| error_reply(NOTBUSY))
}
