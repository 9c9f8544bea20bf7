//! Tracing a command: fork; the child puts its own pid into the pid filters
//! and turns tracing on itself, then execs — so the first event of the
//! command is already recorded and nothing of ftrec's own setup is.
//!
//! Between fork and exec only async-signal-safe work is allowed (the reader
//! threads may hold the allocator lock), so everything — the resolved program
//! path, argv, the open control files — is prepared before fork, and the
//! child only formats a number on the stack and calls write/execv/_exit.

use rustix::fd::OwnedFd;
use rustix::io::Errno;
use crate::sys::{self, OsError};
use alloc::ffi::CString;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

pub struct Child {
    pub pid: i32,
    pub pidfd: Option<OwnedFd>,
}

/// "WHAT: reason (os error N)".
#[inline(never)]
pub(super) fn os(what: &str, e: rustix::io::Errno) -> String {
    format!("{what}: {}", OsError(e))
}

/// Find `cmd` in PATH the way a shell would (only for names without '/').
#[inline(never)]
fn resolve(cmd: &str) -> Option<String> {
    if cmd.contains('/') {
        return Some(String::from(cmd));
    }
    let path = sys::getenv(b"PATH").map(sys::lossy);
    for dir in path.as_deref().unwrap_or("/usr/local/bin:/usr/bin:/bin").split(':') {
        // One C string for both calls (a NUL inside fails here as it would there).
        let Ok(p) = CString::new(format!("{}/{}", if dir.is_empty() { "." } else { dir }, cmd)) else { continue };
        if rustix::fs::access(&*p, rustix::fs::Access::EXEC_OK).is_ok()
            && sys::stat(&*p, true).is_ok_and(|m| sys::file_type(&m) == rustix::fs::FileType::RegularFile)
        {
            return p.into_string().ok();
        }
    }
    None
}

/// One write(2) of all of `b`: a raw system call (async-signal-safe; libc's
/// write is a cancellation point and linked its machinery), the errno
/// when it fails or falls short.
fn write_all(fd: &OwnedFd, b: &[u8]) -> Result<(), Errno> {
    match rustix::io::write(fd, b) {
        Ok(n) if n == b.len() => Ok(()),
        Ok(_) => Err(Errno::IO),
        Err(e) => Err(e),
    }
}

/// Reap `pid`: its raw wait status, once it has ended (a raw system call,
/// as write_all's).
pub(super) fn reap(pid: i32) -> Option<i32> {
    let p = rustix::process::Pid::from_raw(pid)?;
    loop {
        match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, st))) => return Some(st.as_raw()),
            Err(Errno::INTR) => {}
            _ => return None,
        }
    }
}

/// Fork and exec `argv`. `pid_files`: opened (truncated) pid filter files the
/// child writes its pid to (`required`: a failure aborts the child);
/// `tracing_on`: written "1" just before exec.
#[inline(never)]
pub fn spawn(argv: &[String], pid_files: &[(OwnedFd, bool)], tracing_on: &OwnedFd) -> Result<Child, String> {
    let prog = resolve(&argv[0]).ok_or_else(|| format!("{}: command not found", argv[0]))?;
    // The program and argv as NUL-terminated strings (a NUL inside cannot
    // be passed on), then argv's pointers.
    let mut cs: Vec<Vec<u8>> = Vec::new();
    for (i, a) in core::iter::once(&prog).chain(argv).enumerate() {
        if a.contains('\0') {
            return Err(format!("{a}: {}", if i == 0 { "bad name" } else { "argument contains NUL" }));
        }
        cs.push([a.as_bytes(), b"\0"].concat());
    }
    let mut ptrs: Vec<*const libc::c_char> = Vec::new();
    for c in &cs[1..] {
        ptrs.push(c.as_ptr().cast());
    }
    ptrs.push(core::ptr::null());
    let (st_r, st_w) = super::pipe(false).map_err(|e| os("pipe", e))?;

    // The child below only makes async-signal-safe calls on data prepared
    // before the fork.
    let pid = super::fork()?;
    if pid == 0 {
        // Child.
        // SAFETY: getpid is always safe.
        let me = unsafe { libc::getpid() };
        let mut nb = [0u8; 20];
        let num = super::dec(&mut nb, me as u32 as u64);
        let mut stage = 1u8;
        let mut r = Ok(());
        for (f, req) in pid_files {
            if let (Err(e), true) = (write_all(f, num), *req) {
                r = Err(e);
                break;
            }
        }
        if r.is_ok() {
            stage = 2;
            r = write_all(tracing_on, b"1");
        }
        if r.is_ok() {
            stage = 3;
            // ftbox ignores SIGPIPE (sys::init); the command gets the default.
            sys::default_sigpipe();
            // SAFETY: cprog and ptrs (NUL-terminated array of C strings) outlive the call.
            unsafe { libc::execv(cs[0].as_ptr().cast(), ptrs.as_ptr()) };
            r = Err(sys::last_errno());
        }
        let err = r.err().map_or(0, |e| e.raw_os_error());
        let mut msg = [0u8; 5];
        msg[0] = stage;
        msg[1..].copy_from_slice(&err.to_ne_bytes());
        let _ = write_all(&st_w, &msg);
        // SAFETY: _exit is async-signal-safe and never returns.
        unsafe { libc::_exit(127) };
    }
    drop(st_w);
    let mut msg = [0u8; 5];
    let mut got = 0;
    while got < msg.len() {
        match rustix::io::read(&st_r, &mut msg[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => break,
        }
    }
    if got == msg.len() {
        let err = rustix::io::Errno::from_raw_os_error(i32::from_ne_bytes([msg[1], msg[2], msg[3], msg[4]]));
        reap(pid);
        // Which stage failed picks the words; one format for all three.
        let (what, name) = match msg[0] {
            1 => ("setting the pid filter for ", &argv[0]),
            2 => ("turning tracing on for ", &argv[0]),
            _ => ("", &prog),
        };
        return Err(os(&[what, name].concat(), err));
    }
    let pidfd = rustix::process::Pid::from_raw(pid)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    Ok(Child { pid, pidfd })
}

/// Wait for the child; its exit status as a shell would report it.
pub fn wait(pid: i32) -> i32 {
    let Some(st) = reap(pid) else { return 1 };
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        1
    }
}
