//! Options and commands perfkit does not have: one clear line and perf's usage exit status,
//! never clap's advice to pass the option as a value, a look-alike suggestion or a panic.

mod common;

use common::perfkit;

fn stderr_of(args: &[&str]) -> (String, Option<i32>) {
    let out = perfkit().args(args).output().expect("run perfkit");
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

#[test]
fn a_perf_option_perfkit_lacks_is_named_as_not_supported_yet() {
    for (args, line) in [
        (
            &["record", "--kcore", "--", "true"][..],
            "perfkit record: perf's option --kcore is not supported yet",
        ),
        (
            &["record", "--aio", "true"][..],
            "perfkit record: perf's option --aio is not supported yet",
        ),
        (
            &["record", "--affinity=cpu", "true"][..],
            "perfkit record: perf's option --affinity is not supported yet",
        ),
        (
            // perf takes an unambiguous prefix of a long option; the line gives its name.
            &["record", "--kco", "true"][..],
            "perfkit record: perf's option --kcore is not supported yet",
        ),
        (
            &["stat", "--smi-cost=1", "true"][..],
            "perfkit stat: perf's option --smi-cost is not supported yet",
        ),
    ] {
        let (err, code) = stderr_of(args);
        assert_eq!(err.trim_end(), line, "{args:?}");
        assert_eq!(code, Some(129), "{args:?}");
    }
}

#[test]
fn an_option_perf_lacks_too_is_unknown() {
    let (err, code) = stderr_of(&["stat", "--no-such-option", "true"]);
    assert_eq!(
        err.trim_end(),
        "perfkit stat: unknown option --no-such-option; see 'perfkit stat --help'"
    );
    assert_eq!(code, Some(129));
}

#[test]
fn a_missing_command_says_it_is_not_a_perf_command() {
    // perf's test library skips a test when `perf probe` prints "is not a perf-command".
    let (err, code) = stderr_of(&["kvm"]);
    assert_eq!(
        err.trim_end(),
        "perfkit: 'kvm' is not a perf-command perfkit supports yet"
    );
    assert_eq!(code, Some(1));
    let (err, code) = stderr_of(&["frobnicate"]);
    assert_eq!(
        err.trim_end(),
        "perfkit: 'frobnicate' is not a perf-command. See 'perfkit --help'."
    );
    assert_eq!(code, Some(1));
}

#[test]
fn help_lists_only_commands_that_run() {
    let out = perfkit().arg("--help").output().expect("run");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let commands: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line starts at column 2; wrapped descriptions are indented further.
        .filter(|l| !l[2..].starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.contains(&"record"), "{help}");
    for c in commands {
        let out = perfkit().args([c, "--help"]).output().expect("run");
        assert!(out.status.success(), "perfkit {c} --help failed");
    }
}
