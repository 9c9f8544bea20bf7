//! The per-CPU readers. One process per CPU: splice moves whole sub-buffers
//! from `trace_pipe_raw` into a pipe and from the pipe into the output, so
//! the data never enters user space and a reader costs a few syscalls per
//! batch of sub-buffers. Processes rather than threads: measured with
//! scripts/bench-record.sh (getppid storm, 5 s, on a shared 2-CPU machine),
//! ftrec's whole CPU time was 0.47 s for 9.8 M events with thread readers
//! and 0.39-0.64 s for 9-12 M events with process readers — the same cost,
//! as the work is in the kernel. But threads pull pthread, TLS destructors
//! and the stack-overflow guard map into the static binary, and a forked
//! reader needs only an inherited eventfd to stop and a pipe to send back
//! a few numbers. PR_SET_PDEATHSIG keeps a killed ftrec from leaving
//! readers behind.
//!
//! Every reader writes into the one output (a file or stdout), each batch
//! as a `PAGE` frame of the stream (tracedat::stream) under a lock the
//! readers share, so frames never interleave and the output is readable
//! up to wherever it stops. With `-N`, each writes its raw pages into its
//! CPU's own connection to the listener instead.
//!
//! Waking: each reader sleeps in poll() on its trace_pipe_raw (the kernel
//! wakes it when the buffer is `buffer_percent` full) and on the shared stop
//! eventfd. Stop: the main process turns tracing off and signals the eventfd;
//! readers then drain — splice until no full page is left, then read() the
//! partial pages until the buffer is empty.

use super::{bail, command, cpu_file, errmsg, tf, Result};
use crate::sys::{self, Forked};
use crate::tracedat::stream::{self, Kind, FRAME_LEN};
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

/// Where a reader's pages go: the one output every reader writes frames
/// into, or (`-N`) its CPU's own connection, raw pages without frames.
/// The lock is a pipe holding one token byte: a reader takes it (read,
/// blocking) to write a frame and puts it back after — shared by fork,
/// unlike flock, and needing no shared memory.
pub struct Sink {
    pub fd: OwnedFd,
    /// (read, write) ends of the lock of a shared output; None: the
    /// reader's own connection.
    lock: Option<(OwnedFd, OwnedFd)>,
    /// The output is a regular file: a frame cut by a failed write is
    /// trimmed back to its whole pages.
    seekable: bool,
}

impl Sink {
    /// The output all readers share.
    pub fn new(fd: OwnedFd) -> core::result::Result<Sink, Errno> {
        let (lock_r, lock_w) = sys::pipe(false)?;
        sys::write_all(&lock_w, b"x")?;
        let seekable = rustix::fs::fstat(&fd).is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile);
        Ok(Sink { fd, lock: Some((lock_r, lock_w)), seekable })
    }

    /// One reader's own connection: raw pages.
    #[cfg(feature = "net")]
    pub fn raw(fd: OwnedFd) -> Sink {
        Sink { fd, lock: None, seekable: false }
    }

    /// Pages go in frames (a shared stream).
    fn framed(&self) -> bool {
        self.lock.is_some()
    }

    fn lock(&self) {
        let mut b = [0u8; 1];
        if let Some((r, _)) = &self.lock {
            while let Err(Errno::INTR) = rustix::io::read(r, &mut b) {}
        }
    }

    fn unlock(&self) {
        if let Some((_, w)) = &self.lock {
            let _ = sys::write_all(w, b"x");
        }
    }

    /// Where the next frame starts (a regular file only).
    fn pos(&self) -> Option<u64> {
        if self.seekable {
            rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Current(0)).ok()
        } else {
            None
        }
    }

    /// A frame whose payload stopped after `wrote` of its bytes: keep its
    /// whole pages (the header says how many), drop the rest.
    #[inline(never)]
    fn trim(&self, start: Option<u64>, cpu: u32, wrote: u64, ps: u64) -> u64 {
        let whole = wrote / ps * ps;
        let Some(at) = start else { return whole };
        let end = if whole == 0 {
            at
        } else {
            let _ = rustix::io::pwrite(&self.fd, &stream::frame(Kind::Pages, cpu, whole), at);
            at + FRAME_LEN as u64 + whole
        };
        let _ = rustix::fs::ftruncate(&self.fd, end);
        let _ = rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Start(end));
        whole
    }
}

/// Where the readers' pages go.
pub enum Sinks {
    /// One output for all.
    Shared(Sink),
    /// Each CPU's own connection, by CPU (`-N`).
    #[cfg(feature = "net")]
    PerCpu(Vec<Sink>),
}

impl Sinks {
    #[cfg_attr(not(feature = "net"), allow(unused_variables))]
    pub fn of(&self, cpu: usize) -> &Sink {
        match self {
            Sinks::Shared(s) => s,
            #[cfg(feature = "net")]
            Sinks::PerCpu(v) => &v[cpu],
        }
    }

    /// The connections, for the end of a `-N` recording.
    #[cfg(feature = "net")]
    pub fn into_fds(self) -> Vec<OwnedFd> {
        match self {
            Sinks::Shared(s) => vec![s.fd],
            Sinks::PerCpu(v) => v.into_iter().map(|s| s.fd).collect(),
        }
    }
}

/// One CPU's reader, as prepared before its process starts.
pub struct Reader {
    pub cpu: usize,
    /// The CPU's trace_pipe_raw.
    pub trace: OwnedFd,
    pub page_size: usize,
    pub mode: Mode,
    /// Stop after this many bytes (extract: never chase a live buffer).
    pub limit: Option<u64>,
    /// Keep only the newest this-many bytes (`-m`): older pages of a file
    /// are punched out as the recording goes, so the disk holds about that
    /// much per CPU (they read as empty pages; the trace.dat leaves them out).
    pub keep_bytes: Option<u64>,
}

/// What a reader did, as it reports it at its end.
#[derive(Default)]
pub struct Outcome {
    /// Bytes of pages written.
    pub bytes: u64,
    pub err: Option<String>,
    /// The output's filesystem is full (disk full, quota, file size).
    pub full: bool,
}

fn is_full(e: Errno) -> bool {
    e == Errno::NOSPC || e == Errno::DQUOT || e == Errno::FBIG
}

struct Run<'a> {
    r: &'a Reader,
    sink: &'a Sink,
    stop: BorrowedFd<'a>,
    out: Outcome,
    stopping: bool,
    /// With a keep limit: the payloads written that are still on disk,
    /// oldest first, and their total.
    kept: alloc::collections::VecDeque<(u64, u64)>,
    kept_bytes: u64,
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

    /// A frame of `len` page bytes went out at `start`: with a keep limit,
    /// punch out the oldest payloads beyond it (plus some slack, so that
    /// it is not a system call per frame).
    fn wrote(&mut self, start: Option<u64>, len: u64) {
        let (Some(keep), Some(at)) = (self.r.keep_bytes, start) else { return };
        self.kept.push_back((at + FRAME_LEN as u64, len));
        self.kept_bytes += len;
        if self.kept_bytes <= keep + 256 * self.r.page_size as u64 {
            return;
        }
        while let Some(&(off, n)) = self.kept.front() {
            if self.kept_bytes - n < keep {
                break;
            }
            let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            // Without hole punching the file just grows; the trace.dat
            // still keeps only the newest pages.
            let _ = rustix::fs::fallocate(&self.sink.fd, flags, off, n);
            self.kept.pop_front();
            self.kept_bytes -= n;
        }
    }

    fn limit_reached(&self) -> bool {
        self.r.limit.is_some_and(|l| self.out.bytes >= l)
    }

    /// One frame of `n` page bytes, under the lock: its header (to a
    /// shared output), then the pages, which `pages` writes to the output
    /// (counting in its second argument what went out). False after a
    /// write error: the frame is cut back to its whole pages.
    fn write_frame(&mut self, n: usize, pages: &mut dyn FnMut(&OwnedFd, &mut usize) -> core::result::Result<(), Errno>) -> bool {
        self.sink.lock();
        let start = self.sink.pos();
        let mut done = 0;
        let mut r = Ok(());
        if self.sink.framed() {
            r = sys::write_all(&self.sink.fd, &stream::frame(Kind::Pages, self.r.cpu as u32, n as u64));
        }
        let ok = match r.and_then(|()| pages(&self.sink.fd, &mut done)) {
            Ok(()) => {
                self.out.bytes += n as u64;
                self.wrote(start, n as u64);
                true
            }
            Err(e) => {
                // How far it got: the file's end, where there is one.
                let wrote = start.and_then(|at| self.sink.pos().map(|end| (end - at).saturating_sub(FRAME_LEN as u64))).unwrap_or(done as u64);
                self.out.bytes += self.sink.trim(start, self.r.cpu as u32, wrote, self.r.page_size as u64);
                self.fail(e, "writing the output");
                false
            }
        };
        self.sink.unlock();
        ok
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

    /// Move `n` bytes (whole pages) from the pipe into the output as one
    /// frame. False after a write error.
    fn pipe_to_file(&mut self, pr: &OwnedFd, n: usize) -> bool {
        let mut buf = Vec::new();
        self.write_frame(n, &mut |out, done| {
            while *done < n {
                let left = n - *done;
                let moved = if buf.is_empty() { splice(pr, None, out, None, left, SpliceFlags::MOVE) } else { Err(Errno::INVAL) };
                match moved {
                    Ok(0) => return Err(Errno::IO),
                    Ok(m) => *done += m,
                    Err(Errno::INTR) => {}
                    // An output splice does not take (a terminal checked
                    // before, some filesystems): copy through memory.
                    Err(Errno::INVAL) => {
                        buf.resize(left.min(1 << 16), 0);
                        match rustix::io::read(pr, &mut buf) {
                            Ok(0) => return Err(Errno::IO),
                            Ok(m) => {
                                sys::write_all(out, &buf[..m])?;
                                *done += m;
                            }
                            Err(e) => return Err(e),
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
            Ok(())
        })
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
                    if used > 0 && !self.flush(&buf[..used]) {
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
                        if !self.flush(&buf[..used]) {
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
            self.flush(&buf[..used]);
        }
    }

    /// `pages` as one frame.
    fn flush(&mut self, pages: &[u8]) -> bool {
        self.write_frame(pages.len(), &mut |out, _| sys::write_all(out, pages))
    }
}

/// Record one CPU until `stop` is signalled, then drain it.
#[inline(never)]
fn run(r: &Reader, sink: &Sink, stop: BorrowedFd) -> Outcome {
    let mut run = Run { r, sink, stop, out: Outcome::default(), stopping: false, kept: Default::default(), kept_bytes: 0 };
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
pub fn spawn(r: &Reader, sink: &Sink, stop: &OwnedFd, fail: &OwnedFd) -> core::result::Result<Worker, String> {
    let (rd, wr) = sys::pipe(false).map_err(|e| errmsg("pipe", e))?;
    // The parent is single-threaded, so the child may use the allocator
    // and everything else freely; it leaves through exit_now only (the
    // parent's buffers are not its to flush).
    match command::fork()? {
        Forked::Parent(pid) => Ok(Worker { pid, result: rd }),
        Forked::Child => {
            let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
            drop(rd);
            let o = run(r, sink, stop.as_fd());
            if o.err.is_some() {
                let _ = rustix::io::write(fail, b"x");
            }
            // The numbers, then the error text: one pipe, read to its end.
            let mut head = [0u8; 9];
            head[..8].copy_from_slice(&o.bytes.to_ne_bytes());
            head[8] = o.full as u8;
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
    // (The pipe is read to its end: the reader's exit closes it.)
    let msg = sys::read_fd(&w.result).unwrap_or_default();
    command::reap(w.pid);
    let u64_at = |i: usize| msg.get(i..i + 8).map(|b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]));
    match (u64_at(0), msg.get(8)) {
        (Some(bytes), Some(&full)) => Outcome {
            bytes,
            full: full != 0,
            err: (msg.len() > 9).then(|| String::from_utf8_lossy(&msg[9..]).into_owned()),
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

/// One reader for each of the `ncpus` CPUs of `rec` (as [`cpu_count`]
/// found them, for the metadata), for pages of `page_size` bytes.
pub(super) fn open(rec: &Tracefs, ncpus: usize, mode: Mode, page_size: usize, keep_bytes: Option<u64>, limit: Option<u64>) -> Result<Vec<Reader>> {
    let mut v = Vec::new();
    for cpu in 0..ncpus {
        let trace = match rec.open_file(&cpu_file(cpu, "/trace_pipe_raw"), OFlags::RDONLY | OFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if e.errno == Errno::BUSY => bail!("CPU {cpu}: {} is busy (another reader has it open)", e.file),
            Err(e) => return Err(tf(e)),
        };
        v.push(Reader { cpu, trace, page_size, mode, limit, keep_bytes });
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
            m.push_str(sys::lossy(&comm).trim_ascii());
            m.push_str(") is reading it");
        }
        busy.is_none()
    });
    busy.map_or(Ok(()), |m| Err(super::Error::new(m)))
}
