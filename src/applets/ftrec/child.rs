//! Tracing a command: fork; the child puts its own pid into the pid filters
//! and turns tracing on itself, then execs — so the first event of the
//! command is already recorded and nothing of ftrec's own setup is.
//!
//! Between fork and exec only async-signal-safe work is allowed (the reader
//! threads may hold the allocator lock), so everything — the resolved program
//! path, argv, the open control files — is prepared before fork, and the
//! child only formats a number on the stack and calls write/execv/_exit.

use rustix::fd::{AsRawFd, OwnedFd};
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

extern "C" {
    static environ: *const *const libc::c_char;
}

/// $PATH, straight from `environ` (libc's getenv linked ~300 B of string
/// helpers into the static binary for this one lookup).
fn path_var() -> Option<&'static [u8]> {
    // SAFETY: the C runtime sets environ to a NULL-terminated array of
    // NUL-terminated strings (or NULL), and nothing in ftbox changes the
    // environment, so the strings live as long as the process.
    unsafe {
        let mut p = environ;
        while !p.is_null() && !(*p).is_null() {
            if let Some(v) = core::ffi::CStr::from_ptr(*p).to_bytes().strip_prefix(b"PATH=") {
                return Some(v);
            }
            p = p.add(1);
        }
    }
    None
}

/// Find `cmd` in PATH the way a shell would (only for names without '/').
#[inline(never)]
fn resolve(cmd: &str) -> Option<String> {
    if cmd.contains('/') {
        return Some(String::from(cmd));
    }
    let path = path_var().map(sys::lossy);
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

fn write_all(fd: i32, b: &[u8]) -> bool {
    // SAFETY: fd is an open descriptor inherited from the parent, b a valid slice.
    let n = unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
    n == b.len() as isize
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
    let on = tracing_on.as_raw_fd();
    let stw = st_w.as_raw_fd();

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
        let mut ok = true;
        // (as_raw_fd only reads the descriptor number.)
        for (f, req) in pid_files {
            if !write_all(f.as_raw_fd(), num) && *req {
                ok = false;
                break;
            }
        }
        if ok {
            stage = 2;
            ok = write_all(on, b"1");
        }
        if ok {
            stage = 3;
            // ftbox ignores SIGPIPE (sys::init); the command gets the default.
            sys::default_sigpipe();
            // SAFETY: cprog and ptrs (NUL-terminated array of C strings) outlive the call.
            unsafe { libc::execv(cs[0].as_ptr().cast(), ptrs.as_ptr()) };
        }
        // SAFETY: errno location is valid in this thread.
        let err = unsafe { *libc::__errno_location() };
        let mut msg = [0u8; 5];
        msg[0] = stage;
        msg[1..].copy_from_slice(&err.to_ne_bytes());
        write_all(stw, &msg);
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
        let mut st = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
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
    let mut st = 0;
    loop {
        // SAFETY: reaping our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r == pid {
            break;
        }
        if r < 0 && sys::last_errno() != rustix::io::Errno::INTR {
            return 1;
        }
    }
    if libc::WIFEXITED(st) {
        libc::WEXITSTATUS(st)
    } else if libc::WIFSIGNALED(st) {
        128 + libc::WTERMSIG(st)
    } else {
        1
    }
}
