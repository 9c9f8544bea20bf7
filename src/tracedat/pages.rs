//! One CPU's raw pages from a trace.dat, read one page (or one compressed
//! chunk) at a time: memory is a page, or a chunk for zstd files, however
//! large the file.

use super::{read_exact, CpuData, Error, ReadAt, Reason};
use crate::cursor::Endian;
use alloc::vec::Vec;

/// Largest decompressed chunk we accept (trace-cmd writes ~10 pages).
const MAX_CHUNK: u32 = 16 << 20;

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
    /// Compressed: the current chunk's compressed bytes (reused).
    z: Vec<u8>,
    /// The buffer `next_page` lends out.
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
            // trace-cmd's size for compressed data leaves out the 4-byte chunk count.
            end: cpu.offset.saturating_add(cpu.size).saturating_add(if compressed { 4 } else { 0 }),
            compressed,
            chunks_left: None,
            chunk: Vec::new(),
            chunk_pos: 0,
            z: Vec::new(),
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
        let mut page = core::mem::take(&mut self.page);
        let r = self.next_into(&mut page);
        self.page = page;
        match r {
            None => None,
            Some(Err(e)) => Some(Err(e)),
            Some(Ok(())) => Some(Ok(&self.page)),
        }
    }

    /// Like `next_page`, into the caller's buffer (no copy for plain data).
    pub fn next_into(&mut self, page: &mut Vec<u8>) -> Option<Result<(), Error>> {
        if self.done {
            return None;
        }
        let r = if self.compressed { self.next_compressed() } else { self.next_plain(page) };
        match r {
            Ok(true) => {
                if self.compressed {
                    page.clear();
                    page.extend_from_slice(&self.chunk[self.chunk_pos - self.page_size..self.chunk_pos]);
                }
                Some(Ok(()))
            }
            Ok(false) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn next_plain(&mut self, page: &mut Vec<u8>) -> Result<bool, Error> {
        if self.off >= self.end {
            return Ok(false);
        }
        // A short tail (size not a page multiple) is read as a short page:
        // the page header's commit says how much of it matters.
        let n = (self.end - self.off).min(self.page_size as u64) as usize;
        if n > 65536 {
            // A huge sub-buffer size from a corrupt header: probe before allocating.
            read_exact(self.file, "cpu data", self.off + n as u64 - 1, &mut [0u8; 1])?;
        }
        page.resize(n, 0);
        read_exact(self.file, "cpu data", self.off, page)?;
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
            // Sizes must fit the limits and this CPU's data (a recovered
            // buffer's end is unknown: u64::MAX).
            if size > MAX_CHUNK || zsize > MAX_CHUNK || at + 8 + zsize as u64 > self.end {
                return Err(Error::new("cpu data chunk", at, Reason::Corrupt("implausible chunk size")));
            }
            self.z.resize(zsize as usize, 0);
            read_exact(self.file, "cpu data chunk", at + 8, &mut self.z)?;
            self.off = at + 8 + zsize as u64;
            super::decompress_into("zstd", "cpu data chunk", at, &self.z, size as usize, &mut self.chunk)?;
            // Chunks hold whole pages (sizes are page-aligned); drop a ragged tail.
            let whole = self.chunk.len() / self.page_size * self.page_size;
            self.chunk.truncate(whole);
            self.chunk_pos = 0;
        }
    }
}
