//! A server the sessions run against (the reference redis-server, or the proxy), its
//! clients, and how one step runs on it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use test_harness::{blocked_clients, RawClient};

use super::script::Step;

/// What a reply reads as when the server closed the connection instead.
pub const CLOSED: &[u8] = b"(closed)";

/// One server the sessions run against, with the session's clients.
pub struct Target {
    port: u16,
    /// Where blocked clients show: the server itself, or the nodes behind the proxy.
    servers: Vec<u16>,
    mode: Mode,
    clients: BTreeMap<usize, RawClient>,
}

/// How a session is run: the protocol, and whether commands are written one byte at a
/// time (every request then reaches the proxy split at every byte).
#[derive(Clone, Copy)]
pub struct Mode {
    pub resp3: bool,
    pub trickle: bool,
}

pub const MODES: [Mode; 3] = [
    Mode {
        resp3: false,
        trickle: false,
    },
    Mode {
        resp3: true,
        trickle: false,
    },
    Mode {
        resp3: false,
        trickle: true,
    },
];

impl Mode {
    pub fn label(self) -> &'static str {
        match (self.resp3, self.trickle) {
            (false, false) => "RESP2",
            (true, false) => "RESP3",
            (false, true) => "RESP2, one byte per write",
            (true, true) => "RESP3, one byte per write",
        }
    }
}

impl Target {
    pub fn new(port: u16, servers: Vec<u16>) -> Target {
        Target {
            port,
            servers,
            mode: MODES[0],
            clients: BTreeMap::new(),
        }
    }

    /// Fresh clients and an empty data set for the next session.
    pub fn start_session(&mut self, mode: Mode) {
        self.clients.clear();
        self.mode = mode;
        let mut admin = RawClient::connect(self.port);
        assert_eq!(admin.call_raw(&[b"FLUSHALL"]), b"+OK\r\n", "FLUSHALL");
        assert_eq!(
            admin.call_raw(&[b"SCRIPT", b"FLUSH"]),
            b"+OK\r\n",
            "SCRIPT FLUSH"
        );
    }

    fn client(&mut self, n: usize) -> &mut RawClient {
        let (port, resp3) = (self.port, self.mode.resp3);
        self.clients.entry(n).or_insert_with(|| {
            let mut client = RawClient::connect(port);
            if resp3 {
                client.call_raw(&[b"HELLO", b"3"]);
            }
            client
        })
    }

    /// Runs one step; its raw replies in order.
    pub fn run(&mut self, step: &Step) -> Vec<Vec<u8>> {
        match step {
            Step::Send {
                client, commands, ..
            } => {
                let mut bytes = Vec::new();
                for args in commands {
                    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
                    bytes.extend_from_slice(&RawClient::encode(&args));
                }
                let trickle = self.mode.trickle;
                let connection = self.client(*client);
                let sent = if trickle {
                    bytes
                        .iter()
                        .try_for_each(|byte| connection.try_send_raw(std::slice::from_ref(byte)))
                } else {
                    connection.try_send_raw(&bytes)
                };
                if sent.is_err() {
                    // Closed by the server (after QUIT, say): as if read, then connect anew.
                    self.clients.remove(client);
                    return commands.iter().map(|_| CLOSED.to_vec()).collect();
                }
                commands.iter().map(|_| self.read(*client)).collect()
            }
            Step::SendOnly { client, command } => {
                let args: Vec<&[u8]> = command.iter().map(Vec::as_slice).collect();
                self.client(*client).send(&args);
                Vec::new()
            }
            Step::Raw { client, bytes } => {
                self.client(*client).send_raw(bytes);
                Vec::new()
            }
            Step::Read { client } => vec![self.read(*client)],
            Step::Blocked(count) => {
                self.wait_blocked(*count);
                Vec::new()
            }
        }
    }

    /// Polls (bounded) until the servers report `count` blocked clients in all.
    fn wait_blocked(&self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut admins: Vec<RawClient> = self
            .servers
            .iter()
            .map(|&p| RawClient::connect(p))
            .collect();
        loop {
            let blocked: usize = admins.iter_mut().map(blocked_clients).sum();
            if blocked == count {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{blocked} clients blocked, never {count}"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// One reply of client `n`; a connection the server closed reads as `(closed)`, and
    /// the client's next step connects anew.
    fn read(&mut self, n: usize) -> Vec<u8> {
        match self.client(n).try_read_reply() {
            Some((_, raw)) => raw,
            None => {
                self.clients.remove(&n);
                CLOSED.to_vec()
            }
        }
    }
}
