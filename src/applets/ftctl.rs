//! ftctl: drive tracefs control files — the `trace-cmd stat/reset/...` of a
//! rescue shell. One verb per invocation, dispatched through a table; every
//! verb works on the top level or on an instance (`-B NAME`).
//!
//! status and reset, the two long verbs, live in ftctl/.

use crate::cli::{self, Error, Result};
use crate::tracefs::{self, events, glob, state, Tracefs};
use crate::{fail, usage_err};
use crate::argv::{self, Long, Short, Value};
use crate::{sys, util};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;
use rustix::io::Errno;

mod reset;
mod status;

const USAGE: &str = "\
Usage: ftctl [-B INSTANCE] COMMAND [ARGS]

Drive the kernel's ftrace through tracefs. -B NAME (any position) makes a
command work on instances/NAME instead of the top level.

Commands:
  status                 tracer, events, filters, triggers, pids, buffers,
                         clock, options that differ from defaults, instances
  reset [-a] [-b KB]     everything back to defaults (-a: also remove
                         instances; -b: set the buffer size too)
  on | off               start or stop writing to the ring buffer
  tracer [NAME]          show or set the current tracer
  list tracers|events [GLOB]|systems|functions [GLOB]|options|clocks|instances
  format EVENT           print the format of EVENT
  enable EVENT...        EVENT is all, SYSTEM, SYSTEM:EVENT, SYSTEM/EVENT,
  disable EVENT...         a bare event name, or a glob of these
  filter EVENT EXPR...   set an event filter;  filter EVENT --clear
  trigger EVENT TRIGGER  add a trigger;  --remove TRIGGER;  --clear
  funcs [--filter GLOB]... [--notrace GLOB]... [--graph GLOB]...
        [--graph-notrace GLOB]... [--depth N] [--clear]
                         function and graph filters (each list given is
                         replaced); no options: show them
  pid [PID...] [--follow] [--clear]
                         trace only these pids (--follow: and their children)
  buffer [KB]            show or set the per-CPU buffer size
  subbuf [KB]            show or set the sub-buffer size
  clock [NAME]           show or set the trace clock
  option [NAME [on|off]] show options, one option, or set one
  mark TEXT...           write TEXT into the buffer (trace_marker)
  show [--pipe] [--snapshot] [--cpu N]
                         print the buffer; --pipe consumes it and waits
  snapshot take|clear|free
  instance add|rm NAME   create or remove an instance
  mount                  mount tracefs if needed and print where it is

Put -- before an argument that starts with '-'.
Exit status: 0 done, 1 the kernel refused or an operation failed, 2 usage.
";

/// Verb options: name as typed, and whether it takes a value. Looked up in
/// a table rather than matched arm by arm, which keeps the parser small.
/// Verbs name them by index (the O_ constants), a bit each in a mask.
const OPTS: &[(&str, bool)] = &[
    ("-a", false),
    ("-b", true),
    ("--clear", false),
    ("--remove", true),
    ("--follow", false),
    ("--filter", true),
    ("--notrace", true),
    ("--graph", true),
    ("--graph-notrace", true),
    ("--depth", true),
    ("--pipe", false),
    ("--snapshot", false),
    ("--cpu", true),
];

const O_A: u8 = 0;
const O_B: u8 = 1;
const O_CLEAR: u8 = 2;
const O_REMOVE: u8 = 3;
const O_FOLLOW: u8 = 4;
const O_FILTER: u8 = 5;
const O_NOTRACE: u8 = 6;
const O_GRAPH: u8 = 7;
const O_GRAPH_NOTRACE: u8 = 8;
const O_DEPTH: u8 = 9;
const O_PIPE: u8 = 10;
const O_SNAPSHOT: u8 = 11;
const O_CPU: u8 = 12;

/// The mask of a verb's options.
const fn bits(list: &[u8]) -> u16 {
    let mut m = 0;
    let mut i = 0;
    while i < list.len() {
        m |= 1 << list[i];
        i += 1;
    }
    m
}

/// The parsed command line: one plain struct for all verbs. Verb options
/// are kept as (name, value) in order, value empty for flags.
#[derive(Default)]
pub(crate) struct Args {
    instance: Option<String>,
    verb: String,
    pos: Vec<String>,
    opts: Vec<(u8, String)>,
}

impl Args {
    fn has(&self, o: u8) -> bool {
        self.opts.iter().any(|x| x.0 == o)
    }

    /// The last value given for `o`.
    fn val(&self, o: u8) -> Option<&str> {
        self.opts.iter().rev().find(|x| x.0 == o).map(|x| x.1.as_str())
    }
}

fn parse_args(args: Vec<Vec<u8>>) -> Result<Args> {
    let mut a = Args::default();
    let mut p = argv::Parser::from_args(args);
    while let Some(arg) = p.next()? {
        let opt = match arg {
            Short('h') | Long("help") => {
                cli::help(USAGE)?; // always Err(Exit(0)) after printing
                continue;
            }
            Short('B') | Long("instance") => {
                a.instance = Some(p.value()?);
                continue;
            }
            Value(v) => {
                if a.verb.is_empty() {
                    a.verb = v;
                } else {
                    a.pos.push(v);
                }
                continue;
            }
            // Looked up as typed (`-a`, `--clear`), the way OPTS spells them.
            Short(_) | Long(_) => OPTS.iter().position(|o| o.0 == p.last()),
        };
        let Some(i) = opt else {
            // arg.unexpected()'s words, from the option as typed.
            usage_err!("invalid option '{}'", p.last());
        };
        let v = if OPTS[i].1 { p.value()? } else { String::new() };
        a.opts.push((i as u8, v));
    }
    if a.verb.is_empty() {
        usage_err!("no command given");
    }
    Ok(a)
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

type VerbFn = fn(&Ctx, &Args) -> Result<()>;

/// The options a verb accepts (a mask), its positional count range, its function.
struct Verb(u16, (u8, u8), VerbFn);

const MANY: u8 = u8::MAX;

/// The verb names, in the order of VERBS: one string, not a &str per row.
const VERB_NAMES: &str = "status|reset|on|off|tracer|list|format|enable|disable|filter|trigger|funcs|pid|buffer|subbuf|clock|option|mark|show|snapshot|instance|mount";

/// The index of `instance` in VERB_NAMES.
const V_INSTANCE: usize = 20;

const VERBS: &[Verb] = &[
    Verb(0, (0, 0), status::run), // status
    Verb(bits(&[O_A, O_B]), (0, 0), reset::run), // reset
    Verb(0, (0, 0), v_on), // on
    Verb(0, (0, 0), v_off), // off
    Verb(0, (0, 1), v_tracer), // tracer
    Verb(0, (1, 2), v_list), // list
    Verb(0, (1, MANY), v_format), // format
    Verb(0, (1, MANY), v_enable), // enable
    Verb(0, (1, MANY), v_disable), // disable
    Verb(bits(&[O_CLEAR]), (1, MANY), v_filter), // filter
    Verb(bits(&[O_CLEAR, O_REMOVE]), (1, MANY), v_trigger), // trigger
    Verb(bits(&[O_FILTER, O_NOTRACE, O_GRAPH, O_GRAPH_NOTRACE, O_DEPTH, O_CLEAR]), (0, 0), v_funcs), // funcs
    Verb(bits(&[O_FOLLOW, O_CLEAR]), (0, MANY), v_pid), // pid
    Verb(0, (0, 1), v_buffer), // buffer
    Verb(0, (0, 1), v_subbuf), // subbuf
    Verb(0, (0, 1), v_clock), // clock
    Verb(0, (0, 2), v_option), // option
    Verb(0, (1, MANY), v_mark), // mark
    Verb(bits(&[O_PIPE, O_SNAPSHOT, O_CPU]), (0, 0), v_show), // show
    Verb(0, (1, 1), v_snapshot), // snapshot
    Verb(0, (2, 2), v_instance), // instance
    Verb(0, (0, 0), v_mount), // mount
];

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftctl", USAGE, || dispatch(&parse_args(args)?))
}

/// Check the verb's arguments, open tracefs, run the verb.
#[inline(never)]
fn dispatch(a: &Args) -> Result<()> {
    let Some(k) = util::word_index(VERB_NAMES, &a.verb) else {
        usage_err!("unknown command '{}'", a.verb);
    };
    let v = &VERBS[k];
    let name = &a.verb;
    if let Some(o) = a.opts.iter().find(|o| v.0 & 1 << o.0 == 0) {
        usage_err!("{name}: option {} does not apply", OPTS[o.0 as usize].0);
    }
    let (min, max) = (v.1 .0 as usize, v.1 .1 as usize);
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
    if k == V_INSTANCE {
        if a.instance.is_some() {
            usage_err!("instance: -B does not apply (instances do not nest)");
        }
        tracefs::check_name("instance", &a.pos[1]).map_err(Error::Fail)?;
    }
    let top = Tracefs::open().map_err(Error::Fail)?;
    let inst = match &a.instance {
        Some(i) => Some(top.instance(i).map_err(Error::Fail)?),
        None => None,
    };
    (v.2)(&Ctx { top, inst }, a)
}

// ---- helpers shared by the verbs ----

/// A tracefs error as the user should see it: the file, the errno in words,
/// the kernel's own explanation from error_log, and a hint for the errnos
/// that have one obvious cause.
pub(crate) fn fs(e: tracefs::Error) -> Error {
    Error::Fail(fs_msg(e))
}

/// Control files of function tracing, by the start of their names.
const FUNC_PREFIXES: &[&str] = &["set_ftrace", "set_graph", "available_filter_functions", "func"];

/// The text of `fs`.
#[inline(never)]
pub(crate) fn fs_msg(e: tracefs::Error) -> String {
    let mut msg = e.to_string();
    let file = &e.file[e.file.bytes().rposition(|b| b == b'/').map_or(0, |i| i + 1)..];
    let func = FUNC_PREFIXES.iter().any(|p| file.starts_with(p)) || util::one_of("max_graph_depth|current_tracer", file);
    let root = rustix::process::geteuid().is_root();
    let (errno, perm) = (e.errno, e.errno == Errno::PERM);
    // One hint at most; one push for all of them.
    msg.push_str(if perm && func {
        "\n  the kernel refuses function tracing here (EPERM: lockdown, or ftrace disabled)"
    } else if (perm || errno == Errno::ACCESS) && !root {
        "\n  tracefs needs root (or CAP_SYS_ADMIN)"
    } else if errno == Errno::NOENT {
        "\n  this kernel does not have that control file"
    } else if errno == Errno::BADF && file.starts_with("trace_marker") {
        "\n  tracing is off here ('ftctl on' first)"
    } else if errno == Errno::BUSY && file == "current_tracer" {
        "\n  the tracer is in use (a trace_pipe reader is open)"
    } else {
        ""
    });
    msg
}

#[inline(never)]
pub(crate) fn read(t: &Tracefs, name: &str) -> Result<String> {
    t.read_str(name).map_err(fs)
}

#[inline(never)]
pub(crate) fn write(t: &Tracefs, name: &str, data: &str) -> Result<()> {
    t.write(name, data.as_bytes()).map_err(fs)
}

/// Text to stdout; unlike print!, a closed pipe is an error we handle.
/// Verbs gather their output in a String and write it once: no error
/// plumbing per line.
pub(crate) fn say(s: &str) -> Result<()> {
    cli::say(s)
}

/// Append `s` and a newline.
#[inline(never)]
pub(crate) fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

/// `v` joined by `sep`: one plain loop (`[String]::join` is a generic
/// copy of its own).
#[inline(never)]
fn join(v: &[String], sep: char) -> String {
    let mut o = String::new();
    for (i, w) in v.iter().enumerate() {
        if i > 0 {
            o.push(sep);
        }
        o.push_str(w);
    }
    o
}

/// The words of `s` joined by single spaces (pid lists).
#[inline(never)]
pub(crate) fn words(s: &str) -> String {
    let mut o = String::new();
    for w in s.split_whitespace() {
        if !o.is_empty() {
            o.push(' ');
        }
        o.push_str(w);
    }
    o
}

/// Print `s` and a newline.
#[inline(never)]
fn say_line(s: &str) -> Result<()> {
    let mut o = String::from(s);
    o.push('\n');
    say(&o)
}

/// Resolve several event specs against one catalog, in catalog order.
fn resolve(t: &Tracefs, specs: &[String]) -> Result<Vec<events::EventRef>> {
    resolve_all(t, specs).map(|r| r.1)
}

/// `resolve`, with the catalog (for `enable`).
#[inline(never)]
fn resolve_all(t: &Tracefs, specs: &[String]) -> Result<(Vec<events::EventRef>, Vec<events::EventRef>)> {
    let all = events::all_events(t).map_err(Error::Fail)?;
    let evs = events::resolve_in(&all, &join(specs, ',')).map_err(Error::Fail)?;
    Ok((all, evs))
}

/// A size in KiB: a positive decimal number.
fn kb(s: &str) -> Result<u64> {
    match s.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => usage_err!("'{s}' is not a size in KiB"),
    }
}

fn on_off(v: bool) -> &'static str {
    if v {
        "on"
    } else {
        "off"
    }
}

// ---- the verbs ----

fn v_on(c: &Ctx, _: &Args) -> Result<()> {
    write(c.t(), "tracing_on", "1")
}

fn v_off(c: &Ctx, _: &Args) -> Result<()> {
    write(c.t(), "tracing_on", "0")
}

fn v_tracer(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    match a.pos.first() {
        None => say(&read(t, "current_tracer")?),
        Some(n) => pick(t, "tracer", n, &read(t, "available_tracers")?, "current_tracer"),
    }
}

/// Set `file` to `n` when `n` is among the names of `list` (a kernel
/// listing such as available_tracers or trace_clock); else name them all.
#[inline(never)]
fn pick(t: &Tracefs, what: &str, n: &str, list: &str, file: &str) -> Result<()> {
    let names = state::names(list);
    if !state::listed(&names, n) {
        fail!("unknown {what} '{n}' (available: {names})");
    }
    write(t, file, n)
}

fn v_list(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let what = a.pos[0].as_str();
    let pat = a.pos.get(1).map(String::as_str);
    // By index in one word list: the names are compared in one loop.
    let k = util::word_index("events|functions|tracers|clocks|systems|instances|options", what);
    if pat.is_some() && k.is_none_or(|k| k > 1) {
        usage_err!("list {what}: unexpected argument");
    }
    let mut o = String::new();
    match k {
        Some(0) => {
            let all = events::all_events(t).map_err(Error::Fail)?;
            let evs = match pat {
                Some(p) => events::resolve_in(&all, p).map_err(Error::Fail)?,
                None => all,
            };
            for e in &evs {
                o.push_str(&e.system);
                o.push(':');
                line(&mut o, &e.name);
            }
        }
        Some(1) => {
            // Only the top level has the list; it is the same for instances.
            for l in read(&c.top, "available_filter_functions")?.lines() {
                let f = l.split_whitespace().next().unwrap_or("");
                if pat.is_none_or(|p| glob::matches(p, f)) {
                    line(&mut o, l);
                }
            }
        }
        // Clocks are listed like tracers, the current one in brackets.
        Some(k @ (2 | 3)) => {
            for x in read(t, if k == 3 { "trace_clock" } else { "available_tracers" })?.split_whitespace() {
                line(&mut o, state::unbracket(x));
            }
        }
        Some(k @ (4 | 5)) => {
            let (tf, dir) = if k == 4 { (t, "events") } else { (&c.top, "instances") };
            for (n, d) in &tf.list_dir(dir).map_err(fs)? {
                if *d {
                    line(&mut o, n);
                }
            }
        }
        Some(_) => return options(c, false),
        None => usage_err!("list: unknown list '{what}' (tracers, events, systems, functions, options, clocks, instances)"),
    }
    say(&o)
}

fn v_format(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let mut o = String::new();
    for e in &resolve(t, &a.pos)? {
        o.push_str(&read(t, &e.path("format"))?);
    }
    say(&o)
}

fn v_enable(c: &Ctx, a: &Args) -> Result<()> {
    enable(c, a, true)
}

fn v_disable(c: &Ctx, a: &Args) -> Result<()> {
    enable(c, a, false)
}

fn enable(c: &Ctx, a: &Args, on: bool) -> Result<()> {
    let (all, evs) = resolve_all(c.t(), &a.pos)?;
    events::enable_in(c.t(), &all, &evs, on).map_err(Error::Fail)
}

fn v_filter(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let expr = join(&a.pos[1..], ' ');
    let clear = a.has(O_CLEAR);
    if clear != expr.is_empty() {
        usage_err!("filter: give either an expression or --clear");
    }
    let evs = resolve(t, &a.pos[..1])?;
    // "0" is the kernel's way to drop a filter.
    let data = if clear { "0" } else { expr.as_str() };
    for e in &evs {
        write(t, &e.path("filter"), data)?;
    }
    Ok(())
}

fn v_trigger(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let trig = join(&a.pos[1..], ' ');
    let (clear, remove) = (a.has(O_CLEAR), a.val(O_REMOVE));
    if clear as u8 + remove.is_some() as u8 + !trig.is_empty() as u8 != 1 {
        usage_err!("trigger: give one of TRIGGER, --remove TRIGGER or --clear");
    }
    // What to append to each event's file: the trigger, or its removal.
    let cmd = match remove {
        Some(r) => state::trigger_removal(r.strip_prefix('!').unwrap_or(r)),
        None => trig,
    };
    for e in &resolve(t, &a.pos[..1])? {
        let f = e.path("trigger");
        let r = if clear { state::clear_triggers(t, &f) } else { t.append(&f, cmd.as_bytes()) };
        if let Err(err) = r {
            return Err(trigger_err(t, &f, err));
        }
    }
    Ok(())
}

/// A refused trigger write. The kernel logs nothing for an unknown trigger
/// command; the trigger file's header lists the ones it knows.
#[inline(never)]
fn trigger_err(t: &Tracefs, f: &str, err: tracefs::Error) -> Error {
    let silent = err.errno == Errno::INVAL && err.log.is_none();
    let mut m = fs_msg(err);
    if silent {
        if let Ok(h) = t.read_str(f) {
            if let Some(k) = h.lines().nth(1).and_then(|l| l.strip_prefix("# ")) {
                m.push_str("\n  triggers this kernel knows: ");
                m.push_str(k);
            }
        }
    }
    Error::Fail(m)
}

/// The function filter files, with the option that sets each; the depth
/// last (shown with them, set apart).
const FUNC_FILES: &[(&str, u8)] = &[
    ("set_ftrace_filter", O_FILTER),
    ("set_ftrace_notrace", O_NOTRACE),
    ("set_graph_function", O_GRAPH),
    ("set_graph_notrace", O_GRAPH_NOTRACE),
    ("max_graph_depth", O_DEPTH),
];

/// `funcs` without options: each filter file there is, indented.
#[inline(never)]
fn show_funcs(t: &Tracefs) -> Result<()> {
    let mut o = String::new();
    for &(f, _) in FUNC_FILES {
        if !t.exists(f) {
            continue;
        }
        let text = read(t, f)?;
        let _ = writeln!(o, "{f}:");
        for l in text.lines().filter(|l| !l.starts_with("####")) {
            let _ = writeln!(o, "  {l}");
        }
    }
    say(&o)
}

fn v_funcs(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    if a.opts.is_empty() {
        return show_funcs(t);
    }
    let depth = match a.val(O_DEPTH) {
        Some(d) => match d.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => usage_err!("--depth: '{d}' is not a number"),
        },
        None => None,
    };
    let clear = a.has(O_CLEAR);
    for &(f, opt) in &FUNC_FILES[..4] {
        let given = a.has(opt);
        if !given && !clear {
            continue;
        }
        if !t.exists(f) {
            if !given {
                continue;
            }
            fail!("{}: this kernel has no {f} (no function graph tracer)", OPTS[opt as usize].0);
        }
        // Opening with O_TRUNC empties the list; then each glob is added in
        // its own write so a glob that matches nothing is named.
        t.write(f, b"").map_err(fs)?;
        for (o, g) in &a.opts {
            if *o != opt {
                continue;
            }
            match t.append(f, g.as_bytes()) {
                Err(e) if e.errno == Errno::INVAL => fail!("{}: no function matches '{g}'", t.path_of(f)),
                r => r.map_err(fs)?,
            }
        }
    }
    if let Some(d) = depth.or(clear.then_some(0)) {
        if t.exists("max_graph_depth") {
            write(t, "max_graph_depth", &u64::from(d).to_string())?;
        } else if depth.is_some() {
            fail!("--depth: this kernel has no max_graph_depth (no function graph tracer)");
        }
    }
    Ok(())
}

/// The pid filter files, as `pid` and `status` show them.
pub(crate) const PID_FILES: &[&str] = &["set_event_pid", "set_event_notrace_pid", "set_ftrace_pid", "set_ftrace_notrace_pid"];

/// A control file a kernel may refuse (function tracing) or lack.
fn refused(e: &tracefs::Error) -> bool {
    e.errno == Errno::PERM || e.errno == Errno::NOENT
}

/// Write a control file a kernel may refuse (function tracing) or lack:
/// the errno when it did, so the caller decides what that means.
#[inline(never)]
fn write_refusable(t: &Tracefs, f: &str, data: &str) -> Result<Option<Errno>> {
    match t.write(f, data.as_bytes()) {
        Err(e) if refused(&e) => Ok(Some(e.errno)),
        r => r.map(|()| None).map_err(fs),
    }
}

/// `pid` without arguments: the pid filters and the fork options.
#[inline(never)]
fn show_pids(t: &Tracefs) -> Result<()> {
    let mut o = String::new();
    for &f in PID_FILES {
        let _ = match t.read_str(f) {
            Ok(s) => writeln!(o, "{f}: {}", words(&s)),
            Err(e) if refused(&e) => writeln!(o, "{f}: ({})", sys::Msg(e.errno)),
            Err(e) => return Err(fs(e)),
        };
    }
    for &(f, path) in &[("event-fork", "options/event-fork"), ("function-fork", "options/function-fork")] {
        if let Ok(s) = t.read_str(path) {
            let _ = writeln!(o, "{f}: {}", on_off(s.trim() == "1"));
        }
    }
    say(&o)
}

fn v_pid(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let (clear, follow) = (a.has(O_CLEAR), a.has(O_FOLLOW));
    if a.pos.is_empty() && a.opts.is_empty() {
        return show_pids(t);
    }
    for p in &a.pos {
        if p.parse::<u32>().is_err() {
            usage_err!("pid: '{p}' is not a process id");
        }
    }
    if clear || !a.pos.is_empty() {
        let list = join(&a.pos, ' ');
        // Truncating replaces the list; the kernel parses all pids of one write.
        write(t, "set_event_pid", &list)?;
        // Function pid filtering only where the kernel permits it.
        if let Some(errno) = write_refusable(t, "set_ftrace_pid", &list)? {
            if !a.pos.is_empty() {
                sys::eprintln(format_args!("ftctl: set_ftrace_pid: {} (events are still filtered)", sys::Msg(errno)));
            }
        }
    }
    if follow || clear {
        let v = if follow { "1" } else { "0" };
        write(t, "options/event-fork", v)?;
        write_refusable(t, "options/function-fork", v)?;
    }
    Ok(())
}

fn show_or_set(t: &Tracefs, file: &str, a: &Args) -> Result<()> {
    match a.pos.first() {
        Some(v) => write(t, file, &kb(v)?.to_string()),
        None => say(&read(t, file)?),
    }
}

fn v_buffer(c: &Ctx, a: &Args) -> Result<()> {
    show_or_set(c.t(), "buffer_size_kb", a)
}

fn v_subbuf(c: &Ctx, a: &Args) -> Result<()> {
    show_or_set(c.t(), "buffer_subbuf_size_kb", a)
}

fn v_clock(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let list = read(t, "trace_clock")?;
    match a.pos.first() {
        None => say_line(state::current_clock(&list)),
        Some(n) => pick(t, "clock", n, &list, "trace_clock"),
    }
}

/// Every option and its value; `changed` marks those that differ from
/// the defaults (`option`, where `list options` does not).
fn options(c: &Ctx, changed: bool) -> Result<()> {
    let mut o = String::new();
    for (n, on) in &state::options(c.t()).map_err(fs)? {
        let mark = if changed && *on != state::option_default(n, c.inst.is_some()) { "  (changed)" } else { "" };
        let _ = writeln!(o, "{n} {}{mark}", on_off(*on));
    }
    say(&o)
}

fn v_option(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let Some(name) = a.pos.first() else {
        return options(c, true);
    };
    tracefs::check_name("option", name).map_err(Error::Fail)?;
    let f = format!("options/{name}");
    if !t.exists(&f) {
        fail!("unknown option '{name}' (see 'ftctl list options')");
    }
    let v = match a.pos.get(1).map(String::as_str) {
        None => return say_line(on_off(read(t, &f)?.trim() == "1")),
        // on, 1, off, 0: the first two set it.
        Some(v) => match util::word_index("on|1|off|0", v) {
            Some(i) => if i < 2 { "1" } else { "0" },
            None => usage_err!("option: '{v}' is not on or off"),
        },
    };
    write(t, &f, v)
}

fn v_mark(c: &Ctx, a: &Args) -> Result<()> {
    // One write is one marker event; end it with a newline like echo does
    // so the text file shows one line per mark.
    write(c.t(), "trace_marker", &(join(&a.pos, ' ') + "\n"))
}

fn v_show(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let (pipe, snap) = (a.has(O_PIPE), a.has(O_SNAPSHOT));
    if pipe && snap {
        usage_err!("show: --pipe and --snapshot do not go together (a snapshot is not consumed)");
    }
    let base = if pipe {
        "trace_pipe"
    } else if snap {
        "snapshot"
    } else {
        "trace"
    };
    let file = match a.val(O_CPU) {
        Some(n) => match n.parse::<u32>() {
            Ok(n) => format!("per_cpu/cpu{n}/{base}"),
            Err(_) => usage_err!("--cpu: '{n}' is not a CPU number"),
        },
        None => String::from(base),
    };
    if !t.exists(&file) {
        if snap {
            fail!("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)");
        }
        fail!("{}: no such CPU", t.path_of(&file));
    }
    let fd = t.open_file(&file, rustix::fs::OFlags::RDONLY).map_err(fs)?;
    let mut buf = alloc::vec![0u8; 65536];
    loop {
        match rustix::io::read(&fd, &mut buf) {
            Ok(0) => return Ok(()),
            // trace_pipe hands out what it has; write it through at once so
            // `ftctl show --pipe | grep` sees lines as they happen.
            Ok(n) => sys::write_all(sys::fd(1), &buf[..n])?,
            Err(Errno::INTR) => {}
            Err(errno) => return Err(fs(tracefs::Error::new(t.path_of(&file), errno, None))),
        }
    }
}

fn v_snapshot(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    // Writing 1 allocates (if needed) and swaps, 2 clears, 0 frees.
    let x = a.pos[0].as_str();
    let Some(i) = util::word_index("take|clear|free", x) else {
        usage_err!("snapshot: '{x}' is not take, clear or free");
    };
    let v = &"120"[i..i + 1];
    if !t.exists("snapshot") {
        fail!("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)");
    }
    write(t, "snapshot", v)
}

fn v_instance(c: &Ctx, a: &Args) -> Result<()> {
    // -B and the name were checked before tracefs was opened.
    let name = a.pos[1].as_str();
    let rel = format!("instances/{name}");
    let x = a.pos[0].as_str();
    let Some(i) = util::word_index("add|rm", x) else {
        usage_err!("instance: '{x}' is not add or rm");
    };
    let f = if i == 0 { Tracefs::mkdir } else { Tracefs::rmdir };
    let Err(errno) = f(&c.top, &rel) else { return Ok(()) };
    let why = match errno {
        Errno::EXIST => "it already exists",
        Errno::NOENT => "no such instance",
        Errno::BUSY => "it is in use (a reader has a file of it open)",
        e => fail!("instance {x} '{name}': {}", sys::Msg(e)),
    };
    fail!("instance {x} '{name}': {why}")
}

fn v_mount(c: &Ctx, _: &Args) -> Result<()> {
    say_line(&c.top.mount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verb_table() {
        assert_eq!(util::word_index(VERB_NAMES, "instance"), Some(V_INSTANCE));
        assert_eq!(VERB_NAMES.split('|').count(), VERBS.len());
    }
}
