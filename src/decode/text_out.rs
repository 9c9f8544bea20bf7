//! The printers' text into bytes: one buffer, drained in pipe-sized writes,
//! where the private-use raw byte escapes of `text::put_all` become the
//! bytes they stand for (see `text`'s module docs).
//!
//! The escapes are found in what is written, not announced by the
//! printers: a string that can hold one holds the byte 0xEF (every escape
//! is `EF 9E xx` or `EF 9F xx` in UTF-8), and a plain-text string is copied
//! as it is. Lines written straight into the buffer ([`TextSink::room`])
//! are taken as they are: their writer keeps escapes out of them.

use alloc::vec::Vec;
use core::fmt;

use super::TextSink;
use crate::sys::bytes;
use crate::sys::line::LINE_MAX;
use crate::text;

/// Where the bytes go (stdout for ftcat; a `Vec` in tests).
pub trait Drain {
    type Error: Copy;
    fn drain(&mut self, b: &[u8]) -> Result<(), Self::Error>;
}

impl Drain for Vec<u8> {
    type Error = core::convert::Infallible;
    fn drain(&mut self, b: &[u8]) -> Result<(), Self::Error> {
        self.extend_from_slice(b);
        Ok(())
    }
}

/// A buffered [`TextSink`] over a [`Drain`]. The buffer is initialised once,
/// whole, and `n` counts the bytes in use: short lines are formatted
/// straight into it ([`TextSink::room`]).
pub struct TextOut<D: Drain> {
    buf: Vec<u8>,
    n: usize,
    err: Option<D::Error>,
    drain: D,
}

/// The bytes gathered per write: a pipe's worth. More saves only a few
/// write calls, and a buffer that fits the caches keeps the stores into it
/// cheap; every byte of it is resident memory (ftcat's peak RSS counts).
const OUT_BUF: usize = 1 << 16;

/// The lead byte of every raw-byte escape.
const ESC_LEAD: u8 = 0xef;

impl<D: Drain> TextOut<D> {
    pub fn new(drain: D) -> Self {
        TextOut { buf: alloc::vec![0; OUT_BUF + 4096], n: 0, err: None, drain }
    }

    /// Drain the buffered bytes.
    pub fn flush_now(&mut self) {
        if self.err.is_none() && self.n > 0 {
            if let Err(e) = self.drain.drain(self.buf.get(..self.n).unwrap_or(&[])) {
                self.err = Some(e);
            }
        }
        self.n = 0;
    }

    /// Drain what is left; the first error a drain met, if any.
    pub fn finish(mut self) -> Result<D, D::Error> {
        self.flush_now();
        match self.err {
            Some(e) => Err(e),
            None => Ok(self.drain),
        }
    }

    /// Append bytes (flushing first when they do not fit).
    #[inline]
    fn put(&mut self, s: &[u8]) {
        let k = s.len();
        if self.buf.len() - self.n < k {
            self.flush_now();
            if self.buf.len() < k {
                if self.err.is_none() {
                    if let Err(e) = self.drain.drain(s) {
                        self.err = Some(e);
                    }
                }
                return;
            }
        }
        // (k bytes fit after n, checked above: n is 0 after a flush.)
        self.n += bytes::copy_short(bytes::tail(&mut self.buf, self.n), s);
    }

    /// Text that may hold escapes, char by char.
    #[cold]
    fn put_escaped(&mut self, s: &str) {
        for c in s.chars() {
            match text::raw_byte(c) {
                Some(x) => self.put(&[x]),
                None => {
                    let mut t = [0u8; 4];
                    self.put(c.encode_utf8(&mut t).as_bytes());
                }
            }
        }
    }
}

/// Does `b` hold [`ESC_LEAD`]?
fn has_escape(b: &[u8]) -> bool {
    b.contains(&ESC_LEAD)
}

impl<D: Drain> TextSink for TextOut<D> {
    fn flush(&mut self) {
        self.flush_now();
    }
    fn failed(&self) -> bool {
        self.err.is_some()
    }
    #[inline]
    fn room(&mut self) -> Option<&mut [u8]> {
        self.buf.get_mut(self.n..self.n + LINE_MAX)
    }
    #[inline]
    fn commit(&mut self, k: usize) {
        self.n += k;
        if self.n >= OUT_BUF {
            self.flush_now();
        }
    }
}

impl<D: Drain> fmt::Write for TextOut<D> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let (b, k) = (s.as_bytes(), s.len());
        // The escape check rides on the copy every string written needs
        // anyway, where a scan of its own (`memchr`) cost a tenth of
        // ftcat's time.
        if let Some(hit) = bytes::copy_scan(bytes::tail(&mut self.buf, self.n), b, ESC_LEAD) {
            if !hit {
                self.n += k;
            } else {
                // (The copy is dropped: n did not move.)
                self.put_escaped(s);
            }
        } else if !has_escape(b) {
            self.put(b);
        } else {
            self.put_escaped(s);
        }
        if self.n >= OUT_BUF {
            self.flush_now();
            if self.err.is_some() {
                return Err(fmt::Error);
            }
        }
        Ok(())
    }
    #[inline]
    fn write_char(&mut self, c: char) -> fmt::Result {
        if c.is_ascii() && self.n < self.buf.len() {
            self.buf[self.n] = c as u8;
            self.n += 1;
            return Ok(());
        }
        let mut t = [0u8; 4];
        self.write_str(c.encode_utf8(&mut t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    /// Bytes that are not UTF-8 (a Latin-1 comm, a 1-byte field's 0xff)
    /// come out as themselves, as the kernel writes them, whichever way
    /// they were written.
    #[test]
    fn raw_bytes_leave_as_bytes() {
        let b = b"a='\xff'(255) \xe9t\xc3\xa9 \xef\x9e\x80";
        let mut o = TextOut::new(Vec::new());
        text::put_all(&mut o, b).unwrap();
        assert_eq!(o.finish().unwrap(), b);
        // Escapes formatted into a string first, then written whole.
        let mut s = alloc::string::String::new();
        text::put_all(&mut s, b).unwrap();
        let mut o = TextOut::new(Vec::new());
        o.write_str(&s).unwrap();
        assert_eq!(o.finish().unwrap(), b);
        // Piece by piece, the escapes amid plain text.
        let mut o = TextOut::new(Vec::new());
        for piece in ["abc ", &s, " é", "0123456789abcdef0"] {
            o.write_str(piece).unwrap();
        }
        let mut want = b"abc ".to_vec();
        want.extend_from_slice(b);
        want.extend_from_slice(" é0123456789abcdef0".as_bytes());
        assert_eq!(o.finish().unwrap(), want);
    }
}
