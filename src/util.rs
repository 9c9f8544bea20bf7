//! Small text helpers shared by the parsers: word lists and substring
//! search over short strings.

/// The position of `w` among the `|`-separated words of `list`: for lists
/// that are data (C type names and the like). Words that code acts on read
/// better as a `match`.
#[inline(never)]
pub fn word_index(list: &str, w: &str) -> Option<usize> {
    let (mut rest, w) = (list.as_bytes(), w.as_bytes());
    let mut i = 0;
    loop {
        let n = rest.iter().position(|&c| c == b'|').unwrap_or(rest.len());
        if rest[..n] == *w {
            return Some(i);
        }
        rest = rest.get(n + 1..)?;
        i += 1;
    }
}

/// An identifier the lexers sliced out (ASCII letters, digits and '_',
/// so always UTF-8) as a str. One shared copy: checked, and small.
#[inline(never)]
pub fn word(b: &[u8]) -> &str {
    core::str::from_utf8(b).unwrap_or_default()
}

/// Is `w` one of the `|`-separated words of `list`?
pub fn one_of(list: &str, w: &str) -> bool {
    word_index(list, w).is_some()
}

/// Where `needle` first (`last`: last) occurs in `hay`, by comparing it at
/// every offset. The strings searched here are short (control file texts,
/// names), where core's two-way searcher (`str::find` with a `&str`
/// pattern) buys nothing and is a sizeable piece of code.
#[inline(never)]
pub fn find_str(hay: &str, needle: &str, last: bool) -> Option<usize> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    let mut found = None;
    let mut i = 0;
    while i + n.len() <= h.len() {
        if h[i..i + n.len()] == *n {
            found = Some(i);
            if !last {
                break;
            }
        }
        i += 1;
    }
    found
}

/// `hay` split around the first (`last`: last) `needle`: what comes before
/// it and what after. A whole UTF-8 needle found in UTF-8 text starts and
/// ends on character boundaries, so the halves are never out of reach;
/// `get` rather than indexing keeps core's string-slicing panic, with its
/// message formatting, out of the binary.
pub fn split_str<'a>(hay: &'a str, needle: &str, last: bool) -> Option<(&'a str, &'a str)> {
    let at = find_str(hay, needle, last)?;
    Some((hay.get(..at)?, hay.get(at + needle.len()..)?))
}

/// `cell.get_or_init(init)` without core's "reentrant init" panic: each
/// `get_or_init` carried that message's arguments and call and the drop
/// of the value that lost, for a case none of the crate's inits can reach
/// (none reads its own cell). Were one to, the value set first would
/// stand and the later one be forgotten (leaked, never freed: safe).
#[inline]
pub fn once<T>(cell: &core::cell::OnceCell<T>, init: impl FnOnce() -> T) -> &T {
    if cell.get().is_none() {
        if let Err(v) = cell.set(init()) {
            core::mem::forget(v);
        }
    }
    cell.get().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// find_str against str::find/rfind.
    #[test]
    fn substrings() {
        for (h, n) in [("abcabc", "bc"), ("abc", ""), ("", ""), ("", "a"), ("ab", "abc"), ("a\\040b\\040", "\\040"), ("xx", "x")] {
            assert_eq!(find_str(h, n, false), h.find(n), "{h:?} {n:?}");
            assert_eq!(find_str(h, n, true), h.rfind(n), "{h:?} {n:?}");
        }
    }

    /// split_str against str::split_once/rsplit_once, multi-byte text included.
    #[test]
    fn split_around() {
        for (h, n) in [("a/b/c", "/"), ("/x", "/"), ("none", "/"), ("é] ü] z", "] "), ("(M:preempt VP:0", "(M:")] {
            assert_eq!(split_str(h, n, false), h.split_once(n), "{h:?} {n:?}");
            assert_eq!(split_str(h, n, true), h.rsplit_once(n), "{h:?} {n:?}");
        }
    }

    #[test]
    fn word_lists() {
        assert_eq!(word_index("a|bc|d e|", "bc"), Some(1));
        assert_eq!(word_index("a|bc|d e|", "d e"), Some(2));
        assert_eq!(word_index("a|bc|d e|", ""), Some(3));
        assert_eq!(word_index("a|bc|d e", ""), None);
        assert_eq!(word_index("a|bc|d e", "b"), None);
        assert_eq!(word_index("a|bc|d e", "a|bc"), None);
        assert!(one_of("x", "x") && !one_of("x", "xx"));
    }

    #[test]
    fn once_inits_a_cell_once() {
        let cell = core::cell::OnceCell::new();
        assert_eq!(*once(&cell, || 1), 1);
        assert_eq!(*once(&cell, || 2), 1);
        // An init that sets its own cell (none in the crate does): the
        // first value stands, no panic.
        let cell = core::cell::OnceCell::new();
        assert_eq!(*once(&cell, || {
            let _ = cell.set(alloc::string::String::from("inner"));
            alloc::string::String::from("outer")
        }), "inner");
    }
}
