//! Makes this node's replication follow its place in the cluster: a replica in the node
//! table replicates its master's address (through `crate::replication::replica`, the same
//! code REPLICAOF uses), a master replicates nothing. The bus cron calls [`reconcile`]
//! after every change (an election won, a master that lost its slots, a restart with a
//! nodes file that says "replica"), CLUSTER REPLICATE and FAILOVER call it at once.

use crate::keyspace::Keyspace;
use crate::replication::replica;
use crate::server::Shared;

/// What the node table wants of the replication.
#[derive(Debug, PartialEq, Eq)]
enum Wanted {
    Follow(String, u16),
    Master,
    /// A replica whose master's address is not known yet: leave things as they are.
    Unknown,
}

fn wanted(shared: &Shared) -> Wanted {
    let Some(cluster) = shared.cluster.as_deref() else {
        return Wanted::Unknown;
    };
    let state = cluster.lock();
    let me = state.me();
    if me.is_master() {
        return Wanted::Master;
    }
    match me.master.and_then(|id| state.nodes.get(&id)) {
        Some(master) if !master.ip.is_empty() && master.port != 0 => {
            Wanted::Follow(master.ip.clone(), master.port)
        }
        _ => Wanted::Unknown,
    }
}

fn in_line(shared: &Shared, wanted: &Wanted) -> bool {
    match wanted {
        Wanted::Follow(ip, port) => replica::master(shared).as_ref() == Some(&(ip.clone(), *port)),
        Wanted::Master => !replica::is_replica(shared),
        Wanted::Unknown => true,
    }
}

/// Brings the replication in line with the node table. Called with the keyspace locked
/// (`keyspace`) by commands; the cron passes `None` and it is locked here if anything
/// must change.
pub fn reconcile(shared: &Shared, keyspace: Option<&mut Keyspace>) {
    if in_line(shared, &wanted(shared)) {
        return;
    }
    let Ok(server) = shared.scripting.server() else {
        return;
    };
    let mut guard;
    let keyspace = match keyspace {
        Some(keyspace) => keyspace,
        None => {
            guard = shared.lock_keyspace();
            &mut *guard
        }
    };
    // Again under the keyspace lock: a command may have changed things meanwhile.
    let wanted = wanted(shared);
    if in_line(shared, &wanted) {
        return;
    }
    match wanted {
        Wanted::Follow(ip, port) => {
            crate::log::notice!("Cluster: replicating {ip}:{port}");
            replica::replicate_from(&server, keyspace, ip, port);
        }
        Wanted::Master => {
            if replica::promote(shared, keyspace) {
                crate::log::notice!("Cluster: this node is a master now");
            }
        }
        Wanted::Unknown => {}
    }
}
