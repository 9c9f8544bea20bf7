//! The system layer of the applets, on core + alloc: what they used to take
//! from std, as thin wrappers over rustix (raw syscalls) and libc (the
//! little rustix does not cover: strerror, errno, signal, environ).
//!
//! Why not std: std's panic machinery (backtraces with gimli, addr2line,
//! miniz_oxide, rustc_demangle, libunwind) cannot be left out of a stable
//! build that links std, and was ~210 KB of a 730 KB binary. The shipped
//! binary is `#![no_std]` (src/main.rs); this layer is all of std it needs.
//!
//! Errors are bare `Errno`s; `OsError` prints one the way std's io::Error
//! did (`No such file or directory (os error 2)`), `Msg` without the suffix.

use alloc::string::String;
use alloc::vec::Vec;
use core::ffi::CStr;
use core::fmt;
pub use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode, OFlags, CWD};
pub use rustix::io::Errno;

pub type Result<T> = core::result::Result<T, Errno>;

// ---- errors ----

/// The C library's words for an errno ("Invalid argument"), as std printed.
pub struct Msg(pub Errno);

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // SAFETY: strerror returns a NUL-terminated string that stays valid
        // until the next strerror call; it is copied out before we return
        // and the process is single-threaded (readers are processes).
        let s = unsafe { CStr::from_ptr(libc::strerror(self.0.raw_os_error())) };
        f.write_str(s.to_str().unwrap_or("unknown error"))
    }
}

/// An errno as std's `io::Error` printed it: `Permission denied (os error 13)`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OsError(pub Errno);

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (os error {})", Msg(self.0), self.0.raw_os_error())
    }
}

/// The errno of the last failed libc call.
pub fn last_errno() -> Errno {
    // SAFETY: __errno_location always returns this thread's errno slot.
    Errno::from_raw_os_error(unsafe { *libc::__errno_location() })
}

// ---- files ----

/// The standard descriptors. std makes sure 0-2 are open before main;
/// `init` below does the same for the no_std binary.
pub fn fd(n: i32) -> BorrowedFd<'static> {
    debug_assert!((0..=2).contains(&n));
    // SAFETY: only 0, 1, 2, which stay open for the whole process (`init`).
    unsafe { BorrowedFd::borrow_raw(n) }
}

/// `path` as the C string the system calls take. rustix converts a `&str`
/// path through a stack-buffer routine of its own per function and path
/// type (openat, unlinkat, mkdirat, open, unlink: ~200 B each); a call on
/// `&*cpath(p)?` takes the `&CStr` as it is. A NUL in it is EINVAL, as
/// rustix says.
#[inline(never)]
pub fn cpath(path: &str) -> Result<alloc::ffi::CString> {
    // (Through a Vec: the conversion of a Vec is linked anyway (format!
    // paths, argv), the one of a &str was a second copy.)
    alloc::ffi::CString::new(path.as_bytes().to_vec()).map_err(|_| Errno::INVAL)
}

/// Open a `&str` path: one C-string conversion for every caller, not
/// rustix's stack-buffer conversion copied into each generic instance.
pub fn open_str(path: &str, flags: OFlags, mode: Mode) -> Result<OwnedFd> {
    rustix::fs::openat(CWD, &*cpath(path)?, flags, mode)
}

/// Open a directory (to read it, or to open names relative to it).
pub fn open_dir(path: &str) -> Result<OwnedFd> {
    open_str(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
}

/// Open for reading, close-on-exec.
pub fn open(path: impl rustix::path::Arg) -> Result<OwnedFd> {
    rustix::fs::openat(CWD, path, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())
}

/// Read an open file to its end.
pub fn read_fd(fd: impl AsFd) -> Result<Vec<u8>> {
    read_all(fd.as_fd())
}

/// `read_fd`'s loop, one copy for every kind of descriptor.
#[inline(never)]
fn read_all(fd: BorrowedFd<'_>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match rustix::io::read(&fd, &mut buf) {
            Ok(0) => return Ok(out),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}

/// A whole file.
pub fn read(path: impl rustix::path::Arg) -> Result<Vec<u8>> {
    read_fd(open(path)?)
}

/// All of stdin.
pub fn read_stdin() -> Result<Vec<u8>> {
    read_fd(fd(0))
}

/// Write all of `b`, retrying after signals and short writes.
pub fn write_all(fd: impl AsFd, b: &[u8]) -> Result<()> {
    write_fd(fd.as_fd(), b)
}

/// `write_all`'s loop, one copy for every kind of descriptor.
#[inline(never)]
fn write_fd(fd: BorrowedFd<'_>, mut b: &[u8]) -> Result<()> {
    while !b.is_empty() {
        match rustix::io::write(&fd, b) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => b = &b[n..],
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A buffered writer on fd 1 or 2: `core::fmt::Write` and bytes. It writes
/// when the buffer fills, on `flush`, and when dropped; the first error is
/// kept (later writes are dropped) and `flush` returns it, so a closed pipe
/// (EPIPE: SIGPIPE is ignored) is seen by the caller.
pub struct Writer {
    fd: i32,
    buf: Vec<u8>,
    err: Option<Errno>,
}

const WRITER_BUF: usize = 8192;

impl Writer {
    pub fn new(fd: i32) -> Writer {
        Writer { fd, buf: Vec::new(), err: None }
    }

    pub fn bytes(&mut self, b: &[u8]) {
        if self.err.is_some() {
            return;
        }
        self.buf.extend_from_slice(b);
        if self.buf.len() >= WRITER_BUF {
            let _ = self.flush();
        }
    }

    /// Write out what is buffered; the first error ever met.
    pub fn flush(&mut self) -> Result<()> {
        if self.err.is_none() && !self.buf.is_empty() {
            if let Err(e) = write_all(fd(self.fd), &self.buf) {
                self.err = Some(e);
            }
        }
        self.buf.clear();
        self.err.map_or(Ok(()), Err)
    }
}

impl fmt::Write for Writer {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.bytes(s.as_bytes());
        if self.err.is_some() {
            return Err(fmt::Error);
        }
        Ok(())
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

pub fn stdout() -> Writer {
    Writer::new(1)
}

pub fn stderr() -> Writer {
    Writer::new(2)
}

/// One line on stderr, written at once.
pub fn eprintln(a: fmt::Arguments<'_>) {
    let mut e = stderr();
    let _ = fmt::Write::write_fmt(&mut e, a);
    e.bytes(b"\n");
}

// ---- the process ----

/// What std's runtime did before main, done for the no_std binary (and
/// harmless when std did it already):
/// - fds 0-2 open (on /dev/null if closed), so no file we open becomes our
///   "stdout";
/// - SIGPIPE ignored, so a closed output is EPIPE on write and the applet
///   ends quietly (`ftcat | head`). Programs ftrec execs get SIG_DFL back
///   (record/command.rs).
#[inline(never)]
pub fn init() {
    for n in 0..3 {
        if rustix::io::fcntl_getfd(fd(n)) == Err(Errno::BADF) {
            // open returns the lowest free descriptor: this one.
            if let Ok(f) = rustix::fs::open(c"/dev/null", OFlags::RDWR, Mode::empty()) {
                core::mem::forget(f);
            }
        }
    }
    // SAFETY: SIG_IGN needs no handler; signal() only changes the disposition.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
}

/// The disposition of SIGPIPE back to the default, for a program about to
/// be exec'ed (ignored signals survive exec). Async-signal-safe.
pub fn default_sigpipe() {
    // SAFETY: as in `init`.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

/// Ends the process with SIGABRT (status 134), as std's panic=abort did.
pub fn abort() -> ! {
    // SAFETY: abort takes nothing and never returns.
    unsafe { libc::abort() }
}

/// The arguments the C start code hands `main`, copied into owned bytes.
///
/// # Safety
/// `argv` points to `argc` valid NUL-terminated strings (the C contract of
/// `main`'s parameters).
pub unsafe fn args(argc: libc::c_int, argv: *const *const libc::c_char) -> Vec<Vec<u8>> {
    let n = argc.max(0) as usize;
    let mut args = Vec::with_capacity(n);
    for i in 0..n {
        // SAFETY: the caller's promise: argv[i] for i < argc is a valid C string.
        let s = unsafe { CStr::from_ptr(*argv.add(i)) };
        args.push(s.to_bytes().to_vec());
    }
    args
}

extern "C" {
    static environ: *const *const libc::c_char;
}

/// An environment variable, straight from `environ` (libc's getenv linked
/// ~300 B of string helpers into the static binary).
pub fn getenv(name: &[u8]) -> Option<&'static [u8]> {
    // SAFETY: the C runtime sets environ to a NULL-terminated array of
    // NUL-terminated strings (or NULL), and nothing in ftbox changes the
    // environment, so the strings live as long as the process.
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            let kv = CStr::from_ptr(*p).to_bytes();
            if let Some(v) = kv.strip_prefix(name).and_then(|r| r.strip_prefix(b"=")) {
                return Some(v);
            }
            p = p.add(1);
        }
    }
    None
}

pub fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// Is there a process `pid` (kill(2) with signal 0: EPERM means it exists
/// but is not ours)?
pub fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    !matches!(rustix::process::test_kill_process(pid), Err(Errno::SRCH))
}

/// Sleep, resuming after signals.
pub fn sleep_ms(ms: u64) {
    let mut t = rustix::thread::Timespec { tv_sec: (ms / 1000) as _, tv_nsec: ((ms % 1000) * 1_000_000) as _ };
    while let rustix::thread::NanosleepRelativeResult::Interrupted(left) = rustix::thread::nanosleep(&t) {
        t = left;
    }
}

/// The working directory.
pub fn cwd() -> Result<Vec<u8>> {
    rustix::process::getcwd(Vec::new()).map(|c| c.into_bytes())
}

/// Call `each` with the name and type (Unknown where the filesystem has no
/// d_type) of every entry of an open directory but `.` and `..`, until it
/// returns false. getdents64 into a stack buffer; one copy of this loop
/// serves every directory the applets read.
pub fn read_dir(fd: impl AsFd, each: &mut dyn FnMut(&CStr, rustix::fs::FileType) -> bool) -> Result<()> {
    read_dir_fd(fd.as_fd(), each)
}

#[inline(never)]
fn read_dir_fd(fd: BorrowedFd<'_>, each: &mut dyn FnMut(&CStr, rustix::fs::FileType) -> bool) -> Result<()> {
    let mut buf = [core::mem::MaybeUninit::<u8>::uninit(); 4096];
    let mut dir = rustix::fs::RawDir::new(fd, &mut buf);
    while let Some(ent) = dir.next() {
        let ent = ent?;
        let name = ent.file_name();
        if name != c"." && name != c".." && !each(name, ent.file_type()) {
            break;
        }
    }
    Ok(())
}

/// Where a symbolic link points.
pub fn readlink(path: &CStr) -> Result<Vec<u8>> {
    readlink_at(CWD, path)
}

/// Where a symbolic link relative to `dir` points: one copy of rustix's
/// growing-buffer loop for every caller.
#[inline(never)]
pub fn readlink_at(dir: BorrowedFd<'_>, path: &CStr) -> Result<Vec<u8>> {
    rustix::fs::readlinkat(dir, path, Vec::new()).map(|c| c.into_bytes())
}

/// stat or (`follow` false) lstat.
pub fn stat(path: impl rustix::path::Arg, follow: bool) -> Result<rustix::fs::Stat> {
    if follow {
        rustix::fs::stat(path)
    } else {
        rustix::fs::lstat(path)
    }
}

/// The file type of a stat.
pub fn file_type(st: &rustix::fs::Stat) -> rustix::fs::FileType {
    rustix::fs::FileType::from_raw_mode(st.st_mode)
}

/// A symbolic (`symbolic`) or hard link named `link` to `target`.
pub fn link(target: &CStr, link: &CStr, symbolic: bool) -> Result<()> {
    if symbolic {
        rustix::fs::symlink(target, link)
    } else {
        rustix::fs::link(target, link)
    }
}

/// Lossy UTF-8 of a byte string, for messages.
pub fn lossy(b: &[u8]) -> alloc::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

// ---- processes, signals, timers (ftrec's command and reader processes) ----

/// A close-on-exec pipe, (read end, write end); `nonblock` for ends that a
/// loop polls.
pub fn pipe(nonblock: bool) -> Result<(OwnedFd, OwnedFd)> {
    use rustix::pipe::PipeFlags;
    let flags = if nonblock { PipeFlags::CLOEXEC | PipeFlags::NONBLOCK } else { PipeFlags::CLOEXEC };
    rustix::pipe::pipe_with(flags)
}

/// Which side of a [`fork`] this is.
pub enum Forked {
    Child,
    Parent(i32),
}

extern "C" {
    /// fork(2) without fork()'s atfork handlers and the locks it takes for
    /// the sake of other threads (musl >= 1.2.2, glibc >= 2.34): ftbox
    /// starts no threads, and fork() linked its locking code into the
    /// static binary for nothing.
    fn _Fork() -> libc::pid_t;
}

/// fork(2): a copy of this process. Sound as a safe call because ftbox
/// never starts a thread (it is no_std; its concurrent readers are
/// processes), so the child cannot inherit a lock held by a thread that
/// does not exist in it, and may use the allocator like the parent.
/// fork(2): <https://man7.org/linux/man-pages/man2/fork.2.html>
pub fn fork() -> Result<Forked> {
    // SAFETY: _Fork takes no arguments and touches no memory of ours; the
    // process is single-threaded (see above).
    match unsafe { _Fork() } {
        p if p < 0 => Err(last_errno()),
        0 => Ok(Forked::Child),
        p => Ok(Forked::Parent(p)),
    }
}

/// End this process now with `code`, as _exit(2): no atexit handlers, no
/// flushing of buffers that the parent of a fork still owns.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit takes a plain integer and never returns.
    unsafe { libc::_exit(code) }
}

/// A program and its arguments made ready for execv(3) ahead of time, so
/// that the child of a fork only has to call [`Exec::exec`] (which
/// allocates nothing). An argument with a NUL inside would be cut there:
/// callers refuse those first.
pub struct Exec {
    /// The program path, then each argument, each NUL-terminated.
    strings: Vec<Vec<u8>>,
    /// Pointers to `strings[1..]`, then NULL: the argv execv takes. The
    /// pointed-to bytes are the heap buffers of `strings`, which stay put
    /// while this value lives, wherever it moves.
    argv: Vec<*const libc::c_char>,
}

impl Exec {
    /// `prog`: the path to execute; `args`: its argv (argv[0] first).
    pub fn new(prog: &str, args: &[String]) -> Exec {
        let mut strings = Vec::new();
        for s in core::iter::once(prog).chain(args.iter().map(String::as_str)) {
            strings.push([s.as_bytes(), b"\0"].concat());
        }
        let mut argv = Vec::new();
        for s in &strings[1..] {
            argv.push(s.as_ptr().cast());
        }
        argv.push(core::ptr::null());
        Exec { strings, argv }
    }

    /// Replace this process with the program (with this environment). It
    /// returns only on failure, with the reason. Async-signal-safe.
    /// execv(3): <https://man7.org/linux/man-pages/man3/execv.3.html>
    pub fn exec(&self) -> Errno {
        // SAFETY: strings[0] is NUL-terminated and argv is a NULL-terminated
        // array of pointers to NUL-terminated strings, all owned by self
        // and alive for the call.
        unsafe { libc::execv(self.strings[0].as_ptr().cast(), self.argv.as_ptr()) };
        last_errno()
    }
}

/// The write end of `catch_signals`' pipe (-1 before), and the last signal
/// caught (0: none). Atomics, as the handler may run at any point.
static SIGNAL_PIPE: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(-1);
static SIGNAL_CAUGHT: core::sync::atomic::AtomicI32 = core::sync::atomic::AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    use core::sync::atomic::Ordering::SeqCst;
    SIGNAL_CAUGHT.store(sig, SeqCst);
    let fd = SIGNAL_PIPE.load(SeqCst);
    if fd >= 0 {
        // SAFETY: the pipe's write end stays open for the whole process
        // (catch_signals forgets it); write(2) is async-signal-safe.
        let _ = rustix::io::write(unsafe { BorrowedFd::borrow_raw(fd) }, b"s");
    }
}

/// Catch `signals` from now on (the self-pipe trick): each one is noted
/// for [`caught_signal`] and makes the returned pipe end readable, so a
/// loop that polls it wakes up. Call it once per process.
pub fn catch_signals(signals: &[rustix::process::Signal]) -> Result<OwnedFd> {
    let (read, write) = pipe(true)?;
    SIGNAL_PIPE.store(rustix::fd::AsRawFd::as_raw_fd(&write), core::sync::atomic::Ordering::SeqCst);
    // The handler writes to it for as long as the process lives.
    core::mem::forget(write);
    for sig in signals {
        // signal() is sigaction with SA_RESTART and an empty mask in musl
        // and glibc alike, and it is linked already (for SIGPIPE).
        // SAFETY: on_signal does only async-signal-safe work (two atomics
        // and a write(2)).
        unsafe { libc::signal(sig.as_raw(), on_signal as *const () as libc::sighandler_t) };
    }
    Ok(read)
}

/// The last signal [`catch_signals`] caught, if any.
pub fn caught_signal() -> Option<rustix::process::Signal> {
    match SIGNAL_CAUGHT.load(core::sync::atomic::Ordering::SeqCst) {
        0 => None,
        // SAFETY: only on_signal stores a non-zero value: the number of a
        // signal catch_signals was given, so a valid Signal.
        sig => Some(unsafe { rustix::process::Signal::from_raw_unchecked(sig) }),
    }
}

/// Send `sig` to process `pid`. kill(2): <https://man7.org/linux/man-pages/man2/kill.2.html>
pub fn kill(pid: i32, sig: rustix::process::Signal) -> Result<()> {
    let pid = rustix::process::Pid::from_raw(pid).ok_or(Errno::SRCH)?;
    rustix::process::kill_process(pid, sig)
}

/// A CLOCK_MONOTONIC timerfd that becomes readable once, `ms` from now.
/// timerfd_create(2): <https://man7.org/linux/man-pages/man2/timerfd_create.2.html>
pub fn timer_once(ms: u64) -> Result<OwnedFd> {
    use rustix::time::{timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags, Timespec};
    let fd = timerfd_create(TimerfdClockId::Monotonic, TimerfdFlags::CLOEXEC)?;
    let at = Itimerspec {
        it_interval: Timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: Timespec { tv_sec: (ms / 1000) as _, tv_nsec: (ms % 1000 * 1_000_000) as _ },
    };
    timerfd_settime(&fd, TimerfdTimerFlags::empty(), &at)?;
    Ok(fd)
}

/// The kernel's names for this machine (uname(2)) as `uname -snrm`
/// prints them: sysname, nodename, release and machine, joined by spaces,
/// lossily as text.
pub fn uname() -> String {
    let u = rustix::system::uname();
    let mut line = Vec::new();
    for field in [u.sysname(), u.nodename(), u.release(), u.machine()] {
        line.extend_from_slice(field.to_bytes());
        line.push(b' ');
    }
    line.pop();
    String::from_utf8_lossy(&line).into_owned()
}

/// The system's memory page size, from the auxiliary vector.
pub fn page_size() -> usize {
    // (rustix::param::page_size would link its own auxv reader.)
    // SAFETY: getauxval takes an integer and only reads the auxiliary vector.
    (unsafe { libc::getauxval(libc::AT_PAGESZ) }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    #[test]
    fn errors_read_as_std_printed_them() {
        assert_eq!(OsError(Errno::NOENT).to_string(), "No such file or directory (os error 2)");
        assert_eq!(Msg(Errno::INVAL).to_string(), "Invalid argument");
    }

    #[test]
    fn whole_files() {
        assert!(read(c"/proc/self/stat").unwrap().starts_with(getpid().to_string().as_bytes()));
        assert_eq!(read(c"/nonexistent/x").unwrap_err(), Errno::NOENT);
        assert!(getenv(b"PATH").is_some_and(|p| p.contains(&b'/')));
        assert!(getenv(b"PAT").is_none());
        assert!(getenv(b"FTBOX_SURELY_UNSET_VARIABLE").is_none());
        sleep_ms(2);
        assert!(cwd().unwrap().starts_with(b"/"));
    }
}
