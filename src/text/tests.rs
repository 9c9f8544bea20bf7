//! Hand-built records through the kernel printer: formats written as the
//! kernel's format files give them, records laid out by those formats.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::kernel::{Classes, HeaderInfo, Kernel};
use super::{Cmdlines, Env, Opts, Rec, Rendered, Sym};
use crate::format::Event;

struct TestEnv {
    syms: Vec<(u64, u64, &'static str)>,
}

impl Env for TestEnv {
    fn sym(&self, addr: u64) -> Option<Sym<'_>> {
        self.syms
            .iter()
            .find(|s| addr >= s.0 && addr < s.0 + s.1)
            .map(|s| Sym { name: s.2, addr: s.0, size: s.1, module: None })
    }
    fn render(&self, _id: u16, _d: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        out.write_str("body")?;
        Ok(Rendered::Ok)
    }
    fn bprint(&self, _f: u64, _a: &[u8], _o: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        Ok(Rendered::Fallback)
    }
    fn kstr(&self, _a: u64) -> Option<&str> {
        None
    }
}

/// One format-file field line: `decl` is the C declaration (`unsigned long func`).
fn f(decl: &str, offset: usize, size: usize, signed: bool) -> String {
    alloc::format!("\tfield:{};\toffset:{};\tsize:{};\tsigned:{};\n", decl, offset, size, signed as u8)
}

/// An event as its format file gives it, through the real parser.
fn ev(id: u16, system: &str, name: &str, fields: &[String]) -> Event {
    let mut t = alloc::format!("name: {}\nID: {}\nformat:\n", name, id);
    t.push_str(&f("unsigned short common_type", 0, 2, false));
    t.push_str(&f("unsigned char common_flags", 2, 1, false));
    t.push_str(&f("unsigned char common_preempt_count", 3, 1, false));
    t.push_str(&f("int common_pid", 4, 4, true));
    t.push('\n');
    for x in fields {
        t.push_str(x);
    }
    t.push_str("\nprint fmt: \"x\"\n");
    crate::format::parse_event(system, &t).unwrap()
}

/// funcgraph_entry / funcgraph_exit as 6.5+ kernels with
/// CONFIG_FUNCTION_GRAPH_RETVAL describe them.
fn graph_events() -> Vec<Event> {
    alloc::vec![
        ev(11, "ftrace", "funcgraph_entry", &[f("unsigned long func", 8, 8, false), f("int depth", 16, 4, true)]),
        ev(
            10,
            "ftrace",
            "funcgraph_exit",
            &[
                f("unsigned long func", 8, 8, false),
                f("unsigned long retval", 16, 8, false),
                f("int depth", 24, 4, true),
                f("unsigned int overrun", 28, 4, false),
                f("unsigned long long calltime", 32, 8, false),
                f("unsigned long long rettime", 40, 8, false),
            ]
        ),
    ]
}

fn hdr(ty: u16, pid: i32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&ty.to_le_bytes());
    v.push(0);
    v.push(0);
    v.extend_from_slice(&pid.to_le_bytes());
    v
}

fn ent(func: u64, depth: i32) -> Vec<u8> {
    let mut v = hdr(11, 100);
    v.extend_from_slice(&func.to_le_bytes());
    v.extend_from_slice(&depth.to_le_bytes());
    v.extend_from_slice(&[0; 4]);
    v
}

fn ret(func: u64, depth: i32, retval: u64, dur: u64) -> Vec<u8> {
    let mut v = hdr(10, 100);
    v.extend_from_slice(&func.to_le_bytes());
    v.extend_from_slice(&retval.to_le_bytes());
    v.extend_from_slice(&depth.to_le_bytes());
    v.extend_from_slice(&0u32.to_le_bytes());
    v.extend_from_slice(&1000u64.to_le_bytes());
    v.extend_from_slice(&(1000 + dur).to_le_bytes());
    v
}

/// Feed records of one CPU, with the same-CPU lookahead ftcat gives.
fn run(k: &mut Kernel<'_, TestEnv>, recs: &[Vec<u8>]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < recs.len() {
        let r = Rec { cpu: 0, ts: 1_000_000 + i as u64, data: &recs[i] };
        let n = recs.get(i + 1).map(|d| Rec { cpu: 0, ts: 0, data: d });
        let consumed = k.line(&mut out, &r, n.as_ref()).unwrap();
        i += if consumed { 2 } else { 1 };
    }
    out
}

#[test]
fn funcgraph_retval_as_in_the_issue() {
    let env = TestEnv {
        syms: alloc::vec![
            (0x1000, 0x100, "__sys_sendto"),
            (0x2000, 0x100, "inet_sendmsg"),
            (0x3000, 0x100, "inet_send_prepare"),
            (0x4000, 0x100, "lock_sock_nested"),
            (0x5000, 0x100, "_raw_spin_lock_bh"),
        ],
    };
    let evs = graph_events();
    let cls = Classes::new(&evs);
    assert!(cls.graph_has_retval());
    let cmd = Cmdlines::new();
    // 16 CPUs: the CPU column is two wide, as in the issue's example.
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 16);
    k.set_tracer("function_graph");
    let recs = [
        ent(0x1000, 0),
        ent(0x2000, 1),
        ent(0x3000, 2),
        ret(0x3000, 2, 0, 244),
        ent(0x4000, 3),
        ent(0x5000, 4),
        ret(0x5000, 4, (-16i64) as u64, 1500),
        ret(0x4000, 3, 0x8000_0000, 4213),
        ret(0x2000, 1, 7, 60_000),
        ret(0x1000, 0, 7, 194_533),
    ];
    let out = run(&mut k, &recs);
    let want = "  0)               |  __sys_sendto() {
  0)               |    inet_sendmsg() {
  0)   0.244 us    |      inet_send_prepare(); /* = 0x0 */
  0)               |        lock_sock_nested() {
  0)   1.500 us    |          _raw_spin_lock_bh(); /* = -16 */
  0)   4.213 us    |        } /* lock_sock_nested = 0x80000000 */
  0) + 60.000 us   |    } /* inet_sendmsg = 0x7 */
  0) ! 194.533 us  |  } /* __sys_sendto = 0x7 */
";
    assert_eq!(out, want);

    // 6.13+ kernels write the value as `ret=`.
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    k.set_tracer("function_graph");
    k.set_release("6.18.0");
    let out = run(&mut k, &recs);
    assert!(out.contains(" 0)   0.244 us    |      inet_send_prepare(); /* ret=0x0 */\n"), "{out}");
    assert!(out.contains("|          _raw_spin_lock_bh(); /* ret=-16 */\n"), "{out}");
    assert!(out.contains("|  } /* __sys_sendto ret=0x7 */\n"), "{out}");

    // Recorded with funcgraph-retval off: plain braces; with -tail: names.
    let mut o = Opts::default();
    o.set("funcgraph-retval=0").unwrap();
    o.set("funcgraph-tail").unwrap();
    let mut k = Kernel::new(&env, &cmd, &cls, o, 2);
    k.set_tracer("function_graph");
    let out = run(&mut k, &recs);
    assert!(out.contains(" 0)   0.244 us    |      inet_send_prepare();\n"), "{out}");
    assert!(out.contains(" 0) ! 194.533 us  |  } /* __sys_sendto */\n"), "{out}");
    let mut h = String::new();
    k.header(&mut h, &HeaderInfo { tracer: "function_graph", entries: 0, written: 0, cpus: 2, ..Default::default() }).unwrap();
    assert_eq!(
        h,
        "# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n# |     |   |                     |   |   |   |\n"
    );
}

#[test]
fn context_columns_and_header() {
    let env = TestEnv { syms: alloc::vec![(0xffff_0000, 0x40, "tracing_mark_write")] };
    let evs = alloc::vec![
        ev(5, "ftrace", "print", &[f("unsigned long ip", 8, 8, false), f("char buf[]", 16, 0, false)]),
        ev(300, "sched", "sched_foo", &[f("int x", 8, 4, true)]),
    ];
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    let mut d = hdr(5, 143);
    d[3] = 0x01; // preempt count 1
    d.extend_from_slice(&0xffff_0004u64.to_le_bytes());
    d.extend_from_slice(b"marker from x-events\n\0\0\0");
    let mut out = String::new();
    k.line(&mut out, &Rec { cpu: 0, ts: 160_077_545_600, data: &d }, None).unwrap();
    let mut g = hdr(300, 0);
    g[2] = 0x0d; // irqs off, need-resched, hardirq
    g.extend_from_slice(&[0; 4]);
    k.line(&mut out, &Rec { cpu: 1, ts: 160_006_569_900, data: &g }, None).unwrap();
    let mut u = hdr(999, 7);
    u.extend_from_slice(&[0; 4]);
    k.line(&mut out, &Rec { cpu: 12, ts: 5, data: &u }, None).unwrap();
    assert_eq!(
        out,
        "              sh-143     [000] ...1.   160.077546: tracing_mark_write: marker from x-events\n\
         \x20         <idle>-0       [001] dnh..   160.006570: sched_foo: body\n\
         \x20          <...>-7       [012] .....     0.000000: Unknown type 999\n"
    );
    let mut h = String::new();
    k.header(&mut h, &HeaderInfo { tracer: "nop", entries: 4303, written: 4303, cpus: 2, ..Default::default() }).unwrap();
    assert!(h.starts_with("# tracer: nop\n#\n# entries-in-buffer/entries-written: 4303/4303   #P:2\n#\n"));
    assert!(h.ends_with("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n#              | |         |   |||||     |         |\n"));
}

fn u64s(v: &mut Vec<u8>, xs: &[u64]) {
    for x in xs {
        v.extend_from_slice(&x.to_le_bytes());
    }
}

fn ftrace_events() -> Vec<Event> {
    alloc::vec![
        ev(1, "ftrace", "function", &[f("unsigned long ip", 8, 8, false), f("unsigned long parent_ip", 16, 8, false)]),
        ev(4, "ftrace", "kernel_stack", &[f("int size", 8, 4, true), f("unsigned long caller[8]", 16, 64, false)]),
        ev(13, "ftrace", "user_stack", &[f("unsigned int tgid", 8, 4, false), f("unsigned long caller[8]", 16, 64, false)]),
        ev(19, "ftrace", "raw_data", &[f("unsigned int id", 8, 4, false), f("char buf[]", 12, 0, false)]),
        ev(
            20,
            "ftrace",
            "func_repeats",
            &[
                f("unsigned long ip", 8, 8, false),
                f("unsigned long parent_ip", 16, 8, false),
                f("u16 count", 24, 2, false),
                f("u16 top_delta_ts", 26, 2, false),
                f("u32 bottom_delta_ts", 28, 4, false),
            ]
        ),
        ev(
            700,
            "syscalls",
            "sys_enter_openat",
            &[
                f("int __syscall_nr", 8, 4, true),
                f("int dfd", 16, 8, false),
                f("const char * filename", 24, 8, false),
                f("int flags", 32, 8, false),
                f("umode_t mode", 40, 8, false),
            ]
        ),
        ev(701, "syscalls", "sys_exit_openat", &[f("int __syscall_nr", 8, 4, true), f("long ret", 16, 8, true)]),
    ]
}

fn syms() -> TestEnv {
    TestEnv { syms: alloc::vec![(0xffff_1000, 0x80, "vfs_read"), (0xffff_2000, 0x40, "ksys_read"), (0xffff_3000, 0x100, "do_syscall_64")] }
}

fn one(k: &mut Kernel<'_, TestEnv>, d: &[u8], cpu: u32, ts: u64) -> String {
    let mut out = String::new();
    k.line(&mut out, &Rec { cpu, ts, data: d }, None).unwrap();
    out
}

#[test]
fn line_numbers() {
    let mut buf = [0u8; crate::sys::line::LINE_MAX];
    for (v, want) in [(0u64, "0"), (9, "9"), (10, "10"), (99, "99"), (100, "100"), (4_294_967_295, "4294967295"), (4_294_967_296, "4294967296"), (u64::MAX, "18446744073709551615")] {
        let mut l = crate::sys::line::Line::on(&mut buf);
        l.uint(v);
        assert_eq!(l.as_str(), want);
    }
    let mut l = crate::sys::line::Line::on(&mut buf);
    l.int_right(-42, 6);
    l.zeros(7, 3);
    l.hex(0xdead);
    l.int(-9);
    assert_eq!(l.as_str(), "   -42007dead-9");
}

#[test]
fn function_tracer_and_sym_options() {
    let env = syms();
    let evs = ftrace_events();
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let mut d = hdr(1, 143);
    u64s(&mut d, &[0xffff_1004, 0xffff_2010]);
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    assert_eq!(one(&mut k, &d, 1, 147_830_952_000), "              sh-143     [001] .....   147.830952: vfs_read <-ksys_read\n");
    let mut o = Opts::default();
    o.set("sym-offset").unwrap();
    o.set("sym-addr").unwrap();
    let mut k = Kernel::new(&env, &cmd, &cls, o, 2);
    assert!(one(&mut k, &d, 1, 0).ends_with(": vfs_read+0x4/0x80 <00000000ffff1004> <-ksys_read+0x10/0x40 <00000000ffff2010>\n"));
    let mut o = Opts::default();
    o.set("noprint-parent").unwrap();
    o.set("noirq-info").unwrap();
    o.set("record-tgid").unwrap();
    let mut cmd2 = Cmdlines::parse(b"143 sh\n");
    cmd2.add_tgids(b"143 140\n");
    let mut k = Kernel::new(&env, &cmd2, &cls, o, 2);
    assert_eq!(one(&mut k, &d, 0, 1_000_000), "              sh-143     (    140) [000]      0.001000: vfs_read\n");
    // An address no symbol covers.
    let mut u = hdr(1, 143);
    u64s(&mut u, &[0x1234, 0]);
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    assert!(one(&mut k, &u, 0, 0).ends_with(": 0x00001234\n"));
}

#[test]
fn stacks_repeats_raw_data() {
    let env = syms();
    let evs = ftrace_events();
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::new();
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    let mut s = hdr(4, 0);
    s.extend_from_slice(&3i32.to_le_bytes());
    s.extend_from_slice(&[0; 4]);
    u64s(&mut s, &[0xffff_1004, 0xffff_3000, u64::MAX]);
    assert_eq!(
        one(&mut k, &s, 0, 0),
        "          <idle>-0       [000] .....     0.000000: <stack trace>\n => vfs_read\n => do_syscall_64\n"
    );
    let mut us = hdr(13, 0);
    us.extend_from_slice(&7u32.to_le_bytes());
    us.extend_from_slice(&[0; 4]);
    u64s(&mut us, &[0x7f00_1234_5678, 0x5555_0000_1000, 0, 0, 0, 0, 0, 0]);
    assert!(one(&mut k, &us, 0, 0).ends_with(": <user stack trace>\n =>  <00007f0012345678>\n =>  <0000555500001000>\n"));
    let mut rp = hdr(20, 0);
    u64s(&mut rp, &[0xffff_1000, 0xffff_2000]);
    rp.extend_from_slice(&5u16.to_le_bytes());
    rp.extend_from_slice(&0u16.to_le_bytes());
    rp.extend_from_slice(&2_500u32.to_le_bytes());
    assert!(one(&mut k, &rp, 0, 10_000_000).ends_with(": vfs_read <-ksys_read (repeats: 5, last_ts:     0.009998)\n"));
    let mut rd = hdr(19, 0);
    rd.extend_from_slice(&0x2au32.to_le_bytes());
    rd.extend_from_slice(&[1, 2, 0xff, 0]);
    assert!(one(&mut k, &rd, 0, 0).ends_with(": # 2a buf: 01 02 ff 00\n"));
}

#[test]
fn syscalls_by_kernel_version() {
    let env = syms();
    let evs = ftrace_events();
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let mut d = hdr(700, 143);
    d.extend_from_slice(&257i32.to_le_bytes());
    d.extend_from_slice(&[0; 4]);
    u64s(&mut d, &[0xffff_ff9c, 0x2772_c038, 0x241, 0]);
    let mut x = hdr(701, 143);
    x.extend_from_slice(&257i32.to_le_bytes());
    x.extend_from_slice(&[0; 4]);
    u64s(&mut x, &[(-2i64) as u64]);
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    k.set_release("Linux (none) 6.12.117+deb12-amd64 x86_64");
    assert!(one(&mut k, &d, 0, 0).ends_with(": sys_openat(dfd: ffffff9c, filename: 2772c038, flags: 241, mode: 0)\n"));
    assert!(one(&mut k, &x, 0, 0).ends_with(": sys_openat -> 0xfffffffffffffffe\n"));
    k.set_release("6.18.0");
    assert!(one(&mut k, &d, 0, 0).ends_with(": sys_openat(dfd: 0xffffff9c, filename: 0x2772c038, flags: 0x241, mode: 0)\n"));
    let mut o = Opts::default();
    o.set("verbose").unwrap();
    let mut k = Kernel::new(&env, &cmd, &cls, o, 2);
    assert!(one(&mut k, &d, 0, 0).contains(": sys_openat(int dfd: 0xffffff9c, const char * filename: 0x2772c038, "));
}

#[test]
fn flags_columns_lost_and_annotate() {
    let env = syms();
    let evs = ftrace_events();
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::new();
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    let cases: [(u8, u8, &str); 7] = [
        (0x01 | 0x80, 0x00, "D...."),
        (0x80, 0x21, "b..12"),
        (0x04 | 0x20 | 0x08 | 0x10, 0x03, ".NH3."),
        (0x40 | 0x08, 0x00, "..Z.."),
        (0x40, 0x00, "..z.."),
        (0x02 | 0x04, 0x1f, ".b.f1"),
        (0x02 | 0x20, 0x00, ".L..."),
    ];
    for (fl, pc, want) in cases {
        let mut d = hdr(1, 0);
        d[2] = fl;
        d[3] = pc;
        u64s(&mut d, &[0xffff_1000, 0]);
        let line = one(&mut k, &d, 0, 0);
        let cols = &line[31..36];
        let want = if want == ".b.fRc" { ".bsf1" } else { want };
        let want = if want == ".bsf1" { ".b.f1" } else { want };
        assert_eq!(cols, &want[..5], "flags {:#x} pc {:#x}: {}", fl, pc, line);
    }
    let mut out = String::new();
    k.lost(&mut out, 1, Some(532)).unwrap();
    k.lost(&mut out, 0, None).unwrap();
    assert_eq!(out, "CPU:1 [LOST 532 EVENTS]\nCPU:0 [LOST EVENTS]\n");
    // An overrun buffer: the first record of each other CPU is announced.
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    k.annotate = true;
    let mut d = hdr(1, 0);
    u64s(&mut d, &[0xffff_1000, 0]);
    let a = one(&mut k, &d, 1, 0);
    let b = one(&mut k, &d, 0, 0);
    let c = one(&mut k, &d, 0, 0);
    assert!(!a.starts_with("#####"));
    assert!(b.starts_with("##### CPU 0 buffer started ####\n"));
    assert!(!c.starts_with("#####"));
}

#[test]
fn funcgraph_irq_arrows_and_comments() {
    let env = TestEnv { syms: alloc::vec![(0x9100, 0x80, "sysvec_apic_timer_interrupt"), (0x1000, 0x100, "do_work")] };
    let mut evs = graph_events();
    evs.push(ev(5, "ftrace", "print", &[f("unsigned long ip", 8, 8, false), f("char buf[]", 16, 0, false)]));
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::new();
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    k.set_tracer("function_graph");
    k.graph.irq = Some((0x9000, 0xa000));
    let mut p = hdr(5, 100);
    u64s(&mut p, &[0]);
    p.extend_from_slice(b"hello\n\0\0");
    let recs = [ent(0x1000, 0), p, ent(0x9100, 1), ret(0x9100, 1, 0, 1000), ret(0x1000, 0, 0, 5000)];
    let mut o = Opts::default();
    o.set("funcgraph-retval=0").unwrap();
    k.opts = o;
    let out = run(&mut k, &recs);
    assert_eq!(
        out,
        " 0)               |  do_work() {\n\
         \x200)               |  /* hello */\n\
         \x200)   ==========> |\n\
         \x200)   1.000 us    |    sysvec_apic_timer_interrupt();\n\
         \x200)   <========== |\n\
         \x200)   5.000 us    |  }\n"
    );
}

#[test]
fn funcgraph_retaddr_entries() {
    let env = TestEnv { syms: alloc::vec![(0x1000, 0x100, "do_work"), (0x2000, 0x100, "helper"), (0x5000, 0x80, "caller")] };
    let mut evs = graph_events();
    evs.push(ev(
        12,
        "ftrace",
        "fgraph_retaddr_entry",
        &[f("unsigned long func", 8, 8, false), f("int depth", 16, 4, true), f("unsigned long retaddr", 24, 8, false)],
    ));
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::new();
    let rent = |func: u64, depth: i32, ra: u64| {
        let mut v = hdr(12, 100);
        v.extend_from_slice(&func.to_le_bytes());
        v.extend_from_slice(&depth.to_le_bytes());
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(&ra.to_le_bytes());
        v
    };
    let mut o = Opts::default();
    o.set("funcgraph-retaddr").unwrap();
    o.set("funcgraph-retval").unwrap();
    let mut k = Kernel::new(&env, &cmd, &cls, o, 2);
    k.set_tracer("function_graph");
    k.set_release("6.13.0");
    let recs = [rent(0x1000, 0, 0x5010), rent(0x2000, 1, 0x1020), ret(0x2000, 1, 3, 1000), ret(0x1000, 0, 0, 3000)];
    let out = run(&mut k, &recs);
    assert_eq!(
        out,
        " 0)               |  do_work() { /* <-caller+0x10/0x80 */\n\
         \x200)   1.000 us    |    helper(); /* <-do_work+0x20/0x100 ret=0x3 */\n\
         \x200)   3.000 us    |  } /* do_work ret=0x0 */\n"
    );
}

/// latency-format, hex and bin for the function tracer's records (refused
/// on the live test machine), expectations worked out by hand from
/// trace_output.c (lat_print_generic, lat_print_timestamp, trace_fn_hex,
/// trace_fn_bin) and trace.c (print_trace_header, print_hex_fmt,
/// print_bin_fmt).
#[test]
fn latency_hex_bin_by_the_source() {
    let env = TestEnv { syms: alloc::vec![(0x1000, 0x100, "foo"), (0x2000, 0x100, "bar")] };
    let mut evs = ftrace_events();
    evs.push(ev(300, "sched", "sched_foo", &[f("int x", 8, 4, true)]));
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let mut a = hdr(1, 143);
    a[2] = 0x01; // irqs off
    a[3] = 0x01; // preempt count 1
    u64s(&mut a, &[0x1010, 0x2020]);
    let mut b = hdr(1, 0);
    u64s(&mut b, &[0x1000, 0]);
    let mut c = hdr(300, 143);
    c.extend_from_slice(&[0; 4]);
    let mut unk = hdr(999, 143);
    unk.extend_from_slice(&[0; 4]);
    let opts = |names: &[&str]| {
        let mut o = Opts::default();
        for n in names {
            o.set(n).unwrap();
        }
        o
    };
    // Two records, a lost-events report between them, the end.
    let two = |k: &mut Kernel<'_, TestEnv>, ta: u64, tb: u64| {
        let mut out = String::new();
        k.line(&mut out, &Rec { cpu: 1, ts: ta, data: &a }, None).unwrap();
        k.lost(&mut out, 0, Some(3)).unwrap();
        k.line(&mut out, &Rec { cpu: 0, ts: tb, data: &b }, None).unwrap();
        k.finish(&mut out).unwrap();
        out
    };

    // A counter clock: " %4lld: " without a delay mark.
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["latency-format"]), 2);
    k.set_clock("counter");
    assert_eq!(
        two(&mut k, 1000, 123_456),
        "      sh-143       1d..1. 1000: foo <-bar\nCPU:0 [LOST 3 EVENTS]\n  <idle>-0         0..... 123456: foo\n"
    );
    // Nanoseconds: microseconds and the mark of the delay to the next
    // record (150 us: '!'); the last record has none.
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["latency-format"]), 2);
    assert_eq!(
        two(&mut k, 1_000_000, 1_150_000),
        "      sh-143       1d..1. 1000us!: foo <-bar\nCPU:0 [LOST 3 EVENTS]\n  <idle>-0         0..... 1150us : foo\n"
    );
    // verbose: raw flags, preempt depth, entry index, ms.
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["latency-format", "verbose"]), 2);
    assert_eq!(
        two(&mut k, 1_000_000, 1_150_000),
        "              sh     143   1 1 00000001 00000000 [000003e8] 1.000ms (+0.150ms): foo <-bar\nCPU:0 [LOST 3 EVENTS]\n          <idle>       0   0 0 00000000 00000001 [0000047e] 1.150ms (+0.000ms): foo\n"
    );
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["latency-format", "verbose"]), 2);
    k.set_clock("counter");
    assert!(two(&mut k, 1000, 1200).starts_with("              sh     143   1 1 00000001 00000000 [00000000000003e8] 1000 (+200): foo <-bar\n"));

    // The header: print_trace_header() and the legend; nothing more for
    // an empty buffer; verbose without the legend.
    let mut h = String::new();
    let info = HeaderInfo { tracer: "nop", entries: 2, written: 5, cpus: 2, release: "Linux box 6.12.1-foo x86_64", model: "" };
    k.header(&mut h, &info).unwrap();
    assert_eq!(h, "# tracer: nop\n#\n# nop latency trace v1.1.5 on 6.12.1-foo\n# --------------------------------------------------------------------\n# latency: 0 us, #2/5, CPU#0 | (M:unknown VP:0, KP:0, SP:0 HP:0 #P:2)\n#    -----------------\n#    | task: -0 (uid:0 nice:0 policy:0 rt_prio:0)\n#    -----------------\n#\n");
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["latency-format"]), 2);
    let mut h = String::new();
    k.header(&mut h, &HeaderInfo { model: "PREEMPT(full)", ..info }).unwrap();
    assert!(h.contains("(M:PREEMPT(full) VP:0") && h.ends_with("#     \\   /        ||||||  \\    |    /       \n"), "{h}");
    let mut h = String::new();
    k.header(&mut h, &HeaderInfo { entries: 0, ..info }).unwrap();
    assert_eq!(h, "# tracer: nop\n#\n");
    // function_graph: print_lat_header() past the CPU column.
    k.set_tracer("function_graph");
    let mut h = String::new();
    k.header(&mut h, &HeaderInfo { tracer: "function_graph", ..info }).unwrap();
    assert!(h.contains("#\n#      _-----=> irqs-off        \n#     / _----=> need-resched    \n#    | / _---=> hardirq/softirq \n#    || / _--=> preempt-depth   \n#    ||| /                      \n# CPU||||     DURATION                  FUNCTION CALLS\n# |  ||||      |   |                     |   |   |   |\n"), "{h}");
    assert_eq!(super::kernel::lat_model("# latency: 0 us, #96/96, CPU#0 | (M:PREEMPT(none) VP:0, KP:0"), "PREEMPT(none)");
    assert_eq!(super::kernel::lat_model("# latency: 0 us"), "unknown");

    // hex: pid, CPU, ts as hex fields, the function's ip and parent, a
    // newline; other events trace_nop_print(); unknown types nothing.
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["hex", "latency-format"]), 2);
    let mut out = String::new();
    for d in [&a, &c, &unk] {
        k.line(&mut out, &Rec { cpu: 1, ts: 1_000_000, data: d }, None).unwrap();
    }
    assert_eq!(
        out,
        "0000008f 00000001 00000000000f4240 0000000000001010 0000000000002020 \n\
         0000008f 00000001 00000000000f4240 type: 300\n\n\
         0000008f 00000001 00000000000f4240 \n"
    );
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["hex", "nocontext-info"]), 2);
    let mut out = String::new();
    k.line(&mut out, &Rec { cpu: 1, ts: 1_000_000, data: &a }, None).unwrap();
    assert_eq!(out, "0000000000001010 0000000000002020 \n");

    // bin: the same fields as memory bytes, nothing after them.
    let mut k = Kernel::new(&env, &cmd, &cls, opts(&["bin", "hex"]), 2);
    let mut out = String::new();
    for d in [&a, &c, &unk] {
        k.line(&mut out, &Rec { cpu: 1, ts: 1_000_000, data: d }, None).unwrap();
    }
    let bytes: Vec<u8> = out
        .chars()
        .flat_map(|ch| match super::raw_byte(ch) {
            Some(x) => alloc::vec![x],
            None => alloc::string::ToString::to_string(&ch).into_bytes(),
        })
        .collect();
    let ctx: &[u8] = b"\x8f\0\0\0\x01\0\0\0\x40\x42\x0f\0\0\0\0\0";
    let mut want = Vec::new();
    want.extend_from_slice(ctx);
    want.extend_from_slice(b"\x10\x10\0\0\0\0\0\0\x20\x20\0\0\0\0\0\0");
    want.extend_from_slice(ctx);
    want.extend_from_slice(b"type: 300\n");
    want.extend_from_slice(ctx);
    assert_eq!(bytes, want);
}

/// Text that itself contains chars of the raw-byte escape range (binary
/// output does, by chance) must come back as the same bytes.
#[test]
fn escape_range_chars_round_trip() {
    let src: &[u8] = b"a\xef\x9e\xae b \xff \xef\x9f\xbf";
    let mut s = String::new();
    super::put_all(&mut s, src).unwrap();
    let back: Vec<u8> = s
        .chars()
        .flat_map(|ch| match super::raw_byte(ch) {
            Some(x) => alloc::vec![x],
            None => alloc::string::ToString::to_string(&ch).into_bytes(),
        })
        .collect();
    assert_eq!(back, src);
}

/// An Env whose kernel strings resolve (bputs' `str` points into the
/// kernel image) and whose bprint prints its arguments' length.
struct StrEnv;

impl Env for StrEnv {
    fn sym(&self, addr: u64) -> Option<Sym<'_>> {
        (addr >= 0xffff_5000 && addr < 0xffff_5100).then_some(Sym { name: "my_init", addr: 0xffff_5000, size: 0x100, module: None })
    }
    fn render(&self, _id: u16, _d: &[u8], out: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        out.write_str("body")?;
        Ok(Rendered::Ok)
    }
    fn bprint(&self, f: u64, a: &[u8], o: &mut dyn Write) -> Result<Rendered, fmt::Error> {
        write!(o, "fmt@{:x} {} arg bytes\n", f, a.len())?;
        Ok(Rendered::Ok)
    }
    fn kstr(&self, a: u64) -> Option<&str> {
        (a == 0xffff_9000).then_some("hello from trace_puts\n")
    }
}

/// Issue #3 §4 "print, bprint (via printk_formats), bputs": the bputs and
/// bprint printers (`ip: text`, the text as given, no added newline), and
/// §4 "timestamps as the recorded trace clock prints them": counter-style
/// clocks print the raw count, ` %12llu`.
#[test]
fn audit_bputs_bprint_and_counter_clocks() {
    let evs = alloc::vec![
        ev(6, "ftrace", "bputs", &[f("unsigned long ip", 8, 8, false), f("const char * str", 16, 8, false)]),
        ev(7, "ftrace", "bprint", &[f("unsigned long ip", 8, 8, false), f("const char * fmt", 16, 8, false), f("u32 buf[]", 24, 0, false)]),
        ev(300, "sched", "sched_foo", &[f("int x", 8, 4, true)]),
    ];
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let env = StrEnv;
    let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 2);
    let line = |k: &mut Kernel<'_, StrEnv>, d: &[u8], ts: u64| {
        let mut out = String::new();
        k.line(&mut out, &Rec { cpu: 1, ts, data: d }, None).unwrap();
        out
    };
    let mut b = hdr(6, 143);
    u64s(&mut b, &[0xffff_5010, 0xffff_9000]);
    assert_eq!(line(&mut k, &b, 2_000_000_500), "              sh-143     [001] .....     2.000001: my_init: hello from trace_puts\n");
    let mut p = hdr(7, 143);
    u64s(&mut p, &[0xffff_5020, 0xffff_a000]);
    p.extend_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    assert_eq!(line(&mut k, &p, 0), "              sh-143     [001] .....     0.000000: my_init: fmt@ffffa000 8 arg bytes\n");
    // An unknown string address is not guessed: the fields are printed.
    let mut bad = hdr(6, 143);
    u64s(&mut bad, &[0xffff_5010, 0xdead]);
    assert!(!line(&mut k, &bad, 0).contains("hello"));
    // Counter clocks: the raw count in a 12-wide column, no `secs.usecs`.
    let mut g = hdr(300, 143);
    g.extend_from_slice(&[0; 4]);
    for clock in ["counter", "x86-tsc", "uptime"] {
        k.set_clock(clock);
        assert_eq!(line(&mut k, &g, 123_456_789), "              sh-143     [001] .....    123456789: sched_foo: body\n", "{clock}");
    }
    for clock in ["local", "global", "mono", "boot"] {
        k.set_clock(clock);
        assert_eq!(line(&mut k, &g, 123_456_789), "              sh-143     [001] .....     0.123457: sched_foo: body\n", "{clock}");
    }
}

/// Issue #3 §4: every duration mark of the function_graph printer at its
/// boundary (trace_find_mark(): strictly greater than the threshold).
#[test]
fn audit_every_funcgraph_duration_mark() {
    use super::funcgraph::mark;
    for (at, below, above) in [
        (10_000u64, ' ', '+'),
        (100_000, '+', '!'),
        (1_000_000, '!', '#'),
        (10_000_000, '#', '*'),
        (100_000_000, '*', '@'),
        (1_000_000_000, '@', '$'),
    ] {
        assert_eq!((mark(at), mark(at + 1)), (below, above), "around {at} ns");
    }
    assert_eq!(mark(0), ' ');
    assert_eq!(mark(u64::MAX), '$');
}

/// The `fields` option prints through the Env's fields printer
/// (printfmt's print_fields()): a 1-byte field as the kernel shows it, the
/// byte itself in quotes when isprint() says so, then its value; ftrace's
/// own types and field-less events as the kernel. A Latin-1 byte such as
/// 0xff is isprint() too: it goes out as itself (a raw-byte escape here).
#[test]
fn fields_through_the_env_latin1_bytes() {
    let evs = alloc::vec![
        ev(900, "fib6", "lookup", &[f("u8 a", 8, 1, false), f("u8 b", 9, 1, false), f("u8 c", 10, 1, false)]),
        ev(901, "x", "bare", &[]),
        ev(1, "ftrace", "function", &[f("unsigned long ip", 8, 8, false), f("unsigned long parent_ip", 16, 8, false)]),
    ];
    let cls = Classes::new(&evs);
    let env = super::env::Decoder::new(evs, Default::default(), Default::default(), crate::cursor::Endian::Little, 8);
    let cmd = Cmdlines::parse(b"143 sh\n");
    let mut o = Opts::default();
    o.set("fields").unwrap();
    let mut k = Kernel::new(&env, &cmd, &cls, o, 2);
    let line = |k: &mut Kernel<'_, super::env::Decoder>, d: &[u8]| {
        let mut out = String::new();
        k.line(&mut out, &Rec { cpu: 0, ts: 0, data: d }, None).unwrap();
        out
    };
    let mut d = hdr(900, 143);
    d.extend_from_slice(&[b'A', 0x85, 0xe9, 0]);
    let got = line(&mut k, &d);
    let got: String = got.chars().map(|c| crate::text::raw_byte(c).map_or(c, char::from)).collect();
    assert!(got.ends_with("] .....     0.000000: lookup: a='A'(65) b=(133) c='\u{e9}'(233)\n"), "{:?}", got);
    let got = line(&mut k, &hdr(901, 143));
    assert!(got.ends_with("] .....     0.000000: bare:No fields found\n"), "{:?}", got);
    let mut fun = hdr(1, 143);
    u64s(&mut fun, &[0x1000, 0x2000]);
    assert!(line(&mut k, &fun).ends_with("] .....     0.000000: UNKNOWN TYPE 1\n"));
}

/// A corrupt depth (here i32::MAX) indents no further than the kernel's
/// trace_seq holds: the record's text is cut there and ends with
/// `[LINE TOO BIG]`; the records around it print as usual.
#[test]
fn funcgraph_depth_bounded_as_the_kernel() {
    let env = TestEnv { syms: alloc::vec![(0x1000, 0x100, "f"), (0x2000, 0x100, "g")] };
    let evs = graph_events();
    let cls = Classes::new(&evs);
    let cmd = Cmdlines::new();
    for (rel, size) in [("6.12.0", super::seq_size(6012, 8)), ("6.1.0", 4096), ("", 8156)] {
        let mut k = Kernel::new(&env, &cmd, &cls, Opts::default(), 1);
        k.set_tracer("function_graph");
        k.set_release(rel);
        let out = run(&mut k, &[ent(0x1000, 0), ent(0x2000, i32::MAX), ent(0x2000, 1)]);
        let lines: Vec<&str> = out.split_inclusive('\n').collect();
        assert_eq!(lines.len(), 3, "{rel}");
        assert_eq!(lines[0], " 0)               |  f() {\n");
        assert_eq!(lines[1].len(), size - super::LINE_TOO_BIG.len() + super::LINE_TOO_BIG.len(), "{rel}");
        assert!(lines[1].starts_with(" 0)               |       ") && lines[1].ends_with("   [LINE TOO BIG]\n"), "{rel}");
        assert_eq!(lines[2], " 0)               |    g() {\n");
    }
    assert_eq!(super::seq_size(6012, 8), 8156);
    assert_eq!(super::seq_size(6012, 4), 8172);
}

/// The trace_seq writer: whole writes or none, spaces up to the end, and
/// nothing after the first write that did not fit.
#[test]
fn seq_keeps_whole_writes() {
    let mut s = String::new();
    let mut q = super::Seq::new(&mut s, 20 + super::LINE_TOO_BIG.len());
    q.write_str("0123456789").unwrap();
    q.write_str("abcdefghijk").unwrap();
    q.write_str("xy").unwrap();
    assert!(q.overflowed());
    q.finish().unwrap();
    assert_eq!(s, "0123456789[LINE TOO BIG]\n");
    let mut s = String::new();
    let mut q = super::Seq::new(&mut s, 20 + super::LINE_TOO_BIG.len());
    q.write_str("0123456789").unwrap();
    super::pad(&mut q, usize::MAX).unwrap();
    q.write_str("z").unwrap();
    q.finish().unwrap();
    assert_eq!(s, "0123456789          [LINE TOO BIG]\n");
    // Exactly full is not an overflow.
    let mut s = String::new();
    let mut q = super::Seq::new(&mut s, 4 + super::LINE_TOO_BIG.len());
    q.write_str("abcd").unwrap();
    assert!(!q.overflowed());
    q.finish().unwrap();
    assert_eq!(s, "abcd");
}
