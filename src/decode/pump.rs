//! The merge-driven pump: records in time order through the filters to an
//! [`Output`]. A function_graph entry waits, with whatever the merge yields
//! meanwhile, until its CPU's next record is known (the exit it may fold
//! into one line); everything else goes straight through.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::event_filter::EventFilter;
use super::filter::{Pass, Select};
use super::graph_filter::{GraphFilter, Verdict};
use super::kind::Ftrace;
use super::output::Output;
use super::{Host, Recording, Stats};
use crate::cursor::Endian;
use crate::merge::{Item, Merge};
use crate::text::Rec;

/// Which record types need the next record of their CPU (graph entries).
struct Lookahead {
    /// The graph entries' ids.
    graph_ent: Vec<(u16, Ftrace)>,
    endian: Endian,
    /// trace-cmd folds only with the very next record of the merge.
    global: bool,
}

impl Lookahead {
    /// (Inline with fast-print: asked once a record, and at opt-level z a
    /// plain `#[inline]` leaves it a call; the board build keeps the call.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    fn wants(&self, d: &[u8]) -> bool {
        if self.graph_ent.is_empty() {
            return false;
        }
        // A loop, not `contains` (a call per record at opt-level z).
        let ty = crate::text::kernel::rec_type(d, self.endian);
        for &(g, _) in &self.graph_ent {
            if g == ty {
                return true;
            }
        }
        false
    }
}

/// A merge item kept while a graph entry waits for its CPU's next record.
enum Held {
    Rec { cpu: u32, ts: u64, data: Vec<u8> },
    Lost { cpu: u32, count: Option<u64> },
    Err { cpu: u32, msg: String },
}

impl Held {
    fn cpu(&self) -> u32 {
        match self {
            Held::Rec { cpu, .. } | Held::Lost { cpu, .. } | Held::Err { cpu, .. } => *cpu,
        }
    }
    fn of(it: Item<'_>, q: &mut HoldQ) -> Held {
        match it {
            Item::Record { cpu, ts, data } => Held::Rec { cpu, ts, data: q.copy(data) },
            Item::Lost { cpu, count, .. } => Held::Lost { cpu, count },
            Item::Error { cpu, error } => Held::Err { cpu, msg: error.to_string() },
        }
    }
}

/// The filters between the merge and the output, and the counts.
struct Sink<'s, 'o> {
    rec: &'s Recording,
    select: Select<'s>,
    ef: EventFilter,
    out: &'o mut dyn Output,
    stats: Stats,
    /// Past `--to`.
    stop: bool,
}

impl Sink<'_, '_> {
    #[inline]
    fn record(&mut self, r: &Rec, next: Option<&Rec>) -> bool {
        let buffer = (r.cpu >> TAG) as usize;
        let r = &untag(r);
        let d = r.data;
        self.out.arrive(r.cpu);
        // trace-cmd tests -F in its library, before --cpu, -I, -S.
        if !self.ef.is_empty() {
            let (rec, out) = (self.rec, &mut *self.out);
            let pid = rec.pid(d);
            let mut comm = |f: &dyn Fn(&[u8]) -> bool| out.comm_test(rec, pid, f);
            if !self.ef.pass(r.cpu, d, &mut comm, rec.dec.endian) {
                return false;
            }
        }
        match self.select.check(self.rec, r) {
            Pass::Show => {}
            Pass::Drop => return false,
            Pass::Stop => {
                self.stop = true;
                return false;
            }
        }
        let st = &mut self.stats;
        st.records += 1;
        if st.first.is_none() {
            st.first = Some(r.ts);
        }
        st.last = r.ts;
        // The CPU's counts are there but for its first record: `get_mut`
        // first, without the call that grows the table.
        match st.cpus.get_mut(r.cpu as usize) {
            Some(c) => c.records += 1,
            None => st.cpu(r.cpu).records += 1,
        }
        // `next` untagged here, where it is known to be there: an
        // `Option<Rec>` built and tested for every record cost more.
        match next {
            None => self.out.record(buffer, r, None),
            Some(n) => self.out.record(buffer, r, Some(&untag(n))),
        }
    }

    fn lost(&mut self, cpu: u32, count: Option<u64>) {
        let cpu = cpu & TAG_MASK;
        let c = self.stats.cpu(cpu);
        match count {
            Some(n) => c.lost = c.lost.saturating_add(n),
            None => c.unknown_losses += 1,
        }
        let shown = self.select.cpu(cpu);
        self.out.lost(cpu, count, shown);
    }

    fn error(&mut self, host: &mut dyn Host, cpu: u32, msg: &str) {
        self.stats.errors += 1;
        self.out.flush();
        host.error(cpu & TAG_MASK, msg);
    }
}

/// Run the merge through `-F`, `--graph`/`--max-depth` and the
/// [`Select`] filters to `out`; the counts of what was shown.
#[inline(never)]
pub fn run(rec: &Recording, select: Select<'_>, ef: EventFilter, gf: Option<GraphFilter>, m: &mut Merge<'_>, out: &mut dyn Output, follow: bool, host: &mut dyn Host) -> Stats {
    let ge = super::kind::ids_of(rec.events(), super::kind::is_entry);
    let la = Lookahead { graph_ent: ge, endian: rec.dec.endian, global: out.next_in_merge() };
    let mut s = Sink { rec, select, ef, out, stats: Stats::default(), stop: false };
    let mut gf = gf;
    pump(m, &mut s, &la, follow, &mut gf, host);
    s.stats
}

/// Merge CPU numbers of a multi-buffer merge carry the buffer above TAG.
pub(super) const TAG: u32 = 16;
const TAG_MASK: u32 = (1 << TAG) - 1;

/// (Inline with fast-print: twice a record, and at opt-level z `#[inline]`
/// does nothing; the board build keeps the call.)
#[cfg_attr(feature = "fast-print", inline(always))]
fn untag<'r>(r: &Rec<'r>) -> Rec<'r> {
    Rec { cpu: r.cpu & TAG_MASK, ts: r.ts, data: r.data }
}

/// One buffer's CPU of a multi-buffer merge: equal times come out lower
/// tag first, i.e. in the file's buffer order (top first), as trace-cmd.
pub(super) struct Tagged<'f>(pub crate::tracedat::CpuPages<'f>, pub u32);
impl crate::merge::PageSource for Tagged<'_> {
    fn cpu(&self) -> u32 {
        self.1
    }
    fn fill(&mut self, page: &mut Vec<u8>) -> core::result::Result<crate::merge::Fill, crate::tracedat::Error> {
        crate::merge::PageSource::fill(&mut self.0, page)
    }
}

/// Counter `i` of a table that grows as needed: one copy of the growing
/// code for all the per-CPU counts.
#[inline(never)]
fn counter(v: &mut Vec<u64>, i: usize) -> &mut u64 {
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    &mut v[i]
}

/// Index of a CPU's per-CPU counters: corrupt CPU numbers share one slot
/// instead of growing a table to their size.
fn slot(cpu: u32) -> usize {
    (cpu as usize).min(crate::text::kernel::MAX_CPUS)
}

/// How many merge items a graph entry may hold back while waiting for its
/// CPU's next record. A CPU that stops right after an entry (idle) would
/// otherwise make the whole rest of the trace wait in memory; past this the
/// entry prints unfolded (`func() {`), the one place ftcat trades exactness
/// for flat memory.
const HOLD_MAX: usize = 1 << 16;

/// The items held back, with a count per CPU so "does CPU c have one?" is
/// a lookup, not a scan. A Vec read from `head` on, not a VecDeque: the
/// ring's wrap handling was ~1 KB of the tiny build; taken items leave a
/// heap-free placeholder behind and the dead prefix is cut off now and then.
struct HoldQ {
    v: Vec<Held>,
    head: usize,
    per_cpu: Vec<u64>,
    /// Buffers of records done with, for the next ones held: on a
    /// function_graph recording nearly every record is held, and an
    /// allocation and a free per record were a twentieth of the time.
    spare: Vec<Vec<u8>>,
}

/// Spare record buffers kept at most (each is a record's size).
const SPARE_MAX: usize = 64;

impl HoldQ {
    /// `data` in a buffer of its own, a spare one when there is one.
    fn copy(&mut self, data: &[u8]) -> Vec<u8> {
        let mut d = self.spare.pop().unwrap_or_default();
        d.clear();
        d.extend_from_slice(data);
        d
    }
    fn recycle(&mut self, d: Vec<u8>) {
        if self.spare.len() < SPARE_MAX {
            self.spare.push(d);
        }
    }
    fn items(&self) -> &[Held] {
        self.v.get(self.head..).unwrap_or(&[])
    }
    fn push(&mut self, h: Held) {
        *counter(&mut self.per_cpu, slot(h.cpu())) += 1;
        self.v.push(h);
    }
    fn pop(&mut self) -> Option<Held> {
        let h = core::mem::replace(self.v.get_mut(self.head)?, Held::Lost { cpu: 0, count: None });
        self.head += 1;
        if self.head == self.v.len() {
            self.v.clear();
            self.head = 0;
        } else if self.head > 1024 && self.head * 2 > self.v.len() {
            // Amortised O(1): at most as many live items move as dead
            // ones were taken.
            self.v = self.v.split_off(self.head);
            self.head = 0;
        }
        self.uncount(h.cpu());
        Some(h)
    }
    fn remove(&mut self, i: usize) {
        if self.head + i < self.v.len() {
            let h = self.v.remove(self.head + i);
            self.uncount(h.cpu());
            if let Held::Rec { data, .. } = h {
                self.recycle(data);
            }
        }
    }
    fn uncount(&mut self, cpu: u32) {
        if let Some(n) = self.per_cpu.get_mut(slot(cpu)) {
            *n = n.saturating_sub(1);
        }
    }
    fn has(&self, cpu: u32) -> bool {
        self.per_cpu.get(slot(cpu)).is_some_and(|&n| n > 0)
    }
}

/// Drive the merge: records go straight to the sink, except a graph entry,
/// which waits (with whatever the merge yields meanwhile) until its CPU's
/// next record is known.
/// A merge item through `--max-depth`/`--graph` (None: hidden).
fn admit(gf: &mut Option<GraphFilter>, q: &mut HoldQ, it: Item<'_>) {
    if let (Some(g), Item::Record { cpu, ts, data }) = (gf.as_mut(), &it) {
        match g.check(data) {
            Verdict::Hide => return,
            Verdict::Keep => {}
            Verdict::Rebase(b) => {
                let mut d = q.copy(data);
                g.rebase(&mut d, b);
                return q.push(Held::Rec { cpu: *cpu, ts: *ts, data: d });
            }
        }
    }
    let h = Held::of(it, q);
    q.push(h);
}

/// A graph entry to the sink with its CPU's next record, if known, and
/// whether that is also the merge's next (trace-cmd folds only with that
/// one); true when the next record was folded in (its source drops it).
fn fold(s: &mut Sink<'_, '_>, la: &Lookahead, e: &Rec, next: Option<(&Rec, bool)>) -> bool {
    let next = next.filter(|&(_, first)| !la.global || first).map(|(n, _)| n);
    s.record(e, next)
}

#[inline(never)]
fn pump(m: &mut Merge<'_>, s: &mut Sink<'_, '_>, la: &Lookahead, follow: bool, gf: &mut Option<GraphFilter>, host: &mut dyn Host) {
    let mut q = HoldQ { v: Vec::new(), head: 0, per_cpu: Vec::new(), spare: Vec::new() };
    // A writer fails only when it drains its buffer, hundreds of lines
    // apart: asked every 64th time round (and before each wait), not for
    // every record (a call through `dyn` each).
    let mut round = 0u32;
    loop {
        round = round.wrapping_add(1);
        if s.stop || round % 64 == 0 && s.out.failed() {
            return;
        }
        if q.items().is_empty() {
            // A graph entry straight from the merge: its CPU and time (its
            // data is the merge's, asked for again once this borrow ends).
            let entry = match m.next() {
                None => {
                    if follow && !m.finished() {
                        s.out.idle();
                        s.out.flush();
                        if s.out.failed() {
                            return;
                        }
                        host.wait();
                        m.retry_waiting();
                        continue;
                    }
                    return;
                }
                Some(it @ Item::Record { .. }) if gf.is_some() => {
                    admit(gf, &mut q, it);
                    None
                }
                Some(Item::Record { cpu, ts, data }) => {
                    if !la.wants(data) {
                        s.record(&Rec { cpu, ts, data }, None);
                        continue;
                    }
                    Some((cpu, ts))
                }
                Some(Item::Lost { cpu, count, .. }) => {
                    s.lost(cpu, count);
                    continue;
                }
                Some(Item::Error { cpu, error }) => {
                    s.error(host, cpu, &error.to_string());
                    continue;
                }
            };
            if let Some((cpu, ts)) = entry {
                let Some(data) = m.current() else { continue };
                // An entry whose CPU's next record is in the same page
                // needs no wait: the merge's records in between print
                // after it anyway, and are neither held nor copied. (It
                // folds even where the wait would pass HOLD_MAX, as the
                // kernel does.)
                if let Some(p) = m.peek() {
                    let after = p.after;
                    if fold(s, la, &Rec { cpu, ts, data }, Some((&Rec { cpu, ts: p.ts, data: p.data }, p.first))) {
                        m.skip_peeked(after);
                    }
                    continue;
                }
                let data = q.copy(data);
                q.push(Held::Rec { cpu, ts, data });
            }
        }
        let Some(front) = q.pop() else { continue };
        match front {
            Held::Lost { cpu, count } => s.lost(cpu, count),
            Held::Err { cpu, msg } => s.error(host, cpu, &msg),
            Held::Rec { cpu, ts, data } => {
                if la.wants(&data) {
                    while !q.has(cpu) && q.items().len() < HOLD_MAX {
                        match m.next() {
                            Some(it) => admit(gf, &mut q, it),
                            None => break,
                        }
                    }
                }
                let e = Rec { cpu, ts, data: &data };
                let idx = if q.has(cpu) { q.items().iter().position(|h| h.cpu() == cpu) } else { None };
                let consumed = match idx.and_then(|i| q.items().get(i)) {
                    Some(Held::Rec { cpu: nc, ts: nts, data: nd }) if la.wants(&data) => {
                        let first = idx == q.items().iter().position(|h| matches!(h, Held::Rec { .. }));
                        fold(s, la, &e, Some((&Rec { cpu: *nc, ts: *nts, data: nd }, first)))
                    }
                    _ => s.record(&e, None),
                };
                if consumed {
                    if let Some(i) = idx {
                        q.remove(i);
                    }
                }
                q.recycle(data);
            }
        }
    }
}
