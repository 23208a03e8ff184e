//! Fixture sysfs and tracefs trees for tests and fuzzing: a standard machine (a `cpu` PMU
//! with formats over config..config3, uncore PMUs with scale/unit aliases, msr, power,
//! uprobe, and a tracefs with sched/syscalls/irq events) and a hybrid one.
//!
//! Real discovery reads `/sys/bus/event_source/devices` and tracefs; these trees have the
//! same layout, so [`crate::Env::new`] can point at them.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

fn write(p: &Path, text: &str) -> io::Result<()> {
    fs::create_dir_all(p.parent().unwrap_or(p))?;
    fs::write(p, text)
}

/// A PMU directory `root/name` with its `type`, `format/` and `events/` files.
pub fn pmu(
    root: &Path,
    name: &str,
    ty: u32,
    formats: &[(&str, &str)],
    events: &[(&str, &str)],
) -> io::Result<PathBuf> {
    let d = root.join(name);
    write(&d.join("type"), &format!("{ty}\n"))?;
    for (n, f) in formats {
        write(&d.join("format").join(n), &format!("{f}\n"))?;
    }
    for (n, e) in events {
        write(&d.join("events").join(n), &format!("{e}\n"))?;
    }
    Ok(d)
}

/// `sched:sched_switch`'s format file (6.x kernels).
pub const SCHED_SWITCH_FORMAT: &str = "name: sched_switch
ID: 316
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;
\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

/// A format with `__data_loc`, `__rel_loc` and array fields.
pub const DATA_LOC_FORMAT: &str = "name: sched_process_exec
ID: 318
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:__data_loc char[] filename;\toffset:8;\tsize:4;\tsigned:0;
\tfield:pid_t pid;\toffset:12;\tsize:4;\tsigned:1;
\tfield:s16 deltas[3];\toffset:16;\tsize:6;\tsigned:1;
\tfield:__rel_loc u8[] blob;\toffset:22;\tsize:4;\tsigned:0;

print fmt: \"filename=%s pid=%d\", __get_str(filename), REC->pid
";

fn tp(root: &Path, sys: &str, ev: &str, id: u64, format: Option<&str>) -> io::Result<()> {
    let d = root.join("events").join(sys).join(ev);
    write(&d.join("id"), &format!("{id}\n"))?;
    let f = format.map(str::to_string).unwrap_or_else(|| {
    format!("name: {ev}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:long x;\toffset:8;\tsize:8;\tsigned:1;\n\nprint fmt: \"x=%ld\", REC->x\n")
    });
    write(&d.join("format"), &f)
}

/// Write the standard machine under `root` (`root/sysfs`, `root/tracing`).
pub fn standard(root: &Path) -> io::Result<()> {
    let s = root.join("sysfs");
    pmu(&s, "software", 1, &[], &[])?;
    pmu(&s, "tracepoint", 2, &[], &[])?;
    pmu(&s, "breakpoint", 5, &[], &[])?;
    let cpu = pmu(
        &s,
        "cpu",
        4,
        &[
            ("event", "config:0-7"),
            ("umask", "config:8-15"),
            ("edge", "config:18"),
            ("inv", "config:23"),
            ("cmask", "config:24-31"),
            ("split", "config:0-3,32-35"),
            ("ldlat", "config1:0-15"),
            ("offcore_rsp", "config1:0-63"),
            ("frontend", "config2:0-23"),
            ("extra3", "config3:0-7"),
        ],
        &[
            ("cache-misses", "event=0x2e,umask=0x41"),
            ("mem-loads", "event=0xcd,umask=0x1,ldlat=3"),
            ("topdown-total-slots", "event=0x00,umask=0x4"),
        ],
    )?;
    write(&cpu.join("events/topdown-total-slots.scale"), "4\n")?;
    write(&cpu.join("caps/max_precise"), "3\n")?;
    write(&cpu.join("caps/branches"), "32\n")?;
    write(&cpu.join("nr_addr_filters"), "2\n")?;
    let power = pmu(
        &s,
        "power",
        9,
        &[("event", "config:0-7")],
        &[("energy-pkg", "event=0x02"), ("energy-ram", "event=0x03")],
    )?;
    write(
        &power.join("events/energy-pkg.scale"),
        "2.3283064365386962890625e-10\n",
    )?;
    write(&power.join("events/energy-pkg.unit"), "Joules\n")?;
    write(&power.join("cpumask"), "0\n")?;
    pmu(
        &s,
        "msr",
        10,
        &[("event", "config:0-63")],
        &[("tsc", "event=0x00"), ("smi", "event=0x04")],
    )?;
    pmu(
        &s,
        "uprobe",
        8,
        &[("retprobe", "config:0"), ("ref_ctr_offset", "config:32-63")],
        &[],
    )?;
    for (i, ty) in [(0, 20), (1, 21)] {
        let d = pmu(
            &s,
            &format!("uncore_imc_{i}"),
            ty,
            &[("event", "config:0-7"), ("umask", "config:8-15")],
            &[("cas_count_read", "event=0x04,umask=0x03")],
        )?;
        write(&d.join("events/cas_count_read.scale"), "6.103515625e-5\n")?;
        write(&d.join("events/cas_count_read.unit"), "MiB\n")?;
        write(&d.join("cpumask"), "0,18\n")?;
    }
    let t = root.join("tracing");
    tp(&t, "sched", "sched_switch", 316, Some(SCHED_SWITCH_FORMAT))?;
    tp(&t, "sched", "sched_wakeup", 317, None)?;
    tp(
        &t,
        "sched",
        "sched_process_exec",
        318,
        Some(DATA_LOC_FORMAT),
    )?;
    tp(&t, "syscalls", "sys_enter_read", 600, None)?;
    tp(&t, "syscalls", "sys_enter_write", 601, None)?;
    tp(&t, "syscalls", "sys_exit_read", 602, None)?;
    tp(&t, "syscalls", "sys_enter_openat", 603, None)?;
    tp(&t, "irq", "irq_handler_entry", 50, None)?;
    write(&t.join("events/enable"), "0\n")?;
    Ok(())
}

/// Write a hybrid machine under `root/sysfs`: cpu_core (type 4, CPUs 0-3) and cpu_atom
/// (type 10, CPUs 4-7).
pub fn hybrid(root: &Path) -> io::Result<()> {
    let s = root.join("sysfs");
    pmu(&s, "software", 1, &[], &[])?;
    let core = pmu(
        &s,
        "cpu_core",
        4,
        &[("event", "config:0-7"), ("umask", "config:8-15")],
        &[("cycles", "event=0x3c")],
    )?;
    write(&core.join("cpus"), "0-3\n")?;
    let atom = pmu(
        &s,
        "cpu_atom",
        10,
        &[("event", "config:0-7"), ("umask", "config:8-15")],
        &[("cycles", "event=0x3c")],
    )?;
    write(&atom.join("cpus"), "4-7\n")?;
    Ok(())
}

/// The [`crate::Env`] of a tree written by [`standard`] or [`hybrid`].
pub fn env(root: &Path) -> crate::Env {
    let t = root.join("tracing");
    crate::Env::new(root.join("sysfs"), t.exists().then_some(t))
}

/// The attr flags event modifiers set.
const MODIFIER_FLAGS: u64 = {
    use perfkit_sys::attr_flags::*;
    EXCLUDE_USER
        | EXCLUDE_KERNEL
        | EXCLUDE_HV
        | EXCLUDE_IDLE
        | EXCLUDE_HOST
        | EXCLUDE_GUEST
        | PINNED
        | EXCLUSIVE
};

/// The fields that make an event the event it is (not its sampling settings, which names
/// do not carry).
/// (`bp_addr` and `bp_len` share config1 and config2.)
fn identity(a: &perfkit_sys::perf_event_attr) -> (u32, u64, u64, u64, u64, u32, u64, u8) {
    (
        a.type_,
        a.config,
        a.config1,
        a.config2,
        a.config3,
        a.bp_type,
        a.flags & MODIFIER_FLAGS,
        a.precise_ip(),
    )
}

/// The invariants the random-mutation test and the fuzz target hold the parser to, for
/// one input: an error points inside the input, says something and prints with a caret;
/// every event that parses has a name ([`crate::Env::name_of`]) that parses back to the
/// same event. `Ok(true)`: parsed, `Ok(false)`: a good error, `Err`: a broken invariant.
pub fn check_input(env: &crate::Env, input: &str) -> Result<bool, String> {
    match env.parse(input) {
        Err(e) => {
            if e.pos > input.len() || e.message.is_empty() {
                return Err(format!("{input:?}: bad error {e:?}"));
            }
            // It prints, with the caret, without panicking.
            let text = e.to_string();
            if !text.contains('^') {
                return Err(format!("{input:?}: no caret in {text}"));
            }
            Ok(false)
        }
        Ok(list) => {
            for ev in list.groups.iter().flat_map(|g| &g.members) {
                let name = env.name_of(&ev.attr);
                let back = env
                    .parse(&name)
                    .map_err(|e| format!("{input:?} -> {name:?} does not parse: {e}"))?;
                let again = &back.groups[0].members[0].attr;
                if identity(again) != identity(&ev.attr) {
                    return Err(format!(
                        "{input:?} -> {name:?} -> another event:\n{:x?}\n{:x?}",
                        identity(&ev.attr),
                        identity(again)
                    ));
                }
            }
            Ok(true)
        }
    }
}
