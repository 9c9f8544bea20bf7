//! An exporter as a [`decode::Output`]: the pump's records, after every
//! filter of [`DecodeOptions`], become [`Row`]s for [`Export`]; the bytes
//! go to the caller's drain in pieces.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::{buf::Buf, jsonl::Jsonl, perfetto::Perfetto, CpuStat, Export, Meta, Row};
use crate::decode::{self, recording::stat_num, DecodeOptions, Host, Output, Recording, Stats};
use crate::merge::Merge;
use crate::text::{env::Decoder, kernel::rec_type, Classes, Kernel, Opts, Rec};

/// The formats `--export` takes, by name.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Format {
    Perfetto,
    /// Perfetto with sched_switch/sched_waking in `compact_sched` form.
    PerfettoCompact,
    Jsonl,
}

impl Format {
    pub const NAMES: &'static str = "perfetto|perfetto-compact|jsonl";

    pub fn parse(name: &str) -> Option<Format> {
        match name {
            "perfetto" => Some(Format::Perfetto),
            "perfetto-compact" => Some(Format::PerfettoCompact),
            "jsonl" => Some(Format::Jsonl),
            _ => None,
        }
    }

    /// Bytes that are not text (refused to a terminal).
    pub fn binary(self) -> bool {
        self != Format::Jsonl
    }
}

/// Bytes are handed to the drain in pieces of about this size.
const CHUNK: usize = 256 << 10;

/// Where the bytes go: false when they could not be written (the pump stops).
pub type Drain<'o> = &'o mut dyn FnMut(&[u8]) -> bool;

/// What the recording says beyond [`Recording`], from its file (or the live tracefs).
pub struct Extra<'a> {
    /// The traced kernel's uname line (`Linux HOST 6.12.1 x86_64`; empty: unknown).
    pub uname: &'a str,
    pub page_size: u32,
    /// Per-CPU `stats` texts, indexed by CPU (may be empty), asked for
    /// when the export ends: a live buffer's counts are the ones at its end.
    pub cpustat: &'a dyn Fn() -> Vec<String>,
}

/// Each of the pump's calls into an [`Export`].
pub struct Exporter<'r, 'o> {
    k: Kernel<'r, Decoder>,
    rec: &'r Recording,
    meta: Meta<'r>,
    ex: Box<dyn Export>,
    /// Event by id, looked up once per record.
    by_id: Vec<Option<&'r crate::format::Event>>,
    cpustat: &'r dyn Fn() -> Vec<String>,
    out: Buf,
    drain: Drain<'o>,
    failed: bool,
    /// Losses waiting for their CPU's next record, which gives their time.
    pending: Vec<(u32, Option<u64>)>,
    /// The last row's latency columns, and the common flags and preempt
    /// count they were made from (a record's bytes 2 and 3, which seldom
    /// change from one record to the next).
    lat: String,
    lat_of: Option<(Option<u8>, Option<u8>)>,
    /// By CPU, the pid of its last record and that task's comm: a CPU
    /// runs one task for many records.
    comms: Vec<Option<(i32, &'r str)>>,
}

impl<'r, 'o> Exporter<'r, 'o> {
    fn new(k: Kernel<'r, Decoder>, rec: &'r Recording, x: &Extra<'r>, f: Format, drain: Drain<'o>) -> Self {
        let (sysname, release, machine) = Meta::uname_words(x.uname);
        let events = rec.events();
        let meta = Meta {
            sysname,
            release: if release.is_empty() { &rec.release } else { release },
            machine,
            clock: if rec.clock.is_empty() { "local" } else { &rec.clock },
            ncpus: rec.ncpus,
            page_size: x.page_size,
            endian: rec.dec.endian,
            long_size: rec.dec.long_size,
            cmd: &rec.cmd,
            saved: &rec.saved,
            env: &rec.dec,
            events,
        };
        let mut by_id: Vec<Option<&crate::format::Event>> = Vec::new();
        for e in events {
            let i = e.id as usize;
            if by_id.len() <= i {
                by_id.resize(i + 1, None);
            }
            by_id[i] = Some(e);
        }
        let ex: Box<dyn Export> = match f {
            Format::Perfetto => Box::new(Perfetto::new()),
            Format::PerfettoCompact => Box::new(Perfetto::with_compact_sched()),
            Format::Jsonl => Box::new(Jsonl::new()),
        };
        Exporter { k, rec, meta, ex, by_id, cpustat: x.cpustat, out: Buf::new(), drain, failed: false, pending: Vec::new(), lat: String::new(), lat_of: None, comms: Vec::new() }
    }

    fn drain_now(&mut self) {
        if !self.failed && !self.out.is_empty() && !(self.drain)(self.out.as_slice()) {
            self.failed = true;
        }
        self.out.clear();
    }

    /// The losses of `cpu` noted before, at `ts` (every one left: `cpu` None).
    fn lost_now(&mut self, cpu: Option<u32>, ts: u64) {
        let mut i = 0;
        while i < self.pending.len() {
            let (c, n) = self.pending[i];
            if cpu.is_none_or(|x| x == c) {
                self.ex.lost(&mut self.out, c, ts, n);
                self.pending.remove(i);
            } else {
                i += 1;
            }
        }
    }
}

impl Output for Exporter<'_, '_> {
    fn header(&mut self) -> fmt::Result {
        self.ex.begin(&mut self.out, &self.meta);
        Ok(())
    }

    fn record(&mut self, _buffer: usize, r: &Rec, _next: Option<&Rec>) -> bool {
        if !self.pending.is_empty() {
            self.lost_now(Some(r.cpu), r.ts);
        }
        let d = r.data;
        let pid = self.rec.pid(d);
        let flags = (d.get(2).copied(), d.get(3).copied());
        if self.lat_of != Some(flags) && self.ex.wants_lat() {
            self.lat.clear();
            let _ = self.k.lat_fmt(&mut self.lat, d);
            self.lat_of = Some(flags);
        }
        let c = (r.cpu as usize).min(crate::text::kernel::MAX_CPUS);
        if self.comms.len() <= c {
            self.comms.resize(c + 1, None);
        }
        let comm = match self.comms[c] {
            Some((p, comm)) if p == pid => comm,
            _ => {
                let comm = self.rec.comm(pid);
                self.comms[c] = Some((pid, comm));
                comm
            }
        };
        let row = Row {
            cpu: r.cpu,
            ts: r.ts,
            data: d,
            event: self.by_id.get(rec_type(d, self.meta.endian) as usize).copied().flatten(),
            pid,
            comm,
            lat: &self.lat,
        };
        self.ex.record(&mut self.out, &self.meta, &row);
        if self.out.len() >= CHUNK {
            self.drain_now();
        }
        // (A graph entry is a row of its own: nothing folds.)
        false
    }

    fn lost(&mut self, cpu: u32, count: Option<u64>, shown: bool) {
        if shown {
            self.pending.push((cpu, count));
        }
    }

    fn idle(&mut self) {
        self.drain_now();
    }

    fn flush(&mut self) {
        self.drain_now();
    }

    fn failed(&self) -> bool {
        self.failed
    }

    fn finish(&mut self, s: &Stats) -> fmt::Result {
        self.lost_now(None, s.last);
        let mut stats = Vec::new();
        let texts = (self.cpustat)();
        for c in 0..self.rec.ncpus.max(s.cpus.len() as u32) {
            let st = texts.get(c as usize).map_or("", |s| s.as_str());
            let n = |k| stat_num(st, k);
            let seen = s.cpus.get(c as usize).copied().unwrap_or_default();
            stats.push(CpuStat {
                cpu: c,
                entries: n("entries:"),
                overrun: n("overrun:"),
                commit_overrun: n("commit overrun:"),
                bytes: n("bytes:"),
                dropped: n("dropped events:"),
                read: n("read events:"),
                lost: seen.lost,
                lost_unknown: seen.unknown_losses,
            });
        }
        self.ex.finish(&mut self.out, &self.meta, &stats);
        self.drain_now();
        Ok(())
    }
}

/// Export `rec`'s merged records as `f`, through the filters of `opts`
/// (its text settings aside), the bytes into `drain`. `follow`: a live
/// merge, as for [`decode::print`].
#[allow(clippy::too_many_arguments)]
pub fn export(rec: &mut Recording, merge: &mut Merge<'_>, x: &Extra<'_>, opts: &DecodeOptions, f: Format, follow: bool, drain: Drain<'_>, host: &mut dyn Host) -> Result<(), decode::Error> {
    rec.dec.tep = false;
    let rec = &*rec;
    let cls = Classes::new(rec.events());
    let k = Kernel::new(&rec.dec, &rec.cmd, &cls, Opts::default(), rec.ncpus);
    let mut e = Exporter::new(k, rec, x, f, drain);
    let _ = e.header();
    decode::drive(rec, merge, opts, follow, &mut e, host)
}
