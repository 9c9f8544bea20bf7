//! ftcat's pipeline, without I/O: a [`Recording`] (what the recording
//! says besides its records) and a [`Merge`] of its CPUs' pages go through
//! the filters ([`filter`], [`event_filter`], [`graph_filter`]) to an
//! [`Output`] (kernel text, trace-cmd text, `--stat`, or one from outside).
//!
//! ```text
//! TraceDat ─ file_input() ─> Input { Recording, Merge } ─ print() / run() ─> Output ─> TextSink
//! ```
//!
//! The caller opens the file (or builds the live recording and its
//! sources), supplies a [`TextSink`] to write into and a [`Host`] for read
//! errors and waiting, and maps [`Error`] to its exit status.

#[cfg(feature = "expr-filter")]
pub mod event_filter;
#[cfg(not(feature = "expr-filter"))]
#[path = "event_filter_off.rs"]
pub mod event_filter;
pub mod filter;
pub mod graph_filter;
pub mod kind;
pub mod output;
mod pump;
pub mod recording;
pub mod stat;
pub mod text_out;
#[cfg(test)]
mod tests;

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

pub use output::{KernelText, Output, TextSink};
#[cfg(feature = "trace-cmd-style")]
pub use output::TraceCmdText;
pub use pump::run;
pub use recording::Recording;
pub use stat::StatText;

use crate::merge::{Merge, PageSource};
use crate::text::{self, Classes, Kernel};
#[cfg(feature = "trace-cmd-style")]
use crate::text::tracecmd::TraceCmd;
use crate::tracedat::{Buffer, Seen, TraceDat};
use event_filter::EventFilter;
use filter::{List, Select};
use graph_filter::GraphFilter;

/// Which text to print.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub enum Style {
    /// The kernel's own `trace` file.
    #[default]
    Kernel,
    /// `trace-cmd report` as trace-cmd 3.3 and later print it (3.4 with
    /// libtraceevent 1.9): the flags column on every line, sched_switch's
    /// state letters from the event's format.
    TraceCmd,
    /// `trace-cmd report` of trace-cmd 3.1 and 3.2 (Debian bookworm's
    /// 3.1.6 with libtraceevent 1.7).
    TraceCmd31,
}

/// The filter and format settings of a decode (ftcat's options).
#[derive(Default, Clone, Debug)]
pub struct DecodeOptions {
    pub style: Style,
    /// `--cpu`: only these CPUs.
    pub cpus: Option<List>,
    /// `-e`: only events whose name (or `system:name`) matches one of these globs.
    pub events: Vec<String>,
    /// `--pid`: only these pids.
    pub pids: Option<List>,
    /// `--comm`: only tasks whose name matches one of these globs.
    pub comms: Vec<String>,
    /// `-I`, `-S`: drop records from hardirq / softirq context.
    pub no_hardirq: bool,
    pub no_softirq: bool,
    /// `--from`, `--to`: the time window, in trace clock units (ns).
    pub from: Option<u64>,
    pub to: Option<u64>,
    /// `-O`: tracer options (kernel style) or trace-cmd plugin options.
    pub options: Vec<String>,
    /// `--tracer`: the tracer that recorded, when the recording does not say.
    pub tracer: Option<String>,
    /// `--stat`: counts instead of records.
    pub stat: bool,
    /// `-R`: every field as name=value.
    pub raw: bool,
    /// trace-cmd style: `-t` (ns timestamps), `-l` (latency columns).
    pub nsec: bool,
    pub latency: bool,
    /// `-F 'SYSTEM/EVENT: EXPR'`: trace-cmd's event filters.
    pub filters: Vec<String>,
    /// `--max-depth N`, `--graph FUNC`: function_graph subtrees to show.
    pub max_depth: Option<u32>,
    pub graph: Option<String>,
    /// trace-cmd style `--first-event` / `--last-event`.
    pub first_event: bool,
    pub last_event: bool,
    /// `-B`: the buffer (instance) of a file to print.
    pub instance: Option<String>,
}

impl DecodeOptions {
    /// One of trace-cmd's styles (never in a build without them: their
    /// summaries and printers are left out with them).
    pub fn trace_cmd(&self) -> bool {
        cfg!(feature = "trace-cmd-style") && matches!(self.style, Style::TraceCmd | Style::TraceCmd31)
    }
}

/// Why a decode did not run (or ran with errors).
#[derive(Debug, PartialEq, Eq)]
pub enum Error {
    /// An option the recording cannot take (`-O` name, `-F` text): a usage error.
    Usage(String),
    /// `-B NAME` names no buffer of the file.
    NoBuffer(String),
    /// The file has no buffer at all.
    NoData,
    /// Records could not be read (each reported through [`Host::error`]).
    ReadErrors(u64),
    /// The kallsyms section, kept compressed until its first use, did not
    /// decompress: symbols were printed as addresses.
    KallsymsLost,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(s) => f.write_str(s),
            Error::NoBuffer(n) => write!(f, "no buffer named '{}'", n),
            Error::NoData => f.write_str("no trace data"),
            Error::ReadErrors(n) => write!(f, "{} read errors", n),
            Error::KallsymsLost => f.write_str("kallsyms section: zstd data does not decompress; symbols printed as addresses"),
        }
    }
}

/// What the pipeline asks of its caller's world.
pub trait Host {
    /// A CPU's pages could not be read; the decode goes on without them.
    fn error(&mut self, cpu: u32, msg: &str);
    /// A live source has nothing to read yet: wait a little.
    fn wait(&mut self) {}
}

/// The counts of the records shown, per CPU and in all.
#[derive(Default, Clone, Debug)]
pub struct Stats {
    /// Indexed by CPU (corrupt CPU numbers share the last slot).
    pub cpus: Vec<CpuStats>,
    pub records: u64,
    /// Timestamps of the first and last record shown.
    pub first: Option<u64>,
    pub last: u64,
    /// Read errors reported.
    pub errors: u64,
}

#[derive(Default, Clone, Copy, Debug)]
pub struct CpuStats {
    pub records: u64,
    /// Events lost, as counted by the ring.
    pub lost: u64,
    /// Losses the ring could not count.
    pub unknown_losses: u64,
}

impl Stats {
    /// The counts of `cpu`, the table grown as needed.
    #[inline(never)]
    pub fn cpu(&mut self, cpu: u32) -> &mut CpuStats {
        let i = (cpu as usize).min(text::kernel::MAX_CPUS);
        if self.cpus.len() <= i {
            self.cpus.resize(i + 1, CpuStats::default());
        }
        &mut self.cpus[i]
    }
}

/// A recording ready to decode: its description, and its records merged.
pub struct Input<'t> {
    pub rec: Recording,
    pub merge: Merge<'t>,
    /// trace-cmd style over several buffers: their names (lines are led by
    /// them); empty for one buffer.
    pub buffers: Vec<String>,
}

/// The buffer of `td` that `opts` asks for, or every buffer (trace-cmd
/// style with instances).
#[inline(never)]
fn pick_buffer<'t>(td: &'t TraceDat, opts: &DecodeOptions) -> Result<(&'t Buffer, bool), Error> {
    // trace-cmd report prints every buffer of a file with instances (with
    // --cpu the top buffer's alone, even when it is empty), each line led
    // by its buffer's name.
    let all = opts.trace_cmd() && opts.instance.is_none() && !(opts.stat || opts.first_event || opts.last_event) && td.buffers.iter().any(|b| !b.name.is_empty());
    let any = td.top().or(td.buffers.first());
    let found = match &opts.instance {
        Some(n) => td.buffer(n),
        None if all => any,
        // `trace-cmd extract -B NAME` (and ftrec -B) keep an empty top
        // buffer beside the instance: print the first buffer with data, as
        // `cat instances/NAME/trace` would, rather than an empty trace.
        None => {
            let full = |b: &&Buffer| b.latency || b.cpus.iter().any(|c| c.size > 0);
            td.top().filter(full).or_else(|| td.buffers.iter().find(full)).or(any)
        }
    };
    match (found, &opts.instance) {
        (Some(b), _) => Ok((b, all)),
        (None, Some(n)) => Err(Error::NoBuffer(n.clone())),
        (None, None) => Err(Error::NoData),
    }
}

/// Formats text (bytes) above which a recording's events are found by a
/// pass over its records before their formats are parsed: a syscalls
/// recording carries about 0.4 MB of formats, `-e all` 2 MB.
const FORMATS_WORTH_A_PASS: usize = 512 << 10;

/// The recording of the buffer `opts` picks, its tracer settled (from
/// `--tracer`, the file, or a first pass over the records), and its merge.
/// `header`: the output prints the kernel's header block, which needs that
/// first pass (an exporter does not: the file is then read once).
#[inline(never)]
pub fn file_input<'t>(td: &'t TraceDat, opts: &DecodeOptions, header: bool) -> Result<Input<'t>, Error> {
    let (buf, all) = pick_buffer(td, opts)?;
    let layout = td.layout(buf);
    // (trace-cmd style needs no entry count nor tracer: no header block.)
    let count = header && !opts.stat && !opts.trace_cmd();
    // One pass over the records first: only the events they use need their
    // formats parsed (see Seen). The header's count needs the pass anyway;
    // otherwise it costs a read of the whole file, which pays only when the
    // formats are many (`-e all` recordings carry 2 MB of them, and parsed
    // they take more than twice that). `-F` names events whose fields it
    // checks whether or not they have records.
    // (`buf` is one of td.buffers; with `all`, every buffer's records print.)
    let formats: usize = td.formats.iter().map(|f| f.text.len()).sum();
    let (mut seen, mut records) = (Seen::default(), 0);
    let pass = count || formats > FORMATS_WORTH_A_PASS;
    for b in td.buffers.iter().filter(|b| pass && (all || core::ptr::eq(*b, buf))) {
        let n = seen.add(td.all_cpu_pages(b), &td.layout(b));
        if core::ptr::eq(b, buf) {
            records = n;
        }
    }
    let mut rec = Recording::from_file(td, buf, (pass && opts.filters.is_empty()).then_some(&seen));
    let guess = if count { rec.count(records, &seen) } else { "nop" };
    match &opts.tracer {
        Some(t) => rec.tracer.clone_from(t),
        None if !rec.tracer.is_empty() => {}
        None => rec.tracer = guess.into(),
    }
    let mut buffers = Vec::new();
    let merge = if all {
        let mut v: Vec<Box<dyn PageSource>> = Vec::new();
        for (i, b) in td.buffers.iter().enumerate() {
            buffers.push(b.name.clone());
            if opts.cpus.is_some() && !b.name.is_empty() {
                continue;
            }
            for c in &b.cpus {
                v.push(Box::new(pump::Tagged(td.cpu_pages(b, c), (i as u32) << pump::TAG | c.cpu)));
            }
        }
        Merge::new(layout, v)
    } else {
        Merge::from_pages(layout, td.all_cpu_pages(buf))
    };
    Ok(Input { rec, merge, buffers })
}

/// After a file was printed or exported: its kallsyms, if it did not
/// decompress at its first use, is damage found late, said last (all the
/// records were still printed) and a failed run.
pub fn symbols_intact(td: &TraceDat) -> Result<(), Error> {
    if td.kallsyms_lost() {
        return Err(Error::KallsymsLost);
    }
    Ok(())
}

/// A whole file as text into `out`: trace-cmd's file summaries, or the
/// records of [`file_input`] through [`print`]. `path` is the name
/// trace-cmd's `--first-event` prints.
#[inline(never)]
pub fn print_file(td: &TraceDat, path: &str, opts: &DecodeOptions, out: &mut dyn TextSink, host: &mut dyn Host, warn: &mut dyn FnMut(&str)) -> Result<(), Error> {
    if opts.trace_cmd() && (opts.stat || opts.first_event || opts.last_event) {
        let (buf, _) = pick_buffer(td, opts)?;
        stat::trace_cmd_info(out, opts, td, buf, path);
        return Ok(());
    }
    let mut input = file_input(td, opts, true)?;
    for w in &input.rec.warnings {
        warn(&format!("{}: {}", path, w));
    }
    print(&mut input.rec, &mut input.merge, input.buffers, opts, false, out, host)
}

/// Records as text into `out`, in the style and with the filters of
/// `opts`. `follow`: a live merge that waits for more records (through
/// [`Host::wait`]) until its sources end.
#[inline(never)]
pub fn print(rec: &mut Recording, merge: &mut Merge<'_>, buffers: Vec<String>, opts: &DecodeOptions, follow: bool, out: &mut dyn TextSink, host: &mut dyn Host) -> Result<(), Error> {
    let tc = opts.trace_cmd();
    rec.dec.tep = tc;
    rec.dec.tep_1_7 = opts.style == Style::TraceCmd31;
    let rec = &*rec;
    let events = rec.events();
    let cls = Classes::new(events);
    let mut kopts = rec.opts;
    if !tc {
        for o in &opts.options {
            if kopts.set(o).is_err() {
                return Err(Error::Usage(format!("unknown option: {}", o)));
            }
        }
    }
    if opts.raw {
        kopts.flags |= text::opts::FIELDS | text::opts::ALL_FIELDS;
    }
    let mut k = Kernel::new(&rec.dec, &rec.cmd, &cls, kopts, rec.ncpus);
    k.endian = rec.dec.endian;
    k.long = rec.dec.long_size;
    k.set_clock(&rec.clock);
    k.set_release(&rec.release);
    k.set_tracer(&rec.tracer);
    k.annotate = rec.overrun > 0;
    // The irq-entry bounds from kallsyms at the first graph record.
    k.graph.irq = None;
    // -F is read before anything is printed: a mistake in it is a usage
    // error on its own, not after a header.
    let ef = event_filter(opts, events)?;
    let (mut kt, mut st);
    #[cfg(feature = "trace-cmd-style")]
    let mut tt;
    let output: &mut dyn Output = if tc {
        #[cfg(feature = "trace-cmd-style")]
        {
            tt = TraceCmdText::new(trace_cmd_printer(rec, opts)?, rec, buffers, out);
            &mut tt
        }
        // ftcat refuses the style before it gets here.
        #[cfg(not(feature = "trace-cmd-style"))]
        {
            drop(buffers);
            return Err(Error::Usage("--style trace-cmd is not in this build".into()));
        }
    } else if opts.stat {
        st = StatText::new(k, events, out);
        &mut st
    } else {
        kt = KernelText::new(k, rec, out);
        &mut kt
    };
    let _ = output.header();
    filter_into(rec, merge, opts, ef, follow, output, host)
}

/// `-F`'s filters, read before anything is printed: a mistake in one is a
/// usage error on its own.
fn event_filter(opts: &DecodeOptions, events: &[crate::format::Event]) -> Result<EventFilter, Error> {
    // An -e that names no event of the recording is a typo more often than
    // a wish for empty output: say so instead of printing a bare header.
    if let Some(g) = opts.events.iter().find(|g| !events.iter().any(|e| filter::selects(g, e))) {
        return Err(Error::Usage(format!("-e {}: no such event in the recording", g)));
    }
    let mut ef = EventFilter::default();
    for f in &opts.filters {
        if let Err(e) = ef.add(f, events) {
            return Err(Error::Usage(format!("-F {}: {}", f, e)));
        }
    }
    Ok(ef)
}

/// Records through the filters of `opts` (`-F`, `--graph`/`--max-depth`,
/// and [`Select`]'s) into `output`, then its [`Output::finish`]: what
/// [`print`] does after the header, for an output from outside (an
/// exporter).
#[inline(never)]
pub fn drive(rec: &Recording, merge: &mut Merge<'_>, opts: &DecodeOptions, follow: bool, output: &mut dyn Output, host: &mut dyn Host) -> Result<(), Error> {
    let ef = event_filter(opts, rec.events())?;
    filter_into(rec, merge, opts, ef, follow, output, host)
}

fn filter_into(rec: &Recording, merge: &mut Merge<'_>, opts: &DecodeOptions, ef: EventFilter, follow: bool, output: &mut dyn Output, host: &mut dyn Host) -> Result<(), Error> {
    let events = rec.events();
    let select = Select::new(opts, rec);
    let mut gf = None;
    if opts.max_depth.is_some() || opts.graph.is_some() {
        let mut g = GraphFilter::new(&rec.dec, events, rec.dec.endian);
        g.max_depth = opts.max_depth;
        g.graph = opts.graph.clone();
        gf = Some(g);
    }
    let stats = run(rec, select, ef, gf, merge, output, follow, host);
    let _ = output.finish(&stats);
    if stats.errors > 0 {
        output.flush();
        return Err(Error::ReadErrors(stats.errors));
    }
    Ok(())
}

/// trace-cmd's printer for `rec`, with the flags and `-O` options of `opts`.
#[cfg(feature = "trace-cmd-style")]
fn trace_cmd_printer<'r>(rec: &'r Recording, opts: &DecodeOptions) -> Result<TraceCmd<'r>, Error> {
    let mut flags = text::tracecmd::INDENT;
    if opts.nsec {
        flags |= text::tracecmd::NSEC;
    }
    if opts.latency {
        flags |= text::tracecmd::LAT;
    }
    for o in &opts.options {
        if text::tracecmd::set_opt(&mut flags, o).is_err() {
            return Err(Error::Usage(format!("unknown trace-cmd option: {}", o)));
        }
    }
    if opts.raw {
        flags |= text::tracecmd::RAW;
    }
    let release = if opts.style == Style::TraceCmd31 { text::tracecmd::Release::V3_1 } else { text::tracecmd::Release::V3_4 };
    let mut t = TraceCmd::new(&rec.dec, &rec.saved, rec.events(), release);
    t.flags = flags;
    t.endian = rec.dec.endian;
    t.long = rec.dec.long_size;
    t.in_ns = text::clock_in_ns(&rec.clock);
    Ok(t)
}
