//! ftctl: drive tracefs control files — the `trace-cmd stat/reset/...` of a
//! rescue shell. One verb per invocation; every verb works on the top level
//! or on an instance (`-B NAME`).
//!
//! The verbs live in ftctl/, one small file per group; the table below has
//! one row per verb with its name, help, arguments and options.

use crate::argv::{self, Long, Short, Value};
use crate::cli::{self, Error, Result};
use crate::tracefs::{self, Tracefs};
use crate::usage_err;
use alloc::string::String;
use alloc::vec::Vec;

mod buffer;
mod common;
mod control;
mod event;
mod funcs;
mod instance;
mod list;
mod reset;
mod status;

use common::{fs, fs_msg, join_args, line, on_off, read, resolve, say, say_line, words, write};

const HEAD: &str = "\
Usage: ftctl [-B INSTANCE] COMMAND [ARGS]

Drive the kernel's ftrace through tracefs. -B NAME (any position) makes a
command work on instances/NAME instead of the top level.

Commands:
";

const TAIL: &str = "
Put -- before an argument that starts with '-'.
Exit status: 0 done, 1 the kernel refused or an operation failed, 2 usage.
";

/// One command: what --help says of it, what it takes, what runs it.
struct Verb {
    /// The command line --help shows: the verb's name, then its arguments.
    usage: &'static str,
    about: &'static str,
    /// How many positional arguments: at least, at most.
    args: (u8, u8),
    /// The options it takes, as typed.
    opts: &'static [&'static str],
    /// Checks made before tracefs is touched: names given that will become
    /// paths, so none can walk out of it.
    check: fn(&Args) -> Result<()>,
    run: fn(&Ctx, &Args) -> Result<()>,
}

impl Verb {
    fn name(&self) -> &'static str {
        let u = self.usage;
        u.split_once(' ').map_or(u, |(name, _)| name)
    }
}

const MANY: u8 = u8::MAX;

/// The defaults of a row: no options, nothing to check first.
const VERB: Verb = Verb { usage: "", about: "", args: (0, 0), opts: &[], check: |_| Ok(()), run: |_, _| Ok(()) };

const VERBS: &[Verb] = &[
    Verb {
        usage: "status",
        about: "tracer, events, filters, triggers, pids, buffers, clock, options that differ from defaults, instances, the last error_log entry",
        run: status::run,
        ..VERB
    },
    Verb {
        usage: "reset [-a] [-b KB]",
        about: "everything back to defaults (-a: also remove instances; -b: set the buffer size too)",
        opts: &["-a", "-b"],
        run: reset::run,
        ..VERB
    },
    Verb { usage: "on", about: "start writing to the ring buffer", run: control::on, ..VERB },
    Verb { usage: "off", about: "stop writing to the ring buffer", run: control::off, ..VERB },
    Verb { usage: "tracer [NAME]", about: "show or set the current tracer", args: (0, 1), run: control::tracer, ..VERB },
    Verb {
        usage: "list WHAT [GLOB]",
        about: "WHAT: tracers, events [GLOB], systems, functions [GLOB], options, clocks, instances",
        args: (1, 2),
        run: list::run,
        ..VERB
    },
    Verb { usage: "format EVENT...", about: "print the format of each EVENT", args: (1, MANY), run: event::format, ..VERB },
    Verb {
        usage: "enable EVENT...",
        about: "EVENT is all, SYSTEM, SYSTEM:EVENT, SYSTEM/EVENT, a bare event name, or a glob of these",
        args: (1, MANY),
        run: event::enable,
        ..VERB
    },
    Verb { usage: "disable EVENT...", about: "events off, named as for enable", args: (1, MANY), run: event::disable, ..VERB },
    Verb {
        usage: "filter EVENT [EXPR...]",
        about: "set an event filter; --clear drops it",
        args: (1, MANY),
        opts: &["--clear"],
        run: event::filter,
        ..VERB
    },
    Verb {
        usage: "trigger EVENT [TRIGGER]",
        about: "add a trigger; --remove TRIGGER takes one off, --clear all",
        args: (1, MANY),
        opts: &["--clear", "--remove"],
        run: event::trigger,
        ..VERB
    },
    Verb {
        usage: "funcs [--filter GLOB]... [--notrace GLOB]... [--graph GLOB]... [--graph-notrace GLOB]... [--depth N] [--clear]",
        about: "function and graph filters (each list given is replaced); no options: show them",
        opts: &["--filter", "--notrace", "--graph", "--graph-notrace", "--depth", "--clear"],
        run: funcs::funcs,
        ..VERB
    },
    Verb {
        usage: "pid [PID...] [--follow] [--clear]",
        about: "trace only these pids (--follow: and their children); no arguments: show them",
        args: (0, MANY),
        opts: &["--follow", "--clear"],
        run: funcs::pid,
        ..VERB
    },
    Verb { usage: "buffer [KB]", about: "show or set the per-CPU buffer size", args: (0, 1), run: control::buffer, ..VERB },
    Verb { usage: "subbuf [KB]", about: "show or set the sub-buffer size", args: (0, 1), run: control::subbuf, ..VERB },
    Verb { usage: "clock [NAME]", about: "show or set the trace clock", args: (0, 1), run: control::clock, ..VERB },
    Verb {
        usage: "option [NAME [on|off]]",
        about: "show options, one option, or set one",
        args: (0, 2),
        check: |a| name_at(a, 0, "option"),
        run: control::option,
        ..VERB
    },
    Verb { usage: "mark TEXT...", about: "write TEXT into the buffer (trace_marker)", args: (1, MANY), run: buffer::mark, ..VERB },
    Verb {
        usage: "show [--pipe] [--snapshot] [--cpu N]",
        about: "print the buffer; --pipe consumes it and waits",
        opts: &["--pipe", "--snapshot", "--cpu"],
        run: buffer::show,
        ..VERB
    },
    Verb { usage: "snapshot take|clear|free", about: "take a snapshot of the buffer, clear it, or free it", args: (1, 1), run: buffer::snapshot, ..VERB },
    Verb {
        usage: "instance add|rm NAME",
        about: "create or remove an instance",
        args: (2, 2),
        check: instance::check,
        run: instance::instance,
        ..VERB
    },
    Verb { usage: "mount", about: "mount tracefs if needed and print where it is", run: instance::mount, ..VERB },
];

/// The text of --help: each row's usage, and its about in a column.
#[inline(never)]
fn usage() -> String {
    /// Where the about column starts, less the space before its words.
    const COL: usize = 24;
    let mut o = String::from(HEAD);
    for v in VERBS {
        o.push(' ');
        let mut at = fill(&mut o, v.usage, 1, 8);
        // A usage too wide for the column puts the text on the next line.
        if at > COL {
            o.push('\n');
            at = 0;
        }
        pad(&mut o, COL - at);
        fill(&mut o, v.about, COL, COL + 1);
        o.push('\n');
    }
    o.push_str(TAIL);
    o
}

fn pad(o: &mut String, n: usize) {
    for _ in 0..n {
        o.push(' ');
    }
}

/// Append the words of `text` to `o`, whose last line is `at` columns
/// wide: each after a space, or at column `indent` of a new line when it
/// would pass column 78. The column reached.
fn fill(o: &mut String, text: &str, mut at: usize, indent: usize) -> usize {
    for w in text.split(' ') {
        if at + 1 + w.len() > 78 {
            o.push('\n');
            pad(o, indent);
            at = indent;
        } else {
            o.push(' ');
            at += 1;
        }
        o.push_str(w);
        at += w.len();
    }
    at
}

/// The command line, for every verb: the verb, its positional arguments,
/// and each verb option in a field of its own.
#[derive(Default)]
pub struct Args {
    /// -B: work on instances/NAME.
    instance: Option<String>,
    verb: String,
    pos: Vec<String>,
    /// The verb options given, as typed (checked against the verb's row).
    given: Vec<String>,
    /// reset -a: also remove every instance.
    remove_instances: bool,
    /// reset -b KB.
    buffer_kb: Option<u64>,
    clear: bool,
    /// trigger --remove TRIGGER.
    remove: Option<String>,
    /// pid --follow.
    follow: bool,
    /// funcs: the globs of each list, in the order given.
    filter: Vec<String>,
    notrace: Vec<String>,
    graph: Vec<String>,
    graph_notrace: Vec<String>,
    depth: Option<u64>,
    /// show --pipe, --snapshot, --cpu N.
    pipe: bool,
    snapshot: bool,
    cpu: Option<u64>,
}

#[inline(never)]
pub fn parse_args(args: Vec<Vec<u8>>) -> Result<Args> {
    let mut a = Args::default();
    let mut p = argv::Parser::from_args(args);
    while let Some(arg) = p.next()? {
        match arg {
            Short('h') | Long("help") => return cli::help(&[&usage()]).map(|()| a),
            Short('B') | Long("instance") => {
                a.instance = Some(p.value()?);
                continue;
            }
            Value(v) if a.verb.is_empty() => {
                a.verb = v;
                continue;
            }
            Value(v) => {
                a.pos.push(v);
                continue;
            }
            Short('a') => a.remove_instances = true,
            Short('b') => a.buffer_kb = Some(kb(&p.value()?)?),
            Long("clear") => a.clear = true,
            Long("remove") => a.remove = Some(p.value()?),
            Long("follow") => a.follow = true,
            Long("filter") => a.filter.push(p.value()?),
            Long("notrace") => a.notrace.push(p.value()?),
            Long("graph") => a.graph.push(p.value()?),
            Long("graph-notrace") => a.graph_notrace.push(p.value()?),
            Long("depth") => a.depth = Some(number(&p.value()?, "--depth", "a number")?),
            Long("pipe") => a.pipe = true,
            Long("snapshot") => a.snapshot = true,
            Long("cpu") => a.cpu = Some(number(&p.value()?, "--cpu", "a CPU number")?),
            _ => return Err(arg.unexpected()),
        }
        // A verb option: kept as typed, to check that it applies.
        a.given.push(String::from(p.last()));
    }
    if a.verb.is_empty() {
        usage_err!("no command given");
    }
    Ok(a)
}

/// Check the `i`th argument, when given, as a tracefs name of `kind`.
fn name_at(a: &Args, i: usize, kind: &str) -> Result<()> {
    match a.pos.get(i) {
        Some(n) => tracefs::check_name(kind, n).map_err(Error::Fail),
        None => Ok(()),
    }
}

/// An option's number.
fn number(s: &str, opt: &str, what: &str) -> Result<u64> {
    match s.parse() {
        Ok(n) => Ok(n),
        Err(_) => usage_err!("{opt}: '{s}' is not {what}"),
    }
}

/// A size in KiB: a positive decimal number.
fn kb(s: &str) -> Result<u64> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => usage_err!("'{s}' is not a size in KiB"),
    }
}

/// The tracefs handles a verb works with: the top level always (instances
/// are created there, and some files exist only there), and the selected
/// instance when `-B` was given.
pub(crate) struct Ctx {
    top: Tracefs,
    inst: Option<Tracefs>,
}

impl Ctx {
    /// The directory the verb acts on.
    fn t(&self) -> &Tracefs {
        self.inst.as_ref().unwrap_or(&self.top)
    }
}

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftctl", &[HEAD], || dispatch(&parse_args(args)?))
}

/// Check the verb's arguments, open tracefs, run the verb.
#[inline(never)]
fn dispatch(a: &Args) -> Result<()> {
    let Some(v) = VERBS.iter().find(|v| v.name() == a.verb) else {
        usage_err!("unknown command '{}'", a.verb);
    };
    let name = v.name();
    if let Some(o) = a.given.iter().find(|o| !v.opts.contains(&o.as_str())) {
        usage_err!("{name}: option {o} does not apply");
    }
    let (min, max) = (v.args.0 as usize, v.args.1 as usize);
    if a.pos.len() < min {
        usage_err!("{name}: missing argument");
    }
    if a.pos.len() > max {
        usage_err!("{name}: unexpected argument '{}'", a.pos[max]);
    }
    // Names are checked before tracefs is touched at all.
    if let Some(i) = &a.instance {
        tracefs::check_name("instance", i).map_err(Error::Fail)?;
    }
    (v.check)(a)?;
    let top = Tracefs::open().map_err(Error::Fail)?;
    let inst = match &a.instance {
        Some(i) => Some(top.instance(i).map_err(Error::Fail)?),
        None => None,
    };
    (v.run)(&Ctx { top, inst }, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn parse(v: &[&str]) -> Result<Args> {
        parse_args(v.iter().map(|s| s.as_bytes().to_vec()).collect())
    }

    #[test]
    fn verb_names_are_unique_and_documented() {
        let help = usage();
        for (i, v) in VERBS.iter().enumerate() {
            let name = v.name();
            assert!(VERBS[..i].iter().all(|w| w.name() != name), "{name} twice");
            let at = help.find(&alloc::format!("\n  {name} ")).or_else(|| help.find(&alloc::format!("\n  {name}\n")));
            assert!(at.is_some(), "{name} not in --help");
        }
        for l in help.lines() {
            assert!(l.len() <= 78, "too wide: {l}");
        }
    }

    #[test]
    fn options_land_in_named_fields() {
        let a = parse(&["funcs", "--filter", "a*", "-B", "x", "--filter=b", "--graph", "s", "--depth", "3"]).ok().unwrap();
        assert_eq!(a.instance.as_deref(), Some("x"));
        assert_eq!((a.filter, a.graph, a.depth), (["a*", "b"].map(String::from).to_vec(), ["s"].map(String::from).to_vec(), Some(3)));
        assert_eq!(a.given, ["--filter", "--filter", "--graph", "--depth"]);
        let a = parse(&["reset", "-ab", "64"]).ok().unwrap();
        assert!(a.remove_instances && a.buffer_kb == Some(64));
        let a = parse(&["filter", "sched_switch", "--", "-1 == prev_pid"]).ok().unwrap();
        assert_eq!(a.pos, ["sched_switch", "-1 == prev_pid"]);
        let e = |v: &[&str]| parse(v).err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(e(&["show", "--cpu", "x"]), "--cpu: 'x' is not a CPU number");
        assert_eq!(e(&["reset", "-b", "0"]), "'0' is not a size in KiB");
        assert_eq!(e(&["status", "--bogus"]), "invalid option '--bogus'");
    }
}
