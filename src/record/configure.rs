//! Applying a [`RecordPlan`] to the recorded tracefs: tracing off, buffer
//! size, clock, function filters, graph depth, trace options, tracer,
//! events with their filters and triggers, and the pid filters. Every
//! write goes through the session's [`Changes`] log, so it is put back.
//!
//! Function tracing may be missing or refused by a kernel (lockdown,
//! CONFIG_FUNCTION_TRACER off): then the step says so on stderr and the
//! recording goes on with events only.
//!
//! [`Changes`]: crate::tracefs::settings::Changes

use super::{bail, command::dec, tf, Error, EventSpec, RecordPlan, Result, Session};
use crate::tracefs::events::{all_events, resolve_in, EventRef};
use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use rustix::io::Errno;

impl Session {
    /// Set a control file of the recorded tracefs, saving the old value.
    /// `soft`: a function-tracing setting, which a kernel may refuse: then
    /// say so, naming `soft`, and go on recording events.
    #[inline(never)]
    fn set(&mut self, file: &str, val: &str, soft: Option<&str>) -> Result<()> {
        match (self.changes.set(&self.rec, file, val), soft) {
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
                _ => bail!("unknown trace option '{name}' (no {})", t.path_of(&f)),
            }
        }
        self.set(&f, if on { "1" } else { "0" }, name.starts_with("func").then_some(f.as_str()))
    }
}

/// Whether a failed write means the kernel refuses function tracing here.
fn is_refused(e: Errno) -> bool {
    e == Errno::PERM || e == Errno::ACCESS || e == Errno::NODEV || e == Errno::OPNOTSUPP
}

/// Function tracing refused by the kernel: say so and go on; any other
/// failure is an error.
#[inline(never)]
fn refused(what: &str, e: crate::tracefs::Error) -> Result<()> {
    if is_refused(e.errno) {
        crate::cli::warn(format_args!("the kernel refused function tracing ({e}); {what} ignored, events still record"));
        Ok(())
    } else {
        Err(tf(e))
    }
}

/// Apply the plan to the recorded tracefs, saving old values.
#[inline(never)]
pub(super) fn configure(s: &mut Session, plan: &RecordPlan) -> Result<()> {
    s.set("tracing_on", "0", None)?;
    if let Some(kb) = plan.buffer_kb {
        s.set("buffer_size_kb", &kb.to_string(), None)?;
    }
    if let Some(c) = &plan.clock {
        s.set("trace_clock", c, None)?;
    }
    let function_lists = [
        ("set_ftrace_filter", &plan.function_filter),
        ("set_ftrace_notrace", &plan.function_notrace),
        ("set_graph_function", &plan.graph_functions),
    ];
    for (file, list) in function_lists {
        if list.is_empty() {
            continue;
        }
        let t = &s.rec;
        let r = s.changes.save_lines(t, file).and_then(|()| t.write(file, b""));
        if let Err(e) = r.and_then(|()| list.iter().try_for_each(|f| t.append(file, f.as_bytes()))) {
            refused(file, e)?;
        }
    }
    if let Some(d) = plan.max_graph_depth {
        s.set("max_graph_depth", &d.to_string(), Some("--max-graph-depth"))?;
    }
    for (name, on) in &plan.options {
        s.option(name, *on)?;
    }
    // Following forks: event-fork, and function-fork with a tracer.
    if plan.follow_forks {
        s.option("event-fork", true)?;
        if plan.tracer.as_deref().is_some_and(|p| p != "nop") {
            s.option("function-fork", true)?;
        }
    }
    let t = &s.rec;
    if let Some(p) = &plan.tracer {
        if let Err(e) = s.changes.set(t, "current_tracer", p) {
            if e.errno == Errno::INVAL {
                bail!("unknown tracer '{p}' (see {})", t.path_of("available_tracers"));
            }
            refused("-p", e)?;
        }
    }
    events(s, &plan.events)
}

/// Events: all of them named before any is touched, then their filters and
/// triggers, then enabling.
#[inline(never)]
fn events(s: &mut Session, specs: &[EventSpec]) -> Result<()> {
    let t = &s.rec;
    if specs.is_empty() {
        return Ok(());
    }
    let all = all_events(t).map_err(Error::new)?;
    let resolve = |e: &EventSpec| resolve_in(&all, &e.spec).map_err(Error::new);
    let mut enabled: Vec<EventRef> = Vec::new();
    for e in specs {
        for ev in &resolve(e)? {
            super::insert_sorted(&mut s.systems, &ev.system);
            if let Err(at) = enabled.binary_search(ev) {
                enabled.insert(at, ev.clone());
            }
        }
    }
    for e in specs {
        let evs = resolve(e)?;
        if let Some(f) = &e.filter {
            // Like a system filter: events without the fields are left
            // unfiltered; only when no event takes it is it an error.
            let mut first_err = None;
            let mut ok = 0;
            for ev in &evs {
                let file = ev.path("filter");
                match s.changes.set(t, &file, f) {
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
                s.changes.add_trigger(t, &ev.path("trigger"), tr).map_err(tf)?;
            }
        }
    }
    s.changes.enable_events(t, &enabled).map_err(Error::new)
}

/// The pid filter files, each with "required" (set_ftrace_pid needs the
/// function tracer, which a kernel may lack).
const PID_FILES: [(&str, bool); 2] = [("set_event_pid", true), ("set_ftrace_pid", false)];

/// The pid filters: with `pids` each is saved and set to them; else each
/// is saved unless `add` (the pids were set, and saved, before) and opened
/// (truncating, or appending with `add`) for the traced command to write
/// its own pid to. The open files, each with "required".
#[inline(never)]
pub(super) fn pid_filters(s: &mut Session, pids: Option<&[u32]>, add: bool) -> Result<Vec<(OwnedFd, bool)>> {
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
        let r = if add { Ok(()) } else { s.changes.save_lines(&s.rec, file) };
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
