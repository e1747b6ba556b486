//! Bitmap and BITFIELD commands, compared with a real redis-server in RESP2 and RESP3.

use test_harness::Differential;

#[test]
fn setbit_and_getbit_match_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SETBIT", "k", "7", "1"],
        &["GET", "k"],
        &["SETBIT", "k", "7", "1"],
        &["SETBIT", "k", "7", "0"],
        &["SETBIT", "k", "7", "0"],
        &["GETBIT", "k", "7"],
        &["SETBIT", "k", "0", "1"],
        &["GETBIT", "k", "0"],
        &["GETBIT", "k", "1"],
        &["GETBIT", "k", "100"],
        &["GETBIT", "k", "4294967295"],
        &["GETBIT", "nokey", "0"],
        &["SETBIT", "k", "100", "1"],
        &["GET", "k"],
        &["GETBIT", "k", "100"],
        &["SETBIT", "grow", "31", "0"],
        &["GET", "grow"],
        // Integer-encoded and short strings are addressed through their digits.
        &["SET", "n", "12345"],
        &["GETBIT", "n", "2"],
        &["GETBIT", "n", "3"],
        &["SETBIT", "n", "6", "1"],
        &["GET", "n"],
        &["SET", "e", ""],
        &["GETBIT", "e", "0"],
        &["SETBIT", "e", "9", "1"],
        &["GET", "e"],
        // Offset errors come before value errors.
        &["SETBIT", "k", "-1", "1"],
        &["SETBIT", "k", "-1", "5"],
        &["SETBIT", "k", "abc", "1"],
        &["SETBIT", "k", "1.5", "1"],
        &["SETBIT", "k", "#1", "1"],
        &["SETBIT", "k", "4294967296", "1"],
        &["SETBIT", "k", "18446744073709551616", "1"],
        &["SETBIT", "k", " 1", "1"],
        &["SETBIT", "k", "01", "1"],
        &["SETBIT", "k", "0", "2"],
        &["SETBIT", "k", "0", "-1"],
        &["SETBIT", "k", "0", "abc"],
        &["SETBIT", "k", "0", ""],
        &["SETBIT", "k", "0", "01"],
        &["GETBIT", "k", "-1"],
        &["GETBIT", "k", "x"],
        &["GETBIT", "k", "4294967296"],
        &["GETBIT", "nokey", "-1"],
        &["SETBIT", "k", "1"],
        &["SETBIT", "k", "1", "1", "1"],
        &["GETBIT", "k"],
        &["GETBIT", "k", "1", "2"],
        &["GET", "k"],
    ]);
}

#[test]
fn bitcount_matches_redis() {
    let mut d = Differential::start();
    let mut cases: Vec<Vec<String>> = vec![
        vec!["SET".into(), "s".into(), "foobar".into()],
        vec!["BITCOUNT".into(), "s".into()],
        vec!["BITCOUNT".into(), "nokey".into()],
        vec!["BITCOUNT".into(), "nokey".into(), "a".into(), "b".into()],
        vec!["BITCOUNT".into(), "nokey".into(), "0".into()],
        vec![
            "BITCOUNT".into(),
            "nokey".into(),
            "0".into(),
            "1".into(),
            "x".into(),
        ],
        vec!["BITCOUNT".into(), "s".into(), "0".into()],
        vec!["BITCOUNT".into(), "s".into(), "a".into(), "1".into()],
        vec!["BITCOUNT".into(), "s".into(), "0".into(), "b".into()],
        vec![
            "BITCOUNT".into(),
            "s".into(),
            "a".into(),
            "1".into(),
            "x".into(),
        ],
        vec![
            "BITCOUNT".into(),
            "s".into(),
            "0".into(),
            "1".into(),
            "x".into(),
        ],
        vec![
            "BITCOUNT".into(),
            "s".into(),
            "-1".into(),
            "-2".into(),
            "x".into(),
        ],
        vec![
            "BITCOUNT".into(),
            "s".into(),
            "0".into(),
            "1".into(),
            "bit".into(),
            "x".into(),
        ],
        vec!["SET".into(), "e".into(), "".into()],
        vec!["BITCOUNT".into(), "e".into()],
        vec!["BITCOUNT".into(), "e".into(), "0".into(), "-1".into()],
        vec![
            "BITCOUNT".into(),
            "e".into(),
            "0".into(),
            "-1".into(),
            "BIT".into(),
        ],
        vec!["SET".into(), "n".into(), "-987654321".into()],
        vec!["BITCOUNT".into(), "n".into()],
        vec!["BITCOUNT".into(), "n".into(), "1".into(), "3".into()],
    ];
    let bounds = [
        "0",
        "1",
        "2",
        "5",
        "6",
        "7",
        "40",
        "47",
        "48",
        "100",
        "-1",
        "-2",
        "-6",
        "-7",
        "-47",
        "-48",
        "-49",
        "-100",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    for start in bounds {
        for end in bounds {
            for unit in [None, Some("BYTE"), Some("bit")] {
                let mut case = vec!["BITCOUNT".to_string(), "s".into(), start.into(), end.into()];
                case.extend(unit.map(String::from));
                cases.push(case);
            }
        }
    }
    let cases: Vec<Vec<&str>> = cases
        .iter()
        .map(|c| c.iter().map(String::as_str).collect())
        .collect();
    let cases: Vec<&[&str]> = cases.iter().map(Vec::as_slice).collect();
    d.check_both_protocols(&cases);
}

#[test]
fn bitcount_counts_long_strings_exactly() {
    let mut d = Differential::start();
    // Long enough for the word-at-a-time paths, with uneven edges.
    let value: Vec<u8> = (0..1000u32).map(|i| (i * 37 % 256) as u8).collect();
    d.check_bytes(&[b"SET", b"long", &value]);
    for (start, end) in [("0", "-1"), ("3", "997"), ("13", "7990"), ("-999", "-2")] {
        d.check(&["BITCOUNT", "long", start, end]);
        d.check(&["BITCOUNT", "long", start, end, "BIT"]);
    }
}

#[test]
fn bitpos_matches_redis() {
    let mut d = Differential::start();
    d.check_bytes(&[b"SET", b"ones", b"\xff\xff\xff"]);
    d.check_bytes(&[b"SET", b"zeros", b"\x00\x00\x00"]);
    d.check_bytes(&[b"SET", b"mixed", b"\xff\xf0\x00\x0f\xff"]);
    d.check(&["SET", "e", ""]);
    for resp3 in [false, true] {
        d.set_resp3(resp3);
        for args in [
            &["BITPOS", "nokey", "0"][..],
            &["BITPOS", "nokey", "1"],
            &["BITPOS", "nokey", "1", "a"],
            &["BITPOS", "nokey", "0", "5", "10", "BIT"],
            &["BITPOS", "nokey", "1", "0", "1", "foo"],
            &["BITPOS", "nokey", "2"],
            &["BITPOS", "ones", "2"],
            &["BITPOS", "ones", "-1"],
            &["BITPOS", "ones", "x"],
            &["BITPOS", "ones", "01"],
            &["BITPOS", "ones", "1", "a"],
            &["BITPOS", "ones", "1", "0", "a"],
            &["BITPOS", "ones", "1", "0", "a", "foo"],
            &["BITPOS", "ones", "1", "a", "0", "foo"],
            &["BITPOS", "ones", "1", "0", "1", "foo"],
            &["BITPOS", "ones", "0", "0", "1", "bit", "1"],
            &["BITPOS", "ones", "0", "0", "bit"],
            &["BITPOS", "e", "0"],
            &["BITPOS", "e", "1"],
            &["BITPOS", "e", "0", "0"],
            &["BITPOS", "e", "0", "0", "-1"],
            &["BITPOS", "e", "0", "0", "-1", "BIT"],
        ] {
            d.check(args);
        }
        let bounds = [
            "0", "1", "2", "3", "7", "8", "15", "23", "39", "40", "-1", "-2", "-9", "-30", "-100",
        ];
        for key in ["ones", "zeros", "mixed"] {
            for bit in ["0", "1"] {
                d.check(&["BITPOS", key, bit]);
                for start in bounds {
                    d.check(&["BITPOS", key, bit, start]);
                    for end in bounds {
                        d.check(&["BITPOS", key, bit, start, end]);
                        d.check(&["BITPOS", key, bit, start, end, "BYTE"]);
                        d.check(&["BITPOS", key, bit, start, end, "BIT"]);
                    }
                }
            }
        }
    }
}

#[test]
fn bitpos_finds_bits_in_long_strings() {
    let mut d = Differential::start();
    let mut ones = vec![0xffu8; 300];
    ones[257] = 0xfb;
    let mut zeros = vec![0u8; 300];
    zeros[211] = 0x04;
    d.check_bytes(&[b"SET", b"ones", &ones]);
    d.check_bytes(&[b"SET", b"zeros", &zeros]);
    d.check_bytes(&[b"SET", b"allones", &[0xffu8; 100]]);
    for key in ["ones", "zeros", "allones"] {
        for bit in ["0", "1"] {
            d.check(&["BITPOS", key, bit]);
            d.check(&["BITPOS", key, bit, "3"]);
            d.check(&["BITPOS", key, bit, "3", "-1"]);
            d.check(&["BITPOS", key, bit, "17", "2063", "BIT"]);
            d.check(&["BITPOS", key, bit, "1700", "2061", "BIT"]);
            d.check(&["BITPOS", key, bit, "212", "-1"]);
        }
    }
}

#[test]
fn bitop_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["SET", "a", "foobar"],
        &["SET", "b", "abcdefghijklmnopqrstuvwxyz0123456789"],
        &["SET", "c", "12"],
        &["BITOP", "AND", "dest", "a", "b"],
        &["GET", "dest"],
        &["BITOP", "and", "dest", "b", "a"],
        &["GET", "dest"],
        &["BITOP", "OR", "dest", "a", "b", "c"],
        &["GET", "dest"],
        &["BITOP", "Xor", "dest", "a", "b", "c"],
        &["GET", "dest"],
        &["BITOP", "XOR", "dest", "a", "a"],
        &["GET", "dest"],
        &["BITOP", "NOT", "dest", "b"],
        &["GET", "dest"],
        &["BITOP", "NOT", "dest", "c"],
        &["GET", "dest"],
        &["BITOP", "AND", "dest", "a", "nokey"],
        &["GET", "dest"],
        &["BITOP", "OR", "dest", "nokey", "a"],
        &["GET", "dest"],
        &["BITOP", "AND", "dest", "a"],
        &["GET", "dest"],
        // The destination can be a source.
        &["BITOP", "OR", "a", "a", "b"],
        &["GET", "a"],
        // An empty result deletes the destination.
        &["SET", "gone", "x"],
        &["BITOP", "AND", "gone", "nokey", "nokey2"],
        &["GET", "gone"],
        &["SET", "empty", ""],
        &["SET", "gone", "x"],
        &["BITOP", "NOT", "gone", "empty"],
        &["GET", "gone"],
        &["BITOP", "OR", "never", "nokey"],
        &["GET", "never"],
        &["BITOP", "NOT", "dest", "a", "b"],
        &["BITOP", "NOT", "dest", "nokey", "b"],
        &["BITOP", "DIFF", "dest", "a", "b"],
        &["BITOP", "ANDX", "dest", "a"],
        &["BITOP", "", "dest", "a"],
        &["BITOP", "AND", "dest"],
        &["BITOP", "NOT", "dest"],
    ]);
}

#[test]
fn bitop_on_long_strings_matches_redis() {
    let mut d = Differential::start();
    let a: Vec<u8> = (0..1003u32).map(|i| (i * 7 % 256) as u8).collect();
    let b: Vec<u8> = (0..517u32).map(|i| (i * 13 + 5) as u8).collect();
    d.check_bytes(&[b"SET", b"a", &a]);
    d.check_bytes(&[b"SET", b"b", &b]);
    for op in ["AND", "OR", "XOR"] {
        d.check(&["BITOP", op, "d", "a", "b", "a"]);
        d.check(&["GET", "d"]);
        d.check(&["BITOP", op, "d", "b", "a"]);
        d.check(&["GET", "d"]);
    }
    d.check(&["BITOP", "NOT", "d", "a"]);
    d.check(&["GET", "d"]);
    d.check(&["BITCOUNT", "d"]);
}

#[test]
fn bitfield_matches_redis() {
    let mut d = Differential::start();
    d.check_both_protocols(&[
        &["BITFIELD", "k"],
        &["BITFIELD", "k", "OVERFLOW", "SAT"],
        &["BITFIELD", "k", "GET", "u8", "0"],
        &[
            "BITFIELD", "k", "SET", "i8", "0", "-100", "GET", "u8", "0", "GET", "i8", "0",
        ],
        &["GET", "k"],
        &[
            "BITFIELD", "k", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "incrby", "u2", "102",
            "1",
        ],
        &[
            "BITFIELD", "k", "incrby", "u2", "100", "1", "overflow", "sat", "INCRBY", "u2", "102",
            "1",
        ],
        &[
            "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "1", "GET", "u2", "100",
        ],
        &["GET", "k"],
        &[
            "BITFIELD", "k", "SET", "u8", "#1", "255", "GET", "u8", "8", "GET", "u4", "#3",
        ],
        &[
            "BITFIELD",
            "k",
            "SET",
            "i64",
            "#0",
            "-9223372036854775808",
            "GET",
            "i64",
            "0",
            "GET",
            "u63",
            "1",
        ],
        &["BITFIELD", "k", "INCRBY", "i64", "0", "-1"],
        &[
            "BITFIELD", "k", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1",
        ],
        &[
            "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "i64", "0", "-1", "INCRBY", "i64", "0",
            "1",
        ],
        &[
            "BITFIELD",
            "k",
            "SET",
            "i64",
            "0",
            "9223372036854775807",
            "INCRBY",
            "i64",
            "0",
            "1",
        ],
        &[
            "BITFIELD",
            "k",
            "OVERFLOW",
            "SAT",
            "INCRBY",
            "i64",
            "0",
            "9223372036854775807",
        ],
        &[
            "BITFIELD",
            "k",
            "OVERFLOW",
            "WRAP",
            "INCRBY",
            "i64",
            "0",
            "9223372036854775807",
        ],
        &[
            "BITFIELD",
            "k",
            "INCRBY",
            "u63",
            "0",
            "9223372036854775807",
            "INCRBY",
            "u63",
            "0",
            "-9223372036854775808",
        ],
        &[
            "BITFIELD", "k", "OVERFLOW", "SAT", "SET", "u8", "0", "-1", "SET", "u8", "0", "256",
            "SET", "i8", "0", "-200", "SET", "i8", "0", "200",
        ],
        &[
            "BITFIELD", "k", "SET", "u8", "0", "-1", "SET", "u8", "0", "256", "SET", "i8", "0",
            "-200", "SET", "i8", "0", "200",
        ],
        &[
            "BITFIELD", "k", "OVERFLOW", "FAIL", "SET", "u8", "0", "-1", "SET", "u8", "0", "256",
            "SET", "i8", "0", "-128", "SET", "i8", "0", "128",
        ],
        &[
            "BITFIELD", "k", "SET", "i1", "5", "-1", "GET", "i1", "5", "GET", "u1", "5", "INCRBY",
            "i1", "5", "1",
        ],
        &[
            "BITFIELD", "k", "SET", "i5", "13", "-7", "INCRBY", "i5", "13", "-20", "OVERFLOW",
            "SAT", "INCRBY", "i5", "13", "-20", "INCRBY", "i5", "13", "100",
        ],
        &[
            "BITFIELD", "k", "OVERFLOW", "FAIL", "INCRBY", "u5", "13", "-100", "INCRBY", "u5",
            "13", "31", "INCRBY", "u5", "13", "-1",
        ],
        &["GET", "k"],
        // A write grows the string even when every write fails.
        &["BITFIELD", "f", "OVERFLOW", "FAIL", "SET", "u2", "20", "10"],
        &["GET", "f"],
        &[
            "BITFIELD", "g", "GET", "u8", "0", "SET", "u3", "13", "5", "GET", "i16", "5",
        ],
        &["GET", "g"],
        // Reads past the end read zeros.
        &["SET", "s", "foobar"],
        &[
            "BITFIELD",
            "s",
            "GET",
            "i64",
            "0",
            "GET",
            "u63",
            "40",
            "GET",
            "i12",
            "44",
            "GET",
            "u8",
            "4294967295",
        ],
        &["SET", "n", "-123"],
        &["BITFIELD", "n", "GET", "u8", "0", "INCRBY", "u8", "#1", "1"],
        &["GET", "n"],
        &["BITFIELD", "nokey", "GET", "i8", "0"],
        &["BITFIELD_RO", "s", "GET", "i8", "0", "GET", "u4", "#3"],
        &["BITFIELD_RO", "nokey", "GET", "i8", "0"],
        &["BITFIELD_RO", "s"],
        &["BITFIELD_RO", "s", "OVERFLOW", "SAT"],
        &["BITFIELD_RO", "s", "SET", "i8", "0", "1"],
        &[
            "BITFIELD_RO",
            "s",
            "GET",
            "i8",
            "0",
            "INCRBY",
            "i8",
            "0",
            "1",
        ],
        &["BITFIELD_RO", "s", "SET", "i8", "0", "1", "GET", "x", "0"],
        &["BITFIELD_RO", "s", "SET", "i8", "0"],
        &["BITFIELD_RO"],
        &["GET", "s"],
        // Errors.
        &["BITFIELD", "k", "GET", "I8", "0"],
        &["BITFIELD", "k", "GET", "i08", "0"],
        &["BITFIELD", "k", "GET", "i0", "0"],
        &["BITFIELD", "k", "GET", "u0", "0"],
        &["BITFIELD", "k", "GET", "u64", "0"],
        &["BITFIELD", "k", "GET", "i65", "0"],
        &["BITFIELD", "k", "GET", "i", "0"],
        &["BITFIELD", "k", "GET", "", "0"],
        &["BITFIELD", "k", "GET", "x8", "0"],
        &["BITFIELD", "k", "GET", "i-1", "0"],
        &["BITFIELD", "k", "GET", "i64", "#-1"],
        &["BITFIELD", "k", "GET", "i64", "#1"],
        &["BITFIELD", "k", "GET", "i8", "#"],
        &["BITFIELD", "k", "GET", "i8", "##1"],
        &["BITFIELD", "k", "GET", "i8", "-1"],
        &["BITFIELD", "k", "GET", "i8", "a"],
        &["BITFIELD", "k", "GET", "u8", "4294967296"],
        &["BITFIELD", "k", "GET", "u8", "#536870912"],
        &["BITFIELD", "k", "GET", "u4", "#4611686018427387904"],
        &["BITFIELD", "k", "GET", "u2", "#4611686018427387904"],
        &["BITFIELD", "k", "OVERFLOW", "foo"],
        &["BITFIELD", "k", "OVERFLOW"],
        &["BITFIELD", "k", "GET", "i8"],
        &["BITFIELD", "k", "SET", "i8", "0"],
        &["BITFIELD", "k", "INCRBY", "i8", "0"],
        &["BITFIELD", "k", "foo"],
        &["BITFIELD", "k", "GET", "i8", "0", "foo", "1"],
        &["BITFIELD", "k", "SET", "u8", "0", "abc"],
        &["BITFIELD", "k", "SET", "u8", "0", "1.5"],
        &["BITFIELD", "k", "SET", "u8", "0", "99999999999999999999"],
        &["BITFIELD", "k", "INCRBY", "u8", "0", ""],
        &["BITFIELD", "k", "GET", "u8", "0", "SET", "u8", "-1", "1"],
        &["BITFIELD"],
        &["GET", "k"],
    ]);
}

#[test]
fn offsets_are_bounded_by_proto_max_bulk_len() {
    let args = ["--proto-max-bulk-len", "1mb"];
    let mut d = Differential::start_with(&args, &args);
    d.check_all(&[
        &["SETBIT", "k", "8388608", "1"],
        &["GETBIT", "k", "8388608"],
        &["BITFIELD", "k", "GET", "u8", "8388608"],
        &["BITFIELD", "k", "GET", "u8", "#1048576"],
        &["BITFIELD", "k", "SET", "u8", "#1048575", "7"],
        &["SETBIT", "k", "8388607", "1"],
        &["GETBIT", "k", "8388607"],
        &["BITCOUNT", "k"],
        &["BITPOS", "k", "1"],
        &["BITPOS", "k", "0", "-2"],
        &[
            "BITFIELD", "k", "GET", "u16", "8388600", "INCRBY", "u63", "8388607", "3",
        ],
        &["BITCOUNT", "k"],
        &["BITCOUNT", "k", "-10", "-1"],
    ]);
}
