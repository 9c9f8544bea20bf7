//! The settings transaction: a command that changes tracefs (ftrec) makes
//! every change through [`Changes`], which reads the old value first and
//! records how to put it back. [`Changes::restore`] undoes the changes
//! newest first (so tracing_on, set first, goes back last, and an instance
//! created first is removed after everything in it is restored), keeps
//! going past failures and reports them all. The caller restores on every
//! way out: the normal end, an error, SIGINT/SIGTERM.

use crate::tracefs::events::{enable_events, EventRef};
use crate::tracefs::{Error, Tracefs};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// How to undo one change.
enum Undo {
    /// Write `value` back to `file` in one write: truncating, or appending
    /// (`!TRIGGER` removes a trigger we added).
    Write { file: String, value: Vec<u8>, append: bool },
    /// Truncate `file`, then append each old line (pid lists, function filters).
    Lines { file: String, lines: String },
    /// Disable events we enabled that were off.
    Events(Vec<EventRef>),
    /// Remove an instance we created ("instances/NAME").
    Rmdir(String),
}

/// The changes made so far, oldest first. Every change but an instance's
/// creation applies to one tracefs directory (the top level, or the
/// instance being recorded); instances are created and removed in the top
/// level.
#[derive(Default)]
pub struct Changes {
    undo: Vec<Undo>,
}

/// A control file's value as it would be written back: trace_clock's
/// selected `[clock]`, buffer_size_kb without "(expanded: ...)", a filter's
/// "none" as the "0" that clears it.
pub fn current_value(file: &str, raw: &str) -> String {
    let s = raw.trim_ascii_end();
    if file.ends_with("trace_clock") {
        return super::state::clock_name(s);
    }
    if file.ends_with("filter") && s == "none" {
        return String::from("0");
    }
    if file.ends_with("buffer_size_kb") {
        if let Some((_, size)) = crate::util::split_str(s, "(expanded: ", false) {
            return String::from(size.trim_end_matches(')'));
        }
    }
    String::from(s)
}

/// The error's text, as the undo steps report it.
#[inline(never)]
fn msg(e: Error) -> String {
    format!("{e}")
}

impl Changes {
    /// Set `file` to `val` unless it already holds it; remember the old value.
    pub fn set(&mut self, t: &Tracefs, file: &str, val: &str) -> Result<(), Error> {
        let old = current_value(file, &t.read_str(file)?);
        if old == val.trim_ascii_end() {
            return Ok(());
        }
        // Remembered before writing: a refused write may still have changed
        // the file (a filter keeps the error text).
        self.undo.push(Undo::Write { file: String::from(file), value: old.into_bytes(), append: false });
        t.write(file, val.as_bytes())
    }

    /// Remember the lines of a list file (pids, function filters) before
    /// the caller changes it.
    pub fn save_lines(&mut self, t: &Tracefs, file: &str) -> Result<(), Error> {
        let old = t.read_str(file)?;
        let mut lines = String::new();
        for l in old.lines().map(str::trim) {
            if !l.is_empty() && !l.starts_with('#') && l != "no pid" {
                lines.push_str(l);
                lines.push('\n');
            }
        }
        self.undo.push(Undo::Lines { file: String::from(file), lines });
        Ok(())
    }

    /// Add a trigger to an event's `trigger` file; appending `!TRIGGER` undoes it.
    pub fn add_trigger(&mut self, t: &Tracefs, file: &str, val: &str) -> Result<(), Error> {
        t.append(file, val.as_bytes())?;
        self.undo.push(Undo::Write { file: String::from(file), value: [b"!", val.as_bytes()].concat(), append: true });
        Ok(())
    }

    /// Enable events; remember those that were off.
    pub fn enable_events(&mut self, t: &Tracefs, evs: &[EventRef]) -> Result<(), String> {
        let on = t.read_str("set_event").map_err(msg)?;
        let mut off = Vec::new();
        for e in evs {
            if !on.lines().any(|l| l.split_once(':') == Some((e.system.as_str(), e.name.as_str()))) {
                off.push(e.clone());
            }
        }
        // Remembered first: a failure halfway through still disables what got on.
        self.undo.push(Undo::Events(off.clone()));
        enable_events(t, &off, true)
    }

    /// The caller created the instance `rel` ("instances/NAME") in the top level.
    pub fn created_instance(&mut self, rel: &str) {
        self.undo.push(Undo::Rmdir(String::from(rel)));
    }

    /// Undo everything, newest first, in `t` (an instance is removed from
    /// `top`). Returns the failures, one message each; the log is empty
    /// afterwards, so a second call does nothing.
    pub fn restore(&mut self, top: &Tracefs, t: &Tracefs) -> Vec<String> {
        let mut errs = Vec::new();
        while let Some(u) = self.undo.pop() {
            let r: Result<(), String> = match &u {
                Undo::Write { file, value, append } => t.write_with(file, value, *append).map_err(msg),
                Undo::Lines { file, lines } => t.write(file, b"").map_err(msg).and_then(|()| {
                    lines.lines().try_for_each(|l| t.append(file, l.as_bytes()).map_err(msg))
                }),
                Undo::Events(evs) => enable_events(t, evs, false),
                Undo::Rmdir(p) => {
                    // The recording's files are closed by now, but one just
                    // closed may still hold a reference for a moment: retry
                    // briefly.
                    let mut r = Ok(());
                    for _ in 0..50 {
                        r = top.rmdir(p);
                        if r != Err(rustix::io::Errno::BUSY) {
                            break;
                        }
                        crate::sys::sleep_ms(20);
                    }
                    r.map_err(|e| format!("{}: {}", top.path_of(p), crate::sys::Msg(e)))
                }
            };
            if let Err(e) = r {
                errs.push(e);
            }
        }
        errs
    }
}

#[cfg(test)]
mod tests {
    use super::current_value;

    #[test]
    fn saved_values_as_written_back() {
        assert_eq!(current_value("trace_clock", "[local] global counter\n"), "local");
        assert_eq!(current_value("trace_clock", "local [global] counter\n"), "global");
        assert_eq!(current_value("buffer_size_kb", "7 (expanded: 1408)\n"), "1408");
        assert_eq!(current_value("events/sched/sched_switch/filter", "none\n"), "0");
        assert_eq!(current_value("tracing_on", "1\n"), "1");
    }
}
