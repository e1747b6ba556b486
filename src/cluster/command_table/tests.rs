use bytes::Bytes;

use super::*;

fn args(words: &[&str]) -> Vec<Bytes> {
    words
        .iter()
        .map(|w| Bytes::copy_from_slice(w.as_bytes()))
        .collect()
}

fn keys(words: &[&str]) -> Vec<usize> {
    let a = args(words);
    CommandTable::get()
        .lookup(&a)
        .expect("known command")
        .key_indexes(&a)
        .expect("valid keys")
}

#[test]
fn table_has_every_redis_7_0_command() {
    let table = CommandTable::get();
    // Redis 7.0's 240 commands and RedisBloom's 10 Bloom filter commands.
    assert_eq!(table.commands().len(), 250);
    let get = table.command(b"GET").expect("get");
    assert_eq!(get.arity, 2);
    assert!(get.flags.contains(CommandFlags::READONLY));
    assert!(table
        .command(b"config")
        .unwrap()
        .subcommand(b"get")
        .is_some());
    assert_eq!(
        table.by_full_name(b"config|get").unwrap().name,
        "config|get"
    );
}

#[test]
fn key_positions() {
    assert_eq!(keys(&["get", "a"]), vec![1]);
    assert_eq!(keys(&["BF.MADD", "f", "a", "b"]), vec![1]);
    assert_eq!(keys(&["bf.insert", "f", "ITEMS", "a"]), vec![1]);
    assert_eq!(keys(&["mset", "a", "1", "b", "2"]), vec![1, 3]);
    assert_eq!(keys(&["mget", "a", "b", "c"]), vec![1, 2, 3]);
    assert_eq!(keys(&["eval", "s", "2", "a", "b", "c"]), vec![3, 4]);
    assert_eq!(
        keys(&["zunionstore", "d", "2", "a", "b", "weights", "1", "2"]),
        vec![1, 3, 4]
    );
    assert_eq!(
        keys(&["xread", "count", "2", "streams", "a", "b", "0", "0"]),
        vec![4, 5]
    );
    assert_eq!(
        keys(&["sort", "a", "by", "store", "store", "d"]),
        vec![1, 5]
    );
    assert_eq!(
        keys(&["migrate", "h", "1", "", "0", "5", "keys", "a", "b"]),
        vec![7, 8]
    );
    assert_eq!(keys(&["migrate", "h", "1", "k", "0", "5"]), vec![3]);
    assert_eq!(keys(&["spublish", "chan", "msg"]), Vec::<usize>::new());
    assert_eq!(keys(&["lmove", "a", "b", "left", "right"]), vec![1, 2]);
    assert_eq!(keys(&["object", "encoding", "k"]), vec![2]);
    assert_eq!(keys(&["ping"]), Vec::<usize>::new());
}

#[test]
fn specs_that_do_not_fit_fall_back_like_redis() {
    let indexes = |words: &[&str]| {
        let a = args(words);
        CommandTable::get().lookup(&a).unwrap().key_indexes(&a)
    };
    // A bad key count: EVAL's own rule (atoi) finds no keys.
    assert_eq!(indexes(&["eval", "s", "x", "a"]), Ok(vec![]));
    assert_eq!(indexes(&["eval", "s", "3", "a"]), Ok(vec![]));
    // ZUNIONSTORE's own rule reads the count with atoi and puts the destination last.
    assert_eq!(
        indexes(&["zunionstore", "d", "2abc", "a", "b"]),
        Ok(vec![3, 4, 1])
    );
    // No rule of its own: no keys at all.
    assert_eq!(indexes(&["pfmerge", "a"]), Err(KeysError::InvalidArguments));
}

#[test]
fn routing_goes_by_the_specs_that_fit() {
    let routing = |words: &[&str]| {
        let a = args(words);
        CommandTable::get()
            .lookup(&a)
            .unwrap()
            .routing_key_indexes(&a)
    };
    // A Redis 7.0 cluster redirects `PFMERGE dest` to dest's owner.
    assert_eq!(routing(&["pfmerge", "a"]), Ok(vec![1]));
    assert_eq!(routing(&["pfmerge", "a", "b", "c"]), Ok(vec![1, 2, 3]));
    // A command's own rule still decides when it has one.
    assert_eq!(routing(&["eval", "s", "x", "a"]), Ok(vec![]));
}

#[test]
fn ids_are_dense_and_follow_all_specs() {
    let table = CommandTable::get();
    let ids: Vec<usize> = table.all_specs().map(|s| s.id).collect();
    assert_eq!(ids, (0..table.spec_count()).collect::<Vec<_>>());
    let get = table.command(b"get").unwrap();
    assert_eq!(table.all_specs().nth(get.id).unwrap().name, "get");
    let config_get = table.by_full_name(b"config|get").unwrap();
    assert_eq!(
        table.all_specs().nth(config_get.id).unwrap().name,
        "config|get"
    );
}

#[test]
fn key_count_at_i64_max_is_invalid_not_an_overflow() {
    let table = CommandTable::get();
    for words in [
        &["ZUNIONSTORE", "d", "9223372036854775807", "a"][..],
        &["ZMPOP", "9223372036854775807", "a", "MAX"],
        &["EVAL", "return 1", "9223372036854775807", "a"],
    ] {
        let a = args(words);
        let spec = table.lookup(&a).expect("known command");
        // Falls back to the command's own rule, which finds no keys for a count past argc.
        assert_eq!(spec.key_indexes(&a), Ok(vec![]), "{words:?}");
    }
}
