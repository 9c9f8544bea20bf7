//! The output: a file, or stdout (`-o -`).
//!
//! A file is opened up front, so an unwritable one fails before tracing is
//! touched, but not truncated until the recording starts: an error before
//! that leaves an existing file as it was, and removes one we created.
//! While recording it holds the stream (tracedat::stream), readable up to
//! wherever it stops; at the end it becomes a trace.dat, written to a
//! temporary name beside it and renamed over it, so that a crash then still
//! leaves the stream.

use super::{bail, os_err, Result};
use crate::sys;
use crate::tracedat::{IoError, ReadAt};
#[cfg(feature = "convert")]
use alloc::ffi::CString;
#[cfg(feature = "convert")]
use alloc::format;
use alloc::string::String;
use core::cell::Cell;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

pub(super) struct Output {
    pub fd: OwnedFd,
    /// The output's directory, where the trace.dat is built (files only).
    pub dir: Option<OwnedFd>,
    /// The path, or "stdout".
    pub path: String,
    /// The file did not exist before.
    created: bool,
    /// Writing has begun (the file was truncated).
    started: Cell<bool>,
    /// The stream's metadata is out: the output is readable.
    pub readable: Cell<bool>,
}

/// The directory part of a path, and the name in it.
fn split(path: &str) -> (&str, &str) {
    match crate::util::split_str(path, "/", true) {
        Some(("", name)) => ("/", name),
        Some(split) => split,
        None => (".", path),
    }
}

/// Remove a file we created (best effort).
fn unlink(path: &str) {
    if let Ok(p) = sys::cpath(path) {
        let _ = rustix::fs::unlinkat(rustix::fs::CWD, &*p, rustix::fs::AtFlags::empty());
    }
}

/// Is `fd` (stdin, stdout or stderr) a terminal? Asked of /proc (the
/// device its link names), which needs no ioctl.
pub fn is_tty(fd: i32) -> bool {
    const LINKS: [&core::ffi::CStr; 3] = [c"/proc/self/fd/0", c"/proc/self/fd/1", c"/proc/self/fd/2"];
    let Some(p) = usize::try_from(fd).ok().and_then(|i| LINKS.get(i)) else { return false };
    let Ok(t) = sys::readlink(p) else { return false };
    t.starts_with(b"/dev/pts/") || t.starts_with(b"/dev/tty") || t == b"/dev/console"
}

impl Output {
    /// Open `path` for writing (creating it if missing) and make sure a
    /// file can be made beside it; `-` is stdout, which must not be a
    /// terminal.
    pub fn open(path: &str) -> Result<Output> {
        if path == "-" {
            if is_tty(1) {
                bail!("-o - writes a binary stream: redirect stdout (| ftcat -, | ssh ..., > FILE)");
            }
            let fd = rustix::io::fcntl_dupfd_cloexec(sys::fd(1), 3).map_err(|e| os_err("stdout", e))?;
            let started = Cell::new(true);
            return Ok(Output { fd, dir: None, path: String::from("stdout"), created: false, started, readable: Cell::new(false) });
        }
        let err = |e| os_err(path, e);
        let mode = Mode::from_raw_mode(0o644);
        let (fd, created) = match sys::open_str(path, OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC, mode) {
            Ok(fd) => (fd, true),
            Err(Errno::EXIST) => (sys::open_str(path, OFlags::RDWR | OFlags::CLOEXEC, mode).map_err(err)?, false),
            Err(e) => return Err(err(e)),
        };
        let d = split(path).0;
        let dir = sys::open_dir(d).map_err(|e| os_err(d, e))?;
        let out = Output { fd, dir: Some(dir), path: String::from(path), created, started: Cell::new(false), readable: Cell::new(false) };
        // The trace.dat is made beside it at the end: fail now, not then.
        #[cfg(feature = "convert")]
        match out.temp() {
            Ok((f, name)) => {
                drop(f);
                out.remove_temp(&name);
            }
            Err(e) => {
                out.abandon();
                return Err(e);
            }
        }
        Ok(out)
    }

    pub fn is_file(&self) -> bool {
        self.dir.is_some()
    }

    /// Start writing: empty the file and write from its start.
    pub fn begin(&self) -> Result<()> {
        if self.started.replace(true) {
            return Ok(());
        }
        rustix::fs::ftruncate(&self.fd, 0)
            .and_then(|()| rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Start(0)).map(|_| ()))
            .map_err(|e| os_err(&self.path, e))
    }

    /// The recording failed: remove the file if it is ours and holds
    /// nothing readable.
    pub fn abandon(&self) {
        if self.created && !self.readable.get() {
            unlink(&self.path);
        }
    }

    /// A new file beside the output, for the trace.dat: a fresh
    /// O_EXCL|O_NOFOLLOW name (renamed over the output when complete).
    #[cfg(feature = "convert")]
    #[inline(never)]
    pub fn temp(&self) -> Result<(OwnedFd, CString)> {
        const TEMP: &str = "creating a file beside the output";
        let Some(dir) = &self.dir else { bail!("{TEMP}: no directory") };
        let base = split(&self.path).1;
        for n in 0..100 {
            // (No NUL inside: the output's name came from a C string.)
            let name = CString::new(format!(".{base}.ftrec{}.{n}", sys::getpid())).unwrap_or_default();
            let flags = OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC;
            match rustix::fs::openat(dir, &*name, flags, Mode::from_raw_mode(0o644)) {
                Ok(f) => return Ok((f, name)),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(os_err(TEMP, e)),
            }
        }
        bail!("{TEMP}: too many leftovers")
    }

    #[cfg(feature = "convert")]
    pub fn remove_temp(&self, name: &CString) {
        if let Some(dir) = &self.dir {
            let _ = rustix::fs::unlinkat(dir, &**name, rustix::fs::AtFlags::empty());
        }
    }

    #[cfg(feature = "convert")]
    /// The finished trace.dat `name` takes the output's place.
    pub fn replace_with(&self, name: &CString) -> Result<()> {
        let Some(dir) = &self.dir else { return Ok(()) };
        let base = sys::cpath(split(&self.path).1).map_err(|e| os_err(&self.path, e))?;
        rustix::fs::renameat(dir, &**name, dir, &*base).map_err(|e| os_err(&self.path, e))
    }
}

/// A file read with pread: nothing is loaded beyond what is asked for.
pub struct FileAt {
    pub fd: OwnedFd,
}

impl FileAt {
    /// The file's size now.
    pub fn len(&self) -> u64 {
        rustix::fs::fstat(&self.fd).map(|s| s.st_size as u64).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl ReadAt for FileAt {
    fn read_at(&self, off: u64, buf: &mut [u8]) -> core::result::Result<usize, IoError> {
        loop {
            match rustix::io::pread(&self.fd, &mut *buf, off) {
                Ok(n) => return Ok(n),
                Err(Errno::INTR) => continue,
                Err(e) => return Err(IoError(e.raw_os_error())),
            }
        }
    }
}
