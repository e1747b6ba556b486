//! Socket options Redis sets: `tcp-backlog` on the listening sockets, `tcp-keepalive` on
//! client connections, `SO_REUSEADDR`, IPv6 sockets that take IPv6 only (so `bind * ::*`
//! binds both families), and `bind`'s `*` / `::*` / `-optional` addresses.

use std::io;
use std::time::Duration;

use tokio::net::{TcpListener, TcpSocket, TcpStream};

/// Binds one `bind` address. `Ok(None)`: an address marked optional (`-::1`) that this host
/// does not have, skipped as Redis skips it.
pub async fn listen(address: &str, port: u16, backlog: i64) -> io::Result<Option<TcpListener>> {
    let (optional, host) = match address.strip_prefix('-') {
        Some(host) => (true, host),
        None => (false, address),
    };
    let host = match host {
        "*" => "0.0.0.0",
        "::*" => "::",
        other => other,
    };
    match bind_first(host, port, backlog).await {
        Ok(listener) => Ok(Some(listener)),
        Err(e) if optional && unavailable(&e) => {
            crate::log::warning!("Skipping optional bind address {host}: {e}");
            Ok(None)
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("Could not create server TCP listening socket {host}:{port}: {e}"),
        )),
    }
}

/// An address this host has no interface or protocol for (not one that is in use).
fn unavailable(e: &io::Error) -> bool {
    const EAFNOSUPPORT: i32 = 97;
    const EPROTONOSUPPORT: i32 = 93;
    e.kind() == io::ErrorKind::AddrNotAvailable
        || matches!(e.raw_os_error(), Some(EAFNOSUPPORT | EPROTONOSUPPORT))
}

async fn bind_first(host: &str, port: u16, backlog: i64) -> io::Result<TcpListener> {
    let mut last_error = io::Error::new(io::ErrorKind::AddrNotAvailable, "no address");
    for address in tokio::net::lookup_host((host, port)).await? {
        let socket = if address.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            let socket = TcpSocket::new_v6()?;
            rustix::net::sockopt::set_ipv6_v6only(&socket, true)?;
            socket
        };
        socket.set_reuseaddr(true)?;
        match socket.bind(address) {
            // The kernel caps the backlog at net.core.somaxconn (see `warn_if_capped`).
            Ok(()) => return socket.listen(backlog.clamp(0, i32::MAX as i64) as u32),
            Err(e) => last_error = e,
        }
    }
    Err(last_error)
}

/// Redis's start-up warning when the kernel will not give the backlog asked for.
pub fn warn_if_capped(backlog: i64) {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|text| text.trim().parse::<i64>().ok());
    if let Some(limit) = somaxconn.filter(|&limit| limit < backlog) {
        crate::log::warning!(
            "WARNING: The TCP backlog setting of {backlog} cannot be enforced because \
             /proc/sys/net/core/somaxconn is set to the lower value of {limit}."
        );
    }
}

/// `tcp-keepalive`: with N > 0, probes after N idle seconds, then every N/3 seconds, and
/// gives up after 3 unanswered ones, as Redis's `anetKeepAlive` does. Best effort.
pub fn keepalive(stream: &TcpStream, seconds: u64) {
    if seconds == 0 {
        return;
    }
    use rustix::net::sockopt;
    let _ = sockopt::set_socket_keepalive(stream, true);
    let _ = sockopt::set_tcp_keepidle(stream, Duration::from_secs(seconds));
    let _ = sockopt::set_tcp_keepintvl(stream, Duration::from_secs((seconds / 3).max(1)));
    let _ = sockopt::set_tcp_keepcnt(stream, 3);
}
