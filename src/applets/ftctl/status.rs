//! `ftctl status`: what `trace-cmd stat` shows, from the control files of
//! one tracefs directory. Sections with nothing to say are left out, so a
//! quiet system prints a few lines.

use super::{fs, line, on_off, put as o_push, read, say, Args, Ctx};
use crate::cli::{Error, Result};
use crate::tracefs::{errno_str, events, state, Tracefs};
use rustix::io::Errno;
use alloc::string::String;

pub(super) fn run(c: &Ctx, _: &Args) -> Result<()> {
    let t = c.t();
    let mut o = String::new();
    if let Some(i) = &t.instance {
        kv(&mut o, "Instance", i);
    }
    kv(&mut o, "Tracer", read(t, "current_tracer")?.trim());
    kv(&mut o, "Tracing", on_off(read(t, "tracing_on")?.trim() == "1"));

    let mut sec = String::new();
    event_sections(t, &mut o, &mut sec)?;

    rest(c, t, &mut o, &mut sec)?;
    say(&o)
}

/// Enabled events, then every event's filter and trigger file, as
/// trace-cmd stat does.
fn event_sections(t: &Tracefs, o: &mut String, sec: &mut String) -> Result<()> {
    let all = events::all_events(t).map_err(Error::Fail)?;
    sec.push_str(&collapse(&all, &read(t, "set_event")?));
    section(o, "Events", sec);
    let mut trig = String::new();
    for e in &all {
        let name = [e.system.as_str(), ":", &e.name].concat();
        // Events of the ftrace system have no filter (some no trigger).
        if let Lines::Text(f) = optional(t, &e.path("filter"))? {
            let f = f.trim();
            // After a rejected write the file shows the parse error, and the
            // event has no filter.
            if f != "none" && !f.is_empty() && !f.contains("\nparse_error:") {
                item2(sec, &name, &f.replace('\n', " "));
            }
        }
        if let Lines::Text(tr) = optional(t, &e.path("trigger"))? {
            for l in state::trigger_lines(&tr) {
                item2(&mut trig, &name, l);
            }
        }
    }
    section(o, "Event filters", sec);
    section(o, "Event triggers", &mut trig);
    Ok(())
}

/// The rest of `run`, apart so the event catalog is dropped before it:
/// fewer live values on each of its early-return paths.
fn rest(c: &Ctx, t: &Tracefs, o: &mut String, sec: &mut String) -> Result<()> {
    for (file, title) in [
        ("set_ftrace_filter", "Function filter"),
        ("set_ftrace_notrace", "Function notrace"),
        ("set_graph_function", "Graph functions"),
        ("set_graph_notrace", "Graph notrace"),
        ("max_graph_depth", "Graph depth"),
    ] {
        match optional(t, file)? {
            Lines::Absent => {}
            Lines::Refused(e) => kv(o, title, &e),
            Lines::Text(s) => {
                for l in s.lines().filter(|l| !l.starts_with('#') && *l != "0") {
                    item(sec, l);
                }
                section(o, title, sec);
            }
        }
    }

    for f in ["set_event_pid", "set_event_notrace_pid", "set_ftrace_pid", "set_ftrace_notrace_pid"] {
        if let Lines::Text(s) = optional(t, f)? {
            // set_ftrace_pid says "no pid" when empty.
            let v = super::words(&s);
            if !v.is_empty() && v != "no pid" {
                item2(sec, f, &v);
            }
        }
    }
    section(o, "Pid filters", sec);

    for (file, title) in [
        ("buffer_size_kb", "Buffer size per CPU (KiB)"),
        ("buffer_total_size_kb", "Buffer total size (KiB)"),
        ("buffer_subbuf_size_kb", "Sub-buffer size (KiB)"),
    ] {
        if let Lines::Text(v) = optional(t, file)? {
            kv(o, title, v.trim());
        }
    }
    kv(o, "Clock", state::current_clock(&read(t, "trace_clock")?));
    if let Lines::Text(m) = optional(t, "tracing_cpumask")? {
        if !state::same_cpumask(&m, &state::cpumask(&state::cpus(t).map_err(fs)?)) {
            kv(o, "CPU mask", m.trim());
        }
    }

    for (n, on) in state::options(t).map_err(fs)? {
        if on != state::option_default(&n, c.inst.is_some()) {
            o_push(sec, &["  ", &n, " ", on_off(on), "\n"]);
        }
    }
    section(o, "Options changed from defaults", sec);

    if c.inst.is_none() {
        for (n, d) in c.top.list_dir("instances").map_err(fs)? {
            if d {
                item(sec, &n);
            }
        }
        section(o, "Instances", sec);
    }

    if let Lines::Text(log) = optional(t, "error_log")? {
        // The last entry: from its "[timestamp]" header line to the end.
        let start = if log.starts_with('[') { 0 } else { log.rfind("\n[").map_or(log.len(), |i| i + 1) };
        for l in log[start..].lines() {
            item(sec, l);
        }
        section(o, "Last error_log entry", sec);
    }
    Ok(())
}

/// `Title: value`
#[inline(never)]
fn kv(o: &mut String, title: &str, v: &str) {
    o.push_str(title);
    o.push_str(": ");
    line(o, v);
}

/// One indented line of a section.
#[inline(never)]
fn item(sec: &mut String, s: &str) {
    o_push(sec, &["  ", s, "\n"]);
}

/// One indented `name: value` line of a section.
#[inline(never)]
fn item2(sec: &mut String, name: &str, v: &str) {
    o_push(sec, &["  ", name, ": ", v, "\n"]);
}

/// Emit a titled section when it has lines, and empty it for the next.
#[inline(never)]
fn section(o: &mut String, title: &str, sec: &mut String) {
    if !sec.is_empty() {
        o_push(o, &[title, ":\n", sec]);
        sec.clear();
    }
}

/// Enabled events as section lines, one system per line when all of it is
/// on (`sched:*`), `all` when everything is. `all` is the catalog in its
/// (sorted) order.
fn collapse(all: &[events::EventRef], set_event: &str) -> String {
    let mut on = alloc::vec![false; all.len()];
    for l in set_event.lines() {
        if let Some((s, n)) = l.trim().split_once(':') {
            if let Ok(i) = all.binary_search_by(|e| (e.system.as_str(), e.name.as_str()).cmp(&(s, n))) {
                on[i] = true;
            }
        }
    }
    let mut out = String::new();
    if !all.is_empty() && on.iter().all(|&x| x) {
        item(&mut out, "all");
        return out;
    }
    let mut i = 0;
    while i < all.len() {
        let sys = &all[i].system;
        let n = all[i..].iter().take_while(|e| &e.system == sys).count();
        if n > 1 && on[i..i + n].iter().all(|&x| x) {
            o_push(&mut out, &["  ", sys, ":*\n"]);
        } else {
            for e in (i..i + n).filter(|&k| on[k]).map(|k| &all[k]) {
                o_push(&mut out, &["  ", &e.system, ":", &e.name, "\n"]);
            }
        }
        i += n;
    }
    out
}

enum Lines {
    Absent,
    Refused(String),
    Text(String),
}

/// A control file that a kernel may lack or refuse (function tracing).
#[inline(never)]
fn optional(t: &Tracefs, f: &str) -> Result<Lines> {
    match t.read_str(f) {
        Ok(s) => Ok(Lines::Text(s)),
        Err(e) if e.errno == Errno::NOENT => Ok(Lines::Absent),
        Err(e) if e.errno == Errno::PERM => Ok(Lines::Refused(String::from(errno_str(e.errno).as_str()))),
        Err(e) => Err(fs(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_systems() {
        let ev = |s: &str, n: &str| events::EventRef { system: s.into(), name: n.into() };
        let all = [ev("irq", "a"), ev("irq", "b"), ev("sched", "x"), ev("sched", "y"), ev("solo", "z")];
        assert_eq!(collapse(&all, "sched:x\nsched:y\nirq:a\n"), "  irq:a\n  sched:*\n");
        assert_eq!(collapse(&all, "solo:z\n"), "  solo:z\n");
        assert_eq!(collapse(&all, "irq:a\nirq:b\nsched:x\nsched:y\nsolo:z\n"), "  all\n");
        assert!(collapse(&all, "").is_empty());
    }
}
