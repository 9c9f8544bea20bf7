//! Interrupts, from the `irq` events: per hardirq handler
//! (`irq_handler_entry`/`_exit`) and softirq vector (`softirq_entry`/
//! `_exit`) its count and the time from entry to exit on its CPU.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::keys::{slot, Keys};
use super::table::{ratio, Col, Report, Table, Unit};
use super::{ByType, Cx, Ev, Fld, Part};
use crate::format::Event;

/// The softirq vectors' names, as the kernel's `softirq_to_name`.
const SOFTIRQS: [&str; 10] = ["HI", "TIMER", "NET_TX", "NET_RX", "BLOCK", "IRQ_POLL", "TASKLET", "SCHED", "HRTIMER", "RCU"];

#[derive(Clone)]
enum Kind {
    HardEntry { irq: Fld, name: Fld },
    HardExit { irq: Fld },
    SoftEntry { vec: Fld },
    SoftExit { vec: Fld },
}

#[derive(Default)]
struct Stat {
    /// A hardirq handler's name.
    name: String,
    count: u64,
    timed: u64,
    total: u64,
    max: u64,
}

/// Per CPU, the hardirq and the softirq entered and not yet left.
#[derive(Default, Clone, Copy)]
struct Open {
    hard: Option<(u64, u64)>,
    soft: Option<(u64, u64)>,
}

pub struct Irq {
    kinds: ByType<Kind>,
    open: Vec<Open>,
    /// Per irq number, per softirq vector.
    irqs: Keys,
    hard: Vec<Stat>,
    vecs: Keys,
    soft: Vec<Stat>,
}

impl Irq {
    pub fn new(events: &[Event]) -> Option<Irq> {
        let mut kinds = ByType::new();
        for e in events.iter().filter(|e| e.system == "irq") {
            let f = |n| Fld::of(e, n);
            let k = match e.name.as_str() {
                "irq_handler_entry" => Kind::HardEntry { irq: f("irq"), name: f("name") },
                "irq_handler_exit" => Kind::HardExit { irq: f("irq") },
                "softirq_entry" => Kind::SoftEntry { vec: f("vec") },
                "softirq_exit" => Kind::SoftExit { vec: f("vec") },
                _ => continue,
            };
            kinds.set(e.id, k);
        }
        if kinds.is_empty() {
            return None;
        }
        Some(Irq { kinds, open: Vec::new(), irqs: Keys::default(), hard: Vec::new(), vecs: Keys::default(), soft: Vec::new() })
    }
}

/// An exit of `n` at `ts` closes the entry of `n` it matches.
fn close(open: &mut Option<(u64, u64)>, n: u64, ts: u64, s: &mut Stat) {
    if let Some((m, t)) = open.take() {
        if m == n {
            let d = ts.saturating_sub(t);
            s.timed += 1;
            s.total += d;
            s.max = s.max.max(d);
        }
    }
}

impl Part for Irq {
    fn record(&mut self, ev: &Ev, cx: &Cx) {
        let Some(k) = self.kinds.get(ev.ty).cloned() else { return };
        let c = (ev.cpu as usize).min(crate::text::kernel::MAX_CPUS);
        if self.open.len() <= c {
            self.open.resize(c + 1, Open::default());
        }
        let (d, e, o) = (ev.data, cx.endian, &mut self.open[c]);
        match k {
            Kind::HardEntry { irq, name } => {
                let n = irq.int(d, e);
                let s = slot(&mut self.hard, self.irqs.index(n as u128));
                s.count += 1;
                if s.name.is_empty() {
                    s.name = String::from_utf8_lossy(name.text(d, e)).into();
                }
                o.hard = Some((n, ev.ts));
            }
            Kind::HardExit { irq } => {
                let n = irq.int(d, e);
                close(&mut o.hard, n, ev.ts, slot(&mut self.hard, self.irqs.index(n as u128)));
            }
            Kind::SoftEntry { vec } => {
                let n = vec.int(d, e);
                slot(&mut self.soft, self.vecs.index(n as u128)).count += 1;
                o.soft = Some((n, ev.ts));
            }
            Kind::SoftExit { vec } => {
                let n = vec.int(d, e);
                close(&mut o.soft, n, ev.ts, slot(&mut self.soft, self.vecs.index(n as u128)));
            }
        }
    }

    fn finish(&mut self, _cx: &Cx, report: &mut Report) {
        // (None shown: `-e` may hide them all.)
        if self.hard.is_empty() && self.soft.is_empty() {
            return;
        }
        let mut t = Table::new("irqs", "hardirq handlers (IRQ:NAME) and softirq vectors, by total time", "Interrupt", COLS);
        for (n, i) in self.irqs.iter() {
            let s = &self.hard[i];
            add(&mut t, format!("{}:{}", n as u64, s.name), s);
        }
        for (n, i) in self.vecs.iter() {
            let name = SOFTIRQS.get(n as usize).map_or(format!("softirq{}", n as u64), |s| String::from(*s));
            add(&mut t, name, &self.soft[i]);
        }
        t.sort_by(1);
        report.tables.push(t);
    }
}

fn add(t: &mut Table, key: String, s: &Stat) {
    t.row(key, alloc::vec![s.count as f64, s.total as f64, ratio(s.total as f64, s.timed as f64), s.max as f64]);
}

static COLS: &[Col] = &[
    Col { metric: "count", head: "Count", unit: Unit::Count },
    Col { metric: "total", head: "Total", unit: Unit::Ns },
    Col { metric: "avg", head: "Avg", unit: Unit::Ns },
    Col { metric: "max", head: "Max", unit: Unit::Ns },
];
