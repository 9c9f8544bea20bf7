//! Where ftcat's pages come from, at the system edge: a trace.dat file read with
//! pread (memory stays flat however large the file), stdin, or the live
//! per-CPU `trace_pipe_raw` files. OWNER: the `dat` work.

use crate::merge::{Fill, PageSource};
use crate::ring::PageLayout;
use crate::tracedat::{Error, IoError, ReadAt, Reason};
use crate::tracefs::Tracefs;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use crate::sys::{self, OsError};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// A file read with pread: nothing is loaded beyond what is asked for.
pub struct FileAt {
    fd: OwnedFd,
}

impl FileAt {
    pub fn open(path: &str) -> Result<FileAt, String> {
        let fd = crate::sys::open_str(path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
            .map_err(|e| format!("{}: {}", path, OsError(e)))?;
        Ok(FileAt { fd })
    }

    /// The file's size now.
    pub fn len(&self) -> u64 {
        rustix::fs::fstat(&self.fd).map(|s| s.st_size as u64).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ReadAt for FileAt {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> Result<usize, IoError> {
        loop {
            match rustix::io::pread(&self.fd, &mut *buf, off) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(IoError(e.raw_os_error())),
            }
        }
    }
}

/// A trace.dat input: a file, or stdin read into memory (a pipe cannot be
/// read at random offsets).
pub enum Input {
    File(FileAt),
    Memory(Vec<u8>),
}

impl Input {
    /// `-` is stdin.
    pub fn open(path: &str) -> Result<Input, String> {
        if path == "-" {
            // fd 0 as an `&OwnedFd` that is never dropped (so never
            // closed): the reader tracefs already links serves stdin too,
            // rather than a second copy of it for a borrowed fd.
            // SAFETY: 0 is not -1; ManuallyDrop keeps the fd open and the
            // OwnedFd is not used after this read (a closed fd 0 just
            // fails the read with EBADF, as before).
            let fd0 = core::mem::ManuallyDrop::new(unsafe { <OwnedFd as rustix::fd::FromRawFd>::from_raw_fd(0) });
            let v = sys::read_fd(&*fd0).map_err(|e| format!("stdin: {}", OsError(e)))?;
            return Ok(Input::Memory(v));
        }
        FileAt::open(path).map(Input::File)
    }

    pub fn read_at(&self) -> &dyn ReadAt {
        match self {
            Input::File(f) => f,
            Input::Memory(v) => v,
        }
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
