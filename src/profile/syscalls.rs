//! Syscalls: per syscall its count (enter events), errors (exits with a
//! negative return, -4095..-1 as the kernel's IS_ERR_VALUE), and the
//! latency from an enter to the next exit of the same task and syscall;
//! per task too when asked for ([`super::ProfileOptions::per_task`]).
//!
//! `syscalls:sys_enter_NAME`/`sys_exit_NAME` name their syscall; the
//! `raw_syscalls` pair gives only its number (`nr257`): a recording holds no
//! number→name table. When a recording has both, the named events count.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::hist::Hist;
use super::keys::{pair, slot, Keys, Names};
use super::table::{ratio, Col, Report, Table, Unit};
use super::{ByType, Cx, Ev, Fld, Part};
use crate::format::Event;

#[derive(Clone)]
struct Kind {
    enter: bool,
    /// The syscall's index in `names`; None for raw_syscalls (from `nr`).
    name: Option<usize>,
    nr: Fld,
    ret: Fld,
}

#[derive(Default)]
struct Stat {
    count: u64,
    errors: u64,
    timed: u64,
    total: u64,
    max: u64,
    hist: Hist,
}

pub struct Syscalls {
    kinds: ByType<Kind>,
    /// Syscall names to the index of their counts.
    names: Names,
    /// raw_syscalls: a syscall number's index in `names`.
    by_nr: Keys,
    nr_names: Vec<usize>,
    /// Per task: the syscall it entered, and when.
    tasks: Keys,
    open: Vec<Option<(usize, u64)>>,
    stats: Vec<Stat>,
    /// Per (task, syscall).
    task_keys: Keys,
    per_task: Vec<Stat>,
}

impl Syscalls {
    pub fn new(events: &[Event]) -> Option<Syscalls> {
        let mut s = Syscalls { kinds: ByType::new(), names: Names::default(), by_nr: Keys::default(), nr_names: Vec::new(), tasks: Keys::default(), open: Vec::new(), stats: Vec::new(), task_keys: Keys::default(), per_task: Vec::new() };
        for e in events.iter().filter(|e| e.system == "syscalls") {
            let (enter, name) = match (e.name.strip_prefix("sys_enter_"), e.name.strip_prefix("sys_exit_")) {
                (Some(n), _) => (true, n),
                (_, Some(n)) => (false, n),
                _ => continue,
            };
            let i = s.names.index(name);
            s.kinds.set(e.id, Kind { enter, name: Some(i), nr: Fld::of(e, "__syscall_nr"), ret: Fld::of(e, "ret") });
        }
        if s.kinds.is_empty() {
            for (name, enter) in [("sys_enter", true), ("sys_exit", false)] {
                if let Some(e) = super::find(events, "raw_syscalls", name) {
                    s.kinds.set(e.id, Kind { enter, name: None, nr: Fld::of(e, "id"), ret: Fld::of(e, "ret") });
                }
            }
        }
        if s.kinds.is_empty() {
            return None;
        }
        Some(s)
    }

    fn index(&mut self, k: &Kind, ev: &Ev, cx: &Cx) -> usize {
        if let Some(i) = k.name {
            return i;
        }
        let nr = k.nr.int(ev.data, cx.endian);
        if let Some(i) = self.by_nr.get(nr as u128) {
            return self.nr_names[i];
        }
        let i = self.names.index(&format!("nr{}", nr as i64));
        *slot(&mut self.nr_names, self.by_nr.index(nr as u128)) = i;
        i
    }
}

impl Part for Syscalls {
    fn record(&mut self, ev: &Ev, cx: &Cx) {
        let Some(k) = self.kinds.get(ev.ty).cloned() else { return };
        let i = self.index(&k, ev, cx);
        let task = cx.opts.per_task;
        let key = pair(ev.pid as u32 as u64, i as u64);
        let open = slot(&mut self.open, self.tasks.index(ev.pid as u32 as u128));
        if k.enter {
            *open = Some((i, ev.ts));
            slot(&mut self.stats, i).count += 1;
            if task {
                slot(&mut self.per_task, self.task_keys.index(key)).count += 1;
            }
            return;
        }
        let ret = k.ret.int(ev.data, cx.endian) as i64;
        let failed = (-4095..0).contains(&ret);
        let dur = match open.take() {
            Some((j, t)) if j == i => Some(ev.ts.saturating_sub(t)),
            _ => None,
        };
        let add = |s: &mut Stat| {
            s.errors += failed as u64;
            if let Some(d) = dur {
                s.timed += 1;
                s.total += d;
                s.max = s.max.max(d);
                if cx.opts.hist {
                    s.hist.add(d);
                }
            }
        };
        add(slot(&mut self.stats, i));
        if task {
            add(slot(&mut self.per_task, self.task_keys.index(key)));
        }
    }

    fn finish(&mut self, cx: &Cx, report: &mut Report) {
        // (None shown: `-e` may hide them all.)
        if self.stats.is_empty() {
            return;
        }
        let names = self.names.list();
        let mut t = Table::new("syscalls", "per syscall, by total latency", "Syscall", COLS);
        for (i, s) in self.stats.iter().enumerate() {
            if s.count + s.errors + s.timed > 0 {
                row(&mut t, names[i].into(), s, cx.opts.hist);
            }
        }
        t.sort_by(2);
        report.tables.push(t);
        if cx.opts.per_task {
            let mut t = Table::new("task-syscalls", "per task (COMM-PID:SYSCALL), by total latency", "Task:syscall", COLS);
            for (k, i) in self.task_keys.iter() {
                let (pid, n) = ((k >> 64) as u32 as i32, k as u64 as usize);
                row(&mut t, format!("{}-{}:{}", cx.rec.comm(pid), pid, names[n]), &self.per_task[i], cx.opts.hist);
            }
            t.sort_by(2);
            report.tables.push(t);
        }
    }
}

fn row(t: &mut Table, key: String, s: &Stat, hist: bool) {
    let avg = ratio(s.total as f64, s.timed as f64);
    let r = t.row(key, alloc::vec![s.count as f64, s.errors as f64, s.total as f64, avg, s.max as f64]);
    if hist && s.timed > 0 {
        r.hist = Some(s.hist.clone());
    }
}

static COLS: &[Col] = &[
    Col { metric: "count", head: "Count", unit: Unit::Count },
    Col { metric: "errors", head: "Errors", unit: Unit::Count },
    Col { metric: "total_latency", head: "Total", unit: Unit::Ns },
    Col { metric: "avg_latency", head: "Avg", unit: Unit::Ns },
    Col { metric: "max_latency", head: "Max", unit: Unit::Ns },
];
