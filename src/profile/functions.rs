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

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::hist::Hist;
use super::keys::{pair, slot, Keys, Names};
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
    /// Per function address.
    funcs: Keys,
    graph: Vec<Stat>,
    /// Per task, the time of the returned calls at each depth not yet
    /// charged to their caller.
    tasks: Keys,
    children: Vec<Vec<u64>>,
    /// The function tracer: hits per function, per (caller, callee).
    hits: Vec<u64>,
    edges: Keys,
    edge_hits: Vec<u64>,
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
        Some(Functions { kinds, funcs: Keys::default(), graph: Vec::new(), tasks: Keys::default(), children: Vec::new(), hits: Vec::new(), edges: Keys::default(), edge_hits: Vec::new() })
    }

    fn func(&mut self, addr: u64) -> &mut Stat {
        slot(&mut self.graph, self.funcs.index(addr as u128))
    }

    /// The time not yet charged at `depth` of task `pid` (None: a depth
    /// too deep to be true).
    fn children(&mut self, pid: i32, depth: u64) -> Option<&mut u64> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let v = slot(&mut self.children, self.tasks.index(pid as u32 as u128));
        Some(slot(v, depth as usize))
    }

    fn hit(&mut self, ip: u64, parent: u64, n: u64) {
        *slot(&mut self.hits, self.funcs.index(ip as u128)) += n;
        *slot(&mut self.edge_hits, self.edges.index(pair(parent, ip))) += n;
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
                self.func(at(func, ev, cx)).calls += 1;
                if let Some(c) = self.children(ev.pid, at(depth, ev, cx)) {
                    *c = 0;
                }
            }
            Record::GraphExit { func, depth, calltime, rettime, .. } => {
                let dur = at(rettime, ev, cx).saturating_sub(at(calltime, ev, cx));
                let d = at(depth, ev, cx);
                let kids = self.children(ev.pid, d).map_or(0, core::mem::take);
                if d > 0 {
                    if let Some(c) = self.children(ev.pid, d - 1) {
                        *c += dur;
                    }
                }
                let s = self.func(at(func, ev, cx));
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
        if self.graph.iter().any(|s| s.calls + s.timed > 0) {
            let mut t = Table::new("functions", "function_graph calls, by total time", "Function", GRAPH_COLS);
            for (addr, i) in self.funcs.iter() {
                let Some(s) = self.graph.get(i).filter(|s| s.calls + s.timed > 0) else { continue };
                let avg = ratio(s.total as f64, s.timed as f64);
                let r = t.row(name(cx, addr as u64), alloc::vec![s.calls as f64, s.total as f64, s.own as f64, avg, s.max as f64]);
                if cx.opts.hist && s.timed > 0 {
                    r.hist = Some(s.hist.clone());
                }
            }
            t.sort_by(1);
            report.tables.push(t);
        }
        if !self.hits.is_empty() {
            // By name: a caller calls from several places.
            let (mut names, mut n) = (Names::default(), Vec::new());
            for (addr, i) in self.funcs.iter() {
                *slot(&mut n, names.index(&name(cx, addr as u64))) += self.hits.get(i).copied().unwrap_or(0);
            }
            hit_table(report, "functions", "function tracer hits", "Function", &names, &n);
            let (mut names, mut n) = (Names::default(), Vec::new());
            for (k, i) in self.edges.iter() {
                let e = format!("{}->{}", name(cx, (k >> 64) as u64), name(cx, k as u64));
                *slot(&mut n, names.index(&e)) += self.edge_hits[i];
            }
            hit_table(report, "calls", "function tracer hits per caller->callee", "Caller->callee", &names, &n);
        }
    }
}

fn hit_table(report: &mut Report, name: &'static str, about: &'static str, key: &'static str, names: &Names, hits: &[u64]) {
    let mut t = Table::new(name, about, key, HIT_COLS);
    for (f, &n) in names.list().into_iter().zip(hits) {
        if n > 0 {
            t.row(f.into(), alloc::vec![n as f64]);
        }
    }
    t.sort_by(0);
    report.tables.push(t);
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
