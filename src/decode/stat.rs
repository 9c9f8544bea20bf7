//! Counts instead of records: ftcat's `--stat` ([`StatText`], an
//! [`Output`]), and trace-cmd report's `--stat`/`--first-event`/
//! `--last-event`, which read the file's layout rather than its records
//! ([`trace_cmd_info`]).

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::output::{Output, TextSink};
use super::recording::{clock_of, cpu_top};
use super::{DecodeOptions, Stats};
use crate::format::Event;
use crate::merge::{Item, Merge};
use crate::text::{self, env::Decoder, Kernel, Rec};
use crate::tracedat::{Buffer, TraceDat};

/// Records per CPU, lost events, records per event, the time span, and
/// what the printers could not format.
pub struct StatText<'r, 'o> {
    /// The kernel printer, writing nowhere: it counts what it could not
    /// format, and folds graph entries as the text would.
    pub k: Kernel<'r, Decoder>,
    events: &'r [Event],
    out: &'o mut dyn TextSink,
    /// (event id, records), sorted by id.
    per_event: Vec<(u16, u64)>,
}

impl<'r, 'o> StatText<'r, 'o> {
    pub fn new(k: Kernel<'r, Decoder>, events: &'r [Event], out: &'o mut dyn TextSink) -> Self {
        StatText { k, events, out, per_event: Vec::new() }
    }
}

struct Null;
impl Write for Null {
    fn write_str(&mut self, _: &str) -> fmt::Result {
        Ok(())
    }
}

impl Output for StatText<'_, '_> {
    fn record(&mut self, _buffer: usize, r: &Rec, next: Option<&Rec>) -> bool {
        let ty = text::kernel::rec_type(r.data, self.k.endian);
        match self.per_event.binary_search_by_key(&ty, |e| e.0) {
            Ok(i) => self.per_event[i].1 += 1,
            Err(i) => self.per_event.insert(i, (ty, 1)),
        }
        self.k.line(&mut Null, r, next).unwrap_or(false)
    }
    fn lost(&mut self, _cpu: u32, _count: Option<u64>, _shown: bool) {}
    fn flush(&mut self) {
        self.out.flush();
    }
    fn failed(&self) -> bool {
        self.out.failed()
    }
    fn finish(&mut self, s: &Stats) -> fmt::Result {
        let o: &mut dyn Write = &mut *self.out;
        // (A failed write shows in the writer, which the pump checks: no
        // `?` at each one.)
        let _ = o.write_str("CPU      records         lost\n");
        let mut lost: u64 = 0;
        for (cpu, c) in s.cpus.iter().enumerate() {
            lost = lost.saturating_add(c.lost);
            let _ = write!(o, "{:>3} {:>12} {:>12}", cpu, c.records, c.lost);
            if c.unknown_losses > 0 {
                let _ = write!(o, " (+{} losses of unknown size)", c.unknown_losses);
            }
            let _ = o.write_str("\n");
        }
        let _ = o.write_str("\nEVENT                                         records\n");
        let mut ev: Vec<(u64, String)> = Vec::new();
        for &(id, c) in &self.per_event {
            let mut name = String::new();
            let _ = match self.events.iter().find(|e| e.id == id) {
                Some(e) => write!(name, "{}:{}", e.system, e.name),
                None => write!(name, "type {}", id),
            };
            ev.push((c, name));
        }
        // Most records first, then by name.
        crate::sort::sort_by(&mut ev, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for (c, name) in &ev {
            let _ = write!(o, "{:<40} {:>12}\n", name, c);
        }
        let _ = write!(o, "\nrecords: {}\nlost events: {}\ntime span:", s.records, lost);
        match s.first {
            Some(f) => {
                let _ = self.k.time(o, f);
                let _ = o.write_str(" ..");
                let _ = self.k.time(o, s.last);
                let _ = write!(o, " ({} ns)", s.last.saturating_sub(f));
            }
            None => {
                let _ = o.write_str(" (no records)");
            }
        }
        let c = self.k.counts;
        write!(
            o,
            "\nnot formatted by print fmt (fields printed): {}\npartially formatted (a value the recording lacks): {}\nunknown record types: {}\nread errors: {}\n",
            c.fallback, c.partial, c.unknown, s.errors
        )
    }
}

/// trace-cmd report's `--stat` (the recorded CPU stats and where each
/// CPU's data lies) and `--first-event`/`--last-event`.
#[inline(never)]
pub fn trace_cmd_info(o: &mut dyn Write, opts: &DecodeOptions, td: &TraceDat, buf: &Buffer, path: &str) {
    let top = cpu_top(buf);
    if opts.stat {
        let _ = write!(o, "cpus={}\n\nKernel buffer statistics:\n  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n        recorded in the trace data. They should all be zero.\n\n", td.options.cpu_count.unwrap_or(0).max(top));
        if td.options.cpustat.is_empty() {
            let _ = o.write_str(" No stats in this file\n");
        } else {
            // Each option's closing NUL became a newline; then "%s\n".
            for c in &td.options.cpustat {
                let _ = write!(o, "{}\n", c);
            }
            let _ = o.write_str("\n");
        }
        // Compressed data is read from its decompressed copy: CPUs laid
        // end to end after the first page, sizes decompressed.
        let ps = td.layout(buf).page_size as u64;
        let mut at = ps;
        // handle->cpus: the CPUs the buffer lists (none when all are empty).
        for cpu in 0..top {
            let (mut off, mut size) = (0, 0);
            if let Some(c) = buf.cpus.iter().find(|c| c.cpu == cpu) {
                (off, size) = (c.offset, c.size);
                if buf.compressed {
                    let mut pages = td.cpu_pages(buf, c);
                    let mut n = 0;
                    while let Some(Ok(_)) = pages.next_page() {
                        n += 1;
                    }
                    (off, size) = if n > 0 { (at, n * ps) } else { (0, 0) };
                    at += size;
                }
            }
            let _ = write!(o, "CPU{} data recorded at offset=0x{:x}\n    {} bytes in size\n", cpu, off, size);
        }
        return;
    }
    let _ = write!(o, "List of CPUs in {} with data:\n", path);
    let in_ns = text::clock_in_ns(clock_of(td, buf));
    for c in &buf.cpus {
        let mut m = Merge::from_pages(td.layout(buf), alloc::vec![td.cpu_pages(buf, c)]);
        let (mut first, mut last) = (None, 0);
        while let Some(it) = m.next() {
            if let Item::Record { ts, .. } = it {
                first.get_or_insert(ts);
                last = ts;
            }
        }
        let Some(first) = first else { continue };
        let _ = write!(o, "  {}", c.cpu);
        let ts = |o: &mut dyn Write, what: &str, t: u64| {
            // "%12d" in ns clocks: precision 12 whose int power of ten
            // overflowed.
            let (p, t, w) = if in_ns { (1_000_000, (t + 500) / 1000, 6) } else { (0xffff_ffff_d4a5_1000u64, t, 12) };
            write!(o, "{}{:>5}.{:0w$}", what, t / p, t % p, w = w)
        };
        if opts.first_event {
            let _ = ts(o, "\tFirst event:", first);
        }
        if opts.last_event {
            let _ = ts(o, "\tLast event:", last);
        }
        let _ = o.write_str("\n");
    }
}
