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
        if let Some(s) = special_function(base) {
            return Cow::Owned(s);
        }
        if let Some(s) = cpp_name(base).or_else(|| cpp_name_before_signature(base)) {
            let s = standard_substitutions(libiberty_spelling(literal_suffixes(s)));
            // (`X ad L_Z <function> E E`: a template argument that is a function's address.)
            return Cow::Owned(if base.contains("adL_Z") {
                function_addresses(&s)
            } else {
                s
            });
        }
    }
    Cow::Borrowed(name)
}

/// Thunks and transaction clones, which libiberty prints with the target's parameters
/// (`non-virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()`)
/// where cpp_demangle writes `{virtual override thunk(...)}`.
fn special_function(mangled: &str) -> Option<String> {
    // A call offset: `h <number> _` or `v <number> _ <number> _`, numbers with an `n` sign.
    fn number(s: &str) -> Option<&str> {
        let s = s.strip_prefix('n').unwrap_or(s);
        let digits = s.bytes().take_while(u8::is_ascii_digit).count();
        (digits > 0).then_some(())?;
        s[digits..].strip_prefix('_')
    }
    let (what, encoding) = if let Some(r) = mangled.strip_prefix("_ZTh") {
        ("non-virtual thunk to ", number(r)?)
    } else if let Some(r) = mangled.strip_prefix("_ZTv") {
        ("virtual thunk to ", number(number(r)?)?)
    } else if let Some(r) = mangled.strip_prefix("_ZGTt") {
        ("transaction clone for ", r)
    } else {
        return None;
    };
    let inner = format!("_Z{encoding}");
    let full = cpp_demangle::Symbol::new(inner.as_str())
        .ok()?
        .demangle_with_options(&cpp_demangle::DemangleOptions::new())
        .ok()?;
    let mut full = standard_substitutions(literal_suffixes(full));
    while full.contains(", >") {
        full = full.replace(", >", ">");
    }
    Some(format!("{what}{full}"))
}

/// cpp_demangle's rendering without parameters and return type.
fn cpp_name(mangled: &str) -> Option<String> {
    let opts = cpp_demangle::DemangleOptions::new()
        .no_params()
        .no_return_type();
    cpp_demangle::Symbol::new(mangled)
        .ok()?
        .demangle_with_options(&opts)
        .ok()
}

/// A template function whose return type or parameters cpp_demangle cannot parse (an
/// `enable_if<...>::type` return type with an unresolved-name expression, `Xsr...E`), where
/// libiberty, which perf uses, prints just the name (`std::swap<long>`). Neither is printed,
/// so the name is demangled alone: the longest prefix ending a name or template argument
/// list (`...E`) that demangles once given a `void` signature.
fn cpp_name_before_signature(mangled: &str) -> Option<String> {
    let b = mangled.as_bytes();
    let mut tries = 0;
    let mut probe = String::with_capacity(mangled.len() + 2);
    for k in (4..b.len()).rev() {
        if b[k - 1] != b'E' {
            continue;
        }
        tries += 1;
        if tries > 64 {
            return None;
        }
        for sig in ["v", "vv"] {
            probe.clear();
            probe.push_str(&mangled[..k]);
            probe.push_str(sig);
            if let Some(s) = cpp_name(&probe) {
                return Some(s);
            }
        }
    }
    None
}

/// The standard substitutions `Ss`, `Si`, `So`, `Sd` as libiberty prints them without
/// DMGL_VERBOSE: `std::string`, `std::istream`, ... everywhere, except as the class of its
/// own constructor or destructor (`std::basic_string<char, ...>::~basic_string`).
/// cpp_demangle prints the long form in some places and the short one in others.
fn standard_substitutions(mut s: String) -> String {
    const SUBS: [(&str, &str, &str); 4] = [
        (
            "std::string",
            "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
            "basic_string",
        ),
        (
            "std::istream",
            "std::basic_istream<char, std::char_traits<char> >",
            "basic_istream",
        ),
        (
            "std::ostream",
            "std::basic_ostream<char, std::char_traits<char> >",
            "basic_ostream",
        ),
        (
            "std::iostream",
            "std::basic_iostream<char, std::char_traits<char> >",
            "basic_iostream",
        ),
    ];
    if !s.contains("std::") {
        return s;
    }
    for (short, full, last) in SUBS {
        let short_last = &short[5..];
        // Constructors and destructors: cpp_demangle's `std::string::string` and
        // `std::ostream::~ostream` are libiberty's long forms.
        for tilde in ["", "~"] {
            let ours = format!("{short}::{tilde}{short_last}");
            let mut from = 0;
            while let Some(i) = s[from..].find(&ours).map(|i| i + from) {
                let end = i + ours.len();
                let whole = !s[end..].starts_with(|c: char| c.is_alphanumeric() || c == '_');
                if whole {
                    let theirs = format!("{full}::{tilde}{last}");
                    s.replace_range(i..end, &theirs);
                    from = i + theirs.len();
                } else {
                    from = end;
                }
            }
        }
        // Everywhere else the short form.
        let mut from = 0;
        while let Some(i) = s[from..].find(full).map(|i| i + from) {
            let end = i + full.len();
            let rest = &s[end..];
            let own = [format!("::{last}"), format!("::~{last}")].iter().any(|m| {
                rest.strip_prefix(m.as_str())
                    .is_some_and(|r| !r.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
            });
            if own {
                from = end;
            } else {
                // The space before a closing `>` was there for the long form's own `>`.
                let end = if rest.starts_with(" >") { end + 1 } else { end };
                s.replace_range(i..end, short);
                from = i + short.len();
            }
        }
    }
    s
}

/// What cpp_demangle prints differently from libiberty without DMGL_PARAMS: a method's
/// qualifiers (`operator() const`: libiberty drops them with the parameters) and an empty
/// template parameter pack (`AnalysisManager<llvm::Function, >`).
fn libiberty_spelling(mut s: String) -> String {
    // `Dn`: libiberty writes the type's definition.
    if s.contains("std::nullptr_t") {
        s = s.replace("std::nullptr_t", "decltype(nullptr)");
    }
    while s.contains(", >") || s.contains(", ,") {
        s = s.replace(", >", ">").replace(", ,", ",");
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

/// A template argument that is the address of a function as libiberty prints it
/// (`d_print_subexpr` of the `ad` operator's operand): a qualified, non-template function
/// without its parameters (`&A::g`); any other function in parentheses with them
/// (`&(canonicalize_values_star(variable**, dataflow_set*))`). cpp_demangle prints
/// `&name(params)` for both. Addresses of objects (`&foo`) are spelled alike.
fn function_addresses(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len() + 8);
    let mut i = 0;
    while i < b.len() {
        let at_arg = b[i] == b'&' && (s[..i].ends_with('<') || s[..i].ends_with(", "));
        if !at_arg {
            let c = s[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8();
            continue;
        }
        // The argument runs to the `,` or `>` that closes it at its own depth.
        let (mut depth, mut end, mut paren) = (0i32, b.len(), None);
        for (j, &c) in b.iter().enumerate().skip(i + 1) {
            match c {
                b'<' | b'(' | b'[' => {
                    if c == b'(' && depth == 0 && paren.is_none() {
                        paren = Some(j);
                    }
                    depth += 1;
                }
                b'>' | b')' | b']' if depth == 0 => {
                    end = j;
                    break;
                }
                b'>' | b')' | b']' => depth -= 1,
                b',' if depth == 0 => {
                    end = j;
                    break;
                }
                _ => {}
            }
        }
        let arg = &s[i + 1..end];
        match paren {
            Some(p) if arg.ends_with(')') => {
                let name = &s[i + 1..p];
                let qualified = top_level(name).contains("::");
                if qualified && !name.ends_with('>') {
                    out.push('&');
                    out.push_str(name);
                } else {
                    out.push_str("&(");
                    out.push_str(arg);
                    out.push(')');
                }
            }
            _ => {
                out.push('&');
                out.push_str(arg);
            }
        }
        i = end;
    }
    out
}

/// `name` with its template argument lists left out (what is at depth 0).
fn top_level(name: &str) -> String {
    let mut depth = 0;
    name.chars()
        .filter(|&c| {
            match c {
                '<' => depth += 1,
                '>' => depth -= 1,
                _ => return depth == 0,
            }
            false
        })
        .collect()
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
    fn function_addresses_as_libiberty() {
        // Spellings checked with binutils' c++filt (libiberty), which perf 6.1 links.
        for (mangled, want) in [
            (
                "_ZN10hash_tableI15variable_hasherLb0E11xcallocatorE8traverseIP12dataflow_setXadL_Z24canonicalize_values_starPP8variableS5_EEEEvT_",
                "hash_table<variable_hasher, false, xcallocator>::traverse<dataflow_set*, &(canonicalize_values_star(variable**, dataflow_set*))>",
            ),
            ("_Z1fIXadL_Z3fooEEEvv", "f<&foo>"),
            ("_Z1fIXadL_Z3barvEEEvv", "f<&(bar())>"),
            ("_Z1fIXadL_ZN1N3barEiEEEvv", "f<&N::bar>"),
            ("_Z1fIXadL_Z3barvEEXadL_Z3fooEEEvv", "f<&(bar()), &foo>"),
            ("_Z1fIXadL_ZN1A1gEvEEEvv", "f<&A::g>"),
        ] {
            assert_eq!(demangle(mangled), want, "{mangled}");
        }
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
    fn cpp_as_libiberty_prints_it() {
        // Each expected string is what libiberty's cplus_demangle(name, 0) (perf's call)
        // returns.
        for (mangled, perf) in [
            (
                "_ZSt4swapIlENSt9enable_ifIXsrSt6__and_IJSt6__not_ISt15__is_tuple_likeIT_EESt21is_move_constructibleIS4_ESt18is_move_assignableIS4_EEE5valueEvE4typeERS4_SE_",
                "std::swap<long>",
            ),
            (
                "_ZSt9__fill_a1IPllEN9__gnu_cxx11__enable_ifIXsrSt11__is_scalarIT0_E7__valueEvE6__typeET_S8_RKS4_",
                "std::__fill_a1<long*, long>",
            ),
            (
                "_Z10multiple_pILj1ElilEN10if_nonpolyIT1_bXsr15poly_int_traitsIS1_E7is_polyEE4typeERK12poly_int_podIXT_ET0_ES1_PS6_IXT_ET2_E",
                "multiple_p<1u, long, int, long>",
            ),
            (
                "_ZNSiC1Ev",
                "std::basic_istream<char, std::char_traits<char> >::basic_istream",
            ),
            (
                "_ZNSsC1Ev",
                "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string",
            ),
            (
                "_ZNSoD0Ev",
                "std::basic_ostream<char, std::char_traits<char> >::~basic_ostream",
            ),
            ("_ZN1AISiE1fEv", "A<std::istream>::f"),
            ("_Z1fISiEvv", "f<std::istream>"),
            ("_ZNKSi6sentrycvbEv", "std::istream::sentry::operator bool"),
            (
                "_ZNSo9_M_insertIdEERSoT_",
                "std::ostream::_M_insert<double>",
            ),
            (
                "_ZNSs4_Rep10_M_disposeERKSaIcE",
                "std::string::_Rep::_M_dispose",
            ),
            ("_ZNSdaSEOSd", "std::iostream::operator="),
            (
                "_ZN4llvm5eraseINS_11SmallVectorIPNS_10BasicBlockELj8EEEDnEEvRT_T0_.cold",
                "llvm::erase<llvm::SmallVector<llvm::BasicBlock*, 8u>, decltype(nullptr)>",
            ),
            (
                "_ZThn16_NSdD1Ev",
                "non-virtual thunk to std::basic_iostream<char, std::char_traits<char> >::~basic_iostream()",
            ),
            (
                "_ZGTtNKSt11logic_error4whatEv",
                "transaction clone for std::logic_error::what() const",
            ),
            (
                "_ZNSt4pairIKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEEiEC2IJOS5_EJLm0EEJEJEEERSt5tupleIJDpT_EERSA_IJDpT1_EESt12_Index_tupleIJXspT0_EEESJ_IJXspT2_EEE",
                "std::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const, int>::pair<std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> >&&, 0ul>",
            ),
            (
                "_ZNSsC1IPKcEET_S2_RKSaIcE",
                "std::basic_string<char, std::char_traits<char>, std::allocator<char> >::basic_string<char const*>",
            ),
        ] {
            assert_eq!(demangle(mangled), perf, "{mangled}");
        }
    }

    #[test]
    fn plain_names_unchanged() {
        assert_eq!(demangle("main"), "main");
        assert_eq!(demangle("_Zbad"), "_Zbad");
        assert_eq!(demangle(""), "");
    }
}
