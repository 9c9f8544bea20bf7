//! ftrec: record the per-CPU ring buffers into a trace.dat file that ftcat,
//! `trace-cmd report` and KernelShark read. The recording itself is
//! `crate::record`; this file turns the command line into a `RecordPlan`
//! and the outcome into an exit status.

use crate::argv::{self, Long, Short, Value};
use crate::cli::{self, Error, Result};
use crate::record::{self, Buffer, EventSpec, Finished, RecordPlan};
use crate::tracedat::write::Compression;
use crate::usage_err;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// --help, a row per option (or group): a row is built in only with the
/// option it describes, so the board build lists what it has.
const USAGE: &[&str] = &[
    "\
Usage: ftrec [OPTIONS] [--] [COMMAND [ARGS...]]
       ftrec extract [-o FILE] [-B INSTANCE]

Record the kernel's per-CPU trace buffers into a trace.dat file: with a
COMMAND, the whole system until it exits; without one, until SIGINT/SIGTERM
or -d. Every setting changed is put back on exit. A recording cut short
(kill, power loss, full disk) stays readable by ftcat up to the cut.

  -e EVENT          enable events: all, SYSTEM, SYSTEM:EVENT, globs (repeatable)
  -f FILTER         filter for the preceding -e
  -R TRIGGER        trigger for the preceding -e
  -p TRACER         set the tracer (function, function_graph, ...)
  -l FUNC           function filter          -n FUNC   function notrace
  -g FUNC           graph function           --max-graph-depth N
  -O OPT[=0|1]      set a trace option (noOPT clears it)
  -F                trace only COMMAND       -P PID[,PID...]  only these pids
  -c                and their children
  -b KB             per-CPU buffer size      -C CLOCK  trace clock
  -B INSTANCE       record this instance (created and removed if missing)
  --private         record in a temporary instance of our own
  -o FILE           output (default trace.dat); - streams to stdout (for
                    ftcat -, or ftcat --save FILE -); COMMAND's stdout
                    then goes to stderr
",
    #[cfg(feature = "net")]
    "  -N HOST:PORT      send to `trace-cmd listen -p PORT` on HOST (an IPv4 address)
",
    #[cfg(feature = "convert")]
    "  --file-version N  6 or 7 (default 7)
",
    "  --compression ALG v7's sections and data: none (default) or zstd
  -d SECONDS        stop after this long     -m KB     keep the newest KB per CPU
  --no-splice       read() instead of splice
  -q                quiet: no per-CPU summary
  -h, --help        this help
",
];

/// A number option's value, at most `max`.
#[inline(never)]
fn num(what: &str, v: &str, max: u64) -> Result<u64> {
    match v.trim_ascii().parse::<u64>() {
        Ok(n) if n <= max => Ok(n),
        _ => usage_err!("{what}: invalid number '{v}'"),
    }
}

/// "1", "0.5", "2.25" seconds as milliseconds (parsed by hand: float
/// parsing would link all of core's dec2flt for this one option).
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

/// `-O OPT`, `-O OPT=1`, `-O OPT=0` as (name, on); "noOPT" is resolved
/// against options/ when the recording starts.
fn trace_option(v: &str) -> Result<(String, bool)> {
    let (name, on) = match v.split_once('=') {
        Some((n, "1")) => (n, true),
        Some((n, "0")) => (n, false),
        Some(_) => usage_err!("-O {v}: the value must be 0 or 1"),
        None => (v, true),
    };
    crate::tracefs::check_name("option", name).map_err(Error::Usage)?;
    Ok((String::from(name), on))
}

/// `-N HOST:PORT`, checked (record::parse_listener says what it takes).
#[cfg(feature = "net")]
fn listener(v: String) -> Result<String> {
    match record::parse_listener(&v) {
        Some(_) => Ok(v),
        None => usage_err!("-N {v}: want HOST:PORT with HOST an IPv4 address or localhost"),
    }
}

/// The last `-e`, for the `-f`/`-R` that follow it.
fn last_event<'a>(plan: &'a mut RecordPlan, opt: char) -> Result<&'a mut EventSpec> {
    match plan.events.last_mut() {
        Some(e) => Ok(e),
        None => usage_err!("-{opt} needs a preceding -e"),
    }
}

#[inline(never)]
pub fn parse_args(args: Vec<Vec<u8>>) -> Result<RecordPlan> {
    let mut plan = RecordPlan::default();
    let mut instance = None;
    let mut private = false;
    let mut p = argv::Parser::from_args(args);
    let mut first = true;
    while let Some(arg) = p.next()? {
        let was_first = core::mem::replace(&mut first, false);
        match arg {
            Short('h') | Long("help") => cli::help(USAGE)?,
            Short('e') => plan.events.push(EventSpec { spec: p.value()?, filter: None, triggers: Vec::new() }),
            Short('f') => {
                let v = p.value()?;
                last_event(&mut plan, 'f')?.filter = Some(v);
            }
            Short('R') => {
                let v = p.value()?;
                last_event(&mut plan, 'R')?.triggers.push(v);
            }
            Short('O') => {
                let v = p.value()?;
                plan.options.push(trace_option(&v)?);
            }
            Short('P') => {
                for pid in p.value()?.split(',').filter(|s| !s.is_empty()) {
                    plan.pids.push(num("-P", pid, u32::MAX.into())? as u32);
                }
            }
            #[cfg(not(feature = "convert"))]
            Long("file-version") => usage_err!("--file-version: not in this build (the board build, make tiny, leaves out `convert`: ftrec -o FILE writes a stream, which `ftcat --save OUT FILE` makes a trace.dat)"),
            #[cfg(feature = "convert")]
            Long("file-version") => {
                plan.file_version = num("--file-version", &p.value()?, u32::MAX.into())? as u32;
                if plan.file_version != 6 && plan.file_version != 7 {
                    usage_err!("--file-version must be 6 or 7");
                }
            }
            Long("compression") => {
                let v = p.value()?;
                plan.compression = match Compression::by_name(&v) {
                    Some(c) => c,
                    None if v == "zstd" => usage_err!("--compression zstd: not in this build (cargo feature zstd-write: make full)"),
                    None => usage_err!("--compression {v}: none or zstd"),
                }
            }
            Short('d') => {
                let v = p.value()?;
                match parse_ms(&v) {
                    Some(ms) => plan.duration_ms = Some(ms),
                    None => usage_err!("-d: invalid duration '{v}'"),
                }
            }
            Short('p') => plan.tracer = Some(p.value()?),
            Short('C') => plan.clock = Some(p.value()?),
            Short('B') => instance = Some(p.value()?),
            Short('o') => plan.output = p.value()?,
            #[cfg(feature = "net")]
            Short('N') => plan.net = Some(listener(p.value()?)?),
            #[cfg(not(feature = "net"))]
            Short('N') => usage_err!("-N: not in this build (the board build, make tiny, leaves it out: ftrec -o - | nc HOST PORT, or ssh, carries the stream)"),
            Short('l') => plan.function_filter.push(p.value()?),
            Short('n') => plan.function_notrace.push(p.value()?),
            Short('g') => plan.graph_functions.push(p.value()?),
            Long("max-graph-depth") => plan.max_graph_depth = Some(num("--max-graph-depth", &p.value()?, u32::MAX.into())?),
            Short('b') => plan.buffer_kb = Some(num("-b", &p.value()?, u64::MAX)?),
            Short('m') => plan.keep_kb = Some(num("-m", &p.value()?, u64::MAX)?),
            Short('c') => plan.follow_forks = true,
            Short('F') => plan.filter_command = true,
            Long("private") => private = true,
            Short('q') => plan.quiet = true,
            Long("no-splice") => plan.splice = false,
            Value(v) if was_first && v == "extract" => plan.extract = true,
            Value(v) => {
                if plan.extract {
                    usage_err!("extract takes no command");
                }
                // The command and its arguments: everything from here on.
                plan.command.push(v);
                plan.command.extend(p.raw_args()?);
            }
            arg => return Err(arg.unexpected()),
        }
    }
    plan.buffer = match (instance, private) {
        (Some(_), true) => usage_err!("--private and -B exclude each other"),
        (Some(name), false) => {
            crate::tracefs::check_name("instance", &name).map_err(Error::Usage)?;
            Buffer::Instance(name)
        }
        (None, true) => Buffer::Private,
        (None, false) => Buffer::TopLevel,
    };
    if plan.file_version < 7 && plan.compression != Compression::None {
        usage_err!("--compression needs --file-version 7");
    }
    if plan.output == "-" && plan.keep_kb.is_some() {
        usage_err!("-m keeps the newest pages of a file: not with -o -");
    }
    if plan.output == "-" && plan.compression != Compression::None {
        usage_err!("--compression is the trace.dat's: a stream (-o -) is not compressed (ftcat --save makes the trace.dat)");
    }
    if plan.filter_command && plan.command.is_empty() {
        usage_err!("-F traces only the command: give one");
    }
    if plan.net.is_some() && (plan.extract || plan.keep_kb.is_some() || plan.output != "trace.dat") {
        usage_err!("-N sends the recording as it is made: not with extract, -m or -o");
    }
    if plan.extract && (!plan.events.is_empty() || plan.tracer.is_some() || private || !plan.pids.is_empty()) {
        usage_err!("extract saves the buffer as it is: it takes only -o, -B and -q");
    }
    Ok(plan)
}

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftrec", USAGE, || {
        let plan = parse_args(args)?;
        match record::run(&plan) {
            Err(e) => Err(Error::Fail(e.to_string())),
            // Each setting not put back was reported as it failed.
            Ok(f) if !f.restored => Err(Error::Exit(1)),
            // The traced command failed: its status is ours.
            Ok(Finished { command_status: Some(status), .. }) if status != 0 => Err(Error::Exit(status)),
            Ok(_) => Ok(()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Result<RecordPlan> {
        parse_args(v.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    fn is_usage(r: Result<RecordPlan>) -> bool {
        matches!(r, Err(e) if matches!(e.kind(), crate::cli::Kind::Usage(_)))
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
        assert_eq!(a.output, "x.dat");
        assert!(is_usage(args(&["-f", "x"])));
    }

    #[test]
    fn command_and_subcommand() {
        let a = args(&["-e", "sched", "--", "ls", "-l"]).ok().unwrap();
        assert_eq!(a.command, ["ls", "-l"]);
        // Options after the command belong to it.
        let a = args(&["-q", "sleep", "-d", "1"]).ok().unwrap();
        assert_eq!(a.command, ["sleep", "-d", "1"]);
        assert!(a.duration_ms.is_none());
        let a = args(&["extract", "-B", "x", "-o", "f"]).ok().unwrap();
        assert!(a.extract && a.command.is_empty());
        assert!(is_usage(args(&["extract", "-e", "sched"])));
        // `extract` only as the first word.
        let a = args(&["-q", "extract"]).ok().unwrap();
        assert_eq!(a.command, ["extract"]);
    }

    #[test]
    fn command_scope() {
        // trace-cmd's: the whole system while the command runs, unless -F.
        let a = args(&["-e", "sched", "sh", "x.sh"]).ok().unwrap();
        assert!(!a.filter_command && !a.follow_forks);
        let a = args(&["-F", "-c", "--", "sh", "-F"]).ok().unwrap();
        assert!(a.filter_command && a.follow_forks);
        assert_eq!(a.command, ["sh", "-F"]);
        assert!(is_usage(args(&["-F", "-e", "sched"])));
        assert!(is_usage(args(&["extract", "-F"])));
    }

    #[test]
    fn options_pids_versions() {
        let a = args(&["-O", "nooverwrite", "-O", "print-parent=1", "-P", "1,2", "-P", "3", "--file-version", "6", "-c"]).ok().unwrap();
        assert_eq!(a.options, [(String::from("nooverwrite"), true), (String::from("print-parent"), true)]);
        assert_eq!(a.pids, [1, 2, 3]);
        assert_eq!(a.file_version, 6);
        assert!(a.follow_forks);
        for bad in [&["-O", "x=2"][..], &["-O", "../x"], &["-B", "a/b"], &["--file-version", "8"], &["-P", "x"], &["-b", "lots"]] {
            assert!(is_usage(args(bad)), "{bad:?}");
        }
    }

    #[test]
    fn compression_is_a_v7_matter() {
        assert_eq!(args(&[]).ok().unwrap().compression, Compression::None);
        assert!(args(&["--compression", "none", "--file-version", "6"]).is_ok());
        #[cfg(feature = "zstd-write")]
        assert_eq!(args(&["--compression=zstd"]).ok().unwrap().compression, Compression::Zstd);
        for bad in [&["--compression", "lz4"][..], &["--compression", "zstd", "--file-version", "6"], &["--compression"], &["--compression", "zstd", "-o", "-"]] {
            assert!(is_usage(args(bad)), "{bad:?}");
        }
    }

    #[cfg(feature = "net")]
    #[test]
    fn listener_addresses() {
        let a = args(&["-N", "192.168.1.5:12345", "-e", "sched"]).ok().unwrap();
        assert_eq!(a.net.as_deref(), Some("192.168.1.5:12345"));
        let parse = |s: &str| record::parse_listener(s).map(|a| (a.is_ipv4(), a.port()));
        assert_eq!(parse("192.168.1.5:12345"), Some((true, 12345)));
        assert_eq!(record::parse_listener("localhost:9"), Some(rustix::net::SocketAddr::from(([127, 0, 0, 1], 9))));
        assert_eq!(parse("10.0.0.255:7"), Some((true, 7)));
        // Names are not looked up; -N sends as it records, so no file options.
        for bad in [&["-N", "board.lan:80"][..], &["-N", "1.2.3.4"], &["-N", "1.2.3:4"], &["-N", "1.2.3.4.5:6"], &["-N", "1.2.3.256:6"], &["-N", "[::1]:7"], &["-N", "1.2.3.4:x"], &["-N", "1.2.3.4:1", "-m", "64"], &["-N", "1.2.3.4:1", "-o", "x.dat"], &["extract", "-N", "1.2.3.4:1"]] {
            assert!(is_usage(args(bad)), "{bad:?}");
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
        assert_eq!((a.tracer.as_deref(), a.clock.as_deref(), a.output.as_str()), (Some("nop"), Some("mono"), "out.dat"));
        assert_eq!((a.function_filter, a.function_notrace, a.graph_functions), (["f1", "f4"].map(String::from).to_vec(), ["f2"].map(String::from).to_vec(), ["f3"].map(String::from).to_vec()));
        assert_eq!((a.max_graph_depth, a.buffer_kb, a.keep_kb), (Some(3), Some(64), Some(128)));
        assert_eq!(a.buffer, Buffer::Private);
        assert!(!a.splice && a.quiet && a.follow_forks);
        assert_eq!((a.duration_ms, a.file_version), (Some(2500), 6));
        let a = args(&["-B", "inst"]).ok().unwrap();
        assert_eq!(a.buffer, Buffer::Instance("inst".into()));
        assert!(a.splice && !a.quiet && !a.follow_forks);
        assert_eq!(a.output, "trace.dat");
        assert!(is_usage(args(&["-B", "inst", "--private"])));
        // A stream has no newest pages to keep.
        assert_eq!(args(&["-o", "-", "-e", "sched"]).ok().unwrap().output, "-");
        assert!(is_usage(args(&["-o", "-", "-m", "64"])));
        // Flags take no value; value options need one; unknown ones are refused.
        for bad in [&["--private=1"][..], &["-b"], &["--max-graph-depth", "5000000000"], &["-x"], &["--bogus"]] {
            assert!(is_usage(args(bad)), "{bad:?}");
        }
    }
}
