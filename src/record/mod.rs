//! Recording the kernel's per-CPU ring buffers into a trace.dat file, as a
//! library: a [`RecordPlan`] says what to record and [`run`] does it.
//!
//! The order matters, and is the same for every recording:
//! 1. the output is opened (and the temp files beside it tried) before
//!    tracing is touched, so an unwritable output changes nothing;
//! 2. the tracefs is configured through a [`Changes`] log that remembers
//!    every old value (`configure`);
//! 3. one reader process per CPU copies its buffer into a temp file
//!    (`readers`);
//! 4. the traced command runs (`command`), or the recording waits for
//!    SIGINT/SIGTERM or its duration (`until_done`);
//! 5. tracing goes off and the readers drain what is left;
//! 6. every setting goes back, before the (possibly long) assembly;
//! 7. the temp files and the metadata become the trace.dat (`assemble`),
//!    and the per-CPU summary goes to stderr.
//!
//! `extract` is the same without steps 2 and 4: it saves what the buffer
//! holds now and changes nothing.

mod assemble;
mod command;
#[cfg(feature = "zstd-write")]
mod compress;
mod configure;
#[cfg(feature = "net")]
mod net;
mod output;
mod readers;
mod until_done;

#[cfg(feature = "net")]
pub use net::parse_addr as parse_listener;

use crate::sys;
use crate::tracefs::settings::Changes;
use crate::tracefs::Tracefs;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use crate::tracedat::{self, stream::Kind};
use output::Output;
pub use output::{is_tty, FileAt};
use readers::Mode;
use rustix::fd::OwnedFd;
use rustix::io::Errno;

/// What to record, and how. `Default` is `ftrec` with no options: the top
/// level's buffer, as configured, until a signal, into trace.dat.
pub struct RecordPlan {
    /// Save what the buffer holds now and change nothing (`ftrec extract`).
    pub extract: bool,
    /// The trace.dat to write.
    pub output: String,
    /// Send the recording to a `trace-cmd listen` at this HOST:PORT
    /// instead (-N; see `parse_listener`).
    pub net: Option<String>,
    /// Which tracefs buffer to record.
    pub buffer: Buffer,
    /// Events to enable, in command-line order.
    pub events: Vec<EventSpec>,
    /// current_tracer (function, function_graph, ...).
    pub tracer: Option<String>,
    /// trace_clock.
    pub clock: Option<String>,
    /// Lines of set_ftrace_filter, set_ftrace_notrace, set_graph_function.
    pub function_filter: Vec<String>,
    pub function_notrace: Vec<String>,
    pub graph_functions: Vec<String>,
    /// max_graph_depth.
    pub max_graph_depth: Option<u64>,
    /// buffer_size_kb, per CPU.
    pub buffer_kb: Option<u64>,
    /// Trace options as (name, on); "noOPT" names OPT's opposite.
    pub options: Vec<(String, bool)>,
    /// Trace only these pids (set_event_pid, set_ftrace_pid).
    pub pids: Vec<u32>,
    /// Trace only the command (added to the pid filters by itself before
    /// exec); else the whole system, or `pids`, while it runs.
    pub filter_command: bool,
    /// Follow the traced pids' children (event-fork, function-fork).
    pub follow_forks: bool,
    /// Keep only the newest this-many KB per CPU.
    pub keep_kb: Option<u64>,
    /// Stop after this long (0: at once).
    pub duration_ms: Option<u64>,
    /// Move pages with splice(2); false reads them with read(2).
    pub splice: bool,
    /// trace.dat version: 6, or 7.
    pub file_version: u32,
    /// How a v7 file stores its sections and data.
    pub compression: crate::tracedat::write::Compression,
    /// No per-CPU summary on stderr.
    pub quiet: bool,
    /// The command to run, recording until it exits; empty: record until
    /// a signal or the duration.
    pub command: Vec<String>,
}

impl Default for RecordPlan {
    fn default() -> RecordPlan {
        RecordPlan {
            extract: false,
            output: String::from("trace.dat"),
            net: None,
            buffer: Buffer::TopLevel,
            events: Vec::new(),
            tracer: None,
            clock: None,
            function_filter: Vec::new(),
            function_notrace: Vec::new(),
            graph_functions: Vec::new(),
            max_graph_depth: None,
            buffer_kb: None,
            options: Vec::new(),
            pids: Vec::new(),
            filter_command: false,
            follow_forks: false,
            keep_kb: None,
            duration_ms: None,
            splice: true,
            file_version: 7,
            compression: Default::default(),
            quiet: false,
            command: Vec::new(),
        }
    }
}

impl RecordPlan {
    /// What a recording with a command traces, for the summary: the words
    /// before and after the command's name ("system-wide while sh ran",
    /// "sh only", "sh and its children").
    pub fn scope(&self) -> (&'static str, &'static str) {
        match (self.filter_command, !self.pids.is_empty(), self.follow_forks) {
            // Unfiltered, the command only bounds the recording in time.
            (false, false, _) => ("system-wide while ", " ran"),
            (false, true, _) => ("the -P pids while ", " ran"),
            (true, false, false) => ("", " only"),
            (true, false, true) => ("", " and its children"),
            (true, true, children) => ("the -P pids and ", if children { " and their children" } else { " only" }),
        }
    }
}

/// The tracefs buffer a recording reads.
#[derive(PartialEq, Debug)]
pub enum Buffer {
    TopLevel,
    /// instances/NAME: created for the recording (and removed after) if
    /// missing.
    Instance(String),
    /// A temporary instance of our own (the first free ftrec-PID-N).
    Private,
}

/// One event selection: `spec` as `ftctl enable` takes it (all, SYSTEM,
/// SYSTEM:EVENT, globs), with a filter and triggers for each event it names.
pub struct EventSpec {
    pub spec: String,
    pub filter: Option<String>,
    pub triggers: Vec<String>,
}

/// Why a recording failed: one message naming the file or the step and
/// what went wrong. The text is boxed so that a `Result` of it is returned
/// in registers through the pipeline's many `?`.
#[derive(Debug)]
pub struct Error(alloc::boxed::Box<str>);

impl Error {
    #[inline(never)]
    fn new(message: String) -> Error {
        Error(message.into_boxed_str())
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(&self.0)
    }
}

type Result<T> = core::result::Result<T, Error>;

/// How a recording that was written ended.
pub struct Finished {
    /// The traced command's exit status, as a shell reports it.
    pub command_status: Option<i32>,
    /// Every setting went back; when not, each failure was reported on
    /// stderr as it happened.
    pub restored: bool,
}

/// `return Err(...)` with format arguments.
macro_rules! bail {
    ($($t:tt)*) => { return Err($crate::record::failed(format_args!($($t)*))) };
}
use bail;

/// The error of `bail!`.
#[inline(never)]
fn failed(a: core::fmt::Arguments<'_>) -> Error {
    Error::new(alloc::fmt::format(a))
}

/// "WHAT: reason" for a failed system call (the errno's words).
#[inline(never)]
fn errmsg(what: &str, e: Errno) -> String {
    format!("{what}: {}", sys::Msg(e))
}

fn os_err(what: &str, e: Errno) -> Error {
    Error::new(errmsg(what, e))
}

#[inline(never)]
fn tf(e: crate::tracefs::Error) -> Error {
    Error::new(e.explained())
}

/// "per_cpu/cpuN" + `file`.
#[inline(never)]
fn cpu_file(cpu: usize, file: &str) -> String {
    format!("per_cpu/cpu{cpu}{file}")
}

/// A sorted list of names gains `s` (once).
#[inline(never)]
fn insert_sorted(v: &mut Vec<String>, s: &str) {
    if let Err(at) = v.binary_search_by(|x| x.as_str().cmp(s)) {
        v.insert(at, String::from(s));
    }
}

/// One recording in progress: the top level (where instances live), the
/// tracefs being recorded (the top level or an instance), and the changes
/// made to it.
struct Session {
    top: Tracefs,
    rec: Tracefs,
    changes: Changes,
    /// Systems of the events enabled, sorted.
    systems: Vec<String>,
}

impl Session {
    /// Put every changed setting back; each failure is a warning. Whether
    /// all went back (shared by the normal path and the error path).
    #[inline(never)]
    fn restore(&mut self) -> bool {
        let errs = self.changes.restore(&self.top, &self.rec);
        for e in &errs {
            crate::cli::warn(format_args!("restoring {e}"));
        }
        errs.is_empty()
    }
}

/// Where the recording goes: the output (a file that holds the stream and
/// becomes the trace.dat, or stdout), or a `trace-cmd listen` (which
/// writes its own trace.dat).
#[derive(Clone, Copy)]
enum Dest<'a> {
    Out(&'a Output),
    #[cfg(feature = "net")]
    Net(&'a net::Listener),
}

/// Record as `plan` says. Every setting changed is put back on every way
/// out.
pub fn run(plan: &RecordPlan) -> Result<Finished> {
    let signals = if plan.extract { None } else { Some(until_done::catch_signals()?) };
    #[cfg(feature = "net")]
    if let Some(addr) = &plan.net {
        // Connected, and the protocol agreed, before tracing is touched.
        let listener = net::Listener::connect(addr)?;
        return record(plan, signals.as_ref(), Dest::Net(&listener));
    }
    let out = Output::open(&plan.output)?;
    let r = record(plan, signals.as_ref(), Dest::Out(&out));
    if r.is_err() {
        out.abandon();
    }
    r
}

fn open_tracefs() -> Result<Tracefs> {
    Tracefs::open().map_err(Error::new)
}

/// Open the tracefs to record (or extract) — an instance is created when
/// recording needs one — record, and put every setting back. `signals`:
/// the pipe SIGINT/SIGTERM wake; none for extract.
#[inline(never)]
fn record(plan: &RecordPlan, signals: Option<&OwnedFd>, dest: Dest) -> Result<Finished> {
    let top = open_tracefs()?;
    let mut changes = Changes::default();
    // The instance's name for the file ("" for the top level and --private).
    let (rec, name) = match &plan.buffer {
        Buffer::TopLevel => (open_tracefs()?, String::new()),
        buffer => {
            let rel = match buffer {
                Buffer::Instance(name) => format!("instances/{name}"),
                _ => {
                    if signals.is_some() {
                        remove_orphans(&top);
                    }
                    let mut n = 0u32;
                    loop {
                        let candidate = format!("instances/ftrec-{}-{n}", sys::getpid());
                        if !top.exists(&candidate) {
                            break candidate;
                        }
                        n += 1;
                    }
                }
            };
            let name = String::from(rel.strip_prefix("instances/").unwrap_or(&rel));
            if signals.is_some() && !top.exists(&rel) {
                top.mkdir(&rel).map_err(|e| os_err(&top.path_of(&rel), e))?;
                changes.created_instance(&rel);
            }
            let inst = match top.instance(&name) {
                Ok(i) => i,
                Err(e) => {
                    changes.restore(&top, &top);
                    return Err(Error::new(e));
                }
            };
            (inst, if *buffer == Buffer::Private { String::new() } else { name })
        }
    };
    let mut s = Session { top, rec, changes, systems: Vec::new() };
    let r = record_in(&mut s, plan, signals, dest, &name);
    // Anything not yet restored (errors on the way) is put back here.
    let restored = s.restore();
    let mut finished = r?;
    finished.restored &= restored;
    Ok(finished)
}

/// Remove the private instances (`ftrec-PID-N`) of ftrec processes that
/// are gone. One that was killed, or aborted on a failed allocation, could
/// not remove its own, and each holds a ring buffer per CPU: on a board,
/// memory lost until reboot. A live recording's instance is safe even when
/// its PID is not seen here (another PID namespace): the kernel refuses to
/// remove an instance whose files are open.
#[inline(never)]
fn remove_orphans(top: &Tracefs) {
    for (name, _) in top.list_dir("instances").unwrap_or_default() {
        let Some(pid) = private_pid(&name) else { continue };
        if sys::process_exists(pid) {
            continue;
        }
        if top.rmdir(&format!("instances/{name}")).is_ok() {
            crate::cli::warn(format_args!("removed instance {name}: left by ftrec process {pid}, which is gone"));
        }
    }
}

/// The PID in a private instance's name, `ftrec-PID-N`.
fn private_pid(name: &str) -> Option<u32> {
    let (pid, n) = name.strip_prefix("ftrec-")?.split_once('-')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

/// Record (`signals`) or extract (no `signals`: save what the buffer holds
/// now, changing nothing).
#[inline(never)]
fn record_in(s: &mut Session, plan: &RecordPlan, signals: Option<&OwnedFd>, dest: Dest, name: &str) -> Result<Finished> {
    readers::check_busy(&s.rec)?;
    // The sub-buffer size: read once, for extract's limit and the readers
    // (nothing below changes it).
    let page_size = s.rec.subbuf_size();
    let mut limit = None;
    let mut mode = Mode::Read;
    match signals {
        None => {
            // Never chase a live buffer forever: at most its size (plus slack) per CPU.
            let kb = s.rec.read_str("buffer_size_kb").ok();
            let kb: u64 = kb.map(|v| crate::tracefs::settings::current_value("buffer_size_kb", &v)).and_then(|v| v.parse().ok()).unwrap_or(1 << 20);
            limit = Some(kb * 1024 * 2 + 64 * page_size as u64);
        }
        Some(_) => {
            configure::configure(s, plan)?;
            if !plan.pids.is_empty() {
                configure::pid_filters(s, Some(&plan.pids), false)?;
            }
            // Start from an empty buffer (this also zeroes the per-CPU stats).
            s.rec.write("trace", b"").map_err(tf)?;
            if plan.splice {
                mode = Mode::Splice;
            }
        }
    }
    let keep = plan.keep_kb.map(|kb| (kb * 1024).div_ceil(page_size as u64) * page_size as u64);
    // Readable once a reader (or -N's keeper) has failed.
    let (fail_r, fail_w) = sys::pipe(true).map_err(|e| os_err("pipe", e))?;
    let ncpus = readers::cpu_count(&s.rec);
    let clock_file = s.rec.read_str("trace_clock").unwrap_or_default();
    // kallsyms (megabytes) up front unless the disk is short of room: then
    // at the end, leaving what room there is to the pages.
    let early_ksyms = match dest {
        Dest::Out(out) => out.dir.as_ref().is_none_or(|d| assemble::free_space(d) >= 64 << 20),
        #[cfg(feature = "net")]
        Dest::Net(_) => true,
    };
    // The tracer state as configured (extract's, before draining: the
    // latency header is only there while the buffer has data).
    let state = crate::tracefs::state::trace_state(&s.rec);
    #[cfg_attr(not(feature = "net"), allow(unused_mut))]
    let mut meta = assemble::early(&s.top, &s.rec, name, page_size, ncpus, &clock_file, &state, early_ksyms);
    // -N: the metadata goes and the data connections open before the
    // trace files do (the keeper process this forks must hold none: an
    // instance cannot be removed while a file of it is open).
    #[cfg(feature = "net")]
    let mut conns = Vec::new();
    #[cfg(feature = "net")]
    if let Dest::Net(l) = dest {
        (meta.version, meta.compression) = (plan.file_version, plan.compression);
        meta.buffers.clear();
        conns = l.start(ncpus, page_size, &meta, &fail_w)?;
    }
    let readers = readers::open(&s.rec, ncpus, mode, page_size, keep, limit)?;
    let sinks = match dest {
        Dest::Out(out) => {
            // The stream begins: its head and META, before any page.
            out.begin()?;
            sys::write_all(&out.fd, &tracedat::stream::head())
                .and_then(|()| assemble::write_meta(&out.fd, Kind::Meta, &meta))
                .map_err(|e| os_err(&format!("{}: writing the recording's metadata", out.path), e))?;
            drop(meta);
            out.readable.set(true);
            let dup = rustix::io::fcntl_dupfd_cloexec(&out.fd, 3).map_err(|e| os_err("dup", e))?;
            readers::Sinks::Shared(readers::Sink::new(dup).map_err(|e| os_err("pipe", e))?)
        }
        #[cfg(feature = "net")]
        Dest::Net(_) => readers::Sinks::PerCpu(core::mem::take(&mut conns).into_iter().map(readers::Sink::raw).collect()),
    };
    let stop = rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK)
        .map_err(|e| os_err("eventfd", e))?;

    // Extract's readers (with a limit) drain and end by themselves.
    let mut workers = Vec::new();
    let mut run = Ok(None);
    for r in &readers {
        match readers::spawn(r, sinks.of(r.cpu), &stop, &fail_w) {
            Ok(w) => workers.push(w),
            Err(e) => {
                run = Err(Error::new(e));
                break;
            }
        }
    }
    drop(fail_w);
    if let (Ok(_), Some(signals)) = (&run, signals) {
        run = until_done::run_until_done(s, plan, signals, &fail_r);
    }
    // Stop: tracing off first so the drain ends, then wake the readers.
    if signals.is_some() {
        let _ = s.rec.write("tracing_on", b"0");
    }
    let _ = rustix::io::write(&stop, &1u64.to_ne_bytes());
    let mut outcomes = Vec::new();
    for w in &workers {
        outcomes.push(readers::collect(w));
    }
    drop(workers);
    drop(readers);
    let child = run?;
    let state = if signals.is_some() { crate::tracefs::state::trace_state(&s.rec) } else { state };
    // What restoring would reset: the per-CPU stats, trace_clock.
    let mut stats = Vec::new();
    for c in 0..outcomes.len() {
        stats.push(s.rec.read_str(&cpu_file(c, "/stats")).unwrap_or_default());
    }
    let clock_file = s.rec.read_str("trace_clock").unwrap_or_default();
    let systems = core::mem::take(&mut s.systems);
    let ending = assemble::Ending { name, page_size, stats, systems, clock_file, state, kallsyms: !early_ksyms };
    let out = match dest {
        Dest::Out(out) => out,
        #[cfg(feature = "net")]
        Dest::Net(l) => {
            // The trace files closed (an instance cannot be removed while
            // they are open); the data connections stay open to the end.
            let restored = s.restore();
            drop(stop);
            l.finish(&s.top, &ending, &outcomes, sinks.into_fds(), plan.quiet)?;
            traced(plan, signals);
            return Ok(finished(child, restored));
        }
    };
    // The first reader error, and whether the disk filled.
    let mut err = None;
    let mut full = false;
    for o in outcomes.iter_mut() {
        if err.is_none() {
            err = o.err.take();
        }
        full |= o.full;
    }
    // Put the system back before the (possibly long) conversion.
    let restored = s.restore();
    drop(stop);
    let late = assemble::late(&s.top, &ending);
    let late_ok = !full && assemble::write_meta(&out.fd, Kind::Late, &late).is_ok();
    drop(late);
    if full {
        // Where the file stops: readers trim a cut frame to its whole pages.
        let at = rustix::fs::fstat(&out.fd).map_or(0, |st| st.st_size);
        bail!("{}: disk full at offset {at}: the recording stopped there (ftcat reads it up to the cut)", out.path);
    }
    // After a reader's error the recording is summed up (and converted)
    // only when the stream got its end.
    if err.is_none() || late_ok {
        let (sums, converted) = match convert(out, plan, keep)? {
            Some(s) => (s, true),
            None => {
                let mut v = Vec::new();
                for (cpu, o) in outcomes.iter().enumerate() {
                    v.push(assemble::CpuSummary { cpu: cpu as u32, bytes: o.bytes, stats: None, compressed: None });
                }
                (v, false)
            }
        };
        if !plan.quiet {
            assemble::summary(name, &ending.stats, &sums, converted);
            if out.is_file() && !converted {
                sys::eprintln(format_args!("{0}: a stream, read by ftcat; `ftcat --save OUT {0}` makes a trace.dat", out.path));
            }
        }
        traced(plan, signals);
    }
    if let Some(e) = err {
        bail!("{e}: recording stopped; {} keeps what was recorded", out.path);
    }
    Ok(finished(child, restored))
}

/// The output file's stream made a trace.dat, and each CPU's share of it;
/// None: it stays the stream (stdout, or a build without `convert`, where
/// a board's small disk need not hold the recording twice).
fn convert(out: &Output, plan: &RecordPlan, keep: Option<u64>) -> Result<Option<Vec<assemble::CpuSummary>>> {
    #[cfg(feature = "convert")]
    if out.is_file() {
        return match assemble::convert(out, plan.file_version, plan.compression, keep) {
            Ok(s) => Ok(Some(s)),
            Err(Some(e)) => Err(e),
            Err(None) => bail!("{}: no room beside it for the trace.dat: it stays a stream, which ftcat reads (ftcat --save converts it)", out.path),
        };
    }
    #[cfg(not(feature = "convert"))]
    let _ = (out, plan, keep);
    Ok(None)
}

/// "Traced: ..." after the summary of a recording with a command.
fn traced(plan: &RecordPlan, signals: Option<&OwnedFd>) {
    if let (false, Some(_), Some(cmd)) = (plan.quiet, signals, plan.command.first()) {
        let (before, after) = plan.scope();
        sys::eprintln(format_args!("Traced: {before}{cmd}{after}"));
    }
}

/// How a recording that was written ended. (Waiting for the command only
/// when all went back, as the exit status is then the command's.)
fn finished(child: Option<i32>, restored: bool) -> Finished {
    let command_status = if restored { child.map(command::wait) } else { None };
    Finished { command_status, restored }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(command: &[&str], pids: &[u32], filter_command: bool, follow_forks: bool) -> RecordPlan {
        let command = command.iter().map(|s| String::from(*s)).collect();
        RecordPlan { command, pids: pids.to_vec(), filter_command, follow_forks, ..RecordPlan::default() }
    }

    #[test]
    fn scope_says_what_was_traced() {
        for (p, want) in [
            (plan(&["sh", "x.sh"], &[], false, false), "system-wide while sh ran"),
            // -c without -F or -P follows nothing: still the whole system.
            (plan(&["sh"], &[], false, true), "system-wide while sh ran"),
            (plan(&["./app"], &[], true, false), "./app only"),
            (plan(&["sh"], &[], true, true), "sh and its children"),
            (plan(&["sleep", "5"], &[1, 2], false, true), "the -P pids while sleep ran"),
            (plan(&["sh"], &[1], true, false), "the -P pids and sh only"),
            (plan(&["sh"], &[1], true, true), "the -P pids and sh and their children"),
        ] {
            let (before, after) = p.scope();
            assert_eq!(format!("{before}{}{after}", p.command[0]), want);
        }
    }

    #[test]
    fn private_instance_names_give_their_pid() {
        assert_eq!(private_pid("ftrec-1234-0"), Some(1234));
        assert_eq!(private_pid("ftrec-7-12"), Some(7));
        for other in ["ftrec-1234", "ftrec--0", "ftrec-x-0", "ftrec-12-a", "mine", "ftrec-1-2-3"] {
            assert_eq!(private_pid(other), None, "{other}");
        }
    }
}
