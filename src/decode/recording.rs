//! What a recording says besides its records: event formats, symbols,
//! task names, the tracer options in force, clock, kernel release. Built
//! here from a trace.dat buffer, or by the live side (tracefs) from the
//! running kernel, and handed to the pump and its outputs.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use super::kind::Ftrace;
use crate::cursor::{read_uint, Endian};
use crate::format::{self, Event};
use crate::ksyms::{Ksyms, Printk};
use crate::text::{self, env::Decoder, Cmdlines, Opts};
use crate::tracedat::{Buffer, Seen, TraceDat};

/// Everything the printers need, from a trace.dat or the live tracefs.
pub struct Recording {
    pub dec: Decoder,
    pub cmd: Cmdlines,
    /// The saved_cmdlines text as recorded: trace-cmd style replays it in
    /// file order (text::tracecmd::Comms).
    pub saved: Vec<u8>,
    pub opts: Opts,
    /// The tracer that recorded; empty when a file does not say.
    pub tracer: String,
    pub clock: String,
    pub release: String,
    /// latency-format's `M:` (see text::kernel::lat_model).
    pub model: String,
    pub ncpus: u32,
    /// entries-in-buffer (live: the CPUs' stats; a file: its records);
    /// entries-written adds the overruns.
    pub entries: u64,
    pub overrun: u64,
    /// Formats that did not parse (`format of SYSTEM: why`): the caller
    /// warns, naming where they came from (the file, the events
    /// directory); their records print as unknown types.
    pub warnings: Vec<String>,
}

/// Event formats as `(system, format text)` pairs into `Event`s; the ones
/// that do not parse become warnings (`format of SYSTEM: why`). Events
/// `used` (system, id) rejects keep their name and id only
/// ([`format::parse_event_if`]): the whole table never is in memory.
/// (`dyn`: the file's formats and the live ones share one copy.)
pub fn parse_formats<'t>(formats: &mut dyn Iterator<Item = (&'t str, &'t str)>, used: &dyn Fn(&str, u16) -> bool, warnings: &mut Vec<String>) -> Vec<Event> {
    let mut events = Vec::new();
    for (system, text) in formats {
        match format::parse_event_if(system, text, &|id| used(system, id)) {
            Ok(e) => events.push(e),
            Err(e) => warnings.push(format!("format of {}: {}", system, e)),
        }
    }
    events
}

/// The number after `key` at the start of a line of a per-CPU `stats`
/// text, live or as trace.dat keeps it (0 when absent or not a number):
/// ftcat's entry and loss counts and ftrec's loss report read it.
pub fn stat_num(text: &str, key: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(key).map(|v| v.trim_ascii().parse().unwrap_or(0))).unwrap_or(0)
}

impl Recording {
    /// The parts a file and the live tracefs build alike; the callers fill
    /// in the rest.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    pub fn new(events: Vec<Event>, ksyms: Ksyms, printk: &[u8], endian: Endian, long: usize, saved: Vec<u8>, tgids: &[u8], warnings: Vec<String>) -> Recording {
        let dec = Decoder::new(events, ksyms, Printk::parse(printk), endian, long);
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
            warnings,
        }
    }

    /// One buffer of a trace.dat. With `seen`, the types its records use
    /// (see [`Seen`]), the events without records keep their names only;
    /// ftrace's own events keep their formats, as the printers consult
    /// them for the tracer's columns whether or not they occur.
    #[inline(never)]
    pub fn from_file(td: &TraceDat, buf: &Buffer, seen: Option<&Seen>) -> Recording {
        let mut warnings = Vec::new();
        let used = |system: &str, id| seen.map_or(true, |s| s.has(id) || system == "ftrace");
        let events = parse_formats(&mut td.formats.iter().map(|f| (f.system.as_str(), f.text.as_str())), &used, &mut warnings);
        let tgids = td.options.tgids.as_deref().unwrap_or("");
        let mut r = Recording::new(events, Ksyms::shared(td.kallsyms.clone()), td.printk.as_bytes(), td.endian, td.kernel_long_size() as usize, td.cmdlines.as_bytes().to_vec(), tgids.as_bytes(), warnings);
        r.clock = clock_of(td, buf).into();
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
        r.dec.known = crate::kvars::parse_text(td.options.kvars.as_deref().unwrap_or(""));
        r
    }

    /// The header's entry count (`records` of the buffer, from the pass
    /// that found `seen`), and the tracer (trace.dat does not say which)
    /// guessed from the graph or function records it has.
    #[inline(never)]
    pub fn count(&mut self, records: u64, seen: &Seen) -> &'static str {
        self.entries += records;
        let ids = super::kind::ids_of(self.events(), |k| matches!(k, Ftrace::GraphEntry | Ftrace::RetaddrEntry | Ftrace::GraphExit | Ftrace::Function));
        let has = |f: fn(Ftrace) -> bool| ids.iter().any(|&(id, k)| f(k) && seen.has(id));
        let graph = has(|k| k != Ftrace::Function);
        let func = has(|k| k == Ftrace::Function);
        if graph {
            "function_graph"
        } else if func {
            "function"
        } else {
            "nop"
        }
    }

    pub fn events(&self) -> &[Event] {
        self.dec.events()
    }

    /// The format of a record's event.
    pub fn event_of(&self, d: &[u8]) -> Option<&Event> {
        self.dec.event(self.record_type(d))
    }

    /// A record's `common_type`.
    #[inline]
    pub fn record_type(&self, d: &[u8]) -> u16 {
        text::kernel::rec_type(d, self.dec.endian)
    }

    /// A record's `common_pid`.
    #[inline(always)]
    pub fn pid(&self, d: &[u8]) -> i32 {
        read_uint(d, 4, 4, self.dec.endian).unwrap_or(0) as u32 as i32
    }

    /// The task name of `pid` as the recording's saved_cmdlines know it.
    pub fn comm(&self, pid: i32) -> &str {
        self.cmd.comm(pid)
    }
}

/// One past the highest CPU a buffer lists (0 when it lists none).
pub fn cpu_top(buf: &Buffer) -> u32 {
    let mut top = 0;
    for c in &buf.cpus {
        top = top.max(c.cpu + 1);
    }
    top
}

/// The buffer's trace clock, else the file's.
pub fn clock_of<'t>(td: &'t TraceDat, buf: &'t Buffer) -> &'t str {
    buf.clock.as_deref().or(td.options.clock()).unwrap_or("local")
}
