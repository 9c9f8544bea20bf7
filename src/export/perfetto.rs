//! A Perfetto trace (protos/perfetto/trace/trace.proto): a sequence of
//! `Trace.packet` fields, each a `TracePacket`, written as the records come
//! so memory stays flat.
//!
//! - First a `SystemInfo` packet (utsname: the kernel release decides how
//!   Perfetto reads task states) and a `ProcessTree` of the saved cmdlines
//!   and tgids (threads under their processes).
//! - Then per CPU, `FtraceEventBundle`s of at most [`BUNDLE_MAX`] bytes of
//!   events in timestamp order; `lost_events` on the bundle that follows a
//!   loss; the trace clock as `ftrace_clock`.
//! - Events Perfetto has a message for use it ([`MESSAGES`]), every other
//!   one is a `GenericFtraceEvent` with each field typed, so nothing is
//!   dropped.
//! - Kernel function addresses (function_graph's `func`, workqueue
//!   functions) are, as traced_probes writes them with `symbolize_ksyms`,
//!   ids of names interned in the packet's `InternedData.kernel_symbols`.
//! - Last, `FtraceStats` with each CPU's ring buffer statistics.

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

use super::buf::Buf;
use super::proto::{self, begin, begin_room, bytes, end, int, uint};
use super::compact::{self, Task};
use super::{Cols, CpuStat, Export, Memo, Meta, Row, Scalar, Value};
use crate::format::Event;

/// Events with their own Perfetto message: system, name, the message's
/// field number in `FtraceEvent`, and its fields as `kernel_field:N` plus
/// the kind of value: `s` string, `i` signed, `u` unsigned, `k` kernel
/// symbol (an interned name's id), `a` packed array. A field this kernel's
/// format lacks is left out.
pub const MESSAGES: &[(&str, &str, u32, &str)] = &[
    ("ftrace", "print", 3, "ip:1u buf:2s"),
    ("sched", "sched_switch", 4, "prev_comm:1s prev_pid:2i prev_prio:3i prev_state:4i next_comm:5s next_pid:6i next_prio:7i"),
    ("power", "cpu_frequency", 11, "state:1u cpu_id:2u"),
    ("power", "cpu_idle", 13, "state:1u cpu_id:2u"),
    ("sched", "sched_wakeup", 17, "comm:1s pid:2i prio:3i success:4i target_cpu:5i"),
    ("sched", "sched_blocked_reason", 18, "pid:1i caller:2k io_wait:3u"),
    ("sched", "sched_waking", 20, "comm:1s pid:2i prio:3i success:4i target_cpu:5i"),
    ("irq", "softirq_entry", 24, "vec:1u"),
    ("irq", "softirq_exit", 25, "vec:1u"),
    ("irq", "softirq_raise", 26, "vec:1u"),
    ("irq", "irq_handler_entry", 36, "irq:1i name:2s"),
    ("irq", "irq_handler_exit", 37, "irq:1i ret:2i"),
    ("workqueue", "workqueue_activate_work", 56, "work:1u function:2u"),
    ("workqueue", "workqueue_execute_end", 57, "work:1u function:2u"),
    ("workqueue", "workqueue_execute_start", 58, "work:1u function:2k"),
    ("workqueue", "workqueue_queue_work", 59, "work:1u function:2k req_cpu:4i cpu:5i workqueue:6s"),
    ("sched", "sched_wakeup_new", 114, "comm:1s pid:2i prio:3i success:4i target_cpu:5i"),
    ("task", "task_newtask", 235, "pid:1i comm:2s clone_flags:3u oom_score_adj:4i"),
    ("task", "task_rename", 236, "pid:1i oldcomm:2s newcomm:3s oom_score_adj:4i"),
    ("sched", "sched_process_exec", 237, "filename:1s pid:2i old_pid:3i"),
    ("sched", "sched_process_exit", 238, "comm:1s pid:2i tgid:3i prio:4i"),
    ("sched", "sched_process_fork", 239, "parent_comm:1s parent_pid:2i child_comm:3s child_pid:4i"),
    ("sched", "sched_process_free", 240, "comm:1s pid:2i prio:3i"),
    ("sched", "sched_process_hang", 241, "comm:1s pid:2i"),
    ("sched", "sched_process_wait", 242, "comm:1s pid:2i prio:3i"),
    ("raw_syscalls", "sys_enter", 329, "id:1i args:2a"),
    ("raw_syscalls", "sys_exit", 330, "id:1i ret:2i"),
    ("sched", "sched_pi_setprio", 353, "comm:1s newprio:2i oldprio:3i pid:4i"),
    ("ftrace", "funcgraph_entry", 437, "depth:1i func:2k"),
    ("ftrace", "funcgraph_exit", 438, "calltime:1u depth:2i func:3k overrun:4u rettime:5u"),
    ("sched", "sched_migrate_task", 491, "comm:1s pid:2i prio:3i orig_cpu:4i dest_cpu:5i"),
];

/// `FtraceEvent.generic`.
const GENERIC: u32 = 327;
/// Its tag as written.
const GENERIC_TAG: u64 = (GENERIC as u64) << 3 | proto::LEN as u64;
/// `FtraceEvent.sched_switch`, `.sched_waking` (as in [`MESSAGES`]).
const SCHED_SWITCH: u32 = 4;
const SCHED_WAKING: u32 = 20;

/// Entries of [`Perfetto::sym_cache`] (a power of two).
const SYM_CACHE: usize = 4096;

/// Bytes of encoded events a CPU's bundle holds before it is written out.
pub const BUNDLE_MAX: usize = 64 << 10;

/// The one packet sequence this trace is (interned symbols are scoped to
/// a sequence).
const SEQ: u64 = 1;
/// TracePacket.sequence_flags: SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE.
const CLEARED: u64 = 1;
const NEEDS_STATE: u64 = 2;

/// How one event is written.
enum Plan {
    /// Its own message: (proto field, index into Event.fields, kind, where
    /// a number lies).
    Message(u32, Vec<(u32, usize, u8, Option<Scalar>)>),
    /// ftrace's function records: a generic event with the symbols' names.
    Function,
    /// trace_printk: a generic event with the formatted message.
    Bprint,
    /// A `GenericFtraceEvent` of its fields, typed, and its last event
    /// from the pid on.
    Generic(GenericPlan, Memo),
}

/// What every `GenericFtraceEvent` of one event has alike, encoded once:
/// its name (field 1), and each field's name (`Field.name`).
struct GenericPlan {
    name: Vec<u8>,
    /// Each field past the common ones with its encoded name, and for a
    /// number the tag of its value (`int_value` or `uint_value`) after.
    cols: Cols,
    /// When every field is a number with a short key: the record length
    /// that holds them all, and the most bytes [`GenericPlan::put_scalars`]
    /// writes (then the event is written in one run).
    scalars: Option<(usize, usize)>,
}

impl GenericPlan {
    fn new(e: &Event) -> Plan {
        let mut name = Buf::new();
        bytes(&mut name, 1, e.name.as_bytes());
        let cols = Cols::new(e, &|keys, f| {
            bytes(keys, 1, f.name.as_bytes());
            if let Some(sc) = Scalar::of(f) {
                proto::tag(keys, if sc.signed() { 4 } else { 5 }, proto::VARINT);
            }
        });
        // (A field's length, key and value, then fits its one byte.)
        let short = cols.cols.iter().all(|c| c.scalar.is_some() && cols.key(c).len() <= super::KEY);
        let need = e.fields.iter().skip(e.ncommon).map(|f| f.offset + f.size).max();
        // The event's tag, length and timestamp, pid, flags, the generic
        // message's tag and length, its name, and per field its tag,
        // length, key and a value of up to 10 bytes.
        let most = 3 + 11 + 6 + 2 + 4 + name.len() + cols.cols.iter().map(|c| 2 + c.klen() + 10).sum::<usize>();
        let scalars = need.filter(|_| short && most < 0x4000).map(|need| (need, most));
        Plan::Generic(GenericPlan { name: name.as_slice().to_vec(), cols, scalars }, Memo::new(e))
    }

    /// The event from `pid` on (from its tag with timestamp `ts`), when
    /// its fields are all numbers record `d` holds (false: [`write`]
    /// them): each length stored where room was left for it once what it
    /// counts is written, all in one run.
    ///
    /// [`write`]: GenericPlan::write
    #[inline(always)]
    fn put_scalars(&self, b: &mut Buf, ts: Option<u64>, pid: u64, flags: u64, d: &[u8], endian: crate::cursor::Endian) -> bool {
        let Some((need, most)) = self.scalars else { return false };
        if d.len() < need {
            return false;
        }
        super::buf::run(b, most, |h| {
            let ev = ts.map(|ts| {
                h.byte(2 << 3 | proto::LEN);
                let at = h.len();
                h.byte(0x80);
                h.byte(0);
                h.uint(1, ts);
                at
            });
            h.uint(2, pid);
            h.uint(5, flags);
            h.varint(GENERIC_TAG);
            let g = h.len();
            h.byte(0x80);
            h.byte(0);
            h.put(&self.name);
            for c in &self.cols.cols {
                let v = c.scalar.and_then(|sc| sc.get(d, endian)).unwrap_or(0);
                h.byte(2 << 3 | proto::LEN);
                let f = h.len();
                h.byte(0);
                h.put_fixed(c.padded(), c.klen());
                h.varint(v);
                h.set(f, (h.len() - f - 1) as u8);
            }
            h.len2(g, h.len() - g - 2);
            if let Some(at) = ev {
                h.len2(at, h.len() - at - 2);
            }
        });
        true
    }

    /// The event's fields from record `d`.
    fn write(&self, b: &mut Buf, m: &Meta, e: &Event, d: &[u8]) {
        b.put(&self.name);
        for c in &self.cols.cols {
            let key = self.cols.key(c);
            if let Some(sc) = c.scalar {
                // A number's Field is short and its length known: written
                // first, with no length to fix up after. (The key ends
                // with the value's tag.)
                let Some(n) = sc.get(d, m.endian) else { continue };
                proto::tag(b, 2, proto::LEN);
                proto::varint(b, (key.len() + proto::varint_len(n)) as u64);
                b.put(key);
                proto::varint(b, n);
                continue;
            }
            let Some(v) = e.fields.get(c.field).and_then(|f| super::value(f, d, m.endian, m.long_size)) else { continue };
            let o = begin(b, 2);
            b.put(key);
            if let Value::Str(s) = v {
                text_field(b, 3, s);
            } else {
                let a = begin(b, 3);
                super::jsonl::put_value(b, &v, m);
                end(b, a);
            }
            end(b, o);
        }
    }
}

/// How [`Export::record`] writes one record.
enum How {
    Message(u32),
    Function,
    Bprint,
    /// A type without a format.
    Unknown,
}

#[derive(Default)]
struct Bundle {
    /// Encoded `FtraceEventBundle.event` fields.
    buf: Buf,
    /// Events were lost before this bundle's first event.
    lost: bool,
    /// Symbol ids its events use that no earlier packet interned.
    syms: Vec<u64>,
    serial: u64,
    /// Its compact sched_switch/sched_waking events (when asked for).
    sched: compact::Sched,
}

#[derive(Default)]
pub struct Perfetto {
    /// sched_switch and sched_waking in `compact_sched` form where it
    /// says all they do (see [`compact`]).
    compact_sched: bool,
    /// By event id, how its records are written (generic ones made at
    /// their first record).
    plans: Vec<Option<Plan>>,
    cpus: Vec<Bundle>,
    /// Kernel symbol (its start address, or the address itself when no
    /// symbol covers it) → interned id; names[id - 1] is its name.
    sym_ids: BTreeMap<u64, u64>,
    names: Vec<String>,
    /// Per id: interned by a packet already written / the serial of the
    /// last bundle that listed it.
    sym_sent: Vec<bool>,
    sym_listed: Vec<u64>,
    /// Recently asked addresses → their id, by a hash of the address: a
    /// function_graph recording asks for the same few hundred functions
    /// over and over, and the symbol table's search is what costs.
    sym_cache: Vec<(u64, u64)>,
    serial: u64,
    /// FtraceEventBundle.ftrace_clock, and the first timestamp (the
    /// identity clock snapshot Perfetto needs for per-CPU clocks).
    clock: u64,
    t0: Option<u64>,
    /// A dedicated message's (proto field, value, kind), reused.
    vals: Vec<(u32, u64, u8)>,
    /// The packet being assembled.
    pkt: Buf,
}

impl Perfetto {
    pub fn new() -> Self {
        Self::default()
    }

    /// With sched_switch and sched_waking in `compact_sched` form.
    pub fn with_compact_sched() -> Self {
        Perfetto { compact_sched: true, ..Self::default() }
    }

    fn set_plan(&mut self, id: u16, plan: Plan) {
        let i = id as usize;
        if self.plans.len() <= i {
            self.plans.resize_with(i + 1, || None);
        }
        self.plans[i] = Some(plan);
    }

    fn bundle(&mut self, cpu: u32) -> &mut Bundle {
        let i = (cpu as usize).min(crate::text::kernel::MAX_CPUS);
        if self.cpus.len() <= i {
            self.cpus.resize_with(i + 1, Bundle::default);
        }
        &mut self.cpus[i]
    }

    /// The interned id of the kernel symbol at `addr`, listed in `cpu`'s
    /// bundle when no packet has interned it yet.
    fn sym(&mut self, m: &Meta, cpu: u32, addr: u64) -> u64 {
        if self.sym_cache.is_empty() {
            self.sym_cache.resize(SYM_CACHE, (0, 0));
        }
        // Fibonacci hashing: the top bits of the product mix every bit of
        // the address (functions sit at 16-byte-aligned addresses).
        let slot = (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - SYM_CACHE.trailing_zeros())) as usize;
        let id = match self.sym_cache[slot] {
            (a, id) if a == addr && id != 0 => id,
            _ => {
                let id = self.sym_id(m, addr);
                self.sym_cache[slot] = (addr, id);
                id
            }
        };
        let i = id as usize - 1;
        if !self.sym_sent[i] {
            let serial = self.bundle(cpu).serial;
            if self.sym_listed[i] != serial {
                self.sym_listed[i] = serial;
                self.bundle(cpu).syms.push(id);
            }
        }
        id
    }

    /// The interned id of the symbol at `addr` (a new one for a symbol
    /// not seen before).
    fn sym_id(&mut self, m: &Meta, addr: u64) -> u64 {
        let (key, name) = match m.env.sym(addr) {
            Some(s) => (s.addr, s.name),
            None => (addr, ""),
        };
        let id = match self.sym_ids.get(&key) {
            Some(&id) => id,
            None => {
                let mut n = String::from(name);
                if n.is_empty() {
                    let _ = write!(n, "0x{:x}", addr);
                }
                self.names.push(n);
                self.sym_sent.push(false);
                self.sym_listed.push(u64::MAX);
                let id = self.names.len() as u64;
                self.sym_ids.insert(key, id);
                id
            }
        };
        id
    }

    /// Record `r` into `cpu`'s bundle when its event's plan is a generic
    /// one (false: it is not). After the timestamp, a generic event's
    /// bytes depend on its fields, pid and flags alone: from the text the
    /// plan kept while those repeat.
    fn generic(&mut self, m: &Meta, r: &Row, ty: usize, cpu: usize) -> bool {
        let (Some(Some(Plan::Generic(g, memo))), Some(e), Some(bundle)) = (self.plans.get_mut(ty), r.event, self.cpus.get_mut(cpu)) else { return false };
        let (b, d) = (&mut bundle.buf, r.data);
        let flags = d.get(2).copied().unwrap_or(0) as u64;
        let pid = r.pid as u32 as u64;
        let made = |b: &mut Buf| {
            if g.put_scalars(b, None, pid, flags, d, m.endian) {
                return;
            }
            uint(b, 2, pid);
            uint(b, 5, flags);
            let o = begin_room(b, GENERIC, 2);
            g.write(b, m, e, d);
            end(b, o);
        };
        if let Some(rest) = memo.text(d, pid | flags << 32, made) {
            // The event's length as `end` writes it in the two bytes of
            // room below.
            let n = 1 + proto::varint_len(r.ts) + rest.len();
            if n < 0x4000 {
                proto::run(b, |h| {
                    h.varint(2 << 3 | proto::LEN as u64);
                    h.byte(n as u8 | 0x80);
                    h.byte((n >> 7) as u8);
                    h.uint(1, r.ts);
                });
                b.put(rest);
                return true;
            }
        }
        if g.put_scalars(b, Some(r.ts), pid, flags, d, m.endian) {
            return true;
        }
        // Generic events run past 127 bytes: two length bytes up front.
        let (ev, o) = proto::run(b, |h| {
            let ev = h.begin_room(2, 2);
            h.uint(1, r.ts);
            h.uint(2, pid);
            h.uint(5, flags);
            (ev, h.begin_room(GENERIC, 2))
        });
        g.write(b, m, e, d);
        end(b, o);
        end(b, ev);
        true
    }

    /// Record `r` when [`Perfetto::generic`] did not take it: its CPU's
    /// first, its event's first, or one of a dedicated message.
    #[inline(never)]
    fn other(&mut self, out: &mut Buf, m: &Meta, r: &Row, ty: u16, cpu: usize) {
        let d = r.data;
        if self.cpus.len() <= cpu || self.plans.get(ty as usize).is_none_or(|p| p.is_none()) {
            self.bundle(r.cpu);
            if let Some(e) = r.event {
                if self.plans.get(ty as usize).is_none_or(|p| p.is_none()) {
                    self.set_plan(ty, GenericPlan::new(e));
                }
            }
            if self.generic(m, r, ty as usize, cpu) {
                return self.full(out, cpu);
            }
        }
        // A dedicated message's values now (symbols interned below, before
        // the bundle is borrowed); strings and arrays are read when
        // written: for them the value is the field's index.
        let mut vals = core::mem::take(&mut self.vals);
        vals.clear();
        let how = match (r.event, self.plans.get(ty as usize).and_then(|p| p.as_ref())) {
            (Some(_), Some(Plan::Message(no, fs))) => {
                for &(pno, i, kind, sc) in fs {
                    let v = match kind {
                        b's' | b'a' => i as u64,
                        _ => match sc.and_then(|sc| sc.get(d, m.endian)) {
                            Some(v) => v,
                            None => continue,
                        },
                    };
                    vals.push((pno, v, kind));
                }
                How::Message(*no)
            }
            (Some(_), Some(Plan::Function)) => How::Function,
            (Some(_), Some(Plan::Bprint)) => How::Bprint,
            _ => How::Unknown,
        };
        for v in vals.iter_mut() {
            if v.2 == b'k' {
                v.1 = self.sym(m, r.cpu, v.1);
            }
        }
        let e = r.event.unwrap_or(&crate::format::NO_EVENT);
        if self.compact_sched {
            if let How::Message(no @ (SCHED_SWITCH | SCHED_WAKING)) = how {
                let sched = &mut self.cpus[cpu].sched;
                if compact_sched(sched, no, m, e, r, &vals) {
                    self.vals = vals;
                    return self.full(out, cpu);
                }
            }
        }
        let b = &mut self.cpus[cpu].buf;
        // Generic events run past 127 bytes: two length bytes up front.
        let (no, room) = if let How::Message(no) = how { (no, 1) } else { (GENERIC, 2) };
        // (At most 3 + 11 + 11 + 3 + 5 bytes.)
        let (ev, o) = proto::run(b, |h| {
            let ev = h.begin_room(2, room);
            h.uint(1, r.ts);
            h.uint(2, r.pid as u32 as u64);
            h.uint(5, d.get(2).copied().unwrap_or(0) as u64);
            (ev, h.begin_room(no, room))
        });
        match how {
            How::Message(_) => {
                for &(pno, v, kind) in &vals {
                    if !matches!(kind, b's' | b'a') {
                        uint(b, pno, v);
                        continue;
                    }
                    let Some(f) = e.fields.get(v as usize) else { continue };
                    match super::value(f, d, m.endian, m.long_size) {
                        Some(Value::Str(s)) => text_field(b, pno, s),
                        Some(Value::Array { data, elem, signed }) => {
                            let n = data.len() / elem;
                            proto::packed(b, pno, (0..n).map(|i| super::elem(data, elem, signed, i, m.endian)));
                        }
                        _ => {}
                    }
                }
            }
            How::Function => {
                let (ip, parent) = (sym_text(m, field_u64(e, "ip", d, m)), sym_text(m, field_u64(e, "parent_ip", d, m)));
                generic_text(b, "function", &[("ip", ip.as_bytes()), ("parent_ip", parent.as_bytes())]);
            }
            How::Bprint => {
                let mut msg = String::new();
                if let (Some(f), Some(a)) = (e.field("fmt"), e.field("buf")) {
                    if let (Some(addr), Some(args)) = (f.int(d, m.endian), a.data(d, m.endian)) {
                        let _ = m.env.bprint(addr, args, &mut msg);
                    }
                }
                let mut raw = Vec::new();
                super::jsonl::raw_bytes(&mut raw, &msg);
                let ip = sym_text(m, field_u64(e, "ip", d, m));
                generic_text(b, "bprint", &[("ip", ip.as_bytes()), ("buf", &raw)]);
            }
            How::Unknown => {
                let mut name = String::new();
                let _ = write!(name, "type {}", ty);
                generic_text(b, &name, &[]);
            }
        }
        end(b, o);
        end(b, ev);
        self.vals = vals;
        self.full(out, cpu);
    }

    /// Write out `cpu`'s bundle when it is full.
    fn full(&mut self, out: &mut Buf, cpu: usize) {
        let Some(b) = self.cpus.get(cpu) else { return };
        // (Without compact_sched the compact arrays stay empty: not summed.)
        if b.buf.len() + if self.compact_sched { b.sched.len() } else { 0 } >= BUNDLE_MAX {
            self.flush(out, cpu);
        }
    }

    /// The packet in `pkt` out as a `Trace.packet` field.
    fn emit(&mut self, out: &mut Buf) {
        proto::bytes(out, 1, self.pkt.as_slice());
        self.pkt.clear();
    }

    /// Write out `cpu`'s bundle (when it has events or a loss to tell).
    fn flush(&mut self, out: &mut Buf, cpu: usize) {
        let Some(b) = self.cpus.get_mut(cpu) else { return };
        if b.buf.is_empty() && !b.lost && b.sched.is_empty() {
            return;
        }
        self.serial += 1;
        let serial = self.serial;
        let lost = core::mem::replace(&mut b.lost, false);
        let syms = core::mem::take(&mut b.syms);
        b.serial = serial;
        // The bundle's events go from its buffer straight to `out`: what
        // follows them (the bundle's last fields, then the packet's) is
        // made first in `pkt`, so every length is known up front.
        let p = &mut self.pkt;
        b.sched.write(p);
        if lost {
            uint(p, 3, 1);
        }
        if self.clock != 0 {
            // A clock snapshot that maps the trace clock 1:1 onto boot time:
            // the file has no pair of real readings to relate them.
            let t = self.t0.unwrap_or(0);
            uint(p, 5, self.clock);
            uint(p, 6, t);
            uint(p, 7, t);
        }
        let tail = p.len();
        sequence(p, NEEDS_STATE);
        if !syms.is_empty() {
            let interned = begin_room(p, 12, 3);
            for &id in &syms {
                let i = id as usize - 1;
                if self.sym_sent[i] {
                    continue;
                }
                self.sym_sent[i] = true;
                let s = begin(p, 26);
                uint(p, 1, id);
                bytes(p, 2, self.names[i].as_bytes());
                end(p, s);
            }
            end(p, interned);
        }
        let body = 1 + proto::varint_len(cpu as u64) + b.buf.len() + tail;
        let packet = 1 + proto::varint_len(body as u64) + body + p.len() - tail;
        proto::tag(out, 1, proto::LEN);
        proto::varint(out, packet as u64);
        proto::tag(out, 1, proto::LEN);
        proto::varint(out, body as u64);
        uint(out, 1, cpu as u64);
        out.put(b.buf.as_slice());
        b.buf.clear();
        out.put(p.as_slice());
        p.clear();
    }
}

fn sequence(p: &mut Buf, flags: u64) {
    uint(p, 10, SEQ);
    uint(p, 13, flags);
}

/// A generic event of named fields holding text.
fn generic_text(b: &mut Buf, name: &str, fields: &[(&str, &[u8])]) {
    bytes(b, 1, name.as_bytes());
    for (k, v) in fields {
        let o = begin(b, 2);
        bytes(b, 1, k.as_bytes());
        text_field(b, 3, v);
        end(b, o);
    }
}

/// A string field of kernel bytes: protobuf strings are UTF-8, so a byte
/// that is not part of valid UTF-8 is written `\xNN`.
pub(crate) fn text_field(b: &mut Buf, field: u32, s: &[u8]) {
    if core::str::from_utf8(s).is_ok() {
        return bytes(b, field, s);
    }
    let o = begin(b, field);
    for chunk in s.utf8_chunks() {
        b.put(chunk.valid().as_bytes());
        for &c in chunk.invalid() {
            let _ = write!(b, "\\x{:02x}", c);
        }
    }
    end(b, o);
}

/// `kernel_field:N` + kind letter, as in [`MESSAGES`].
fn parse_spec(spec: &str) -> impl Iterator<Item = (&str, u32, u8)> {
    spec.split(' ').filter_map(|w| {
        let (name, rest) = w.split_once(':')?;
        let kind = *rest.as_bytes().last()?;
        Some((name, rest.get(..rest.len() - 1)?.parse().ok()?, kind))
    })
}

/// FtraceEventBundle.FtraceClock for a trace clock: the per-CPU clocks with
/// a snapshot (see [`Perfetto::flush`]); boot and the rest as boot time
/// (unspecified), which Perfetto takes as they are.
fn clock_code(clock: &str) -> u64 {
    match clock {
        "local" => 3,
        "global" => 2,
        "mono_raw" => 4,
        _ => 0,
    }
}

/// A comm as the bytes it stands for (Cmdlines keeps put_all's escapes).
fn comm_field(b: &mut Buf, field: u32, comm: &str) {
    let mut raw = Vec::new();
    super::jsonl::raw_bytes(&mut raw, comm);
    text_field(b, field, &raw);
}

impl Export for Perfetto {
    fn begin(&mut self, out: &mut Buf, m: &Meta) {
        self.clock = clock_code(m.clock);
        // Events by id: the dedicated ones and ftrace's own special ones.
        for e in m.events {
            let plan = match MESSAGES.iter().find(|r| r.0 == e.system && r.1 == e.name) {
                Some(&(_, _, msg, spec)) => {
                    let mut fs = Vec::new();
                    for (name, no, kind) in parse_spec(spec) {
                        if let Some(i) = e.field_index(name) {
                            fs.push((no, i, kind, e.fields.get(i).and_then(Scalar::at)));
                        }
                    }
                    Plan::Message(msg, fs)
                }
                None if e.system == "ftrace" && e.name == "function" => Plan::Function,
                None if e.system == "ftrace" && e.name == "bprint" => Plan::Bprint,
                None => continue,
            };
            self.set_plan(e.id, plan);
        }

        // SystemInfo, first on the sequence.
        let p = &mut self.pkt;
        let si = begin(p, 45);
        let u = begin(p, 1);
        for (no, s) in [(1, m.sysname), (3, m.release), (4, m.machine)] {
            if !s.is_empty() {
                bytes(p, no, s.as_bytes());
            }
        }
        end(p, u);
        if m.page_size > 0 {
            uint(p, 6, m.page_size as u64);
        }
        uint(p, 8, m.ncpus as u64);
        end(p, si);
        sequence(p, CLEARED);
        uint(p, 87, 1);
        self.emit(out);

        // ProcessTree: each saved pid a thread; a tgid known for it makes
        // (or joins) that process.
        let pids = m.pids();
        let mut procs: Vec<i32> = Vec::new();
        for &pid in &pids {
            let t = m.cmd.tgid(pid);
            procs.push(if t > 0 { t } else { pid });
        }
        crate::sort::sort_by(&mut procs, Ord::cmp);
        procs.dedup();
        let p = &mut self.pkt;
        let tree = begin_room(p, 2, 3);
        for &pid in &procs {
            let o = begin(p, 1);
            int(p, 1, pid as i64);
            if let Some(c) = m.cmd.get(pid) {
                comm_field(p, 3, c);
                uint(p, 9, 1);
            }
            end(p, o);
        }
        for &pid in &pids {
            let o = begin(p, 2);
            int(p, 1, pid as i64);
            if let Some(c) = m.cmd.get(pid) {
                comm_field(p, 2, c);
            }
            let t = m.cmd.tgid(pid);
            int(p, 3, if t > 0 { t } else { pid } as i64);
            end(p, o);
        }
        end(p, tree);
        sequence(p, NEEDS_STATE);
        self.emit(out);
    }

    fn record(&mut self, out: &mut Buf, m: &Meta, r: &Row) {
        self.t0.get_or_insert(r.ts);
        let ty = crate::text::kernel::rec_type(r.data, m.endian);
        let cpu = (r.cpu as usize).min(crate::text::kernel::MAX_CPUS);
        // Most records are of a generic event with its plan and bundle
        // made: that path first, apart from the rest's larger frame.
        if let Some(Some(Plan::Generic(..))) = self.plans.get(ty as usize) {
            if self.generic(m, r, ty as usize, cpu) {
                return self.full(out, cpu);
            }
        }
        self.other(out, m, r, ty, cpu);
    }

    fn lost(&mut self, out: &mut Buf, cpu: u32, _ts: u64, _count: Option<u64>) {
        // The loss lies between the events before it and those after: they
        // go in separate bundles, the later one marked.
        let i = (cpu as usize).min(crate::text::kernel::MAX_CPUS);
        let b = self.bundle(cpu);
        if !b.buf.is_empty() || !b.sched.is_empty() {
            self.flush(out, i);
        }
        let b = self.bundle(cpu);
        b.lost = true;
        b.sched.lost();
    }

    fn finish(&mut self, out: &mut Buf, _m: &Meta, stats: &[CpuStat]) {
        for cpu in 0..self.cpus.len() {
            self.flush(out, cpu);
        }
        let p = &mut self.pkt;
        let st = begin(p, 34);
        uint(p, 1, 2); // END_OF_TRACE
        for s in stats {
            let o = begin(p, 2);
            uint(p, 1, s.cpu as u64);
            uint(p, 2, s.entries);
            // The kernel's count, else what the pages said was lost.
            uint(p, 3, if s.overrun > 0 { s.overrun } else { s.lost });
            uint(p, 4, s.commit_overrun);
            uint(p, 5, s.bytes);
            uint(p, 8, s.dropped);
            uint(p, 9, s.read);
            end(p, o);
        }
        end(p, st);
        sequence(p, NEEDS_STATE);
        self.emit(out);
    }
}

/// Record `r` (sched_switch or sched_waking, message `no`, its values
/// `vals` as [`Perfetto::record`] read them) into `sched`'s compact
/// arrays: false when it is to be written as a full event (some field
/// missing, or the compact form would not say all it does).
fn compact_sched(sched: &mut compact::Sched, no: u32, m: &Meta, e: &Event, r: &Row, vals: &[(u32, u64, u8)]) -> bool {
    let num = |pno: u32| vals.iter().find(|v| v.0 == pno && v.2 != b's').map(|v| v.1);
    let text = |pno: u32| match vals.iter().find(|v| v.0 == pno && v.2 == b's') {
        Some(v) => match e.fields.get(v.1 as usize).and_then(|f| super::value(f, r.data, m.endian, m.long_size)) {
            Some(Value::Str(s)) => Some(s),
            _ => None,
        },
        None => None,
    };
    if no == SCHED_SWITCH {
        let (Some(prev_comm), Some(prev_pid), Some(prev_prio), Some(state), Some(next_comm), Some(next_pid), Some(next_prio)) = (text(1), num(2), num(3), num(4), text(5), num(6), num(7)) else { return false };
        let prev = Task { pid: prev_pid, prio: prev_prio, comm: prev_comm };
        let next = Task { pid: next_pid, prio: next_prio, comm: next_comm };
        return sched.switch(r.ts, &prev, state, &next);
    }
    let (Some(comm), Some(pid), Some(prio), Some(target)) = (text(1), num(2), num(3), num(5)) else { return false };
    let flags = r.data.get(2).copied().unwrap_or(0) as u64;
    sched.waking(r.ts, r.pid as u32 as u64, &Task { pid, prio, comm }, target, flags)
}

/// A kernel address as `name+0xoff` (`0x…` when no symbol covers it).
fn sym_text(m: &Meta, addr: u64) -> String {
    let mut s = String::new();
    match m.env.sym(addr) {
        Some(k) if addr == k.addr => s.push_str(k.name),
        Some(k) => {
            let _ = write!(s, "{}+0x{:x}", k.name, addr - k.addr);
        }
        None => {
            let _ = write!(s, "0x{:x}", addr);
        }
    }
    s
}

fn field_u64(e: &Event, name: &str, d: &[u8], m: &Meta) -> u64 {
    e.field(name).and_then(|f| f.int(d, m.endian)).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_table_parses() {
        for &(_, name, no, spec) in MESSAGES {
            let fields: Vec<_> = parse_spec(spec).collect();
            assert_eq!(fields.len(), spec.split(' ').count(), "{name}");
            assert!(no > 0 && fields.iter().all(|f| f.1 > 0 && b"siuka".contains(&f.2)), "{name}");
        }
    }

    enum V<'a> {
        Int(u64),
        Len(&'a [u8]),
    }

    fn varint(b: &mut &[u8]) -> u64 {
        let (mut v, mut s) = (0, 0);
        loop {
            let c = b[0];
            *b = &b[1..];
            v |= ((c & 0x7f) as u64) << s;
            s += 7;
            if c < 0x80 {
                return v;
            }
        }
    }

    /// A message's fields: (number, value).
    fn fields(mut b: &[u8]) -> Vec<(u64, V<'_>)> {
        let mut out = Vec::new();
        while !b.is_empty() {
            let t = varint(&mut b);
            let v = if t & 7 == 0 {
                V::Int(varint(&mut b))
            } else {
                let n = varint(&mut b) as usize;
                let (x, rest) = b.split_at(n);
                b = rest;
                V::Len(x)
            };
            out.push((t >> 3, v));
        }
        out
    }

    /// An event of numbers written in one run is the bytes the general
    /// path writes; a record cut short of them is left to that path.
    #[test]
    fn numbers_in_one_run() {
        super::super::testing::with_row(|m, _| {
            let (e, recs) = super::super::testing::numbers();
            let Plan::Generic(g, _) = GenericPlan::new(&e) else { panic!("not generic") };
            for d in &recs {
                for ts in [Some(12u64), Some(u64::MAX), None] {
                    let (mut a, mut b) = (Buf::new(), Buf::new());
                    assert!(g.put_scalars(&mut a, ts, 5, 1, d, m.endian));
                    let ev = ts.map(|ts| {
                        let ev = begin_room(&mut b, 2, 2);
                        uint(&mut b, 1, ts);
                        ev
                    });
                    uint(&mut b, 2, 5);
                    uint(&mut b, 5, 1);
                    let o = begin_room(&mut b, GENERIC, 2);
                    g.write(&mut b, m, &e, d);
                    end(&mut b, o);
                    if let Some(ev) = ev {
                        end(&mut b, ev);
                    }
                    assert_eq!(a.as_slice(), b.as_slice());
                }
                assert!(!g.put_scalars(&mut Buf::new(), None, 5, 1, &d[..d.len() - 1], m.endian));
            }
        });
    }

    /// A loss splits the CPU's bundle: the one after it says lost_events.
    #[test]
    fn lost_events_mark_the_next_bundle() {
        super::super::testing::with_row(|m, r| {
            let mut p = Perfetto::new();
            let mut out = Buf::new();
            p.begin(&mut out, m);
            p.record(&mut out, m, r);
            p.lost(&mut out, 0, 13, None);
            p.record(&mut out, m, r);
            p.finish(&mut out, m, &[CpuStat::default()]);
            let mut kinds = Vec::new();
            for (no, v) in fields(out.as_slice()) {
                let (1, V::Len(packet)) = (no, v) else { panic!("not a Trace.packet") };
                for (no, v) in fields(packet) {
                    match (no, v) {
                        (1, V::Len(bundle)) => {
                            let f = fields(bundle);
                            let events = f.iter().filter(|x| x.0 == 2).count();
                            let lost = f.iter().any(|x| matches!(x, (3, V::Int(1))));
                            kinds.push(if lost { "lost bundle" } else { "bundle" });
                            assert_eq!(events, 1);
                        }
                        (45, _) => kinds.push("system_info"),
                        (2, _) => kinds.push("process_tree"),
                        (34, _) => kinds.push("ftrace_stats"),
                        _ => {}
                    }
                }
            }
            assert_eq!(kinds, ["system_info", "process_tree", "bundle", "lost bundle", "ftrace_stats"]);
        });
    }
}
