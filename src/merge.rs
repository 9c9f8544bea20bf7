//! k-way merge of per-CPU page streams by timestamp, in bounded memory: one
//! page per CPU (plus a decompressed chunk for zstd files), however long
//! the recording.
//!
//! Ties go to the lower CPU, as both the kernel (`__find_next_entry` takes
//! a later CPU only when its timestamp is strictly smaller) and trace-cmd
//! (`tracecmd_read_next_data`) do. Within one CPU, records keep ring order.
//!
//! A page that says events were lost before it yields an [`Item::Lost`]
//! right before that CPU's next record, which is where the kernel prints
//! its `[LOST n EVENTS]` line. A corrupt page yields an [`Item::Error`] and
//! the merge goes on with that CPU's next page.
//!
//! Sources may be live: [`Fill::Empty`] means "nothing now". Such a CPU sits
//! out until it has data again (like `trace_pipe`, which merges what is
//! there); `next` returns None when no CPU has anything, and
//! [`Merge::finished`] tells whether every source has ended.

use crate::ring::{Page, PageLayout, RecordCursor};
use crate::tracedat::{CpuPages, Error, Reason};
use alloc::boxed::Box;
use alloc::vec::Vec;

/// What a page source had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fill {
    /// A page was put in the buffer.
    Page,
    /// Nothing right now (a live buffer that is empty); ask again later.
    Empty,
    /// No more pages, ever.
    End,
}

/// Where one CPU's pages come from: a trace.dat stream, a live
/// `trace_pipe_raw`, a test vector.
pub trait PageSource {
    /// The CPU these pages belong to.
    fn cpu(&self) -> u32;
    /// Put the next page into `page` (resized to the page).
    fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error>;
}

impl PageSource for CpuPages<'_> {
    fn cpu(&self) -> u32 {
        self.cpu.cpu
    }
    fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error> {
        match self.next_into(page) {
            None => Ok(Fill::End),
            Some(Err(e)) => Err(e),
            Some(Ok(())) => Ok(Fill::Page),
        }
    }
}

/// One step of the merge.
#[derive(Debug)]
pub enum Item<'a> {
    /// A record: its CPU, absolute timestamp and payload (from common_type on).
    Record { cpu: u32, ts: u64, data: &'a [u8] },
    /// Events were lost on `cpu` before the record that comes next from it
    /// (at `ts`); `count` when the kernel stored it.
    Lost { cpu: u32, ts: u64, count: Option<u64> },
    /// A page or the file could not be read; the merge goes on.
    Error { cpu: u32, error: Error },
}

/// A CPU's record after the one [`Merge::next`] returned, in the same
/// page.
pub struct Peek<'a> {
    pub ts: u64,
    pub data: &'a [u8],
    /// It is also the merge's next record.
    pub first: bool,
    /// For [`Merge::skip_peeked`].
    pub after: After,
}

/// The walk of a CPU's page past a peeked record.
#[derive(Clone, Copy)]
pub struct After(RecordCursor);

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Needs the next record (from the cursor, or a new page).
    Need,
    /// `head` holds the next record.
    Has,
    /// The source is empty for now.
    Waiting,
    Ended,
}

struct Cpu<'s> {
    src: Box<dyn PageSource + 's>,
    cpu: u32,
    page: Vec<u8>,
    /// `page` holds a page being walked. (The buffer keeps its length in
    /// between: a source refilling it in place need not zero it first.)
    live: bool,
    cur: RecordCursor,
    /// Pending record: timestamp, start and length of its data in `page`.
    head: (u64, u32, u32),
    state: State,
    /// A lost-events marker to emit before the next record: (count known?).
    lost: Option<Option<u64>>,
    pages: u64,
}

pub struct Merge<'s> {
    cpus: Vec<Cpu<'s>>,
    layout: PageLayout,
    /// Index of the CPU whose record was returned last (to advance lazily:
    /// the returned slice borrows its page).
    last: Option<usize>,
    /// Errors waiting to be returned: a queue, `draining` (newest first)
    /// then `errors` (oldest first) — a cut file with thousands of CPUs
    /// reports one error each, and removing each from the front of one
    /// Vec took seconds.
    errors: Vec<(u32, Error)>,
    draining: Vec<(u32, Error)>,
    /// CPUs to ask for their next record on the next call.
    need: Vec<usize>,
    /// Min-heap of (timestamp, index) of the CPUs holding a record: lower
    /// index = lower CPU wins ties. O(log k) per record for many-CPU boxes.
    heap: Vec<(u64, usize)>,
}

impl<'s> Merge<'s> {
    /// Merge `sources` (any order; they are sorted by CPU for tie-breaking).
    pub fn new(layout: PageLayout, sources: Vec<Box<dyn PageSource + 's>>) -> Merge<'s> {
        let mut cpus: Vec<Cpu<'s>> = sources
            .into_iter()
            .map(|src| Cpu { cpu: src.cpu(), src, page: Vec::new(), live: false, cur: RecordCursor::default(), head: (0, 0, 0), state: State::Need, lost: None, pages: 0 })
            .collect();
        crate::sort::sort_by_key(&mut cpus, |c| u64::from(c.cpu));
        let need = (0..cpus.len()).collect();
        Merge { cpus, layout, last: None, errors: Vec::new(), draining: Vec::new(), need, heap: Vec::new() }
    }

    /// Merge the page streams of a trace.dat buffer.
    pub fn from_pages(layout: PageLayout, mut streams: Vec<CpuPages<'s>>) -> Merge<'s> {
        // pop and reverse, not into_iter().map().collect(): no IntoIter of
        // CpuPages and its drop code.
        let mut v: Vec<Box<dyn PageSource + 's>> = Vec::with_capacity(streams.len());
        while let Some(s) = streams.pop() {
            v.push(Box::new(s));
        }
        v.reverse();
        Merge::new(layout, v)
    }

    /// The CPUs being merged.
    pub fn cpus(&self) -> impl Iterator<Item = u32> + '_ {
        self.cpus.iter().map(|c| c.cpu)
    }

    /// Every source has ended (a None from `next` with this false means
    /// live sources are empty for now).
    pub fn finished(&self) -> bool {
        !self.has_errors() && self.cpus.iter().all(|c| c.state == State::Ended)
    }

    /// Pages read so far on all CPUs.
    pub fn pages_read(&self) -> u64 {
        self.cpus.iter().map(|c| c.pages).sum()
    }

    /// Make CPUs that were empty ask their source again on the next call.
    pub fn retry_waiting(&mut self) {
        for (i, c) in self.cpus.iter_mut().enumerate() {
            if c.state == State::Waiting {
                c.state = State::Need;
                self.need.push(i);
            }
        }
    }

    /// The next record, lost marker or error, in timestamp order.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Option<Item<'_>> {
        // The usual step first: the next record of the last record's CPU,
        // from the same page, here rather than through `refill` (which
        // takes as long again as the record itself).
        if let Some(i) = self.last {
            // (Not in the board build: fewer bytes, every record through `refill`.)
            if cfg!(feature = "fast-print") && self.need.is_empty() && !self.has_errors() {
                if let Some(k) = self.next_in_page(i) {
                    return Some(self.record(k));
                }
            }
        }
        // The CPU of the last record, refilled first (as before the other
        // CPUs waiting for a refill) and kept out of the heap: when its
        // next record is also the merge's next, as in runs of one CPU,
        // it goes out without a heap push and pop. (`get`, not `[i]`, on
        // this once-a-record path: at opt-level z indexing a Vec is a call.)
        let mut top = None;
        if let Some(i) = self.last.take() {
            if self.refill(i) {
                top = Some(i);
            }
        }
        while let Some(i) = self.need.pop() {
            if self.cpus.get(i).is_some_and(|c| matches!(c.state, State::Need)) && self.refill(i) {
                self.push(self.cpus[i].head.0, i);
            }
        }
        if let Some(i) = top {
            let c = self.cpus.get(i)?;
            let key = (c.head.0, i);
            // The heap orders (ts, index): lower CPU index wins ties.
            if !self.has_errors() && c.lost.is_none() && self.heap.first().map_or(true, |&h| key < h) {
                self.last = Some(i);
                return Some(self.record(i));
            }
            self.push(key.0, i);
        }
        if let Some((cpu, error)) = self.next_error() {
            return Some(Item::Error { cpu, error });
        }
        let &(_, i) = self.heap.first()?;
        let c = &mut self.cpus[i];
        if let Some(count) = c.lost.take() {
            return Some(Item::Lost { cpu: c.cpu, ts: c.head.0, count });
        }
        self.pop();
        self.last = Some(i);
        Some(self.record(i))
    }

    /// The record after the one [`Merge::next`] returned last, of the
    /// same CPU, when it is in the same page (a graph entry folds its
    /// exit). It stays the merge's, to come out in its turn unless
    /// [`Merge::skip_peeked`] drops it.
    pub fn peek(&self) -> Option<Peek<'_>> {
        let i = self.last?;
        let c = &self.cpus[i];
        // (A speed-up the board build leaves out: there a graph entry
        // waits for its CPU's next record in the pump's queue.)
        if !cfg!(feature = "fast-print") || !c.live {
            return None;
        }
        let mut cur = c.cur;
        let r = cur.next(&self.layout, &c.page)?.ok()?;
        // The merge's next record too when it comes before every other
        // CPU's (the heap's order: time, then CPU).
        Some(Peek { ts: r.ts, data: r.data, first: self.heap.first().map_or(true, |&h| (r.ts, i) < h), after: After(cur) })
    }

    /// The record [`Merge::next`] returned last, again (for a caller that
    /// had to let go of it to peek).
    pub fn current(&self) -> Option<&[u8]> {
        match self.record(self.last?) {
            Item::Record { data, .. } => Some(data),
            _ => None,
        }
    }

    /// Drop the record [`Merge::peek`] showed (before any other call).
    pub fn skip_peeked(&mut self, after: After) {
        if let Some(i) = self.last {
            self.cpus[i].cur = after.0;
        }
    }

    /// Step CPU `i`, the last record's, to its next record when it is in
    /// the same page: the CPU whose record is the merge's next, now
    /// `last`: `i` itself, or the heap's top, which that record took the
    /// place of (a swap and one sift instead of a push, a pop and the
    /// slow path: with two CPUs, the usual switch from one to the other).
    /// None with `last` taken, and the CPU back in the heap when it has a
    /// record. Anything but a small data record (the page's end, time
    /// stamps, long records, damage, lost events) is left to `refill`,
    /// the cursor as it was.
    #[inline(always)]
    fn next_in_page(&mut self, i: usize) -> Option<usize> {
        let c = self.cpus.get_mut(i)?;
        if !c.live || c.lost.is_some() {
            return None;
        }
        let r = c.cur.next_small(&self.layout, &c.page)?;
        let start = r.data.as_ptr() as usize - c.page.as_ptr() as usize;
        let ts = r.ts;
        c.head = (ts, start as u32, r.data.len() as u32);
        c.state = State::Has;
        // The heap orders (ts, index): lower CPU index wins ties.
        let Some(&top) = self.heap.first() else { return Some(i) };
        if (ts, i) < top {
            return Some(i);
        }
        // The top comes out as `Merge::next`'s pop would take it, unless
        // lost events come first (an Item of their own).
        let j = top.1;
        if self.cpus.get(j).is_some_and(|c| c.lost.is_none()) {
            if let Some(t) = self.heap.first_mut() {
                *t = (ts, i);
            }
            sift_down(&mut self.heap);
            self.last = Some(j);
            return Some(j);
        }
        self.last = None;
        self.push(ts, i);
        None
    }

    fn has_errors(&self) -> bool {
        !(self.errors.is_empty() && self.draining.is_empty())
    }

    /// The oldest error not yet returned.
    fn next_error(&mut self) -> Option<(u32, Error)> {
        if self.draining.is_empty() {
            self.draining = core::mem::take(&mut self.errors);
            self.draining.reverse();
        }
        self.draining.pop()
    }

    /// CPU `i`'s pending record. (Inline with fast-print: a call per
    /// record that re-checked what the caller had just stored.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    fn record(&self, i: usize) -> Item<'_> {
        let Some(c) = self.cpus.get(i) else { return Item::Record { cpu: 0, ts: 0, data: &[] } };
        let (ts, s, n) = c.head;
        // (refill took `head` from this page: the range is in it.)
        Item::Record { cpu: c.cpu, ts, data: c.page.get(s as usize..(s + n) as usize).unwrap_or(&[]) }
    }

    fn push(&mut self, ts: u64, i: usize) {
        let h = &mut self.heap;
        h.push((ts, i));
        let mut k = h.len() - 1;
        while k > 0 {
            let p = (k - 1) / 2;
            if h[p] <= h[k] {
                break;
            }
            h.swap(p, k);
            k = p;
        }
    }

    fn pop(&mut self) {
        let h = &mut self.heap;
        let Some(last) = h.pop() else { return };
        if h.is_empty() {
            return;
        }
        h[0] = last;
        sift_down(h);
    }

    /// Find CPU `i`'s next record, reading pages as needed: true when it
    /// has one.
    fn refill(&mut self, i: usize) -> bool {
        let layout = self.layout;
        let Some(c) = self.cpus.get_mut(i) else { return false };
        loop {
            if c.live {
                // (With `next_in_page` this is a page's first record: the
                // call without the inlined usual case is enough.)
                let r = if cfg!(feature = "fast-print") { c.cur.next_outlined(&layout, &c.page) } else { c.cur.next(&layout, &c.page) };
                match r {
                    Some(Ok(r)) => {
                        let start = r.data.as_ptr() as usize - c.page.as_ptr() as usize;
                        c.head = (r.ts, start as u32, r.data.len() as u32);
                        c.state = State::Has;
                        return true;
                    }
                    Some(Err(e)) => {
                        self.errors.push((c.cpu, Error::new("ring page", c.pages.saturating_sub(1), Reason::Page(e))));
                        c.live = false;
                        continue;
                    }
                    None => c.live = false,
                }
            }
            match c.src.fill(&mut c.page) {
                Ok(Fill::Page) => {
                    c.pages += 1;
                    match Page::parse(&layout, &c.page) {
                        Ok(p) => {
                            if p.missed {
                                c.lost = Some(match c.lost {
                                    // Two lossy pages before one record: add up what is known.
                                    Some(prev) => prev.and_then(|a| p.lost.map(|b| a.saturating_add(b))),
                                    None => p.lost,
                                });
                            }
                            c.cur = p.cursor();
                            c.live = true;
                        }
                        Err(e) => {
                            self.errors.push((c.cpu, Error::new("ring page", c.pages - 1, Reason::Page(e))));
                            c.live = false;
                        }
                    }
                }
                Ok(Fill::Empty) => {
                    c.live = false;
                    c.state = State::Waiting;
                    return false;
                }
                Ok(Fill::End) => {
                    c.live = false;
                    c.state = State::Ended;
                    return false;
                }
                Err(e) => {
                    self.errors.push((c.cpu, e));
                    c.live = false;
                    // The source decides whether it can go on (a file
                    // stream ends after an error; its next fill says End).
                }
            }
        }
    }
}

/// Restore the min-heap order after its top was replaced.
fn sift_down(h: &mut [(u64, usize)]) {
    let mut k = 0;
    loop {
        let (l, r) = (2 * k + 1, 2 * k + 2);
        let mut m = k;
        if l < h.len() && h[l] < h[m] {
            m = l;
        }
        if r < h.len() && h[r] < h[m] {
            m = r;
        }
        if m == k {
            break;
        }
        h.swap(k, m);
        k = m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cursor::Endian;
    use alloc::vec;

    /// Pages from memory; `empty_after` makes it report Empty once, like a
    /// live buffer momentarily drained.
    struct VecSource {
        cpu: u32,
        pages: Vec<Vec<u8>>,
        at: usize,
    }

    impl PageSource for VecSource {
        fn cpu(&self) -> u32 {
            self.cpu
        }
        fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error> {
            match self.pages.get(self.at) {
                None => Ok(Fill::End),
                Some(p) if p.is_empty() => {
                    self.at += 1;
                    Ok(Fill::Empty)
                }
                Some(p) => {
                    self.at += 1;
                    page.clear();
                    page.extend_from_slice(p);
                    Ok(Fill::Page)
                }
            }
        }
    }

    /// A little-endian 64-bit page with one 4-byte record per delta.
    fn page(ts: u64, deltas: &[u32], tag: u8, lost: Option<Option<u64>>) -> Vec<u8> {
        let mut p = vec![0u8; 256];
        p[..8].copy_from_slice(&ts.to_le_bytes());
        let mut pos = 16;
        for (k, d) in deltas.iter().enumerate() {
            p[pos..pos + 4].copy_from_slice(&((d << 5) | 1).to_le_bytes());
            p[pos + 4] = tag;
            p[pos + 5] = k as u8;
            pos += 8;
        }
        let mut commit = (pos - 16) as u64;
        match lost {
            Some(Some(n)) => {
                commit |= crate::ring::MISSED_EVENTS | crate::ring::MISSED_STORED;
                p[pos..pos + 8].copy_from_slice(&n.to_le_bytes());
            }
            Some(None) => commit |= crate::ring::MISSED_EVENTS,
            None => {}
        }
        p[8..16].copy_from_slice(&commit.to_le_bytes());
        p
    }

    fn src(cpu: u32, pages: Vec<Vec<u8>>) -> Box<dyn PageSource> {
        Box::new(VecSource { cpu, pages, at: 0 })
    }

    fn drain(m: &mut Merge) -> Vec<(u32, u64, i32)> {
        let mut out = Vec::new();
        while let Some(it) = m.next() {
            out.push(match it {
                Item::Record { cpu, ts, data } => (cpu, ts, data[0] as i32 * 100 + data[1] as i32),
                Item::Lost { cpu, ts, count } => (cpu, ts, -(count.unwrap_or(0) as i32) - 1),
                Item::Error { cpu, .. } => (cpu, 0, -1000),
            });
        }
        out
    }

    #[test]
    fn merges_by_time_lower_cpu_first_on_ties() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        // CPU given out of order: sorted internally.
        let mut m = Merge::new(
            l,
            vec![
                src(1, vec![page(10, &[0, 5, 5], 1, None), page(40, &[0], 1, None)]),
                src(0, vec![page(10, &[0, 1], 0, None), page(30, &[0, 10], 0, None)]),
            ],
        );
        let got = drain(&mut m);
        assert_eq!(
            got,
            vec![(0, 10, 0), (1, 10, 100), (0, 11, 1), (1, 15, 101), (1, 20, 102), (0, 30, 0), (0, 40, 1), (1, 40, 100)]
        );
        assert!(m.finished());
        assert_eq!(m.pages_read(), 4);
    }

    /// A peek shows the CPU's next record in the same page (and whether
    /// the merge yields it next), leaves it in the merge, and a skip drops
    /// just that one; at a page's end there is nothing to peek.
    #[test]
    #[cfg(feature = "fast-print")]
    fn peek_and_skip_within_a_page() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        let mut m = Merge::new(l, vec![src(0, vec![page(10, &[0, 1, 1], 0, None), page(30, &[0], 0, None)]), src(1, vec![page(11, &[0], 1, None)])]);
        let peeked = |m: &Merge| m.peek().map(|p| (p.ts, p.data[1], p.first));
        assert!(matches!(m.next(), Some(Item::Record { cpu: 0, ts: 10, .. })));
        // CPU 1's record at 11 ties with CPU 0's: the lower CPU goes first.
        assert_eq!(peeked(&m), Some((11, 1, true)));
        assert!(matches!(m.next(), Some(Item::Record { cpu: 0, ts: 11, .. })));
        assert_eq!(peeked(&m), Some((12, 2, false)));
        m.skip_peeked(m.peek().unwrap().after);
        assert!(matches!(m.next(), Some(Item::Record { cpu: 1, ts: 11, .. })));
        assert!(matches!(m.next(), Some(Item::Record { cpu: 0, ts: 30, .. })));
        assert_eq!(peeked(&m), None);
        assert!(m.next().is_none() && m.finished());
    }

    #[test]
    fn many_cpus_merge_in_order() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        let mut srcs = Vec::new();
        // 40 CPUs, each with pages at interleaved times and many ties.
        for cpu in (0..40u32).rev() {
            let pages = (0..3u64).map(|k| page(100 * k + (cpu as u64 % 7), &[0, 3, 3, 0, 1], cpu as u8, None)).collect();
            srcs.push(src(cpu, pages));
        }
        let mut m = Merge::new(l, srcs);
        let got = drain(&mut m);
        assert_eq!(got.len(), 40 * 3 * 5);
        let mut want = got.clone();
        // Stable by (ts, cpu): per-CPU order is kept since each CPU's times never go back.
        want.sort_by_key(|r| (r.1, r.0));
        assert_eq!(got, want);
    }

    #[test]
    fn lost_markers_come_before_the_next_record_of_that_cpu() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        let mut m = Merge::new(
            l,
            vec![
                src(0, vec![page(1, &[0], 0, None), page(50, &[0], 0, Some(Some(7)))]),
                src(1, vec![page(20, &[0], 1, Some(None)), page(30, &[], 1, Some(Some(3))), page(60, &[0], 1, Some(Some(4)))]),
            ],
        );
        let got = drain(&mut m);
        // CPU1: unknown count, then 3 + 4 folded before the record at 60.
        assert_eq!(got, vec![(0, 1, 0), (1, 20, -1), (1, 20, 100), (0, 50, -8), (0, 50, 0), (1, 60, -8), (1, 60, 100)]);
    }

    #[test]
    fn corrupt_page_is_reported_and_skipped() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        let mut bad = page(5, &[0], 0, None);
        bad[8..16].copy_from_slice(&5000u64.to_le_bytes());
        let mut m = Merge::new(l, vec![src(0, vec![page(1, &[0], 0, None), bad, page(9, &[0], 0, None)])]);
        let got = drain(&mut m);
        assert_eq!(got, vec![(0, 1, 0), (0, 0, -1000), (0, 9, 0)]);
    }

    #[test]
    fn live_sources_wait_when_empty() {
        let l = PageLayout::new(Endian::Little, 8, 256);
        let mut m = Merge::new(
            l,
            vec![src(0, vec![page(1, &[0], 0, None), vec![], page(9, &[0], 0, None)]), src(1, vec![vec![], page(5, &[0], 1, None)])],
        );
        assert_eq!(drain(&mut m), vec![(0, 1, 0)]);
        assert!(!m.finished());
        m.retry_waiting();
        assert_eq!(drain(&mut m), vec![(1, 5, 100), (0, 9, 0)]);
        assert!(m.finished());
    }

    /// A source whose data is gone (a CPU of a cut file): one error, then
    /// the end, as a file stream does.
    struct Gone(u32, bool);

    impl PageSource for Gone {
        fn cpu(&self) -> u32 {
            self.0
        }
        fn fill(&mut self, _: &mut Vec<u8>) -> Result<Fill, Error> {
            if core::mem::replace(&mut self.1, true) {
                return Ok(Fill::End);
            }
            Err(Error::new("cpu data", u64::from(self.0), Reason::Truncated { at: 0, want: 1 }))
        }
    }

    /// Every error comes out once, and a queue of tens of thousands (one per
    /// CPU of a cut file) drains in linear time.
    #[test]
    fn errors_are_a_queue() {
        let n = 50_000u32;
        let sources: Vec<Box<dyn PageSource>> = (0..n).rev().map(|c| Box::new(Gone(c, false)) as Box<dyn PageSource>).collect();
        let mut m = Merge::new(PageLayout::new(Endian::Little, 8, 256), sources);
        let mut cpus = Vec::new();
        while let Some(it) = m.next() {
            match it {
                Item::Error { cpu, .. } => cpus.push(cpu),
                _ => panic!("only errors"),
            }
        }
        cpus.sort_unstable();
        assert!(cpus.iter().copied().eq(0..n), "{} errors", cpus.len());
    }
}
