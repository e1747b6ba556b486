//! The replica side of replication: `REPLICAOF`, the link to the master (handshake,
//! full sync, applying the stream, acknowledgements), and what a replica refuses.
//!
//! (Being built: see issue 16. The master side lives in the sibling modules; the
//! functions below are what it calls, answering for a lone master until the replica
//! side fills them in.)

use slotproxy::resp::ReplyBuf;

use crate::server::Shared;

/// The state of this node's link to its master, when it is a replica.
#[derive(Default)]
pub struct Link {}

/// Whether this node replicates from a master (Redis's `server.masterhost != NULL`).
pub fn is_replica(shared: &Shared) -> bool {
    let _ = shared;
    false
}

/// Whether a replica of this node may sync: a master always, a replica only while its
/// own master link is up (else `-NOMASTERLINK`).
pub fn link_up(shared: &Shared) -> bool {
    !is_replica(shared)
}

/// ROLE on a replica: `slave`, master host, port, link state, offset. Called only when
/// [`is_replica`].
pub fn role_reply(shared: &Shared, out: &mut ReplyBuf<'_>) {
    let _ = (shared, out);
}

/// INFO replication's fields of a replica, from `master_host` to `replica_announced`, in
/// Redis 7.0's order. Called only when [`is_replica`].
pub fn info_fields(shared: &Shared, out: &mut String) {
    let _ = (shared, out);
}
