//! Errors in event strings far longer than a terminal line: the error prints (it once
//! panicked past 65,535 characters, the limit of a format width) as a window of the input
//! around the error, with the caret under the offending character.

// A ParseError is large by design (it prints itself); see the crate docs.
#![allow(clippy::result_large_err)]

mod common;

use common::Fixture;
use perfkit_events::ParseError;

/// Parse `input` against the standard fixture machine; it must fail.
fn error_of(input: &str) -> ParseError {
    let fx = Fixture::standard();
    match fx.env().parse(input) {
        Err(e) => e,
        Ok(l) => panic!(
            "{} characters parsed into {} groups",
            input.len(),
            l.groups.len()
        ),
    }
}

/// Check the printed error: short lines, and the caret (second line) under the character of
/// the input at the error position (first line, between quotes; the closing quote when the
/// error is at the end). Returns the printed text.
fn check_caret(input: &str, e: &ParseError) -> String {
    let text = e.to_string();
    let mut lines = text.lines();
    let shown: Vec<char> = lines.next().unwrap().chars().collect();
    let caret_line = lines.next().unwrap();
    for l in text.lines() {
        assert!(
            l.chars().count() < 300,
            "a {}-character line:\n{l}",
            l.len()
        );
    }
    let caret = caret_line.find('^').expect("no caret");
    assert!(
        caret_line[..caret].chars().all(|c| c == ' '),
        "{caret_line}"
    );
    let want = input.chars().nth(e.column()).unwrap_or('\'');
    assert_eq!(
        shown.get(caret),
        Some(&want),
        "caret at {caret} is not under character {} ({want:?}) of the input:\n{text}",
        e.column()
    );
    text
}

#[test]
fn a_typo_at_the_end_of_70000_characters_is_shown_with_its_context() {
    let mut input = "task-clock,".repeat(6400);
    input.push_str("cpu-clockz");
    assert!(input.len() > 70_000);
    let e = error_of(&input);
    assert_eq!(e.pos, input.len() - "cpu-clockz".len());
    assert_eq!(e.message, "unknown event `cpu-clockz`");
    assert_eq!(e.suggestion.as_deref(), Some("cpu-clock"));
    let text = check_caret(&input, &e);
    let first = text.lines().next().unwrap();
    // The start is cut, the end (where the error is) shown to the last character.
    assert!(first.starts_with("event syntax error: '..."), "{first}");
    assert!(
        first.ends_with(",task-clock,task-clock,cpu-clockz'"),
        "{first}"
    );
}

#[test]
fn an_error_in_the_middle_of_a_long_input_is_cut_on_both_sides() {
    let input = format!(
        "{}cpu-clock:u!k,{}",
        "task-clock,".repeat(3200),
        "page-faults,".repeat(3200)
    );
    let e = error_of(&input);
    assert_eq!(e.pos, 3200 * "task-clock,".len() + "cpu-clock:u".len());
    assert_eq!(e.message, "unknown modifier `!`");
    let text = check_caret(&input, &e);
    let first = text.lines().next().unwrap();
    assert!(first.starts_with("event syntax error: '..."), "{first}");
    assert!(first.ends_with("...'"), "{first}");
    assert!(
        first.contains("task-clock,cpu-clock:u!k,page-faults"),
        "{first}"
    );
}

#[test]
fn a_long_unknown_name_is_shortened_in_the_message() {
    let input = "a".repeat(70_000);
    let e = error_of(&input);
    assert_eq!(e.pos, 0);
    // The error keeps the whole name; only its printed form is shortened.
    assert!(e.message.len() > 70_000);
    assert_eq!(e.suggestion, None);
    let text = check_caret(&input, &e);
    let first = text.lines().next().unwrap();
    assert!(
        first.ends_with("aaa...'") && !first.contains("'..."),
        "{first}"
    );
    let second = text.lines().nth(1).unwrap();
    assert!(
        second.contains("^ unknown event `aaa") && second.ends_with("aaa`"),
        "{second}"
    );
}

#[test]
fn long_inputs_of_multibyte_characters_cut_on_character_boundaries() {
    let input = format!(
        "{}cpu-clock:ü{}",
        "task-clock,".repeat(7000),
        "é".repeat(500)
    );
    let e = error_of(&input);
    assert!(input.is_char_boundary(e.pos));
    check_caret(&input, &e);
}

#[test]
fn short_inputs_print_whole() {
    let input = "task-clock,page-faults,cpu-clockz";
    let e = error_of(input);
    let text = check_caret(input, &e);
    assert!(
        text.starts_with(&format!("event syntax error: '{input}'\n")),
        "{text}"
    );
}
