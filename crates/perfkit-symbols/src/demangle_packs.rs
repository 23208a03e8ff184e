//! Function parameter packs of reference or qualified type (`Args&&...`, `const Args&...`,
//! mangled `DpOT_`, `DpRKT0_`) as libiberty prints them with `DMGL_PARAMS` (perf's `-v`):
//! each element of the pack with the qualifiers, references collapsed
//! (`f<int, A&>(int&&, A&)`).
//!
//! cpp_demangle 0.5.1 (the newest) moves to the next element of the pack at each level of
//! the type, so `DpRKT_` over `(A, B, C)` comes out `(A const, B&, C)`; with an unqualified
//! `DpT_` it prints the elements right (`(A, B, C)`). A pack that ends the parameters (by
//! far the most common place) is rendered twice with it: once with a marker type where the
//! pack is, to know where the elements go, and once as `DpT_`, to read the elements; each
//! then gets the qualifiers. The rewritten names keep every substitution before the pack,
//! and none follows it, so the rest of the name is demangled as it was.

/// The qualifiers of a pack that ends the parameters of `mangled` (without a clone
/// suffix): the byte where its `Dp` starts, the qualifiers (`RK`, `O`) and the template
/// parameter (`T_`, `T0_`).
fn trailing_pack(mangled: &str) -> Option<(usize, &str, &str)> {
    let at = mangled.rfind("Dp")?;
    let rest = &mangled[at + 2..];
    let quals = rest
        .bytes()
        .take_while(|c| matches!(c, b'R' | b'O' | b'K' | b'V' | b'r' | b'P'))
        .count();
    let param = &rest[quals..];
    let inner = param.strip_prefix('T')?.strip_suffix('_')?;
    let ok = quals > 0
        && inner
            .bytes()
            .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase());
    ok.then_some((at, &rest[..quals], param))
}

/// The type `element` with the qualifiers `quals` (outermost first, as mangled) applied,
/// as libiberty prints them: `K` ` const`, `V` ` volatile`, `r` ` restrict`, `P` `*`, `R`
/// `&`, `O` `&&`, a reference to a reference collapsed (`A&` `&&` is `A&`, `A&&` `&` is
/// `A&`).
fn qualified(element: &str, quals: &str) -> String {
    let mut t = element.to_string();
    for q in quals.bytes().rev() {
        let is_ref = is_reference(&t);
        match q {
            b'K' => t.push_str(" const"),
            b'V' => t.push_str(" volatile"),
            b'r' => t.push_str(" restrict"),
            b'P' => t.push('*'),
            b'R' if t.ends_with("&&") => {
                t.pop();
            }
            b'R' if is_ref => {}
            b'R' => t.push('&'),
            b'O' if is_ref => {}
            b'O' => t.push_str("&&"),
            _ => {}
        }
    }
    t
}

/// Whether a type as printed is a reference: it ends with `&`, or it is a reference to
/// an array or a function (`char const (&) [19]`: `(&` outside any template arguments).
fn is_reference(t: &str) -> bool {
    if t.ends_with('&') {
        return true;
    }
    let mut depth = 0i32;
    let b = t.as_bytes();
    (0..b.len()).any(|i| {
        match b[i] {
            b'<' => depth += 1,
            b'>' => depth -= 1,
            _ => {}
        }
        depth == 0 && b[i] == b'(' && b.get(i + 1) == Some(&b'&')
    })
}

/// `s` split at its top-level `, ` (not inside `<>`, `()` or `[]`).
fn top_level_items(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut from) = (0i32, 0);
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'<' | b'(' | b'[' => depth += 1,
            b'>' | b')' | b']' => depth -= 1,
            b',' if depth == 0 && b.get(i + 1) == Some(&b' ') => {
                out.push(&s[from..i]);
                from = i + 2;
            }
            _ => {}
        }
    }
    if from < s.len() {
        out.push(&s[from..]);
    }
    out
}

/// The full demangling of `mangled` (a `_Z` name, maybe with a clone suffix) when its
/// parameters end with a qualified pack, with that pack printed as libiberty prints it;
/// `None` for other names. `render` demangles a mangled name with cpp_demangle.
pub(crate) fn with_trailing_pack(
    mangled: &str,
    render: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    let (base, clone) = match mangled.find('.') {
        Some(i) => mangled.split_at(i),
        None => (mangled, ""),
    };
    let (at, quals, param) = trailing_pack(base)?;
    const MARK: &str = "PerfkitPackMark";
    let marked = render(&format!("{}u{}{MARK}{clone}", &base[..at], MARK.len()))?;
    let plain = render(&format!("{}Dp{param}{clone}", &base[..at]))?;
    let (before, after) = marked.split_once(MARK)?;
    if marked.matches(MARK).count() != 1
        || !plain.starts_with(before)
        || !plain.ends_with(after)
        || plain.len() < before.len() + after.len()
    {
        return None;
    }
    let elements = &plain[before.len()..plain.len() - after.len()];
    let items: Vec<String> = top_level_items(elements)
        .into_iter()
        .map(|e| qualified(e, quals))
        .collect();
    if items.is_empty() {
        // An empty pack: no parameter, and no `, ` before it.
        let before = before.strip_suffix(", ").unwrap_or(before);
        return Some(format!("{before}{after}"));
    }
    Some(format!("{before}{}{after}", items.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualifiers_and_collapsing_as_libiberty() {
        assert_eq!(qualified("A", "RK"), "A const&");
        assert_eq!(qualified("A", "O"), "A&&");
        assert_eq!(qualified("A const&", "O"), "A const&");
        assert_eq!(qualified("A&&", "R"), "A&");
        assert_eq!(qualified("A&&", "O"), "A&&");
        assert_eq!(qualified("char", "PK"), "char const*");
        // A reference to an array stays one (c++filt's `char const (&) [19]`).
        assert_eq!(qualified("char const (&) [19]", "O"), "char const (&) [19]");
        assert_eq!(qualified("a<char (&) [2]>", "O"), "a<char (&) [2]>&&");
        assert_eq!(
            top_level_items("a<b, c>, d(e, f), g"),
            ["a<b, c>", "d(e, f)", "g"]
        );
        assert_eq!(trailing_pack("_Z1fIJiEEvDpOT_"), Some((10, "O", "T_")));
        assert_eq!(trailing_pack("_Z1fIJiEEvDpT_"), None);
        assert_eq!(trailing_pack("_Z1fIJiEEvDpOT_i"), None);
    }
}
