//! A byte buffer for the exporters' many short appends (a field tag, a
//! key, a few digits). `Vec::extend_from_slice` calls libc's memcpy for
//! each, and musl's, built for long copies, costs more to start than such
//! a piece is long: here pieces of up to [`MOVES`] bytes (a JSON row's
//! `,"event":"ftrace:funcgraph_entry","flags":"` is 44, the end of a
//! syscall's row kept whole over 100) are fixed-size moves.
//! The buffer is kept zero-filled past its length so those moves need no
//! unsafe code.

use alloc::vec::Vec;

/// Bytes kept writable past the length: the widest fixed move.
const SLACK: usize = 64;
/// Pieces longer than this go to `memcpy`, whose `rep movsb` costs about
/// what this many bytes of 16-byte moves do to start.
const MOVES: usize = 256;

#[derive(Default)]
pub struct Buf {
    b: Vec<u8>,
    n: usize,
}

impl Buf {
    pub fn new() -> Buf {
        Buf::default()
    }
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    pub fn clear(&mut self) {
        self.n = 0;
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.b[..self.n]
    }

    /// The writable bytes from the end on: at least `k` + SLACK of them.
    /// What is written there becomes part of the buffer by [`Buf::advance`].
    #[inline(always)]
    pub fn room(&mut self, k: usize) -> &mut [u8] {
        if self.b.len() < self.n + k + SLACK {
            self.grow(k);
        }
        &mut self.b[self.n..]
    }

    #[inline(never)]
    fn grow(&mut self, k: usize) {
        let want = (self.n + k + SLACK).max(self.b.len() * 2).max(256);
        self.b.resize(want, 0);
    }

    /// Take the next `k` bytes of [`Buf::room`] as written.
    #[inline(always)]
    pub fn advance(&mut self, k: usize) {
        self.n = (self.n + k).min(self.b.len());
    }

    #[inline(always)]
    pub fn push(&mut self, c: u8) {
        if self.n + SLACK >= self.b.len() {
            self.grow(1);
        }
        if let Some(x) = self.b.get_mut(self.n) {
            *x = c;
            self.n += 1;
        }
    }

    /// Append `s`.
    #[inline]
    pub fn put(&mut self, s: &[u8]) {
        let k = s.len();
        let d = self.room(k);
        if k > MOVES {
            d[..k].copy_from_slice(s);
        } else if k > 16 {
            // 16-byte moves, the last one overlapping as needed.
            let mut i = 0;
            while i + 16 < k {
                mv::<16>(d, i, s);
                i += 16;
            }
            mv::<16>(d, k - 16, s);
        } else if k >= 8 {
            // Two 8-byte moves, overlapping as needed.
            mv::<8>(d, 0, s);
            mv::<8>(d, k - 8, s);
        } else if k >= 4 {
            mv::<4>(d, 0, s);
            mv::<4>(d, k - 4, s);
        } else if k > 0 {
            d[0] = s[0];
            d[k / 2] = s[k / 2];
            d[k - 1] = s[k - 1];
        }
        self.n += k;
    }

    /// Append the first `k` bytes of `s` (`k` <= N) with one N-byte move:
    /// for pieces kept padded to a fixed size.
    #[inline(always)]
    pub fn put_fixed<const N: usize>(&mut self, s: &[u8; N], k: usize) {
        const { assert!(N <= SLACK) };
        if let Some(d) = self.room(0).first_chunk_mut::<N>() {
            *d = *s;
        }
        self.advance(k.min(N));
    }

    /// Write `s` at `at` (inside the buffer), over what is there: a
    /// length field's few bytes, stored one by one.
    pub fn set(&mut self, at: usize, s: &[u8]) {
        let d = &mut self.b[at..at + s.len()];
        match s.len() {
            1 => d[0] = s[0],
            2 => mv::<2>(d, 0, s),
            3 => {
                mv::<2>(d, 0, s);
                d[2] = s[2];
            }
            _ => d.copy_from_slice(s),
        }
    }

    /// Make `k` bytes of room at `at`: the bytes from `at` on move up.
    pub fn open_gap(&mut self, at: usize, k: usize) {
        self.room(k);
        self.b.copy_within(at..self.n, at + k);
        self.n += k;
    }
}

/// A run of short pieces (a row's fields, an event's header) written
/// straight into a [`Buf`]'s room, where the length stays in a register:
/// appended one by one, each piece would re-read the buffer's length and
/// pointer after the piece before was stored.
pub struct Run<'a> {
    /// The room: at least the run's bytes and [`SLACK`].
    t: &'a mut [u8],
    /// The buffer's length where the run starts, and the bytes written.
    base: usize,
    n: usize,
}

/// Write a run of at most `k` bytes into `b` with `f` (its fixed-size
/// moves may store up to [`SLACK`] bytes past them).
#[inline(always)]
pub fn run<R>(b: &mut Buf, k: usize, f: impl FnOnce(&mut Run) -> R) -> R {
    let base = b.len();
    let mut r = Run { t: b.room(k), base, n: 0 };
    let x = f(&mut r);
    let n = r.n.min(k);
    b.advance(n);
    x
}

impl Run<'_> {
    #[inline(always)]
    pub fn byte(&mut self, c: u8) {
        if let Some(x) = self.t.get_mut(self.n) {
            *x = c;
            self.n += 1;
        }
    }

    /// The first `k` bytes of `s` (`k` <= N <= [`SLACK`]), with one
    /// N-byte move.
    #[inline(always)]
    pub fn put_fixed<const N: usize>(&mut self, s: &[u8; N], k: usize) {
        if let Some(d) = self.t.get_mut(self.n..).and_then(|d| d.first_chunk_mut::<N>()) {
            *d = *s;
            self.n += k.min(N);
        }
    }

    pub fn put(&mut self, s: &[u8]) {
        if let Some(d) = self.t.get_mut(self.n..self.n + s.len()) {
            d.copy_from_slice(s);
            self.n += s.len();
        }
    }

    /// The bytes written so far.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.n
    }

    /// Where the run is in its buffer.
    #[inline(always)]
    pub fn pos(&self) -> usize {
        self.base + self.n
    }

    /// Byte `at` of the run (< [`Run::len`]) becomes `c`.
    #[inline(always)]
    pub fn set(&mut self, at: usize, c: u8) {
        if let Some(x) = self.t.get_mut(at) {
            *x = c;
        }
    }

    /// The room from the end of the run on (with its slack), for a
    /// writer of its own; [`Run::skip`] then takes what it wrote.
    #[inline(always)]
    pub fn rest(&mut self) -> &mut [u8] {
        self.t.get_mut(self.n..).unwrap_or_default()
    }

    #[inline(always)]
    pub fn skip(&mut self, k: usize) {
        self.n += k;
    }
}

/// `N` bytes of `s` from `at` to `d` at `at`: an array copy, which compiles
/// to a load and a store where a slice copy of a length the compiler cannot
/// see calls memcpy.
#[inline(always)]
fn mv<const N: usize>(d: &mut [u8], at: usize, s: &[u8]) {
    let src = s.get(at..).and_then(|s| s.first_chunk::<N>());
    let dst = d.get_mut(at..).and_then(|d| d.first_chunk_mut::<N>());
    if let (Some(dst), Some(src)) = (dst, src) {
        *dst = *src;
    }
}

impl core::fmt::Write for Buf {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.put(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_of_every_length() {
        let src: Vec<u8> = (0..100u8).collect();
        let mut b = Buf::new();
        let mut want = Vec::new();
        for k in 0..100 {
            b.put(&src[..k]);
            want.extend_from_slice(&src[..k]);
        }
        assert_eq!(b.as_slice(), &want[..]);
        b.open_gap(2, 3);
        b.set(2, b"xyz");
        assert_eq!(&b.as_slice()[..6], &[0, 0, b'x', b'y', b'z', 1]);
    }
}
