//! The kernel's printf (lib/vsprintf.c), as far as trace output needs it:
//! format_decode() into `Piece`s, number() with the kernel's rules (which are
//! not glibc's: `%#x` of 0 is `0x0`, `%.0d` of 0 is `0`, `0` flag survives a
//! precision), string(), and the `%p` extensions.

use alloc::vec::Vec;

use super::{Env, Msg};
use crate::cursor::read_uint;
use crate::ksyms::Ksyms;
use crate::sys::line::{hex8, Line, DIGITS2};

pub(crate) const LEFT: u8 = 1;
pub(crate) const PLUS: u8 = 2;
pub(crate) const SPACE: u8 = 4;
pub(crate) const SPECIAL: u8 = 8;
pub(crate) const ZEROPAD: u8 = 16;

/// Where the helpers print: a slice of bytes (the free space of an
/// output buffer, so that a line's text is made where it is written out)
/// and how many bytes were printed. A print that does not fit is dropped
/// but counted: the caller sees that the text did not fit (`fits`) and
/// how much room it needs ([`append`] prints again with that much).
pub struct Out<'a> {
    b: &'a mut [u8],
    n: usize,
}

impl<'a> Out<'a> {
    pub fn on(b: &'a mut [u8]) -> Out<'a> {
        Out { b, n: 0 }
    }
    // (Inline where speed counts: a call for each piece of a line cost a
    // fortieth of ftcat's instructions on an `-e all` recording.)

    /// Bytes printed, whether they fit or not.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.n
    }
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// Everything printed is there.
    #[inline(always)]
    pub fn fits(&self) -> bool {
        self.n <= self.b.len()
    }
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn push(&mut self, c: u8) {
        if let Some(d) = self.b.get_mut(self.n) {
            *d = c;
        }
        self.n += 1;
    }
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn extend_from_slice(&mut self, s: &[u8]) {
        if let Some(d) = self.b.get_mut(self.n..self.n + s.len()) {
            d.copy_from_slice(s);
        }
        self.n += s.len();
    }
    /// `k` bytes `c`.
    pub fn fill(&mut self, c: u8, k: usize) {
        if let Some(d) = self.b.get_mut(self.n..self.n + k) {
            d.fill(c);
        }
        self.n += k;
    }
    /// The next `N` bytes of the buffer, where that many are free: a
    /// printer that knows how many bytes it needs at most stores its text
    /// there whole (bytes past what it then counts are not printed).
    #[inline(always)]
    fn room<const N: usize>(&mut self) -> Option<&mut [u8; N]> {
        self.b.get_mut(self.n..)?.first_chunk_mut::<N>()
    }
    /// Back to an earlier length (from [`Out::len`]).
    pub fn truncate(&mut self, n: usize) {
        self.n = self.n.min(n);
    }
    pub fn last(&self) -> Option<u8> {
        self.n.checked_sub(1).and_then(|i| self.b.get(i)).copied()
    }
}

/// Print with `f` at the end of `v`, however long the text: where it did
/// not fit the room given, `f` prints it again with room enough (the
/// helpers print the same text each time).
pub fn append(v: &mut Vec<u8>, f: &mut dyn FnMut(&mut Out<'_>)) {
    let start = v.len();
    let mut room = 128;
    loop {
        v.resize(start + room, 0);
        let mut o = Out::on(v.get_mut(start..).unwrap_or_default());
        f(&mut o);
        let n = o.n;
        if n <= room {
            v.truncate(start + n);
            return;
        }
        room = n;
    }
}

/// A conversion's flags, width and precision (-1: none), as the helpers
/// take them: one argument, worked out once for each conversion of a
/// print fmt (see `plan`), where three cost a call's worth of moves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pad {
    pub flags: u8,
    pub width: i32,
    pub prec: i32,
}

pub(crate) const NO_PAD: Pad = Pad { flags: 0, width: -1, prec: -1 };

/// Width or precision: none, a number, or `*` (taken from the arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Num {
    None,
    N(i32),
    Star,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Spec {
    pub flags: u8,
    pub width: Num,
    pub prec: Num,
    /// Length qualifier: 0, b'H' (hh), b'h', b'l', b'L' (ll), b'z', b't'.
    pub qual: u8,
    /// Conversion: d i u o x X c s p %.
    pub conv: u8,
    /// For %p: the alphanumeric run after `p` (start, len) in the format.
    pub ext: (u32, u32),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Literal bytes fmt[start..end].
    Lit(u32, u32),
    Conv(Spec),
}

/// Split a format string into literals and conversions. An unknown
/// conversion is an error: the kernel stops printing there, and so cannot we
/// pretend to know what follows.
pub(crate) fn parse_format(f: &[u8]) -> Result<Vec<Piece>, Msg> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut lit = 0;
    while i < f.len() {
        if f[i] != b'%' {
            i += 1;
            continue;
        }
        if lit < i {
            out.push(Piece::Lit(lit as u32, i as u32));
        }
        i += 1;
        let mut flags = 0;
        while let Some(&c) = f.get(i) {
            flags |= match c {
                b'-' => LEFT,
                b'+' => PLUS,
                b' ' => SPACE,
                b'#' => SPECIAL,
                b'0' => ZEROPAD,
                _ => break,
            };
            i += 1;
        }
        let num = |i: &mut usize| -> Num {
            if f.get(*i) == Some(&b'*') {
                *i += 1;
                return Num::Star;
            }
            let s = *i;
            let mut v: i32 = 0;
            while let Some(d) = f.get(*i).filter(|c| c.is_ascii_digit()) {
                v = v.saturating_mul(10).saturating_add((d - b'0') as i32);
                *i += 1;
            }
            if *i > s {
                Num::N(v)
            } else {
                Num::None
            }
        };
        let width = num(&mut i);
        let mut prec = Num::None;
        if f.get(i) == Some(&b'.') {
            i += 1;
            prec = match num(&mut i) {
                Num::None => Num::N(0),
                n => n,
            };
        }
        let mut qual = 0;
        match f.get(i) {
            Some(&c @ (b'h' | b'l')) => {
                i += 1;
                qual = c;
                if f.get(i) == Some(&c) {
                    i += 1;
                    qual = if c == b'h' { b'H' } else { b'L' };
                }
            }
            Some(b'L' | b'j' | b'q') => {
                i += 1;
                qual = b'L';
            }
            Some(&c @ (b'z' | b'Z' | b't')) => {
                i += 1;
                qual = if c == b't' { b't' } else { b'z' };
            }
            _ => {}
        }
        let conv = *f.get(i).ok_or(msg!("format ends inside a conversion"))?;
        i += 1;
        let mut ext = (i as u32, 0);
        match conv {
            b'd' | b'i' | b'u' | b'o' | b'x' | b'X' | b'c' | b's' | b'%' => {}
            b'p' => {
                while f.get(i).is_some_and(|c| c.is_ascii_alphanumeric()) {
                    i += 1;
                }
                ext.1 = i as u32 - ext.0;
            }
            _ => return Err(msg!("unsupported printf conversion")),
        }
        if conv == b'%' {
            out.push(Piece::Lit(i as u32 - 1, i as u32));
        } else {
            out.push(Piece::Conv(Spec { flags, width, prec, qual, conv, ext }));
        }
        lit = i;
    }
    if lit < f.len() {
        out.push(Piece::Lit(lit as u32, f.len() as u32));
    }
    Ok(out)
}

/// Size in bytes of the integer a conversion reads (before promotion).
pub(crate) fn qual_size(qual: u8, conv: u8, long_size: usize) -> usize {
    match qual {
        b'H' => 1,
        b'h' => 2,
        b'l' | b'z' | b't' => long_size,
        b'L' => 8,
        _ if conv == b'c' => 1,
        _ => 4,
    }
}

/// How an integer conversion prints, chosen once for the conversion (see
/// `plan`): most of a trace line's numbers are a bare `%d`, `%lu`, `%lx`
/// or a `%p`, whose digits go straight into the line without number()'s
/// flag, width and sign analysis for every value (a sixth of ftcat's
/// instructions on an `-e all` recording went there).
// (Only plans use it: the board build has none.)
#[cfg_attr(not(feature = "fast-print"), allow(dead_code))]
#[derive(Clone, Copy, Debug)]
pub(crate) enum IntPrint {
    /// `%u` & co without flags, width or precision.
    Dec,
    /// `%d`, `%i` without flags, width or precision.
    SDec,
    /// `%x` without flags, width or precision.
    Hex,
    /// Zero-padded to `.0` hex digits: a plain `%p` (pointer_string()).
    Hex0(u8),
    /// Anything else: number() for conversion `.0` with the step's `Pad`.
    Number(u8),
}

#[cfg_attr(not(feature = "fast-print"), allow(dead_code))]
impl IntPrint {
    /// The printer for integer conversion `conv` with `pad`.
    pub(crate) fn of(conv: u8, pad: &Pad) -> IntPrint {
        if pad.flags != 0 || pad.width >= 0 || pad.prec >= 0 {
            return IntPrint::Number(conv);
        }
        match conv {
            b'u' => IntPrint::Dec,
            b'd' | b'i' => IntPrint::SDec,
            b'x' => IntPrint::Hex,
            _ => IntPrint::Number(conv),
        }
    }

    /// Print `v`, read as `size` bytes (truncated to them; sign-extended
    /// for `d`/`i`), as int_conv() does.
    #[inline(always)]
    pub(crate) fn print(self, out: &mut Out<'_>, v: u64, size: usize, pad: &Pad) {
        let v = if size >= 8 { v } else { v & ((1u64 << (8 * size)) - 1) };
        match self {
            IntPrint::Dec => dec(out, v),
            IntPrint::SDec => sdec(out, crate::format::sext(v, size)),
            IntPrint::Hex => hex(out, v),
            IntPrint::Hex0(n) => hex_digits(out, v, (n as usize).max(hex_width(v))),
            IntPrint::Number(conv) => int_conv(out, v, size, conv, pad),
        }
    }
}

/// `%d`, `%u`, `%x` & co of an argument read as `size` bytes: truncated to
/// them, sign-extended for `d`/`i`.
pub(crate) fn int_conv(out: &mut Out<'_>, v: u64, size: usize, conv: u8, pad: &Pad) {
    let v = if size >= 8 { v } else { v & ((1u64 << (8 * size)) - 1) };
    let v = if matches!(conv, b'd' | b'i') { crate::format::sext(v, size) } else { v };
    number(out, v, conv, pad);
}

/// The kernel's number() for conversion `conv` (`d`, `i`, `u`, `o`, `x`,
/// `X`): `num` already truncated/sign-extended to 64 bits.
pub(crate) fn number(out: &mut Out<'_>, num: u64, conv: u8, pad: &Pad) {
    let Pad { mut flags, mut width, prec } = *pad;
    let signed = matches!(conv, b'd' | b'i');
    let upper = conv == b'X';
    let base = match conv {
        b'o' => 8,
        b'x' | b'X' => 16,
        _ => 10,
    };
    let mut num = num;
    if flags & LEFT != 0 {
        flags &= !ZEROPAD;
    }
    let mut sign = 0u8;
    if signed {
        if (num as i64) < 0 {
            sign = b'-';
            num = (num as i64).wrapping_neg() as u64;
            width -= 1;
        } else if flags & PLUS != 0 {
            sign = b'+';
            width -= 1;
        } else if flags & SPACE != 0 {
            sign = b' ';
            width -= 1;
        }
    }
    let need_pfx = flags & SPECIAL != 0 && base != 10;
    let is_zero = num == 0;
    if need_pfx {
        if base == 16 {
            width -= 2;
        } else if !is_zero {
            width -= 1;
        }
    }
    // Digits into place (most significant first) in a stack buffer, then
    // the line gets a few slices instead of a push per byte. One loop per
    // base: the base is not looked at again for every digit.
    let mut tmp = [0u8; 24];
    let mut i = tmp.len();
    if base == 10 {
        // A size-optimised build keeps `/ 10` a divide instruction (tens
        // of cycles): only the digits above 2^32 take it, a multiply does
        // the rest.
        while num > u32::MAX as u64 {
            i -= 1;
            tmp[i] = b'0' + (num % 10) as u8;
            num /= 10;
        }
        loop {
            i -= 1;
            let q = (num * 0xCCCC_CCCD) >> 35;
            tmp[i] = b'0' + (num - q * 10) as u8;
            num = q;
            if num == 0 {
                break;
            }
        }
    } else if base == 16 {
        // (Its own loop: a constant shift, where the octal one's would be
        // a variable shift for every digit of every pointer.)
        let digits: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
        loop {
            i -= 1;
            tmp[i] = digits[(num & 15) as usize];
            num >>= 4;
            if num == 0 {
                break;
            }
        }
    } else {
        loop {
            i -= 1;
            tmp[i] = b'0' + (num & 7) as u8;
            num >>= 3;
            if num == 0 {
                break;
            }
        }
    }
    let n = (tmp.len() - i) as i32;
    let prec = prec.max(n);
    width -= prec;
    let fill = |out: &mut Out, c: u8, k: i32| out.fill(c, k.max(0) as usize);
    if flags & (ZEROPAD | LEFT) == 0 {
        fill(out, b' ', width);
        width = 0;
    }
    if sign != 0 {
        out.push(sign);
    }
    if need_pfx {
        if base == 16 || !is_zero {
            out.push(b'0');
        }
        if base == 16 {
            out.push(if upper { b'X' } else { b'x' });
        }
    }
    if flags & LEFT == 0 {
        fill(out, if flags & ZEROPAD != 0 { b'0' } else { b' ' }, width);
        width = 0;
    }
    fill(out, b'0', prec - n);
    out.extend_from_slice(&tmp[i..]);
    fill(out, b' ', width);
}

/// The kernel's string(): at most `prec` bytes, stopping at NUL, padded with
/// spaces to `width`.
pub(crate) fn string(out: &mut Out<'_>, s: &[u8], p: &Pad) {
    let mut len = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    if p.prec >= 0 {
        len = len.min(p.prec as usize);
    }
    pad(out, &s[..len], p.flags, p.width);
}

/// `s` padded with spaces to `width`, on the left unless the flags say LEFT.
pub(crate) fn pad(out: &mut Out<'_>, s: &[u8], flags: u8, width: i32) {
    let pad = (width.max(0) as usize).saturating_sub(s.len());
    if flags & LEFT == 0 {
        out.fill(b' ', pad);
    }
    out.extend_from_slice(s);
    if flags & LEFT != 0 {
        out.fill(b' ', pad);
    }
}

/// `string()` of the bytes appended to `out` since `start`, in place: what
/// `%pS` & co print goes straight into the line, no temporary.
pub(crate) fn pad_tail(out: &mut Out<'_>, start: usize, &Pad { flags, width, prec }: &Pad) {
    // (A text that did not fit is printed again with more room.)
    let Some(t) = out.b.get_mut(start..out.n) else { return };
    let mut len = t.iter().position(|&b| b == 0).unwrap_or(t.len());
    if prec >= 0 {
        len = len.min(prec as usize);
    }
    out.n = start + len;
    let pad = (width.max(0) as usize).saturating_sub(len);
    out.fill(b' ', pad);
    if pad > 0 && flags & LEFT == 0 {
        // Rare (a width on %pS & co): the text moved behind its padding.
        if let Some(t) = out.b.get_mut(start..out.n) {
            t.copy_within(..len, pad);
            t[..pad].fill(b' ');
        }
    }
}

/// `%p` without extension as the trace file prints it with hash-ptr off
/// (`%px`): the raw value, zero-padded to the pointer width unless a width
/// was given.
pub(crate) fn pointer_string(out: &mut Out<'_>, v: u64, &Pad { flags, width, .. }: &Pad, long_size: usize) {
    if cfg!(feature = "fast-print") && flags == 0 && width < 0 {
        return hex_digits(out, v, (2 * long_size).max(hex_width(v)));
    }
    let (flags, width) = if width < 0 { (flags | ZEROPAD, 2 * long_size as i32) } else { (flags, width) };
    number(out, v, b'x', &Pad { flags, width, prec: -1 });
}

/// `%pS` & co (`first`, the extension's letter: `S`, `s`, `B`, `F`, `f`)
/// of `addr`: [`symbol`]'s text, then padded as a string is.
pub(crate) fn symbol_conv(out: &mut Out<'_>, ksyms: Option<&Ksyms>, addr: u64, first: u8, pad: &Pad) {
    let start = out.len();
    let nul = symbol(out, ksyms, addr, !matches!(first, b's' | b'f'), first == b'B');
    // Without a width or a precision only a NUL byte in the text (of a
    // hostile kallsyms) changes it: the usual name is not scanned for one.
    if nul || pad.width >= 0 || pad.prec >= 0 {
        pad_tail(out, start, pad);
    }
}

/// sprint_symbol() and friends: `name+0xoff/0xsize [module]`, or `0xaddr`
/// when no symbol holds the address. True when the text may hold a NUL
/// byte (see [`crate::ksyms::Ksym::nul`]).
pub(crate) fn symbol(out: &mut Out<'_>, ksyms: Option<&Ksyms>, addr: u64, offset: bool, backtrace: bool) -> bool {
    let look = if backtrace { addr.wrapping_sub(1) } else { addr };
    match ksyms.and_then(|k| k.lookup(look)) {
        Some(s) => {
            out.extend_from_slice(s.name.as_bytes());
            if offset {
                let off = s.offset + backtrace as u64;
                // (Each separator with its `0x`: a store and a call fewer.)
                out.extend_from_slice(b"+0x");
                hex(out, off);
                out.extend_from_slice(b"/0x");
                hex(out, s.size.unwrap_or(0));
            }
            if let Some(m) = s.module {
                out.extend_from_slice(b" [");
                out.extend_from_slice(m.as_bytes());
                out.push(b']');
            }
            s.nul
        }
        None => {
            hex0x(out, addr);
            false
        }
    }
}

pub(crate) fn hex2(out: &mut Out<'_>, b: u8, upper: bool) {
    let d: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    out.push(d[(b >> 4) as usize]);
    out.push(d[(b & 15) as usize]);
}

/// `%*ph` and variants: up to 64 bytes, separated by ' ' (C: ':', D: '-', N: none).
pub(crate) fn hex_string(out: &mut Out<'_>, data: &[u8], width: i32, ext: &[u8]) {
    if width == 0 {
        return;
    }
    let len = if width > 0 { (width as usize).min(64) } else { 1 };
    let sep = match ext.get(1) {
        Some(b'C') => Some(b':'),
        Some(b'D') => Some(b'-'),
        Some(b'N') => None,
        _ => Some(b' '),
    };
    for (i, &b) in data.iter().take(len).enumerate() {
        if i > 0 {
            if let Some(s) = sep {
                out.push(s);
            }
        }
        hex2(out, b, false);
    }
}

/// `%pM` (colons), `%pm` (none), `R` reversed, `F` dashes.
pub(crate) fn mac(out: &mut Out<'_>, d: &[u8], ext: &[u8]) -> Result<(), Msg> {
    let d = d.get(..6).ok_or(msg!("MAC address shorter than 6 bytes"))?;
    let sep = if ext[0] == b'm' { None } else if ext.get(1) == Some(&b'F') { Some(b'-') } else { Some(b':') };
    let rev = ext.get(1) == Some(&b'R');
    for i in 0..6 {
        if i > 0 {
            if let Some(s) = sep {
                out.push(s);
            }
        }
        hex2(out, d[if rev { 5 - i } else { i }], false);
    }
    Ok(())
}

/// `%llu`, `%lld`, `%llx` and `0x%llx` without width or precision: one
/// call for the many places that print a bare number (8 arguments to set
/// up at each `number` call site). In the default build their digits go
/// straight into the output, where there is room for the longest.
#[inline(never)]
pub(crate) fn dec(out: &mut Out<'_>, v: u64) {
    let w = match out.room::<20>() {
        Some(w) if cfg!(feature = "fast-print") => w,
        _ => return number(out, v, b'u', &NO_PAD),
    };
    let n = Line::width(v);
    // From the last digit back. A size-optimised build keeps `/ 10` a
    // divide instruction: only the digits above 2^32 take it, a multiply
    // does the rest, two digits a round (the pair from Line's table).
    let mut i = n;
    let mut x = v;
    while x > u32::MAX as u64 {
        i -= 1;
        w[i] = b'0' + (x % 10) as u8;
        x /= 10;
    }
    while x >= 100 {
        let q = (x * 0x51EB_851F) >> 37;
        let r = 2 * (x - q * 100) as usize;
        i -= 2;
        w[i] = DIGITS2[r];
        w[i + 1] = DIGITS2[r + 1];
        x = q;
    }
    if x >= 10 {
        w[0] = DIGITS2[2 * x as usize];
        w[1] = DIGITS2[2 * x as usize + 1];
    } else {
        w[0] = b'0' + x as u8;
    }
    out.n += n;
}

#[inline(never)]
pub(crate) fn sdec(out: &mut Out<'_>, v: u64) {
    if !cfg!(feature = "fast-print") {
        return number(out, v, b'd', &NO_PAD);
    }
    if (v as i64) < 0 {
        out.push(b'-');
    }
    dec(out, (v as i64).unsigned_abs());
}

#[inline(never)]
pub(crate) fn hex(out: &mut Out<'_>, v: u64) {
    if !cfg!(feature = "fast-print") {
        return number(out, v, b'x', &NO_PAD);
    }
    hex_digits(out, v, hex_width(v));
}

#[inline(never)]
pub(crate) fn hex0x(out: &mut Out<'_>, v: u64) {
    out.extend_from_slice(b"0x");
    hex(out, v);
}

/// Digits of `v` in hex.
#[inline(always)]
fn hex_width(v: u64) -> usize {
    (16 - v.leading_zeros() as usize / 4).max(1)
}

/// The last `n` (1 to 16) hex digits of `v`, zeros in front of its own
/// digits: all sixteen made at once (hex8), the `n` wanted stored with two
/// 8-byte moves where 16 bytes are free.
fn hex_digits(out: &mut Out<'_>, v: u64, n: usize) {
    let w = match out.room::<16>() {
        Some(w) if cfg!(feature = "fast-print") => w,
        _ => return number(out, v, b'x', &Pad { flags: ZEROPAD, width: n as i32, prec: -1 }),
    };
    // The most significant digit in the lowest byte (first in memory).
    // (A function, not a closure: the closure was a call for each half.)
    #[inline(always)]
    fn digits(x: u64) -> u64 {
        hex8(x as u32, false).swap_bytes()
    }
    let lo = digits(v);
    // (Shifts of fewer than 64 bits: the leading digits not wanted out.)
    if n > 8 {
        if let Some(a) = w.first_chunk_mut::<8>() {
            *a = (digits(v >> 32) >> (8 * (16 - n))).to_le_bytes();
        }
        if let Some(b) = w.get_mut(n - 8..).and_then(|b| b.first_chunk_mut::<8>()) {
            *b = lo.to_le_bytes();
        }
    } else if let Some(a) = w.first_chunk_mut::<8>() {
        *a = (lo >> (8 * (8 - n))).to_le_bytes();
    }
    out.n += n;
}

pub(crate) fn ip4(out: &mut Out<'_>, d: &[u8], leading_zeros: bool) {
    for (i, &b) in d.iter().take(4).enumerate() {
        if i > 0 {
            out.push(b'.');
        }
        if leading_zeros {
            number(out, b as u64, b'u', &Pad { flags: ZEROPAD, width: 3, prec: -1 });
        } else {
            dec(out, b as u64);
        }
    }
}

/// IPv6: full (`%pI6`: 8 groups of 4 hex digits), no colons (`%pi6`), or
/// compressed per RFC 5952 (`%pI6c`: longest run of ≥2 zero groups becomes
/// `::`, leading zeros dropped, IPv4-mapped/compatible tails dotted).
pub(crate) fn ip6(out: &mut Out<'_>, d: &[u8], colons: bool, compressed: bool) {
    let d = match d.get(..16) {
        Some(d) => d,
        None => return,
    };
    if !compressed {
        for i in 0..8 {
            if i > 0 && colons {
                out.push(b':');
            }
            hex2(out, d[2 * i], false);
            hex2(out, d[2 * i + 1], false);
        }
        return;
    }
    let w = |i: usize| ((d[2 * i] as u16) << 8) | d[2 * i + 1] as u16;
    // ip6_compressed_string(): v4-mapped (::ffff:a.b.c.d) and ISATAP tails print dotted.
    let mapped = d[..10].iter().all(|&b| b == 0) && d[10] == 0xff && d[11] == 0xff;
    let isatap = w(5) == 0x5efe && (w(4) & !0x0200) == 0;
    let useipv4 = mapped || isatap;
    let range = if useipv4 { 6 } else { 8 };
    // The longest run of zero words (first one wins), only if longer than 1.
    let (mut longest, mut colonpos) = (1, usize::MAX);
    let mut i = 0;
    while i < range {
        let mut j = i;
        while j < range && w(j) == 0 {
            j += 1;
        }
        if j - i > longest {
            longest = j - i;
            colonpos = i;
        }
        i = j.max(i + 1);
    }
    if longest == 1 {
        colonpos = usize::MAX;
    }
    let mut needcolon = false;
    let mut i = 0;
    while i < range {
        if i == colonpos {
            if needcolon || i == 0 {
                out.push(b':');
            }
            out.push(b':');
            needcolon = false;
            i += longest;
            continue;
        }
        if needcolon {
            out.push(b':');
        }
        let v = w(i);
        let hi = (v >> 8) as u8;
        let lo = v as u8;
        if hi != 0 {
            if hi > 0x0f {
                hex2(out, hi, false);
            } else {
                out.push(b"0123456789abcdef"[hi as usize]);
            }
            hex2(out, lo, false);
        } else if lo > 0x0f {
            hex2(out, lo, false);
        } else {
            out.push(b"0123456789abcdef"[lo as usize]);
        }
        needcolon = true;
        i += 1;
    }
    if useipv4 {
        if needcolon {
            out.push(b':');
        }
        ip4(out, &d[12..16], false);
    }
}

/// `%pISpc` & co: a struct sockaddr (family in the recording's byte order,
/// port big endian).
pub(crate) fn sockaddr(out: &mut Out<'_>, d: &[u8], ext: &[u8], env: &Env) -> Result<(), Msg> {
    let fam = read_uint(d, 0, 2, env.endian).map_err(|_| msg!("short sockaddr"))?;
    let opts = &ext[2.min(ext.len())..];
    let port = |d: &[u8]| d.get(2..4).map(|p| ((p[0] as u64) << 8) | p[1] as u64).unwrap_or(0);
    match fam {
        2 => {
            let a = d.get(4..8).ok_or(msg!("short sockaddr_in"))?;
            ip4(out, a, ext[0] == b'i');
            if opts.contains(&b'p') {
                out.push(b':');
                dec(out, port(d));
            }
        }
        10 => {
            let a = d.get(8..24).ok_or(msg!("short sockaddr_in6"))?;
            let p = opts.contains(&b'p');
            if p {
                out.push(b'[');
            }
            if ext[0] == b'i' {
                ip6(out, a, false, false);
            } else {
                ip6(out, a, true, opts.contains(&b'c'));
            }
            if p {
                out.push(b']');
                out.push(b':');
                dec(out, port(d));
            }
            if opts.contains(&b'f') {
                out.extend_from_slice(b"/");
                let fl = d.get(4..8).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]])).unwrap_or(0) & 0x000f_ffff;
                number(out, fl as u64, b'x', &Pad { flags: SPECIAL, ..NO_PAD });
            }
            if opts.contains(&b's') {
                out.extend_from_slice(b"%");
                dec(out, read_uint(d, 24, 4, env.endian).unwrap_or(0));
            }
        }
        _ => out.extend_from_slice(b"(invalid address)"),
    }
    Ok(())
}

/// `%pU[bBlL]`: 16 bytes as a UUID; `l`/`L` little-endian field order, upper case for `B`/`L`.
pub(crate) fn uuid(out: &mut Out<'_>, d: &[u8], ext: &[u8]) -> Result<(), Msg> {
    let d = d.get(..16).ok_or(msg!("UUID shorter than 16 bytes"))?;
    const BE: [usize; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
    const LE: [usize; 16] = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15];
    let (idx, upper) = match ext.get(1) {
        Some(b'L') => (&LE, true),
        Some(b'l') => (&LE, false),
        Some(b'B') => (&BE, true),
        _ => (&BE, false),
    };
    for (i, &k) in idx.iter().enumerate() {
        hex2(out, d[k], upper);
        if matches!(i, 3 | 5 | 7 | 9) {
            out.push(b'-');
        }
    }
    Ok(())
}

/// Bit `i` of a bitmap stored as the recording's `unsigned long` words.
fn bit(d: &[u8], i: usize, env: &Env) -> bool {
    let ls = env.long_size;
    if ls == 0 {
        return false;
    }
    let word = read_uint(d, (i / (8 * ls)) * ls, ls, env.endian).unwrap_or(0);
    (word >> (i % (8 * ls))) & 1 != 0
}

/// `%*pb`: 32-bit chunks in hex from the most significant, comma-separated,
/// each zero-padded (bitmap_string()).
pub(crate) fn bitmap_hex(out: &mut Out<'_>, d: &[u8], nbits: usize, env: &Env) {
    let mut chunksz = nbits & 31;
    if chunksz == 0 {
        chunksz = 32;
    }
    let mut i = nbits.div_ceil(32) as isize * 32 - 32;
    let mut first = true;
    while i >= 0 {
        let mut val: u64 = 0;
        for b in 0..chunksz {
            if bit(d, i as usize + b, env) {
                val |= 1 << b;
            }
        }
        if !first {
            out.push(b',');
        }
        first = false;
        number(out, val, b'x', &Pad { flags: ZEROPAD, width: chunksz.div_ceil(4) as i32, prec: -1 });
        chunksz = 32;
        i -= 32;
    }
}

/// `%*pbl`: ranges like `0-3,8,10-11` (bitmap_list_string()).
pub(crate) fn bitmap_list(out: &mut Out<'_>, d: &[u8], nbits: usize, env: &Env) {
    let mut first = true;
    let mut i = 0;
    while i < nbits {
        if !bit(d, i, env) {
            i += 1;
            continue;
        }
        let start = i;
        while i + 1 < nbits && bit(d, i + 1, env) {
            i += 1;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        dec(out, start as u64);
        if i > start {
            out.push(b'-');
            dec(out, i as u64);
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::String;

    fn text(mut f: impl FnMut(&mut Out<'_>)) -> Vec<u8> {
        let mut v = Vec::new();
        append(&mut v, &mut f);
        v
    }

    fn num(v: i64, base: u64, signed: bool, flags: u8, w: i32, p: i32) -> String {
        let conv = match (base, signed) {
            (16, _) => b'x',
            (8, _) => b'o',
            (_, true) => b'd',
            _ => b'u',
        };
        String::from_utf8(text(|o| number(o, v as u64, conv, &Pad { flags, width: w, prec: p }))).unwrap()
    }

    #[test]
    fn numbers_follow_the_kernel() {
        assert_eq!(num(-42, 10, true, 0, 6, -1), "   -42");
        assert_eq!(num(-42, 10, true, ZEROPAD, 6, -1), "-00042");
        assert_eq!(num(42, 10, true, LEFT, 5, -1), "42   ");
        assert_eq!(num(42, 10, true, PLUS, -1, -1), "+42");
        assert_eq!(num(42, 10, true, SPACE, -1, -1), " 42");
        assert_eq!(num(0, 16, false, SPECIAL, -1, -1), "0x0");
        assert_eq!(num(0, 8, false, SPECIAL, -1, -1), "0");
        assert_eq!(num(8, 8, false, SPECIAL, -1, -1), "010");
        assert_eq!(num(255, 16, false, SPECIAL | ZEROPAD, 8, -1), "0x0000ff");
        assert_eq!(num(0, 10, false, 0, -1, 0), "0");
        assert_eq!(num(5, 10, false, 0, 6, 3), "   005");
        assert_eq!(num(5, 10, false, ZEROPAD, 6, 3), "000005");
        assert_eq!(num(100, 10, false, 0, 2, -1), "100");
        for v in [0u64, 9, 10, 99, 100, 101, 999, 1000, 12_345, 99_999_999, u32::MAX as u64, 1 << 32, u64::MAX] {
            assert_eq!(num(v as i64, 10, false, 0, -1, -1), alloc::format!("{v}"));
        }
        let tail = |flags, width, prec| {
            text(|o| {
                o.extend_from_slice(b"<abc\0d");
                pad_tail(o, 1, &Pad { flags, width, prec });
            })
        };
        assert_eq!(tail(0, 6, -1), b"<   abc");
        assert_eq!(tail(LEFT, 6, 2), b"<ab    ");
        assert_eq!(tail(0, 2, -1), b"<abc");
    }

    #[test]
    fn bare_number_printers_print_as_number() {
        let mut vals = alloc::vec![0u64, 1, 9, 10, 99, 100, 255, 256, 4095, 4096, u32::MAX as u64, 1 << 32, u64::MAX, i64::MIN as u64];
        for k in 0..64 {
            vals.push(1 << k);
            vals.push((1u64 << k) - 1);
            vals.push(10u64.saturating_pow(k / 3).saturating_add(k as u64));
        }
        // Room for all, and too little room (a print that does not fit
        // counts its bytes all the same).
        let short = |f: &dyn Fn(&mut Out<'_>)| {
            let mut b = [0u8; 5];
            let mut o = Out::on(&mut b);
            f(&mut o);
            let n = o.len();
            (n, if n <= 5 { b[..n].to_vec() } else { Vec::new() })
        };
        for v in vals {
            for (conv, print) in [(b'u', IntPrint::Dec), (b'd', IntPrint::SDec), (b'x', IntPrint::Hex)] {
                for size in [1, 2, 4, 8] {
                    let want = text(|o| int_conv(o, v, size, conv, &NO_PAD));
                    assert_eq!(text(|o| print.print(o, v, size, &NO_PAD)), want, "{v} {size} {}", conv as char);
                    assert_eq!(short(&|o| print.print(o, v, size, &NO_PAD)), short(&|o| int_conv(o, v, size, conv, &NO_PAD)));
                }
            }
            for ls in [4, 8] {
                let p = v & if ls == 4 { 0xffff_ffff } else { u64::MAX };
                let want = text(|o| number(o, p, b'x', &Pad { flags: ZEROPAD, width: 2 * ls as i32, prec: -1 }));
                assert_eq!(text(|o| IntPrint::Hex0(2 * ls as u8).print(o, v, ls, &NO_PAD)), want);
                assert_eq!(text(|o| pointer_string(o, p, &NO_PAD, ls)), want);
            }
            assert_eq!(text(|o| hex0x(o, v)), alloc::format!("0x{v:x}").into_bytes());
        }
    }

    /// `%pS` & co stop at a NUL byte of a name or a module as the
    /// kernel's string() does, with a width or without.
    #[test]
    fn symbols_stop_at_nul() {
        let k = Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff81000100 T plain\nffffffff81000300 T _etext\nffffffffc0000000 t a\0b\t[m]\nffffffffc0000100 t c\t[m\0n]\nffffffffc0000200 t d\t[m]\n");
        let sym = |a, first, width| text(|o| symbol_conv(o, Some(&k), a, first, &Pad { flags: 0, width, prec: -1 }));
        assert_eq!(sym(0xffffffff81000104, b'S', -1), b"plain+0x4/0x200");
        assert_eq!(sym(0xffffffff81000104, b's', 7), b"  plain");
        assert_eq!(sym(0xffffffffc0000004, b'S', -1), b"a");
        assert_eq!(sym(0xffffffffc0000100, b's', -1), b"c [m");
        assert_eq!(sym(0xffffffffc0000100, b's', 6), b"  c [m");
    }

    #[test]
    fn hex_digits_of_every_length() {
        for (v, s) in [(0, "0"), (9, "9"), (0xa, "a"), (0x10, "10"), (0x9fa0_0000, "9fa00000"), (0x1_0000_0000, "100000000")] {
            assert_eq!(num(v, 16, false, 0, -1, -1), s);
        }
        assert_eq!(num(-1, 16, false, 0, -1, -1), "ffffffffffffffff");
        assert_eq!(num(0xffff_8880_0abc_def0u64 as i64, 16, false, 0, -1, -1), "ffff88800abcdef0");
        assert_eq!(num(0x0123_4567_89ab_cdef, 16, true, 0, -1, -1), "123456789abcdef");
        assert_eq!(text(|o| number(o, 0xfedc_ba98_7654_3210, b'X', &Pad { flags: SPECIAL, ..NO_PAD })), b"0XFEDCBA9876543210");
    }

    #[test]
    fn format_pieces() {
        let p = parse_format(b"a=%-08.3llx %% %*ph %pISpc: %s").unwrap();
        assert_eq!(p[0], Piece::Lit(0, 2));
        assert_eq!(p[3], Piece::Lit(13, 14));
        let c: Vec<Spec> = p.iter().filter_map(|x| if let Piece::Conv(s) = x { Some(*s) } else { None }).collect();
        assert_eq!(c.len(), 4);
        assert_eq!((c[0].flags, c[0].width, c[0].prec, c[0].qual, c[0].conv), (LEFT | ZEROPAD, Num::N(8), Num::N(3), b'L', b'x'));
        assert_eq!((c[1].width, c[1].conv, c[1].ext), (Num::Star, b'p', (18, 1)));
        assert_eq!(c[2].ext, (22, 4));
        assert_eq!(c[3].conv, b's');
        assert!(parse_format(b"%k").is_err());
        assert!(parse_format(b"%").is_err());
    }

    #[test]
    fn ip_and_uuid_and_mac() {
        let mut a = [0u8; 16];
        a[0] = 0x20;
        a[1] = 0x01;
        a[2] = 0x0d;
        a[3] = 0xb8;
        a[15] = 1;
        
        assert_eq!(text(|o| ip6(o, &a, true, true)), b"2001:db8::1");
        assert_eq!(text(|o| ip6(o, &[0; 16], true, true)), b"::");
        let mut m = [0u8; 16];
        m[10] = 0xff;
        m[11] = 0xff;
        m[12..].copy_from_slice(&[10, 0, 0, 1]);
        
        assert_eq!(text(|o| ip6(o, &m, true, true)), b"::ffff:10.0.0.1");
        
        assert_eq!(text(|o| ip6(o, &a, true, false)), b"2001:0db8:0000:0000:0000:0000:0000:0001");
        
        assert_eq!(text(|o| ip6(o, &a, false, false)), b"20010db8000000000000000000000001");
        
        assert_eq!(text(|o| ip4(o, &[192, 168, 0, 7], true)), b"192.168.000.007");
        let u: Vec<u8> = (0u8..16).collect();
        
        assert_eq!(text(|o| uuid(o, &u, b"U").unwrap()), b"00010203-0405-0607-0809-0a0b0c0d0e0f");
        
        assert_eq!(text(|o| uuid(o, &u, b"UL").unwrap()), b"03020100-0504-0706-0809-0A0B0C0D0E0F");
        
        assert_eq!(text(|o| mac(o, &[0, 0x1b, 0x21, 0xaa, 0xbb, 0xcc], b"M").unwrap()), b"00:1b:21:aa:bb:cc");
        
        assert_eq!(text(|o| mac(o, &[0, 0x1b, 0x21, 0xaa, 0xbb, 0xcc], b"m").unwrap()), b"001b21aabbcc");
        
        assert_eq!(text(|o| mac(o, &[0, 0x1b, 0x21, 0xaa, 0xbb, 0xcc], b"MR").unwrap()), b"cc:bb:aa:21:1b:00");
        assert!(text(|o| assert!(mac(o, &[1, 2], b"M").is_err())).is_empty());
    }

    #[test]
    fn bitmaps() {
        let env = Env::new(crate::cursor::Endian::Little, 8);
        let mut d = [0u8; 16];
        d[0] = 0b1011_0111;
        d[8] = 1; // bit 64
        
        assert_eq!(text(|o| bitmap_list(o, &d, 128, &env)), b"0-2,4-5,7,64");
        
        assert_eq!(text(|o| bitmap_hex(o, &d, 72, &env)), b"01,00000000,000000b7");
        
        assert_eq!(text(|o| bitmap_hex(o, &d, 8, &env)), b"b7");
        
        assert_eq!(text(|o| hex_string(o, &[1, 0xab, 3], 3, b"h")), b"01 ab 03");
        
        assert_eq!(text(|o| hex_string(o, &[1, 0xab, 3], 2, b"hC")), b"01:ab");
        
        assert_eq!(text(|o| hex_string(o, &[1, 0xab, 3], -1, b"hN")), b"01");
    }
}
