//! Functions compared with a real redis-server: FUNCTION LOAD / DELETE / FLUSH / LIST /
//! STATS / DUMP / RESTORE and FCALL / FCALL_RO, in RESP2 and RESP3.
//!
//! Redis lists libraries, and functions within a library, in hash-table order, which
//! varies from run to run; replies that list more than one are compared only where the
//! order is fixed (one library with one function).

use test_harness::Differential;

const LIB: &str = "#!lua name=mylib\n\
redis.register_function('f1', function(keys, args) return {keys, args} end)\n\
redis.register_function{function_name='f2', callback=function(keys) \
return redis.call('get', keys[1]) end, flags={'no-writes'}, description='desc'}\n\
redis.register_function('f3', function(keys, args) \
return redis.call('set', keys[1], args[1]) end)";

const OTHER: &str = "#!lua name=other\nredis.register_function('g', function() return 'g' end)";

#[test]
fn load_list_call_and_delete_match_redis() {
    let mut d = Differential::start();
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        d.check_all(&[
            &["FUNCTION", "FLUSH"],
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", LIB],
            &["FUNCTION", "LOAD", "REPLACE", LIB],
            &["FUNCTION", "LOAD", "BOGUS", LIB],
            &["FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"],
            &["FUNCTION", "LIST", "LIBRARYNAME"],
            &["FUNCTION", "LIST", "BOGUS"],
            &["FUNCTION", "LIST", "WITHCODE", "WITHCODE"],
            &["FUNCTION", "STATS"],
            &["FCALL", "f1", "2", "a", "b", "c"],
            &["FCALL", "f3", "1", "k", "v"],
            &["FCALL", "f2", "1", "k"],
            &["FCALL_RO", "f2", "1", "k"],
            &["FCALL_RO", "f3", "1", "k", "v"],
            &["FCALL", "nosuch", "0"],
            &["FCALL", "f1", "-1"],
            &["FCALL", "f1", "5"],
            &["FUNCTION", "LOAD", OTHER],
            &["FCALL", "g", "0"],
            &["FUNCTION", "LIST", "LIBRARYNAME", "oth*"],
            &["FUNCTION", "LIST", "WITHCODE", "LIBRARYNAME", "other"],
            &["FUNCTION", "DELETE", "other"],
            &["FUNCTION", "DELETE", "other"],
            &["FCALL", "g", "0"],
            &["FUNCTION", "KILL"],
            &["FUNCTION", "FLUSH", "BOGUS"],
            &["FUNCTION", "FLUSH", "ASYNC"],
            &["FUNCTION", "LIST"],
            &["FUNCTION", "BOGUS"],
        ]);
    }
}

#[test]
fn library_errors_match_redis() {
    let mut d = Differential::start();
    for code in [
        "return 1",
        "#!lua name=bad!name\nreturn 1",
        "#!lua name=empty\nreturn 1",
        "#!lua name=l2\nredis.call('ping')",
        "#!lua name=l3\nx = 1",
        "#!lua name=l4\nredis.register_function('bad name', function() end)",
        "#!lua name=l5\nredis.register_function('f5')",
        "#!lua name=l6\nredis.register_function{function_name='f6', callback=function() end, \
         flags={'bogus'}}",
        "#!lua name=l7\nredis.register_function{function_name='f7', callback=function() end, \
         foo=1}",
        "#!lua name=l8 flags=no-writes\nreturn 1",
        "#!lua\nreturn 1",
        "#!lua name=l9\nerror('oops')",
        "#!lua name=l10\nlocal x = +",
        "#!luax name=x\n",
        "#!lua name=x foo\n",
        "#!lua name=x name=y\nreturn 1",
        "#!lua name=x",
        "#!lua name=reg\nredis.register_function('a', function() end, 'extra')",
        "#!lua name=reg\nredis.register_function{callback=function() end}",
        "#!lua name=reg\nredis.register_function{function_name='a'}",
        "#!lua name=reg\nredis.register_function{function_name='a', callback=1}",
        "#!lua name=reg\nredis.register_function{function_name='a', callback=function() end, \
         flags='no-writes'}",
        "#!lua name=reg\nredis.register_function('a', 1)",
        "#!lua name=reg\nredis.register_function('a', function() end) \
         redis.register_function('a', function() end)",
        "#!lua name=reg\nredis.log(redis.LOG_NOTICE, 'loading') return redis.REDIS_VERSION",
        "#!lua name=dup1\nredis.register_function('same', function() end)",
        "#!lua name=dup2\nredis.register_function('same', function() end)",
    ] {
        d.check(&["FUNCTION", "LOAD", code]);
    }
    d.check(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=t\n\
         redis.register_function('t2', function() error('in fn') end)\n\
         redis.register_function('t3', function() return redis.call('nosuch') end)",
    ]);
    d.check(&["FCALL", "t2", "0"]);
    d.check(&["FCALL", "t3", "0"]);
}

#[test]
fn dump_and_restore_match_redis() {
    let mut d = Differential::start();
    d.check(&["FUNCTION", "LOAD", OTHER]);
    let payload = d.check(&["FUNCTION", "DUMP"]);
    let payload = payload.as_bytes().expect("a bulk payload").to_vec();
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload, b"APPEND"]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload, b"REPLACE"]);
    d.check(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=clash\nredis.register_function('g', function() end)",
    ]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload, b"BOGUS"]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload, b"FLUSH", b"x"]);
    d.check(&["FUNCTION", "FLUSH"]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload]);
    d.check(&["FUNCTION", "LIST", "WITHCODE"]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload, b"FLUSH"]);
    d.check(&["FCALL", "g", "0"]);
    d.check(&["FUNCTION", "RESTORE", "garbage"]);
    d.check_bytes(&[b"FUNCTION", b"RESTORE", &payload[..payload.len() - 1]]);
}
