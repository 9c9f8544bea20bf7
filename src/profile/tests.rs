//! Profiles of hand-built recordings (written with the trace.dat writer),
//! where every duration, count and spread is known.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use super::*;
use crate::decode::{file_input, DecodeOptions};
use crate::tracedat::{write, TraceDat};

const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
const HEADER_EVENT: &str = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";

/// A format file: the common fields, then `fields` (C declaration, offset, size, signed).
fn format(name: &str, id: u16, fields: &[(&str, usize, usize, bool)]) -> Vec<u8> {
    let mut t = format!("name: {name}\nID: {id}\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n");
    for (decl, off, size, signed) in fields {
        t.push_str(&format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n", *signed as u8));
    }
    t.push_str("\nprint fmt: \"x\"\n");
    t.into_bytes()
}

const ENTRY: u16 = 11;
const EXIT: u16 = 10;
const OPEN_IN: u16 = 600;
const OPEN_OUT: u16 = 601;
const SWITCH: u16 = 300;
const WAKEUP: u16 = 301;
const HARD_IN: u16 = 400;
const HARD_OUT: u16 = 401;
const SOFT_IN: u16 = 402;
const SOFT_OUT: u16 = 403;

const OUTER: u64 = 0xffff_ffff_8100_0000;
const INNER: u64 = 0xffff_ffff_8100_0100;

/// One record: its CPU, time, event, pid, and the bytes after the common fields.
struct R {
    cpu: usize,
    ts: u64,
    id: u16,
    pid: i32,
    body: Vec<u8>,
}

fn r(cpu: usize, ts: u64, id: u16, pid: i32, body: Vec<u8>) -> R {
    R { cpu, ts, id, pid, body }
}

fn le(parts: &[(u64, usize)]) -> Vec<u8> {
    let mut b = Vec::new();
    for &(v, n) in parts {
        b.extend_from_slice(&v.to_le_bytes()[..n]);
    }
    b
}

/// A `char[16]` task name, as two 8-byte pieces for [`le`].
fn comm(s: &str) -> [(u64, usize); 2] {
    let mut b = [0u8; 16];
    b[..s.len()].copy_from_slice(s.as_bytes());
    let half = |i: usize| (u64::from_le_bytes(b[i..i + 8].try_into().unwrap()), 8);
    [half(0), half(8)]
}

fn entry(cpu: usize, ts: u64, pid: i32, func: u64, depth: u64) -> R {
    r(cpu, ts, ENTRY, pid, le(&[(func, 8), (depth, 4), (0, 4)]))
}
fn exit(cpu: usize, ts: u64, pid: i32, func: u64, depth: u64, call: u64) -> R {
    r(cpu, ts, EXIT, pid, le(&[(func, 8), (depth, 4), (0, 4), (call, 8), (ts, 8)]))
}
fn switch(cpu: usize, ts: u64, prev: (&str, i32, u64), next: (&str, i32)) -> R {
    r(cpu, ts, SWITCH, prev.1, le(&[comm(prev.0)[0], comm(prev.0)[1], (prev.1 as u64, 4), (120, 4), (prev.2, 8), comm(next.0)[0], comm(next.0)[1], (next.1 as u64, 4), (120, 4)]))
}

/// One CPU's records as ring-buffer pages (one page is enough here).
fn page(recs: &[&R]) -> Vec<u8> {
    let mut p = Vec::new();
    let base = recs.first().map_or(0, |r| r.ts);
    let mut last = base;
    for r in recs {
        let mut d = le(&[(r.id as u64, 2), (0, 2), (r.pid as u32 as u64, 4)]);
        d.extend_from_slice(&r.body);
        while d.len() % 4 != 0 {
            d.push(0);
        }
        assert!(d.len() <= 112);
        let mut delta = r.ts - last;
        if delta >= 1 << 27 {
            // A time extend: the low 27 bits in its header, the rest after.
            p.extend_from_slice(&(30 | ((delta as u32 & ((1 << 27) - 1)) << 5)).to_le_bytes());
            p.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
            delta = 0;
        }
        p.extend_from_slice(&((d.len() as u32 / 4) | ((delta as u32) << 5)).to_le_bytes());
        p.extend_from_slice(&d);
        last = r.ts;
    }
    let mut page = le(&[(base, 8), (p.len() as u64, 8)]);
    page.extend_from_slice(&p);
    page.resize(4096, 0);
    page
}

/// A recording of `recs` (in time order per CPU) on 2 CPUs.
fn recording(recs: &[R]) -> Vec<u8> {
    let data: Vec<Vec<u8>> = (0..2).map(|c| page(&recs.iter().filter(|r| r.cpu == c).collect::<Vec<_>>())).collect();
    let meta = write::Meta {
        version: 6,
        compression: write::Compression::None,
        big_endian: false,
        long_size: 8,
        page_size: 4096,
        header_page: HEADER_PAGE.into(),
        header_event: HEADER_EVENT.into(),
        ftrace_formats: vec![
            format("funcgraph_entry", ENTRY, &[("unsigned long func", 8, 8, false), ("int depth", 16, 4, true)]),
            format("funcgraph_exit", EXIT, &[("unsigned long func", 8, 8, false), ("int depth", 16, 4, true), ("unsigned int overrun", 20, 4, false), ("unsigned long long calltime", 24, 8, false), ("unsigned long long rettime", 32, 8, false)]),
        ],
        systems: vec![
            (String::from("syscalls"), vec![format("sys_enter_openat", OPEN_IN, &[("int __syscall_nr", 8, 4, true)]), format("sys_exit_openat", OPEN_OUT, &[("int __syscall_nr", 8, 4, true), ("long ret", 16, 8, true)])]),
            (
                String::from("sched"),
                vec![
                    format("sched_switch", SWITCH, &[("char prev_comm[16]", 8, 16, false), ("pid_t prev_pid", 24, 4, true), ("int prev_prio", 28, 4, true), ("long prev_state", 32, 8, true), ("char next_comm[16]", 40, 16, false), ("pid_t next_pid", 56, 4, true), ("int next_prio", 60, 4, true)]),
                    format("sched_wakeup", WAKEUP, &[("char comm[16]", 8, 16, false), ("pid_t pid", 24, 4, true), ("int prio", 28, 4, true), ("int target_cpu", 32, 4, true)]),
                ],
            ),
            (
                String::from("irq"),
                vec![
                    format("irq_handler_entry", HARD_IN, &[("int irq", 8, 4, true), ("__data_loc char[] name", 12, 4, true)]),
                    format("irq_handler_exit", HARD_OUT, &[("int irq", 8, 4, true), ("int ret", 12, 4, true)]),
                    format("softirq_entry", SOFT_IN, &[("unsigned int vec", 8, 4, false)]),
                    format("softirq_exit", SOFT_OUT, &[("unsigned int vec", 8, 4, false)]),
                ],
            ),
        ],
        kallsyms: format!("{OUTER:x} T outer\n{INNER:x} T inner\n{:x} T _etext\n", INNER + 0x100).into_bytes(),
        printk_formats: Vec::new(),
        cmdlines: b"5 opener\n7 worker\n8 hog\n9 other\n".to_vec(),
        cpus: 2,
        options: Vec::new(),
        buffers: vec![write::Buffer { name: String::new(), clock: String::from("local"), page_size: 4096, cpu_sizes: data.iter().map(|d| d.len() as u64).collect() }],
    };
    let mut f = Vec::new();
    for s in write::layout(&meta) {
        match s {
            write::Seg::Bytes(b) => f.extend_from_slice(&b),
            write::Seg::Data { cpu, .. } => f.extend_from_slice(&data[cpu]),
        }
    }
    f
}

/// Everything at once, times in ns:
/// - CPU 0, pid 7: outer (1000..2000) calls inner twice (1100..1400,
///   1500..1600): outer 1000 total, 600 self; inner 2 calls, 400, max 300.
/// - pid 5 on CPU 1: openat 10000..10700 fails (-2), 11000..11300 gives 3.
/// - CPU 0 sched: worker (7) woken at 0, runs 100..2400, sleeps; the
///   CPU's last record at 3000: idle 100 + 600, busy 2300.
/// - CPU 1 sched: hog (8) preempted at 9000 by other (9), which sleeps at
///   9500; hog runs again till 12000: hog runs 500 (9500..12000 is 2500),
///   waits 500, one involuntary switch.
/// - irq on CPU 1: eth0 (irq 24) 11400..11450; TIMER 11500..11560.
fn everything() -> Vec<R> {
    let mut name = le(&[(24, 4), ((4 << 16) | 16, 4)]);
    name.extend_from_slice(b"eth0");
    vec![
        r(0, 0, WAKEUP, 0, le(&[comm("worker")[0], comm("worker")[1], (7, 4), (120, 4), (0, 4)])),
        switch(0, 100, ("swapper/0", 0, 0), ("worker", 7)),
        entry(0, 1000, 7, OUTER, 0),
        entry(0, 1100, 7, INNER, 1),
        exit(0, 1400, 7, INNER, 1, 1100),
        entry(0, 1500, 7, INNER, 1),
        exit(0, 1600, 7, INNER, 1, 1500),
        exit(0, 2000, 7, OUTER, 0, 1000),
        switch(0, 2400, ("worker", 7, 1), ("swapper/0", 0)),
        r(0, 3000, WAKEUP, 0, le(&[comm("other")[0], comm("other")[1], (9, 4), (120, 4), (1, 4)])),
        switch(1, 9000, ("hog", 8, 0), ("other", 9)),
        switch(1, 9500, ("other", 9, 1), ("hog", 8)),
        r(1, 10000, OPEN_IN, 5, le(&[(257, 4)])),
        r(1, 10700, OPEN_OUT, 5, le(&[(257, 4), (0, 4), ((-2i64) as u64, 8)])),
        r(1, 11000, OPEN_IN, 5, le(&[(257, 4)])),
        r(1, 11300, OPEN_OUT, 5, le(&[(257, 4), (0, 4), (3, 8)])),
        r(1, 11400, HARD_IN, 0, name),
        r(1, 11450, HARD_OUT, 0, le(&[(24, 4), (1, 4)])),
        r(1, 11500, SOFT_IN, 0, le(&[(1, 4)])),
        r(1, 11560, SOFT_OUT, 0, le(&[(1, 4)])),
        r(1, 12000, SOFT_IN, 0, le(&[(9, 4)])),
    ]
}

struct NoHost;
impl Host for NoHost {
    fn error(&mut self, cpu: u32, msg: &str) {
        panic!("CPU {cpu}: {msg}");
    }
}

fn report(dat: &Vec<u8>, opts: &DecodeOptions, popts: ProfileOptions) -> Report {
    let td = TraceDat::open(dat).unwrap();
    let mut input = file_input(&td, opts, false).unwrap();
    profile(&mut input.rec, &mut input.merge, opts, popts, &mut NoHost).unwrap()
}

fn get(r: &Report, table: &str, key: &str, metric: &str) -> f64 {
    r.table(table).unwrap_or_else(|| panic!("no table {table}")).get(key, metric).unwrap_or_else(|| panic!("no {table}.{key}.{metric}"))
}

#[test]
fn every_part_counts_what_was_recorded() {
    let dat = recording(&everything());
    let r = report(&dat, &DecodeOptions::default(), ProfileOptions { hist: true, per_task: false });
    let f = |k, m| get(&r, "functions", k, m);
    assert_eq!([f("outer", "calls"), f("outer", "total"), f("outer", "self"), f("outer", "avg"), f("outer", "max")], [1.0, 1000.0, 600.0, 1000.0, 1000.0]);
    assert_eq!([f("inner", "calls"), f("inner", "total"), f("inner", "self"), f("inner", "avg"), f("inner", "max")], [2.0, 400.0, 400.0, 200.0, 300.0]);
    let s = |m| get(&r, "syscalls", "openat", m);
    assert_eq!([s("count"), s("errors"), s("total_latency"), s("avg_latency"), s("max_latency")], [2.0, 1.0, 1000.0, 500.0, 700.0]);
    let t = |k, m| get(&r, "sched", k, m);
    assert_eq!([t("worker", "run"), t("worker", "wait"), t("worker", "runs"), t("worker", "voluntary"), t("worker", "involuntary")], [2300.0, 100.0, 1.0, 1.0, 0.0]);
    assert_eq!([t("hog", "run"), t("hog", "wait"), t("hog", "runs"), t("hog", "involuntary")], [2500.0, 500.0, 1.0, 1.0]);
    assert_eq!([t("other", "run"), t("other", "voluntary")], [500.0, 1.0]);
    let c = |k, m| get(&r, "cpus", k, m);
    assert_eq!([c("cpu0", "busy"), c("cpu0", "idle"), c("cpu0", "busy_pct")], [2300.0, 700.0, 2300.0 / 30.0]);
    assert_eq!([c("cpu1", "busy"), c("cpu1", "idle")], [3000.0, 0.0]);
    let i = |k, m| get(&r, "irqs", k, m);
    assert_eq!([i("24:eth0", "count"), i("24:eth0", "total"), i("TIMER", "count"), i("TIMER", "max"), i("RCU", "count"), i("RCU", "total")], [1.0, 50.0, 1.0, 60.0, 1.0, 0.0]);
    assert_eq!(get(&r, "events", "sched:sched_switch", "count"), 4.0);
    // 4 switches in the 12000 ns from the first record to the last.
    assert_eq!(get(&r, "events", "sched:sched_switch", "rate"), 4.0 / 12e-6);
    // --hist: inner's 300 and 100 ns.
    let h = r.table("functions").unwrap().rows.iter().find(|r| r.key == "inner").unwrap().hist.clone().unwrap();
    assert_eq!((h.buckets[7], h.buckets[9]), (1, 1));
    // Ordered by total: outer first.
    assert_eq!(r.table("functions").unwrap().rows[0].key, "outer");
}

#[test]
fn the_filters_apply() {
    let dat = recording(&everything());
    // --cpu 0: no syscalls, only CPU 0's scheduling.
    let opts = DecodeOptions { cpus: Some(vec![(0, 0)]), ..DecodeOptions::default() };
    let r = report(&dat, &opts, ProfileOptions::default());
    assert!(r.table("syscalls").is_none());
    assert!(r.table("cpus").unwrap().get("cpu1", "busy").is_none());
    // --max-depth 1: inner is hidden; outer's self time is then its whole time.
    let opts = DecodeOptions { max_depth: Some(1), ..DecodeOptions::default() };
    let r = report(&dat, &opts, ProfileOptions::default());
    assert!(r.table("functions").unwrap().get("inner", "calls").is_none());
    assert_eq!(get(&r, "functions", "outer", "self"), 1000.0);
    // --pid 5 with syscalls per task.
    let opts = DecodeOptions { pids: Some(vec![(5, 5)]), ..DecodeOptions::default() };
    let r = report(&dat, &opts, ProfileOptions { hist: false, per_task: true });
    assert_eq!(get(&r, "task-syscalls", "opener-5:openat", "count"), 2.0);
    // -e: only the tables of the events shown.
    let opts = DecodeOptions { events: vec![String::from("sys_*")], ..DecodeOptions::default() };
    let r = report(&dat, &opts, ProfileOptions::default());
    let names: Vec<&str> = r.tables.iter().map(|t| t.name).collect();
    assert_eq!(names, ["syscalls", "events"]);
}

#[test]
fn text_and_json_lines() {
    let dat = recording(&everything());
    let r = report(&dat, &DecodeOptions::default(), ProfileOptions { hist: true, per_task: false });
    let mut s = String::new();
    r.print(&mut s).unwrap();
    assert!(s.starts_with("# profile: 21 records over 12.000 us\n"), "{s}");
    assert!(s.contains("\n# functions: function_graph calls, by total time\n#      Calls        Total         Self          Avg          Max   Function\n           1     1.000 us       600 ns     1.000 us     1.000 us   outer\n           2       400 ns       400 ns       200 ns       300 ns   inner\n"), "{s}");
    assert!(s.contains("\n# functions inner\n#   DURATION     |      COUNT | GRAPH"), "{s}");
    #[cfg(feature = "export")]
    {
        let mut b = crate::export::buf::Buf::new();
        r.jsonl(&mut b);
        let j = core::str::from_utf8(b.as_slice()).unwrap();
        assert!(j.starts_with("{\"table\":\"functions\",\"key\":\"outer\",\"metric\":\"calls\",\"value\":1}\n"), "{j}");
        assert!(j.contains("{\"table\":\"cpus\",\"key\":\"cpu0\",\"metric\":\"busy_pct\",\"value\":76.667}\n"), "{j}");
    }
}
