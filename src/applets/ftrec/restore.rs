//! Leave the system as found: every tracefs write ftrec makes goes through
//! [`Saver`], which first reads the old value and records how to put it back.
//! `restore` undoes in reverse order (tracing_on first, the instance last),
//! keeps going past failures and reports them all.

use crate::tracefs::events::{enable_events, EventRef};
use crate::tracefs::{Error, Tracefs};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

enum Undo {
    /// Write the old value back in one write: truncating, or appending
    /// (`!trigger` removes a trigger we added).
    Write(String, Vec<u8>, bool),
    /// Truncate, then append each old line (pid lists, function filters).
    Lines(String, String),
    /// Disable events we enabled that were off.
    Events(Vec<EventRef>),
    /// Remove an instance we created ("instances/NAME").
    Rmdir(String),
}

/// The undo steps, oldest first. Every step but Rmdir applies to the
/// recorded tracefs (which is the top level unless recording an instance).
#[derive(Default)]
pub struct Saver {
    undo: Vec<Undo>,
}

/// A control file's value as it would be written back: trace_clock's
/// selected `[clock]`, buffer_size_kb without "(expanded: ...)", a filter's
/// "none" as the "0" that clears it.
pub fn current_value(file: &str, raw: &str) -> String {
    let s = raw.trim_end();
    if file.ends_with("trace_clock") {
        return super::assemble::clock_name(s);
    }
    if file.ends_with("filter") && s == "none" {
        return String::from("0");
    }
    if file.ends_with("buffer_size_kb") {
        if let Some(at) = crate::util::find_str(s, "(expanded: ", false) {
            return String::from(s[at + 11..].trim_end_matches(')'));
        }
    }
    String::from(s)
}

/// One copy of the error-to-text step the undo paths share.
#[inline(never)]
fn msg(e: Error) -> String {
    format!("{e}")
}

impl Saver {
    /// Set `file` to `val` unless it already holds it; remember the old value.
    pub fn set(&mut self, t: &Tracefs, file: &str, val: &str) -> Result<(), Error> {
        let old = t.read_str(file)?;
        let old_v = current_value(file, &old);
        if old_v == val.trim_end() {
            return Ok(());
        }
        // Undo first: a refused write may still have changed the file (a
        // filter keeps the error text).
        self.undo.push(Undo::Write(String::from(file), old_v.into_bytes(), false));
        t.write(file, val.as_bytes())
    }

    /// Remember a list file (pids, function filters) before changing it.
    pub fn save_lines(&mut self, t: &Tracefs, file: &str) -> Result<(), Error> {
        let old = t.read_str(file)?;
        let mut lines = String::new();
        for l in old.lines().map(str::trim) {
            if !l.is_empty() && !l.starts_with('#') && l != "no pid" {
                lines.push_str(l);
                lines.push('\n');
            }
        }
        self.undo.push(Undo::Lines(String::from(file), lines));
        Ok(())
    }

    /// Add a trigger; appending `!TRIGGER` undoes it.
    pub fn add_trigger(&mut self, t: &Tracefs, file: &str, val: &str) -> Result<(), Error> {
        t.append(file, val.as_bytes())?;
        self.undo.push(Undo::Write(String::from(file), [b"!", val.as_bytes()].concat(), true));
        Ok(())
    }

    /// Enable events; remember those that were off.
    pub fn enable(&mut self, t: &Tracefs, evs: &[EventRef]) -> Result<(), String> {
        let on = t.read_str("set_event").map_err(msg)?;
        let mut off = Vec::new();
        for e in evs {
            if !on.lines().any(|l| l.split_once(':') == Some((e.system.as_str(), e.name.as_str()))) {
                off.push(e.clone());
            }
        }
        // Record first: a failure halfway through still disables what got on.
        self.undo.push(Undo::Events(off.clone()));
        enable_events(t, &off, true)
    }

    /// `rel`: "instances/NAME".
    pub fn created_instance(&mut self, rel: &str) {
        self.undo.push(Undo::Rmdir(String::from(rel)));
    }

    /// Undo everything, newest first, in `t` (the recorded tracefs; an
    /// instance is removed from `top`). Returns the failures, one per line.
    pub fn restore(&mut self, top: &Tracefs, t: &Tracefs) -> Vec<String> {
        let mut errs = Vec::new();
        while let Some(u) = self.undo.pop() {
            let r: Result<(), String> = match &u {
                Undo::Write(f, v, append) => t.write_with(f, v, *append).map_err(msg),
                Undo::Lines(f, lines) => t.write(f, b"").map_err(msg).and_then(|()| {
                    lines.lines().try_for_each(|l| t.append(f, l.as_bytes()).map_err(msg))
                }),
                Undo::Events(evs) => enable_events(t, evs, false),
                Undo::Rmdir(p) => {
                    // Readers are closed by now, but a just-closed file may
                    // still hold a reference for a moment: retry briefly.
                    let mut r = Ok(());
                    for _ in 0..50 {
                        r = top.rmdir(p);
                        if r != Err(rustix::io::Errno::BUSY) {
                            break;
                        }
                        crate::sys::sleep_ms(20);
                    }
                    r.map_err(|e| super::errmsg(&top.path_of(p), e))
                }
            };
            if let Err(e) = r {
                errs.push(e);
            }
        }
        errs
    }
}
