//! Redis's serialisation formats: the RDB encoding of values and the DUMP payload built on it.
//!
//! # Layout
//! - [`crc64`]: the CRC-64 (Jones) that seals RDB files and DUMP payloads.
//! - [`lzf`]: LZF compression, producing the same bytes as the liblzf inside Redis.
//! - [`rdb`]: RDB lengths, strings and objects.
//! - [`payload`]: DUMP payloads (`type + object + RDB version + CRC-64`), for DUMP/RESTORE.
//! - [`rdb_module`]: module types (RedisBloom's Bloom filters) in RDB.
//! - [`rdb_file`] / [`rdb_load`]: whole RDB files (`dump.rdb`), written and read.
//! - [`aof`]: the append-only file: writing the propagated stream, rewriting, loading.
//! - [`disk`]: the file on disk: SAVE's temp-file-and-rename, loading at start, LASTSAVE.
//! - [`snapshot`]: BGSAVE, a point-in-time snapshot written without fork.
//! - [`save_points`]: the `save` points and BGSAVE SCHEDULE.

pub mod aof;
pub mod crc64;
pub mod disk;
pub mod listpack;
pub mod lzf;
pub mod payload;
pub mod rdb;
pub mod rdb_file;
pub mod rdb_load;
pub mod rdb_module;
pub mod rdb_sets;
pub mod rdb_stream;
pub mod save_points;
pub mod snapshot;
