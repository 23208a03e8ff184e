//! The fleet's labels on a pprof profile built by `perfkit-report`'s export, added after
//! the export (whatever labels the export itself gives are kept, none is repeated):
//!
//! * `comm`: the thread's name; `process`: the name of the process (its main thread);
//! * `tid` (number), when the export did not give it and the thread is known;
//! * `cgroup`: the process's cgroup v2 path (from `/proc/PID/cgroup`, read while the
//!   process lives); `container`: the container id found in that path (docker, containerd,
//!   CRI-O, podman scopes);
//! * `host`.
//!
//! [`unsymbolize`] turns user-space frames back into addresses in mappings with build ids
//! (`--no-symbolize`), for a profile store that symbolizes on its side.

use perfkit_report::Profile;
use perfkit_report::export::pprof::{Label, Mapping, PprofProfile};
use std::collections::HashMap;

/// Adds labels; keeps a small cache of cgroups by pid between windows.
#[derive(Debug)]
pub struct Labeller {
    host: String,
    cgroups: HashMap<i32, Option<String>>,
}

impl Labeller {
    /// Labels for `host`.
    pub fn new(host: &str) -> Labeller {
        Labeller {
            host: host.to_string(),
            cgroups: HashMap::new(),
        }
    }

    /// Add the labels to every sample of `msg`, built from `profile`.
    pub fn label(&mut self, msg: &mut PprofProfile, profile: &Profile) {
        // The cache holds the processes of the last window only: memory stays flat.
        let mut seen: HashMap<i32, Option<String>> = HashMap::new();
        let mut strings = Strings::of(msg);
        let key = |s: &mut Strings, k: &str| s.id(k);
        let (k_pid, k_tid, k_thread, k_comm, k_process, k_cgroup, k_container, k_host) = (
            key(&mut strings, "pid"),
            key(&mut strings, "tid"),
            key(&mut strings, "thread"),
            key(&mut strings, "comm"),
            key(&mut strings, "process"),
            key(&mut strings, "cgroup"),
            key(&mut strings, "container"),
            key(&mut strings, "host"),
        );
        let host = strings.id(&self.host);
        // Threads by (pid, name), and each process's name.
        let mut tids: HashMap<(i32, &str), Vec<i32>> = HashMap::new();
        let mut process: HashMap<i32, &str> = HashMap::new();
        for t in &profile.threads {
            tids.entry((t.pid, t.name())).or_default().push(t.tid);
            if t.tid == t.pid {
                process.insert(t.pid, t.name());
            }
        }
        for s in &mut msg.sample {
            let has = |k: i64| s.label.iter().any(|l| l.key == k);
            let pid = s
                .label
                .iter()
                .find(|l| l.key == k_pid)
                .map(|l| l.num as i32);
            let name = s
                .label
                .iter()
                .find(|l| (l.key == k_comm || l.key == k_thread) && l.str != 0)
                .map(|l| strings.table[l.str as usize].clone());
            let mut add: Vec<Label> = Vec::new();
            if let Some(name) = &name
                && !has(k_comm)
            {
                add.push(str_label(k_comm, strings.id(name)));
            }
            if let Some(pid) = pid {
                let pname = process
                    .get(&pid)
                    .map(|s| s.to_string())
                    .or_else(|| name.clone());
                if let Some(p) = pname
                    && !has(k_process)
                {
                    add.push(str_label(k_process, strings.id(&p)));
                }
                if !has(k_tid)
                    && let Some(name) = &name
                    && let Some([tid]) = tids.get(&(pid, name.as_str())).map(Vec::as_slice)
                {
                    add.push(Label {
                        key: k_tid,
                        num: i64::from(*tid),
                        ..Label::default()
                    });
                }
                let cg = seen
                    .entry(pid)
                    .or_insert_with(|| match self.cgroups.get(&pid) {
                        Some(c) => c.clone(),
                        None => cgroup_of(pid),
                    })
                    .clone();
                if let Some(cg) = cg {
                    if !has(k_cgroup) {
                        add.push(str_label(k_cgroup, strings.id(&cg)));
                    }
                    if let Some(id) = container_id(&cg)
                        && !has(k_container)
                    {
                        add.push(str_label(k_container, strings.id(id)));
                    }
                }
            }
            if !has(k_host) {
                add.push(str_label(k_host, host));
            }
            s.label.extend(add);
        }
        self.cgroups = seen;
        msg.string_table = strings.table;
    }
}

fn str_label(key: i64, str: i64) -> Label {
    Label {
        key,
        str,
        ..Label::default()
    }
}

/// A profile's string table with an index, to add strings.
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn of(msg: &mut PprofProfile) -> Strings {
        let table = std::mem::take(&mut msg.string_table);
        let mut index = HashMap::with_capacity(table.len());
        for (i, s) in table.iter().enumerate() {
            index.entry(s.clone()).or_insert(i as i64);
        }
        let mut me = Strings { table, index };
        if me.table.is_empty() {
            me.id("");
        }
        me
    }
    fn id(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(s.to_string());
        self.index.insert(s.to_string(), i);
        i
    }
}

/// The cgroup v2 path of a process (`0::/system.slice/foo.service`), or the first v1 path.
pub fn cgroup_of(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    parse_proc_cgroup(&text)
}

fn parse_proc_cgroup(text: &str) -> Option<String> {
    let mut first = None;
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(_), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id == "0" {
            return Some(path.to_string());
        }
        first.get_or_insert_with(|| path.to_string());
    }
    first
}

/// The container id in a cgroup path: `docker-<64 hex>.scope`, `/docker/<id>`,
/// `cri-containerd-<id>.scope`, `crio-<id>.scope`, `libpod-<id>.scope`; the first 12
/// characters, as `docker ps` shows them.
pub fn container_id(cgroup: &str) -> Option<&str> {
    for part in cgroup.rsplit('/') {
        let p = part.strip_suffix(".scope").unwrap_or(part);
        let id = ["docker-", "cri-containerd-", "crio-", "libpod-"]
            .iter()
            .find_map(|pre| p.strip_prefix(pre))
            .unwrap_or(p);
        if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Some(&id[..12]);
        }
    }
    None
}

/// `--no-symbolize`: user-space locations keep their address only, in mappings that say
/// where their file's segment was loaded (start, size and file offset as
/// `/proc/PID/maps` has them, from the file's program headers) and carry the file's GNU
/// build id, with `has_functions` false, so that a profile store (Parca,
/// Pyroscope, `go tool pprof` with the binaries at hand) symbolizes them. Kernel frames
/// keep their names (the kernel's symbols are this host's alone).
pub fn unsymbolize(
    msg: &mut PprofProfile,
    profile: &Profile,
    files: &mut crate::symcache::SymbolCache,
) {
    let offset_of: HashMap<(&str, u64), u64> = profile
        .frames
        .iter()
        .filter_map(|f| {
            let func = &profile.funcs[f.func as usize];
            Some(((func.dso.as_str(), f.addr), f.map_offset?))
        })
        .collect();
    let mut strings = Strings::of(msg);
    let mut mappings: Vec<Mapping> = Vec::new();
    let mut by_key: HashMap<(String, u64, u64), u64> = HashMap::new();
    let mut build_ids: HashMap<String, i64> = HashMap::new();
    let old: HashMap<u64, String> = msg
        .mapping
        .iter()
        .map(|m| (m.id, strings.table[m.filename as usize].clone()))
        .collect();
    let mut kept_old: HashMap<u64, u64> = HashMap::new();
    for loc in &mut msg.location {
        let dso = old.get(&loc.mapping_id).cloned().unwrap_or_default();
        let Some(&off) = offset_of.get(&(dso.as_str(), loc.address)) else {
            // Kernel or anonymous code: keep the location as the export made it.
            let new = *kept_old.entry(loc.mapping_id).or_insert_with(|| {
                let mut m = msg
                    .mapping
                    .iter()
                    .find(|m| m.id == loc.mapping_id)
                    .cloned()
                    .unwrap_or_default();
                m.id = mappings.len() as u64 + 1;
                mappings.push(m);
                mappings.len() as u64
            });
            loc.mapping_id = new;
            continue;
        };
        let base = loc.address - off;
        let (pgoff, seg_len) = files.segment(&dso, off).unwrap_or((0, 0));
        let id = *by_key.entry((dso.clone(), base, pgoff)).or_insert_with(|| {
            let build_id = *build_ids.entry(dso.clone()).or_insert_with(|| {
                files
                    .build_id(&dso)
                    .map_or(0, |b| strings.id(&perfkit_symbols::build_id_hex(&b)))
            });
            mappings.push(Mapping {
                id: mappings.len() as u64 + 1,
                memory_start: base + pgoff,
                memory_limit: base + pgoff + seg_len,
                file_offset: pgoff,
                filename: strings.id(&dso),
                build_id,
                ..Mapping::default()
            });
            mappings.len() as u64
        });
        let m = &mut mappings[id as usize - 1];
        m.memory_limit = m.memory_limit.max(loc.address + 1);
        m.memory_start = m.memory_start.min(loc.address);
        loc.mapping_id = id;
        loc.line.clear();
    }
    msg.mapping = mappings;
    msg.string_table = strings.table;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_lines() {
        assert_eq!(
            parse_proc_cgroup("0::/system.slice/ssh.service\n").as_deref(),
            Some("/system.slice/ssh.service")
        );
        assert_eq!(
            parse_proc_cgroup("12:perf_event:/a\n0::/b\n").as_deref(),
            Some("/b")
        );
        assert_eq!(parse_proc_cgroup("").as_deref(), None);
    }

    #[test]
    fn container_ids() {
        let id = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
        assert_eq!(
            container_id(&format!("/system.slice/docker-{id}.scope")),
            Some("0123456789ab")
        );
        assert_eq!(
            container_id(&format!(
                "/kubepods/burstable/pod1/cri-containerd-{id}.scope"
            )),
            Some("0123456789ab")
        );
        assert_eq!(container_id(&format!("/docker/{id}")), Some("0123456789ab"));
        assert_eq!(container_id("/user.slice/user-0.slice"), None);
    }
}
