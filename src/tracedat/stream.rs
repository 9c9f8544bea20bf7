//! The ftbox stream: a recording written as it happens, readable however
//! far it got. `ftrec -o -` sends it down a pipe; ftrec's file mode writes
//! it to the output while recording (a kill or a full disk leaves a file
//! that ends in the middle of it) and turns it into a trace.dat at the end.
//!
//! ```text
//! stream := head frame*
//! head   := "\x17\x08\x44ftstream\0" version:u32            (16 bytes)
//! frame  := tag:[u8;4] cpu:u32 len:u64 payload[len]         (header: 16 bytes)
//! ```
//! Frame headers are little-endian; the pages inside are the kernel's own
//! byte order, which the metadata says.
//! - `META` (first, once): what is known before recording, as a trace.dat
//!   v7 without CPU data: header page/event, event formats, kallsyms,
//!   printk formats, saved_cmdlines, options (clock, uname, CPU count, the
//!   buffer's name, clock and sub-buffer size). One parser reads both.
//! - `PAGE`: whole sub-buffers of CPU `cpu`, in the order its reader got
//!   them (a CPU's frames never overtake each other; CPUs interleave).
//! - `LATE` (last, once): what is known only at the end, again as a
//!   trace.dat v7 without CPU data: saved_cmdlines and saved_tgids seen
//!   during the run, per-CPU stats, the tracer state, kallsyms when META
//!   left it out, and the formats of the systems enabled. Its parts replace
//!   META's where they are not empty.
//!
//! A stream without `LATE` was cut: every whole page before the cut is
//! kept. [`Index`] finds the frames of a stream that can be read at any
//! offset; [`Virtual`] presents it as the trace.dat it stands for (no copy:
//! the pages are read from the stream where they are), which is what ftcat
//! prints and `ftcat --save`/ftrec write out. [`Demux`] reads a stream as
//! it arrives, for the merge.

use super::write::{self, opt, Meta, PageStats, Seg};
use super::{Buffer, CpuData, Error, IoError, ReadAt, Reason, TraceDat};
#[cfg(feature = "stream-pipe")]
use crate::merge::{Fill, PageSource};
#[cfg(feature = "stream-pipe")]
use alloc::{collections::VecDeque, rc::Rc};
use alloc::string::String;
use alloc::vec::Vec;
#[cfg(feature = "stream-pipe")]
use core::cell::RefCell;

/// The first 12 bytes of a stream; a u32 version follows.
pub const MAGIC: &[u8; 12] = b"\x17\x08\x44ftstream\0";
pub const VERSION: u32 = 1;
/// Bytes of the stream head and of a frame header.
pub const HEAD_LEN: usize = 16;
pub const FRAME_LEN: usize = 16;
/// Largest META/LATE frame accepted (as trace.dat's metadata blocks).
const MAX_META: u64 = 1 << 30;
/// CPU numbers past this are damage, not a CPU (memory stays independent
/// of the number of CPUs a stream claims).
const MAX_CPUS: usize = crate::text::kernel::MAX_CPUS;

/// What a frame holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Meta,
    Pages,
    Late,
}

/// (tag, kind): one row per frame kind.
const KINDS: [(&[u8; 4], Kind); 3] = [(b"META", Kind::Meta), (b"PAGE", Kind::Pages), (b"LATE", Kind::Late)];

/// The stream head.
pub fn head() -> [u8; HEAD_LEN] {
    let mut h = [0u8; HEAD_LEN];
    h[..12].copy_from_slice(MAGIC);
    h[12..].copy_from_slice(&VERSION.to_le_bytes());
    h
}

/// Does `b` start like a stream?
pub fn is_stream(b: &[u8]) -> bool {
    b.starts_with(MAGIC)
}

/// A frame header.
pub fn frame(kind: Kind, cpu: u32, len: u64) -> [u8; FRAME_LEN] {
    let mut h = [0u8; FRAME_LEN];
    for (tag, k) in KINDS {
        if k == kind {
            h[..4].copy_from_slice(tag);
        }
    }
    h[4..8].copy_from_slice(&cpu.to_le_bytes());
    h[8..].copy_from_slice(&len.to_le_bytes());
    h
}

/// A frame header's kind, CPU and payload length; None when the tag is
/// none of ours (damage).
pub fn parse_frame(h: &[u8; FRAME_LEN]) -> Option<(Kind, u32, u64)> {
    let kind = KINDS.iter().find(|(t, _)| h[..4] == t[..])?.1;
    let cpu = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
    let len = u64::from_le_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]);
    Some((kind, cpu, len))
}

/// The metadata of a META or LATE frame: a trace.dat v7 without CPU data.
/// `cpus` is the CPU count, `cpu_sizes` left empty.
pub fn meta_bytes(m: &Meta) -> Vec<u8> {
    let mut v = Vec::new();
    for s in write::layout(m) {
        if let Seg::Bytes(b) = s {
            v.extend_from_slice(&b);
        }
    }
    v
}

#[cold]
fn damaged(at: u64, what: &'static str) -> Error {
    Error::new("stream", at, Reason::Corrupt(what))
}

/// The sub-buffer size a META says (as plausible as trace.dat's).
fn page_size_of(td: &TraceDat) -> Result<u32, Error> {
    let ps = td.buffers.first().map_or(td.page_size, |b| b.page_size);
    if !(256..=(1 << 24)).contains(&ps) {
        return Err(damaged(HEAD_LEN as u64, "implausible sub-buffer size"));
    }
    Ok(ps)
}

/// Where the parts of a stream are, found by reading its frame headers.
pub struct Index {
    pub meta: Vec<u8>,
    pub late: Option<Vec<u8>>,
    pub page_size: u32,
    /// Per CPU (by CPU), runs of whole pages: (offset in the stream,
    /// length).
    pub cpus: Vec<(u32, Vec<(u64, u64)>)>,
    /// Why the stream ends early (cut, damaged); None after a LATE frame.
    pub cut: Option<Error>,
}

/// Read `len` bytes at `off`, all or nothing.
fn read_exact(src: &dyn ReadAt, off: u64, buf: &mut [u8]) -> Result<bool, Error> {
    let mut done = 0;
    while done < buf.len() {
        match src.read_at(off + done as u64, &mut buf[done..]) {
            Ok(0) => return Ok(false),
            Ok(n) => done += n,
            Err(IoError(e)) => return Err(Error::new("stream", off, Reason::Io(e))),
        }
    }
    Ok(true)
}

fn truncated(at: u64, want: u64) -> Error {
    Error::new("stream", at, Reason::Truncated { at, want })
}

/// A metadata payload of `len` bytes at `off` (what is there of it).
fn payload(src: &dyn ReadAt, off: u64, len: u64, size: u64) -> Result<Vec<u8>, Error> {
    if len > MAX_META {
        return Err(damaged(off, "implausible metadata size"));
    }
    let mut v = alloc::vec![0u8; len.min(size.saturating_sub(off)) as usize];
    if !read_exact(src, off, &mut v)? || (v.len() as u64) < len {
        return Err(truncated(off, len));
    }
    Ok(v)
}

impl Index {
    /// Index the stream in `src` (`size` bytes). An error only when there
    /// is nothing to read (no head, no whole META); a stream that ends
    /// early says so in `cut`.
    #[inline(never)]
    pub fn read(src: &dyn ReadAt, size: u64) -> Result<Index, Error> {
        let mut h = [0u8; HEAD_LEN];
        if !read_exact(src, 0, &mut h)? || !is_stream(&h) {
            return Err(Error::new("stream", 0, Reason::BadMagic));
        }
        if u32::from_le_bytes([h[12], h[13], h[14], h[15]]) != VERSION {
            return Err(Error::new("stream", 12, Reason::Version(u32::from_le_bytes([h[12], h[13], h[14], h[15]]))));
        }
        let mut f = [0u8; FRAME_LEN];
        let at = HEAD_LEN as u64;
        if !read_exact(src, at, &mut f)? {
            return Err(truncated(at, FRAME_LEN as u64));
        }
        let meta = match parse_frame(&f) {
            Some((Kind::Meta, _, len)) => payload(src, at + FRAME_LEN as u64, len, size)?,
            _ => return Err(damaged(at, "the stream does not begin with its metadata")),
        };
        let page_size = page_size_of(&TraceDat::open(&meta)?)?;
        let mut idx = Index { meta, late: None, page_size, cpus: Vec::new(), cut: None };
        let mut at = at + FRAME_LEN as u64 + idx.meta.len() as u64;
        let ps = u64::from(page_size);
        idx.cut = loop {
            match read_exact(src, at, &mut f) {
                Ok(true) => {}
                Ok(false) => break Some(truncated(at, FRAME_LEN as u64)),
                Err(e) => break Some(e),
            }
            let body = at + FRAME_LEN as u64;
            match parse_frame(&f) {
                Some((Kind::Pages, cpu, len)) if len % ps == 0 && (cpu as usize) < MAX_CPUS => {
                    let have = size.saturating_sub(body).min(len);
                    let whole = have - have % ps;
                    if whole > 0 {
                        idx.add_run(cpu, body, whole);
                    }
                    if have < len {
                        break Some(truncated(body + whole, ps));
                    }
                    at = body + len;
                }
                Some((Kind::Late, _, len)) => match payload(src, body, len, size) {
                    Ok(v) => {
                        idx.late = Some(v);
                        break None;
                    }
                    Err(e) => break Some(e),
                },
                _ => break Some(damaged(at, "not a frame (damaged stream)")),
            }
        };
        Ok(idx)
    }

    fn add_run(&mut self, cpu: u32, off: u64, len: u64) {
        let i = match self.cpus.binary_search_by_key(&cpu, |c| c.0) {
            Ok(i) => i,
            Err(i) => {
                self.cpus.insert(i, (cpu, Vec::new()));
                i
            }
        };
        let runs = &mut self.cpus[i].1;
        match runs.last_mut() {
            Some(r) if r.0 + r.1 == off => r.1 += len,
            _ => runs.push((off, len)),
        }
    }
}

/// How [`Virtual::new`] shapes the trace.dat.
pub struct Shape {
    /// 6 or 7.
    pub version: u32,
    /// Keep only the newest this-many bytes of each CPU.
    pub keep: Option<u64>,
    /// Keep only the formats of systems LATE lists and of events that
    /// occur in the data (ftrec's files), not every format META carries.
    pub used_formats: bool,
}

/// A piece of the virtual file: bytes of its own, or a run of the stream.
enum Piece {
    Bytes(Vec<u8>),
    Run { off: u64, len: u64 },
}

/// A stream file read in place, as ftcat prints it: META's trace.dat
/// (its CPU table filled in from the index) with LATE's parts over it, and
/// each CPU's pages read where they lie in the stream. Unlike [`Virtual`],
/// nothing is laid out again: the board build reads its own recordings
/// with no trace.dat writer in it.
pub struct InPlace<'s> {
    /// META's bytes, then each CPU's runs in turn (CPU order).
    view: Virtual<'s>,
    late: Option<Vec<u8>>,
    page_size: u32,
    /// (CPU, where its pages start in `view`, their length), by CPU.
    cpus: Vec<CpuData>,
    /// Why the stream ends early (see [`Index::cut`]).
    pub cut: Option<Error>,
}

impl<'s> InPlace<'s> {
    #[inline(never)]
    pub fn new(src: &'s dyn ReadAt, idx: Index) -> InPlace<'s> {
        let Index { meta, late, page_size, cpus: runs, cut } = idx;
        let mut at = meta.len() as u64;
        let mut pieces = alloc::vec![(0, Piece::Bytes(meta))];
        let mut cpus = Vec::new();
        for (cpu, runs) in runs {
            let offset = at;
            for (off, len) in runs {
                pieces.push((at, Piece::Run { off, len }));
                at += len;
            }
            cpus.push(CpuData { cpu, offset, size: at - offset });
        }
        InPlace { view: Virtual { src, pieces, len: at, stats: Vec::new() }, late, page_size, cpus, cut }
    }

    /// The recording: what [`Virtual::new`] would lay out, read without
    /// the copy (the same metadata, the same records).
    #[inline(never)]
    pub fn open(&self) -> Result<TraceDat<'_>, Error> {
        let mut td = TraceDat::open(&self.view)?;
        let ps = self.page_size;
        td.page_size = ps;
        // META names the one buffer recorded; its CPU table is the index's.
        td.buffers.truncate(1);
        if td.buffers.is_empty() {
            td.buffers.push(Buffer { name: String::new(), clock: Some(String::from("local")), page_size: ps, compressed: false, latency: false, text_at: 0, cpus: Vec::new() });
        }
        let b = &mut td.buffers[0];
        (b.page_size, b.compressed, b.latency) = (ps, false, false);
        b.cpus.clone_from(&self.cpus);
        let top = self.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0);
        let o = &mut td.options;
        o.cpu_count = Some(o.cpu_count.unwrap_or(0).max(top).min(MAX_CPUS as u32));
        let Some(late) = &self.late else { return Ok(td) };
        // LATE's parts replace META's where they are not empty.
        let l = TraceDat::open(late)?;
        if !l.cmdlines.is_empty() {
            td.cmdlines = l.cmdlines;
        }
        if td.kallsyms.is_empty() {
            td.kallsyms = l.kallsyms;
        }
        let o = &mut td.options;
        if l.options.trace_clock.is_some() {
            o.trace_clock = l.options.trace_clock;
        }
        (o.cpustat, o.state, o.tgids) = (l.options.cpustat, l.options.state, l.options.tgids);
        Ok(td)
    }
}

/// The trace.dat a stream stands for, read through [`ReadAt`]: metadata
/// built in memory, CPU data read from the stream where it lies.
pub struct Virtual<'s> {
    src: &'s dyn ReadAt,
    /// (offset in the virtual file, piece), in file order.
    pieces: Vec<(u64, Piece)>,
    pub len: u64,
    /// What each CPU's pages hold (when `used_formats` looked at them).
    pub stats: Vec<(u32, PageStats)>,
}

/// A metadata frame's trace.dat as the writer's [`Meta`].
fn meta_of(td: &TraceDat) -> Meta {
    let mut m = Meta {
        version: 7,
        compression: write::Compression::None,
        big_endian: td.endian == crate::cursor::Endian::Big,
        long_size: td.long_size,
        page_size: td.page_size,
        header_page: td.header_page.as_bytes().to_vec(),
        header_event: td.header_event.as_bytes().to_vec(),
        ftrace_formats: Vec::new(),
        systems: Vec::new(),
        kallsyms: td.kallsyms.as_bytes().to_vec(),
        printk_formats: td.printk.as_bytes().to_vec(),
        cmdlines: td.cmdlines.as_bytes().to_vec(),
        cpus: td.options.cpu_count.unwrap_or(0),
        options: Vec::new(),
        buffers: Vec::new(),
    };
    add_formats(&mut m, td, &|_| true);
    let o = &td.options;
    let text = |v: &mut Vec<(u16, Vec<u8>)>, id, s: &Option<String>| {
        if let Some(s) = s {
            v.push((id, [s.as_bytes(), b"\0"].concat()));
        }
    };
    text(&mut m.options, opt::TRACECLOCK, &o.trace_clock);
    text(&mut m.options, opt::UNAME, &o.uname);
    text(&mut m.options, opt::VERSION, &o.version);
    // Kernel values the formats read, known before recording.
    text(&mut m.options, opt::KVARS, &o.kvars);
    m
}

/// The formats of `td` whose system `keep` accepts, added to `m` (a system
/// already there is not added twice). (Once per file: `keep` as `dyn`
/// and out of line, one copy for its three callers.)
#[inline(never)]
fn add_formats(m: &mut Meta, td: &TraceDat, keep: &dyn Fn(&str) -> bool) {
    for f in &td.formats {
        let text = f.text.as_bytes().to_vec();
        if f.system == "ftrace" {
            if !m.ftrace_formats.contains(&text) {
                m.ftrace_formats.push(text);
            }
            continue;
        }
        if !keep(&f.system) {
            continue;
        }
        match m.systems.iter_mut().find(|s| s.0 == f.system) {
            Some(s) if !s.1.contains(&text) => s.1.push(text),
            Some(_) => {}
            None => m.systems.push((f.system.clone(), alloc::vec![text])),
        }
    }
}

#[cfg(any(feature = "convert", feature = "stream-pipe"))]
/// The `ID:` of a format text.
fn format_id(text: &str) -> Option<u16> {
    text.lines().find_map(|l| l.strip_prefix("ID:")).and_then(|v| v.trim_ascii().parse().ok())
}

/// What [`Virtual`] lays out: the trace.dat's metadata (without its
/// buffers) and where each CPU's data lies in the source. A caller that
/// stores the data otherwise (compressed, elsewhere) changes `cpus` and
/// `meta.compression` before [`Virtual::of`].
pub struct Plan {
    pub meta: Meta,
    /// The buffer's name, clock and sub-buffer size.
    name: String,
    clock: String,
    page_size: u32,
    /// (CPU, its runs (offset, length) in the source, in order), by CPU.
    pub cpus: Vec<(u32, Vec<(u64, u64)>)>,
    /// What each CPU's pages hold (when `used_formats` looked at them).
    pub stats: Vec<(u32, PageStats)>,
}

impl Plan {
    /// The plan of the trace.dat the indexed stream in `src` stands for.
    pub fn new(src: &dyn ReadAt, idx: &Index, shape: &Shape) -> Result<Plan, Error> {
        let td = TraceDat::open(&idx.meta)?;
        let late = match &idx.late {
            Some(l) => Some(TraceDat::open(l)?),
            None => None,
        };
        let mut m = meta_of(&td);
        m.version = shape.version;
        // The header's page size is the sub-buffer size, as ftrec writes it
        // (v6 has no other place for it).
        m.page_size = idx.page_size;
        let (name, clock) = match td.buffers.first() {
            Some(b) => (b.name.clone(), b.clock.clone().unwrap_or_default()),
            None => (String::new(), String::from("local")),
        };
        // Each CPU's runs, the oldest dropped past the keep limit.
        let mut cpus: Vec<(u32, Vec<(u64, u64)>)> = idx.cpus.clone();
        if let Some(keep) = shape.keep {
            for (_, runs) in cpus.iter_mut() {
                let mut total: u64 = runs.iter().map(|r| r.1).sum();
                while total > keep {
                    let r = &mut runs[0];
                    let cut = (total - keep).min(r.1);
                    r.0 += cut;
                    r.1 -= cut;
                    total -= cut;
                    if r.1 == 0 {
                        runs.remove(0);
                    }
                }
            }
        }
        if late.is_none() {
            // Cut before LATE: the tracer state as it was at the start.
            if let Some(st) = &td.options.state {
                m.options.push((opt::STATE, [st.as_bytes(), b"\0"].concat()));
            }
        }
        if let Some(l) = &late {
            if !l.cmdlines.is_empty() {
                m.cmdlines = l.cmdlines.as_bytes().to_vec();
            }
            if m.kallsyms.is_empty() {
                m.kallsyms = l.kallsyms.as_bytes().to_vec();
            }
            if let Some(c) = &l.options.trace_clock {
                m.options.retain(|o| o.0 != opt::TRACECLOCK);
                m.options.insert(0, (opt::TRACECLOCK, [c.as_bytes(), b"\0"].concat()));
            }
            let o = &mut m.options;
            for s in &l.options.cpustat {
                o.push((opt::CPUSTAT, [s.as_bytes(), b"\0"].concat()));
            }
            if let Some(s) = &l.options.state {
                o.push((opt::STATE, [s.as_bytes(), b"\0"].concat()));
            }
            if let Some(t) = &l.options.tgids {
                o.push((opt::SAVED_TGIDS, t.as_bytes().to_vec()));
            }
        }
        // Only a trace.dat written out (ftrec's, ftcat --save's) drops the
        // formats nothing used; ftcat reading a stream keeps them all.
        #[cfg(any(feature = "convert", feature = "stream-pipe"))]
        let stats = if shape.used_formats { keep_used_formats(src, &cpus, idx, &td, late.as_ref(), &mut m) } else { Vec::new() };
        #[cfg(not(any(feature = "convert", feature = "stream-pipe")))]
        let stats = {
            let _ = src;
            Vec::new()
        };
        let top = cpus.iter().map(|c| c.0 as usize + 1).max().unwrap_or(0);
        m.cpus = (m.cpus as usize).max(top).min(MAX_CPUS) as u32;
        Ok(Plan { meta: m, name, clock, page_size: idx.page_size, cpus, stats })
    }
}

impl<'s> Virtual<'s> {
    /// The trace.dat of the indexed stream in `src`.
    pub fn new(src: &'s dyn ReadAt, idx: &Index, shape: &Shape) -> Result<Virtual<'s>, Error> {
        Ok(Virtual::of(src, Plan::new(src, idx, shape)?))
    }

    /// The trace.dat `p` plans, its CPU data read from `src`.
    pub fn of(src: &'s dyn ReadAt, p: Plan) -> Virtual<'s> {
        let Plan { meta: mut m, name, clock, page_size, cpus, stats } = p;
        let ncpus = m.cpus as usize;
        let mut sizes = alloc::vec![0u64; ncpus];
        for (cpu, runs) in &cpus {
            sizes[*cpu as usize] = runs.iter().map(|r| r.1).sum();
        }
        let buffer = |name: &str, cpu_sizes| write::Buffer { name: String::from(name), clock: clock.clone(), page_size, cpu_sizes };
        // v6 always has a top-level flyrecord; v7 needs none.
        if m.version < 7 && !name.is_empty() {
            m.buffers.push(buffer("", alloc::vec![0; ncpus]));
        }
        m.buffers.push(buffer(&name, sizes));
        let mut pieces = Vec::new();
        let mut at = 0u64;
        for s in write::layout(&m) {
            match s {
                Seg::Bytes(b) => {
                    let n = b.len() as u64;
                    pieces.push((at, Piece::Bytes(b)));
                    at += n;
                }
                Seg::Data { cpu, .. } => {
                    let runs = cpus.iter().find(|c| c.0 as usize == cpu).map_or(&[][..], |c| &c.1[..]);
                    for &(off, len) in runs {
                        pieces.push((at, Piece::Run { off, len }));
                        at += len;
                    }
                }
            }
        }
        Virtual { src, pieces, len: at, stats }
    }

    /// The file's parts in order: `Ok(bytes)` of its own, or `Err((offset,
    /// length))` of a run to copy from the stream (with copy_file_range).
    pub fn parts(&self) -> impl Iterator<Item = Result<&[u8], (u64, u64)>> {
        self.pieces.iter().map(|(_, p)| match p {
            Piece::Bytes(b) => Ok(&b[..]),
            Piece::Run { off, len } => Err((*off, *len)),
        })
    }
}

/// Keep in `m` only the formats of the systems LATE lists and of those
/// with an event in the pages of `cpus`; what each CPU's pages hold.
#[cfg(any(feature = "convert", feature = "stream-pipe"))]
fn keep_used_formats(src: &dyn ReadAt, cpus: &[(u32, Vec<(u64, u64)>)], idx: &Index, td: &TraceDat, late: Option<&TraceDat>, m: &mut Meta) -> Vec<(u32, PageStats)> {
    let (ids, stats) = used_ids(src, cpus, idx.page_size as usize, td.kernel_long_size() as usize, m.big_endian);
    let mut used = Meta { systems: Vec::new(), ftrace_formats: Vec::new(), ..meta_shell(m) };
    if let Some(l) = late {
        add_formats(&mut used, l, &|_| true);
    }
    // The systems with an event in the data (found once, not per format).
    let mut seen: Vec<&str> = Vec::new();
    for f in &td.formats {
        if !seen.contains(&f.system.as_str()) && format_id(&f.text).is_some_and(|id| ids.binary_search(&id).is_ok()) {
            seen.push(&f.system);
        }
    }
    add_formats(&mut used, td, &|sys| seen.contains(&sys));
    crate::sort::sort_by(&mut used.systems, |a, b| a.0.cmp(&b.0));
    m.systems = used.systems;
    m.ftrace_formats = used.ftrace_formats;
    stats
}

#[cfg(any(feature = "convert", feature = "stream-pipe"))]
/// A Meta with `m`'s scalars and nothing else (for collecting formats).
fn meta_shell(m: &Meta) -> Meta {
    Meta {
        version: m.version,
        compression: m.compression,
        big_endian: m.big_endian,
        long_size: m.long_size,
        page_size: m.page_size,
        header_page: Vec::new(),
        header_event: Vec::new(),
        ftrace_formats: Vec::new(),
        systems: Vec::new(),
        kallsyms: Vec::new(),
        printk_formats: Vec::new(),
        cmdlines: Vec::new(),
        cpus: 0,
        options: Vec::new(),
        buffers: Vec::new(),
    }
}

#[cfg(any(feature = "convert", feature = "stream-pipe"))]
/// The event ids that occur in the pages of `cpus`, sorted, and what each
/// CPU's pages hold.
fn used_ids(src: &dyn ReadAt, cpus: &[(u32, Vec<(u64, u64)>)], ps: usize, long: usize, be: bool) -> (Vec<u16>, Vec<(u32, PageStats)>) {
    let mut ids: Vec<u16> = Vec::new();
    let mut stats = Vec::new();
    // A quarter MiB of pages at a time (at least one page).
    let mut buf = alloc::vec![0u8; ps * ((256 << 10) / ps.max(1)).max(1)];
    for (cpu, runs) in cpus {
        let mut st = PageStats::default();
        for &(mut off, len) in runs {
            let end = off + len;
            while off < end {
                let n = ((end - off) as usize).min(buf.len());
                let Ok(n) = src.read_at(off, &mut buf[..n]) else { break };
                if n == 0 {
                    break;
                }
                write::scan_pages(&buf[..n], ps, long, be, &mut st, |id| {
                    if let Err(at) = ids.binary_search(&id) {
                        ids.insert(at, id);
                    }
                });
                off += n as u64;
            }
        }
        stats.push((*cpu, st));
    }
    (ids, stats)
}

impl ReadAt for Virtual<'_> {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        // The piece holding `off`: the last that starts at or before it.
        let i = self.pieces.partition_point(|p| p.0 <= off);
        let Some((start, p)) = i.checked_sub(1).and_then(|i| self.pieces.get(i)) else { return Ok(0) };
        let rel = off - start;
        match p {
            Piece::Bytes(b) => b.as_slice().read_at(rel, buf),
            // (Past the last run is the end: a probe may ask that far.)
            Piece::Run { off: at, len } => match len.checked_sub(rel) {
                Some(left) if left > 0 => {
                    let n = left.min(buf.len() as u64) as usize;
                    self.src.read_at(at + rel, &mut buf[..n])
                }
                _ => Ok(0),
            },
        }
    }
}

/// A stream arriving through a pipe: read what is there, blocking.
#[cfg(feature = "stream-pipe")]
pub trait Pipe {
    /// Read up to `buf.len()` bytes; 0 at the end.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, IoError>;
    /// Will a read return soon (data, or the end)? A pipe fed by a
    /// recording says no while the recorder has nothing new.
    fn ready(&mut self) -> bool {
        true
    }
}

/// Bytes of pages [`Demux`] queues for CPUs the merge is not asking for,
/// before a CPU that has sent nothing sits out instead of holding the
/// rest in memory.
#[cfg(feature = "stream-pipe")]
pub const QUEUE_MAX: usize = 32 << 20;

/// The frames of a stream as they arrive, sorted into per-CPU queues.
#[cfg(feature = "stream-pipe")]
pub struct Demux {
    pipe: alloc::boxed::Box<dyn Pipe>,
    page_size: usize,
    queues: Vec<(u32, VecDeque<Vec<u8>>)>,
    queued: usize,
    /// Bytes read so far (for the cut's offset).
    pos: u64,
    /// The stream ended (LATE, end of input, or an error).
    ended: bool,
    /// Why it ended early; taken by [`Demux::take_cut`].
    cut: Option<Error>,
    /// The LATE frame's metadata.
    pub late: Option<Vec<u8>>,
}

#[cfg(feature = "stream-pipe")]
impl Demux {
    /// Read the head and META of the stream in `pipe`: the demux and the
    /// metadata (a trace.dat v7 without data).
    pub fn open(mut pipe: alloc::boxed::Box<dyn Pipe>) -> Result<(Demux, Vec<u8>), Error> {
        let mut h = [0u8; HEAD_LEN + FRAME_LEN];
        if !fill(&mut *pipe, &mut h)? || !is_stream(&h) {
            return Err(Error::new("stream", 0, Reason::BadMagic));
        }
        let f: &[u8; FRAME_LEN] = h[HEAD_LEN..].try_into().unwrap_or(&[0; FRAME_LEN]);
        let len = match parse_frame(f) {
            Some((Kind::Meta, _, len)) if len <= MAX_META => len,
            _ => return Err(damaged(HEAD_LEN as u64, "the stream does not begin with its metadata")),
        };
        let Some(meta) = fill_vec(&mut *pipe, len)? else {
            return Err(truncated((HEAD_LEN + FRAME_LEN) as u64, len));
        };
        let page_size = page_size_of(&TraceDat::open(&meta)?)? as usize;
        let pos = (HEAD_LEN + FRAME_LEN) as u64 + len;
        Ok((Demux { pipe, page_size, queues: Vec::new(), queued: 0, pos, ended: false, cut: None, late: None }, meta))
    }

    /// Page sources for `cpus`, sharing the demux.
    pub fn sources(d: Rc<RefCell<Demux>>, cpus: u32) -> Vec<alloc::boxed::Box<dyn PageSource>> {
        let mut v: Vec<alloc::boxed::Box<dyn PageSource>> = Vec::new();
        for cpu in 0..cpus.min(MAX_CPUS as u32) {
            v.push(alloc::boxed::Box::new(DemuxCpu { d: d.clone(), cpu }));
        }
        v
    }

    /// Why the stream ended early (once), if it did.
    pub fn take_cut(&mut self) -> Option<Error> {
        self.cut.take()
    }

    fn queue(&mut self, cpu: u32) -> &mut VecDeque<Vec<u8>> {
        let i = match self.queues.iter().position(|q| q.0 == cpu) {
            Some(i) => i,
            None => {
                self.queues.push((cpu, VecDeque::new()));
                self.queues.len() - 1
            }
        };
        &mut self.queues[i].1
    }

    fn end(&mut self, cut: Option<Error>) {
        self.ended = true;
        self.cut = cut;
    }

    /// Read one frame into the queues (or end the stream).
    fn read_frame(&mut self) {
        let mut f = [0u8; FRAME_LEN];
        match fill(&mut *self.pipe, &mut f) {
            Ok(true) => {}
            Ok(false) => return self.end(Some(truncated(self.pos, FRAME_LEN as u64))),
            Err(e) => return self.end(Some(e)),
        }
        let at = self.pos;
        self.pos += FRAME_LEN as u64;
        let ps = self.page_size;
        match parse_frame(&f) {
            Some((Kind::Pages, cpu, len)) if len % ps as u64 == 0 && (cpu as usize) < MAX_CPUS => {
                for _ in 0..len / ps as u64 {
                    let mut p = alloc::vec![0u8; ps];
                    match fill(&mut *self.pipe, &mut p) {
                        Ok(true) => {}
                        Ok(false) => return self.end(Some(truncated(self.pos, ps as u64))),
                        Err(e) => return self.end(Some(e)),
                    }
                    self.pos += ps as u64;
                    self.queued += ps;
                    self.queue(cpu).push_back(p);
                }
            }
            Some((Kind::Late, _, len)) if len <= MAX_META => match fill_vec(&mut *self.pipe, len) {
                Ok(Some(v)) => {
                    self.late = Some(v);
                    self.end(None);
                }
                Ok(None) => self.end(Some(truncated(self.pos, len))),
                Err(e) => self.end(Some(e)),
            },
            _ => self.end(Some(damaged(at, "not a frame (damaged stream)"))),
        }
    }

    /// The next page of `cpu` into `page`: read frames until one comes, the
    /// stream ends, too much is queued for other CPUs, or the pipe has
    /// nothing more for now. Then the CPU sits out (`Fill::Empty`) and the
    /// merge goes on without it, as `trace_pipe` does: a stream read from
    /// a file or as fast as it was written comes out in the order of the
    /// trace.dat it stands for; one read live as it is recorded may print
    /// a page of a quiet CPU after later records of the others.
    fn fill(&mut self, cpu: u32, page: &mut Vec<u8>) -> Fill {
        loop {
            if let Some(p) = self.queue(cpu).pop_front() {
                self.queued -= p.len();
                *page = p;
                return Fill::Page;
            }
            if self.ended {
                return Fill::End;
            }
            if self.queued > QUEUE_MAX || !self.pipe.ready() {
                return Fill::Empty;
            }
            self.read_frame();
        }
    }
}

/// Read all of `buf`; false at the end of the input (even part way).
#[cfg(feature = "stream-pipe")]
fn fill(p: &mut dyn Pipe, buf: &mut [u8]) -> Result<bool, Error> {
    let mut done = 0;
    while done < buf.len() {
        match p.read(&mut buf[done..]) {
            Ok(0) => return Ok(false),
            Ok(n) => done += n,
            Err(IoError(e)) => return Err(Error::new("stream", 0, Reason::Io(e))),
        }
    }
    Ok(true)
}

/// `len` bytes, read in steps so that memory follows what arrives, not
/// what a header claims; None when the input ends first.
#[cfg(feature = "stream-pipe")]
fn fill_vec(p: &mut dyn Pipe, len: u64) -> Result<Option<Vec<u8>>, Error> {
    let mut v = Vec::new();
    while (v.len() as u64) < len {
        let at = v.len();
        let step = ((len - at as u64) as usize).min(1 << 20);
        v.resize(at + step, 0);
        if !fill(p, &mut v[at..])? {
            return Ok(None);
        }
    }
    Ok(Some(v))
}

/// One CPU's pages from a [`Demux`].
#[cfg(feature = "stream-pipe")]
struct DemuxCpu {
    d: Rc<RefCell<Demux>>,
    cpu: u32,
}

#[cfg(feature = "stream-pipe")]
impl PageSource for DemuxCpu {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error> {
        Ok(self.d.borrow_mut().fill(self.cpu, page))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    /// A META for 2 CPUs with 256-byte sub-buffers.
    pub(crate) fn small_meta() -> Meta {
        let hp = b"\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:240;\tsigned:0;\n";
        Meta {
            version: 7,
            compression: write::Compression::None,
            big_endian: false,
            long_size: 8,
            page_size: 4096,
            header_page: hp.to_vec(),
            header_event: Vec::new(),
            ftrace_formats: Vec::new(),
            systems: vec![(String::from("t"), vec![b"name: ev\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:int x;\toffset:8;\tsize:4;\tsigned:1;\n\nprint fmt: \"x=%d\", REC->x\n".to_vec()])],
            kallsyms: Vec::new(),
            printk_formats: Vec::new(),
            cmdlines: b"1 init\n".to_vec(),
            cpus: 2,
            options: vec![(opt::TRACECLOCK, b"[local] global\0".to_vec())],
            buffers: vec![write::Buffer { name: String::new(), clock: String::from("local"), page_size: 256, cpu_sizes: vec![0, 0] }],
        }
    }

    /// A 256-byte page holding `n` events of id 7 at times base+1.., x = tag.
    pub(crate) fn page(base: u64, n: u32, tag: i32) -> Vec<u8> {
        let mut p = vec![0u8; 256];
        p[..8].copy_from_slice(&base.to_le_bytes());
        let mut at = 16;
        for _ in 0..n {
            // type_len 3: 12 bytes of payload, delta 1.
            p[at..at + 4].copy_from_slice(&(3u32 | (1 << 5)).to_le_bytes());
            p[at + 4..at + 6].copy_from_slice(&7u16.to_le_bytes());
            p[at + 12..at + 16].copy_from_slice(&tag.to_le_bytes());
            at += 16;
        }
        p[8..16].copy_from_slice(&((at - 16) as u64).to_le_bytes());
        p
    }

    /// head, META, pages of CPU 0 and 1 interleaved, LATE.
    pub(crate) fn small_stream() -> Vec<u8> {
        let mut s = head().to_vec();
        let meta = meta_bytes(&small_meta());
        s.extend(frame(Kind::Meta, 0, meta.len() as u64));
        s.extend(meta);
        for (cpu, base, tag) in [(0u32, 100u64, 1), (1, 50, 2), (0, 200, 3), (1, 300, 4)] {
            s.extend(frame(Kind::Pages, cpu, 256));
            s.extend(page(base, 3, tag));
        }
        let mut late = small_meta();
        late.cmdlines = b"1 init\n42 app\n".to_vec();
        late.options.push((opt::CPUSTAT, b"CPU: 0\nentries: 6\n\0".to_vec()));
        let late = meta_bytes(&late);
        s.extend(frame(Kind::Late, 0, late.len() as u64));
        s.extend(late);
        s
    }

    /// Every record of a trace.dat as (cpu, ts, x).
    fn records(td: &TraceDat) -> Vec<(u32, u64, i32)> {
        let mut v = Vec::new();
        for b in &td.buffers {
            let layout = td.layout(b);
            for c in &b.cpus {
                let mut cp = td.cpu_pages(b, c);
                while let Some(Ok(p)) = cp.next_page() {
                    let p = crate::ring::Page::parse(&layout, p).unwrap();
                    for r in p.records() {
                        let r = r.unwrap();
                        v.push((c.cpu, r.ts, i32::from_le_bytes(r.data[8..12].try_into().unwrap())));
                    }
                }
            }
        }
        v.sort();
        v
    }

    fn shape() -> Shape {
        Shape { version: 7, keep: None, used_formats: true }
    }

    #[test]
    fn a_whole_stream_is_its_trace_dat() {
        let s = small_stream();
        let idx = Index::read(&s, s.len() as u64).unwrap();
        assert!(idx.cut.is_none() && idx.late.is_some());
        let v = Virtual::new(&s, &idx, &shape()).unwrap();
        let td = TraceDat::open(&v).unwrap();
        assert_eq!(td.cmdlines, "1 init\n42 app\n");
        assert_eq!(td.options.cpustat.len(), 1);
        assert_eq!(td.formats.len(), 1);
        let r = records(&td);
        assert_eq!(r.len(), 12);
        assert_eq!(r[0], (0, 101, 1));
        assert_eq!(r[11], (1, 303, 4));
        // The same through the demux, page by page.
        #[cfg(feature = "stream-pipe")]
        {
        let mut d = demux(&s);
        let mut pages = Vec::new();
        for cpu in [1, 0] {
            let mut p = Vec::new();
            while d.fill(cpu, &mut p) == Fill::Page {
                pages.push((cpu, p[0]));
            }
        }
        assert_eq!(pages, [(1, 50), (1, 44), (0, 100), (0, 200)]);
        assert!(d.late.is_some() && d.take_cut().is_none());
        }
    }

    #[cfg(feature = "stream-pipe")]
    struct Bytes(Vec<u8>, usize);
    #[cfg(feature = "stream-pipe")]
    impl Pipe for Bytes {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, IoError> {
            // A few bytes at a time, as a pipe may give them.
            let n = buf.len().min(self.0.len() - self.1).min(100);
            buf[..n].copy_from_slice(&self.0[self.1..self.1 + n]);
            self.1 += n;
            Ok(n)
        }
    }

    #[cfg(feature = "stream-pipe")]
    fn demux(s: &[u8]) -> Demux {
        Demux::open(alloc::boxed::Box::new(Bytes(s.to_vec(), 0))).unwrap().0
    }

    /// Cut at every byte: every whole page before the cut decodes, and the
    /// cut is reported.
    #[test]
    fn cut_anywhere_keeps_every_whole_page_before_it() {
        let s = small_stream();
        let meta_end = HEAD_LEN + FRAME_LEN + meta_bytes(&small_meta()).len();
        let whole = records(&TraceDat::open(&Virtual::new(&s, &Index::read(&s, s.len() as u64).unwrap(), &shape()).unwrap()).unwrap());
        for n in 0..s.len() {
            let cut = s[..n].to_vec();
            let idx = match Index::read(&cut, n as u64) {
                Ok(i) => i,
                Err(_) => {
                    assert!(n < meta_end, "{n}");
                    #[cfg(feature = "stream-pipe")]
                    assert!(Demux::open(alloc::boxed::Box::new(Bytes(cut.to_vec(), 0))).is_err());
                    continue;
                }
            };
            assert!(n >= meta_end);
            let late_start = meta_end + 4 * (FRAME_LEN + 256);
            assert_eq!(idx.cut.is_none(), n == s.len(), "{n}");
            // Pages wholly before the cut.
            let mut pages = 0;
            for i in 0..4 {
                if meta_end + (i + 1) * (FRAME_LEN + 256) <= n.min(late_start) {
                    pages += 1;
                }
            }
            let v = Virtual::new(&cut, &idx, &shape()).unwrap();
            let got = records(&TraceDat::open(&v).unwrap());
            assert_eq!(got.len(), 3 * pages, "{n}");
            assert!(got.iter().all(|r| whole.contains(r)));
            #[cfg(feature = "stream-pipe")]
            {
                let mut d = demux(&cut);
                let mut p = Vec::new();
                let mut seen = 0;
                for cpu in [0, 1] {
                    while d.fill(cpu, &mut p) == Fill::Page {
                        seen += 1;
                    }
                }
                assert_eq!(seen, pages, "{n}");
                assert_eq!(d.take_cut().is_none(), n == s.len());
            }
        }
    }

    #[test]
    fn keep_and_damage() {
        let s = small_stream();
        let idx = Index::read(&s, s.len() as u64).unwrap();
        let v = Virtual::new(&s, &idx, &Shape { keep: Some(256), ..shape() }).unwrap();
        let r = records(&TraceDat::open(&v).unwrap());
        assert_eq!(r.iter().map(|r| r.2).collect::<Vec<_>>(), [3, 3, 3, 4, 4, 4]);
        // A damaged frame header ends the index there.
        let mut bad = s.clone();
        let at = HEAD_LEN + FRAME_LEN + meta_bytes(&small_meta()).len() + FRAME_LEN + 256;
        bad[at] = b'X';
        let idx = Index::read(&bad, bad.len() as u64).unwrap();
        assert!(matches!(idx.cut, Some(Error { reason: Reason::Corrupt(_), .. })));
        assert_eq!(idx.cpus.len(), 1);
        // v6 too.
        let v = Virtual::new(&s, &Index::read(&s, s.len() as u64).unwrap(), &Shape { version: 6, ..shape() }).unwrap();
        assert_eq!(records(&TraceDat::open(&v).unwrap()).len(), 12);
    }

    /// META's kernel values (KVARS) reach the trace.dat.
    #[test]
    fn kvars_of_meta_reach_the_trace_dat() {
        let mut m = small_meta();
        m.options.push((opt::KVARS, b"vmemmap_base=0xffffea0000000000\n\0".to_vec()));
        let mut s = head().to_vec();
        let meta = meta_bytes(&m);
        s.extend(frame(Kind::Meta, 0, meta.len() as u64));
        s.extend(meta);
        s.extend(frame(Kind::Pages, 0, 256));
        s.extend(page(100, 3, 1));
        let idx = Index::read(&s, s.len() as u64).unwrap();
        let v = Virtual::new(&s, &idx, &shape()).unwrap();
        let td = TraceDat::open(&v).unwrap();
        assert_eq!(td.options.kvars.as_deref(), Some("vmemmap_base=0xffffea0000000000\n"));
    }

    /// A plan whose CPU data is stored compressed elsewhere (ftrec
    /// --compression) reads back the same records.
    #[cfg(feature = "zstd-write")]
    #[test]
    fn a_compressed_plan_reads_back_the_same_records() {
        let s = small_stream();
        let idx = Index::read(&s, s.len() as u64).unwrap();
        let mut p = Plan::new(&s, &idx, &shape()).unwrap();
        let z = write::CpuCompressor::new(write::Compression::Zstd, false, idx.page_size);
        let mut data = Vec::new();
        for (_, runs) in p.cpus.iter_mut() {
            let mut raw = Vec::new();
            for &(off, len) in runs.iter() {
                raw.extend_from_slice(&s[off as usize..(off + len) as usize]);
            }
            let z = z.stream(&raw);
            *runs = vec![(data.len() as u64, z.len() as u64)];
            data.extend(z);
        }
        p.meta.compression = write::Compression::Zstd;
        let v = Virtual::of(&data, p);
        let mut file = vec![0u8; v.len as usize];
        let mut at = 0;
        while at < file.len() {
            at += v.read_at(at as u64, &mut file[at..]).unwrap();
        }
        let td = TraceDat::open(&file).unwrap();
        assert_eq!(td.compression, "zstd");
        assert_eq!(records(&td), records(&TraceDat::open(&Virtual::new(&s, &idx, &shape()).unwrap()).unwrap()));
    }

    /// Read in place, a stream prints what its trace.dat prints: the same
    /// metadata and records, whole or cut anywhere.
    #[test]
    fn in_place_reads_what_the_trace_dat_holds() {
        let s = small_stream();
        let shape = Shape { used_formats: false, ..shape() };
        for n in [s.len(), s.len() - 1, s.len() - 200, s.len() / 2] {
            let cut = &s[..n].to_vec();
            let Ok(idx) = Index::read(cut, n as u64) else { continue };
            let v = Virtual::new(cut, &idx, &shape).unwrap();
            let want = TraceDat::open(&v).unwrap();
            let p = InPlace::new(cut, idx);
            let got = p.open().unwrap();
            assert_eq!(records(&got), records(&want), "{n}");
            assert_eq!((&got.cmdlines, &got.kallsyms, &got.options, &got.buffers[0].page_size), (&want.cmdlines, &want.kallsyms, &want.options, &want.buffers[0].page_size), "{n}");
            assert_eq!(got.buffers[0].cpus.iter().map(|c| (c.cpu, c.size)).collect::<Vec<_>>(), want.buffers[0].cpus.iter().map(|c| (c.cpu, c.size)).collect::<Vec<_>>());
            assert_eq!((got.formats.len(), got.page_size, p.cut.is_none()), (want.formats.len(), want.page_size, n == s.len()));
            // The view ends with a run of pages: past it is the end.
            assert_eq!(p.view.read_at(u64::MAX - 4, &mut [0; 4]), Ok(0));
        }
    }

    /// The fuzz target's seeds (tests/fuzz/seeds/stream) are what this
    /// stream gives, whole and cut; `BLESS=1` writes them again.
    #[test]
    fn fuzz_seeds_are_current() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/seeds/stream");
        let s = small_stream();
        let meta_end = HEAD_LEN + FRAME_LEN + meta_bytes(&small_meta()).len();
        // Whole, cut inside a page frame, cut before LATE.
        for (name, n) in [("whole", s.len()), ("cut-page", meta_end + FRAME_LEN + 100), ("no-late", meta_end + 4 * (FRAME_LEN + 256))] {
            if std::env::var_os("BLESS").is_some_and(|v| v == "1") {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join(name), &s[..n]).unwrap();
            }
            assert!(std::fs::read(dir.join(name)).unwrap() == s[..n], "{name}: run with BLESS=1 to write it again");
        }
    }
}
