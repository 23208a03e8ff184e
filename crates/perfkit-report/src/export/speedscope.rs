//! speedscope's file format (<https://www.speedscope.app/file-format-schema.json>): one
//! sampled profile per thread (per event and thread when several events have samples),
//! frames shared; off-CPU time is weighed in nanoseconds ([`super::weight`]).

use crate::Profile;
use serde_json::json;
use std::io::{self, Write};

/// The speedscope document for `p`.
pub fn document(p: &Profile, name: &str) -> serde_json::Value {
    let frames: Vec<serde_json::Value> = p
        .funcs
        .iter()
        .map(|f| json!({ "name": f.name, "file": f.dso }))
        .collect();
    let mut profiles = Vec::new();
    let weighing = super::weight::Weights::of(p);
    let events: Vec<u32> = if weighing.several() {
        (0..p.events.len() as u32).collect()
    } else {
        vec![u32::MAX]
    };
    for &event in &events {
        for (ti, t) in p.threads.iter().enumerate() {
            let mut samples = Vec::new();
            let mut weights = Vec::new();
            let (mut start, mut end) = (u64::MAX, 0);
            let mut total = 0u64;
            for s in p
                .samples
                .iter()
                .filter(|s| s.thread as usize == ti && (event == u32::MAX || s.event == event))
            {
                let mut stack: Vec<u32> = p
                    .stack_frames(s.stack)
                    .map(|f| p.frames[f as usize].func)
                    .collect();
                stack.reverse();
                samples.push(stack);
                let w = weighing.weight(s);
                weights.push(w);
                total += w;
                start = start.min(s.time);
                end = end.max(s.time);
            }
            if samples.is_empty() {
                continue;
            }
            let mut name = format!("{} ({}/{})", t.name(), t.pid, t.tid);
            if let Some(e) = p.events.get(event as usize) {
                name = format!("{name} {}", e.name);
            }
            let nanos = event != u32::MAX && weighing.in_nanos(event)
                || event == u32::MAX && weighing.unit(p) == "ns";
            profiles.push(json!({
                "type": "sampled",
                "name": name,
                "unit": if nanos { "nanoseconds" } else { "none" },
                "startValue": 0,
                "endValue": total,
                "samples": samples,
                "weights": weights,
            }));
        }
    }
    json!({
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": name,
        "activeProfileIndex": 0,
        "exporter": concat!("perfkit ", env!("CARGO_PKG_VERSION")),
    })
}

/// Write the speedscope JSON.
pub fn write(p: &Profile, name: &str, w: impl Write) -> io::Result<()> {
    serde_json::to_writer(w, &document(p, name)).map_err(io::Error::other)
}

#[cfg(test)]
mod tests {
    use crate::model::testing::sample_profile;

    #[test]
    fn document_follows_the_schema() {
        let p = sample_profile();
        let d = super::document(&p, "t");
        assert_eq!(
            d["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        let frames = d["shared"]["frames"].as_array().unwrap();
        let profiles = d["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 2);
        let main = &profiles[0];
        assert_eq!(main["type"], "sampled");
        let samples = main["samples"].as_array().unwrap();
        assert_eq!(samples.len(), main["weights"].as_array().unwrap().len());
        assert_eq!(samples.len(), 80);
        // Stacks go from the root to the leaf.
        let first: Vec<&str> = samples[0]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                frames[i.as_u64().unwrap() as usize]["name"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(first, ["main", "work", "hot_loop"]);
    }
}
