//! `REPLCONF <option> <value> [<option> <value> ...]`: what a replica tells its master
//! before SYNC/PSYNC → `+OK`.
//!
//! - `listening-port <port>`, `ip-address <ip>`: how INFO and ROLE show the replica.
//! - `capa eof`, `capa psync2`: it reads the diskless form, and `+CONTINUE <replid>`
//!   (other capabilities are ignored, as Redis ignores what it does not know).
//! - `rdb-only 0|1`: the snapshot only, then the connection closes (`redis-cli --rdb`).
//! - `ACK <offset> [FACK <offset>]` and `GETACK *` reply nothing: ACKs arrive on the
//!   replica's own connection (`replication::master::feeder`), GETACK on a replica's
//!   link to its master.
//! - An even argument count → syntax error; another option → `-ERR Unrecognized REPLCONF
//!   option: <name>`.

use bytes::Bytes;

use super::args::{int, int_in_range, is, text};
use super::{CmdResult, Ctx, Handler};

pub const COMMANDS: &[(&str, Handler)] = &[("replconf", replconf)];

/// Redis's `NET_HOST_STR_LEN`: the longest address a replica may announce.
const MAX_IP_LEN: usize = 256;

fn replconf(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len().is_multiple_of(2) {
        return Err(slotproxy::protocol::errors::SYNTAX.into());
    }
    for pair in args[1..].chunks(2) {
        let (option, value) = (&pair[0], &pair[1]);
        let handshake = &mut ctx.client.replica_handshake;
        if is(option, "listening-port") {
            // Redis keeps it as an int; a port outside 0..65535 is stored truncated
            // there, kept as 0 here.
            handshake.port = u16::try_from(int(value)?).unwrap_or(0);
        } else if is(option, "ip-address") {
            if value.len() >= MAX_IP_LEN {
                return Err(format!(
                    "ERR REPLCONF ip-address provided by replica instance is too long: {} bytes",
                    value.len()
                )
                .into());
            }
            handshake.ip = Some(text(value));
        } else if is(option, "capa") {
            if is(value, "eof") {
                handshake.capa_eof = true;
            } else if is(value, "psync2") {
                handshake.capa_psync2 = true;
            }
        } else if is(option, "rdb-only") {
            handshake.rdb_only = int_in_range(value, 0, 1)? == 1;
        } else if is(option, "ack") || is(option, "getack") {
            return Ok(());
        } else {
            return Err(format!("ERR Unrecognized REPLCONF option: {}", text(option)).into());
        }
    }
    ctx.out.ok();
    Ok(())
}
