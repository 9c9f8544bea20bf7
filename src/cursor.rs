//! One bounds-checked, endian-aware cursor over `&[u8]`, shared by every
//! decoder (ring pages, trace.dat sections, event fields). Reads never panic:
//! running off the end is an `Eof` error carrying the offset, so a corrupt
//! page or file turns into a report instead of a crash.

use core::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endian {
    Little,
    Big,
}

impl Endian {
    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }
    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }
    #[inline]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// Ran past the end of the data: `want` bytes at `at`, only `len` exist.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eof {
    pub at: usize,
    pub want: usize,
    pub len: usize,
}

impl fmt::Display for Eof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "truncated: need {} bytes at offset {}, have {}", self.want, self.at, self.len)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    endian: Endian,
}

impl<'a> Cursor<'a> {
    pub fn new(data: &'a [u8], endian: Endian) -> Self {
        Cursor { data, pos: 0, endian }
    }
    pub fn at(data: &'a [u8], pos: usize, endian: Endian) -> Self {
        Cursor { data, pos, endian }
    }
    #[inline]
    pub fn pos(&self) -> usize {
        self.pos
    }
    #[inline]
    pub fn endian(&self) -> Endian {
        self.endian
    }
    #[inline]
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
    #[inline]
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    pub fn seek(&mut self, pos: usize) -> Result<(), Eof> {
        if pos > self.data.len() {
            return Err(Eof { at: pos, want: 0, len: self.data.len() });
        }
        self.pos = pos;
        Ok(())
    }
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Eof> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end {
            Some(end) => {
                let s = &self.data[self.pos..end];
                self.pos = end;
                Ok(s)
            }
            None => Err(Eof { at: self.pos, want: n, len: self.data.len() }),
        }
    }
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<(), Eof> {
        self.bytes(n).map(|_| ())
    }
    #[inline]
    fn arr<const N: usize>(&mut self) -> Result<[u8; N], Eof> {
        let b = self.bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(b);
        Ok(a)
    }
    #[inline]
    pub fn u8(&mut self) -> Result<u8, Eof> {
        Ok(self.arr::<1>()?[0])
    }
    #[inline]
    pub fn u16(&mut self) -> Result<u16, Eof> {
        let a = self.arr()?;
        Ok(self.endian.u16(a))
    }
    #[inline]
    pub fn u32(&mut self) -> Result<u32, Eof> {
        let a = self.arr()?;
        Ok(self.endian.u32(a))
    }
    #[inline]
    pub fn u64(&mut self) -> Result<u64, Eof> {
        let a = self.arr()?;
        Ok(self.endian.u64(a))
    }
    /// An unsigned integer of `size` bytes (1, 2, 4 or 8): C `long` and
    /// friends whose width the recording, not the host, decides.
    pub fn uint(&mut self, size: usize) -> Result<u64, Eof> {
        match size {
            1 => self.u8().map(u64::from),
            2 => self.u16().map(u64::from),
            4 => self.u32().map(u64::from),
            8 => self.u64(),
            _ => Err(Eof { at: self.pos, want: size, len: self.data.len() }),
        }
    }
    /// A NUL-terminated string (the NUL is consumed, not returned).
    pub fn cstr(&mut self) -> Result<&'a [u8], Eof> {
        let rest = &self.data[self.pos.min(self.data.len())..];
        match rest.iter().position(|&b| b == 0) {
            Some(n) => {
                let s = &rest[..n];
                self.pos += n + 1;
                Ok(s)
            }
            None => Err(Eof { at: self.pos, want: rest.len() + 1, len: self.data.len() }),
        }
    }
}

/// Read an unsigned integer of `size` bytes at `off` without a cursor.
///
/// Direct loads rather than a Cursor: every field of every record comes
/// through here.
pub fn read_uint(data: &[u8], off: usize, size: usize, endian: Endian) -> Result<u64, Eof> {
    let err = Eof { at: off, want: size, len: data.len() };
    let b = match off.checked_add(size) {
        Some(end) if matches!(size, 1 | 2 | 4 | 8) => data.get(off..end).ok_or(err)?,
        _ => return Err(err),
    };
    Ok(if let Ok(a) = <[u8; 8]>::try_from(b) {
        endian.u64(a)
    } else if let Ok(a) = <[u8; 4]>::try_from(b) {
        endian.u32(a) as u64
    } else if let Ok(a) = <[u8; 2]>::try_from(b) {
        endian.u16(a) as u64
    } else {
        b.first().copied().unwrap_or(0) as u64
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_endians_and_stops_at_end() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 0x41, 0];
        let mut c = Cursor::new(&d, Endian::Little);
        assert_eq!(c.u16().unwrap(), 0x0201);
        let mut b = Cursor::new(&d, Endian::Big);
        assert_eq!(b.u32().unwrap(), 0x01020304);
        assert_eq!(read_uint(&d, 0, 8, Endian::Big).unwrap(), 0x0102030405060708);
        // Each size, with and without 8 bytes after the offset.
        for off in 0..d.len() {
            for size in [1usize, 2, 4, 8] {
                for e in [Endian::Little, Endian::Big] {
                    let want = d.get(off..off + size).map(|b| {
                        let mut v = 0u64;
                        for i in 0..size {
                            let k = if e == Endian::Big { i } else { size - 1 - i };
                            v = (v << 8) | b[k] as u64;
                        }
                        v
                    });
                    assert_eq!(read_uint(&d, off, size, e).ok(), want, "{} {} {:?}", off, size, e);
                }
            }
        }
        assert!(read_uint(&d, 0, 3, Endian::Little).is_err());
        let mut e = Cursor::at(&d, 8, Endian::Little);
        assert_eq!(e.cstr().unwrap(), b"A");
        assert!(e.u8().is_err());
        let mut f = Cursor::at(&d, 7, Endian::Little);
        let err = f.u32().unwrap_err();
        assert_eq!((err.at, err.want, err.len), (7, 4, 10));
        assert!(Cursor::at(&d, usize::MAX, Endian::Little).u8().is_err());
    }
}
