//! Events: how many records of each event were shown, and how many a
//! second over the span from the first record shown to the last.

use alloc::format;
use alloc::vec::Vec;

use super::keys::slot;
use super::table::{ratio, Col, Report, Table, Unit};
use super::{Cx, Ev, Part};

#[derive(Default)]
pub struct Events {
    /// By record type.
    counts: Vec<u64>,
}

impl Part for Events {
    fn record(&mut self, ev: &Ev, _cx: &Cx) {
        *slot(&mut self.counts, ev.ty as usize) += 1;
    }

    fn finish(&mut self, cx: &Cx, report: &mut Report) {
        let secs = report.span as f64 / 1e9;
        let mut t = Table::new("events", "records per event, and per second of the recording", "Event", COLS);
        for (ty, &n) in self.counts.iter().enumerate().filter(|c| *c.1 > 0) {
            let ty = ty as u16;
            // (As `ftcat --stat` names them.)
            let name = match cx.rec.dec.event(ty) {
                Some(e) => format!("{}:{}", e.system, e.name),
                None => format!("type {}", ty),
            };
            t.row(name, alloc::vec![n as f64, ratio(n as f64, secs)]);
        }
        t.sort_by(0);
        report.tables.push(t);
    }
}

static COLS: &[Col] = &[Col { metric: "count", head: "Count", unit: Unit::Count }, Col { metric: "rate", head: "Rate", unit: Unit::Rate }];
