//! The per-CPU readers. One process per CPU: splice moves whole sub-buffers
//! from `trace_pipe_raw` into a pipe and from the pipe into the CPU's temp
//! file, so the data never enters user space and a reader costs a few
//! syscalls per sub-buffer. Processes rather than threads: measured with
//! scripts/bench-record.sh (getppid storm, 5 s, on a shared 2-CPU machine),
//! ftrec's whole CPU time was 0.47 s for 9.8 M events with thread readers
//! and 0.39-0.64 s for 9-12 M events with process readers (of which the
//! readers 0.14-0.23 s; the rest is writing trace.dat) — the same cost, as
//! the work is in the kernel. But threads pull pthread, TLS destructors
//! and the stack-overflow guard map into the static binary, and a forked
//! reader needs only an inherited eventfd to stop and a pipe to send back
//! a few numbers. PR_SET_PDEATHSIG keeps a killed ftrec from leaving
//! readers behind.
//!
//! Waking: each reader sleeps in poll() on its trace_pipe_raw (the kernel
//! wakes it when the buffer is `buffer_percent` full) and on the shared stop
//! eventfd. Stop: the main process turns tracing off and signals the eventfd;
//! readers then drain — splice until no full page is left, then read() the
//! partial pages until the buffer is empty.

use super::{bail, command, cpu_file, errmsg, tf, Result};
use crate::sys::{self, Forked};
use crate::tracefs::Tracefs;
use rustix::event::{poll, PollFd, PollFlags};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{Mode as FileMode, OFlags};
use rustix::io::Errno;
use rustix::pipe::{splice, SpliceFlags};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

/// How a reader moves pages out of trace_pipe_raw.
#[derive(Clone, Copy, PartialEq)]
pub enum Mode {
    Splice,
    Read,
}

/// One CPU's reader, as prepared before its process starts.
pub struct Reader {
    pub cpu: usize,
    /// The CPU's trace_pipe_raw.
    pub trace: OwnedFd,
    /// Where the pages go: a temp file, or a connection to a listener.
    pub file: OwnedFd,
    /// What writing to `file` is, for errors ("writing the temp file").
    pub sink: &'static str,
    pub page_size: usize,
    pub mode: Mode,
    /// Keep only the newest this-many bytes, page aligned.
    pub keep_bytes: Option<u64>,
    /// Stop after this many bytes (extract: never chase a live buffer).
    pub limit: Option<u64>,
}

/// What a reader did, as it reports it at its end.
#[derive(Default)]
pub struct Outcome {
    /// Bytes in the temp file (end offset).
    pub bytes: u64,
    /// Data before this offset was dropped (the keep limit): punched out
    /// of the file.
    pub start: u64,
    pub err: Option<String>,
    /// The temp file's filesystem is full (disk full, quota, file size).
    pub full: bool,
}

fn is_full(e: Errno) -> bool {
    e == Errno::NOSPC || e == Errno::DQUOT || e == Errno::FBIG
}

struct Run<'a> {
    r: &'a Reader,
    stop: BorrowedFd<'a>,
    out: Outcome,
    stopping: bool,
}

/// Wait until the trace file has data or stop is signalled. `timed`: the last
/// wake found nothing to move (buffer_percent 0 with only a partial page), so
/// wait a little instead of spinning.
fn wait(trace: BorrowedFd, stop: BorrowedFd, timed: bool) -> bool {
    let mut fds = [PollFd::new(&trace, PollFlags::IN), PollFd::new(&stop, PollFlags::IN)];
    let ts = rustix::event::Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
    let _ = poll(&mut fds, if timed { Some(&ts) } else { None });
    fds[1].revents().contains(PollFlags::IN)
}

impl Run<'_> {
    fn fail(&mut self, e: Errno, what: &str) {
        if is_full(e) {
            self.out.full = true;
        }
        if self.out.err.is_none() {
            let why = if e == Errno::BUSY { String::from("trace_pipe_raw is busy (another reader has it open)") } else { errmsg(what, e) };
            self.out.err = Some(format!("CPU {}: {why}", self.r.cpu));
        }
    }

    /// Nothing to move: wait for data or stop (a little only, when the
    /// last wake found nothing either).
    fn idle(&mut self, timed: &mut bool) {
        self.stopping |= wait(self.r.trace.as_fd(), self.stop, *timed);
        *timed = true;
    }

    /// A write of the temp file failed with `bytes` in it: cut it back to
    /// the last whole page so it stays readable, and say why.
    #[inline(never)]
    fn write_failed(&mut self, bytes: u64, e: Errno) {
        let ps = self.r.page_size as u64;
        let keep = bytes / ps * ps;
        let _ = rustix::fs::ftruncate(&self.r.file, keep);
        let _ = rustix::fs::seek(&self.r.file, rustix::fs::SeekFrom::Start(keep));
        self.out.bytes = keep;
        self.fail(e, self.r.sink);
    }

    /// After the file grew: with a keep limit, punch out what is older.
    fn trim(&mut self) {
        let Some(max) = self.r.keep_bytes else { return };
        let ps = self.r.page_size as u64;
        let slack = 256 * ps;
        if self.out.bytes - self.out.start > max + slack {
            let new = (self.out.bytes - max) / ps * ps;
            let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            // Without hole punching the file just grows; the assembly still
            // copies only the newest `max` bytes.
            let _ = rustix::fs::fallocate(&self.r.file, flags, self.out.start, new - self.out.start);
            self.out.start = new;
        }
    }

    fn limit_reached(&self) -> bool {
        self.r.limit.is_some_and(|l| self.out.bytes >= l)
    }

    /// Write a whole number of pages; on a short write cut back to the last
    /// whole page so the file stays readable.
    fn write_pages(&mut self, data: &[u8]) -> bool {
        let mut done = 0;
        while done < data.len() {
            match rustix::io::write(&self.r.file, &data[done..]) {
                Ok(n) => done += n,
                Err(Errno::INTR) => {}
                Err(e) => {
                    self.write_failed(self.out.bytes + done as u64, e);
                    return false;
                }
            }
        }
        self.out.bytes += data.len() as u64;
        self.trim();
        true
    }

    #[inline(never)]
    fn splice_loop(&mut self) -> bool {
        let (pr, pw) = match rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC) {
            Ok(p) => p,
            Err(e) => {
                self.fail(e, "pipe");
                return false;
            }
        };
        let ps = self.r.page_size;
        // A bigger pipe moves more sub-buffers per syscall pair; fall back
        // to whatever the system allows.
        let mut cap = ps;
        for want in [1usize << 20, 256 << 10, 64 << 10] {
            if let Ok(n) = rustix::pipe::fcntl_setpipe_size(&pw, want.max(ps)) {
                cap = n;
                break;
            }
        }
        let cap = (cap / ps).max(1) * ps;
        let mut timed = false;
        loop {
            if self.limit_reached() {
                return true;
            }
            match splice(&self.r.trace, None, &pw, None, cap, SpliceFlags::MOVE | SpliceFlags::NONBLOCK) {
                Ok(0) | Err(Errno::AGAIN) => {
                    if self.stopping {
                        return true;
                    }
                    self.idle(&mut timed);
                }
                Ok(n) => {
                    timed = false;
                    if !self.pipe_to_file(&pr, n) {
                        return true;
                    }
                }
                Err(Errno::INTR) => {}
                Err(e) if self.out.bytes == 0 && (e == Errno::INVAL || e == Errno::NOSYS || e == Errno::OPNOTSUPP) => {
                    return false; // splice refused: use read()
                }
                Err(e) => {
                    self.fail(e, "splice from trace_pipe_raw");
                    return true;
                }
            }
        }
    }

    /// Move `n` bytes from the pipe into the file. False after a write error.
    fn pipe_to_file(&mut self, pr: &OwnedFd, n: usize) -> bool {
        let mut left = n;
        while left > 0 {
            match splice(pr, None, &self.r.file, None, left, SpliceFlags::MOVE) {
                Ok(0) => break,
                Ok(m) => {
                    left -= m;
                    self.out.bytes += m as u64;
                }
                Err(Errno::INTR) => {}
                Err(e) => {
                    self.write_failed(self.out.bytes, e);
                    return false;
                }
            }
        }
        self.trim();
        true
    }

    /// read() one sub-buffer at a time (the kernel hands out at most one per
    /// call), batching writes. `drain`: stop at the first EAGAIN.
    fn read_loop(&mut self, drain: bool) {
        let ps = self.r.page_size;
        let batch = 64;
        let mut buf = vec![0u8; ps * batch];
        let mut used = 0;
        let mut timed = false;
        loop {
            if self.limit_reached() {
                break;
            }
            let full = used == buf.len();
            let r = if full { Err(Errno::AGAIN) } else { rustix::io::read(&self.r.trace, &mut buf[used..used + ps]) };
            match r {
                Ok(0) => {
                    if drain || self.stopping {
                        break;
                    }
                    // Nothing at all: flush and wait.
                    if used > 0 && !self.write_pages(&buf[..used]) {
                        return;
                    }
                    used = 0;
                    self.idle(&mut timed);
                }
                Ok(n) => {
                    timed = false;
                    // A short read is the rest of a page read before: keep
                    // page alignment by padding (the page header says how
                    // much is data).
                    buf[used + n..used + ps].fill(0);
                    used += ps;
                }
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => {
                    if used > 0 {
                        if !self.write_pages(&buf[..used]) {
                            return;
                        }
                        used = 0;
                    }
                    if full {
                        continue;
                    }
                    if drain || self.stopping {
                        break;
                    }
                    self.idle(&mut timed);
                }
                Err(e) => {
                    self.fail(e, "reading trace_pipe_raw");
                    break;
                }
            }
        }
        if used > 0 {
            self.write_pages(&buf[..used]);
        }
    }
}

/// Record one CPU until `stop` is signalled, then drain it.
#[inline(never)]
fn run(r: &Reader, stop: BorrowedFd) -> Outcome {
    let mut run = Run { r, stop, out: Outcome::default(), stopping: false };
    let spliced = r.mode == Mode::Splice && run.splice_loop();
    if run.out.err.is_none() {
        // Either splice was refused (read() from here on) or stop came and
        // the full pages are in: the partial ones need read().
        run.read_loop(spliced || r.limit.is_some());
    }
    run.out
}

/// A reader running in its own process.
pub struct Worker {
    pid: i32,
    result: OwnedFd,
}

/// Fork a reader for `r`. It reports failure at once by writing to `fail`
/// (so the main loop can stop), and its outcome on its result pipe at exit.
#[inline(never)]
pub fn spawn(r: &Reader, stop: &OwnedFd, fail: &OwnedFd) -> core::result::Result<Worker, String> {
    let (rd, wr) = sys::pipe(false).map_err(|e| errmsg("pipe", e))?;
    // The parent is single-threaded, so the child may use the allocator
    // and everything else freely; it leaves through exit_now only (the
    // parent's buffers are not its to flush).
    match command::fork()? {
        Forked::Parent(pid) => Ok(Worker { pid, result: rd }),
        Forked::Child => {
            let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
            drop(rd);
            let o = run(r, stop.as_fd());
            if o.err.is_some() {
                let _ = rustix::io::write(fail, b"x");
            }
            // The numbers, then the error text: one pipe, read to its end.
            let mut head = [0u8; 17];
            head[..8].copy_from_slice(&o.bytes.to_ne_bytes());
            head[8..16].copy_from_slice(&o.start.to_ne_bytes());
            head[16] = o.full as u8;
            let _ = rustix::io::write(&wr, &head);
            if let Some(e) = &o.err {
                let _ = rustix::io::write(&wr, &e.as_bytes()[..e.len().min(1000)]);
            }
            sys::exit_now(0)
        }
    }
}

/// Wait for a reader to finish and read its outcome.
#[inline(never)]
pub fn collect(w: &Worker) -> Outcome {
    let mut msg = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match rustix::io::read(&w.result, &mut buf) {
            Ok(0) => break,
            Ok(n) => msg.extend_from_slice(&buf[..n]),
            Err(Errno::INTR) => {}
            Err(_) => break,
        }
    }
    command::reap(w.pid);
    let u64_at = |i: usize| msg.get(i..i + 8).map(|b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    match (u64_at(0), u64_at(8), msg.get(16)) {
        (Some(bytes), Some(start), Some(&full)) => Outcome {
            bytes,
            start,
            full: full != 0,
            err: (msg.len() > 17).then(|| String::from_utf8_lossy(&msg[17..]).into_owned()),
        },
        _ => Outcome { err: Some(String::from("a reader process died")), ..Outcome::default() },
    }
}

/// The number of CPUs the tracefs has buffers for.
pub(super) fn cpu_count(t: &Tracefs) -> usize {
    let mut n = 0;
    while t.exists(&cpu_file(n, "")) {
        n += 1;
    }
    n
}

/// One reader per CPU of `rec` (`sinks[cpu]`: where its pages go, and
/// `sink` what writing there is), for pages of `page_size` bytes.
pub(super) fn open(rec: &Tracefs, sinks: Vec<OwnedFd>, sink: &'static str, mode: Mode, page_size: usize, keep_bytes: Option<u64>, limit: Option<u64>) -> Result<Vec<Reader>> {
    let mut v = Vec::new();
    for (cpu, file) in sinks.into_iter().enumerate() {
        let trace = match rec.open_file(&cpu_file(cpu, "/trace_pipe_raw"), OFlags::RDONLY | OFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if e.errno == Errno::BUSY => bail!("CPU {cpu}: {} is busy (another reader has it open)", e.file),
            Err(e) => return Err(tf(e)),
        };
        v.push(Reader { cpu, trace, file, sink, page_size, mode, keep_bytes, limit });
    }
    Ok(v)
}

/// The kernel lets several processes read one trace_pipe_raw, each taking
/// pages from the others. Find such a reader in /proc and refuse, naming the
/// CPU and the process, before anything is changed.
pub(super) fn check_busy(rec: &Tracefs) -> Result<()> {
    // A link to ".../per_cpu/cpuN/trace_pipe_raw" of this tracefs.
    let pre = rec.path_of("per_cpu/cpu");
    let me = sys::getpid().to_string();
    let Ok(procs) = sys::open_dir("/proc") else { return Ok(()) };
    let mut busy = None;
    let _ = sys::read_dir(&procs, &mut |pid, _| {
        let pid = pid.to_string_lossy();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            return true;
        }
        let Ok(fds) = sys::open_dir(&format!("/proc/{pid}/fd")) else { return true };
        let _ = sys::read_dir(&fds, &mut |f, _| {
            let Ok(target) = sys::readlink_at(fds.as_fd(), f) else { return true };
            let t = sys::lossy(&target);
            match t.strip_prefix(pre.as_str()).and_then(|r| r.strip_suffix("/trace_pipe_raw")) {
                Some(cpu) if !cpu.is_empty() && cpu.bytes().all(|b| b.is_ascii_digit()) => {
                    busy = Some(format!("CPU {cpu}: {t} is busy: process {pid} ("));
                    false
                }
                _ => true,
            }
        });
        if let Some(m) = &mut busy {
            let comm = sys::open_str(&format!("/proc/{pid}/comm"), OFlags::RDONLY | OFlags::CLOEXEC, FileMode::empty()).and_then(sys::read_fd).unwrap_or_default();
            m.push_str(sys::lossy(&comm).trim());
            m.push_str(") is reading it");
        }
        busy.is_none()
    });
    busy.map_or(Ok(()), |m| Err(super::Error::new(m)))
}
