//! Which fields `script` prints for each event: perf's defaults per event type, the
//! user's `-F`, and perf's refusals of fields the samples do not carry
//! (`Samples for 'cpu-clock' event do not have ADDR attribute set. Cannot print 'addr'
//! field.`), in the order perf checks them (`evsel__check_attr`).

use crate::script::{Field, FieldSpec};
use crate::script_events::EventFormat;
use perfkit_sys as sys;

/// Per event: its fields, or perf's message refusing the request.
pub fn resolve(
    spec: &FieldSpec,
    events: &[EventFormat],
    names: &[&str],
    has_clock: bool,
) -> Result<Vec<Vec<Field>>, String> {
    let mut out = Vec::with_capacity(events.len());
    for (i, e) in events.iter().enumerate() {
        let has_cpu = e.sample_type & sys::PERF_SAMPLE_CPU != 0;
        let defaults = match e.type_ {
            sys::PERF_TYPE_TRACEPOINT => Field::tracepoint_defaults(has_cpu),
            sys::PERF_TYPE_RAW => Field::raw_defaults(has_cpu, e.sample_type),
            _ => Field::defaults(has_cpu),
        };
        let user: Vec<Field> = match &spec.explicit {
            Some(f) => f.clone(),
            None => spec.add.clone(),
        };
        let mut fields = match &spec.explicit {
            Some(f) => f.clone(),
            None => spec.apply(defaults),
        };
        // perf checks the first event of each type only.
        let first_of_type = events[..i].iter().all(|o| o.type_ != e.type_);
        if first_of_type && e.sample_type != 0 {
            check(
                e,
                names.get(i).copied().unwrap_or(""),
                &user,
                &mut fields,
                has_clock,
            )?;
        } else if let Some(first) = events[..i].iter().position(|o| o.type_ == e.type_) {
            fields = out_fields(&out, first).unwrap_or(fields);
        }
        out.push(fields);
    }
    Ok(out)
}

fn out_fields(out: &[Vec<Field>], i: usize) -> Option<Vec<Field>> {
    out.get(i).cloned()
}

/// perf's `evsel__check_attr` for one event.
fn check(
    e: &EventFormat,
    name: &str,
    user: &[Field],
    fields: &mut Vec<Field>,
    has_clock: bool,
) -> Result<(), String> {
    let st = e.sample_type;
    // A field the samples lack: an error when the user asked for it, else dropped.
    let need = |fields: &mut Vec<Field>, f: Field, bits: u64, what: &str| {
        if !fields.contains(&f) || st & bits != 0 {
            return Ok(());
        }
        if user.contains(&f) {
            return Err(format!(
                "Samples for '{name}' event do not have {what} attribute set. Cannot print '{}' field.",
                f.name()
            ));
        }
        fields.retain(|x| *x != f);
        Ok(())
    };
    need(fields, Field::Ip, sys::PERF_SAMPLE_IP, "IP")?;
    need(fields, Field::Addr, sys::PERF_SAMPLE_ADDR, "ADDR")?;
    need(
        fields,
        Field::DataSrc,
        sys::PERF_SAMPLE_DATA_SRC,
        "DATA_SRC",
    )?;
    need(
        fields,
        Field::Weight,
        sys::PERF_SAMPLE_WEIGHT | sys::PERF_SAMPLE_WEIGHT_STRUCT,
        "WEIGHT",
    )?;
    let addresses = st & (sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_ADDR) != 0;
    if fields.contains(&Field::Sym) && !addresses {
        return Err("Display of symbols requested but neither sample IP nor sample address\navailable. Hence, no addresses to convert to symbols.".into());
    }
    if fields.contains(&Field::Symoff) && !fields.contains(&Field::Sym) {
        return Err("Display of offsets requested but symbol is notselected.".into());
    }
    if fields.contains(&Field::Dso) && !addresses {
        return Err("Display of DSO requested but no address to convert.".into());
    }
    let srccode = fields.contains(&Field::Other("srccode"));
    if (fields.contains(&Field::Srcline) || srccode) && !fields.contains(&Field::Ip) {
        return Err("Display of source line number requested but sample IP is not\nselected. Hence, no address to lookup the source line number.".into());
    }
    let insn = fields.contains(&Field::Other("brstackinsn"))
        || fields.contains(&Field::Other("brstackinsnlen"));
    if insn && e.branch_sample_type & sys::PERF_SAMPLE_BRANCH_ANY == 0 {
        return Err("Display of branch stack assembler requested, but non all-branch filter set\nHint: run 'perf record -b ...'".into());
    }
    if (fields.contains(&Field::Pid) || fields.contains(&Field::Tid))
        && st & sys::PERF_SAMPLE_TID == 0
    {
        if user.contains(&Field::Pid) || user.contains(&Field::Tid) {
            // perf names no field here (it looks up "tid|pid" as one name).
            return Err(format!(
                "Samples for '{name}' event do not have TID attribute set. Cannot print '' field."
            ));
        }
        fields.retain(|x| !matches!(x, Field::Pid | Field::Tid));
    }
    need(fields, Field::Time, sys::PERF_SAMPLE_TIME, "TIME")?;
    need(fields, Field::Cpu, sys::PERF_SAMPLE_CPU, "CPU")?;
    need(fields, Field::Iregs, sys::PERF_SAMPLE_REGS_INTR, "IREGS")?;
    need(fields, Field::Uregs, sys::PERF_SAMPLE_REGS_USER, "UREGS")?;
    need(
        fields,
        Field::PhysAddr,
        sys::PERF_SAMPLE_PHYS_ADDR,
        "PHYS_ADDR",
    )?;
    need(
        fields,
        Field::DataPageSize,
        sys::PERF_SAMPLE_DATA_PAGE_SIZE,
        "DATA_PAGE_SIZE",
    )?;
    need(
        fields,
        Field::CodePageSize,
        sys::PERF_SAMPLE_CODE_PAGE_SIZE,
        "CODE_PAGE_SIZE",
    )?;
    need(
        fields,
        Field::InsLat,
        sys::PERF_SAMPLE_WEIGHT_STRUCT,
        "WEIGHT_STRUCT",
    )?;
    if fields.contains(&Field::Tod) && !has_clock {
        return Err(
            "Can't provide 'tod' time, missing clock data. Please record with -k/--clockid option."
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu_clock() -> EventFormat {
        EventFormat {
            type_: sys::PERF_TYPE_SOFTWARE,
            sample_type: sys::PERF_SAMPLE_IP | sys::PERF_SAMPLE_TID | sys::PERF_SAMPLE_TIME,
            ..EventFormat::default()
        }
    }

    #[test]
    fn a_field_the_samples_lack_is_refused_when_asked_for() {
        let spec = FieldSpec::parse(&["comm", "addr"]).unwrap();
        let err = resolve(&spec, &[cpu_clock()], &["cpu-clock"], false).unwrap_err();
        assert_eq!(
            err,
            "Samples for 'cpu-clock' event do not have ADDR attribute set. Cannot print 'addr' field."
        );
    }

    #[test]
    fn raw_events_default_to_the_memory_fields_they_carry() {
        let mut e = cpu_clock();
        e.type_ = sys::PERF_TYPE_RAW;
        e.sample_type |= sys::PERF_SAMPLE_ADDR | sys::PERF_SAMPLE_DATA_SRC;
        let f = resolve(&FieldSpec::default(), &[e], &["mem"], false).unwrap();
        assert!(f[0].contains(&Field::Addr) && f[0].contains(&Field::DataSrc));
        assert!(!f[0].contains(&Field::Weight) && !f[0].contains(&Field::Cpu));
    }
}
