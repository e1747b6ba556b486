//! `INFO replication` and ROLE: what this node is in replication, in Redis 7.0's order
//! and formats.
//!
//! ```text
//! role:master|slave
//! (a replica: master_host ... replica_announced, from `replica::info_fields`)
//! connected_slaves:<n>
//! [min_slaves_good_slaves:<n>]        when min-replicas-to-write and -max-lag are set
//! slave<i>:ip=<ip>,port=<port>,state=wait_bgsave|send_bulk|online,offset=<ack>,lag=<s>
//! master_failover_state, master_replid, master_replid2, master_repl_offset,
//! second_repl_offset, repl_backlog_active, repl_backlog_size,
//! repl_backlog_first_byte_offset, repl_backlog_histlen
//! ```
//!
//! ROLE on a master: `["master", <offset>, [[ip, port, ack-offset], ...]]` listing the
//! online replicas (ports and offsets as bulk strings, as Redis sends them).

use std::fmt::Write as _;

use slotproxy::resp::ReplyBuf;

use super::master::Phase;
use super::replica;
use crate::keyspace::unix_time_ms;
use crate::server::Shared;

macro_rules! field {
    ($out:expr, $name:expr, $value:expr) => {
        let _ = write!($out, "{}:{}\r\n", $name, $value);
    };
}

/// The `# Replication` section.
pub fn write(shared: &Shared, out: &mut String) {
    out.push_str("# Replication\r\n");
    if replica::is_replica(shared) {
        field!(out, "role", "slave");
        replica::info_fields(shared, out);
    } else {
        field!(out, "role", "master");
    }
    let master = &shared.replication.master;
    let replicas = master.all();
    field!(out, "connected_slaves", replicas.len());
    let (needed, max_lag, size) = {
        let config = shared.config();
        (
            config.repl.min_replicas_to_write,
            config.repl.min_replicas_max_lag,
            config.repl.backlog_size,
        )
    };
    if needed > 0 && max_lag > 0 {
        field!(out, "min_slaves_good_slaves", master.good_count(max_lag));
    }
    let now = unix_time_ms();
    for (i, r) in replicas.iter().enumerate() {
        let _ = write!(
            out,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip(),
            r.handshake.port,
            r.phase().name(),
            r.ack_offset.load(std::sync::atomic::Ordering::Relaxed),
            r.lag_seconds(now)
        );
    }
    let state = shared.replication.state();
    let failover = shared.replication.failover.phase().name();
    field!(out, "master_failover_state", failover);
    field!(out, "master_replid", state.replid);
    field!(out, "master_replid2", state.replid2);
    field!(out, "master_repl_offset", state.end());
    field!(out, "second_repl_offset", state.second_offset);
    match &state.backlog {
        Some(backlog) => {
            field!(out, "repl_backlog_active", 1);
            field!(out, "repl_backlog_size", backlog.size());
            field!(out, "repl_backlog_first_byte_offset", backlog.start() + 1);
            field!(out, "repl_backlog_histlen", backlog.histlen());
        }
        None => {
            field!(out, "repl_backlog_active", 0);
            field!(out, "repl_backlog_size", size);
            field!(out, "repl_backlog_first_byte_offset", 0);
            field!(out, "repl_backlog_histlen", 0);
        }
    }
}

/// ROLE.
pub fn role(shared: &Shared, out: &mut ReplyBuf<'_>) {
    if replica::is_replica(shared) {
        replica::role_reply(shared, out);
        return;
    }
    let online: Vec<_> = shared
        .replication
        .master
        .all()
        .into_iter()
        .filter(|r| r.phase() == Phase::Online)
        .collect();
    out.array(3);
    out.bulk(b"master");
    out.integer(shared.replication.end() as i64);
    out.array(online.len());
    for r in online {
        out.array(3);
        out.bulk(r.ip().as_bytes());
        out.bulk_integer(i64::from(r.handshake.port));
        out.bulk_integer(r.ack_offset.load(std::sync::atomic::Ordering::Relaxed) as i64);
    }
}
