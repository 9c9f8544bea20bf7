//! Ring-buffer pages as the kernel writes them to `trace_pipe_raw`: page
//! header (timestamp, commit with its flags), then records whose framing the
//! `header_event` describes. Zero-copy: records borrow from the page.
//!
//! The framing follows the kernel's kernel/trace/ring_buffer.c (the writer
//! and its readers) and libtraceevent's kbuffer-parse.c:
//!
//! ```text
//! page:   u64 time_stamp | local_t commit | data[commit & COMMIT_MASK] [| long lost]
//! record: u32 { type_len:5, time_delta:27 } | array[]
//!   type_len 1..=28  data is array[0 .. type_len]            (4 * type_len bytes)
//!   type_len 0       array[0] = length incl. itself, data follows
//!   29 padding       delta 0: the rest of the page; else array[0] = length
//!   30 time extend   delta += array[0] << 27
//!   31 time stamp    absolute: (array[0] << 27) | delta, top bits kept
//! ```
//! On big-endian machines the bitfield sits at the other end of the word:
//! type_len is the top 5 bits.
//!
//! Every access is bounds-checked: a corrupt page is an [`Error`] naming the
//! offset and what was wrong; the caller goes on with the next page.

use crate::cursor::{read_uint, Endian};
use core::fmt;

/// Low bits of `commit` that hold the data size; the top bits are flags.
pub const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Events were lost (overwritten or dropped) before this page.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// The number of lost events is stored as a long right after the data.
pub const MISSED_STORED: u64 = 1 << 30;

const TYPE_PADDING: u32 = 29;
const TYPE_TIME_EXTEND: u32 = 30;
const TYPE_TIME_STAMP: u32 = 31;
const TS_SHIFT: u32 = 27;
const DELTA_MASK: u32 = (1 << 27) - 1;
/// An absolute time stamp holds 59 bits; a clock with any of the top five set
/// has them restored from the running time (ring_buffer.c rb_fix_abs_ts).
const TS_MSB: u64 = 0xf8 << 56;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// `events/header_page` does not describe the fields we need.
    HeaderPage,
    /// `events/header_event` is not the 5/27-bit framing (pre-2.6.31 kernels).
    HeaderEvent,
    /// The page is shorter than its own header.
    ShortPage,
    /// The commit size runs past the end of the page.
    BadCommit,
    /// A record header or its length runs past the committed data.
    BadRecord,
    /// A type_len 0 record with a length smaller than its own length word.
    BadLength,
}

/// What was wrong and where (`offset` counts from the start of the page,
/// `value` is the offending number: a commit, a length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub offset: u32,
    pub value: u64,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            ErrorKind::HeaderPage => f.write_str("header_page: no usable timestamp/commit/data fields"),
            ErrorKind::HeaderEvent => f.write_str("header_event: unsupported record framing (want type_len:5 time_delta:27)"),
            ErrorKind::ShortPage => write!(f, "page of {} bytes is shorter than its header", self.value),
            ErrorKind::BadCommit => write!(f, "page commit size {} runs past the end of the page", self.value),
            ErrorKind::BadRecord => write!(f, "record at page offset {} runs past the committed data", self.offset),
            ErrorKind::BadLength => write!(f, "record at page offset {} has a bad length {}", self.offset, self.value),
        }
    }
}

/// How pages of one recording are laid out: everything comes from the
/// recording (`header_page`, `header_event`, the file's endianness and page
/// size), nothing from the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    pub endian: Endian,
    /// Offset and size of the u64 page time stamp (0 and 8 on every kernel).
    pub ts_offset: u16,
    /// Offset of `commit` and its size: the kernel's `long`, 4 or 8.
    pub commit_offset: u16,
    pub commit_size: u8,
    /// Where records start: 12 or 16 (data is aligned to the arch alignment).
    pub data_offset: u16,
    /// The sub-buffer size in bytes (4096 unless buffer_subbuf_size_kb was raised).
    pub page_size: u32,
    /// Whether a padding record's (discarded event's) delta advances time.
    /// The writer computes the next record's delta from the discarded
    /// event's time, and kbuffer (trace-cmd report) adds it; the kernel's
    /// own readers (`trace`, `trace_pipe`: rb_update_read_stamp and
    /// rb_update_iter_read_stamp return early on padding) do not. Default
    /// false, the kernel's text; set true for trace-cmd's timestamps.
    pub padding_delta: bool,
}

/// A `field: TYPE NAME; offset:N; size:N; signed:N;` line of a header file.
fn header_field(text: &str, name: &str) -> Option<(u32, u32)> {
    for line in text.lines() {
        let Some(rest) = line.trim_ascii().strip_prefix("field:") else { continue };
        let Some((decl, attrs)) = rest.split_once(';') else { continue };
        // The last word of the declaration, without a `[4080]`-style array suffix.
        let decl = decl.trim_ascii().as_bytes();
        let start = decl.iter().rposition(|&c| matches!(c, b' ' | b'\t' | b'*')).map_or(0, |i| i + 1);
        let word = &decl[start..];
        let word = &word[..word.iter().position(|&c| c == b'[').unwrap_or(word.len())];
        if word == name.as_bytes() {
            return Some((header_attr(attrs, "offset:")?, header_attr(attrs, "size:")?));
        }
    }
    None
}

/// The number of the last `KEY N` attribute in `a; b; ...`.
fn header_attr(attrs: &str, key: &str) -> Option<u32> {
    let mut v = None;
    for a in attrs.split(';') {
        if let Some(n) = a.trim_ascii().strip_prefix(key) {
            v = n.trim_ascii().parse().ok();
        }
    }
    v
}

/// `NAME : N bits` or `NAME : type == N` in header_event.
fn header_event_num(text: &str, name: &str) -> Option<u32> {
    for line in text.lines() {
        let line = line.trim_ascii();
        let Some(rest) = line.strip_prefix(name) else { continue };
        let rest = rest.trim_ascii_start();
        let Some(rest) = rest.strip_prefix(':') else { continue };
        let rest = rest.trim_ascii();
        let num = rest.strip_suffix("bits").or_else(|| rest.strip_prefix("type ==")).unwrap_or(rest);
        return num.trim_ascii().parse().ok();
    }
    None
}

impl PageLayout {
    /// The layout every kernel since 2.6.31 uses for a `long_size`-byte long.
    pub fn new(endian: Endian, long_size: u8, page_size: u32) -> PageLayout {
        let commit_size = if long_size == 4 { 4 } else { 8 };
        PageLayout {
            endian,
            ts_offset: 0,
            commit_offset: 8,
            commit_size,
            data_offset: 8 + commit_size as u16,
            page_size,
            padding_delta: false,
        }
    }

    /// From the `events/header_page` and `events/header_event` texts. A
    /// `page_size` of 0 takes the size from header_page's `data` field.
    pub fn parse(header_page: &str, header_event: &str, endian: Endian, page_size: u32) -> Result<PageLayout, Error> {
        let bad_page = Error { kind: ErrorKind::HeaderPage, offset: 0, value: 0 };
        let (ts_off, ts_size) = header_field(header_page, "timestamp").ok_or(bad_page)?;
        let (c_off, c_size) = header_field(header_page, "commit").ok_or(bad_page)?;
        if ts_size != 8 || !(c_size == 4 || c_size == 8) || ts_off > 64 || c_off > 64 {
            return Err(bad_page);
        }
        let (d_off, d_size) = match header_field(header_page, "data") {
            Some(d) => d,
            None => (c_off + c_size, 0),
        };
        if d_off < c_off + c_size || d_off > 64 {
            return Err(bad_page);
        }
        let page_size = if page_size != 0 { page_size } else { d_off + d_size };
        if page_size <= d_off {
            return Err(bad_page);
        }
        // The framing itself is fixed in the kernel; refuse anything else
        // (the 2.6.30 `type:2 len:3` format) rather than misread it.
        let bad_event = Error { kind: ErrorKind::HeaderEvent, offset: 0, value: 0 };
        if !header_event.trim_ascii().is_empty() {
            let ok = header_event_num(header_event, "type_len") == Some(5)
                && header_event_num(header_event, "time_delta") == Some(27)
                && header_event_num(header_event, "padding").is_none_or(|v| v == TYPE_PADDING)
                && header_event_num(header_event, "time_extend").is_none_or(|v| v == TYPE_TIME_EXTEND)
                && header_event_num(header_event, "time_stamp").is_none_or(|v| v == TYPE_TIME_STAMP);
            if !ok {
                return Err(bad_event);
            }
        }
        Ok(PageLayout {
            endian,
            ts_offset: ts_off as u16,
            commit_offset: c_off as u16,
            commit_size: c_size as u8,
            data_offset: d_off as u16,
            page_size,
            padding_delta: false,
        })
    }
}

/// One page's header, with its committed data.
#[derive(Clone, Copy, Debug)]
pub struct Page<'a> {
    /// Time stamp of the page: the first record's time before its delta.
    pub ts: u64,
    /// The raw commit word (size and flags).
    pub commit: u64,
    /// Events were lost before this page (the `[LOST EVENTS]` marker).
    pub missed: bool,
    /// How many, when the kernel had room to store the count.
    pub lost: Option<u64>,
    /// The whole page, header included (record offsets count from here).
    pub bytes: &'a [u8],
    layout: PageLayout,
}

impl<'a> Page<'a> {
    /// Parse a page header. `bytes` is one page (usually `layout.page_size`
    /// bytes; a shorter tail is fine as long as the commit fits).
    pub fn parse(layout: &PageLayout, bytes: &'a [u8]) -> Result<Page<'a>, Error> {
        let e = layout.endian;
        let short = Error { kind: ErrorKind::ShortPage, offset: 0, value: bytes.len() as u64 };
        let d_off = layout.data_offset as usize;
        if bytes.len() < d_off {
            return Err(short);
        }
        let ts = read_uint(bytes, layout.ts_offset as usize, 8, e).map_err(|_| short)?;
        let commit = read_uint(bytes, layout.commit_offset as usize, layout.commit_size as usize, e).map_err(|_| short)?;
        let size = (commit & COMMIT_MASK) as usize;
        if d_off + size > bytes.len() {
            return Err(Error { kind: ErrorKind::BadCommit, offset: layout.commit_offset as u32, value: size as u64 });
        }
        let missed = commit & MISSED_EVENTS != 0;
        let lost = if missed && commit & MISSED_STORED != 0 {
            // The kernel stores the count only when it fits after the data.
            read_uint(bytes, d_off + size, layout.commit_size as usize, e).ok()
        } else {
            None
        };
        Ok(Page { ts, commit, missed, lost, bytes, layout: *layout })
    }

    /// Bytes of committed record data.
    #[inline]
    pub fn data_len(&self) -> usize {
        (self.commit & COMMIT_MASK) as usize
    }

    /// True when the page holds no committed data.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.data_len() == 0
    }

    /// The record iterator state positioned at the first record.
    #[inline]
    pub fn cursor(&self) -> RecordCursor {
        RecordCursor { pos: self.layout.data_offset as u32, end: (self.layout.data_offset as usize + self.data_len()) as u32, ts: self.ts, done: false }
    }

    /// Iterate the data records; time extends, time stamps and padding are
    /// consumed on the way. Stops after the first error.
    pub fn records(&self) -> Records<'a> {
        Records { bytes: self.bytes, layout: self.layout, cur: self.cursor() }
    }
}

/// One data record: its absolute time and its payload, which starts with
/// the event's `common_type` and may carry up to 3 bytes of alignment
/// padding at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    pub ts: u64,
    pub data: &'a [u8],
    /// Offset of the record header within the page.
    pub offset: u32,
}

/// Position of a walk over one page's records, kept apart from the page
/// bytes so that a caller owning the page buffer (a merge, a live reader)
/// can keep the walk across calls without a self-referential struct.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecordCursor {
    pos: u32,
    end: u32,
    ts: u64,
    done: bool,
}

impl RecordCursor {
    /// The running time stamp (of the last record returned).
    #[inline]
    pub fn ts(&self) -> u64 {
        self.ts
    }

    /// The next data record of `page` (the same bytes the cursor came from).
    ///
    /// Always inline (where speed is worth the bytes: `fast-print`), for
    /// the usual record only: a call per record (with the registers the
    /// rest of the walk needs saved and restored) was half of the cursor's
    /// cost; everything else is [`Self::walk`].
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn next<'a>(&mut self, layout: &PageLayout, page: &'a [u8]) -> Option<Result<Record<'a>, Error>> {
        if let Some(r) = self.next_small(layout, page) {
            return Some(Ok(r));
        }
        let end = (self.end as usize).min(page.len());
        self.walk(layout, page, end)
    }

    /// [`Self::next`]'s usual record only: a small data record (type_len
    /// 1..=28) that fits, read with one load and no bounds-check calls;
    /// None, the cursor untouched, for anything else. For a caller that
    /// has a slow path of its own (the merge's step within a page: no
    /// copy of the cursor to keep it as it was, no walk inlined).
    #[inline(always)]
    pub fn next_small<'a>(&mut self, layout: &PageLayout, page: &'a [u8]) -> Option<Record<'a>> {
        let e = layout.endian;
        let end = (self.end as usize).min(page.len());
        let pos = self.pos as usize;
        if self.done {
            return None;
        }
        let w = word(page, pos, end, e)?;
        let h = small_record(w, e, pos, end);
        let next = h.next?;
        let data = page.get(pos + 4..next)?;
        self.ts = self.ts.wrapping_add(h.delta as u64);
        self.pos = next as u32;
        Some(Record { ts: self.ts, data, offset: pos as u32 })
    }

    /// [`Self::next`] without the inlined usual case, for a walk that
    /// takes few records this way.
    pub fn next_outlined<'a>(&mut self, layout: &PageLayout, page: &'a [u8]) -> Option<Result<Record<'a>, Error>> {
        let end = (self.end as usize).min(page.len());
        self.walk(layout, page, end)
    }

    /// The event type (the payload's first two bytes, 0 when it has none)
    /// of every data record left in `page`, in order: what a pass that
    /// only counts records and notes their types needs. The same walk as
    /// [`Self::next`], ending at the first bad record, but the usual
    /// record costs a load and a few checks: no timestamp, no [`Record`].
    pub fn each_type(&mut self, layout: &PageLayout, page: &[u8], mut each: impl FnMut(u16)) {
        let e = layout.endian;
        let end = (self.end as usize).min(page.len());
        loop {
            let pos = self.pos as usize;
            // A data record of type_len 1..=28 has 4 to 112 payload bytes:
            // its header and type are the first 6 of at least 8. (The
            // board build takes every record through `walk`: less code.)
            let fast = cfg!(feature = "fast-print") && !self.done && pos + 8 <= end;
            let head = if fast { page.get(pos..pos + 8) } else { None };
            // One 4-byte and one 2-byte load, as `word` reads a header.
            if let Some((w, t)) = head.and_then(|h| Some((h.first_chunk::<4>()?, h.get(4..)?.first_chunk::<2>()?))) {
                if let Some(next) = small_record(e.u32(*w), e, pos, end).next {
                    self.pos = next as u32;
                    each(e.u16(*t));
                    continue;
                }
            }
            // Anything else, as `next` takes it (timestamps are not kept).
            match self.walk(layout, page, end) {
                Some(Ok(r)) => each(read_uint(r.data, 0, 2, e).unwrap_or(0) as u16),
                _ => return,
            }
        }
    }

    /// [`Self::next`] for any record: padding, time stamps, long records,
    /// the page's end, damage.
    #[inline(never)]
    fn walk<'a>(&mut self, layout: &PageLayout, page: &'a [u8], end: usize) -> Option<Result<Record<'a>, Error>> {
        let e = layout.endian;
        loop {
            if self.done {
                return None;
            }
            let pos = self.pos as usize;
            if pos >= end {
                self.done = true;
                return None;
            }
            let Some(w) = word(page, pos, end, e) else {
                return self.fail(ErrorKind::BadRecord, 0);
            };
            let Header { type_len, delta, next } = small_record(w, e, pos, end);
            if let Some(next) = next {
                self.ts = self.ts.wrapping_add(delta as u64);
                self.pos = next as u32;
                return Some(Ok(Record { ts: self.ts, data: &page[pos + 4..next], offset: pos as u32 }));
            }
            match type_len {
                TYPE_PADDING => {
                    if delta == 0 {
                        // rb_null_event: the rest of the page is padding.
                        self.done = true;
                        return None;
                    }
                    if layout.padding_delta {
                        self.ts = self.ts.wrapping_add(delta as u64);
                    }
                    // A discarded event: array[0] holds its length. Padding
                    // written at a page's end may run past the commit (the
                    // reader page's commit is cut to real_end): that ends
                    // the page, it is not corruption.
                    let Some(len) = word(page, pos + 4, end, e) else {
                        self.done = true;
                        return None;
                    };
                    let next = pos as u64 + 4 + len as u64;
                    if next >= end as u64 {
                        self.done = true;
                        return None;
                    }
                    self.pos = next as u32;
                }
                TYPE_TIME_EXTEND | TYPE_TIME_STAMP => {
                    let Some(hi) = word(page, pos + 4, end, e) else {
                        return self.fail(ErrorKind::BadRecord, 0);
                    };
                    let t = ((hi as u64) << TS_SHIFT) + delta as u64;
                    self.ts = if type_len == TYPE_TIME_EXTEND { self.ts.wrapping_add(t) } else { fix_abs_ts(t, self.ts) };
                    self.pos += 8;
                }
                0 => {
                    let Some(len) = word(page, pos + 4, end, e) else {
                        return self.fail(ErrorKind::BadRecord, 0);
                    };
                    // array[0] counts itself: the payload is len - 4 bytes,
                    // and the record occupies len rounded up to 4 after the header.
                    if len < 4 {
                        return self.fail(ErrorKind::BadLength, len as u64);
                    }
                    let dlen = len as usize - 4;
                    let start = pos + 8;
                    let next = start as u64 + ((dlen as u64 + 3) & !3);
                    if start + dlen > end {
                        return self.fail(ErrorKind::BadRecord, len as u64);
                    }
                    self.ts = self.ts.wrapping_add(delta as u64);
                    self.pos = next.min(u32::MAX as u64) as u32;
                    return Some(Ok(Record { ts: self.ts, data: &page[start..start + dlen], offset: pos as u32 }));
                }
                // A small data record (1..=28) that runs past the end.
                n => return self.fail(ErrorKind::BadRecord, n as u64 * 4),
            }
        }
    }

    #[cold]
    fn fail<'a>(&mut self, kind: ErrorKind, value: u64) -> Option<Result<Record<'a>, Error>> {
        self.done = true;
        Some(Err(Error { kind, offset: self.pos, value }))
    }
}

/// A record header word split as rb_event lays it out (type_len:5,
/// time_delta:27, in the page's bit order), with where the next record
/// starts when this one is the usual kind: a data record of type_len
/// 1..=28 (4 to 112 payload bytes right after the header) that ends by
/// `end`.
struct Header {
    type_len: u32,
    delta: u32,
    /// Set for the usual record only.
    next: Option<usize>,
}

/// The one reading of a header word that [`RecordCursor::next`]'s fast
/// path, [`RecordCursor::each_type`] and [`RecordCursor::walk`] share for
/// the record at `pos`. Always inline: it sits in the per-record loops,
/// and each caller uses a different part of it.
#[inline(always)]
fn small_record(w: u32, e: Endian, pos: usize, end: usize) -> Header {
    let (type_len, delta) = match e {
        Endian::Little => (w & 31, w >> 5),
        Endian::Big => (w >> 27, w & DELTA_MASK),
    };
    let next = pos + 4 + type_len as usize * 4;
    // type_len in 1..=28 (a range's `contains` is a call at opt-level z).
    let usual = type_len.wrapping_sub(1) < 28 && next <= end;
    Header { type_len, delta, next: if usual { Some(next) } else { None } }
}

/// Always inline: a call per record header at opt-level z was a sixth of
/// the record cursor's cost.
#[inline(always)]
fn word(page: &[u8], pos: usize, end: usize, e: Endian) -> Option<u32> {
    if pos + 4 > end {
        return None;
    }
    // One 4-byte load (`[b[0], b[1], b[2], b[3]]` stayed four byte loads
    // and three shifts at opt-level z).
    let b = page.get(pos..pos + 4)?.first_chunk::<4>()?;
    Some(e.u32(*b))
}

/// Restore the top five bits an absolute time stamp cannot hold from the
/// running time, carrying over when the low part wrapped.
fn fix_abs_ts(abs: u64, running: u64) -> u64 {
    if running & TS_MSB == 0 {
        return abs;
    }
    let v = abs | (running & TS_MSB);
    if v < running {
        v.wrapping_add(1 << 59)
    } else {
        v
    }
}

/// Iterator over one page's data records.
pub struct Records<'a> {
    bytes: &'a [u8],
    layout: PageLayout,
    cur: RecordCursor,
}

impl<'a> Iterator for Records<'a> {
    type Item = Result<Record<'a>, Error>;
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        self.cur.next(&self.layout, self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Builds pages the way the kernel writes them, for either endianness
    /// and either commit width.
    struct PageBuilder {
        e: Endian,
        commit_size: usize,
        data_off: usize,
        page: Vec<u8>,
        pos: usize,
    }

    impl PageBuilder {
        fn new(e: Endian, commit_size: usize, page_size: usize, ts: u64) -> Self {
            let data_off = 8 + commit_size;
            let mut page = vec![0u8; page_size];
            put(&mut page, 0, ts, 8, e);
            PageBuilder { e, commit_size, data_off, page, pos: data_off }
        }
        fn hdr(&mut self, type_len: u32, delta: u32) {
            let w = match self.e {
                Endian::Little => (delta << 5) | type_len,
                Endian::Big => (type_len << 27) | delta,
            };
            self.word(w);
        }
        fn word(&mut self, w: u32) {
            put(&mut self.page, self.pos, w as u64, 4, self.e);
            self.pos += 4;
        }
        /// A small record: type_len = words.
        fn small(&mut self, delta: u32, payload: &[u8]) {
            let words = payload.len().div_ceil(4);
            self.hdr(words as u32, delta);
            self.page[self.pos..self.pos + payload.len()].copy_from_slice(payload);
            self.pos += words * 4;
        }
        /// A type_len 0 record, aligned to `align` as RB_FORCE_8BYTE_ALIGNMENT does.
        fn big(&mut self, delta: u32, payload: &[u8], align: usize) {
            let total = (4 + 4 + payload.len()).div_ceil(align) * align;
            self.hdr(0, delta);
            self.word((total - 4) as u32);
            self.page[self.pos..self.pos + payload.len()].copy_from_slice(payload);
            self.pos += total - 8;
        }
        fn extend(&mut self, delta: u64) {
            self.hdr(30, (delta & DELTA_MASK as u64) as u32);
            self.word((delta >> 27) as u32);
        }
        fn stamp(&mut self, abs: u64) {
            self.hdr(31, (abs & DELTA_MASK as u64) as u32);
            self.word(((abs >> 27) & 0xffff_ffff) as u32);
        }
        fn padding(&mut self, delta: u32, len: usize) {
            self.hdr(29, delta);
            // array[0] counts itself, like a type_len 0 length.
            self.word(len as u32);
            self.pos += len - 4;
        }
        fn finish(mut self, flags: u64, lost: Option<u64>) -> Vec<u8> {
            let size = (self.pos - self.data_off) as u64;
            put(&mut self.page, 8, size | flags, self.commit_size, self.e);
            if let Some(n) = lost {
                put(&mut self.page, self.pos, n, self.commit_size, self.e);
            }
            self.page
        }
    }

    fn put(b: &mut [u8], off: usize, v: u64, size: usize, e: Endian) {
        for i in 0..size {
            let shift = match e {
                Endian::Little => 8 * i,
                Endian::Big => 8 * (size - 1 - i),
            };
            b[off + i] = (v >> shift) as u8;
        }
    }

    fn collect(layout: &PageLayout, page: &[u8]) -> Vec<(u64, Vec<u8>)> {
        Page::parse(layout, page).unwrap().records().map(|r| r.map(|r| (r.ts, r.data.to_vec())).unwrap()).collect()
    }

    const HEADER_PAGE_64: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
    const HEADER_PAGE_32: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
    const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

    #[test]
    fn parses_header_texts() {
        let l = PageLayout::parse(HEADER_PAGE_64, HEADER_EVENT, Endian::Little, 0).unwrap();
        assert_eq!((l.commit_size, l.data_offset, l.page_size), (8, 16, 4096));
        let l = PageLayout::parse(HEADER_PAGE_32, HEADER_EVENT, Endian::Big, 8192).unwrap();
        assert_eq!((l.commit_size, l.data_offset, l.page_size), (4, 12, 8192));
        let old = "\ttype        :    2 bits\n\tlen         :    3 bits\n\ttime_delta  :   27 bits\n";
        assert_eq!(PageLayout::parse(HEADER_PAGE_64, old, Endian::Little, 0).unwrap_err().kind, ErrorKind::HeaderEvent);
        assert_eq!(PageLayout::parse("junk", HEADER_EVENT, Endian::Little, 0).unwrap_err().kind, ErrorKind::HeaderPage);
    }

    #[test]
    fn small_records_both_endians_both_commit_sizes() {
        for e in [Endian::Little, Endian::Big] {
            for cs in [4u8, 8] {
                let l = PageLayout::new(e, cs, 4096);
                let mut b = PageBuilder::new(e, cs as usize, 4096, 1000);
                b.small(0, &[1, 2, 3, 4]);
                b.small(5, &[5, 6, 7, 8, 9, 10, 11, 12]);
                b.small((1 << 27) - 1, &[13]);
                let page = b.finish(0, None);
                let p = Page::parse(&l, &page).unwrap();
                assert!(!p.missed);
                assert_eq!(p.ts, 1000);
                let r = collect(&l, &page);
                assert_eq!(r.len(), 3, "{:?} {}", e, cs);
                assert_eq!(r[0], (1000, vec![1, 2, 3, 4]));
                assert_eq!(r[1], (1005, vec![5, 6, 7, 8, 9, 10, 11, 12]));
                assert_eq!(r[2], (1005 + (1 << 27) - 1, vec![13, 0, 0, 0]));
            }
        }
    }

    #[test]
    fn type_len_zero_with_8_byte_alignment() {
        // RB_FORCE_8BYTE_ALIGNMENT: every record type_len 0, 8-aligned.
        for e in [Endian::Little, Endian::Big] {
            let l = PageLayout::new(e, 8, 4096);
            let mut b = PageBuilder::new(e, 8, 4096, 7);
            b.big(1, &[1, 2, 3], 8);
            b.big(2, &[9; 12], 8);
            b.big(3, &[4; 200], 4);
            let page = b.finish(0, None);
            let r = collect(&l, &page);
            assert_eq!(r.len(), 3);
            // 4+4+3 → 16 total, array[0] = 12, payload 8 (padded).
            assert_eq!(r[0], (8, vec![1, 2, 3, 0, 0, 0, 0, 0]));
            assert_eq!(r[1].0, 10);
            assert_eq!(&r[1].1[..12], &[9; 12]);
            assert_eq!(r[2], (13, vec![4; 200]));
            let offs: Vec<u32> = Page::parse(&l, &page).unwrap().records().map(|r| r.unwrap().offset).collect();
            assert!(offs.iter().take(2).all(|o| o % 8 == 0), "{:?}", offs);
        }
    }

    #[test]
    fn time_extend_and_absolute_stamp() {
        for e in [Endian::Little, Endian::Big] {
            let l = PageLayout::new(e, 8, 4096);
            let mut b = PageBuilder::new(e, 8, 4096, 100);
            b.small(0, &[1; 4]);
            b.extend((5u64 << 27) + 3);
            b.small(0, &[2; 4]);
            b.stamp(0x0123_4567_89ab);
            b.small(0, &[3; 4]);
            b.small(10, &[4; 4]);
            let page = b.finish(0, None);
            let ts: Vec<u64> = collect(&l, &page).iter().map(|r| r.0).collect();
            assert_eq!(ts, vec![100, 100 + (5 << 27) + 3, 0x0123_4567_89ab, 0x0123_4567_89ab + 10]);
        }
        // A clock with the top bits set: the stamp keeps them from the running time.
        let l = PageLayout::new(Endian::Little, 8, 4096);
        let base = 0xf800_0000_0000_1000u64;
        let mut b = PageBuilder::new(Endian::Little, 8, 4096, base);
        b.small(0, &[1; 4]);
        b.stamp((base + 0x500) & !TS_MSB);
        b.small(0, &[2; 4]);
        let page = b.finish(0, None);
        let ts: Vec<u64> = collect(&l, &page).iter().map(|r| r.0).collect();
        assert_eq!(ts, vec![base, base + 0x500]);
        assert_eq!(fix_abs_ts(5, 0xf000_0000_0000_0009), 0xf800_0000_0000_0005);
    }

    #[test]
    fn padding_and_discarded_events() {
        let mut l = PageLayout::new(Endian::Little, 8, 4096);
        let mut b = PageBuilder::new(Endian::Little, 8, 4096, 0);
        b.small(1, &[1; 4]);
        b.padding(7, 12); // discarded event with delta 7
        b.small(2, &[2; 4]);
        b.hdr(29, 0); // null padding: the rest is ignored
        b.small(3, &[3; 4]);
        let page = b.finish(0, None);
        // The kernel's readers skip the discarded event's delta...
        let ts: Vec<u64> = collect(&l, &page).iter().map(|r| r.0).collect();
        assert_eq!(ts, vec![1, 3]);
        // ...kbuffer (trace-cmd) adds it.
        l.padding_delta = true;
        let ts: Vec<u64> = collect(&l, &page).iter().map(|r| r.0).collect();
        assert_eq!(ts, vec![1, 10]);
        // Padding whose length runs past the commit ends the page quietly.
        let mut b = PageBuilder::new(Endian::Little, 8, 4096, 0);
        b.small(1, &[1; 4]);
        b.hdr(29, 1);
        b.word(4000);
        let page = b.finish(0, None);
        assert_eq!(collect(&l, &page).len(), 1);
    }

    #[test]
    fn lost_events_with_and_without_count() {
        for (cs, e) in [(8usize, Endian::Little), (4, Endian::Big)] {
            let l = PageLayout::new(e, cs as u8, 4096);
            let mut b = PageBuilder::new(e, cs, 4096, 0);
            b.small(1, &[1; 4]);
            let page = b.finish(MISSED_EVENTS | MISSED_STORED, Some(42));
            let p = Page::parse(&l, &page).unwrap();
            assert!(p.missed);
            assert_eq!(p.lost, Some(42));
            assert_eq!(p.data_len(), 8);
            assert_eq!(p.records().count(), 1);
            let mut b = PageBuilder::new(e, cs, 4096, 0);
            b.small(1, &[1; 4]);
            let page = b.finish(MISSED_EVENTS, None);
            let p = Page::parse(&l, &page).unwrap();
            assert!(p.missed);
            assert_eq!(p.lost, None);
            assert_eq!(p.records().count(), 1);
        }
    }

    #[test]
    fn eight_kib_sub_buffer() {
        let l = PageLayout::new(Endian::Little, 8, 8192);
        let mut b = PageBuilder::new(Endian::Little, 8, 8192, 0);
        for i in 0..800u32 {
            b.small(1, &i.to_le_bytes());
        }
        assert!(b.pos > 4096);
        let page = b.finish(0, None);
        let r = collect(&l, &page);
        assert_eq!(r.len(), 800);
        assert_eq!(r[799], (800, 799u32.to_le_bytes().to_vec()));
        // The same commit in a 4096-byte page is corrupt, not a panic.
        assert_eq!(Page::parse(&l, &page[..4096]).unwrap_err().kind, ErrorKind::BadCommit);
    }

    #[test]
    fn corrupt_pages_are_errors_not_panics() {
        let l = PageLayout::new(Endian::Little, 8, 4096);
        assert_eq!(Page::parse(&l, &[0u8; 10]).unwrap_err().kind, ErrorKind::ShortPage);
        // A record claiming more than the commit: error after the good one.
        let mut b = PageBuilder::new(Endian::Little, 8, 4096, 0);
        b.small(1, &[1; 4]);
        b.hdr(0, 0);
        b.word(5000);
        let page = b.finish(0, None);
        let r: Vec<_> = Page::parse(&l, &page).unwrap().records().collect();
        assert_eq!(r.len(), 2);
        assert!(r[0].is_ok());
        assert_eq!(r[1].unwrap_err().kind, ErrorKind::BadRecord);
        // Length word smaller than itself.
        let mut b = PageBuilder::new(Endian::Little, 8, 4096, 0);
        b.hdr(0, 0);
        b.word(2);
        let page = b.finish(0, None);
        assert_eq!(Page::parse(&l, &page).unwrap().records().next().unwrap().unwrap_err().kind, ErrorKind::BadLength);
        // Fuzz-ish: every byte value at every header position never panics.
        let mut b = PageBuilder::new(Endian::Little, 8, 256, 0);
        for _ in 0..20 {
            b.small(1, &[7; 8]);
        }
        let base = b.finish(0, None);
        for pos in 0..base.len() {
            for v in [0u8, 0x1d, 0x1e, 0x1f, 0xff, 0x80] {
                let mut p = base.clone();
                p[pos] = v;
                if let Ok(pg) = Page::parse(&l, &p) {
                    for r in pg.records() {
                        let _ = r;
                    }
                }
            }
        }
    }
}
