//! One CPU's raw pages from a trace.dat, read one page (or one compressed
//! chunk) at a time: memory is a page, or a chunk for zstd files, however
//! large the file.

use super::{read_exact, CpuData, Error, ReadAt, Reason};
use crate::cursor::Endian;
use alloc::vec::Vec;

/// Largest decompressed chunk we accept (trace-cmd writes ~10 pages).
const MAX_CHUNK: u32 = 64 << 20;

pub struct CpuPages<'f> {
    file: &'f dyn ReadAt,
    endian: Endian,
    page_size: usize,
    pub cpu: CpuData,
    /// Next file offset to read (a page, or a chunk header).
    off: u64,
    end: u64,
    compressed: bool,
    /// Compressed: chunks left (None until the count is read).
    chunks_left: Option<u32>,
    /// Compressed: the current decompressed chunk and the read position in it.
    chunk: Vec<u8>,
    chunk_pos: usize,
    /// Uncompressed: the page buffer.
    page: Vec<u8>,
    done: bool,
}

impl<'f> CpuPages<'f> {
    pub fn new(file: &'f dyn ReadAt, endian: Endian, page_size: u32, compressed: bool, cpu: CpuData) -> CpuPages<'f> {
        CpuPages {
            file,
            endian,
            page_size: page_size as usize,
            cpu,
            off: cpu.offset,
            end: cpu.offset.saturating_add(cpu.size),
            compressed,
            chunks_left: None,
            chunk: Vec::new(),
            chunk_pos: 0,
            page: Vec::new(),
            done: cpu.size == 0 || page_size == 0,
        }
    }

    /// The sub-buffer size of this stream.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The next page, or None at the end of this CPU's data. After an error
    /// (truncated file, corrupt chunk) the stream ends.
    pub fn next_page(&mut self) -> Option<Result<&[u8], Error>> {
        if self.done {
            return None;
        }
        let r = if self.compressed { self.next_compressed() } else { self.next_plain() };
        match r {
            Ok(true) => {}
            Ok(false) => {
                self.done = true;
                return None;
            }
            Err(e) => {
                self.done = true;
                return Some(Err(e));
            }
        }
        if self.compressed {
            let start = self.chunk_pos - self.page_size;
            Some(Ok(&self.chunk[start..self.chunk_pos]))
        } else {
            Some(Ok(&self.page))
        }
    }

    fn next_plain(&mut self) -> Result<bool, Error> {
        if self.off >= self.end {
            return Ok(false);
        }
        // A short tail (size not a page multiple) is read as a short page:
        // the page header's commit says how much of it matters.
        let n = (self.end - self.off).min(self.page_size as u64) as usize;
        self.page.resize(n, 0);
        read_exact(self.file, "cpu data", self.off, &mut self.page)?;
        self.off += n as u64;
        Ok(true)
    }

    fn next_compressed(&mut self) -> Result<bool, Error> {
        loop {
            if self.chunk_pos + self.page_size <= self.chunk.len() {
                self.chunk_pos += self.page_size;
                return Ok(true);
            }
            let left = match self.chunks_left {
                Some(n) => n,
                None => {
                    let mut b = [0u8; 4];
                    read_exact(self.file, "cpu data", self.off, &mut b)?;
                    self.off += 4;
                    self.endian.u32(b)
                }
            };
            if left == 0 {
                self.chunks_left = Some(0);
                return Ok(false);
            }
            self.chunks_left = Some(left - 1);
            let at = self.off;
            let mut h = [0u8; 8];
            read_exact(self.file, "cpu data chunk", at, &mut h)?;
            let zsize = self.endian.u32([h[0], h[1], h[2], h[3]]);
            let size = self.endian.u32([h[4], h[5], h[6], h[7]]);
            if size > MAX_CHUNK || zsize > MAX_CHUNK {
                return Err(Error::new("cpu data chunk", at, Reason::Corrupt("implausible chunk size")));
            }
            let mut z = alloc::vec![0u8; zsize as usize];
            read_exact(self.file, "cpu data chunk", at + 8, &mut z)?;
            self.off = at + 8 + zsize as u64;
            self.chunk = super::decompress("zstd", "cpu data chunk", at, &z, size as usize)?;
            // Chunks hold whole pages (sizes are page-aligned); drop a ragged tail.
            let whole = self.chunk.len() / self.page_size * self.page_size;
            self.chunk.truncate(whole);
            self.chunk_pos = 0;
        }
    }
}
