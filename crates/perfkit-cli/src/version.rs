//! `perfkit version [--build-options]`: the version, and which of perf's build features
//! perfkit has, in `perf version --build-options`'s layout (scripts grep it for `libbfd: .* on`).

use clap::Args;

/// Arguments of `perfkit version`.
#[derive(Args, Debug)]
pub struct VersionArgs {
    /// Also list perf's build features and whether perfkit has each.
    #[arg(long)]
    pub build_options: bool,
}

/// perf 6.1's build features (name, perf's define) and whether perfkit has what each gives.
const FEATURES: &[(&str, bool, &str)] = &[
    ("dwarf", true, "HAVE_DWARF_SUPPORT"),
    (
        "dwarf_getlocations",
        false,
        "HAVE_DWARF_GETLOCATIONS_SUPPORT",
    ),
    ("glibc", true, "HAVE_GLIBC_SUPPORT"),
    ("syscall_table", false, "HAVE_SYSCALL_TABLE_SUPPORT"),
    ("libbfd", false, "HAVE_LIBBFD_SUPPORT"),
    ("debuginfod", false, "HAVE_DEBUGINFOD_SUPPORT"),
    ("libelf", true, "HAVE_LIBELF_SUPPORT"),
    ("libnuma", false, "HAVE_LIBNUMA_SUPPORT"),
    ("numa_num_possible_cpus", false, "HAVE_LIBNUMA_SUPPORT"),
    ("libperl", false, "HAVE_LIBPERL_SUPPORT"),
    ("libpython", false, "HAVE_LIBPYTHON_SUPPORT"),
    ("libslang", false, "HAVE_SLANG_SUPPORT"),
    ("libcrypto", false, "HAVE_LIBCRYPTO_SUPPORT"),
    ("libunwind", false, "HAVE_LIBUNWIND_SUPPORT"),
    ("libdw-dwarf-unwind", true, "HAVE_DWARF_SUPPORT"),
    ("zlib", true, "HAVE_ZLIB_SUPPORT"),
    ("lzma", false, "HAVE_LZMA_SUPPORT"),
    ("get_cpuid", false, "HAVE_AUXTRACE_SUPPORT"),
    ("bpf", false, "HAVE_LIBBPF_SUPPORT"),
    ("aio", false, "HAVE_AIO_SUPPORT"),
    ("zstd", true, "HAVE_ZSTD_SUPPORT"),
    ("libpfm4", true, "HAVE_LIBPFM"),
];

/// Run `perfkit version`.
pub fn run(args: VersionArgs) -> anyhow::Result<u8> {
    println!("perfkit version {}", env!("CARGO_PKG_VERSION"));
    if args.build_options {
        for (name, on, define) in FEATURES {
            // Python scripts (`script -s`) run in the system's python3.
            let on = *on || (*name == "libpython" && perfkit_report::script_python::available());
            let state = if on { "on " } else { "OFF" };
            println!("{name:>22}: [ {state} ]  # {define}");
        }
    }
    Ok(0)
}
