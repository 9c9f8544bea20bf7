//! What the fuzz targets share: an output sink that turns unbounded output
//! into a crash, an allocator that turns a huge allocation into one, and a
//! page source over bytes.
//!
//! Unbounded work is the bug class the mutated files of issue 18 found (a
//! record whose text is gigabytes of indentation; a section decompressed
//! once per reference): libFuzzer's -timeout catches it only after the
//! fact and -rss_limit_mb only if the memory is touched, so the sink and
//! the allocator stop such an input at once, with a stack that says where.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt;

/// The most one record may print. The kernel bounds a line by its
/// trace_seq (a page); ftcat has no reason to print more than a few pages
/// for one record (a hex dump of a 64 KiB sub-buffer's record is ~200 KiB).
pub const RECORD_MAX: usize = 1 << 20;
/// The most one input may print in all (issue 18: output <= 64 MB).
pub const OUTPUT_MAX: usize = 64 << 20;
/// The largest single allocation allowed (libFuzzer's -rss_limit_mb=256
/// sees only touched memory; calloc'd zeros are not).
pub const ALLOC_MAX: usize = 256 << 20;

/// Counts what the printers write, keeps nothing, and panics past the
/// bounds above. `record()` starts a new record's count.
#[derive(Default)]
pub struct Sink {
    pub total: usize,
    pub line: usize,
}

impl Sink {
    pub fn record(&mut self) {
        self.line = 0;
    }
}

/// ftcat's pipeline writes into it as into its stdout.
impl ftbox::decode::TextSink for Sink {}

impl fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.total += s.len();
        // A line is one record's text (stack traces and graph comments
        // aside, which are lines of their own).
        match s.rfind('\n') {
            Some(i) => self.line = s.len() - i - 1,
            None => self.line += s.len(),
        }
        assert!(self.line <= RECORD_MAX, "one record printed more than {RECORD_MAX} bytes");
        assert!(self.total <= OUTPUT_MAX, "one input printed more than {OUTPUT_MAX} bytes");
        Ok(())
    }
}

/// The system allocator, failing any single allocation above ALLOC_MAX:
/// Rust then reports "memory allocation of N bytes failed" and aborts,
/// as the shipped binary would on a machine without that memory.
pub struct Capped;

// SAFETY: forwards to System; a refused request returns null, which the
// GlobalAlloc contract allows.
unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if l.size() > ALLOC_MAX {
            return std::ptr::null_mut();
        }
        System.alloc(l)
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if l.size() > ALLOC_MAX {
            return std::ptr::null_mut();
        }
        System.alloc_zeroed(l)
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l)
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > ALLOC_MAX {
            return std::ptr::null_mut();
        }
        System.realloc(p, l, new)
    }
}

#[global_allocator]
static ALLOC: Capped = Capped;

/// Splits fuzz input at the first `sep`: (before, after); all of it and
/// nothing when there is none.
pub fn split(data: &[u8], sep: u8) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == sep) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}

/// Lossy text of fuzz bytes (the parsers take &str where the file's text
/// was checked or converted first).
pub fn text(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}
