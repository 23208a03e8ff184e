//! Shell-style globs (`*`, `?`, `[abc]`, `[a-z]`, `[!x]`) for tracepoint and PMU names.

/// Whether `pat` contains glob metacharacters.
pub fn is_glob(pat: &str) -> bool {
    pat.contains(['*', '?', '['])
}

/// Match `name` against `pat`, iteratively (no recursion, linear backtracking on `*`).
pub fn matches(pat: &str, name: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((ok, next)) = class(&p, pi, n[ni]) {
                        if ok {
                            pi = next;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Match `c` against the class starting at `p[i] == '['`: (matched, index after `]`), or
/// None if the class is not closed.
fn class(p: &[char], i: usize, c: char) -> Option<(bool, usize)> {
    let mut j = i + 1;
    let neg = matches!(p.get(j), Some('!') | Some('^'));
    if neg {
        j += 1;
    }
    let mut ok = false;
    let mut first = true;
    while j < p.len() && (p[j] != ']' || first) {
        first = false;
        if j + 2 < p.len() && p[j + 1] == '-' && p[j + 2] != ']' {
            if p[j] <= c && c <= p[j + 2] {
                ok = true;
            }
            j += 3;
        } else {
            if p[j] == c {
                ok = true;
            }
            j += 1;
        }
    }
    if j >= p.len() {
        return None;
    }
    Some((ok != neg, j + 1))
}

#[cfg(test)]
mod tests {
    use super::matches;
    #[test]
    fn globs() {
        assert!(matches("sys_enter_*", "sys_enter_openat"));
        assert!(!matches("sys_enter_*", "sys_exit_openat"));
        assert!(matches("sched_sw?tch", "sched_switch"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(matches("[st]ched", "sched"));
        assert!(matches("[!x]ched", "sched"));
        assert!(!matches("[a-c]x", "dx"));
        assert!(matches("[", "["));
    }
}
