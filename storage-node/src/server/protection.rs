//! Redis 7.0's two network safety defaults: protected mode, and the settings that keep
//! dangerous commands (DEBUG) away from clients.
//!
//! - Protected mode (`protected-mode yes`, the default): while the default user has no
//!   password (no `requirepass`, nor an ACL password for it), a client whose address is not loopback gets
//!   `-DENIED Redis is running in protected mode ...` as soon as it connects, and the
//!   connection is closed. As in Redis 7.0, `bind` plays no part in the decision.
//! - `enable-debug-command no|yes|local` (default `no`, fixed at startup): DEBUG answers
//!   `-ERR DEBUG command not allowed. ...` unless the setting is `yes`, or `local` and the
//!   client is on loopback. Refused before authentication and before MULTI queues it,
//!   where Redis's `processCommand` refuses it.
//!
//! "Loopback" is Redis's `islocalClient`: the peer is exactly `127.0.0.1` or `::1` (so
//! `127.0.0.2` is not local, as redis-server 7.0 shows).

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use crate::config::Config;

/// The whole line a refused client reads before the connection closes (Redis 7.0's text,
/// including its "Setup a an" typo, which clients may match on).
pub const DENIED: &str = "-DENIED Redis is running in protected mode because protected mode \
is enabled and no password is set for the default user. In this mode connections are only \
accepted from the loopback interface. If you want to connect from external computers to \
Redis you may adopt one of the following solutions: 1) Just disable protected mode sending \
the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to \
Redis from the same host the server is running, however MAKE SURE Redis is not publicly \
accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. \
2) Alternatively you can just disable the protected mode by editing the Redis configuration \
file, and setting the protected mode option to 'no', and then restarting the server. 3) If \
you started the server manually just for testing, restart it with the '--protected-mode no' \
option. 4) Setup a an authentication password for the default user. NOTE: You only need to \
do one of the above things in order for the server to start accepting connections from the \
outside.\r\n";

/// Who may run a command that `enable-debug-command` guards (Redis's `PROTECTED_ACTION_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProtectedAction {
    No,
    Yes,
    Local,
}

impl ProtectedAction {
    /// The setting's words, in the order Redis lists them in its error.
    pub const NAMES: &'static [&'static str] = &["no", "yes", "local"];

    pub fn from_name(name: &str) -> Option<ProtectedAction> {
        match name.to_ascii_lowercase().as_str() {
            "no" => Some(ProtectedAction::No),
            "yes" => Some(ProtectedAction::Yes),
            "local" => Some(ProtectedAction::Local),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ProtectedAction::No => "no",
            ProtectedAction::Yes => "yes",
            ProtectedAction::Local => "local",
        }
    }

    /// Redis's `allowProtectedAction`.
    pub fn allows(self, peer: &SocketAddr) -> bool {
        match self {
            ProtectedAction::Yes => true,
            ProtectedAction::Local => is_local(peer),
            ProtectedAction::No => false,
        }
    }
}

/// Redis's `islocalClient` for TCP: the peer is exactly 127.0.0.1 or ::1. An IPv4 client
/// seen through an IPv6 socket (`::ffff:127.0.0.1`) is the same client, so it counts too.
pub fn is_local(peer: &SocketAddr) -> bool {
    match peer.ip() {
        IpAddr::V4(ip) => ip == Ipv4Addr::LOCALHOST,
        IpAddr::V6(ip) => ip.is_loopback() || ip.to_ipv4_mapped() == Some(Ipv4Addr::LOCALHOST),
    }
}

/// Whether protected mode turns away a client connecting from `peer`: the default user
/// has no password (`default_nopass`: no `requirepass`, or `nopass` given by ACL), as
/// Redis 7.0 decides it.
pub fn refuses_connection(config: &Config, default_nopass: bool, peer: &SocketAddr) -> bool {
    config.protected_mode && default_nopass && !is_local(peer)
}

/// The error for a DEBUG the settings do not allow `peer` to run, if it is one.
pub fn check_debug_allowed(config: &Config, peer: &SocketAddr) -> Result<(), String> {
    if config.enable_debug_command.allows(peer) {
        return Ok(());
    }
    Err(
        "ERR DEBUG command not allowed. If the enable-debug-command option is set to \
         \"local\", you can run it from a local connection, otherwise you need to set this \
         option in the configuration file, and then restart the server."
            .to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_the_two_loopback_addresses_are_local() {
        assert!(is_local(&peer("127.0.0.1:5000")));
        assert!(is_local(&peer("[::1]:5000")));
        assert!(is_local(&peer("[::ffff:127.0.0.1]:5000")));
        assert!(!is_local(&peer("127.0.0.2:5000")));
        assert!(!is_local(&peer("192.0.2.7:5000")));
        assert!(!is_local(&peer("[::ffff:192.0.2.7]:5000")));
    }

    #[test]
    fn protected_mode_needs_no_password_and_a_remote_peer() {
        let remote = peer("192.0.2.7:5000");
        let mut config = Config::default();
        assert!(config.protected_mode, "Redis 7.0's default");
        assert!(refuses_connection(&config, true, &remote));
        assert!(!refuses_connection(&config, true, &peer("127.0.0.1:5000")));
        // bind plays no part (Redis 7.0 dropped that condition).
        config.bind = vec!["0.0.0.0".into()];
        assert!(refuses_connection(&config, true, &remote));
        // A password for the default user (requirepass or ACL).
        assert!(!refuses_connection(&config, false, &remote));
        config.protected_mode = false;
        assert!(!refuses_connection(&config, true, &remote));
    }

    #[test]
    fn debug_is_refused_by_default_and_local_means_loopback() {
        let mut config = Config::default();
        let local = peer("127.0.0.1:5000");
        let remote = peer("127.0.0.2:5000");
        assert!(check_debug_allowed(&config, &local).is_err());
        config.enable_debug_command = ProtectedAction::Local;
        assert!(check_debug_allowed(&config, &local).is_ok());
        assert!(check_debug_allowed(&config, &remote).is_err());
        config.enable_debug_command = ProtectedAction::Yes;
        assert!(check_debug_allowed(&config, &remote).is_ok());
    }
}
