//! One CPU's raw pages from a trace.dat, read one page (or one compressed
//! chunk) at a time: memory is a page, or a chunk for zstd files, however
//! large the file.
//!
//! The streams of one file share a budget ([`Held`]) for what they hold
//! between calls — read-ahead blocks and decompressed chunks — so that the
//! memory of a merge over all CPUs does not grow with the number of CPUs a
//! file claims: past the budget, plain streams read one page at a time and
//! a compressed stream that would need more is an error.

use super::{read_full, BoxResult, CpuData, Error, ReadAt, Reason};
use crate::cursor::Endian;
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::Cell;

/// Largest decompressed chunk we accept, in sub-buffers: trace-cmd
/// compresses 10 at a time; this leaves room for other writers while a
/// chunk that claims megabytes from a few bytes fails at its header.
#[cfg(feature = "zstd")]
const MAX_CHUNK_PAGES: u32 = 64;

/// Bytes of plain pages read at once. (Read, not mapped: reading the pages
/// in place through mmap windows was measured slower. They come from memory
/// once either way, and the kernel's copy does that faster than setting up
/// and tearing down 4 KiB mappings and loading through them.)
const READ_AHEAD: usize = 64 << 10;

/// What the page streams of one file may hold at once (read-ahead and
/// decompressed chunks): a two-CPU zstd file holds two 40 KiB chunks; 32 MiB
/// fits hundreds of CPUs of trace-cmd's chunks and keeps a hostile file's
/// thousands of CPUs from holding a chunk each.
pub const HELD_BUDGET: u64 = 32 << 20;

/// The bytes the page streams of one file hold between calls (shared).
pub type Held = Rc<Cell<u64>>;

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
    /// The declared end when the file ends before it (a cut file): whole
    /// pages before the cut come out, then a "file truncated" error.
    cut: Option<u64>,
    /// The budget shared with the file's other streams, and our part of it.
    held: Held,
    mine: u64,
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
            cut: None,
            held: Held::default(),
            mine: 0,
        }
    }

    /// Check the data against the file's real size and share the budget of
    /// the file's other streams: data that runs past the end of the file
    /// (a cut recording) is read up to its last whole page, then reported
    /// truncated; nothing is allocated for bytes the file does not have.
    pub fn bound(&mut self, file_size: u64, held: Held) {
        self.held = held;
        if self.end > file_size && !self.done {
            self.cut = Some(self.end);
            let mut left = file_size.saturating_sub(self.off);
            if !self.compressed {
                left -= left % self.page_size as u64;
            }
            self.end = self.off + left;
        }
    }

    /// Hold `want` bytes from the shared budget instead of what we held;
    /// false (holding nothing) when the budget has no room.
    fn hold(&mut self, want: u64) -> bool {
        let others = self.held.get().saturating_sub(self.mine);
        let ok = others.saturating_add(want) <= HELD_BUDGET;
        self.mine = if ok { want } else { 0 };
        self.held.set(others + self.mine);
        ok
    }

    /// The end of the stream: give back what it held.
    fn finish(&mut self) {
        self.done = true;
        self.hold(0);
        self.ra = Vec::new();
        #[cfg(feature = "zstd")]
        {
            self.chunk = Vec::new();
            self.z = Vec::new();
        }
    }

    /// The error at the end of a cut stream.
    #[cold]
    fn truncated(&self, declared_end: u64) -> Box<Error> {
        Box::new(Error::new("cpu data", self.end, Reason::Truncated { at: self.end, want: (declared_end - self.end).min(self.page_size as u64) }))
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
                self.finish();
                self.cut.map(|end| Err(self.truncated(end)))
            }
            Err(e) => {
                self.finish();
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
            let mut want = (self.end - self.off).min((pages * self.page_size) as u64).max(n as u64) as usize;
            // Past the budget one page at a time: the merge holds one per CPU anyway.
            if !self.hold(want as u64) {
                want = n;
            }
            // (At most one sub-buffer, 16 MiB at most, or READ_AHEAD, and
            // never past the file's real end.)
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
                    if self.off + 4 > self.end {
                        if let Some(end) = self.cut {
                            return Err(self.truncated(end));
                        }
                    }
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
            // buffer's end is the file's).
            let max = MAX_CHUNK_PAGES.saturating_mul(self.page_size as u32);
            let past = at + 8 + zsize as u64 > self.end;
            if let (true, Some(end)) = (past, self.cut) {
                return Err(self.truncated(end));
            }
            if size > max || past {
                return Err(super::bad("cpu data chunk", at, "implausible chunk size"));
            }
            if !self.hold(u64::from(size) + u64::from(zsize)) {
                return Err(super::bad("cpu data chunk", at, "too many CPUs hold decompressed chunks at once"));
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

impl Drop for CpuPages<'_> {
    fn drop(&mut self) {
        self.hold(0);
    }
}

/// The event types a buffer's records use, found by one pass over its
/// pages before decoding: a recording carries the formats of every event
/// it could have had (thousands with `-e all`), its records use a few
/// hundred, and only those need their fields and print fmt parsed and
/// kept. The same pass counts the records (the kernel-style header's
/// entry count).
pub struct Seen {
    /// One bit per event id (a fixed array: no bounds check per record).
    ids: Box<[u64; Seen::WORDS]>,
}

impl Default for Seen {
    fn default() -> Self {
        Seen { ids: Box::new([0; Seen::WORDS]) }
    }
}

impl Seen {
    const WORDS: usize = (u16::MAX as usize + 1) / 64;

    pub fn has(&self, id: u16) -> bool {
        self.ids[id as usize / 64] & 1 << (id % 64) != 0
    }

    /// Add the types of `cpus`' records; how many records they hold.
    /// Pages and records are walked as a merge walks them: a stream ends
    /// at its first error, a page at its first bad record.
    #[inline(never)]
    pub fn add(&mut self, cpus: Vec<CpuPages<'_>>, layout: &crate::ring::PageLayout) -> u64 {
        let mut records = 0;
        let ids = &mut self.ids;
        for mut c in cpus {
            while let Some(Ok(page)) = c.next_page() {
                let Ok(p) = crate::ring::Page::parse(layout, page) else { continue };
                p.cursor().each_type(layout, page, |id| {
                    records += 1;
                    ids[id as usize / 64] |= 1 << (id % 64);
                });
            }
        }
        records
    }
}
