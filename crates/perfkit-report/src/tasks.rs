//! `perf report --tasks` and `--mmaps`: every task the file names, as a tree of parents
//! and children, with (for `--mmaps`) the memory maps of its process, printed as perf 6.1
//! prints them.
//!
//! The tasks are tracked as perf's `machine` tracks threads: a COMM, MMAP or sample names a
//! thread (and its process's leader); a FORK gives the child its parent (the parent's
//! thread id becomes its `ppid`), the parent's name and, for a new process, a copy of the
//! parent's maps; threads of one process share the maps. The idle task (`0 0 swapper`) is
//! always there. A map that overlaps older ones replaces the overlapped parts.

use perfkit_data::{Item, PerfData, ReadError};
use perfkit_records::{Mmap2FileId, ParsedRecord, Record};
use perfkit_sys as sys;
use std::collections::HashMap;
use std::fmt::Write;

/// One mapping of a process, as perf prints it in `--mmaps`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskMap {
    /// First address.
    pub start: u64,
    /// End address (exclusive).
    pub end: u64,
    /// `PROT_*` bits (MMAP2; `PROT_EXEC` for an MMAP of code, as perf assumes).
    pub prot: u32,
    /// `MAP_*` flags (MMAP2).
    pub flags: u32,
    /// File offset of `start`.
    pub pgoff: u64,
    /// Inode (0 when the record has a build id or none).
    pub ino: u64,
    /// File name.
    pub name: String,
}

/// One task (thread).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Task {
    /// Process id.
    pub pid: i32,
    /// Thread id.
    pub tid: i32,
    /// Thread id of the parent (from FORK), -1 if unknown.
    pub ppid: i32,
    /// Latest name (`:TID` when none was recorded).
    pub comm: String,
}

/// Every task of a file and the maps of each process.
#[derive(Clone, Debug, Default)]
pub struct Tasks {
    /// Tasks by thread id.
    pub tasks: HashMap<i32, Task>,
    /// Maps by process id, sorted by address.
    pub maps: HashMap<i32, Vec<TaskMap>>,
}

impl Tasks {
    /// Read the tasks and maps of `file` (one walk of its records).
    pub fn of(file: &PerfData) -> Result<Tasks, ReadError> {
        let mut me = Tasks::default();
        me.findnew(0, 0);
        if let Some(t) = me.tasks.get_mut(&0) {
            t.comm = "swapper".into();
        }
        file.for_each(
            |item| {
                if let Item::Event { record, .. } = item {
                    me.record(&record);
                }
            },
            |_| {},
        )?;
        Ok(me)
    }

    fn findnew(&mut self, pid: i32, tid: i32) {
        if tid < 0 {
            return;
        }
        if pid >= 0 && pid != tid && !self.tasks.contains_key(&pid) {
            self.findnew(pid, pid);
        }
        self.tasks.entry(tid).or_insert_with(|| Task {
            pid,
            tid,
            ppid: -1,
            comm: format!(":{tid}"),
        });
        if let Some(t) = self.tasks.get_mut(&tid)
            && t.pid < 0
        {
            t.pid = pid;
        }
    }

    /// Feed one record.
    pub fn record(&mut self, rec: &ParsedRecord<'_>) {
        let kernel = matches!(
            rec.cpumode(),
            sys::PERF_RECORD_MISC_KERNEL | sys::PERF_RECORD_MISC_GUEST_KERNEL
        );
        match &rec.record {
            Record::Comm(c) => {
                self.findnew(c.pid, c.tid);
                if let Some(t) = self.tasks.get_mut(&c.tid) {
                    t.comm = String::from_utf8_lossy(c.comm).into_owned();
                }
            }
            Record::Fork(f) => {
                self.findnew(f.ppid, f.ptid);
                let parent = self.tasks.get(&f.ptid).cloned();
                // A tid seen before belongs to an earlier thread: perf starts over.
                self.tasks.remove(&f.tid);
                self.findnew(f.pid, f.tid);
                if let Some(t) = self.tasks.get_mut(&f.tid)
                    && let Some(p) = &parent
                {
                    t.ppid = p.tid;
                    t.comm = p.comm.clone();
                }
                // perf marks its synthesized FORKs (existing tasks) with MISC_FORK_EXEC: their
                // maps come as MMAP2 records next, so nothing is copied.
                if f.pid != f.ppid
                    && rec.misc & (1 << 13) == 0
                    && let Some(m) = self.maps.get(&f.ppid).cloned()
                {
                    self.maps.insert(f.pid, m);
                }
            }
            Record::Sample(_) => {
                if let (Some(pid), Some(tid)) = (rec.sample_id.pid, rec.sample_id.tid) {
                    self.findnew(pid, tid);
                }
            }
            Record::Mmap(m) if !kernel && m.pid >= 0 => {
                self.findnew(m.pid, m.tid);
                let prot = if m.data { 0 } else { 4 };
                self.insert(
                    m.pid,
                    TaskMap {
                        start: m.addr,
                        end: m.addr.wrapping_add(m.len),
                        prot,
                        flags: 0,
                        pgoff: m.pgoff,
                        ino: 0,
                        name: String::from_utf8_lossy(m.filename).into_owned(),
                    },
                );
            }
            Record::Mmap2(m) if !kernel && m.pid >= 0 => {
                self.findnew(m.pid, m.tid);
                let ino = match m.file_id {
                    Mmap2FileId::Inode { ino, .. } => ino,
                    Mmap2FileId::BuildId(_) => 0,
                };
                self.insert(
                    m.pid,
                    TaskMap {
                        start: m.addr,
                        end: m.addr.wrapping_add(m.len),
                        prot: m.prot,
                        flags: m.flags,
                        pgoff: m.pgoff,
                        ino,
                        name: String::from_utf8_lossy(m.filename).into_owned(),
                    },
                );
            }
            _ => {}
        }
    }

    /// Insert `map` into the maps of `pid`, cutting the parts of older maps it covers.
    fn insert(&mut self, pid: i32, map: TaskMap) {
        let maps = self.maps.entry(pid).or_default();
        let mut out = Vec::with_capacity(maps.len() + 2);
        for old in maps.drain(..) {
            if old.end <= map.start || old.start >= map.end {
                out.push(old);
                continue;
            }
            if old.start < map.start {
                out.push(TaskMap {
                    end: map.start,
                    ..old.clone()
                });
            }
            if old.end > map.end {
                out.push(TaskMap {
                    start: map.end,
                    pgoff: old.pgoff + (map.end - old.start),
                    ..old.clone()
                });
            }
        }
        out.push(map);
        out.sort_by_key(|m| m.start);
        *maps = out;
    }

    /// The tasks in perf's order: roots (no known parent) in perf's thread-table order
    /// (thread id modulo 256, then thread id), each followed by its children, depth-first.
    /// Items are `(depth, task)`.
    pub fn tree(&self) -> Vec<(usize, &Task)> {
        let mut order: Vec<&Task> = self.tasks.values().collect();
        order.sort_by_key(|t| ((t.tid as u32) % 256, t.tid));
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        let mut listed: HashMap<i32, bool> = HashMap::new();
        let mut roots = Vec::new();
        for t in &order {
            // Walk up to the first task already listed (or a root), linking on the way.
            let mut cur = t.tid;
            loop {
                if listed.get(&cur).copied().unwrap_or(false) {
                    break;
                }
                listed.insert(cur, true);
                let task = &self.tasks[&cur];
                if task.ppid == -1 || !self.tasks.contains_key(&task.ppid) {
                    roots.push(cur);
                    break;
                }
                children.entry(task.ppid).or_default().push(cur);
                cur = task.ppid;
            }
        }
        let mut out = Vec::with_capacity(order.len());
        let mut stack: Vec<(usize, i32)> = roots.iter().rev().map(|&r| (0, r)).collect();
        while let Some((depth, tid)) = stack.pop() {
            out.push((depth, &self.tasks[&tid]));
            if let Some(c) = children.get(&tid) {
                stack.extend(c.iter().rev().map(|&c| (depth + 1, c)));
            }
        }
        out
    }

    /// perf's `--tasks` text (with each process's maps when `mmaps`).
    pub fn render(&self, mmaps: bool) -> String {
        let mut s = format!("# {:>8} {:>8} {:>8}  {}\n", "pid", "tid", "ppid", "comm");
        for (depth, t) in self.tree() {
            let head = format!("  {:>8} {:>8} {:>8} |{:depth$}", t.pid, t.tid, t.ppid, "");
            let indent = head.len();
            s.push_str(&head);
            s.push_str(&t.comm);
            s.push('\n');
            if !mmaps {
                continue;
            }
            for m in self.maps.get(&t.pid).into_iter().flatten() {
                let _ = writeln!(
                    s,
                    "{:indent$}  {:x}-{:x} {}{}{}{} {:08x} {} {}",
                    "",
                    m.start,
                    m.end,
                    if m.prot & 1 != 0 { 'r' } else { '-' },
                    if m.prot & 2 != 0 { 'w' } else { '-' },
                    if m.prot & 4 != 0 { 'x' } else { '-' },
                    if m.flags & 1 != 0 { 's' } else { 'p' },
                    m.pgoff,
                    m.ino,
                    m.name
                );
            }
        }
        s
    }
}
