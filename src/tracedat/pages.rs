//! One CPU's raw pages from a trace.dat, read one page (or one compressed
//! chunk) at a time: memory is a page, or a chunk for zstd files, however
//! large the file.

use super::{read_full, CpuData, Error, ReadAt, BoxResult};
use crate::cursor::Endian;
use alloc::vec::Vec;

/// Largest decompressed chunk we accept (trace-cmd writes ~10 pages).
#[cfg(feature = "zstd")]
const MAX_CHUNK: u32 = 16 << 20;

/// Bytes of plain pages read at once.
const READ_AHEAD: usize = 64 << 10;

// Without zstd the chunk fields are only set, never read.
#[cfg_attr(not(feature = "zstd"), allow(dead_code))]
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
    /// Plain: the pages read ahead, from file offset `ra_off`; `ra_fail`
    /// once a read-ahead failed (then one page per read).
    ra: Vec<u8>,
    ra_off: u64,
    ra_fail: bool,
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
            ra: Vec::new(),
            ra_off: 0,
            ra_fail: false,
            done: cpu.size == 0 || page_size == 0,
        }
    }

    /// The sub-buffer size of this stream.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The next page, or None at the end of this CPU's data. After an error
    /// (truncated file, corrupt chunk) the stream ends. The page is lent
    /// from the read-ahead block or the decompressed chunk: no copy.
    pub fn next_page(&mut self) -> Option<Result<&[u8], Error>> {
        match self.advance()? {
            Ok(r) => Some(Ok(self.bytes(r))),
            Err(e) => Some(Err(*e)),
        }
    }

    /// Like `next_page`, into the caller's buffer.
    pub fn next_into(&mut self, page: &mut Vec<u8>) -> Option<Result<(), Error>> {
        match self.advance()? {
            Ok(r) => {
                page.clear();
                page.extend_from_slice(self.bytes(r));
                Some(Ok(()))
            }
            Err(e) => Some(Err(*e)),
        }
    }

    /// The page `advance` found.
    fn bytes(&self, r: core::ops::Range<usize>) -> &[u8] {
        let b = if self.compressed { &self.chunk } else { &self.ra };
        b.get(r).unwrap_or(&[])
    }

    /// Step to the next page: its range in `chunk` (compressed) or `ra`.
    fn advance(&mut self) -> Option<BoxResult<core::ops::Range<usize>>> {
        if self.done {
            return None;
        }
        let r = if self.compressed { self.next_compressed().map(|ok| ok.then(|| self.chunk_pos - self.page_size..self.chunk_pos)) } else { self.next_plain() };
        match r {
            Ok(Some(r)) => Some(Ok(r)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    /// The next plain page, read ahead with the ones after it: one pread
    /// for READ_AHEAD bytes instead of one per page (a system call per
    /// 4 KiB was a tenth of decoding).
    fn next_plain(&mut self) -> BoxResult<Option<core::ops::Range<usize>>> {
        if self.off >= self.end {
            return Ok(None);
        }
        // A short tail (size not a page multiple) is read as a short page:
        // the page header's commit says how much of it matters.
        let n = (self.end - self.off).min(self.page_size as u64) as usize;
        let in_ra = self.off >= self.ra_off && self.off + n as u64 <= self.ra_off + self.ra.len() as u64;
        if !in_ra {
            if n > 65536 {
                // A huge sub-buffer size from a corrupt header: probe before allocating.
                read_full(self.file, "cpu data", self.off + n as u64 - 1, &mut [0u8; 1])?;
            }
            let pages = if self.ra_fail { 1 } else { (READ_AHEAD / self.page_size).max(1) };
            let want = (self.end - self.off).min((pages * self.page_size) as u64).max(n as u64) as usize;
            self.ra_off = self.off;
            self.ra.resize(want, 0);
            if let Err(e) = read_full(self.file, "cpu data", self.off, &mut self.ra) {
                if want == n {
                    return Err(e);
                }
                // Past the end of a short file (or of a recovered buffer
                // of unknown size): page by page from here, so that every
                // whole page still comes out and the error is this page's.
                self.ra_fail = true;
                self.ra.truncate(n);
                read_full(self.file, "cpu data", self.off, &mut self.ra)?;
            }
        }
        let s = (self.off - self.ra_off) as usize;
        self.off += n as u64;
        Ok(Some(s..s + n))
    }

    #[cfg(not(feature = "zstd"))]
    fn next_compressed(&mut self) -> BoxResult<bool> {
        // This build decodes no chunks: check_compression refuses (TraceDat
        // already refuses compressed buffers; this is for a caller's own).
        super::check_compression("zstd", "cpu data chunk", self.off)?;
        Ok(false)
    }

    #[cfg(feature = "zstd")]
    fn next_compressed(&mut self) -> BoxResult<bool> {
        loop {
            if self.chunk_pos + self.page_size <= self.chunk.len() {
                self.chunk_pos += self.page_size;
                return Ok(true);
            }
            let left = match self.chunks_left {
                Some(n) => n,
                None => {
                    let mut b = [0u8; 4];
                    read_full(self.file, "cpu data", self.off, &mut b)?;
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
            read_full(self.file, "cpu data chunk", at, &mut h)?;
            let zsize = self.endian.u32([h[0], h[1], h[2], h[3]]);
            let size = self.endian.u32([h[4], h[5], h[6], h[7]]);
            // Sizes must fit the limits and this CPU's data (a recovered
            // buffer's end is unknown: u64::MAX).
            if size > MAX_CHUNK || zsize > MAX_CHUNK || at + 8 + zsize as u64 > self.end {
                return Err(super::bad("cpu data chunk", at, "implausible chunk size"));
            }
            self.z.resize(zsize as usize, 0);
            read_full(self.file, "cpu data chunk", at + 8, &mut self.z)?;
            self.off = at + 8 + zsize as u64;
            super::decompress_into("zstd", "cpu data chunk", at, &self.z, size as usize, &mut self.chunk)?;
            // Chunks hold whole pages (sizes are page-aligned); drop a ragged tail.
            let whole = self.chunk.len() / self.page_size * self.page_size;
            self.chunk.truncate(whole);
            self.chunk_pos = 0;
        }
    }
}
