//! The output file and the per-CPU temp files beside it.
//!
//! The output is opened up front, so an unwritable one fails before
//! tracing is touched, but not truncated until the new file is written: an
//! error on the way leaves an existing file as it was, and removes one we
//! created. The temp files go in the output's directory (the recording
//! needs room there anyway) and never have a name for long.

use super::{bail, os_err, Result};
use crate::sys;
use alloc::ffi::CString;
use alloc::format;
use alloc::string::String;
use core::cell::Cell;
use rustix::fd::OwnedFd;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

pub(super) struct Output {
    pub fd: OwnedFd,
    /// The output's directory, where the temp files go.
    pub dir: OwnedFd,
    pub path: String,
    /// The file did not exist before.
    created: bool,
    /// Writing has begun (the file was truncated).
    started: Cell<bool>,
}

/// The directory part of a path.
fn dir_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

/// Remove a file we created (best effort).
fn unlink(path: &str) {
    if let Ok(p) = sys::cpath(path) {
        let _ = rustix::fs::unlinkat(rustix::fs::CWD, &*p, rustix::fs::AtFlags::empty());
    }
}

impl Output {
    /// Open `path` for writing (creating it if missing) and make sure a
    /// temp file can be made beside it.
    pub fn open(path: &str) -> Result<Output> {
        let err = |e| os_err(path, e);
        let mode = Mode::from_raw_mode(0o644);
        let (fd, created) = match sys::open_str(path, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC, mode) {
            Ok(fd) => (fd, true),
            Err(Errno::EXIST) => (sys::open_str(path, OFlags::WRONLY | OFlags::CLOEXEC, mode).map_err(err)?, false),
            Err(e) => return Err(err(e)),
        };
        let d = dir_of(path);
        let dir = sys::open_dir(d).map_err(|e| os_err(d, e))?;
        if let Err(e) = temp_file(&dir, 0) {
            if created {
                unlink(path);
            }
            return Err(e);
        }
        Ok(Output { fd, dir, path: String::from(path), created, started: Cell::new(false) })
    }

    /// Start writing: empty the file and write from its start.
    pub fn begin(&self) -> Result<()> {
        self.started.set(true);
        rustix::fs::ftruncate(&self.fd, 0)
            .and_then(|()| rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Start(0)).map(|_| ()))
            .map_err(|e| os_err(&self.path, e))
    }

    /// The recording failed: remove the file if it is ours and nothing was
    /// written to it.
    pub fn abandon(&self) {
        if self.created && !self.started.get() {
            unlink(&self.path);
        }
    }
}

const TEMP: &str = "creating a temp file beside the output";

/// A temp file in `dir` for `cpu`'s data: unnamed (O_TMPFILE) where the
/// filesystem allows, else a fresh O_EXCL|O_NOFOLLOW name unlinked at once
/// — either way nothing is left behind, even after a crash.
#[inline(never)]
pub(super) fn temp_file(dir: &OwnedFd, cpu: usize) -> Result<OwnedFd> {
    let mode = Mode::from_raw_mode(0o600);
    match rustix::fs::openat(dir, c".", OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC, mode) {
        Ok(f) => return Ok(f),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL | Errno::NOENT) => {}
        Err(e) => return Err(os_err(TEMP, e)),
    }
    for n in 0..100 {
        // (No NUL inside: the name is made of digits and dots.)
        let name = CString::new(format!(".ftrec.{}.cpu{cpu}.{n}", sys::getpid())).unwrap_or_default();
        let flags = OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::RDWR | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, &*name, flags, mode) {
            Ok(f) => {
                let _ = rustix::fs::unlinkat(dir, &*name, rustix::fs::AtFlags::empty());
                return Ok(f);
            }
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(os_err(TEMP, e)),
        }
    }
    bail!("{TEMP}: too many leftovers")
}
