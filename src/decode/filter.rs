//! ftcat's own record filters: `--cpu`, `--pid`, `--comm`, `-e`, `-I`/`-S`,
//! `--from`/`--to`. (`-F` is [`super::event_filter`], `--graph` and
//! `--max-depth` [`super::graph_filter`].)

use alloc::string::String;
use alloc::vec::Vec;

use super::{DecodeOptions, Recording};
use crate::ftrace::{TRACE_FLAG_HARDIRQ, TRACE_FLAG_SOFTIRQ};
use crate::glob;
use crate::text::Rec;

/// `0,2-3` as [(0,0), (2,3)]: inclusive ranges.
pub type List = Vec<(u32, u32)>;

pub fn in_list(l: &[(u32, u32)], x: u32) -> bool {
    l.iter().any(|&(a, b)| a <= x && x <= b)
}

/// What a record's context and type say about showing it.
#[derive(PartialEq, Eq)]
pub enum Pass {
    Show,
    Drop,
    /// Past `--to`: this and every later record (the merge is in time order).
    Stop,
}

/// The filters of [`DecodeOptions`] that look at one record at a time.
/// Does the `-e` pattern `g` select `e`, by its name, its `system:name`
/// or its system alone (`-e sched`, as ftrec and ftctl read it)?
pub fn selects(g: &str, e: &crate::format::Event) -> bool {
    if glob::matches(g, &e.name) || glob::matches(g, &e.system) {
        return true;
    }
    let mut full = String::with_capacity(e.system.len() + 1 + e.name.len());
    full.push_str(&e.system);
    full.push(':');
    full.push_str(&e.name);
    glob::matches(g, &full)
}

pub struct Select<'o> {
    o: &'o DecodeOptions,
    /// `-e`: the ids of the events selected (sorted, as the recording
    /// keeps its events); None: all.
    allowed: Option<Vec<u16>>,
    /// None of these filters is set: every record shows, and the check
    /// per record is one test, not a dozen. (A speed-up the board build
    /// leaves out.)
    #[cfg(feature = "fast-print")]
    all: bool,
}

impl<'o> Select<'o> {
    #[inline(never)]
    pub fn new(o: &'o DecodeOptions, rec: &Recording) -> Self {
        let allowed = if o.events.is_empty() {
            None
        } else {
            Some(rec.events().iter().filter(|e| o.events.iter().any(|g| selects(g, e))).map(|e| e.id).collect())
        };
        Select {
            #[cfg(feature = "fast-print")]
            all: allowed.is_none() && o.from.is_none() && o.to.is_none() && o.cpus.is_none() && !o.no_hardirq && !o.no_softirq && o.pids.is_none() && o.comms.is_empty(),
            o,
            allowed,
        }
    }

    /// Does `--cpu` show this CPU (lost-event notices follow it too)?
    #[inline]
    pub fn cpu(&self, cpu: u32) -> bool {
        self.o.cpus.as_ref().map_or(true, |c| in_list(c, cpu))
    }

    /// Every filter of this module, in the order ftcat always applied them.
    #[inline]
    pub fn check(&self, rec: &Recording, r: &Rec) -> Pass {
        #[cfg(feature = "fast-print")]
        if self.all {
            return Pass::Show;
        }
        let o = self.o;
        let d = r.data;
        if o.from.is_some_and(|f| r.ts < f) {
            return Pass::Drop;
        }
        if o.to.is_some_and(|t| r.ts > t) {
            return Pass::Stop;
        }
        if !self.cpu(r.cpu) {
            return Pass::Drop;
        }
        let flags = d.get(2).copied().unwrap_or(0);
        if (o.no_hardirq && flags & TRACE_FLAG_HARDIRQ != 0) || (o.no_softirq && flags & TRACE_FLAG_SOFTIRQ != 0) {
            return Pass::Drop;
        }
        let pid = rec.pid(d);
        if let Some(p) = &o.pids {
            if pid < 0 || !in_list(p, pid as u32) {
                return Pass::Drop;
            }
        }
        if !o.comms.is_empty() {
            let c = rec.cmd.comm(pid);
            if !o.comms.iter().any(|g| glob::matches(g, c)) {
                return Pass::Drop;
            }
        }
        if let Some(al) = &self.allowed {
            if al.binary_search(&rec.record_type(d)).is_err() {
                return Pass::Drop;
            }
        }
        Pass::Show
    }
}
