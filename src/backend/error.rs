//! Backend failures, saying whose fault they were and whether a retry is safe.

/// A request that did not get a reply from its backend.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum BackendError {
    /// The connection could not be opened: the request was never sent, so a retry
    /// elsewhere (after a topology refresh) is safe.
    #[error("cannot connect to {addr}: {reason}")]
    Connect { addr: String, reason: String },
    /// The connection broke after the request may have been sent: a retry could apply a
    /// write twice.
    #[error("connection to {addr} lost")]
    ConnectionLost { addr: String },
    /// No reply within the operation timeout; the request may still run.
    #[error("{addr} did not answer within {ms} ms")]
    Timeout { addr: String, ms: u64 },
    /// The node sent bytes that are not RESP: the node's fault, not the client's.
    #[error("{addr} sent invalid RESP: {reason}")]
    Protocol { addr: String, reason: String },
    /// The node's reply was larger than `limits.max_reply_bytes` / `max_reply_elements`;
    /// its connection was closed without reading the rest.
    #[error("{addr} sent a reply over the proxy's limit: {reason}")]
    ReplyTooLarge { addr: String, reason: String },
    /// No node serves the slot (the cluster does not cover it).
    #[error("no node serves slot {slot}")]
    NoNode { slot: u16 },
}

impl BackendError {
    /// Whether sending the same request again cannot apply it twice.
    pub fn retry_safe(&self) -> bool {
        matches!(
            self,
            BackendError::Connect { .. } | BackendError::NoNode { .. }
        )
    }

    /// The error reply a client sees. Proxy-side failures are marked as such so an
    /// operator can tell them from the node's own errors.
    pub fn to_reply(&self) -> String {
        match self {
            BackendError::NoNode { .. } => "CLUSTERDOWN Hash slot not served".to_string(),
            other => format!("ERR slotproxy: {other}"),
        }
    }
}
