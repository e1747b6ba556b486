//! The hostile values arguments are drawn from, by argument kind.
//!
//! Each list aims at a boundary: integer limits and one past them, infinities and NaN,
//! empty and 1 MB strings, stream ids and score ranges at their limits, glob patterns that
//! make naive matchers backtrack. Two lists are deliberately tamer, because both servers
//! would otherwise do exactly what they were asked and the run would stop meaning anything:
//! timeouts of blocking commands (0 or a huge value blocks the fuzzer forever) and the counts
//! of SRANDMEMBER/ZRANDMEMBER/HRANDFIELD (a huge negative count asks for 2^62 replies and
//! makes the real redis-server itself run out of memory).

use std::sync::OnceLock;

/// Integers at and past the limits of `i64` and `u64`, and things that are almost integers.
pub const INTEGERS: &[&str] = &[
    "-1",
    "0",
    "1",
    "2",
    "3",
    "10",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775807",
    "18446744073709551616",
    "abc",
    "",
    "1.5",
    " 1",
    "0x10",
];

/// Floating-point edge cases, including range syntax used by score arguments.
pub const DOUBLES: &[&str] = &[
    "-inf",
    "+inf",
    "inf",
    "nan",
    "0",
    "-0",
    "1.5",
    "-1",
    "1e308",
    "1e309",
    "-1e309",
    "(1",
    "(-inf",
    "(+inf",
    "abc",
    "",
    "9223372036854775807",
    "0x1p3",
    "1e-320",
];

/// Stream ids and range ends at their limits.
pub const STREAM_IDS: &[&str] = &[
    "0-0",
    "0-1",
    "1-1",
    "2-1",
    "1-*",
    "18446744073709551615-18446744073709551615",
    "18446744073709551615-*",
    "18446744073709551616-0",
    "1-18446744073709551616",
    "-",
    "+",
    "(1-1",
    "(0-0",
    "$",
    ">",
    "1",
    "-1",
    "abc",
];

/// Glob patterns, including ones that make a backtracking matcher work hard.
pub const PATTERNS: &[&str] = &[
    "*",
    "?",
    "[",
    "[a-",
    "[^a]*",
    "\\",
    "*a*a*a*a*a*a*a*a*a*a*a*b",
    "{fz}*",
    "h*",
    "",
];

/// Expiry values (seconds, milliseconds, unix times): no small positive value, which would
/// make a key expire between the two servers' steps and turn the run into a race.
pub const TIMES: &[&str] = &[
    "-1",
    "0",
    "100000",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775",
    "18446744073709551616",
    "abc",
    "",
    "1.5",
];

/// Timeouts of blocking commands, in seconds: short or invalid, never 0 or huge.
pub const BLOCK_SECONDS: &[&str] = &["0.01", "0.001", "-1", "abc", "", "1e-9"];

/// Timeouts of blocking commands in milliseconds (XREAD BLOCK, WAIT).
pub const BLOCK_MILLISECONDS: &[&str] = &["1", "5", "-1", "abc", ""];

/// Counts of the random-member commands: bounded negatives (see the module comment).
pub const RANDOM_COUNTS: &[&str] = &[
    "-5",
    "-1",
    "0",
    "1",
    "5",
    "9223372036854775807",
    "-9223372036854775808",
    "abc",
    "18446744073709551616",
];

/// Short strings of many shapes; the 1 MB string is added by [`strings`].
const SHORT_STRINGS: &[&str] = &[
    "",
    "a",
    "b",
    "hello",
    "f1",
    "0",
    "-1",
    "1.5",
    "nan",
    "*",
    "-",
    "+",
    "(1",
    "[a",
    "(a",
    "0-0",
    "18446744073709551615-18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "\0\u{7f}\r\n",
    "{fz}",
];

/// The 1 MB string (built once).
pub fn megabyte() -> &'static [u8] {
    static BIG: OnceLock<Vec<u8>> = OnceLock::new();
    BIG.get_or_init(|| {
        (0..1024 * 1024)
            .map(|i| b"abcdefghijklmnopqrstuvwxyz"[i % 26])
            .collect()
    })
}

/// String arguments: the short ones plus, as the last element, 1 MB.
pub fn strings() -> Vec<&'static [u8]> {
    let mut all: Vec<&'static [u8]> = SHORT_STRINGS.iter().map(|s| s.as_bytes()).collect();
    all.push(megabyte());
    all
}

/// Lua bodies for EVAL, EVAL_RO and SCRIPT LOAD, each named so that a report (or a skip
/// list) can refer to it. `ARGV`-driven bodies let the generator pass a whole hostile command
/// through `redis.call`.
pub const SCRIPTS: &[(&str, &str)] = &[
    ("call-argv", "return redis.call(unpack(ARGV))"),
    ("pcall-argv", "return redis.pcall(unpack(ARGV))"),
    ("nested-literal", "return {1, {2, {3, {4, {5, {6}}}}}}"),
    (
        "nested-deep",
        "local t = {} local c = t for i = 1, 2000 do c[1] = {} c = c[1] end return t",
    ),
    ("self-reference", "local a = {} a[1] = a return a"),
    (
        "mutual-reference",
        "local a = {} local b = {a} a[1] = b return a",
    ),
    (
        "cjson-deep-decode",
        "return cjson.decode(string.rep('[', 100000) .. string.rep(']', 100000))",
    ),
    (
        "cjson-encode-self",
        "local a = {} a[1] = a return cjson.encode(a)",
    ),
    (
        "cmsgpack-pack-self",
        "local a = {} a[1] = a return cmsgpack.pack(a)",
    ),
    (
        "cmsgpack-unpack-deep",
        "return cmsgpack.unpack(string.rep('\\145', 100000))",
    ),
    ("nan", "return 0/0"),
    ("infinities", "return {1/0, -1/0, 3.99, -3.99}"),
    ("nil-hole", "return {1, nil, 3}"),
    ("error-table", "return {err = 'x'}"),
    ("error-empty", "return redis.error_reply('')"),
    ("status-table", "return {ok = {}}"),
    // Not `error({})`: it segfaults redis-server 7.0.15 itself, so no case with it can be
    // compared.
    ("unpack-huge", "return unpack({}, 1, 1e8)"),
    ("format-width", "return string.format('%99999999d', 1)"),
    (
        "index-recursion",
        "local t = setmetatable({}, {__index = function(t, k) return t[k] end}) return t[1]",
    ),
    ("rep-negative", "return string.rep('x', -1)"),
    ("struct-huge", "return struct.pack('>i99999', 1)"),
    (
        "script-in-script",
        "return redis.call('eval', 'return 1', 0)",
    ),
    (
        "resp3-call",
        "redis.setresp(3) return redis.call(unpack(ARGV))",
    ),
    ("global-write", "x = 1 return x"),
    ("keys-arg", "return {KEYS[1], ARGV[1]}"),
    ("syntax-error", "return ("),
    ("sha1", "return redis.sha1hex(ARGV[1] or '')"),
];

/// Library sources for FUNCTION LOAD: valid, malformed and hostile.
pub const LIBRARIES: &[(&str, &str)] = &[
    (
        "lib-call-args",
        "#!lua name=fz\nredis.register_function('f', function(keys, args) return redis.call(unpack(args)) end)",
    ),
    (
        "lib-nested",
        "#!lua name=fz\nredis.register_function('f', function() local a = {} local b = {a} a[1] = b return a end)",
    ),
    ("lib-no-name", "#!lua\nreturn 1"),
    ("lib-empty-name", "#!lua name=\nreturn 1"),
    ("lib-no-functions", "#!lua name=fz\nlocal x = 1"),
    (
        "lib-bad-flags",
        "#!lua name=fz\nredis.register_function{function_name='f', callback=function() return 1 end, flags={'no-writes', 'bogus'}}",
    ),
    ("lib-other-engine", "#!js name=fz\nreturn 1"),
    ("lib-garbage", "garbage"),
];
