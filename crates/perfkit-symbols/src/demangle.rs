//! Rust and C++ symbol demangling.

use std::borrow::Cow;

/// Demangle a symbol name: Rust (legacy `_ZN...17h<hash>E` and v0 `_R...`, printed without
/// the hash suffix as perf and backtraces do) with `rustc-demangle`, then C++ (Itanium
/// `_Z...`) with `cpp_demangle`, without parameter lists as perf prints them. Names that are neither are returned unchanged.
///
/// ```
/// use perfkit_symbols::demangle;
/// assert_eq!(demangle("_ZN3std2rt10lang_start17h0123456789abcdefE"), "std::rt::lang_start");
/// assert_eq!(demangle("_ZNSt6vectorIiSaIiEE9push_backERKi"),
///            "std::vector<int, std::allocator<int> >::push_back");
/// assert_eq!(demangle("getpid"), "getpid");
/// ```
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        // `{:#}` drops the hash suffix of legacy symbols and the crate disambiguators of v0.
        return Cow::Owned(format!("{d:#}"));
    }
    if name.starts_with("_Z") {
        // GCC/LLVM clones add suffixes like `.constprop.0`, `.isra.0`, `.cold`: demangle the
        // base and keep the suffix, as c++filt does.
        let (base, suffix) = match name.find('.') {
            Some(i) => (&name[..i], &name[i..]),
            None => (name, ""),
        };
        // Without the parameter list, as perf prints C++ names.
        let opts = cpp_demangle::DemangleOptions::new().no_params();
        if let Ok(sym) = cpp_demangle::Symbol::new(base)
            && let Ok(s) = sym.demangle_with_options(&opts)
        {
            return Cow::Owned(if suffix.is_empty() {
                s
            } else {
                format!("{s} [{suffix}]")
            });
        }
    }
    Cow::Borrowed(name)
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
        assert_eq!(demangle("_Z3fooi.constprop.0"), "foo [.constprop.0]");
    }

    #[test]
    fn plain_names_unchanged() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zbad"), "_Zbad");
        assert_eq!(demangle(""), "");
    }
}
