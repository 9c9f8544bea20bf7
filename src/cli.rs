//! What every applet shares at the edge: the error type that maps to exit
//! codes (1 failed, 2 usage), `APPLET: message` on stderr, and a quiet end
//! when stdout is closed under us (`ftcat | head`).

use std::ffi::OsString;
use std::fmt;
use std::io::{self, Write};
use std::string::{String, ToString};
use std::vec::Vec;

pub enum Error {
    /// Bad command line: exit 2.
    Usage(String),
    /// The operation failed: exit 1.
    Fail(String),
    /// I/O on our own output; EPIPE ends quietly.
    Io(io::Error),
    /// Stop with this status and say nothing more (e.g. a traced command's exit code).
    Exit(i32),
}

pub type Result<T> = core::result::Result<T, Error>;

impl From<lexopt::Error> for Error {
    fn from(e: lexopt::Error) -> Self {
        Error::Usage(e.to_string())
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(s) | Error::Fail(s) => f.write_str(s),
            Error::Io(e) => write!(f, "{e}"),
            Error::Exit(c) => write!(f, "exit {c}"),
        }
    }
}

/// `Err(Error::Fail(...))` with format arguments.
#[macro_export]
macro_rules! fail {
    ($($t:tt)*) => { return Err($crate::cli::Error::Fail(std::format!($($t)*))) };
}

/// `Err(Error::Usage(...))` with format arguments.
#[macro_export]
macro_rules! usage_err {
    ($($t:tt)*) => { return Err($crate::cli::Error::Usage(std::format!($($t)*))) };
}

/// Run an applet body and turn its result into an exit status.
pub fn run(applet: &str, usage: &str, body: impl FnOnce() -> Result<()>) -> i32 {
    finish(applet, usage, body())
}

/// The non-generic half of `run`: one copy for all applets.
#[inline(never)]
fn finish(applet: &str, usage: &str, r: Result<()>) -> i32 {
    let r = r.and_then(|()| io::stdout().flush().map_err(Error::Io));
    match r {
        Ok(()) => 0,
        Err(Error::Exit(c)) => c,
        Err(Error::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(Error::Usage(m)) => {
            let _ = writeln!(io::stderr(), "{applet}: {m}");
            let first = usage.lines().next().unwrap_or("");
            let _ = writeln!(io::stderr(), "{first}\nTry '{applet} --help' for more information.");
            2
        }
        Err(e) => {
            let _ = writeln!(io::stderr(), "{applet}: {e}");
            1
        }
    }
}

/// Print usage to stdout for `-h/--help`.
pub fn help(usage: &str) -> Result<()> {
    io::stdout().write_all(usage.as_bytes())?;
    Err(Error::Exit(0))
}

/// Lossy UTF-8 for error messages that name a file or argument.
pub fn lossy(s: &std::ffi::OsStr) -> String {
    s.to_string_lossy().into_owned()
}

/// Collect the remaining free arguments of a lexopt parser as Strings.
pub fn strings(args: Vec<OsString>) -> Result<Vec<String>> {
    args.into_iter()
        .map(|a| a.into_string().map_err(|a| Error::Usage(std::format!("argument is not UTF-8: {}", lossy(&a)))))
        .collect()
}
