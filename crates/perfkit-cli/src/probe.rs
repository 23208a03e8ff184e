//! `perfkit probe`: user-space probes (uprobes) as `perf probe -x BINARY` defines them:
//! add `FUNC[@FILE]`, `FUNC[@FILE]%return`, `FUNC[@FILE]:RLN` or `FILE:LINE`, named
//! `[GROUP:]EVENT=` or perf's way (`-a`, or bare arguments; an inline function at its inlined copies), with arguments fetched from DWARF
//! (`VAR`, `VAR->FIELD`, `arr[N]`, `:TYPE`, `$vars`, globals) or written as given (`%di`,
//! `$retval`), show a function's probe-able lines (`-L FUNC`), delete (`-d`, globs as
//! perf's), list (`-l`), and list a binary's functions (`--funcs`). Kernel probes are
//! refused with the reason. The work is `perfkit_symbols::uprobe_events`, `probe_lines`
//! and `probe_args`.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::Args;
use perfkit_symbols::probe_args::{ArgResolver, ArgSpec, Scope, fill_missing_args, raw_fetch_args};
use perfkit_symbols::probe_lines::DebugLines;
use perfkit_symbols::uprobe_events::{
    ProbeError, UprobeDef, UprobeEvents, function_offset, functions, group_for,
};

use crate::exit_error;

/// perf probe's exit status when a probe cannot be added or deleted.
const PROBE_FAILED: u8 = 254;
/// perf probe's exit status for an argument it cannot parse or use (-EINVAL).
const PROBE_INVALID: u8 = 234;
/// perf probe's exit status when the event exists (-EEXIST).
const PROBE_EXISTS: u8 = 239;

/// Arguments of `perfkit probe`.
#[derive(Args, Debug)]
pub struct ProbeArgs {
    /// The binary (executable or library) to probe.
    #[arg(short = 'x', long = "exec", value_name = "BINARY")]
    pub exec: Option<PathBuf>,
    /// Add a probe: `FUNC`, `FUNC%return`, with `[GROUP:]EVENT=` before it to name it.
    #[arg(short, long, value_name = "PROBE")]
    pub add: Vec<String>,
    /// Delete probes: `GROUP:EVENT` or `EVENT`, with `*` globs.
    #[arg(short, long, value_name = "EVENT")]
    pub del: Vec<String>,
    /// List the probes defined (optionally only those matching a glob).
    #[arg(short, long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "*")]
    pub list: Option<String>,
    /// Show the source lines of FUNC in the binary given with -x, numbered where a probe
    /// can go (`FUNC:RLN`), from its DWARF.
    #[arg(short = 'L', long = "line", value_name = "FUNC")]
    pub line: Option<String>,
    /// List the functions of the binary given with -x (optionally matching a glob).
    #[arg(short = 'F', long, value_name = "FILTER", num_args = 0..=1, default_missing_value = "*")]
    pub funcs: Option<String>,
    /// Add a probe even if an event of that name exists (as `EVENT_1`).
    #[arg(short, long)]
    pub force: bool,
    /// Print nothing but errors.
    #[arg(short, long)]
    pub quiet: bool,
    /// Be more verbose.
    #[arg(short, long)]
    pub verbose: bool,
    /// One probe to add, as with -a (the words joined, as perf joins them).
    #[arg(value_name = "PROBE")]
    pub probes: Vec<String>,
}

fn uprobe_events() -> anyhow::Result<UprobeEvents> {
    let tracefs = perfkit_data::tracing_data::tracefs().context(
        "tracefs is not mounted: mount it with `mount -t tracefs nodev /sys/kernel/tracing`",
    )?;
    if !tracefs.join("uprobe_events").exists() {
        bail!("this kernel has no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS)");
    }
    Ok(UprobeEvents::new(&tracefs))
}

/// Run `perfkit probe`.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    if let Some(filter) = &args.funcs {
        let Some(bin) = &args.exec else {
            bail!(
                "--funcs lists a binary's functions: give it with -x BINARY (kernel functions are not supported)"
            );
        };
        let mut last = String::new();
        for (name, _) in functions(bin)? {
            if name != last && perfkit_events::glob::matches(filter, &name) {
                println!("{name}");
            }
            last = name;
        }
        return Ok(0);
    }
    if let Some(func) = &args.line {
        return show_lines(args.exec.as_deref(), func);
    }
    let mut status = 0;
    for pattern in &args.del {
        status = status.max(delete(pattern, args.quiet)?);
    }
    // As perf: bare words make one probe (`FUNC ARG...`), -a one probe each.
    let bare = (!args.probes.is_empty()).then(|| args.probes.join(" "));
    let adds: Vec<&String> = args.add.iter().chain(&bare).collect();
    if !adds.is_empty() {
        let Some(bin) = &args.exec else {
            for spec in &adds {
                status = status.max(add_kprobe(spec, &args)?);
            }
            return Ok(status);
        };
        for spec in adds {
            status = status.max(add(bin, spec, &args)?);
        }
    }
    if let Some(filter) = &args.list {
        list(filter)?;
    }
    if args.del.is_empty() && args.add.is_empty() && args.probes.is_empty() && args.list.is_none() {
        return Err(exit_error(
            129,
            anyhow::anyhow!("nothing to do: give -x BINARY FUNC, -a, -d, -l or --funcs"),
        ));
    }
    Ok(status)
}

/// perf's failure lines for a probe that cannot be added, and its status.
fn failed(lines: &[&str]) -> anyhow::Result<u8> {
    failed_with(PROBE_FAILED, lines)
}

/// perf's failure lines, with perf's status for the cause (256 - errno).
fn failed_with(status: u8, lines: &[&str]) -> anyhow::Result<u8> {
    for l in lines {
        eprintln!("{l}");
    }
    eprintln!("  Error: Failed to add events.");
    Ok(status)
}

/// perf's refusal of an argument it cannot parse (-EINVAL).
fn parse_error(why: &str) -> anyhow::Result<u8> {
    eprintln!("Semantic error :{why}");
    eprintln!("  Error: Command Parse Error.");
    Ok(PROBE_INVALID)
}

/// The kernel refused the definition (a raw argument it does not take, a type it does
/// not know, two arguments of one name): perf's lines, naming the first raw argument
/// that looks like a newer uprobe syntax as perf does (`$vars` is one on a return probe,
/// where it is not expanded), and perf's status (256 - errno).
fn write_refused(errno: i32, specs: &[ArgSpec], is_return: bool) -> u8 {
    let text = std::io::Error::from_raw_os_error(errno).to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    eprintln!("Failed to write event: {text}");
    if let Some(raw) = specs.iter().find(|s| {
        (s.is_raw() || is_return && !s.is_variable()) && s.var.starts_with(['$', '@', '+', '-'])
    }) {
        eprintln!(
            "Please upgrade your kernel to at least 3.14 to have access to feature {}",
            raw.var
        );
    }
    eprintln!("  Error: Failed to add events.");
    (256 - errno.clamp(1, 255)) as u8
}

fn add(bin: &Path, spec: &str, args: &ProbeArgs) -> anyhow::Result<u8> {
    // `[[GROUP:]EVENT=]POINT [ARG...]`: the event name is in the first word only.
    let mut words = spec.split_whitespace();
    let head = words.next().unwrap_or("");
    let arg_texts: Vec<&str> = words.collect();
    let (name, point) = match EventName::split(head) {
        Ok(x) => x,
        Err(bad) => return parse_error(&bad),
    };
    let (func, is_return) = match point.strip_suffix("%return") {
        Some(f) => (f, true),
        None => (point, false),
    };
    if func.contains([';', '+']) || func.is_empty() || is_return && func.contains(':') {
        return failed(&[&format!(
            "perfkit probe: '{spec}': FUNC[@FILE], FUNC[@FILE]%return, FUNC[@FILE]:RLN and \
             FILE:LINE are supported, with arguments (no offsets or lazy patterns yet)"
        )]);
    }
    let mut specs = Vec::new();
    for a in &arg_texts {
        match ArgSpec::parse(a) {
            Ok(s) => specs.push(s),
            Err(why) => return parse_error(&why),
        }
    }
    // As perf: a return probe fetches no variables (`$retval` and raw arguments only).
    if is_return && specs.iter().any(ArgSpec::is_variable) {
        return parse_error("You can't specify local variable for kretprobe.");
    }
    let bin = std::fs::canonicalize(bin).with_context(|| format!("{}", bin.display()))?;
    let mut points = match probe_points(&bin, func)? {
        // As perf: an inlined copy has no return to probe.
        Place::At(p) if p.inlined && is_return => {
            return failed(&[&format!(
                "Failed to find symbol {func} in {}",
                bin.display()
            )]);
        }
        Place::At(p) => p,
        // perf says no more when FUNC@FILE names no function of that file.
        Place::Missing if func.contains('@') => return failed(&[]),
        Place::Missing => return failed(&[&format!("Probe point '{func}' not found.")]),
        Place::Refused => return Ok(PROBE_FAILED),
    };
    // The DWARF scope the variables are looked up in: the function named, or for
    // FILE:LINE the function declared nearest before the line.
    let (place, line) = match func.split_once(':') {
        Some((p, l)) => (p, l.parse::<u32>().ok()),
        None => (func, None),
    };
    let scope = match (place.split_once('@').map_or(place, |x| x.0), line) {
        (file, Some(line)) if !place.contains('@') && file.contains('.') => Scope::Line(line),
        (f, _) => Scope::Function(f),
    };
    let with_vars = !is_return && specs.iter().any(ArgSpec::needs_dwarf);
    let mut fetch = vec![raw_fetch_args(&specs); points.offsets.len()];
    if with_vars {
        let debug = DebugLines::open(&bin)?;
        let resolver = ArgResolver::open(&bin)?;
        let immediates = kernel_takes_immediates();
        let mut each = Vec::with_capacity(points.offsets.len());
        for off in points.offsets.iter_mut() {
            let Some(mut addr) = debug.address_of_offset(*off) else {
                return failed(&[&format!("Probe point '{func}' not found.")]);
            };
            // As perf: in code built without optimization the arguments are read after the
            // prologue has stored them (the function's second line), not at its entry.
            if points.entry && !resolver.is_optimized(addr) {
                if !args.quiet {
                    eprintln!(
                        "Target program is compiled without optimization. Skipping prologue."
                    );
                    eprintln!("Probe on address {addr:#x} to force probing at the function entry.");
                    eprintln!();
                }
                if let Some(next) = debug.function_at(addr).and_then(|f| {
                    f.lines
                        .values()
                        .flatten()
                        .copied()
                        .filter(|&a| a > addr)
                        .min()
                }) {
                    addr = next;
                    *off = debug.file_offset(addr).unwrap_or(*off);
                }
            }
            let mut warnings = Vec::new();
            let result = resolver.fetch_args_each(addr, &specs, scope, &mut warnings);
            for w in warnings.iter().filter(|_| !args.quiet) {
                eprintln!("{w}");
            }
            match result {
                // Without immediates in the kernel's fetch syntax, perf stops at the
                // first address that lacks a variable.
                Ok(f) if !immediates => match f.into_iter().collect::<Result<Vec<_>, _>>() {
                    Ok(f) => each.push(f.into_iter().map(Ok).collect()),
                    Err(e) => return failed_with(e.status(), &[&e.to_string()]),
                },
                Ok(f) => each.push(f),
                Err(e) => return failed_with(e.status(), &[&e.to_string()]),
            }
        }
        // perf: an argument missing at some of the addresses gets its magic value there.
        match fill_missing_args(each) {
            Ok(f) => fetch = f,
            Err(e) => return failed_with(e.status(), &[&e.to_string()]),
        }
    }
    let events = uprobe_events()?;
    let existing = events.list()?;
    let group = name
        .as_ref()
        .and_then(|n| n.group.clone())
        .unwrap_or_else(|| group_for(&bin));
    let base = name.map_or_else(|| points.event.clone(), |n| n.event);
    // As perf: an event name is taken when any uprobe has it, whatever its group.
    let taken = |e: &str| existing.iter().any(|d| d.event == e);
    let Some(event) = new_event_name(&base, is_return, &taken, args.force) else {
        return Ok(PROBE_EXISTS);
    };
    for (&offset, args) in points.offsets.iter().zip(fetch) {
        let added = events.add(&UprobeDef {
            group: group.clone(),
            event: event.clone(),
            path: bin.clone(),
            offset,
            is_return,
            args,
        });
        if let Err(ProbeError::Tracefs { source, .. }) = &added
            && let Some(errno) = source.raw_os_error()
        {
            return Ok(write_refused(errno, &specs, is_return));
        }
        added?;
    }
    if !args.quiet {
        let described = match points.described.split_once('@') {
            Some((f, file)) if is_return => format!("{f}%return@{file}"),
            _ if is_return => format!("{}%return", points.described),
            _ => points.described.clone(),
        };
        let with = if arg_texts.is_empty() {
            String::new()
        } else {
            let echoed: Vec<String> = specs.iter().map(ArgSpec::echo).collect();
            format!(" with {}", echoed.join(" "))
        };
        let plural = if points.offsets.len() > 1 { "s" } else { "" };
        eprintln!("Added new event{plural}:");
        for _ in &points.offsets {
            eprintln!(
                "  {:<20} (on {described} in {}{with})",
                format!("{group}:{event}"),
                bin.display()
            );
        }
        eprintln!();
        eprintln!("You can now use it in all perf tools, such as:");
        eprintln!();
        eprintln!("\tperf record -e {group}:{event} -aR sleep 1");
        eprintln!();
    }
    Ok(0)
}

/// A kernel probe (`FUNC`, `FUNC%return`) where tracefs has `kprobe_events`, written as
/// perf writes it; refused with the reason where it has not (this machine's kernel has no
/// CONFIG_KPROBE_EVENTS).
fn add_kprobe(spec: &str, args: &ProbeArgs) -> anyhow::Result<u8> {
    let tracefs = perfkit_data::tracing_data::tracefs();
    let Some(tracefs) = tracefs.filter(|t| t.join("kprobe_events").exists()) else {
        eprintln!(
            "perfkit probe: kernel probes need kprobe_events in tracefs, which this kernel lacks \
             (no CONFIG_KPROBE_EVENTS); user-space probes work: perfkit probe -x BINARY FUNC"
        );
        eprintln!("  Error: Failed to add events.");
        return Ok(PROBE_FAILED);
    };
    let (name, point) = match EventName::split(spec) {
        Ok(x) => x,
        Err(bad) => return parse_error(&bad),
    };
    let (func, is_return) = match point.strip_suffix("%return") {
        Some(f) => (f, true),
        None => (point, false),
    };
    if func.contains([':', '@', ' ', ';', '+']) || func.is_empty() {
        eprintln!(
            "Debuginfo-analysis is not supported: perfkit probes kernel functions by name \
             (FUNC, FUNC%return) only"
        );
        eprintln!("  Error: Failed to add events.");
        return Ok(PROBE_FAILED);
    }
    let group = name
        .as_ref()
        .and_then(|n| n.group.clone())
        .unwrap_or_else(|| perfkit_symbols::kprobe::KPROBE_GROUP.to_owned());
    let event = event_base(
        &name.map_or_else(|| func.to_owned(), |n| n.event),
        is_return,
    );
    let kallsyms = perfkit_symbols::Kallsyms::from_file(Path::new("/proc/kallsyms"))?;
    let line = match perfkit_symbols::kprobe::kprobe_definition(
        &kallsyms, func, &group, &event, is_return,
    ) {
        Ok(l) => l,
        Err(e @ perfkit_symbols::uprobe_events::ProbeError::NotFound(_)) => {
            eprintln!("{e}");
            eprintln!("  Error: Failed to add events.");
            return Ok(PROBE_FAILED);
        }
        Err(e) => return Err(e.into()),
    };
    UprobeEvents::kprobes(&tracefs).add_line(&line)?;
    if !args.quiet {
        let ret = if is_return { "%return" } else { "" };
        eprintln!("Added new event:");
        eprintln!("  {:<20} (on {func}{ret})", format!("{group}:{event}"));
        eprintln!();
        eprintln!("You can now use it in all perf tools, such as:");
        eprintln!();
        eprintln!("\tperf record -e {group}:{event} -aR sleep 1");
        eprintln!();
    }
    Ok(0)
}

/// A probe's `[GROUP:]EVENT=` prefix (perf's `parse_perf_probe_event_name`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct EventName {
    /// The group, instead of `probe_BINARY` (or `probe` for kernel probes).
    group: Option<String>,
    /// The event's name.
    event: String,
}

impl EventName {
    /// Split a probe's first word into its event name, if it has one, and the point: as
    /// perf, the name is what comes before an `=` met before any of `; @ + %`, and its
    /// group and event must follow C's naming rule (else perf's semantic error, naming
    /// the part refused).
    fn split(head: &str) -> Result<(Option<EventName>, &str), String> {
        let Some((name, point)) = head
            .find([';', '=', '@', '+', '%'])
            .filter(|&i| head.as_bytes()[i] == b'=')
            .map(|i| (&head[..i], &head[i + 1..]))
        else {
            return Ok((None, head));
        };
        let bad = |part: &str| {
            format!("{part} is bad for event name -it must follow C symbol-naming rule.")
        };
        let (group, event) = match name.split_once(':') {
            Some((g, _)) if !is_c_name(g) => return Err(bad(g)),
            Some((g, e)) => (Some(g.to_owned()), e),
            None => (None, name),
        };
        if !is_c_name(event) {
            return Err(bad(event));
        }
        let event = event.to_owned();
        Ok((Some(EventName { group, event }), point))
    }
}

/// perf's `is_c_func_name`: a letter or `_`, then letters, digits and `_`.
fn is_c_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// perf's base for an event's name (`get_new_event_name`): a leading `.` dropped, cut at
/// the first `.` or `@` after its first character (`foo.isra.0`: `foo`).
fn event_stem(name: &str) -> &str {
    let name = name.strip_prefix('.').unwrap_or(name);
    match name.find(['.', '@']) {
        Some(i) if i > 0 => &name[..i],
        _ => name,
    }
}

/// The event's name before any `_N` suffix: its stem, with `__return` for a return probe
/// (a name given with `EVENT=` too, as perf).
fn event_base(name: &str, is_return: bool) -> String {
    let ret = if is_return { "__return" } else { "" };
    format!("{}{ret}", event_stem(name))
}

/// An unused event name as perf picks one: the base name; if that is `taken`, perf's
/// "already exists" lines and `None`, or with `force`, the stem with the first free `_N`
/// (without `__return`, as perf writes it).
fn new_event_name(
    name: &str,
    is_return: bool,
    taken: &dyn Fn(&str) -> bool,
    force: bool,
) -> Option<String> {
    let event = event_base(name, is_return);
    if !taken(&event) {
        return Some(event);
    }
    if !force {
        eprintln!("Error: event \"{event}\" already exists.");
        eprintln!(" Hint: Remove existing event by 'perf probe -d'");
        eprintln!("       or force duplicates by 'perf probe -f'");
        eprintln!("       or set 'force=yes' in BPF source.");
        eprintln!("  Error: Failed to add events.");
        return None;
    }
    let stem = event_stem(name);
    // perf tries suffixes up to MAX_EVENT_INDEX (1024).
    (1..1024).map(|i| format!("{stem}_{i}")).find(|e| !taken(e))
}

/// Where a probe goes: file offsets, perf's default event name and perf's description.
struct Points {
    offsets: Vec<u64>,
    event: String,
    described: String,
    /// At a function's entry (`FUNC`, `FUNC@FILE`), not at a line.
    entry: bool,
    /// At the entries of an inline function's copies.
    inlined: bool,
}

/// What a probe place resolves to.
enum Place {
    At(Points),
    /// No such function or line.
    Missing,
    /// Refused with perf's messages, printed.
    Refused,
}

/// The probe points of `FUNC[@FILE]`, `FUNC[@FILE]:RLN` or `FILE:LINE` (a file spec has a
/// `.` before its `:`, as perf tells them apart) in `bin`.
fn probe_points(bin: &Path, point: &str) -> anyhow::Result<Place> {
    let (place, line) = match point.split_once(':') {
        Some((p, l)) => (p, Some(l)),
        None => (point, None),
    };
    let (func, file) = match place.split_once('@') {
        Some((f, file)) => (f, Some(file)),
        None => (place, None),
    };
    if func.is_empty() || file.is_some_and(str::is_empty) {
        return Ok(Place::Missing);
    }
    let Some(line) = line else {
        let Some(file) = file else {
            return match function_offset(bin, point) {
                Ok(o) => Ok(Place::At(Points {
                    offsets: vec![o],
                    event: point.to_owned(),
                    described: point.to_owned(),
                    entry: true,
                    inlined: false,
                })),
                Err(ProbeError::NotFound(_)) => inline_points(bin, point),
                Err(e) => Err(e.into()),
            };
        };
        // FUNC@FILE: the function of that name defined in that source file.
        let debug = DebugLines::open(bin)?;
        let Some(f) = debug.function_in(func, Some(file)) else {
            return Ok(Place::Missing);
        };
        let offsets: Vec<u64> = f
            .ranges
            .first()
            .and_then(|r| debug.file_offset(r.0))
            .into_iter()
            .collect();
        if offsets.is_empty() {
            return Ok(Place::Missing);
        }
        return Ok(Place::At(Points {
            offsets,
            event: func.to_owned(),
            described: point.to_owned(),
            entry: true,
            inlined: false,
        }));
    };
    let line: u32 = line.parse().map_err(|_| {
        exit_error(
            PROBE_FAILED,
            anyhow::anyhow!("There is non-digit char in line number ('{point}')."),
        )
    })?;
    if line == 0 && (file.is_some() || !place.contains('.')) {
        // As perf: line 0 is no line, the function itself.
        return probe_points(bin, place);
    }
    let debug = DebugLines::open(bin)?;
    let (addrs, event, described) = if file.is_none() && place.contains('.') {
        let found = debug.file_line(place, line);
        let Some((_, f)) = found.first() else {
            return Ok(Place::Missing);
        };
        let addrs: Vec<u64> = found.iter().map(|x| x.0).collect();
        if let Some(other) = f.shared_line(line, &addrs) {
            return Ok(shared_line(format!("{}:{other}", f.file)));
        }
        // perf names the event after the scope of the first address: the function, or
        // the inlined function whose body the line is in.
        let name = ArgResolver::open(bin)
            .ok()
            .and_then(|r| r.line_scope_name(addrs[0], line))
            .unwrap_or_else(|| f.name.clone());
        (addrs, name, format!("@{place}:{line}"))
    } else {
        let Some(f) = debug.function_in(func, file) else {
            return Ok(Place::Missing);
        };
        let addrs = f
            .lines
            .get(&(f.decl_line + line))
            .cloned()
            .unwrap_or_default();
        if let Some(other) = f.shared_line(f.decl_line + line, &addrs) {
            return Ok(shared_line(format!(
                "{func}:{}",
                other.saturating_sub(f.decl_line)
            )));
        }
        let at = file.map(|f| format!("@{f}")).unwrap_or_default();
        (
            addrs,
            format!("{func}_L{line}"),
            format!("{func}:{line}{at}"),
        )
    };
    let offsets: Vec<u64> = addrs.iter().filter_map(|&a| debug.file_offset(a)).collect();
    if offsets.is_empty() {
        return Ok(Place::Missing);
    }
    Ok(Place::At(Points {
        offsets,
        event,
        described,
        entry: false,
        inlined: false,
    }))
}

/// An inline function without a copy of its own: its inlined copies, each probed at its
/// entry, as perf does (no prologue is skipped there).
fn inline_points(bin: &Path, func: &str) -> anyhow::Result<Place> {
    let Ok(resolver) = ArgResolver::open(bin) else {
        return Ok(Place::Missing);
    };
    let debug = DebugLines::open(bin)?;
    let offsets: Vec<u64> = resolver
        .inline_entries(func)?
        .into_iter()
        .filter_map(|a| debug.file_offset(a))
        .collect();
    if offsets.is_empty() {
        return Ok(Place::Missing);
    }
    Ok(Place::At(Points {
        offsets,
        event: func.to_owned(),
        described: func.to_owned(),
        entry: false,
        inlined: true,
    }))
}

/// perf's refusal of a line whose code begins another line (a function's first line is its
/// declaration's).
fn shared_line(instead: String) -> Place {
    eprintln!("This line is sharing the address with other lines.");
    eprintln!("Please try to probe at {instead} instead.");
    eprintln!("  Error: Failed to add events.");
    Place::Refused
}

/// `-L FUNC[@FILE][:RANGE]` or `-L FILE[:RANGE]`: perf's listing of those lines.
fn show_lines(bin: Option<&Path>, spec: &str) -> anyhow::Result<u8> {
    let Some(bin) = bin else {
        bail!(
            "-L shows lines of a binary: give it with -x BINARY (kernel functions are not supported)"
        );
    };
    let range = perfkit_symbols::probe_range::LineRange::parse(spec)
        .map_err(|m| exit_error(129, anyhow::anyhow!("{m}")))?;
    let debug = DebugLines::open(bin)?;
    let Some(listing) = debug.range_listing(&range) else {
        // perf's words and status (-ENOENT, or -EOPNOTSUPP for a file it has no lines of).
        let (what, code) = if range.func.is_some() {
            ("Specified source line is not found.", PROBE_FAILED)
        } else {
            ("Debuginfo analysis failed.", 161)
        };
        eprintln!("{what}");
        eprintln!("  Error: Failed to show lines.");
        return Ok(code);
    };
    let source = std::fs::read_to_string(&listing.file).map_err(|e| {
        exit_error(
            PROBE_FAILED,
            anyhow::Error::new(e).context(format!("Failed to open {}", listing.file)),
        )
    })?;
    print!("{}", listing.render(&source));
    Ok(0)
}

fn delete(pattern: &str, quiet: bool) -> anyhow::Result<u8> {
    let events = uprobe_events()?;
    let (gpat, epat) = pattern.split_once(':').unwrap_or(("*", pattern));
    let mut hit = false;
    let mut defs = events.list()?;
    // An event probed at several addresses has several lines: it goes once.
    defs.sort_by(|a, b| (&a.group, &a.event).cmp(&(&b.group, &b.event)));
    defs.dedup_by(|a, b| a.group == b.group && a.event == b.event);
    for d in defs {
        if perfkit_events::glob::matches(gpat, &d.group)
            && perfkit_events::glob::matches(epat, &d.event)
        {
            events.remove(&d.group, &d.event)?;
            hit = true;
            if !quiet {
                eprintln!("Removed event: {}:{}", d.group, d.event);
            }
        }
    }
    if !hit {
        eprintln!("\"{pattern}\" does not hit any event.");
        eprintln!("  Error: Failed to delete events.");
        return Ok(PROBE_FAILED);
    }
    Ok(0)
}

/// perf's `-l` description of an address in an inlined copy of a function
/// (`FUNC:RLN@FILE`), where there is one.
fn inline_description(debug: &DebugLines, path: &Path, addr: u64) -> Option<String> {
    let f = debug.function_at(addr)?;
    if f.ranges.first().is_some_and(|r| r.0 == addr) {
        return None;
    }
    let line = f
        .lines
        .iter()
        .find(|(_, addrs)| addrs.contains(&addr))
        .map_or(0, |(l, _)| *l);
    let (func, rel) = ArgResolver::open(path)
        .ok()?
        .inline_description(addr, line)?;
    // perf writes no `:0` (its synthesize_perf_probe_point prints a line only when it
    // is not 0: an inlined copy's entry on its caller's declaration line).
    Some(if rel == 0 {
        format!("{func}@{}", f.file)
    } else {
        format!("{func}:{rel}@{}", f.file)
    })
}

fn list(filter: &str) -> anyhow::Result<()> {
    let events = uprobe_events()?;
    let mut defs = events.list()?;
    // perf lists the definition lines sorted as text (its strlist of uprobe_events):
    // by kind (`p` before `r`), group, event, then address.
    defs.sort_by_key(UprobeDef::definition);
    defs.dedup_by_key(|d| d.definition());
    for d in defs {
        let full = format!("{}:{}", d.group, d.event);
        if !perfkit_events::glob::matches(filter, &full)
            && !perfkit_events::glob::matches(filter, &d.event)
        {
            continue;
        }
        let ret = if d.is_return { "%return" } else { "" };
        // With DWARF, perf says where in the source: `FUNC@FILE`, `FUNC:RLN@FILE`.
        let debug = DebugLines::open(&d.path).ok();
        let described = debug.as_ref().and_then(|dl| {
            let addr = dl.address_of_offset(d.offset)?;
            let s = inline_description(dl, &d.path, addr).or_else(|| dl.describe(addr))?;
            Some(match s.split_once('@') {
                Some((at, file)) => format!("{at}{ret}@{file}"),
                None => format!("{s}{ret}"),
            })
        });
        let func = described.unwrap_or_else(|| {
            let name = functions(&d.path)
                .ok()
                .and_then(|fs| fs.into_iter().find(|(_, off)| *off == d.offset))
                .map_or_else(|| format!("{:#x}", d.offset), |(n, _)| n);
            format!("{name}{ret}")
        });
        let names: Vec<&str> = d.arg_names().collect();
        let with = if names.is_empty() {
            String::new()
        } else {
            format!(" with {}", names.join(" "))
        };
        println!("  {full:<20} (on {func} in {}{with})", d.path.display());
    }
    Ok(())
}

/// Whether the kernel's probe fetch syntax has immediates (`\\imm-value` in tracefs'
/// README), perf's `immediate_value_is_supported`: then a variable missing at some of a
/// probe's addresses is filled in there rather than refusing the probe.
fn kernel_takes_immediates() -> bool {
    [
        "/sys/kernel/tracing/README",
        "/sys/kernel/debug/tracing/README",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .is_some_and(|r| r.contains("\\imm-value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(group: Option<&str>, event: &str) -> Option<EventName> {
        Some(EventName {
            group: group.map(str::to_owned),
            event: event.to_owned(),
        })
    }

    #[test]
    fn group_and_event_names_split_as_perf_splits_them() {
        assert_eq!(
            EventName::split("mygrp:myev=f%return"),
            Ok((named(Some("mygrp"), "myev"), "f%return"))
        );
        assert_eq!(EventName::split("ev=f"), Ok((named(None, "ev"), "f")));
        // An `=` after `@`, `;`, `+` or `%` names no event (perf's strpbrk of ";=@+%").
        assert_eq!(EventName::split("f@a=b.c"), Ok((None, "f@a=b.c")));
        assert_eq!(EventName::split("f:3"), Ok((None, "f:3")));
        let bad =
            |s: &str| format!("{s} is bad for event name -it must follow C symbol-naming rule.");
        assert_eq!(EventName::split("1bad:ev=f"), Err(bad("1bad")));
        assert_eq!(EventName::split("grp:b-d=f"), Err(bad("b-d")));
        assert_eq!(EventName::split(":ev=f"), Err(bad("")));
        assert_eq!(EventName::split("grp:=f"), Err(bad("")));
        assert_eq!(EventName::split("a:b:c=f"), Err(bad("b:c")));
    }

    #[test]
    fn new_names_are_perfs() {
        let none = |_: &str| false;
        assert_eq!(
            new_event_name("ev", true, &none, false).as_deref(),
            Some("ev__return")
        );
        assert_eq!(
            new_event_name("foo.isra.0", false, &none, false).as_deref(),
            Some("foo")
        );
        assert_eq!(
            new_event_name(".x@y", false, &none, false).as_deref(),
            Some("x")
        );
        let taken = |e: &str| ["ev", "ev__return", "ev_1"].contains(&e);
        assert_eq!(new_event_name("ev", true, &taken, false), None);
        // perf's suffix goes on the stem, without `__return`.
        assert_eq!(
            new_event_name("ev", true, &taken, true).as_deref(),
            Some("ev_2")
        );
    }
}
