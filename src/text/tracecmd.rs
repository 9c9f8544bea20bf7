//! What `trace-cmd report` prints for a recording, as two releases print
//! it ([`Release`]: 3.4 with libtraceevent 1.9, and 3.1.6 with 1.7, what
//! Debian bookworm ships): trace-read.c's trace_show_data() line
//! (`%16s-%-5d [%03d] %5lu.%06lu: name: ` and the event name padded to 20,
//! with 3.3+ the flags column after the CPU), the handlers trace-cmd
//! registers itself (trace-ftrace.c: function_graph with leaf folding,
//! retval as trace-cmd 3.2+ prints it) and libtraceevent's plugins
//! (function with its parent-stack indentation, kernel_stack, func_repeats,
//! raw_data, sched_switch/sched_wakeup, hrtimer, kmem call_site, tlb,
//! futex, kvm: see [`plugins`]). Every other event goes through its print fmt.
//!
//! libtraceevent keeps state across records that changes later output, and
//! it is kept here too: the function plugin's per-CPU parent stacks, and
//! libtraceevent's pid -> comm table, whose answers depend on when it was
//! built (see [`Comms`]).

use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, OnceCell};
use core::fmt::{self, Write};

use super::kernel::kwidth;
use crate::sys::line::Line;
use super::{pad, put_bytes, Env, Rec, Rendered};
use crate::cursor::{read_uint, Endian};
use crate::format::{Event, FieldAt, FieldKind};
use crate::ftrace::{Record, TRACE_FLAG_HARDIRQ, TRACE_FLAG_IRQS_NOSUPPORT, TRACE_FLAG_IRQS_OFF, TRACE_FLAG_NEED_RESCHED, TRACE_FLAG_SOFTIRQ};
use plugins::States;

/// The first byte (in UTF-8) of every raw-byte escape ([`super::RAW_BASE`]).
const ESC_LEAD: u8 = 0xef;

mod plugins;

/// Which `trace-cmd report` to print as: the releases whose text differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// trace-cmd 3.1 and 3.2 (Debian bookworm's 3.1.6, libtraceevent 1.7):
    /// no flags column unless `-l`; `-R` adds no flags.
    V3_1,
    /// trace-cmd 3.3 and later (3.4, libtraceevent 1.9): the flags column
    /// (`d.h1.`) on every line, `-R`'s `-0x` flags after the CPU with or
    /// without `-l`, sched_switch's state letters from its format.
    V3_4,
}

// Option bits (`-t`, `-l`, `-R`, `-O ...`).
/// `-t`: nanosecond timestamps.
pub const NSEC: u32 = 1 << 0;
/// `-l`: latency columns.
pub const LAT: u32 = 1 << 1;
/// `-R`: raw field values instead of the print formats.
pub const RAW: u32 = 1 << 2;
/// `-O tailprint` / `fgraph:tailprint`: `} /* func */`.
pub const TAIL: u32 = 1 << 3;
/// `-O depth`: ` (depth)` after graph lines.
pub const DEPTH: u32 = 1 << 4;
pub const RETVAL_SKIP: u32 = 1 << 5;
pub const RETVAL_DEC: u32 = 1 << 6;
pub const RETVAL_HEX: u32 = 1 << 7;
/// `-O parent` (ftrace:parent): ` <-- parent` after function lines.
pub const PARENT: u32 = 1 << 8;
/// `-O indent=0` clears it: function lines indented by parent stack.
pub const INDENT: u32 = 1 << 9;
/// `-O offset`: `func+0x1c` in function and stack lines.
pub const OFFSET: u32 = 1 << 10;

/// Parse one `-O [plugin:]name[=0|1]` into the flags. The fgraph
/// plugin's options may be named `fgraph:` or `ftrace:`, the function
/// plugin's only `ftrace:`.
pub fn set_opt(flags: &mut u32, spec: &str) -> Result<(), ()> {
    let (name, val) = match spec.split_once('=') {
        Some((n, v)) => (n, !matches!(v, "0" | "false" | "no")),
        None => (spec, true),
    };
    let (alias, name) = match name.split_once(':') {
        Some((a, n)) => (Some(a), n),
        None => (None, name),
    };
    let (plugin, bit) = match name {
        "tailprint" => ("fgraph", TAIL),
        "depth" => ("fgraph", DEPTH),
        "retval-skip" => ("fgraph", RETVAL_SKIP),
        "retval-dec" => ("fgraph", RETVAL_DEC),
        "retval-hex" => ("fgraph", RETVAL_HEX),
        "parent" => ("ftrace", PARENT),
        "indent" => ("ftrace", INDENT),
        "offset" => ("ftrace", OFFSET),
        _ => return Err(()),
    };
    if !alias.map_or(true, |x| x == "ftrace" || x == plugin) {
        return Err(());
    }
    if val {
        *flags |= bit;
    } else {
        *flags &= !bit;
    }
    Ok(())
}

/// Appending to a line without core::fmt: these run for every field of
/// every line, where `write!` would go through the formatting machinery.
trait Append {
    fn put(&mut self, s: &str) -> &mut Self;
    /// `v` as C's printf prints it with conversion `conv` (`d`, `u`, `x`,
    /// `o`), flags and width (printf::number).
    fn num(&mut self, v: u64, conv: u8, flags: u8, width: i32) -> &mut Self;
    /// `%d`.
    fn signed(&mut self, v: i64) -> &mut Self;
    /// `%u`.
    fn unsigned(&mut self, v: u64) -> &mut Self;
    /// `%x`.
    fn hex(&mut self, v: u64) -> &mut Self;
}

impl Append for String {
    #[inline(never)]
    fn put(&mut self, s: &str) -> &mut Self {
        self.push_str(s);
        self
    }
    #[inline(never)]
    fn num(&mut self, v: u64, conv: u8, flags: u8, width: i32) -> &mut Self {
        let pad = crate::printfmt::printf::Pad { flags, width, prec: -1 };
        // Into a stack buffer (a width past it: a Vec); number() prints
        // ASCII digits, signs and spaces only, so from_utf8 never fails.
        let mut t = [0u8; 64];
        let mut o = crate::printfmt::Out::on(&mut t);
        crate::printfmt::printf::number(&mut o, v, conv, &pad);
        let n = o.len();
        if let Some(b) = t.get(..n) {
            self.push_str(core::str::from_utf8(b).unwrap_or_default());
        } else {
            let mut b = Vec::new();
            crate::printfmt::append(&mut b, &mut |o| crate::printfmt::printf::number(o, v, conv, &pad));
            self.push_str(core::str::from_utf8(&b).unwrap_or_default());
        }
        self
    }
    fn signed(&mut self, v: i64) -> &mut Self {
        line_digits(self, v as u64, |l, v| {
            l.int(v as i64);
        })
    }
    fn unsigned(&mut self, v: u64) -> &mut Self {
        line_digits(self, v, |l, v| {
            l.uint(v);
        })
    }
    fn hex(&mut self, v: u64) -> &mut Self {
        line_digits(self, v, |l, v| l.hex(v))
    }
}

/// The plain conversions through a Line's digits (`digits`: one of its
/// integer formats): printf::number's general path costs several times
/// as much, on every line.
#[inline(never)]
fn line_digits(s: &mut String, v: u64, digits: fn(&mut Line, u64)) -> &mut String {
    let mut arr = [0u8; 24];
    let mut l = Line::on(&mut arr);
    digits(&mut l, v);
    s.put(l.as_str())
}

use crate::printfmt::printf::{LEFT, ZEROPAD};
use crate::printfmt::Out;

/// One event type as trace-cmd prints it, borrowing its `Event`.
struct Class<'a> {
    ev: &'a Event,
    /// ` name: ` padded to trace-cmd's 20 columns, as every line has it.
    head: String,
    /// `head` holds no raw-byte escape: it may go straight into the
    /// output buffer ([`TraceCmd::line_into`]).
    plain: bool,
    /// The handler that prints it.
    handler: Handler,
    /// Worked out at the event's first record (see [`Class::tep`]).
    tep: OnceCell<Tep>,
}

/// What libtraceevent makes of an event's print fmt.
struct Tep {
    /// The print fmt as libtraceevent's print cache: literals (does it end
    /// in `0x`?) and conversions with the field they print, if a bare one.
    /// Empty when libtraceevent cannot parse the print fmt.
    pieces: Vec<Piece>,
    /// libtraceevent cannot parse the print fmt (TEP_EVENT_FL_FAILED): the
    /// event prints as `[FAILED TO PARSE]` and its fields.
    failed: bool,
}

impl Class<'_> {
    /// The print fmt read at the event's first record: a recording lists
    /// every format of its kernel (thousands) and uses a few.
    fn tep(&self, release: Release) -> &Tep {
        crate::util::once(&self.tep, || {
            let failed = tep_cannot_parse(&self.ev.print_fmt, release);
            Tep { pieces: if failed { Vec::new() } else { pieces(&self.ev.print_fmt, self.ev) }, failed }
        })
    }
}

/// The event handlers trace-cmd has: its own for function_graph
/// (trace-ftrace.c), the ftrace records libtraceevent's function plugin
/// and its own printers format, the plugins of other systems, and the
/// print fmt for everything else.
#[derive(Clone, Copy)]
enum Handler {
    /// function, funcgraph_entry/exit, kernel_stack, func_repeats,
    /// raw_data (print, bprint, bputs, user_stack and 6.13's
    /// fgraph_retaddr_entry go through their print fmts).
    Ftrace(Record),
    /// plugin_sched_switch: `comm:pid [prio] S ==> comm:pid [prio]`.
    SchedSwitch {
        prev_pid: FieldAt,
        prev_prio: Option<FieldAt>,
        prev_state: Option<FieldAt>,
        next_pid: FieldAt,
        next_prio: Option<FieldAt>,
        prev_comm: Option<FieldAt>,
        next_comm: Option<FieldAt>,
        /// The letters of prev_state's bits (by release).
        states: States,
    },
    /// plugin_sched_switch's wakeup handler (sched_wakeup and _new).
    SchedWakeup { pid: FieldAt, prio: Option<FieldAt>, success: Option<FieldAt>, target_cpu: Option<FieldAt>, comm: Option<FieldAt> },
    /// plugin_hrtimer (`timer` was renamed `hrtimer`).
    HrtimerExpireEntry { timer: FieldAt, now: FieldAt, function: Option<FieldAt> },
    HrtimerStart { timer: FieldAt, function: Option<FieldAt>, expires: FieldAt, softexpires: FieldAt },
    /// plugin_tlb.
    TlbFlush { pages: FieldAt, reason: FieldAt },
    /// plugin_kmem: `(func+0xoff) ` of `call_site` before the print fmt.
    KmemCallSite { call_site: FieldAt },
    /// plugin_futex: sys_enter_futex's fields ([`plugins::futex::FIELDS`]).
    Futex { fields: [Option<FieldAt>; 6] },
    /// plugin_kvm: the fields its handler for `kind` reads.
    Kvm { kind: plugins::kvm::Kind, at: [Option<FieldAt>; plugins::kvm::MAX_FIELDS] },
    /// A syscall whose print fmt is the one trace_syscalls.c writes for
    /// 64-bit kernels, of the fields `first..first + n`: an entry's
    /// `name: 0x%08lx` of each argument, an exit's `"0x%lx", REC->ret`.
    /// Printed by hand ([`TraceCmd::syscall_into`]): the print fmt
    /// interpreter costs a third of such a line.
    Syscall { first: u8, n: u8, exit: bool },
    Generic,
}

impl Handler {
    #[inline(never)]
    fn of(e: &Event, release: Release) -> Handler {
        if let Some(r) = Record::of(e) {
            let own = match r {
                Record::GraphEntry { .. } => e.name == "funcgraph_entry",
                Record::Function { .. }
                | Record::GraphExit { .. }
                | Record::KernelStack { .. }
                | Record::FuncRepeats { .. }
                | Record::RawData { .. } => true,
                _ => false,
            };
            return if own { Handler::Ftrace(r) } else { Handler::Generic };
        }
        Handler::plugin(e, release).or_else(|| Handler::syscall(e)).unwrap_or(Handler::Generic)
    }

    /// [`Handler::SysEnter`] or [`Handler::SysExit`], if `e`'s print fmt
    /// is the one the kernel generates from its 64-bit fields.
    #[inline(never)]
    fn syscall(e: &Event) -> Option<Handler> {
        if e.system != "syscalls" {
            return None;
        }
        let wide = |f: &crate::format::Field| f.size == 8 && f.kind == FieldKind::Scalar;
        if e.name.starts_with("sys_exit_") {
            let ret = e.fields.iter().position(|f| f.name == "ret" && wide(f))?;
            return (e.print_fmt == "\"0x%lx\", REC->ret").then(|| Handler::Syscall { first: ret as u8, n: 1, exit: true });
        }
        e.name.strip_prefix("sys_enter_")?;
        let first = e.fields.iter().position(|f| f.name == "__syscall_nr")? + 1;
        let args = e.fields.get(first..)?;
        if args.len() > 6 || !args.iter().all(wide) {
            return None;
        }
        // The print fmt, piece by piece: the format string, then the casts.
        let mut rest = e.print_fmt.as_str();
        let mut eat = |p: &str| rest.strip_prefix(p).map(|r| rest = r).is_some();
        let mut ok = eat("\"");
        for (i, f) in args.iter().enumerate() {
            ok &= (i == 0 || eat(", ")) && eat(&f.name) && eat(": 0x%08lx");
        }
        ok &= eat("\"");
        for f in args {
            ok &= eat(", ((unsigned long)(REC->") && eat(&f.name) && eat("))");
        }
        (ok && rest.is_empty()).then(|| Handler::Syscall { first: first as u8, n: args.len() as u8, exit: false })
    }

    /// The libtraceevent plugins for events outside system ftrace: one arm
    /// per event they register a handler for, with the fields it reads
    /// (`?`: the plugin does not take the event without it).
    fn plugin(e: &Event, release: Release) -> Option<Handler> {
        let f = |name: &str| e.field_at(name);
        if let Some(kind) = plugins::kvm::Kind::of(&e.system, &e.name) {
            return Some(Handler::Kvm { kind, at: kind.locate(e) });
        }
        Some(match (e.system.as_str(), e.name.as_str()) {
            ("sched", "sched_switch") => Handler::SchedSwitch {
                prev_pid: f("prev_pid")?,
                prev_prio: f("prev_prio"),
                prev_state: f("prev_state"),
                next_pid: f("next_pid")?,
                next_prio: f("next_prio"),
                prev_comm: f("prev_comm"),
                next_comm: f("next_comm"),
                states: match release {
                    Release::V3_1 => States::V1_7,
                    Release::V3_4 => States::of_format(&e.print_fmt),
                },
            },
            ("sched", "sched_wakeup" | "sched_wakeup_new") => Handler::SchedWakeup {
                pid: f("pid")?,
                prio: f("prio"),
                success: f("success"),
                target_cpu: f("target_cpu"),
                comm: f("comm"),
            },
            ("timer", "hrtimer_expire_entry") => {
                Handler::HrtimerExpireEntry { timer: f("timer").or(f("hrtimer"))?, now: f("now")?, function: f("function") }
            }
            ("timer", "hrtimer_start") => Handler::HrtimerStart {
                timer: f("timer").or(f("hrtimer"))?,
                function: f("function"),
                expires: f("expires")?,
                softexpires: f("softexpires")?,
            },
            ("tlb", "tlb_flush") => Handler::TlbFlush { pages: f("pages")?, reason: f("reason")? },
            ("kmem", "kfree" | "kmalloc" | "kmalloc_node" | "kmem_cache_alloc" | "kmem_cache_alloc_node" | "kmem_cache_free") => {
                Handler::KmemCallSite { call_site: f("call_site")? }
            }
            ("syscalls", "sys_enter_futex") => Handler::Futex { fields: plugins::futex::FIELDS.map(f) },
            _ => return None,
        })
    }
}

/// One piece of a print fmt, for `-R` (print_field()).
enum Piece {
    Lit(bool),
    /// `mask`: what the argument's casts keep of the field (eval_type()).
    Conv { spec: String, field: Option<usize>, mask: u64 },
}

/// Split a print fmt into libtraceevent's pieces; a conversion's field is
/// the index (in non-common field order) of a `REC->name` argument,
/// casts allowed.
#[inline(never)]
fn pieces(pf: &str, e: &Event) -> Vec<Piece> {
    let mut v = Vec::new();
    let b = pf.as_bytes();
    let Some(start) = pf.find('"') else { return v };
    let mut i = start + 1;
    let mut fmt = Vec::new();
    while i < b.len() && b[i] != b'"' {
        let esc = b[i] == b'\\' && i + 1 < b.len();
        i += esc as usize;
        fmt.push(b[i]);
        i += 1;
    }
    // The top-level comma-separated arguments after the string, one at a
    // time; the first (before the first comma) is not one.
    let mut rest = pf.get(i + 1..);
    next_arg(&mut rest);
    // The literal since the last conversion: its last two bytes, if any.
    let mut lit: Option<[u8; 2]> = None;
    let mut k = 0;
    while k < fmt.len() {
        let pct = fmt[k] == b'%';
        if !pct || fmt.get(k + 1) == Some(&b'%') {
            lit = Some([lit.map_or(0, |l| l[1]), fmt[k]]);
            k += 1 + pct as usize;
            continue;
        }
        if let Some(l) = lit.take() {
            v.push(Piece::Lit(&l == b"0x"));
        }
        let s0 = k;
        k += 1;
        while k < fmt.len() && !fmt[k].is_ascii_alphabetic() {
            if fmt[k] == b'*' {
                next_arg(&mut rest);
            }
            k += 1;
        }
        while k < fmt.len() && b"hlzLjt".contains(&fmt[k]) {
            k += 1;
        }
        let conv = fmt.get(k).copied().unwrap_or(b'd');
        k += 1;
        if conv == b'p' {
            while k < fmt.len() && fmt[k].is_ascii_alphanumeric() {
                k += 1;
            }
        }
        let (field, mask) = match next_arg(&mut rest).and_then(|a| rec_field(a, e)) {
            Some((i, mask)) => (Some(i), mask),
            None => (None, u64::MAX),
        };
        v.push(Piece::Conv { spec: String::from(core::str::from_utf8(&fmt[s0..k.min(fmt.len())]).unwrap_or("%d")), field, mask });
    }
    if let Some(l) = lit {
        v.push(Piece::Lit(&l == b"0x"));
    }
    v
}

/// The next top-level argument of `rest` (None when there is none left).
fn next_arg<'s>(rest: &mut Option<&'s str>) -> Option<&'s str> {
    let r = (*rest)?;
    let (mut depth, mut q) = (0i32, false);
    for (j, &c) in r.as_bytes().iter().enumerate() {
        match c {
            b'"' => q = !q,
            b'(' | b'[' | b'{' if !q => depth += 1,
            b')' | b']' | b'}' if !q => depth -= 1,
            b',' if !q && depth == 0 => {
                *rest = r.get(j + 1..);
                return r.get(..j);
            }
            _ => {}
        }
    }
    *rest = None;
    Some(r)
}

/// `REC->x`, `(long)REC->x`, `((unsigned long)(REC->x))`: only casts
/// (type words) before the field, nothing after; the field's index among
/// the non-common ones, and what its casts keep of it ([`cast_mask`]).
fn rec_field(a: &str, e: &Event) -> Option<(usize, u64)> {
    let mut t = String::from(a);
    t.retain(|c| c != '(' && c != ')');
    let p = crate::util::find_str(&t, "REC->", false)?;
    for c in t.get(..p)?.bytes() {
        if !(c.is_ascii_alphanumeric() || matches!(c, b' ' | b'_' | b'*' | b'\t')) {
            return None;
        }
    }
    let name = t.get(p + 5..)?.trim_ascii();
    let mut i = 0;
    for f in &e.fields {
        if !f.name.starts_with("common_") {
            if f.name == name {
                return Some((i, cast_mask(a.get(..a.find("REC->")?)?)));
            }
            i += 1;
        }
    }
    None
}

/// eval_type_str() of each cast in `prefix` (the text before `REC->`):
/// libtraceevent keeps the low bits of `u8`..`u32`, `s8`..`s32`, `char`,
/// `short`, `int` (signed or not, never sign-extended) and leaves every
/// other type (`long`, pointers, typedefs it does not know) alone.
fn cast_mask(prefix: &str) -> u64 {
    let mut mask = u64::MAX;
    for group in prefix.split('(').filter_map(|g| g.split_once(')').map(|x| x.0)) {
        let t = group.trim_ascii();
        let t = t.strip_prefix("unsigned ").unwrap_or(t);
        mask &= match t {
            "u8" | "s8" | "char" => 0xff,
            "u16" | "s16" | "short" => 0xffff,
            "u32" | "s32" | "int" => 0xffff_ffff,
            _ => u64::MAX,
        };
    }
    mask
}

/// The trace-cmd printer. One per recording.
pub struct TraceCmd<'a> {
    env: &'a dyn Env,
    cls: Vec<Class<'a>>,
    /// Event id → position in `cls` + 1 (0: no such event): ids are small,
    /// dense numbers, and every record looks its class up.
    index: Vec<u32>,
    pub flags: u32,
    pub endian: Endian,
    pub long: usize,
    pub in_ns: bool,
    release: Release,
    /// The function plugin's per-CPU stacks of function names.
    fstack: Vec<Vec<Option<&'a str>>>,
    comms: Comms,
    /// Lost events waiting for the next record of their CPU.
    lost: Vec<Option<Option<u64>>>,
    armed: Option<(u32, Option<u64>)>,
    buf: String,
    /// `%16s-%-5d ` of the last pid (records come in runs of one task),
    /// and whether it is plain text (no raw-byte escape); emptied when
    /// the comm table changes.
    pre: (i32, String, bool),
    /// The second of the last time printed: (unit, its start, the second).
    sec: Cell<(u64, u64, u64)>,
    /// Records the print fmt interpreter could not format.
    pub fallback: u64,
    /// plugin_kvm's last instruction text (see [`plugins::kvm::write`]).
    insn: String,
}

impl<'a> TraceCmd<'a> {
    /// `saved` is the recording's saved_cmdlines text, as trace-cmd loads
    /// it (file order matters, see [`Comms`]).
    #[inline(never)]
    pub fn new(env: &'a dyn Env, saved: &[u8], events: &'a [Event], release: Release) -> Self {
        let mut cls = Vec::with_capacity(events.len());
        let mut index = Vec::new();
        for e in events {
            let id = e.id as usize;
            if index.len() <= id {
                index.resize(id + 1, 0);
            }
            // The first format of an id counts.
            if index[id] != 0 {
                continue;
            }
            let mut head = String::from(" ");
            head.push_str(&e.name);
            head.push_str(": ");
            let _ = pad(&mut head, 20usize.saturating_sub(e.name.len()));
            let plain = !head.as_bytes().contains(&ESC_LEAD);
            cls.push(Class { ev: e, head, plain, handler: Handler::of(e, release), tep: OnceCell::new() });
            index[id] = cls.len() as u32;
        }
        let mut comms = Comms::default();
        comms.saved(saved);
        TraceCmd {
            env,
            cls,
            index,
            flags: INDENT,
            endian: Endian::Little,
            long: 8,
            in_ns: true,
            release,
            fstack: Vec::new(),
            comms,
            lost: Vec::new(),
            armed: None,
            buf: String::new(),
            pre: (0, String::new(), true),
            sec: Cell::new((0, 0, 0)),
            fallback: 0,
            insn: String::new(),
        }
    }

    /// The position in `cls` of event `id`'s class.
    #[inline]
    fn class_index(&self, id: u16) -> Option<usize> {
        match self.index.get(id as usize) {
            Some(&i) if i > 0 => Some(i as usize - 1),
            _ => None,
        }
    }

    fn class(&self, id: u16) -> Option<&Class<'a>> {
        self.cls.get(self.class_index(id)?)
    }

    #[inline]
    fn ty(&self, d: &[u8]) -> u16 {
        read_uint(d, 0, 2, self.endian).unwrap_or(0) as u16
    }

    #[inline]
    fn pid(&self, d: &[u8]) -> i32 {
        read_uint(d, 4, 4, self.endian).unwrap_or(0) as u32 as i32
    }

    /// find_cmdline(): `<idle>` for 0, else what libtraceevent's table
    /// answers now (the first lookup builds it).
    pub fn comm(&mut self, pid: i32) -> &str {
        self.comms.find(pid)
    }

    /// tep_register_comm() from a plugin.
    fn learn(&mut self, pid: i32, comm: &[u8]) {
        if self.comms.register(pid, comm) {
            // A new pid moves the table: any pid's answer may change.
            self.pre.1.clear();
        }
    }

    /// Events were lost on `cpu`: the next record of that CPU says so.
    pub fn lost(&mut self, cpu: u32, count: Option<u64>) {
        let i = cpu as usize;
        if self.lost.len() <= i {
            self.lost.resize(i + 1, None);
        }
        self.lost[i] = Some(count);
    }

    /// A record of `cpu` comes next (printed or filtered out): it carries
    /// that CPU's pending loss, which only a printed record shows.
    pub fn arm(&mut self, cpu: u32) {
        self.armed = self.lost.get_mut(cpu as usize).and_then(|l| l.take()).map(|c| (cpu, c));
    }

    /// Print one record. `next` is the record that follows it in the merged
    /// stream (any CPU), as tracecmd_peek_next_data() sees it: a graph
    /// entry folds with its exit only when that is the very next record.
    /// Returns true when `next` was consumed.
    #[inline(never)]
    pub fn line(&mut self, out: &mut dyn Write, r: &Rec, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        let mut s = core::mem::take(&mut self.buf);
        s.clear();
        let res = self.record(&mut s, r, next);
        self.end(out, s, super::seq_size(0, self.long), res)
    }

    /// The end of a line whose text (or its rest) is `s`: trace_show_data()
    /// drops one trailing newline of the event text; the line is bounded
    /// to `size` bytes ([`bound_line`]).
    fn end(&mut self, out: &mut dyn Write, mut s: String, size: usize, res: Result<bool, fmt::Error>) -> Result<bool, fmt::Error> {
        if s.ends_with('\n') {
            s.pop();
        }
        bound_line(&mut s, size);
        s.push('\n');
        let w = out.write_str(&s);
        self.buf = s;
        let consumed = res?;
        w.map(|_| consumed)
    }

    /// [`TraceCmd::line`]'s start, `comm-pid [cpu] flags time: name: `,
    /// written straight into `dst` (an output buffer's free space, at
    /// least [`crate::sys::line::LINE_MAX`] bytes) in the default layout, to be finished by
    /// [`TraceCmd::line_tail`]: most lines are built where they are
    /// written out, not in a String copied there. Returns its length, or
    /// None when the record needs [`TraceCmd::line`] (`-l`, a loss to
    /// report, an unknown event, a raw-byte escape in the line's start,
    /// which only the output's copy turns back into its byte); then no
    /// state changed but caches.
    /// A syscall line is written whole (then the bool is true).
    #[inline(never)]
    pub fn line_into(&mut self, dst: &mut [u8], r: &Rec) -> Option<(usize, bool)> {
        if self.flags & LAT != 0 || self.armed.is_some() {
            return None;
        }
        let ci = self.class_index(self.ty(r.data))?;
        let mut l = Line::on(dst);
        let (_, task, plain) = self.task(self.pid(r.data));
        if !*plain || !l.extend_str(task) || l.room() < 64 {
            return None;
        }
        self.context(&mut l, r);
        let c = &self.cls[ci];
        if !c.plain || !l.extend_str(&c.head) {
            return None;
        }
        let head = l.len();
        if self.flags & RAW == 0 {
            if self.syscall_into(&mut l, ci, r.data) {
                return Some((l.len(), true));
            }
            if let Some(n) = self.print_fmt_into(&mut dst[head..], ci, r.data) {
                return Some((head + n, true));
            }
        }
        Some((head, false))
    }

    /// The text and newline of a print fmt event (with plugin_kmem's call
    /// site first) into `dst`, as [`TraceCmd::line_tail`] prints it, from
    /// the bytes the print fmt gives: no `core::fmt::Write` round trip,
    /// whose UTF-8 check and escapes the output only undoes. Its length,
    /// or None (`dst` untouched) when this is no such event, the print
    /// fmt prints fields instead, or the text does not fit. One that fits
    /// is far inside the line's bound ([`bound_line`]) even with every
    /// byte counted as a three-byte escape.
    #[inline(never)]
    fn print_fmt_into(&mut self, dst: &mut [u8], ci: usize, d: &[u8]) -> Option<usize> {
        let c = &self.cls[ci];
        let site = match c.handler {
            Handler::KmemCallSite { call_site } => Some(call_site),
            Handler::Generic => None,
            _ => return None,
        };
        if c.tep(self.release).failed {
            return None;
        }
        let mut text = Out::on(dst);
        if let Some(f) = site {
            self.buf.clear();
            call_site(self.env, &mut self.buf, f.get(d, self.endian));
            // A symbol name with a raw-byte escape takes the slow path,
            // which turns it back into its byte.
            if self.buf.as_bytes().contains(&ESC_LEAD) {
                return None;
            }
            text.extend_from_slice(self.buf.as_bytes());
        }
        self.env.render_bytes(self.ty(d), d, &mut text)?;
        // trace_show_data() drops one trailing newline of the event text.
        if text.last() == Some(b'\n') {
            text.truncate(text.len() - 1);
        }
        text.push(b'\n');
        text.fits().then_some(text.len())
    }

    /// The event text of a line [`TraceCmd::line_into`] began, `head`
    /// bytes long, as [`TraceCmd::line`] ends it.
    #[inline(never)]
    pub fn line_tail(&mut self, out: &mut dyn Write, r: &Rec, next: Option<&Rec>, head: usize) -> Result<bool, fmt::Error> {
        let size = super::seq_size(0, self.long).saturating_sub(head);
        let ty = self.ty(r.data);
        let mut s = core::mem::take(&mut self.buf);
        s.clear();
        let res = self.body(&mut s, r, ty, next);
        self.end(out, s, size, res)
    }

    /// `%16s-%-5d ` of `pid`, cached for the next record of the same task
    /// (see [`TraceCmd::pre`]).
    fn task(&mut self, pid: i32) -> &(i32, String, bool) {
        if self.pre.0 != pid || self.pre.1.is_empty() {
            let mut p = core::mem::take(&mut self.pre.1);
            p.clear();
            let comm = self.comm(pid);
            let _ = pad(&mut p, 16usize.saturating_sub(kwidth(comm)));
            p.push_str(comm);
            p.put("-").num(pid as i64 as u64, b'd', LEFT, 5).put(" ");
            let plain = !p.as_bytes().contains(&ESC_LEAD);
            self.pre = (pid, p, plain);
        }
        &self.pre
    }

    /// `[cpu]`, 3.3+'s flags, the time and its colon.
    fn context(&self, l: &mut Line, r: &Rec) {
        let d = r.data;
        l.push(b'[');
        l.zeros(r.cpu as u64, 3);
        l.push(b']');
        // 3.3+: `-0x%x` of the flags with -R, else the latency
        // column after a space.
        if self.release == Release::V3_4 {
            if self.flags & RAW != 0 {
                l.extend_str("-0x");
                l.hex(d.get(2).copied().unwrap_or(0) as u64);
            } else {
                l.push(b' ');
                l.extend(&lat_chars(d));
            }
        }
        self.time(l, r.ts);
        l.push(b':');
    }

    #[inline(never)]
    fn record(&mut self, s: &mut String, r: &Rec, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        if let Some((cpu, c)) = self.armed.take() {
            if cpu == r.cpu {
                match c {
                    Some(n) => s.put("CPU:").unsigned(cpu as u64).put(" [").unsigned(n).put(" EVENTS DROPPED]\n"),
                    None => s.put("CPU:").unsigned(cpu as u64).put(" [EVENTS DROPPED]\n"),
                };
            }
        }
        let d = r.data;
        let pid = self.pid(d);
        // What follows the task (with the CPU in the default layout) up to
        // the event's name, in one piece: it always fits.
        let mut arr = [0u8; 80];
        let mut l = Line::on(&mut arr);
        if self.flags & LAT != 0 {
            let comm = self.comm(pid);
            // `%8.8s`: at most 8 bytes, right-aligned.
            let mut n = 0;
            let mut cut = comm.len();
            for (i, c) in comm.char_indices() {
                let w = if super::raw_byte(c).is_some() { 1 } else { c.len_utf8() };
                if n + w > 8 {
                    cut = i;
                    break;
                }
                n += w;
            }
            pad(s, 8 - n)?;
            // `cut` is a character boundary (from char_indices): `get` never misses.
            s.put(comm.get(..cut).unwrap_or(comm));
            s.put("-").num(pid as i64 as u64, b'd', LEFT, 5).put(" ").num(r.cpu as u64, b'u', 0, 3);
            if self.flags & RAW != 0 {
                s.put("-0x").hex(d.get(2).copied().unwrap_or(0) as u64);
            } else {
                s.put(core::str::from_utf8(&lat_chars(d)).unwrap_or(""));
            }
            self.time(&mut l, r.ts);
            l.push(b':');
        } else {
            s.put(&self.task(pid).1);
            self.context(&mut l, r);
        }
        s.put(l.as_str());
        let ty = self.ty(d);
        let Some(c) = self.class(ty) else {
            s.put(" [UNKNOWN EVENT]");
            return Ok(false);
        };
        s.put(&c.head);
        self.body(s, r, ty, next)
    }

    /// TEP_PRINT_TIME with trace-cmd's formats: ` %6.1000d` (usecs,
    /// rounded), ` %9.1d` with -t, `%12d` for counter clocks.
    #[inline(never)]
    fn time(&self, l: &mut Line, ts: u64) {
        if self.in_ns {
            l.push(b' ');
        }
        self.time_line(l, ts)
    }

    /// print_event_time() with the format trace-cmd picked (the same one
    /// it gives func_repeats' `last_ts`).
    fn time_val(&self, s: &mut String, ts: u64) -> fmt::Result {
        let mut arr = [0u8; 48];
        let mut l = Line::on(&mut arr);
        self.time_line(&mut l, ts);
        s.put(l.as_str());
        Ok(())
    }

    /// [`TraceCmd::time_val`] into a line.
    fn time_line(&self, l: &mut Line, ts: u64) {
        // `%5lu.%0Nlu` with N digits of the unit; by hand, not core::fmt:
        // this runs for every line.
        let (p, digits) = if !self.in_ns {
            // "%12d" reads as precision 12: its int power of ten overflows
            // to 0xffffffffd4a51000 once widened, so the seconds are 0.
            (0xffff_ffff_d4a5_1000u64, 12)
        } else if self.flags & NSEC != 0 {
            (1_000_000_000, 9)
        } else {
            (1_000_000, 6)
        };
        let t = if self.in_ns && digits == 6 { super::kernel::usecs(ts) } else { ts };
        // The second is that of the last line most of the time: no 64-bit
        // divide (tens of cycles in a size-optimised build) then.
        let (q, start, sec) = self.sec.get();
        let (sec, rem) = if q == p && t >= start && t - start < p {
            (sec, t - start)
        } else {
            let sec = t / p;
            self.sec.set((p, sec * p, sec));
            (sec, t % p)
        };
        l.uint_right(sec, 5);
        l.push(b'.');
        if digits == 6 {
            l.six(rem as u32);
        } else {
            l.zeros(rem, digits);
        }
    }

    #[inline(never)]
    fn body(&mut self, s: &mut String, r: &Rec, ty: u16, next: Option<&Rec>) -> Result<bool, fmt::Error> {
        let Some(ci) = self.class_index(ty) else { return Ok(false) };
        let d = r.data;
        let e = self.endian;
        if self.flags & RAW != 0 {
            self.raw_fields(s, d, ci)?;
            return Ok(false);
        }
        let handler = self.cls[ci].handler;
        // A field's value, and an optional field's (None when absent).
        let v = |f: FieldAt| f.get(d, e);
        let o = |f: Option<FieldAt>| f.map(|f| f.get(d, e));
        match handler {
            Handler::Ftrace(Record::Function { ip, parent }) => self.function(s, r.cpu, v(ip), v(parent))?,
            Handler::Ftrace(Record::GraphEntry { func, depth, .. }) => {
                let (f, dep) = (v(func), v(depth) as i64);
                let pid = self.pid(d);
                // get_return_for_leaf(): the next record, same CPU, is the
                // exit of this pid and function.
                let leaf = next.filter(|n| n.cpu == r.cpu && self.pid(n.data) == pid).and_then(|n| {
                    match self.class(self.ty(n.data))?.handler {
                        Handler::Ftrace(exit @ Record::GraphExit { func, .. }) if func.get(n.data, e) == f => Some((n.data, exit)),
                        _ => None,
                    }
                });
                match leaf {
                    Some((nd, exit)) => {
                        self.graph_leaf(s, f, dep, nd, exit)?;
                        return Ok(true);
                    }
                    None => {
                        s.put("             |  ");
                        indent(s, dep)?;
                        self.func_name(s, f)?;
                        s.put("() {");
                        if self.flags & DEPTH != 0 {
                            s.put(" (").signed(dep).put(")");
                        }
                    }
                }
            }
            Handler::Ftrace(Record::GraphExit { func, depth, calltime, rettime, retval, .. }) => {
                let dur = v(rettime).wrapping_sub(v(calltime));
                let dep = v(depth) as i64;
                let (f, rv) = (v(func), o(retval));
                duration(s, dur)?;
                indent(s, dep)?;
                s.push('}');
                if self.flags & TAIL != 0 {
                    if let Some(sym) = self.env.sym(f) {
                        s.put(" /* ").put(sym.name).put(" */");
                    }
                }
                if self.flags & DEPTH != 0 {
                    s.put(" (").signed(dep).put(")");
                }
                self.retval(s, rv)?;
            }
            Handler::Ftrace(Record::KernelStack { caller }) => {
                s.put("<stack trace >\n");
                let mut p = caller.off as usize;
                let l = self.long;
                while p + l <= d.len() {
                    let a = read_uint(d, p, l, e).unwrap_or(0);
                    if (l == 8 && a == u64::MAX) || a as u32 == u32::MAX {
                        break;
                    }
                    match self.env.sym(a) {
                        Some(sym) => {
                            s.put("=> ");
                            self.show_function(s, sym.name, sym.addr, a)?;
                            s.put(" (").hex(a).put(")\n");
                        }
                        None => {
                            s.put("=> ").hex(a).put("\n");
                        }
                    }
                    p += l;
                }
            }
            Handler::Ftrace(Record::FuncRepeats { ip, parent, count, top, bottom }) => {
                let delta = (v(top) << 32) | v(bottom);
                self.function(s, r.cpu, v(ip), v(parent))?;
                s.put(" (count: ").unsigned(v(count)).put("  last_ts: ");
                self.time_val(s, r.ts.wrapping_sub(delta))?;
                s.push(')');
            }
            Handler::Ftrace(Record::RawData { id, buf }) => {
                s.put("# ").hex(v(id));
                for &b in d.get(buf.off as usize..).unwrap_or(&[]) {
                    s.put(" ").num(b as u64, b'x', ZEROPAD, 2);
                }
            }
            Handler::SchedSwitch { prev_pid, prev_prio, prev_state, next_pid, next_prio, prev_comm, next_comm, states } => {
                let (pp, np) = (v(prev_pid) as i64, v(next_pid) as i64);
                let pprio = o(prev_prio).map(|x| x as i32);
                let nprio = o(next_prio).map(|x| x as i32);
                self.comm_field(s, d, prev_comm, pp)?;
                s.signed(pp).put(" ");
                if let Some(p) = pprio {
                    s.put("[").signed(p as i64).put("] ");
                }
                if let Some(f) = prev_state {
                    // tep_read_number_field(): unsigned.
                    states.write(s, read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0));
                }
                s.put(" ==> ");
                self.comm_field(s, d, next_comm, np)?;
                s.signed(np);
                if let Some(p) = nprio {
                    s.put(" [").signed(p as i64).put("]");
                }
            }
            Handler::SchedWakeup { pid, prio, success, target_cpu, comm } => {
                let p = v(pid) as i64;
                self.comm_field(s, d, comm, p)?;
                s.signed(p);
                if let Some(v) = o(prio) {
                    s.put(" [").signed(v as i64).put("]");
                }
                if let Some(v) = o(success) {
                    s.put(" success=").signed(v as i64);
                }
                if let Some(v) = o(target_cpu) {
                    s.put(" CPU:").num(v, b'u', ZEROPAD, 3);
                }
            }
            Handler::HrtimerExpireEntry { timer, now, function } => {
                s.put("hrtimer=0x").hex(v(timer)).put(" now=").unsigned(v(now));
                self.func_field(s, o(function))?;
            }
            Handler::HrtimerStart { timer, function, expires, softexpires } => {
                s.put("hrtimer=0x").hex(v(timer));
                self.func_field(s, o(function))?;
                s.put(" expires=").unsigned(v(expires)).put(" softexpires=").unsigned(v(softexpires));
            }
            Handler::TlbFlush { pages, reason } => {
                let (p, why) = (v(pages) as i64, v(reason) as i64);
                const WHY: [&str; 4] = ["flush on task switch", "remote shootdown", "local shootdown", "local mm shootdown"];
                s.put("pages=").signed(p).put(" reason=");
                if let Some(w) = usize::try_from(why).ok().and_then(|i| WHY.get(i)) {
                    s.put(w);
                }
                s.put(" (").signed(why).put(")");
            }
            Handler::KmemCallSite { call_site: f } => {
                call_site(self.env, s, v(f));
                self.render(s, ty, d)?;
            }
            Handler::Futex { fields } => {
                // tep_get_field_val(): unsigned, as read.
                let vals = fields.map(|f| f.map(|f| read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0)));
                if !plugins::futex::write(s, vals) {
                    self.render(s, ty, d)?;
                }
            }
            Handler::Kvm { kind, at } => {
                if !plugins::kvm::write(s, kind, plugins::kvm::Rec::new(kind, d, e, &at), &mut self.insn) {
                    self.render(s, ty, d)?;
                }
            }
            Handler::Ftrace(_) | Handler::Syscall { .. } | Handler::Generic => self.render(s, ty, d)?,
        }
        Ok(false)
    }

    /// A syscall's text ([`Handler::Syscall`]) and
    /// the newline into `l`; false (`l` as it was or cut short) when this
    /// is not one, or the record is too short, or it does not fit.
    fn syscall_into(&self, l: &mut Line, ci: usize, d: &[u8]) -> bool {
        let c = &self.cls[ci];
        let Handler::Syscall { first, n, exit } = c.handler else { return false };
        let Some(fields) = c.ev.fields.get(first as usize..).and_then(|f| f.get(..n as usize)).filter(|_| self.long == 8) else {
            return false;
        };
        for (i, f) in fields.iter().enumerate() {
            let Ok(v) = read_uint(d, f.offset, 8, self.endian) else { return false };
            if l.room() < f.name.len() + 24 {
                return false;
            }
            if i > 0 {
                l.extend_str(", ");
            }
            if !exit {
                l.extend_str(&f.name);
                l.extend_str(": ");
            }
            l.extend_str("0x");
            // `%08lx` (`%lx` for the exit): Line::hex's digits (one at
            // least) after the zeros they need.
            let digits = (16 - v.leading_zeros() as usize / 4).max(1);
            for _ in digits..if exit { 1 } else { 8 } {
                l.push(b'0');
            }
            l.hex(v);
        }
        l.push(b'\n');
        true
    }

    fn render(&mut self, s: &mut String, ty: u16, d: &[u8]) -> fmt::Result {
        // pretty_print() of an event whose format did not parse.
        if let Some(ci) = self.class_index(ty).filter(|&ci| self.cls[ci].tep(self.release).failed) {
            s.put("[FAILED TO PARSE]");
            return self.raw_fields(s, d, ci);
        }
        if self.env.render(ty, d, s)? == Rendered::Fallback {
            self.fallback += 1;
        }
        Ok(())
    }

    /// The plugins' write_and_save_comm(): `comm:` and remember it.
    fn comm_field(&mut self, s: &mut String, d: &[u8], f: Option<FieldAt>, pid: i64) -> fmt::Result {
        let Some(f) = f else { return Ok(()) };
        let (o, n) = (f.off as usize, f.size as usize);
        let b = d.get(o..(o + n).min(d.len())).unwrap_or(&[]);
        put_bytes(s, b)?;
        s.push(':');
        self.learn(pid as i32, b);
        Ok(())
    }

    /// tep_print_func_field(" function=%s"): `name/0x<start - addr>`.
    fn func_field(&self, s: &mut String, f: Option<u64>) -> fmt::Result {
        let Some(v) = f else { return Ok(()) };
        match self.env.sym(v) {
            Some(sym) => s.put(" function=").put(sym.name).put("/0x").hex(sym.addr.wrapping_sub(v)),
            None => s.put(" function=0x").num(v, b'x', ZEROPAD, 8),
        };
        Ok(())
    }

    fn func_name(&self, s: &mut String, f: u64) -> fmt::Result {
        match self.env.sym(f) {
            Some(sym) => s.write_str(sym.name),
            None => {
                s.hex(f);
                Ok(())
            }
        }
    }

    /// print_graph_entry_leaf(): the entry folded with its exit (`exit`,
    /// the record `rd`).
    fn graph_leaf(&self, s: &mut String, f: u64, dep: i64, rd: &[u8], exit: Record) -> fmt::Result {
        let Record::GraphExit { calltime, rettime, retval, .. } = exit else { return Ok(()) };
        let e = self.endian;
        let dur = rettime.get(rd, e).wrapping_sub(calltime.get(rd, e));
        let rv = retval.map(|f| f.get(rd, e));
        duration(s, dur)?;
        indent(s, dep)?;
        self.func_name(s, f)?;
        s.put("();");
        if self.flags & DEPTH != 0 {
            s.put(" (").signed(dep).put(")");
        }
        self.retval(s, rv)
    }

    /// trace-cmd 3.2+: ` (ret=0x1f)`, errno values in decimal.
    fn retval(&self, s: &mut String, rv: Option<u64>) -> fmt::Result {
        let Some(v) = rv else { return Ok(()) };
        if self.flags & RETVAL_SKIP != 0 {
            return Ok(());
        }
        let dec = if self.flags & RETVAL_DEC != 0 {
            true
        } else if self.flags & RETVAL_HEX != 0 {
            false
        } else {
            v >= (-4095i64) as u64
        };
        if dec {
            s.put(" (ret=").signed(v as i64).put(")");
        } else {
            s.put(" (ret=0x").hex(v).put(")");
        }
        Ok(())
    }

    /// plugin_function's function_handler(): indented by where the parent
    /// sits in this CPU's stack of recent callers.
    fn function(&mut self, s: &mut String, cpu: u32, ip: u64, parent: u64) -> fmt::Result {
        let env = self.env;
        let func = env.sym(ip);
        let par = env.sym(parent);
        let mut index = 0;
        if let Some(p) = &par {
            if self.flags & INDENT != 0 {
                index = self.add_and_get_index(p.name, func.map(|f| f.name), cpu);
            }
        }
        pad(s, index * 3)?;
        match func {
            Some(f) => self.show_function(s, f.name, f.addr, ip)?,
            None => {
                s.put("0x").hex(ip);
            }
        }
        if self.flags & PARENT != 0 {
            s.put(" <-- ");
            match par {
                Some(p) => self.show_function(s, p.name, p.addr, parent)?,
                None => {
                    s.put("0x").hex(parent);
                }
            }
        }
        Ok(())
    }

    fn show_function(&self, s: &mut String, name: &str, start: u64, addr: u64) -> fmt::Result {
        s.put(name);
        if self.flags & OFFSET != 0 {
            s.put("+0x").hex(addr.wrapping_sub(start) as u32 as u64).put(" ");
        }
        Ok(())
    }

    /// add_and_get_index(): find the parent in the stack and put the child
    /// above it; else restart the stack with parent, child. Entries above
    /// are not cleared (later lookups may still find them), as in the plugin.
    fn add_and_get_index(&mut self, parent: &'a str, child: Option<&'a str>, cpu: u32) -> usize {
        let c = cpu as usize;
        if self.fstack.len() <= c {
            self.fstack.resize(c + 1, Vec::new());
        }
        let st = &mut self.fstack[c];
        let mut i = 0;
        while i < st.len() {
            match st[i] {
                Some(n) if n == parent => {
                    add_child(st, child, i + 1);
                    return i;
                }
                Some(_) => i += 1,
                None => break,
            }
        }
        add_child(st, Some(parent), 0);
        add_child(st, child, 1);
        0
    }

    /// `-R`: print_selected_fields() with each field's raw value.
    #[inline(never)]
    fn raw_fields(&self, s: &mut String, d: &[u8], ci: usize) -> fmt::Result {
        let e = self.endian;
        let c = &self.cls[ci];
        let pieces = &c.tep(self.release).pieces;
        let mut cur = 0;
        for (fi, fd) in c.ev.fields.iter().filter(|f| !f.name.starts_with("common_")).enumerate() {
            let (f, kind) = (FieldAt::of(fd), &fd.kind);
            s.put(" ").put(&fd.name).put("=");
            if matches!(kind, FieldKind::Scalar) && !pieces.is_empty() && cur != usize::MAX {
                // print_field(): the next conversion (from where the last
                // one matched, wrapping) that prints this very field.
                let n = pieces.len();
                let mut has0x = false;
                let mut hit = None;
                for j in 0..n {
                    let at = (cur + j) % n;
                    if at == 0 && j > 0 {
                        has0x = false;
                    }
                    match &pieces[at] {
                        Piece::Lit(x) => has0x = *x,
                        Piece::Conv { spec, field, mask } if *field == Some(fi) => {
                            hit = Some((at, spec, *mask));
                            break;
                        }
                        Piece::Conv { .. } => has0x = false,
                    }
                }
                if let Some((at, spec, mask)) = hit {
                    // parse->next: after the last piece there is none, and
                    // the fields after print raw.
                    cur = if at + 1 < n { at + 1 } else { usize::MAX };
                    if has0x {
                        s.put("0x");
                    }
                    let v = read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0) & mask;
                    if spec.ends_with('s') && !spec.contains('p') && f.size as usize == self.long {
                        // print_str_arg(): a pointer-sized field under %s is
                        // a kernel string, known through printk_formats,
                        // else its address (no 0x).
                        match self.env.kstr(v) {
                            Some(t) => s.put(t),
                            None => s.hex(v),
                        };
                    } else {
                        self.conv(s, spec, v)?;
                    }
                    continue;
                }
            }
            if *kind == FieldKind::Scalar {
                // print_field_raw(). TEP_FIELD_IS_POINTER / TEP_FIELD_IS_LONG
                // ("long" anywhere in the type): looked up only here, for
                // the fields no conversion printed.
                let ptr = if fd.is_ptr { 2 } else { crate::util::find_str(&fd.ctype, "long", false).is_some() as u8 };
                let v = read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0);
                match (ptr, f.signed, f.size) {
                    (2, ..) | (1, false, _) => s.put("0x").hex(v),
                    (1, true, 4) => s.put("0x").hex(v as u32 as u64),
                    (_, true, 4) => s.signed(v as u32 as i32 as i64),
                    (_, true, 2) => s.num(v as u16 as i16 as i64 as u64, b'd', 0, 2),
                    (_, true, 1) => s.signed(v as u8 as i8 as i64),
                    (_, true, _) => s.signed(v as i64),
                    _ => s.unsigned(v),
                };
                continue;
            }
            let (o, n) = f.loc(d, kind, e, true);
            let b = d.get(o..(o + n).min(d.len())).unwrap_or(&[]);
            if fd.is_char && printable(b) {
                put_bytes(s, b)?;
            } else {
                s.put("ARRAY[");
                for (i, x) in b.iter().enumerate() {
                    if i > 0 {
                        s.put(", ");
                    }
                    s.num(*x as u64, b'x', ZEROPAD, 2);
                }
                s.push(']');
            }
        }
        Ok(())
    }
}

impl<'a> TraceCmd<'a> {
    /// print_arg_number() / print_arg_pointer() of one conversion.
    #[inline(never)]
    fn conv(&self, s: &mut String, spec: &str, v: u64) -> fmt::Result {
        use crate::printfmt::printf;
        let b = spec.as_bytes();
        let Some(&last) = b.last() else { return Ok(()) };
        if let Some(pi) = spec.find('p') {
            let ext = b.get(pi + 1).copied().unwrap_or(0);
            match ext {
                b'S' | b's' | b'F' | b'f' => match (self.env.sym(v), self.release) {
                    (Some(sym), r) => {
                        s.put(sym.name);
                        if matches!(ext, b'S' | b'F') {
                            s.put("+0x").hex(v.wrapping_sub(sym.addr));
                        }
                        // libtraceevent 1.8.4+ (print_function() with
                        // raw): the address after the name...
                        if r == Release::V3_4 {
                            s.put(" (0x").hex(v).put(")");
                        }
                        s
                    }
                    // ...and, unnamed, in the same parentheses.
                    (None, Release::V3_4) => s.put(" (0x").hex(v).put(")"),
                    (None, Release::V3_1) => s.put("0x").hex(v),
                },
                _ if v == 0 => s.put("(nil)"),
                _ => s.put("0x").hex(v),
            };
            return Ok(());
        }
        let (mut flags, mut i) = (0u8, 1);
        while i < b.len() {
            flags |= match b[i] {
                b'-' => printf::LEFT,
                b'+' => printf::PLUS,
                b' ' => printf::SPACE,
                b'#' => printf::SPECIAL,
                b'0' => printf::ZEROPAD,
                _ => break,
            };
            i += 1;
        }
        let num = |i: &mut usize| {
            let st = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            super::cmdlines::parse_i32(&b[st..*i]).unwrap_or(0)
        };
        let width = num(&mut i);
        let prec = if b.get(i) == Some(&b'.') {
            i += 1;
            num(&mut i)
        } else {
            -1
        };
        let ls = b[i..].iter().filter(|&&c| c == b'l').count() as i32 - b[i..].iter().filter(|&&c| c == b'h').count() as i32;
        let signed = matches!(last, b'd' | b'i');
        // C's (char)/(short)/(int)/(long) of the value.
        let v = match (ls, signed) {
            (-2, true) => v as i8 as i64 as u64,
            (-2, false) => v as u8 as u64,
            (-1, true) => v as i16 as i64 as u64,
            (-1, false) => v as u16 as u64,
            (0, true) => v as i32 as i64 as u64,
            (0, false) => v as u32 as u64,
            (1, true) if self.long == 4 => v as i32 as i64 as u64,
            (1, false) if self.long == 4 => v as u32 as u64,
            _ => v,
        };
        if last == b'c' {
            s.push(v as u8 as char);
            return Ok(());
        }
        let mut t = Vec::new();
        printf::append(&mut t, &mut |o| printf::number(o, v, last, &printf::Pad { flags, width, prec }));
        super::put_all(s, &t)
    }
}

/// The functions libtraceevent's print fmt parser knows: its own
/// (process_function()) and those its default plugins register (jbd2,
/// kvm, cfg80211, scsi, xen). A call of any other fails the format.
const TEP_FUNCTIONS: &[&str] = &[
    "__builtin_expect",
    "__get_bitmask",
    "__get_cpumask",
    "__get_dynamic_array",
    "__get_dynamic_array_len",
    "__get_rel_bitmask",
    "__get_rel_cpumask",
    "__get_rel_dynamic_array",
    "__get_rel_dynamic_array_len",
    "__get_rel_str",
    "__get_sockaddr",
    "__get_sockaddr_rel",
    "__get_str",
    "__print_array",
    "__print_flags",
    "__print_hex",
    "__print_hex_str",
    "__print_symbolic",
    "sizeof",
    "jiffies_to_msecs",
    "jbd2_dev_to_name",
    "is_writable_pte",
    "__le16_to_cpup",
    "scsi_trace_parse_cdb",
    "xen_hypercall_name",
];

/// Would libtraceevent fail to parse `print_fmt` (TEP_EVENT_FL_FAILED)?
/// Its parser takes no GNU statement expression (`({ ... })`, what the
/// kernel's min() expands to), no empty table (`{ }`, kvm_inj_exception's),
/// no function it does not know (TEP_FUNCTIONS: `__print_flags_u64`,
/// `mc_event_error_type`), and before 1.8 no raw tab in the format string.
fn tep_cannot_parse(print_fmt: &str, release: Release) -> bool {
    if release == Release::V3_1 && string_ends_early(print_fmt) {
        return true;
    }
    let b = print_fmt.as_bytes();
    // The arguments: after the format string (and the strings glued to it).
    let Some(mut i) = b.iter().position(|&c| c == b'"') else { return false };
    let skip_str = |mut i: usize| {
        i += 1;
        while i < b.len() && b[i] != b'"' {
            i += 1 + (b[i] == b'\\') as usize;
        }
        i + 1
    };
    let next = |mut i: usize| {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    i = skip_str(i);
    while next(i) < b.len() && b[next(i)] == b'"' {
        i = skip_str(next(i));
    }
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_str(i),
            b'(' if b.get(next(i + 1)) == Some(&b'{') => return true,
            b'{' if b.get(next(i + 1)) == Some(&b'}') => return true,
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let st = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                // ASCII at both ends: `get` never misses a character boundary.
                let word = print_fmt.get(st..i).unwrap_or("");
                // `REC->x(` never happens; a word before `(` is a call.
                if b.get(next(i)) == Some(&b'(') && !TEP_FUNCTIONS.contains(&word) {
                    return true;
                }
            }
            _ => i += 1,
        }
    }
    false
}

/// libtraceevent 1.7's tokenizer ends a string at the first byte that is
/// neither printable nor a newline (unless a backslash escapes it): a
/// print fmt whose string holds a raw tab (maple_tree's `"%s\tNode"`) then
/// fails to parse. (libtraceevent 1.9 reads such strings whole.)
fn string_ends_early(print_fmt: &str) -> bool {
    let b = print_fmt.as_bytes();
    let Some(start) = b.iter().position(|&c| c == b'"') else { return false };
    let mut last = 0;
    for &c in &b[start + 1..] {
        if c == b'"' && last != b'\\' {
            return false;
        }
        if !(c == b' ' || c.is_ascii_graphic() || c == b'\n' || last == b'\\') {
            return true;
        }
        // (Its `\\` cancelling itself changes nothing here: the byte
        // after `\\` is still read as escaped.)
        last = c;
    }
    false
}

/// plugin_kmem's `(func+0xoff) ` of a call site it can name.
fn call_site(env: &dyn Env, s: &mut String, v: u64) {
    if let Some(sym) = env.sym(v) {
        s.put("(").put(sym.name).put("+0x").hex(v.wrapping_sub(sym.addr) as u32 as u64).put(") ");
    }
}

/// is_printable_array(): printable or NUL-padded.
fn printable(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() && b[i] != 0 {
        if !(b[i].is_ascii_graphic() || b[i].is_ascii_whitespace()) {
            return false;
        }
        i += 1;
    }
    true
}

fn add_child<'a>(st: &mut Vec<Option<&'a str>>, child: Option<&'a str>, pos: usize) {
    let Some(c) = child else { return };
    if pos >= st.len() {
        // STK_BLK: the plugin grows its stack ten slots at a time.
        st.resize(st.len() + 10, None);
    }
    if let Some(slot) = st.get_mut(pos) {
        *slot = Some(c);
    }
}

fn indent(s: &mut String, depth: i64) -> fmt::Result {
    if depth > 0 {
        pad(s, (depth as usize).saturating_mul(2))?;
    }
    Ok(())
}

/// libtraceevent's trace_seq grows without end: trace-cmd prints a
/// record whose depth or size a corrupt file inflated as one line of
/// gigabytes. Bounded here as the kernel bounds its own lines: a line
/// longer than the newest kernels' trace_seq (newline included) keeps what
/// fits with `[LINE TOO BIG]` at its end.
fn bound_line(s: &mut String, size: usize) {
    if s.len() < size {
        return;
    }
    let tail = super::LINE_TOO_BIG.trim_ascii_end();
    let mut cut = size - 1 - tail.len();
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s.push_str(tail);
}

/// print_graph_overhead() then print_graph_duration(): the mark, the
/// microseconds with three decimals while they fit in 7 digits, ` us `
/// padded to the column, `|  `.
pub fn duration(s: &mut String, dur: u64) -> fmt::Result {
    // Built in a Line: core::fmt-free digits, for every graph line.
    let mut arr = [0u8; 48];
    let mut l = Line::on(&mut arr);
    l.extend_str(if dur > 1_000_000_000 {
        "$ "
    } else if dur > 1_000_000 {
        "# "
    } else if dur > 100_000 {
        "! "
    } else if dur > 10_000 {
        "+ "
    } else {
        "  "
    });
    let start = l.len();
    l.uint(dur / 1000);
    if l.len() - start < 7 {
        l.push(b'.');
        l.zeros(dur % 1000, 3);
    }
    let len = l.len() - start;
    l.extend_str(" us ");
    l.pad(7usize.saturating_sub(len));
    l.extend_str("|  ");
    s.put(l.as_str());
    Ok(())
}

/// data_latency_format(): irqs-off, need-resched, hard/softirq, preempt
/// depth (low nibble) and the migrate-disable nibble, libtraceevent's way.
fn lat_chars(d: &[u8]) -> [u8; 5] {
    let f = d.get(2).copied().unwrap_or(0);
    let pc = d.get(3).copied().unwrap_or(0);
    let irq = if f & TRACE_FLAG_IRQS_OFF != 0 {
        b'd'
    } else if f & TRACE_FLAG_IRQS_NOSUPPORT != 0 {
        b'X'
    } else {
        b'.'
    };
    let resched = if f & TRACE_FLAG_NEED_RESCHED != 0 { b'N' } else { b'.' };
    let (h, so) = (f & TRACE_FLAG_HARDIRQ != 0, f & TRACE_FLAG_SOFTIRQ != 0);
    let ctx = if h && so {
        b'H'
    } else if h {
        b'h'
    } else if so {
        b's'
    } else {
        b'.'
    };
    // A nibble as its hex digit, `.` for 0.
    let digit = |v: u8| if v == 0 { b'.' } else { b"0123456789abcdef"[v as usize] };
    [irq, resched, ctx, digit(pc & 0xf), digit(pc >> 4)]
}

/// libtraceevent 1.7's pid -> comm table (event-parse.c), whose answer
/// for a pid registered more than once depends on its history:
///
/// - tep_register_comm() only prepends to a list (duplicates and pid 0
///   kept) until the first find_cmdline() of a non-zero pid; trace-cmd
///   registers saved_cmdlines in file order at load, then the sched
///   plugins each prev_comm/next_comm/comm as records print.
/// - cmdline_init() copies that list (newest first) into an array and
///   qsort()s it by pid: glibc's qsort is a stable merge sort, so a pid's
///   run stays newest first.
/// - find_cmdline() is glibc's bsearch(), which returns the first probe
///   that matches: which duplicate answers depends on the whole layout.
/// - afterwards add_new_comm() ignores pids the array has (and pid 0) and
///   inserts a new pid at its sorted place, shifting later entries, which
///   can change which duplicate later probes hit.
///
/// trace-cmd looks up a record's comm (TEP_PRINT_COMM) before its handler
/// runs, so with `--cpu` (different first records) the answers differ.
#[derive(Default)]
struct Comms {
    /// (pid, start of its NUL-ended comm in `names`): registration order
    /// until `ready`, then the sorted array.
    tab: Vec<(i32, u32)>,
    names: String,
    ready: bool,
}

impl Comms {
    /// tep_parse_saved_cmdlines(): `%d %m[^\n]` per non-empty line; the
    /// first line that does not scan ends the parse.
    fn saved(&mut self, text: &[u8]) {
        // strdup(): the text ends at a NUL.
        let text = &text[..text.iter().position(|&c| c == 0).unwrap_or(text.len())];
        for line in text.split(|&c| c == b'\n').filter(|l| !l.is_empty()) {
            let ws = |b: &[u8]| b.iter().position(|c| !c.is_ascii_whitespace()).unwrap_or(b.len());
            let mut i = ws(line);
            let neg = line.get(i) == Some(&b'-');
            i += matches!(line.get(i), Some(b'-' | b'+')) as usize;
            let (mut v, st) = (0i64, i);
            while let Some(c) = line.get(i).filter(|c| c.is_ascii_digit()) {
                v = v * 10 + (c - b'0') as i64;
                i += 1;
                if v > i32::MAX as i64 + 1 {
                    return; // ERANGE
                }
            }
            i += ws(&line[i..]);
            if i == st || i >= line.len() {
                return;
            }
            self.register(if neg { -v } else { v } as i32, &line[i..]);
        }
    }

    /// tep_register_comm(). True when the array changed (a new pid).
    fn register(&mut self, pid: i32, comm: &[u8]) -> bool {
        if self.ready && (pid == 0 || self.search(pid).is_some()) {
            return false;
        }
        let at = self.names.len() as u32;
        let _ = put_bytes(&mut self.names, comm);
        self.names.push('\0');
        let e = (pid, at);
        if !self.ready {
            self.tab.push(e);
            return false;
        }
        // cmdline_slot_cmp's bsearch finds the one gap where pid fits.
        let i = self.tab.partition_point(|t| t.0 < pid);
        self.tab.insert(i, e);
        true
    }

    /// glibc bsearch() with cmdline_cmp.
    fn search(&self, pid: i32) -> Option<u32> {
        let (mut l, mut u) = (0, self.tab.len());
        while l < u {
            let i = (l + u) / 2;
            let (p, at) = self.tab[i];
            if pid < p {
                u = i;
            } else if pid > p {
                l = i + 1;
            } else {
                return Some(at);
            }
        }
        None
    }

    /// find_cmdline().
    fn find(&mut self, pid: i32) -> &str {
        if pid == 0 {
            return "<idle>";
        }
        if !self.ready {
            self.ready = true;
            // Newest first within a pid: names are appended, so a later
            // registration has a larger `at`.
            crate::sort::sort_by(&mut self.tab, |a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        }
        match self.search(pid) {
            Some(at) => self.names.get(at as usize..).and_then(|s| s.split('\0').next()).unwrap_or(""),
            None => "<...>",
        }
    }
}

#[cfg(test)]
mod tests;
