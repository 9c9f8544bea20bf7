//! What the verbs share: tracefs errors as the user should see them, and
//! output.

use crate::cli::{self, Error, Result};
use crate::tracefs::{self, events, Tracefs};
use alloc::string::String;
use alloc::vec::Vec;

/// A tracefs error as the user should see it: the file, the errno in words,
/// the kernel's own explanation from error_log, or else a hint when the
/// failure has one likely cause.
pub(crate) fn fs(e: tracefs::Error) -> Error {
    Error::Fail(fs_msg(e))
}

/// The text of `fs`.
pub(crate) fn fs_msg(e: tracefs::Error) -> String {
    let mut msg = alloc::format!("{e}");
    if let Some(h) = e.hint(rustix::process::geteuid().is_root()) {
        msg.push_str("\n  ");
        msg.push_str(h);
    }
    msg
}

pub(crate) fn read(t: &Tracefs, name: &str) -> Result<String> {
    t.read_str(name).map_err(fs)
}

pub(crate) fn write(t: &Tracefs, name: &str, data: &str) -> Result<()> {
    t.write(name, data.as_bytes()).map_err(fs)
}

/// Text to stdout. Verbs gather their output in a String and write it
/// once: no error plumbing per line.
pub(crate) fn say(s: &str) -> Result<()> {
    cli::say(s)
}

/// Print `s` and a newline.
pub(super) fn say_line(s: &str) -> Result<()> {
    let mut o = String::from(s);
    o.push('\n');
    say(&o)
}

/// Append `s` and a newline.
pub(crate) fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

/// The words of `s` joined by single spaces (pid lists).
pub(crate) fn words(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Resolve event specs against the catalog, in catalog order: the catalog
/// and the events named.
pub(super) fn resolve(t: &Tracefs, specs: &[String]) -> Result<(Vec<events::EventRef>, Vec<events::EventRef>)> {
    let all = events::all_events(t).map_err(Error::Fail)?;
    let evs = events::resolve_in(&all, &specs.join(",")).map_err(Error::Fail)?;
    Ok((all, evs))
}

pub(super) fn on_off(v: bool) -> &'static str {
    if v {
        "on"
    } else {
        "off"
    }
}
