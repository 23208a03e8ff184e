//! Kernel probes as `perf probe FUNC` defines them without kernel debuginfo: the function's
//! address from kallsyms written relative to `_text`, in decimal, as perf writes it
//! (`p:probe/vfs_read _text+4437120`, `r:probe/vfs_read__return _text+4437120`), into
//! tracefs' `kprobe_events` (see [`crate::uprobe_events::UprobeEvents::kprobes`]).

use crate::Kallsyms;
use crate::uprobe_events::ProbeError;

/// perf's group for kernel probes.
pub const KPROBE_GROUP: &str = "probe";

/// The `kprobe_events` line of a probe `group:event` on kernel function `func` (a return
/// probe with `is_return`), from `kallsyms`. Module functions are written `MOD:FUNC+0`, as
/// perf writes them.
pub fn kprobe_definition(
    kallsyms: &Kallsyms,
    func: &str,
    group: &str,
    event: &str,
    is_return: bool,
) -> Result<String, ProbeError> {
    let kind = if is_return { 'r' } else { 'p' };
    let sym = kallsyms
        .by_name(func)
        .ok_or_else(|| ProbeError::NotFound(func.to_owned()))?;
    if let Some(m) = &sym.module {
        return Ok(format!("{kind}:{group}/{event} {m}:{func}+0"));
    }
    let text = kallsyms
        .by_name("_text")
        .ok_or_else(|| ProbeError::NotFound("_text".to_owned()))?;
    Ok(format!(
        "{kind}:{group}/{event} _text+{}",
        sym.start.wrapping_sub(text.start)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_perfs() {
        let k = Kallsyms::parse(
            "ffffffff81000000 T _text\nffffffff81100010 T vfs_read\nffffffffc0001000 t nft_do [nf_tables]\n",
            "test",
        )
        .unwrap();
        assert_eq!(
            kprobe_definition(&k, "vfs_read", KPROBE_GROUP, "vfs_read", false).unwrap(),
            "p:probe/vfs_read _text+1048592"
        );
        assert_eq!(
            kprobe_definition(&k, "vfs_read", KPROBE_GROUP, "vfs_read__return", true).unwrap(),
            "r:probe/vfs_read__return _text+1048592"
        );
        assert_eq!(
            kprobe_definition(&k, "nft_do", KPROBE_GROUP, "nft_do", false).unwrap(),
            "p:probe/nft_do nf_tables:nft_do+0"
        );
        assert!(matches!(
            kprobe_definition(&k, "nope", KPROBE_GROUP, "nope", false),
            Err(ProbeError::NotFound(_))
        ));
    }
}
