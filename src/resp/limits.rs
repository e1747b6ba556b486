//! Protocol limits, with Redis's defaults.

/// Largest inline request or header line (`PROTO_INLINE_MAX_SIZE` in Redis).
pub const INLINE_MAX_SIZE: usize = 64 * 1024;

/// Limits the request decoder enforces. Defaults match redis-server 7.0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `proto-max-bulk-len`: the largest bulk string a client may declare.
    pub max_bulk_len: usize,
    /// The largest multibulk count accepted (Redis: `INT_MAX`).
    pub max_multibulk_len: usize,
    /// The largest inline request.
    pub max_inline_len: usize,
    /// Whether the client still has to authenticate: Redis then caps multibulk counts at 10
    /// and bulk lengths at 16384 so an anonymous peer cannot make it buffer much.
    pub unauthenticated: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            max_multibulk_len: i32::MAX as usize,
            max_inline_len: INLINE_MAX_SIZE,
            unauthenticated: false,
        }
    }
}
