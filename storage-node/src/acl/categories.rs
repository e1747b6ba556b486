//! ACL command categories (`@read`, `@dangerous`, ...): Redis 7.0's list, in its order (ACL
//! CAT lists them so, and describing a user's rules tries them so), and the categories of
//! each command as the shared command table records them (`COMMAND INFO`'s sixth field).

use std::sync::OnceLock;

use slotproxy::cluster::{CommandSpec, CommandTable};

/// Redis 7.0's categories, in the order of its `ACLCommandCategories`.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of a category in a [`mask`], by name (case-insensitive, as Redis compares).
pub fn by_name(name: &[u8]) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

/// Each spec's categories as a bit mask, indexed by `CommandSpec::id`.
fn masks() -> &'static [u32] {
    static MASKS: OnceLock<Vec<u32>> = OnceLock::new();
    MASKS.get_or_init(|| {
        CommandTable::get()
            .all_specs()
            .map(|spec| {
                spec.acl_categories()
                    .iter()
                    .filter_map(|name| name.strip_prefix(b"@").and_then(by_name))
                    .fold(0, |mask, bit| mask | bit)
            })
            .collect()
    })
}

/// The categories of a command or subcommand. Module commands (RedisBloom's) have none:
/// Redis 7.0 leaves module commands out of every category.
pub fn mask(spec: &CommandSpec) -> u32 {
    if spec.module().is_some() {
        return 0;
    }
    masks().get(spec.id).copied().unwrap_or(0)
}

/// Every command and subcommand of a category, in the command table's order (ACL CAT).
pub fn commands_in(bit: u32) -> Vec<&'static str> {
    CommandTable::get()
        .all_specs()
        .filter(|spec| mask(spec) & bit != 0)
        .map(|spec| spec.name.as_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_carries_redis_categories() {
        let table = CommandTable::get();
        let get = table.command(b"get").map(mask).unwrap_or(0);
        let read = by_name(b"read").unwrap_or(0);
        let string = by_name(b"STRING").unwrap_or(0);
        assert_eq!(get & (read | string), read | string);
        assert!(commands_in(by_name(b"dangerous").unwrap_or(0)).contains(&"flushall"));
        assert!(by_name(b"nosuch").is_none());
    }
}
