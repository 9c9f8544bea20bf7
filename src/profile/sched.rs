//! Scheduling, from `sched_switch` (with `sched_wakeup`,
//! `sched_wakeup_new`, `sched_migrate_task` when recorded): per task its
//! run time, its wait time (runnable but not running: from a wakeup, or
//! from being preempted, to running again), how often it ran, its
//! voluntary and involuntary switches, its migrations; per CPU its busy
//! and idle time.
//!
//! Tasks are keyed by name (comm), which stays the same from one run of a
//! workload to the next where pids do not: a comparison lines them up.
//! A CPU's time runs from its first record shown to its last; before its
//! first switch the task the switch puts off ran, after its last the one it
//! put on, so the run times of the tasks on a CPU plus its idle time are
//! that span exactly.

use alloc::string::String;
use alloc::vec::Vec;

use super::keys::{slot, Keys, Names};
use super::table::{ratio, Col, Report, Table, Unit};
use super::{ByType, Cx, Ev, Fld, Part};
use crate::format::Event;

#[derive(Clone)]
enum Kind {
    Switch { prev_comm: Fld, prev_pid: Fld, prev_state: Fld, next_comm: Fld, next_pid: Fld },
    Wakeup { pid: Fld },
    Migrate { pid: Fld },
}

#[derive(Default, Clone)]
struct Task {
    pid: i32,
    comm: String,
    run: u64,
    wait: u64,
    runs: u64,
    voluntary: u64,
    involuntary: u64,
    migrations: u64,
    /// Runnable, not running, since.
    waiting: Option<u64>,
}

#[derive(Default, Clone)]
struct Cpu {
    first: Option<u64>,
    last: u64,
    /// The task on the CPU since `since` (None before the first switch).
    cur: Option<(i32, u64)>,
    /// The pid of the last record: who ran, on a CPU without switches.
    last_pid: i32,
    busy: u64,
    idle: u64,
}

pub struct Sched {
    kinds: ByType<Kind>,
    pids: Keys,
    tasks: Vec<Task>,
    cpus: Vec<Cpu>,
    /// A switch was shown (else no tables: `-e` may hide them all).
    seen: bool,
}

impl Sched {
    pub fn new(events: &[Event]) -> Option<Sched> {
        let mut kinds = ByType::new();
        let e = super::find(events, "sched", "sched_switch")?;
        let f = |n| Fld::of(e, n);
        kinds.set(e.id, Kind::Switch { prev_comm: f("prev_comm"), prev_pid: f("prev_pid"), prev_state: f("prev_state"), next_comm: f("next_comm"), next_pid: f("next_pid") });
        for n in ["sched_wakeup", "sched_wakeup_new"] {
            if let Some(e) = super::find(events, "sched", n) {
                kinds.set(e.id, Kind::Wakeup { pid: Fld::of(e, "pid") });
            }
        }
        if let Some(e) = super::find(events, "sched", "sched_migrate_task") {
            kinds.set(e.id, Kind::Migrate { pid: Fld::of(e, "pid") });
        }
        Some(Sched { kinds, pids: Keys::default(), tasks: Vec::new(), cpus: Vec::new(), seen: false })
    }

    fn task(&mut self, pid: i32) -> &mut Task {
        let t = slot(&mut self.tasks, self.pids.index(pid as u32 as u128));
        t.pid = pid;
        t
    }

    /// `pid` ran on `cpu` for `t`: the idle task's time is the CPU's idle.
    fn ran(&mut self, cpu: usize, pid: i32, t: u64) {
        if pid == 0 {
            self.cpus[cpu].idle += t;
        } else {
            self.cpus[cpu].busy += t;
            self.task(pid).run += t;
        }
    }
}

/// A CPU number a table may be indexed by (a damaged one shares the last).
fn cpu_slot(cpu: u32) -> usize {
    (cpu as usize).min(crate::text::kernel::MAX_CPUS)
}

impl Part for Sched {
    fn record(&mut self, ev: &Ev, cx: &Cx) {
        let c = cpu_slot(ev.cpu);
        if self.cpus.len() <= c {
            self.cpus.resize(c + 1, Cpu::default());
        }
        let cpu = &mut self.cpus[c];
        cpu.first.get_or_insert(ev.ts);
        cpu.last = ev.ts;
        cpu.last_pid = ev.pid;
        let Some(k) = self.kinds.get(ev.ty).cloned() else { return };
        let (d, e) = (ev.data, cx.endian);
        match k {
            Kind::Switch { prev_comm, prev_pid, prev_state, next_comm, next_pid } => {
                self.seen = true;
                let (prev, next) = (prev_pid.int(d, e) as i32, next_pid.int(d, e) as i32);
                let cpu = &self.cpus[c];
                let since = cpu.cur.map_or(cpu.first.unwrap_or(ev.ts), |(_, t)| t);
                self.ran(c, prev, ev.ts.saturating_sub(since));
                if prev != 0 {
                    let t = self.task(prev);
                    t.comm = String::from_utf8_lossy(prev_comm.text(d, e)).into();
                    // Still runnable (TASK_RUNNING, or the preempted mark
                    // above the state bits): it did not give the CPU up.
                    if prev_state.int(d, e) & 0xff == 0 {
                        t.involuntary += 1;
                        t.waiting = Some(ev.ts);
                    } else {
                        t.voluntary += 1;
                        t.waiting = None;
                    }
                }
                if next != 0 {
                    let t = self.task(next);
                    t.comm = String::from_utf8_lossy(next_comm.text(d, e)).into();
                    t.runs += 1;
                    if let Some(w) = t.waiting.take() {
                        t.wait += ev.ts.saturating_sub(w);
                    }
                }
                self.cpus[c].cur = Some((next, ev.ts));
            }
            Kind::Wakeup { pid } => {
                let t = self.task(pid.int(d, e) as i32);
                t.waiting.get_or_insert(ev.ts);
            }
            Kind::Migrate { pid } => self.task(pid.int(d, e) as i32).migrations += 1,
        }
    }

    fn finish(&mut self, cx: &Cx, report: &mut Report) {
        if !self.seen {
            return;
        }
        for c in 0..self.cpus.len() {
            let cpu = &self.cpus[c];
            let Some(first) = cpu.first else { continue };
            let (pid, since) = cpu.cur.unwrap_or((cpu.last_pid, first));
            let last = cpu.last;
            self.ran(c, pid, last.saturating_sub(since));
            self.cpus[c].cur = Some((pid, last));
        }
        let (mut comms, mut by_comm) = (Names::default(), Vec::new());
        for t in &self.tasks {
            // A task seen only in wakeups and migrations is named by the recording.
            let comm = if t.comm.is_empty() { cx.rec.comm(t.pid) } else { t.comm.as_str() };
            let s: &mut Task = slot(&mut by_comm, comms.index(comm));
            s.run += t.run;
            s.wait += t.wait;
            s.runs += t.runs;
            s.voluntary += t.voluntary;
            s.involuntary += t.involuntary;
            s.migrations += t.migrations;
        }
        let mut t = Table::new("sched", "per task name, by run time", "Task", TASK_COLS);
        for (comm, s) in comms.list().into_iter().zip(&by_comm) {
            t.row(comm.into(), alloc::vec![s.run as f64, s.wait as f64, s.runs as f64, s.voluntary as f64, s.involuntary as f64, s.migrations as f64]);
        }
        t.sort_by(0);
        report.tables.push(t);
        let mut t = Table::new("cpus", "per CPU, from its first record to its last", "CPU", CPU_COLS);
        for (c, cpu) in self.cpus.iter().enumerate() {
            if cpu.first.is_none() {
                continue;
            }
            let span = (cpu.busy + cpu.idle) as f64;
            let (b, i) = (100.0 * ratio(cpu.busy as f64, span), 100.0 * ratio(cpu.idle as f64, span));
            t.row(alloc::format!("cpu{}", c), alloc::vec![b, i, cpu.busy as f64, cpu.idle as f64]);
        }
        report.tables.push(t);
    }
}

static TASK_COLS: &[Col] = &[
    Col { metric: "run", head: "Run", unit: Unit::Ns },
    Col { metric: "wait", head: "Wait", unit: Unit::Ns },
    Col { metric: "runs", head: "Runs", unit: Unit::Count },
    Col { metric: "voluntary", head: "Voluntary", unit: Unit::Count },
    Col { metric: "involuntary", head: "Involuntary", unit: Unit::Count },
    Col { metric: "migrations", head: "Migrations", unit: Unit::Count },
];

static CPU_COLS: &[Col] = &[
    Col { metric: "busy_pct", head: "Busy", unit: Unit::Pct },
    Col { metric: "idle_pct", head: "Idle", unit: Unit::Pct },
    Col { metric: "busy", head: "Busy time", unit: Unit::Ns },
    Col { metric: "idle", head: "Idle time", unit: Unit::Ns },
];
