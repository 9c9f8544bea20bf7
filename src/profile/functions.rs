//! Functions: function_graph's calls (per function: calls, total time,
//! self time, average, max), or the function tracer's hits per function
//! and per caller→callee.
//!
//! A graph exit carries its call's entry and return times (`calltime`,
//! `rettime`), so a call's duration needs no pairing; its self time is
//! that less the durations of the calls one level deeper that returned
//! inside it, kept per task and depth (a task may sleep in a call while
//! others run on its CPU). Calls are counted at their entries: a call
//! whose exit was not recorded (the recording stopped inside it) is a
//! call, as the text shows it, without a duration.

use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::hist::Hist;
use super::table::{ratio, Col, Report, Table, Unit};
use super::{ByType, Cx, Ev, Part};
use crate::format::{Event, FieldAt};
use crate::ftrace::Record;

/// Deeper than this a depth is taken for a damaged record.
const MAX_DEPTH: u64 = 1024;

#[derive(Default)]
struct Stat {
    calls: u64,
    /// Calls with a recorded exit, and their times.
    timed: u64,
    total: u64,
    own: u64,
    max: u64,
    hist: Hist,
}

pub struct Functions {
    kinds: ByType<Record>,
    graph: BTreeMap<u64, Stat>,
    /// Per task, the time of the returned calls at each depth not yet
    /// charged to their caller.
    children: BTreeMap<i32, Vec<u64>>,
    /// The function tracer: hits per function, per (caller, callee).
    hits: BTreeMap<u64, u64>,
    edges: BTreeMap<(u64, u64), u64>,
}

impl Functions {
    pub fn new(events: &[Event]) -> Option<Functions> {
        let mut kinds = ByType::new();
        for e in events {
            match Record::of(e) {
                Some(r @ (Record::GraphEntry { .. } | Record::GraphExit { .. } | Record::Function { .. } | Record::FuncRepeats { .. })) => kinds.set(e.id, r),
                _ => {}
            }
        }
        if kinds.is_empty() {
            return None;
        }
        Some(Functions { kinds, graph: BTreeMap::new(), children: BTreeMap::new(), hits: BTreeMap::new(), edges: BTreeMap::new() })
    }

    fn hit(&mut self, ip: u64, parent: u64, n: u64) {
        *self.hits.entry(ip).or_default() += n;
        *self.edges.entry((parent, ip)).or_default() += n;
    }
}

fn at(f: FieldAt, ev: &Ev, cx: &Cx) -> u64 {
    f.get(ev.data, cx.endian)
}

impl Part for Functions {
    fn record(&mut self, ev: &Ev, cx: &Cx) {
        let Some(&k) = self.kinds.get(ev.ty) else { return };
        match k {
            Record::GraphEntry { func, depth, .. } => {
                self.graph.entry(at(func, ev, cx)).or_default().calls += 1;
                let d = at(depth, ev, cx);
                if d < MAX_DEPTH {
                    let v = self.children.entry(ev.pid).or_default();
                    if v.len() <= d as usize {
                        v.resize(d as usize + 1, 0);
                    }
                    v[d as usize] = 0;
                }
            }
            Record::GraphExit { func, depth, calltime, rettime, .. } => {
                let dur = at(rettime, ev, cx).saturating_sub(at(calltime, ev, cx));
                let d = at(depth, ev, cx);
                let mut kids = 0;
                if d < MAX_DEPTH {
                    let v = self.children.entry(ev.pid).or_default();
                    if v.len() <= d as usize {
                        v.resize(d as usize + 1, 0);
                    }
                    kids = core::mem::take(&mut v[d as usize]);
                    if d > 0 {
                        v[d as usize - 1] += dur;
                    }
                }
                let s = self.graph.entry(at(func, ev, cx)).or_default();
                s.timed += 1;
                s.total += dur;
                s.own += dur.saturating_sub(kids);
                s.max = s.max.max(dur);
                if cx.opts.hist {
                    s.hist.add(dur);
                }
            }
            Record::Function { ip, parent } => self.hit(at(ip, ev, cx), at(parent, ev, cx), 1),
            // The calls after the last function record, the same again
            // (func-no-repeats: that record was the first of them).
            Record::FuncRepeats { ip, parent, count, .. } => self.hit(at(ip, ev, cx), at(parent, ev, cx), at(count, ev, cx)),
            _ => {}
        }
    }

    fn finish(&mut self, cx: &Cx, report: &mut Report) {
        if !self.graph.is_empty() {
            let mut t = Table::new("functions", "function_graph calls, by total time", "Function", GRAPH_COLS);
            for (&addr, s) in &self.graph {
                let avg = ratio(s.total as f64, s.timed as f64);
                let r = t.row(name(cx, addr), alloc::vec![s.calls as f64, s.total as f64, s.own as f64, avg, s.max as f64]);
                if cx.opts.hist && s.timed > 0 {
                    r.hist = Some(s.hist.clone());
                }
            }
            t.sort_by(1);
            report.tables.push(t);
        }
        if !self.hits.is_empty() {
            // By name: a caller calls from several places.
            let mut t = Table::new("functions", "function tracer hits", "Function", HIT_COLS);
            for (f, n) in by_name(self.hits.iter().map(|(&a, &n)| (name(cx, a), n))) {
                t.row(f, alloc::vec![n as f64]);
            }
            t.sort_by(0);
            report.tables.push(t);
            let mut t = Table::new("calls", "function tracer hits per caller->callee", "Caller->callee", HIT_COLS);
            for (e, n) in by_name(self.edges.iter().map(|(&(from, to), &n)| (format!("{}->{}", name(cx, from), name(cx, to)), n))) {
                t.row(e, alloc::vec![n as f64]);
            }
            t.sort_by(0);
            report.tables.push(t);
        }
    }
}

/// Counts summed by name.
fn by_name(it: impl Iterator<Item = (String, u64)>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (k, n) in it {
        *m.entry(k).or_default() += n;
    }
    m
}

static GRAPH_COLS: &[Col] = &[
    Col { metric: "calls", head: "Calls", unit: Unit::Count },
    Col { metric: "total", head: "Total", unit: Unit::Ns },
    Col { metric: "self", head: "Self", unit: Unit::Ns },
    Col { metric: "avg", head: "Avg", unit: Unit::Ns },
    Col { metric: "max", head: "Max", unit: Unit::Ns },
];

static HIT_COLS: &[Col] = &[Col { metric: "hits", head: "Hits", unit: Unit::Count }];

/// A function's name as the text prints it (`%ps`), else its address.
fn name(cx: &Cx, addr: u64) -> String {
    match cx.rec.dec.ksyms.lookup(addr) {
        Some(s) => String::from(s.name),
        None => format!("0x{:x}", addr),
    }
}
