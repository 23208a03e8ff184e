//! Usage errors in perf's words: an option perf has but perfkit does not yet gets one clear
//! line ("perfkit record: perf's option --foo is not supported yet"), not clap's advice to
//! pass it as a value or a look-alike suggestion; a perf command perfkit lacks says so in the
//! words perf's scripts look for ("is not a perf-command").

use std::ffi::OsString;

use clap::error::{ContextKind, ContextValue, ErrorKind};

use crate::perf_options::{is_perf_command, perf_name};

/// Exit status of a usage error, as perf's option parser exits.
pub const USAGE_EXIT: u8 = 129;

/// Top-level options that take a value (skipped when looking for the subcommand's name).
const TOP_LEVEL_WITH_VALUE: &[&str] = &["--buildid-dir"];

/// The one line (and exit status) to print for clap's error `e` on command line `argv`,
/// or `None` to let clap print its own (help, version, bad values).
pub fn explain(e: &clap::Error, argv: &[OsString]) -> Option<(String, u8)> {
    match e.kind() {
        ErrorKind::UnknownArgument => {
            let arg = context_str(e, ContextKind::InvalidArg)?;
            let opt = arg.split_once('=').map_or(arg.as_str(), |(o, _)| o);
            let Some(cmd) = subcommand_of(argv) else {
                return Some((
                    format!("perfkit: unknown option {opt}; see 'perfkit --help'"),
                    USAGE_EXIT,
                ));
            };
            let line = if let Some(name) = perf_name(&cmd, opt) {
                format!("perfkit {cmd}: perf's option {name} is not supported yet")
            } else {
                format!("perfkit {cmd}: unknown option {opt}; see 'perfkit {cmd} --help'")
            };
            Some((line, USAGE_EXIT))
        }
        ErrorKind::InvalidSubcommand => {
            let name = context_str(e, ContextKind::InvalidSubcommand)?;
            let line = if is_perf_command(&name) {
                format!("perfkit: '{name}' is not a perf-command perfkit supports yet")
            } else {
                format!("perfkit: '{name}' is not a perf-command. See 'perfkit --help'.")
            };
            Some((line, 1))
        }
        _ => None,
    }
}

fn context_str(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The subcommand named on `argv` (the first word after the program's top-level options).
fn subcommand_of(argv: &[OsString]) -> Option<String> {
    let mut words = argv.iter().skip(1).map(|a| a.to_string_lossy());
    while let Some(w) = words.next() {
        if TOP_LEVEL_WITH_VALUE.contains(&w.as_ref()) {
            words.next();
        } else if !w.starts_with('-') {
            return Some(w.into_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::subcommand_of;

    #[test]
    fn subcommand_skips_top_level_options() {
        let argv: Vec<std::ffi::OsString> = ["perfkit", "--buildid-dir", "/x", "record", "-a"]
            .iter()
            .map(Into::into)
            .collect();
        assert_eq!(subcommand_of(&argv).as_deref(), Some("record"));
    }
}
