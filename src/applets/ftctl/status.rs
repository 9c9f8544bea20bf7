//! `ftctl status`: what `trace-cmd stat` shows, from the control files of
//! one tracefs directory. Sections with nothing to say are left out, so a
//! quiet system prints a few lines.

use super::{fs, line, on_off, read, say, Args, Ctx};
use crate::cli::{Error, Result};
use crate::tracefs::{errno_str, events, state, Tracefs};
use rustix::io::Errno;
use std::format;
use std::string::String;
use std::vec::Vec;

pub(super) fn run(c: &Ctx, _: &Args) -> Result<()> {
    let t = c.t();
    let mut o = String::new();
    if let Some(i) = &t.instance {
        line(&mut o, &format!("Instance: {i}"));
    }
    line(&mut o, &format!("Tracer: {}", read(t, "current_tracer")?.trim()));
    line(&mut o, &format!("Tracing: {}", on_off(read(t, "tracing_on")?.trim() == "1")));

    let all = events::all_events(t).map_err(Error::Fail)?;
    let enabled = read(t, "set_event")?;
    section(&mut o, "Events", &collapse(&all, &enabled));

    // Every event's filter and trigger file, as trace-cmd stat does.
    let (mut filters, mut triggers) = (Vec::new(), Vec::new());
    for e in &all {
        // Events of the ftrace system have no filter (some no trigger).
        if let Lines::Text(f) = optional(t, &e.path("filter"))? {
            let f = f.trim();
            if f != "none" && !f.is_empty() {
                filters.push(format!("{e}: {}", f.replace('\n', " ")));
            }
        }
        if let Lines::Text(tr) = optional(t, &e.path("trigger"))? {
            for l in state::trigger_lines(&tr) {
                triggers.push(format!("{e}: {l}"));
            }
        }
    }
    section(&mut o, "Event filters", &filters);
    section(&mut o, "Event triggers", &triggers);

    for (file, title) in [
        ("set_ftrace_filter", "Function filter"),
        ("set_ftrace_notrace", "Function notrace"),
        ("set_graph_function", "Graph functions"),
        ("set_graph_notrace", "Graph notrace"),
    ] {
        match optional(t, file)? {
            Lines::Absent => {}
            Lines::Refused(e) => line(&mut o, &format!("{title}: ({e})")),
            Lines::Text(s) => {
                let v: Vec<String> = s.lines().filter(|l| !l.starts_with('#')).map(String::from).collect();
                section(&mut o, title, &v);
            }
        }
    }
    if let Lines::Text(d) = optional(t, "max_graph_depth")? {
        if d.trim() != "0" {
            line(&mut o, &format!("Graph depth: {}", d.trim()));
        }
    }

    let mut pids = Vec::new();
    for f in ["set_event_pid", "set_event_notrace_pid", "set_ftrace_pid", "set_ftrace_notrace_pid"] {
        if let Lines::Text(s) = optional(t, f)? {
            let v: Vec<&str> = s.split_whitespace().collect();
            // set_ftrace_pid says "no pid" when empty.
            if !v.is_empty() && s.trim() != "no pid" {
                pids.push(format!("{f}: {}", v.join(" ")));
            }
        }
    }
    section(&mut o, "Pid filters", &pids);

    line(&mut o, &format!("Buffer size per CPU (KiB): {}", read(t, "buffer_size_kb")?.trim()));
    line(&mut o, &format!("Buffer total size (KiB): {}", read(t, "buffer_total_size_kb")?.trim()));
    if let Lines::Text(s) = optional(t, "buffer_subbuf_size_kb")? {
        line(&mut o, &format!("Sub-buffer size (KiB): {}", s.trim()));
    }
    line(&mut o, &format!("Clock: {}", state::current_clock(&read(t, "trace_clock")?)));
    if let Lines::Text(m) = optional(t, "tracing_cpumask")? {
        let cpus = state::cpus(t).map_err(fs)?;
        if !state::same_cpumask(&m, &state::cpumask(&cpus)) {
            line(&mut o, &format!("CPU mask: {}", m.trim()));
        }
    }

    let changed: Vec<String> = state::options(t)
        .map_err(fs)?
        .into_iter()
        .filter(|(n, on)| *on != state::option_default(n, c.inst.is_some()))
        .map(|(n, on)| format!("{n} {}", on_off(on)))
        .collect();
    section(&mut o, "Options changed from defaults", &changed);

    if c.inst.is_none() {
        let v: Vec<String> =
            c.top.list_dir("instances").map_err(fs)?.into_iter().filter(|(_, d)| *d).map(|(n, _)| n).collect();
        section(&mut o, "Instances", &v);
    }

    if let Lines::Text(log) = optional(t, "error_log")? {
        let lines: Vec<&str> = log.lines().collect();
        // The last entry: from its "[timestamp]" header to the end.
        let start = lines.iter().rposition(|l| l.starts_with('[')).unwrap_or(lines.len());
        let v: Vec<String> = lines[start..].iter().map(|l| String::from(*l)).collect();
        section(&mut o, "Last error_log entry", &v);
    }
    say(&o)
}

/// Enabled events, one system per line when all of it is on (`sched:*`),
/// `all` when everything is. `all` is the catalog in its (sorted) order.
fn collapse(all: &[events::EventRef], set_event: &str) -> Vec<String> {
    let mut on = std::vec![false; all.len()];
    for l in set_event.lines() {
        if let Some((s, n)) = l.trim().split_once(':') {
            if let Ok(i) = all.binary_search_by(|e| (e.system.as_str(), e.name.as_str()).cmp(&(s, n))) {
                on[i] = true;
            }
        }
    }
    if !all.is_empty() && on.iter().all(|&x| x) {
        return std::vec![String::from("all")];
    }
    let mut out = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let sys = &all[i].system;
        let n = all[i..].iter().take_while(|e| &e.system == sys).count();
        let group = &on[i..i + n];
        if n > 1 && group.iter().all(|&x| x) {
            out.push(format!("{sys}:*"));
        } else {
            out.extend((i..i + n).filter(|&k| on[k]).map(|k| format!("{}", all[k])));
        }
        i += n;
    }
    out
}

fn section(o: &mut String, title: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    line(o, &format!("{title}:"));
    for l in lines {
        o.push_str("  ");
        line(o, l);
    }
}

enum Lines {
    Absent,
    Refused(String),
    Text(String),
}

/// A control file that a kernel may lack or refuse (function tracing).
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
        assert_eq!(collapse(&all, "sched:x\nsched:y\nirq:a\n"), ["irq:a", "sched:*"]);
        assert_eq!(collapse(&all, "solo:z\n"), ["solo:z"]);
        assert_eq!(collapse(&all, "irq:a\nirq:b\nsched:x\nsched:y\nsolo:z\n"), ["all"]);
        assert!(collapse(&all, "").is_empty());
    }
}
