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

/// Build the pprof message: values are `[samples/count, <event>/<unit>...]`, one summed
/// period per event (`cpu/nanoseconds` for clock events, `offcpu-time/nanoseconds` for
/// off-CPU time).
pub fn build(p: &Profile) -> PprofProfile {
    let mut st = Strings::new();
    let mut sample_type = vec![ValueType {
        r#type: st.id("samples"),
        unit: st.id("count"),
    }];
    let names: Vec<&str> = if p.events.is_empty() {
        vec!["samples"]
    } else {
        p.events.iter().map(|e| e.name.as_str()).collect()
    };
    for event in names {
        let clock = event.starts_with("cpu-clock") || event.starts_with("task-clock");
        let nanos = clock || event == super::weight::OFFCPU_EVENT;
        sample_type.push(ValueType {
            r#type: st.id(if clock { "cpu" } else { event }),
            unit: st.id(if nanos { "nanoseconds" } else { "count" }),
        });
    }
    let n_values = sample_type.len();
    let mut mappings: Vec<Mapping> = Vec::new();
    let mut mapping_of: HashMap<String, u64> = HashMap::new();
    let mut functions: Vec<Function> = Vec::new();
    let mut locations: Vec<Location> = Vec::with_capacity(p.frames.len());
    let mut func_id: HashMap<u32, u64> = HashMap::new();
    for (i, fr) in p.frames.iter().enumerate() {
        let f = &p.funcs[fr.func as usize];
        let mapping_id = *mapping_of.entry(f.dso.clone()).or_insert_with(|| {
            let id = mappings.len() as u64 + 1;
            mappings.push(Mapping {
                id,
                filename: st.id(&f.dso),
                has_functions: true,
                ..Mapping::default()
            });
            id
        });
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
        locations.push(Location {
            id: i as u64 + 1,
            mapping_id,
            address: fr.addr,
            line: vec![Line {
                function_id,
                line: fr.srcline.as_ref().map_or(0, |(_, l)| i64::from(*l)),
                column: 0,
            }],
            is_folded: false,
        });
    }
    let thread_key = st.id("thread");
    let pid_key = st.id("pid");
    let mut agg: HashMap<(u32, Option<u32>), Vec<i64>> = HashMap::new();
    for s in &p.samples {
        let e = agg
            .entry((s.thread, s.stack))
            .or_insert_with(|| vec![0; n_values]);
        e[0] += 1;
        let col = (1 + s.event as usize).min(n_values - 1);
        e[col] += s.period as i64;
    }
    let mut samples: Vec<PprofSample> = agg
        .into_iter()
        .map(|((thread, stack), value)| {
            let t = &p.threads[thread as usize];
            PprofSample {
                location_id: p.stack_frames(stack).map(|f| u64::from(f) + 1).collect(),
                value,
                label: vec![
                    Label {
                        key: thread_key,
                        str: st.id(t.name()),
                        ..Label::default()
                    },
                    Label {
                        key: pid_key,
                        num: i64::from(t.pid),
                        ..Label::default()
                    },
                ],
            }
        })
        .collect();
    samples.sort_by(|a, b| b.value[0].cmp(&a.value[0]));
    let (t0, t1) = (
        p.samples.first().map_or(0, |s| s.time),
        p.samples.last().map_or(0, |s| s.time),
    );
    PprofProfile {
        sample_type,
        sample: samples,
        mapping: mappings,
        location: locations,
        function: functions,
        string_table: st.table,
        duration_nanos: t1.saturating_sub(t0) as i64,
        ..PprofProfile::default()
    }
}

/// Write the gzipped protobuf.
pub fn write(p: &Profile, w: impl Write) -> io::Result<()> {
    let bytes = build(p).encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::default());
    gz.write_all(&bytes)?;
    gz.finish()?;
    Ok(())
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
}
