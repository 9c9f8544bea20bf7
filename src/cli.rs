//! What every applet shares at the edge: the error type that maps to exit
//! codes (1 failed, 2 usage), `APPLET: message` on stderr, and a quiet end
//! when stdout is closed under us (`ftcat | head`).

use crate::sys::{self, Errno, OsError};
use alloc::string::String;
use core::fmt;

pub enum Error {
    /// Bad command line: exit 2.
    Usage(String),
    /// The operation failed: exit 1.
    Fail(String),
    /// I/O on our own output; EPIPE ends quietly.
    Io(Errno),
    /// Stop with this status and say nothing more (e.g. a traced command's exit code).
    Exit(i32),
}

pub type Result<T> = core::result::Result<T, Error>;

impl From<crate::argv::Error> for Error {
    fn from(e: crate::argv::Error) -> Self {
        Error::Usage(e.0)
    }
}

impl From<Errno> for Error {
    fn from(e: Errno) -> Self {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(s) | Error::Fail(s) => f.write_str(s),
            Error::Io(e) => write!(f, "{}", OsError(*e)),
            Error::Exit(c) => write!(f, "exit {c}"),
        }
    }
}

/// `Err(Error::Fail(...))` with format arguments.
#[macro_export]
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::cli::fail(format_args!($($t)*))) };
}

/// `Err(Error::Usage(...))` with format arguments.
#[macro_export]
macro_rules! usage_err {
    ($($t:tt)*) => { return Err($crate::cli::usage(format_args!($($t)*))) };
}

/// The error of `fail!`: one out-of-line copy of the formatting and the
/// wrapping for every call site.
#[inline(never)]
pub fn fail(a: fmt::Arguments<'_>) -> Error {
    Error::Fail(alloc::fmt::format(a))
}

/// The error of `usage_err!`.
#[inline(never)]
pub fn usage(a: fmt::Arguments<'_>) -> Error {
    Error::Usage(alloc::fmt::format(a))
}

/// Run an applet body and turn its result into an exit status.
pub fn run(applet: &str, usage: &str, body: impl FnOnce() -> Result<()>) -> i32 {
    finish(applet, usage, body())
}

/// The non-generic half of `run`: one copy for all applets.
#[inline(never)]
fn finish(applet: &str, usage: &str, r: Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(Error::Exit(c)) => c,
        Err(Error::Io(Errno::PIPE)) => 0,
        Err(Error::Usage(m)) => {
            let first = usage.lines().next().unwrap_or("");
            sys::eprintln(format_args!("{applet}: {m}\n{first}\nTry '{applet} --help' for more information."));
            2
        }
        Err(e) => {
            sys::eprintln(format_args!("{applet}: {e}"));
            1
        }
    }
}

/// Print usage to stdout for `-h/--help`.
pub fn help(usage: &str) -> Result<()> {
    say(usage)?;
    Err(Error::Exit(0))
}

/// Text to stdout, written at once; a closed pipe is an error we handle.
pub fn say(s: &str) -> Result<()> {
    sys::write_all(sys::fd(1), s.as_bytes()).map_err(Error::Io)
}
