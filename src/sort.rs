//! Sorting for the whole crate, through two shared slice sorts.
//!
//! `slice::sort_by` is generic over the element and the comparison, so each
//! call site would carry its own copy of core's sort (driftsort or ipnsort,
//! with their small-sort networks). Callers here sort positions instead:
//! [`sort_by`] sorts `0..n` with a merge sort of its own and the comparison
//! handed over as `dyn`, [`sort_by_key`] sorts plain (key, position) pairs
//! with core's; only the small step that moves the items into that order
//! is generic. Both sorts are stable.

use alloc::vec::Vec;
use core::cmp::Ordering;

/// Sort `v` by `cmp`, stably: items that compare equal keep their order.
pub fn sort_by<T>(v: &mut [T], mut cmp: impl FnMut(&T, &T) -> Ordering) {
    let mut order = positions_by(v.len(), &mut |a, b| cmp(&v[a], &v[b]));
    permute(&mut order, &mut |a, b| v.swap(a, b));
}

/// Sort `v` by an unsigned integer `key`, stably. For the long lists
/// (kallsyms): the (key, position) pairs sort as plain integers, with no
/// call per comparison.
pub fn sort_by_key<T>(v: &mut [T], mut key: impl FnMut(&T) -> u64) {
    let pairs: Vec<(u64, usize)> = v.iter().enumerate().map(|(i, x)| (key(x), i)).collect();
    let mut order = positions_by_key(pairs);
    permute(&mut order, &mut |a, b| v.swap(a, b));
}

/// `0..n` sorted by `cmp`, stably: a bottom-up merge sort, runs of 1, 2,
/// 4... merged in turn. (Core's sort, unrolled for short runs, calls a
/// comparison from dozens of places, each an indirect call here; a merge
/// calls it from one.)
#[inline(never)]
fn positions_by(n: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut merged = alloc::vec![0; n];
    let mut width = 1;
    while width < n {
        let mut lo = 0;
        while lo < n {
            let mid = (lo + width).min(n);
            let hi = (lo + 2 * width).min(n);
            let (mut i, mut j) = (lo, mid);
            for out in &mut merged[lo..hi] {
                // The right run's item only when it is less: equal items
                // keep their order.
                let right = i == mid || (j < hi && cmp(order[j], order[i]) == Ordering::Less);
                let from = if right { &mut j } else { &mut i };
                *out = order[*from];
                *from += 1;
            }
            lo = hi;
        }
        core::mem::swap(&mut order, &mut merged);
        width *= 2;
    }
    order
}

/// The positions of `pairs` (key, position) in key order, ties by position.
#[inline(never)]
fn positions_by_key(mut pairs: Vec<(u64, usize)>) -> Vec<usize> {
    pairs.sort_unstable();
    pairs.into_iter().map(|(_, i)| i).collect()
}

/// Rearrange a slice so that its item `k` is the one that was at
/// `order[k]`, by following each cycle of the permutation with `swap`s of
/// its items (`order` is used up as the marks of what is in place). Not
/// generic over the items: one copy for every sort, each caller's only
/// the swap (a call per swap is nothing beside the sort's comparisons).
#[inline(never)]
fn permute(order: &mut [usize], swap: &mut dyn FnMut(usize, usize)) {
    for start in 0..order.len() {
        let mut cur = start;
        while order[cur] != cur {
            let next = order[cur];
            order[cur] = cur;
            if next == start {
                break;
            }
            swap(cur, next);
            cur = next;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// Pseudo-random (key, serial) items with many equal keys.
    fn items(n: usize, keys: u64) -> Vec<(u64, usize)> {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x % keys, i)
            })
            .collect()
    }

    /// Both sorts give what core's stable sort gives.
    #[test]
    fn stable_as_core() {
        for (n, keys) in [(0, 1), (1, 1), (2, 1), (3, 2), (7, 3), (100, 5), (1000, 1000), (1025, 2), (5000, 40)] {
            let v = items(n, keys);
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            let mut a = v.clone();
            sort_by(&mut a, |x, y| x.0.cmp(&y.0));
            assert_eq!(a, want, "sort_by {n} {keys}");
            let mut b = v.clone();
            sort_by_key(&mut b, |x| x.0);
            assert_eq!(b, want, "sort_by_key {n} {keys}");
            let mut want = v.clone();
            want.sort_by(|x, y| y.0.cmp(&x.0));
            let mut c = v;
            sort_by(&mut c, |x, y| y.0.cmp(&x.0));
            assert_eq!(c, want, "descending {n} {keys}");
        }
    }

    /// Input already in order, or in reverse order.
    #[test]
    fn sorted_and_reversed() {
        for n in [2, 9, 64, 1000] {
            let v: Vec<(u64, usize)> = (0..n).map(|i| (i as u64 / 3, i)).collect();
            let mut a = v.clone();
            sort_by(&mut a, |x, y| x.0.cmp(&y.0));
            assert_eq!(a, v, "sorted {n}");
            let mut b = v.clone();
            sort_by(&mut b, |x, y| y.0.cmp(&x.0));
            let mut want = v;
            want.sort_by(|x, y| y.0.cmp(&x.0));
            assert_eq!(b, want, "reversed {n}");
        }
    }

    #[test]
    fn permutes_by_cycles() {
        let mut v = vec!['a', 'b', 'c', 'd', 'e'];
        permute(&mut [3, 0, 4, 1, 2], &mut |a, b| v.swap(a, b));
        assert_eq!(v, ['d', 'a', 'e', 'b', 'c']);
    }
}
