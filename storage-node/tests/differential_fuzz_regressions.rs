//! Sequences the differential command fuzzer (`tests/harness/src/difffuzz`) found, shrunk
//! and kept as plain tests: each is compared byte for byte with redis-server 7.0.

use test_harness::Differential;

/// `SELECT` reads a C `int`: past its range the error is Redis's range error, not
/// `DB index is out of range`.
#[test]
fn select_index_outside_int_range() {
    let mut d = Differential::start();
    d.check_all(&[
        &["SELECT", "9223372036854775807"],
        &["SELECT", "-9223372036854775807"],
        &["SELECT", "2147483648"],
        &["SELECT", "16"],
        &["SELECT", "abc"],
    ]);
}
