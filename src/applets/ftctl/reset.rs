//! `ftctl reset`: put one tracefs directory back to boot defaults, as
//! `trace-cmd reset` does. Every step is tried even when an earlier one
//! fails; function-tracing files the kernel refuses (EPERM) or lacks are
//! skipped, since there is nothing to undo in them.

use super::{fs_msg, Args, Ctx};
use crate::cli::{Error, Result};
use crate::tracefs::{events, state, Tracefs};
use rustix::io::Errno;
use alloc::format;
use alloc::string::{String, ToString};

pub(super) fn run(c: &Ctx, a: &Args) -> Result<()> {
    let all = a.remove_instances;
    if all && c.inst.is_some() {
        crate::usage_err!("reset: -a removes every instance; it does not go with -B");
    }
    let mut errs = String::new();
    reset(c.t(), c.inst.is_some(), a.buffer_kb, &mut errs);
    if all {
        match c.top.list_dir("instances") {
            Ok(list) => {
                for (name, d) in &list {
                    if !d {
                        continue;
                    }
                    let rel = format!("instances/{name}");
                    if let Err(e) = c.top.rmdir(&rel) {
                        add(&mut errs, &format!("removing instance '{name}': {}", crate::sys::Msg(e)));
                    }
                }
            }
            Err(e) => add(&mut errs, &fs_msg(e)),
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    Err(Error::Fail(errs))
}

/// Add a failure to the report. The last one is the command's error; the
/// ones before it are remarks on lines of their own, prefixed as the
/// error is.
fn add(errs: &mut String, m: &str) {
    if !errs.is_empty() {
        errs.push('\n');
        errs.push_str(crate::cli::applet());
        errs.push_str(": ");
    }
    errs.push_str(m);
}

/// Reset one directory, collecting failures in `errs`.
#[inline(never)]
pub(crate) fn reset(t: &Tracefs, instance: bool, buf_kb: Option<u64>, errs: &mut String) {
    // Stop first so nothing is recorded half-way through.
    set(errs, t, "tracing_on", "0", false);
    set(errs, t, "current_tracer", "nop", false);
    set(errs, t, "events/enable", "0", false);
    match events::all_events(t) {
        Ok(all) => {
            // "0" in a system's filter drops the filters of all its events.
            let mut last = "";
            for e in &all {
                if e.system != last {
                    last = &e.system;
                    set(errs, t, &format!("events/{last}/filter"), "0", true);
                }
                // clear_triggers reads the file first and writes only when
                // there is a trigger; events without a trigger file are
                // skipped like other files the kernel lacks.
                optional(errs, state::clear_triggers(t, &e.path("trigger")));
            }
        }
        Err(e) => add(errs, &e),
    }
    set_all(errs, t, PLAIN);
    match state::cpumask(t) {
        // "0": no CPU directories, nothing to select.
        Ok(mask) if mask != "0" => {
            if !t.read_str("tracing_cpumask").is_ok_and(|m| state::same_cpumask(&m, &mask)) {
                set(errs, t, "tracing_cpumask", &mask, false);
            }
        }
        Ok(_) => {}
        Err(e) => step(errs, Err(e)),
    }
    match state::options(t) {
        Ok(opts) => {
            for (name, on) in &opts {
                let def = state::option_default(name, instance);
                if *on != def {
                    set(errs, t, &format!("options/{name}"), if def { "1" } else { "0" }, name.starts_with("func"));
                }
            }
        }
        Err(e) => step(errs, Err(e)),
    }
    if let Some(kb) = buf_kb {
        set(errs, t, "buffer_size_kb", &kb.to_string(), false);
    }
    if t.exists("snapshot") {
        set(errs, t, "snapshot", "0", false);
    }
    // Opening `trace` for writing with O_TRUNC empties every CPU's buffer.
    set(errs, t, "trace", "", false);
    // An old error would otherwise show in every later status.
    set(errs, t, "error_log", "", true);
    set(errs, t, "tracing_on", "1", false);
}

/// Files set to a fixed value, in order, after the events; `true` marks
/// the function tracing files, absent or refused on many kernels.
const PLAIN: &[(&str, &str, bool)] = &[
    ("set_event_pid", "", false),
    ("set_event_notrace_pid", "", false),
    ("set_ftrace_pid", "", true),
    ("set_ftrace_notrace_pid", "", true),
    ("set_ftrace_filter", "", true),
    ("set_ftrace_notrace", "", true),
    ("set_graph_function", "", true),
    ("set_graph_notrace", "", true),
    ("max_graph_depth", "0", true),
    ("trace_clock", "local", false),
];

fn set_all(errs: &mut String, t: &Tracefs, table: &[(&str, &str, bool)]) {
    for &(f, v, opt) in table {
        set(errs, t, f, v, opt);
    }
}

/// Write one file; `opt`: the kernel may not have or permit it.
#[inline(never)]
fn set(errs: &mut String, t: &Tracefs, f: &str, v: &str, opt: bool) {
    let r = t.write(f, v.as_bytes());
    if opt {
        optional(errs, r);
    } else {
        step(errs, r);
    }
}

#[inline(never)]
fn step(errs: &mut String, r: crate::tracefs::Result<()>) {
    if let Err(e) = r {
        add(errs, &fs_msg(e));
    }
}

/// A step the kernel may not support or permit.
#[inline(never)]
fn optional(errs: &mut String, r: crate::tracefs::Result<()>) {
    match r {
        Err(e) if e.errno == Errno::PERM || e.errno == Errno::NOENT => {}
        r => step(errs, r),
    }
}
