//! trace_functions_graph.c's output: the CPU column, durations with their
//! overhead marks, nesting by depth, an entry and its exit folded into
//! `func();` when the exit is the next record of that CPU, `} /* func */`
//! (funcgraph-tail, or when the entry was lost), irq arrows, the
//! context-switch separator, other events as `/* comments */`, and return
//! values as 6.5–6.12 print them (`} /* func = 0x0 */`, `func(); /* = 0x0 */`).

#[cfg(feature = "fast-print")]
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::kernel::{lat_chars, Class, Kernel, Kind};
use crate::sys::line::{Line, LINE_MAX};
use crate::format::FieldAt;
use crate::ftrace::Record;
use super::opts::{self, Opts};
use super::{pad, Env, Rec};

const INDENT: usize = 2;
/// FTRACE_RETFUNC_DEPTH: how deep the kernel remembers entered functions.
const RETFUNC_DEPTH: usize = 50;
const PROCINFO_LEN: usize = 14;

struct CpuData {
    last_pid: i32,
    depth: i32,
    depth_irq: i32,
    enter: [u64; RETFUNC_DEPTH],
}

pub struct Graph {
    cpus: Vec<CpuData>,
    /// Digits of the highest CPU number (`max_bytes_for_cpu`).
    width: usize,
    /// [__irqentry_text_start, __irqentry_text_end); (0, 0) when unknown;
    /// None: ask [`Env::irq_text`] when a record needs it (a scan of
    /// kallsyms that a recording without graph records never pays).
    pub irq: Option<(u64, u64)>,
    scratch: String,
    /// The buffer of an entry's or exit's [`Line`] ([`graph_rec`]); boxed,
    /// so that lending it out per record moves one pointer.
    #[cfg(feature = "fast-print")]
    lbuf: Option<Box<[u8; LINE_MAX]>>,
}

pub enum Done {
    /// Printed; true when the next record of the CPU was folded in.
    Handled(bool),
    /// Not the graph printer's (function, kernel_stack): print_trace_fmt().
    Unhandled,
}

impl Graph {
    pub fn new<E: Env + ?Sized>(ncpus: u32, _env: &E) -> Graph {
        let mut width = 1;
        let mut v = ncpus.saturating_sub(1);
        while v >= 10 {
            v /= 10;
            width += 1;
        }
        Graph {
            cpus: Vec::new(),
            width,
            irq: Some((0, 0)),
            scratch: String::new(),
            #[cfg(feature = "fast-print")]
            lbuf: None,
        }
    }

    fn cpu(&mut self, cpu: u32) -> &mut CpuData {
        // Out-of-range CPU numbers (a corrupt file) share the last slot.
        let i = (cpu as usize).min(super::kernel::MAX_CPUS);
        if i >= self.cpus.len() {
            self.grow(i);
        }
        &mut self.cpus[i]
    }

    /// Slots up to `i`, apart (but in the board build): a few times a
    /// file, while the lookup above runs several times a record.
    #[cfg_attr(feature = "fast-print", cold, inline(never))]
    fn grow(&mut self, i: usize) {
        while self.cpus.len() <= i {
            self.cpus.push(CpuData { last_pid: -1, depth: 0, depth_irq: -1, enter: [0; RETFUNC_DEPTH] });
        }
    }

    /// The CPU's depth after a record, and the function entered at
    /// `dep` set to `func` (0: returned); the one it replaces, if `dep` is
    /// one the kernel remembers.
    fn enter_at(&mut self, cpu: u32, depth: i32, dep: i32, func: u64) -> Option<u64> {
        let cd = self.cpu(cpu);
        cd.depth = depth;
        let slot = cd.enter.get_mut(usize::try_from(dep).ok()?)?;
        Some(core::mem::replace(slot, func))
    }
}

fn in_irq_text<E: Env + ?Sized>(k: &mut Kernel<'_, E>, addr: u64) -> bool {
    let env = k.env;
    let (start, end) = *k.graph.irq.get_or_insert_with(|| env.irq_text());
    start != 0 && addr >= start && addr < end
}

/// __print_graph_headers_flags(); with latency-format print_lat_header()'s
/// legend first, indented past the columns that precede the flags.
pub fn header(out: &mut dyn Write, o: &Opts) -> fmt::Result {
    let lat = o.has(opts::LATENCY_FMT);
    if lat {
        let size = if o.g(opts::G_ABS_TIME) { 16 } else { 0 } + if o.g(opts::G_CPU) { 4 } else { 0 } + if o.g(opts::G_PROC) { 17 } else { 0 };
        super::legend(
            out,
            "  _-----=> irqs-off        \n / _----=> need-resched    \n| / _---=> hardirq/softirq \n\
             || / _--=> preempt-depth   \n||| /                      \n",
            size,
        )?;
    }
    // The two header rows: `#`, each optional column's title (ticks in
    // the second row), the function column; a bit per piece.
    let on = 1
        | (o.g(opts::G_ABS_TIME) as u32) << 1
        | (o.g(opts::G_CPU) as u32) << 2
        | (o.g(opts::G_PROC) as u32) << 3
        | (lat as u32) << 4
        | (o.g(opts::G_DURATION) as u32) << 5
        | 1 << 6;
    super::rows(
        out,
        "#;     TIME       ; CPU;  TASK/PID       ;||||   ;  DURATION   ;               FUNCTION CALLS\n@\
         #;      |         ; |  ;   |    |        ;||||   ;   |   |      ;               |   |   |   |\n",
        on,
    )
}

/// print_graph_function_flags() with the tracer's private data.
pub fn line<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, r: &Rec, class: Option<&Class>, next: Option<&Rec>) -> Result<Done, fmt::Error> {
    let Some(c) = class else { return Ok(Done::Unhandled) };
    match &c.kind {
        Kind::Ftrace(Record::GraphEntry { .. } | Record::GraphExit { .. }) => graph_rec(k, out, r, c, next, true).map(Done::Handled),
        Kind::Ftrace(Record::Function { .. } | Record::KernelStack { .. }) => Ok(Done::Unhandled),
        _ => comment(k, out, r, c).map(|_| Done::Handled(false)),
    }
}

/// A graph record printed while another tracer is current: the event's
/// trace function runs without the tracer's per-CPU data.
pub fn event_alone<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, r: &Rec, c: &Class, next: Option<&Rec>) -> Result<bool, fmt::Error> {
    graph_rec(k, out, r, c, next, false)
}

/// An entry or an exit (true: the next record was folded in), its line
/// in the graph's buffer, lent out for the record: a fresh stack array
/// per record is zeroed each time, a twentieth of the decode. (A speed-up
/// the board build leaves out: there the line is on the stack.)
fn graph_rec<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, r: &Rec, c: &Class, next: Option<&Rec>, data: bool) -> Result<bool, fmt::Error> {
    #[cfg(feature = "fast-print")]
    {
        let mut lb = k.graph.lbuf.take().unwrap_or_else(|| Box::new([0; LINE_MAX]));
        let res = entry_or_exit(k, out, &mut Line::on(&mut lb[..]), r, c, next, data);
        k.graph.lbuf = Some(lb);
        res
    }
    #[cfg(not(feature = "fast-print"))]
    entry_or_exit(k, out, &mut Line::on(&mut [0; LINE_MAX]), r, c, next, data)
}

fn entry_or_exit<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, b: &mut Line<'_>, r: &Rec, c: &Class, next: Option<&Rec>, data: bool) -> Result<bool, fmt::Error> {
    match &c.kind {
        Kind::Ftrace(Record::GraphEntry { func, depth, retaddr }) => entry(k, out, b, r, *func, *depth, *retaddr, next, data),
        _ => ret(k, out, b, r, c, data).map(|_| false),
    }
}

#[allow(clippy::too_many_arguments)]
fn entry<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, b: &mut Line<'_>, r: &Rec, func: FieldAt, depth: FieldAt, retaddr: Option<FieldAt>, next: Option<&Rec>, data: bool) -> Result<bool, fmt::Error> {
    let e = k.endian;
    let fnc = func.get(r.data, e);
    // funcgraph-retaddr: the caller's address, from 6.13's retaddr entries.
    let ra = retaddr.filter(|_| k.opts.g(opts::G_RETADDR)).map(|f| f.get(r.data, e));
    let dep = depth.get(r.data, e) as i32;
    if data && check_irq_entry(k, r.cpu, fnc, dep) {
        return Ok(false);
    }
    prologue(k, out, b, r, Some((fnc, true)), data)?;
    // get_return_for_leaf(): the next record of this CPU is this
    // function's exit, by the same task.
    if let Some((n, dur, retval)) = leaf_exit(k, r, fnc, next) {
        if data {
            k.graph.enter_at(r.cpu, dep.wrapping_sub(1), dep, 0);
        }
        duration(k, b, dur, Fill::No);
        let whole = indent(b, out, (dep.max(0) as usize).saturating_mul(INDENT))?;
        let rv = retval.filter(|_| print_retval(k)).map(|f| f.get(n.data, e));
        // The caller's address is a 6.13+ comment.
        let ra = ra.filter(|_| k.kver >= 6013);
        if rv.is_none() && ra.is_none() {
            func_then(k, out, b, whole, fnc, "();\n")?;
        } else {
            b.flush(out)?;
            ret_comment(k, out, fnc, true, ra, rv)?;
        }
        irq(k, out, r, fnc, false)?;
        return Ok(true);
    }
    // print_graph_entry_nested()
    if data {
        k.graph.enter_at(r.cpu, dep, dep, fnc);
    }
    duration(k, b, 0, Fill::Full);
    let whole = indent(b, out, (dep.max(0) as usize).saturating_mul(INDENT))?;
    let Some(a) = ra else {
        func_then(k, out, b, whole, fnc, "() {\n")?;
        return Ok(false);
    };
    func_then(k, out, b, whole, fnc, "() {")?;
    out.write_str(" /* <-")?;
    k.ip_sym(out, a, k.opts.flags | opts::SYM_OFFSET)?;
    out.write_str(" */\n")?;
    Ok(false)
}

/// get_return_for_leaf(): the exit that `next` is when it is the entry's
/// (the same function, by the same task), its duration and its return
/// value's field.
fn leaf_exit<'n, E: Env + ?Sized>(k: &Kernel<'_, E>, r: &Rec, fnc: u64, next: Option<&'n Rec<'n>>) -> Option<(&'n Rec<'n>, u64, Option<FieldAt>)> {
    let n = next?;
    let e = k.endian;
    match &k.cls.get(super::kernel::rec_type(n.data, e))?.kind {
        Kind::Ftrace(Record::GraphExit { func, calltime, rettime, retval, .. }) if k.pid(n.data) == k.pid(r.data) && func.get(n.data, e) == fnc => {
            Some((n, rettime.get(n.data, e).wrapping_sub(calltime.get(n.data, e)), *retval))
        }
        _ => None,
    }
}

/// The lines nearly every record of a graph recording prints, straight
/// into `dst` (at least [`LINE_MAX`] bytes: an output buffer's free room)
/// with no writer between: `func();` (true: `next` was folded in),
/// `func() {` and `}`, when they are all the record prints (no task
/// switch, irq code or return value, a core kernel function's ASCII name).
/// None, nothing printed and no state changed, for the rest, which
/// [`line`] prints. (A speed-up the board build leaves out.)
#[cfg(feature = "fast-print")]
pub fn line_into<E: Env + ?Sized>(k: &mut Kernel<'_, E>, dst: &mut [u8], r: &Rec, next: Option<&Rec>) -> Option<(usize, bool)> {
    let e = k.endian;
    let d = r.data;
    let cls = k.cls;
    let (fnc, dep, shape) = match &cls.get(super::kernel::rec_type(d, e))?.kind {
        Kind::Ftrace(Record::GraphEntry { func, depth, retaddr }) => {
            if retaddr.is_some() && k.opts.g(opts::G_RETADDR) {
                return None;
            }
            let fnc = func.get(d, e);
            let shape = match leaf_exit(k, r, fnc, next) {
                None => Shape::Nested,
                Some((_, dur, None)) => Shape::Leaf(dur),
                Some((_, dur, Some(_))) if !print_retval(k) => Shape::Leaf(dur),
                Some(_) => return None,
            };
            (fnc, depth.get(d, e) as i32, shape)
        }
        Kind::Ftrace(Record::GraphExit { func, depth, calltime, rettime, retval, .. }) => {
            if retval.is_some() && print_retval(k) || k.opts.g(opts::G_TAIL) || k.opts.g(opts::G_OVERRUN) {
                return None;
            }
            (func.get(d, e), depth.get(d, e) as i32, Shape::Exit(rettime.get(d, e).wrapping_sub(calltime.get(d, e))))
        }
        _ => return None,
    };
    // An irq handler's arrows, or its records hidden (funcgraph-irqs off).
    if in_irq_text(k, fnc) {
        return None;
    }
    let pid = k.pid(d);
    let irqs = k.opts.g(opts::G_IRQS);
    let cd = k.graph.cpu(r.cpu);
    // The task-switch separator, or inside an irq handler that is hidden.
    if cd.last_pid != pid || !irqs && cd.depth_irq != -1 {
        return None;
    }
    let slot = usize::try_from(dep).ok().and_then(|i| cd.enter.get(i).copied());
    let (dur, name, tail) = match shape {
        Shape::Leaf(dur) => (Some(dur), k.env.core_ascii_name(fnc)?, "();\n"),
        Shape::Nested => (None, k.env.core_ascii_name(fnc)?, "() {\n"),
        // An exit of another function than the one entered: `} /* func */`.
        Shape::Exit(_) if slot.is_some_and(|f| f != fnc) => return None,
        Shape::Exit(dur) => (Some(dur), "", "}\n"),
    };
    let mut b = Line::on(dst);
    if k.opts.has(opts::CONTEXT_INFO) {
        columns(k, &mut b, r, pid);
    }
    match dur {
        Some(dur) => duration(k, &mut b, dur, Fill::No),
        None => duration(k, &mut b, 0, Fill::Full),
    }
    let n = (dep.max(0) as usize).saturating_mul(INDENT);
    if n.saturating_add(name.len() + tail.len()) > b.room() || name.is_empty() && !matches!(shape, Shape::Exit(_)) {
        return None;
    }
    b.pad(n);
    b.extend_str(name);
    b.extend_str(tail);
    match shape {
        Shape::Nested => k.graph.enter_at(r.cpu, dep, dep, fnc),
        _ => k.graph.enter_at(r.cpu, dep.wrapping_sub(1), dep, 0),
    };
    Some((b.len(), matches!(shape, Shape::Leaf(_))))
}

/// The line [`line_into`] prints.
#[cfg(feature = "fast-print")]
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// An entry and its exit, with the call's duration: `func();`.
    Leaf(u64),
    /// `func() {`
    Nested,
    /// `}`, with the call's duration.
    Exit(u64),
}

fn ret<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, b: &mut Line<'_>, r: &Rec, c: &Class, data: bool) -> fmt::Result {
    let Kind::Ftrace(Record::GraphExit { func, depth, overrun, calltime, rettime, retval }) = &c.kind else { return Ok(()) };
    let e = k.endian;
    let d = r.data;
    let fnc = func.get(d, e);
    let dep = depth.get(d, e) as i32;
    let dur = rettime.get(d, e).wrapping_sub(calltime.get(d, e));
    let mut func_match = true;
    if data {
        if check_irq_return(k, r.cpu, dep) {
            return Ok(());
        }
        func_match = k.graph.enter_at(r.cpu, dep.wrapping_sub(1), dep, 0).map_or(true, |f| f == fnc);
    }
    prologue(k, out, b, r, None, data)?;
    duration(k, b, dur, Fill::No);
    let whole = indent(b, out, (dep.max(0) as usize).saturating_mul(INDENT))?;
    let rv = retval.filter(|_| print_retval(k)).map(|f| f.get(d, e));
    if rv.is_none() && func_match && !k.opts.g(opts::G_TAIL) {
        // Into the line while it holds the record's whole text: one
        // write (a speed-up the board build leaves out).
        if cfg!(feature = "fast-print") && whole && b.extend_str("}\n") {
            b.flush(out)?;
        } else {
            b.flush(out)?;
            out.write_str("}\n")?;
        }
    } else {
        b.flush(out)?;
        // `} /* func */`, with the return value if shown.
        ret_comment(k, out, fnc, false, None, rv)?;
    }
    if k.opts.g(opts::G_OVERRUN) {
        write!(out, " (Overruns: {})\n", overrun.map_or(0, |f| f.get(d, e)) as u32)?;
    }
    irq(k, out, r, fnc, false)
}

/// print_graph_comment(): any other event, as `/* ... */` at the depth.
fn comment<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, r: &Rec, c: &Class) -> fmt::Result {
    let depth = k.graph.cpu(r.cpu).depth;
    let mut arr = [0u8; LINE_MAX];
    let mut b = Line::on(&mut arr);
    prologue(k, out, &mut b, r, None, true)?;
    duration(k, &mut b, 0, Fill::Full);
    if depth > 0 {
        indent(&mut b, out, (depth as usize).saturating_add(1).saturating_mul(INDENT))?;
    }
    b.extend_str("/* ");
    b.flush(out)?;
    let mut s = core::mem::take(&mut k.graph.scratch);
    s.clear();
    // print, bprint, bputs: their text alone; others as event() prints them.
    let res = match k.msg(&mut s, r.data, &c.kind) {
        Ok(false) => k.event(&mut s, r, c, None).map(|_| ()),
        x => x.map(|_| ()),
    };
    if s.ends_with('\n') {
        s.pop();
    }
    let w = res.and_then(|_| out.write_str(&s)).and_then(|_| out.write_str(" */\n"));
    k.graph.scratch = s;
    w
}

/// print_graph_prologue(): the separator on a task switch, the irq arrow
/// for an entry (these two lines to `out`), then abstime / CPU / proc /
/// latency columns into the record's line `b`.
fn prologue<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, b: &mut Line, r: &Rec, irq_entry: Option<(u64, bool)>, data: bool) -> fmt::Result {
    let pid = k.pid(r.data);
    if data {
        verif_pid(k, out, r.cpu, pid)?;
    }
    if let Some((addr, _)) = irq_entry {
        irq(k, out, r, addr, true)?;
    }
    if k.opts.has(opts::CONTEXT_INFO) {
        columns(k, b, r, pid);
    }
    Ok(())
}

/// Spaces for the nesting: into the line while they fit (true: the line
/// still holds all of the record's text), else (a corrupt depth) through
/// the trace_seq bound, which cuts them.
fn indent(b: &mut Line, out: &mut dyn Write, n: usize) -> Result<bool, fmt::Error> {
    if n <= b.room() {
        b.pad(n);
        return Ok(true);
    }
    b.flush(out)?;
    pad(out, n).map(|_| false)
}

/// The line, the function's `%ps` and `tail`. While the line holds all of
/// the record's text (`whole`), a core kernel function's name and the tail
/// join it, for one write; else they are written after it, each through
/// the trace_seq bound as the kernel writes them (an overflow keeps what
/// fitted before it). (The board build leaves the joining out.)
#[inline(never)]
fn func_then<E: Env + ?Sized>(k: &Kernel<'_, E>, out: &mut dyn Write, b: &mut Line, whole: bool, func: u64, tail: &str) -> fmt::Result {
    let join = cfg!(feature = "fast-print") && whole;
    if let Some(s) = k.env.sym(func).filter(|s| join && s.module.is_none() && !s.name.is_empty() && s.name.len() + tail.len() <= b.room()) {
        for t in [s.name, tail] {
            b.extend_str(t);
        }
        return b.flush(out);
    }
    b.flush(out)?;
    k.ps(out, func)?;
    out.write_str(tail)
}

/// Room for the columns: a 20-digit abstime, a CPU, a comm of 7 chars of
/// up to 4 bytes each and a pid, centred, twice (a task switch), the
/// latency flags. A record's line ([`LINE_MAX`]) has room for them, the
/// duration column and some nesting.
const COLS_MAX: usize = 160;

/// The columns, no core::fmt per column.
fn columns<E: Env + ?Sized>(k: &mut Kernel<'_, E>, b: &mut Line, r: &Rec, pid: i32) {
    if k.opts.g(opts::G_ABS_TIME) {
        // `%5lu.%06lu |  `
        b.uint_right(r.ts / 1_000_000_000, 5);
        b.push(b'.');
        b.six(((r.ts % 1_000_000_000) / 1000) as u32);
        b.extend_str(" |  ");
    }
    if k.opts.g(opts::G_CPU) {
        cpu_col(b, r.cpu, k.graph.width);
    }
    if k.opts.g(opts::G_PROC) {
        proc_col(b, k.cmd.comm(pid), pid);
        b.extend_str(" | ");
    }
    if k.opts.has(opts::LATENCY_FMT) {
        // ` flags | `
        let mut t = *b" ..... | ";
        let mut f = [0u8; 5];
        lat_chars(r.data, &mut f);
        t[1..6].copy_from_slice(&f);
        b.extend(&t);
    }
}

/// ` %*d) `
fn cpu_col(b: &mut Line, cpu: u32, width: usize) {
    b.push(b' ');
    // One digit (a machine of up to ten CPUs) without uint_right's
    // padding and digit loop: some eighty instructions a line.
    if cpu < 10 && width == 1 {
        b.push(b'0' + cpu as u8);
    } else {
        b.uint_right(cpu as u64, width);
    }
    b.extend_str(") ");
}

/// print_graph_proc(): `comm-pid` centred in 14 columns, comm cut to 7.
fn proc_col(b: &mut Line, comm: &str, pid: i32) {
    let mut end = 0;
    let mut bytes = 0;
    for (i, ch) in comm.char_indices() {
        let w = if super::raw_byte(ch).is_some() { 1 } else { ch.len_utf8() };
        if bytes + w > 7 {
            break;
        }
        bytes += w;
        end = i + ch.len_utf8();
    }
    // `end` is a character boundary (from char_indices): `get` never misses.
    let comm = comm.get(..end).unwrap_or(comm);
    let mut digits = if pid < 0 { 2 } else { 1 };
    let mut v = pid.unsigned_abs();
    while v >= 10 {
        v /= 10;
        digits += 1;
    }
    let len = bytes + digits + 1;
    let spaces = PROCINFO_LEN.saturating_sub(len);
    b.pad(spaces / 2);
    // A whole str: raw-byte escapes stay for the writer at the edge.
    b.extend_str(comm);
    b.push(b'-');
    b.int(pid as i64);
    b.pad(spaces - spaces / 2);
}

fn verif_pid<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, cpu: u32, pid: i32) -> fmt::Result {
    let cd = k.graph.cpu(cpu);
    if cd.last_pid == pid {
        return Ok(());
    }
    let prev = cd.last_pid;
    cd.last_pid = pid;
    if prev == -1 {
        return Ok(());
    }
    out.write_str(" ------------------------------------------\n")?;
    let mut arr = [0u8; COLS_MAX];
    let mut b = Line::on(&mut arr);
    cpu_col(&mut b, cpu, k.graph.width);
    proc_col(&mut b, k.cmd.comm(prev), prev);
    b.extend_str(" => ");
    proc_col(&mut b, k.cmd.comm(pid), pid);
    b.flush(out)?;
    out.write_str("\n ------------------------------------------\n\n")
}

/// print_graph_irq(): `==========>` before an irq handler's entry,
/// `<==========` after its exit.
fn irq<E: Env + ?Sized>(k: &mut Kernel<'_, E>, out: &mut dyn Write, r: &Rec, addr: u64, enter: bool) -> fmt::Result {
    if !in_irq_text(k, addr) {
        return Ok(());
    }
    let mut arr = [0u8; LINE_MAX];
    let mut b = Line::on(&mut arr);
    if k.opts.has(opts::CONTEXT_INFO) {
        let pid = k.pid(r.data);
        columns(k, &mut b, r, pid);
    }
    duration(k, &mut b, 0, Fill::Start);
    b.extend_str(if enter { "==========>" } else { "<==========" });
    duration(k, &mut b, 0, Fill::End);
    b.push(b'\n');
    b.flush(out)
}

fn check_irq_entry<E: Env + ?Sized>(k: &mut Kernel<'_, E>, cpu: u32, addr: u64, depth: i32) -> bool {
    if k.opts.g(opts::G_IRQS) {
        return false;
    }
    let inside = in_irq_text(k, addr);
    let cd = k.graph.cpu(cpu);
    if cd.depth_irq >= 0 {
        return true;
    }
    if !inside {
        return false;
    }
    cd.depth_irq = depth;
    true
}

fn check_irq_return<E: Env + ?Sized>(k: &mut Kernel<'_, E>, cpu: u32, depth: i32) -> bool {
    if k.opts.g(opts::G_IRQS) {
        return false;
    }
    let cd = k.graph.cpu(cpu);
    if cd.depth_irq == -1 {
        return false;
    }
    if cd.depth_irq >= depth {
        cd.depth_irq = -1;
    }
    true
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    No,
    Full,
    Start,
    End,
}

/// print_graph_duration(), into the record's line.
fn duration<E: Env + ?Sized>(k: &Kernel<'_, E>, b: &mut Line, dur: u64, fill: Fill) {
    if !k.opts.g(opts::G_DURATION) || !k.opts.has(opts::CONTEXT_INFO) {
        return;
    }
    let text = match fill {
        Fill::Full => "              |  ",
        Fill::Start => "  ",
        Fill::End => " |",
        Fill::No => {
            // The marks are ASCII.
            b.push(if k.opts.g(opts::G_OVERHEAD) { mark(dur) as u8 } else { b' ' });
            b.push(b' ');
            dur_into(b, dur);
            "|  "
        }
    };
    b.extend_str(text);
}

/// trace_find_mark(): the overhead mark for a duration in ns.
pub fn mark(d: u64) -> char {
    // A match, not a loop over a table: a few compares per line.
    match d {
        1_000_000_001.. => '$',
        100_000_001.. => '@',
        10_000_001.. => '*',
        1_000_001.. => '#',
        100_001.. => '!',
        10_001.. => '+',
        _ => ' ',
    }
}

/// trace_print_graph_duration() into a line (at most 32 bytes): usecs
/// with up to 3 decimals, 7 digits total, padded to 8 columns after ` us `.
fn dur_into(b: &mut Line, dur: u64) {
    let (us, ns) = per_mille(dur);
    let mut len = b.uint(us);
    if len < 7 {
        // snprintf(nsecs_str, min(5, 8 - len), "%03lu"): keeps 7 - len digits at most.
        let keep = ((8 - len).min(5) - 1).min(3);
        len += keep + 1;
        if !cfg!(feature = "fast-print") {
            // The board build: all three digits, then a cut.
            let at = b.len();
            b.push(b'.');
            b.zeros(ns, 3);
            b.truncate(at + 1 + keep);
            return dur_tail(b, len);
        }
        // The hundreds and tens of ns < 1000 by multiplies, exact in range.
        let ns = ns as u32;
        let h = (ns * 41) >> 12;
        let r = ns - h * 100;
        let t = (r * 103) >> 10;
        let frac = [b'.', b'0' + h as u8, b'0' + t as u8, b'0' + (r - t * 10) as u8];
        b.extend(&frac[..1 + keep]);
    }
    dur_tail(b, len)
}

/// ` us ` and the padding after a duration `len` columns wide.
fn dur_tail(b: &mut Line, len: usize) {
    b.extend_str(" us ");
    b.pad(8usize.saturating_sub(len));
}

/// `d / 1000` and `d % 1000`. Below 2^32 (durations under 4 s) by a
/// multiply and shift (exact there), where a size-optimised build divides:
/// a 64-bit divide on every duration line was a few percent of the decode.
/// (The board build divides.)
fn per_mille(d: u64) -> (u64, u64) {
    let q = if cfg!(feature = "fast-print") && d <= u32::MAX as u64 { (d * 0x1062_4DD3) >> 38 } else { d / 1000 };
    (q, d - q * 1000)
}

fn print_retval<E: Env + ?Sized>(k: &Kernel<'_, E>) -> bool {
    !k.opts.retval_known || k.opts.g(opts::G_RETVAL)
}

/// The value as unsigned long and, unless funcgraph-retval-hex, the error
/// number it stands for (0 when it is not an error).
fn ret_value<E: Env + ?Sized>(k: &Kernel<'_, E>, retval: u64) -> (u64, i64) {
    let retval = k.ulong(retval);
    let hex = k.opts.g(opts::G_RETVAL_HEX);
    let mut err: i64 = 0;
    if retval != 0 && !hex {
        // A 32-bit int error returned in a 64-bit register is sign-extended.
        let as_int = k.long == 4 || (retval & (1 << 31) != 0 && retval >> 32 == 0);
        let v = if as_int { retval as u32 as i32 as i64 } else { retval as i64 };
        // IS_ERR_VALUE: the top 4095 values of unsigned long.
        if (-4095..0).contains(&v) {
            err = v;
        }
    }
    (retval, err)
}

/// The comment closing a call: `func(); /*` for a leaf, `} /* func` for
/// an exit, then the caller (` <-caller+0x../0x..`, 6.13+ leaves) and
/// print_graph_retval()'s value: errors (-MAX_ERRNO..-1, also as a
/// sign-extended 32-bit int) in decimal, everything else in hex, as 6.5–6.12
/// print it (` = 0x0`, also when the kernel is unknown) or from 6.13
/// (` ret=0x0`), then ` */`.
fn ret_comment<E: Env + ?Sized>(k: &Kernel<'_, E>, out: &mut dyn Write, func: u64, leaf: bool, ra: Option<u64>, rv: Option<u64>) -> fmt::Result {
    if leaf {
        k.ps(out, func)?;
        out.write_str("(); /*")?;
    } else {
        out.write_str("} /* ")?;
        k.ps(out, func)?;
    }
    if let Some(a) = ra {
        out.write_str(" <-")?;
        k.ip_sym(out, a, k.opts.flags | opts::SYM_OFFSET)?;
    }
    if let Some(v) = rv {
        let (v, err) = ret_value(k, v);
        let pre = if k.kver >= 6013 { " ret=" } else { " = " };
        if err == 0 {
            write!(out, "{}0x{:x}", pre, v)?;
        } else {
            write!(out, "{}{}", pre, err)?;
        }
    }
    out.write_str(" */\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::string::ToString;

    fn dur(d: u64) -> String {
        let mut arr = [0u8; 48];
        let mut b = Line::on(&mut arr);
        dur_into(&mut b, d);
        let mut s = String::new();
        b.flush(&mut s).unwrap();
        s
    }

    #[test]
    fn durations_as_the_kernel() {
        assert_eq!(dur(2654), "2.654 us    ");
        assert_eq!(dur(16545), "16.545 us   ");
        assert_eq!(dur(194533), "194.533 us  ");
        assert_eq!(dur(12345678), "12345.67 us ");
        assert_eq!(dur(123456789), "123456.7 us ");
        assert_eq!(dur(1234567890), "1234567 us  ");
        let spread = (0..=u32::MAX as u64).step_by(9973);
        for d in spread.chain([999, 1000, 1001, u32::MAX as u64 - 1, u32::MAX as u64, 1 << 32, u64::MAX]) {
            assert_eq!(per_mille(d), (d / 1000, d % 1000));
        }
        // Every nanosecond remainder, at each width of the microseconds.
        for us in [0u64, 7, 42, 999, 1234, 12345, 123456, 1234567, 12345678] {
            for ns in 0..1000 {
                let (u, n) = (us.to_string(), alloc::format!(".{:03}", ns));
                let keep = if u.len() < 7 { ((8 - u.len()).min(5) - 1).min(3) + 1 } else { 0 };
                let want = alloc::format!("{}{} us ", u, &n[..keep]);
                assert_eq!(dur(us * 1000 + ns), alloc::format!("{:<w$}", want, w = want.len() + 8usize.saturating_sub(u.len() + keep)));
            }
        }
        assert_eq!(mark(10_000), ' ');
        assert_eq!(mark(10_001), '+');
        assert_eq!(mark(194_533), '!');
        assert_eq!(mark(2_000_000_000), '$');
    }
}
