//! The buffer a text line is built in ([`Line`]), and the digit makers it
//! shares with printf. Here among the unchecked writes: a line stores its
//! digits and pieces through raw pointers after one room check per piece
//! (a size-optimised build makes each checked slice index a call, and a
//! safe version cost the board build more than its room). Its methods are
//! safe.

use core::fmt::{self, Write};

use super::bytes;

/// A line buffer with the integer formats the context columns need,
/// cheaper than core::fmt for what every line has, written out in one call.
/// Invariant: the bytes in use are valid UTF-8 (bytes come from `&str`s or
/// are checked ASCII).
pub struct Line<'a> {
    b: &'a mut [u8],
    n: usize,
}

/// Bytes a [`Line`] holds at most (a line that does not fit takes the
/// slower core::fmt path).
pub const LINE_MAX: usize = 256;

impl<'a> Line<'a> {
    /// A line over `buf` (its old contents are ignored). The buffer is the
    /// caller's so that no line-sized value is built or moved per record.
    pub fn on(buf: &'a mut [u8]) -> Line<'a> {
        Line { b: buf, n: 0 }
    }
    #[inline]
    pub fn clear(&mut self) {
        self.n = 0;
    }
    /// Where the next byte goes. Every write below checks its room against
    /// `room()` once and then stores through this pointer: a size-optimised
    /// build makes each checked slice index a function call.
    #[inline(always)]
    fn at(&mut self) -> *mut u8 {
        // SAFETY: n <= b.len() always holds, so this is in (or one past) b.
        unsafe { self.b.as_mut_ptr().add(self.n) }
    }
    #[inline(always)]
    pub fn push(&mut self, c: u8) {
        if self.n < self.b.len() && c.is_ascii() {
            // SAFETY: n < b.len(), checked just above.
            unsafe { *self.at() = c };
            self.n += 1;
        }
    }
    /// ASCII bytes; anything else becomes `?` (keeps the UTF-8 invariant).
    /// (Inline with fast-print only, as `extend_str`.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn extend(&mut self, s: &[u8]) {
        let k = s.len().min(self.room());
        // SAFETY: k bytes fit after n (room) and are in s.
        unsafe { bytes::copy_raw(self.at(), s.as_ptr(), k) };
        // A plain loop, inline: core's is_ascii and even `any` are calls
        // costing more than the few bytes a piece of a line is.
        let mut hi = 0;
        for &c in &s[..k] {
            hi |= c;
        }
        if hi >= 0x80 {
            for c in &mut self.b[self.n..self.n + k] {
                if !c.is_ascii() {
                    *c = b'?';
                }
            }
        }
        self.n += k;
    }
    /// A whole str, or nothing if it does not fit (a char is never cut).
    /// (Inline with fast-print, for speed; the board build keeps the call,
    /// made from some forty places: 1.4 KB.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn extend_str(&mut self, s: &str) -> bool {
        if s.len() > self.room() {
            return false;
        }
        // SAFETY: s fits after n (checked).
        unsafe { bytes::copy_raw(self.at(), s.as_ptr(), s.len()) };
        self.n += s.len();
        true
    }
    /// Room left.
    #[inline(always)]
    pub fn room(&self) -> usize {
        self.b.len() - self.n
    }
    #[inline(always)]
    pub fn pad(&mut self, k: usize) {
        let k = k.min(self.room());
        // SAFETY: k bytes fit after n (room).
        unsafe { core::ptr::write_bytes(self.at(), b' ', k) };
        self.n += k;
    }
    /// `%lx`: all sixteen digits made at once (each nibble spread to a
    /// byte, then turned into its ASCII digit by arithmetic), the
    /// significant ones stored with two 8-byte moves.
    pub fn hex(&mut self, v: u64) {
        let n = (16 - v.leading_zeros() as usize / 4).max(1);
        if self.room() < 16 {
            // Near the end of the buffer: digit by digit, if they fit.
            if n > self.room() {
                return;
            }
            let p = self.at();
            let mut x = v;
            for k in (0..n).rev() {
                // SAFETY: k < n bytes fit after the line's end (checked).
                unsafe { *p.add(k) = b"0123456789abcdef"[(x & 15) as usize] };
                x >>= 4;
            }
            self.n += n;
            return;
        }
        // The digits, the most significant in the lowest byte (first in
        // memory, little-endian).
        let digits = |x: u32| hex8(x, false).swap_bytes();
        let (hi, lo) = (digits((v >> 32) as u32), digits(v as u32));
        let p = self.at();
        // SAFETY: 16 bytes fit after the line's end (checked); the bytes
        // stored past its new end are not counted.
        unsafe {
            if n <= 8 {
                core::ptr::write_unaligned(p as *mut [u8; 8], (lo >> (8 * (8 - n))).to_le_bytes());
            } else {
                core::ptr::write_unaligned(p as *mut [u8; 8], (hi >> (8 * (16 - n))).to_le_bytes());
                core::ptr::write_unaligned(p.add(n - 8) as *mut [u8; 8], lo.to_le_bytes());
            }
        }
        self.n += n;
    }
    pub fn len(&self) -> usize {
        self.n
    }
    /// Back to an earlier length (from [`Line::len`]).
    pub fn truncate(&mut self, n: usize) {
        self.n = self.n.min(n);
    }
    /// Put ASCII `s` in place of as many ASCII bytes of the line at `at`;
    /// false (nothing changed) when those are not all in the line, or
    /// either is not ASCII (a char would be cut).
    pub(crate) fn overwrite(&mut self, at: usize, s: &[u8]) -> bool {
        let Some(d) = self.b.get_mut(..self.n).and_then(|l| l.get_mut(at..at + s.len())) else { return false };
        if !d.iter().chain(s).all(u8::is_ascii) {
            return false;
        }
        d.copy_from_slice(s);
        true
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// `%u` of `v` (returns the width written). Values that fit u32 use a
    /// multiply per digit instead of the 64-bit divide a size-optimised
    /// build emits; digits go straight into place.
    pub fn uint(&mut self, v: u64) -> usize {
        let n = Self::width(v);
        if n > self.room() {
            return 0;
        }
        let p = self.at();
        let mut i = n;
        // The stores below: i only goes down from n, and n bytes fit after
        // the line's end (checked above).
        if v <= u32::MAX as u64 {
            // Two digits per step, a multiply instead of a divide.
            let mut x = v as u32;
            while x >= 100 {
                let q = ((x as u64 * 0x51EB_851F) >> 37) as u32;
                let r = (x - q * 100) as usize;
                i -= 2;
                // SAFETY: i + 1 < n, inside the room checked above.
                unsafe {
                    *p.add(i) = DIGITS2[2 * r];
                    *p.add(i + 1) = DIGITS2[2 * r + 1];
                }
                x = q;
            }
            if x >= 10 {
                i -= 2;
                // SAFETY: i + 1 < n, inside the room checked above.
                unsafe {
                    *p.add(i) = DIGITS2[2 * x as usize];
                    *p.add(i + 1) = DIGITS2[2 * x as usize + 1];
                }
            } else if i > 0 {
                i -= 1;
                // SAFETY: i < n, inside the room checked above.
                unsafe { *p.add(i) = b'0' + x as u8 };
            }
        } else {
            let mut x = v;
            while i > 0 {
                i -= 1;
                // SAFETY: i < n, inside the room checked above.
                unsafe { *p.add(i) = b'0' + (x % 10) as u8 };
                x /= 10;
            }
        }
        self.n += n;
        n
    }
    /// Width of `%u` of `v` (also printf's `dec`).
    #[inline(always)]
    pub(crate) fn width(v: u64) -> usize {
        let mut n = 1;
        let mut p = 10u64;
        while n < 20 && v >= p {
            n += 1;
            p = p.wrapping_mul(10);
        }
        n
    }
    /// `%d`; returns the width written.
    pub fn int(&mut self, v: i64) -> usize {
        if v < 0 {
            self.push(b'-');
        }
        self.uint(v.unsigned_abs()) + (v < 0) as usize
    }
    /// `%*d`, right-aligned in `w`.
    pub fn int_right(&mut self, v: i64, w: usize) {
        let n = Self::width(v.unsigned_abs()) + (v < 0) as usize;
        self.pad(w.saturating_sub(n));
        self.int(v);
    }
    pub fn uint_right(&mut self, v: u64, w: usize) {
        self.pad(w.saturating_sub(Self::width(v)));
        self.uint(v);
    }
    /// `%06u` of a value below a million (the microseconds column).
    /// Divides by constants are multiplies here: a size-optimised build
    /// emits `div` for them, tens of cycles each; the digits go out in
    /// one store, not byte by byte through the stack. (Inline with
    /// fast-print: each caller is a once-a-line path, where the call and
    /// its second room check were a fifth of the cost.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn six(&mut self, v: u32) {
        let v = if v >= 1_000_000 { mod_million(v) } else { v };
        // v / 10000 and v / 100, exact for v < 10^6.
        let hi = ((v as u64 * 109_951_163) >> 40) as u32;
        let lo = v - hi * 10_000;
        let mid = ((lo as u64 * 0x51EB_851F) >> 37) as u32;
        let pair = |x: u32| {
            let i = 2 * x.min(99) as usize;
            u16::from_le_bytes([DIGITS2[i], DIGITS2[i + 1]]) as u64
        };
        let w = pair(hi) | pair(mid) << 16 | pair(lo - mid * 100) << 32;
        if self.room() >= 6 {
            let b = w.to_le_bytes();
            // SAFETY: 6 bytes fit (checked).
            unsafe {
                core::ptr::write_unaligned(self.at() as *mut [u8; 4], [b[0], b[1], b[2], b[3]]);
                core::ptr::write_unaligned(self.at().add(4) as *mut [u8; 2], [b[4], b[5]]);
            }
            self.n += 6;
        }
    }
    /// `%0*u`. (Inline with fast-print only, as `extend_str`.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn zeros(&mut self, v: u64, w: usize) {
        for _ in Self::width(v)..w {
            self.push(b'0');
        }
        self.uint(v);
    }
    #[inline(always)]
    pub fn as_str(&self) -> &str {
        // SAFETY: every byte in b[..n] was copied from a &str (extend_str,
        // whole strs only) or checked to be ASCII (push, extend, pad, digits),
        // so b[..n] is valid UTF-8.
        unsafe { core::str::from_utf8_unchecked(self.b.get_unchecked(..self.n)) }
    }
    /// Write out and empty.
    #[inline]
    pub fn flush(&mut self, out: &mut dyn Write) -> fmt::Result {
        let r = out.write_str(self.as_str());
        self.n = 0;
        r
    }
}

/// "00" .. "99".
pub(crate) const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `x`'s 8 hex digits as the bytes of a number, the most significant
/// digit in the top byte, without a loop: each nibble spread into a byte
/// of its own, then made a digit or a letter in all eight bytes at once.
/// (Also printf's `%x`: one digit maker for both.)
#[inline(always)]
pub(crate) fn hex8(x: u32, upper: bool) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = x as u64;
    let x = (x | x << 16) & 0x0000_ffff_0000_ffff;
    let x = (x | x << 8) & 0x00ff_00ff_00ff_00ff;
    let x = (x | x << 4) & 0x0f0f_0f0f_0f0f_0f0f;
    // 1 in each byte whose nibble is 10..15 (it carries into bit 4 at +6).
    let letter = ((x + 6 * ONES) >> 4) & ONES;
    let gap = if upper { b'A' - b'0' - 10 } else { b'a' - b'0' - 10 };
    x + b'0' as u64 * ONES + letter * gap as u64
}

#[cold]
#[inline(never)]
fn mod_million(v: u32) -> u32 {
    v % 1_000_000
}

#[cfg(test)]
mod tests {
    use super::Line;

    /// The divide-free `%06u` and the all-at-once `%lx`: as core::fmt
    /// prints them, with room to spare and with room for the digits only.
    #[test]
    fn six_and_hex() {
        let mut buf = [0u8; 16];
        for v in [0u32, 7, 99, 100, 9_999, 10_000, 123_456, 999_999, 1_000_000, 4_294_967_295] {
            let mut l = Line::on(&mut buf);
            l.six(v);
            assert_eq!(l.as_str(), alloc::format!("{:06}", v % 1_000_000));
        }
        for v in [0u64, 1, 9, 10, 15, 16, 0xdead, 0x55d0_c0f9_c000, 0x8000_0000, 0xffff_ffff, 0x1_0000_0000, 0x0123_4567_89ab_cdef, u64::MAX] {
            let mut l = Line::on(&mut buf);
            l.hex(v);
            assert_eq!(l.as_str(), alloc::format!("{:x}", v));
            // Exactly room for the digits: the digit-by-digit path (and the
            // 16-byte path for 16 digits).
            let mut short = [0u8; 18];
            let want = alloc::format!("xy{:x}", v);
            let mut l = Line::on(&mut short[..want.len()]);
            l.push(b'x');
            l.push(b'y');
            l.hex(v);
            assert_eq!(l.as_str(), want);
        }
    }
}
