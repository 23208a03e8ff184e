//! The probe argument forms beyond plain variables, each added with `perf probe -x` and
//! with `perfkit probe -x` to the same program built without and with optimization:
//! array indexes (`arr[2]`, `p->arr[1]`, `p[0].x`), casts (`:u8`, `:x32`, `:s16`, `:x`,
//! `:string`, `:ustring`, any other type passed to the kernel), `$vars` / `$params`,
//! raw fetch arguments (`%di`, `+8(%sp)`, `$comm`), `$retval` fields on return probes,
//! an inline function's copies and the variables of its scope, and perf's refusals of
//! each (messages and exit status). The uprobe_events lines, messages, exit statuses and `probe -l`
//! listings are perf 6.1's. Global variables are where perfkit differs on purpose:
//! perf 6.1 writes kprobe syntax (`@counter+0`) that uprobe_events refuses; perfkit
//! writes the uprobe form (`@+0xOFFSET`) and records the value. A recorded run prints the
//! values the program holds.

mod common;

use assert_cmd::Command;
use common::{have_perf, perfkit, run_ok, skip};
use std::path::{Path, PathBuf};

const EVENTS: &str = "/sys/kernel/tracing/uprobe_events";

/// perf takes an event name as used when any group has it: one probe at a time here, and
/// function names no other test uses.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

const PROG_C: &str = "#include <stdio.h>
#include <stdlib.h>
struct point { int x; long y; char name[8]; short arr[4]; };
struct pair { long a; long b; };
int counter = 5;
long table[4] = { 10, 20, 30, 40 };
const char *label = \"hello\";
struct point gpt = { 3, 4, \"gp\", {1, 2, 3, 4} };
static inline __attribute__((always_inline)) int pkf_helper(int q, int *arr) {
\tint r = q * 3 + arr[1];
\tcounter += r;
\treturn r;
}
__attribute__((noinline)) int pkf_work(int a, long b, struct point *p, int *arr, const char *s, unsigned char c, short sh) {
\tint s2 = a + (int)b;
\ts2 += p->x + arr[2] + s[0] + c + sh;
\ts2 += pkf_helper(a, arr);
\treturn s2 * 2;
}
__attribute__((noinline)) struct pair pkf_mkpair(long a) {
\tstruct pair p = { a, a + 1 };
\treturn p;
}
__attribute__((noinline)) struct point *pkf_getpt(struct point *p) {
\tp->x++;
\treturn p;
}
struct flags { int a; unsigned int lo : 3; unsigned int mid : 5; int sgn : 4; union { int u1; short u2; }; };
__attribute__((noinline)) int pkf_flags(struct flags *f, int k) {
\tconst int K = 7;
\treturn f->lo + f->mid + f->sgn + f->u1 + k * K;
}
int main(int argc, char **argv) {
\tstruct point pt = { 7, 9, \"abc\", {5, 6, 7, 8} };
\tint arr[4] = { 100, 200, 300, 400 };
\tint n = argc > 1 ? atoi(argv[1]) : 3;
\tint t = 0;
\tstruct flags fl = { 1, 5, 17, -3, { 9 } };
\tfor (int i = 0; i < n; i++) {
\t\tt += pkf_work(42 + i, 1000, &pt, arr, \"xyz\", 200, -5);
\t\tt += pkf_mkpair(i).b;
\t\tt += pkf_getpt(&pt)->y;
\t\tt += pkf_flags(&fl, i);
\t}
\tprintf(\"%d\\n\", t);
\treturn 0;
}
";

/// The source line of `pkf_helper`'s first statement (inside the inlined copy).
const HELPER_LINE: u32 = 10;

/// Deletes every probe of a group when dropped, so that a failing assertion leaves no
/// probe behind to disturb other tests.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = perfkit()
            .args(["probe", "-q", "-d"])
            .arg(format!("{}:*", self.0))
            .output();
    }
}

fn defs(group: &str) -> Vec<String> {
    std::fs::read_to_string(EVENTS)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!(":{group}/")))
        .map(str::to_owned)
        .collect()
}

/// The program built with `opt` and -g, named uniquely for this test and level.
fn build(dir: &Path, opt: &str) -> Option<PathBuf> {
    let src = dir.join("pkforms.c");
    std::fs::write(&src, PROG_C).unwrap();
    let bin = dir.join(format!("pkforms{}{}", &opt[2..], std::process::id()));
    let ok = std::process::Command::new("cc")
        .args([opt, "-g", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(bin)
}

fn tool(name: &str) -> Command {
    if name == "perf" {
        Command::new("perf")
    } else {
        perfkit()
    }
}

fn listed(name: &str, group: &str) -> Vec<String> {
    String::from_utf8_lossy(&run_ok(tool(name).args(["probe", "-l"])).stdout)
        .lines()
        .filter(|l| l.contains(group))
        .map(str::to_owned)
        .collect()
}

/// What adding `spec` did: exit status, stderr, the uprobe_events lines, and perf's and
/// perfkit's `probe -l` of them. The probes are deleted after.
type Outcome = (Option<i32>, String, Vec<String>, Vec<String>, Vec<String>);

fn add(name: &str, bin: &Path, group: &str, spec: &str) -> Outcome {
    let out = tool(name)
        .args(["probe", "-x"])
        .arg(bin)
        .arg(spec)
        .output()
        .unwrap();
    let lines = defs(group);
    let outcome = (
        out.status.code(),
        String::from_utf8(out.stderr).unwrap(),
        lines.clone(),
        listed("perf", group),
        listed("perfkit", group),
    );
    if !lines.is_empty() {
        run_ok(
            perfkit()
                .args(["probe", "-q", "-d"])
                .arg(format!("{group}:*")),
        );
    }
    assert!(defs(group).is_empty());
    outcome
}

fn setup(opt: &str) -> Option<(tempfile::TempDir, PathBuf, String)> {
    if !have_perf() {
        skip("perf is not installed");
        return None;
    }
    if !Path::new(EVENTS).exists() {
        skip("no uprobe_events in tracefs (CONFIG_UPROBE_EVENTS, tracefs mounted)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(bin) = build(dir.path(), opt) else {
        skip("no C compiler (cc)");
        return None;
    };
    let group = format!(
        "probe_{}",
        bin.file_name().unwrap().to_string_lossy().into_owned()
    );
    Some((dir, bin, group))
}

/// The forms perf 6.1 and perfkit treat alike, accepted or refused.
fn same_as_perf(opt: &str) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some((_dir, bin, group)) = setup(opt) else {
        return;
    };
    let _clean = Cleanup(group.clone());
    let helper_line = format!("pkforms.c:{HELPER_LINE} q arr");
    let helper_vars = format!("pkforms.c:{} $vars", HELPER_LINE + 1);
    let specs = [
        // Array indexes: through a pointer, of a member array, of a pointer's element.
        "pkf_work arr[2]",
        "pkf_work p->arr[1]",
        "pkf_work p[0].x",
        "pkf_work p->name[1]",
        "pkf_work arr[-1]",
        "pkf_work x=arr[0x1]:u16",
        // Casts and types: as given, perf's letters with the variable's size, strings.
        "pkf_work a:u8 b:x32 sh:s16",
        "pkf_work a:x b:s c:u",
        "pkf_work c sh",
        "pkf_work s:string p->name:string",
        "pkf_work s:ustring",
        "pkf_work a:foo",
        // $vars and $params.
        "pkf_work $vars",
        "pkf_work $params",
        "pkf_work a $params",
        // Raw arguments: registers by name, memory, the kernel's special variables.
        "pkf_work %di",
        "pkf_work r=%di:u32 %ax",
        "pkf_work +8(%sp):u64 $stack $comm",
        "pkf_work a %foo",
        // Return probes: $retval and its fields (passed to the kernel as written), a
        // cast, and perf's refusal of variables and of $retval on an entry probe.
        "pkf_getpt%return $retval->x",
        "pkf_getpt%return r=$retval:x32",
        "pkf_mkpair%return $retval.b",
        "pkf_getpt%return p",
        "pkf_getpt%return $vars",
        "pkf_work $retval",
        // An inline function's copies (probed at their entries, named after it, listed
        // by the calling line), its variables, $vars in its body, a line of its body
        // (named after it), and perf's refusal of its return.
        "pkf_helper",
        "pkf_helper q",
        "pkf_helper $vars",
        &helper_line,
        &helper_vars,
        "pkf_helper%return",
        // Members of an unnamed union; perf's refusal of bit fields (no member offset).
        "pkf_flags f->u1 u2=f->u2:x16 f->a",
        "pkf_flags f->lo",
        "pkf_flags f->sgn:s8",
        // A constant (a stack slot without optimization, an immediate `\7` with it).
        "pkf_flags K k",
        // perf's refusals.
        "pkf_work a[1]",
        "pkf_work p.x",
        "pkf_work a->x",
        "pkf_work p->x[1]",
        "pkf_work p->nosuch",
        "pkf_work arr[x]",
        "pkf_work p-x",
        "pkf_work a:string",
        "pkf_work p:string",
        "pkf_work arr:string",
    ];
    let mut accepted = 0;
    for spec in specs {
        let theirs = add("perf", &bin, &group, spec);
        let ours = add("perfkit", &bin, &group, spec);
        assert_eq!(ours.0, theirs.0, "{spec}: exit status; {}", ours.1);
        assert_eq!(ours.1, theirs.1, "{spec}: messages");
        assert_eq!(ours.2, theirs.2, "{spec}: uprobe_events lines");
        assert_eq!(ours.3, theirs.3, "{spec}: perf probe -l");
        assert_eq!(ours.4, ours.3, "{spec}: perfkit probe -l lists as perf");
        accepted += usize::from(ours.0 == Some(0));
    }
    // Both kinds were exercised: most forms were added, and each refusal compared.
    assert!(accepted >= 18, "{accepted} specs accepted");
}

#[test]
fn argument_forms_without_optimization_are_perfs() {
    same_as_perf("-O0");
}

#[test]
fn argument_forms_with_optimization_are_perfs() {
    same_as_perf("-O2");
}

/// perf 6.1 refuses globals with a kernel error and a misleading hint; perfkit fetches
/// them from the file offset of their data (uprobes' `@+OFFSET`).
#[test]
fn globals_are_fetched_where_perf_refuses_them() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some((_dir, bin, group)) = setup("-O0") else {
        return;
    };
    let _clean = Cleanup(group.clone());
    let theirs = add("perf", &bin, &group, "pkf_work counter");
    assert_eq!(theirs.0, Some(234), "{}", theirs.1);
    assert!(
        theirs
            .1
            .contains("Failed to write event: Invalid argument\nPlease upgrade your kernel"),
        "{}",
        theirs.1
    );
    let ours = add("perfkit", &bin, &group, "pkf_work counter gpt.x table[2]");
    assert_eq!(ours.0, Some(0), "{}", ours.1);
    let line = &ours.2[0];
    assert!(
        line.contains(" counter=@+0x") && line.contains(":s32 x=@+0x") && line.contains(":s64"),
        "{line}"
    );
    assert_eq!(ours.3, ours.4, "perf and perfkit list it alike");
}

/// A run recorded with perfkit: `script` prints the values the program holds for each
/// form (an array element through a pointer and in a structure, a string through a
/// pointer and in an array, a cast, globals, $params, an inlined function's variable, a
/// member of an unnamed union),
/// and `perf script` prints the same for the same file.
#[test]
fn recorded_forms_are_the_values_held() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let Some((dir, bin, group)) = setup("-O0") else {
        return;
    };
    let _clean = Cleanup(group.clone());
    let helper = format!("h=pkforms.c:{HELPER_LINE} q");
    run_ok(perfkit().args(["probe", "-q", "-x"]).arg(&bin).args([
        "-a",
        "pkf_work e2=arr[2] m1=p->arr[1] s:string p->name:string a:x16 counter g3=gpt.arr[3] table[1] label:string",
        "-a",
        "w2=pkf_work $params",
        "-a",
        &helper,
        "-a",
        "pkf_flags f->u1 f->a k",
    ]));
    let data = dir.path().join("forms.data");
    let recorded = perfkit()
        .args(["record", "-q", "-o"])
        .arg(&data)
        .args(["-e", &format!("{group}:pkf_work"), "-e"])
        .arg(format!("{group}:w2"))
        .args(["-e", &format!("{group}:h")])
        .args(["-e", &format!("{group}:pkf_flags")])
        .arg("--")
        .arg(&bin)
        .arg("2")
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{recorded:?}");
    let script =
        String::from_utf8(run_ok(perfkit().arg("script").arg("-i").arg(&data)).stdout).unwrap();
    // (event, values) of each sample; each event's samples in time order.
    let tails = |text: &str| -> Vec<(String, String)> {
        text.lines()
            .filter_map(|l| {
                let (head, values) = l.split_once(") ")?;
                let event = head.split(": ").nth(1)?.trim().to_owned();
                Some((event, values.to_owned()))
            })
            .collect()
    };
    let got = tails(&script);
    let of = |event: &str| -> Vec<String> {
        let event = format!("{group}:{event}");
        got.iter()
            .filter(|(e, _)| *e == event)
            .map(|x| x.1.clone())
            .collect()
    };
    let (work, params, inlined) = (of("pkf_work"), of("w2"), of("h"));
    // A member of an unnamed union, beside a plain member.
    assert_eq!(
        of("pkf_flags"),
        ["u1=9 a=1 k=0", "u1=9 a=1 k=1"],
        "{script}"
    );
    assert_eq!((work.len(), params.len()), (2, 2), "{script}");
    // The inlined copy's line has three addresses here, each probed.
    assert_eq!(inlined.len() % 2, 0, "{script}");
    let per_call = inlined.len() / 2;
    assert!(per_call >= 1, "{script}");
    for (i, a) in [42, 43].into_iter().enumerate() {
        // counter grows by pkf_helper's r = q * 3 + arr[1] each call: 5, then 5 + 326.
        let counter = if i == 0 { 5 } else { 5 + 42 * 3 + 200 };
        assert_eq!(
            work[i],
            format!(
                "e2=300 m1=6 s_string=\"xyz\" name=\"abc\" a_x16=0x{a:x} counter={counter} \
                 g3=4 table=20 label_string=\"hello\""
            ),
            "{script}"
        );
        assert!(
            params[i].starts_with(&format!("a={a} b=1000 p=0x"))
                && params[i].ends_with(" c=0xc8 sh=-5"),
            "{script}"
        );
        for q in &inlined[i * per_call..(i + 1) * per_call] {
            assert_eq!(q, &format!("q={a}"), "{script}");
        }
    }
    let theirs = run_ok(Command::new("perf").arg("script").arg("-i").arg(&data)).stdout;
    let theirs = tails(&String::from_utf8_lossy(&theirs));
    // perf 6.1 prints an s16 field without its sign (sh=65531 for -5): compare the rest.
    let no_sh = |v: &[(String, String)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(e, l)| (e.clone(), l.split(" sh=").next().unwrap_or(l).to_owned()))
            .collect()
    };
    assert_eq!(no_sh(&got), no_sh(&theirs));
}
