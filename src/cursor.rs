//! The one bounds-checked, endian-aware way every decoder reads an integer
//! out of bytes: [`read_uint`], at an offset, in the recording's [`Endian`]
//! byte order. Record fields (format::FieldAt), ring page headers and
//! records (ring), trace.dat's headers and sections (tracedat, whose
//! reader fetches the bytes through `ReadAt` and decodes them here) and
//! kallsyms' BTF header (ksyms) all go through it. Reads never panic:
//! running off the end is an [`Eof`] carrying the offset, so a corrupt page
//! or file turns into a report (or a zero) instead of a crash.
//!
//! The decoders read at offsets that the formats and headers give, rarely
//! in sequence, so there is no cursor type: where a parser walks bytes in
//! order (tracedat's section reader) it keeps its own position and error
//! state.

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

/// The unsigned integer of `size` bytes (1, 2, 4 or 8) at `off`: every
/// field of every record comes through here, so it loads directly.
///
/// Always inline, around [`uint`]: most callers want the value or a zero,
/// and an `Option<u64>` comes back in registers where this `Result` went
/// through memory.
#[inline(always)]
pub fn read_uint(data: &[u8], off: usize, size: usize, endian: Endian) -> Result<u64, Eof> {
    match uint(data, off, size, endian) {
        Some(v) => Ok(v),
        None => Err(Eof { at: off, want: size, len: data.len() }),
    }
}

/// [`read_uint`] without the where and why of a failure.
pub fn uint(data: &[u8], off: usize, size: usize, endian: Endian) -> Option<u64> {
    let b = match off.checked_add(size) {
        Some(end) if matches!(size, 1 | 2 | 4 | 8) => data.get(off..end)?,
        _ => return None,
    };
    Some(if let Ok(a) = <[u8; 8]>::try_from(b) {
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
        let err = read_uint(&d, 7, 4, Endian::Little).unwrap_err();
        assert_eq!((err.at, err.want, err.len), (7, 4, 10));
        assert!(read_uint(&d, usize::MAX, 1, Endian::Little).is_err());
    }
}
