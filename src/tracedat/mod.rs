//! trace.dat files (trace-cmd's format, versions 6 and 7): reader, and
//! writer (`write.rs`).
//!
//! The reader follows trace-cmd's Documentation/trace-cmd/trace-cmd.dat.v6.5
//! and .v7.5 texts (lib/trace-cmd/trace-input.c settles the details):
//!
//! ```text
//! "\x17\x08\x44tracing" "6\0"|"7\0" endian:u8 long_size:u8 page_size:u32
//! v6: header_page, header_event, ftrace formats, event formats, kallsyms,
//!     printk formats, cmdlines, cpus:u32, ["options  \0" options... 0:u16],
//!     "flyrecord\0" { offset:u64 size:u64 } per CPU
//! v7: "zstd\0" "version\0" options_offset:u64, then sections anywhere, each
//!     { id:u16 flags:u16 string:u32 size:u64 } (flag 1 = compressed); the
//!     OPTIONS sections chain through their DONE option; HEADER_INFO etc.
//!     options point at the other sections; each BUFFER option names a
//!     flyrecord section and its per-CPU data (compressed in chunks).
//! ```
//! All numbers are in the file's endianness; the kernel's `long` comes from
//! header_page's commit field, not from the host.
//!
//! Metadata (formats, kallsyms, cmdlines) is loaded at open; trace data is
//! never loaded whole: [`CpuPages`] reads one page (or one compressed chunk)
//! at a time through [`ReadAt`], so memory stays flat however large the file.
//!
//! Use (the std edge supplies the `ReadAt`: `applets::source::Input`):
//!
//! ```text
//! let td = TraceDat::open(input.read_at())?;          // Error names section + offset
//! for f in &td.formats { parse(&f.system, &f.text) }  // ftrace first, file order
//! let top = td.top().ok_or(..)?;                      // or td.buffer("instance")
//! let mut m = Merge::from_pages(td.layout(top), td.all_cpu_pages(top));
//! while let Some(item) = m.next() {
//!     match item {
//!         Item::Record { cpu, ts, data } => ..,       // data starts at common_type
//!         Item::Lost { cpu, count, .. } => ..,        // before that CPU's next record
//!         Item::Error { cpu, error } => ..,           // corrupt page / cut file; goes on
//!     }
//! }
//! if let Some(e) = &td.damage { .. }                  // cut v7 file: report after records
//! ```
//!
//! `ReadAt::read_at` takes `&self` (pread needs no state), so every CPU's
//! stream shares one open file.
//!
//! Files come from the field (other boards, cut transfers, bit errors) and
//! from attackers, so what the reader does is bounded by the file's real
//! size, never by the numbers in it: each metadata section is read once,
//! however often the options name it; a compressed section may expand at
//! most 64-fold; CPU tables must not put two CPUs on the same bytes; the
//! page streams of a file share one memory budget; and sizes read from the
//! file are allocated with `try_reserve`, so a failure is an error. Data
//! running past the end of the file is a cut recording: every whole page
//! before the cut comes out, then a "file truncated" error.

pub mod pages;
pub mod stream;
pub mod write;
#[cfg(test)]
mod tests;
#[cfg(feature = "zstd")]
mod zstd;
#[cfg(feature = "zstd-write")]
mod zstd_write;

use crate::cursor::Endian;
use crate::ring::{self, PageLayout};
use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
#[cfg(feature = "zstd")]
use core::cell::{Cell, OnceCell};
use core::fmt;

pub use pages::{CpuPages, Seen};
use pages::Held;

/// Positional reads at the edge: a file via pread, a buffer in memory.
/// `read_at` may return fewer bytes than asked only at the end of the data.
pub trait ReadAt {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError>;
}

/// An I/O failure below the reader, as an errno (0 when there is none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError(pub i32);

impl ReadAt for [u8] {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        let Ok(off) = usize::try_from(off) else { return Ok(0) };
        let Some(src) = self.get(off..) else { return Ok(0) };
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
}

impl ReadAt for Vec<u8> {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        self.as_slice().read_at(off, buf)
    }
}

/// Why reading failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The read-at source failed with this errno.
    Io(i32),
    /// The data ends early: `want` bytes at `at`, the file has fewer.
    Truncated { at: u64, want: u64 },
    /// Not a trace.dat file.
    BadMagic,
    /// A version this reader does not know.
    Version(u32),
    /// A compression algorithm this build cannot decode.
    Compression(String),
    /// A compressed block did not decompress to its stated size.
    Decompress,
    /// Something inconsistent, described.
    Corrupt(&'static str),
    /// A ring-buffer page could not be decoded.
    Page(ring::Error),
}

/// A reading error: which part of the file, where, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub section: &'static str,
    /// A byte offset in the file; for "ring page" the page's index (from
    /// 0) in its CPU's stream.
    pub offset: u64,
    pub reason: Reason,
}

impl Error {
    #[cold]
    #[inline(never)]
    pub(crate) fn new(section: &'static str, offset: u64, reason: Reason) -> Error {
        Error { section, offset, reason }
    }
    #[cold]
    #[inline(never)]
    fn corrupt(section: &'static str, offset: u64, what: &'static str) -> Error {
        Error { section, offset, reason: Reason::Corrupt(what) }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The merge reports a bad ring page by its index in the CPU's page
        // stream (it reads through a source and knows no file offsets):
        // "ring page at offset 1" read as byte 1 of the file.
        let at = if self.section == "ring page" { " " } else { " at offset " };
        write!(f, "{}{}{}: ", self.section, at, self.offset)?;
        match &self.reason {
            // In the system's words where the system layer is built in.
            #[cfg(feature = "cli")]
            Reason::Io(e) => write!(f, "{}", crate::sys::OsError(crate::sys::Errno::from_raw_os_error(*e))),
            #[cfg(not(feature = "cli"))]
            Reason::Io(e) => write!(f, "read error (os error {})", e),
            Reason::Truncated { at, want } => write!(f, "file truncated (need {} bytes at offset {})", want, at),
            Reason::BadMagic => f.write_str("not a trace.dat file (bad magic)"),
            Reason::Version(v) => write!(f, "unsupported trace.dat version {}", v),
            Reason::Compression(c) => write!(f, "unsupported compression '{}'", c),
            Reason::Decompress => f.write_str("compressed data is corrupt"),
            Reason::Corrupt(w) => f.write_str(w),
            Reason::Page(e) => fmt::Display::fmt(e, f),
        }
    }
}

/// Inside the reader errors travel boxed: a 56-byte `Error` moved through
/// each `?` was a large part of the reader's code.
type BoxResult<T> = Result<T, Box<Error>>;

#[cold]
#[inline(never)]
fn bad(section: &'static str, offset: u64, what: &'static str) -> Box<Error> {
    Box::new(Error::corrupt(section, offset, what))
}

/// Read exactly `buf.len()` bytes at `off`, or say where the data ended.
fn read_full(file: &dyn ReadAt, section: &'static str, off: u64, buf: &mut [u8]) -> BoxResult<()> {
    let mut p = MetaReader::new(file, Endian::Little, off, section);
    p.fill(buf);
    p.done()
}

/// Largest single metadata block we agree to allocate (kallsyms of a
/// distribution kernel is ~15 MB): a corrupt size fails, it does not OOM.
const MAX_BLOCK: u64 = 1 << 30;

/// How far a compressed metadata section may expand. zstd can turn a few
/// KiB into gigabytes, while ftrace's metadata is text that it shrinks far
/// less: on the 6.12 recordings event formats shrink 18-fold at most,
/// kallsyms 5-fold, printk formats 4-fold. A section claiming more than 64
/// times its compressed size (plus a page, for tiny sections) is refused
/// before anything is decompressed.
const MAX_EXPANSION: u64 = 64;

/// Can `z` compressed bytes plausibly hold `size` bytes of metadata?
fn plausible_expansion(z: u64, size: u64) -> bool {
    size <= z.saturating_mul(MAX_EXPANSION).saturating_add(4096)
}

/// Most instance buffers a v6 file may name (each is a CPU table to read;
/// more is "too many options").
const MAX_INSTANCES: usize = 4096;

/// Highest CPU number accepted: far above any kernel's NR_CPUS (8192), and
/// what a merge of several buffers can tag (ftcat keeps the buffer above
/// bit 16 of the CPU number).
const MAX_CPU: u32 = (1 << 16) - 1;

/// The size of `file`, found with 1-byte reads (doubling, then bisecting):
/// `ReadAt` has no size, and some fifty preads cost nothing next to the
/// metadata. The tables of CPU data are checked against it.
fn probe_size(file: &dyn ReadAt) -> u64 {
    let has = |off: u64| matches!(file.read_at(off, &mut [0u8; 1]), Ok(1));
    if !has(0) {
        return 0;
    }
    // `lo` is readable, `hi` is not.
    let (mut lo, mut hi) = (0u64, 1u64);
    while has(hi) {
        lo = hi;
        if hi >= 1 << 62 {
            return hi + 1;
        }
        hi *= 2;
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if has(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo + 1
}

/// Bytes to text, C-string NUL padding dropped, without a copy when they
/// are valid UTF-8 (kallsyms is megabytes). Format files and kallsyms are
/// ASCII; a stray byte must not lose the rest.
fn text(mut v: Vec<u8>) -> String {
    let n = nul_tail(&v);
    v.truncate(n);
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Where a run of NULs that ends `b` starts, when no other NUL comes
/// before it (C string padding); else `b.len()`. `contains` on bytes is
/// core's word-at-a-time memchr: kallsyms is megabytes.
fn nul_tail(b: &[u8]) -> usize {
    let t = b.iter().rposition(|&c| c != 0).map_or(0, |i| i + 1);
    if t < b.len() && !b[..t].contains(&0) {
        t
    } else {
        b.len()
    }
}

/// Metadata text that a compressed file keeps compressed until its first
/// use: kallsyms is megabytes (7 MB for a distribution kernel) that ftcat
/// needs only when an event prints a symbol, and decompressing it at open
/// was most of the time of printing a small file. Reads as the text
/// (`Deref`); a section whose data turns out corrupt at that first use
/// reads as empty (its sizes were checked at open) and says so through
/// [`LazyText::lost`], for the applet to report once it has printed.
#[cfg(feature = "zstd")]
#[derive(Default)]
pub struct LazyText {
    text: OnceCell<String>,
    packed: Cell<Option<Packed>>,
    lost: Cell<bool>,
}

/// Without a zstd decoder nothing stays compressed: the text itself.
#[cfg(not(feature = "zstd"))]
pub type LazyText = String;

/// A compressed v7 text section: its data, its size decompressed and the
/// file's byte order (for the count that starts it).
#[cfg(feature = "zstd")]
struct Packed(Vec<u8>, usize, Endian);

#[cfg(feature = "zstd")]
impl From<String> for LazyText {
    fn from(text: String) -> LazyText {
        LazyText { text: OnceCell::from(text), ..LazyText::default() }
    }
}

#[cfg(feature = "zstd")]
impl LazyText {
    /// The text, decompressed first if it still is not. (One copy of
    /// this, not one in each of the many places that read the text.)
    #[inline(never)]
    pub fn text(&self) -> &String {
        crate::util::once(&self.text, || match self.packed.take() {
            Some(Packed(z, size, e)) => {
                // The count, then the text (see `counted`), apart.
                let mut count = [0; 4];
                zstd::decode_vec(z, size, &mut count).and_then(|mut d| {
                    let n = e.u32(count) as usize;
                    (n <= d.len()).then(|| {
                        d.truncate(n);
                        text(d)
                    })
                })
            }
            .unwrap_or_else(|| {
                self.lost.set(true);
                String::new()
            }),
            None => String::new(),
        })
    }

    /// True when the text was compressed and did not decompress: what
    /// used it saw an empty text.
    pub fn lost(&self) -> bool {
        self.lost.get()
    }
}

#[cfg(feature = "zstd")]
impl core::ops::Deref for LazyText {
    type Target = String;
    fn deref(&self) -> &String {
        self.text()
    }
}

/// Compared and shown as the text (tests compare whole recordings).
#[cfg(feature = "zstd")]
impl PartialEq for LazyText {
    fn eq(&self, other: &LazyText) -> bool {
        self.text() == other.text()
    }
}

#[cfg(feature = "zstd")]
impl fmt::Debug for LazyText {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.text().fmt(f)
    }
}

/// The text of a v7 kallsyms, printk or cmdlines section's data: a
/// `w`-byte count, then the text, taken in place (kallsyms is megabytes:
/// no second copy). None, `data` untouched, when the count is larger
/// than the data.
fn counted(data: &mut Vec<u8>, w: usize, e: Endian) -> Option<String> {
    let n = MetaReader::mem(data, e, 0, "").num(w);
    if data.len() < w || n > MAX_BLOCK || n > (data.len() - w) as u64 {
        return None;
    }
    data.truncate(w + n as usize);
    data.drain(..w);
    Some(text(core::mem::take(data)))
}

/// One event format file, in file order (the `ftrace` system first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub system: String,
    pub text: String,
}

/// Where one CPU's raw data sits in the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuData {
    pub cpu: u32,
    pub offset: u64,
    /// Bytes in the file (for compressed data: the compressed size).
    pub size: u64,
}

/// One ring buffer: the top level (name "") or an instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub name: String,
    /// The trace clock of this buffer (v7; v6 files have only the global one).
    pub clock: Option<String>,
    pub page_size: u32,
    /// Data is in zstd chunks (v7 with compression).
    pub compressed: bool,
    /// A latency-format (text) buffer: no pages, see [`TraceDat::latency_text`].
    pub latency: bool,
    /// Latency buffers: where the text is (v6: the text itself, to the end
    /// of the file; v7: its BUFFER TEXT section).
    pub text_at: u64,
    pub cpus: Vec<CpuData>,
}

/// The options a recording carries (unknown ones are skipped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// CPUCOUNT: CPUs of the traced system.
    pub cpu_count: Option<u32>,
    /// TRACECLOCK: the `trace_clock` file, e.g. `[local] global counter ...`.
    pub trace_clock: Option<String>,
    pub uname: Option<String>,
    /// VERSION: the recorder's version string.
    pub version: Option<String>,
    /// CPUSTAT: one `per_cpu/cpuN/stats` text per CPU, in file order.
    pub cpustat: Vec<String>,
    /// DATE: offset between trace time and wall time, as recorded.
    pub date: Option<String>,
    /// OFFSET: a fixed offset added to each timestamp, as recorded.
    pub offset: Option<String>,
    /// TSC2NSEC: (mult, shift, offset).
    pub tsc2nsec: Option<(u32, u32, u64)>,
    pub trace_id: Option<u64>,
    /// PROCMAPS text.
    pub procmaps: Option<String>,
    /// SAVED_TGIDS-style pid→tgid text when a recorder stored one (the
    /// options trace-cmd knows have no such table; kept for writers that add it).
    pub tgids: Option<String>,
    /// ftbox's record of the tracer state that shapes the text (tracer,
    /// trace_options, preemption model): `key=value` lines, see
    /// text::opts::state_get.
    pub state: Option<String>,
    /// ftbox's `name=value` lines of kernel values some print fmts read
    /// (`vmemmap_base`, `sizeof(struct page)`; see `kvars`).
    pub kvars: Option<String>,
}

impl Options {
    /// The selected clock of `trace_clock` text (`[local] global` → `local`).
    pub fn clock(&self) -> Option<&str> {
        crate::ftrace::selected_clock(self.trace_clock.as_deref()?)
    }
}

// Option ids (trace-cmd-private.h, enum tracecmd_option_id).
const OPT_DONE: u16 = 0;
const OPT_DATE: u16 = 1;
const OPT_CPUSTAT: u16 = 2;
const OPT_BUFFER: u16 = 3;
const OPT_TRACECLOCK: u16 = 4;
const OPT_UNAME: u16 = 5;
const OPT_OFFSET: u16 = 7;
const OPT_CPUCOUNT: u16 = 8;
const OPT_VERSION: u16 = 9;
const OPT_PROCMAPS: u16 = 10;
const OPT_TRACEID: u16 = 11;
const OPT_TSC2NSEC: u16 = 14;
const OPT_HEADER_INFO: u16 = 16;
#[allow(dead_code)] // v7 ids 16..=21 are read as META indexes; the tests name them
const OPT_FTRACE_EVENTS: u16 = 17;
#[allow(dead_code)] // v7 ids 16..=21 are read as META indexes; the tests name them
const OPT_EVENT_FORMATS: u16 = 18;
#[allow(dead_code)] // v7 ids 16..=21 are read as META indexes; the tests name them
const OPT_KALLSYMS: u16 = 19;
#[allow(dead_code)] // v7 ids 16..=21 are read as META indexes; the tests name them
const OPT_PRINTK: u16 = 20;
const OPT_CMDLINES: u16 = 21;
const OPT_BUFFER_TEXT: u16 = 22;
/// Not a trace-cmd option: ftbox's own pid→tgid table (saved_tgids text).
pub const OPT_SAVED_TGIDS: u16 = 0x4654; // "FT"
/// Not a trace-cmd option: ftbox's tracer state (tracer, trace_options).
pub const OPT_STATE: u16 = 0x4655; // "FU"
/// Not a trace-cmd option: kernel values some formats read (`kvars`).
pub const OPT_KVARS: u16 = 0x4656; // "FV"

const SEC_FL_COMPRESS: u16 = 1;

/// An open trace.dat: metadata in memory, trace data read on demand.
pub struct TraceDat<'f> {
    file: &'f dyn ReadAt,
    pub version: u32,
    pub endian: Endian,
    /// The user-space long size written in the file header.
    pub long_size: u8,
    /// The host page size written in the file header.
    pub page_size: u32,
    /// v7: compression algorithm name and version ("none" when not compressed).
    pub compression: String,
    pub compression_version: String,
    pub header_page: String,
    pub header_event: String,
    pub formats: Vec<Format>,
    /// Shared with the symbol table that reads it (`ksyms::Ksyms::shared`):
    /// megabytes, not copied, and in a compressed file not decompressed
    /// before that table's first lookup.
    pub kallsyms: Rc<LazyText>,
    pub printk: String,
    pub cmdlines: String,
    pub options: Options,
    /// The top-level buffer first (when the file has one), then instances.
    pub buffers: Vec<Buffer>,
    /// The file is damaged past its metadata (a v7 file cut before its
    /// trailing options): what could be read is here, the buffers may have
    /// been recovered; report this after the records.
    pub damage: Option<Error>,
    /// The file's real size: every table and size in it is checked
    /// against this before anything is allocated for it.
    pub file_size: u64,
    layout: PageLayout,
    /// What this file's page streams hold between calls (read-ahead,
    /// decompressed chunks): one budget, see pages::HELD_BUDGET.
    held: Held,
}

/// The one metadata reader: numbers, strings and blocks at `pos` of `file`
/// — the file itself, or a section already in memory that sits at `base`
/// in the file. The first failure is kept (naming section `s` and the file
/// offset) and every read after it gives zeros and nothing more, so the
/// parsers read straight through and ask [`MetaReader::done`] once per part: one
/// exit instead of an error branch (and its clean-up) at every field.
struct MetaReader<'f> {
    file: &'f dyn ReadAt,
    e: Endian,
    pos: u64,
    base: u64,
    s: &'static str,
    err: Option<Box<Error>>,
}

impl<'f> MetaReader<'f> {
    fn new(file: &'f dyn ReadAt, e: Endian, pos: u64, s: &'static str) -> Self {
        MetaReader { file, e, pos, base: 0, s, err: None }
    }
    /// Over `d`, an in-memory part of the file that starts at `base`.
    fn mem(d: &'f Vec<u8>, e: Endian, base: u64, s: &'static str) -> Self {
        MetaReader { file: d, e, pos: 0, base, s, err: None }
    }
    fn ok(&self) -> bool {
        self.err.is_none()
    }
    /// The first error, if any.
    fn done(&mut self) -> BoxResult<()> {
        match self.err.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    /// Keep `e` unless an earlier error is kept.
    fn put(&mut self, e: Option<Box<Error>>) {
        if self.err.is_none() {
            self.err = e;
        }
    }
    #[cold]
    #[inline(never)]
    fn fail(&mut self, at: u64, reason: Reason) {
        let e = Box::new(Error { section: self.s, offset: self.base + at, reason });
        self.put(Some(e));
    }
    #[cold]
    #[inline(never)]
    fn bad_at(&mut self, at: u64, what: &'static str) {
        self.fail(at, Reason::Corrupt(what))
    }
    fn bad(&mut self, what: &'static str) {
        self.bad_at(self.pos, what)
    }
    /// `want` bytes at `pos` are not there.
    #[cold]
    #[inline(never)]
    fn short(&mut self, want: u64) {
        self.fail(self.pos, Reason::Truncated { at: self.base + self.pos, want })
    }
    /// Exactly `buf.len()` bytes, then step past them; false after an error.
    #[inline(never)]
    fn fill(&mut self, buf: &mut [u8]) -> bool {
        if !self.ok() {
            return false;
        }
        let mut done = 0;
        while done < buf.len() {
            let at = self.pos + done as u64;
            match self.file.read_at(at, &mut buf[done..]) {
                Ok(0) => {
                    self.short(buf.len() as u64);
                    return false;
                }
                Ok(n) => done += n,
                Err(e) => {
                    self.fail(at, Reason::Io(e.0));
                    return false;
                }
            }
        }
        self.pos += buf.len() as u64;
        true
    }
    /// An unsigned number of `n` (1, 2, 4 or 8) bytes in the file's endianness.
    #[inline(never)]
    fn num(&mut self, n: usize) -> u64 {
        let mut b = [0u8; 8];
        if !self.fill(&mut b[..n]) {
            return 0;
        }
        crate::cursor::read_uint(&b, 0, n, self.e).unwrap_or(0)
    }
    // (Not forced inline: they run once a metadata field, and a call to
    // one is shorter than the argument and call to `num` it stands for.)
    fn u16(&mut self) -> u16 {
        self.num(2) as u16
    }
    fn u32(&mut self) -> u32 {
        self.num(4) as u32
    }
    fn u64(&mut self) -> u64 {
        self.num(8)
    }
    /// `len` bytes; a corrupt size fails before the allocation.
    #[inline(never)]
    fn vec(&mut self, len: u64) -> Vec<u8> {
        if len > MAX_BLOCK {
            self.bad("implausible size");
        } else if len > 4096 && self.ok() && !matches!(self.file.read_at(self.pos + len - 1, &mut [0u8; 1]), Ok(1)) {
            // Probe the last byte first: a corrupt size fails here, not
            // after zeroing megabytes.
            self.short(len);
        }
        if !self.ok() {
            return Vec::new();
        }
        // Ask for the memory fallibly first, then take it zeroed (fresh
        // pages, no memset: kallsyms is megabytes): a size the system
        // cannot give is an error, not an abort.
        if Vec::<u8>::new().try_reserve_exact(len as usize).is_err() {
            self.bad("implausible size");
            return Vec::new();
        }
        let mut v = vec![0u8; len as usize];
        self.fill(&mut v);
        v
    }
    fn text(&mut self, len: u64) -> String {
        text(self.vec(len))
    }
    /// A NUL-terminated string.
    fn cstr(&mut self) -> String {
        let mut v = Vec::new();
        loop {
            match self.num(1) as u8 {
                0 => break,
                c => v.push(c),
            }
            if v.len() > 4096 {
                self.bad("unterminated string");
                break;
            }
        }
        text(v)
    }
    /// A v7 section header { id:u16 flags:u16 string:u32 size:u64 }: id, flags, size.
    fn section_head(&mut self) -> (u16, u16, u64) {
        let id = self.u16();
        let flags = self.u16();
        self.u32();
        (id, flags, self.u64())
    }
}

/// What an options list points at: v6 instance buffers (OPT_BUFFER, offset,
/// name), v7 metadata sections (id, offset, "").
type Ref = (u16, u64, String);

/// read_options modes.
const V6_TOP: u8 = 0;
const V6_SKIP: u8 = 1;
const V7: u8 = 2;

/// The metadata parts, in file order in v6 and as v7 section ids 16.. (OPT_HEADER_INFO..).
const META: [&str; 6] = ["header info", "ftrace formats", "event formats", "kallsyms", "printk formats", "cmdlines"];

impl<'f> TraceDat<'f> {
    /// Read the header and all metadata of a trace.dat file.
    pub fn open(file: &'f dyn ReadAt) -> Result<TraceDat<'f>, Error> {
        Self::open_r(file).map_err(|e| *e)
    }

    #[inline(never)]
    fn open_r(file: &'f dyn ReadAt) -> BoxResult<TraceDat<'f>> {
        let mut p = MetaReader::new(file, Endian::Little, 0, "file header");
        let mut head = [0u8; 10];
        if p.fill(&mut head) && &head != b"\x17\x08\x44tracing" {
            p.fail(0, Reason::BadMagic);
        }
        let vs = p.cstr();
        let version: u32 = vs.parse().unwrap_or(0);
        if version == 0 {
            p.bad_at(10, "bad version string");
        } else if version != 6 && version != 7 {
            p.fail(10, Reason::Version(version));
        }
        let endian = match p.num(1) {
            0 => Endian::Little,
            1 => Endian::Big,
            _ => {
                p.bad_at(p.pos.wrapping_sub(1), "bad endianness byte");
                Endian::Little
            }
        };
        p.e = endian;
        let long_size = p.num(1) as u8;
        if long_size != 4 && long_size != 8 {
            p.bad_at(p.pos.wrapping_sub(1), "long size is neither 4 nor 8");
        }
        let page_size = p.u32();
        if !(256..=(1 << 24)).contains(&page_size) {
            p.bad_at(p.pos.wrapping_sub(4), "implausible page size");
        }
        p.done()?;
        let mut td = TraceDat {
            file,
            version,
            endian,
            long_size,
            page_size,
            compression: String::from("none"),
            compression_version: String::new(),
            header_page: String::new(),
            header_event: String::new(),
            formats: Vec::new(),
            kallsyms: Rc::default(),
            printk: String::new(),
            cmdlines: String::new(),
            options: Options::default(),
            buffers: Vec::new(),
            damage: None,
            file_size: probe_size(file),
            layout: PageLayout::new(endian, long_size, page_size),
            held: Held::default(),
        };
        if version == 6 {
            td.read_v6(&mut p)?;
        } else {
            td.read_v7(&mut p)?;
        }
        td.check_buffers()?;
        td.layout = PageLayout::parse(&td.header_page, &td.header_event, endian, page_size)
            .map_err(|e| Box::new(Error::new("header info", 0, Reason::Page(e))))?;
        Ok(td)
    }

    /// The page layout of `buffer` (its own sub-buffer size).
    pub fn layout(&self, buffer: &Buffer) -> PageLayout {
        let mut l = self.layout;
        if buffer.page_size != 0 {
            l.page_size = buffer.page_size;
        }
        l
    }

    /// The traced kernel's `long` size (from header_page's commit field):
    /// what `long`, pointers and `%lx` in event records use. The header's
    /// `long_size` is user space's and may differ (32-bit user on 64-bit).
    pub fn kernel_long_size(&self) -> u8 {
        self.layout.commit_size
    }

    /// The top-level buffer, if the file has one.
    pub fn top(&self) -> Option<&Buffer> {
        self.buffer("")
    }

    /// A buffer by instance name ("" = top level).
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// One page at a time of one CPU of `buffer`.
    pub fn cpu_pages(&self, buffer: &Buffer, cpu: &CpuData) -> CpuPages<'f> {
        let mut c = CpuPages::new(self.file, self.endian, self.layout(buffer).page_size, buffer.compressed, *cpu);
        c.bound(self.file_size, self.held.clone());
        c
    }

    /// True when the kallsyms section, kept compressed until its first
    /// use, turned out not to decompress: symbols printed as addresses.
    pub fn kallsyms_lost(&self) -> bool {
        #[cfg(feature = "zstd")]
        return self.kallsyms.lost();
        #[cfg(not(feature = "zstd"))]
        false
    }

    /// Page streams for every CPU of `buffer`, in file order
    /// (CPUs without data have none: a table of 65,536 empty CPUs costs
    /// no stream each.)
    pub fn all_cpu_pages(&self, buffer: &Buffer) -> Vec<CpuPages<'f>> {
        buffer.cpus.iter().filter(|c| c.size > 0).map(|c| self.cpu_pages(buffer, c)).collect()
    }

    /// The text of a latency-format buffer (what `trace` showed when
    /// trace-cmd recorded a latency tracer), decompressed when needed.
    pub fn latency_text(&self, b: &Buffer) -> Result<Vec<u8>, Error> {
        self.latency_text_r(b).map_err(|e| *e)
    }

    fn latency_text_r(&self, b: &Buffer) -> BoxResult<Vec<u8>> {
        let mut p = MetaReader::new(self.file, self.endian, b.text_at, "latency text");
        if !b.latency {
            p.bad_at(0, "buffer is not a latency buffer");
            p.done()?;
        }
        let mut out = Vec::new();
        if self.version == 6 {
            // The rest of the file, read in steps (its size is not recorded).
            let mut buf = [0u8; 4096];
            loop {
                match self.file.read_at(p.pos, &mut buf) {
                    Ok(0) => break,
                    Ok(n) if out.len() as u64 + n as u64 <= MAX_BLOCK => {
                        out.extend_from_slice(&buf[..n]);
                        p.pos += n as u64;
                    }
                    Ok(_) => p.bad("implausible size"),
                    Err(e) => p.fail(p.pos, Reason::Io(e.0)),
                }
                p.done()?;
            }
            return Ok(out);
        }
        let (_, flags, size) = p.section_head();
        if flags & SEC_FL_COMPRESS == 0 {
            out = p.vec(size);
        } else if !cfg!(feature = "zstd") {
            p.put(check_compression(&self.compression, p.s, p.pos).err());
        } else {
            // Compressed like trace data: a chunk count, then chunks.
            let n = p.u32();
            for _ in 0..n {
                let at = p.pos;
                let z = p.u32();
                let u = p.u32();
                let data = p.vec(z as u64);
                if out.len() as u64 + u as u64 > MAX_BLOCK || !plausible_expansion(z.into(), u.into()) {
                    p.bad_at(at, "implausible size");
                }
                if !p.ok() {
                    break;
                }
                match decompress(&self.compression, p.s, at, data, u as usize) {
                    Ok(d) => out.extend_from_slice(&d),
                    Err(e) => p.put(Some(e)),
                }
            }
        }
        p.done()?;
        Ok(out)
    }

    /// Metadata part `i` (see [`META`]): v6 reads them in turn from the
    /// file, v7 each from its section.
    fn meta(&mut self, p: &mut MetaReader, i: usize) {
        p.s = META[i.min(5)];
        match i {
            0 => {
                self.header_page = header_text(p, b"header_page\0");
                self.header_event = header_text(p, b"header_event\0");
            }
            1 => {
                // The ftrace system first, whichever section comes first.
                let mut f = Vec::new();
                read_formats(p, "ftrace", &mut f);
                f.append(&mut self.formats);
                self.formats = f;
            }
            2 => {
                // systems:u32 then { name\0 count:u32 { size:u64 text } }.
                for _ in 0..p.u32() {
                    let system = p.cstr();
                    if !p.ok() {
                        break;
                    }
                    read_formats(p, &system, &mut self.formats);
                }
            }
            _ => {
                let n = p.num(if i == 5 { 8 } else { 4 });
                let t = p.text(n);
                self.set_text(i, t);
            }
        }
    }

    /// Metadata part `i` 3..=5: kallsyms, printk formats, cmdlines.
    fn set_text(&mut self, i: usize, t: String) {
        match i {
            3 => self.kallsyms = Rc::new(LazyText::from(t)),
            4 => self.printk = t,
            _ => self.cmdlines = t,
        }
    }

    // ---- v6 ----

    #[inline(never)]
    fn read_v6(&mut self, p: &mut MetaReader<'f>) -> BoxResult<()> {
        for i in 0..META.len() {
            self.meta(p, i);
        }
        p.s = "cpu count";
        let cpus = p.u32();
        let mut instances = Vec::new();
        p.s = "options";
        let mut kind = [0u8; 10];
        p.fill(&mut kind);
        if kind.starts_with(b"options") {
            self.read_options(p, V6_TOP, &mut instances);
            p.fill(&mut kind);
        }
        let cpus = self.options.cpu_count.unwrap_or(cpus);
        let top = flyrecord_v6(p, &kind, cpus, self.page_size, String::new());
        p.done()?;
        self.buffers.push(top);
        // By reference: a by-value loop adds an IntoIter and its drop code.
        // An instance block named twice is read once, for its first name.
        if instances.len() > MAX_INSTANCES {
            return Err(bad("options", 0, "too many options"));
        }
        for i in 0..instances.len() {
            if instances[..i].iter().any(|r| r.1 == instances[i].1) {
                continue;
            }
            let r = &mut instances[i];
            let name = core::mem::take(&mut r.2);
            let mut q = MetaReader::new(p.file, p.e, r.1, "instance buffer");
            q.fill(&mut kind);
            if kind.starts_with(b"options") {
                // Instance headers may carry their own options; skip them.
                self.read_options(&mut q, V6_SKIP, &mut Vec::new());
                q.s = "instance buffer";
                q.fill(&mut kind);
            }
            let b = flyrecord_v6(&mut q, &kind, cpus, self.page_size, name);
            // A broken instance does not hide the top-level buffer.
            match q.done() {
                Ok(()) => self.buffers.push(b),
                Err(e) => {
                    self.damage.get_or_insert(*e);
                }
            }
        }
        Ok(())
    }

    // ---- v6 and v7 options ----

    /// An options list: v6 ends at a DONE id, v7 with DONE's pointer to the
    /// next options section (returned; 0 = last).
    fn read_options(&mut self, p: &mut MetaReader, mode: u8, refs: &mut Vec<Ref>) -> u64 {
        let mut n = 0;
        loop {
            p.s = "options";
            let at = p.pos;
            let id = p.u16();
            if id == OPT_DONE && mode != V7 {
                return 0;
            }
            n += 1;
            if n > 1 << 20 {
                p.bad_at(at, "too many options");
            }
            let size = p.u32();
            let d = p.vec(size as u64);
            if !p.ok() {
                return 0;
            }
            if mode == V6_SKIP {
                continue;
            }
            let mut q = MetaReader::mem(&d, p.e, p.base + p.pos - size as u64, "options");
            match id {
                OPT_DONE => {
                    let next = q.u64();
                    p.put(q.err);
                    return next;
                }
                OPT_BUFFER | OPT_BUFFER_TEXT if mode == V7 => self.buffer_option(&mut q, id, d.len()),
                OPT_BUFFER => {
                    let off = q.u64();
                    refs.push((id, off, q.cstr()));
                }
                OPT_HEADER_INFO..=OPT_CMDLINES if mode == V7 => refs.push((id, q.u64(), String::new())),
                // Their errors are not fatal: the value is left out, and
                // q's error is not passed on.
                _ => {
                    apply_common_option(&mut self.options, id, &mut q, &d);
                    continue;
                }
            }
            p.put(q.err);
        }
    }

    /// A v7 BUFFER or BUFFER_TEXT option.
    #[inline(never)]
    fn buffer_option(&mut self, q: &mut MetaReader, id: u16, len: usize) {
        let off = q.u64();
        let name = q.cstr();
        let clock = q.cstr();
        let mut b = Buffer { name, clock: Some(clock), page_size: self.page_size, compressed: false, latency: id == OPT_BUFFER_TEXT, text_at: off, cpus: Vec::new() };
        if id == OPT_BUFFER {
            b.page_size = q.u32();
            if !(256..=(1 << 24)).contains(&b.page_size) {
                q.bad_at(0, "implausible sub-buffer size");
            }
            let n = q.u32();
            if n as usize > len / 20 {
                q.bad_at(0, "CPU count larger than the option");
            } else {
                for _ in 0..n {
                    let cpu = q.u32();
                    let offset = q.u64();
                    let size = q.u64();
                    b.cpus.push(CpuData { cpu, offset, size });
                }
            }
        }
        // The flyrecord section header's flags say whether the data is compressed.
        let mut f = MetaReader::new(self.file, self.endian, off.saturating_add(2), "buffer section");
        b.compressed = f.u16() & SEC_FL_COMPRESS != 0;
        if b.compressed {
            f.put(check_compression(&self.compression, f.s, off).err());
        }
        q.put(f.err);
        if q.ok() {
            self.buffers.push(b);
        }
    }

    // ---- v7 ----

    #[inline(never)]
    fn read_v7(&mut self, p: &mut MetaReader<'f>) -> BoxResult<()> {
        p.s = "compression header";
        self.compression = p.cstr();
        self.compression_version = p.cstr();
        p.s = "file header";
        let mut next = p.u64();
        p.done()?;
        let mut refs = Vec::new();
        let mut seen = 0;
        // End of the first options section: trace-cmd writes the flyrecord
        // section right after it, which recovery relies on.
        let mut first_end = 0;
        while next != 0 {
            seen += 1;
            let r = if seen > 1024 {
                Err(bad("options", next, "options sections loop"))
            } else {
                self.section(next, "options").and_then(|(id, data, base, end)| {
                    if id != OPT_DONE {
                        return Err(bad("options", next, "section is not an options section"));
                    }
                    if first_end == 0 {
                        first_end = end;
                    }
                    let mut q = MetaReader::mem(&data, self.endian, base, "options");
                    let n = self.read_options(&mut q, V7, &mut refs);
                    q.done().map(|()| n)
                })
            };
            match r {
                Ok(n) => next = n,
                // The first section carries the metadata: without it there is nothing.
                Err(e) if seen == 1 => return Err(e),
                // A later one (trace-cmd writes the BUFFER options after the
                // data) is lost when the file is cut: keep what was read.
                Err(e) => {
                    self.damage = Some(*e);
                    break;
                }
            }
        }
        // Each metadata section is read once, from its first reference: a
        // list that names the formats a thousand times must not parse them
        // a thousand times.
        let mut read = [false; META.len()];
        for &(id, off, _) in &refs {
            // Only ids 16..=21 are collected (read_options).
            let i = (id.wrapping_sub(OPT_HEADER_INFO) as usize).min(5);
            if core::mem::replace(&mut read[i], true) {
                continue;
            }
            // kallsyms stays compressed (see LazyText) when it would
            // decompress here without an error.
            #[cfg(feature = "zstd")]
            if i == 3 && check_compression(&self.compression, "", 0).is_ok() {
                if let (_, z, Some(u), _, _) = self.section_z(off, META[i])? {
                    if u as u64 <= MAX_BLOCK {
                        self.kallsyms = Rc::new(LazyText { packed: Cell::new(Some(Packed(z, u, self.endian))), ..LazyText::default() });
                        continue;
                    }
                }
            }
            let (_, mut data, base, _) = self.section(off, META[i])?;
            if (3..=5).contains(&i) {
                // kallsyms, printk, cmdlines: a count, then the text. A
                // broken one goes through meta() for its error.
                if let Some(t) = counted(&mut data, if i == 5 { 8 } else { 4 }, self.endian) {
                    self.set_text(i, t);
                    continue;
                }
            }
            let mut q = MetaReader::mem(&data, self.endian, base, "");
            self.meta(&mut q, i);
            q.done()?;
        }
        if self.header_page.is_empty() {
            return Err(bad("header info", 0, "file has no HEADER_INFO section"));
        }
        if self.buffers.is_empty() && self.damage.is_some() {
            if let Some(b) = self.recover_buffer(first_end) {
                self.buffers.push(b);
            }
        }
        // The top-level buffer first: callers default to it.
        // (Swaps down, the others keep their order: no remove/insert moves.)
        if let Some(i) = self.buffers.iter().position(|b| b.name.is_empty()) {
            for k in (0..i).rev() {
                self.buffers.swap(k, k + 1);
            }
        }
        Ok(())
    }

    /// A cut file lost its BUFFER option (trace-cmd writes it after the
    /// data): find the top-level flyrecord section after the first options
    /// section and rebuild the CPU table. Compressed data: walk each CPU's
    /// zstd chunk list, which says where that CPU's data ends (each CPU
    /// starts on a page boundary). Uncompressed data says nothing of where a
    /// CPU ends: split it by the page timestamps ([`Self::cpu_runs`]).
    #[inline(never)]
    fn recover_buffer(&self, at: u64) -> Option<Buffer> {
        let mut p = MetaReader::new(self.file, self.endian, at, "buffer section");
        let (id, flags, size) = p.section_head();
        let ncpu = self.options.cpu_count?;
        if id != OPT_BUFFER || !p.ok() {
            return None;
        }
        let ps = self.page_size as u64;
        let align = |v: u64| v.div_ceil(ps) * ps;
        let compressed = flags & SEC_FL_COMPRESS != 0;
        if compressed && !cfg!(feature = "zstd") {
            // Chunks this build cannot decode: nothing to recover.
            return None;
        }
        let mut b = Buffer { name: String::new(), clock: self.options.clock().map(String::from), page_size: self.page_size, compressed, latency: false, text_at: 0, cpus: Vec::new() };
        let mut off = align(p.pos);
        if !compressed {
            // The section's size is patched in after the data: a recording
            // cut while it was written may still say 0.
            let end = if size == 0 { self.file_size } else { p.pos.saturating_add(size).min(self.file_size) };
            let runs = self.cpu_runs(off, end);
            if runs.len() > ncpu as usize {
                return None;
            }
            let cut = size == 0 || p.pos.saturating_add(size) > self.file_size;
            for (cpu, &(start, stop)) in runs.iter().enumerate() {
                // In a cut section the last run goes on to the cut: whole
                // pages, then "truncated".
                let size = if cut && cpu + 1 == runs.len() { u64::MAX - start } else { stop - start };
                b.cpus.push(CpuData { cpu: cpu as u32, offset: start, size });
            }
            return Some(b);
        }
        for cpu in 0..ncpu.min(1 << 12) {
            // Step over the chunk list { count:u32 { zsize:u32 size:u32 data } }.
            let mut q = MetaReader::new(self.file, self.endian, off, "cpu data");
            for _ in 0..q.u32() {
                let z = q.u32();
                q.u32();
                if !q.ok() {
                    break;
                }
                q.pos += z as u64;
            }
            if q.ok() {
                // trace-cmd's convention: the size leaves out the chunk count.
                b.cpus.push(CpuData { cpu, offset: off, size: q.pos - off - 4 });
                off = align(q.pos);
            } else {
                // Cut inside this CPU: read what is there, then report the cut.
                b.cpus.push(CpuData { cpu, offset: off, size: u64::MAX - off });
                break;
            }
        }
        Some(b)
    }

    /// Check the CPU tables against the file: CPU numbers in range and
    /// once per buffer, and no two CPUs' data on the same bytes (a table of
    /// 60,000 CPUs pointing at one page would otherwise be read, and held,
    /// 60,000 times). Data running past the end of the file is a cut
    /// recording, not an error: its stream stops there (CpuPages::bound).
    fn check_buffers(&self) -> BoxResult<()> {
        let mut spans = Vec::new();
        for b in self.buffers.iter().filter(|b| !b.latency) {
            // One bit per possible CPU number: out of range, or listed
            // twice, it is implausible.
            let mut listed = vec![0u64; (MAX_CPU as usize + 1) / 64];
            for c in &b.cpus {
                let bit = 1 << (c.cpu % 64);
                match listed.get_mut(c.cpu as usize / 64) {
                    Some(word) if *word & bit == 0 => *word |= bit,
                    _ => return Err(bad("CPU table", b.text_at, "implausible CPU number")),
                }
            }
            for c in b.cpus.iter().filter(|c| c.size > 0 && c.offset < self.file_size) {
                spans.push((c.offset, c.offset.saturating_add(c.size).min(self.file_size)));
            }
        }
        spans.sort_unstable();
        match spans.windows(2).find(|w| w[1].0 < w[0].1) {
            Some(w) => Err(bad("CPU table", w[1].0, "two CPUs' data share bytes")),
            None => Ok(()),
        }
    }

    /// Uncompressed per-CPU data from `from` to `to`, split into the runs
    /// of pages of each CPU: trace-cmd writes CPU 0's pages, then CPU 1's,
    /// each in time order, so a page older than the one before it starts
    /// the next CPU. The runs are CPUs 0, 1, ... in turn — right unless a
    /// CPU recorded nothing (it has no run) or a later CPU's pages are all
    /// newer than the one before's (two CPUs read as one).
    fn cpu_runs(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let ps = u64::from(self.page_size);
        let mut runs = Vec::new();
        if from >= to {
            // The aligned data start lies past the section's end: no pages.
            return runs;
        }
        let (mut start, mut at, mut last) = (from, from, 0);
        while at + ps <= to {
            let mut ts = [0u8; 8];
            if read_full(self.file, "cpu data", at, &mut ts).is_err() {
                break;
            }
            let ts = self.endian.u64(ts);
            if ts < last {
                runs.push((start, at));
                start = at;
            }
            last = ts;
            at += ps;
        }
        runs.push((start, to));
        runs
    }

    /// Read a v7 section at `off`: its id, its (decompressed) data, the
    /// file offset of the data (for error messages) and where it ends in the file.
    #[inline(never)]
    fn section(&self, off: u64, name: &'static str) -> BoxResult<(u16, Vec<u8>, u64, u64)> {
        let (id, data, packed, base, end) = self.section_z(off, name)?;
        // (Without a decoder section_z refuses compressed data.)
        #[cfg(feature = "zstd")]
        let data = match packed {
            Some(u) => decompress(&self.compression, name, base, data, u)?,
            None => data,
        };
        #[cfg(not(feature = "zstd"))]
        let _ = packed;
        Ok((id, data, base, end))
    }

    /// [`Self::section`] with compressed data left compressed: the data,
    /// and its size decompressed when it is compressed. Every size is
    /// checked.
    fn section_z(&self, off: u64, name: &'static str) -> BoxResult<(u16, Vec<u8>, Option<usize>, u64, u64)> {
        let mut p = MetaReader::new(self.file, self.endian, off, name);
        let (id, flags, size) = p.section_head();
        let base = p.pos;
        let mut data = Vec::new();
        let mut packed = None;
        if flags & SEC_FL_COMPRESS == 0 {
            data = p.vec(size);
        } else if !cfg!(feature = "zstd") {
            // The one outcome in a build without a decoder (and no dead
            // chunk reading for it).
            p.put(check_compression(&self.compression, name, base).err());
        } else {
            let z = p.u32();
            let u = p.u32();
            if !plausible_expansion(z.into(), u.into()) {
                p.bad_at(base, "compressed section expands more than 64-fold");
            }
            data = p.vec(z as u64);
            packed = Some(u as usize);
        }
        // A compressed section reads only its own sizes' bytes, so its
        // header's size is not checked by reading: one near u64::MAX
        // would put its end past any offset.
        let end = base.checked_add(size);
        if end.is_none() {
            p.bad_at(base, "section size past the largest offset");
        }
        p.done()?;
        Ok((id, data, packed, base, end.unwrap_or(u64::MAX)))
    }
}

/// Options with the same meaning in v6 and v7 (`q` reads `d`; a short
/// number is left out, its error stays in `q` for the caller to drop).
fn apply_common_option(o: &mut Options, id: u16, q: &mut MetaReader, d: &[u8]) {
    // The text options: pick the slot, convert once.
    let slot = match id {
        OPT_DATE => &mut o.date,
        OPT_TRACECLOCK => &mut o.trace_clock,
        OPT_UNAME => &mut o.uname,
        OPT_OFFSET => &mut o.offset,
        OPT_VERSION => &mut o.version,
        OPT_PROCMAPS => &mut o.procmaps,
        OPT_SAVED_TGIDS => &mut o.tgids,
        OPT_STATE => &mut o.state,
        OPT_KVARS => &mut o.kvars,
        OPT_CPUSTAT => return o.cpustat.push(text(d.to_vec())),
        OPT_CPUCOUNT => {
            let v = q.u32();
            o.cpu_count = q.ok().then_some(v);
            return;
        }
        OPT_TRACEID => {
            let v = q.u64();
            o.trace_id = q.ok().then_some(v);
            return;
        }
        OPT_TSC2NSEC => {
            let v = (q.u32(), q.u32(), q.u64());
            if q.ok() {
                o.tsc2nsec = Some(v);
            }
            return;
        }
        _ => return,
    };
    *slot = Some(text(d.to_vec()));
}

/// After "flyrecord\0" (or "latency  \0"): the per-CPU offsets and sizes.
fn flyrecord_v6(p: &mut MetaReader, kind: &[u8], cpus: u32, page_size: u32, name: String) -> Buffer {
    p.s = "flyrecord";
    let mut b = Buffer { name, clock: None, page_size, compressed: false, latency: false, text_at: p.pos, cpus: Vec::new() };
    if kind.starts_with(b"latency") {
        b.latency = true;
    } else if !kind.starts_with(b"flyrecord") {
        p.bad_at(p.pos.wrapping_sub(10), "expected \"flyrecord\" or \"latency\"");
    } else if cpus > 1 << 16 {
        p.bad("implausible CPU count");
    } else {
        for cpu in 0..cpus {
            let offset = p.u64();
            let size = p.u64();
            b.cpus.push(CpuData { cpu, offset, size });
        }
    }
    b
}

/// `tag` then size:u64 and that many bytes of text.
fn header_text(p: &mut MetaReader, tag: &[u8]) -> String {
    let at = p.pos;
    let page = tag.len() == 12;
    let mut b = [0u8; 13];
    let b = &mut b[..tag.len()];
    if p.fill(b) && b != tag {
        p.bad_at(at, if page { "missing \"header_page\"" } else { "missing \"header_event\"" });
    }
    let n = p.u64();
    if n > 1 << 20 {
        p.bad(if page { "implausible header_page size" } else { "implausible header_event size" });
    }
    p.text(n)
}

/// count:u32 then { size:u64 text }: the formats of one system.
fn read_formats(p: &mut MetaReader, system: &str, out: &mut Vec<Format>) {
    for _ in 0..p.u32() {
        let len = p.u64();
        if len > 1 << 24 {
            p.bad("implausible format size");
        }
        if !p.ok() {
            break;
        }
        out.push(Format { system: String::from(system), text: p.text(len) });
    }
}

/// Can this build decode `name`? (Boxed like every reader error: the
/// callers keep it in a `MetaReader` or pass it on with `?`.)
fn check_compression(name: &str, section: &'static str, off: u64) -> BoxResult<()> {
    if name == "zstd" && cfg!(feature = "zstd") {
        Ok(())
    } else {
        Err(Box::new(Error::new(section, off, Reason::Compression(String::from(name)))))
    }
}

/// Decompress one block of the file's algorithm to exactly `size` bytes.
pub(crate) fn decompress(algo: &str, section: &'static str, off: u64, z: Vec<u8>, size: usize) -> BoxResult<Vec<u8>> {
    check_compression(algo, section, off)?;
    if size as u64 > MAX_BLOCK {
        return Err(bad(section, off, "implausible uncompressed size"));
    }
    #[cfg(feature = "zstd")]
    {
        zstd::decode_vec(z, size, &mut []).ok_or_else(|| Box::new(Error::new(section, off, Reason::Decompress)))
    }
    #[cfg(not(feature = "zstd"))]
    {
        // check_compression refused already.
        let _ = z;
        Ok(Vec::new())
    }
}

#[cfg(feature = "zstd")]
/// Like `decompress`, into `out` (resized to `size`; its old bytes are
/// overwritten, not zeroed first, so a reused buffer costs nothing).
fn decompress_into(algo: &str, section: &'static str, off: u64, z: &[u8], size: usize, out: &mut Vec<u8>) -> BoxResult<()> {
    check_compression(algo, section, off)?;
    if size as u64 > MAX_BLOCK {
        return Err(bad(section, off, "implausible uncompressed size"));
    }
    out.resize(size, 0);
    match zstd::decode(z, out) {
        Some(n) if n == size => Ok(()),
        _ => Err(Box::new(Error::new(section, off, Reason::Decompress))),
    }
}
