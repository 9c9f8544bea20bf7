//! trace.dat files (trace-cmd's format, versions 6 and 7): reader (OWNER: the
//! `dat` work) and writer (`write.rs`, OWNER: the `rec` work).
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

pub mod pages;
pub mod write;
#[cfg(test)]
mod tests;
#[cfg(feature = "zstd")]
mod zstd;

use crate::cursor::{Cursor, Endian, Eof};
use crate::ring::{self, PageLayout};
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

pub use pages::CpuPages;

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
            Reason::Io(e) => write!(f, "read error (errno {})", e),
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
/// each of ~150 `?` was a large part of the reader's code.
type R<T> = Result<T, Box<Error>>;

#[cold]
#[inline(never)]
fn bad(section: &'static str, offset: u64, what: &'static str) -> Box<Error> {
    Box::new(Error::corrupt(section, offset, what))
}

/// Read exactly `buf.len()` bytes at `off`, or say where the data ended.
pub(crate) fn read_exact(file: &dyn ReadAt, section: &'static str, off: u64, buf: &mut [u8]) -> Result<(), Error> {
    let mut done = 0;
    while done < buf.len() {
        let n = file
            .read_at(off + done as u64, &mut buf[done..])
            .map_err(|e| Error::new(section, off + done as u64, Reason::Io(e.0)))?;
        if n == 0 {
            return Err(Error::new(section, off, Reason::Truncated { at: off, want: buf.len() as u64 }));
        }
        done += n;
    }
    Ok(())
}

/// Largest single metadata block we agree to allocate (kallsyms of a
/// distribution kernel is ~15 MB): a corrupt size fails, it does not OOM.
const MAX_BLOCK: u64 = 1 << 30;

fn read_vec(file: &dyn ReadAt, section: &'static str, off: u64, len: u64) -> R<Vec<u8>> {
    if len > MAX_BLOCK {
        return Err(bad(section, off, "implausible size"));
    }
    // Probe the last byte first: a corrupt size fails here, before the
    // allocation, not after zeroing megabytes.
    if len > 4096 {
        let mut last = [0u8; 1];
        read_exact(file, section, off + len - 1, &mut last)
            .map_err(|_| Error::new(section, off, Reason::Truncated { at: off, want: len }))?;
    }
    let mut v = vec![0u8; len as usize];
    read_exact(file, section, off, &mut v)?;
    Ok(v)
}

/// Owned bytes to text without a copy when they are valid UTF-8 (kallsyms
/// is megabytes).
fn text_owned(mut v: Vec<u8>) -> String {
    let n = nul_tail(&v);
    v.truncate(n);
    String::from_utf8(v).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn text(b: &[u8]) -> String {
    // Format files and kallsyms are ASCII; a stray byte must not lose the rest.
    let b = &b[..nul_tail(b)];
    String::from_utf8_lossy(b).into_owned()
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
}

impl Options {
    /// The selected clock of `trace_clock` text (`[local] global` → `local`).
    pub fn clock(&self) -> Option<&str> {
        let t = self.trace_clock.as_deref()?;
        let s = t.find('[')?;
        let e = t[s..].find(']')?;
        Some(&t[s + 1..s + e])
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
const OPT_FTRACE_EVENTS: u16 = 17;
const OPT_EVENT_FORMATS: u16 = 18;
const OPT_KALLSYMS: u16 = 19;
const OPT_PRINTK: u16 = 20;
const OPT_CMDLINES: u16 = 21;
const OPT_BUFFER_TEXT: u16 = 22;
/// Not a trace-cmd option: ftbox's own pid→tgid table (saved_tgids text).
pub const OPT_SAVED_TGIDS: u16 = 0x4654; // "FT"
/// Not a trace-cmd option: ftbox's tracer state (tracer, trace_options).
pub const OPT_STATE: u16 = 0x4655; // "FU"

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
    pub kallsyms: String,
    pub printk: String,
    pub cmdlines: String,
    pub options: Options,
    /// The top-level buffer first (when the file has one), then instances.
    pub buffers: Vec<Buffer>,
    /// The file is damaged past its metadata (a v7 file cut before its
    /// trailing options): what could be read is here, the buffers may have
    /// been recovered; report this after the records.
    pub damage: Option<Error>,
    layout: PageLayout,
}

struct Parser<'f> {
    file: &'f dyn ReadAt,
    endian: Endian,
    /// v6 walks the file sequentially from here.
    pos: u64,
}

impl<'f> Parser<'f> {
    fn bytes(&mut self, section: &'static str, n: usize) -> R<Vec<u8>> {
        let v = read_vec(self.file, section, self.pos, n as u64)?;
        self.pos += n as u64;
        Ok(v)
    }
    /// An unsigned number of `n` (2, 4 or 8) bytes in the file's endianness.
    /// `N` bytes (a tag, the header's two bytes) without an allocation.
    fn arr<const N: usize>(&mut self, s: &'static str) -> R<[u8; N]> {
        let mut b = [0u8; N];
        read_exact(self.file, s, self.pos, &mut b)?;
        self.pos += N as u64;
        Ok(b)
    }
    #[inline(never)]
    fn num(&mut self, s: &'static str, n: usize) -> R<u64> {
        let mut b = [0u8; 8];
        read_exact(self.file, s, self.pos, &mut b[..n])?;
        self.pos += n as u64;
        crate::cursor::read_uint(&b, 0, n, self.endian).map_err(|_| bad(s, self.pos, "bad number size"))
    }
    fn u16(&mut self, s: &'static str) -> R<u16> {
        self.num(s, 2).map(|v| v as u16)
    }
    fn u32(&mut self, s: &'static str) -> R<u32> {
        self.num(s, 4).map(|v| v as u32)
    }
    fn u64(&mut self, s: &'static str) -> R<u64> {
        self.num(s, 8)
    }
    /// A v7 section header { id:u16 flags:u16 string:u32 size:u64 }: id, flags, size.
    fn section_head(&mut self, s: &'static str) -> R<(u16, u16, u64)> {
        let id = self.u16(s)?;
        let flags = self.u16(s)?;
        self.u32(s)?;
        Ok((id, flags, self.u64(s)?))
    }
    /// A NUL-terminated string, read in small steps.
    fn cstr(&mut self, s: &'static str) -> R<String> {
        let start = self.pos;
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            let n = self.file.read_at(self.pos, &mut buf).map_err(|e| Error::new(s, self.pos, Reason::Io(e.0)))?;
            if n == 0 {
                return Err(Box::new(Error::new(s, start, Reason::Truncated { at: self.pos, want: 1 })));
            }
            if let Some(z) = buf[..n].iter().position(|&c| c == 0) {
                out.extend_from_slice(&buf[..z]);
                self.pos += z as u64 + 1;
                return Ok(text(&out));
            }
            out.extend_from_slice(&buf[..n]);
            self.pos += n as u64;
            if out.len() > 4096 {
                return Err(bad(s, start, "unterminated string"));
            }
        }
    }
}

/// Errors from a cursor over an in-memory section, mapped to the section
/// and its file offset.
fn eof(section: &'static str, base: u64) -> impl Fn(Eof) -> Box<Error> {
    move |e| eof_at(section, base, e)
}

#[cold]
#[inline(never)]
fn eof_at(section: &'static str, base: u64, e: Eof) -> Box<Error> {
    Box::new(Error::new(section, base + e.at as u64, Reason::Truncated { at: base + e.at as u64, want: e.want as u64 }))
}

/// A number of `n` bytes from an in-memory section, errors mapped as by
/// [`eof`]: one call instead of an inlined endian-aware read and error
/// path at each of the option parsers' fields.
#[inline(never)]
fn cnum(c: &mut Cursor, n: usize, section: &'static str, base: u64) -> R<u64> {
    c.uint(n).map_err(eof(section, base))
}

#[inline(always)]
fn cu16(c: &mut Cursor, section: &'static str, base: u64) -> R<u16> {
    cnum(c, 2, section, base).map(|v| v as u16)
}

#[inline(always)]
fn cu32(c: &mut Cursor, section: &'static str, base: u64) -> R<u32> {
    cnum(c, 4, section, base).map(|v| v as u32)
}

#[inline(always)]
fn cu64(c: &mut Cursor, section: &'static str, base: u64) -> R<u64> {
    cnum(c, 8, section, base)
}

fn cstring(c: &mut Cursor, section: &'static str, base: u64) -> R<String> {
    c.cstr().map(text).map_err(eof(section, base))
}

impl<'f> TraceDat<'f> {
    /// Read the header and all metadata of a trace.dat file.
    pub fn open(file: &'f dyn ReadAt) -> Result<TraceDat<'f>, Error> {
        Self::open_r(file).map_err(|e| *e)
    }

    #[inline(never)]
    fn open_r(file: &'f dyn ReadAt) -> R<TraceDat<'f>> {
        let mut head = [0u8; 10];
        read_exact(file, "file header", 0, &mut head)?;
        if &head != b"\x17\x08\x44tracing" {
            return Err(Box::new(Error::new("file header", 0, Reason::BadMagic)));
        }
        let mut p = Parser { file, endian: Endian::Little, pos: 10 };
        let vs = p.cstr("file header")?;
        let version: u32 = vs.parse().map_err(|_| bad("file header", 10, "bad version string"))?;
        if version != 6 && version != 7 {
            return Err(Box::new(Error::new("file header", 10, Reason::Version(version))));
        }
        let eb: [u8; 2] = p.arr("file header")?;
        let endian = match eb[0] {
            0 => Endian::Little,
            1 => Endian::Big,
            _ => return Err(bad("file header", p.pos - 2, "bad endianness byte")),
        };
        p.endian = endian;
        let long_size = eb[1];
        if long_size != 4 && long_size != 8 {
            return Err(bad("file header", p.pos - 1, "long size is neither 4 nor 8"));
        }
        let page_size = p.u32("file header")?;
        if !(256..=(1 << 24)).contains(&page_size) {
            return Err(bad("file header", p.pos - 4, "implausible page size"));
        }
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
            kallsyms: String::new(),
            printk: String::new(),
            cmdlines: String::new(),
            options: Options::default(),
            buffers: Vec::new(),
            damage: None,
            layout: PageLayout::new(endian, long_size, page_size),
        };
        if version == 6 {
            td.read_v6(&mut p)?;
        } else {
            td.read_v7(&mut p)?;
        }
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
        self.buffers.iter().find(|b| b.name.is_empty())
    }

    /// A buffer by instance name ("" = top level).
    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|b| b.name == name)
    }

    /// One page at a time of one CPU of `buffer`.
    pub fn cpu_pages(&self, buffer: &Buffer, cpu: &CpuData) -> CpuPages<'f> {
        CpuPages::new(self.file, self.endian, self.layout(buffer).page_size, buffer.compressed, *cpu)
    }

    /// Page streams for every CPU of `buffer`, in file order.
    pub fn all_cpu_pages(&self, buffer: &Buffer) -> Vec<CpuPages<'f>> {
        buffer.cpus.iter().map(|c| self.cpu_pages(buffer, c)).collect()
    }

    /// The text of a latency-format buffer (what `trace` showed when
    /// trace-cmd recorded a latency tracer), decompressed when needed.
    pub fn latency_text(&self, b: &Buffer) -> Result<Vec<u8>, Error> {
        self.latency_text_r(b).map_err(|e| *e)
    }

    fn latency_text_r(&self, b: &Buffer) -> R<Vec<u8>> {
        let s = "latency text";
        if !b.latency {
            return Err(bad(s, 0, "buffer is not a latency buffer"));
        }
        if self.version == 6 {
            // The rest of the file, read in steps (its size is not recorded).
            let mut v = Vec::new();
            let mut buf = [0u8; 4096];
            let mut off = b.text_at;
            loop {
                let n = self.file.read_at(off, &mut buf).map_err(|e| Error::new(s, off, Reason::Io(e.0)))?;
                if n == 0 {
                    return Ok(v);
                }
                if v.len() as u64 + n as u64 > MAX_BLOCK {
                    return Err(bad(s, off, "implausible size"));
                }
                v.extend_from_slice(&buf[..n]);
                off += n as u64;
            }
        }
        let mut p = Parser { file: self.file, endian: self.endian, pos: b.text_at };
        let (_, flags, size) = p.section_head(s)?;
        if flags & SEC_FL_COMPRESS == 0 {
            return read_vec(self.file, s, p.pos, size);
        }
        // Compressed like trace data: a chunk count, then chunks.
        let mut out = Vec::new();
        let n = p.u32(s)?;
        for _ in 0..n {
            let at = p.pos;
            let z = p.u32(s)?;
            let u = p.u32(s)?;
            let data = read_vec(self.file, s, p.pos, z as u64)?;
            p.pos += z as u64;
            if out.len() as u64 + u as u64 > MAX_BLOCK {
                return Err(bad(s, at, "implausible size"));
            }
            out.extend_from_slice(&decompress(&self.compression, s, at, &data, u as usize)?);
        }
        Ok(out)
    }

    // ---- v6 ----

    fn read_v6(&mut self, p: &mut Parser) -> R<()> {
        let start = p.pos;
        let hdr = read_header_info(p.file, p.endian, start, None)?;
        p.pos = start + hdr.2;
        self.header_page = hdr.0;
        self.header_event = hdr.1;
        let start = p.pos;
        let (f, used) = read_ftrace_formats(p.file, p.endian, start)?;
        self.formats = f;
        p.pos = start + used;
        let start = p.pos;
        let used = read_event_formats(p.file, p.endian, start, &mut self.formats)?;
        p.pos = start + used;
        let n = p.u32("kallsyms")?;
        self.kallsyms = text_owned(p.bytes("kallsyms", n as usize)?);
        let n = p.u32("printk formats")?;
        self.printk = text_owned(p.bytes("printk formats", n as usize)?);
        let n = p.u64("cmdlines")?;
        if n > MAX_BLOCK {
            return Err(bad("cmdlines", p.pos, "implausible size"));
        }
        self.cmdlines = text_owned(p.bytes("cmdlines", n as usize)?);
        let cpus = p.u32("cpu count")?;
        let mut instances: Vec<(String, u64)> = Vec::new();
        let kind: [u8; 10] = p.arr("options")?;
        let kind = if kind.starts_with(b"options") {
            self.read_options_v6(p, &mut instances)?;
            p.arr("options")?
        } else {
            kind
        };
        let cpus = self.options.cpu_count.unwrap_or(cpus);
        let top = read_flyrecord_v6(p, &kind, cpus, self.page_size, String::new())?;
        self.buffers.push(top);
        for (name, off) in instances {
            let mut q = Parser { file: p.file, endian: p.endian, pos: off };
            let r = q.arr::<10>("instance buffer").and_then(|mut kind| {
                if kind.starts_with(b"options") {
                    // Instance headers may carry their own options; skip them.
                    let mut skip = Vec::new();
                    let mut sink = Options::default();
                    read_options_v6_into(&mut q, &mut sink, &mut skip)?;
                    kind = q.arr("instance buffer")?;
                }
                read_flyrecord_v6(&mut q, &kind, cpus, self.page_size, name)
            });
            // A broken instance does not hide the top-level buffer.
            match r {
                Ok(b) => self.buffers.push(b),
                Err(e) => {
                    self.damage.get_or_insert(*e);
                }
            }
        }
        Ok(())
    }

    fn read_options_v6(&mut self, p: &mut Parser, instances: &mut Vec<(String, u64)>) -> R<()> {
        read_options_v6_into(p, &mut self.options, instances)
    }

    // ---- v7 ----

    fn read_v7(&mut self, p: &mut Parser) -> R<()> {
        self.compression = p.cstr("compression header")?;
        self.compression_version = p.cstr("compression header")?;
        let mut next = p.u64("file header")?;
        let mut sections: Vec<(u16, u64)> = Vec::new();
        let mut seen = 0;
        // End of the first options section: trace-cmd writes the flyrecord
        // section right after it, which recovery relies on.
        let mut first_end = 0;
        while next != 0 {
            seen += 1;
            let r = if seen > 1024 {
                Err(bad("options", next, "options sections loop"))
            } else {
                self.section(next, "options").and_then(|(id, data, base)| {
                    if id != OPT_DONE {
                        return Err(bad("options", next, "section is not an options section"));
                    }
                    if first_end == 0 {
                        first_end = next + 16 + data_len_in_file(self.file, self.endian, next);
                    }
                    self.parse_options_v7(&data, base, &mut sections)
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
        for &(id, off) in &sections {
            // Only these six ids are collected (parse_options_v7).
            let name = match id {
                OPT_HEADER_INFO => "header info",
                OPT_FTRACE_EVENTS => "ftrace formats",
                OPT_EVENT_FORMATS => "event formats",
                OPT_KALLSYMS => "kallsyms",
                OPT_PRINTK => "printk formats",
                _ => "cmdlines",
            };
            let (_, mut data, base) = self.section(off, name)?;
            let mut c = Cursor::new(&data, self.endian);
            match id {
                OPT_HEADER_INFO => {
                    let h = read_header_info(&data, self.endian, 0, Some(base))?;
                    self.header_page = h.0;
                    self.header_event = h.1;
                }
                OPT_FTRACE_EVENTS => {
                    let (mut f, _) = read_ftrace_formats(&data, self.endian, 0).map_err(|e| rebase(e, base))?;
                    f.append(&mut self.formats);
                    self.formats = f;
                }
                OPT_EVENT_FORMATS => {
                    read_event_formats(&data, self.endian, 0, &mut self.formats).map_err(|e| rebase(e, base))?;
                }
                OPT_KALLSYMS | OPT_PRINTK => {
                    let n = cu32(&mut c, name, base)?;
                    c.bytes(n as usize).map_err(eof(name, base))?;
                    // In place: kallsyms is megabytes.
                    data.truncate(4 + n as usize);
                    data.drain(..4);
                    let t = text_owned(data);
                    if id == OPT_KALLSYMS {
                        self.kallsyms = t;
                    } else {
                        self.printk = t;
                    }
                }
                _ => {
                    let n = cu64(&mut c, name, base)?;
                    let b = usize::try_from(n).ok().and_then(|n| c.bytes(n).ok());
                    let b = b.ok_or_else(|| Box::new(Error::new(name, base, Reason::Truncated { at: base + 8, want: n })))?;
                    self.cmdlines = text(b);
                }
            }
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
        if let Some(i) = self.buffers.iter().position(|b| b.name.is_empty()) {
            let b = self.buffers.remove(i);
            self.buffers.insert(0, b);
        }
        Ok(())
    }

    /// A cut file lost its BUFFER option: find the top-level flyrecord
    /// section after the first options section and walk its per-CPU zstd
    /// chunk lists, which say where each CPU's data ends (each CPU starts on
    /// a page boundary). Uncompressed data does not say where a CPU ends, so
    /// only a single-CPU file is recovered then.
    fn recover_buffer(&self, at: u64) -> Option<Buffer> {
        let mut p = Parser { file: self.file, endian: self.endian, pos: at };
        let (id, flags, size) = p.section_head("buffer section").ok()?;
        if id != OPT_BUFFER {
            return None;
        }
        let ncpu = self.options.cpu_count?;
        let ps = self.page_size as u64;
        let align = |v: u64| v.div_ceil(ps) * ps;
        let compressed = flags & SEC_FL_COMPRESS != 0;
        let mut b = Buffer { name: String::new(), clock: self.options.clock().map(String::from), page_size: self.page_size, compressed, latency: false, text_at: 0, cpus: Vec::new() };
        let mut off = align(p.pos);
        if !compressed {
            if ncpu == 1 {
                b.cpus.push(CpuData { cpu: 0, offset: off, size: (p.pos + size).saturating_sub(off) });
                return Some(b);
            }
            return None;
        }
        for cpu in 0..ncpu.min(1 << 12) {
            let mut q = Parser { file: self.file, endian: self.endian, pos: off };
            let mut end = Some(());
            if let Ok(n) = q.u32("cpu data") {
                for _ in 0..n {
                    match q.u32("cpu data").and_then(|z| q.u32("cpu data").map(|_| z)) {
                        Ok(z) => q.pos += z as u64,
                        Err(_) => {
                            end = None;
                            break;
                        }
                    }
                }
            } else {
                end = None;
            }
            match end {
                Some(()) => {
                    // trace-cmd's convention: the size leaves out the chunk count.
                    b.cpus.push(CpuData { cpu, offset: off, size: q.pos - off - 4 });
                    off = align(q.pos);
                }
                None => {
                    // Cut inside this CPU: read what is there, then report the cut.
                    b.cpus.push(CpuData { cpu, offset: off, size: u64::MAX - off });
                    break;
                }
            }
        }
        Some(b)
    }

    /// Read a v7 section at `off`: its id, its (decompressed) data and the
    /// file offset of the data (for error messages).
    fn section(&self, off: u64, name: &'static str) -> R<(u16, Vec<u8>, u64)> {
        let mut p = Parser { file: self.file, endian: self.endian, pos: off };
        let (id, flags, size) = p.section_head(name)?;
        let base = p.pos;
        if flags & SEC_FL_COMPRESS == 0 {
            return Ok((id, read_vec(self.file, name, base, size)?, base));
        }
        let zsize = p.u32(name)?;
        let usize_ = p.u32(name)?;
        let z = read_vec(self.file, name, p.pos, zsize as u64)?;
        let data = self.decompress(name, base, &z, usize_ as usize)?;
        Ok((id, data, base))
    }

    fn decompress(&self, name: &'static str, off: u64, z: &[u8], size: usize) -> R<Vec<u8>> {
        Ok(decompress(&self.compression, name, off, z, size)?)
    }

    /// One v7 options section; returns the offset of the next one (0 = last).
    fn parse_options_v7(&mut self, data: &[u8], base: u64, sections: &mut Vec<(u16, u64)>) -> R<u64> {
        let s = "options";
        let mut c = Cursor::new(data, self.endian);
        loop {
            let at = base + c.pos() as u64;
            let id = cu16(&mut c, s, base)?;
            let size = cu32(&mut c, s, base)?;
            let d = c.bytes(size as usize).map_err(eof(s, base))?;
            let mut oc = Cursor::new(d, self.endian);
            match id {
                OPT_DONE => return cu64(&mut oc, s, at),
                OPT_BUFFER | OPT_BUFFER_TEXT => {
                    let off = cu64(&mut oc, s, at)?;
                    let name = cstring(&mut oc, s, at)?;
                    let clock = cstring(&mut oc, s, at)?;
                    let mut b = Buffer { name, clock: Some(clock), page_size: self.page_size, compressed: false, latency: id == OPT_BUFFER_TEXT, text_at: off, cpus: Vec::new() };
                    if id == OPT_BUFFER {
                        b.page_size = cu32(&mut oc, s, at)?;
                        if !(256..=(1 << 24)).contains(&b.page_size) {
                            return Err(bad("BUFFER option", at, "implausible sub-buffer size"));
                        }
                        let n = cu32(&mut oc, s, at)?;
                        if n as usize > d.len() / 20 {
                            return Err(bad("BUFFER option", at, "CPU count larger than the option"));
                        }
                        for _ in 0..n {
                            let cpu = cu32(&mut oc, s, at)?;
                            let offset = cu64(&mut oc, s, at)?;
                            let size = cu64(&mut oc, s, at)?;
                            b.cpus.push(CpuData { cpu, offset, size });
                        }
                    }
                    // The flyrecord section header says whether the data is compressed.
                    let mut p = Parser { file: self.file, endian: self.endian, pos: off };
                    let _id = p.u16("buffer section")?;
                    let flags = p.u16("buffer section")?;
                    b.compressed = flags & SEC_FL_COMPRESS != 0;
                    if b.compressed {
                        check_compression(&self.compression, "buffer section", off)?;
                    }
                    self.buffers.push(b);
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS | OPT_PRINTK | OPT_CMDLINES => {
                    sections.push((id, cu64(&mut oc, s, at)?));
                }
                _ => apply_common_option(&mut self.options, id, d, self.endian),
            }
        }
    }
}

/// The size field of the section header at `off` (0 when unreadable).
fn data_len_in_file(file: &dyn ReadAt, e: Endian, off: u64) -> u64 {
    let mut p = Parser { file, endian: e, pos: off + 8 };
    p.u64("options").unwrap_or(0)
}

fn rebase(mut e: Box<Error>, base: u64) -> Box<Error> {
    e.offset += base;
    if let Reason::Truncated { at, .. } = &mut e.reason {
        *at += base;
    }
    e
}

/// Options with the same meaning in v6 and v7.
fn apply_common_option(o: &mut Options, id: u16, d: &[u8], e: Endian) {
    let mut c = Cursor::new(d, e);
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
        OPT_CPUSTAT => return o.cpustat.push(text(d)),
        OPT_CPUCOUNT => return o.cpu_count = c.u32().ok(),
        OPT_TRACEID => return o.trace_id = c.u64().ok(),
        OPT_TSC2NSEC => {
            if let (Ok(m), Ok(s), Ok(off)) = (c.u32(), c.u32(), c.u64()) {
                o.tsc2nsec = Some((m, s, off));
            }
            return;
        }
        _ => return,
    };
    *slot = Some(text(d));
}

fn read_options_v6_into(p: &mut Parser, o: &mut Options, instances: &mut Vec<(String, u64)>) -> R<()> {
    let mut n = 0;
    loop {
        let at = p.pos;
        let id = p.u16("options")?;
        if id == OPT_DONE {
            return Ok(());
        }
        n += 1;
        if n > 1 << 20 {
            return Err(bad("options", at, "too many options"));
        }
        let size = p.u32("options")?;
        let d = p.bytes("options", size as usize)?;
        if id == OPT_BUFFER {
            let mut c = Cursor::new(&d, p.endian);
            let off = cu64(&mut c, "BUFFER option", at)?;
            let name = cstring(&mut c, "BUFFER option", at)?;
            instances.push((name, off));
        } else {
            apply_common_option(o, id, &d, p.endian);
        }
    }
}

/// After "flyrecord\0" (or "latency  \0"): the per-CPU offsets and sizes.
fn read_flyrecord_v6(p: &mut Parser, kind: &[u8], cpus: u32, page_size: u32, name: String) -> R<Buffer> {
    let mut b = Buffer { name, clock: None, page_size, compressed: false, latency: false, text_at: p.pos, cpus: Vec::new() };
    if kind.starts_with(b"latency") {
        b.latency = true;
        return Ok(b);
    }
    if !kind.starts_with(b"flyrecord") {
        return Err(bad("flyrecord", p.pos - 10, "expected \"flyrecord\" or \"latency\""));
    }
    if cpus > 1 << 16 {
        return Err(bad("flyrecord", p.pos, "implausible CPU count"));
    }
    for cpu in 0..cpus {
        let offset = p.u64("flyrecord")?;
        let size = p.u64("flyrecord")?;
        b.cpus.push(CpuData { cpu, offset, size });
    }
    Ok(b)
}

/// "header_page\0" size:u64 text "header_event\0" size:u64 text; returns
/// both texts and the bytes used. `base` rebases offsets for in-memory data.
fn read_header_info(file: &dyn ReadAt, e: Endian, start: u64, base: Option<u64>) -> R<(String, String, u64)> {
    let mut p = Parser { file, endian: e, pos: start };
    let r = (|| Ok((header_text(&mut p, b"header_page\0")?, header_text(&mut p, b"header_event\0")?)))();
    let (hp, he) = r.map_err(|err| match base {
        Some(b) => rebase(err, b),
        None => err,
    })?;
    Ok((hp, he, p.pos - start))
}

/// `tag` then size:u64 and that many bytes of text.
fn header_text(p: &mut Parser, tag: &[u8]) -> R<String> {
    let s = "header info";
    let at = p.pos;
    if p.bytes(s, tag.len())? != tag {
        return Err(bad(s, at, if tag.len() == 12 { "missing \"header_page\"" } else { "missing \"header_event\"" }));
    }
    let n = p.u64(s)?;
    if n > 1 << 20 {
        return Err(bad(s, p.pos, if tag.len() == 12 { "implausible header_page size" } else { "implausible header_event size" }));
    }
    Ok(text_owned(p.bytes(s, n as usize)?))
}

/// count:u32 then { size:u64 text } — the `ftrace` system's formats.
fn read_ftrace_formats(file: &dyn ReadAt, e: Endian, start: u64) -> R<(Vec<Format>, u64)> {
    let mut p = Parser { file, endian: e, pos: start };
    let mut v = Vec::new();
    read_formats(&mut p, "ftrace formats", "ftrace", &mut v)?;
    Ok((v, p.pos - start))
}

/// systems:u32 then { name\0 count:u32 { size:u64 text } }.
fn read_event_formats(file: &dyn ReadAt, e: Endian, start: u64, out: &mut Vec<Format>) -> R<u64> {
    let s = "event formats";
    let mut p = Parser { file, endian: e, pos: start };
    let systems = p.u32(s)?;
    for _ in 0..systems {
        let system = p.cstr(s)?;
        read_formats(&mut p, s, &system, out)?;
    }
    Ok(p.pos - start)
}

/// count:u32 then { size:u64 text }: the formats of one system.
fn read_formats(p: &mut Parser, s: &'static str, system: &str, out: &mut Vec<Format>) -> R<()> {
    let n = p.u32(s)?;
    for _ in 0..n {
        let len = p.u64(s)?;
        if len > 1 << 24 {
            return Err(bad(s, p.pos, "implausible format size"));
        }
        out.push(Format { system: String::from(system), text: text_owned(p.bytes(s, len as usize)?) });
    }
    Ok(())
}

fn check_compression(name: &str, section: &'static str, off: u64) -> Result<(), Error> {
    if name == "zstd" && cfg!(feature = "zstd") {
        Ok(())
    } else {
        Err(Error::new(section, off, Reason::Compression(String::from(name))))
    }
}

/// Decompress one block of the file's algorithm to exactly `size` bytes.
pub(crate) fn decompress(algo: &str, section: &'static str, off: u64, z: &[u8], size: usize) -> Result<Vec<u8>, Error> {
    check_compression(algo, section, off)?;
    if size as u64 > MAX_BLOCK {
        return Err(Error::corrupt(section, off, "implausible uncompressed size"));
    }
    #[cfg(feature = "zstd")]
    {
        zstd::decode_vec(z, size).ok_or_else(|| Error::new(section, off, Reason::Decompress))
    }
    #[cfg(not(feature = "zstd"))]
    {
        let _ = z;
        Err(Error::new(section, off, Reason::Compression(String::from(algo))))
    }
}

/// Like `decompress`, into `out` (resized to `size`; its old bytes are
/// overwritten, not zeroed first, so a reused buffer costs nothing).
pub(crate) fn decompress_into(algo: &str, section: &'static str, off: u64, z: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), Error> {
    check_compression(algo, section, off)?;
    if size as u64 > MAX_BLOCK {
        return Err(Error::corrupt(section, off, "implausible uncompressed size"));
    }
    #[cfg(feature = "zstd")]
    {
        out.resize(size, 0);
        match zstd::decode(z, out) {
            Some(n) if n == size => Ok(()),
            _ => Err(Error::new(section, off, Reason::Decompress)),
        }
    }
    #[cfg(not(feature = "zstd"))]
    {
        let _ = (z, out);
        Err(Error::new(section, off, Reason::Compression(String::from(algo))))
    }
}
