//! Profiles: where the time went in one recording (`ftcat --profile`), and
//! what changed between recordings (`ftcat --compare`). No I/O here: a
//! [`Profile`] is one more [`Output`] the pump drives through ftcat's own
//! filters (`--pid`, `-e`, `--cpu`, `--from`/`--to`, `--max-depth`/
//! `--graph`, ...); its [`Report`] prints as tables ([`table`]), as JSON
//! lines, or becomes the metrics a comparison ([`compare`]) sets side by
//! side.
//!
//! Each part watches the events it needs and adds its tables only when the
//! recording has them:
//! - [`functions`]: function_graph calls (total, self, average, max time),
//!   or the function tracer's hits per function and per caller→callee;
//! - [`syscalls`]: `raw_syscalls` or `syscalls:*` enter→exit pairs of a task;
//! - [`sched`]: per task run and wait time, switches, migrations; per CPU
//!   busy and idle time;
//! - [`irq`]: hardirq handlers and softirq vectors;
//! - [`events`]: count and rate per event.

pub mod compare;
pub mod events;
pub mod functions;
pub mod hist;
pub mod irq;
pub mod keys;
pub mod sched;
pub mod syscalls;
pub mod table;
#[cfg(test)]
mod tests;

use alloc::boxed::Box;
use alloc::vec::Vec;
use core::fmt;

use crate::cursor::Endian;
use crate::decode::{self, DecodeOptions, Host, Output, Recording, Stats};
use crate::format::{Event, Field};
use crate::merge::Merge;
use crate::text::Rec;
pub use table::{Report, Table, Unit};

/// What `--profile` asks for besides the filters.
#[derive(Clone, Copy, Default, Debug)]
pub struct ProfileOptions {
    /// `--hist`: the log2 latency distribution of each syscall and function.
    pub hist: bool,
    /// Syscalls per task too (ftcat asks for it with `--pid`).
    pub per_task: bool,
}

/// One record as the parts see it.
pub struct Ev<'a> {
    pub cpu: u32,
    pub ts: u64,
    pub data: &'a [u8],
    pub pid: i32,
    /// The record's `common_type`.
    pub ty: u16,
}

/// What every part may ask while it counts and when it makes its tables.
pub struct Cx<'r> {
    pub rec: &'r Recording,
    pub endian: Endian,
    pub opts: ProfileOptions,
    /// The first and last timestamp shown (0, 0 when nothing was).
    pub first: u64,
    pub last: u64,
}

/// One part of a profile: it sees every record shown, then adds its tables.
pub trait Part {
    fn record(&mut self, ev: &Ev, cx: &Cx);
    fn finish(&mut self, cx: &Cx, report: &mut Report);
}

/// A field of one event, looked up by name once; reads as 0 (or empty)
/// when the event has no such field or the record is too short.
#[derive(Clone, Default)]
pub struct Fld(Option<Field>);

impl Fld {
    pub fn of(e: &Event, name: &str) -> Fld {
        Fld(e.field(name).cloned())
    }
    /// Present in the format?
    pub fn is_some(&self) -> bool {
        self.0.is_some()
    }
    /// The value, sign-extended when the field is signed.
    pub fn int(&self, d: &[u8], e: Endian) -> u64 {
        self.0.as_ref().and_then(|f| f.int(d, e)).unwrap_or(0)
    }
    /// A string field's bytes, up to its first NUL.
    pub fn text<'a>(&self, d: &'a [u8], e: Endian) -> &'a [u8] {
        let b = self.0.as_ref().and_then(|f| f.data(d, e)).unwrap_or(&[]);
        &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
    }
}

/// The event `system:name` of a recording.
pub fn find<'e>(events: &'e [Event], system: &str, name: &str) -> Option<&'e Event> {
    events.iter().find(|e| e.system == system && e.name == name)
}

/// A table indexed by record type: the parts look a record's kind up in
/// it (a recording with `syscalls:*` has some 700 types to tell apart).
pub struct ByType<T>(Vec<Option<T>>);

impl<T: Clone> ByType<T> {
    pub fn new() -> Self {
        ByType(Vec::new())
    }
    pub fn set(&mut self, ty: u16, v: T) {
        let i = ty as usize;
        if self.0.len() <= i {
            self.0.resize(i + 1, None);
        }
        self.0[i] = Some(v);
    }
    pub fn get(&self, ty: u16) -> Option<&T> {
        self.0.get(ty as usize)?.as_ref()
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|v| v.is_none())
    }
}

impl<T: Clone> Default for ByType<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The profile as an [`Output`]: each record shown goes to every part.
pub struct Profile<'r> {
    cx: Cx<'r>,
    parts: Vec<Box<dyn Part + 'r>>,
    report: Report,
}

impl<'r> Profile<'r> {
    /// The parts `rec` has events for.
    pub fn new(rec: &'r Recording, opts: ProfileOptions) -> Self {
        let ev = rec.events();
        let mut parts: Vec<Box<dyn Part + 'r>> = Vec::new();
        if let Some(p) = functions::Functions::new(ev) {
            parts.push(Box::new(p));
        }
        if let Some(p) = syscalls::Syscalls::new(ev) {
            parts.push(Box::new(p));
        }
        if let Some(p) = sched::Sched::new(ev) {
            parts.push(Box::new(p));
        }
        if let Some(p) = irq::Irq::new(ev) {
            parts.push(Box::new(p));
        }
        parts.push(Box::new(events::Events::default()));
        let cx = Cx { rec, endian: rec.dec.endian, opts, first: 0, last: 0 };
        Profile { cx, parts, report: Report::default() }
    }

    pub fn into_report(self) -> Report {
        self.report
    }
}

impl Output for Profile<'_> {
    fn record(&mut self, _buffer: usize, r: &Rec, _next: Option<&Rec>) -> bool {
        let rec = self.cx.rec;
        let ev = Ev { cpu: r.cpu, ts: r.ts, data: r.data, pid: rec.pid(r.data), ty: rec.record_type(r.data) };
        for p in &mut self.parts {
            p.record(&ev, &self.cx);
        }
        // Never folded: a graph exit comes as a record of its own.
        false
    }
    fn lost(&mut self, _cpu: u32, count: Option<u64>, shown: bool) {
        if shown {
            match count {
                Some(n) => self.report.lost = self.report.lost.saturating_add(n),
                None => self.report.lost_unknown += 1,
            }
        }
    }
    fn finish(&mut self, s: &Stats) -> fmt::Result {
        self.cx.first = s.first.unwrap_or(0);
        self.cx.last = s.last;
        self.report.span = s.last.saturating_sub(self.cx.first);
        self.report.records = s.records;
        for p in &mut self.parts {
            p.finish(&self.cx, &mut self.report);
        }
        Ok(())
    }
}

/// Profile `rec`'s merged records through the filters of `opts`.
pub fn profile(rec: &mut Recording, merge: &mut Merge<'_>, opts: &DecodeOptions, popts: ProfileOptions, host: &mut dyn Host) -> Result<Report, decode::Error> {
    let rec = &*rec;
    let mut p = Profile::new(rec, popts);
    decode::drive(rec, merge, opts, false, &mut p, host)?;
    Ok(p.into_report())
}
