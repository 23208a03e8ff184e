//! perf's tool events: `duration_time`, `user_time` and `system_time` in `-e`. They open
//! no counter; the run fills them from its wall clock and the command's CPU times, in
//! nanoseconds, as perf does.

use crate::EventSpec;
use perfkit::sys;

/// The attr type that marks a tool event (no kernel PMU has it: PMU types are small).
pub const TOOL_TYPE: u32 = 0xffff_0000;

/// A tool event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// The wall time counted.
    Duration,
    /// The command's user CPU time.
    User,
    /// The command's system CPU time.
    System,
}

const NAMES: [(&str, Tool); 3] = [
    ("duration_time", Tool::Duration),
    ("user_time", Tool::User),
    ("system_time", Tool::System),
];

impl Tool {
    /// The tool event an attr stands for.
    pub fn of(attr: &sys::perf_event_attr) -> Option<Tool> {
        (attr.type_ == TOOL_TYPE)
            .then(|| NAMES.get(attr.config as usize).map(|n| n.1))
            .flatten()
    }

    /// The tool event of a name (`duration_time`, `user_time`, `system_time`).
    pub fn named(name: &str) -> Option<Tool> {
        NAMES.iter().find(|n| n.0 == name).map(|n| n.1)
    }

    /// The attr that marks this tool event.
    pub fn attr(self) -> sys::perf_event_attr {
        self.spec("").attr
    }

    fn spec(self, name: &str) -> EventSpec {
        let mut attr = sys::perf_event_attr {
            type_: TOOL_TYPE,
            ..Default::default()
        };
        attr.config = NAMES.iter().position(|n| n.1 == self).unwrap_or(0) as u64;
        EventSpec {
            name: name.to_string(),
            attr,
            scale: 1.0,
            unit: "ns".into(),
            group: 0,
            leader: true,
            grouped: false,
            cpus: None,
            filter: None,
            terms: Default::default(),
            sample_read: false,
            leader_sampling: false,
            precise_max: false,
            uprobe_path: None,
        }
    }
}

/// A piece of an `-e` string: a tool event, or event syntax for the parser.
#[derive(Debug)]
pub(super) enum Piece {
    Tool(Box<EventSpec>),
    Events(String),
}

/// Split an `-e` string into tool events and the rest, keeping their order. Only commas
/// outside `{...}` and `pmu/.../` separate events.
pub(super) fn split(s: &str) -> Vec<Piece> {
    if !NAMES.iter().any(|(n, _)| s.contains(n)) {
        return vec![Piece::Events(s.to_string())];
    }
    let mut items = Vec::new();
    let (mut depth, mut in_pmu, mut start) = (0i32, false, 0);
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            '/' => in_pmu = !in_pmu,
            ',' if depth == 0 && !in_pmu => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    let mut out: Vec<Piece> = Vec::new();
    for it in items {
        match NAMES.iter().find(|(n, _)| *n == it.trim()) {
            Some((n, t)) => out.push(Piece::Tool(Box::new(t.spec(n)))),
            None => match out.last_mut() {
                Some(Piece::Events(e)) => {
                    e.push(',');
                    e.push_str(it);
                }
                _ => out.push(Piece::Events(it.to_string())),
            },
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(s: &str) -> Vec<String> {
        split(s)
            .into_iter()
            .map(|p| match p {
                Piece::Tool(t) => format!("tool:{}", t.name),
                Piece::Events(e) => e,
            })
            .collect()
    }

    #[test]
    fn tools_split_out_in_order() {
        assert_eq!(names("task-clock"), ["task-clock"]);
        assert_eq!(
            names("duration_time,task-clock,page-faults,user_time"),
            [
                "tool:duration_time",
                "task-clock,page-faults",
                "tool:user_time"
            ]
        );
        assert_eq!(
            names("{cycles,instructions},system_time,msr/tsc,x=1/"),
            ["{cycles,instructions}", "tool:system_time", "msr/tsc,x=1/"]
        );
        let t = split("duration_time");
        let Piece::Tool(spec) = &t[0] else {
            panic!("not a tool")
        };
        assert_eq!(Tool::of(&spec.attr), Some(Tool::Duration));
    }
}
