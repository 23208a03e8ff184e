//! pprof: a gzipped protobuf `perftools.profiles.Profile`, read by `go tool pprof`,
//! Pyroscope and Parca. The messages are declared here with `prost` derives, field numbers
//! as in `profile.proto`.

use crate::Profile;
use prost::Message;
use std::collections::HashMap;
use std::io::{self, Write};

/// `perftools.profiles.Profile`.
#[derive(Clone, PartialEq, Message)]
pub struct PprofProfile {
    /// Kinds of the sample values.
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    /// The samples.
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<PprofSample>,
    /// Memory mappings.
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    /// Code locations.
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    /// Functions.
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    /// All strings; index 0 is "".
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Regex of frames to drop.
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    /// Regex of frames to keep.
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// Collection time (ns since the epoch).
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    /// Profile duration.
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// Kind of events between samples.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    /// Events between samples.
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form comments (string indices).
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// Index of the default sample type.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
}

/// `ValueType`: type and unit as string indices.
#[derive(Clone, PartialEq, Message)]
pub struct ValueType {
    /// Type (string index).
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    /// Unit (string index).
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// `Sample`.
#[derive(Clone, PartialEq, Message)]
pub struct PprofSample {
    /// Location ids, leaf first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    /// One value per sample type.
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    /// Labels.
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// `Label`.
#[derive(Clone, PartialEq, Message)]
pub struct Label {
    /// Key (string index).
    #[prost(int64, tag = "1")]
    pub key: i64,
    /// String value (string index).
    #[prost(int64, tag = "2")]
    pub str: i64,
    /// Numeric value.
    #[prost(int64, tag = "3")]
    pub num: i64,
    /// Unit of `num` (string index).
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// `Mapping`.
#[derive(Clone, PartialEq, Message)]
pub struct Mapping {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Start address.
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    /// End address.
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    /// File offset.
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// File name (string index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// Build id (string index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Functions are symbolized.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    /// File names are known.
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    /// Line numbers are known.
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    /// Inline frames are known.
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// `Location`.
#[derive(Clone, PartialEq, Message)]
pub struct Location {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Mapping id.
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    /// Address.
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// Lines (innermost inline first).
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    /// Folded.
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// `Line`.
#[derive(Clone, PartialEq, Message)]
pub struct Line {
    /// Function id.
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    /// Line number.
    #[prost(int64, tag = "2")]
    pub line: i64,
    /// Column.
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// `Function`.
#[derive(Clone, PartialEq, Message)]
pub struct Function {
    /// Id (1-based).
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// Name (string index).
    #[prost(int64, tag = "2")]
    pub name: i64,
    /// Mangled name (string index).
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    /// Source file (string index).
    #[prost(int64, tag = "4")]
    pub filename: i64,
    /// Start line.
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}

struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Self {
        Strings {
            table: vec![String::new()],
            index: HashMap::from([(String::new(), 0)]),
        }
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

/// A label a [`PprofBuilder`] puts on samples: a string (`comm`, `host`) or a number with
/// an optional unit (`pid`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelValue {
    /// A string label.
    Str(String),
    /// A numeric label and its unit (`""` for none).
    Num(i64, String),
}

type SampleLabels<'a> = Box<dyn Fn(&Profile, &crate::Sample) -> Vec<(String, LabelValue)> + 'a>;

/// Builds the pprof message of a [`Profile`], with options: labels put on every sample
/// (`host`, `service`), per-sample labels from a function (`cgroup`), comments, and whether
/// function names are included (`without_symbols` leaves names to the profile store, which
/// symbolizes by build id and address).
///
/// Every sample carries the labels `comm` (its thread's name), `pid` and `tid`; its values
/// are `samples/count`, then the summed period of each of the profile's events:
/// `cpu/nanoseconds` for clock events (`cpu-clock`, `task-clock`), `offcpu-time/nanoseconds`
/// for off-CPU time (`record --off-cpu`), `EVENT/count` for others. The first mapping is
/// the main executable of the process with the most samples, as `go tool pprof` expects.
///
/// ```
/// use perfkit_report::export::pprof::PprofBuilder;
/// let profile = perfkit_report::Profile::default();
/// let message = PprofBuilder::new(&profile).label("host", "db-1").build();
/// assert_eq!(message.sample.len(), 0);
/// ```
pub struct PprofBuilder<'a> {
    profile: &'a Profile,
    labels: Vec<(String, LabelValue)>,
    sample_labels: Option<SampleLabels<'a>>,
    comments: Vec<String>,
    symbols: bool,
}

impl<'a> PprofBuilder<'a> {
    /// A builder for `profile` with the default options.
    pub fn new(profile: &'a Profile) -> Self {
        PprofBuilder {
            profile,
            labels: Vec::new(),
            sample_labels: None,
            comments: Vec::new(),
            symbols: true,
        }
    }

    /// Put a string label on every sample.
    pub fn label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels
            .push((key.into(), LabelValue::Str(value.into())));
        self
    }

    /// Put a numeric label (with a unit, `""` for none) on every sample.
    pub fn num_label(
        mut self,
        key: impl Into<String>,
        value: i64,
        unit: impl Into<String>,
    ) -> Self {
        self.labels
            .push((key.into(), LabelValue::Num(value, unit.into())));
        self
    }

    /// Labels computed per sample (a cgroup, a container). Samples are merged only when
    /// their stack, thread and these labels are equal.
    pub fn sample_labels(
        mut self,
        f: impl Fn(&Profile, &crate::Sample) -> Vec<(String, LabelValue)> + 'a,
    ) -> Self {
        self.sample_labels = Some(Box::new(f));
        self
    }

    /// Add a comment (shown by `go tool pprof -comments`).
    pub fn comment(mut self, text: impl Into<String>) -> Self {
        self.comments.push(text.into());
        self
    }

    /// Leave function names out: locations carry only addresses and mappings their build
    /// ids, for a profile store that symbolizes itself.
    pub fn without_symbols(mut self) -> Self {
        self.symbols = false;
        self
    }

    /// The message.
    pub fn build(&self) -> PprofProfile {
        let p = self.profile;
        let mut st = Strings::new();
        // A value column per event, after the sample count.
        let names: Vec<&str> = if p.events.is_empty() {
            vec!["samples"]
        } else {
            p.events.iter().map(|e| e.name.as_str()).collect()
        };
        let mut sample_type = vec![ValueType {
            r#type: st.id("samples"),
            unit: st.id("count"),
        }];
        for event in names {
            let clock = is_clock(event);
            let nanos = clock || event == super::weight::OFFCPU_EVENT;
            sample_type.push(ValueType {
                r#type: st.id(if clock { "cpu" } else { event }),
                unit: st.id(if nanos { "nanoseconds" } else { "count" }),
            });
        }
        let n_values = sample_type.len();
        let value_type = sample_type[1].clone();
        let (mappings, mapping_of) = self.mappings(&mut st);
        let mut functions: Vec<Function> = Vec::new();
        let mut locations: Vec<Location> = Vec::with_capacity(p.frames.len());
        let mut func_id: HashMap<u32, u64> = HashMap::new();
        for (i, fr) in p.frames.iter().enumerate() {
            let f = &p.funcs[fr.func as usize];
            let mapping_id = mapping_of[i];
            let line = if self.symbols {
                let function_id = *func_id.entry(fr.func).or_insert_with(|| {
                    let id = functions.len() as u64 + 1;
                    functions.push(Function {
                        id,
                        name: st.id(&f.name),
                        system_name: st.id(&f.name),
                        filename: fr.srcline.as_ref().map_or(0, |(file, _)| st.id(file)),
                        start_line: 0,
                    });
                    id
                });
                vec![Line {
                    function_id,
                    line: fr.srcline.as_ref().map_or(0, |(_, l)| i64::from(*l)),
                    column: 0,
                }]
            } else {
                Vec::new()
            };
            locations.push(Location {
                id: i as u64 + 1,
                mapping_id,
                address: fr.addr,
                line,
                is_folded: false,
            });
        }
        let keys = [st.id("comm"), st.id("pid"), st.id("tid")];
        let fixed: Vec<Label> = self
            .labels
            .iter()
            .map(|(k, v)| label(&mut st, k, v))
            .collect();
        // Labels as (key, str, num, unit) tuples while merging (prost messages do not hash).
        // A folded profile's sample stands for `count` samples, a kept one's for itself.
        type Key = (u32, Option<u32>, Vec<(i64, i64, i64, i64)>);
        let mut agg: HashMap<Key, Vec<i64>> = HashMap::new();
        // The period of the first event (the sampling one; off-CPU time comes after it).
        let (mut n, mut total) = (0u64, 0u64);
        for s in &p.samples {
            let extra = self.sample_labels.as_ref().map_or_else(Vec::new, |f| {
                f(p, s)
                    .iter()
                    .map(|(k, v)| {
                        let l = label(&mut st, k, v);
                        (l.key, l.str, l.num, l.num_unit)
                    })
                    .collect()
            });
            let e = agg
                .entry((s.thread, s.stack, extra))
                .or_insert_with(|| vec![0; n_values]);
            e[0] += i64::from(s.count);
            let col = (1 + s.event as usize).min(n_values - 1);
            e[col] += s.period as i64;
            if s.event == 0 {
                n += u64::from(s.count);
                total += s.period;
            }
        }
        let mut merged: Vec<(Key, Vec<i64>, Vec<u64>)> = agg
            .into_iter()
            .map(|(key, value)| {
                let ids = p.stack_frames(key.1).map(|f| u64::from(f) + 1).collect();
                (key, value, ids)
            })
            .collect();
        // Heaviest first; ties by stack, thread and labels, so that the output (and the
        // order its thread names enter the string table) is the same on every run.
        merged.sort_by(|(a, av, al), (b, bv, bl)| {
            let (ta, tb) = (&p.threads[a.0 as usize], &p.threads[b.0 as usize]);
            bv[0]
                .cmp(&av[0])
                .then_with(|| al.cmp(bl))
                .then_with(|| (ta.tid, ta.pid).cmp(&(tb.tid, tb.pid)))
                .then_with(|| a.2.cmp(&b.2))
        });
        let samples: Vec<PprofSample> = merged
            .into_iter()
            .map(|((thread, _, extra), value, location_id)| {
                let t = &p.threads[thread as usize];
                let mut label = vec![
                    Label {
                        key: keys[0],
                        str: st.id(t.name()),
                        ..Label::default()
                    },
                    Label {
                        key: keys[1],
                        num: i64::from(t.pid),
                        ..Label::default()
                    },
                    Label {
                        key: keys[2],
                        num: i64::from(t.tid),
                        ..Label::default()
                    },
                ];
                label.extend(fixed.iter().cloned());
                label.extend(extra.into_iter().map(|(key, str, num, num_unit)| Label {
                    key,
                    str,
                    num,
                    num_unit,
                }));
                PprofSample {
                    location_id,
                    value,
                    label,
                }
            })
            .collect();
        // A folded profile's samples carry their groups' first times: its last sample's
        // time is kept apart.
        let t0 = p.samples.first().map_or(0, |s| s.time);
        let t1 = if p.folded {
            p.last_sample
        } else {
            p.samples.last().map_or(0, |s| s.time)
        };
        let period = total.checked_div(n).unwrap_or(0) as i64;
        let mut comment: Vec<i64> = self.comments.iter().map(|c| st.id(c)).collect();
        if let Some((_, cmd)) = p.meta.iter().find(|(k, _)| k == "cmdline") {
            comment.push(st.id(&format!("recorded with: {cmd}")));
        }
        PprofProfile {
            sample_type,
            sample: samples,
            mapping: mappings,
            location: locations,
            function: functions,
            string_table: st.table,
            duration_nanos: t1.saturating_sub(t0) as i64,
            period_type: Some(value_type),
            period,
            comment,
            default_sample_type: 1,
            ..PprofProfile::default()
        }
    }

    /// The mappings (main executable first) and each frame's mapping id.
    fn mappings(&self, st: &mut Strings) -> (Vec<Mapping>, Vec<u64>) {
        let p = self.profile;
        // The main executable of the process with the most samples leads.
        let mut per_pid: HashMap<i32, usize> = HashMap::new();
        for s in &p.samples {
            *per_pid.entry(p.threads[s.thread as usize].pid).or_default() += s.count as usize;
        }
        let mut order: Vec<usize> = (0..p.images.len()).collect();
        order.sort_by_key(|&i| {
            let im = &p.images[i];
            let weight = per_pid.get(&im.pid).copied().unwrap_or(0);
            (!im.main, std::cmp::Reverse(weight), i)
        });
        let mut id_of_image = vec![0u64; p.images.len()];
        let mut mappings: Vec<Mapping> = Vec::new();
        for i in order {
            let im = &p.images[i];
            mappings.push(Mapping {
                id: mappings.len() as u64 + 1,
                memory_start: im.start,
                memory_limit: im.end,
                file_offset: if im.is_kernel() { 0 } else { im.pgoff },
                filename: st.id(&im.path),
                build_id: im.build_id_hex().map_or(0, |b| st.id(&b)),
                ..Mapping::default()
            });
            id_of_image[i] = mappings.len() as u64;
        }
        // Frames outside any recorded image (JIT code, unknown addresses) get one mapping per
        // name, without addresses.
        let mut by_name: HashMap<&str, u64> = HashMap::new();
        let mut mapping_of = Vec::with_capacity(p.frames.len());
        for (i, fr) in p.frames.iter().enumerate() {
            let id = match p.frame_images.get(&(i as u32)) {
                Some(&im) => id_of_image[im as usize],
                None => {
                    let dso = p.funcs[fr.func as usize].dso.as_str();
                    *by_name.entry(dso).or_insert_with(|| {
                        mappings.push(Mapping {
                            id: mappings.len() as u64 + 1,
                            filename: st.id(dso),
                            ..Mapping::default()
                        });
                        mappings.len() as u64
                    })
                }
            };
            let m = &mut mappings[id as usize - 1];
            let f = &p.funcs[fr.func as usize];
            m.has_filenames = true;
            if self.symbols {
                m.has_functions |= !f.name.starts_with('[');
                m.has_line_numbers |= fr.srcline.is_some();
                m.has_inline_frames |= fr.inlined;
            }
            mapping_of.push(id);
        }
        (mappings, mapping_of)
    }

    /// Write the gzipped protobuf.
    pub fn write(&self, w: impl Write) -> io::Result<()> {
        let bytes = self.build().encode_to_vec();
        let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
        gz.write_all(&bytes)?;
        gz.finish()?;
        Ok(())
    }
}

fn label(st: &mut Strings, key: &str, v: &LabelValue) -> Label {
    match v {
        LabelValue::Str(s) => Label {
            key: st.id(key),
            str: st.id(s),
            ..Label::default()
        },
        LabelValue::Num(n, unit) => Label {
            key: st.id(key),
            num: *n,
            num_unit: st.id(unit),
            ..Label::default()
        },
    }
}

/// Whether an event's period counts nanoseconds of CPU time.
pub(crate) fn is_clock(event: &str) -> bool {
    event.starts_with("cpu-clock") || event.starts_with("task-clock")
}

/// Build the pprof message with the default options ([`PprofBuilder`]).
pub fn build(p: &Profile) -> PprofProfile {
    PprofBuilder::new(p).build()
}

/// Write the gzipped protobuf with the default options ([`PprofBuilder`]).
pub fn write(p: &Profile, w: impl Write) -> io::Result<()> {
    PprofBuilder::new(p).write(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::testing::sample_profile;
    use std::io::Read;

    #[test]
    fn gzipped_protobuf_decodes_back() {
        let mut gz = Vec::new();
        write(&sample_profile(), &mut gz).unwrap();
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip magic");
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        let prof = PprofProfile::decode(&raw[..]).unwrap();
        let s = |i: i64| prof.string_table[i as usize].as_str();
        assert_eq!(s(prof.sample_type[0].r#type), "samples");
        assert_eq!(s(prof.sample_type[1].unit), "nanoseconds");
        let total: i64 = prof.sample.iter().map(|x| x.value[0]).sum();
        assert_eq!(total, 100);
        // The heaviest sample's leaf is hot_loop.
        let top = &prof.sample[0];
        assert_eq!(top.value[0], 70);
        let leaf = &prof.location[top.location_id[0] as usize - 1];
        let func = &prof.function[leaf.line[0].function_id as usize - 1];
        assert_eq!(s(func.name), "hot_loop");
        assert_eq!(top.location_id.len(), 3);
    }

    /// The sample profile with its frames in images: ld.so (seen first), the app (its main
    /// executable) and the kernel.
    fn with_images() -> crate::Profile {
        let mut p = sample_profile();
        let image = |path: &str, pid: i32, start: u64, main: bool| crate::Image {
            pid,
            start,
            end: start + 0x10_0000,
            pgoff: 0x1000,
            path: path.into(),
            build_id: Some([vec![0xab; 20], vec![0; 4]].concat()),
            main,
        };
        p.images
            .push(image("/lib64/ld-linux-x86-64.so.2", 10, 0x7f00_0000, false));
        p.images.push(image("/usr/bin/app", 10, 0, true));
        p.images
            .push(image("[kernel.kallsyms]", -1, 0xffff_0000, false));
        for f in 0..p.frames.len() as u32 {
            let image = if p.func_of(f).kernel { 2 } else { 1 };
            p.frame_images.insert(f, image);
        }
        p
    }

    #[test]
    fn main_executable_first_with_build_ids_and_labels() {
        let p = with_images();
        let prof = PprofBuilder::new(&p)
            .label("host", "db-1")
            .sample_labels(|_, s| {
                vec![(
                    "cpu".to_string(),
                    LabelValue::Num(i64::from(s.cpu.unwrap_or(0)), String::new()),
                )]
            })
            .comment("fleet")
            .build();
        let s = |i: i64| prof.string_table[i as usize].as_str();
        let m = &prof.mapping[0];
        assert_eq!(s(m.filename), "/usr/bin/app");
        assert_eq!(s(m.build_id), "ab".repeat(20));
        assert_eq!(
            (m.memory_start, m.memory_limit, m.file_offset),
            (0, 0x10_0000, 0x1000)
        );
        assert!(m.has_functions && m.has_filenames);
        // Then the other images of the busiest process (ld.so: no frames, no functions),
        // then the kernel's.
        assert_eq!(s(prof.mapping[1].filename), "/lib64/ld-linux-x86-64.so.2");
        assert!(!prof.mapping[1].has_functions);
        assert_eq!(s(prof.mapping[2].filename), "[kernel.kallsyms]");
        assert_eq!(prof.mapping[2].file_offset, 0);
        assert!(prof.mapping[2].has_functions);
        assert_eq!(
            (s(prof.period_type.as_ref().unwrap().r#type), prof.period),
            ("cpu", 250_000)
        );
        assert_eq!(s(prof.comment[0]), "fleet");
        // Per thread and cpu: 4 groups of the hot stack, each labelled.
        let top = &prof.sample[0];
        let labels: Vec<(String, String, i64)> = top
            .label
            .iter()
            .map(|l| (s(l.key).to_string(), s(l.str).to_string(), l.num))
            .collect();
        assert_eq!(labels[0], ("comm".into(), "app".into(), 0));
        assert_eq!(labels[1], ("pid".into(), String::new(), 10));
        assert_eq!(labels[2], ("tid".into(), String::new(), 10));
        assert_eq!(labels[3], ("host".into(), "db-1".into(), 0));
        assert_eq!(labels[4].0, "cpu");
        let total: i64 = prof.sample.iter().map(|x| x.value[0]).sum();
        assert_eq!(total, 100);
        let hot: i64 = prof
            .sample
            .iter()
            .filter(|x| {
                x.location_id.len() == 3 && {
                    let leaf = &prof.location[x.location_id[0] as usize - 1];
                    s(prof.function[leaf.line[0].function_id as usize - 1].name) == "hot_loop"
                }
            })
            .map(|x| x.value[0])
            .sum();
        assert_eq!(hot, 70);
        // Without symbols: addresses and build ids only.
        let bare = PprofBuilder::new(&p).without_symbols().build();
        assert!(bare.function.is_empty());
        assert!(bare.location.iter().all(|l| l.line.is_empty()));
        assert!(!bare.mapping[0].has_functions);
    }

    /// A profile folded as it was read (one sample per group, with its count) gives the
    /// message its samples one by one give, in the same order, string table included.
    #[test]
    fn a_folded_profile_gives_the_same_message() {
        for src in [with_images(), crate::model::testing::off_cpu_profile()] {
            let mut folded = src.clone();
            folded.samples.clear();
            let mut f = crate::fold::Folder::new(crate::fold::Aggregation::new(false));
            for s in &src.samples {
                f.push(&mut folded, *s);
            }
            f.flush(&mut folded);
            folded.folded = true;
            folded.last_sample = src.samples.last().unwrap().time;
            assert!(folded.samples.len() < src.samples.len());
            let (a, b) = (build(&src), build(&folded));
            assert!(a.duration_nanos > 0);
            assert_eq!(a, b);
            assert_eq!(a.encode_to_vec(), b.encode_to_vec());
        }
    }

    #[test]
    fn off_cpu_time_is_a_column_of_its_own() {
        let p = crate::model::testing::off_cpu_profile();
        let prof = build(&p);
        let s = |i: i64| prof.string_table[i as usize].as_str();
        let types: Vec<(&str, &str)> = prof
            .sample_type
            .iter()
            .map(|v| (s(v.r#type), s(v.unit)))
            .collect();
        assert_eq!(
            types,
            [
                ("samples", "count"),
                ("cpu", "nanoseconds"),
                ("offcpu-time", "nanoseconds")
            ]
        );
        assert!(prof.sample.iter().all(|x| x.value.len() == 3));
        let column = |c: usize| -> i64 { prof.sample.iter().map(|x| x.value[c]).sum() };
        assert_eq!(column(0), 101);
        assert_eq!(column(1), 100 * 250_000);
        assert_eq!(column(2), 5_000_000);
        // The worker's off-CPU time shares its stack's sample with the worker's cpu-clock
        // samples there, in its own column.
        let off = prof.sample.iter().find(|x| x.value[2] > 0).unwrap();
        assert_eq!(off.value, [21, 20 * 250_000, 5_000_000]);
        assert_eq!(off.label[2].num, 11);
        // The period is the sampling event's, not mixed with the off-CPU time.
        assert_eq!(prof.period, 250_000);
    }
}
