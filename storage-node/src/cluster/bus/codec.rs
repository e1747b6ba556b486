//! The bus wire format: length-prefixed binary frames.
//!
//! ```text
//! frame  = magic "SNcb" | version u16 | type u16 | body length u32 | body
//! body   = header | type-specific part            (all integers big-endian)
//! header = sender id [40] | current epoch u64 | config epoch u64 | flags u16 | port u16
//!        | bus port u16 | announced ip (u8 length + bytes) | slot bitmap [2048]
//!        | primary id [40] (zeros for a master) | replication offset u64
//! PING, PONG, MEET: gossip count u16, then per entry:
//!        id [40] | ip (u8 length + bytes) | port u16 | bus port u16 | flags u16
//!        | ping sent ms u64 | pong received ms u64
//! FAIL:   failing node id [40]
//! UPDATE: node id [40] | its config epoch u64 | its slot bitmap [2048]
//! PUBLISH: channel length u32 | channel | message length u32 | message
//! AUTH-REQ, AUTH-ACK, MFSTART: nothing after the header (a manual failover's request
//!        carries the FORCEACK flag, a paused master's messages the PAUSED flag)
//! ```
//!
//! Every message carries the full header, so replication and failover messages can be
//! added as new types without touching the existing ones. A frame with a bad magic, an
//! unknown version, an oversized or malformed body ends the connection; a well-formed frame
//! of an unknown type is skipped.

use bytes::{Buf, BufMut, BytesMut};

use crate::cluster::node::NodeId;
use crate::cluster::state::SlotBitmap;

pub const MAGIC: &[u8; 4] = b"SNcb";
pub const VERSION: u16 = 1;
const FRAME_HEADER: usize = 12;
/// No legitimate message comes near this (a PING with 1,000 gossip entries is ~100 KB).
pub const MAX_BODY: usize = 1 << 20;
/// Message types by wire code, named as CLUSTER INFO counts them.
pub const TYPE_NAMES: [&str; 9] = [
    "ping", "pong", "meet", "fail", "update", "publish", "auth-req", "auth-ack", "mfstart",
];

const PING: u16 = 0;
const PONG: u16 = 1;
const MEET: u16 = 2;
const FAIL: u16 = 3;
const UPDATE: u16 = 4;
const PUBLISH: u16 = 5;
const AUTH_REQUEST: u16 = 6;
const AUTH_ACK: u16 = 7;
const MFSTART: u16 = 8;

/// What every message says about its sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub sender: NodeId,
    pub current_epoch: u64,
    pub config_epoch: u64,
    pub flags: u16,
    pub port: u16,
    pub cport: u16,
    /// The address the sender announces; empty means "the address you see me at".
    pub ip: String,
    pub slots: SlotBitmap,
    /// The master a replica follows (none for a master).
    pub primary: Option<NodeId>,
    pub repl_offset: u64,
}

/// One gossip entry: what the sender knows about another node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gossip {
    pub id: NodeId,
    pub ip: String,
    pub port: u16,
    pub cport: u16,
    pub flags: u16,
    pub ping_sent_ms: u64,
    pub pong_received_ms: u64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Ping(Vec<Gossip>),
    Pong(Vec<Gossip>),
    Meet(Vec<Gossip>),
    Fail(NodeId),
    Update {
        node: NodeId,
        config_epoch: u64,
        slots: Box<SlotBitmap>,
    },
    /// A PUBLISH on the sender, for this node's subscribers (Redis Cluster broadcasts
    /// channel messages to every node).
    Publish {
        channel: Vec<u8>,
        message: Vec<u8>,
    },
    /// A replica asks for a vote in its election (Redis's FAILOVER_AUTH_REQUEST).
    AuthRequest,
    /// A master's vote (FAILOVER_AUTH_ACK).
    AuthAck,
    /// A replica asks its master to start a manual failover (pause and send its offset).
    MfStart,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub header: Header,
    pub body: Body,
}

impl Message {
    /// The wire type code (also the index into [`TYPE_NAMES`]).
    pub fn type_code(&self) -> u16 {
        match self.body {
            Body::Ping(_) => PING,
            Body::Pong(_) => PONG,
            Body::Meet(_) => MEET,
            Body::Fail(_) => FAIL,
            Body::Update { .. } => UPDATE,
            Body::Publish { .. } => PUBLISH,
            Body::AuthRequest => AUTH_REQUEST,
            Body::AuthAck => AUTH_ACK,
            Body::MfStart => MFSTART,
        }
    }
}

/// Why a connection must be closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    BadMagic,
    BadVersion(u16),
    TooLong(usize),
    Malformed(u16),
}

/// What one complete frame held.
#[derive(Debug)]
pub enum Decoded {
    Message(Box<Message>),
    /// A well-formed frame of a type this node does not know (a newer peer): skipped.
    UnknownType(u16),
}

fn put_ip(out: &mut Vec<u8>, ip: &str) {
    let bytes = &ip.as_bytes()[..ip.len().min(255)];
    out.put_u8(bytes.len() as u8);
    out.put_slice(bytes);
}

fn put_header(out: &mut Vec<u8>, h: &Header) {
    out.put_slice(h.sender.as_bytes());
    out.put_u64(h.current_epoch);
    out.put_u64(h.config_epoch);
    out.put_u16(h.flags);
    out.put_u16(h.port);
    out.put_u16(h.cport);
    put_ip(out, &h.ip);
    out.put_slice(&h.slots);
    match &h.primary {
        Some(id) => out.put_slice(id.as_bytes()),
        None => out.put_slice(&[0u8; 40]),
    }
    out.put_u64(h.repl_offset);
}

fn put_gossip(out: &mut Vec<u8>, entries: &[Gossip]) {
    out.put_u16(entries.len().min(u16::MAX as usize) as u16);
    for g in entries.iter().take(u16::MAX as usize) {
        out.put_slice(g.id.as_bytes());
        put_ip(out, &g.ip);
        out.put_u16(g.port);
        out.put_u16(g.cport);
        out.put_u16(g.flags);
        out.put_u64(g.ping_sent_ms);
        out.put_u64(g.pong_received_ms);
    }
}

/// The frame bytes of a message.
pub fn encode(message: &Message) -> Vec<u8> {
    let mut body = Vec::with_capacity(2300);
    put_header(&mut body, &message.header);
    match &message.body {
        Body::Ping(g) | Body::Pong(g) | Body::Meet(g) => put_gossip(&mut body, g),
        Body::Fail(node) => body.put_slice(node.as_bytes()),
        Body::Update {
            node,
            config_epoch,
            slots,
        } => {
            body.put_slice(node.as_bytes());
            body.put_u64(*config_epoch);
            body.put_slice(&slots[..]);
        }
        Body::Publish { channel, message } => {
            for part in [channel, message] {
                body.put_u32(part.len() as u32);
                body.put_slice(part);
            }
        }
        Body::AuthRequest | Body::AuthAck | Body::MfStart => {}
    }
    let mut frame = Vec::with_capacity(FRAME_HEADER + body.len());
    frame.put_slice(MAGIC);
    frame.put_u16(VERSION);
    frame.put_u16(message.type_code());
    frame.put_u32(body.len() as u32);
    frame.extend_from_slice(&body);
    frame
}

/// Reads fields from a body, `None` past its end.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2).map(|mut b| b.get_u16())
    }
    fn u64(&mut self) -> Option<u64> {
        self.take(8).map(|mut b| b.get_u64())
    }
    fn blob(&mut self) -> Option<Vec<u8>> {
        let len = self.take(4).map(|mut b| b.get_u32())? as usize;
        self.take(len).map(<[u8]>::to_vec)
    }
    fn id(&mut self) -> Option<NodeId> {
        NodeId::parse(self.take(40)?)
    }
    fn ip(&mut self) -> Option<String> {
        let len = self.u8()? as usize;
        String::from_utf8(self.take(len)?.to_vec()).ok()
    }
    fn slots(&mut self) -> Option<SlotBitmap> {
        self.take(std::mem::size_of::<SlotBitmap>())?
            .try_into()
            .ok()
    }
    fn header(&mut self) -> Option<Header> {
        Some(Header {
            sender: self.id()?,
            current_epoch: self.u64()?,
            config_epoch: self.u64()?,
            flags: self.u16()?,
            port: self.u16()?,
            cport: self.u16()?,
            ip: self.ip()?,
            slots: self.slots()?,
            primary: {
                let raw = self.take(40)?;
                if raw.iter().all(|&b| b == 0) {
                    None
                } else {
                    Some(NodeId::parse(raw)?)
                }
            },
            repl_offset: self.u64()?,
        })
    }
    fn gossip(&mut self) -> Option<Vec<Gossip>> {
        let count = self.u16()? as usize;
        let mut entries = Vec::with_capacity(count.min(1024));
        for _ in 0..count {
            entries.push(Gossip {
                id: self.id()?,
                ip: self.ip()?,
                port: self.u16()?,
                cport: self.u16()?,
                flags: self.u16()?,
                ping_sent_ms: self.u64()?,
                pong_received_ms: self.u64()?,
            });
        }
        Some(entries)
    }
}

fn decode_body(kind: u16, body: &[u8]) -> Option<Message> {
    let mut r = Reader(body);
    let header = r.header()?;
    let body = match kind {
        PING => Body::Ping(r.gossip()?),
        PONG => Body::Pong(r.gossip()?),
        MEET => Body::Meet(r.gossip()?),
        FAIL => Body::Fail(r.id()?),
        UPDATE => Body::Update {
            node: r.id()?,
            config_epoch: r.u64()?,
            slots: Box::new(r.slots()?),
        },
        PUBLISH => Body::Publish {
            channel: r.blob()?,
            message: r.blob()?,
        },
        AUTH_REQUEST => Body::AuthRequest,
        AUTH_ACK => Body::AuthAck,
        MFSTART => Body::MfStart,
        _ => return None,
    };
    Some(Message { header, body })
}

/// Takes one complete frame off the front of `buf`. `Ok(None)`: more bytes are needed.
/// The frame header is checked as soon as it arrives, so garbage is refused before the
/// node waits for (or buffers) a body that will never make sense.
pub fn decode(buf: &mut BytesMut) -> Result<Option<Decoded>, FrameError> {
    let seen = buf.len().min(MAGIC.len());
    if buf[..seen] != MAGIC[..seen] {
        return Err(FrameError::BadMagic);
    }
    if buf.len() < FRAME_HEADER {
        return Ok(None);
    }
    let version = u16::from_be_bytes([buf[4], buf[5]]);
    if version != VERSION {
        return Err(FrameError::BadVersion(version));
    }
    let kind = u16::from_be_bytes([buf[6], buf[7]]);
    let len = u32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]) as usize;
    if len > MAX_BODY {
        return Err(FrameError::TooLong(len));
    }
    if buf.len() < FRAME_HEADER + len {
        buf.reserve(FRAME_HEADER + len - buf.len());
        return Ok(None);
    }
    let frame = buf.split_to(FRAME_HEADER + len);
    let body = &frame[FRAME_HEADER..];
    if kind as usize >= TYPE_NAMES.len() {
        return Ok(Some(Decoded::UnknownType(kind)));
    }
    match decode_body(kind, body) {
        Some(message) => Ok(Some(Decoded::Message(Box::new(message)))),
        None => Err(FrameError::Malformed(kind)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        let mut slots = [0u8; 2048];
        slots[3] = 0b1010;
        Header {
            sender: NodeId::random(),
            current_epoch: 7,
            config_epoch: 5,
            flags: 2,
            port: 7000,
            cport: 17000,
            ip: "127.0.0.1".into(),
            slots,
            primary: None,
            repl_offset: 0,
        }
    }

    fn round_trip(message: Message) {
        let mut buf = BytesMut::from(&encode(&message)[..]);
        match decode(&mut buf) {
            Ok(Some(Decoded::Message(m))) => assert_eq!(*m, message),
            other => panic!("{other:?}"),
        }
        assert!(buf.is_empty());
    }

    #[test]
    fn every_type_round_trips() {
        let gossip = vec![Gossip {
            id: NodeId::random(),
            ip: "10.0.0.1".into(),
            port: 1,
            cport: 2,
            flags: 3,
            ping_sent_ms: 4,
            pong_received_ms: 5,
        }];
        round_trip(Message {
            header: header(),
            body: Body::Ping(gossip.clone()),
        });
        round_trip(Message {
            header: header(),
            body: Body::Meet(vec![]),
        });
        round_trip(Message {
            header: header(),
            body: Body::Fail(NodeId::random()),
        });
        for body in [Body::AuthRequest, Body::AuthAck, Body::MfStart] {
            round_trip(Message {
                header: header(),
                body,
            });
        }
        round_trip(Message {
            header: header(),
            body: Body::Update {
                node: NodeId::random(),
                config_epoch: 9,
                slots: Box::new([0xff; 2048]),
            },
        });
    }

    #[test]
    fn partial_frames_wait_for_more() {
        let frame = encode(&Message {
            header: header(),
            body: Body::Pong(vec![]),
        });
        for cut in [0, 3, 12, frame.len() - 1] {
            let mut buf = BytesMut::from(&frame[..cut]);
            assert!(matches!(decode(&mut buf), Ok(None)), "cut at {cut}");
        }
    }

    #[test]
    fn garbage_is_refused() {
        let mut buf = BytesMut::from(&b"GET / HTTP/1.1\r\n"[..]);
        assert_eq!(decode(&mut buf).unwrap_err(), FrameError::BadMagic);
        let mut frame = encode(&Message {
            header: header(),
            body: Body::Ping(vec![]),
        });
        frame[5] = 9;
        let mut buf = BytesMut::from(&frame[..]);
        assert_eq!(decode(&mut buf).unwrap_err(), FrameError::BadVersion(9));
        let mut buf = BytesMut::from(&b"SNcb\x00\x01\x00\x00\xff\xff\xff\xff"[..]);
        assert!(matches!(decode(&mut buf), Err(FrameError::TooLong(_))));
        let mut buf = BytesMut::from(&b"SNcb\x00\x01\x00\x00\x00\x00\x00\x02ab"[..]);
        assert_eq!(decode(&mut buf).unwrap_err(), FrameError::Malformed(0));
        let mut buf = BytesMut::from(&b"SNcb\x00\x01\x00\x63\x00\x00\x00\x00"[..]);
        assert!(matches!(
            decode(&mut buf),
            Ok(Some(Decoded::UnknownType(99)))
        ));
    }
}
