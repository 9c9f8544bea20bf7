//! The traced command: fork; the child puts its own pid into the pid
//! filters (with -F) and turns tracing on itself, then execs — so the first
//! event of the command is already recorded and nothing of ftrec's own
//! setup is.
//!
//! Everything the child needs — the resolved program path, argv, the open
//! control files — is prepared before the fork, and the child only formats
//! a number on the stack and calls write/execv/_exit: the work that stays
//! correct between fork and exec in any process.

use rustix::fd::OwnedFd;
use rustix::io::Errno;
use crate::sys::{self, Forked, OsError};
use alloc::ffi::CString;
use alloc::format;
use alloc::string::String;
use rustix::process::WaitStatus;

pub(super) struct Child {
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

/// One write(2) of all of `b`, for the child between fork and exec: a raw
/// system call (async-signal-safe, unlike a buffered write), the errno
/// when it fails or falls short.
fn write_all(fd: &OwnedFd, b: &[u8]) -> Result<(), Errno> {
    match rustix::io::write(fd, b) {
        Ok(n) if n == b.len() => Ok(()),
        Ok(_) => Err(Errno::IO),
        Err(e) => Err(e),
    }
}

/// `v` in decimal, in `b` (no core::fmt: async-signal-safe, for the child).
#[inline(never)]
pub(super) fn dec(b: &mut [u8; 20], mut v: u64) -> &[u8] {
    let mut i = b.len();
    loop {
        i -= 1;
        b[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            return &b[i..];
        }
    }
}

/// Fork, as the messages want it: "fork: reason (os error N)".
pub(super) fn fork() -> Result<Forked, String> {
    sys::fork().map_err(|e| os("fork", e))
}

/// Reap `pid`: its wait status, once it has ended (a raw system call, as
/// write_all's).
pub(super) fn reap(pid: i32) -> Option<WaitStatus> {
    let p = rustix::process::Pid::from_raw(pid)?;
    loop {
        match rustix::process::waitpid(Some(p), rustix::process::WaitOptions::empty()) {
            Ok(Some((_, st))) => return Some(st),
            Err(Errno::INTR) => {}
            _ => return None,
        }
    }
}

/// Whether our child `pid` has ended, without reaping it (WNOWAIT; a raw
/// system call: libc's waitid is a cancellation point). For kernels
/// without pidfds.
pub(super) fn has_ended(pid: i32) -> bool {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    Pid::from_raw(pid).is_some_and(|p| matches!(waitid(WaitId::Pid(p), opts), Ok(Some(_))))
}

/// Fork and exec `argv`. `pid_files`: opened (truncated) pid filter files the
/// child writes its pid to (`required`: a failure aborts the child);
/// `tracing_on`: written "1" just before exec. `stdout_to_stderr`: our
/// stdout carries the recording (`-o -`): the command writes to stderr.
#[inline(never)]
pub(super) fn spawn(argv: &[String], pid_files: &[(OwnedFd, bool)], tracing_on: &OwnedFd, stdout_to_stderr: bool) -> Result<Child, String> {
    let prog = resolve(&argv[0]).ok_or_else(|| format!("{}: command not found", argv[0]))?;
    // The program and argv as NUL-terminated strings (a NUL inside cannot
    // be passed on), then argv's pointers.
    for (i, a) in core::iter::once(&prog).chain(argv).enumerate() {
        if a.contains('\0') {
            return Err(format!("{a}: {}", if i == 0 { "bad name" } else { "argument contains NUL" }));
        }
    }
    let exec = sys::Exec::new(&prog, argv);
    // The child tells how far it got, and why it failed, on this pipe; its
    // write end closes on exec.
    let (st_r, st_w) = sys::pipe(false).map_err(|e| os("pipe", e))?;

    // The child below only makes async-signal-safe calls on data prepared
    // before the fork.
    let pid = match fork()? {
        Forked::Parent(pid) => pid,
        Forked::Child => {
            let mut nb = [0u8; 20];
            let num = dec(&mut nb, u64::from(sys::getpid()));
            let mut stage = 1u8;
            let mut r = Ok(());
            if stdout_to_stderr {
                r = rustix::stdio::dup2_stdout(sys::fd(2));
            }
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
                r = Err(exec.exec());
            }
            let err = r.err().map_or(0, |e| e.raw_os_error());
            let mut msg = [0u8; 5];
            msg[0] = stage;
            msg[1..].copy_from_slice(&err.to_ne_bytes());
            let _ = write_all(&st_w, &msg);
            sys::exit_now(127)
        }
    };
    drop(st_w);
    // Nothing before the end (the exec closed it): the command runs.
    let msg = sys::read_fd(&st_r).unwrap_or_default();
    if let [stage, e0, e1, e2, e3, ..] = msg[..] {
        let err = rustix::io::Errno::from_raw_os_error(i32::from_ne_bytes([e0, e1, e2, e3]));
        reap(pid);
        // Which stage failed picks the words; one format for all three.
        let (what, name) = match stage {
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
pub(super) fn wait(pid: i32) -> i32 {
    let Some(st) = reap(pid) else { return 1 };
    match (st.exit_status(), st.terminating_signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        _ => 1,
    }
}
