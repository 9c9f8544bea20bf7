//! `ftctl status`: what `trace-cmd stat` shows, from the control files of
//! one tracefs directory. Sections with nothing to say are left out, so a
//! quiet system prints a few lines.

use super::{fs, on_off, Args, Ctx};
use core::fmt::Write;
use crate::cli::{Error, Result};
use crate::tracefs::{self, events, state, Tracefs};
use crate::util::find_str;
use rustix::io::Errno;
use alloc::string::String;

/// The report being built. A failed read does not return at once: the
/// first error is kept, and later reads give nothing, so each section
/// reads as a list of files rather than a chain of early returns.
struct St<'a> {
    t: &'a Tracefs,
    o: String,
    sec: String,
    /// The text of the file `get` read last (one buffer for all of them).
    v: String,
    err: Option<Error>,
    /// The errno of the last optional file the kernel refused.
    refused: Option<Errno>,
}

impl St<'_> {
    /// Read `f` into `v`. A kernel may lack or refuse (EPERM: function
    /// tracing) an `optional` file: that gives false and `refused` says
    /// which. Any other failure is kept in `err`.
    #[inline(never)]
    fn get(&mut self, f: &str, optional: bool) -> bool {
        self.refused = None;
        if self.err.is_some() {
            return false;
        }
        match self.t.read_str(f) {
            Ok(s) => {
                self.v = s;
                return true;
            }
            Err(e) if optional && e.errno == Errno::PERM => self.refused = Some(e.errno),
            Err(e) if optional && e.errno == Errno::NOENT => {}
            Err(e) => self.err = Some(fs(e)),
        }
        false
    }

    /// Keep the first error of a step that is not a plain read.
    #[inline(never)]
    fn keep(&mut self, e: Error) {
        if self.err.is_none() {
            self.err = Some(e);
        }
    }

    /// `Title: value` of a file, trimmed.
    #[inline(never)]
    fn kv_file(&mut self, title: &str, f: &str, optional: bool) {
        if self.get(f, optional) {
            kv(&mut self.o, title, self.v.trim_ascii());
        }
    }

    /// Emit a titled section when it has lines, and empty it for the next.
    #[inline(never)]
    fn section(&mut self, title: &str) {
        if !self.sec.is_empty() {
            let _ = write!(self.o, "{title}:\n{}", self.sec);
            self.sec.clear();
        }
    }
}

/// `Title: value`
#[inline(never)]
fn kv(o: &mut String, title: &str, v: &str) {
    let _ = writeln!(o, "{title}: {v}");
}

pub(super) fn run(c: &Ctx, _: &Args) -> Result<()> {
    let t = c.t();
    let mut s = St { t, o: String::new(), sec: String::new(), v: String::new(), err: None, refused: None };
    if let Some(i) = &t.instance {
        kv(&mut s.o, "Instance", i);
    }
    s.kv_file("Tracer", "current_tracer", false);
    if s.get("tracing_on", false) {
        kv(&mut s.o, "Tracing", on_off(s.v.trim_ascii() == "1"));
    }
    event_sections(&mut s);
    rest(c, &mut s);
    match s.err {
        Some(e) => Err(e),
        None => super::say(&s.o),
    }
}

/// Enabled events, then every event's filter and trigger file, as
/// trace-cmd stat does.
#[inline(never)]
fn event_sections(s: &mut St) {
    let all = match events::all_events(s.t) {
        Ok(a) => a,
        Err(e) => return s.keep(Error::Fail(e)),
    };
    if s.get("set_event", false) {
        collapse(&all, &s.v, &mut s.sec);
    }
    s.section("Events");
    let mut trig = String::new();
    for e in &all {
        // Events of the ftrace system have no filter (some no trigger).
        if s.get(&e.path("filter"), true) {
            let f = s.v.trim_ascii();
            // After a rejected write the file shows the parse error, and the
            // event has no filter.
            if f != "none" && !f.is_empty() && find_str(f, "\nparse_error:", false).is_none() {
                ev(&mut s.sec, e, ": ");
                for (i, l) in f.split('\n').enumerate() {
                    if i > 0 {
                        s.sec.push(' ');
                    }
                    s.sec.push_str(l);
                }
                s.sec.push('\n');
            }
        }
        if s.get(&e.path("trigger"), true) {
            for l in &state::trigger_lines(&s.v) {
                ev(&mut trig, e, ": ");
                trig.push_str(l);
                trig.push('\n');
            }
        }
    }
    s.section("Event filters");
    s.sec = trig;
    s.section("Event triggers");
}

/// The function filter files, under the title status gives each.
const FUNC_SECTIONS: &[(&str, &str)] = &[
    ("set_ftrace_filter", "Function filter"),
    ("set_ftrace_notrace", "Function notrace"),
    ("set_graph_function", "Graph functions"),
    ("set_graph_notrace", "Graph notrace"),
    ("max_graph_depth", "Graph depth"),
];

/// The buffer size files, each on a `Title: value` line.
const BUFFERS: &[(&str, &str)] = &[
    ("buffer_size_kb", "Buffer size per CPU (KiB)"),
    ("buffer_total_size_kb", "Buffer total size (KiB)"),
    ("buffer_subbuf_size_kb", "Sub-buffer size (KiB)"),
];

/// Function filters and pid filters, then `buffers`.
#[inline(never)]
fn rest(c: &Ctx, s: &mut St) {
    for &(file, title) in FUNC_SECTIONS {
        if s.get(file, true) {
            for l in s.v.lines().filter(|l| !l.starts_with('#') && *l != "0") {
                item(&mut s.sec, l);
            }
            s.section(title);
        } else if let Some(e) = s.refused {
            let _ = writeln!(s.o, "{title}: {}", crate::sys::Msg(e));
        }
    }

    for &f in super::funcs::PID_FILES {
        if s.get(f, true) {
            // set_ftrace_pid says "no pid" when empty.
            let v = super::words(&s.v);
            if !v.is_empty() && v != "no pid" {
                item2(&mut s.sec, f, &v);
            }
        }
    }
    s.section("Pid filters");
    buffers(c, s);
}

/// Buffer sizes, clock, CPU mask, options, instances, the last error.
#[inline(never)]
fn buffers(c: &Ctx, s: &mut St) {
    let t = s.t;
    for &(file, title) in BUFFERS {
        s.kv_file(title, file, true);
    }
    if s.get("trace_clock", false) {
        kv(&mut s.o, "Clock", state::current_clock(&s.v));
    }
    if s.get("tracing_cpumask", true) {
        match state::cpumask(t) {
            Ok(mask) => {
                if !state::same_cpumask(&s.v, &mask) {
                    kv(&mut s.o, "CPU mask", s.v.trim_ascii());
                }
            }
            Err(e) => s.keep(fs(e)),
        }
    }

    match state::options(t) {
        Ok(opts) => {
            for (n, on) in &opts {
                if *on != state::option_default(n, c.inst.is_some()) {
                    let _ = writeln!(s.sec, "  {n} {}", on_off(*on));
                }
            }
        }
        Err(e) => s.keep(fs(e)),
    }
    s.section("Options changed from defaults");

    if c.inst.is_none() {
        match c.top.list_dir("instances") {
            Ok(list) => {
                for (n, d) in &list {
                    if *d {
                        item(&mut s.sec, n);
                    }
                }
            }
            Err(e) => s.keep(fs(e)),
        }
        s.section("Instances");
    }

    if s.get("error_log", true) {
        // The log keeps older commands' entries, and one failed command may
        // log the same error several times: the newest entry, once.
        if let Some((entry, times)) = tracefs::last_log_entry(&s.v) {
            for l in entry.lines() {
                item(&mut s.sec, l);
            }
            if times > 1 {
                let _ = writeln!(s.sec, "  (logged {times} times in a row)");
            }
        }
        s.section("Last error_log entry");
    }
}

/// `  SYSTEM:EVENT` and `tail`: the start of an event's section line.
#[inline(never)]
fn ev(sec: &mut String, e: &events::EventRef, tail: &str) {
    sec.push_str("  ");
    sec.push_str(&e.system);
    sec.push(':');
    sec.push_str(&e.name);
    sec.push_str(tail);
}

/// One indented line of a section.
#[inline(never)]
fn item(sec: &mut String, s: &str) {
    let _ = writeln!(sec, "  {s}");
}

/// One indented `name: value` line of a section.
#[inline(never)]
fn item2(sec: &mut String, name: &str, v: &str) {
    let _ = writeln!(sec, "  {name}: {v}");
}

/// Enabled events as section lines, one system per line when all of it is
/// on (`sched:*`), `all` when everything is. `all` is the catalog in its
/// (sorted) order.
#[inline(never)]
fn collapse(all: &[events::EventRef], set_event: &str, out: &mut String) {
    let mut on = alloc::vec![false; all.len()];
    for l in set_event.lines() {
        if let Some((s, n)) = l.trim_ascii().split_once(':') {
            if let Ok(i) = all.binary_search_by(|e| (e.system.as_str(), e.name.as_str()).cmp(&(s, n))) {
                on[i] = true;
            }
        }
    }
    if !all.is_empty() && on.iter().all(|&x| x) {
        return item(out, "all");
    }
    let mut i = 0;
    while i < all.len() {
        let sys = &all[i].system;
        let n = all[i..].iter().take_while(|e| &e.system == sys).count();
        if n > 1 && on[i..i + n].iter().all(|&x| x) {
            let _ = writeln!(out, "  {sys}:*");
        } else {
            for e in (i..i + n).filter(|&k| on[k]).map(|k| &all[k]) {
                ev(out, e, "\n");
            }
        }
        i += n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_systems() {
        let ev = |s: &str, n: &str| events::EventRef { system: s.into(), name: n.into() };
        let all = [ev("irq", "a"), ev("irq", "b"), ev("sched", "x"), ev("sched", "y"), ev("solo", "z")];
        let c = |s: &str| {
            let mut o = String::new();
            collapse(&all, s, &mut o);
            o
        };
        assert_eq!(c("sched:x\nsched:y\nirq:a\n"), "  irq:a\n  sched:*\n");
        assert_eq!(c("solo:z\n"), "  solo:z\n");
        assert_eq!(c("irq:a\nirq:b\nsched:x\nsched:y\nsolo:z\n"), "  all\n");
        assert!(c("").is_empty());
    }
}
