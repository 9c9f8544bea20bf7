//! What the verbs share: tracefs errors as the user should see them, and
//! output.

use crate::cli::{self, Error, Result};
use crate::tracefs::{self, events, Tracefs};
use alloc::string::String;
use alloc::vec::Vec;

/// A tracefs error as the user should see it: the file, the errno in words,
/// the kernel's own explanation from error_log, or else a hint when the
/// failure has one likely cause.
#[inline(never)]
pub(crate) fn fs(e: tracefs::Error) -> Error {
    Error::Fail(fs_msg(e))
}

/// The text of `fs`.
#[inline(never)]
pub(crate) fn fs_msg(e: tracefs::Error) -> String {
    e.explained()
}

#[inline(never)]
pub(crate) fn read(t: &Tracefs, name: &str) -> Result<String> {
    t.read_str(name).map_err(fs)
}

#[inline(never)]
pub(crate) fn write(t: &Tracefs, name: &str, data: &str) -> Result<()> {
    t.write(name, data.as_bytes()).map_err(fs)
}

/// Text to stdout. Verbs gather their output in a String and write it
/// once: no error plumbing per line.
pub(crate) fn say(s: &str) -> Result<()> {
    cli::say(s)
}

/// Print `s` and a newline.
#[inline(never)]
pub(super) fn say_line(s: &str) -> Result<()> {
    let mut o = String::from(s);
    o.push('\n');
    say(&o)
}

/// Append `s` and a newline.
#[inline(never)]
pub(crate) fn line(o: &mut String, s: &str) {
    o.push_str(s);
    o.push('\n');
}

/// The words of `s` joined by single spaces (pid lists).
#[inline(never)]
pub(crate) fn words(s: &str) -> String {
    join(s.split_ascii_whitespace(), ' ')
}

/// The arguments `v` joined by `sep` (one loop for every verb that takes
/// an expression, a trigger or a list).
#[inline(never)]
pub(crate) fn join_args(v: &[String], sep: char) -> String {
    join(v.iter().map(String::as_str), sep)
}

fn join<'a>(words: impl Iterator<Item = &'a str>, sep: char) -> String {
    let mut o = String::new();
    for w in words {
        if !o.is_empty() {
            o.push(sep);
        }
        o.push_str(w);
    }
    o
}

/// Resolve event specs against the catalog, in catalog order: the catalog
/// and the events named.
#[inline(never)]
pub(super) fn resolve(t: &Tracefs, specs: &[String]) -> Result<(Vec<events::EventRef>, Vec<events::EventRef>)> {
    let all = events::all_events(t).map_err(Error::Fail)?;
    let evs = events::resolve_in(&all, &join_args(specs, ',')).map_err(Error::Fail)?;
    Ok((all, evs))
}

pub(super) fn on_off(v: bool) -> &'static str {
    if v {
        "on"
    } else {
        "off"
    }
}
