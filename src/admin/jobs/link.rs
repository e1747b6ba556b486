//! The job's own connections to the nodes: one dedicated backend connection per node,
//! opened on the control runtime and kept for the whole job.
//!
//! Jobs never use the shared, multiplexed client connections: a MIGRATE can block a node for
//! a while, and its reply must not queue behind (or in front of) client traffic. Commands can
//! be pipelined (several requests in one write, replies read in order), which is what makes a
//! slot move cost few round trips.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::backend::dedicated::DedicatedLimit;
use bytes::BytesMut;

use crate::backend::dedicated::Dedicated;
use crate::resp::{encode_request, parse_frame, Frame, Proto};

/// One command as its arguments.
pub type Command = Vec<Vec<u8>>;

/// Builds a command from anything string-like.
pub fn cmd<A: AsRef<[u8]>>(args: &[A]) -> Command {
    args.iter().map(|a| a.as_ref().to_vec()).collect()
}

/// The text of an error frame (empty for other frames).
pub fn error_text(frame: &Frame) -> String {
    match frame {
        Frame::Error(e) | Frame::BlobError(e) => String::from_utf8_lossy(e).into_owned(),
        _ => String::new(),
    }
}

/// A job's connection to one node.
pub struct Link {
    pub addr: String,
    conn: Dedicated,
    timeout: Duration,
}

impl Link {
    pub async fn open(
        addr: &str,
        permits: &Arc<DedicatedLimit>,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Result<Link, String> {
        let conn = Dedicated::open(addr, Proto::Resp2, permits, connect_timeout)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Link {
            addr: addr.to_string(),
            conn,
            timeout,
        })
    }

    /// Sends every command in one write and returns their replies in order. A reply that is
    /// an error is returned as an error frame; only transport failures are `Err`.
    pub async fn pipeline(&mut self, commands: &[Command]) -> Result<Vec<Frame>, String> {
        let mut out = BytesMut::new();
        for command in commands {
            encode_request(&mut out, command);
        }
        let addr = self.addr.clone();
        let work = async {
            self.conn.send(&out).await.map_err(|e| e.to_string())?;
            let mut replies = Vec::with_capacity(commands.len());
            for _ in commands {
                let raw = self.conn.read_reply().await.map_err(|e| e.to_string())?;
                match parse_frame(&raw) {
                    Ok(Some((frame, _))) => replies.push(frame),
                    _ => return Err(format!("{addr} sent an unreadable reply")),
                }
            }
            Ok(replies)
        };
        tokio::time::timeout(self.timeout, work)
            .await
            .map_err(|_| format!("{} did not answer within {:?}", self.addr, self.timeout))?
    }

    /// One command; its reply (possibly an error frame).
    pub async fn call(&mut self, command: Command) -> Result<Frame, String> {
        let mut replies = self.pipeline(std::slice::from_ref(&command)).await?;
        replies
            .pop()
            .ok_or_else(|| format!("{} sent no reply", self.addr))
    }
}

/// A reply, or the failure an error reply means (naming the node and the command).
pub fn checked(addr: &str, command: &Command, frame: Frame) -> Result<Frame, String> {
    if frame.is_error() {
        let shown: Vec<String> = command
            .iter()
            .take(4)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        return Err(format!(
            "{addr} answered '{}' to {}",
            error_text(&frame),
            shown.join(" ")
        ));
    }
    Ok(frame)
}

/// The job's links, by node address, opened on first use. A link that failed is dropped and
/// reopened next time, so one broken connection does not poison the job.
pub struct Links {
    links: HashMap<String, Link>,
    permits: Arc<DedicatedLimit>,
    connect_timeout: Duration,
    timeout: Duration,
}

impl Links {
    pub fn new(
        permits: Arc<DedicatedLimit>,
        connect_timeout: Duration,
        timeout: Duration,
    ) -> Links {
        Links {
            links: HashMap::new(),
            permits,
            connect_timeout,
            timeout,
        }
    }

    /// Takes the link to `addr` out of the set (opening it if needed); give it back with
    /// [`put`](Self::put) when it worked.
    pub async fn take(&mut self, addr: &str) -> Result<Link, String> {
        match self.links.remove(addr) {
            Some(link) => Ok(link),
            None => Link::open(addr, &self.permits, self.connect_timeout, self.timeout).await,
        }
    }

    pub fn put(&mut self, link: Link) {
        self.links.insert(link.addr.clone(), link);
    }

    /// Pipelines commands to one node.
    pub async fn pipeline(
        &mut self,
        addr: &str,
        commands: &[Command],
    ) -> Result<Vec<Frame>, String> {
        let mut link = self.take(addr).await?;
        let replies = link.pipeline(commands).await?;
        self.put(link);
        Ok(replies)
    }

    pub async fn call(&mut self, addr: &str, command: Command) -> Result<Frame, String> {
        let mut link = self.take(addr).await?;
        let reply = link.call(command).await?;
        self.put(link);
        Ok(reply)
    }

    /// One command whose error reply is a failure too.
    pub async fn ok(&mut self, addr: &str, command: Command) -> Result<Frame, String> {
        let frame = self.call(addr, command.clone()).await?;
        checked(addr, &command, frame)
    }

    /// Pipelines commands to one node; any error reply is a failure.
    pub async fn pipeline_ok(&mut self, addr: &str, commands: &[Command]) -> Result<(), String> {
        let replies = self.pipeline(addr, commands).await?;
        for (command, reply) in commands.iter().zip(replies) {
            checked(addr, command, reply)?;
        }
        Ok(())
    }

    /// The same pipelined commands on several nodes at once; the first failure is returned
    /// after all have answered.
    pub async fn ok_on_all(
        &mut self,
        addrs: &[String],
        commands: &[Command],
    ) -> Result<(), String> {
        self.ok_on_all_but(addrs, commands, |_| false).await
    }

    /// [`Links::ok_on_all`], except that an error reply for which `expected` holds counts
    /// as success.
    pub async fn ok_on_all_but(
        &mut self,
        addrs: &[String],
        commands: &[Command],
        expected: fn(&Frame) -> bool,
    ) -> Result<(), String> {
        let mut tasks = tokio::task::JoinSet::new();
        for addr in addrs {
            let mut link = self.take(addr).await?;
            let commands = commands.to_vec();
            tasks.spawn(async move {
                match link.pipeline(&commands).await {
                    Ok(replies) => {
                        let answer = commands.iter().zip(replies).try_for_each(|(c, r)| {
                            if r.is_error() && expected(&r) {
                                return Ok(());
                            }
                            checked(&link.addr, c, r).map(|_| ())
                        });
                        (answer, Some(link))
                    }
                    // A link that failed in transport is not reused.
                    Err(e) => (Err(e), None),
                }
            });
        }
        let mut first_error = None;
        while let Some(joined) = tasks.join_next().await {
            let (answer, link) =
                joined.unwrap_or_else(|e| (Err(format!("job task failed: {e}")), None));
            if let Some(link) = link {
                self.put(link);
            }
            if let Err(e) = answer {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
