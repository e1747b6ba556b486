//! `PFSELFTEST` → OK, or `ERR TESTFAILED ...` naming the check that failed.
//!
//! Runs `types::hll::selftest` (register access, and the estimates of ten million
//! elements in dense and sparse HLLs). It takes a few seconds and holds the node meanwhile,
//! as it holds redis-server.

use bytes::Bytes;

use super::super::{CmdResult, Ctx};
use super::sparse_max_bytes;
use crate::types::hll::selftest;

pub(super) fn pfselftest(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let max_bytes = sparse_max_bytes(ctx);
    match selftest::run(max_bytes, &mut rand::thread_rng()) {
        Ok(()) => {
            ctx.out.ok();
            Ok(())
        }
        Err(failure) => Err(format!("ERR {failure}").into()),
    }
}
