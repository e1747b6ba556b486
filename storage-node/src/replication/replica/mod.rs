//! The replica side of replication: `REPLICAOF`, the link to the master (handshake,
//! full sync, applying the stream, acknowledgements), and what a replica refuses.
//!
//! (Being built: see issue 16. The master side lives in the sibling modules.)

/// The state of this node's link to its master, when it is a replica.
#[derive(Default)]
pub struct Link {}
