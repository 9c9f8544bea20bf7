//! What every applet shares at the edge: the error type that maps to exit
//! codes (1 failed, 2 usage), `APPLET: message` on stderr (errors and
//! warnings take the prefix from the running applet, as toybox's
//! `error_msg()` does), and a quiet end when stdout is closed under us
//! (`ftcat | head`).

use crate::applets::APPLETS;
use crate::sys::{self, Errno, OsError};
use alloc::string::String;
use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};

/// An applet's error, one pointer wide: it travels through hundreds of `?`
/// and a `Result` of it fits in registers, where the four-word enum it
/// boxes cost a stack copy at each step. Errors are rare; the allocation
/// is not.
pub struct Error(alloc::boxed::Box<Kind>);

/// What went wrong, and so the exit status.
pub enum Kind {
    /// Bad command line: exit 2.
    Usage(String),
    /// The operation failed: exit 1.
    Fail(String),
    /// I/O on our own output; EPIPE ends quietly.
    Io(Errno),
    /// Stop with this status and say nothing more (e.g. a traced command's exit code).
    Exit(i32),
}

// The constructors keep the names (and call shapes, `map_err(Error::Fail)`)
// of the variants they replace; out of line, one copy for every call site.
#[allow(non_snake_case)]
impl Error {
    #[inline(never)]
    fn new(k: Kind) -> Error {
        Error(alloc::boxed::Box::new(k))
    }
    /// Bad command line: exit 2.
    pub fn Usage(s: String) -> Error {
        Error::new(Kind::Usage(s))
    }
    /// The operation failed: exit 1.
    pub fn Fail(s: String) -> Error {
        Error::new(Kind::Fail(s))
    }
    /// I/O on our own output; EPIPE ends quietly.
    pub fn Io(e: Errno) -> Error {
        Error::new(Kind::Io(e))
    }
    /// Stop with this status and say nothing more.
    pub fn Exit(c: i32) -> Error {
        Error::new(Kind::Exit(c))
    }
    pub fn kind(&self) -> &Kind {
        &self.0
    }
}

pub type Result<T> = core::result::Result<T, Error>;

impl From<Errno> for Error {
    #[inline(never)]
    fn from(e: Errno) -> Self {
        Error::Io(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &*self.0 {
            Kind::Usage(s) | Kind::Fail(s) => f.write_str(s),
            Kind::Io(e) => write!(f, "{}", OsError(*e)),
            Kind::Exit(c) => write!(f, "exit {c}"),
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

/// The running applet, as an index into `APPLETS` (`NONE`: ftbox itself).
static RUNNING: AtomicUsize = AtomicUsize::new(NONE);
const NONE: usize = usize::MAX;

/// The name messages are prefixed with: the running applet, else `ftbox`.
pub fn applet() -> &'static str {
    APPLETS.get(RUNNING.load(Ordering::Relaxed)).map_or("ftbox", |a| a.name)
}

/// A warning on stderr, `APPLET: text`: the operation goes on.
#[inline(never)]
pub fn warn(a: fmt::Arguments<'_>) {
    sys::eprintln(format_args!("{}: {a}", applet()));
}

/// Run an applet body and turn its result into an exit status. `applet`
/// is the applet's name in `APPLETS`: from here on `applet()` and `warn`
/// use it.
pub fn run(applet: &'static str, usage: &[&str], body: impl FnOnce() -> Result<()>) -> i32 {
    if let Some(i) = APPLETS.iter().position(|a| a.name == applet) {
        RUNNING.store(i, Ordering::Relaxed);
    }
    finish(usage, body())
}

/// The non-generic half of `run`: one copy for all applets.
#[inline(never)]
fn finish(usage: &[&str], r: Result<()>) -> i32 {
    let applet = applet();
    let e = match r {
        Ok(()) => return 0,
        Err(e) => e,
    };
    match e.kind() {
        Kind::Exit(c) => *c,
        Kind::Io(Errno::PIPE) => 0,
        Kind::Usage(m) => {
            let first = usage.first().and_then(|u| u.lines().next()).unwrap_or("");
            sys::eprintln(format_args!("{applet}: {m}\n{first}\nTry '{applet} --help' for more information."));
            2
        }
        _ => {
            sys::eprintln(format_args!("{applet}: {e}"));
            1
        }
    }
}

/// Print usage (its rows) to stdout for `-h/--help`.
pub fn help(usage: &[&str]) -> Result<()> {
    say(&usage.concat())?;
    Err(Error::Exit(0))
}

/// Text to stdout, written at once; a closed pipe is an error we handle.
pub fn say(s: &str) -> Result<()> {
    sys::write_all(sys::fd(1), s.as_bytes()).map_err(Error::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_is_the_running_applet() {
        assert_eq!(run("ftctl", &["Usage: ftctl"], || Err(Error::Exit(3))), 3);
        assert_eq!(applet(), "ftctl");
    }
}
