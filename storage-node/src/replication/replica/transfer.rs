//! A full sync's snapshot: received after `+FULLRESYNC`, then put in place of the data.
//!
//! The master sends it as `$<len>\r\n<len bytes>` (a snapshot written to its disk) or as
//! `$EOF:<40-byte mark>\r\n<bytes><mark>` (diskless, length unknown in advance).
//!
//! With `repl-diskless-load disabled` (and `on-empty-db` while the dataset is not empty)
//! the bytes go to `dir/temp-<unixtime>.<pid>.rdb`, which is fsynced, read, and once it
//! proved a good snapshot renamed over `dbfilename` as in Redis. With `swapdb` (and `on-empty-db` on
//! an empty dataset) they are kept in memory instead: this node reads a snapshot whole
//! before it applies any of it anyway, so the only difference is the disk.
//!
//! Either way the old data stays until the whole snapshot has been read and checked: a
//! bad or cut-off snapshot leaves the node as it was (Redis's `swapdb` promise, kept in
//! every mode). Then, under the keyspace lock, the databases and the function libraries
//! are emptied and the snapshot's put in; keys past their TTL are kept, for the master's
//! DEL to remove.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use super::handshake::Conn;
use super::{Link, State, Transfer};
use crate::config::replica::DisklessLoad;
use crate::keyspace::unix_time_ms;
use crate::server::Shared;

const MARK_LEN: usize = 40;

/// Where the snapshot's bytes go while they arrive.
enum Sink {
    Memory(Vec<u8>),
    File(TempRdb),
}

impl Sink {
    fn write(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Sink::Memory(data) => {
                data.extend_from_slice(bytes);
                Ok(())
            }
            Sink::File(temp) => temp.file.write_all(bytes),
        }
    }
}

/// The file a disk-based sync writes: removed unless it became `dbfilename`, also when
/// the sync is abandoned midway (a newer REPLICAOF drops the task holding it).
struct TempRdb {
    file: File,
    path: PathBuf,
    installed: bool,
}

impl Drop for TempRdb {
    fn drop(&mut self) {
        if !self.installed {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The snapshot's size as announced.
enum Size {
    Len(u64),
    Mark(Vec<u8>),
}

/// Receives the snapshot and replaces the data with it; afterwards the node's history
/// is the master's `replid` at `offset`. An error leaves the data as it was.
pub async fn receive_and_load(
    shared: &Arc<Shared>,
    conn: &mut Conn,
    generation: u64,
    replid: String,
    offset: u64,
) -> io::Result<()> {
    let link = &shared.replication.link;
    // The transfer starts with +FULLRESYNC; the master may take a while to announce the
    // snapshot's size.
    link.set_state(State::Sync);
    link.status().transfer = Some(Transfer {
        total: -1,
        read: 0,
        last_io: Instant::now(),
    });
    let preamble = conn.line().await?;
    let size = parse_preamble(&preamble)?;
    let (mode, dir, dbfilename) = {
        let config = shared.config();
        (
            config.replica.diskless_load,
            config.dir.clone(),
            config.dbfilename.clone(),
        )
    };
    let in_memory = match mode {
        DisklessLoad::Swapdb => true,
        DisklessLoad::OnEmptyDb => {
            let keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
            keyspace.dbs().iter().all(|db| db.is_empty())
        }
        DisklessLoad::Disabled => false,
    };
    let total = match &size {
        Size::Len(len) => Some(*len),
        Size::Mark(_) => None,
    };
    crate::log::notice!(
        "MASTER <-> REPLICA sync: receiving {} from master to {}",
        total.map_or_else(|| "streamed RDB".to_string(), |t| format!("{t} bytes")),
        if in_memory { "memory" } else { "disk" }
    );
    let mut sink = if in_memory {
        Sink::Memory(Vec::with_capacity(total.unwrap_or(0).min(1 << 30) as usize))
    } else {
        let path = dir.join(format!(
            "temp-{}.{}.rdb",
            unix_time_ms() / 1000,
            std::process::id()
        ));
        let file = File::create(&path)?;
        Sink::File(TempRdb {
            file,
            path,
            installed: false,
        })
    };
    read_payload(link, conn, &size, &mut sink).await?;
    let (data, temp) = match sink {
        Sink::Memory(data) => (data, None),
        Sink::File(temp) => {
            temp.file.sync_all()?;
            (std::fs::read(&temp.path)?, Some(temp))
        }
    };
    crate::log::notice!("MASTER <-> REPLICA sync: Loading DB in memory");
    let started = Instant::now();
    let parsing = shared.clone();
    let parsed =
        tokio::task::spawn_blocking(move || crate::persistence::disk::parse(&parsing, &data))
            .await
            .map_err(io::Error::other)?
            .map_err(|e| {
                io::Error::other(format!(
                    "Failed trying to load the MASTER synchronization DB: {e}"
                ))
            })?;
    // A good snapshot becomes the RDB file, as in Redis; a bad one never replaces it.
    if let Some(mut temp) = temp {
        let target = dir.join(&dbfilename);
        crate::persistence::disk::rename_durably(&temp.path, &target, &dir).map_err(|e| {
            io::Error::other(format!(
                "Failed trying to rename the temp DB into {}: {e}",
                target.display()
            ))
        })?;
        temp.installed = true;
    }
    let mut keyspace = crate::scripting::busy::lock_keyspace_patiently(shared).await;
    if !link.current(generation) {
        return Err(io::Error::other(
            "replication was reconfigured during the sync",
        ));
    }
    crate::log::notice!("MASTER <-> REPLICA sync: Flushing old data");
    shared.persistence.background.abort(shared, &mut keyspace);
    keyspace.set_now(unix_time_ms());
    keyspace.flush_all();
    crate::server::clients::lock(&shared.scripting.functions).flush();
    let loaded = crate::persistence::disk::add_loaded(shared, &mut keyspace, parsed, false, false)
        .map_err(|e| {
            io::Error::other(format!(
                "Failed trying to load the MASTER synchronization DB: {e}"
            ))
        })?;
    shared.replication.reset_history(replid, offset);
    // The AOF must start again from the new data, as Redis restarts it after a sync.
    if shared.config().appendonly {
        let _ = crate::persistence::aof::rewrite::begin(shared, &mut keyspace, false);
    }
    drop(keyspace);
    crate::log::notice!(
        "MASTER <-> REPLICA sync: Finished with success ({} keys, {} function libraries, \
         loaded in {:.3} seconds)",
        loaded.keys,
        loaded.libraries,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn parse_preamble(line: &str) -> io::Result<Size> {
    let Some(rest) = line.strip_prefix('$') else {
        return Err(io::Error::other(format!(
            "Bad protocol from MASTER, the first byte is not '$' (we received '{line}'), are \
             you sure the host and port are right?"
        )));
    };
    if let Some(mark) = rest.strip_prefix("EOF:") {
        if mark.len() != MARK_LEN {
            return Err(io::Error::other(format!(
                "bad EOF mark from MASTER: '{line}'"
            )));
        }
        return Ok(Size::Mark(mark.as_bytes().to_vec()));
    }
    rest.parse::<u64>()
        .map(Size::Len)
        .map_err(|_| io::Error::other(format!("bad snapshot length from MASTER: '{line}'")))
}

/// Copies the snapshot's bytes from the connection to `sink` (without the EOF mark).
async fn read_payload(
    link: &Link,
    conn: &mut Conn,
    size: &Size,
    sink: &mut Sink,
) -> io::Result<()> {
    let started = Instant::now();
    let mut read: u64 = 0;
    // The EOF form: the last MARK_LEN bytes seen are held back until more arrive.
    let mut held: Vec<u8> = Vec::new();
    let total = match size {
        Size::Len(len) => *len as i64,
        Size::Mark(_) => 0,
    };
    loop {
        match size {
            Size::Len(len) => {
                let take = (*len - read).min(conn.input.len() as u64) as usize;
                sink.write(&conn.input[..take])?;
                conn.consume(take);
                read += take as u64;
                if read == *len {
                    break;
                }
            }
            Size::Mark(mark) => {
                held.extend_from_slice(&conn.input);
                read += conn.input.len() as u64;
                conn.consume(conn.input.len());
                if held.len() >= MARK_LEN && held.ends_with(mark) {
                    held.truncate(held.len() - MARK_LEN);
                    sink.write(&held)?;
                    break;
                }
                if held.len() > MARK_LEN {
                    let flush = held.len() - MARK_LEN;
                    sink.write(&held[..flush])?;
                    held.drain(..flush);
                }
            }
        }
        {
            let mut status = link.status();
            status.transfer = Some(Transfer {
                total,
                read,
                last_io: Instant::now(),
            });
            status.last_io = Instant::now();
        }
        conn.fill().await?;
    }
    crate::log::notice!(
        "MASTER <-> REPLICA sync: received {read} bytes in {:.3} seconds",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
