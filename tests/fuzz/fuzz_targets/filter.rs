//! ftcat's `-F 'SYSTEM/EVENT: EXPR'` (trace-cmd's event filters,
//! src/decode/event_filter.rs, graph_filter.rs): the expression parser, then the test on
//! a record (numbers, strings, globs, the small regex matcher, COMM); and
//! `--max-depth`/`--graph` over the same record as a graph event.
//!
//! Input: the -F argument, a NUL, the record. The record's first byte
//! picks which of a few real events it is (its common_type is set to it).
#![no_main]

use ftbox::cursor::Endian;
use ftbox::format::{self, Event};
use ftbox::ksyms::{Ksyms, Printk};
use ftbox::text::env::Decoder;
use ftbox::decode::event_filter::EventFilter;
use ftbox::decode::graph_filter::{GraphFilter, Verdict};
use ftbox_fuzz::{split, text};
use libfuzzer_sys::fuzz_target;

/// Events with char arrays, __data_loc strings, longs, and the ftrace
/// records -F and the graph filter treat apart.
const FORMATS: &[(&str, &str)] = &[
    ("sched", include_str!("../seeds/format/sched-sched_switch")),
    ("sched", include_str!("../seeds/format/sched-sched_process_exec")),
    ("sched", include_str!("../seeds/format/sched-sched_wakeup")),
    ("syscalls", include_str!("../seeds/format/syscalls-sys_enter_openat")),
    ("ftrace", include_str!("../seeds/format/ftrace-kernel_stack")),
    ("ftrace", include_str!("../seeds/format/ftrace-funcgraph_entry")),
    ("ftrace", include_str!("../seeds/format/ftrace-funcgraph_exit")),
    ("ftrace", include_str!("../seeds/format/ftrace-print")),
];

fn events() -> Vec<Event> {
    FORMATS.iter().map(|(s, t)| format::parse_event(s, t).expect("seed format parses")).collect()
}

fuzz_target!(|data: &[u8]| {
    let (spec, rec) = split(data, 0);
    let evs = events();
    let mut rec = rec.to_vec();
    if let Some(&b) = rec.first() {
        let id = evs[b as usize % evs.len()].id.to_le_bytes();
        rec.resize(rec.len().max(2), 0);
        rec[..2].copy_from_slice(&id);
    }
    let mut f = EventFilter::default();
    if f.add(&text(spec), &evs).is_ok() {
        let mut comm = |t: &dyn Fn(&[u8]) -> bool| t(b"kworker/0:1");
        for cpu in [0, 1, 0] {
            f.pass(cpu, &rec, &mut comm, Endian::Little);
        }
    }
    let dec = Decoder::new(evs.clone(), Ksyms::parse(b"ffffffff81000000 T do_one\nffffffff81001000 T other\n"), Printk::default(), Endian::Little, 8);
    let mut g = GraphFilter::new(&dec, &evs, Endian::Little);
    g.max_depth = Some(3);
    g.graph = Some("do_one".into());
    for _ in 0..2 {
        if let Verdict::Rebase(b) = g.check(&rec) {
            g.rebase(&mut rec, b);
        }
    }
});
