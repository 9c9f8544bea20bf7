//! ftrec: record the per-CPU ring buffers into a trace.dat file that ftcat,
//! `trace-cmd report` and KernelShark read.
//!
//! Flow: check the output (before touching tracing) → configure the tracefs,
//! remembering every old value (restore.rs) → one splice reader per CPU
//! (engine.rs) → run a command (child.rs) or wait for SIGINT/SIGTERM/-d →
//! tracing off, drain → put every setting back → write the file
//! (assemble.rs + tracedat::write) → print bytes and lost events per CPU.

mod assemble;
mod child;
mod engine;
mod restore;

use crate::cli::{self, Error, Result};
use crate::tracefs::events::{resolve_in, all_events, EventRef};
use crate::tracefs::Tracefs;
use crate::{fail, usage_err};
use assemble::{CpuData, Recorded};
use engine::{Mode, Reader};
use restore::Saver;
use rustix::fd::{AsRawFd, OwnedFd};
use rustix::fs::{Mode as FMode, OFlags};
use rustix::io::Errno;
use crate::argv::{self, Value};
use crate::sys;
use alloc::ffi::CString;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::sync::atomic::{AtomicI32, Ordering};

const USAGE: &str = "\
Usage: ftrec [OPTIONS] [--] [COMMAND [ARGS...]]
       ftrec extract [-o FILE] [-B INSTANCE]

Record the kernel's per-CPU trace buffers into a trace.dat file. With a
COMMAND, trace it (and only it) until it exits; without one, record until
SIGINT/SIGTERM or -d. Every setting changed is put back on exit.

  -e EVENT          enable events: all, SYSTEM, SYSTEM:EVENT, globs (repeatable)
  -f FILTER         filter for the preceding -e
  -R TRIGGER        trigger for the preceding -e
  -p TRACER         set the tracer (function, function_graph, ...)
  -l FUNC           function filter          -n FUNC   function notrace
  -g FUNC           graph function           --max-graph-depth N
  -O OPT[=0|1]      set a trace option (noOPT clears it)
  -P PID[,PID...]   trace only these pids    -c        follow their children
  -b KB             per-CPU buffer size      -C CLOCK  trace clock
  -B INSTANCE       record this instance (created and removed if missing)
  --private         record in a temporary instance of our own
  -o FILE           output (default trace.dat)
  --file-version N  6 or 7 (default 7, uncompressed)
  -d SECONDS        stop after this long     -m KB     keep the newest KB per CPU
  --no-splice       read() instead of splice
  -q                quiet: no per-CPU summary
  -h, --help        this help
";

struct EventArg {
    spec: String,
    filter: Option<String>,
    triggers: Vec<String>,
}

/// The options of one kind live in one array (indexed by the option's
/// row in `OPTS`, which is ordered by kind): parse_args stores each with
/// one line instead of an arm per option.
#[derive(Default)]
struct Args {
    extract: bool,
    events: Vec<EventArg>,
    /// -p, -C, -B, -o: see TRACER, CLOCK, INSTANCE, OUTPUT.
    strs: [Option<String>; 4],
    /// -l, -n, -g: the set_ftrace_filter, set_ftrace_notrace and
    /// set_graph_function lines (LIST_FILES).
    lists: [Vec<String>; 3],
    /// --max-graph-depth, -b, -m: see GRAPH_DEPTH, BUFFER_KB, MAX_KB.
    nums: [Option<u64>; 3],
    /// -c, --private, -q, --no-splice: see FOLLOW, PRIVATE, QUIET, NO_SPLICE.
    flags: [bool; 4],
    options: Vec<(String, bool)>,
    pids: Vec<u32>,
    version: u64,
    /// -d as milliseconds.
    duration: Option<u64>,
    command: Vec<String>,
}

const TRACER: usize = 0;
const CLOCK: usize = 1;
const INSTANCE: usize = 2;
const OUTPUT: usize = 3;
const GRAPH_DEPTH: usize = 0;
const BUFFER_KB: usize = 1;
const MAX_KB: usize = 2;
const FOLLOW: usize = 0;
const PRIVATE: usize = 1;
const QUIET: usize = 2;
const NO_SPLICE: usize = 3;

/// One (non-generic) number parser for every numeric option.
#[inline(never)]
fn num(what: &str, v: &str, max: u64) -> Result<u64> {
    match v.trim().parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => usage_err!("{what}: invalid number '{v}'"),
    }
}

/// "1", "0.5", "2.25" seconds as milliseconds (no float parsing: it would
/// pull ~15 KB of dec2flt into the binary for one option).
fn parse_ms(v: &str) -> Option<u64> {
    let (int, frac) = v.split_once('.').unwrap_or((v, ""));
    if (int.is_empty() && frac.is_empty()) || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let secs: u64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ms = 0u64;
    for (i, b) in frac.bytes().take(3).enumerate() {
        ms += u64::from(b - b'0') * [100, 10, 1][i];
    }
    secs.checked_mul(1000)?.checked_add(ms)
}

/// The options by row, in groups: the row says what to do with one (rows
/// 1 to FLAGS-1 take a value). Short letters one byte a row (0: long only),
/// the few long names beside their rows — argv's (key, name, takes) table
/// cost 24 bytes a row.
const SHORTS: &[u8; 22] = b"hefROP\0dpCBolng\0bmc\0q\0";
const LONGS: [(&str, u8); 5] = [("help", 0), ("file-version", 6), ("max-graph-depth", 15), ("private", 19), ("no-splice", 21)];
// Rows 0-7: -h -e -f -R -O -P --file-version -d, then the groups:
const STRS: usize = 8;
const LISTS: usize = 12;
const NUMS: usize = 15;
const FLAGS: usize = 18;
/// The numeric options' names, for messages.
const NUM_NAMES: [&str; 3] = ["--max-graph-depth", "-b", "-m"];

#[inline(never)]
fn parse_args(args: Vec<Vec<u8>>) -> Result<Args> {
    let mut a = Args { version: 7, ..Args::default() };
    let mut p = argv::Parser::from_args(args);
    let mut first = true;
    while let Some(arg) = p.next()? {
        let was_first = first;
        first = false;
        let (i, v) = match arg {
            Value(v) => {
                if was_first && v == "extract" {
                    a.extract = true;
                    continue;
                }
                if a.extract {
                    usage_err!("extract takes no command");
                }
                a.command.push(v);
                a.command.extend(p.raw_args()?);
                continue;
            }
            arg => {
                let row = match arg {
                    argv::Short(c) => SHORTS.iter().position(|&b| b != 0 && b as char == c),
                    argv::Long(l) => LONGS.iter().find(|o| o.0 == l).map(|o| usize::from(o.1)),
                    Value(_) => None,
                };
                match row {
                    Some(i) => (i, if i > 0 && i < FLAGS { p.value()? } else { String::new() }),
                    None => return Err(arg.unexpected()),
                }
            }
        };
        if i >= FLAGS {
            a.flags[i - FLAGS] = true;
        } else if i >= NUMS {
            let max = if i == NUMS { u32::MAX.into() } else { u64::MAX };
            a.nums[i - NUMS] = Some(num(NUM_NAMES[i - NUMS], &v, max)?);
        } else if i >= LISTS {
            a.lists[i - LISTS].push(v);
        } else if i >= STRS {
            a.strs[i - STRS] = Some(v);
        } else {
            match i {
                0 => cli::help(USAGE)?, // always Err(Exit(0)) after printing
                1 => a.events.push(EventArg { spec: v, filter: None, triggers: Vec::new() }),
                2 | 3 => match a.events.last_mut() {
                    Some(e) if i == 2 => e.filter = Some(v),
                    Some(e) => e.triggers.push(v),
                    None => usage_err!("-{} needs a preceding -e", if i == 2 { 'f' } else { 'R' }),
                },
                4 => {
                    let (name, on) = match v.split_once('=') {
                        Some((n, "1")) => (n, true),
                        Some((n, "0")) => (n, false),
                        Some(_) => usage_err!("-O {v}: the value must be 0 or 1"),
                        // "noOPT" is resolved against options/ (configure).
                        None => (v.as_str(), true),
                    };
                    crate::tracefs::check_name("option", name).map_err(Error::Usage)?;
                    a.options.push((String::from(name), on));
                }
                5 => {
                    for s in v.split(',').filter(|s| !s.is_empty()) {
                        a.pids.push(num("-P", s, u32::MAX.into())? as u32);
                    }
                }
                6 => {
                    a.version = num("--file-version", &v, u32::MAX.into())?;
                    if a.version != 6 && a.version != 7 {
                        usage_err!("--file-version must be 6 or 7");
                    }
                }
                _ => match parse_ms(&v) {
                    Some(ms) => a.duration = Some(ms),
                    None => usage_err!("-d: invalid duration '{v}'"),
                },
            }
        }
    }
    if a.flags[PRIVATE] && a.strs[INSTANCE].is_some() {
        usage_err!("--private and -B exclude each other");
    }
    if let Some(i) = &a.strs[INSTANCE] {
        crate::tracefs::check_name("instance", i).map_err(Error::Usage)?;
    }
    if a.extract && (!a.events.is_empty() || a.strs[TRACER].is_some() || a.flags[PRIVATE] || !a.pids.is_empty()) {
        usage_err!("extract saves the buffer as it is: it takes only -o, -B and -q");
    }
    Ok(a)
}

// ---- signals: a self-pipe the main loop polls ----

static SIG_FD: AtomicI32 = AtomicI32::new(-1);
static SIG_NUM: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIG_NUM.store(sig, Ordering::SeqCst);
    let fd = SIG_FD.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: the pipe's write end stays open for the whole process
        // (install_signals forgets it); a raw write(2) is async-signal-safe.
        let _ = rustix::io::write(unsafe { rustix::fd::BorrowedFd::borrow_raw(fd) }, b"s");
    }
}

extern "C" {
    /// fork(2) without fork()'s atfork handlers and the locks it takes for
    /// the sake of other threads (musl >= 1.2.2, glibc >= 2.34): ftrec has
    /// no other threads (its readers are processes), and fork() linked
    /// ~1.5 KB of locking code into the static binary for nothing.
    fn _Fork() -> libc::pid_t;
}

/// Fork (both children leave through exec or _exit only).
#[inline(never)]
fn fork() -> core::result::Result<i32, String> {
    // SAFETY: _Fork has no memory-safety preconditions; ftrec is
    // single-threaded, so the child inherits no lock held by another thread.
    let pid = unsafe { _Fork() };
    if pid < 0 {
        return Err(child::os("fork", sys::last_errno()));
    }
    Ok(pid)
}

/// A close-on-exec pipe; `nonblock` for the ends the main loop polls.
#[inline(never)]
fn pipe(nonblock: bool) -> rustix::io::Result<(OwnedFd, OwnedFd)> {
    use rustix::pipe::PipeFlags;
    rustix::pipe::pipe_with(if nonblock { PipeFlags::CLOEXEC | PipeFlags::NONBLOCK } else { PipeFlags::CLOEXEC })
}

fn install_signals() -> Result<OwnedFd> {
    let (r, w) = pipe(true).map_err(|e| Error::Fail(child::os("pipe", e)))?;
    SIG_FD.store(w.as_raw_fd(), Ordering::SeqCst);
    core::mem::forget(w); // lives as long as the process
    // signal() is sigaction with SA_RESTART and an empty mask in musl and
    // glibc alike, and sys already links it (for SIGPIPE): no sigaction
    // struct built here.
    // SAFETY: on_signal only does async-signal-safe work.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    Ok(r)
}

// ---- output and temp files ----

fn dir_of(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) => "/",
        Some(i) => &path[..i],
        None => ".",
    }
}

/// Opened up front so an unwritable output fails before tracing is touched,
/// but not truncated until the new file is written: an error on the way
/// leaves an existing file as it was, and removes one we created.
struct Output {
    fd: OwnedFd,
    dir: OwnedFd,
    path: String,
    created: bool,
    started: core::cell::Cell<bool>,
}

fn open_output(path: &str) -> Result<Output> {
    let err = |e| os_err(path, e);
    let mode = FMode::from_raw_mode(0o644);
    let (fd, created) = match sys::open_str(path, OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC, mode) {
        Ok(fd) => (fd, true),
        Err(Errno::EXIST) => (sys::open_str(path, OFlags::WRONLY | OFlags::CLOEXEC, mode).map_err(err)?, false),
        Err(e) => return Err(err(e)),
    };
    let d = dir_of(path);
    let dir = sys::open_dir(d).map_err(|e| os_err(d, e))?;
    // The per-CPU temp files go beside the output: make sure they can.
    if let Err(e) = temp_file(&dir, 0) {
        if created {
            unlink(path);
        }
        return Err(e);
    }
    Ok(Output { fd, dir, path: String::from(path), created, started: core::cell::Cell::new(false) })
}

impl Output {
    fn begin(&self) -> Result<()> {
        self.started.set(true);
        rustix::fs::ftruncate(&self.fd, 0)
            .and_then(|()| rustix::fs::seek(&self.fd, rustix::fs::SeekFrom::Start(0)).map(|_| ()))
            .map_err(|e| os_err(&self.path, e))
    }
    /// Nothing was written: remove the file if it is ours.
    fn abandon(&self) {
        if self.created && !self.started.get() {
            unlink(&self.path);
        }
    }
}

/// Remove a file we created (best effort).
fn unlink(path: &str) {
    if let Ok(p) = sys::cpath(path) {
        let _ = rustix::fs::unlinkat(rustix::fs::CWD, &*p, rustix::fs::AtFlags::empty());
    }
}

/// A temp file beside the output: unnamed (O_TMPFILE) where the filesystem
/// allows, else a fresh O_EXCL|O_NOFOLLOW name unlinked at once — either way
/// nothing is left behind, even after a crash.
const TEMP: &str = "creating a temp file beside the output";

#[inline(never)]
fn temp_file(dir: &OwnedFd, cpu: usize) -> Result<OwnedFd> {
    let mode = FMode::from_raw_mode(0o600);
    // (Paths as &CStr here: rustix compiles its &str conversion once per
    // call site type.)
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
    fail!("{TEMP}: too many leftovers")
}

// ---- the tracefs side ----

fn cpu_count(t: &Tracefs) -> usize {
    let mut n = 0;
    while t.exists(&cpu_file(n, "")) {
        n += 1;
    }
    n
}


fn is_refused(e: Errno) -> bool {
    e == Errno::PERM || e == Errno::ACCESS || e == Errno::NODEV || e == Errno::OPNOTSUPP
}

/// Put every saved setting back; each failure is a warning. Whether all
/// went back (shared by the normal path and the error path).
#[inline(never)]
fn restore_all(s: &mut Session) -> bool {
    let errs = s.saver.restore(&s.top, &s.rec);
    for e in &errs {
        sys::eprintln(format_args!("ftrec: restoring {e}"));
    }
    errs.is_empty()
}

/// "WHAT: reason" for a failed system call (the errno's words).
#[inline(never)]
fn errmsg(what: &str, e: Errno) -> String {
    format!("{what}: {}", sys::Msg(e))
}

fn os_err(what: &str, e: Errno) -> Error {
    Error::Fail(errmsg(what, e))
}

/// "per_cpu/cpuN" + `file`.
#[inline(never)]
fn cpu_file(cpu: usize, file: &str) -> String {
    format!("per_cpu/cpu{cpu}{file}")
}

#[inline(never)]
fn tf(e: crate::tracefs::Error) -> Error {
    Error::Fail(e.to_string())
}

/// `v` in decimal, in `b` (no core::fmt; async-signal-safe, for the child).
#[inline(never)]
fn dec(b: &mut [u8; 20], mut v: u64) -> &[u8] {
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

/// A sorted list of names gains `s` (once).
#[inline(never)]
fn insert_sorted(v: &mut Vec<String>, s: &str) {
    if let Err(at) = v.binary_search_by(|x| x.as_str().cmp(s)) {
        v.insert(at, String::from(s));
    }
}

struct Session {
    top: Tracefs,
    rec: Tracefs,
    saver: Saver,
    /// Systems of the events enabled, sorted.
    systems: Vec<String>,
}

impl Session {
    /// Set a control file of the recorded tracefs, saving the old value.
    /// `soft`: function tracing, which a kernel may refuse (this machine
    /// does): then say so, name `soft`, and go on recording events.
    #[inline(never)]
    fn set(&mut self, file: &str, val: &str, soft: Option<&str>) -> Result<()> {
        match (self.saver.set(&self.rec, file, val), soft) {
            (Ok(()), _) => Ok(()),
            (Err(e), Some(what)) => refused(what, e),
            (Err(e), None) => Err(tf(e)),
        }
    }

    /// A trace option on or off; "noOPT" names OPT's opposite.
    #[inline(never)]
    fn option(&mut self, name: &str, mut on: bool) -> Result<()> {
        let t = &self.rec;
        let mut f = format!("options/{name}");
        if !t.exists(&f) {
            match name.strip_prefix("no").map(|n| format!("options/{n}")) {
                Some(g) if t.exists(&g) => {
                    f = g;
                    on = !on;
                }
                _ => fail!("unknown trace option '{name}' (no {})", t.path_of(&f)),
            }
        }
        self.set(&f, if on { "1" } else { "0" }, name.starts_with("func").then_some(f.as_str()))
    }
}

/// Function tracing refused by the kernel (this machine): say so, go on.
#[inline(never)]
fn refused(what: &str, e: crate::tracefs::Error) -> Result<()> {
    if is_refused(e.errno) {
        sys::eprintln(format_args!("ftrec: the kernel refused function tracing ({e}); {what} ignored, events still record"));
        Ok(())
    } else {
        Err(tf(e))
    }
}

/// The files of -l, -n, -g (Args::lists).
const LIST_FILES: [&str; 3] = ["set_ftrace_filter", "set_ftrace_notrace", "set_graph_function"];

/// Apply the command line to the recorded tracefs, saving old values.
#[inline(never)]
fn configure(s: &mut Session, a: &Args) -> Result<()> {
    s.set("tracing_on", "0", None)?;
    if let Some(kb) = a.nums[BUFFER_KB] {
        s.set("buffer_size_kb", &kb.to_string(), None)?;
    }
    if let Some(c) = &a.strs[CLOCK] {
        s.set("trace_clock", c, None)?;
    }
    // Function tracing: this kernel may refuse it; say so and record events.
    for (file, list) in LIST_FILES.into_iter().zip(&a.lists) {
        if list.is_empty() {
            continue;
        }
        let t = &s.rec;
        let r = s.saver.save_lines(t, file).and_then(|()| t.write(file, b""));
        if let Err(e) = r.and_then(|()| list.iter().try_for_each(|f| t.append(file, f.as_bytes()))) {
            refused(file, e)?;
        }
    }
    if let Some(d) = a.nums[GRAPH_DEPTH] {
        s.set("max_graph_depth", &d.to_string(), Some("--max-graph-depth"))?;
    }
    for (name, on) in &a.options {
        s.option(name, *on)?;
    }
    // -c adds event-fork (and function-fork with a tracer).
    if a.flags[FOLLOW] {
        s.option("event-fork", true)?;
        if a.strs[TRACER].as_deref().is_some_and(|p| p != "nop") {
            s.option("function-fork", true)?;
        }
    }
    let t = &s.rec;
    if let Some(p) = &a.strs[TRACER] {
        if let Err(e) = s.saver.set(t, "current_tracer", p) {
            if e.errno == Errno::INVAL {
                fail!("unknown tracer '{p}' (see {})", t.path_of("available_tracers"));
            }
            refused("-p", e)?;
        }
    }
    events(s, a)
}

/// Events (all named before any is touched), then their filters and
/// triggers, then enabling.
#[inline(never)]
fn events(s: &mut Session, a: &Args) -> Result<()> {
    let t = &s.rec;
    if a.events.is_empty() {
        return Ok(());
    }
    let all = all_events(t).map_err(Error::Fail)?;
    let resolve = |e: &EventArg| resolve_in(&all, &e.spec).map_err(Error::Fail);
    let mut enabled: Vec<EventRef> = Vec::new();
    for e in &a.events {
        for ev in &resolve(e)? {
            insert_sorted(&mut s.systems, &ev.system);
            if let Err(at) = enabled.binary_search(ev) {
                enabled.insert(at, ev.clone());
            }
        }
    }
    for e in &a.events {
        let evs = resolve(e)?;
        if let Some(f) = &e.filter {
            // Like a system filter: events without the fields are left
            // unfiltered; only when no event takes it is it an error.
            let mut first_err = None;
            let mut ok = 0;
            for ev in &evs {
                let file = ev.path("filter");
                match s.saver.set(t, &file, f) {
                    Ok(()) => ok += 1,
                    Err(e) if e.errno == Errno::INVAL && evs.len() > 1 => {
                        let _ = t.write(&file, b"0");
                        first_err.get_or_insert(e);
                    }
                    Err(e) => return Err(tf(e)),
                }
            }
            if let (0, Some(e)) = (ok, first_err) {
                return Err(tf(e));
            }
        }
        for ev in &evs {
            for tr in &e.triggers {
                s.saver.add_trigger(t, &ev.path("trigger"), tr).map_err(tf)?;
            }
        }
    }
    s.saver.enable(t, &enabled).map_err(Error::Fail)
}

/// The pid filter files, each with "required" (set_ftrace_pid needs the
/// function tracer, which a kernel may lack).
const PID_FILES: [(&str, bool); 2] = [("set_event_pid", true), ("set_ftrace_pid", false)];

/// The pid filters: with `pids` (-P) each is saved and set to it;
/// else each is saved unless `add` (-P saved it) and opened (truncating, or
/// appending with `add`) for the command's child to write its pid to.
#[inline(never)]
fn pid_filters(s: &mut Session, pids: Option<&[u32]>, add: bool) -> Result<Vec<(OwnedFd, bool)>> {
    let mut v = Vec::new();
    let text = pids.map(|pids| {
        let mut b = Vec::new();
        for p in pids {
            if !b.is_empty() {
                b.push(b' ');
            }
            b.extend_from_slice(dec(&mut [0; 20], u64::from(*p)));
        }
        b
    });
    for (file, required) in PID_FILES {
        if !s.rec.exists(file) {
            continue;
        }
        let r = if add { Ok(()) } else { s.saver.save_lines(&s.rec, file) };
        let mode = if add { OFlags::APPEND } else { OFlags::TRUNC };
        let r = r.and_then(|()| match &text {
            Some(t) => s.rec.write(file, t),
            None => s.rec.open_file(file, OFlags::WRONLY | mode).map(|fd| v.push((fd, required))),
        });
        match r {
            Err(e) if required => return Err(tf(e)),
            _ => {}
        }
    }
    Ok(v)
}

// ---- main ----

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftrec", USAGE, || {
        let a = parse_args(args)?;
        let sig = if a.extract { None } else { Some(install_signals()?) };
        // The output must be writable before tracing is touched.
        let out = open_output(a.strs[OUTPUT].as_deref().unwrap_or("trace.dat"))?;
        let r = run(&a, sig.as_ref(), &out);
        if r.is_err() {
            out.abandon();
        }
        r
    })
}

fn open_tracefs() -> Result<Tracefs> {
    Tracefs::open().map_err(Error::Fail)
}

/// The kernel lets several processes read one trace_pipe_raw, each taking
/// pages from the others. Find such a reader in /proc and refuse, naming the
/// CPU and the process, before anything is changed.
fn check_busy(rec: &Tracefs) -> Result<()> {
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
            let Ok(target) = sys::readlink_at(rustix::fd::AsFd::as_fd(&fds), f) else { return true };
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
            // (Through open_str: sys::read of a &str compiled rustix's path
            // conversion for this one call.)
            let comm = sys::open_str(&format!("/proc/{pid}/comm"), OFlags::RDONLY | OFlags::CLOEXEC, FMode::empty()).and_then(sys::read_fd).unwrap_or_default();
            m.push_str(sys::lossy(&comm).trim());
            m.push_str(") is reading it");
        }
        busy.is_none()
    });
    busy.map_or(Ok(()), |m| Err(Error::Fail(m)))
}

/// One reader per CPU of `s.rec`, after the busy check, for pages of
/// `ps` bytes. `limit`: extract.
fn readers_for(s: &Session, dir: &OwnedFd, mode: Mode, a: &Args, ps: usize, limit: Option<u64>) -> Result<Vec<Reader>> {
    let max_bytes = a.nums[MAX_KB].map(|kb| (kb * 1024).div_ceil(ps as u64) * ps as u64);
    let mut v = Vec::new();
    for cpu in 0..cpu_count(&s.rec) {
        let trace = match s.rec.open_file(&cpu_file(cpu, "/trace_pipe_raw"), OFlags::RDONLY | OFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if e.errno == Errno::BUSY => fail!("CPU {cpu}: {} is busy (another reader has it open)", e.file),
            Err(e) => return Err(tf(e)),
        };
        let file = temp_file(dir, cpu)?;
        v.push(Reader { cpu, trace, file, page_size: ps, mode, max_bytes, limit });
    }
    Ok(v)
}

/// Open the tracefs to record (or extract) — an instance is created when
/// recording needs one — run, and put every setting back.
#[inline(never)]
fn run(a: &Args, sig: Option<&OwnedFd>, out: &Output) -> Result<()> {
    let top = open_tracefs()?;
    let mut saver = Saver::default();
    let (rec, name) = if a.flags[PRIVATE] || a.strs[INSTANCE].is_some() {
        // "instances/NAME"; --private takes the first free ftrec-PID-N.
        let (rel, private) = match &a.strs[INSTANCE] {
            Some(i) => (format!("instances/{i}"), false),
            None => {
                let mut n = 0u32;
                loop {
                    let cand = format!("instances/ftrec-{}-{n}", sys::getpid());
                    if !top.exists(&cand) {
                        break (cand, true);
                    }
                    n += 1;
                }
            }
        };
        let name = String::from(&rel["instances/".len()..]);
        if sig.is_some() && !top.exists(&rel) {
            top.mkdir(&rel)
                .map_err(|e| os_err(&top.path_of(&rel), e))?;
            saver.created_instance(&rel);
        }
        let inst = match top.instance(&name) {
            Ok(i) => i,
            Err(e) => {
                saver.restore(&top, &top);
                return Err(Error::Fail(e));
            }
        };
        (inst, if private { String::new() } else { name })
    } else {
        (open_tracefs()?, String::new())
    };
    let mut s = Session { top, rec, saver, systems: Vec::new() };
    let r = record_in(&mut s, a, sig, out, &name);
    // Anything not yet restored (errors on the way) is put back here.
    let restored = restore_all(&mut s);
    let status = r?;
    if !restored {
        return Err(Error::Exit(1));
    }
    match status {
        Some(st) if st != 0 => Err(Error::Exit(st)),
        _ => Ok(()),
    }
}

/// Record (`sig`) or extract (no `sig`: save what the buffer holds now,
/// changing nothing); returns the traced command's exit status, if any.
#[inline(never)]
fn record_in(s: &mut Session, a: &Args, sig: Option<&OwnedFd>, out: &Output, name: &str) -> Result<Option<i32>> {
    check_busy(&s.rec)?;
    // The sub-buffer size: read once, for extract's limit and the readers
    // (nothing below changes it).
    let ps = s.rec.subbuf_size();
    let mut limit = None;
    let mut state = String::new();
    let mut mode = Mode::Read;
    match sig {
        None => {
            // Never chase a live buffer forever: at most its size (plus slack) per CPU.
            let kb: u64 = s.rec.read_str("buffer_size_kb").ok().map(|v| restore::current_value("buffer_size_kb", &v)).and_then(|v| v.parse().ok()).unwrap_or(1 << 20);
            limit = Some(kb * 1024 * 2 + 64 * ps as u64);
            // Before draining: the latency header is only there while it has data.
            state = crate::tracefs::state::trace_state(&s.rec);
        }
        Some(_) => {
            configure(s, a)?;
            if !a.pids.is_empty() {
                pid_filters(s, Some(&a.pids), false)?;
            }
            // Start from an empty buffer (this also zeroes the per-CPU stats).
            s.rec.write("trace", b"").map_err(tf)?;
            if !a.flags[NO_SPLICE] {
                mode = Mode::Splice;
            }
        }
    }
    let readers = readers_for(s, &out.dir, mode, a, ps, limit)?;
    let stop = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK)
        .map_err(|e| os_err("eventfd", e))?;
    let (fail_r, fail_w) = pipe(true).map_err(|e| os_err("pipe", e))?;

    // Extract's readers (with a limit) drain and end by themselves.
    let mut workers = Vec::new();
    let mut run = Ok(None);
    for r in &readers {
        match engine::spawn(r, &stop, &fail_w) {
            Ok(w) => workers.push(w),
            Err(e) => {
                run = Err(Error::Fail(e));
                break;
            }
        }
    }
    drop(fail_w);
    if let (Ok(_), Some(sig)) = (&run, sig) {
        run = run_until_done(s, a, sig, &fail_r);
    }
    // Stop: tracing off first so the drain ends, then wake the readers.
    if sig.is_some() {
        let _ = s.rec.write("tracing_on", b"0");
    }
    let _ = rustix::io::write(&stop, &1u64.to_ne_bytes());
    // (By reference, as plain loops: a Vec moved into an iterator chain
    // compiles its own IntoIter and drop code.)
    let mut outcomes = Vec::new();
    for w in &workers {
        outcomes.push(engine::collect(w));
    }
    drop(workers);
    let child_status = run?;
    if sig.is_some() {
        state = crate::tracefs::state::trace_state(&s.rec);
    }
    // What restoring would reset: the per-CPU stats, trace_clock.
    let mut stats = Vec::new();
    for c in 0..outcomes.len() {
        stats.push(s.rec.read_str(&cpu_file(c, "/stats")).unwrap_or_default());
    }
    let clock_file = s.rec.read_str("trace_clock").unwrap_or_default();
    // Each CPU's data in its temp file (with -m, only the newest part);
    // the trace files are closed here (an instance cannot be removed while
    // they are open), the temp files stay open for the assembly. The first
    // reader error, and whether the disk filled.
    let mut cpus = Vec::new();
    let mut err = None;
    let mut full = false;
    for (o, r) in outcomes.iter_mut().zip(readers) {
        let start = match r.max_bytes {
            Some(m) if o.bytes > m => (o.bytes - m).max(o.start),
            _ => o.start,
        };
        cpus.push(CpuData { file: Some(r.file), start, end: o.bytes });
        if err.is_none() {
            err = o.err.take();
        }
        full |= o.full;
    }
    // A full disk while recording still writes what fits; else stop here.
    full &= sig.is_some();
    let err = match (err, full) {
        (Some(e), false) => return Err(Error::Fail(e)),
        (err, _) => err,
    };
    // Put the system back before the (possibly long) assembly.
    let restored = restore_all(s);
    drop(stop);
    out.begin()?;
    let systems = core::mem::take(&mut s.systems);
    let recd = Recorded { name, page_size: ps, cpus, stats, systems, clock_file, state };
    assemble::assemble(&s.top, &out.fd, recd, a.version as u32, full, a.flags[QUIET]).map_err(Error::Fail)?;
    if let Some(e) = err {
        fail!("{e}: recording stopped; {} keeps what was recorded", out.path);
    }
    if !restored {
        return Err(Error::Exit(1));
    }
    Ok(child_status.map(child::wait))
}

/// A CLOCK_MONOTONIC timerfd that fires once after `ms`.
fn timer_fd(ms: u64) -> Result<OwnedFd> {
    // SAFETY: timerfd_create takes no pointers.
    let fd = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_CLOEXEC) };
    if fd < 0 {
        return Err(os_err("timerfd", sys::last_errno()));
    }
    // SAFETY: a descriptor just created and owned by no one else.
    let fd = unsafe { <OwnedFd as rustix::fd::FromRawFd>::from_raw_fd(fd) };
    let t = libc::itimerspec {
        it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
        it_value: libc::timespec { tv_sec: (ms / 1000) as _, tv_nsec: (ms % 1000 * 1_000_000) as _ },
    };
    // SAFETY: a valid itimerspec; no old value asked for.
    if unsafe { libc::timerfd_settime(fd.as_raw_fd(), 0, &t, core::ptr::null_mut()) } < 0 {
        return Err(os_err("timerfd", sys::last_errno()));
    }
    Ok(fd)
}

/// Start tracing (or the command) and wait for the end: command exit,
/// SIGINT/SIGTERM, -d, or a reader failing. Returns the child's pid.
#[inline(never)]
fn run_until_done(s: &mut Session, a: &Args, sig: &OwnedFd, fail_r: &OwnedFd) -> Result<Option<i32>> {
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    let mut child = None;
    if a.command.is_empty() {
        s.rec.write("tracing_on", b"1").map_err(tf)?;
    } else {
        let files = pid_filters(s, None, !a.pids.is_empty())?;
        let on = s.rec.open_file("tracing_on", OFlags::WRONLY).map_err(tf)?;
        child = Some(child::spawn(&a.command, &files, &on).map_err(Error::Fail)?);
    }
    // -d: a timerfd polled with the rest (no clock reading: that linked the
    // vDSO lookup into the static binary). -d 0 stops at once.
    let timer = match a.duration {
        Some(ms) if ms > 0 => Some(timer_fd(ms)?),
        _ => None,
    };
    while a.duration != Some(0) && SIG_NUM.load(Ordering::SeqCst) == 0 {
        let pidfd = child.as_ref().and_then(|c: &child::Child| c.pidfd.as_ref());
        // The last two slots: the child's pidfd and the timer, else the
        // signal pipe again.
        let mut fds = [
            PollFd::new(sig, PollFlags::IN),
            PollFd::new(fail_r, PollFlags::IN),
            PollFd::new(pidfd.unwrap_or(sig), PollFlags::IN),
            PollFd::new(timer.as_ref().unwrap_or(sig), PollFlags::IN),
        ];
        // Without a pidfd (old kernel) check the child every 100 ms.
        let short = Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        let _ = poll(&mut fds, if child.is_some() && pidfd.is_none() { Some(&short) } else { None });
        // A reader failed (disk full, ...), the command ended, or time is up.
        if fds[1].revents().contains(PollFlags::IN)
            || (pidfd.is_some() && fds[2].revents().contains(PollFlags::IN))
            || (timer.is_some() && fds[3].revents().contains(PollFlags::IN))
        {
            break;
        }
        if let Some(c) = &child {
            if c.pidfd.is_none() {
                // WNOWAIT peeks at our own child without reaping it (a raw
                // system call: libc's waitid is a cancellation point).
                use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
                let opts = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
                if Pid::from_raw(c.pid).is_some_and(|p| matches!(waitid(WaitId::Pid(p), opts), Ok(Some(_)))) {
                    break;
                }
            }
        }
    }
    // A signal with a command running: pass it on, the command ends too.
    let sn = SIG_NUM.load(Ordering::SeqCst);
    if let (Some(c), true) = (&child, sn != 0) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(c.pid, sn) };
    }
    Ok(child.map(|c| c.pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<Args> {
        parse_args(v.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    #[test]
    fn durations_without_floats() {
        assert_eq!(parse_ms("1"), Some(1000));
        assert_eq!(parse_ms("0.5"), Some(500));
        assert_eq!(parse_ms(".25"), Some(250));
        assert_eq!(parse_ms("2.0019"), Some(2001));
        for bad in ["", ".", "1e3", "-1", "1.2.3", "x"] {
            assert_eq!(parse_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn filters_and_triggers_follow_their_event() {
        let a = args(&["-e", "sched", "-f", "pid>1", "-e", "irq", "-R", "traceoff", "-R", "stacktrace", "-o", "x.dat"]).ok().unwrap();
        assert_eq!(a.events.len(), 2);
        assert_eq!(a.events[0].filter.as_deref(), Some("pid>1"));
        assert!(a.events[0].triggers.is_empty());
        assert_eq!(a.events[1].triggers, ["traceoff", "stacktrace"]);
        assert_eq!(a.strs[OUTPUT].as_deref(), Some("x.dat"));
        assert!(matches!(args(&["-f", "x"]), Err(e) if matches!(e.kind(), crate::cli::Kind::Usage(_))));
    }

    #[test]
    fn command_and_subcommand() {
        let a = args(&["-e", "sched", "--", "ls", "-l"]).ok().unwrap();
        assert_eq!(a.command, ["ls", "-l"]);
        // Options after the command belong to it.
        let a = args(&["-q", "sleep", "-d", "1"]).ok().unwrap();
        assert_eq!(a.command, ["sleep", "-d", "1"]);
        assert!(a.duration.is_none());
        let a = args(&["extract", "-B", "x", "-o", "f"]).ok().unwrap();
        assert!(a.extract && a.command.is_empty());
        assert!(matches!(args(&["extract", "-e", "sched"]), Err(e) if matches!(e.kind(), crate::cli::Kind::Usage(_))));
        // `extract` only as the first word.
        let a = args(&["-q", "extract"]).ok().unwrap();
        assert_eq!(a.command, ["extract"]);
    }

    #[test]
    fn options_pids_versions() {
        let a = args(&["-O", "nooverwrite", "-O", "print-parent=1", "-P", "1,2", "-P", "3", "--file-version", "6", "-c"]).ok().unwrap();
        assert_eq!(a.options, [(String::from("nooverwrite"), true), (String::from("print-parent"), true)]);
        assert_eq!(a.pids, [1, 2, 3]);
        assert_eq!(a.version, 6);
        assert!(a.flags[FOLLOW]);
        for bad in [&["-O", "x=2"][..], &["-O", "../x"], &["-B", "a/b"], &["--file-version", "8"], &["-P", "x"], &["-b", "lots"]] {
            assert!(matches!(args(bad), Err(e) if matches!(e.kind(), crate::cli::Kind::Usage(_))), "{bad:?}");
        }
    }

    #[test]
    fn every_option_reaches_its_field() {
        let a = args(&[
            "-p", "nop", "-C", "mono", "-l", "f1", "-n", "f2", "-g", "f3", "-l", "f4", "--max-graph-depth", "3", "-b", "64",
            "-m", "128", "--private", "--no-splice", "-q", "-c", "-d", "2.5", "--file-version=6", "-o", "out.dat",
        ])
        .ok()
        .unwrap();
        assert_eq!(a.strs.each_ref().map(Option::as_deref), [Some("nop"), Some("mono"), None, Some("out.dat")]);
        assert_eq!(a.lists, [&["f1", "f4"][..], &["f2"], &["f3"]]);
        assert_eq!(a.nums, [Some(3), Some(64), Some(128)]);
        assert_eq!(a.flags, [true; 4]);
        assert_eq!((a.duration, a.version), (Some(2500), 6));
        let a = args(&["-B", "inst"]).ok().unwrap();
        assert_eq!(a.strs[INSTANCE].as_deref(), Some("inst"));
        assert!(!a.flags.iter().any(|&f| f));
        // Flags take no value; value options need one; unknown ones are refused.
        for bad in [&["--private=1"][..], &["-b"], &["--max-graph-depth", "5000000000"], &["-x"], &["--bogus"]] {
            assert!(matches!(args(bad), Err(e) if matches!(e.kind(), crate::cli::Kind::Usage(_))), "{bad:?}");
        }
    }

    #[test]
    fn saved_values_as_written_back() {
        use restore::current_value;
        assert_eq!(current_value("trace_clock", "[local] global counter\n"), "local");
        assert_eq!(current_value("trace_clock", "local [global] counter\n"), "global");
        assert_eq!(current_value("buffer_size_kb", "7 (expanded: 1408)\n"), "1408");
        assert_eq!(current_value("events/sched/sched_switch/filter", "none\n"), "0");
        assert_eq!(current_value("tracing_on", "1\n"), "1");
        assert_eq!(assemble::clock_name("[mono] local\n"), "mono");
        assert_eq!(assemble::clock_name("local"), "local");
        assert_eq!(assemble::clock_name(""), "local");
        assert_eq!(assemble::clock_name("local [x86-tsc] mono\n"), "x86-tsc");
    }
}
