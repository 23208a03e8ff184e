//! Rust and C++ symbol demangling.

use std::borrow::Cow;

/// Demangle a symbol name: Rust (legacy `_ZN...17h<hash>E` and v0 `_R...`, printed without
/// the hash suffix as perf and backtraces do) with `rustc-demangle`, then C++ (Itanium
/// `_Z...`) with `cpp_demangle`, as perf prints them: no parameter lists, no return types,
/// no clone suffixes (`.constprop.0`). Names that are neither are returned unchanged.
///
/// ```
/// use perfkit_symbols::demangle;
/// assert_eq!(demangle("_ZN3std2rt10lang_start17h0123456789abcdefE"), "std::rt::lang_start");
/// assert_eq!(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
///            "std::vector<int, std::allocator<int> >::push_back");
/// assert_eq!(demangle("getpid"), "getpid");
/// ```
pub fn demangle(name: &str) -> Cow<'_, str> {
    // A PLT stub (`_Znwm@plt`): the target's name, demangled, then `@plt`, as perf prints it.
    if let Some(base) = name.strip_suffix("@plt")
        && let Cow::Owned(d) = demangle(base)
    {
        return Cow::Owned(format!("{d}@plt"));
    }
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` drops the hash suffix of legacy symbols and the crate disambiguators of v0.
        return Cow::Owned(format!("{d:#}"));
    }
    if name.starts_with("_Z") {
        // GCC/LLVM clones add suffixes like `.constprop.0`, `.isra.0`, `.part.0`,
        // `.llvm.123`: perf (libiberty without DMGL_PARAMS) prints the base name alone, and
        // neither the parameter list nor a template function's return type.
        let base = name.find('.').map_or(name, |i| &name[..i]);
        let opts = cpp_demangle::DemangleOptions::new()
            .no_params()
            .no_return_type();
        if let Ok(sym) = cpp_demangle::Symbol::new(base)
            && let Ok(s) = sym.demangle_with_options(&opts)
        {
            return Cow::Owned(libiberty_spelling(literal_suffixes(s)));
        }
    }
    Cow::Borrowed(name)
}

/// What cpp_demangle prints differently from libiberty without DMGL_PARAMS: a method's
/// qualifiers (`operator() const`: libiberty drops them with the parameters) and an empty
/// template parameter pack (`AnalysisManager<llvm::Function, >`).
fn libiberty_spelling(mut s: String) -> String {
    if s.contains(", >") {
        s = s.replace(", >", ">");
    }
    loop {
        let cut = [" const", " volatile", " &&", " &"]
            .iter()
            .find_map(|q| s.strip_suffix(q).map(str::len));
        match cut {
            Some(n) => s.truncate(n),
            None => return s,
        }
    }
}

/// Integer template arguments as libiberty (and so perf and c++filt) writes them:
/// `548964ul`, not cpp_demangle's `(unsigned long)548964`; `true`/`false` for bools.
fn literal_suffixes(s: String) -> String {
    const CASTS: [(&str, &str); 6] = [
        ("(unsigned long long)", "ull"),
        ("(unsigned long)", "ul"),
        ("(unsigned int)", "u"),
        ("(long long)", "ll"),
        ("(long)", "l"),
        ("(bool)", ""),
    ];
    if !s.contains(")") {
        return s;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s.as_str();
    'scan: while !rest.is_empty() {
        for (cast, suffix) in CASTS {
            if let Some(after) = rest.strip_prefix(cast) {
                let digits = after
                    .char_indices()
                    .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
                    .map_or(after.len(), |(i, _)| i);
                let num = &after[..digits];
                if !num.is_empty() && num != "-" {
                    if cast == "(bool)" {
                        out.push_str(if num == "0" { "false" } else { "true" });
                    } else {
                        out.push_str(num);
                        out.push_str(suffix);
                    }
                    rest = &after[digits..];
                    continue 'scan;
                }
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_legacy_and_v0() {
        assert_eq!(
            demangle(
                "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0f1d5e6c2b3a4d5eE"
            ),
            "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
        assert_eq!(
            demangle("_RNvNtCs1234_7mycrate3foo3bar"),
            "mycrate::foo::bar"
        );
    }

    #[test]
    fn cpp() {
        assert_eq!(demangle("_Z3fooi"), "foo");
        assert_eq!(demangle("_ZN2ns5Klass6methodEv"), "ns::Klass::method");
        // As perf prints them (libiberty, no DMGL_PARAMS): no clone suffixes, no return
        // types, literals as c++filt writes them, PLT stubs demangled.
        assert_eq!(demangle("_Z3fooi.constprop.0"), "foo");
        assert_eq!(demangle("_ZL6helperii.constprop.0"), "helper");
        assert_eq!(demangle("_ZNK2ns1S5heavyEi.isra.0"), "ns::S::heavy");
        assert_eq!(demangle("_Z3barv.llvm.8923482"), "bar");
        assert_eq!(
            demangle("_Z10accumulateIlET_RKSt6vectorIS0_SaIS0_EES0_"),
            "accumulate<long>"
        );
        assert_eq!(demangle("_ZN3BigILm548964EE4workEm"), "Big<548964ul>::work");
        assert_eq!(
            demangle("_ZN1AILb1ELl5ELx7ELj3EE1fEv"),
            "A<true, 5l, 7ll, 3u>::f"
        );
        assert_eq!(demangle("_Znwm@plt"), "operator new@plt");
        assert_eq!(
            demangle("_ZZ4mainENKUlllE_clEll"),
            "main::{lambda(long, long)#1}::operator()"
        );
        assert_eq!(demangle("free@plt"), "free@plt");
    }

    #[test]
    fn plain_names_unchanged() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zbad"), "_Zbad");
        assert_eq!(demangle(""), "");
    }
}
