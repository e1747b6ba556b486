//! Lua scripting compared with a real redis-server: EVAL and friends, SCRIPT, the Lua
//! environment, every preloaded library and the conversions both ways, in RESP2 and RESP3.

use test_harness::Differential;

fn eval(script: &str) -> Vec<&str> {
    vec!["EVAL", script, "0"]
}

fn check_scripts(d: &mut Differential, scripts: &[&str]) {
    for script in scripts {
        d.check(&eval(script));
    }
}

fn check_scripts_both_protocols(d: &mut Differential, scripts: &[&str]) {
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        check_scripts(d, scripts);
    }
    d.set_resp3(false);
}

#[test]
fn lua_values_convert_to_replies_as_in_redis() {
    let mut d = Differential::start();
    check_scripts_both_protocols(
        &mut d,
        &[
            "return nil",
            "return false",
            "return true",
            "return 1",
            "return -7",
            "return 3.99",
            "return -3.99",
            "return 0.5",
            "return 'hello'",
            "return ''",
            "return {}",
            "return {1,2,3}",
            "return {1,2,nil,4}",
            "return {1,{2,{3,{'x'}}}}",
            "return {true,false,'a',{ok='x'},{err='y'}}",
            "return {ok='FINE'}",
            "return {ok='line\\nbreak'}",
            "return {err='My Err'}",
            "return {err='ERR custom'}",
            "return {err=1}",
            "return {ok=1}",
            "return redis.status_reply('STATUS')",
            "return redis.error_reply('my error')",
            "return redis.error_reply('-CODE text')",
            "return redis.error_reply('-NOSPACE')",
            "return redis.error_reply()",
            "return redis.status_reply({})",
            "return {double=3.14}",
            "return {big_number='123456789012345678901234567890'}",
            "return {map={a=1}}",
            "return {set={x=true}}",
            "redis.setresp(3) return {double=3.14}",
            "redis.setresp(3) return {map={a=1}}",
            "redis.setresp(3) return {set={x=true}}",
            "redis.setresp(3) return true",
            "redis.setresp(3) return false",
            "redis.setresp(3) return {true, false, nil}",
            "return function() end",
            "return cjson.null",
            "return 1, 2",
        ],
    );
}

#[test]
fn redis_replies_convert_to_lua_as_in_redis() {
    let mut d = Differential::start();
    d.check(&["SET", "s", "5"]);
    d.check(&["SET", "t", "text"]);
    check_scripts_both_protocols(
        &mut d,
        &[
            "return redis.call('get', 's')",
            "return redis.call('get', 'missing')",
            "return type(redis.call('get', 'missing'))",
            "return redis.call('incr', 's')",
            "return type(redis.call('incr', 's'))",
            "return redis.call('set', 'x', 'y')",
            "return redis.call('set', 'x', 'y').ok",
            "return redis.call('mget', 's', 'missing', 't')",
            "return redis.pcall('incr', 't')",
            "return redis.pcall('incr', 't').err",
            "return redis.call('set', 'n', 1.5)",
            "return redis.call('set', 'n', 0.1 + 0.2) and redis.call('get', 'n')",
            "return redis.call('set', 'n', 100) and redis.call('get', 'n')",
            "redis.setresp(3) return redis.call('get', 'missing')",
            "redis.setresp(3) return type(redis.call('get', 'missing'))",
            "redis.setresp(3) return redis.call('mget', 's', 'missing')",
            "redis.setresp(3) return redis.call('config', 'get', 'maxclients')",
            "redis.setresp(3) local r = redis.call('config', 'get', 'maxclients') \
             return r.map.maxclients",
            "redis.setresp(2) return redis.call('config', 'get', 'maxclients')",
            "return redis.call('exists', 's', 't', 'u')",
            "return redis.call('ping')",
            "return redis.call('echo', 'hi')",
        ],
    );
}

#[test]
fn script_errors_match_redis() {
    let mut d = Differential::start();
    d.check(&["SET", "s", "foo"]);
    check_scripts(
        &mut d,
        &[
            "return x",
            "x = 1",
            "rawset(_G, 'x', 1)",
            "setmetatable(_G, nil)",
            "redis.call = nil",
            "string.x = 1",
            "local t = {} t.x = 1 return t.x",
            "return redis.call('nosuch')",
            "return redis.pcall('nosuch')",
            "return redis.call()",
            "return redis.pcall()",
            "return redis.call('get', {})",
            "return redis.pcall('get', {})",
            "return redis.call('get', nil)",
            "return redis.call('get', 'a', 'b')",
            "return redis.pcall('get', 'a', 'b')",
            "return redis.call('incr', 's')",
            "redis.call('incr', 's')",
            "local ok, e = pcall(redis.call, 'incr', 's') return {tostring(ok), e}",
            "local ok, e = pcall(redis.call, 'nosuch') return e",
            "local ok, e = pcall(redis.log) return e",
            "local ok, e = pcall(function() x = 1 end) return e",
            "return redis.call('eval', 'return 1', 0)",
            "error('boom')",
            "error('ERR foo')",
            "error('FOO bar', 0)",
            "error({err='My Err'})",
            "error(nil)",
            "error(12)",
            "local function f() error('deep') end f()",
            "\n\nerror('line three')",
            "syntax error here",
            "return +",
            "redis.log()",
            "redis.log(9, 'x')",
            "redis.log('a', 'x')",
            "return redis.log(redis.LOG_WARNING, 'from a test', 1)",
            "return redis.sha1hex()",
            "return redis.setresp()",
            "return redis.setresp(4)",
            "return redis.set_repl()",
            "return redis.set_repl(9)",
            "return redis.acl_check_cmd('nosuch')",
            "return redis.acl_check_cmd('get', 'x')",
            "return print",
            "return os",
            "return debug",
            "return loadfile",
            "return dofile",
            "return loadstring('return 1 + 1')()",
            "loadstring('y = 1')()",
        ],
    );
}

#[test]
fn redis_library_matches_redis() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "local t = {} for k, v in pairs(_G) do table.insert(t, k .. ':' .. type(v)) end \
             table.sort(t) return t",
            "local t = {} for k, v in pairs(redis) do \
             table.insert(t, k .. ':' .. tostring(type(v) == 'number' and v or type(v))) end \
             table.sort(t) return t",
            "local t = {} for k in pairs(string) do table.insert(t, k) end table.sort(t) return t",
            "local t = {} for k in pairs(math) do table.insert(t, k) end table.sort(t) return t",
            "local t = {} for k in pairs(table) do table.insert(t, k) end table.sort(t) return t",
            "local t = {} for k in pairs(cjson) do table.insert(t, k) end table.sort(t) return t",
            "local t = {} for k in pairs(cmsgpack) do table.insert(t, k) end table.sort(t) \
             return t",
            "local t = {} for k in pairs(bit) do table.insert(t, k) end table.sort(t) return t",
            "local t = {} for k in pairs(struct) do table.insert(t, k) end table.sort(t) return t",
            "return redis.sha1hex('')",
            "return redis.sha1hex('abc')",
            "return redis.sha1hex(1)",
            "return redis.replicate_commands()",
            "return redis.set_repl(redis.REPL_ALL)",
            "return redis.breakpoint()",
            "return redis.debug('x')",
            "return redis.REDIS_VERSION",
            "return redis.REDIS_VERSION_NUM",
            "math.randomseed(7) return {math.random(100), math.random(5, 10), \
             tostring(math.random())}",
            "return _VERSION",
            "return string.format('%5.2f|%d|%s', 3.14159, 42, 'x')",
            "return tostring(1e15) .. ' ' .. tostring(0.1) .. ' ' .. tostring(1/3)",
            "return {string.byte('A'), #KEYS, #ARGV}",
        ],
    );
    d.check(&[
        "EVAL",
        "return {KEYS, ARGV}",
        "2",
        "k1",
        "k2",
        "a1",
        "a2",
        "a3",
    ]);
    d.check(&["EVAL", "return {KEYS[1], ARGV[1]}", "1", "k", "a"]);
    d.check(&["EVAL", "KEYS[1] = 'changed' return KEYS[1]", "1", "k"]);
}

#[test]
fn cjson_matches_redis() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "return cjson.encode({1, 2.5, 'a', {x=1}, 0.1, 1e20, 3.14159265358979})",
            "return cjson.encode(cjson.decode('[1,2,null,{\"a\":[]},true]'))",
            "return cjson.encode({a=1, b=2, c={1, 2}})",
            "return cjson.encode({1, nil, 3})",
            "return cjson.encode({})",
            "return cjson.encode('a/b\\n\\1\"\\\\')",
            "return cjson.encode(true)",
            "return cjson.encode(nil)",
            "return cjson.encode(cjson.null)",
            "return cjson.encode({[1.5]=1})",
            "return cjson.encode({[3]=1})",
            "local t = {} t[20] = 1 return cjson.encode(t)",
            "return cjson.encode(function() end)",
            "return cjson.encode({[true]=1})",
            "return cjson.encode(0/0)",
            "return cjson.encode(1/0)",
            "return cjson.decode('{\"a\":1,\"b\":[1,2,{\"c\":\"d\"}]}').b[3].c",
            "return cjson.decode('\"\\\\u00e9x\\\\n\"')",
            "return cjson.decode('[1.5, -2, 1e3]')",
            "return cjson.decode('{')",
            "return cjson.decode('[1,2')",
            "return cjson.decode('[1,2] x')",
            "return cjson.decode('nul')",
            "return cjson.decode('{\"a\" 1}')",
            "return cjson.decode('')",
            "return cjson.decode('\"abc')",
            "return cjson.decode('\"a\\\\qb\"')",
            "return cjson.decode('\"a\\\\u12\"')",
            "return cjson.decode('null') == cjson.null",
            "return cjson.decode(cjson.encode({x={y={z='deep'}}})).x.y.z",
        ],
    );
}

#[test]
fn cmsgpack_matches_redis() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "return cmsgpack.pack({1,2,3}, 'abc', -1, -200, 70000, 1.5, 0.1, true, nil, {a=1})",
            "return cmsgpack.pack(0, 127, 128, 255, 256, 65535, 65536, 4294967296, -32, -33, \
             -128, -129, -32768, -32769, -2147483649)",
            "return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300))",
            "return cmsgpack.pack({})",
            "return {cmsgpack.unpack(cmsgpack.pack({1, 2, {x='y'}}, 'abc', -1, 3.5))}",
            "local t = cmsgpack.unpack(cmsgpack.pack({1, 2, {x='y'}})) return t[3].x",
            "return {cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))}",
            "return {cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 1)}",
            "return cmsgpack.unpack('\\205')",
            "return {cmsgpack.unpack(cmsgpack.pack(-2147483649, 4294967296, 0.25))}",
        ],
    );
}

#[test]
fn bit_and_struct_match_redis() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "return {bit.band(0xff, 0x0f), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.bnot(0), \
             bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(1, 33), \
             bit.ror(1, 1), bit.tohex(255), bit.tohex(-1, -4), bit.bswap(0x12345678), \
             bit.tobit(2^32 + 5), bit.tobit(1.5), bit.tohex(65535, 2)}",
            "return bit.band('x')",
            "return bit.band()",
            "return {struct.pack('>i2<I4Bc3s', 513, 7, 255, 'abcdef', 'zz')}",
            "return {struct.unpack('>i2<I4Bc3s', \
             struct.pack('>i2<I4Bc3s', -513, 7, 255, 'abcdef', 'zz'))}",
            "return {struct.size('>i2<I4Bd'), struct.size('!4 b i')}",
            "return {struct.unpack('!4 b i', struct.pack('!4 b i', 1, 2))}",
            "return {struct.unpack('i', 'ab')}",
            "return struct.size('s')",
            "return {struct.pack('d', 1.5), struct.pack('f', 0.25), \
             struct.unpack('>d', struct.pack('>d', 2.75))}",
            "return {struct.unpack('HhLl', struct.pack('HhLl', 65535, -2, 12345678901, -5))}",
            "return {struct.unpack('i', struct.pack('i', 1), 1)}",
        ],
    );
}

#[test]
fn eval_forms_and_script_commands_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["EVAL", "return 1", "-1"],
        &["EVAL", "return 1", "2", "a"],
        &["EVAL", "return 1", "abc"],
        &["EVAL"],
        &["EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"],
        &["SCRIPT", "LOAD", "return 'loaded'"],
        &["EVALSHA", "d4ac41a64b8ae5c8e3e4bd5b42fd4da08d3d3286", "0"],
        &["EVALSHA", "D4AC41A64B8AE5C8E3E4BD5B42FD4DA08D3D3286", "0"],
        &[
            "EVALSHA_RO",
            "d4ac41a64b8ae5c8e3e4bd5b42fd4da08d3d3286",
            "0",
        ],
        &[
            "SCRIPT",
            "EXISTS",
            "d4ac41a64b8ae5c8e3e4bd5b42fd4da08d3d3286",
            "ffff",
        ],
        &["SCRIPT", "LOAD", "return +"],
        &["SCRIPT", "FLUSH", "bogus"],
        &["SCRIPT", "FLUSH", "ASYNC"],
        &[
            "SCRIPT",
            "EXISTS",
            "d4ac41a64b8ae5c8e3e4bd5b42fd4da08d3d3286",
        ],
        &["SCRIPT", "FLUSH"],
        &["SCRIPT", "FLUSH", "SYNC"],
        &["SCRIPT", "FLUSH", "SYNC", "x"],
        &["SCRIPT", "KILL"],
        &["SCRIPT", "KILL", "x"],
        &["SCRIPT", "BOGUS"],
        &["SCRIPT"],
        &["EVAL", "return redis.call('set', 'k', 'v')", "1", "k"],
        &["EVAL_RO", "return redis.call('set', 'k', 'v')", "1", "k"],
        &["EVAL_RO", "return redis.pcall('set', 'k', 'v')", "1", "k"],
        &["EVAL_RO", "return redis.call('get', 'k')", "1", "k"],
        &["EVAL", "return redis.call('select', 1)", "0"],
        &[
            "EVAL",
            "redis.call('select', 1) return redis.call('set', 'db1', 'x')",
            "0",
        ],
        &["EXISTS", "db1"],
        &["SELECT", "1"],
        &["EXISTS", "db1"],
        &["SELECT", "0"],
    ]);
}

#[test]
fn shebang_flags_match_redis() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "#!lua\nerror('x')",
            "#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')",
            "#!lua flags=no-writes\nreturn redis.call('get', 'a')",
            "#!lua flags=bogus\nreturn 1",
            "#!luax\nreturn 1",
            "#!lua name=foo\nreturn 1",
            "#!lua flags=\nreturn 1",
            "#!lua  flags=no-writes,allow-oom  \nreturn 1",
            "#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\n\
             return 1",
            "#!lua",
            "#! lua\nreturn 1",
            "#!lua flags=no-writes,,allow-oom\nreturn 1",
            "#!lua foo\nreturn 1",
            "#!lua\nreturn redis.call('set', 'a', 'b')",
        ],
    );
    d.check(&["EVAL_RO", "#!lua\nreturn 1", "0"]);
    d.check(&["EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"]);
    d.check(&["SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"]);
}

#[test]
fn scripts_are_atomic_and_see_their_writes() {
    let mut d = Differential::start();
    d.check_all(&[
        &[
            "EVAL",
            "for i = 1, 100 do redis.call('incr', KEYS[1]) end return redis.call('get', KEYS[1])",
            "1",
            "counter",
        ],
        &["GET", "counter"],
        &[
            "EVAL",
            "redis.call('del', KEYS[1]) redis.call('set', KEYS[1], ARGV[1]) \
             return redis.call('strlen', KEYS[1])",
            "1",
            "s",
            "hello",
        ],
    ]);
}

/// KEYS and ARGV reach scripts and functions byte for byte: binary strings, long strings
/// and many of them take other paths into Lua than short UTF-8 text (see `lua_bytes` and
/// `string_tables` in `scripting/engine.rs`).
#[test]
fn keys_and_args_reach_scripts_byte_exact() {
    let mut d = Differential::start();
    let long = vec![b'x'; 300];
    let long_utf8 = "é".repeat(200);
    let binary: &[u8] = b"\xff\x00\xfe\r\n";
    let echo = b"return {#KEYS, #ARGV, KEYS, ARGV, redis.call('set', KEYS[1], ARGV[1]), \
redis.call('get', KEYS[1])}";
    d.check_bytes(&[b"EVAL", echo, b"1", binary, &long]);
    d.check_bytes(&[b"EVAL", echo, b"1", &long, binary]);
    d.check_bytes(&[b"EVAL", echo, b"1", long_utf8.as_bytes(), b"plain"]);
    d.check_bytes(&[b"EVAL", echo, b"2", b"k", binary, b"", b"a"]);
    let many: Vec<Vec<u8>> = (0..3000).map(|i| format!("arg{i}").into_bytes()).collect();
    let mut args: Vec<&[u8]> = vec![
        b"EVAL",
        b"return {#KEYS, #ARGV, KEYS[1000], ARGV[1]}",
        b"1000",
    ];
    args.extend(many.iter().map(|a| &a[..]));
    d.check_bytes(&args);
    d.check_bytes(&[
        b"FUNCTION",
        b"LOAD",
        b"#!lua name=echo\nredis.register_function('echo', function(k, a) return {k, a} end)",
    ]);
    d.check_bytes(&[b"FCALL", b"echo", b"1", binary, &long]);
    d.check_bytes(&[b"FCALL", b"echo", b"0", long_utf8.as_bytes()]);
}

/// lua-cjson's setting functions answer their values as Redis's do; changing one is refused
/// (in Redis the change outlives the script), never accepted and ignored.
#[test]
fn cjson_settings_are_answered_and_never_silently_ignored() {
    let mut d = Differential::start();
    check_scripts(
        &mut d,
        &[
            "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision()}",
            "return {cjson.encode_keep_buffer(), cjson.decode_invalid_numbers()}",
            "return tostring(cjson.encode_invalid_numbers())",
            "local a, b, c = cjson.encode_sparse_array() return {tostring(a), b, c}",
        ],
    );
    let (mut node, _) = d.clients();
    let reply = node.call(&["EVAL", "cjson.encode_max_depth(2) return 1", "0"]);
    assert!(
        matches!(&reply, slotproxy::resp::Frame::Error(e)
            if String::from_utf8_lossy(e).contains("changing lua-cjson's settings is not supported")),
        "{reply:?}"
    );
    // Nothing changed: three levels still encode.
    assert_eq!(
        node.call(&["EVAL", "return cjson.encode({{{1}}})", "0"]),
        slotproxy::resp::Frame::bulk("[[[1]]]")
    );
}
