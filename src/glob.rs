//! Shell-style globs (`*`, `?`, `[abc]`, `[a-z]`, `[!x]`) as the kernel and
//! trace-cmd accept them for event and function names: the one glob of
//! ftbox (`ftctl list events`, `ftcat -e`/`--comm`/`-F` names and `~`).
//! libtraceevent's `~` turns `[...]` into a regex class, so a class is a
//! class there too. Iterative with one backtrack point, so no pattern can
//! blow up.

/// Does `pat` contain a glob metacharacter?
pub fn is_glob(pat: &str) -> bool {
    pat.bytes().any(|b| matches!(b, b'*' | b'?' | b'['))
}

/// Match `name` against `pat` (whole string).
pub fn matches(pat: &str, name: &str) -> bool {
    matches_bytes(pat.as_bytes(), name.as_bytes())
}

/// [`matches`] on bytes (a record's `char[]` field need not be UTF-8).
pub fn matches_bytes(p: &[u8], n: &[u8]) -> bool {
    let (mut pi, mut ni) = (0, 0);
    // Where to resume after the last `*`: (pattern index after it, name
    // index); no `*` yet while the pattern index is usize::MAX.
    let (mut star_p, mut star_n) = (usize::MAX, 0);
    while ni < n.len() {
        if pi < p.len() {
            let c = p[pi];
            if c == b'*' {
                if pi + 1 == p.len() {
                    // A trailing `*` takes whatever is left.
                    return true;
                }
                (star_p, star_n) = (pi + 1, ni);
                pi += 1;
                continue;
            }
            if c == b'?' || (c == n[ni] && c != b'[') {
                pi += 1;
                ni += 1;
                continue;
            }
            if c == b'[' {
                let k = class_step(p.get(pi..).unwrap_or_default(), n[ni]);
                if k > 0 {
                    pi += k;
                    ni += 1;
                    continue;
                }
            }
        }
        // No match here: the last `*` takes one more byte, if there is one.
        if star_p == usize::MAX {
            return false;
        }
        star_n += 1;
        (pi, ni) = (star_p, star_n);
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// Length of a `[...]` class at the start of `p`; an unclosed `[` is a literal.
fn class_len(p: &[u8]) -> usize {
    let mut i = 1;
    if matches!(p.get(i), Some(b'!') | Some(b'^')) {
        i += 1;
    }
    if p.get(i) == Some(&b']') {
        i += 1;
    }
    while i < p.len() {
        if p[i] == b']' {
            return i + 1;
        }
        i += 1;
    }
    1
}

/// The length of the class at the start of `p` when it matches `c`, else
/// 0. (Out of line: inlined, it kept the common loop of [`matches_bytes`]
/// from living in registers.)
#[inline(never)]
fn class_step(p: &[u8], c: u8) -> usize {
    if class(p, c) {
        class_len(p)
    } else {
        0
    }
}

/// Does the class at the start of `p` match `c`?
fn class(p: &[u8], c: u8) -> bool {
    let len = class_len(p);
    if len == 1 {
        return c == b'[';
    }
    let body = &p[1..len - 1];
    let (neg, body) = match body.first() {
        Some(b'!') | Some(b'^') => (true, &body[1..]),
        _ => (false, body),
    };
    let mut hit = false;
    let mut i = 0;
    while i < body.len() {
        if i + 2 < body.len() && body[i + 1] == b'-' {
            hit |= body[i] <= c && c <= body[i + 2];
            i += 3;
        } else {
            hit |= body[i] == c;
            i += 1;
        }
    }
    hit != neg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(matches("sched_*", "sched_switch"));
        assert!(matches("*switch", "sched_switch"));
        assert!(matches("*", ""));
        assert!(matches("s?hed", "sched"));
        assert!(!matches("s?hed", "shed"));
        assert!(matches("sched_[sw]*", "sched_wakeup"));
        assert!(!matches("sched_[!sw]*", "sched_wakeup"));
        assert!(matches("irq_handler_[a-f]*", "irq_handler_entry"));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(!matches("a*b*c", "axxbyy"));
        assert!(matches("[", "["));
        assert!(!matches("abc", "abcd"));
        assert!(matches("*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaab"));
        assert!(!matches("*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaa"));
        assert!(is_glob("a*") && !is_glob("abc"));
        assert!(matches("s?s_*", "sys_enter"));
        assert!(matches("*exit*", "sys_exit_read"));
        assert!(!matches("sched_*", "irq_handler_entry"));
        assert!(matches_bytes(b"k*", b"k\xff"));
    }
}
