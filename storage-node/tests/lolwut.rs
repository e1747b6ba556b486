//! LOLWUT against a real redis-server 7.0: byte for byte where Redis draws without randomness
//! (the plain form, other versions, errors, and version 5's first two rows of squares, which
//! are never disordered), by shape where it draws at random (lines, characters per line, the
//! closing text).

use slotproxy::resp::Frame;
use test_harness::Differential;

#[test]
fn deterministic_forms_match_byte_for_byte() {
    let mut d = Differential::start();
    let commands: &[&[&str]] = &[
        &["LOLWUT"],
        &["LOLWUT", "10", "20"],
        &["LOLWUT", "VERSION"],
        &["LOLWUT", "VERSION", "7"],
        &["LOLWUT", "VERSION", "4"],
        &["LOLWUT", "VERSION", "-1"],
        &["LOLWUT", "VERSION", "x"],
        &["LOLWUT", "VERSION", "5", "x"],
        &["LOLWUT", "VERSION", "5", "10", "y"],
        &["LOLWUT", "VERSION", "6", "x"],
        &["LOLWUT", "VERSION", "5", "66", "8", "2"],
        &["LOLWUT", "VERSION", "5", "40", "3", "1"],
        &["LOLWUT", "VERSION", "5", "1", "1", "1"],
        &["LOLWUT", "VERSION", "5", "3", "1", "1"],
        &["LOLWUT", "VERSION", "5", "0", "0", "0"],
        &["LOLWUT", "VERSION", "5", "2000", "300", "2"],
        &["LOLWUT", "VERSION", "5", "17", "5", "-4"],
    ];
    d.check_both_protocols(commands);
}

/// Lines and pixels per line of a LOLWUT reply's text.
fn shape(frame: &Frame) -> Vec<usize> {
    let text = match frame {
        Frame::Bulk(text) | Frame::Verbatim { text, .. } => {
            String::from_utf8_lossy(text).into_owned()
        }
        other => panic!("LOLWUT answered {other:?}"),
    };
    // A skyline pixel is a colour escape, a space and a reset; a Braille one a character.
    text.split('\n')
        .map(|line| match line.matches("\x1b[0m").count() {
            0 => line.chars().count(),
            pixels => pixels,
        })
        .collect()
}

fn last_lines(frame: &Frame, count: usize) -> Vec<String> {
    let text = String::from_utf8_lossy(frame.as_bytes().expect("text")).into_owned();
    let lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    lines[lines.len().saturating_sub(count)..].to_vec()
}

#[test]
fn random_drawings_have_redis_shape() {
    let mut d = Differential::start();
    for command in [
        &["LOLWUT", "VERSION", "5"][..],
        &["LOLWUT", "VERSION", "5", "30", "5", "9"],
        &["LOLWUT", "VERSION", "6"],
        &["LOLWUT", "VERSION", "6", "33", "7"],
        &["LOLWUT", "VERSION", "6", "0", "5000"],
    ] {
        let (node, redis) = d.both(command);
        assert_eq!(shape(&node), shape(&redis), "{command:?}");
        assert_eq!(last_lines(&node, 2), last_lines(&redis, 2), "{command:?}");
    }
}
