//! Event verbs: `format`, `enable`, `disable`, `filter`, `trigger`.

use super::{fs_msg, join_args, read, resolve, say, write, Args, Ctx};
use crate::cli::{Error, Result};
use crate::tracefs::{self, events, state, Tracefs};
use crate::usage_err;
use alloc::string::String;
use rustix::io::Errno;

pub(super) fn format(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let mut o = String::new();
    for e in &resolve(t, &a.pos)?.1 {
        o.push_str(&read(t, &e.path("format"))?);
    }
    say(&o)
}

pub(super) fn enable(c: &Ctx, a: &Args) -> Result<()> {
    set_enabled(c, a, true)
}

pub(super) fn disable(c: &Ctx, a: &Args) -> Result<()> {
    set_enabled(c, a, false)
}

fn set_enabled(c: &Ctx, a: &Args, on: bool) -> Result<()> {
    let (all, evs) = resolve(c.t(), &a.pos)?;
    events::enable_in(c.t(), &all, &evs, on).map_err(Error::Fail)
}

pub(super) fn filter(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let expr = join_args(&a.pos[1..], ' ');
    if a.clear != expr.is_empty() {
        usage_err!("filter: give either an expression or --clear");
    }
    // "0" is the kernel's way to drop a filter.
    let data = if a.clear { "0" } else { expr.as_str() };
    for e in &resolve(t, &a.pos[..1])?.1 {
        write(t, &e.path("filter"), data)?;
    }
    Ok(())
}

pub(super) fn trigger(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let trig = join_args(&a.pos[1..], ' ');
    if a.clear as u8 + a.remove.is_some() as u8 + !trig.is_empty() as u8 != 1 {
        usage_err!("trigger: give one of TRIGGER, --remove TRIGGER or --clear");
    }
    // What to append to each event's file: the trigger, or its removal.
    let cmd = match &a.remove {
        Some(r) => state::trigger_removal(r.strip_prefix('!').unwrap_or(r)),
        None => trig,
    };
    for e in &resolve(t, &a.pos[..1])?.1 {
        let f = e.path("trigger");
        let r = if a.clear { state::clear_triggers(t, &f) } else { t.append(&f, cmd.as_bytes()) };
        if let Err(err) = r {
            return Err(trigger_err(t, &f, err));
        }
    }
    Ok(())
}

/// A refused trigger write. The kernel logs nothing for an unknown trigger
/// command; the trigger file's header lists the ones it knows.
fn trigger_err(t: &Tracefs, f: &str, err: tracefs::Error) -> Error {
    let silent = err.errno == Errno::INVAL && err.log.is_none();
    let mut m = fs_msg(err);
    if silent {
        if let Ok(h) = t.read_str(f) {
            if let Some(k) = h.lines().nth(1).and_then(|l| l.strip_prefix("# ")) {
                m.push_str("\n  triggers this kernel knows: ");
                m.push_str(k);
            }
        }
    }
    Error::Fail(m)
}
