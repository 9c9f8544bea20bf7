//! The kernel's own ftrace record types (system `ftrace`): what the function
//! and function_graph tracers, trace_marker/trace_printk and the stack
//! tracers write into the ring buffer. Their layouts are never assumed: the
//! recording's format files give each field's place, found here by name,
//! once per event. Both printers and the decoder's graph filter classify
//! records through [`Record::of`], so the three agree on what a graph entry
//! is.

use crate::format::{Event, FieldAt};

// The bits of a record's `common_flags` (the kernel's enum trace_flag_type):
// the context a record was written in, which the latency columns show.
/// Interrupts were off.
pub const TRACE_FLAG_IRQS_OFF: u8 = 0x01;
/// 6.13+: a lazy reschedule was pending ...
pub const TRACE_FLAG_NEED_RESCHED_LAZY: u8 = 0x02;
/// ... the same bit before 6.13: the architecture cannot tell whether
/// interrupts were off (libtraceevent prints `X`).
pub const TRACE_FLAG_IRQS_NOSUPPORT: u8 = 0x02;
pub const TRACE_FLAG_NEED_RESCHED: u8 = 0x04;
/// Written in hard interrupt context.
pub const TRACE_FLAG_HARDIRQ: u8 = 0x08;
/// Written in softirq context.
pub const TRACE_FLAG_SOFTIRQ: u8 = 0x10;
pub const TRACE_FLAG_PREEMPT_RESCHED: u8 = 0x20;
/// Written in NMI context.
pub const TRACE_FLAG_NMI: u8 = 0x40;
/// Bottom halves were disabled.
pub const TRACE_FLAG_BH_OFF: u8 = 0x80;

/// The clock in use in a `trace_clock` listing: the kernel lists every
/// clock and brackets the selected one (`[local] global counter ...` →
/// `local`), from tracefs or from a trace.dat option. None when no name is
/// bracketed.
pub fn selected_clock(listing: &str) -> Option<&str> {
    let (_, bracketed) = listing.split_once('[')?;
    let (name, _) = bracketed.split_once(']')?;
    Some(name)
}

/// One ftrace record type, with where the fields its printers read sit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// `function`: the traced function and its caller.
    Function { ip: FieldAt, parent: FieldAt },
    /// `funcgraph_entry`, or (6.13+, funcgraph-retaddr) `fgraph_retaddr_entry`
    /// with the caller's return address.
    GraphEntry { func: FieldAt, depth: FieldAt, retaddr: Option<FieldAt> },
    /// `funcgraph_exit`; `overrun` and `retval` (6.5+ with
    /// CONFIG_FUNCTION_GRAPH_RETVAL) are not in every kernel's format.
    GraphExit { func: FieldAt, depth: FieldAt, overrun: Option<FieldAt>, calltime: FieldAt, rettime: FieldAt, retval: Option<FieldAt> },
    /// `print` (trace_marker, trace_puts of a non-constant string): the text
    /// in `buf`, a flexible array to the record's end.
    Print { ip: FieldAt, buf: FieldAt },
    /// `bprint` (trace_printk): the kernel address of the format and the
    /// packed arguments in `buf`.
    Bprint { ip: FieldAt, fmt: FieldAt, buf: FieldAt },
    /// `bputs`: the kernel address of a constant string.
    Bputs { ip: FieldAt, str: FieldAt },
    /// `kernel_stack`: return addresses from `caller` on.
    KernelStack { caller: FieldAt },
    /// `user_stack`: user-space return addresses from `caller` on.
    UserStack { caller: FieldAt },
    /// `func_repeats`: a function record repeated `count` times; the last
    /// call's time is the record's less the 48-bit delta (top:bottom).
    FuncRepeats { ip: FieldAt, parent: FieldAt, count: FieldAt, top: FieldAt, bottom: FieldAt },
    /// `raw_data` (trace_marker_raw): an id and the bytes in `buf`.
    RawData { id: FieldAt, buf: FieldAt },
}

/// Whether a graph record enters or leaves a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphEdge {
    Entry,
    Exit,
}

impl Record {
    /// The record type of `e`, if it is one of ftrace's own with every field
    /// its printers need; None for every other event (and for an ftrace
    /// event whose format lacks a required field: it prints through its
    /// print fmt instead). One arm per record type: its event name, and the
    /// fields it is made of, `?` marking those it cannot do without.
    pub fn of(e: &Event) -> Option<Record> {
        if e.system != "ftrace" {
            return None;
        }
        let f = |name: &str| e.field_at(name);
        Some(match e.name.as_str() {
            "function" => Record::Function { ip: f("ip")?, parent: f("parent_ip")? },
            "funcgraph_entry" => Record::GraphEntry { func: f("func")?, depth: f("depth")?, retaddr: None },
            "fgraph_retaddr_entry" => Record::GraphEntry { func: f("func")?, depth: f("depth")?, retaddr: f("retaddr") },
            "funcgraph_exit" => Record::GraphExit {
                func: f("func")?,
                depth: f("depth")?,
                overrun: f("overrun"),
                calltime: f("calltime")?,
                rettime: f("rettime")?,
                retval: f("retval"),
            },
            "print" => Record::Print { ip: f("ip")?, buf: f("buf")? },
            "bprint" => Record::Bprint { ip: f("ip")?, fmt: f("fmt")?, buf: f("buf")? },
            "bputs" => Record::Bputs { ip: f("ip")?, str: f("str")? },
            "kernel_stack" => Record::KernelStack { caller: f("caller")? },
            "user_stack" => Record::UserStack { caller: f("caller")? },
            "func_repeats" => Record::FuncRepeats {
                ip: f("ip")?,
                parent: f("parent_ip")?,
                count: f("count")?,
                top: f("top_delta_ts")?,
                bottom: f("bottom_delta_ts")?,
            },
            "raw_data" => Record::RawData { id: f("id")?, buf: f("buf")? },
            _ => return None,
        })
    }

    /// function_graph's view of a record, for filters that follow the call
    /// tree: entry or exit, and where the function address and the depth
    /// are. None for every other record type.
    pub fn graph(&self) -> Option<(GraphEdge, FieldAt, FieldAt)> {
        match *self {
            Record::GraphEntry { func, depth, .. } => Some((GraphEdge::Entry, func, depth)),
            Record::GraphExit { func, depth, .. } => Some((GraphEdge::Exit, func, depth)),
            _ => None,
        }
    }

    /// A function tracer record?
    pub fn is_function(&self) -> bool {
        matches!(self, Record::Function { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(system: &str, name: &str, fields: &[&str]) -> Event {
        let mut t = alloc::format!("name: {}\nID: 7\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n", name);
        for (i, f) in fields.iter().enumerate() {
            t.push_str(&alloc::format!("\tfield:unsigned long {};\toffset:{};\tsize:8;\tsigned:0;\n", f, 8 + 8 * i));
        }
        t.push_str("\nprint fmt: \"x\"\n");
        crate::format::parse_event(system, &t).unwrap()
    }

    #[test]
    fn clock_listings() {
        assert_eq!(selected_clock("[local] global counter\n"), Some("local"));
        assert_eq!(selected_clock("local global [x86-tsc] mono\0"), Some("x86-tsc"));
        assert_eq!(selected_clock("local [mono]\0"), Some("mono"));
        assert_eq!(selected_clock("local global"), None);
        assert_eq!(selected_clock(""), None);
    }

    #[test]
    fn rows_by_name_and_fields() {
        let at = |off: u16| FieldAt { off, size: 8, signed: false };
        let r = Record::of(&event("ftrace", "function", &["ip", "parent_ip"]));
        assert_eq!(r, Some(Record::Function { ip: at(8), parent: at(16) }));
        assert!(r.unwrap().is_function() && r.unwrap().graph().is_none());
        // Only system ftrace, and every required field.
        assert_eq!(Record::of(&event("other", "function", &["ip", "parent_ip"])), None);
        assert_eq!(Record::of(&event("ftrace", "function", &["ip"])), None);
        // Optional fields may be missing (6.8+ has no overrun).
        let x = Record::of(&event("ftrace", "funcgraph_exit", &["func", "depth", "calltime", "rettime"])).unwrap();
        assert_eq!(x, Record::GraphExit { func: at(8), depth: at(16), overrun: None, calltime: at(24), rettime: at(32), retval: None });
        assert_eq!(x.graph(), Some((GraphEdge::Exit, at(8), at(16))));
        let e = Record::of(&event("ftrace", "fgraph_retaddr_entry", &["func", "depth", "retaddr"])).unwrap();
        assert_eq!(e.graph(), Some((GraphEdge::Entry, at(8), at(16))));
        assert!(matches!(e, Record::GraphEntry { retaddr: Some(_), .. }));
        assert_eq!(Record::of(&event("ftrace", "raw_data", &["id", "buf"])), Some(Record::RawData { id: at(8), buf: at(16) }));
    }
}
