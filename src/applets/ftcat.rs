//! ftcat: raw ftrace pages (a trace.dat file, stdin, or the live per-CPU
//! `trace_pipe_raw`) to the text the kernel's own `trace` file prints, or
//! `trace-cmd report`'s. The pipeline is `decode`; this is its command
//! line, its input and output files, and its exit status.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use crate::applets::source;
use crate::argv::{self, Long, Short, Value};
use crate::cli::{self, Error, Result};
use crate::decode::{self, text_out::{Drain, TextOut}, DecodeOptions, Style};
#[cfg(feature = "export")]
use crate::export::output::{export, Extra, Format};
use crate::sys::{self, Errno};
use crate::tracedat::TraceDat;
use crate::usage_err;

mod live;
mod stream;
#[cfg(feature = "profile")]
mod profile;
#[cfg(feature = "profile")]
use profile::{check_profile, run_profile, ProfileArgs};
use live::run_live;
#[cfg(feature = "stream-pipe")]
use stream::{run_pipe, run_save};
use stream::with_recording;

/// --help, a row per option (or group): a row is built in only with the
/// option it describes, so the board build lists what it has.
const USAGE: &[&str] = &[
    "\
Usage: ftcat [OPTIONS] [FILE]

Print a recording (FILE, default trace.dat; - for stdin) as the kernel's
own `trace` file would print it. FILE may be a trace.dat or a stream from
`ftrec -o -` (a cut one up to the cut).

  -c, --cpu LIST     only these CPUs (0,2-3)
  -e GLOB            only events whose name, SYSTEM:NAME or system matches
                     (repeatable; sched_*, sched:sched_switch, irq)
      --pid LIST     only these pids
      --comm GLOB    only tasks whose comm matches
  -I                 drop records from hardirq context
  -S                 drop records from softirq context
      --from SECS    start at this timestamp (seconds)
      --to SECS      stop after this timestamp
  -O OPTION          tracer option in force when recorded (latency-format,
                     hex, bin, nosym-offset, funcgraph-tail, ...), as
                     trace_options; ftrec files and --live carry their own
      --tracer NAME  the tracer that recorded (default: as recorded, or
                     guessed)
      --stat         records per event and CPU, lost events, time span,
                     records the print fmt interpreter could not format
  -R, --raw          every field as name=value (`-O fields`, and ftrace's own records too)
",
    #[cfg(feature = "expr-filter")]
    "  -F 'SYS/EVENT: EXPR'  only these events, where EXPR holds (==, !=, <, >,
                     &, =~ regex, ~ glob, &&, ||, !, COMM; repeatable)
",
    "      --max-depth N  function_graph: hide calls N deep and deeper
      --graph FUNC   function_graph: only the calls under FUNC
",
    #[cfg(feature = "trace-cmd-style")]
    "      --style S      kernel (default); trace-cmd: as `trace-cmd report`
                     3.3+ prints (flags column); trace-cmd-3.1: as 3.1/3.2;
                     then -t (ns timestamps), -l (latency columns),
                     -O [fgraph:]tailprint|retval-dec|retval-hex|
                     retval-skip|depth, -O [ftrace:]parent|indent=0|offset,
                     --stat, --first-event, --last-event as trace-cmd's
",
    "      --live         read the live buffers' trace_pipe_raw (consuming)
  -B INSTANCE        the instance's buffers (live, or a buffer of FILE;
                     without -B: FILE's top buffer, or if it is empty the
                     first buffer with data)
      --once         with --live: stop when the buffers are empty
",
    #[cfg(feature = "export")]
    "      --export F     the records (after every filter above) as F: perfetto
                     (a Perfetto trace; perfetto-compact: sched_switch and
                     sched_waking as compact_sched) or jsonl (one JSON
                     object a record)
",
    #[cfg(feature = "profile")]
    "      --profile      where the time went, per function, syscall, task, CPU,
                     irq, event (--hist: histograms; --export jsonl)
      --compare BASE[,BASE...] NEW[,NEW...]  their profiles side by side
                     (--min-change PCT, default 5; -v: every metric)
",
    #[cfg(feature = "stream-pipe")]
    "      --save OUT     write FILE (a stream, or a trace.dat) to OUT as a
                     trace.dat for trace-cmd and KernelShark (- is stdout)
",
    "  -h, --help         this help
",
    #[cfg(feature = "stream-pipe")]
    "
A stream on a pipe (ftcat -) is printed as it arrives.
",
];

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftcat", USAGE, || run(parse_args(args)?))
}

#[derive(Default)]
pub struct Args {
    /// FILE (default trace.dat; `-` is stdin).
    pub file: Option<String>,
    /// `--live`: the live buffers' trace_pipe_raw, `--once`: until empty.
    pub live: bool,
    pub once: bool,
    /// Everything the decode itself takes (-B included: a buffer of FILE).
    pub decode: DecodeOptions,
    /// `--save OUT`: write FILE as a trace.dat instead of printing it.
    pub save: Option<String>,
    /// `--export F`: the records in another tool's format, not as text.
    #[cfg(feature = "export")]
    pub export: Option<Format>,
    #[cfg(feature = "profile")]
    pub profile: ProfileArgs,
}

#[inline(never)]
pub fn parse_args(args: Vec<Vec<u8>>) -> Result<Args> {
    let mut a = Args::default();
    let d = &mut a.decode;
    let mut p = argv::Parser::from_args(args);
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => cli::help(USAGE)?, // always Err(Exit(0)) after printing
            Short('c') | Long("cpu") => d.cpus = Some(list(&p.value()?, "CPU")?),
            Short('e') | Long("event") => d.events.push(p.value()?),
            Long("pid") => d.pids = Some(list(&p.value()?, "pid")?),
            Long("comm") => d.comms.push(p.value()?),
            Short('I') => d.no_hardirq = true,
            Short('S') => d.no_softirq = true,
            Long("from") => d.from = Some(secs(&p.value()?)?),
            Long("to") => d.to = Some(secs(&p.value()?)?),
            Short('O') | Long("option") => d.options.push(p.value()?),
            Long("tracer") => d.tracer = Some(p.value()?),
            Long("stat") => d.stat = true,
            Short('R') | Long("raw") => d.raw = true,
            Short('t') => d.nsec = true,
            Short('l') => d.latency = true,
            Short('F') => d.filters.push(p.value()?),
            Long("first-event") => d.first_event = true,
            Long("last-event") => d.last_event = true,
            Long("graph") => d.graph = Some(p.value()?),
            Long("max-depth") => match p.value()?.parse() {
                Ok(n) => d.max_depth = Some(n),
                Err(_) => usage_err!("--max-depth wants a number"),
            },
            Long("live") => a.live = true,
            Short('B') | Long("instance") => d.instance = Some(p.value()?),
            Long("once") => a.once = true,
            #[cfg(feature = "stream-pipe")]
            Long("save") => a.save = Some(p.value()?),
            #[cfg(not(feature = "stream-pipe"))]
            Long("save") => usage_err!("--save: not in this build (the board build, make tiny, leaves it out)"),
            #[cfg(feature = "export")]
            Long("export") => {
                let v = p.value()?;
                match Format::parse(&v) {
                    Some(f) => a.export = Some(f),
                    None => usage_err!("--export {}: one of {}", v, Format::NAMES),
                }
            }
            #[cfg(not(feature = "export"))]
            Long("export") => usage_err!("--export: this ftbox was built without exporters"),
            #[cfg(feature = "profile")]
            Long("profile") => a.profile.on = true,
            #[cfg(feature = "profile")]
            Long("hist") => a.profile.hist = true,
            #[cfg(feature = "profile")]
            Long("compare") => a.profile.compare = Some(p.value()?),
            #[cfg(feature = "profile")]
            Long("min-change") => match crate::profile::compare::parse_pct(&p.value()?) {
                Some(n) => a.profile.min_change = Some(n),
                None => usage_err!("--min-change wants a percentage"),
            },
            #[cfg(feature = "profile")]
            Short('v') => a.profile.verbose = true,
            Long("style") => {
                let v = p.value()?;
                d.style = match v.as_str() {
                    "kernel" => Style::Kernel,
                    "trace-cmd" if cfg!(feature = "trace-cmd-style") => Style::TraceCmd,
                    "trace-cmd-3.1" if cfg!(feature = "trace-cmd-style") => Style::TraceCmd31,
                    "trace-cmd" | "trace-cmd-3.1" => usage_err!("--style {}: not in this build (the board build, make tiny, leaves it out)", v),
                    _ => usage_err!("--style {}: kernel, trace-cmd or trace-cmd-3.1", v),
                }
            }
            Value(v) if a.file.is_none() => a.file = Some(v),
            arg => return Err(arg.unexpected()),
        }
    }
    if a.live && a.file.is_some() {
        usage_err!("--live reads the live buffers, not a FILE");
    }
    if a.save.is_some() && a.live {
        usage_err!("--save writes FILE as a trace.dat: not with --live");
    }
    if !a.live && a.once {
        usage_err!("--once goes with --live");
    }
    #[cfg(feature = "profile")]
    check_profile(&a)?;
    #[cfg(feature = "export")]
    if a.export.is_some() && (a.decode.stat || a.decode.style != Style::Kernel) {
        usage_err!("--export writes every record: not with --stat or --style");
    }
    Ok(a)
}

/// `0,2-3` → [(0,0), (2,3)].
fn list(s: &str, what: &str) -> Result<Vec<(u32, u32)>> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.trim_ascii().parse::<u32>(), b.trim_ascii().parse::<u32>()) {
            (Ok(a), Ok(b)) if a <= b => v.push((a, b)),
            _ => usage_err!("bad {} list: {}", what, s),
        }
    }
    if v.is_empty() {
        usage_err!("empty {} list", what);
    }
    Ok(v)
}

/// `12.5` seconds → nanoseconds, without floating point rounding surprises.
fn secs(s: &str) -> Result<u64> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let ip: Option<u64> = if i.is_empty() { Some(0) } else { i.parse().ok() };
    let (Some(ip), false) = (ip, f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit())) else {
        usage_err!("bad seconds: {}", s);
    };
    let mut frac: u64 = if f.is_empty() { 0 } else { f.parse().unwrap_or(0) };
    for _ in f.len()..9 {
        frac *= 10;
    }
    Ok(ip.saturating_mul(1_000_000_000).saturating_add(frac))
}

/// Standard output, for [`TextOut`].
pub struct Stdout;

impl Drain for Stdout {
    type Error = Errno;
    fn drain(&mut self, b: &[u8]) -> core::result::Result<(), Errno> {
        sys::write_all(sys::fd(1), b)
    }
}

pub type Out = TextOut<Stdout>;

/// Read errors and live waits, on stderr and the clock.
struct Host<'a> {
    /// The file (or live per_cpu directory) errors name.
    name: &'a str,
}

impl decode::Host for Host<'_> {
    fn error(&mut self, cpu: u32, msg: &str) {
        cli::warn(format_args!("{}: CPU {}: {}", self.name, cpu, msg));
    }
    fn wait(&mut self) {
        sys::sleep_ms(100);
    }
}

fn warn(w: &str) {
    cli::warn(format_args!("{}", w));
}

/// Where the records go: text, or an exporter's bytes (to a drain that
/// says false when it could not write).
enum To<'a> {
    Text(&'a mut Out),
    #[cfg(feature = "export")]
    Export(Format, &'a mut dyn FnMut(&[u8]) -> bool),
}

#[inline(never)]
fn run(a: Args) -> Result<()> {
    #[cfg(feature = "stream-pipe")]
    if let Some(out) = &a.save {
        return run_save(&a, out);
    }
    #[cfg(feature = "profile")]
    if a.profile.on || a.profile.compare.is_some() {
        return run_profile(&a);
    }
    #[cfg(feature = "export")]
    if let Some(f) = a.export {
        return run_export(&a, f);
    }
    let mut out = TextOut::new(Stdout);
    let res = if a.live { run_live(&a, To::Text(&mut out)) } else { run_file(&a, To::Text(&mut out)) };
    out.finish().map_err(Error::Io)?;
    res
}

/// One progress line on stderr, rewritten in place.
#[cfg(feature = "export")]
fn progress_line(b: &[u8]) {
    let mut e = sys::stderr();
    e.bytes(b);
    let _ = e.flush();
}

/// `--export F`: the bytes straight to stdout, with the part of the file
/// read so far on stderr when that is a terminal (an export of a big file
/// takes a while).
#[cfg(feature = "export")]
#[inline(never)]
fn run_export(a: &Args, f: Format) -> Result<()> {
    if f.binary() && crate::record::is_tty(1) {
        usage_err!("--export perfetto writes binary: redirect stdout to a file");
    }
    let progress = crate::record::is_tty(2);
    let (mut written, mut shown, mut err) = (0u64, 0u64, None);
    let mut drain = |b: &[u8]| {
        if let Err(e) = sys::write_all(sys::fd(1), b) {
            err = Some(e);
            return false;
        }
        written += b.len() as u64;
        // How far into the file, every 16 MiB read (a small export says
        // nothing); from a pipe or a live buffer, how much was written.
        let (read, size) = source::read_progress();
        let now = if size > 0 { read } else { written };
        if progress && now >> 24 != shown >> 24 {
            shown = now;
            let line = if size > 0 {
                alloc::format!("\rftcat: export: {} of {} MiB read ({}%) ", read >> 20, size >> 20, read * 100 / size)
            } else {
                alloc::format!("\rftcat: export: {} MiB written ", written >> 20)
            };
            progress_line(line.as_bytes());
        }
        true
    };
    let res = if a.live { run_live(a, To::Export(f, &mut drain)) } else { run_file(a, To::Export(f, &mut drain)) };
    if progress && shown > 0 {
        progress_line(b"\r\x1b[K");
    }
    if let Some(e) = err {
        return Err(Error::Io(e));
    }
    res
}

/// A decode error as the applet reports it (the file named for a missing
/// buffer; read errors already said what they were).
fn decode_err(e: decode::Error, path: &str) -> Error {
    match e {
        decode::Error::Usage(m) => Error::Usage(m),
        decode::Error::ReadErrors(_) => Error::Exit(1),
        e => cli::fail(format_args!("{}: {}", path, e)),
    }
}

#[inline(never)]
fn run_file(a: &Args, to: To<'_>) -> Result<()> {
    let path = a.file.as_deref().unwrap_or("trace.dat");
    let mut input = source::Input::open(path).map_err(Error::Fail)?;
    // trace-cmd's file summaries need the whole recording.
    if a.decode.trace_cmd() && (a.decode.stat || a.decode.first_event || a.decode.last_event) {
        input = input.whole(path).map_err(Error::Fail)?;
    }
    // (Without stream-pipe, the board build, Input::open read a pipe whole.)
    #[cfg(feature = "stream-pipe")]
    if let source::Input::Pipe(p) = input {
        return run_pipe(a, p, path, to);
    }
    with_recording(&input, path, Box::new(|td| decode_file(a, td, path, to)))
}

/// A trace.dat (or what a stream file stands for) to text or an exporter.
fn decode_file(a: &Args, td: &TraceDat, path: &str, to: To<'_>) -> Result<()> {
    let host = &mut Host { name: path };
    let res = match to {
        To::Text(out) => decode::print_file(td, path, &a.decode, out, host, &mut warn),
        #[cfg(feature = "export")]
        To::Export(f, drain) => decode::file_input(td, &a.decode, false).and_then(|mut input| {
            for w in &input.rec.warnings {
                warn(w);
            }
            let x = Extra { uname: td.options.uname.as_deref().unwrap_or(""), page_size: td.page_size, cpustat: &|| td.options.cpustat.clone() };
            export(&mut input.rec, &mut input.merge, &x, &a.decode, f, false, drain, host)
        }),
    };
    res.and_then(|()| decode::symbols_intact(td)).map_err(|e| decode_err(e, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_lists() {
        assert_eq!(secs("1.5").ok(), Some(1_500_000_000));
        assert_eq!(secs("160.004482").ok(), Some(160_004_482_000));
        assert!(secs("x").is_err());
        assert_eq!(list("0,2-3", "CPU").ok(), Some(std::vec![(0, 0), (2, 3)]));
        assert!(list("3-1", "CPU").is_err());
    }
}
