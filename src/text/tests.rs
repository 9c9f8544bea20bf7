//! Hand-built records through the kernel printer: formats written as the
//! kernel's format files give them, records laid out by those formats.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::{self, Write};

use super::kernel::{Classes, HeaderInfo, Kernel};
use super::{Cmdlines, Env, Opts, Rec, Rendered, Sym};
use crate::format::{Event, Field, FieldKind};

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

fn f(name: &str, ctype: &str, offset: usize, size: usize, signed: bool) -> Field {
    Field::new(name, ctype, offset, size, signed, FieldKind::Scalar)
}

fn common() -> Vec<Field> {
    alloc::vec![
        f("common_type", "unsigned short", 0, 2, false),
        f("common_flags", "unsigned char", 2, 1, false),
        f("common_preempt_count", "unsigned char", 3, 1, false),
        f("common_pid", "int", 4, 4, true),
    ]
}

fn ev(id: u16, system: &str, name: &str, fields: &[Field]) -> Event {
    let mut all = common();
    all.extend_from_slice(fields);
    Event::new(id, system, name, all, "")
}

/// funcgraph_entry / funcgraph_exit as 6.5+ kernels with
/// CONFIG_FUNCTION_GRAPH_RETVAL describe them.
fn graph_events() -> Vec<Event> {
    alloc::vec![
        ev(11, "ftrace", "funcgraph_entry", &[f("func", "unsigned long", 8, 8, false), f("depth", "int", 16, 4, true)]),
        ev(
            10,
            "ftrace",
            "funcgraph_exit",
            &[
                f("func", "unsigned long", 8, 8, false),
                f("retval", "unsigned long", 16, 8, false),
                f("depth", "int", 24, 4, true),
                f("overrun", "unsigned int", 28, 4, false),
                f("calltime", "unsigned long long", 32, 8, false),
                f("rettime", "unsigned long long", 40, 8, false),
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
    k.header(&mut h, &HeaderInfo { tracer: "function_graph", entries: 0, written: 0, cpus: 2 }).unwrap();
    assert_eq!(
        h,
        "# tracer: function_graph\n#\n# CPU  DURATION                  FUNCTION CALLS\n# |     |   |                     |   |   |   |\n"
    );
}

#[test]
fn context_columns_and_header() {
    let env = TestEnv { syms: alloc::vec![(0xffff_0000, 0x40, "tracing_mark_write")] };
    let evs = alloc::vec![
        ev(5, "ftrace", "print", &[f("ip", "unsigned long", 8, 8, false), f("buf", "char[]", 16, 0, false)]),
        ev(300, "sched", "sched_foo", &[f("x", "int", 8, 4, true)]),
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
    k.header(&mut h, &HeaderInfo { tracer: "nop", entries: 4303, written: 4303, cpus: 2 }).unwrap();
    assert!(h.starts_with("# tracer: nop\n#\n# entries-in-buffer/entries-written: 4303/4303   #P:2\n#\n"));
    assert!(h.ends_with("#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n#              | |         |   |||||     |         |\n"));
}
