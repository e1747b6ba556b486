//! Riding through a failover: the one place that decides whether a request whose master
//! failed may be sent again, and that waits for the slot map to name a new master.
//!
//! Every request path uses it: shared connections ([`super::forward::follow`], which batches
//! and fan-out children end in too), transactions ([`super::transaction`]) and blocking
//! commands ([`super::blocking`]), both on dedicated connections.
//!
//! The rules:
//! - A request may be sent again when it cannot have run ([`BackendError::retry_safe`]: the
//!   connection was never made, or no node served the slot) or when running it twice
//!   changes nothing (a `readonly` command of the command table). A write that may have
//!   reached a node that then died is never resent: its client gets the error.
//! - When the cluster has replicas, the request then waits for the slot map to name a
//!   master other than the one that failed, asking the refresher for a new map while it
//!   waits, until the request's budget (three quarters of `timeouts.operation_ms`) is
//!   spent. A cluster without replicas cannot get a new master without an operator, so
//!   there the request fails at once and the other slots keep working undisturbed.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use super::Proxy;
use crate::backend::dedicated::Dedicated;
use crate::backend::BackendError;
use crate::cluster::{CommandFlags, CommandTable};
use crate::resp::{parse_frame, Proto};

/// How often a waiting request looks at the slot map again.
const POLL: Duration = Duration::from_millis(20);

/// How long a request may spend on redirects, retries and failovers: three quarters of
/// the operation timeout, so the proxy's own answer still beats the client's timeout.
pub fn budget(proxy: &Proxy) -> Duration {
    Duration::from_millis(proxy.config.load().timeouts.operation_ms.max(4)) * 3 / 4
}

/// Whether `request` (one encoded command) only reads, so sending it again after its
/// connection broke cannot apply anything twice.
pub fn is_read_only(request: &[u8]) -> bool {
    let Ok(Some((frame, _))) = parse_frame(request) else {
        return false;
    };
    let Some(items) = frame.as_array() else {
        return false;
    };
    // The name and a container's subcommand pick the spec; the values are not needed (a
    // request that reached a node already passed the arity check).
    let head: Vec<Bytes> = items
        .iter()
        .take(2)
        .filter_map(|item| item.as_bytes().map(Bytes::copy_from_slice))
        .collect();
    CommandTable::get()
        .lookup(&head)
        .is_ok_and(|spec| spec.flags.contains(CommandFlags::READONLY))
}

/// Whether a request that failed with `error` may be sent again.
pub fn may_resend(error: &BackendError, request: &[u8]) -> bool {
    error.retry_safe() || is_read_only(request)
}

/// The master to send a slot's request to now that `failed` did not serve it (`None`: no
/// master was known; then a keyless request may go to any master). Waits, refreshing, until the slot map names
/// another master, when the cluster has replicas and until `deadline`; `None` if none came.
pub async fn new_master(
    proxy: &Proxy,
    slot: Option<u16>,
    failed: Option<&str>,
    deadline: Instant,
) -> Option<String> {
    loop {
        let topology = proxy.topology.load();
        let current = match slot {
            Some(slot) => proxy.master_addr(slot).ok(),
            None if failed.is_none() => proxy.any_master().ok(),
            // A keyless request that a node did not take stays failed: it may have been
            // meant for that node (CLUSTER INFO of each master, a fan-out child's DBSIZE),
            // which no other node can answer for.
            None => return None,
        };
        match current {
            Some(addr) if Some(addr.as_str()) != failed => return Some(addr),
            _ => {}
        }
        if !topology.has_replicas() || Instant::now() + POLL > deadline {
            return None;
        }
        proxy.request_refresh();
        tokio::time::sleep(POLL).await;
    }
}

/// A dedicated connection to the master of `slot` (any master for `None`; `addr` when the
/// caller already chose one), for a transaction or a blocking command. Nothing was sent
/// yet, so a master that cannot be reached is replaced by the new master of a failover,
/// within the request's budget.
pub async fn open_dedicated(
    proxy: &Arc<Proxy>,
    slot: Option<u16>,
    addr: Option<String>,
    proto: Proto,
) -> Result<Dedicated, BackendError> {
    let deadline = Instant::now() + budget(proxy);
    let mut addr = match addr {
        Some(addr) => addr,
        None => match new_master(proxy, slot, None, deadline).await {
            Some(addr) => addr,
            None => {
                return Err(BackendError::NoNode {
                    slot: slot.unwrap_or(0),
                })
            }
        },
    };
    loop {
        let timeout = Duration::from_millis(proxy.config.load().timeouts.connect_ms);
        let error = match Dedicated::open(&addr, proto, &proxy.dedicated, timeout).await {
            Ok(conn) => return Ok(conn),
            Err(error) => error,
        };
        proxy.request_refresh();
        match new_master(proxy, slot, Some(&addr), deadline).await {
            Some(next) => addr = next,
            None => return Err(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_may_be_resent_and_writes_only_when_unsent() {
        let lost = BackendError::ConnectionLost { addr: "a:1".into() };
        assert!(may_resend(&lost, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
        assert!(!may_resend(&lost, b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"));
        assert!(!may_resend(&lost, b"garbage"));
        let refused = BackendError::Connect {
            addr: "a:1".into(),
            reason: "refused".into(),
        };
        assert!(may_resend(&refused, b"*2\r\n$4\r\nINCR\r\n$1\r\nk\r\n"));
    }
}
