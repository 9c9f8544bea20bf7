//! The decoding library's raw byte moves, as safe functions: fixed-size
//! unaligned loads and stores, and SSE2 scans. No I/O; in every build.
//!
//! Why not slices: a size-optimised build (opt-level "z") makes each
//! checked slice index, `copy_from_slice` and `memcpy` an out-of-line call,
//! whose cost is far above that of the few dozen bytes a line, or a piece
//! of one, is. Each function here checks its bounds once with a min or a
//! compare and then moves bytes with raw pointers.

use core::ptr::{read_unaligned as rd, write_unaligned as wr};

/// `b[at..]`, or an empty slice when `at` is past the end: the room a
/// writer appends into.
#[inline(always)]
pub fn tail(b: &mut [u8], at: usize) -> &mut [u8] {
    let at = at.min(b.len());
    // SAFETY: at <= b.len().
    unsafe { b.get_unchecked_mut(at..) }
}

/// The 8 bytes of `b` that end at `end`, as a little-endian u64; None
/// when they are not all in `b`. One load where a slice and an array
/// would be calls (FieldAt::get reads every field of every record so).
#[inline(always)]
pub fn word_ending(b: &[u8], end: usize) -> Option<u64> {
    if end < 8 || end > b.len() {
        return None;
    }
    // SAFETY: [end - 8, end) is inside b (checked just above).
    Some(u64::from_le(unsafe { rd(b.as_ptr().add(end - 8) as *const u64) }))
}

/// Copy as much of `src` as fits into `dst` (the shorter length); returns
/// the count copied.
#[inline(always)]
pub fn copy_short(dst: &mut [u8], src: &[u8]) -> usize {
    let n = dst.len().min(src.len());
    // SAFETY: n is at most either slice's length; a `&mut` and a `&` never
    // overlap.
    unsafe { copy_raw(dst.as_mut_ptr(), src.as_ptr(), n) };
    n
}

/// Copy `n` bytes from `src` to `dst` with fixed-size moves (16, 8, 4
/// bytes, overlapping at the end): musl's memcpy is `rep movsq` with byte
/// moves to align, whose start-up cost is far above that of copying the
/// few dozen bytes a line or a piece of one is.
///
/// # Safety
/// `src` is readable and `dst` writable for `n` bytes; they do not overlap.
#[inline(always)]
pub(crate) unsafe fn copy_raw(d: *mut u8, s: *const u8, n: usize) {
    // SAFETY (all moves below): each reads and writes inside [0, n) of its
    // pointer, which the caller vouches for.
    unsafe {
        if n >= 16 {
            let mut i = 0;
            while i + 16 < n {
                wr(d.add(i) as *mut [u8; 16], rd(s.add(i) as *const [u8; 16]));
                // Keeps the loop a loop: LLVM would otherwise turn it back
                // into a call of memcpy.
                i = core::hint::black_box(i + 16);
            }
            wr(d.add(n - 16) as *mut [u8; 16], rd(s.add(n - 16) as *const [u8; 16]));
        } else if n >= 8 {
            wr(d as *mut u64, rd(s as *const u64));
            wr(d.add(n - 8) as *mut u64, rd(s.add(n - 8) as *const u64));
        } else if n >= 4 {
            wr(d as *mut u32, rd(s as *const u32));
            wr(d.add(n - 4) as *mut u32, rd(s.add(n - 4) as *const u32));
        } else {
            for i in 0..n {
                *d.add(i) = *s.add(i);
            }
        }
    }
}

/// The bytes of `w` equal to `lead`, as their high bits (a word xor-ed
/// with the lead has a zero byte where the lead was).
#[inline(always)]
fn lead_bytes(w: u64, lead: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = w ^ (ONES * lead as u64);
    x.wrapping_sub(ONES) & !x & (ONES << 7)
}

/// Copy all of `src` to the start of `dst` eight bytes at a time, the last
/// eight overlapping, and say whether one of them was `lead`: a check that
/// rides on a copy needed anyway, where a scan of its own (`memchr`) costs
/// as much again. `None` (nothing copied) when `src` does not fit.
#[inline(always)]
pub fn copy_scan(dst: &mut [u8], src: &[u8], lead: u8) -> Option<bool> {
    let n = src.len();
    if n > dst.len() {
        return None;
    }
    let (d, s) = (dst.as_mut_ptr(), src.as_ptr());
    let mut hit = 0;
    // SAFETY (all moves below): each reads and writes inside [0, n) of its
    // pointer; n <= dst.len() (checked) and n == src.len(); a `&mut` and a
    // `&` never overlap.
    unsafe {
        if n >= 8 {
            let mut i = 0;
            while i + 8 < n {
                let w = rd(s.add(i) as *const u64);
                wr(d.add(i) as *mut u64, w);
                hit |= lead_bytes(w, lead);
                i += 8;
            }
            let w = rd(s.add(n - 8) as *const u64);
            wr(d.add(n - 8) as *mut u64, w);
            hit |= lead_bytes(w, lead);
        } else {
            for i in 0..n {
                let c = *s.add(i);
                *d.add(i) = c;
                hit |= (c == lead) as u64;
            }
        }
    }
    Some(hit != 0)
}

/// Index of the first byte of `t` equal to `c` at or after `i` (`t.len()`
/// if none).
#[inline(always)]
pub fn find_byte(t: &[u8], i: usize, c: u8) -> usize {
    scan::<false>(t, i, c)
}

/// Index of the first byte of `t` at most `c` (unsigned) at or after `i`
/// (`t.len()` if none).
#[inline(always)]
pub fn find_at_most(t: &[u8], i: usize, c: u8) -> usize {
    scan::<true>(t, i, c)
}

/// [`find_byte`] (`AT_MOST` false) or [`find_at_most`], sixteen bytes per
/// step with SSE2 (every x86_64 has it).
#[inline(always)]
fn scan<const AT_MOST: bool>(t: &[u8], i: usize, c: u8) -> usize {
    let stop = |b: u8| if AT_MOST { b <= c } else { b == c };
    #[cfg(target_arch = "x86_64")]
    let i = {
        use core::arch::x86_64::{_mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8, _mm_set1_epi8};
        let mut i = i;
        while i + 16 <= t.len() {
            // SAFETY: SSE2 is part of x86_64; the 16 bytes at i are inside
            // t (checked by the loop condition); loadu has no alignment need.
            let m = unsafe {
                let v = _mm_loadu_si128(t.as_ptr().add(i) as *const _);
                // (An unsigned b <= c is min(b, c) == b.)
                let hit = if AT_MOST { _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(c as i8)), v) } else { _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)) };
                _mm_movemask_epi8(hit)
            };
            if m != 0 {
                return i + m.trailing_zeros() as usize;
            }
            i += 16;
        }
        i
    };
    t.get(i..).and_then(|r| r.iter().position(|&b| stop(b))).map_or(t.len(), |k| i + k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_the_shorter_length() {
        for n in 0..40 {
            let src: [u8; 40] = core::array::from_fn(|i| i as u8 + 1);
            let mut d = [0u8; 48];
            assert_eq!(copy_short(&mut d[..n], &src), n);
            assert_eq!(&d[..n], &src[..n]);
            assert!(d[n..].iter().all(|&c| c == 0), "{n}");
            let mut d = [0u8; 48];
            assert_eq!(copy_short(&mut d, &src[..n]), n);
            assert_eq!(&d[..n], &src[..n]);
            assert!(d[n..].iter().all(|&c| c == 0), "{n}");
        }
    }

    #[test]
    fn leads_found_while_copying() {
        const L: u8 = 0xef;
        let scan = |b: &[u8]| {
            let mut d = [0u8; 32];
            let hit = copy_scan(&mut d, b, L).unwrap();
            assert_eq!(&d[..b.len()], b);
            hit
        };
        let mut b = [b'a'; 21];
        assert!(!scan(&b));
        for i in 0..b.len() {
            b[i] = L;
            assert!(scan(&b) && scan(&b[i..]) && !scan(&b[..i]), "{i}");
            b[i] = L - 1;
            assert!(!scan(&b), "{i}");
            b[i] = b'a';
        }
        assert_eq!(copy_scan(&mut [0u8; 4], b"hello", L), None);
    }

    #[test]
    fn tail_is_empty_past_the_end() {
        let mut b = [0u8; 8];
        assert_eq!(tail(&mut b, 5).len(), 3);
        assert!(tail(&mut b, 20).is_empty());
    }

    #[test]
    fn scans_find_the_first_stop() {
        let mut t = [b'x'; 50];
        for at in 0..50 {
            t[at] = b'\n';
            assert_eq!(find_byte(&t, 0, b'\n'), at);
            assert_eq!(find_at_most(&t, 0, b' '), at);
            assert_eq!(find_byte(&t, at + 1, b'\n'), 50);
            t[at] = b'x';
        }
        assert_eq!(find_at_most(b"ab\tc", 0, b' '), 2);
        assert_eq!(find_byte(b"ab", 5, b'\n'), 2);
    }
}
