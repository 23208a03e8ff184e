//! The event-list parser: perf's `-e` syntax to ready-to-open attrs.
//!
//! ```text
//! list     := item (',' item)*
//! item     := '{' event (',' event)* '}' (':' mods)?  |  event
//! event    := 'mem:' ADDR ('/' LEN)? (':' [rwx]+)? (':' mods)?
//!           | ('uprobe' | 'uretprobe') ':' PATH ':' (SYMBOL ('+' OFF)? | ADDR) (':' mods)?
//!           | PMU '/' terms? '/' (':'? mods)?           PMU from sysfs, `pmu_*` prefixes too
//!           | NAME ('/' terms? '/')? (':' mods)?        hw, sw, cache, rHEX, sysfs alias
//!                                          (after a `/`, the `:` before mods is optional)
//!           | TYPE ':' CONFIG (':' mods)?               numeric
//!           | SUBSYS ':' EVENT ('/' terms? '/')? (':' mods)?   tracepoint, globs allowed
//!           | LIBPFM-STRING                             `pmu::event:umask:period=N`
//! terms    := term (',' term)*
//! term     := NAME ('=' (NUMBER | WORD | '"' ... '"' | '\'' ... '\''))?
//! mods     := segment (':' segment)*;  segment := [ukhGHIpPSDWeb]+ | NAME '=' VALUE
//! ```

use std::ffi::CString;

use perfkit_sys::{self as sys, attr_flags as f, perf_event_attr};

use crate::env::Env;
use crate::error::{ParseError, closest};
use crate::glob;
use crate::names;
use crate::pmu::ConfigWord;
use crate::pmu::Pmu;

/// How to collect callchains (`call-graph=` term).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[non_exhaustive]
pub enum CallGraph {
    /// `call-graph=no`
    None,
    /// `call-graph=fp`: frame pointers (`PERF_SAMPLE_CALLCHAIN`).
    Fp,
    /// `call-graph=dwarf`: user stack copies (`PERF_SAMPLE_REGS_USER|STACK_USER`).
    Dwarf,
    /// `call-graph=lbr`: last branch records.
    Lbr,
}

/// Settings the user asked for explicitly, which a command must not override with its
/// defaults (perf's per-event config terms).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserTerms {
    /// `period=N` (or `:period=N`) was given.
    pub period: bool,
    /// `freq=N` was given.
    pub freq: bool,
    /// `inherit` (Some(true)) or `no-inherit` (Some(false)).
    pub inherit: Option<bool>,
    /// `call-graph=...`
    pub call_graph: Option<CallGraph>,
    /// `stack-size=N` (bytes of user stack for dwarf callchains).
    pub stack_size: Option<u32>,
    /// `max-stack=N` (callchain depth, also in `attr.sample_max_stack`).
    pub max_stack: Option<u16>,
}

/// One event to open.
#[derive(Debug)]
pub struct ParsedEvent {
    /// The name perf would print: as the user wrote it (`cycles:u`, `msr/tsc/`), the
    /// expanded name for globs (`syscalls:sys_enter_read`), `pmu/name/` for hybrid copies,
    /// or the `name=` term.
    pub name: String,
    /// The attr, ready for `perf_event_open`: type, config words, `exclude_*` from
    /// modifiers (and perf's default `exclude_guest`), `precise_ip`, `pinned`,
    /// `exclusive`, `sample_period`/`sample_freq` from terms (1 for breakpoints and
    /// tracepoints, as perf), `size` = 136. Commands add `disabled`, `read_format`,
    /// `sample_type` and so on.
    ///
    /// For uprobes, `config1` is a pointer to [`uprobe_path`](Self::uprobe_path): the attr
    /// is valid only while this `ParsedEvent` lives (clones re-point it to their own copy).
    pub attr: perf_event_attr,
    /// Multiply counts by this (sysfs `.scale`), 1.0 otherwise.
    pub scale: f64,
    /// Unit of the scaled count (sysfs `.unit`), empty otherwise.
    pub unit: String,
    /// PMU name for sysfs PMU events (`msr`, `cpu_core`), None for generic events.
    pub pmu: Option<String>,
    /// Tracepoint filter (`filter="..."` term or [`EventList::set_filter`]), to apply with
    /// `PERF_EVENT_IOC_SET_FILTER` after opening.
    pub filter: Option<String>,
    /// Explicit terms.
    pub terms: UserTerms,
    /// CPUs to open on: the PMU's `cpumask` (uncore) or `cpus` (hybrid core PMU).
    pub cpus: Option<Vec<u32>>,
    /// The uprobe's binary, owned here because `attr.config1` points at it.
    pub uprobe_path: Option<CString>,
    /// `:S` on this event: read the other group members in its samples
    /// (`PERF_SAMPLE_READ`).
    pub sample_read: bool,
    /// `:P`: the highest `precise_ip` the PMU takes; open with 3 and lower on EINVAL.
    pub precise_max: bool,
    /// `:W`: weak group; if the group does not fit, open its members alone.
    pub weak_group: bool,
    /// `:b`: count with a BPF counter (accepted, recorded here).
    pub bpf_counter: bool,
    /// Where the event begins in the input (byte offset), for messages.
    pub pos: usize,
    /// Whether `G` or `H` was given (perf's `exclude_GH`), for group modifiers.
    exclude_gh: bool,
    /// NAMED / EXPANDED bits.
    marks: u8,
}

impl Clone for ParsedEvent {
    fn clone(&self) -> Self {
        let mut c = ParsedEvent {
            name: self.name.clone(),
            attr: self.attr,
            scale: self.scale,
            unit: self.unit.clone(),
            pmu: self.pmu.clone(),
            filter: self.filter.clone(),
            terms: self.terms.clone(),
            cpus: self.cpus.clone(),
            uprobe_path: self.uprobe_path.clone(),
            sample_read: self.sample_read,
            precise_max: self.precise_max,
            weak_group: self.weak_group,
            bpf_counter: self.bpf_counter,
            pos: self.pos,
            exclude_gh: self.exclude_gh,
            marks: self.marks,
        };
        if let Some(p) = &c.uprobe_path {
            c.attr.config1 = p.as_ptr() as u64;
        }
        c
    }
}

impl ParsedEvent {
    fn new(name: String, attr: perf_event_attr, pos: usize) -> ParsedEvent {
        ParsedEvent {
            name,
            attr,
            scale: 1.0,
            unit: String::new(),
            pmu: None,
            filter: None,
            terms: UserTerms::default(),
            cpus: None,
            uprobe_path: None,
            sample_read: false,
            precise_max: false,
            weak_group: false,
            bpf_counter: false,
            pos,
            exclude_gh: false,
            marks: 0,
        }
    }

    /// Whether this is a tracepoint (record wants `PERF_SAMPLE_RAW` for it).
    pub fn is_tracepoint(&self) -> bool {
        self.attr.type_ == sys::PERF_TYPE_TRACEPOINT
    }
}

/// Events that are opened together (`{a,b}`), or a single event.
#[derive(Clone, Debug)]
pub struct EventGroup {
    /// Members; the first leads.
    pub members: Vec<ParsedEvent>,
    /// `:S` on the group: sample the leader only and read the members in its samples.
    pub leader_sampling: bool,
    /// Whether the user wrote braces (a real group, opened with `group_fd`).
    pub is_group: bool,
    /// `:W` on the group.
    pub weak: bool,
}

/// The parsed `-e` argument(s).
#[derive(Clone, Debug, Default)]
pub struct EventList {
    /// Groups in order; ungrouped events are groups of one with `is_group` false.
    pub groups: Vec<EventGroup>,
}

impl EventList {
    /// All events in order.
    pub fn events(&self) -> impl Iterator<Item = &ParsedEvent> {
        self.groups.iter().flat_map(|g| g.members.iter())
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.groups.iter().map(|g| g.members.len()).sum()
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Append another list (several `-e` options).
    pub fn extend(&mut self, other: EventList) {
        self.groups.extend(other.groups);
    }

    /// perf's `--filter`: set the filter of the last event(s) parsed, which must be
    /// tracepoints (all the expansions of the last glob get it).
    pub fn set_filter(&mut self, filter: &str) -> Result<(), String> {
        let Some(g) = self.groups.last_mut() else {
            return Err("--filter must follow a tracepoint event (-e subsys:event)".into());
        };
        let Some(last) = g.members.last() else {
            return Err("--filter: empty group".into());
        };
        let pos = last.pos;
        let mut any = false;
        for m in g.members.iter_mut().filter(|m| m.pos == pos) {
            if !m.is_tracepoint() {
                return Err(format!(
                    "--filter applies to tracepoints, `{}` is not one",
                    m.name
                ));
            }
            m.filter = Some(filter.to_string());
            any = true;
        }
        if any {
            Ok(())
        } else {
            Err("--filter: no event".into())
        }
    }
}

const MODIFIER_CHARS: &str = "ukhGHIpPSDWeb";

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            b'_' | b'-' | b'.' | b'*' | b'?' | b'[' | b']' | b'!' | b'@' | b'#' | b'$'
        )
}

fn base_attr() -> perf_event_attr {
    let mut a = perf_event_attr::new();
    // perf's event_attr_init(): count only the host unless told otherwise.
    a.set(f::EXCLUDE_GUEST, true);
    a
}

/// Parse an unsigned number: decimal, `0x` hex, or `0` octal like perf (`strtoull(.., 0)`).
pub(crate) fn parse_number(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if h.is_empty() || h.len() > 16 {
            return None;
        }
        return u64::from_str_radix(h, 16).ok();
    }
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if s.len() > 1 && s.starts_with('0') {
        return u64::from_str_radix(&s[1..], 8).ok();
    }
    s.parse().ok()
}

struct Parser<'a> {
    env: &'a Env,
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

/// A term as written: `name[=value]` with the byte offsets of both.
#[derive(Clone, Debug)]
struct Term {
    name: String,
    value: Option<String>,
    pos: usize,
    value_pos: usize,
}

/// Accumulated modifiers, perf's `struct event_modifier`.
#[derive(Default, Clone, Copy)]
struct Mods {
    eu: bool,
    ek: bool,
    eh: bool,
    e_host: bool,
    e_guest: bool,
    e_idle: bool,
    precise: u8,
    precise_max: bool,
    sample_read: bool,
    pinned: bool,
    exclusive: bool,
    weak: bool,
    bpf: bool,
    exclude_gh: bool,
}

impl<'a> Parser<'a> {
    fn err(&self, pos: usize, msg: impl Into<String>) -> ParseError {
        ParseError::new(self.s, pos, msg)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    fn starts_with(&self, p: &str) -> bool {
        self.s[self.pos..].starts_with(p)
    }

    fn take_while(&mut self, pred: impl Fn(u8) -> bool) -> &'a str {
        let start = self.pos;
        while self.pos < self.b.len() && pred(self.b[self.pos]) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }

    fn at_event_end(&self) -> bool {
        matches!(self.peek(), None | Some(b',') | Some(b'}'))
    }

    fn parse_list(&mut self) -> Result<EventList, ParseError> {
        let mut list = EventList::default();
        if self.s.trim().is_empty() {
            return Err(self
                .err(0, "empty event list")
                .expected("an event name, e.g. `cycles`")
                .list_hint());
        }
        loop {
            if self.peek() == Some(b'{') {
                list.groups.push(self.parse_group()?);
            } else {
                let evs = self.parse_event()?;
                for e in evs {
                    list.groups.push(EventGroup {
                        members: vec![e],
                        leader_sampling: false,
                        is_group: false,
                        weak: false,
                    });
                }
            }
            match self.peek() {
                None => break,
                Some(b',') => {
                    self.pos += 1;
                    if self.peek().is_none() {
                        return Err(self
                            .err(self.pos, "trailing `,`")
                            .expected("an event after `,`"));
                    }
                }
                Some(_) => {
                    return Err(self
                        .err(self.pos, "unexpected character")
                        .expected("`,` or the end of the list"));
                }
            }
        }
        Ok(list)
    }

    fn parse_group(&mut self) -> Result<EventGroup, ParseError> {
        let open = self.pos;
        self.pos += 1; // '{'
        let mut members = Vec::new();
        loop {
            if self.peek() == Some(b'}') && members.is_empty() {
                return Err(self
                    .err(self.pos, "empty group")
                    .expected("an event inside `{}`"));
            }
            if self.peek() == Some(b'{') {
                return Err(self.err(self.pos, "groups cannot be nested"));
            }
            members.extend(self.parse_event()?);
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                None => {
                    return Err(self
                        .err(open, "unclosed group")
                        .expected("`}` to close this `{`"));
                }
                Some(_) => {
                    return Err(self
                        .err(self.pos, "unexpected character in group")
                        .expected("`,` or `}`"));
                }
            }
        }
        let mut g = EventGroup {
            members,
            leader_sampling: false,
            is_group: true,
            weak: false,
        };
        if self.peek() == Some(b':') {
            self.pos += 1;
            let segs = self.parse_mod_segments()?;
            let mut suffix = String::new();
            for (text, pos, is_term) in &segs {
                if *is_term {
                    return Err(self
                        .err(*pos, "terms are not allowed on a group")
                        .expected("modifiers such as `u`, `k`, `S`"));
                }
                suffix.push_str(text);
            }
            for m in &mut g.members {
                let mods =
                    self.modifiers(&suffix, segs.first().map_or(self.pos, |s| s.1), Some(m))?;
                apply_mods(m, &mods);
                if !suffix.is_empty() {
                    if m.name.ends_with('/')
                        || !m.name.contains(':')
                        || m.is_tracepoint() && m.name.matches(':').count() == 1
                    {
                        m.name.push(':');
                    }
                    m.name.push_str(&suffix);
                }
            }
            g.leader_sampling = suffix.contains('S');
            g.weak = suffix.contains('W');
        }
        if !self.at_event_end() {
            return Err(self
                .err(self.pos, "unexpected text after group")
                .expected("`,` or the end of the list"));
        }
        Ok(g)
    }

    /// Read `:`-separated modifier segments up to `,` `}` or the end. The leading `:` has
    /// been consumed. Returns (text, pos, is_term).
    fn parse_mod_segments(&mut self) -> Result<Vec<(String, usize, bool)>, ParseError> {
        let mut out = Vec::new();
        loop {
            let start = self.pos;
            let seg = self.take_while(|c| !matches!(c, b',' | b'}' | b':' | b'{' | b'/'));
            if seg.is_empty() {
                return Err(self
                    .err(start, "empty modifier")
                    .expected(format!("modifiers ({MODIFIER_CHARS}) or `period=N`")));
            }
            if seg.contains('=') {
                out.push((seg.to_string(), start, true));
            } else {
                if let Some((i, c)) = seg
                    .char_indices()
                    .find(|(_, c)| !MODIFIER_CHARS.contains(*c))
                {
                    return Err(self
                        .err(start + i, format!("unknown modifier `{c}`"))
                        .expected(format!(
                            "one of the modifiers {}",
                            MODIFIER_CHARS
                                .chars()
                                .map(|c| format!("`{c}`"))
                                .collect::<Vec<_>>()
                                .join(" ")
                        )));
                }
                out.push((seg.to_string(), start, false));
            }
            match self.peek() {
                Some(b':') => self.pos += 1,
                Some(b'{') | Some(b'/') => {
                    return Err(self
                        .err(self.pos, "unexpected character after modifiers")
                        .expected("`,` or the end of the list"));
                }
                _ => break,
            }
        }
        Ok(out)
    }

    /// perf's get_event_modifier(): for a single event the state starts from zero; for group
    /// modifiers it starts from the member's attr.
    fn modifiers(
        &self,
        s: &str,
        pos: usize,
        base: Option<&ParsedEvent>,
    ) -> Result<Mods, ParseError> {
        let mut m = Mods::default();
        if let Some(e) = base {
            let a = &e.attr;
            m.eu = a.has(f::EXCLUDE_USER);
            m.ek = a.has(f::EXCLUDE_KERNEL);
            m.eh = a.has(f::EXCLUDE_HV);
            m.e_host = a.has(f::EXCLUDE_HOST);
            m.e_guest = a.has(f::EXCLUDE_GUEST);
            m.e_idle = a.has(f::EXCLUDE_IDLE);
            m.precise = a.precise_ip();
            m.pinned = a.has(f::PINNED);
            m.exclusive = a.has(f::EXCLUSIVE);
            m.exclude_gh = e.exclude_gh;
        }
        let mut exclude = m.eu || m.ek || m.eh;
        let mut precise = u32::from(m.precise);
        for c in s.chars() {
            match c {
                'u' => {
                    if !exclude {
                        exclude = true;
                        (m.eu, m.ek, m.eh) = (true, true, true);
                    }
                    if !m.exclude_gh {
                        m.e_guest = true;
                    }
                    m.eu = false;
                }
                'k' => {
                    if !exclude {
                        exclude = true;
                        (m.eu, m.ek, m.eh) = (true, true, true);
                    }
                    m.ek = false;
                }
                'h' => {
                    if !exclude {
                        exclude = true;
                        (m.eu, m.ek, m.eh) = (true, true, true);
                    }
                    m.eh = false;
                }
                'G' => {
                    if !m.exclude_gh {
                        m.exclude_gh = true;
                        (m.e_guest, m.e_host) = (true, true);
                    }
                    m.e_guest = false;
                }
                'H' => {
                    if !m.exclude_gh {
                        m.exclude_gh = true;
                        (m.e_guest, m.e_host) = (true, true);
                    }
                    m.e_host = false;
                }
                'I' => m.e_idle = true,
                'p' => {
                    precise += 1;
                    if !m.exclude_gh {
                        m.e_guest = true;
                    }
                }
                'P' => m.precise_max = true,
                'S' => m.sample_read = true,
                'D' => m.pinned = true,
                'e' => m.exclusive = true,
                'W' => m.weak = true,
                'b' => m.bpf = true,
                _ => return Err(self.err(pos, format!("unknown modifier `{c}`"))),
            }
        }
        if precise > 3 {
            return Err(self
                .err(pos, "too many `p` modifiers")
                .expected("at most `ppp` (precise_ip 3)"));
        }
        m.precise = precise as u8;
        Ok(m)
    }

    fn parse_event(&mut self) -> Result<Vec<ParsedEvent>, ParseError> {
        let start = self.pos;
        if self.starts_with("mem:") {
            return self.parse_breakpoint();
        }
        if self.starts_with("uprobe:") || self.starts_with("uretprobe:") {
            return self.parse_uprobe();
        }
        let name = self.take_while(is_name_char);
        if name.is_empty() {
            return Err(match self.peek() {
                None => self.err(start, "missing event").expected("an event name"),
                Some(c) => self
                    .err(start, format!("unexpected `{}`", c as char))
                    .expected("an event name, `{`, `mem:` or `pmu/.../`"),
            });
        }
        match self.peek() {
            Some(b'/') => self.parse_slash_event(name, start),
            Some(b':') if self.s[self.pos..].starts_with("::") && !self.is_known_event(name) => {
                self.parse_pfm(start)
            }
            Some(b':') => {
                // numeric TYPE:CONFIG
                if name.bytes().all(|c| c.is_ascii_digit()) {
                    return self.parse_numeric(name, start);
                }
                if self.is_known_event(name) {
                    let evs = self.resolve_name(name, start)?;
                    return self.finish_event(evs, start);
                }
                self.parse_tracepoint_or_pfm(name, start)
            }
            _ => {
                let evs = self.resolve_name(name, start)?;
                self.finish_event(evs, start)
            }
        }
    }

    fn is_known_event(&self, name: &str) -> bool {
        names::lookup_symbol(name).is_some()
            || names::parse_cache(name).is_ok()
            || is_raw(name)
            || self.env.pmus().iter().any(|p| p.alias(name).is_some())
    }

    /// Modifiers (and `:period=N` terms) after an event, then the names.
    fn finish_event(
        &mut self,
        mut evs: Vec<ParsedEvent>,
        start: usize,
    ) -> Result<Vec<ParsedEvent>, ParseError> {
        let base_end = self.pos;
        // perf writes a `pmu/terms/` event's modifiers right after the slash
        // (`cpu/event=0x3c/u`); a colon there is accepted too.
        let after_slash = self.pos > start
            && self.b[self.pos - 1] == b'/'
            && self.peek().is_some_and(|c| c.is_ascii_alphabetic());
        if self.peek() == Some(b':') || after_slash {
            if !after_slash {
                self.pos += 1;
            }
            let segs = self.parse_mod_segments()?;
            let mut mod_chars = String::new();
            let mut first_pos = None;
            for (text, pos, is_term) in &segs {
                if *is_term {
                    let t = split_term(text, *pos);
                    for e in &mut evs {
                        self.apply_generic_term(e, &t)?;
                    }
                } else {
                    first_pos.get_or_insert(*pos);
                    mod_chars.push_str(text);
                }
            }
            if !mod_chars.is_empty() {
                let mods = self.modifiers(&mod_chars, first_pos.unwrap_or(start), None)?;
                for e in &mut evs {
                    apply_mods(e, &mods);
                }
            }
        }
        if !self.at_event_end() {
            return Err(self
                .err(self.pos, "unexpected text after event")
                .expected("`,`, `:modifiers` or the end of the list"));
        }
        // Names: what the user wrote for a single event; expansions keep their own names
        // plus the modifier suffix; `name=` wins.
        let written = &self.s[start..self.pos];
        let suffix = &self.s[base_end..self.pos];
        for e in &mut evs {
            e.pos = start;
            if e.name_from_term() {
                continue;
            }
            if e.expanded() {
                e.name.push_str(suffix);
            } else {
                e.name = written.to_string();
            }
        }
        Ok(evs)
    }

    fn parse_numeric(&mut self, ty: &str, start: usize) -> Result<Vec<ParsedEvent>, ParseError> {
        self.pos += 1; // ':'
        let cpos = self.pos;
        let config = self.take_while(|c| c.is_ascii_hexdigit() || c == b'x' || c == b'X');
        let ty: u32 = ty.parse().map_err(|_| {
            self.err(start, "event type too large")
                .expected("a 32-bit PERF_TYPE number")
        })?;
        let config = parse_number(config).ok_or_else(|| {
            self.err(cpos, "bad config number")
                .expected("a number (decimal or 0x hex)")
        })?;
        let mut a = base_attr();
        a.type_ = ty;
        a.config = config;
        let e = ParsedEvent::new(String::new(), a, start);
        self.finish_event(vec![e], start)
    }

    /// A bare name: symbolic, cache, raw, sysfs alias on any PMU, libpfm4.
    fn resolve_name(&mut self, name: &str, start: usize) -> Result<Vec<ParsedEvent>, ParseError> {
        if let Some((ty, sym)) = names::lookup_symbol(name) {
            return Ok(self.generic_event(ty, sym.config, sym.name, start));
        }
        match names::parse_cache(name) {
            Ok(config) => {
                return Ok(self.generic_event(sys::PERF_TYPE_HW_CACHE, config, name, start));
            }
            Err(names::CacheError::InvalidOp) => {
                return Err(self
                    .err(
                        start,
                        format!("`{name}`: this cache does not support that operation"),
                    )
                    .hint("L1-icache takes load and prefetch; iTLB and branch take load only.")
                    .list_hint());
            }
            Err(names::CacheError::BadSuffix(p)) => {
                return Err(self
                    .err(start + p, format!("bad cache event `{name}`"))
                    .expected("`-load`, `-store`, `-prefetch` and/or `-misses`, `-refs`")
                    .suggest(closest(
                        name,
                        names::all_cache_names().iter().map(|(n, _)| n.as_str()),
                    )));
            }
            Err(names::CacheError::NotACache) => {}
        }
        if is_raw(name) {
            let hex = &name[1..];
            if hex.len() > 16 {
                return Err(self
                    .err(start, format!("raw event `{name}` is wider than 64 bits"))
                    .expected("at most 16 hex digits after `r`"));
            }
            let config = u64::from_str_radix(hex, 16)
                .map_err(|_| self.err(start + 1, "bad raw event number"))?;
            let mut a = base_attr();
            a.type_ = sys::PERF_TYPE_RAW;
            a.config = config;
            return Ok(vec![ParsedEvent::new(name.to_string(), a, start)]);
        }
        // A sysfs alias on any PMU (perf's multi-PMU lookup): one event per PMU with it.
        let pmus: Vec<&Pmu> = self
            .env
            .pmus()
            .iter()
            .filter(|p| p.alias(name).is_some())
            .collect();
        if !pmus.is_empty() {
            let mut out = Vec::new();
            let many = pmus.len() > 1;
            for p in pmus {
                let t = Term {
                    name: name.to_string(),
                    value: None,
                    pos: start,
                    value_pos: start,
                };
                let mut e = self.pmu_event(p, start);
                self.apply_pmu_term(p, &mut e, &t)?;
                if many {
                    e.name = format!("{}/{name}/", p.name);
                    e.mark_expanded();
                }
                out.push(e);
            }
            return Ok(out);
        }
        if let Some(pfm) = self.env.pfm() {
            if let Ok(enc) = pfm.encode(name) {
                let mut e = ParsedEvent::new(name.to_string(), enc.attr, start);
                e.pmu = Some("libpfm4".into());
                return Ok(vec![e]);
            }
        }
        Err(self.unknown_event(name, start))
    }

    fn unknown_event(&self, name: &str, start: usize) -> ParseError {
        let mut cands = names::all_symbolic_names();
        for p in self.env.pmus() {
            cands.extend(p.aliases.keys().cloned());
            cands.push(format!("{}/", p.name));
        }
        let sugg = closest(name, cands.iter().map(String::as_str));
        self.err(start, format!("unknown event `{name}`"))
            .expected("an event name, `rNNNN`, `pmu/.../`, `subsys:tracepoint` or `mem:ADDR`")
            .suggest(sugg)
            .list_hint()
    }

    /// A hardware/software/cache event; on hybrid machines hardware and cache events are
    /// opened once per core PMU with the extended type in the config's high bits.
    fn generic_event(&self, ty: u32, config: u64, name: &str, start: usize) -> Vec<ParsedEvent> {
        let mut a = base_attr();
        a.type_ = ty;
        a.config = config;
        let hybrid_kind = ty == sys::PERF_TYPE_HARDWARE || ty == sys::PERF_TYPE_HW_CACHE;
        if hybrid_kind && self.env.is_hybrid() {
            return self
                .env
                .core_pmus()
                .into_iter()
                .map(|p| {
                    let mut a2 = a;
                    a2.config = config | (u64::from(p.type_) << sys::PERF_PMU_TYPE_SHIFT);
                    let mut e = ParsedEvent::new(format!("{}/{name}/", p.name), a2, start);
                    e.pmu = Some(p.name.clone());
                    e.cpus = p.cpus.clone();
                    e.mark_expanded();
                    e
                })
                .collect();
        }
        vec![ParsedEvent::new(name.to_string(), a, start)]
    }

    fn pmu_event(&self, p: &Pmu, start: usize) -> ParsedEvent {
        let mut a = base_attr();
        a.type_ = p.type_;
        let mut e = ParsedEvent::new(String::new(), a, start);
        e.pmu = Some(p.name.clone());
        // Uncore PMUs count on their cpumask; core PMUs of a hybrid machine on their own cpus.
        if !p.is_core || self.env.is_hybrid() {
            e.cpus = p.cpus.clone();
        }
        e
    }

    /// `name/terms/`: a PMU (or `pmu_*` family), or a symbolic event with terms.
    fn parse_slash_event(
        &mut self,
        name: &'a str,
        start: usize,
    ) -> Result<Vec<ParsedEvent>, ParseError> {
        let slash = self.pos;
        self.pos += 1;
        let terms = self.parse_terms()?;
        let pmus: Vec<&Pmu> = match self.env.pmu(name) {
            Some(p) => vec![p],
            None => {
                let fam: Vec<&Pmu> = self
                    .env
                    .pmus()
                    .iter()
                    .filter(|p| {
                        p.name
                            .strip_prefix(name)
                            .and_then(|r| r.strip_prefix('_'))
                            .is_some_and(|r| !r.is_empty() && r.bytes().all(|c| c.is_ascii_digit()))
                            || (glob::is_glob(name) && glob::matches(name, &p.name))
                    })
                    .collect();
                fam
            }
        };
        if pmus.is_empty() {
            // A symbolic event or tracepoint-less name with terms: `cycles/period=1000/`.
            if self.is_known_event(name) && !self.env.pmus().iter().any(|p| p.alias(name).is_some())
                || names::lookup_symbol(name).is_some()
            {
                let mut evs = self.resolve_name(name, start)?;
                for e in &mut evs {
                    for t in &terms {
                        self.apply_generic_term(e, t)?;
                    }
                }
                return self.finish_event(evs, start);
            }
            let cands: Vec<&str> = self.env.pmus().iter().map(|p| p.name.as_str()).collect();
            return Err(self
                .err(start, format!("no PMU `{name}` on this machine"))
                .expected(format!(
                    "a PMU from {} ({})",
                    self.env.sysfs.display(),
                    cands.join(", ")
                ))
                .suggest(closest(name, cands.iter().copied()))
                .list_hint());
        }
        let _ = slash;
        let mut out = Vec::new();
        let family = pmus.len() > 1;
        for p in pmus {
            let mut e = self.pmu_event(p, start);
            for t in &terms {
                self.apply_pmu_term(p, &mut e, t)?;
            }
            if family {
                e.mark_expanded();
                if !e.name_from_term() {
                    e.name = format!("{}/{}/", p.name, &self.s[slash + 1..self.pos - 1]);
                }
            }
            out.push(e);
        }
        self.finish_event(out, start)
    }

    /// Terms up to the closing `/` (the opening one consumed).
    fn parse_terms(&mut self) -> Result<Vec<Term>, ParseError> {
        let mut terms = Vec::new();
        if self.peek() == Some(b'/') {
            self.pos += 1;
            return Ok(terms);
        }
        loop {
            let tpos = self.pos;
            let name =
                self.take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
            if name.is_empty() {
                return Err(match self.peek() {
                    None => self
                        .err(self.pos, "unterminated term list")
                        .expected("`/` to close the term list"),
                    Some(c) => self
                        .err(self.pos, format!("unexpected `{}` in term list", c as char))
                        .expected("a term name such as `config` or `event`"),
                });
            }
            let mut value = None;
            let mut value_pos = self.pos;
            if self.peek() == Some(b'=') {
                self.pos += 1;
                value_pos = self.pos;
                match self.peek() {
                    Some(q @ (b'"' | b'\'')) => {
                        self.pos += 1;
                        let vstart = self.pos;
                        while self.pos < self.b.len() && self.b[self.pos] != q {
                            self.pos += 1;
                        }
                        if self.pos >= self.b.len() {
                            return Err(self
                                .err(value_pos, "unterminated quoted value")
                                .expected(format!("a closing `{}`", q as char)));
                        }
                        value = Some(self.s[vstart..self.pos].to_string());
                        self.pos += 1;
                    }
                    _ => {
                        let v = self.take_while(|c| !matches!(c, b',' | b'/' | b'}' | b'{' | b':'));
                        if v.is_empty() {
                            return Err(self
                                .err(value_pos, format!("missing value for `{name}`"))
                                .expected("a value after `=`"));
                        }
                        value = Some(v.to_string());
                    }
                }
            }
            terms.push(Term {
                name: name.to_string(),
                value,
                pos: tpos,
                value_pos,
            });
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'/') => {
                    self.pos += 1;
                    return Ok(terms);
                }
                None => {
                    return Err(self
                        .err(self.pos, "unterminated term list")
                        .expected("`,` or `/`"));
                }
                Some(c) => {
                    return Err(self
                        .err(self.pos, format!("unexpected `{}` in term list", c as char))
                        .expected("`,` or `/`"));
                }
            }
        }
    }

    fn number(&self, t: &Term) -> Result<u64, ParseError> {
        match &t.value {
            None => Ok(1),
            Some(v) => parse_number(v).ok_or_else(|| {
                self.err(t.value_pos, format!("`{v}` is not a number"))
                    .expected(format!(
                        "a number for `{}` (decimal or 0x hex, at most 64 bits)",
                        t.name
                    ))
            }),
        }
    }

    /// Terms any event takes (perf's config terms).
    fn apply_generic_term(&self, e: &mut ParsedEvent, t: &Term) -> Result<(), ParseError> {
        if !self.try_generic_term(e, t)? {
            const GENERIC: [&str; 12] = [
                "config",
                "config1",
                "config2",
                "config3",
                "period",
                "freq",
                "name",
                "call-graph",
                "stack-size",
                "max-stack",
                "inherit",
                "no-inherit",
            ];
            return Err(self
                .err(t.pos, format!("unknown term `{}`", t.name))
                .expected(format!("one of {}", GENERIC.join(", ")))
                .suggest(closest(&t.name, GENERIC.iter().copied().chain(["filter"]))));
        }
        Ok(())
    }

    fn try_generic_term(&self, e: &mut ParsedEvent, t: &Term) -> Result<bool, ParseError> {
        match t.name.as_str() {
            "config" => e.attr.config = self.number(t)?,
            "config1" => e.attr.config1 = self.number(t)?,
            "config2" => e.attr.config2 = self.number(t)?,
            "config3" => e.attr.config3 = self.number(t)?,
            "period" => {
                e.attr.sample_period = self.number(t)?;
                e.attr.set(f::FREQ, false);
                e.terms.period = true;
            }
            "freq" => {
                e.attr.sample_period = self.number(t)?;
                e.attr.set(f::FREQ, true);
                e.terms.freq = true;
            }
            "name" => {
                let v = t.value.clone().filter(|v| !v.is_empty()).ok_or_else(|| {
                    self.err(t.pos, "`name` needs a value")
                        .expected("name=STRING")
                })?;
                e.name = v;
                e.mark_named();
            }
            "call-graph" => {
                let v = t.value.as_deref().unwrap_or("");
                e.terms.call_graph = Some(match v {
                    "fp" => CallGraph::Fp,
                    "dwarf" => CallGraph::Dwarf,
                    "lbr" => CallGraph::Lbr,
                    "no" => CallGraph::None,
                    _ => {
                        return Err(self
                            .err(t.value_pos, format!("unknown call-graph mode `{v}`"))
                            .expected("fp, dwarf, lbr or no")
                            .suggest(closest(v, ["fp", "dwarf", "lbr", "no"])));
                    }
                });
            }
            "stack-size" => {
                let n = self.number(t)?;
                let n = u32::try_from(n)
                    .ok()
                    .filter(|n| n % 8 == 0 && *n <= 65528)
                    .ok_or_else(|| {
                        self.err(t.value_pos, format!("bad stack-size {n}"))
                            .expected("a multiple of 8 up to 65528 bytes")
                    })?;
                e.terms.stack_size = Some(n);
            }
            "max-stack" => {
                let n = self.number(t)?;
                let n = u16::try_from(n).map_err(|_| {
                    self.err(t.value_pos, format!("max-stack {n} is too large"))
                        .expected("at most 65535")
                })?;
                e.terms.max_stack = Some(n);
                e.attr.sample_max_stack = n;
            }
            "inherit" => {
                let on = self.number(t)? != 0;
                e.terms.inherit = Some(on);
                e.attr.set(f::INHERIT, on);
            }
            "no-inherit" => {
                e.terms.inherit = Some(false);
                e.attr.set(f::INHERIT, false);
            }
            "filter" => {
                if !e.is_tracepoint() {
                    return Err(self.err(t.pos, "`filter` applies to tracepoints only"));
                }
                e.filter = Some(t.value.clone().unwrap_or_default());
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn apply_pmu_term(&self, p: &Pmu, e: &mut ParsedEvent, t: &Term) -> Result<(), ParseError> {
        if let Some(fmt) = p.formats.get(&t.name) {
            let v = self.number(t)?;
            let word = fmt.word.field(&mut e.attr);
            return fmt.apply(word, v).map_err(|max| {
                self.err(
                    t.value_pos,
                    format!(
                        "value {v:#x} too big for `{}` ({} bits, max {max:#x})",
                        t.name,
                        fmt.width()
                    ),
                )
                .expected(format!("a value of at most {max:#x}"))
            });
        }
        if self.try_generic_term(e, t)? {
            return Ok(());
        }
        if t.value.is_none() {
            if let Some(alias) = p.alias(&t.name) {
                let terms = split_terms(&alias.terms);
                for at in &terms {
                    // Alias terms are trusted sysfs text; report problems at the use.
                    let mut at = at.clone();
                    at.pos = t.pos;
                    at.value_pos = t.pos;
                    if at.value.as_deref() == Some("?") {
                        continue;
                    }
                    self.apply_pmu_term(p, e, &at)?;
                }
                e.scale = alias.scale;
                e.unit = alias.unit.clone();
                return Ok(());
            }
            if p.is_core {
                if let Some((ty, sym)) = names::lookup_symbol(&t.name) {
                    e.attr.type_ = ty;
                    e.attr.config = sym.config | self.ext_type(p);
                    return Ok(());
                }
                if let Ok(c) = names::parse_cache(&t.name) {
                    e.attr.type_ = sys::PERF_TYPE_HW_CACHE;
                    e.attr.config = c | self.ext_type(p);
                    return Ok(());
                }
            }
        }
        let mut cands: Vec<&str> = p.formats.keys().map(String::as_str).collect();
        cands.extend(p.aliases.keys().map(String::as_str));
        let mut expected = cands.clone();
        expected.extend([
            "config",
            "config1",
            "config2",
            "config3",
            "period",
            "freq",
            "name",
            "call-graph",
            "stack-size",
            "max-stack",
            "inherit",
            "no-inherit",
        ]);
        Err(self
            .err(
                t.pos,
                format!("unknown term `{}` for PMU `{}`", t.name, p.name),
            )
            .expected(format!("one of {}", expected.join(", ")))
            .suggest(closest(&t.name, expected.iter().copied()))
            .list_hint())
    }

    fn ext_type(&self, p: &Pmu) -> u64 {
        if self.env.is_hybrid() {
            u64::from(p.type_) << sys::PERF_PMU_TYPE_SHIFT
        } else {
            0
        }
    }

    fn parse_breakpoint(&mut self) -> Result<Vec<ParsedEvent>, ParseError> {
        let start = self.pos;
        self.pos += 4;
        let apos = self.pos;
        let addr = self.take_while(|c| c.is_ascii_alphanumeric());
        let addr = parse_number(addr).ok_or_else(|| {
            self.err(apos, "bad breakpoint address")
                .expected("an address such as 0x601040")
        })?;
        let mut len = None;
        if self.peek() == Some(b'/') {
            self.pos += 1;
            let lpos = self.pos;
            let l = self.take_while(|c| c.is_ascii_alphanumeric());
            let l = parse_number(l)
                .filter(|l| (1..=8).contains(l))
                .ok_or_else(|| {
                    self.err(lpos, "bad breakpoint length")
                        .expected("a length of 1, 2, 4 or 8 bytes")
                })?;
            len = Some(l);
        }
        let mut bp_type = 0u32;
        if self.peek() == Some(b':') {
            // access type: [rwx]+ up to ':' ',' '}' or the end
            let save = self.pos;
            self.pos += 1;
            let acc = self.take_while(|c| c.is_ascii_alphanumeric());
            if !acc.is_empty()
                && acc.bytes().all(|c| matches!(c, b'r' | b'w' | b'x'))
                && matches!(self.peek(), None | Some(b':') | Some(b',') | Some(b'}'))
            {
                for (i, c) in acc.bytes().enumerate() {
                    let bit = match c {
                        b'r' => sys::HW_BREAKPOINT_R,
                        b'w' => sys::HW_BREAKPOINT_W,
                        _ => sys::HW_BREAKPOINT_X,
                    };
                    if bp_type & bit != 0 {
                        return Err(self
                            .err(save + 1 + i, format!("access `{}` given twice", c as char))
                            .expected("each of r, w, x at most once"));
                    }
                    bp_type |= bit;
                }
            } else {
                self.pos = save; // modifiers
            }
        }
        if bp_type == 0 {
            bp_type = sys::HW_BREAKPOINT_RW;
        }
        let len = len.unwrap_or(if bp_type == sys::HW_BREAKPOINT_X {
            std::mem::size_of::<libc::c_long>() as u64
        } else {
            sys::HW_BREAKPOINT_LEN_4
        });
        let mut a = base_attr();
        a.type_ = sys::PERF_TYPE_BREAKPOINT;
        a.bp_type = bp_type;
        a.config1 = addr;
        a.config2 = len;
        a.sample_period = 1;
        let e = ParsedEvent::new(String::new(), a, start);
        self.finish_event(vec![e], start)
    }

    fn parse_uprobe(&mut self) -> Result<Vec<ParsedEvent>, ParseError> {
        let start = self.pos;
        let ret = self.starts_with("uretprobe:");
        self.pos += if ret { 10 } else { 7 };
        let ppos = self.pos;
        let path = self.take_while(|c| !matches!(c, b':' | b',' | b'{' | b'}'));
        if path.is_empty() {
            return Err(self
                .err(ppos, "missing binary path")
                .expected("uprobe:/path/to/binary:symbol"));
        }
        if self.peek() != Some(b':') {
            return Err(self
                .err(self.pos, "missing probe location")
                .expected("`:symbol[+offset]` or `:0xOFFSET` after the path"));
        }
        self.pos += 1;
        let spos = self.pos;
        let sym = self
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$' | b'@'));
        if sym.is_empty() {
            return Err(self
                .err(spos, "missing symbol")
                .expected("a symbol name or a file offset"));
        }
        let mut extra = 0u64;
        if self.peek() == Some(b'+') {
            self.pos += 1;
            let opos = self.pos;
            let o = self.take_while(|c| c.is_ascii_alphanumeric());
            extra = parse_number(o)
                .ok_or_else(|| self.err(opos, "bad offset").expected("a number after `+`"))?;
        }
        let Some(pmu) = self.env.pmu("uprobe") else {
            return Err(self
                .err(start, "this machine has no uprobe PMU")
                .hint("The kernel needs CONFIG_UPROBE_EVENTS."));
        };
        let offset = match parse_number(sym) {
            Some(off) if sym.starts_with("0x") || sym.bytes().all(|c| c.is_ascii_digit()) => off,
            _ => {
                crate::uprobe::symbol_file_offset(std::path::Path::new(path), sym).map_err(|e| {
                    self.err(spos, e)
                        .hint("List a binary's symbols with `nm -D` or `nm`.")
                })?
            }
        };
        let offset = offset
            .checked_add(extra)
            .ok_or_else(|| self.err(spos, "offset overflows"))?;
        let mut a = base_attr();
        a.type_ = pmu.type_;
        if ret {
            let fmt = pmu
                .formats
                .get("retprobe")
                .ok_or_else(|| self.err(start, "the uprobe PMU has no `retprobe` format"))?;
            let _ = fmt.apply(&mut a.config, 1);
        }
        let cpath = CString::new(path).map_err(|_| self.err(ppos, "path contains a NUL byte"))?;
        a.config1 = cpath.as_ptr() as u64;
        a.config2 = offset;
        a.sample_period = 1;
        let mut e = ParsedEvent::new(String::new(), a, start);
        e.uprobe_path = Some(cpath);
        e.pmu = Some("uprobe".into());
        self.finish_event(vec![e], start)
    }

    fn parse_tracepoint_or_pfm(
        &mut self,
        sys_pat: &'a str,
        start: usize,
    ) -> Result<Vec<ParsedEvent>, ParseError> {
        let tracefs = self.env.tracefs_status().map(std::path::Path::to_path_buf);
        let subsystems: Vec<String> = match &tracefs {
            Ok(t) => crate::tracefs::subsystems(t)
                .into_iter()
                .filter(|s| glob::matches(sys_pat, s))
                .collect(),
            Err(_) => Vec::new(),
        };
        if subsystems.is_empty() {
            if self.env.pfm().is_some() {
                let save = self.pos;
                if let Ok(v) = self.parse_pfm(start) {
                    return Ok(v);
                }
                self.pos = save;
            }
            // Not mounted, or not readable by this user: which, and what to do about it.
            let t = match &tracefs {
                Ok(t) => t,
                Err(e) => {
                    return Err(self
                        .err(
                            start,
                            format!("unknown event `{sys_pat}`, and tracepoints cannot be looked up: {e}"),
                        )
                        .hint(e.advice())
                        .suggest(closest(
                            sys_pat,
                            names::all_symbolic_names().iter().map(String::as_str),
                        )));
                }
            };
            let all = crate::tracefs::subsystems(t);
            let mut cands: Vec<String> = all.clone();
            cands.extend(names::all_symbolic_names());
            return Err(self
                .err(start, format!("unknown event or tracepoint subsystem `{sys_pat}`"))
                .expected("`subsystem:event` (see `perfkit list tracepoint`) or an event with `:modifiers`")
                .suggest(closest(sys_pat, cands.iter().map(String::as_str)))
                .list_hint());
        }
        let tracefs = tracefs.unwrap_or_default();
        self.pos += 1; // ':'
        let epos = self.pos;
        let ev_pat = self.take_while(is_name_char);
        if ev_pat.is_empty() {
            return Err(self
                .err(epos, "missing tracepoint name")
                .expected("`subsystem:event`"));
        }
        let mut out = Vec::new();
        for s in &subsystems {
            for ev in crate::tracefs::events_of(&tracefs, s) {
                if glob::matches(ev_pat, &ev) {
                    let id = crate::tracefs::event_id(&tracefs, s, &ev).map_err(|e| {
                        match std::error::Error::source(&e) {
                            Some(cause) => self.err(start, format!("{e}: {cause}")),
                            None => self.err(start, e.to_string()),
                        }
                    })?;
                    let mut a = base_attr();
                    a.type_ = sys::PERF_TYPE_TRACEPOINT;
                    a.config = id;
                    a.sample_period = 1;
                    let mut e = ParsedEvent::new(format!("{s}:{ev}"), a, start);
                    e.mark_expanded();
                    out.push(e);
                }
            }
        }
        if out.is_empty() {
            let cands: Vec<String> = subsystems
                .iter()
                .flat_map(|s| crate::tracefs::events_of(&tracefs, s))
                .collect();
            return Err(self
                .err(epos, format!("no tracepoint `{sys_pat}:{ev_pat}`"))
                .suggest(closest(ev_pat, cands.iter().map(String::as_str)))
                .hint(format!(
                    "See {} or `perfkit list tracepoint`.",
                    tracefs.join("events").display()
                )));
        }
        let single = out.len() == 1 && !glob::is_glob(sys_pat) && !glob::is_glob(ev_pat);
        if self.peek() == Some(b'/') {
            self.pos += 1;
            let terms = self.parse_terms()?;
            for e in &mut out {
                for t in &terms {
                    self.apply_generic_term(e, t)?;
                }
            }
        }
        if single {
            out[0].unmark_expanded();
        }
        self.finish_event(out, start)
    }

    /// A libpfm4 event string: everything up to `,` `}` or the end.
    fn parse_pfm(&mut self, start: usize) -> Result<Vec<ParsedEvent>, ParseError> {
        self.pos = start;
        let text = self.take_while(|c| !matches!(c, b',' | b'{' | b'}'));
        let Some(pfm) = self.env.pfm() else {
            return Err(self
                .err(
                    start,
                    format!("`{text}` looks like a libpfm4 event, but libpfm4 is not available"),
                )
                .hint("Install libpfm4 (libpfm.so.4) to use PMU-specific event names."));
        };
        match pfm.encode(text) {
            Ok(enc) => {
                let mut e = ParsedEvent::new(text.to_string(), enc.attr, start);
                e.pmu = Some("libpfm4".into());
                Ok(vec![e])
            }
            Err(why) => Err(self
                .err(start, format!("libpfm4 does not know `{text}`: {why}"))
                .list_hint()),
        }
    }
}

/// Name bookkeeping kept in private fields of ParsedEvent via its name string: events whose
/// name came from a `name=` term or an expansion keep it.
impl ParsedEvent {
    fn mark_named(&mut self) {
        self.marks |= NAMED;
    }
    fn name_from_term(&self) -> bool {
        self.marks & NAMED != 0
    }
    fn mark_expanded(&mut self) {
        self.marks |= EXPANDED;
    }
    fn unmark_expanded(&mut self) {
        self.marks &= !EXPANDED;
    }
    fn expanded(&self) -> bool {
        self.marks & EXPANDED != 0
    }
}

const NAMED: u8 = 1;
const EXPANDED: u8 = 2;

fn is_raw(name: &str) -> bool {
    name.len() > 1 && name.starts_with('r') && name[1..].bytes().all(|c| c.is_ascii_hexdigit())
}

fn split_term(text: &str, pos: usize) -> Term {
    match text.split_once('=') {
        Some((n, v)) => Term {
            name: n.to_string(),
            value: Some(v.to_string()),
            pos,
            value_pos: pos + n.len() + 1,
        },
        None => Term {
            name: text.to_string(),
            value: None,
            pos,
            value_pos: pos,
        },
    }
}

/// Split a sysfs alias (`event=0x3c,umask=0x00`) into terms.
fn split_terms(text: &str) -> Vec<Term> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| split_term(t, 0))
        .collect()
}

fn apply_mods(e: &mut ParsedEvent, m: &Mods) {
    let a = &mut e.attr;
    a.set(f::EXCLUDE_USER, m.eu);
    a.set(f::EXCLUDE_KERNEL, m.ek);
    a.set(f::EXCLUDE_HV, m.eh);
    a.set(f::EXCLUDE_HOST, m.e_host);
    a.set(f::EXCLUDE_GUEST, m.e_guest);
    a.set(f::EXCLUDE_IDLE, m.e_idle);
    a.set_precise_ip(m.precise);
    a.set(f::PINNED, m.pinned);
    a.set(f::EXCLUSIVE, m.exclusive);
    e.exclude_gh = m.exclude_gh;
    e.precise_max |= m.precise_max;
    e.sample_read |= m.sample_read;
    e.weak_group |= m.weak;
    e.bpf_counter |= m.bpf;
}

/// The perf-style name of a PMU event from its attr: the sysfs alias whose terms encode
/// exactly this config (`msr/tsc/`), else `pmu/field=value,.../` from the formats.
pub fn pmu_event_name(p: &Pmu, attr: &perf_event_attr) -> String {
    if let Some(n) = pmu_alias_name(p, attr) {
        return n;
    }
    pmu_terms_name(p, attr)
}

/// `pmu/alias/` when a sysfs alias of `p` encodes exactly the config words of `attr`.
pub fn pmu_alias_name(p: &Pmu, attr: &perf_event_attr) -> Option<String> {
    for (name, alias) in &p.aliases {
        let mut a = *attr;
        a.config = 0;
        a.config1 = 0;
        a.config2 = 0;
        a.config3 = 0;
        let mut ok = true;
        for t in split_terms(&alias.terms) {
            let Some(fmt) = p.formats.get(&t.name) else {
                ok = false;
                break;
            };
            let v = t.value.as_deref().map_or(Some(1), parse_number);
            match v {
                Some(v) if fmt.apply(fmt.word.field(&mut a), v).is_ok() => {}
                _ => {
                    ok = false;
                    break;
                }
            }
        }
        if ok
            && (a.config, a.config1, a.config2, a.config3)
                == (attr.config, attr.config1, attr.config2, attr.config3)
        {
            return Some(format!("{}/{name}/", p.name));
        }
    }
    None
}

/// `pmu/field=value,.../` from the PMU's formats, for any config.
///
/// Each config word is spelled with format fields that do not overlap (wider fields
/// first: a word such as `offcore_rsp` over `config1:0-63` wins over a `ldlat` on its low
/// bits), or, when its set bits cannot all be covered that way, as `configN=0x...`; the
/// name always parses back to the same attr, whatever order the terms are applied in.
pub fn pmu_terms_name(p: &Pmu, attr: &perf_event_attr) -> String {
    let mut parts = Vec::new();
    let mut fmts: Vec<(&String, &crate::pmu::Format)> = p.formats.iter().collect();
    fmts.sort_by_key(|(name, f)| (std::cmp::Reverse(f.width()), *name));
    for (word_name, word) in [
        (ConfigWord::Config, "config"),
        (ConfigWord::Config1, "config1"),
        (ConfigWord::Config2, "config2"),
        (ConfigWord::Config3, "config3"),
    ]
    .map(|(w, n)| (n, w))
    {
        let mut a = *attr;
        let value = *word.field(&mut a);
        if value == 0 {
            continue;
        }
        let mut used = 0u64;
        let mut terms = Vec::new();
        for (name, f) in fmts.iter().filter(|(_, f)| f.word == word) {
            let mask = f.mask();
            if mask & used != 0 {
                continue;
            }
            let v = f.extract(value);
            if v != 0 {
                terms.push((name.as_str(), v));
                used |= mask;
            }
        }
        if value & !used == 0 {
            terms.sort_by_key(|(name, _)| *name);
            parts.extend(terms.iter().map(|(name, v)| format!("{name}={v:#x}")));
        } else {
            parts.push(format!("{word_name}={value:#x}"));
        }
    }
    format!("{}/{}/", p.name, parts.join(","))
}

/// Parse `input` (one `-e` argument) in `env`. Never panics; every error carries the byte
/// offset of the problem.
pub fn parse(env: &Env, input: &str) -> Result<EventList, ParseError> {
    let mut p = Parser {
        env,
        s: input,
        b: input.as_bytes(),
        pos: 0,
    };
    p.parse_list()
}
