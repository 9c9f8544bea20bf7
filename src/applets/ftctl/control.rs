//! Single settings: `on`, `off`, `tracer`, `buffer`, `subbuf`, `clock`,
//! `option`.

use super::{kb, on_off, read, say, say_line, write, Args, Ctx};
use crate::cli::Result;
use crate::tracefs::{state, Tracefs};
use crate::{fail, usage_err};
use alloc::format;
use alloc::string::{String, ToString};
use core::fmt::Write;

pub(super) fn on(c: &Ctx, _: &Args) -> Result<()> {
    write(c.t(), "tracing_on", "1")
}

pub(super) fn off(c: &Ctx, _: &Args) -> Result<()> {
    write(c.t(), "tracing_on", "0")
}

pub(super) fn tracer(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    match a.pos.first() {
        None => say(&read(t, "current_tracer")?),
        Some(n) => pick(t, "tracer", n, &read(t, "available_tracers")?, "current_tracer"),
    }
}

pub(super) fn clock(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let list = read(t, "trace_clock")?;
    match a.pos.first() {
        None => say_line(state::current_clock(&list)),
        Some(n) => pick(t, "clock", n, &list, "trace_clock"),
    }
}

/// Set `file` to `n` when `n` is among the names of `list` (a kernel
/// listing such as available_tracers or trace_clock); else name them all.
fn pick(t: &Tracefs, what: &str, n: &str, list: &str, file: &str) -> Result<()> {
    let names = state::names(list);
    if !state::listed(&names, n) {
        fail!("unknown {what} '{n}' (available: {names})");
    }
    write(t, file, n)
}

pub(super) fn buffer(c: &Ctx, a: &Args) -> Result<()> {
    show_or_set_kb(c.t(), "buffer_size_kb", a)
}

pub(super) fn subbuf(c: &Ctx, a: &Args) -> Result<()> {
    show_or_set_kb(c.t(), "buffer_subbuf_size_kb", a)
}

fn show_or_set_kb(t: &Tracefs, file: &str, a: &Args) -> Result<()> {
    match a.pos.first() {
        Some(v) => write(t, file, &kb(v)?.to_string()),
        None => say(&read(t, file)?),
    }
}

/// Every option and its value; `changed` marks those that differ from
/// the defaults (`option`, where `list options` does not).
pub(super) fn options(c: &Ctx, changed: bool) -> Result<()> {
    let mut o = String::new();
    for (n, on) in &state::options(c.t()).map_err(super::fs)? {
        let mark = if changed && *on != state::option_default(n, c.inst.is_some()) { "  (changed)" } else { "" };
        let _ = writeln!(o, "{n} {}{mark}", on_off(*on));
    }
    say(&o)
}

pub(super) fn option(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    // The name was checked before tracefs was opened.
    let Some(name) = a.pos.first() else {
        return options(c, true);
    };
    let f = format!("options/{name}");
    if !t.exists(&f) {
        fail!("unknown option '{name}' (see 'ftctl list options')");
    }
    let v = match a.pos.get(1).map(String::as_str) {
        None => return say_line(on_off(read(t, &f)?.trim_ascii() == "1")),
        Some("on" | "1") => "1",
        Some("off" | "0") => "0",
        Some(v) => usage_err!("option: '{v}' is not on or off"),
    };
    write(t, &f, v)
}
