//! Small shared helpers that exist to keep the binary small.
//!
//! `slice::sort_by` / `sort_by_key` / `sort_unstable*` instantiate the whole
//! driftsort / ipnsort machinery (2.5–4 KB of code) once per element type
//! *and per closure type*: every call site pays it again. The sorts here put
//! the algorithm in one non-generic function that works on indices through a
//! `&mut dyn` comparison, so each call site only adds two tiny closures.
//! Lists here are at most a few hundred thousand entries (kallsyms), where a
//! plain merge sort with an indirect call per comparison costs milliseconds.

use alloc::vec::Vec;
use core::cmp::Ordering;

/// Stable sort of `v` by `cmp`, like `<[T]>::sort_by`.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    if v.len() < 2 {
        return;
    }
    let perm = {
        let s = &*v;
        order(s.len(), &mut |a, b| cmp(&s[a], &s[b]) == Ordering::Greater)
    };
    // SAFETY: `v` is a live, exclusively borrowed slice; `perm` is a
    // permutation of 0..v.len(), so permute swaps whole, distinct elements
    // of `size_of::<T>()` bytes inside it (a move, as `<[T]>::swap` does).
    unsafe { permute(perm, v.as_mut_ptr().cast::<u8>(), core::mem::size_of::<T>()) }
}

/// Stable sort of `v` by a key, like `<[T]>::sort_by_key`.
pub fn sort_by_key<T, K: Ord>(v: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(v, |a, b| key(a).cmp(&key(b)))
}

/// The indices `0..n` in stably sorted order, where `gt(a, b)` says element
/// `a` sorts after element `b`. Bottom-up merge sort; a run pair already in
/// order (the common case: kallsyms is nearly sorted) costs one comparison.
#[inline(never)]
fn order(n: usize, gt: &mut dyn FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut a: Vec<usize> = (0..n).collect();
    let mut b: Vec<usize> = alloc::vec![0; n];
    let mut w = 1;
    while w < n {
        let mut lo = 0;
        while lo < n {
            let mid = n.min(lo + w);
            let hi = n.min(lo + 2 * w);
            if mid == hi || !gt(a[mid - 1], a[mid]) {
                b[lo..hi].copy_from_slice(&a[lo..hi]);
            } else {
                let (mut i, mut j) = (lo, mid);
                for slot in &mut b[lo..hi] {
                    // Ties take the left run first: that is what makes it stable.
                    if j >= hi || (i < mid && !gt(a[i], a[j])) {
                        *slot = a[i];
                        i += 1;
                    } else {
                        *slot = a[j];
                        j += 1;
                    }
                }
            }
            lo = hi;
        }
        core::mem::swap(&mut a, &mut b);
        w *= 2;
    }
    a
}

/// Rearrange so that new position `k` holds the element that was at
/// `perm[k]`, using only swaps. Each cycle of the permutation is walked once;
/// a finished position is marked by making it a fixed point. The elements
/// are `size` bytes at `base`: one copy of this code for every element
/// type (a swap closure per type cost ~40 B a call site).
///
/// # Safety
/// `base` points to `perm.len()` elements of `size` bytes, writable, and
/// `perm` is a permutation of `0..perm.len()`.
#[inline(never)]
unsafe fn permute(mut perm: Vec<usize>, base: *mut u8, size: usize) {
    for s in 0..perm.len() {
        let mut k = s;
        while perm[k] != k {
            let next = perm[k];
            perm[k] = k;
            if next == s {
                break;
            }
            // SAFETY: k != next (perm[k] != k), both < perm.len(): two
            // distinct elements inside the slice (the caller's contract).
            unsafe { core::ptr::swap_nonoverlapping(base.add(k * size), base.add(next * size), size) };
            k = next;
        }
    }
}

/// The position of `w` among the `|`-separated words of `list`. A `match`
/// on strings costs code for every string (length switch, compare, jump);
/// a word list costs only its text, and one loop serves every table.
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

/// Is `w` one of the `|`-separated words of `list`?
pub fn one_of(list: &str, w: &str) -> bool {
    word_index(list, w).is_some()
}

/// Where `needle` first (`last`: last) occurs in `hay`, by comparing it at
/// every offset. The strings searched here are short (control file texts,
/// names); core's `str::find`/`rfind`/`contains` with a `&str` pattern bring
/// its two-way searcher (~2.5 KB, forward and reverse) into the binary.
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

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// find_str against str::find/rfind.
    #[test]
    fn substrings() {
        for (h, n) in [("abcabc", "bc"), ("abc", ""), ("", ""), ("", "a"), ("ab", "abc"), ("a\\040b\\040", "\\040"), ("xx", "x")] {
            assert_eq!(find_str(h, n, false), h.find(n), "{h:?} {n:?}");
            assert_eq!(find_str(h, n, true), h.rfind(n), "{h:?} {n:?}");
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

    /// A little deterministic pseudo-random sequence (xorshift).
    fn seq(n: usize, modulo: u64, mut x: u64) -> Vec<u64> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % modulo
            })
            .collect()
    }

    #[test]
    fn matches_std_stable_sort() {
        for &(n, m) in &[(0, 1), (1, 1), (2, 2), (3, 2), (7, 3), (64, 5), (1000, 17), (1000, 1 << 40), (4099, 3)] {
            // Pair each key with its original position to check stability.
            let v: Vec<(u64, usize)> = seq(n, m, 88172645463325252 + n as u64).into_iter().zip(0..).collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            let mut got = v.clone();
            sort_by_key(&mut got, |e| e.0);
            assert_eq!(got, want, "n={n} m={m}");
            let mut got = v.clone();
            sort_by(&mut got, |a, b| b.0.cmp(&a.0));
            let mut want = v;
            want.sort_by(|a, b| b.0.cmp(&a.0));
            assert_eq!(got, want, "reverse n={n} m={m}");
        }
    }

    #[test]
    fn sorted_and_reversed_input() {
        let mut v: Vec<u32> = (0..500).collect();
        sort_by(&mut v, |a, b| a.cmp(b));
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        v.reverse();
        sort_by(&mut v, |a, b| a.cmp(b));
        assert_eq!(v, (0..500).collect::<Vec<u32>>());
    }

    #[test]
    fn strings() {
        let mut v = alloc::vec!["sched", "irq", "ftrace", "irq", "block", "a"];
        sort_by(&mut v, |a, b| a.cmp(b));
        assert_eq!(v, ["a", "block", "ftrace", "irq", "irq", "sched"]);
    }
}
