//! `supervised`: tells the service manager that the node serves, as Redis does.
//!
//! `systemd` sends `READY=1` (and a status line) to the datagram socket in `$NOTIFY_SOCKET`
//! (a path, or `@name` for the abstract namespace), for units of `Type=notify` such as
//! Debian's redis-server.service. `upstart` stops the process with SIGSTOP, which upstart's
//! `expect stop` waits for and then continues. `auto` picks by `$NOTIFY_SOCKET` /
//! `$UPSTART_JOB`; `no` does nothing. A supervised node does not daemonize.

use std::os::unix::net::UnixDatagram;

use crate::log;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Supervisor {
    Systemd,
    Upstart,
}

fn supervisor(mode: &str) -> Option<Supervisor> {
    match mode {
        "systemd" => Some(Supervisor::Systemd),
        "upstart" => Some(Supervisor::Upstart),
        "auto" if std::env::var_os("NOTIFY_SOCKET").is_some() => Some(Supervisor::Systemd),
        "auto" if std::env::var_os("UPSTART_JOB").is_some() => Some(Supervisor::Upstart),
        _ => None,
    }
}

/// Whether a service manager supervises the node (then `daemonize` is ignored, as in Redis).
pub fn is_supervised(mode: &str) -> bool {
    supervisor(mode).is_some()
}

/// Tells the supervisor, if any, that the node is ready.
pub fn notify_ready(mode: &str) {
    match supervisor(mode) {
        Some(Supervisor::Systemd) => notify_systemd(),
        Some(Supervisor::Upstart) => {
            log::notice!("supervised by upstart, will stop to signal readiness.");
            let _ = rustix::process::kill_process(
                rustix::process::getpid(),
                rustix::process::Signal::STOP,
            );
        }
        None => {}
    }
}

fn notify_systemd() {
    let Some(target) = std::env::var_os("NOTIFY_SOCKET") else {
        log::warning!("systemd supervision requested, but NOTIFY_SOCKET not found");
        return;
    };
    let target = target.to_string_lossy().into_owned();
    let message = b"STATUS=Ready to accept connections\nREADY=1\n";
    let sent = UnixDatagram::unbound().and_then(|socket| match target.strip_prefix('@') {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            let address = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
            socket.send_to_addr(message, &address)
        }
        None => socket.send_to(message, &target),
    });
    match sent {
        Ok(_) => log::notice!("supervised by systemd. Please make sure you set appropriate values for TimeoutStartSec and TimeoutStopSec in your service unit."),
        Err(e) => log::warning!("cannot notify systemd at {target}: {e}"),
    }
}
