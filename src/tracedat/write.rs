//! trace.dat writer (versions 6 and 7; v7 uncompressed or zstd-compressed).
//!
//! No I/O here: [`layout`] turns the collected metadata and the size of each
//! CPU's data into a list of [`Seg`]ments. Concatenated in order they are
//! the file: byte runs built here, and holes of known length that the caller
//! fills with the ring-buffer pages it recorded (from temp files, with
//! `copy_file_range`, without ever holding them in memory) — as they are,
//! or, in a compressed file, as the chunks [`CpuCompressor`] makes of them.
//!
//! Layout (the order trace-cmd 3.x writes, so its reader and ours agree):
//! - v6: header, header_page/header_event, ftrace formats, event formats,
//!   kallsyms, printk_formats, saved_cmdlines, CPU count, `options  `,
//!   `flyrecord` with per-CPU (offset, size) and `[clock]`, page-aligned data;
//!   each instance adds its own `flyrecord` block after, found by a BUFFER option.
//! - v7: header with the offset of the first options section, then sections
//!   (id, flags, description string id, size) back to back to the end of the
//!   file — readers walk them in order to find the strings section, so every
//!   byte after the header belongs to some section, padding included.
//! - v7 compressed (as `trace-cmd record` writes by default): the header
//!   names the algorithm and its version; the metadata sections and the
//!   strings are each one block { zsize:u32 size:u32 frame } with section
//!   flag 1, the options stay plain (as trace-cmd's), and the flyrecord
//!   section (flag 1) holds each CPU's chunk list at a page boundary.

use alloc::string::String;
use alloc::vec::Vec;

/// Option and section ids (trace-cmd's `enum tracecmd_file_options`).
pub mod opt {
    pub const DONE: u16 = 0;
    pub const DATE: u16 = 1;
    pub const CPUSTAT: u16 = 2;
    pub const BUFFER: u16 = 3;
    pub const TRACECLOCK: u16 = 4;
    pub const UNAME: u16 = 5;
    pub const HOOK: u16 = 6;
    pub const OFFSET: u16 = 7;
    pub const CPUCOUNT: u16 = 8;
    pub const VERSION: u16 = 9;
    pub const PROCMAPS: u16 = 10;
    pub const TRACEID: u16 = 11;
    pub const STRINGS: u16 = 15;
    pub const HEADER_INFO: u16 = 16;
    pub const FTRACE_EVENTS: u16 = 17;
    pub const EVENT_FORMATS: u16 = 18;
    pub const KALLSYMS: u16 = 19;
    pub const PRINTK: u16 = 20;
    pub const CMDLINES: u16 = 21;
    /// Not trace-cmd's: ftbox's pid→tgid table (saved_tgids text), read by
    /// ftcat; written only when the kernel saved tgids (option record-tgid).
    pub const SAVED_TGIDS: u16 = 0x4654;
    /// Not trace-cmd's: ftbox's tracer state at record time (`tracer=`,
    /// `options=` the trace_options words, `model=` latency-format's
    /// preemption model), read by ftcat.
    pub const STATE: u16 = 0x4655;
    /// Not trace-cmd's: kernel values some print fmts read, `name=value`
    /// lines (`kvars`), read by ftcat.
    pub const KVARS: u16 = 0x4656;
    /// Not trace-cmd's: a section of zeros that ends where the next options
    /// section begins (see [`super::staged_head`]). Readers skip it: no
    /// option names it.
    pub const FILLER: u16 = 0x4657;
}

/// How a v7 file stores its metadata sections and CPU data (v6 knows no
/// compression: the writer ignores this for it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    #[default]
    None,
    /// zstd, trace-cmd's default, through ruzstd's encoder.
    #[cfg(feature = "zstd-write")]
    Zstd,
}

impl Compression {
    /// An algorithm this build writes, by the name trace-cmd gives it (the
    /// header's algorithm string; `ftrec --compression NAME`).
    pub fn by_name(name: &str) -> Option<Compression> {
        match name {
            "none" => Some(Compression::None),
            #[cfg(feature = "zstd-write")]
            "zstd" => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// The header's algorithm and version strings. trace-cmd checks only
    /// the name; the version says which encoder wrote the frames.
    fn header(self) -> (&'static [u8], &'static [u8]) {
        match self {
            Compression::None => (b"none", b""),
            #[cfg(feature = "zstd-write")]
            Compression::Zstd => (b"zstd", b"ruzstd 0.9"),
        }
    }

    /// Append `raw` as one block { zsize:u32 size:u32 frame } in the file's
    /// byte order (`be`): trace-cmd's tracecmd_compress_block() layout, used
    /// for a compressed section and for each chunk of CPU data.
    fn block(self, be: bool, raw: &[u8], out: &mut Vec<u8>) {
        let at = out.len();
        out.extend_from_slice(&[0; 8]);
        match self {
            Compression::None => out.extend_from_slice(raw),
            #[cfg(feature = "zstd-write")]
            Compression::Zstd => super::zstd_write::encode(raw, out),
        }
        let z = (out.len() - at - 8) as u32;
        for (i, v) in [z, raw.len() as u32].into_iter().enumerate() {
            out[at + 4 * i..at + 4 * i + 4].copy_from_slice(&if be { v.to_be_bytes() } else { v.to_le_bytes() });
        }
    }
}

/// Sub-buffers per compressed chunk of CPU data: trace-cmd's ten, which
/// every reader's chunk cache expects (ftcat's takes up to 64).
pub const CHUNK_PAGES: usize = 10;

/// Turns one CPU's raw pages into what a compressed v7 file holds for that
/// CPU: the chunk count, then each run of [`CHUNK_PAGES`] sub-buffers as one
/// block (trace-cmd's tracecmd_compress_copy_from() layout). The stream's
/// whole length is that CPU's entry in [`Buffer::cpu_sizes`]. No I/O: the
/// caller reads the pages and stores the output where it likes.
pub struct CpuCompressor {
    c: Compression,
    be: bool,
    chunk: usize,
}

impl CpuCompressor {
    pub fn new(c: Compression, big_endian: bool, page_size: u32) -> CpuCompressor {
        CpuCompressor { c, be: big_endian, chunk: CHUNK_PAGES * page_size.max(1) as usize }
    }

    /// Raw bytes per chunk: give [`Self::chunk`] this many at a time (the
    /// last chunk of a CPU may be shorter).
    pub fn chunk_len(&self) -> usize {
        self.chunk
    }

    /// The stream's first four bytes: how many chunks `raw_len` bytes make.
    pub fn head(&self, raw_len: u64) -> [u8; 4] {
        let n = raw_len.div_ceil(self.chunk as u64) as u32;
        if self.be { n.to_be_bytes() } else { n.to_le_bytes() }
    }

    /// Append the block of one chunk of raw pages to `out`.
    pub fn chunk(&self, raw: &[u8], out: &mut Vec<u8>) {
        self.c.block(self.be, raw, out);
    }

    /// The whole stream for `raw` held in memory.
    pub fn stream(&self, raw: &[u8]) -> Vec<u8> {
        let mut out = self.head(raw.len() as u64).to_vec();
        for c in raw.chunks(self.chunk) {
            self.chunk(c, &mut out);
        }
        out
    }
}

/// One recorded ring buffer: the top level (`name` empty) or an instance.
pub struct Buffer {
    pub name: String,
    /// The selected trace clock, without brackets ("local", "mono", ...).
    pub clock: String,
    /// Sub-buffer ("page") size of this buffer's raw data.
    pub page_size: u32,
    /// Byte length of each CPU's data as the caller supplies it, indexed
    /// by CPU (0 = nothing recorded): the raw pages, or in a compressed file
    /// their [`CpuCompressor`] stream.
    pub cpu_sizes: Vec<u64>,
}

/// Everything that goes into the file besides the raw pages.
pub struct Meta {
    /// 6 or 7.
    pub version: u32,
    /// v7 only.
    pub compression: Compression,
    pub big_endian: bool,
    /// Size of `long` (4 or 8), used only when `header_page` does not say
    /// the kernel's: the file header records the traced kernel's `long`
    /// (header_page's `commit` field), never the recorder's — a 32-bit
    /// ftrec on a 64-bit kernel must still write 8.
    pub long_size: u8,
    /// The host page size, written in the file header.
    pub page_size: u32,
    pub header_page: Vec<u8>,
    pub header_event: Vec<u8>,
    /// events/ftrace/*/format contents.
    pub ftrace_formats: Vec<Vec<u8>>,
    /// (system name, format files of its events).
    pub systems: Vec<(String, Vec<Vec<u8>>)>,
    pub kallsyms: Vec<u8>,
    pub printk_formats: Vec<u8>,
    pub cmdlines: Vec<u8>,
    /// Number of CPUs of the machine.
    pub cpus: u32,
    /// Plain options written as they are (TRACECLOCK, UNAME, VERSION, CPUSTAT, ...).
    /// The writer adds CPUCOUNT, BUFFER and the section offsets itself.
    pub options: Vec<(u16, Vec<u8>)>,
    /// `buffers[0]` is the top level (name ""), the rest instances.
    pub buffers: Vec<Buffer>,
}

/// A piece of the output file.
pub enum Seg {
    Bytes(Vec<u8>),
    /// The raw data of `buffers[buffer]`, CPU `cpu`: exactly `len` bytes.
    Data { buffer: usize, cpu: usize, len: u64 },
}

/// Appends numbers in the file's byte order and tracks the absolute offset.
struct Out {
    segs: Vec<Seg>,
    cur: Vec<u8>,
    /// Offset of `cur[0]` in the file.
    base: u64,
    be: bool,
}

impl Out {
    fn pos(&self) -> u64 {
        self.base + self.cur.len() as u64
    }
    fn bytes(&mut self, b: &[u8]) {
        self.cur.extend_from_slice(b);
    }
    /// `v` in `n` bytes of the file's byte order: every number goes through
    /// here (one copy, not one per width).
    #[inline(never)]
    fn num(&mut self, v: u64, n: usize) {
        let b = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
        let i = if self.be { 8 - n } else { 0 };
        self.cur.extend_from_slice(&b[i..i + n]);
    }
    fn u16(&mut self, v: u16) {
        self.num(v.into(), 2);
    }
    fn u32(&mut self, v: u32) {
        self.num(v.into(), 4);
    }
    fn u64(&mut self, v: u64) {
        self.num(v, 8);
    }
    fn cstr(&mut self, s: &[u8]) {
        self.bytes(s);
        self.cur.push(0);
    }
    /// A length of `n` bytes, then the bytes.
    #[inline(never)]
    fn sized(&mut self, b: &[u8], n: usize) {
        self.num(b.len() as u64, n);
        self.bytes(b);
    }
    /// An option's id and length (the data follows).
    #[inline(never)]
    fn opt(&mut self, id: u16, len: usize) {
        self.u16(id);
        self.u32(len as u32);
    }
    /// Overwrite 8 bytes written earlier (still in `cur`) at absolute offset `at`.
    #[inline(never)]
    fn patch64(&mut self, at: u64, v: u64) {
        let b = if self.be { v.to_be_bytes() } else { v.to_le_bytes() };
        let i = (at - self.base) as usize;
        if let Some(s) = self.cur.get_mut(i..i + 8) {
            s.copy_from_slice(&b);
        }
    }
    /// A buffer's CPU data, each CPU's at a page boundary.
    fn data(&mut self, b: &Buffer, buffer: usize) {
        let ps = u64::from(b.page_size.max(1));
        for (cpu, &len) in b.cpu_sizes.iter().enumerate() {
            let p = self.pos();
            self.cur.resize(self.cur.len() + ((ps - p % ps) % ps) as usize, 0);
            if len > 0 {
                let cur = core::mem::take(&mut self.cur);
                self.base += cur.len() as u64 + len;
                if !cur.is_empty() {
                    self.segs.push(Seg::Bytes(cur));
                }
                self.segs.push(Seg::Data { buffer, cpu, len });
            }
        }
    }
}

/// The metadata, in the same order in both versions (v7 puts each in a
/// section with this description, id 16 + index).
const SECTIONS: [&str; 6] = ["headers", "ftrace events", "events format", "kallsyms", "printk", "command lines"];

fn formats(o: &mut Out, v: &[Vec<u8>]) {
    o.u32(v.len() as u32);
    for f in v {
        o.sized(f, 8);
    }
}

fn body(o: &mut Out, m: &Meta, i: usize) {
    match i {
        0 => {
            o.cstr(b"header_page");
            o.sized(&m.header_page, 8);
            o.cstr(b"header_event");
            o.sized(&m.header_event, 8);
        }
        1 => formats(o, &m.ftrace_formats),
        2 => {
            o.u32(m.systems.len() as u32);
            for (name, evs) in &m.systems {
                o.cstr(name.as_bytes());
                formats(o, evs);
            }
        }
        3 => o.sized(&m.kallsyms, 4),
        4 => o.sized(&m.printk_formats, 4),
        _ => o.sized(&m.cmdlines, 8),
    }
}

/// Offsets of each CPU's data (page aligned) after a block header of `hdr`
/// bytes at `start`, and the end of the block.
fn plan(b: &Buffer, start: u64, hdr: u64) -> (Vec<u64>, u64) {
    let ps = u64::from(b.page_size.max(1));
    let mut off = start + hdr;
    let mut offs = Vec::new();
    for &len in &b.cpu_sizes {
        off = off.div_ceil(ps) * ps;
        offs.push(off);
        off += len;
    }
    (offs, off)
}

/// The file as segments. `buffers[i].cpu_sizes[c]` must equal the number of
/// bytes the caller will supply for `Seg::Data { buffer: i, cpu: c }`.
#[inline(never)]
pub fn layout(m: &Meta) -> Vec<Seg> {
    let mut o = file_header(m);
    // (v6 is written only by ftrec --file-version 6, or -N to an old listener.)
    #[cfg(any(feature = "convert", feature = "net", test))]
    if m.version < 7 {
        layout_v6(&mut o, m);
    } else {
        layout_v7(&mut o, m);
    }
    #[cfg(not(any(feature = "convert", feature = "net", test)))]
    layout_v7(&mut o, m);
    if !o.cur.is_empty() {
        o.segs.push(Seg::Bytes(o.cur));
    }
    o.segs
}

/// The magic, version, byte order, `long` and page size.
fn file_header(m: &Meta) -> Out {
    let mut o = Out { segs: Vec::new(), cur: Vec::new(), base: 0, be: m.big_endian };
    o.bytes(b"\x17\x08\x44tracing");
    o.bytes(if m.version >= 7 { b"7\0" } else { b"6\0" });
    let long = kernel_long_size(&m.header_page).unwrap_or(m.long_size);
    o.bytes(&[m.big_endian as u8, long]);
    o.u32(m.page_size);
    o
}

fn options(o: &mut Out, m: &Meta) {
    for (id, data) in &m.options {
        o.opt(*id, data.len());
        o.bytes(data);
    }
}

#[cfg(any(feature = "convert", feature = "net", test))]
#[inline(never)]
fn layout_v6(o: &mut Out, m: &Meta) {
    for i in 0..SECTIONS.len() {
        body(o, m, i);
    }
    o.u32(m.cpus);
    o.bytes(b"options  \0");
    options(o, m);
    // Instances: BUFFER option = offset of its "flyrecord" block + name,
    // patched once the block's place is known.
    let mut patch = Vec::new();
    for b in m.buffers.iter().skip(1) {
        o.opt(opt::BUFFER, 8 + b.name.len() + 1);
        patch.push(o.pos());
        o.u64(0);
        o.cstr(b.name.as_bytes());
        let n = b.cpu_sizes.len() as u32;
        if n != m.cpus {
            o.opt(opt::CPUCOUNT, 4);
            o.u32(n);
        }
    }
    o.u16(opt::DONE);
    // v6 `flyrecord` blocks: per-CPU (offset, size), then "[clock]" and the
    // data. Each block's place follows from the sizes: patch the instances'
    // BUFFER options (still in the unemitted run) before any data goes out.
    let hdr = |b: &Buffer| 10 + 16 * b.cpu_sizes.len() as u64 + 8 + b.clock.len() as u64 + 2;
    let mut at = o.pos();
    for (i, b) in m.buffers.iter().enumerate() {
        if i > 0 {
            o.patch64(patch[i - 1], at);
        }
        at = plan(b, at, hdr(b)).1;
    }
    for (i, b) in m.buffers.iter().enumerate() {
        let (offs, _) = plan(b, o.pos(), hdr(b));
        o.bytes(b"flyrecord\0");
        for (off, &len) in offs.iter().zip(&b.cpu_sizes) {
            o.u64(*off);
            o.u64(len);
        }
        o.u64(b.clock.len() as u64 + 2);
        o.bytes(b"[");
        o.bytes(b.clock.as_bytes());
        o.bytes(b"]");
        o.data(b, i);
    }
}

/// A v7 section header with its description appended to `strings`; returns
/// where its size goes (patched by the caller).
#[inline(never)]
fn section(o: &mut Out, strings: &mut Vec<u8>, id: u16, c: Compression, desc: &[&[u8]]) -> u64 {
    o.u16(id);
    o.u16((c != Compression::None) as u16); // flags: 1 = compressed
    o.u32(strings.len() as u32);
    for d in desc {
        strings.extend_from_slice(d);
    }
    strings.push(0);
    let at = o.pos();
    o.u64(0);
    at
}

/// A section's contents, which `fill` writes: as they are, or compressed
/// into one block.
fn contents(o: &mut Out, c: Compression, fill: impl FnOnce(&mut Out)) {
    if c == Compression::None {
        return fill(o);
    }
    let mut raw = Out { segs: Vec::new(), cur: Vec::new(), base: 0, be: o.be };
    fill(&mut raw);
    c.block(o.be, &raw.cur, &mut o.cur);
}

/// What both v7 layouts begin with: the compression's name and version,
/// the first `n` metadata sections (in `SECTIONS` order), and the first
/// options section up to the CPU count, pointing at them. Returns the
/// section descriptions so far and where that options section's size goes.
fn v7_head(o: &mut Out, m: &Meta, n: usize) -> (Vec<u8>, u64) {
    let c = m.compression;
    let (algo, version) = c.header();
    o.cstr(algo);
    o.cstr(version);
    let opts_at = o.pos();
    o.u64(0);
    let mut strings = Vec::new();
    let mut refs = [0u64; SECTIONS.len()];
    for (i, desc) in SECTIONS.iter().enumerate().take(n) {
        let at = section(o, &mut strings, opt::HEADER_INFO + i as u16, c, &[desc.as_bytes()]);
        refs[i] = at - 8;
        contents(o, c, |o| body(o, m, i));
        o.patch64(at, o.pos() - at - 8);
    }

    // The options section is written before the data, so its offsets into
    // the data sections are computed from the sizes.
    o.patch64(opts_at, o.pos());
    // Plain even in a compressed file, as trace-cmd writes it: its BUFFER
    // options are sized before the data they point at is placed.
    let at = section(o, &mut strings, opt::DONE, Compression::None, &[b"options"]);
    for (i, &off) in refs[..n].iter().enumerate() {
        o.opt(opt::HEADER_INFO + i as u16, 8);
        o.u64(off);
    }
    o.opt(opt::CPUCOUNT, 4);
    o.u32(m.cpus);
    (strings, at)
}

#[inline(never)]
fn layout_v7(o: &mut Out, m: &Meta) {
    let c = m.compression;
    let (mut strings, at) = v7_head(o, m, SECTIONS.len());
    options(o, m);
    // BUFFER options need the data offsets: compute the whole data layout
    // first. Each buffer section header is 16 bytes and starts where the
    // previous one ended.
    let opt_len = |b: &Buffer| {
        let k = b.cpu_sizes.iter().filter(|&&l| l > 0).count();
        8 + b.name.len() + 1 + b.clock.len() + 1 + 4 + 4 + 20 * k
    };
    // trace-cmd's size of compressed CPU data leaves out the chunk count.
    let count = if c == Compression::None { 0 } else { 4 };
    let mut pos = o.pos() + m.buffers.iter().map(|b| 6 + opt_len(b) as u64).sum::<u64>() + 6 + 8;
    for b in &m.buffers {
        let (offs, end) = plan(b, pos, 16);
        o.opt(opt::BUFFER, opt_len(b));
        o.u64(pos);
        o.cstr(b.name.as_bytes());
        o.cstr(b.clock.as_bytes());
        o.u32(b.page_size);
        o.u32(b.cpu_sizes.iter().filter(|&&l| l > 0).count() as u32);
        for (cpu, (&off, &len)) in offs.iter().zip(&b.cpu_sizes).enumerate() {
            if len > 0 {
                o.u32(cpu as u32);
                o.u64(off);
                o.u64(len - count);
            }
        }
        pos = end;
    }
    // DONE: no further options section.
    o.opt(opt::DONE, 8);
    o.u64(0);
    o.patch64(at, o.pos() - at - 8);

    for (i, b) in m.buffers.iter().enumerate() {
        let sec = o.pos();
        let at = section(o, &mut strings, opt::BUFFER, c, &[b"buffer flyrecord ", b.name.as_bytes()]);
        o.patch64(at, plan(b, sec, 16).1 - sec - 16);
        o.data(b, i);
    }

    // Strings last: the description of the strings section itself included.
    let at = section(o, &mut strings, opt::STRINGS, c, &[b"strings"]);
    contents(o, c, |o| o.bytes(&strings));
    o.patch64(at, o.pos() - at - 8);
}

/// A v7 file's metadata for a receiver that writes what it gets and cannot
/// be asked to seek back (trace-cmd's listener), when part of it is known
/// only at the end of the recording (saved_cmdlines, the per-CPU stats,
/// the tracer state) and the receiver must hear from the sender every few
/// seconds meanwhile. What [`staged_head`] returns goes first: the header,
/// the sections known at the start, an options section naming them, whose
/// next-options link points past a FILLER section of `filler` zeros. The
/// sender sends those zeros as it likes (a few at a time keep the receiver
/// waiting), then [`Staged::tail`]: the options known at the end,
/// saved_cmdlines and the strings. No CPU data: the receiver appends it
/// (compressed, in a compressed file: trace-cmd's listener compresses as
/// the file's header says). Sections are compressed as in [`layout`]:
/// all but the options (and the filler).
pub struct Staged {
    /// The section descriptions so far.
    strings: Vec<u8>,
    /// Where the tail starts (the end of the filler).
    tail_at: u64,
    be: bool,
    c: Compression,
}

/// The head of a staged file (see [`Staged`]): `m`'s headers, formats,
/// kallsyms and printk formats, and its CPU count. `m.version` must be 7.
pub fn staged_head(m: &Meta, filler: u64) -> (Vec<u8>, Staged) {
    let c = m.compression;
    let mut o = file_header(m);
    let (mut strings, at) = v7_head(&mut o, m, SECTIONS.len() - 1);
    o.opt(opt::DONE, 8);
    let next_at = o.pos();
    o.u64(0);
    o.patch64(at, o.pos() - at - 8);
    let at = section(&mut o, &mut strings, opt::FILLER, Compression::None, &[b"filler"]);
    o.patch64(at, filler);
    let tail_at = o.pos() + filler;
    o.patch64(next_at, tail_at);
    (o.cur, Staged { strings, tail_at, be: m.big_endian, c })
}

impl Staged {
    /// The rest of the file after the filler: an options section with
    /// `m.options`, then `m.cmdlines` and the strings.
    pub fn tail(mut self, m: &Meta) -> Vec<u8> {
        let c = self.c;
        let mut o = Out { segs: Vec::new(), cur: Vec::new(), base: self.tail_at, be: self.be };
        let at = section(&mut o, &mut self.strings, opt::DONE, Compression::None, &[b"options"]);
        o.opt(opt::CMDLINES, 8);
        let cmdlines_at = o.pos();
        o.u64(0);
        options(&mut o, m);
        o.opt(opt::DONE, 8);
        o.u64(0);
        o.patch64(at, o.pos() - at - 8);
        let last = SECTIONS.len() - 1;
        o.patch64(cmdlines_at, o.pos());
        let at = section(&mut o, &mut self.strings, opt::HEADER_INFO + last as u16, c, &[SECTIONS[last].as_bytes()]);
        contents(&mut o, c, |o| body(o, m, last));
        o.patch64(at, o.pos() - at - 8);
        let at = section(&mut o, &mut self.strings, opt::STRINGS, c, &[b"strings"]);
        let strings = self.strings;
        contents(&mut o, c, |o| o.bytes(&strings));
        o.patch64(at, o.pos() - at - 8);
        o.cur
    }
}

/// What a scan of raw ring-buffer pages found.
#[derive(Default)]
pub struct PageStats {
    pub pages: u64,
    /// Data events (not padding or time stamps).
    pub events: u64,
    /// Pages whose header says events were lost before them.
    pub lost_flags: u64,
    /// Sum of the lost-event counts stored on pages (when the kernel stored one).
    pub lost_events: u64,
    /// Pages that could not be walked (bad commit or event length).
    pub bad_pages: u64,
}

const MISSED_EVENTS: u64 = 1 << 31;
const MISSED_STORED: u64 = 1 << 30;

/// The traced kernel's `long` size from its `events/header_page` text: the
/// size of the page header's `commit` field (a `local_t`), as libtraceevent
/// takes it. None when the text does not parse.
pub fn kernel_long_size(header_page: &[u8]) -> Option<u8> {
    let hp = core::str::from_utf8(header_page).ok()?;
    let l = crate::ring::PageLayout::parse(hp, "", crate::cursor::Endian::Little, 0).ok()?;
    Some(l.commit_size)
}

/// Walk raw pages (`page_size` each, header = u64 timestamp + `long_size`
/// commit) and call `seen(type_id)` for every data event's `common_type`.
/// Never panics on bad data: a page that does not parse is counted and skipped.
/// The counts are added to `st` (a recording is scanned in chunks).
pub fn scan_pages(data: &[u8], page_size: usize, long_size: usize, be: bool, st: &mut PageStats, mut seen: impl FnMut(u16)) {
    if page_size == 0 || !(long_size == 4 || long_size == 8) {
        return;
    }
    let rd = |b: &[u8], at: usize, n: usize| -> Option<u64> {
        let s = b.get(at..at.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if be { s[i] } else { s[n - 1 - i] };
            v = (v << 8) | u64::from(byte);
        }
        Some(v)
    };
    let hdr = 8 + long_size;
    for page in data.chunks(page_size) {
        st.pages += 1;
        let Some(commit) = rd(page, 8, long_size) else {
            st.bad_pages += 1;
            continue;
        };
        let flags = commit & (MISSED_EVENTS | MISSED_STORED);
        let len = (commit & 0x3fff_ffff) as usize;
        if flags & MISSED_EVENTS != 0 {
            st.lost_flags += 1;
            if flags & MISSED_STORED != 0 {
                st.lost_events += rd(page, hdr + len, long_size).unwrap_or(0);
            }
        }
        let Some(body) = page.get(hdr..hdr.saturating_add(len)) else {
            st.bad_pages += 1;
            continue;
        };
        let mut i = 0usize;
        while i + 4 <= body.len() {
            let Some(h) = rd(body, i, 4) else { break };
            let type_len = (if be { h >> 27 } else { h & 0x1f }) as u32;
            let delta = if be { h & 0x07ff_ffff } else { h >> 5 };
            let size = match type_len {
                29 => {
                    if delta == 0 {
                        break; // the rest of the page is padding
                    }
                    match rd(body, i + 4, 4) {
                        Some(l) => 4 + l as usize,
                        None => break,
                    }
                }
                30 | 31 => 8,
                0 => match rd(body, i + 4, 4) {
                    Some(l) if l >= 4 => {
                        if let Some(id) = rd(body, i + 8, 2) {
                            st.events += 1;
                            seen(id as u16);
                        }
                        4 + l as usize
                    }
                    _ => {
                        st.bad_pages += 1;
                        break;
                    }
                },
                n => {
                    if let Some(id) = rd(body, i + 4, 2) {
                        st.events += 1;
                        seen(id as u16);
                    }
                    4 + 4 * n as usize
                }
            };
            i += (size + 3) & !3;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn meta(version: u32, sizes: Vec<Vec<u64>>) -> Meta {
        let names = ["", "inst"];
        Meta {
            version,
            compression: Compression::None,
            big_endian: false,
            long_size: 8,
            page_size: 4096,
            header_page: b"hp".to_vec(),
            header_event: b"he".to_vec(),
            ftrace_formats: vec![b"f1".to_vec(), b"f22".to_vec()],
            systems: vec![(String::from("sched"), vec![b"s1".to_vec()])],
            kallsyms: b"k".to_vec(),
            printk_formats: b"p".to_vec(),
            cmdlines: b"1 init\n".to_vec(),
            cpus: 2,
            options: vec![(opt::UNAME, b"Linux\0".to_vec())],
            buffers: sizes
                .into_iter()
                .enumerate()
                .map(|(i, s)| Buffer { name: String::from(names[i]), clock: String::from("local"), page_size: 4096, cpu_sizes: s })
                .collect(),
        }
    }

    /// The file, with CPU data filled with a byte naming (buffer, cpu).
    fn render(m: &Meta) -> Vec<u8> {
        let data = |buffer: usize, cpu: usize| vec![(0x10 * (buffer + 1) + cpu) as u8; m.buffers[buffer].cpu_sizes[cpu] as usize];
        render_with(m, &data)
    }

    /// The file, with `data(buffer, cpu)` in the holes.
    fn render_with(m: &Meta, data: &dyn Fn(usize, usize) -> Vec<u8>) -> Vec<u8> {
        let mut f = Vec::new();
        for s in layout(m) {
            match s {
                Seg::Bytes(b) => f.extend_from_slice(&b),
                Seg::Data { buffer, cpu, len } => {
                    assert_eq!(len, m.buffers[buffer].cpu_sizes[cpu]);
                    let d = data(buffer, cpu);
                    assert_eq!(d.len() as u64, len);
                    f.extend_from_slice(&d);
                }
            }
        }
        f
    }

    /// events/header_page of a 6.18 x86_64 kernel.
    #[cfg(feature = "zstd-write")]
    const HP64: &[u8] = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

    /// Pages that compress somewhat, as trace pages do: a counter and a
    /// few tag bytes per 8-byte record, different for every (buffer, cpu).
    #[cfg(feature = "zstd-write")]
    fn pages(buffer: usize, cpu: usize, n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        for i in 0..(n * 4096 / 8) as u32 {
            v.extend_from_slice(&(i.wrapping_mul(2_654_435_761) >> 18).to_le_bytes());
            v.extend_from_slice(&[buffer as u8, cpu as u8, 0x81, (i % 7) as u8]);
        }
        v
    }

    /// A zstd file: the header names zstd, every section but the options
    /// is flagged compressed, the CPU data is a chunk list of at most ten
    /// pages a chunk, and ftcat's reader gets back the same metadata and
    /// byte-equal pages as from the plain file.
    #[cfg(feature = "zstd-write")]
    #[test]
    fn zstd_file_reads_back_the_same_pages() {
        use crate::tracedat::TraceDat;
        // 25 pages: chunks of 10, 10, 5; an instance with one empty CPU.
        let npages = [[25, 1], [0, 2]];
        let z = CpuCompressor::new(Compression::Zstd, false, 4096);
        let stream = |b: usize, c: usize| z.stream(&pages(b, c, npages[b][c]));
        let mut files = Vec::new();
        for c in [Compression::None, Compression::Zstd] {
            let mut m = meta(7, vec![vec![0, 0], vec![0, 0]]);
            m.header_page = HP64.to_vec();
            m.header_event = Vec::new();
            m.kallsyms = (0..500).flat_map(|i| alloc::format!("ffffffff81{:06x} T f{}\n", i * 48, i * 7).into_bytes()).collect();
            m.compression = c;
            for (b, buf) in m.buffers.iter_mut().enumerate() {
                for (cpu, size) in buf.cpu_sizes.iter_mut().enumerate() {
                    let n = npages[b][cpu];
                    *size = if n == 0 { 0 } else if c == Compression::None { 4096 * n as u64 } else { stream(b, cpu).len() as u64 };
                }
            }
            let data = |b: usize, cpu: usize| match (npages[b][cpu], c) {
                (0, _) => Vec::new(),
                (n, Compression::None) => pages(b, cpu, n),
                _ => stream(b, cpu),
            };
            files.push((render_with(&m, &data), m));
        }
        let (plain, zst) = (&files[0].0, &files[1].0);
        assert!(zst.len() < plain.len(), "{} vs {}", zst.len(), plain.len());
        assert_eq!(&zst[18..34], b"zstd\0ruzstd 0.9\0");
        // Section flags: compressed except the options sections.
        let mut at = 34 + 8;
        while at < zst.len() {
            let (id, flags) = (u16_at(zst, at), u16_at(zst, at + 2));
            assert_eq!(flags, (id != opt::DONE) as u16, "section {id} at {at}");
            at += 16 + u64_at(zst, at + 8) as usize;
        }
        assert_eq!(at, zst.len());
        let (a, b) = (TraceDat::open(plain).unwrap(), TraceDat::open(zst).unwrap());
        assert_eq!((a.compression.as_str(), b.compression.as_str(), b.compression_version.as_str()), ("none", "zstd", "ruzstd 0.9"));
        assert!(b.damage.is_none());
        assert_eq!((&a.header_page, &a.kallsyms, &a.printk, &a.cmdlines), (&b.header_page, &b.kallsyms, &b.printk, &b.cmdlines));
        assert_eq!(a.formats, b.formats);
        assert_eq!(a.buffers.len(), 2);
        for (ba, bb) in a.buffers.iter().zip(&b.buffers) {
            assert_eq!((&ba.name, ba.compressed, bb.compressed), (&bb.name, false, true));
            let bi = if ba.name.is_empty() { 0 } else { 1 };
            let cpus: Vec<u32> = bb.cpus.iter().map(|c| c.cpu).collect();
            assert_eq!(cpus, (0..2).filter(|&c| npages[bi][c as usize] > 0).collect::<Vec<u32>>());
            for (ca, cb) in ba.cpus.iter().zip(&bb.cpus) {
                let read = |td: &TraceDat, buf, cpu| {
                    let mut v = Vec::new();
                    let mut p = td.cpu_pages(buf, cpu);
                    while let Some(page) = p.next_page() {
                        v.extend_from_slice(page.unwrap());
                    }
                    v
                };
                let want = pages(bi, ca.cpu as usize, npages[bi][ca.cpu as usize]);
                assert_eq!(read(&a, ba, ca), want);
                assert_eq!(read(&b, bb, cb), want, "buffer {bi} cpu {}", cb.cpu);
                // trace-cmd's size convention: the chunk list without its count.
                assert_eq!(cb.size + 4, stream(bi, cb.cpu as usize).len() as u64);
                assert_eq!(u32_at(zst, cb.offset as usize), npages[bi][cb.cpu as usize].div_ceil(CHUNK_PAGES) as u32);
            }
        }
    }

    fn u16_at(f: &[u8], i: usize) -> u16 {
        u16::from_le_bytes([f[i], f[i + 1]])
    }
    fn u32_at(f: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(f[i..i + 4].try_into().unwrap())
    }
    fn u64_at(f: &[u8], i: usize) -> u64 {
        u64::from_le_bytes(f[i..i + 8].try_into().unwrap())
    }

    #[test]
    fn v7_sections_tile_the_file_and_buffers_point_at_the_data() {
        let m = meta(7, vec![vec![8192, 0], vec![4096, 12288]]);
        let f = render(&m);
        assert_eq!(&f[..12], b"\x17\x08\x44tracing7\0");
        assert_eq!((f[12], f[13], u32_at(&f, 14)), (0, 8, 4096));
        assert_eq!(&f[18..24], b"none\0\0");
        let opts = u64_at(&f, 24) as usize;
        // Sections back to back up to the end: what trace-cmd's string
        // lookup walks.
        let mut at = 32;
        let mut ids = Vec::new();
        while at < f.len() {
            ids.push((u16_at(&f, at), at));
            at += 16 + u64_at(&f, at + 8) as usize;
        }
        assert_eq!(at, f.len());
        let id_list: Vec<u16> = ids.iter().map(|x| x.0).collect();
        assert_eq!(id_list, [16, 17, 18, 19, 20, 21, 0, 3, 3, 15]);
        assert_eq!(ids[6].1, opts);
        // Walk the options; check each BUFFER's CPU entries.
        let mut i = opts + 16;
        let mut buffers = 0;
        loop {
            let (id, size) = (u16_at(&f, i), u32_at(&f, i + 2) as usize);
            let d = &f[i + 6..i + 6 + size];
            match id {
                0 => {
                    assert_eq!(u64_at(d, 0), 0);
                    break;
                }
                16..=21 => assert_eq!(u16_at(&f, u64_at(d, 0) as usize), id),
                3 => {
                    let sec = u64_at(d, 0) as usize;
                    assert_eq!(u16_at(&f, sec), 3);
                    let name_end = 8 + d[8..].iter().position(|&c| c == 0).unwrap();
                    let clock_end = name_end + 1 + d[name_end + 1..].iter().position(|&c| c == 0).unwrap();
                    assert_eq!(&d[name_end + 1..clock_end], b"local");
                    let mut p = clock_end + 1;
                    assert_eq!(u32_at(d, p), 4096);
                    let n = u32_at(d, p + 4) as usize;
                    p += 8;
                    for _ in 0..n {
                        let (cpu, off, len) = (u32_at(d, p) as usize, u64_at(d, p + 4) as usize, u64_at(d, p + 12) as usize);
                        assert_eq!(off % 4096, 0);
                        assert_eq!(len as u64, m.buffers[buffers].cpu_sizes[cpu]);
                        let want = (0x10 * (buffers + 1) + cpu) as u8;
                        assert!(f[off..off + len].iter().all(|&b| b == want));
                        p += 20;
                    }
                    buffers += 1;
                }
                _ => {}
            }
            i += 6 + size;
        }
        assert_eq!(buffers, 2);
    }

    /// The header says the kernel's `long` (header_page's commit field), not
    /// the recorder's: a 32-bit ftrec on a 64-bit kernel still writes 8.
    #[test]
    fn header_long_size_is_the_kernels() {
        // events/header_page of a 6.18 x86_64 kernel, and of a 32-bit one.
        let hp64 = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        let hp32 = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
        assert_eq!(kernel_long_size(hp64), Some(8));
        assert_eq!(kernel_long_size(hp32), Some(4));
        assert_eq!(kernel_long_size(b"hp"), None);
        for v in [6, 7] {
            for (hp, host, want) in [(&hp64[..], 4, 8), (&hp32[..], 8, 4), (&b"hp"[..], 4, 4)] {
                let mut m = meta(v, vec![vec![4096, 0]]);
                m.header_page = hp.to_vec();
                m.header_event = Vec::new();
                m.long_size = host;
                let f = render(&m);
                assert_eq!(f[13], want, "v{v} host long {host}");
                if hp.len() > 2 {
                    let td = crate::tracedat::TraceDat::open(&f).unwrap();
                    assert_eq!((td.long_size, td.kernel_long_size()), (want, want));
                }
            }
        }
    }

    #[test]
    fn v6_offsets_are_aligned_and_instances_found() {
        let m = meta(6, vec![vec![4096, 8192], vec![0, 4096]]);
        let f = render(&m);
        assert_eq!(&f[..12], b"\x17\x08\x44tracing6\0");
        let mut i = 18;
        assert_eq!(&f[i..i + 12], b"header_page\0");
        i += 12 + 8 + 2;
        assert_eq!(&f[i..i + 13], b"header_event\0");
        i += 13 + 8 + 2;
        assert_eq!(u32_at(&f, i), 2);
        i += 4 + 8 + 2 + 8 + 3;
        assert_eq!(u32_at(&f, i), 1);
        i += 4 + 6 + 4 + 8 + 2;
        assert_eq!(u32_at(&f, i), 1); // kallsyms
        i += 4 + 1;
        i += 4 + 1; // printk
        i += 8 + 7; // cmdlines
        assert_eq!(u32_at(&f, i), 2);
        i += 4;
        assert_eq!(&f[i..i + 10], b"options  \0");
        i += 10;
        let mut inst_at = 0;
        loop {
            let id = u16_at(&f, i);
            if id == 0 {
                i += 2;
                break;
            }
            let size = u32_at(&f, i + 2) as usize;
            if id == opt::BUFFER {
                inst_at = u64_at(&f, i + 6) as usize;
                assert_eq!(&f[i + 14..i + 6 + size], b"inst\0");
            }
            i += 6 + size;
        }
        for (b, start) in [(0usize, i), (1, inst_at)] {
            assert_eq!(&f[start..start + 10], b"flyrecord\0");
            for cpu in 0..2 {
                let off = u64_at(&f, start + 10 + 16 * cpu) as usize;
                let len = u64_at(&f, start + 18 + 16 * cpu) as usize;
                assert_eq!(off % 4096, 0);
                assert_eq!(len as u64, m.buffers[b].cpu_sizes[cpu]);
                assert!(f[off..off + len].iter().all(|&x| x == (0x10 * (b + 1) + cpu) as u8));
            }
            let clock_len = u64_at(&f, start + 42) as usize;
            assert_eq!(&f[start + 50..start + 50 + clock_len], b"[local]");
        }
    }

    fn page(commit: u64, body: &[u8], lost: Option<u64>) -> Vec<u8> {
        let mut p = vec![0u8; 256];
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p[16..16 + body.len()].copy_from_slice(body);
        if let Some(n) = lost {
            let at = 16 + body.len();
            p[at..at + 8].copy_from_slice(&n.to_le_bytes());
        }
        p
    }

    #[test]
    fn scan_counts_events_ids_and_lost_flags() {
        let mut body = Vec::new();
        // type_len 2: 8 bytes payload, id 7.
        body.extend_from_slice(&(2u32 | (5 << 5)).to_le_bytes());
        body.extend_from_slice(&[7, 0, 0, 0, 0, 0, 0, 0]);
        // time extend (8 bytes total).
        body.extend_from_slice(&30u32.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        // type_len 0: length word 12 (itself + 8 payload), id 9.
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&12u32.to_le_bytes());
        body.extend_from_slice(&[9, 0, 0, 0, 0, 0, 0, 0]);
        // padding with a length.
        body.extend_from_slice(&(29u32 | (1 << 5)).to_le_bytes());
        body.extend_from_slice(&4u32.to_le_bytes());
        let len = body.len() as u64;
        let mut data = page(len, &body, None);
        data.extend(page(len | MISSED_EVENTS | MISSED_STORED, &body, Some(42)));
        data.extend(page(0x3fff_ffff, &[], None)); // commit beyond the page
        let mut ids = Vec::new();
        let mut st = PageStats::default();
        scan_pages(&data, 256, 8, false, &mut st, |id| ids.push(id));
        assert_eq!(ids, [7, 9, 7, 9]);
        assert_eq!((st.pages, st.events, st.lost_flags, st.lost_events, st.bad_pages), (3, 4, 1, 42, 1));
        // Truncated input never panics.
        for n in 0..data.len() {
            scan_pages(&data[..n], 256, 8, false, &mut PageStats::default(), |_| {});
        }
    }
}
