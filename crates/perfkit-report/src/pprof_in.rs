//! Reading pprof profiles back into the profile model: one file, several, or a directory of
//! them (an agent's output), gzipped or not, merged into one [`Profile`] that every report
//! and export reads, optionally only the samples whose labels match ([`LabelFilter`]).
//!
//! What a pprof profile gives and how it maps:
//!
//! * each sample's `pid`, `tid` and `comm` (or `thread`) labels make its thread; a sample
//!   without them belongs to thread 0 of process 0, named after the profile's file;
//! * its locations (leaf first) with their lines (innermost inline first) make the stack:
//!   a function per (name, mapping file), lines after the first of a location marked as
//!   inlined callers; a location without lines (not symbolized) is `[unknown]` in its file;
//! * the `samples/count` value is the number of samples (each becomes that many samples
//!   of the model, sharing the other value, e.g. `cpu/nanoseconds`, as their period);
//! * the profile's `time_nanos` is the time of its samples (profiles are merged in time
//!   order).

use crate::export::pprof::PprofProfile;
use crate::{EventDesc, Frame, Func, Profile, Sample};
use prost::Message;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `--label KEY=VALUE`: keep samples whose label KEY has this value (a string label, or a
/// number label written in decimal).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabelFilter {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

impl std::str::FromStr for LabelFilter {
    type Err = String;
    fn from_str(s: &str) -> Result<LabelFilter, String> {
        match s.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok(LabelFilter {
                key: k.trim().to_string(),
                value: v.to_string(),
            }),
            _ => Err(format!(
                "`{s}`: give a label as KEY=VALUE (comm=nginx, pid=42)"
            )),
        }
    }
}

/// Why pprof input could not be read.
#[derive(Debug)]
#[non_exhaustive]
pub enum PprofError {
    /// Reading a file or directory.
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a pprof profile.
    Decode {
        /// The path.
        path: PathBuf,
        /// Why.
        source: prost::DecodeError,
    },
    /// A directory holds no profile.
    Empty(PathBuf),
}

impl std::fmt::Display for PprofError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PprofError::Io { path, .. } => write!(f, "cannot read {}", path.display()),
            PprofError::Decode { path, .. } => write!(
                f,
                "{}: not a pprof profile (a gzipped or plain perftools.profiles.Profile)",
                path.display()
            ),
            PprofError::Empty(p) => write!(
                f,
                "{}: no profiles in this directory (*.pb.gz, *.pb, *.pprof)",
                p.display()
            ),
        }
    }
}

impl std::error::Error for PprofError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PprofError::Io { source, .. } => Some(source),
            PprofError::Decode { source, .. } => Some(source),
            PprofError::Empty(_) => None,
        }
    }
}

/// Whether `path` is pprof input: a directory, a gzip file, or a file named `*.pb`,
/// `*.pprof` (anything else is taken for perf.data).
pub fn is_pprof(path: &Path) -> bool {
    if path.is_dir() {
        return true;
    }
    let mut magic = [0u8; 2];
    if std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && magic == [0x1f, 0x8b]
    {
        return true;
    }
    let name = path.to_string_lossy();
    name.ends_with(".pb") || name.ends_with(".pprof")
}

/// The profile files of `paths`: files as given, directories' `*.pb.gz`, `*.pb`,
/// `*.pprof`, `*.pprof.gz` files sorted by name (hidden and temporary files left out).
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, PprofError> {
    let mut out = Vec::new();
    for p in paths {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let rd = std::fs::read_dir(p).map_err(|source| PprofError::Io {
            path: p.clone(),
            source,
        })?;
        let mut files: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|f| {
                let n = f.file_name().and_then(|n| n.to_str()).unwrap_or("");
                !n.starts_with('.')
                    && [".pb.gz", ".pb", ".pprof", ".pprof.gz"]
                        .iter()
                        .any(|ext| n.ends_with(ext))
                    && f.is_file()
            })
            .collect();
        if files.is_empty() {
            return Err(PprofError::Empty(p.clone()));
        }
        files.sort();
        out.extend(files);
    }
    Ok(out)
}

/// Read one pprof file (gzipped or not).
pub fn read(path: &Path) -> Result<PprofProfile, PprofError> {
    let io = |source| PprofError::Io {
        path: path.to_path_buf(),
        source,
    };
    let bytes = std::fs::read(path).map_err(io)?;
    let raw = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::MultiGzDecoder::new(&bytes[..])
            .read_to_end(&mut out)
            .map_err(io)?;
        out
    } else {
        bytes
    };
    PprofProfile::decode(&raw[..]).map_err(|source| PprofError::Decode {
        path: path.to_path_buf(),
        source,
    })
}

/// Read `paths` (files and directories) and merge them into one profile, keeping the
/// samples that match every filter.
pub fn load(paths: &[PathBuf], filters: &[LabelFilter]) -> Result<Profile, PprofError> {
    let files = expand(paths)?;
    let mut profiles = Vec::with_capacity(files.len());
    for f in &files {
        profiles.push((read(f)?, f));
    }
    profiles.sort_by_key(|(p, _)| p.time_nanos);
    let mut out = Profile::default();
    let mut merge = Merge::default();
    for (p, path) in &profiles {
        merge.add(&mut out, p, path, filters);
    }
    out.meta
        .push(("pprof profiles".into(), files.len().to_string()));
    Ok(out)
}

/// Interning across profiles.
#[derive(Default)]
struct Merge {
    /// Event index by sample type name.
    events: HashMap<String, u32>,
}

impl Merge {
    fn add(&mut self, out: &mut Profile, p: &PprofProfile, path: &Path, filters: &[LabelFilter]) {
        let s = |i: i64| p.string_table.get(i as usize).map_or("", String::as_str);
        // Which value counts samples, which is the period.
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (s(t.r#type), s(t.unit)))
            .collect();
        let count_ix = types
            .iter()
            .position(|t| t.1 == "count" && t.0 == "samples");
        let period_ix = types
            .iter()
            .enumerate()
            .position(|(i, _)| Some(i) != count_ix)
            .or(count_ix)
            .unwrap_or(0);
        let event_name = match types.get(period_ix) {
            Some(("cpu", "nanoseconds")) => "cpu-clock".to_string(),
            Some((t, _)) if !t.is_empty() => t.to_string(),
            _ => "samples".to_string(),
        };
        let event = *self.events.entry(event_name.clone()).or_insert_with(|| {
            out.events.push(EventDesc {
                name: event_name,
                callchain: true,
                trace: None,
            });
            out.events.len() as u32 - 1
        });
        let mappings: HashMap<u64, &str> =
            p.mapping.iter().map(|m| (m.id, s(m.filename))).collect();
        let functions: HashMap<u64, &str> = p.function.iter().map(|f| (f.id, s(f.name))).collect();
        // Frames of each location, leaf first.
        let mut loc_frames: HashMap<u64, Vec<u32>> = HashMap::with_capacity(p.location.len());
        for loc in &p.location {
            let dso = mappings
                .get(&loc.mapping_id)
                .copied()
                .unwrap_or("[unknown]");
            let dso = if dso.is_empty() { "[unknown]" } else { dso };
            let kernel = dso.starts_with("[kernel") || loc.address >= 0xffff_8000_0000_0000;
            let mut frames = Vec::with_capacity(loc.line.len().max(1));
            let names: Vec<&str> = if loc.line.is_empty() {
                vec!["[unknown]"]
            } else {
                loc.line
                    .iter()
                    .map(|l| {
                        functions
                            .get(&l.function_id)
                            .copied()
                            .unwrap_or("[unknown]")
                    })
                    .collect()
            };
            let last = names.len() - 1;
            for (i, name) in names.iter().enumerate() {
                let func = out.func(Func {
                    name: name.to_string(),
                    dso: dso.to_string(),
                    kernel,
                });
                frames.push(out.frame(Frame {
                    func,
                    addr: loc.address,
                    map_offset: None,
                    sym_offset: None,
                    srcline: None,
                    inlined: i != last,
                }));
            }
            loc_frames.insert(loc.id, frames);
        }
        let time = p.time_nanos.max(0) as u64;
        let fallback_comm = path
            .file_name()
            .map_or("pprof".to_string(), |n| n.to_string_lossy().into_owned());
        let mut leaf_first: Vec<u32> = Vec::new();
        for sample in &p.sample {
            let mut pid = None;
            let mut tid = None;
            let mut comm = None;
            let mut matched = vec![false; filters.len()];
            for l in &sample.label {
                let key = s(l.key);
                let value = if l.str != 0 {
                    s(l.str).to_string()
                } else {
                    l.num.to_string()
                };
                match key {
                    "pid" => pid = Some(l.num as i32),
                    "tid" => tid = Some(l.num as i32),
                    "comm" => comm = Some(value.clone()),
                    "thread" if comm.is_none() && l.str != 0 => comm = Some(value.clone()),
                    _ => {}
                }
                for (i, f) in filters.iter().enumerate() {
                    if f.key == key && f.value == value {
                        matched[i] = true;
                    }
                }
            }
            if !matched.iter().all(|m| *m) {
                continue;
            }
            let pid = pid.unwrap_or(0);
            let tid = tid.unwrap_or(pid);
            let thread = out.thread(pid, tid);
            let name = comm.unwrap_or_else(|| fallback_comm.clone());
            let t = &mut out.threads[thread as usize];
            if t.names.last().is_none_or(|(_, n)| *n != name) {
                t.names.push((time, name));
            }
            if t.start == 0 || time < t.start {
                t.start = time;
            }
            t.end = t.end.max(time);
            leaf_first.clear();
            for id in &sample.location_id {
                if let Some(f) = loc_frames.get(id) {
                    leaf_first.extend_from_slice(f);
                }
            }
            let stack = out.stack_from_root(leaf_first.iter().rev().copied());
            let value = |i: Option<usize>| i.and_then(|i| sample.value.get(i)).copied();
            let n = value(count_ix).unwrap_or(1).max(1) as u64;
            let total = value(Some(period_ix)).unwrap_or(n as i64).max(0) as u64;
            for k in 0..n {
                let period = total / n + u64::from(k < total % n);
                out.samples.push(Sample {
                    time,
                    thread,
                    cpu: None,
                    event,
                    period,
                    stack,
                    raw: None,
                    chain_broken: false,
                    count: 1,
                    cgroup: 0,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::pprof;
    use crate::model::testing::sample_profile;

    fn write(dir: &Path, name: &str, time: i64, gz: bool) -> PathBuf {
        let mut msg = pprof::build(&sample_profile());
        msg.time_nanos = time;
        let bytes = msg.encode_to_vec();
        let path = dir.join(name);
        if gz {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut e, &bytes).unwrap();
            std::fs::write(&path, e.finish().unwrap()).unwrap();
        } else {
            std::fs::write(&path, bytes).unwrap();
        }
        path
    }

    #[test]
    fn a_directory_merges_and_labels_filter() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), "a.pb.gz", 2_000, true);
        write(d.path(), "b.pb", 1_000, false);
        std::fs::write(d.path().join("notes.txt"), "x").unwrap();
        assert!(is_pprof(d.path()));
        assert!(is_pprof(&d.path().join("a.pb.gz")));
        let p = load(&[d.path().to_path_buf()], &[]).unwrap();
        // sample_profile has 100 samples of 250 us each; two profiles.
        assert_eq!(p.samples.len(), 200);
        assert_eq!(
            p.samples.iter().map(|s| s.period).sum::<u64>(),
            200 * 250_000
        );
        assert!(p.samples.windows(2).all(|w| w[0].time <= w[1].time));
        let hot = p
            .samples
            .iter()
            .filter(|s| {
                p.stack_frames(s.stack)
                    .next()
                    .is_some_and(|f| p.func_of(f).name == "hot_loop")
            })
            .count();
        assert_eq!(hot, 140, "70 hot_loop samples per profile");
        let leaf = p.stack_frames(p.samples[0].stack).collect::<Vec<_>>();
        assert!(leaf.len() >= 2, "stacks come back");
        // The worker thread only: its 20 samples per profile.
        let f: LabelFilter = "comm=app-worker".parse().unwrap();
        let p = load(&[d.path().to_path_buf()], &[f]).unwrap();
        assert_eq!(p.samples.len(), 40);
        let f: LabelFilter = "pid=10".parse().unwrap();
        assert_eq!(
            load(&[d.path().to_path_buf()], &[f]).unwrap().samples.len(),
            200
        );
        let f: LabelFilter = "pid=11".parse().unwrap();
        assert_eq!(
            load(&[d.path().to_path_buf()], &[f]).unwrap().samples.len(),
            0
        );
        assert!("nolabel".parse::<LabelFilter>().is_err());
    }

    #[test]
    fn bad_input_says_what_is_wrong() {
        let d = tempfile::tempdir().unwrap();
        let e = load(&[d.path().to_path_buf()], &[]).unwrap_err();
        assert!(e.to_string().contains("no profiles"), "{e}");
        let junk = d.path().join("junk.pb");
        std::fs::write(&junk, b"\xff\xff\xff\xff").unwrap();
        let e = load(&[junk], &[]).unwrap_err();
        assert!(e.to_string().contains("not a pprof profile"), "{e}");
    }
}
