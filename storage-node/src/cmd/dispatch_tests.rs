//! The command look-up through a client's remembered last command.

use std::cell::Cell;

use super::{Dispatch, LastLookup};

fn name_of(dispatch: &Dispatch, name: &[u8], last: &Cell<LastLookup>) -> Option<&'static str> {
    dispatch
        .get_remembered(name, last)
        .map(|command| command.spec.name.as_str())
}

#[test]
fn a_remembered_name_finds_the_same_command_and_others_are_looked_up() {
    let dispatch = Dispatch::new();
    let last = Cell::new(LastLookup::default());
    assert_eq!(name_of(&dispatch, b"GET", &last), Some("get"));
    // Served from memory now.
    assert_eq!(name_of(&dispatch, b"GET", &last), Some("get"));
    // Another spelling, another command, an unknown one: each as a plain look-up finds it.
    assert_eq!(name_of(&dispatch, b"get", &last), Some("get"));
    assert_eq!(name_of(&dispatch, b"SET", &last), Some("set"));
    assert_eq!(name_of(&dispatch, b"GETX", &last), None);
    assert_eq!(name_of(&dispatch, b"SET", &last), Some("set"));
    assert_eq!(name_of(&dispatch, b"", &last), None);
    // Longer than what is remembered: still found, every time.
    let long = b"CLUSTER".repeat(4);
    assert_eq!(name_of(&dispatch, &long, &last), None);
    assert_eq!(
        name_of(&dispatch, b"zrangebyscore", &last),
        Some("zrangebyscore")
    );
}

#[test]
fn a_renamed_command_is_remembered_under_its_new_name_only() {
    let renames = [("get".to_string(), "GET".to_string(), "fetch".to_string())];
    let dispatch = Dispatch::with_renames(&renames);
    let last = Cell::new(LastLookup::default());
    assert_eq!(name_of(&dispatch, b"FETCH", &last), Some("get"));
    assert_eq!(name_of(&dispatch, b"FETCH", &last), Some("get"));
    assert_eq!(name_of(&dispatch, b"GET", &last), None);
}
