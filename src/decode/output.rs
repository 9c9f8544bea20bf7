//! Where the pump's records go: [`Output`], and its text implementations
//! (the kernel's `trace` file, `trace-cmd report`). `--stat` is one more
//! ([`super::stat::StatText`]); an exporter or a profile is another, written
//! outside this module against the same trait.

use alloc::string::String;
#[cfg(feature = "trace-cmd-style")]
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::{Recording, Stats};
#[cfg(feature = "fast-print")]
use crate::sys::bytes;
use crate::text::kernel::Wrote;
#[cfg(feature = "fast-print")]
use crate::text::kernel::Tracer;
#[cfg(feature = "fast-print")]
use crate::{printfmt::Out, text::Env};
use crate::text::{self, env::Decoder, Kernel, Rec};
#[cfg(feature = "trace-cmd-style")]
use crate::text::tracecmd::TraceCmd;

/// What the pump drives. Each call comes in merge order; `r.cpu` is the
/// record's CPU in its buffer, `buffer` the index of that buffer in the
/// input's list (0 when there is one).
///
/// A record's type, event format, pid and task name are the
/// [`Recording`]'s to answer (`event_of`, `pid`, `comm`); an output keeps
/// a reference to it from its constructor.
pub trait Output {
    /// Before the first record (the kernel's header block, trace-cmd's `cpus=`).
    fn header(&mut self) -> fmt::Result {
        Ok(())
    }
    /// A record of `cpu` is next, shown or filtered out.
    fn arrive(&mut self, _cpu: u32) {}
    /// `-F`'s COMM test on the name this output gives `pid`.
    fn comm_test(&mut self, rec: &Recording, pid: i32, test: &dyn Fn(&[u8]) -> bool) -> bool {
        test(rec.comm(pid).as_bytes())
    }
    /// One record that passed every filter. `next` is the record that
    /// follows it on its CPU (or, for [`Output::next_in_merge`], in the
    /// merge), given only for a graph entry, which may fold its exit into
    /// one line: true when it did, and the pump then drops `next`.
    fn record(&mut self, buffer: usize, r: &Rec, next: Option<&Rec>) -> bool;
    /// Events were lost on `cpu` before its next record; None: how many is
    /// not known. `shown`: whether `--cpu` shows that CPU.
    fn lost(&mut self, cpu: u32, count: Option<u64>, shown: bool);
    /// Fold a graph entry only with the very next record of the merge (as
    /// trace-cmd's peek does), not the next of its CPU.
    fn next_in_merge(&self) -> bool {
        false
    }
    /// A live source has nothing yet: what waits for a next record goes out.
    fn idle(&mut self) {}
    /// Make what was written so far visible (before an error message, while idle).
    fn flush(&mut self) {}
    /// The output takes no more (its writer failed): the pump stops.
    fn failed(&self) -> bool {
        false
    }
    /// After the last record, with the counts of the records shown.
    fn finish(&mut self, _stats: &Stats) -> fmt::Result {
        Ok(())
    }
}

/// A text writer the printers write into: `core::fmt::Write` plus what a
/// buffered writer offers the pump.
pub trait TextSink: Write {
    /// Write out what is buffered.
    fn flush(&mut self) {}
    /// A write failed: nothing more will be written.
    fn failed(&self) -> bool {
        false
    }
    /// Room for a short line (or its start) after the buffered bytes,
    /// written straight in by [`Kernel::line_into`] and then
    /// [`TextSink::commit`]ted as it is
    /// (so without raw-byte escapes); None when the writer has no such
    /// buffer.
    fn room(&mut self) -> Option<&mut [u8]> {
        None
    }
    /// Count `n` bytes written into [`TextSink::room`].
    fn commit(&mut self, _n: usize) {}
}

impl TextSink for String {}

/// Text as the kernel's `trace` file prints it.
pub struct KernelText<'r, 'o> {
    pub k: Kernel<'r, Decoder>,
    out: &'o mut dyn TextSink,
    rec: &'r Recording,
    /// Short lines may go straight into the writer's buffer: no task name
    /// holds a raw-byte escape (the rest of such a line is numbers and
    /// names from formats).
    direct: bool,
}

impl<'r, 'o> KernelText<'r, 'o> {
    pub fn new(k: Kernel<'r, Decoder>, rec: &'r Recording, out: &'o mut dyn TextSink) -> Self {
        // Escapes stand for bytes that are not UTF-8, and for the lead
        // bytes (0xEF) of chars of the escape range itself.
        let direct = core::str::from_utf8(&rec.saved).is_ok() && !rec.saved.contains(&0xef);
        KernelText {
            k,
            out,
            rec,
            direct,
        }
    }
}

/// The text of a print fmt event and its newline, after the line's
/// head, printed into `dst` (the writer's buffer after the head) as the
/// bytes the print fmt gives: no `core::fmt::Write` round trip, whose
/// UTF-8 check and escapes the output edge would only undo, and no copy.
/// The bytes written, 0 where [`Kernel::line_tail`] must print it: fields
/// instead of the print fmt, or a line longer than the writer's room for
/// one. One that fits is far inside its trace_seq's bound (a page, less
/// the head) even with each byte counted as a three-byte escape, as the
/// bound counts them.
#[cfg(feature = "fast-print")]
fn tail_raw(k: &mut Kernel<'_, Decoder>, dst: &mut [u8], r: &Rec, id: u16) -> usize {
    let mut line = Out::on(dst);
    let Some(how) = k.env.render_bytes(id, r.data, &mut line) else { return 0 };
    line.push(b'\n');
    if !line.fits() {
        return 0;
    }
    if how == text::Rendered::Partial {
        k.counts.partial += 1;
    }
    line.len()
}

impl Output for KernelText<'_, '_> {
    fn header(&mut self) -> fmt::Result {
        let rec = self.rec;
        let h = text::HeaderInfo { tracer: &rec.tracer, entries: rec.entries, written: rec.entries + rec.overrun, cpus: rec.ncpus, release: &rec.release, model: &rec.model };
        self.k.header(self.out, &h)
    }
    #[inline]
    fn record(&mut self, _buffer: usize, r: &Rec, next: Option<&Rec>) -> bool {
        // Syscall lines, graph lines, and the start of print fmt events'
        // lines, straight into the output buffer, no copy.
        if self.direct {
            if let Some(dst) = self.out.room() {
                // (The tracer first, here: other recordings pay no call.)
                #[cfg(feature = "fast-print")]
                if self.k.tracer == Tracer::Graph {
                    if let Some((k, folded)) = self.k.graph_into(dst, r, next) {
                        self.out.commit(k);
                        return folded;
                    }
                }
                let wrote = if next.is_none() { self.k.line_into(dst, r) } else { None };
                match wrote {
                    Some(Wrote::Line(k)) => {
                        self.out.commit(k);
                        return false;
                    }
                    Some(Wrote::Head(k, c)) => {
                        // The text after the head in the same room: one
                        // room and one commit a line (nearly every line
                        // fits: the room is LINE_MAX).
                        #[cfg(feature = "fast-print")]
                        let n = tail_raw(&mut self.k, bytes::tail(dst, k), r, c.id);
                        #[cfg(not(feature = "fast-print"))]
                        let n = 0;
                        self.out.commit(k + n);
                        if n == 0 {
                            let _ = self.k.line_tail(self.out, r, c, k);
                        }
                        return false;
                    }
                    None => {}
                }
            }
        }
        self.k.line(self.out, r, next).unwrap_or(false)
    }
    fn lost(&mut self, cpu: u32, count: Option<u64>, shown: bool) {
        if shown {
            let _ = self.k.lost(self.out, cpu, count);
        }
    }
    fn idle(&mut self) {
        // No next record yet: a waiting latency line goes out as
        // trace_pipe prints it (delay 0).
        let _ = self.k.finish(self.out);
    }
    fn flush(&mut self) {
        self.out.flush();
    }
    fn failed(&self) -> bool {
        self.out.failed()
    }
    fn finish(&mut self, _stats: &Stats) -> fmt::Result {
        // latency-format holds each line for the next record's timestamp.
        self.k.finish(self.out)
    }
}

/// Text as `trace-cmd report` prints it.
#[cfg(feature = "trace-cmd-style")]
pub struct TraceCmdText<'r, 'o> {
    pub t: TraceCmd<'r>,
    out: &'o mut dyn TextSink,
    ncpus: u32,
    /// Several buffers: their names, each line led by its own (and the
    /// widest name's width); empty for one buffer.
    bufs: Vec<String>,
    width: usize,
}

#[cfg(feature = "trace-cmd-style")]
impl<'r, 'o> TraceCmdText<'r, 'o> {
    pub fn new(t: TraceCmd<'r>, rec: &Recording, bufs: Vec<String>, out: &'o mut dyn TextSink) -> Self {
        let width = bufs.iter().map(|n| n.len()).max().unwrap_or(0);
        TraceCmdText { t, out, ncpus: rec.ncpus, bufs, width }
    }
}

#[cfg(feature = "trace-cmd-style")]
impl Output for TraceCmdText<'_, '_> {
    fn header(&mut self) -> fmt::Result {
        write!(self.out, "cpus={}\n", self.ncpus)
    }
    fn arrive(&mut self, cpu: u32) {
        self.t.arm(cpu);
    }
    fn comm_test(&mut self, _rec: &Recording, pid: i32, test: &dyn Fn(&[u8]) -> bool) -> bool {
        test(self.t.comm(pid).as_bytes())
    }
    fn record(&mut self, buffer: usize, r: &Rec, next: Option<&Rec>) -> bool {
        // The line's start straight into the output buffer, no copy.
        if self.bufs.is_empty() {
            if let Some(dst) = self.out.room() {
                if let Some((k, whole)) = self.t.line_into(dst, r) {
                    self.out.commit(k);
                    return !whole && self.t.line_tail(self.out, r, next, k).unwrap_or(false);
                }
            }
        }
        // print_handle_file(): "%*s: " before an instance's records, "%*s  "
        // before the top buffer's.
        if let Some(n) = self.bufs.get(buffer) {
            let o: &mut dyn Write = self.out;
            let _ = text::pad(o, self.width.saturating_sub(n.chars().count()));
            let _ = o.write_str(n);
            let _ = o.write_str(if n.is_empty() { "  " } else { ": " });
        }
        self.t.line(self.out, r, next).unwrap_or(false)
    }
    fn lost(&mut self, cpu: u32, count: Option<u64>, _shown: bool) {
        self.t.lost(cpu, count);
    }
    fn next_in_merge(&self) -> bool {
        true
    }
    fn flush(&mut self) {
        self.out.flush();
    }
    fn failed(&self) -> bool {
        self.out.failed()
    }
}
