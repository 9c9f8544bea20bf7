//! What gets traced by function and by pid: `funcs`, `pid`.

use super::{fs, join_args, on_off, read, say, words, write, Args, Ctx};
use crate::cli::{self, Result};
use crate::tracefs::{self, Tracefs};
use crate::{fail, sys, usage_err};
use alloc::string::{String, ToString};
use core::fmt::Write;
use rustix::io::Errno;

/// A function filter file and the option whose globs replace its list.
struct FuncList {
    file: &'static str,
    opt: &'static str,
    globs: fn(&Args) -> &[String],
}

const FUNC_LISTS: &[FuncList] = &[
    FuncList { file: "set_ftrace_filter", opt: "--filter", globs: |a| &a.filter },
    FuncList { file: "set_ftrace_notrace", opt: "--notrace", globs: |a| &a.notrace },
    FuncList { file: "set_graph_function", opt: "--graph", globs: |a| &a.graph },
    FuncList { file: "set_graph_notrace", opt: "--graph-notrace", globs: |a| &a.graph_notrace },
];

/// `funcs` without options: each filter file there is, and the graph
/// depth, indented.
fn show_funcs(t: &Tracefs) -> Result<()> {
    let mut o = String::new();
    for f in FUNC_LISTS.iter().map(|l| l.file).chain(["max_graph_depth"]) {
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

pub(super) fn funcs(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    if a.given.is_empty() {
        return show_funcs(t);
    }
    for l in FUNC_LISTS {
        let globs = (l.globs)(a);
        let given = !globs.is_empty();
        if !given && !a.clear {
            continue;
        }
        if !t.exists(l.file) {
            if !given {
                continue;
            }
            fail!("{}: this kernel has no {} (no function graph tracer)", l.opt, l.file);
        }
        // Opening with O_TRUNC empties the list; then each glob is added in
        // its own write so a glob that matches nothing is named.
        t.write(l.file, b"").map_err(fs)?;
        for g in globs {
            match t.append(l.file, g.as_bytes()) {
                Err(e) if e.errno == Errno::INVAL => fail!("{}: no function matches '{g}'", t.path_of(l.file)),
                r => r.map_err(fs)?,
            }
        }
    }
    if let Some(d) = a.depth.or(a.clear.then_some(0)) {
        if t.exists("max_graph_depth") {
            write(t, "max_graph_depth", &d.to_string())?;
        } else if a.depth.is_some() {
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
fn write_refusable(t: &Tracefs, f: &str, data: &str) -> Result<Option<Errno>> {
    match t.write(f, data.as_bytes()) {
        Err(e) if refused(&e) => Ok(Some(e.errno)),
        r => r.map(|()| None).map_err(fs),
    }
}

/// `pid` without arguments: the pid filters and the fork options.
fn show_pids(t: &Tracefs) -> Result<()> {
    let mut o = String::new();
    for &f in PID_FILES {
        let _ = match t.read_str(f) {
            Ok(s) => writeln!(o, "{f}: {}", words(&s)),
            Err(e) if refused(&e) => writeln!(o, "{f}: ({})", sys::Msg(e.errno)),
            Err(e) => return Err(fs(e)),
        };
    }
    for (f, path) in [("event-fork", "options/event-fork"), ("function-fork", "options/function-fork")] {
        if let Ok(s) = t.read_str(path) {
            let _ = writeln!(o, "{f}: {}", on_off(s.trim_ascii() == "1"));
        }
    }
    say(&o)
}

pub(super) fn pid(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    if a.pos.is_empty() && a.given.is_empty() {
        return show_pids(t);
    }
    for p in &a.pos {
        if p.parse::<u32>().is_err() {
            usage_err!("pid: '{p}' is not a process id");
        }
    }
    if a.clear || !a.pos.is_empty() {
        let list = join_args(&a.pos, ' ');
        // Truncating replaces the list; the kernel parses all pids of one write.
        write(t, "set_event_pid", &list)?;
        // Function pid filtering only where the kernel permits it.
        if let Some(errno) = write_refusable(t, "set_ftrace_pid", &list)? {
            if !a.pos.is_empty() {
                cli::warn(format_args!("set_ftrace_pid: {}; events are still filtered by pid", sys::Msg(errno)));
            }
        }
    }
    if a.follow || a.clear {
        let v = if a.follow { "1" } else { "0" };
        write(t, "options/event-fork", v)?;
        write_refusable(t, "options/function-fork", v)?;
    }
    Ok(())
}
