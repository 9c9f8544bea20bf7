//! ftcat: raw ftrace pages (a trace.dat file, stdin, or the live per-CPU
//! `trace_pipe_raw`) to the text the kernel's own `trace` file prints.
//!
//! The CPUs' page streams are merged by timestamp (smallest first, lower
//! CPU on a tie, as the kernel's iterator); each record goes through
//! `text::Kernel`, which needs the next record of the same CPU to fold a
//! function_graph entry and its exit into one line.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;


use crate::applets::source;
use crate::argv::{self, Value};
use crate::sys::{self, Errno};
use crate::cli::{self, Error, Result};
use crate::cursor::{read_uint, Endian};
use crate::format::{self, Event};
use crate::ksyms::{Ksyms, Printk};
use crate::merge::{Item, Merge};
use crate::ring::Page;
use crate::text::tracecmd::filter::{glob, EventFilter, GraphFilter, Verdict};
use crate::text::{self, env::Decoder, tracecmd::TraceCmd, Classes, Cmdlines, HeaderInfo, Kernel, Opts, Rec};
use crate::tracedat::{Buffer, TraceDat};
use crate::tracefs::{state::stat_num, Tracefs};
use crate::{fail, usage_err};

const USAGE: &str = "\
Usage: ftcat [OPTIONS] [FILE]

Print a recording (FILE, default trace.dat; - for stdin) as the kernel's
own `trace` file would print it.

  -c, --cpu LIST     only these CPUs (0,2-3)
  -e GLOB            only events whose name matches (repeatable; sched_*)
      --pid LIST     only these pids
      --comm GLOB    only tasks whose comm matches
  -I                 drop records from hardirq context
  -S                 drop records from softirq context
      --from SECS    start at this timestamp (seconds)
      --to SECS      stop after this timestamp
  -O OPTION          tracer option in force when recorded (latency-format,
                     hex, bin, nosym-offset, funcgraph-tail, ...), as
                     trace_options; ftrec files and --live carry their own
      --tracer NAME  the tracer that recorded (default: as recorded, or
                     guessed)
      --stat         records per event and CPU, lost events, time span,
                     records the print fmt interpreter could not format
  -R, --raw          every field as name=value (`-O fields`, and ftrace's own records too)
  -F 'SYS/EVENT: EXPR'  only these events, where EXPR holds (==, !=, <, >,
                     &, =~ regex, ~ glob, &&, ||, !, COMM; repeatable)
      --max-depth N  function_graph: hide calls N deep and deeper
      --graph FUNC   function_graph: only the calls under FUNC
      --style S      kernel (default) or trace-cmd: as `trace-cmd report`;
                     then -t (ns timestamps), -l (latency columns),
                     -O [fgraph:]tailprint|retval-dec|retval-hex|
                     retval-skip|depth, -O [ftrace:]parent|indent=0|offset,
                     --stat, --first-event, --last-event as trace-cmd's
      --live         read the live buffers' trace_pipe_raw (consuming)
  -B INSTANCE        the instance's buffers (live, or a buffer of FILE;
                     without -B: FILE's top buffer, or if it is empty the
                     first buffer with data)
      --once         with --live: stop when the buffers are empty
      --export F     write the records as F: perfetto (a Perfetto trace)
                     or jsonl (one JSON object per record)
  -h, --help         this help
";

pub fn main(args: Vec<Vec<u8>>) -> i32 {
    cli::run("ftcat", USAGE, || {
        let a = parse_args(args)?;
        run(a)
    })
}

#[derive(Default)]
pub struct Args {
    pub file: Option<String>,
    pub cpus: Option<Vec<(u32, u32)>>,
    pub events: Vec<String>,
    pub pids: Option<Vec<(u32, u32)>>,
    pub comms: Vec<String>,
    pub no_hardirq: bool,
    pub no_softirq: bool,
    pub from: Option<u64>,
    pub to: Option<u64>,
    pub options: Vec<String>,
    pub tracer: Option<String>,
    pub stat: bool,
    pub raw: bool,
    pub live: bool,
    pub instance: Option<String>,
    pub once: bool,
    /// `--style trace-cmd` and its options (`-t`, `-l`, `-O` plugin options).
    pub tc: bool,
    pub tc_flags: u32,
    /// `--max-depth N`, `--graph FUNC`: function_graph subtrees to show.
    pub max_depth: Option<u32>,
    pub graph: Option<String>,
    /// `-F 'SYSTEM/EVENT: FILTER'` (trace-cmd's event filters).
    pub filters: Vec<String>,
    /// `--first-event` / `--last-event`: per-CPU first/last timestamps.
    pub first_ev: bool,
    pub last_ev: bool,
    /// `--export perfetto|jsonl` (src/export).
    pub export: Option<String>,
}

/// Long-only option keys (below b'A', see argv::Opt).
const PID: u8 = 1;
const COMM: u8 = 2;
const FROM: u8 = 3;
const TO: u8 = 4;
const TRACER: u8 = 5;
const STAT: u8 = 6;
const FIRST: u8 = 7;
const LAST: u8 = 8;
const GRAPH: u8 = 9;
const MAX_DEPTH: u8 = 10;
const LIVE: u8 = 11;
const ONCE: u8 = 12;
const STYLE: u8 = 13;
const EXPORT: u8 = 14;

const OPTS: &[argv::Opt] = &[
    (b'h', "help", false),
    (b'c', "cpu", true),
    (b'e', "event", true),
    (PID, "pid", true),
    (COMM, "comm", true),
    (b'I', "", false),
    (b'S', "", false),
    (FROM, "from", true),
    (TO, "to", true),
    (b'O', "option", true),
    (TRACER, "tracer", true),
    (STAT, "stat", false),
    (b'R', "raw", false),
    (b't', "", false),
    (b'l', "", false),
    (b'F', "", true),
    (FIRST, "first-event", false),
    (LAST, "last-event", false),
    (GRAPH, "graph", true),
    (MAX_DEPTH, "max-depth", true),
    (LIVE, "live", false),
    (b'B', "instance", true),
    (ONCE, "once", false),
    (STYLE, "style", true),
    (EXPORT, "export", true),
];

// (#[inline(never)] on the once-called steps below: folded into one
// giant body they cost more in spills and frame setup; measured -384 B tiny.)
#[inline(never)]
pub fn parse_args(args: Vec<Vec<u8>>) -> Result<Args> {
    let mut a = Args::default();
    let mut p = argv::Parser::from_args(args);
    while let Some(arg) = p.next()? {
        let (key, v) = match arg {
            Value(v) if a.file.is_none() => {
                a.file = Some(v);
                continue;
            }
            arg => match argv::find(OPTS, &arg) {
                Some(&(k, _, takes)) => (k, if takes { p.value()? } else { String::new() }),
                None => return Err(arg.unexpected().into()),
            },
        };
        match key {
            b'h' => cli::help(USAGE)?, // always Err(Exit(0)) after printing
            b'c' | PID => {
                let l = Some(list(&v, if key == PID { "pid" } else { "CPU" })?);
                if key == PID {
                    a.pids = l
                } else {
                    a.cpus = l
                }
            }
            b'e' => a.events.push(v),
            COMM => a.comms.push(v),
            b'I' => a.no_hardirq = true,
            b'S' => a.no_softirq = true,
            FROM | TO => {
                let t = Some(secs(&v)?);
                if key == FROM {
                    a.from = t
                } else {
                    a.to = t
                }
            }
            b'O' => a.options.push(v),
            TRACER => a.tracer = Some(v),
            STAT => a.stat = true,
            b'R' => a.raw = true,
            b't' => a.tc_flags |= text::tracecmd::NSEC,
            b'l' => a.tc_flags |= text::tracecmd::LAT,
            b'F' => a.filters.push(v),
            FIRST => a.first_ev = true,
            LAST => a.last_ev = true,
            GRAPH => a.graph = Some(v),
            MAX_DEPTH => match v.parse() {
                Ok(n) => a.max_depth = Some(n),
                Err(_) => usage_err!("--max-depth wants a number"),
            },
            LIVE => a.live = true,
            b'B' => a.instance = Some(v),
            ONCE => a.once = true,
            STYLE => match crate::util::word_index("kernel|trace-cmd", &v) {
                Some(i) => a.tc = i == 1,
                None => usage_err!("--style {}: kernel or trace-cmd", v),
            },
            EXPORT => a.export = Some(v),
            _ => {}
        }
    }
    if a.live && a.file.is_some() {
        usage_err!("--live reads the live buffers, not a FILE");
    }
    if !a.live && a.once {
        usage_err!("--once goes with --live");
    }
    Ok(a)
}

/// `0,2-3` → [(0,0), (2,3)].
fn list(s: &str, what: &str) -> Result<Vec<(u32, u32)>> {
    let mut v = Vec::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        match (a.trim().parse::<u32>(), b.trim().parse::<u32>()) {
            (Ok(a), Ok(b)) if a <= b => v.push((a, b)),
            _ => usage_err!("bad {} list: {}", what, s),
        }
    }
    if v.is_empty() {
        usage_err!("empty {} list", what);
    }
    Ok(v)
}

fn in_list(l: &[(u32, u32)], x: u32) -> bool {
    l.iter().any(|&(a, b)| a <= x && x <= b)
}

/// `12.5` seconds → nanoseconds, without floating point rounding surprises.
fn secs(s: &str) -> Result<u64> {
    let (i, f) = s.split_once('.').unwrap_or((s, ""));
    let ip: Option<u64> = if i.is_empty() { Some(0) } else { i.parse().ok() };
    let (Some(ip), false) = (ip, f.len() > 9 || !f.bytes().all(|b| b.is_ascii_digit())) else {
        usage_err!("bad seconds: {}", s);
    };
    let mut frac: u64 = if f.is_empty() { 0 } else { f.parse().unwrap_or(0) };
    for _ in f.len()..9 {
        frac *= 10;
    }
    Ok(ip.saturating_mul(1_000_000_000).saturating_add(frac))
}

/// Output: one big buffer, flushed in large writes to stdout; the
/// private-use raw byte escapes of `text::put_all` become the bytes they
/// stand for. The buffer is initialised once, whole, and `n` counts the
/// bytes in use: short lines are formatted straight into it ([`Out::room`]).
pub struct Out {
    buf: Vec<u8>,
    n: usize,
    err: Option<Errno>,
}

const OUT_BUF: usize = 1 << 20;

impl Out {
    pub fn new() -> Self {
        Out { buf: alloc::vec![0; OUT_BUF + 4096], n: 0, err: None }
    }
    pub fn flush_now(&mut self) {
        if self.err.is_none() && self.n > 0 {
            if let Err(e) = sys::write_all(sys::fd(1), self.buf.get(..self.n).unwrap_or(&[])) {
                self.err = Some(e);
            }
        }
        self.n = 0;
    }
    pub fn finish(mut self) -> core::result::Result<(), Errno> {
        self.flush_now();
        self.err.map_or(Ok(()), Err)
    }
    pub fn failed(&self) -> bool {
        self.err.is_some()
    }
    /// Room for a line of up to LINE_MAX bytes after the buffered ones, or
    /// None when the bytes written would need the raw-byte escapes undone.
    #[inline]
    fn room(&mut self) -> Option<&mut [u8]> {
        if crate::text::raw_used() {
            return None;
        }
        self.buf.get_mut(self.n..self.n + text::kernel::LINE_MAX)
    }
    /// Count `k` bytes written into [`Out::room`].
    #[inline]
    fn commit(&mut self, k: usize) {
        self.n += k;
        if self.n >= OUT_BUF {
            self.flush_now();
        }
    }
    /// Append bytes (flushing first when they do not fit).
    #[inline]
    fn put(&mut self, s: &[u8]) {
        let k = s.len();
        if self.buf.len() - self.n < k {
            self.flush_now();
            if self.buf.len() < k {
                if self.err.is_none() {
                    if let Err(e) = sys::write_all(sys::fd(1), s) {
                        self.err = Some(e);
                    }
                }
                return;
            }
        }
        // SAFETY: n + k <= buf.len() (checked above, n is 0 after a flush);
        // s is another object than buf.
        unsafe { text::kernel::copy_short(self.buf.as_mut_ptr().add(self.n), s.as_ptr(), k) };
        self.n += k;
    }
}

impl Default for Out {
    fn default() -> Self {
        Out::new()
    }
}

impl core::fmt::Write for Out {
    #[inline]
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        // Escapes (U+F780..U+F7FF) exist only once put_all made one.
        if !crate::text::raw_used() {
            self.put(s.as_bytes());
        } else {
            for c in s.chars() {
                match crate::text::raw_byte(c) {
                    Some(x) => self.put(&[x]),
                    None => {
                        let mut t = [0u8; 4];
                        self.put(c.encode_utf8(&mut t).as_bytes());
                    }
                }
            }
        }
        if self.n >= OUT_BUF {
            self.flush_now();
            if self.err.is_some() {
                return Err(core::fmt::Error);
            }
        }
        Ok(())
    }
    #[inline]
    fn write_char(&mut self, c: char) -> core::fmt::Result {
        if c.is_ascii() && self.n < self.buf.len() {
            self.buf[self.n] = c as u8;
            self.n += 1;
            return Ok(());
        }
        let mut t = [0u8; 4];
        self.write_str(c.encode_utf8(&mut t))
    }
}

/// Everything the printers need, from a trace.dat or the live tracefs.
struct Recording {
    dec: Decoder,
    cmd: Cmdlines,
    /// The saved_cmdlines text as recorded: trace-cmd style replays it in
    /// file order (text::tracecmd::Comms).
    saved: Vec<u8>,
    opts: Opts,
    /// The tracer that recorded; empty when a file does not say.
    tracer: String,
    clock: String,
    release: String,
    /// latency-format's `M:` (see text::kernel::lat_model).
    model: String,
    ncpus: u32,
    /// entries-in-buffer (live: the CPUs' stats; a file: its records);
    /// entries-written adds the overruns.
    entries: u64,
    overrun: u64,
}

impl Recording {
    /// The parts a file and the live tracefs build alike; the callers fill
    /// in the rest.
    #[inline(never)]
    fn new(events: Vec<Event>, kallsyms: &[u8], printk: &[u8], endian: Endian, long: usize, saved: Vec<u8>, tgids: &[u8]) -> Recording {
        let dec = Decoder::new(events, Ksyms::parse(kallsyms), Printk::parse(printk), endian, long);
        let mut cmd = Cmdlines::parse(&saved);
        cmd.add_tgids(tgids);
        Recording {
            dec,
            cmd,
            saved,
            opts: Opts::default(),
            tracer: String::new(),
            clock: String::new(),
            release: String::new(),
            model: String::new(),
            ncpus: 0,
            entries: 0,
            overrun: 0,
        }
    }
}

/// One event's format text to an `Event`, or a warning that names it.
fn parse_format(evs: &mut Vec<Event>, system: &str, text: &str, what: &str) {
    match format::parse_event(system, text) {
        Ok(e) => evs.push(e),
        Err(e) => sys::eprintln(format_args!("ftcat: {}: format of {}: {}", what, system, e)),
    }
}

#[inline(never)]
fn live_recording(top: &Tracefs, tfs: &Tracefs, ncpus: u32) -> Recording {
    let rd = |t: &Tracefs, f: &str| t.read(f).unwrap_or_default();
    // (Listings walked by reference: a loop moving out of a Vec compiles
    // to its own iterator and drop code.)
    let all = crate::tracefs::events::all_events(top).unwrap_or_default();
    let mut formats = Vec::new();
    for e in &all {
        if let Ok(t) = top.read_str(&e.path("format")) {
            formats.push((e.system.as_str(), t.into_bytes()));
        }
    }
    // Names a print fmt leaves unresolved (HRTIMER_MODE_*, I_DIRTY_*,
    // IOPRIO_CLASS_*: enums without TRACE_DEFINE_ENUM) are the running
    // kernel's enumerators, which its BTF lists: resolved as ftrec does.
    let mut fs: Vec<&mut Vec<u8>> = Vec::new();
    for f in formats.iter_mut() {
        fs.push(&mut f.1);
    }
    format::resolve_enums_btf(&mut fs, &|| sys::read(c"/sys/kernel/btf/vmlinux").unwrap_or_default());
    let what = top.path_of("events");
    let mut events = Vec::new();
    for (s, t) in &formats {
        parse_format(&mut events, s, core::str::from_utf8(t).unwrap_or(""), &what);
    }
    let endian = if cfg!(target_endian = "big") { Endian::Big } else { Endian::Little };
    // The kernel's `long` (header_page's commit field), not ours: a 32-bit
    // ftcat on a 64-bit kernel must read 8-byte longs.
    let long = crate::tracedat::write::kernel_long_size(&rd(top, "events/header_page")).map_or(core::mem::size_of::<usize>(), usize::from);
    let kallsyms = sys::read(c"/proc/kallsyms").unwrap_or_default();
    let mut r = Recording::new(events, &kallsyms, &rd(top, "printk_formats"), endian, long, rd(top, "saved_cmdlines"), &rd(top, "saved_tgids"));
    let mut spec = String::new();
    for (name, on) in &crate::tracefs::state::options(tfs).unwrap_or_default() {
        spec.clear();
        spec.push_str(name);
        spec.push_str(if *on { "=1" } else { "=0" });
        let _ = r.opts.set(&spec);
    }
    let rs = |f: &str| tfs.read_str(f).unwrap_or_default();
    r.tracer = rs("current_tracer").trim().into();
    r.clock = match crate::tracefs::state::current_clock(&rs("trace_clock")) {
        "" => "local".into(),
        c => c.into(),
    };
    for cpu in 0..ncpus {
        let st = rs(&format!("per_cpu/cpu{cpu}/stats"));
        r.entries += stat_num(&st, "entries:");
        r.overrun += stat_num(&st, "overrun:");
    }
    // (A &CStr path: a &str one compiled sys::read's path conversion again.)
    r.release = sys::lossy(&sys::read(c"/proc/sys/kernel/osrelease").unwrap_or_default()).into_owned();
    if r.opts.has(text::opts::LATENCY_FMT) {
        r.model = crate::tracefs::state::live_model(tfs);
    }
    r.ncpus = ncpus;
    r
}

/// One past the highest CPU a buffer lists (0 when it lists none).
#[inline(never)]
fn cpu_top(buf: &Buffer) -> u32 {
    let mut top = 0;
    for c in &buf.cpus {
        top = top.max(c.cpu + 1);
    }
    top
}

/// The buffer's trace clock, else the file's.
#[inline(never)]
fn clock_of<'t>(td: &'t TraceDat, buf: &'t Buffer) -> &'t str {
    buf.clock.as_deref().or(td.options.clock()).unwrap_or("local")
}

#[inline(never)]
fn file_recording(td: &TraceDat, buf: &Buffer) -> Recording {
    let mut events = Vec::new();
    for f in &td.formats {
        parse_format(&mut events, &f.system, &f.text, "trace.dat");
    }
    let tgids = td.options.tgids.as_deref().unwrap_or("");
    let mut r = Recording::new(events, td.kallsyms.as_bytes(), td.printk.as_bytes(), td.endian, td.kernel_long_size() as usize, td.cmdlines.as_bytes().to_vec(), tgids.as_bytes());
    r.clock = clock_of(td, buf).into();
    // (Plain loops: each map/max/sum chain was a closure and fold of its own.)
    r.ncpus = td.options.cpu_count.unwrap_or(0).max(cpu_top(buf).max(1));
    for s in &td.options.cpustat {
        r.overrun = r.overrun.wrapping_add(stat_num(s, "overrun:"));
    }
    // ftrec's recorded tracer state; trace-cmd's files have none (defaults).
    let state = td.options.state.as_deref().unwrap_or("");
    let get = |k| text::opts::state_get(state, k).unwrap_or("");
    r.opts.set_all(get("options"));
    r.tracer = get("tracer").into();
    r.model = get("model").into();
    r.release = td.options.uname.clone().unwrap_or_default();
    r
}

/// Which record types need the next record of their CPU (graph entries).
struct Lookahead {
    /// The graph entries of [`graph_ids`].
    graph_ent: Vec<(u16, usize)>,
    endian: Endian,
    /// trace-cmd folds only with the very next record of the merge.
    global: bool,
}

impl Lookahead {
    #[inline]
    fn wants(&self, d: &[u8]) -> bool {
        if self.graph_ent.is_empty() {
            return false;
        }
        // A loop, not `contains` (a call per record at opt-level z).
        let ty = text::kernel::rec_type(d, self.endian);
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
    fn of(it: Item<'_>) -> Held {
        match it {
            Item::Record { cpu, ts, data } => Held::Rec { cpu, ts, data: data.to_vec() },
            Item::Lost { cpu, count, .. } => Held::Lost { cpu, count },
            Item::Error { cpu, error } => Held::Err { cpu, msg: error.to_string() },
        }
    }
}

/// Filters, statistics and the printer.
struct Sink<'k, 'a> {
    k: Kernel<'a, Decoder>,
    tc: Option<TraceCmd<'a>>,
    ef: EventFilter,
    out: &'k mut Out,
    a: &'k Args,
    name: &'k str,
    /// trace-cmd style over several buffers: their names (merge CPUs are
    /// tagged `buffer << TAG | cpu`) and the widest; empty for one buffer.
    bufs: Vec<String>,
    width: usize,
    allowed: Option<Vec<u16>>,
    // --stat
    /// Per CPU: records, events lost, losses of unknown size ([`counter`]).
    per_cpu: Vec<u64>,
    per_event: Vec<(u16, u64)>,
    first: Option<u64>,
    last: u64,
    records: u64,
    errors: u64,
    stop: bool,
}

impl Sink<'_, '_> {
    fn record(&mut self, r: &Rec, next: Option<&Rec>) -> bool {
        let b = (r.cpu >> TAG) as usize;
        let (r, next) = (&untag(r), next.map(untag));
        let next = next.as_ref();
        let d = r.data;
        if let Some(t) = &mut self.tc {
            t.arm(r.cpu);
        }
        // trace-cmd tests -F in its library, before --cpu, -I, -S.
        if !self.ef.is_empty() {
            let pid = self.k.pid(d);
            let (tc, cmd) = (&mut self.tc, self.k.cmd);
            let mut comm = |f: &dyn Fn(&[u8]) -> bool| {
                f(match tc {
                    Some(t) => t.comm(pid),
                    None => cmd.comm(pid),
                }
                .as_bytes())
            };
            if !self.ef.pass(r.cpu, d, &mut comm, self.k.endian) {
                return false;
            }
        }
        if let Some(f) = self.a.from {
            if r.ts < f {
                return false;
            }
        }
        if let Some(t) = self.a.to {
            if r.ts > t {
                self.stop = true;
                return false;
            }
        }
        if let Some(c) = &self.a.cpus {
            if !in_list(c, r.cpu) {
                return false;
            }
        }
        let flags = d.get(2).copied().unwrap_or(0);
        if (self.a.no_hardirq && flags & 0x08 != 0) || (self.a.no_softirq && flags & 0x10 != 0) {
            return false;
        }
        let pid = self.k.pid(d);
        if let Some(p) = &self.a.pids {
            if pid < 0 || !in_list(p, pid as u32) {
                return false;
            }
        }
        if !self.a.comms.is_empty() {
            let c = self.k.cmd.comm(pid);
            if !self.a.comms.iter().any(|g| glob(g.as_bytes(), c.as_bytes())) {
                return false;
            }
        }
        let ty = text::kernel::rec_type(d, self.k.endian);
        if let Some(al) = &self.allowed {
            if al.binary_search(&ty).is_err() {
                return false;
            }
        }
        self.records += 1;
        if self.first.is_none() {
            self.first = Some(r.ts);
        }
        self.last = r.ts;
        if self.a.stat {
            *counter(&mut self.per_cpu, slot(r.cpu) * 3) += 1;
            match self.per_event.binary_search_by_key(&ty, |e| e.0) {
                Ok(i) => self.per_event[i].1 += 1,
                Err(i) => self.per_event.insert(i, (ty, 1)),
            }
            let mut null = Null;
            return self.k.line(&mut null, r, next).unwrap_or(false);
        }
        if let Some(t) = &mut self.tc {
            // print_handle_file(): "%*s: " before an instance's records,
            // "%*s  " before the top buffer's.
            if let Some(n) = self.bufs.get(b) {
                let o: &mut dyn Write = self.out;
                let _ = text::pad(o, self.width.saturating_sub(n.chars().count()));
                let _ = o.write_str(n);
                let _ = o.write_str(if n.is_empty() { "  " } else { ": " });
            }
            return t.line(self.out, r, next).unwrap_or(false);
        }
        // Syscall lines straight into the output buffer, no copy.
        if next.is_none() {
            if let Some(dst) = self.out.room() {
                if let Some(k) = self.k.line_into(dst, r) {
                    self.out.commit(k);
                    return false;
                }
            }
        }
        self.k.line(self.out, r, next).unwrap_or(false)
    }

    fn lost(&mut self, cpu: u32, count: Option<u64>) {
        let cpu = cpu & TAG_MASK;
        let i = slot(cpu) * 3;
        match count {
            Some(n) => *counter(&mut self.per_cpu, i + 1) += n,
            None => *counter(&mut self.per_cpu, i + 2) += 1,
        }
        if let Some(t) = &mut self.tc {
            t.lost(cpu, count);
        } else if !self.a.stat && self.a.cpus.as_ref().map_or(true, |c| in_list(c, cpu)) {
            let _ = self.k.lost(self.out, cpu, count);
        }
    }

    fn error(&mut self, cpu: u32, msg: &str) {
        let cpu = cpu & TAG_MASK;
        self.errors += 1;
        self.out.flush_now();
        sys::eprintln(format_args!("ftcat: {}: CPU {}: {}", self.name, cpu, msg));
    }
}

/// Merge CPU numbers of a multi-buffer merge carry the buffer above TAG.
const TAG: u32 = 16;
const TAG_MASK: u32 = (1 << TAG) - 1;

fn untag<'r>(r: &Rec<'r>) -> Rec<'r> {
    Rec { cpu: r.cpu & TAG_MASK, ts: r.ts, data: r.data }
}

/// One buffer's CPU of a multi-buffer merge: equal times come out lower
/// tag first, i.e. in the file's buffer order (top first), as trace-cmd.
struct Tagged<'f>(crate::tracedat::CpuPages<'f>, u32);
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
    (cpu as usize).min(text::kernel::MAX_CPUS)
}

struct Null;
impl core::fmt::Write for Null {
    fn write_str(&mut self, _: &str) -> core::fmt::Result {
        Ok(())
    }
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
}

impl HoldQ {
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
fn admit(gf: &mut Option<GraphFilter>, it: Item<'_>) -> Option<Held> {
    if let (Some(g), Item::Record { cpu, ts, data }) = (gf.as_mut(), &it) {
        match g.check(data) {
            Verdict::Hide => return None,
            Verdict::Keep => {}
            Verdict::Rebase(b) => {
                let mut d = data.to_vec();
                g.rebase(&mut d, b);
                return Some(Held::Rec { cpu: *cpu, ts: *ts, data: d });
            }
        }
    }
    Some(Held::of(it))
}

#[inline(never)]
fn pump(m: &mut Merge<'_>, s: &mut Sink<'_, '_>, la: &Lookahead, live: bool, gf: &mut Option<GraphFilter>) {
    let mut q = HoldQ { v: Vec::new(), head: 0, per_cpu: Vec::new() };
    loop {
        if s.stop || s.out.failed() {
            return;
        }
        if q.items().is_empty() {
            match m.next() {
                None => {
                    if live && !m.finished() {
                        if !s.a.stat {
                            // No next record yet: a waiting latency line
                            // goes out as trace_pipe prints it (delay 0).
                            let _ = s.k.finish(s.out);
                        }
                        s.out.flush_now();
                        sys::sleep_ms(100);
                        m.retry_waiting();
                        continue;
                    }
                    return;
                }
                Some(it @ Item::Record { .. }) if gf.is_some() => {
                    if let Some(h) = admit(gf, it) {
                        q.push(h);
                    }
                }
                Some(Item::Record { cpu, ts, data }) => {
                    if !la.wants(data) {
                        s.record(&Rec { cpu, ts, data }, None);
                        continue;
                    }
                    q.push(Held::Rec { cpu, ts, data: data.to_vec() });
                }
                Some(Item::Lost { cpu, count, .. }) => {
                    s.lost(cpu, count);
                    continue;
                }
                Some(Item::Error { cpu, error }) => {
                    s.error(cpu, &error.to_string());
                    continue;
                }
            }
        }
        let Some(front) = q.pop() else { continue };
        match front {
            Held::Lost { cpu, count } => s.lost(cpu, count),
            Held::Err { cpu, msg } => s.error(cpu, &msg),
            Held::Rec { cpu, ts, data } => {
                if la.wants(&data) {
                    while !q.has(cpu) && q.items().len() < HOLD_MAX {
                        match m.next() {
                            Some(it) => {
                                if let Some(h) = admit(gf, it) {
                                    q.push(h);
                                }
                            }
                            None => break,
                        }
                    }
                }
                let mut idx = if q.has(cpu) { q.items().iter().position(|h| h.cpu() == cpu) } else { None };
                if la.global && idx != q.items().iter().position(|h| matches!(h, Held::Rec { .. })) {
                    idx = None;
                }
                let consumed = match idx.and_then(|i| q.items().get(i)) {
                    Some(Held::Rec { cpu: nc, ts: nts, data: nd }) if la.wants(&data) => {
                        let n = Rec { cpu: *nc, ts: *nts, data: nd };
                        s.record(&Rec { cpu, ts, data: &data }, Some(&n))
                    }
                    _ => s.record(&Rec { cpu, ts, data: &data }, None),
                };
                if consumed {
                    if let Some(i) = idx {
                        q.remove(i);
                    }
                }
            }
        }
    }
}

#[inline(never)]
fn run(a: Args) -> Result<()> {
    if let Some(f) = &a.export {
        #[cfg(feature = "export")]
        return crate::export::drive::run(&a, f);
        #[cfg(not(feature = "export"))]
        usage_err!("--export {}: this ftbox was built without exporters", f);
    }
    let mut out = Out::new();
    let res = if a.live { run_live(&a, &mut out) } else { run_file(&a, &mut out) };
    out_finish(out)?;
    res
}

/// The top level, the instance of -B (if any) and its per-CPU pipes.
#[inline(never)]
fn open_all(a: &Args) -> core::result::Result<(Tracefs, Option<Tracefs>, source::Live), String> {
    let top = Tracefs::open()?;
    let inst = match &a.instance {
        Some(n) => Some(top.instance(n)?),
        None => None,
    };
    let live = source::open_live(&top, inst.as_ref().unwrap_or(&top), a.once)?;
    Ok((top, inst, live))
}

#[inline(never)]
fn run_live(a: &Args, out: &mut Out) -> Result<()> {
    let (top, inst, live) = open_all(a).map_err(Error::Fail)?;
    let tfs = inst.as_ref().unwrap_or(&top);
    let rec = live_recording(&top, tfs, live.sources.len() as u32);
    let mut m = Merge::new(live.layout, live.sources);
    decode(a, rec, &mut m, out, &tfs.path_of("per_cpu"), true, Vec::new())
}

#[inline(never)]
fn run_file(a: &Args, out: &mut Out) -> Result<()> {
    let path = a.file.as_deref().unwrap_or("trace.dat");
    let input = source::Input::open(path).map_err(Error::Fail)?;
    let td = match TraceDat::open(input.read_at()) {
        Ok(t) => t,
        Err(e) => fail!("{}: {}", path, e),
    };
    // trace-cmd report prints every buffer of a file with instances (with
    // --cpu the top buffer's alone, even when it is empty), each line led
    // by its buffer's name.
    let all = a.tc && a.instance.is_none() && !(a.stat || a.first_ev || a.last_ev) && td.buffers.iter().any(|b| !b.name.is_empty());
    let any = td.top().or(td.buffers.first());
    let found = match &a.instance {
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
    let Some(buf) = found else {
        match &a.instance {
            Some(n) => fail!("{}: no buffer named '{}'", path, n),
            None => fail!("{}: no trace data", path),
        }
    };
    let layout = td.layout(buf);
    if a.tc && (a.stat || a.first_ev || a.last_ev) {
        tc_info(a, &td, buf, path, out);
        return Ok(());
    }
    let mut rec = file_recording(&td, buf);
    // A first pass over the records: the header's entry count, and which
    // tracer recorded (trace.dat does not say) when -O/--tracer don't.
    let (mut graph, mut func) = (false, false);
    // (trace-cmd style needs neither: no header block.)
    if !a.stat && !a.tc {
        // No type read at all when the file has neither graph nor
        // function events (most event recordings), and none once a graph
        // record settled the tracer.
        let ids = graph_ids(&rec.dec);
        let mut look = !ids.is_empty();
        // CPU by CPU, no merge: only counting and looking at types.
        for c in &buf.cpus {
            let mut cp = td.cpu_pages(buf, c);
            while let Some(Ok(page)) = cp.next_page() {
                let Ok(p) = Page::parse(&layout, page) else { continue };
                for r in p.records() {
                    let Ok(r) = r else { break };
                    rec.entries += 1;
                    if look {
                        let ty = read_uint(r.data, 0, 2, td.endian).unwrap_or(0) as u16;
                        for &(id, k) in &ids {
                            if id == ty {
                                if k < 2 {
                                    graph = true;
                                    look = false;
                                } else {
                                    func = true;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    match &a.tracer {
        Some(t) => rec.tracer.clone_from(t),
        None if !rec.tracer.is_empty() => {}
        None => rec.tracer = (if graph { "function_graph" } else if func { "function" } else { "nop" }).into(),
    }
    let mut bufs = Vec::new();
    let mut m = if all {
        let mut v: Vec<Box<dyn crate::merge::PageSource>> = Vec::new();
        for (i, b) in td.buffers.iter().enumerate() {
            bufs.push(b.name.clone());
            if a.cpus.is_some() && !b.name.is_empty() {
                continue;
            }
            for c in &b.cpus {
                v.push(Box::new(Tagged(td.cpu_pages(b, c), (i as u32) << TAG | c.cpu)));
            }
        }
        Merge::new(layout, v)
    } else {
        Merge::from_pages(layout, td.all_cpu_pages(buf))
    };
    decode(a, rec, &mut m, out, path, false, bufs)
}

/// trace-cmd report's `--stat` (the recorded CPU stats and where each
/// CPU's data lies) and `--first-event`/`--last-event`.
#[inline(never)]
fn tc_info(a: &Args, td: &TraceDat, buf: &Buffer, path: &str, out: &mut Out) {
    let o: &mut dyn Write = out;
    let top = cpu_top(buf);
    if a.stat {
        let _ = write!(o, "cpus={}\n\nKernel buffer statistics:\n  Note: \"entries\" are the entries left in the kernel ring buffer and are not\n        recorded in the trace data. They should all be zero.\n\n", td.options.cpu_count.unwrap_or(0).max(top));
        if td.options.cpustat.is_empty() {
            o.write_str(" No stats in this file\n").ok();
        } else {
            // Each option's closing NUL became a newline; then "%s\n".
            for c in &td.options.cpustat {
                let _ = write!(o, "{}\n", c);
            }
            o.write_str("\n").ok();
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
            let _ = write!(o, "{}{:>5}.{:0w$}", what, t / p, t % p, w = w);
        };
        if a.first_ev {
            ts(o, "\tFirst event:", first);
        }
        if a.last_ev {
            ts(o, "\tLast event:", last);
        }
        o.write_str("\n").ok();
    }
}

fn out_finish(out: Out) -> Result<()> {
    out.finish().map_err(Error::Io)
}

/// The ftrace events that matter before decoding, by id: graph entries
/// (kind 0: funcgraph_entry, fgraph_retaddr_entry), graph exits (1),
/// function (2).
fn graph_ids(dec: &Decoder) -> Vec<(u16, usize)> {
    let mut r = Vec::new();
    for e in dec.events() {
        if e.system == "ftrace" {
            if let Some(k) = crate::util::word_index("funcgraph_entry|fgraph_retaddr_entry|funcgraph_exit|function", &e.name) {
                r.push((e.id, k.max(1) - 1));
            }
        }
    }
    r
}

#[inline(never)]
fn decode(a: &Args, mut rec: Recording, m: &mut Merge<'_>, out: &mut Out, name: &str, live: bool, bufs: Vec<String>) -> Result<()> {
    rec.dec.tep = a.tc;
    let rec = &rec;
    let events = rec.dec.events();
    let cls = Classes::new(events);
    let mut opts = rec.opts;
    let mut tc_flags = a.tc_flags | text::tracecmd::INDENT;
    for o in &a.options {
        let bad = if a.tc { text::tracecmd::set_opt(&mut tc_flags, o).is_err() } else { opts.set(o).is_err() };
        if bad {
            usage_err!("{}{}", if a.tc { "unknown trace-cmd option: " } else { "unknown option: " }, o);
        }
    }
    if a.raw {
        opts.flags |= text::opts::FIELDS | text::opts::ALL_FIELDS;
    }
    let tracer = &rec.tracer;
    let mut k = Kernel::new(&rec.dec, &rec.cmd, &cls, opts, rec.ncpus);
    k.endian = rec.dec.endian;
    k.long = rec.dec.long_size;
    k.set_clock(&rec.clock);
    k.set_release(&rec.release);
    k.set_tracer(tracer);
    k.annotate = rec.overrun > 0;
    if let (Some(s), Some(e)) = (rec.dec.ksyms.addr_of("__irqentry_text_start"), rec.dec.ksyms.addr_of("__irqentry_text_end")) {
        k.graph.irq = (s, e);
    }
    // (Decoder keeps the events sorted by id: so is this list.)
    let allowed = if a.events.is_empty() {
        None
    } else {
        let mut v: Vec<u16> = Vec::new();
        let mut full = String::new();
        for e in events {
            full.clear();
            full.push_str(&e.system);
            full.push(':');
            full.push_str(&e.name);
            if a.events.iter().any(|g| glob(g.as_bytes(), e.name.as_bytes()) || glob(g.as_bytes(), full.as_bytes())) {
                v.push(e.id);
            }
        }
        Some(v)
    };
    let mut tc = None;
    if a.tc {
        let mut t = TraceCmd::new(&rec.dec, &rec.saved, events);
        t.flags = tc_flags | if a.raw { text::tracecmd::RAW } else { 0 };
        t.endian = rec.dec.endian;
        t.long = rec.dec.long_size;
        t.in_ns = text::clock_in_ns(&rec.clock);
        let _ = write!(out, "cpus={}\n", rec.ncpus);
        tc = Some(t);
    } else if !a.stat {
        let h = HeaderInfo { tracer, entries: rec.entries, written: rec.entries + rec.overrun, cpus: rec.ncpus, release: &rec.release, model: &rec.model };
        let _ = k.header(out, &h);
    }
    let mut ef = EventFilter::default();
    for f in &a.filters {
        if let Err(e) = ef.add(f, events) {
            usage_err!("-F {}: {}", f, e);
        }
    }
    let mut ge = graph_ids(&rec.dec);
    ge.retain(|e| e.1 == 0);
    let la = Lookahead { graph_ent: ge, endian: rec.dec.endian, global: a.tc };
    let mut s = Sink {
        k,
        tc,
        ef,
        out,
        a,
        name,
        width: bufs.iter().map(|n| n.len()).max().unwrap_or(0),
        bufs,
        allowed,
        per_cpu: Vec::new(),
        per_event: Vec::new(),
        first: None,
        last: 0,
        records: 0,
        errors: 0,
        stop: false,
    };
    let mut gf = None;
    if a.max_depth.is_some() || a.graph.is_some() {
        let mut g = GraphFilter::new(&rec.dec, events, rec.dec.endian);
        g.max_depth = a.max_depth;
        g.graph = a.graph.clone();
        gf = Some(g);
    }
    pump(m, &mut s, &la, live && !a.once, &mut gf);
    if a.stat {
        print_stat(&mut s, events);
    } else {
        // latency-format holds each line for the next record's timestamp.
        let _ = s.k.finish(s.out);
    }
    if s.errors > 0 {
        s.out.flush_now();
        return Err(Error::Exit(1));
    }
    Ok(())
}

#[inline(never)]
fn print_stat(s: &mut Sink<'_, '_>, events: &[Event]) {
    let o: &mut dyn Write = &mut *s.out;
    let _ = o.write_str("CPU      records         lost\n");
    let c = |i: usize| s.per_cpu.get(i).copied().unwrap_or(0);
    let mut lost = 0;
    for cpu in 0..s.per_cpu.len().div_ceil(3) {
        let (r, l, unk) = (c(cpu * 3), c(cpu * 3 + 1), c(cpu * 3 + 2));
        lost += l;
        let _ = write!(o, "{:>3} {:>12} {:>12}", cpu, r, l);
        if unk > 0 {
            let _ = write!(o, " (+{} losses of unknown size)", unk);
        }
        let _ = o.write_str("\n");
    }
    let _ = o.write_str("\nEVENT                                         records\n");
    let mut ev: Vec<(u64, String)> = Vec::new();
    for &(id, c) in &s.per_event {
        let mut name = String::new();
        let _ = match events.iter().find(|e| e.id == id) {
            Some(e) => write!(name, "{}:{}", e.system, e.name),
            None => write!(name, "type {}", id),
        };
        ev.push((c, name));
    }
    crate::util::sort_by(&mut ev, |a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (c, name) in &ev {
        let _ = write!(o, "{:<40} {:>12}\n", name, c);
    }
    let _ = write!(o, "\nrecords: {}\nlost events: {}\ntime span:", s.records, lost);
    match s.first {
        Some(f) => {
            let _ = s.k.time(o, f);
            let _ = o.write_str(" ..");
            let _ = s.k.time(o, s.last);
            let _ = write!(o, " ({} ns)", s.last.saturating_sub(f));
        }
        None => {
            let _ = o.write_str(" (no records)");
        }
    }
    let c = s.k.counts;
    let _ = write!(o, "\nnot formatted by print fmt (fields printed): {}\nunknown record types: {}\nread errors: {}\n", c.fallback, c.unknown, s.errors);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes that are not UTF-8 (a Latin-1 comm, a 1-byte field's 0xff)
    /// reach stdout as themselves, as the kernel writes them.
    #[test]
    fn raw_bytes_leave_as_bytes() {
        let mut o = Out::new();
        let b = b"a='\xff'(255) \xe9t\xc3\xa9 \xef\x9e\x80";
        crate::text::put_all(&mut o, b).unwrap();
        assert_eq!(&o.buf[..o.n], b);
        o.n = 0;
    }

    #[test]
    fn seconds_and_lists() {
        assert_eq!(secs("1.5").ok(), Some(1_500_000_000));
        assert_eq!(secs("160.004482").ok(), Some(160_004_482_000));
        assert!(secs("x").is_err());
        assert_eq!(list("0,2-3", "CPU").ok(), Some(std::vec![(0, 0), (2, 3)]));
        assert!(list("3-1", "CPU").is_err());
    }
}
