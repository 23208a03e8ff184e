//! The tracepoint formats of a recording and the traced kernel's printk strings.

use perfkit_data::PerfData;
use perfkit_data::tracing_data::TracingData;
use perfkit_sys as sys;
use perfkit_trace::Endian;
use perfkit_trace::printfmt::parse_printk_formats;
use perfkit_trace::tracefs::{self, TraceFormat};

/// What decoding tracepoint samples needs beyond the records: each tracepoint's `format`
/// (matched to events by id, `attr.config` of a `PERF_TYPE_TRACEPOINT` event) and the
/// kernel's `printk_formats` (for `%s` of `const char *` fields).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct TraceInfo {
    /// The formats, each in the byte order of the records it decodes.
    pub formats: Vec<TraceFormat>,
    /// `printk_formats`: (address, string).
    pub printk: Vec<(u64, String)>,
    /// Why the formats are missing or not the file's own, when that is so.
    pub warning: Option<String>,
}

impl TraceInfo {
    /// The formats of `file`'s tracepoint events: from its tracing data
    /// (`HEADER_TRACING_DATA`), decoding in the file's byte order; else from this
    /// machine's tracefs by id (right when the file was recorded on this boot of this
    /// machine), with a warning saying so. Empty when the file has no tracepoint events.
    pub fn for_file(file: &PerfData) -> TraceInfo {
        let ids: Vec<u64> = file
            .attrs
            .iter()
            .filter(|a| a.attr.type_ == sys::PERF_TYPE_TRACEPOINT)
            .map(|a| a.attr.config)
            .collect();
        if ids.is_empty() {
            return TraceInfo::default();
        }
        let Some(blob) = &file.features.tracing_data else {
            // This machine's formats describe only recordings of this machine's kernel
            // (another's ids and layouts differ: its fields would decode as garbage).
            if let Some(why) = crate::origin::elsewhere(file) {
                return TraceInfo {
                    warning: Some(format!(
                        "the file has no tracing data and was recorded elsewhere ({why}): \
                         the tracepoint formats are unknown, fields are not shown"
                    )),
                    ..TraceInfo::default()
                };
            }
            let mut local = TraceInfo::from_tracefs(&ids);
            local.warning = Some(if local.formats.is_empty() {
                "the file has no tracing data and tracefs has no such tracepoints: \
                 tracepoint fields are not shown"
                    .into()
            } else {
                "the file has no tracing data (HEADER_TRACING_DATA): tracepoint fields are \
                 decoded with this machine's tracefs formats"
                    .into()
            });
            return local;
        };
        match TracingData::parse(blob) {
            Ok(t) => TraceInfo {
                formats: t
                    .formats()
                    .filter_map(|(_, text)| TraceFormat::parse(&text).ok())
                    .map(|f| f.with_endian(file.endian))
                    .collect(),
                printk: parse_printk_formats(&String::from_utf8_lossy(&t.printk)),
                warning: None,
            },
            Err(e) => TraceInfo {
                warning: Some(format!("{e}: tracepoint fields are not shown")),
                ..TraceInfo::default()
            },
        }
    }

    /// The formats of the tracepoints with these ids from this machine's tracefs (records
    /// in this machine's byte order), and its `printk_formats`. Empty when tracefs is not
    /// mounted.
    pub fn from_tracefs(ids: &[u64]) -> TraceInfo {
        let Some(t) = tracefs::find_tracefs() else {
            return TraceInfo::default();
        };
        let formats: Vec<TraceFormat> = ids
            .iter()
            .filter_map(|&id| {
                let name = tracefs::name_of_id(&t, id)?;
                let (sys, ev) = name.split_once(':')?;
                TraceFormat::read(&t, sys, ev).ok()
            })
            .map(|f| f.with_endian(Endian::NATIVE))
            .collect();
        if formats.is_empty() {
            return TraceInfo::default();
        }
        TraceInfo {
            formats,
            printk: std::fs::read_to_string(t.join("printk_formats"))
                .map(|text| parse_printk_formats(&text))
                .unwrap_or_default(),
            warning: None,
        }
    }
}
