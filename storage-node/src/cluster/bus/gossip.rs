//! What a node says on the bus and what it makes of what it hears: Redis's
//! `clusterSendPing` and `clusterProcessPacket`: membership, slot claims, the replica
//! relation, failure reports, FAIL, and the election and manual failover messages.

use std::net::IpAddr;

use rand::seq::SliceRandom;

use super::codec::{Body, Gossip, Header, Message};
use crate::cluster::node::{Flags, Node, NodeId};
use crate::cluster::state::ClusterState;

/// Gossip entries per message when the cluster is small enough to mention everyone.
const GOSSIP_ALL_UP_TO: usize = 32;

/// Which connection a message arrived on.
#[derive(Clone, Copy, Debug)]
pub enum Link {
    /// A connection a peer opened to us.
    Inbound,
    /// Our connection to the node we believe has this id.
    Outbound(NodeId),
}

/// Where a message came from.
pub struct Origin {
    pub link: Link,
    /// Our end of the connection (how the peer reaches us).
    pub local_ip: IpAddr,
    /// The peer's end.
    pub peer_ip: IpAddr,
}

/// What processing a message asks the caller to do.
#[derive(Default, Debug)]
pub struct Outcome {
    /// Send back on the same connection.
    pub reply: Option<Message>,
    /// Send to other nodes over their outbound links.
    pub send: Vec<(NodeId, Message)>,
    /// Slots this node lost: their keys must go.
    pub lost_slots: Vec<u16>,
    /// The outbound link's node turned out to have this id (handshake done).
    pub renamed: Option<NodeId>,
    /// Close the connection.
    pub close: bool,
    /// Messages PUBLISHed on a known node, to deliver to local subscribers.
    pub publish: Vec<(Vec<u8>, Vec<u8>)>,
    /// Send to every node (a FAIL this node decided).
    pub broadcast: Vec<Message>,
    /// A vote arrived: the cron should look at the election now.
    pub kick: bool,
    /// This master's replica asked for a manual failover: pause and tell it the offset.
    pub manual_failover_for: Option<NodeId>,
}

/// The header describing this node.
/// A replica announces its master's slots and config epoch, as Redis does.
pub fn header(state: &ClusterState) -> Header {
    let me = state.me();
    let primary = me.master.filter(|_| me.is_replica());
    let serving = primary.and_then(|id| state.nodes.get(&id));
    let mut flags = me.flags.0 & !Flags::MYSELF & !Flags::MESSAGE_ONLY;
    if me.is_master() && state.election.mf_replica.is_some() {
        flags |= Flags::PAUSED;
    }
    Header {
        sender: state.myself,
        current_epoch: state.current_epoch,
        config_epoch: serving.map_or(me.config_epoch, |m| m.config_epoch),
        flags,
        port: me.port,
        cport: me.cport,
        ip: String::new(),
        slots: state.bitmap_of(&primary.unwrap_or(state.myself)),
        primary,
        repl_offset: state.my_repl_offset,
    }
}

fn gossip_entry(node: &Node) -> Gossip {
    Gossip {
        id: node.id,
        ip: node.ip.clone(),
        port: node.port,
        cport: node.cport,
        flags: node.flags.0 & !Flags::MYSELF & !Flags::MESSAGE_ONLY,
        ping_sent_ms: node.ping_sent_ms,
        pong_received_ms: node.pong_received_ms,
    }
}

/// A PING, PONG or MEET with gossip about other nodes: all of them in a small cluster,
/// otherwise a random tenth (at least three), plus every node we suspect is failing.
pub fn ping(state: &ClusterState, kind: fn(Vec<Gossip>) -> Body) -> Message {
    let candidates: Vec<&Node> = state
        .nodes
        .values()
        .filter(|n| !n.is_myself() && !n.in_handshake() && !n.flags.has(Flags::NOADDR))
        .collect();
    let mut chosen: Vec<&Node> = if candidates.len() <= GOSSIP_ALL_UP_TO {
        candidates.clone()
    } else {
        let wanted = (candidates.len() / 10).max(3);
        candidates
            .choose_multiple(&mut rand::thread_rng(), wanted)
            .copied()
            .collect()
    };
    for node in candidates.iter().filter(|n| n.failing()) {
        if !chosen.iter().any(|c| c.id == node.id) {
            chosen.push(node);
        }
    }
    Message {
        header: header(state),
        body: kind(chosen.into_iter().map(gossip_entry).collect()),
    }
}

/// Starts a handshake with a node known only by address (CLUSTER MEET, or gossip about a
/// node we have not met): a placeholder with a random id until its first PONG names it.
/// False if the address is not an IP address or a port is 0.
pub fn start_handshake(
    state: &mut ClusterState,
    ip: &str,
    port: u16,
    cport: u16,
    meet: bool,
    now_ms: u64,
) -> bool {
    let Ok(addr) = ip.parse::<IpAddr>() else {
        return false;
    };
    if port == 0 || cport == 0 {
        return false;
    }
    let ip = addr.to_string();
    let pending = state
        .nodes
        .values()
        .any(|n| n.in_handshake() && n.ip == ip && n.port == port && n.cport == cport);
    if !pending {
        let flags = Flags::HANDSHAKE | if meet { Flags::MEET } else { 0 };
        let id = NodeId::random();
        state
            .nodes
            .insert(id, Node::new(id, &ip, port, cport, flags, now_ms));
    }
    true
}

fn master_bit(flags: u16) -> u16 {
    flags & (Flags::MASTER | Flags::REPLICA | Flags::NOFAILOVER)
}

/// Processes one message. The caller sends what the outcome asks and commits the state.
pub fn process(
    state: &mut ClusterState,
    message: &Message,
    origin: &Origin,
    now_ms: u64,
) -> Outcome {
    let mut outcome = Outcome::default();
    let h = &message.header;
    state.stats.received[message.type_code() as usize] += 1;
    let is_ping = matches!(message.body, Body::Ping(_) | Body::Meet(_));
    let is_meet = matches!(message.body, Body::Meet(_));
    let is_pong = matches!(message.body, Body::Pong(_));
    if let Body::Publish {
        channel,
        message: text,
    } = &message.body
    {
        // Only members may publish to our subscribers.
        let member = state
            .nodes
            .get(&h.sender)
            .is_some_and(|n| !n.in_handshake() && !n.is_myself());
        if member {
            outcome.publish.push((channel.clone(), text.clone()));
        }
        return outcome;
    }

    if is_ping && (is_meet || state.me().ip.is_empty()) {
        let ip = origin.local_ip.to_string();
        if state.me().ip != ip {
            state.me_mut().ip = ip;
            state.needs_save = true;
        }
    }
    let known = |state: &ClusterState| {
        state
            .nodes
            .get(&h.sender)
            .is_some_and(|n| !n.in_handshake() && !n.is_myself())
    };
    if is_meet && !known(state) && h.sender != state.myself {
        let ip = if h.ip.is_empty() {
            origin.peer_ip.to_string()
        } else {
            h.ip.clone()
        };
        let mut node = Node::new(h.sender, &ip, h.port, h.cport, master_bit(h.flags), now_ms);
        node.config_epoch = h.config_epoch;
        state.nodes.insert(h.sender, node);
        state.needs_save = true;
    }
    if is_ping {
        // Unknown senders get their PONG too: that is how they finish a handshake.
        outcome.reply = Some(ping(state, Body::Pong));
    }

    if let Link::Outbound(link_id) = origin.link {
        let Some(link_node) = state.nodes.get(&link_id) else {
            outcome.close = true;
            return outcome;
        };
        if link_node.in_handshake() {
            if known(state) || h.sender == state.myself {
                // We already know that node (or met ourselves): drop the placeholder.
                state.nodes.remove(&link_id);
                outcome.close = true;
                return outcome;
            }
            let Some(mut node) = state.nodes.remove(&link_id) else {
                return outcome;
            };
            node.id = h.sender;
            node.flags = Flags(master_bit(h.flags));
            node.config_epoch = h.config_epoch;
            node.port = h.port;
            node.cport = h.cport;
            state.nodes.insert(h.sender, node);
            state.needs_save = true;
            outcome.renamed = Some(h.sender);
        } else if link_id != h.sender {
            // Someone else answers at that address now: forget the address.
            if let Some(node) = state.nodes.get_mut(&link_id) {
                node.flags.set(Flags::NOADDR, true);
                node.ip.clear();
                node.link_since_ms = None;
            }
            state.needs_save = true;
            outcome.close = true;
            return outcome;
        }
        if is_pong {
            if let Some(node) = state.nodes.get_mut(&h.sender) {
                node.pong_received_ms = now_ms;
                node.ping_sent_ms = 0;
            }
            state.node_answered(&h.sender, now_ms);
        }
    }

    if !known(state) {
        // Only MEET may introduce a node; anything else from a stranger is ignored.
        return outcome;
    }
    let sender = h.sender;
    if let Some(node) = state.nodes.get_mut(&sender) {
        node.data_received_ms = now_ms;
        if matches!(origin.link, Link::Inbound) && node.inbound_since_ms.is_none() {
            node.inbound_since_ms = Some(now_ms);
        }
        // A replica's header carries its master's config epoch, not its own.
        if h.primary.is_none() && h.config_epoch > node.config_epoch {
            node.config_epoch = h.config_epoch;
            state.needs_save = true;
            state.needs_fsync = true;
        }
        node.repl_offset = h.repl_offset;
        let nofailover = h.flags & Flags::NOFAILOVER != 0;
        if node.flags.has(Flags::NOFAILOVER) != nofailover {
            node.flags.set(Flags::NOFAILOVER, nofailover);
            state.needs_save = true;
        }
    }
    if h.current_epoch > state.current_epoch {
        state.current_epoch = h.current_epoch;
        state.needs_save = true;
        state.needs_fsync = true;
    }

    if let Body::Update {
        node,
        config_epoch,
        slots,
    } = &message.body
    {
        let Some(target) = state.nodes.get_mut(node) else {
            return outcome;
        };
        if target.config_epoch >= *config_epoch {
            return outcome;
        }
        target.config_epoch = *config_epoch;
        state.needs_save = true;
        outcome
            .lost_slots
            .extend(state.apply_slot_claim(*node, *config_epoch, slots));
        return outcome;
    }
    match &message.body {
        Body::Fail(failing) => {
            if state
                .nodes
                .get(failing)
                .is_some_and(|n| !n.flags.has(Flags::FAIL))
            {
                crate::log::notice!("FAIL message received from {sender} about {failing}");
            }
            state.mark_failed(failing, now_ms);
            return outcome;
        }
        Body::AuthRequest => {
            if let Some(vote) = state.vote_request(message, now_ms) {
                outcome.send.push((sender, vote));
            }
            return outcome;
        }
        Body::AuthAck => {
            state.count_vote(message);
            outcome.kick = true;
            return outcome;
        }
        Body::MfStart => {
            let mine = state.nodes.get(&sender).and_then(|n| n.master) == Some(state.myself);
            if state.me().is_master() && mine {
                outcome.manual_failover_for = Some(sender);
            }
            return outcome;
        }
        Body::Ping(_) | Body::Pong(_) | Body::Meet(_) => {}
        _ => return outcome,
    }

    // The role first (Redis: before the slots, so a former master's claims are gone).
    match h.primary {
        None if h.flags & Flags::MASTER != 0 => state.set_node_as_master(&sender),
        Some(primary) => state.set_node_as_replica(&sender, primary),
        None => {}
    }
    // A manual failover: the paused master's offset is the one to reach.
    let e = &state.election;
    if h.flags & Flags::PAUSED != 0
        && state.me().is_replica()
        && state.me().master == Some(sender)
        && e.mf_end_ms != 0
        && e.mf_master_offset.is_none()
    {
        state.election.mf_master_offset = Some(h.repl_offset);
    }
    let sender_is_master = state.nodes.get(&sender).is_some_and(Node::is_master);
    let sender_master = if sender_is_master {
        Some(sender)
    } else {
        state.nodes.get(&sender).and_then(|n| n.master)
    };
    if let Some(serving) = sender_master {
        if state.bitmap_of(&serving) != h.slots {
            if sender_is_master {
                outcome
                    .lost_slots
                    .extend(state.apply_slot_claim(sender, h.config_epoch, &h.slots));
            }
            // The sender may claim slots a newer owner has: tell it (UPDATE).
            if let Some(update) = stale_claim(state, h) {
                outcome.send.push((sender, update));
            }
        }
    }
    if sender_is_master && h.config_epoch == state.me().config_epoch {
        state.handle_epoch_collision(&sender);
    }
    if let Body::Ping(entries) | Body::Pong(entries) | Body::Meet(entries) = &message.body {
        if let Some(fail) = process_gossip(state, sender, entries, now_ms) {
            outcome.broadcast.push(fail);
        }
    }
    outcome
}

/// An UPDATE for the first slot the sender claims that a node with a newer config epoch
/// owns.
fn stale_claim(state: &ClusterState, h: &Header) -> Option<Message> {
    let claims = |&(first, last): &(u16, u16)| {
        (first..=last).any(|slot| h.slots[slot as usize / 8] & (1 << (slot % 8)) != 0)
    };
    let (newer, _) = state
        .all_ranges()
        .iter()
        .filter(|(id, _)| **id != h.sender)
        .filter_map(|(id, ranges)| state.nodes.get(id).map(|node| (node, ranges)))
        .filter(|(node, _)| node.config_epoch > h.config_epoch)
        .find(|(_, ranges)| ranges.iter().any(claims))?;
    Some(Message {
        header: header(state),
        body: Body::Update {
            node: newer.id,
            config_epoch: newer.config_epoch,
            slots: Box::new(state.bitmap_of(&newer.id)),
        },
    })
}

/// Gossip about other nodes. A master's word on who is failing is a failure report;
/// returns the FAIL message to broadcast when the reports made this node decide one.
fn process_gossip(
    state: &mut ClusterState,
    sender: NodeId,
    entries: &[Gossip],
    now_ms: u64,
) -> Option<Message> {
    let mut failed = None;
    let sender_is_master = state.nodes.get(&sender).is_some_and(Node::is_master);
    for g in entries {
        if g.id == state.myself {
            continue;
        }
        let healthy = g.flags & (Flags::PFAIL | Flags::FAIL) == 0;
        let known = state.nodes.get(&g.id).is_some_and(|n| !n.in_handshake());
        if known && sender_is_master {
            if healthy {
                state.remove_failure_report(&g.id, &sender);
            } else {
                if state.add_failure_report(&g.id, sender, now_ms) {
                    crate::log::verbose!("Node {sender} reported node {} as not reachable.", g.id);
                }
                if state.mark_failing_if_needed(&g.id, now_ms) {
                    failed = Some(Message {
                        header: header(state),
                        body: Body::Fail(g.id),
                    });
                }
            }
        }
        match state.nodes.get_mut(&g.id) {
            Some(node) if node.in_handshake() => {}
            Some(node) => {
                if healthy
                    && node.fail_reports.is_empty()
                    && node.ping_sent_ms == 0
                    && g.pong_received_ms > node.pong_received_ms
                    && g.pong_received_ms <= now_ms + 500
                {
                    node.pong_received_ms = g.pong_received_ms;
                }
                // A node we cannot reach may have moved: take the address others use.
                let moved = node.ip != g.ip || node.port != g.port || node.cport != g.cport;
                if moved
                    && node.link_since_ms.is_none()
                    && g.flags & Flags::NOADDR == 0
                    && !g.ip.is_empty()
                {
                    node.ip = g.ip.clone();
                    node.port = g.port;
                    node.cport = g.cport;
                    node.flags.set(Flags::NOADDR, false);
                    state.needs_save = true;
                }
            }
            None => {
                if g.flags & (Flags::NOADDR | Flags::HANDSHAKE) == 0
                    && !g.ip.is_empty()
                    && !state.blacklisted(&g.id, now_ms)
                {
                    start_handshake(state, &g.ip, g.port, g.cport, false, now_ms);
                }
            }
        }
    }
    failed
}
