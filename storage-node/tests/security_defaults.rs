//! Redis 7.0's security defaults, compared byte for byte with a real redis-server: DEBUG is
//! refused unless `enable-debug-command` allows it (fixed at startup), and protected mode
//! turns away clients that are not on loopback while no password is set.
//!
//! The "remote" client connects from 127.0.0.2: Redis counts only 127.0.0.1 and ::1 as
//! local, so that source is non-local to both servers, and it exists on every Linux
//! machine. Where the machine also has a global IPv4 address, protected mode is checked
//! from that address too, with both servers bound to it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use slotproxy::resp::Frame;
use test_harness::{show, Differential, RawClient, ServerProcess};

const NON_LOCAL_LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// A client connected from `source` to `target:port` (std cannot bind before connecting;
/// tokio's socket can, and hands the connection back as a blocking std stream).
fn connect_from(source: IpAddr, target: IpAddr, port: u16) -> RawClient {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("runtime");
    let stream = runtime.block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(SocketAddr::new(source, 0))?;
        let stream = socket.connect(SocketAddr::new(target, port)).await?;
        let stream = stream.into_std()?;
        stream.set_nonblocking(false)?;
        Ok::<_, std::io::Error>(stream)
    });
    let stream = stream.unwrap_or_else(|e| panic!("connect {source} -> {target}:{port}: {e}"));
    RawClient::from_stream(stream)
}

/// The first global IPv4 address of this machine, if it has one (`ip -4 -o addr`).
fn global_ipv4() -> Option<IpAddr> {
    let out = std::process::Command::new("ip")
        .args(["-4", "-o", "addr", "show", "scope", "global"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .skip_while(|word| *word != "inet")
        .nth(1)
        .and_then(|cidr| cidr.split('/').next())
        .and_then(|ip| ip.parse().ok())
}

/// What a client gets from `source` before the server closes the connection: the replies'
/// bytes, and whether the connection was closed without a request being sent.
fn greeting_then_close(source: IpAddr, target: IpAddr, port: u16) -> (Vec<u8>, bool) {
    let mut client = connect_from(source, target, port);
    let mut bytes = Vec::new();
    // Bounded: one DENIED line is expected, then the end of the connection.
    for _ in 0..4 {
        match client.try_read_reply() {
            Some((_, raw)) => bytes.extend_from_slice(&raw),
            None => return (bytes, true),
        }
    }
    (bytes, false)
}

fn info_field(client: &mut RawClient, section: &str, field: &str) -> String {
    let Frame::Bulk(text) = client.call(&["INFO", section]) else {
        panic!("INFO {section} is not a bulk string");
    };
    let text = String::from_utf8_lossy(&text).into_owned();
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in INFO {section}"))
        .to_string()
}

#[test]
fn debug_is_refused_by_default() {
    let mut d = Differential::start();
    d.check_all(&[
        &["DEBUG", "SLEEP", "0"],
        &["DEBUG", "HELP"],
        &["debug", "set-active-expire", "0"],
        &["DEBUG", "OBJECT", "nokey"],
        &["DEBUG", "NOSUCH"],
        // Arity is checked before the protection.
        &["DEBUG"],
        &["CONFIG", "GET", "enable-debug-command"],
        // Fixed at startup: a client cannot switch it on.
        &["CONFIG", "SET", "enable-debug-command", "yes"],
        &["CONFIG", "GET", "enable-debug-command"],
        &["CONFIG", "GET", "protected-mode"],
        // Refused before MULTI queues it, so EXEC aborts.
        &["MULTI"],
        &["SET", "k", "v"],
        &["DEBUG", "SLEEP", "0"],
        &["EXEC"],
        &["EXISTS", "k"],
    ]);
    let node = d.node_client.call_raw(&[b"DEBUG", b"SLEEP", b"0"]);
    assert!(
        show(&node).starts_with("-ERR DEBUG command not allowed."),
        "{}",
        show(&node)
    );
}

#[test]
fn debug_is_refused_before_authentication() {
    let auth = ["--requirepass", "pw"];
    let mut d = Differential::start_with(&auth, &auth);
    d.check_all(&[
        &["DEBUG", "SLEEP", "0"],
        &["GET", "k"],
        &["AUTH", "pw"],
        &["DEBUG", "SLEEP", "0"],
    ]);
}

#[test]
fn debug_yes_allows_every_client_and_local_only_loopback() {
    let yes = ["--enable-debug-command", "yes", "--protected-mode", "no"];
    let mut d = Differential::start_with(&yes, &yes);
    d.check_bytes(&[b"CONFIG", b"GET", b"enable-debug-command"]);
    d.check(&["DEBUG", "SLEEP", "0"]);
    assert_eq!(
        show(&d.node_client.call_raw(&[b"DEBUG", b"SLEEP", b"0"])),
        "+OK\\r\\n"
    );
    let mut remote_node = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.node.port);
    assert_eq!(
        show(&remote_node.call_raw(&[b"DEBUG", b"SLEEP", b"0"])),
        "+OK\\r\\n"
    );

    let local = ["--enable-debug-command", "local", "--protected-mode", "no"];
    let mut d = Differential::start_with(&local, &local);
    d.check_bytes(&[b"CONFIG", b"GET", b"enable-debug-command"]);
    d.check(&["DEBUG", "SLEEP", "0"]);
    let node = d.node_client.call_raw(&[b"DEBUG", b"SLEEP", b"0"]);
    assert_eq!(show(&node), "+OK\\r\\n", "a loopback client may");
    let mut remote_node = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.node.port);
    let mut remote_redis = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.redis.port);
    for command in [
        &[&b"DEBUG"[..], b"SLEEP", b"0"][..],
        &[b"PING"],
        &[b"CLIENT", b"SETNAME", b"remote"],
    ] {
        let node = remote_node.call_raw(command);
        let redis = remote_redis.call_raw(command);
        assert_eq!(show(&node), show(&redis), "from 127.0.0.2: {command:?}");
    }
}

#[test]
fn protected_mode_turns_away_remote_clients() {
    let mut d = Differential::start();
    let (node, node_closed) = greeting_then_close(NON_LOCAL_LOOPBACK, LOOPBACK, d.node.port);
    let (redis, redis_closed) = greeting_then_close(NON_LOCAL_LOOPBACK, LOOPBACK, d.redis.port);
    assert_eq!(show(&node), show(&redis));
    assert!(show(&node).starts_with("-DENIED Redis is running in protected mode"));
    assert!(node_closed && redis_closed, "the connection must be closed");
    assert_eq!(
        info_field(&mut d.node_client, "stats", "rejected_connections"),
        "1"
    );
    assert_eq!(
        info_field(&mut d.redis_client, "stats", "rejected_connections"),
        "1"
    );
    // Loopback clients are served as before.
    d.check_bytes(&[b"PING"]);

    // A password for the default user lifts the protection: the client is asked for it.
    d.check_bytes(&[b"CONFIG", b"SET", b"requirepass", b"pw"]);
    let mut remote_node = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.node.port);
    let mut remote_redis = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.redis.port);
    let node = remote_node.call_raw(&[b"PING"]);
    assert_eq!(show(&node), show(&remote_redis.call_raw(&[b"PING"])));
    assert_eq!(show(&node), "-NOAUTH Authentication required.\\r\\n");

    // So does switching protected mode off (CONFIG SET may).
    for command in [
        &[&b"AUTH"[..], b"pw"][..],
        &[b"CONFIG", b"SET", b"requirepass", b""],
        &[b"CONFIG", b"SET", b"protected-mode", b"no"],
        &[b"CONFIG", b"GET", b"protected-mode"],
    ] {
        d.check_bytes(command);
    }
    let mut remote_node = connect_from(NON_LOCAL_LOOPBACK, LOOPBACK, d.node.port);
    assert_eq!(show(&remote_node.call_raw(&[b"PING"])), "+PONG\\r\\n");
}

#[test]
fn protected_mode_applies_whatever_the_bind_address() {
    let Some(global) = global_ipv4() else {
        eprintln!("no global IPv4 address on this machine: only 127.0.0.2 was checked");
        return;
    };
    let bind = format!("127.0.0.1 {global}");
    let node = ServerProcess::storage_node(&["--bind", "127.0.0.1", &global.to_string()]);
    let redis = ServerProcess::redis_server(&["--bind", &bind]);
    let (node_reply, node_closed) = greeting_then_close(global, global, node.port);
    let (redis_reply, redis_closed) = greeting_then_close(global, global, redis.port);
    assert_eq!(show(&node_reply), show(&redis_reply));
    assert!(show(&node_reply).starts_with("-DENIED"));
    assert!(node_closed && redis_closed);
}
