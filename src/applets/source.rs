//! Where ftcat's pages come from, at the system edge: a trace.dat file read with
//! pread (memory stays flat however large the file), stdin, or the live
//! per-CPU `trace_pipe_raw` files, and what the live kernel says about
//! its recording.

use crate::cursor::Endian;
use crate::decode::recording::{parse_formats, Recording};
use crate::format;
use crate::merge::{Fill, PageSource};
use crate::text;
use crate::decode::recording::stat_num;
use crate::ring::PageLayout;
use crate::tracedat::{stream, Error, ReadAt, Reason};
use crate::tracefs::Tracefs;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use crate::sys::{self, OsError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

/// Bytes read so far from files opened as [`Input::File`], and the size of
/// the last one opened: what a long `--export` shows as its progress
/// (ftcat reads one file at a time, on one thread).
static READ: AtomicU64 = AtomicU64::new(0);
static SIZE: AtomicU64 = AtomicU64::new(0);

/// (bytes read, file size) of the input file; a size of 0: no file (stdin,
/// a pipe, a live buffer).
pub fn read_progress() -> (u64, u64) {
    (READ.load(Ordering::Relaxed), SIZE.load(Ordering::Relaxed))
}

pub use crate::record::FileAt;

/// A file ftcat reads, counting the bytes read into [`READ`].
pub struct Counted(FileAt);

impl ReadAt for Counted {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, crate::tracedat::IoError> {
        let n = self.0.read_at(off, buf)?;
        READ.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

impl FileAt {
    pub fn open(path: &str) -> Result<FileAt, String> {
        let fd = crate::sys::open_str(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| format!("{}: {}", path, OsError(e)))?;
        Ok(FileAt { fd })
    }
}

/// An input: a file, a trace.dat read into memory from a pipe (which
/// cannot be read at random offsets), or a stream arriving on a pipe
/// (read as it comes; without stream-pipe, the board build, a piped
/// stream is read into memory too).
pub enum Input {
    File(Counted),
    Memory(Vec<u8>),
    #[cfg(feature = "stream-pipe")]
    Pipe(FdPipe),
}

/// A pipe (stdin, a FIFO) read in order; the bytes read to recognise it
/// come first.
#[cfg(feature = "stream-pipe")]
pub struct FdPipe {
    fd: OwnedFd,
    head: Vec<u8>,
    at: usize,
}

#[cfg(feature = "stream-pipe")]
impl stream::Pipe for FdPipe {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, crate::tracedat::IoError> {
        if self.at < self.head.len() {
            let n = buf.len().min(self.head.len() - self.at);
            buf[..n].copy_from_slice(&self.head[self.at..self.at + n]);
            self.at += n;
            return Ok(n);
        }
        loop {
            match rustix::io::read(&self.fd, &mut *buf) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(crate::tracedat::IoError(e.raw_os_error())),
            }
        }
    }

    /// Data (or the end) within a quarter second.
    fn ready(&mut self) -> bool {
        if self.at < self.head.len() {
            return true;
        }
        let mut fds = [rustix::event::PollFd::new(&self.fd, rustix::event::PollFlags::IN)];
        // A quarter second: longer than a writer copying a file or a
        // recorder busy with pages pauses, shorter than a quiet recording.
        let wait = rustix::event::Timespec { tv_sec: 0, tv_nsec: 250_000_000 };
        // (An error is not "nothing yet": the read says what it is.)
        !matches!(rustix::event::poll(&mut fds, Some(&wait)), Ok(0))
    }
}

#[cfg(feature = "stream-pipe")]
impl FdPipe {
    /// Enough of `fd` to tell a stream: read until the head is in or the
    /// input ends.
    fn new(fd: OwnedFd) -> Result<FdPipe, Errno> {
        let mut head = alloc::vec![0u8; stream::HEAD_LEN];
        let mut got = 0;
        while got < head.len() {
            match rustix::io::read(&fd, &mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(e),
            }
        }
        head.truncate(got);
        Ok(FdPipe { fd, head, at: 0 })
    }

    /// All of it, in memory.
    pub fn read_all(mut self) -> Result<Vec<u8>, Errno> {
        let mut v = core::mem::take(&mut self.head);
        v.drain(..self.at);
        v.extend(sys::read_fd(&self.fd)?);
        Ok(v)
    }
}

impl Input {
    /// `-` is stdin. A pipe or other file that cannot be read at random
    /// offsets (a FIFO, `<(...)`) is read whole into memory, as stdin is,
    /// unless it carries a stream: that is read as it arrives.
    pub fn open(path: &str) -> Result<Input, String> {
        let (fd, name) = if path == "-" {
            (rustix::io::fcntl_dupfd_cloexec(sys::fd(0), 3).map_err(|e| format!("stdin: {}", OsError(e)))?, "stdin")
        } else {
            (FileAt::open(path)?.fd, path)
        };
        match rustix::fs::fstat(&fd) {
            Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile => {
                let err = |e| format!("{}: {}", name, OsError(e));
                #[cfg(feature = "stream-pipe")]
                let v = match FdPipe::new(fd).map_err(err)? {
                    p if stream::is_stream(&p.head) => return Ok(Input::Pipe(p)),
                    p => p.read_all(),
                };
                #[cfg(not(feature = "stream-pipe"))]
                let v = sys::read_fd(&fd);
                Ok(Input::Memory(v.map_err(err)?))
            }
            _ => {
                let f = FileAt { fd };
                SIZE.store(f.len(), Ordering::Relaxed);
                Ok(Input::File(Counted(f)))
            }
        }
    }

    /// A random-access view (a pipe's stream is read whole first).
    pub fn read_at(&self) -> &dyn ReadAt {
        match self {
            Input::File(f) => f,
            Input::Memory(v) => v,
            #[cfg(feature = "stream-pipe")]
            Input::Pipe(_) => {
                static NOTHING: Vec<u8> = Vec::new();
                &NOTHING
            }
        }
    }

    /// The input's size (a file's now).
    pub fn len(&self) -> u64 {
        match self {
            Input::File(f) => f.0.len(),
            Input::Memory(v) => v.len() as u64,
            #[cfg(feature = "stream-pipe")]
            Input::Pipe(_) => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A pipe's stream read to its end, for what needs it whole.
    #[cfg_attr(not(feature = "stream-pipe"), allow(unused_variables))]
    pub fn whole(self, path: &str) -> Result<Input, String> {
        match self {
            #[cfg(feature = "stream-pipe")]
            Input::Pipe(p) => Ok(Input::Memory(p.read_all().map_err(|e| format!("{}: {}", path, OsError(e)))?)),
            i => Ok(i),
        }
    }

    /// Does it begin like a stream?
    pub fn is_stream(&self) -> bool {
        #[cfg(feature = "stream-pipe")]
        if let Input::Pipe(_) = self {
            return true;
        }
        let mut h = [0u8; stream::HEAD_LEN];
        self.read_at().read_at(0, &mut h) == Ok(h.len()) && stream::is_stream(&h)
    }
}

/// One CPU's live `trace_pipe_raw`, read a page at a time without blocking.
/// Reading consumes the pages, as `trace_pipe` does.
pub struct LiveCpu {
    fd: OwnedFd,
    cpu: u32,
    page_size: usize,
    /// Stop at the first empty read instead of waiting for more.
    once: bool,
    path: &'static str,
}

impl PageSource for LiveCpu {
    fn cpu(&self) -> u32 {
        self.cpu
    }

    fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error> {
        page.resize(self.page_size, 0);
        loop {
            match rustix::io::read(&self.fd, &mut page[..]) {
                Ok(0) => return Ok(Fill::End),
                Ok(n) => {
                    // A short read is the tail of a page; zero the rest so a
                    // stale commit can't be misread.
                    page[n..].fill(0);
                    return Ok(Fill::Page);
                }
                Err(Errno::INTR) => continue,
                Err(Errno::AGAIN) => return Ok(if self.once { Fill::End } else { Fill::Empty }),
                Err(e) => return Err(Error::new(self.path, self.cpu as u64, Reason::Io(e.raw_os_error()))),
            }
        }
    }
}

/// The live buffer of `tfs` (the top level or an instance): its page layout
/// from `events/header_page` and one non-blocking source per CPU.
pub struct Live {
    pub layout: PageLayout,
    pub sources: Vec<Box<dyn PageSource>>,
}

/// A tracefs error as message text: one function, not a closure per call.
#[inline(never)]
fn msg(e: crate::tracefs::Error) -> String {
    e.to_string()
}

/// Open every `per_cpu/cpuN/trace_pipe_raw` of `tfs`. `top` is the
/// top-level tracefs, where `events/header_page` lives.
pub fn open_live(top: &Tracefs, tfs: &Tracefs, once: bool) -> Result<Live, String> {
    let hp = top.read_str("events/header_page").map_err(msg)?;
    let he = top.read_str("events/header_event").map_err(msg)?;
    let page_size = tfs.subbuf_size() as u32;
    let endian = if cfg!(target_endian = "big") { crate::cursor::Endian::Big } else { crate::cursor::Endian::Little };
    let layout = PageLayout::parse(&hp, &he, endian, page_size).map_err(|e| format!("{}: {}", top.path_of("events/header_page"), e))?;

    // (In numeric order: state::cpus sorts them.)
    let cpus = crate::tracefs::state::cpus(tfs).map_err(msg)?;
    let mut sources: Vec<Box<dyn PageSource>> = Vec::new();
    for &cpu in &cpus {
        let rel = format!("per_cpu/cpu{cpu}/trace_pipe_raw");
        let fd = tfs.open_file(&rel, OFlags::RDONLY | OFlags::NONBLOCK).map_err(msg)?;
        sources.push(Box::new(LiveCpu { fd, cpu, page_size: page_size as usize, once, path: "trace_pipe_raw" }));
    }
    if sources.is_empty() {
        return Err(format!("{}: no CPUs", tfs.path_of("per_cpu")));
    }
    Ok(Live { layout, sources })
}

/// The recording of the live buffer of `tfs` (the top level or an
/// instance; `top` has the event formats): what the running kernel says
/// about its events, symbols, tasks, options, clock and release.
#[inline(never)]
pub fn live_recording(top: &Tracefs, tfs: &Tracefs, ncpus: u32) -> Recording {
    let rd = |t: &Tracefs, f: &str| t.read(f).unwrap_or_default();
    // (Listings walked by reference: a loop moving out of a Vec compiles
    // to its own iterator and drop code.)
    let all = crate::tracefs::events::all_events(top).unwrap_or_default();
    let mut formats = Vec::new();
    for e in &all {
        if let Ok(t) = top.read_str(&e.path("format")) {
            formats.push((e.system.as_str(), t.into_bytes()));
        }
    }
    // Names a print fmt leaves unresolved (HRTIMER_MODE_*, I_DIRTY_*,
    // IOPRIO_CLASS_*: enums without TRACE_DEFINE_ENUM) are the running
    // kernel's enumerators, which its BTF lists: resolved as ftrec does.
    let mut fs: Vec<&mut Vec<u8>> = Vec::new();
    for f in formats.iter_mut() {
        fs.push(&mut f.1);
    }
    format::resolve_enums_btf(&mut fs, &|| sys::read(c"/sys/kernel/btf/vmlinux").unwrap_or_default());
    let mut warnings = Vec::new();
    let events = parse_formats(&mut formats.iter().map(|(s, t)| (*s, core::str::from_utf8(t).unwrap_or(""))), &|_, _| true, &mut warnings);
    let endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
    // The kernel's `long` (header_page's commit field), not ours: a 32-bit
    // ftcat on a 64-bit kernel must read 8-byte longs.
    let long = crate::tracedat::write::kernel_long_size(&rd(top, "events/header_page")).map_or(core::mem::size_of::<usize>(), usize::from);
    let kallsyms = sys::read(c"/proc/kallsyms").unwrap_or_default();
    let mut r = Recording::new(events, crate::ksyms::Ksyms::from_vec(kallsyms), &rd(top, "printk_formats"), endian, long, rd(top, "saved_cmdlines"), &rd(top, "saved_tgids"), warnings);
    #[cfg(feature = "kvars")]
    {
        let mut fs = formats.iter().map(|f| (f.0, f.1.as_slice()));
        r.dec.known = crate::kvars::parse_text(&crate::tracefs::kvars::read_enabled(top, tfs, &mut fs, r.dec.ksyms.text(), long));
    }
    let mut spec = String::new();
    for (name, on) in &crate::tracefs::state::options(tfs).unwrap_or_default() {
        spec.clear();
        spec.push_str(name);
        spec.push_str(if *on { "=1" } else { "=0" });
        let _ = r.opts.set(&spec);
    }
    let rs = |f: &str| tfs.read_str(f).unwrap_or_default();
    r.tracer = rs("current_tracer").trim_ascii().into();
    r.clock = match crate::tracefs::state::current_clock(&rs("trace_clock")) {
        "" => "local".into(),
        c => c.into(),
    };
    for cpu in 0..ncpus {
        let st = rs(&format!("per_cpu/cpu{cpu}/stats"));
        r.entries += stat_num(&st, "entries:");
        r.overrun += stat_num(&st, "overrun:");
    }
    // (A &CStr path: a &str one compiled sys::read's path conversion again.)
    r.release = sys::lossy(&sys::read(c"/proc/sys/kernel/osrelease").unwrap_or_default()).into_owned();
    if r.opts.has(text::opts::LATENCY_FMT) {
        r.model = crate::tracefs::state::live_model(tfs);
    }
    r.ncpus = ncpus;
    r
}
