//! The top level's own verbs: `instance add|rm`, `mount`.

use super::{name_at, say_line, Args, Ctx};
use crate::cli::Result;
use crate::{fail, sys, usage_err};
use alloc::format;
use rustix::io::Errno;

/// Before tracefs is opened: instances are made at the top level, and
/// the name must not walk out of it.
pub(super) fn check(a: &Args) -> Result<()> {
    if a.instance.is_some() {
        usage_err!("instance: -B does not apply (instances do not nest)");
    }
    name_at(a, 1, "instance")
}

pub(super) fn instance(c: &Ctx, a: &Args) -> Result<()> {
    // The name was checked before tracefs was opened.
    let (x, name) = (a.pos[0].as_str(), a.pos[1].as_str());
    let rel = format!("instances/{name}");
    let make = match x {
        "add" => true,
        "rm" => false,
        _ => usage_err!("instance: '{x}' is not add or rm"),
    };
    let r = if make { c.top.mkdir(&rel) } else { c.top.rmdir(&rel) };
    let Err(errno) = r else { return Ok(()) };
    let why = match errno {
        Errno::EXIST => "it already exists",
        Errno::NOENT => "no such instance",
        Errno::BUSY => "it is in use (a reader has a file of it open)",
        e => fail!("instance {x} '{name}': {}", sys::Msg(e)),
    };
    fail!("instance {x} '{name}': {why}")
}

pub(super) fn mount(c: &Ctx, _: &Args) -> Result<()> {
    say_line(&c.top.mount)
}
