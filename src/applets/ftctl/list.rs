//! `list`: what the kernel offers — tracers, events, systems, functions,
//! options, clocks, instances.

use super::{fs, line, read, say, Args, Ctx};
use crate::cli::{Error, Result};
use crate::tracefs::{events, glob, state};
use crate::usage_err;
use alloc::string::String;

pub(super) fn run(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    let what = a.pos[0].as_str();
    let pat = a.pos.get(1).map(String::as_str);
    if pat.is_some() && !matches!(what, "events" | "functions") {
        usage_err!("list {what}: unexpected argument");
    }
    let mut o = String::new();
    match what {
        "events" => {
            let all = events::all_events(t).map_err(Error::Fail)?;
            let evs = match pat {
                Some(p) => events::resolve_in(&all, p).map_err(Error::Fail)?,
                None => all,
            };
            for e in &evs {
                o.push_str(&e.system);
                o.push(':');
                line(&mut o, &e.name);
            }
        }
        "functions" => {
            // Only the top level has the list; it is the same for instances.
            for l in read(&c.top, "available_filter_functions")?.lines() {
                let f = l.split_ascii_whitespace().next().unwrap_or("");
                if pat.is_none_or(|p| glob::matches(p, f)) {
                    line(&mut o, l);
                }
            }
        }
        // Both are lists of names, the current one in brackets.
        "tracers" | "clocks" => {
            let file = if what == "clocks" { "trace_clock" } else { "available_tracers" };
            for x in read(t, file)?.split_ascii_whitespace() {
                line(&mut o, state::unbracket(x));
            }
        }
        "systems" | "instances" => {
            let (tf, dir) = if what == "systems" { (t, "events") } else { (&c.top, "instances") };
            for (n, is_dir) in &tf.list_dir(dir).map_err(fs)? {
                if *is_dir {
                    line(&mut o, n);
                }
            }
        }
        "options" => return super::control::options(c, false),
        _ => usage_err!("list: unknown list '{what}' (tracers, events, systems, functions, options, clocks, instances)"),
    }
    say(&o)
}
