//! perf 6.1's option names per subcommand (from `perf CMD -h`), so that an option perfkit
//! does not have yet gets one clear line ("perf's option --foo is not supported yet") rather
//! than clap's advice about values or a look-alike suggestion.

/// perf 6.1's subcommands, each with its short and long option names separated by spaces.
pub const PERF_OPTIONS: &[(&str, &str)] = &[
    (
        "stat",
        "-a --all-cpus -A --no-aggr -B --big-num -C --cpu -D --delay -d --detailed -e --event -G --cgroup -g --group -I --interval-print -i --no-inherit -j --json-output -M --metrics -n --null -o --output -p --pid -r --repeat -S --sync -t --tid -T --transaction -v --verbose -x --field-separator --all-kernel --all-user --append --control --cputype --filter --for-each-cgroup --hybrid-merge --interval-clear --interval-count --iostat --log-fd --metric-no-group --metric-no-merge --metric-only --no-csv-summary --no-merge --per-core --per-die --per-node --per-socket --per-thread --percore-show-thread --post --pre --quiet --scale --smi-cost --summary --table --td-level --timeout --topdown",
    ),
    (
        "record",
        "-a --all-cpus -b --branch-any -B --no-buildid -c --count -C --cpu -d --data -D --delay -e --event -F --freq -G --cgroup -I --intr-regs -i --no-inherit -j --branch-filter -k --clockid -m --mmap-pages -N --no-buildid-cache -n --no-samples -o --output -P --period -p --pid -q --quiet -R --raw-samples -r --realtime -S --snapshot -s --stat -t --tid -T --timestamp -u --uid -v --verbose -W --weight -z --compression-level --affinity --aio --all-cgroups --all-kernel --all-user --aux-sample --buildid-all --buildid-mmap --call-graph --clang-opt --clang-path --code-page-size --control --data-page-size --debuginfod --dry-run --exclude-perf --filter --group --kcore --kernel-callchains --max-size --mmap-flush --namespaces --no-bpf-event --no-buffering --num-thread-synthesize --off-cpu --overwrite --per-thread --phys-data --proc-map-timeout --running-time --sample-cpu --sample-identifier --strict-freq --switch-events --switch-max-files --switch-output --switch-output-event --synth --tail-synthesize --threads --timestamp-boundary --timestamp-filename --transaction --user-callchains --user-regs --vmlinux",
    ),
    (
        "report",
        "-b --branch-stack -c --comms -C --cpu -d --dsos -D --dump-raw-trace -F --fields -f --force -g --call-graph -G --inverted -i --input -I --show-info -k --vmlinux -M --disassembler-style -m --modules -n --show-nr-samples -p --parent -q --quiet -s --sort -S --symbols -t --field-separator -T --threads -U --hide-unresolved -v --verbose -w --column-widths -x --exclude-other --asm-raw --branch-history --children --demangle --demangle-kernel --disable-order --full-source-path --group --group-sort-idx --header --header-only --hierarchy --ignore-callees --ignore-vmlinux --inline --itrace --kallsyms --max-stack --mem-mode --mmaps --ns --objdump --percent-limit --percent-type --percentage --pid --prefix --prefix-strip --pretty --raw-trace --samples --show-cpu-utilization --show-on-off-events --show-ref-call-graph --show-total-period --skip-empty --socket-filter --source --stats --stdio --stdio-color --stitch-lbr --switch-off --switch-on --symbol-filter --symfs --tasks --tid --time --time-quantum --total-cycles --tui",
    ),
    (
        "script",
        "-a --all-cpus -c --comms -C --cpu -d --debug-mode -D --dump-raw-trace -F --fields -f --force -g --gen-script -G --hide-call-graph -i --input -I --show-info -k --vmlinux -L --Latency -l --list -s --script -S --symbols -v --verbose --addr-range --call-ret-trace --call-trace --deltatime --demangle --demangle-kernel --dlarg --dlfilter --dsos --dump-unsorted-raw-trace --full-source-path --graph-function --guest-code --guestkallsyms --guestmodules --guestmount --guestvmlinux --header --header-only --inline --insn-trace --itrace --kallsyms --list-dlfilters --max-blocks --max-stack --ns --per-event-dump --pid --reltime --show-bpf-events --show-cgroup-events --show-kernel-path --show-lost-events --show-mmap-events --show-namespace-events --show-on-off-events --show-round-events --show-switch-events --show-task-events --show-text-poke-events --stitch-lbr --stop-bt --switch-off --switch-on --symfs --tid --time --xed",
    ),
    (
        "list",
        "-d --desc -v --long-desc --cputype --debug --deprecated --details",
    ),
    (
        "top",
        "-a --all-cpus -b --branch-any -c --count -C --cpu -d --delay -D --dump-symtab -E --entries -e --event -f --count-filter -F --freq -G --cgroup -i --no-inherit -j --branch-filter -K --hide -k --vmlinux -M --disassembler-style -m --mmap-pages -n --show-nr-samples -p --pid -r --realtime -s --sort -t --tid -U --hide -u --uid -v --verbose -w --column-widths -z --zero --all-cgroups --asm-raw --call-graph --children --comms --demangle-kernel --dsos --fields --force --group --group-sort-idx --hierarchy --ignore-callees --ignore-vmlinux --kallsyms --max-stack --namespaces --no-bpf-event --num-thread-synthesize --objdump --overwrite --percent-limit --percentage --prefix --prefix-strip --proc-map-timeout --raw-trace --show-on-off-events --show-total-period --source --stdio --stitch-lbr --switch-off --switch-on --sym-annotate --symbols --tui",
    ),
    (
        "annotate",
        "-C --cpu -d --dsos -D --dump-raw-trace -f --force -i --input -k --vmlinux -l --print-line -M --disassembler-style -m --modules -n --show-nr-samples -P --full-paths -q --quiet -s --symbol -v --verbose --asm-raw --demangle --demangle-kernel --group --ignore-vmlinux --itrace --objdump --percent-limit --percent-type --prefix --prefix-strip --show-total-period --skip-missing --source --stdio --stdio-color --stdio2 --symfs --tui",
    ),
    (
        "diff",
        "-b --baseline-only -C --comms -c --compute -d --dsos -D --dump-raw-trace -f --force -F --formula -m --modules -o --order -p --period -q --quiet -s --sort -S --symbols -t --field-separator -v --verbose --cpu --cycles-hist --kallsyms --percentage --pid --stream --symfs --tid --time",
    ),
    (
        "evlist",
        "-f --force -F --freq -g --group -i --input -v --verbose --trace-fields",
    ),
    (
        "buildid-list",
        "-f --force -H --with-hits -i --input -k --kernel -m --kernel-maps -v --verbose",
    ),
    (
        "buildid-cache",
        "-a --add -f --force -k --kcore -l --list -M --missing -p --purge -P --purge-all -r --remove -u --update -v --verbose --debuginfod --target-ns",
    ),
    (
        "data",
        "-f --force -i --input -v --verbose --all --to-ctf --to-json --tod",
    ),
    (
        "inject",
        "-b --build-ids -f --force -i --input -j --jit -k --vmlinux -o --output -s --sched-stat -v --verbose --buildid-all --guest-data --guestmount --ignore-vmlinux --itrace --kallsyms --known-build-ids --strip --vm-time-correlation",
    ),
    ("archive", ""),
    (
        "test",
        "-F --dont-fork -s --skip -v --verbose -w --workload",
    ),
    (
        "probe",
        "-a --add -D --definition -d --del -f --force -F --funcs -k --vmlinux -L --line -l --list -m --module -n --dry-run -q --quiet -s --source -V --vars -v --verbose -x --exec --bootconfig --cache --demangle --demangle-kernel --externs --filter --max-probes --no-inlines --range --symfs --target-ns",
    ),
    (
        "trace",
        "-a --all-cpus -C --cpu -D --delay -e --event -f --force -F --pf -G --cgroup -i --input -m --mmap-pages -o --output -p --pid -s --summary -S --with-summary -t --tid -T --time -u --uid -v --verbose --call-graph --comm --duration --errno-summary --expr --failure --filter --filter-pids --kernel-syscall-graph --libtraceevent --map-dump --max-events --max-stack --min-stack --no-inherit --print-sample --proc-map-timeout --sched --show-on-off-events --sort-events --switch-off --switch-on --syscalls --tool",
    ),
    (
        "sched",
        "-D --dump-raw-trace -f --force -i --input -v --verbose",
    ),
    (
        "lock",
        "-D --dump-raw-trace -f --force -i --input -q --quiet -v --verbose --kallsyms --vmlinux",
    ),
    (
        "mem",
        "-C --cpu -D --dump-raw-samples -f --force -i --input -p --phys-data -t --type -U --hide-unresolved -x --field-separator --data-page-size",
    ),
    (
        "kmem",
        "-f --force -i --input -l --line -s --sort -v --verbose --alloc --caller --live --page --raw-ip --slab --time",
    ),
    ("c2c", "-v --verbose"),
    (
        "kvm",
        "-i --input -o --output -v --verbose --guest --guest-code --guestkallsyms --guestmodules --guestmount --guestvmlinux --host",
    ),
    (
        "timechart",
        "-f --force -i --input -n --proc-num -o --output -p --process -t --topology -w --width --highlight --io-merge-dist --io-min-time --io-skip-eagain --symfs",
    ),
    (
        "ftrace",
        "-D --delay -F --funcs -G --graph-funcs -g --nograph-funcs -m --buffer-size -N --notrace-funcs -T --trace-funcs -t --tracer --func-opts --graph-opts --inherit",
    ),
    ("bench", "-f --format -r --repeat"),
    ("config", "-l --list --system --user"),
    (
        "daemon",
        "-v --verbose -x --field-separator --base --config",
    ),
    ("version", "--build-options"),
];

/// perf 6.1's name for option `opt` of `cmd` (`-x`, `--name`), if perf has it: `--no-name`
/// counts for `--name`, as perf negates its boolean options that way, and a long option may
/// be any unambiguous prefix of its name (`report --task` is `--tasks`), as in perf.
pub fn perf_name(cmd: &str, opt: &str) -> Option<String> {
    let (_, names) = PERF_OPTIONS.iter().find(|(c, _)| *c == cmd)?;
    let find = |o: &str| -> Option<String> {
        let names = || names.split(' ');
        if names().any(|n| n == o) {
            return Some(o.to_owned());
        }
        if !o.starts_with("--") {
            return None;
        }
        let mut prefixed = names().filter(|n| n.starts_with(o));
        match (prefixed.next(), prefixed.next()) {
            (Some(one), None) => Some(one.to_owned()),
            _ => None,
        }
    };
    find(opt).or_else(|| {
        let o = opt.strip_prefix("--no-")?;
        find(&format!("--{o}")).map(|n| format!("--no-{}", &n[2..]))
    })
}

/// Whether `cmd` is one of perf 6.1's subcommands.
pub fn is_perf_command(cmd: &str) -> bool {
    PERF_OPTIONS.iter().any(|(c, _)| *c == cmd)
}
