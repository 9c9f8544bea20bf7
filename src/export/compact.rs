//! `FtraceEventBundle.compact_sched`: a CPU's sched_switch and
//! sched_waking events as traced_probes writes them with
//! `compact_sched { enabled: true }` — one packed array per field, the
//! timestamps as deltas, the comms as indexes into a table of the bundle's
//! distinct comms (protos/perfetto/trace/ftrace/ftrace_event_bundle.proto).
//!
//! The compact form leaves out what trace processor infers from the CPU's
//! previous sched_switch: the switch's `prev_pid`, `prev_prio` and
//! `prev_comm`, and the task that woke (the waking's `common_pid`).
//! traced_probes records a whole buffer and accepts that the inference has
//! nothing to go on at the start (trace processor drops the first switch on
//! each CPU and the wakings before it). An export must not lose records,
//! so an event goes in compact form only where the inference gives back
//! exactly what the record says: a switch whose prev task is the CPU's
//! last next task, a waking by the CPU's current task. Every other one
//! (the first on a CPU, the first after a loss, one a filter left without
//! its predecessor) stays a full `FtraceEvent`, which sets trace
//! processor's per-CPU state as a compact one does.

use alloc::vec::Vec;

use super::buf::Buf;
use super::proto::{self, begin_room, bytes, end};

/// A task as a sched_switch names it.
#[derive(Clone, PartialEq, Eq)]
pub struct Task<'a> {
    pub pid: u64,
    pub prio: u64,
    pub comm: &'a [u8],
}

/// One CPU's compact events of the bundle being filled, and what the
/// inference knows there.
#[derive(Default)]
pub struct Sched {
    /// The bundle's distinct comms, each as its bytes; `index` in the
    /// arrays below is a position in this list.
    comms: Vec<Vec<u8>>,
    switch_ts: Buf,
    switch_prev_state: Buf,
    switch_next_pid: Buf,
    switch_next_prio: Buf,
    switch_next_comm: Buf,
    waking_ts: Buf,
    waking_pid: Buf,
    waking_target_cpu: Buf,
    waking_prio: Buf,
    waking_comm: Buf,
    waking_flags: Buf,
    /// The previous timestamp of each array (deltas start from 0 in a bundle).
    last_switch: u64,
    last_waking: u64,
    /// The CPU's running task as the last sched_switch written (compact or
    /// not) left it; None at the start and after a loss.
    running: Option<(u64, u64, Vec<u8>)>,
    /// The last sched event's time on this CPU: trace processor orders
    /// events of equal time in no promised way, and the inference needs
    /// the order, so an event at the same time as the one before it is
    /// written in full.
    last_ts: Option<u64>,
    /// This CPU's time went back (a file whose pages are out of order):
    /// trace processor sorts by time, so the order the inference would
    /// follow is not the one written here; no more compact events on it.
    unordered: bool,
}

impl Sched {
    /// A sched_switch at `ts`: true when it went in compact form; false:
    /// write it as a full event (the CPU's state is updated either way).
    pub fn switch(&mut self, ts: u64, prev: &Task, prev_state: u64, next: &Task) -> bool {
        let inferred = match &self.running {
            Some((pid, prio, comm)) => *pid == prev.pid && *prio == prev.prio && comm[..] == *prev.comm,
            None => false,
        };
        let compact = inferred && self.later(ts);
        self.running = Some((next.pid, next.prio, next.comm.to_vec()));
        self.last_ts = Some(ts);
        if !compact {
            return false;
        }
        let comm = self.intern(next.comm);
        proto::varint(&mut self.switch_ts, ts.wrapping_sub(self.last_switch));
        self.last_switch = ts;
        proto::varint(&mut self.switch_prev_state, prev_state);
        proto::varint(&mut self.switch_next_pid, next.pid);
        proto::varint(&mut self.switch_next_prio, next.prio);
        proto::varint(&mut self.switch_next_comm, comm);
        true
    }

    /// A sched_waking at `ts` by task `waker` (common_pid) with
    /// common_flags `flags`: true when it went in compact form.
    pub fn waking(&mut self, ts: u64, waker: u64, wakee: &Task, target_cpu: u64, flags: u64) -> bool {
        let by_running = self.running.as_ref().is_some_and(|r| r.0 == waker);
        if !by_running || !self.later(ts) {
            self.last_ts = Some(ts);
            return false;
        }
        self.last_ts = Some(ts);
        let comm = self.intern(wakee.comm);
        proto::varint(&mut self.waking_ts, ts.wrapping_sub(self.last_waking));
        self.last_waking = ts;
        proto::varint(&mut self.waking_pid, wakee.pid);
        proto::varint(&mut self.waking_target_cpu, target_cpu);
        proto::varint(&mut self.waking_prio, wakee.prio);
        proto::varint(&mut self.waking_comm, comm);
        proto::varint(&mut self.waking_flags, flags);
        true
    }

    /// Events were lost on this CPU: what ran after them is unknown.
    pub fn lost(&mut self) {
        self.running = None;
    }

    /// Whether an event at `ts` may go in compact form as far as time goes.
    fn later(&mut self, ts: u64) -> bool {
        if self.last_ts.is_some_and(|t| ts < t) {
            self.unordered = true;
        }
        !self.unordered && self.last_ts.is_none_or(|t| ts > t)
    }

    fn intern(&mut self, comm: &[u8]) -> u64 {
        let i = match self.comms.iter().position(|c| c[..] == *comm) {
            Some(i) => i,
            None => {
                self.comms.push(comm.to_vec());
                self.comms.len() - 1
            }
        };
        i as u64
    }

    /// Bytes the arrays hold (the bundle's size bound counts them).
    /// (Asked after every event: the sum is written out, not iterated,
    /// as iterators are calls in this size-first build.)
    pub fn len(&self) -> usize {
        let switch = self.switch_ts.len() + self.switch_prev_state.len() + self.switch_next_pid.len() + self.switch_next_prio.len() + self.switch_next_comm.len();
        let waking = self.waking_ts.len() + self.waking_pid.len() + self.waking_target_cpu.len() + self.waking_prio.len() + self.waking_comm.len() + self.waking_flags.len();
        switch + waking + self.comms.len() * 16
    }

    pub fn is_empty(&self) -> bool {
        self.switch_ts.is_empty() && self.waking_ts.is_empty()
    }

    fn arrays(&self) -> [(u32, &Buf); 11] {
        [
            (1, &self.switch_ts),
            (2, &self.switch_prev_state),
            (3, &self.switch_next_pid),
            (4, &self.switch_next_prio),
            (6, &self.switch_next_comm),
            (7, &self.waking_ts),
            (8, &self.waking_pid),
            (9, &self.waking_target_cpu),
            (10, &self.waking_prio),
            (11, &self.waking_comm),
            (12, &self.waking_flags),
        ]
    }

    /// The bundle's `compact_sched` field (4) into `p` (nothing when it
    /// has no events); the arrays start over for the next bundle.
    pub fn write(&mut self, p: &mut Buf) {
        if self.is_empty() {
            return;
        }
        let o = begin_room(p, 4, 3);
        for c in &self.comms {
            super::perfetto::text_field(p, 5, c);
        }
        for (no, a) in self.arrays() {
            if !a.is_empty() {
                bytes(p, no, a.as_slice());
            }
        }
        end(p, o);
        self.comms.clear();
        for b in [
            &mut self.switch_ts,
            &mut self.switch_prev_state,
            &mut self.switch_next_pid,
            &mut self.switch_next_prio,
            &mut self.switch_next_comm,
            &mut self.waking_ts,
            &mut self.waking_pid,
            &mut self.waking_target_cpu,
            &mut self.waking_prio,
            &mut self.waking_comm,
            &mut self.waking_flags,
        ] {
            b.clear();
        }
        self.last_switch = 0;
        self.last_waking = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(pid: u64, comm: &[u8]) -> Task<'_> {
        Task { pid, prio: 120, comm }
    }

    /// The first switch on a CPU has nothing to infer its prev task from;
    /// the next one does; one whose prev task is not the last next task
    /// (a record filtered out between them) does not.
    #[test]
    fn compact_only_where_inferred() {
        let mut s = Sched::default();
        assert!(!s.switch(10, &task(0, b"swapper/0"), 0, &task(5, b"sh")));
        assert!(s.switch(20, &task(5, b"sh"), 1, &task(0, b"swapper/0")));
        assert!(!s.switch(30, &task(7, b"cat"), 1, &task(5, b"sh")));
        assert!(s.waking(40, 5, &task(9, b"sh"), 1, 0));
        assert!(!s.waking(50, 6, &task(9, b"sh"), 1, 0), "not by the running task");
        assert!(!s.switch(50, &task(5, b"sh"), 1, &task(9, b"sh")), "same time as the event before");
        s.lost();
        assert!(!s.switch(60, &task(9, b"sh"), 1, &task(0, b"swapper/0")));
        let mut p = Buf::new();
        s.write(&mut p);
        // Field 4, then the table (swapper/0, sh) and the arrays: switch
        // at 20 (absolute), waking at 40.
        let b = p.as_slice();
        assert_eq!(b[0], 4 << 3 | 2);
        assert!(b.windows(11).any(|w| w == b"\x2a\x09swapper/0"));
        assert!(b.windows(3).any(|w| w == [1 << 3 | 2, 1, 20]));
        assert!(b.windows(3).any(|w| w == [7 << 3 | 2, 1, 40]));
        assert!(s.is_empty());
    }
}
