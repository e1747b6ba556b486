//! Talking to cluster nodes: multiplexed connections, the connection pool, dedicated
//! connections, and the slot map learned from the nodes.

pub mod connection;
pub mod dedicated;
pub mod error;
pub mod pool;
pub mod reply_cap;
pub mod topology;

pub use connection::{BackendConn, ReplyResult};
pub use error::BackendError;
pub use pool::{Lane, Pool};
pub use reply_cap::LiveReplyCap;
pub use topology::{Node, Topology};
