//! The kernel's CPU-list format (`0-3,8,10-11`): sysfs's `online`, `possible`, a node's
//! `cpulist`, a PMU's `cpus`, and the masks of perf's `--threads` specs.
//!
//! One reader for every crate that meets the format in files. It yields ranges rather than
//! CPUs, so it needs no allocation (this crate is `no_std`), and each caller decides how it
//! treats a malformed part and how long a range may be: a sysfs file the kernel wrote is
//! trusted, a `--threads` mask is checked. Lists a user types on the command line (`-C`) go
//! through `perfkit::cpus::parse_list`, whose errors point into the list.

/// The inclusive ranges of a CPU list in order, `None` for a part that is not a number or
/// `A-B` with `A <= B`. Spaces around parts and a trailing newline are ignored, as are
/// empty parts (`""` is the empty list).
pub fn ranges(list: &str) -> impl Iterator<Item = Option<(u32, u32)>> + '_ {
    list.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|part| {
            let (a, b) = part.split_once('-').unwrap_or((part, part));
            let (a, b) = (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?);
            (a <= b).then_some((a, b))
        })
}

#[cfg(test)]
mod tests {
    use super::ranges;

    #[test]
    fn lists_read_as_the_kernel_writes_them() {
        let all = |s| ranges(s).collect::<std::vec::Vec<_>>();
        assert_eq!(
            all("0-3,8,10-11\n"),
            [Some((0, 3)), Some((8, 8)), Some((10, 11))]
        );
        assert_eq!(all(""), []);
        assert_eq!(all(" 2 , 4-5 "), [Some((2, 2)), Some((4, 5))]);
        assert_eq!(all("3-1,x,1-"), [None, None, None]);
    }
}
