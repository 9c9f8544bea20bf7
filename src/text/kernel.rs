//! What `cat /sys/kernel/tracing/trace` prints, rebuilt from raw records:
//! trace.c's header block and print_trace_line(), trace_output.c's context
//! columns and the printers of the ftrace-internal events (function, print,
//! bprint, bputs, stacks, func_repeats, raw_data), trace_syscalls.c for
//! syscalls, trace_functions_graph.c (in `funcgraph`) for function_graph.
//! Everything else goes through the event's print fmt ([`Env::render`]).
//!
//! Layouts are never assumed: the ftrace events are recognised by their
//! system/name and their fields located by name in their format files.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::funcgraph::{self, Graph};
use super::opts::{self, Opts};
use super::{clock_in_ns, ns2usecs, pad, put_bytes, seq_size, Cmdlines, Env, Rec, Rendered, Seq, LINE_TOO_BIG};
use crate::cursor::{read_uint, Endian};
use crate::sys::line::{Line, LINE_MAX};
use crate::format::{Event, FieldAt};
use crate::ftrace::{
    Record, TRACE_FLAG_BH_OFF, TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_OFF, TRACE_FLAG_NEED_RESCHED, TRACE_FLAG_NEED_RESCHED_LAZY, TRACE_FLAG_NMI,
    TRACE_FLAG_PREEMPT_RESCHED, TRACE_FLAG_SOFTIRQ,
};

/// How a record type prints: the kernel's own printers for ftrace's
/// internal events and syscalls, the print fmt for everything else.
#[derive(Clone)]
pub enum Kind {
    /// One of ftrace's own record types, printed as its tracer prints it.
    Ftrace(Record),
    /// `sys_enter_*`: the syscall's name (`sys_openat`) and per argument
    /// the text before its value as one piece (`sys_openat(dfd: `,
    /// `, filename: `, ...), its C type (for `verbose`) and where it is.
    SysEnter { name: String, args: Vec<(String, String, FieldAt)> },
    SysExit { name: String, ret: FieldAt },
    /// kprobe/fprobe (`ip`) and kretprobe/fexit (`ip` = `__probe_ret_ip`,
    /// `func` = `__probe_func`): trace_kprobe.c prints the probe address as
    /// a symbol, not the `(%lx)` its print fmt has.
    Probe { ip: FieldAt, func: Option<FieldAt> },
    Generic,
}

pub struct Class {
    pub id: u16,
    pub name: String,
    /// One of ftrace's own record types (system `ftrace`).
    pub ftrace: bool,
    pub kind: Kind,
    /// Has fields besides the common ones (the `fields` option prints
    /// `No fields found` otherwise).
    pub has_fields: bool,
    /// What [`Kernel::line_into`] prints of its records, asked of every
    /// record: decided here once, not by matching `kind` each time.
    direct: Direct,
    /// `name: `, the head of a print fmt event's text, in one piece.
    #[cfg(feature = "fast-print")]
    label: String,
}

/// What [`Kernel::line_into`] does with a class's records.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direct {
    /// Leaves them to [`Kernel::line`].
    No,
    /// Prints the line up to the print fmt's text.
    Head,
    /// Prints the whole line ([`Kernel::short_event`]).
    Short,
}

impl Direct {
    fn of(kind: &Kind) -> Direct {
        match kind {
            Kind::SysEnter { .. } | Kind::SysExit { .. } => Direct::Short,
            // (Speed-ups the board build leaves out: there Kernel::line
            // prints these events.)
            #[cfg(feature = "fast-print")]
            Kind::Ftrace(Record::Function { .. }) => Direct::Short,
            #[cfg(feature = "fast-print")]
            Kind::Generic => Direct::Head,
            _ => Direct::No,
        }
    }
}

/// Every event of the recording, classified once.
#[derive(Default)]
pub struct Classes {
    pub list: Vec<Class>,
    /// id → index into `list` + 1 (0: no such event): one load per record
    /// instead of a search (ids are small, dense numbers).
    index: Vec<u16>,
}

impl Classes {
    #[inline(never)]
    pub fn new(events: &[Event]) -> Classes {
        let mut c = Classes::default();
        for e in events {
            let id = e.id as usize;
            if c.index.len() <= id {
                c.index.resize(id + 1, 0);
            }
            // The first format of an id counts.
            if c.index[id] != 0 || c.list.len() >= u16::MAX as usize - 1 {
                continue;
            }
            c.list.push(classify(e));
            c.index[id] = c.list.len() as u16;
        }
        c
    }

    /// The class of event `id`. (Inline with fast-print: once a record,
    /// and at opt-level z a plain `#[inline]` leaves it a call; the board
    /// build, size first, keeps the call.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    pub fn get(&self, id: u16) -> Option<&Class> {
        match self.index.get(id as usize) {
            Some(&i) if i > 0 => self.list.get(i as usize - 1),
            _ => None,
        }
    }

    /// Does the recording have function_graph records' format with `retval`?
    pub fn graph_has_retval(&self) -> bool {
        self.list.iter().any(|c| matches!(c.kind, Kind::Ftrace(Record::GraphExit { retval: Some(_), .. })))
    }
}

fn classify(e: &Event) -> Class {
    let kind = classify_kind(e).unwrap_or(Kind::Generic);
    let has_fields = e.fields.iter().any(|f| !f.name.starts_with("common_"));
    Class {
        id: e.id,
        name: e.name.clone(),
        ftrace: e.system == "ftrace",
        direct: Direct::of(&kind),
        kind,
        has_fields,
        #[cfg(feature = "fast-print")]
        label: alloc::format!("{}: ", e.name),
    }
}

fn classify_kind(e: &Event) -> Option<Kind> {
    if let Some(r) = Record::of(e) {
        return Some(Kind::Ftrace(r));
    }
    if e.system == "syscalls" {
        if let Some(n) = e.name.strip_prefix("sys_enter_") {
            let mut name = String::from("sys_");
            name.push_str(n);
            let mut args = Vec::new();
            let mut seen_nr = false;
            for f in &e.fields {
                if f.name == "__syscall_nr" {
                    seen_nr = true;
                } else if seen_nr {
                    let mut p = String::new();
                    if args.is_empty() {
                        p.push_str(&name);
                        p.push('(');
                    } else {
                        p.push_str(", ");
                    }
                    p.push_str(&f.name);
                    p.push_str(": ");
                    args.push((p, f.ctype.clone(), FieldAt::of(f)));
                }
            }
            return Some(Kind::SysEnter { name, args });
        }
        if let Some(n) = e.name.strip_prefix("sys_exit_") {
            let mut name = String::from("sys_");
            name.push_str(n);
            return Some(Kind::SysExit { name, ret: e.field_at("ret")? });
        }
    }
    // Uprobes have the same fields but print `(0x%lx)`, which is their
    // print fmt already; kprobe/fprobe print fmts start `"(%lx`.
    if e.print_fmt.starts_with("\"(%lx") {
        if let Some(ip) = e.field_at("__probe_ip") {
            return Some(Kind::Probe { ip, func: None });
        }
        return Some(Kind::Probe { ip: e.field_at("__probe_ret_ip")?, func: Some(e.field_at("__probe_func")?) });
    }
    None
}

/// The first line of the file and the event-info line.
#[derive(Default)]
pub struct HeaderInfo<'a> {
    /// `current_tracer` at record time (`nop`, `function`, `function_graph`).
    pub tracer: &'a str,
    /// entries-in-buffer / entries-written (written = entries + overrun).
    pub entries: u64,
    pub written: u64,
    /// `#P:` — online CPUs.
    pub cpus: u32,
    /// latency-format's header: the kernel release (`uname -r`, or a whole
    /// uname line containing it) ...
    pub release: &'a str,
    /// ... and the preemption model (`M:`), which only the kernel knows
    /// (see [`lat_model`]); empty: "unknown".
    pub model: &'a str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Tracer {
    Other,
    Graph,
}

/// What [`Kernel::line_into`] wrote.
pub enum Wrote<'c> {
    /// A whole line of this many bytes.
    Line(usize),
    /// This many bytes, up to the text of the event of this class.
    Head(usize, &'c Class),
}

/// Counters for `ftcat --stat`.
#[derive(Default, Clone, Copy)]
pub struct Counts {
    /// Records the print fmt interpreter could not format (fields printed instead).
    pub fallback: u64,
    /// Records printed with a stand-in for a value the recording lacks.
    pub partial: u64,
    /// Records of a type no format describes.
    pub unknown: u64,
}

/// A CPU's context columns as it printed them last, up to the
/// microseconds: `comm-pid (tgid) [cpu] flags secs.`. Records of a CPU come
/// in runs of one task; kept per CPU because the merge interleaves the
/// CPUs, and one copy for all of them was rebuilt at every switch of CPU
/// (a sixth of the records of an `-e all` recording).
#[derive(Default)]
struct Head {
    /// Whose columns these are ...
    pid: i32,
    cpu: u32,
    /// ... what they depend on besides pid, CPU and second: the options
    /// (bits 16-19; 0: nothing cached) and the flag bytes when shown ...
    key: u32,
    /// ... and the start of the second shown, in µs.
    sec: u64,
    /// The bytes of `comm-pid (tgid) [cpu] ` in `text`: a change of flags
    /// or second keeps them.
    who: usize,
    text: String,
}

/// One line's context as [`Kernel::context_into`] found it, for
/// [`Head::build`] when the cached columns do not fit the line. (Read
/// through the reference where used: unpacked on entry, its fields were
/// spilled around the calls, 2 instructions more a build.)
struct LineHead {
    pid: i32,
    cpu: u32,
    /// As [`Head::key`]: which columns are shown, and the flag bytes.
    key: u32,
    /// The cached columns are this task's, CPU's, options' and second's:
    /// only the flags moved.
    same: bool,
    /// Where the line's columns start in the line buffer.
    mark: usize,
    /// The record's time in µs (0 when not shown in seconds).
    t: u64,
}

impl Head {
    /// [`Kernel::context_into`]'s columns when they are not the cached
    /// ones (another task, second or options, or other flags): written
    /// after `l.mark` in `b` and cached. Out of line: a few lines in a
    /// hundred come here, and inline its registers were saved and
    /// spilled for every line.
    #[inline(never)]
    fn build(&mut self, b: &mut Line, cmd: &Cmdlines, d: &[u8], l: &LineHead) {
        let (irq, in_ns, tgid) = (l.key & 1 << 17 != 0, l.key & 1 << 18 != 0, l.key & 1 << 19 != 0);
        // Only the flags moved: they go in place; else the columns are
        // built anew (always in the board build: less code).
        let mut f = [0u8; 5];
        lat_chars(d, &mut f);
        if !(cfg!(feature = "fast-print") && l.same && b.overwrite(l.mark + self.who, &f)) {
            b.truncate(l.mark);
            let comm = cmd.comm(l.pid);
            b.pad(16usize.saturating_sub(kwidth(comm)));
            b.extend_str(comm);
            b.push(b'-');
            let n = b.int(l.pid as i64);
            b.pad(7usize.saturating_sub(n));
            b.push(b' ');
            if tgid {
                match cmd.tgid(l.pid) {
                    0 => {
                        b.extend_str("(-------) ");
                    }
                    t => {
                        b.push(b'(');
                        b.int_right(t as i64, 7);
                        b.extend_str(") ");
                    }
                }
            }
            b.push(b'[');
            b.zeros(l.cpu as u64, 3);
            b.extend_str("] ");
            (self.pid, self.cpu, self.who) = (l.pid, l.cpu, b.len() - l.mark);
            if irq {
                b.extend(&f);
            }
            if in_ns {
                let sec = l.t / 1_000_000;
                b.push(b' ');
                b.int_right(sec as i64, 5);
                b.push(b'.');
                self.sec = sec * 1_000_000;
            }
        }
        self.key = l.key;
        self.text.clear();
        self.text.push_str(b.as_str().get(l.mark..).unwrap_or(""));
    }
}

/// The [`Head`]s: one per CPU. The board build keeps one for all of
/// them, rebuilt at each switch of CPU: less code.
#[derive(Default)]
struct Heads {
    #[cfg(feature = "fast-print")]
    per_cpu: Vec<Head>,
    #[cfg(not(feature = "fast-print"))]
    one: Head,
}

impl Heads {
    /// The head of `cpu` (always there: an Option because an index is a
    /// call at opt-level z). Corrupt CPU numbers share the last slot (and
    /// [`Head::cpu`] tells them apart) instead of growing a table to
    /// their size.
    #[cfg(feature = "fast-print")]
    #[inline(always)]
    fn of(&mut self, cpu: u32) -> Option<&mut Head> {
        let s = (cpu as usize).min(MAX_CPUS);
        if s >= self.per_cpu.len() {
            grow_heads(&mut self.per_cpu, s);
        }
        self.per_cpu.get_mut(s)
    }
    #[cfg(not(feature = "fast-print"))]
    #[inline(always)]
    fn of(&mut self, _cpu: u32) -> Option<&mut Head> {
        Some(&mut self.one)
    }
}

/// Room for the head of slot `s` (out of line: once per CPU).
#[cfg(feature = "fast-print")]
#[inline(never)]
fn grow_heads(heads: &mut Vec<Head>, s: usize) {
    heads.resize_with(s + 1, Head::default);
}

pub struct Kernel<'a, E: Env + ?Sized> {
    pub env: &'a E,
    pub cmd: &'a Cmdlines,
    pub cls: &'a Classes,
    pub opts: Opts,
    pub endian: Endian,
    /// sizeof(long) of the recording: addresses print with 8 or 16 digits.
    pub long: usize,
    pub in_ns: bool,
    /// Kernel version as major*1000+minor (0 = unknown: newest behaviour).
    pub kver: u32,
    pub tracer: Tracer,
    pub graph: Graph,
    /// annotate: the ring buffer overran, print `##### CPU N buffer started ####`.
    pub annotate: bool,
    started: Vec<bool>,
    /// CPUs that have had a record printed.
    seen: Vec<bool>,
    idx: u64,
    /// The buffer of the per-record [`Line`].
    lbuf: Vec<u8>,
    /// latency-format: the last line, waiting for the next record's
    /// timestamp (its delta mark), and where its timestamp goes.
    lat_buf: String,
    pend: Option<(u64, usize)>,
    /// latency-format's times count from the buffer's last reset
    /// (array_buffer->time_start), which the kernel does not export: 0 is
    /// right for a buffer never reset (a new instance, the boot buffer).
    pub time_start: u64,
    /// Per CPU, the context columns it printed last.
    heads: Heads,
    pub counts: Counts,
}

impl<'a, E: Env + ?Sized> Kernel<'a, E> {
    #[inline(never)]
    pub fn new(env: &'a E, cmd: &'a Cmdlines, cls: &'a Classes, opts: Opts, ncpus: u32) -> Self {
        Kernel {
            env,
            cmd,
            cls,
            opts,
            endian: Endian::Little,
            long: 8,
            in_ns: true,
            kver: 0,
            tracer: Tracer::Other,
            graph: Graph::new(ncpus, env),
            annotate: false,
            started: Vec::new(),
            seen: Vec::new(),
            idx: 0,
            lbuf: Vec::new(),
            lat_buf: String::new(),
            pend: None,
            time_start: 0,
            heads: Heads::default(),
            counts: Counts::default(),
        }
    }

    pub fn set_clock(&mut self, clock: &str) {
        self.in_ns = clock_in_ns(clock);
    }

    /// Parse `6.12.117+deb12-amd64` (or a whole `uname -a`) into major*1000+minor.
    pub fn set_release(&mut self, rel: &str) {
        self.kver = parse_release(rel);
    }

    pub fn set_tracer(&mut self, name: &str) {
        self.tracer = if name == "function_graph" { Tracer::Graph } else { Tracer::Other };
    }

    // ---- header -----------------------------------------------------------

    /// trace.c s_show() for the header: `# tracer:`, then the tracer's own
    /// header or trace_default_header().
    #[inline(never)]
    pub fn header(&self, out: &mut dyn Write, h: &HeaderInfo) -> fmt::Result {
        write!(out, "# tracer: {}\n#\n", h.tracer)?;
        let o = &self.opts;
        if !o.has(opts::CONTEXT_INFO) {
            return Ok(());
        }
        let lat = o.has(opts::LATENCY_FMT);
        // latency-format prints nothing more for an empty buffer.
        if lat && h.entries == 0 {
            return Ok(());
        }
        if lat {
            self.lat_header(out, h)?;
        }
        if self.tracer == Tracer::Graph {
            return funcgraph::header(out, o);
        }
        if lat {
            return if o.has(opts::VERBOSE) { Ok(()) } else { out.write_str(LAT_HELP) };
        }
        if o.has(opts::VERBOSE) {
            return Ok(());
        }
        write!(out, "# entries-in-buffer/entries-written: {}/{}   #P:{}\n#\n", h.entries, h.written, h.cpus)?;
        // The tgid column, or what stands in its place: the irq-info
        // layout has two spaces more before `CPU#` either way.
        let t0 = if o.has(opts::RECORD_TGID) { 12 } else { 2 };
        let irq = o.has(opts::IRQ_INFO);
        if irq {
            super::legend(
                out,
                "  _-----=> irqs-off/BH-disabled\n / _----=> need-resched\n| / _---=> hardirq/softirq\n\
                 || / _--=> preempt-depth\n||| / _-=> migrate-disable\n|||| /     delay\n",
                28 + t0,
            )?;
        }
        // The two rows of column titles, a bit per piece: tgid or not,
        // irq-info or not.
        let on = 1 | if o.has(opts::RECORD_TGID) { 2 } else { 4 } | if irq { 8 } else { 16 };
        super::rows(
            out,
            "#           TASK-PID  ;     TGID   ;  ; CPU#  |||||  TIMESTAMP  FUNCTION\n; CPU#     TIMESTAMP  FUNCTION\n@\
             #              | |    ;       |    ;  ;   |   |||||     |         |\n;   |         |         |\n",
            on,
        )
    }

    /// print_trace_header(). The latency, CPU and task are those of the
    /// max-latency snapshot, which the `trace` file of a tracer without one
    /// (all but irqsoff/wakeup, whose snapshot buffer is not recorded)
    /// shows zeroed.
    fn lat_header(&self, out: &mut dyn Write, h: &HeaderInfo) -> fmt::Result {
        let model = if h.model.is_empty() { "unknown" } else { h.model };
        write!(
            out,
            "# {} latency trace v1.1.5 on {}\n# --------------------------------------------------------------------\n# latency: 0 us, #{}/{}, CPU#0 | (M:{} VP:0, KP:0, SP:0 HP:0 #P:{})\n\
             #    -----------------\n#    | task: -0 (uid:0 nice:0 policy:0 rt_prio:0)\n#    -----------------\n#\n",
            h.tracer,
            release_word(h.release),
            h.entries,
            h.written,
            model,
            h.cpus
        )
    }

    // ---- lines ------------------------------------------------------------

    /// print_trace_line()'s lost-events line, where the loss happened.
    ///
    /// Events lost before a CPU's first record are the overwritten start of
    /// an overrun buffer: `cat trace` shows that as `##### CPU N buffer
    /// started ####` (annotate), not as a lost line, and so do we when the
    /// buffer overran. Losses after a CPU's first record (a reader that fell
    /// behind) print as trace_pipe prints them.
    pub fn lost(&mut self, out: &mut dyn Write, cpu: u32, n: Option<u64>) -> fmt::Result {
        let i = cpu as usize;
        let started = self.started.get(i).copied().unwrap_or(false) || self.seen.get(i).copied().unwrap_or(false);
        if !started && self.annotate && self.opts.has(opts::ANNOTATE) {
            return Ok(());
        }
        // After a waiting latency line, before the next record's.
        let mut s = core::mem::take(&mut self.lat_buf);
        let w: &mut dyn Write = if self.pend.is_some() { &mut s } else { out };
        let r = match n {
            Some(n) => write!(w, "CPU:{} [LOST {} EVENTS]\n", cpu, n),
            None => write!(w, "CPU:{} [LOST EVENTS]\n", cpu),
        };
        self.lat_buf = s;
        r
    }

    /// Print one record. `next` is the next record *of the same CPU* (the
    /// graph tracer folds an entry and its exit into `func();`); returns
    /// true when it was consumed that way and must not be printed.
    ///
    /// The record's text is bounded as the kernel bounds it: what fits in
    /// a trace_seq ([`super::seq_size`]), then `[LINE TOO BIG]` if that fits.
    pub fn line(&mut self, out: &mut dyn Write, r: &Rec, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        if let Some(p) = self.pend.take() {
            self.lat_flush(out, p, r.ts)?;
        }
        let mut seq = Seq::new(out, seq_size(self.kver, self.long));
        let res = self.record(&mut seq, r, next);
        seq.finish()?;
        res
    }

    /// [`funcgraph::line_into`]: a function_graph recording's common line
    /// straight into `dst`, or None (nothing printed) where
    /// [`Kernel::line`] must print the record.
    #[cfg(feature = "fast-print")]
    pub fn graph_into(&mut self, dst: &mut [u8], r: &Rec, next: Option<&Rec>) -> Option<(usize, bool)> {
        if self.pend.is_some() || self.tracer != Tracer::Graph {
            return None;
        }
        let wrote = funcgraph::line_into(self, dst, r, next)?;
        self.count(r.cpu);
        Some(wrote)
    }

    /// print_trace_line() of one record into its trace_seq.
    fn record(&mut self, out: &mut dyn Write, r: &Rec, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        self.count(r.cpu);
        let ty = rec_type(r.data, self.endian);
        let cls = self.cls;
        let class = cls.get(ty);
        if self.tracer == Tracer::Graph {
            match funcgraph::line(self, out, r, class, next)? {
                funcgraph::Done::Handled(consumed) => return Ok(consumed),
                funcgraph::Done::Unhandled => {}
            }
        }
        if self.opts.has(opts::PRINTK) && self.opts.has(opts::PRINTK_MSGONLY) {
            // trace_print_*_msg_only()
            if let Some(c) = class {
                if self.msg(out, r.data, &c.kind)? {
                    return Ok(false);
                }
            }
        }
        if self.opts.flags & (opts::BIN | opts::HEX) != 0 {
            self.hex_bin(out, r, class)?;
            return Ok(false);
        }
        if self.opts.has(opts::RAW) {
            self.raw_fmt(out, r, class)?;
            return Ok(false);
        }
        if self.opts.has(opts::LATENCY_FMT) && self.opts.has(opts::CONTEXT_INFO) {
            let mut s = core::mem::take(&mut self.lat_buf);
            s.clear();
            let res = self.lat_line(&mut s, r, class, next);
            // The timestamp column goes in later, when the next record is
            // known: the bound leaves it no room.
            let size = seq_size(self.kver, self.long);
            if s.len() > size {
                let mut cut = size - LINE_TOO_BIG.len();
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
                s.push_str(LINE_TOO_BIG);
            }
            self.lat_buf = s;
            return res;
        }
        self.trace_fmt(out, r, class, next)
    }

    /// [`Kernel::line`] for a line of context columns and a short event
    /// (syscalls, the function tracer's) in the default format, written
    /// straight into `dst` (at least [`LINE_MAX`] bytes, e.g. an output
    /// buffer's free space), or
    /// for a print fmt event the line up to its text, which
    /// [`Kernel::line_tail`] then prints. None when the record needs
    /// [`Kernel::line`] (then nothing was printed and no state changed but
    /// caches). Inline with fast-print, into its one caller
    /// (`KernelText::record`): the call and the `Option` returned through
    /// memory were a tenth of the function's cost.
    #[cfg_attr(feature = "fast-print", inline(always))]
    #[cfg_attr(not(feature = "fast-print"), inline(never))]
    pub fn line_into(&mut self, dst: &mut [u8], r: &Rec) -> Option<Wrote<'a>> {
        const OTHER: u32 = opts::BIN | opts::HEX | opts::RAW | opts::LATENCY_FMT | opts::FIELDS;
        if self.pend.is_some() || self.tracer == Tracer::Graph || self.opts.flags & OTHER != 0 || !self.opts.has(opts::CONTEXT_INFO) {
            return None;
        }
        let c = r.cpu as usize;
        // cpu_buff_start() would have something to do.
        if self.annotate && self.opts.has(opts::ANNOTATE) && c < MAX_CPUS && !self.started.get(c).copied().unwrap_or(false) {
            return None;
        }
        let cls = self.cls;
        let class = cls.get(rec_type(r.data, self.endian))?;
        let how = class.direct;
        if how == Direct::No {
            return None;
        }
        let mut b = Line::on(dst);
        self.context_into(&mut b, r);
        #[cfg(feature = "fast-print")]
        if how == Direct::Head && !b.extend_str(&class.label) {
            return None;
        }
        if how == Direct::Short && !self.short_event(&mut b, r, class) {
            return None;
        }
        self.count(r.cpu);
        Some(if how == Direct::Head { Wrote::Head(b.len(), class) } else { Wrote::Line(b.len()) })
    }

    /// The rest of a line [`Kernel::line_into`] began (`Wrote::Head`): the
    /// event's text within what its trace_seq has left.
    #[inline(never)]
    pub fn line_tail(&mut self, out: &mut dyn Write, r: &Rec, c: &Class, head: usize) -> fmt::Result {
        let mut seq = Seq::new(out, seq_size(self.kver, self.long).saturating_sub(head));
        let res = self.generic(&mut seq, c, r.data);
        seq.finish()?;
        res
    }

    /// What every printed record counts: its index and its CPU as seen.
    /// (Inline with fast-print: `#[inline]` does nothing at opt-level z;
    /// the board build keeps the call.)
    #[cfg_attr(feature = "fast-print", inline(always))]
    fn count(&mut self, cpu: u32) {
        self.idx += 1;
        let c = cpu as usize;
        // `get_mut` first: an index is a call at opt-level z, and the CPU
        // has been seen nearly always.
        match self.seen.get_mut(c) {
            Some(s) => *s = true,
            None if c < MAX_CPUS => {
                self.seen.resize(c, false);
                self.seen.push(true);
            }
            None => {}
        }
    }

    /// The end of the records: a latency line still waiting for the next
    /// record's timestamp gets none (delta 0), as the kernel's last line.
    #[inline(never)]
    pub fn finish(&mut self, out: &mut dyn Write) -> fmt::Result {
        match self.pend.take() {
            Some(p) => self.lat_flush(out, p, p.0),
            None => Ok(()),
        }
    }

    /// print_trace_fmt() with latency-format: trace_print_lat_context()
    /// and the event, into `s`; the timestamp column is written when the
    /// next record is known ([`Kernel::lat_flush`]).
    fn lat_line(&mut self, s: &mut String, r: &Rec, class: Option<&Class>, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        self.cpu_buff_start(s, r.cpu)?;
        let d = r.data;
        let pid = self.pid(d);
        let comm = self.cmd.comm(pid);
        if self.opts.has(opts::VERBOSE) {
            pad(s, 16usize.saturating_sub(kwidth(comm)))?;
            s.push_str(comm);
            let flags = d.get(2).copied().unwrap_or(0);
            let pc = d.get(3).copied().unwrap_or(0) & 0xf;
            write!(s, " {:>7} {:>3} {} {:08x} {:08x} ", pid, r.cpu as i32, flags, pc, self.ulong(self.idx.wrapping_sub(1)))?;
        } else {
            // "%8.8s": at most 8 bytes of the comm, right-aligned.
            let mut b = [0u8; 8];
            let mut n = 0;
            for ch in comm.chars() {
                let mut t = [0u8; 4];
                let bytes: &[u8] = match super::raw_byte(ch) {
                    Some(x) => {
                        t[0] = x;
                        &t[..1]
                    }
                    None => ch.encode_utf8(&mut t).as_bytes(),
                };
                for &x in bytes {
                    if n < 8 {
                        b[n] = x;
                        n += 1;
                    }
                }
            }
            pad(s, 8 - n)?;
            super::put_all(s, &b[..n])?;
            write!(s, "-{:<7} {:>3}", pid, r.cpu as i32)?;
            self.lat_fmt(s, d)?;
        }
        self.pend = Some((r.ts, s.len()));
        self.trace_body(s, r, class, next)
    }

    /// Write the waiting latency line with lat_print_timestamp() for the
    /// record at `ts` whose successor is at `next_ts`.
    fn lat_flush(&mut self, out: &mut dyn Write, (ts, at): (u64, usize), next_ts: u64) -> fmt::Result {
        let s = core::mem::take(&mut self.lat_buf);
        let (head, tail) = s.split_at_checked(at).unwrap_or((&s, ""));
        out.write_str(head)?;
        self.lat_stamp(out, ts, next_ts)?;
        out.write_str(tail)?;
        self.lat_buf = s;
        Ok(())
    }

    fn lat_stamp(&self, out: &mut dyn Write, ts: u64, next_ts: u64) -> fmt::Result {
        let mut abs = ts.wrapping_sub(self.time_start);
        let mut rel = next_ts.wrapping_sub(ts);
        if self.in_ns {
            abs = ns2usecs(abs);
            rel = ns2usecs(rel);
        }
        // %ld of an unsigned long of the traced kernel.
        let sl = |v: u64| if self.long == 4 { v as u32 as i32 as i64 } else { v as i64 };
        match (self.opts.has(opts::VERBOSE), self.in_ns) {
            (true, true) => write!(out, "[{:08x}] {}.{:03}ms (+{}.{:03}ms): ", ns2usecs(ts), sl(abs / 1000), abs % 1000, sl(rel / 1000), rel % 1000),
            (true, false) => write!(out, "[{:016x}] {} (+{}): ", ts, abs as i64, rel as i64),
            (false, true) => write!(out, " {:>4}us{}: ", abs as i64, funcgraph::mark(rel.wrapping_mul(1000))),
            (false, false) => write!(out, " {:>4}: ", abs as i64),
        }
    }

    /// print_hex_fmt() and print_bin_fmt(): pid, CPU and timestamp, then
    /// the event's hex/bin printer (only the function tracer has one; the
    /// others print trace_nop_print()'s `type: N`). hex: each value as hex
    /// digits and a space, a newline at the end; bin: as the kernel's
    /// memory holds them (the recording's byte order), no newline.
    fn hex_bin(&mut self, out: &mut dyn Write, r: &Rec, class: Option<&Class>) -> fmt::Result {
        let d = r.data;
        let e = self.endian;
        let bin = self.opts.has(opts::BIN);
        let mut v = [(0u64, 0usize); 5];
        let mut n = 0;
        if self.opts.has(opts::CONTEXT_INFO) {
            v[0] = (self.pid(d) as u32 as u64, 4);
            v[1] = (r.cpu as u64, 4);
            v[2] = (r.ts, 8);
            n = 3;
        }
        let mut nop = None;
        match class.map(|c| &c.kind) {
            Some(Kind::Ftrace(Record::Function { ip, parent })) => {
                v[n] = (ip.get(d, e), self.long);
                v[n + 1] = (parent.get(d, e), self.long);
                n += 2;
            }
            Some(_) => nop = class.map(|c| c.id),
            None => {}
        }
        let mut b = [0u8; 40];
        let mut k = 0;
        for &(x, size) in &v[..n] {
            if !bin {
                write!(out, "{:0w$x} ", x, w = 2 * size)?;
                continue;
            }
            for i in 0..size.min(8) {
                let sh = if e == Endian::Big { 8 * (size - 1 - i) } else { 8 * i };
                if let Some(c) = b.get_mut(k) {
                    *c = (x >> sh) as u8;
                    k += 1;
                }
            }
        }
        super::put_all(out, b.get(..k).unwrap_or(&[]))?;
        if let Some(id) = nop {
            write!(out, "type: {}\n", id)?;
        }
        if !bin {
            out.write_char('\n')?;
        }
        Ok(())
    }

    /// print_raw_fmt(): the `raw` option: `pid cpu ts ` and each type's raw
    /// printer; types without one print `type: N` (trace_nop_print).
    fn raw_fmt(&mut self, out: &mut dyn Write, r: &Rec, class: Option<&Class>) -> fmt::Result {
        let d = r.data;
        let e = self.endian;
        if self.opts.has(opts::CONTEXT_INFO) {
            write!(out, "{} {} {} ", self.pid(d), r.cpu, r.ts)?;
        }
        let Some(c) = class else {
            return write!(out, "{} ?\n", rec_type(d, e));
        };
        match &c.kind {
            Kind::Ftrace(Record::Function { ip, parent }) => write!(out, "{:x} {:x}\n", ip.get(d, e), parent.get(d, e)),
            Kind::Ftrace(Record::Print { ip, .. } | Record::Bprint { ip, .. } | Record::Bputs { ip, .. }) => {
                // `# ip text` for print, `: ip : text` for bprint/bputs.
                let print = matches!(c.kind, Kind::Ftrace(Record::Print { .. }));
                write!(out, "{} {:x} {}", if print { "#" } else { ":" }, ip.get(d, e), if print { "" } else { ": " })?;
                self.msg(out, d, &c.kind).map(|_| ())
            }
            Kind::Ftrace(Record::FuncRepeats { ip, parent, count, top, bottom }) => {
                let delta = (top.get(d, e) << 32) | bottom.get(d, e);
                write!(out, "{} {} {} {}\n", ip.get(d, e), parent.get(d, e), count.get(d, e), delta)
            }
            Kind::Ftrace(Record::RawData { .. }) => self.event(out, r, c, None).map(|_| ()),
            _ => write!(out, "type: {}\n", c.id),
        }
    }

    /// print_trace_fmt(): annotation, context columns, the event.
    fn trace_fmt(&mut self, out: &mut dyn Write, r: &Rec, class: Option<&Class>, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        self.cpu_buff_start(out, r.cpu)?;
        // The context columns and the common short events (syscalls) go
        // out in one piece.
        let mut lb = core::mem::take(&mut self.lbuf);
        if lb.len() != LINE_MAX {
            lb.resize(LINE_MAX, 0);
        }
        let mut b = Line::on(&mut lb);
        if self.opts.has(opts::CONTEXT_INFO) {
            self.context_into(&mut b, r);
        }
        let short = match class {
            Some(c) if !self.opts.has(opts::FIELDS) => self.short_event(&mut b, r, c),
            _ => false,
        };
        let w = b.flush(out);
        self.lbuf = lb;
        w?;
        if short {
            return Ok(false);
        }
        self.trace_body(out, r, class, next)
    }

    /// print_trace_fmt() after the context columns (shared by both
    /// context formats, one copy of the `fields` printer).
    #[inline(never)]
    fn trace_body(&mut self, out: &mut dyn Write, r: &Rec, class: Option<&Class>, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        let Some(c) = class else {
            self.counts.unknown += 1;
            return write!(out, "Unknown type {}\n", rec_type(r.data, self.endian)).map(|_| false);
        };
        if self.opts.has(opts::FIELDS) {
            self.fields(out, r, c)?;
            return Ok(false);
        }
        self.event(out, r, c, next)
    }

    fn cpu_buff_start(&mut self, out: &mut dyn Write, cpu: u32) -> fmt::Result {
        if !self.annotate || !self.opts.has(opts::ANNOTATE) {
            return Ok(());
        }
        let i = cpu as usize;
        if i >= MAX_CPUS {
            return Ok(());
        }
        if self.started.len() <= i {
            self.started.resize(i + 1, false);
        }
        if self.started[i] {
            return Ok(());
        }
        self.started[i] = true;
        if self.idx > 1 {
            write!(out, "##### CPU {} buffer started ####\n", cpu)?;
        }
        Ok(())
    }

    /// event->funcs->trace(): the body after the context columns.
    pub(crate) fn event(&mut self, out: &mut dyn Write, r: &Rec, c: &Class, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        let d = r.data;
        let e = self.endian;
        let sf = self.opts.flags;
        match &c.kind {
            Kind::Ftrace(Record::Function { ip, parent }) => {
                self.fn_trace(out, ip.get(d, e), parent.get(d, e), sf)?;
                out.write_char('\n')?;
            }
            Kind::Ftrace(Record::Print { ip, .. } | Record::Bprint { ip, .. } | Record::Bputs { ip, .. }) => {
                self.ip_sym(out, ip.get(d, e), sf)?;
                out.write_str(": ")?;
                self.msg(out, d, &c.kind)?;
            }
            Kind::Ftrace(Record::KernelStack { caller } | Record::UserStack { caller }) => {
                // One loop for both: the kernel stack ends at ULONG_MAX
                // (or the record's end) and prints symbols; the user stack
                // has FTRACE_STACK_ENTRIES slots, ends at 0, and without
                // the task's mm (gone by now) prints bare addresses.
                let user = matches!(c.kind, Kind::Ftrace(Record::UserStack { .. }));
                out.write_str(if user { "<user stack trace>\n" } else { "<stack trace>\n" })?;
                let (mut n, end) = if user { (8, 0) } else { (usize::MAX, self.ulong_max()) };
                let mut p = caller.off as usize;
                while n > 0 {
                    let Ok(a) = read_uint(d, p, self.long, e) else { break };
                    if a == end {
                        break;
                    }
                    if user {
                        out.write_str(" =>  <")?;
                        self.hex_ip(out, a)?;
                        out.write_str(">\n")?;
                    } else {
                        out.write_str(" => ")?;
                        self.ip_sym(out, a, sf)?;
                        out.write_char('\n')?;
                    }
                    p += self.long;
                    n -= 1;
                }
            }
            Kind::Ftrace(Record::FuncRepeats { ip, parent, count, top, bottom }) => {
                self.fn_trace(out, ip.get(d, e), parent.get(d, e), sf)?;
                write!(out, " (repeats: {}, last_ts:", count.get(d, e))?;
                let delta = (top.get(d, e) << 32) | bottom.get(d, e);
                self.time(out, r.ts.wrapping_sub(delta))?;
                out.write_str(")\n")?;
            }
            Kind::Ftrace(Record::RawData { id, buf }) => {
                write!(out, "# {:x} buf:", id.get(d, e) as u32)?;
                for b in d.get(buf.off as usize..).unwrap_or(&[]) {
                    write!(out, " {:02x}", b)?;
                }
                out.write_char('\n')?;
            }
            Kind::SysEnter { name, args } => {
                super::syscalls::enter(out, name, args, d, e, self.kver, self.opts.has(opts::VERBOSE))?;
            }
            Kind::SysExit { name, ret } => write!(out, "{} -> 0x{:x}\n", name, self.ulong(ret.get(d, e)))?,
            Kind::Ftrace(Record::GraphEntry { .. } | Record::GraphExit { .. }) => {
                // A graph record while another tracer is current: the
                // graph printer without its per-CPU state, as the kernel.
                return funcgraph::event_alone(self, out, r, c, next);
            }
            Kind::Probe { ip, func } => {
                // print_kprobe_event / print_kretprobe_event: `(sym+off/size)`
                // or `(ret_ip+off/size <- func)`, then the args, which the
                // print fmt after its `(%lx...)` prints the kernel's way.
                write!(out, "{}: (", c.name)?;
                self.ip_sym(out, ip.get(d, e), sf | opts::SYM_OFFSET)?;
                if let Some(f) = func {
                    out.write_str(" <- ")?;
                    self.ip_sym(out, f.get(d, e), sf & !opts::SYM_OFFSET)?;
                }
                out.write_char(')')?;
                let mut s = String::new();
                if self.env.render(c.id, d, &mut s)? == Rendered::Fallback {
                    self.counts.fallback += 1;
                    out.write_char(' ')?;
                    out.write_str(&s)?;
                } else {
                    out.write_str(s.find(')').and_then(|i| s.get(i + 1..)).unwrap_or(""))?;
                }
                out.write_char('\n')?;
            }
            Kind::Generic => {
                out.write_str(&c.name)?;
                out.write_str(": ")?;
                self.generic(out, c, d)?;
            }
        }
        Ok(false)
    }

    /// A print fmt event's text after its `name: `, and the newline.
    fn generic(&mut self, out: &mut dyn Write, c: &Class, d: &[u8]) -> fmt::Result {
        match self.env.render(c.id, d, out)? {
            Rendered::Fallback => self.counts.fallback += 1,
            Rendered::Partial => self.counts.partial += 1,
            Rendered::Ok => {}
        }
        out.write_char('\n')
    }

    /// Events whose whole text fits a [`Line`]: syscalls (as
    /// trace_syscalls.c prints them) and the function tracer without sym
    /// flags. false = not handled here (nothing was added).
    fn short_event(&self, b: &mut Line, r: &Rec, c: &Class) -> bool {
        let d = r.data;
        let e = self.endian;
        let mark = b.len();
        match &c.kind {
            Kind::SysExit { name, ret } => {
                if b.room() < name.len() + 24 {
                    return false;
                }
                b.extend_str(name);
                b.extend_str(" -> 0x");
                b.hex(self.ulong(ret.get(d, e)));
                b.push(b'\n');
                true
            }
            Kind::SysEnter { args, .. } => {
                let ok = super::syscalls::enter_line(b, args, d, e, self.kver, self.opts.has(opts::VERBOSE));
                if !ok {
                    b.truncate(mark);
                }
                ok
            }
            // (A speed-up the board build leaves out: there fn_trace
            // prints these lines.)
            #[cfg(feature = "fast-print")]
            Kind::Ftrace(Record::Function { ip, parent }) => {
                let ok = self.fn_line(b, ip.get(d, e), parent.get(d, e));
                if !ok {
                    b.truncate(mark);
                }
                ok
            }
            _ => false,
        }
    }

    /// The function tracer's `func <-parent` line (what [`Kernel::fn_trace`]
    /// prints, and a newline) when both are plain names: the line a
    /// function recording prints nearly every time, in one piece.
    /// False (a part may be written) for the rest.
    #[cfg(feature = "fast-print")]
    #[inline(never)]
    fn fn_line(&self, b: &mut Line, ip: u64, parent: u64) -> bool {
        let sf = self.opts.flags;
        if sf & (opts::SYM_OFFSET | opts::SYM_ADDR) != 0 {
            return false;
        }
        let Some(f) = self.plain_name(ip) else { return false };
        let line = if sf & opts::PRINT_PARENT != 0 && parent != 0 {
            let Some(p) = self.plain_name(parent) else { return false };
            [f, " <-", p, "\n"]
        } else {
            [f, "\n", "", ""]
        };
        // One copy of the (inlined) store for the four pieces.
        line.iter().all(|s| b.extend_str(s))
    }

    /// The name [`Kernel::ip_sym`] prints for `ip` as it is, or None when
    /// it prints something else (no symbol, the kretprobe trampoline) or
    /// the name is not ASCII (a raw-byte escape must reach the writer).
    #[cfg(feature = "fast-print")]
    #[inline(never)]
    fn plain_name(&self, ip: u64) -> Option<&str> {
        if ip == 0 {
            return None;
        }
        let name = self.env.ascii_name(ip)?;
        // The length first: the trampoline's check is a call, and this is
        // asked of every function record's names.
        let tramp = matches!(name.len(), 20 | 22) && is_kretprobe_tramp(name);
        (!name.is_empty() && !tramp).then_some(name)
    }

    /// The text of a print, bprint or bputs record (what
    /// trace_print_*_msg_only() prints); false, nothing printed, for any
    /// other kind.
    pub(crate) fn msg(&mut self, out: &mut dyn Write, d: &[u8], kind: &Kind) -> Result<bool, fmt::Error> {
        let e = self.endian;
        match kind {
            Kind::Ftrace(Record::Print { buf, .. }) => put_bytes(out, d.get(buf.off as usize..).unwrap_or(&[]))?,
            Kind::Ftrace(Record::Bprint { fmt, buf, .. }) => self.bprint(out, fmt.get(d, e), d.get(buf.off as usize..).unwrap_or(&[]))?,
            Kind::Ftrace(Record::Bputs { str, .. }) => self.kstr(out, str.get(d, e))?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    pub(crate) fn bprint(&mut self, out: &mut dyn Write, fmt_addr: u64, args: &[u8]) -> fmt::Result {
        if self.env.bprint(fmt_addr, args, out)? == Rendered::Fallback {
            self.counts.fallback += 1;
        }
        Ok(())
    }

    pub(crate) fn kstr(&mut self, out: &mut dyn Write, addr: u64) -> fmt::Result {
        match self.env.kstr(addr) {
            Some(s) => out.write_str(s),
            None => {
                self.counts.fallback += 1;
                write!(out, "(0x{:x})", addr)
            }
        }
    }

    /// The `fields` option (print_event_fields): every field as name=value.
    pub fn fields(&mut self, out: &mut dyn Write, r: &Rec, c: &Class) -> fmt::Result {
        let d = r.data;
        if c.ftrace && !self.opts.has(opts::ALL_FIELDS) {
            // print_event_fields() looks ftrace's own types up among the
            // trace events and does not find them.
            return write!(out, "UNKNOWN TYPE {}\n", c.id);
        }
        write!(out, "{}:", c.name)?;
        if !c.has_fields {
            return out.write_str("No fields found\n");
        }
        // printfmt's fields printer (print_fields() of this kernel: symbols
        // for long-sized values, ...); an Env without one prints nothing more.
        out.write_char(' ')?;
        let mut s = String::new();
        self.env.fields(c.id, d, &mut s)?;
        // A marker's buf ends in its own newline: one line per record.
        out.write_str(if c.ftrace { s.trim_end_matches('\n') } else { &s })?;
        out.write_char('\n')
    }

    // ---- pieces -----------------------------------------------------------

    /// trace_print_context(): `%16s-%-7d [%03d] flags  secs.usecs: `,
    /// into a line buffer (the event text may follow). Built without
    /// core::fmt: this runs for every line.
    pub fn context_into(&mut self, b: &mut Line, r: &Rec) {
        let d = r.data;
        let pid = self.pid(d);
        let tgid = self.opts.has(opts::RECORD_TGID);
        let irq = self.opts.has(opts::IRQ_INFO);
        // What the columns depend on besides pid, CPU and second: the
        // options (bit 16 says "valid") and the flags bytes when shown.
        let flags = if irq { (d.get(2).copied().unwrap_or(0) as u32) | ((d.get(3).copied().unwrap_or(0) as u32) << 8) } else { 0 };
        let key = 0x1_0000 | (irq as u32) << 17 | (self.in_ns as u32) << 18 | (tgid as u32) << 19 | flags;
        let t = if self.in_ns { usecs(r.ts) } else { 0 };
        let (cmd, in_ns) = (self.cmd, self.in_ns);
        let Some(h) = self.heads.of(r.cpu) else { return };
        let mark = b.len();
        // The same task, options and second: the columns as they were ...
        let same = h.pid == pid && h.cpu == r.cpu && h.key >> 16 == key >> 16 && t.wrapping_sub(h.sec) < 1_000_000;
        if same {
            b.extend_str(&h.text);
        }
        if !same || h.key != key {
            // ... or not (or only the flags moved).
            h.build(b, cmd, d, &LineHead { pid, cpu: r.cpu, key, same, mark, t });
        }
        if in_ns {
            // Microseconds within the cached second: no 64-bit divide
            // (tens of cycles in a size-optimised build).
            b.six(t.wrapping_sub(h.sec) as u32);
        } else {
            b.push(b' ');
            b.uint_right(r.ts, 12);
        }
        // Two pushes, not `extend_str`: its copy of under four bytes is a
        // loop a byte at a time. (Both or neither, as `extend_str`.)
        if b.room() >= 2 {
            b.push(b':');
            b.push(b' ');
        }
    }

    #[inline]
    pub fn pid(&self, d: &[u8]) -> i32 {
        match d.get(4..8) {
            Some(b) => self.endian.u32([b[0], b[1], b[2], b[3]]) as i32,
            None => 0,
        }
    }

    /// trace_print_time(): ` %5lu.%06lu` for ns clocks, ` %12llu` otherwise.
    pub fn time(&self, out: &mut dyn Write, ts: u64) -> fmt::Result {
        if self.in_ns {
            let t = ns2usecs(ts);
            write!(out, " {:>5}.{:06}", t / 1_000_000, t % 1_000_000)
        } else {
            write!(out, " {:>12}", ts)
        }
    }

    /// trace_print_lat_fmt(): irqs-off, need-resched, hard/softirq,
    /// preempt depth, migrate-disable.
    pub fn lat_fmt(&self, out: &mut dyn Write, d: &[u8]) -> fmt::Result {
        let mut t = [0u8; 5];
        lat_chars(d, &mut t);
        out.write_str(core::str::from_utf8(&t).unwrap_or("....."))
    }

    /// print_fn_trace(): `func <-parent` with the sym flags.
    fn fn_trace(&self, out: &mut dyn Write, ip: u64, parent: u64, flags: u32) -> fmt::Result {
        self.ip_sym(out, ip, flags)?;
        if flags & opts::PRINT_PARENT != 0 && parent != 0 {
            out.write_str(" <-")?;
            self.ip_sym(out, parent, flags)?;
        }
        Ok(())
    }

    /// seq_print_ip_sym().
    pub fn ip_sym(&self, out: &mut dyn Write, ip: u64, flags: u32) -> fmt::Result {
        if ip == 0 {
            return out.write_char('0');
        }
        match self.env.sym(ip) {
            Some(s) if !s.name.is_empty() => {
                if is_kretprobe_tramp(s.name) {
                    out.write_str("[unknown/kretprobe'd]")?;
                } else if flags & opts::SYM_OFFSET != 0 {
                    sym_text(out, &s, ip, true)?;
                } else {
                    out.write_str(s.name)?;
                }
            }
            _ => {
                if flags & opts::SYM_OFFSET != 0 {
                    write!(out, "0x{:x}", ip)?;
                } else {
                    write!(out, "0x{:08x}", ip)?;
                }
            }
        }
        if flags & opts::SYM_ADDR != 0 {
            out.write_str(" <")?;
            self.hex_ip(out, ip)?;
            out.write_char('>')?;
        }
        Ok(())
    }

    /// `%ps`: the name, ` [module]` for module symbols, `0x...` if unknown.
    pub fn ps(&self, out: &mut dyn Write, ip: u64) -> fmt::Result {
        match self.env.sym(ip) {
            Some(s) if !s.name.is_empty() => sym_text(out, &s, ip, false),
            _ => write!(out, "0x{:x}", ip),
        }
    }

    /// IP_FMT: `%016lx` on 64-bit, `%08lx` on 32-bit.
    fn hex_ip(&self, out: &mut dyn Write, ip: u64) -> fmt::Result {
        if self.long == 4 {
            write!(out, "{:08x}", ip as u32)
        } else {
            write!(out, "{:016x}", ip)
        }
    }

    #[inline]
    fn ulong_max(&self) -> u64 {
        if self.long == 4 {
            u32::MAX as u64
        } else {
            u64::MAX
        }
    }

    /// A value as C `unsigned long` of the recording.
    #[inline]
    pub fn ulong(&self, v: u64) -> u64 {
        if self.long == 4 {
            v & 0xffff_ffff
        } else {
            v
        }
    }
}

/// [`ns2usecs`] with a multiply for the divide (see [`Line::six`]):
/// x / 1000 = high half of (x >> 3) * ceil(2^68 / 1000), >> 4, exact for
/// every u64.
#[inline]
pub(crate) fn usecs(ns: u64) -> u64 {
    let x = ns.wrapping_add(500);
    ((((x >> 3) as u128 * 0x20C4_9BA5_E353_F7CF) >> 64) >> 4) as u64
}

/// Per-CPU state is kept for CPU numbers below this (NR_CPUS tops out at
/// 8192); a corrupt CPU number must not make us allocate for billions.
pub const MAX_CPUS: usize = 8192;

/// A record's `common_type` (0 for a record too short to have one).
#[inline(always)]
pub fn rec_type(d: &[u8], e: Endian) -> u16 {
    match d.get(0..2) {
        Some(b) => e.u16([b[0], b[1]]),
        None => 0,
    }
}

/// The five latency columns of a record's common flags and preempt count.
pub(crate) fn lat_chars(d: &[u8], t: &mut [u8; 5]) {
    let flags = d.get(2).copied().unwrap_or(0);
    let pc = d.get(3).copied().unwrap_or(0);
    let on = |bit: u8| flags & bit != 0;
    let irqs_off = on(TRACE_FLAG_IRQS_OFF);
    let lazy = on(TRACE_FLAG_NEED_RESCHED_LAZY);
    let nr = on(TRACE_FLAG_NEED_RESCHED);
    let hard = on(TRACE_FLAG_HARDIRQ);
    let soft = on(TRACE_FLAG_SOFTIRQ);
    let pr = on(TRACE_FLAG_PREEMPT_RESCHED);
    let nmi = on(TRACE_FLAG_NMI);
    let bh = on(TRACE_FLAG_BH_OFF);
    t[0] = match (irqs_off, bh) {
        (true, true) => b'D',
        (true, false) => b'd',
        (false, true) => b'b',
        _ => b'.',
    };
    t[1] = match (nr, lazy, pr) {
        (true, true, true) => b'B',
        (true, false, true) => b'N',
        (false, true, true) => b'L',
        (true, true, false) => b'b',
        (true, false, false) => b'n',
        (false, true, false) => b'l',
        (false, false, true) => b'p',
        _ => b'.',
    };
    t[2] = if nmi && hard {
        b'Z'
    } else if nmi {
        b'z'
    } else if hard && soft {
        b'H'
    } else if hard {
        b'h'
    } else if soft {
        b's'
    } else {
        b'.'
    };
    const HEX: &[u8; 16] = b"0123456789abcdef";
    t[3] = if pc & 0xf != 0 { HEX[(pc & 0xf) as usize] } else { b'.' };
    t[4] = if pc & 0xf0 != 0 { HEX[(pc >> 4) as usize] } else { b'.' };
}


/// A known symbol as `%ps` (`off` false) or `%pS` (true): the name,
/// `+0xOFF/0xSIZE` for `%pS`, ` [module]` for a module's.
fn sym_text(out: &mut dyn Write, s: &super::Sym, ip: u64, off: bool) -> fmt::Result {
    out.write_str(s.name)?;
    if off {
        write!(out, "+0x{:x}/0x{:x}", ip.wrapping_sub(s.addr), s.size)?;
    }
    if let Some(m) = s.module {
        write!(out, " [{}]", m)?;
    }
    Ok(())
}

/// `__kretprobe_trampoline` (5.11+) or `kretprobe_trampoline`.
fn is_kretprobe_tramp(name: &str) -> bool {
    name.strip_prefix("__").unwrap_or(name) == "kretprobe_trampoline"
}

/// Printed width of a name the way the kernel's `%16s` counts: bytes, with
/// a raw-byte escape counting as the one byte it stands for.
pub fn kwidth(s: &str) -> usize {
    s.chars().map(|c| if super::raw_byte(c).is_some() { 1 } else { c.len_utf8() }).sum()
}

/// `6.12.117+deb12-amd64`, or a uname line containing it, → 6012.
pub fn parse_release(rel: &str) -> u32 {
    for word in rel.split_ascii_whitespace() {
        let mut it = word.split('.');
        let (Some(a), Some(b)) = (it.next(), it.next()) else { continue };
        let b = b.split_once(|c: char| !c.is_ascii_digit()).map_or(b, |(digits, _)| digits);
        if let (Ok(a), Ok(b)) = (a.parse::<u32>(), b.parse::<u32>()) {
            if (2..=20).contains(&a) {
                return a * 1000 + b;
            }
        }
    }
    0
}

/// `uname -r` out of a release or uname line.
pub fn release_word(rel: &str) -> &str {
    rel.split_ascii_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit()) && w.contains('.')).unwrap_or("")
}

/// The `M:` of the latency header, the preemption model, out of the
/// kernel's own header line (`# latency: ... (M:MODEL VP:...`): the kernel
/// shows it nowhere else but debugfs, in a form that changed with 6.15
/// (server/desktop/preempt before, preempt_model_str() since). "unknown"
/// when not given.
pub fn lat_model(line: &str) -> &str {
    match crate::util::split_str(line, "(M:", false) {
        Some((_, t)) => crate::util::split_str(t, " VP:", false).map_or(t, |(model, _)| model),
        None => "unknown",
    }
}

const LAT_HELP: &str = "#                    _------=> CPU#            \n\
#                   / _-----=> irqs-off/BH-disabled\n\
#                  | / _----=> need-resched    \n\
#                  || / _---=> hardirq/softirq \n\
#                  ||| / _--=> preempt-depth   \n\
#                  |||| / _-=> migrate-disable \n\
#                  ||||| /     delay           \n\
#  cmd     pid     |||||| time  |   caller     \n\
#     \\   /        ||||||  \\    |    /       \n";

#[cfg(test)]
mod probe_tests {
    use super::{Classes, Kind};

    /// kprobe, kretprobe and uprobe formats as tracefs gives them: the first
    /// two get trace_kprobe.c's printer, the uprobe keeps its print fmt.
    #[test]
    fn probes_are_classified_by_fields_and_print_fmt() {
        let head = "format:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n";
        let ip = "\tfield:unsigned long __probe_ip;\toffset:8;\tsize:8;\tsigned:0;\n";
        let ret = "\tfield:unsigned long __probe_func;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:unsigned long __probe_ret_ip;\toffset:16;\tsize:8;\tsigned:0;\n";
        let mk = |id: u16, sys: &str, f: &str, pf: &str| {
            let t = alloc::format!("name: p{}\nID: {}\n{}{}\nprint fmt: {}\n", id, id, head, f, pf);
            crate::format::parse_event(sys, &t).unwrap()
        };
        let evs = [
            mk(1, "kprobes", ip, "\"(%lx) dfd=%d\", REC->__probe_ip, REC->dfd"),
            mk(2, "grp", ret, "\"(%lx <- %lx) ret=%d\", REC->__probe_func, REC->__probe_ret_ip, REC->ret"),
            mk(3, "uprobes", ip, "\"(0x%lx)\", REC->__probe_ip"),
        ];
        let c = Classes::new(&evs);
        let kind = |id| &c.get(id).unwrap().kind;
        assert!(matches!(kind(1), Kind::Probe { func: None, .. }));
        // kretprobe: ip is the return address, func the probed function.
        let mut d = [0u8; 24];
        d[8] = 1;
        d[16] = 2;
        let le = crate::cursor::Endian::Little;
        assert!(matches!(kind(2), Kind::Probe { func: Some(f), ip } if ip.get(&d, le) == 2 && f.get(&d, le) == 1));
        assert!(matches!(kind(3), Kind::Generic));
    }
}

#[cfg(test)]
mod number_tests {
    use super::usecs;

    /// The divide-free microseconds: the same as the plain divides.
    #[test]
    fn usecs_as_the_divide() {
        for ns in [0u64, 499, 500, 1_499, 11_408_000_733_123, u64::MAX - 500, u64::MAX - 499, u64::MAX] {
            assert_eq!(usecs(ns), super::ns2usecs(ns), "{}", ns);
        }
    }
}
