//! Hand-built formats and records → the text the kernel prints.

use super::*;
use crate::format::parse_event;
use alloc::string::String;
use alloc::vec::Vec;

const COMMON: &str = "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;
";

/// An event with `fields` (decl, size, signed), laid out from offset 8 in order.
fn event(fields: &[(&str, usize, bool)], fmt: &str) -> Event {
    let mut t = String::from("name: t\nID: 1\nformat:\n");
    t.push_str(COMMON);
    t.push('\n');
    let mut off = 8;
    for (decl, size, signed) in fields {
        t.push_str(&alloc::format!("\tfield:{decl};\toffset:{off};\tsize:{size};\tsigned:{};\n", *signed as u8));
        off += size;
    }
    t.push_str("\nprint fmt: ");
    t.push_str(fmt);
    t.push('\n');
    parse_event("test", &t).unwrap()
}

fn env() -> Env<'static> {
    Env::new(Endian::Little, 8)
}

fn run_env(ev: &Event, rec: &[u8], env: &Env) -> Result<String, RenderError> {
    let p = Program::compile(ev).map_err(|e| RenderError { what: e.what })?;
    let mut s = String::new();
    p.render(ev, rec, env, &mut s)?;
    Ok(s)
}

fn run(ev: &Event, rec: &[u8]) -> String {
    run_env(ev, rec, &env()).unwrap()
}

/// A record: 8 header bytes then `payload`.
fn rec(payload: &[u8]) -> Vec<u8> {
    let mut r = alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0];
    r.extend_from_slice(payload);
    r
}

#[test]
fn ints_and_flags() {
    let ev = event(
        &[("int a", 4, true), ("unsigned int b", 4, false), ("long c", 8, true), ("unsigned char d", 1, false)],
        r#""a=%d b=%u c=%ld x=%x X=%#X o=%o %5d|%-5d|%05d %+d % d %hhd %hu %lld %llu %c %%", REC->a, REC->b, REC->c, REC->b, REC->b, REC->b, REC->a, REC->a, REC->a, REC->a, REC->a, REC->a, REC->a, REC->c, REC->c, REC->d"#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&(-5i32).to_le_bytes());
    p.extend_from_slice(&255u32.to_le_bytes());
    p.extend_from_slice(&(-7i64).to_le_bytes());
    p.push(b'Z');
    assert_eq!(
        run(&ev, &rec(&p)),
        "a=-5 b=255 c=-7 x=ff X=0XFF o=377 \
         \x20  -5|-5   |-0005 -5 -5 -5 65531 -7 18446744073709551609 Z %"
    );
}

#[test]
fn star_width_and_precision() {
    let ev = event(&[("char s[8]", 8, false), ("int w", 4, true)], r#""[%*s] [%-*s] [%.*s] [%*d]", REC->w, REC->s, REC->w, REC->s, 2, REC->s, -4, REC->w"#);
    let mut p = b"abc\0\0\0\0\0".to_vec();
    p.extend_from_slice(&6i32.to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "[   abc] [abc   ] [ab] [6   ]");
}

#[test]
fn expressions() {
    let ev = event(
        &[("int a", 4, true), ("unsigned long b", 8, false), ("u32 dev", 4, false)],
        r#""%d %d %d %d %d %lu %d %d %s %d %d %u,%u %d %lu %d", REC->a + 3 * 2, (REC->a - 10) / 3, REC->a % 4, REC->a << 2 | 1, !REC->a, ~REC->b & 0xff, REC->a > 5 && REC->a <= 10, (REC)->a == 7 || 0, REC->a != 7 ? "ne" : "eq", (u8)(REC->a + 250), (s8)200, ((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), -REC->a ^ 1, sizeof(long) + sizeof(u16), 'A' + 1"#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&7i32.to_le_bytes());
    p.extend_from_slice(&0x1234u64.to_le_bytes());
    p.extend_from_slice(&((8u32 << 20) | 3).to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "13 -1 3 29 0 203 1 1 eq 1 -56 8,3 -8 10 66");
}

#[test]
fn print_flags_and_symbolic() {
    let ev = event(
        &[("unsigned long flags", 8, false), ("int sym", 4, true)],
        r#""%s|%s|%s|%s", __print_flags(REC->flags, "|", { 0x01, "A" }, { 0x02, "B" }, { 0x04, "C" }), __print_symbolic(REC->sym, { 0, "zero" }, { 1, "one" }), __print_symbolic(REC->sym + 5, { 0, "zero" }), __print_flags_u64(REC->flags & 0, "|", { 1, "A" })"#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&0x15u64.to_le_bytes());
    p.extend_from_slice(&1i32.to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "A|C|0x10|one|0x6|");
    // Negative values print as unsigned long, like the kernel's helpers.
    p[8..12].copy_from_slice(&(-6i32).to_le_bytes());
    assert!(run(&ev, &rec(&p)).ends_with("|0xfffffffffffffffa|0xffffffffffffffff|"));
}

#[test]
fn sched_switch_like_state() {
    let ev = event(
        &[("long prev_state", 8, true)],
        r#""prev_state=%s%s", (REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1)) ? __print_flags(REC->prev_state & ((((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) - 1), "|", { 0x00000001, "S" }, { 0x00000002, "D" }, { 0x00000004, "T" }, { 0x00000008, "t" }, { 0x00000010, "X" }, { 0x00000020, "Z" }, { 0x00000040, "P" }, { 0x00000080, "I" }) : "R", REC->prev_state & (((0x00000000 | 0x00000001 | 0x00000002 | 0x00000004 | 0x00000008 | 0x00000010 | 0x00000020 | 0x00000040) + 1) << 1) ? "+" : """#,
    );
    let r = |v: i64| run(&ev, &rec(&v.to_le_bytes()));
    assert_eq!(r(0), "prev_state=R");
    assert_eq!(r(1), "prev_state=S");
    assert_eq!(r(2), "prev_state=D");
    assert_eq!(r(0x100), "prev_state=R+");
    assert_eq!(r(0x80), "prev_state=I");
}

#[test]
fn dynamic_strings_and_arrays() {
    let ev = event(
        &[("__data_loc char[] name", 4, false), ("__rel_loc char[] rel", 4, false), ("__data_loc u32[] vals", 4, false)],
        r#""%s %s len=%d %s %s %s %c", __get_str(name), __get_rel_str(rel), __get_dynamic_array_len(vals), __print_array(__get_dynamic_array(vals), __get_dynamic_array_len(vals) / sizeof(u32), sizeof(u32)), __print_hex(__get_dynamic_array(name), 3), __print_hex_str(__get_dynamic_array(name), 3), __get_str(name)[1]"#,
    );
    // payload at 8: name@8 rel@12 vals@16; data from 20.
    let mut p = Vec::new();
    p.extend_from_slice(&((4u32 << 16) | 20).to_le_bytes()); // "abc\0" at 20
    p.extend_from_slice(&((3u32 << 16) | 8).to_le_bytes()); // rel: 16 + 8 = 24 → "xy\0"
    p.extend_from_slice(&((8u32 << 16) | 27).to_le_bytes()); // vals at 27
    p.extend_from_slice(b"abc\0xy\0");
    p.extend_from_slice(&1u32.to_le_bytes());
    p.extend_from_slice(&0xabu32.to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "abc xy len=8 {0x1,0xab} 61 62 63 616263 b");
}

#[test]
fn bitmask_and_cpumask() {
    let ev = event(&[("__data_loc unsigned long[] cpumask", 4, false)], r#""cpumask=%s", __get_cpumask(cpumask)"#);
    let mut p = Vec::new();
    p.extend_from_slice(&((8u32 << 16) | 12).to_le_bytes());
    p.extend_from_slice(&0x5u64.to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "cpumask=00000000,00000005");
}

#[test]
fn pointers_and_symbols() {
    let k = crate::ksyms::Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff81000100 T foo\nffffffff81000180 t bar\nffffffffc0001000 t modfn\t[mymod]\nffffffffc0001100 t modend\t[mymod]\n");
    let mut e = env();
    e.ksyms = Some(&k);
    let ev = event(
        &[("void * p", 8, false), ("unsigned long ip", 8, false), ("unsigned long mip", 8, false)],
        r#""%p %pS %ps %pF %pf %pB %pSR %pS %ps %px %pK %p %20ps|", REC->p, (void *)REC->ip, (void *)REC->ip, REC->ip, REC->ip, REC->ip, REC->ip, REC->mip, REC->mip, REC->p, REC->p, 0, REC->ip"#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&0xffff888100abcdefu64.to_le_bytes());
    p.extend_from_slice(&0xffffffff81000110u64.to_le_bytes());
    p.extend_from_slice(&0xffffffffc0001004u64.to_le_bytes());
    assert_eq!(
        run_env(&ev, &rec(&p), &e).unwrap(),
        "ffff888100abcdef foo+0x10/0x80 foo foo+0x10/0x80 foo foo+0x10/0x80 foo+0x10/0x80 modfn+0x4/0x100 [mymod] modfn [mymod] \
         ffff888100abcdef ffff888100abcdef 0000000000000000                  foo|"
    );
    // No symbol table: what the kernel prints when the lookup finds nothing.
    let s = run(&ev, &rec(&p));
    assert!(s.starts_with("ffff888100abcdef 0xffffffff81000110 0xffffffff81000110 "), "{s}");
    // %pB at a function's start looks up the previous one (a return address).
    let ev2 = event(&[("unsigned long ip", 8, false)], r#""%pB", REC->ip"#);
    assert_eq!(run_env(&ev2, &rec(&0xffffffff81000180u64.to_le_bytes()), &e).unwrap(), "foo+0x80/0x80");
}

#[test]
fn network_and_uuid_and_hex() {
    let ev = event(
        &[("__u8 saddr[4]", 4, false), ("__u8 v6[16]", 16, false), ("__u8 mac[6]", 6, false), ("__u8 uuid[16]", 16, false), ("__u8 sa[28]", 28, false), ("u32 be", 4, false)],
        r#""%pI4 %pi4 %pI6c %pI6 %pi6 %pM %pm %pU %pUl %pISpc %*ph %phC %pI4", REC->saddr, REC->saddr, REC->v6, REC->v6, REC->v6, REC->mac, REC->mac, REC->uuid, REC->uuid, REC->sa, 3, REC->mac, REC->mac, &REC->be"#,
    );
    let mut p = alloc::vec![10, 0, 0, 1];
    let mut v6 = [0u8; 16];
    v6[0] = 0xfe;
    v6[1] = 0x80;
    v6[15] = 0x22;
    p.extend_from_slice(&v6);
    p.extend_from_slice(&[0xaa, 0xbb, 0xcc, 0, 1, 2]);
    p.extend((0u8..16).map(|x| x * 17));
    let mut sa = [0u8; 28];
    sa[0] = 2; // AF_INET, little endian family
    sa[2] = 0x1f;
    sa[3] = 0x90; // port 8080
    sa[4..8].copy_from_slice(&[127, 0, 0, 1]);
    p.extend_from_slice(&sa);
    p.extend_from_slice(&[192, 168, 1, 2]);
    assert_eq!(
        run(&ev, &rec(&p)),
        "10.0.0.1 010.000.000.001 fe80::22 fe80:0000:0000:0000:0000:0000:0000:0022 fe800000000000000000000000000022 \
         aa:bb:cc:00:01:02 aabbcc000102 00112233-4455-6677-8899-aabbccddeeff 33221100-5544-7766-8899-aabbccddeeff \
         127.0.0.1:8080 aa bb cc aa 192.168.1.2"
    );
    // IPv6 sockaddr, bracketed with port.
    let ev6 = event(&[("__u8 sa[28]", 28, false)], r#""%pISpc", REC->sa"#);
    let mut sa = [0u8; 28];
    sa[0] = 10;
    sa[2] = 0;
    sa[3] = 80;
    sa[8 + 15] = 1;
    assert_eq!(run(&ev6, &rec(&sa)), "[::1]:80");
}

#[test]
fn bitmap_list_with_star_width() {
    let ev = event(&[("unsigned long mem_allowed[2]", 16, false)], r#""m=%*pbl", (1 << 7), REC->mem_allowed"#);
    let mut p = 0b1101u64.to_le_bytes().to_vec();
    p.extend_from_slice(&0u64.to_le_bytes());
    assert_eq!(run(&ev, &rec(&p)), "m=0,2-3");
}

#[test]
fn builtin_expect_and_casts() {
    let ev = event(
        &[("unsigned long addr", 8, false)],
        r#""addr=0x%lx err=%ld", __builtin_expect(!!((unsigned long)(void *)(REC->addr) >= (unsigned long)-4095), 0) ? 0 : REC->addr, __builtin_expect(!!((unsigned long)(void *)(REC->addr) >= (unsigned long)-4095), 0) ? REC->addr : 0"#,
    );
    assert_eq!(run(&ev, &rec(&(-12i64).to_le_bytes())), "addr=0x0 err=-12");
    assert_eq!(run(&ev, &rec(&0x7f00u64.to_le_bytes())), "addr=0x7f00 err=0");
}

#[test]
fn jiffies_and_mc_event() {
    let ev = event(&[("unsigned long t", 8, false)], r#""%u %s", jiffies_to_msecs(REC->t), mc_event_error_type(1)"#);
    let mut e = env();
    e.hz = 250;
    assert_eq!(run_env(&ev, &rec(&10u64.to_le_bytes()), &e).unwrap(), "40 Uncorrected");
    e.hz = 300;
    assert_eq!(run_env(&ev, &rec(&1u64.to_le_bytes()), &e).unwrap(), "4 Uncorrected");
    assert!(run_env(&ev, &rec(&1u64.to_le_bytes()), &env()).is_err(), "HZ unknown");
    // trace-cmd's (jbd2 plugin): the jiffies, HZ or not.
    e.tep = true;
    if cfg!(feature = "trace-cmd-style") {
        assert_eq!(run_env(&ev, &rec(&10u64.to_le_bytes()), &e).unwrap(), "10 Uncorrected");
    }
}

/// libtraceevent's reading of fields: unsigned, 64 bits wide, whatever
/// the field's sign (kvm_userspace_exit's `errno` of -4 is not `< 0`;
/// kvm_pvclock_update's `s8 tsc_shift` of -1 prints 255).
#[cfg(feature = "trace-cmd-style")]
#[test]
fn tep_reads_fields_unsigned() {
    let ev = event(
        &[("__u32 reason", 4, false), ("int errno", 4, true), ("s8 tsc_shift", 1, true)],
        r#""reason %s (%d) shift %d", REC->errno < 0 ? (REC->errno == -4 ? "restart" : "error") : __print_symbolic(REC->reason, { 0, "KVM_EXIT_" "UNKNOWN" }), REC->errno < 0 ? -REC->errno : REC->reason, REC->tsc_shift"#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(&(-4i32).to_le_bytes());
    p.push(0xff);
    assert_eq!(run(&ev, &rec(&p)), "reason restart (4) shift -1");
    let mut e = env();
    e.tep = true;
    assert_eq!(run_env(&ev, &rec(&p), &e).unwrap(), "reason KVM_EXIT_UNKNOWN (0) shift 255");
}

/// `__print_array`: the kernel's and libtraceevent 1.8.4+'s `{0x1,0x2}`;
/// libtraceevent 1.7's (trace-cmd 3.1/3.2) `%u`s apart.
#[test]
fn print_array_by_libtraceevent_release() {
    let ev = event(&[("u16 v[3]", 6, false)], r#""[%s]", __print_array(REC->v, 3, sizeof(u16))"#);
    let r = rec(&[1, 0, 0x10, 0, 0xff, 0xff]);
    assert_eq!(run(&ev, &r), "[{0x1,0x10,0xffff}]");
    let mut e = env();
    e.tep = true;
    assert_eq!(run_env(&ev, &r, &e).unwrap(), "[{0x1,0x10,0xffff}]");
    e.tep_1_7 = true;
    if cfg!(feature = "trace-cmd-style") {
        assert_eq!(run_env(&ev, &r, &e).unwrap(), "[1 16 65535]");
    }
}

#[test]
fn errors_never_panic_and_write_nothing() {
    let ev = event(&[("int a", 4, true), ("const char * s", 8, false)], r#""a=%d s=%s", REC->a, REC->s"#);
    let p = Program::compile(&ev).unwrap();
    let mut out = String::new();
    // Truncated record.
    assert!(p.render(&ev, &[1, 0, 0, 0, 0, 0, 0, 0, 1], &env(), &mut out).is_err());
    // %s of a kernel pointer.
    let mut r = rec(&5i32.to_le_bytes());
    r.extend_from_slice(&0xffffffff82000000u64.to_le_bytes());
    assert!(p.render(&ev, &r, &env(), &mut out).is_err());
    assert_eq!(out, "");
    // Unknown identifiers matter only when reached, and then print a
    // stand-in (eval.rs tests the forms).
    let ev = event(&[("int a", 4, true)], r#""%s", __print_symbolic(REC->a, { 1, "one" }, { SOME_ENUM, "x" })"#);
    assert_eq!(run(&ev, &rec(&1i32.to_le_bytes())), "one");
    assert_eq!(run_env(&ev, &rec(&2i32.to_le_bytes()), &env()).unwrap(), "0x2");
    // Compile errors.
    for bad in [r#""%d", REC->nosuch"#, r#""%d %d", 1"#, r#""%d", foo(1)"#, r#"x"#, r#""%d", (1"#, r#""%k", 1"#, r#""%d", sizeof(REC)"#, r#""%d", REC[0]"#] {
        let ev = event(&[("int a", 4, true)], bad);
        assert!(Program::compile(&ev).is_err(), "{bad}");
    }
    // REC alone compiles (it may be `(REC)->f`) but renders as an error.
    for bad in [r#""%d", REC"#, r#""%p", &REC"#] {
        let ev = event(&[("int a", 4, true)], bad);
        assert!(run_env(&ev, &rec(&1i32.to_le_bytes()), &env()).is_err(), "{bad}");
    }
    // Division by zero is an error, not a panic.
    let ev = event(&[("int a", 4, true)], r#""%d", 5 / REC->a"#);
    assert!(run_env(&ev, &rec(&0i32.to_le_bytes()), &env()).is_err());
}

#[test]
fn big_endian_and_32bit() {
    let ev = event(&[("long a", 4, true), ("unsigned short b", 2, false)], r#""%ld %x %lx", REC->a, REC->b, REC->a"#);
    let mut e = Env::new(Endian::Big, 4);
    e.long_size = 4;
    let mut p = (-2i32).to_be_bytes().to_vec();
    p.extend_from_slice(&0x1234u16.to_be_bytes());
    assert_eq!(run_env(&ev, &rec(&p), &e).unwrap(), "-2 1234 fffffffe");
}

#[test]
fn fields_fallback() {
    let ev = event(
        &[("char comm[8]", 8, false), ("unsigned char c", 1, false), ("unsigned short s", 2, false), ("int i", 4, true), ("unsigned long l", 8, false), ("__data_loc char[] n", 4, false), ("__data_loc u8[] d", 4, false)],
        r#""x""#,
    );
    // comm@8 c@16 s@17 i@19 l@23 n@31 d@35, data at 39
    let mut p = b"bash\0\0\0\0".to_vec();
    p.push(b'A');
    p.extend_from_slice(&0x10u16.to_le_bytes());
    p.extend_from_slice(&(-100i32).to_le_bytes());
    p.extend_from_slice(&0xffff888100000000u64.to_le_bytes());
    p.extend_from_slice(&((3u32 << 16) | 39).to_le_bytes());
    p.extend_from_slice(&((2u32 << 16) | 42).to_le_bytes());
    p.extend_from_slice(b"hi\0");
    p.extend_from_slice(&[0xab, 1]);
    let mut s = String::new();
    render_fields(&ev, &rec(&p), &env(), &mut s).unwrap();
    assert_eq!(s, "comm=bash c='A'(65) s=0x10 (16) i=0xffffff9c (-100) l=0xffff888100000000 (-131387344551936) n=hi d=ab,01");
}

#[test]
fn fields_one_byte_like_the_kernels_isprint() {
    let ev = event(&[("u8 a", 1, false), ("u8 b", 1, false), ("u8 c", 1, false)], r#""x""#);
    let mut r = String::new();
    render_fields(&ev, &rec(&[0xff, 0x9f, 0x7f]), &env(), &mut r).unwrap();
    // 0xff is Latin-1 printable for the kernel: the raw byte itself, here
    // as text's escape for it (the output edge writes the byte).
    let raw: alloc::vec::Vec<_> = r.chars().filter_map(crate::text::raw_byte).collect();
    assert_eq!(raw, [0xff]);
    assert_eq!(r.replace(|c| crate::text::raw_byte(c).is_some(), "\u{ff}"), "a='\u{ff}'(255) b=(159) c=(127)");
}

#[test]
fn bprint_vbin_layout() {
    // "%d %s %llx %c %pS %p %*d|%pI4" : int, string inline, u64 at 4-alignment,
    // char, pointer (long), pointer, star width + int, pre-formatted %pI4 string.
    let mut b = Vec::new();
    b.extend_from_slice(&(-3i32).to_le_bytes());
    b.extend_from_slice(b"hey\0");
    b.extend_from_slice(&0x1122334455u64.to_le_bytes());
    b.push(b'q');
    b.extend_from_slice(&[0, 0, 0]); // pad to 4 for the 8-byte pointer (aligned at 4)
    b.extend_from_slice(&0xffffffff81000110u64.to_le_bytes());
    b.extend_from_slice(&0u64.to_le_bytes());
    b.extend_from_slice(&4i32.to_le_bytes());
    b.extend_from_slice(&7i32.to_le_bytes());
    b.extend_from_slice(b"1.2.3.4\0");
    let k = crate::ksyms::Ksyms::parse(b"ffffffff81000100 T foo\nffffffff81000180 t bar\n");
    let mut e = env();
    e.ksyms = Some(&k);
    let mut s = String::new();
    bprint(b"%d %s %llx %c %pS %p %*d|%pI4\n", &b, &e, &mut s).unwrap();
    assert_eq!(s, "-3 hey 1122334455 q foo+0x10/0x80 0000000000000000    7|1.2.3.4\n");
    let mut s = String::new();
    assert!(bprint(b"%d %d", &b[..4], &e, &mut s).is_err());
    assert_eq!(s, "");
}

#[test]
fn more_helpers() {
    let ev = event(
        &[
            ("__data_loc unsigned long[] mask", 4, false),
            ("__rel_loc u16[] rv", 4, false),
            ("__data_loc char[] sa", 4, false),
            ("u64 big", 8, false),
            ("u8 raw[20]", 20, false),
        ],
        r#""%s|%d|%s|%s|%s|%s|%pISpc|%d|%s", __get_bitmask(mask), __get_rel_dynamic_array_len(rv), __print_array(__get_rel_dynamic_array(rv), 2, 2), __print_symbolic_u64(REC->big, { 0x100000000ULL, "four-G" }), __print_flags_u64(REC->big | 1, ",", { 1, "one" }, { 0x100000000ULL, "4G" }), __print_hex(REC->raw, 18), __get_sockaddr(sa), sizeof(REC->raw), __print_hex_str(REC->raw, 2)"#,
    );
    // mask@8 rv@12 sa@16 big@20 raw@28; dynamic data from 48.
    let mut p = Vec::new();
    p.extend_from_slice(&((8u32 << 16) | 48).to_le_bytes());
    p.extend_from_slice(&((4u32 << 16) | (56 - 16)).to_le_bytes()); // rel: end of field (16) + 40 = 56
    p.extend_from_slice(&((16u32 << 16) | 60).to_le_bytes());
    p.extend_from_slice(&0x1_0000_0000u64.to_le_bytes());
    p.extend((0u8..20).map(|x| x + 0xa0));
    p.extend_from_slice(&0x8000_0001u64.to_le_bytes()); // mask @48
    p.extend_from_slice(&[7, 0, 9, 0]); // rv @56
    let mut sa = [0u8; 16]; // sa @60: AF_INET 10.1.2.3:443
    sa[0] = 2;
    sa[2] = 1;
    sa[3] = 0xbb;
    sa[4..8].copy_from_slice(&[10, 1, 2, 3]);
    p.extend_from_slice(&sa);
    assert_eq!(
        run(&ev, &rec(&p)),
        "00000000,80000001|4|{0x7,0x9}|four-G|one,4G|a0 a1 a2 a3 a4 a5 a6 a7 a8 a9 aa ab ac ad ae af b0 b1|10.1.2.3:443|20|a0a1"
    );
}

#[test]
fn conversions_and_literals() {
    let ev = event(
        &[("unsigned int v", 4, false), ("size_t z", 8, false), ("signed char c", 1, true)],
        r#""%o %#o %X %#x %zu %zd %hhd %hhu %5.3x|%-6u|%c%c %3c|%-3c| %s %s", REC->v, REC->v, REC->v, REC->v, REC->z, REC->z, REC->c, REC->c, REC->v, REC->v, 'a', '\n' == 10 ? 'y' : 'n', 'b', 'c', REC->v > 100 ? REC->v > 1000 ? "big" : "mid" : "small", "lit\x41\101""#,
    );
    let mut p = 255u32.to_le_bytes().to_vec();
    p.extend_from_slice(&u64::MAX.to_le_bytes());
    p.push(0xfe);
    assert_eq!(run(&ev, &rec(&p)), "377 0377 FF 0xff 18446744073709551615 -1 -2 254   0ff|255   |ay   b|c  | mid litAA");
}

#[test]
fn enums_printk_and_pointer_strings() {
    let mut en = crate::ksyms::Enums::new();
    en.push("MODE_ABS", 0);
    en.push("MODE_REL", 1);
    en.finish();
    let pk = crate::ksyms::Printk::parse(b"0xffffffff82000000 : \"Start tick\"\n");
    let mut e = env();
    e.enums = Some(&en);
    e.printk = Some(&pk);
    let ev = event(
        &[("int mode", 4, true), ("const char * s", 8, false)],
        r#""mode=%s s=%s", __print_symbolic(REC->mode, { MODE_ABS, "ABS" }, { MODE_REL, "REL" }), REC->s"#,
    );
    let mut p = 1i32.to_le_bytes().to_vec();
    p.extend_from_slice(&0xffffffff82000000u64.to_le_bytes());
    assert_eq!(run_env(&ev, &rec(&p), &e).unwrap(), "mode=REL s=Start tick");
    // Without the tables both are errors, never guesses.
    assert!(run_env(&ev, &rec(&p), &env()).is_err());
}

#[test]
fn statement_expression_min() {
    let ev = event(
        &[("int n", 4, true)],
        r#""%d", ({ int __UNIQUE_ID_x_1 = (REC->n); int __UNIQUE_ID_y_2 = (128); ((__UNIQUE_ID_x_1) < (__UNIQUE_ID_y_2) ? (__UNIQUE_ID_x_1) : (__UNIQUE_ID_y_2)); })"#,
    );
    assert_eq!(run(&ev, &rec(&500i32.to_le_bytes())), "128");
    assert_eq!(run(&ev, &rec(&5i32.to_le_bytes())), "5");
}

#[test]
fn random_bytes_never_panic() {
    // Every format helper over garbage records: errors are fine, panics are not.
    let fmts = [
        r#""%s %d %pS %pI6c %pU %*ph", __get_str(d), REC->a[3], REC->p, REC->arr, REC->arr, REC->a[0], REC->arr"#,
        r#""%s", __print_array(__get_dynamic_array(d), __get_dynamic_array_len(d) / 4, 4)"#,
        r#""%s %s", __print_hex(__get_dynamic_array(d), __get_dynamic_array_len(d)), __get_bitmask(d)"#,
        r#""%*pbl %pISpc", REC->a[1], REC->arr, __get_dynamic_array(d)"#,
    ];
    let mut seed = 0x1234_5678_9abc_def0u64;
    for f in fmts {
        let ev = event(&[("__data_loc char[] d", 4, false), ("int a[4]", 16, true), ("void * p", 8, false), ("u8 arr[16]", 16, false)], f);
        let p = Program::compile(&ev).unwrap();
        for len in 0..80 {
            let mut r = Vec::new();
            for _ in 0..len {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                r.push(seed as u8);
            }
            let mut s = String::new();
            let _ = p.render(&ev, &r, &env(), &mut s);
            let _ = render_fields(&ev, &r, &env(), &mut s);
            let _ = bprint(b"%d %s %pS %pI4 %*d %llx", &r, &env(), &mut s);
        }
    }
}

#[test]
fn constant_subexpressions_fold() {
    let ev = event(&[("long s", 8, true)], r#""%d %lu", REC->s & ((((0x0 | 0x1 | 0x2) + 1) << 1) - 1), sizeof(long) * 2"#);
    let p = Program::compile(&ev).unwrap();
    let d = alloc::format!("{:?}", p.args.borrow()[0]);
    assert!(d.starts_with("Bin(And, Field(4), Num(7,"), "{d}");
    // `long` depends on the recording: not folded.
    assert!(matches!(p.args.borrow()[1], Expr::Bin(..)));
    assert_eq!(run(&ev, &rec(&0xffu64.to_le_bytes())), "7 16");
}

#[test]
fn hostile_formats_never_panic() {
    let base = [
        r#""prev_comm=%s prev_state=%s%s", REC->a, (REC->a & ((((0x0 | 0x1) + 1) << 1) - 1)) ? __print_flags(REC->a & 3, "|", { 0x1, "S" }, { 0x2, "D" }) : "R", REC->a ? "+" : """#,
        r#""%s %*pbl %pISpc %.*s", __print_symbolic(REC->a, { 1, "x" }, { }), (1 << 7), REC->a, __get_str(d), 3, __get_str(d)"#,
        r#""%d", ({ int x = (REC->a); int y = (128); ((x) < (y) ? (x) : (y)); })"#,
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for b in base {
        for cut in 0..b.len() {
            for flip in [None, Some(b'('), Some(b'"'), Some(b'%'), Some(b'{'), Some(b'\\')] {
                let mut f = b.as_bytes()[..cut].to_vec();
                if let Some(c) = flip {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    let at = (seed as usize) % (f.len() + 1);
                    f.insert(at, c);
                }
                let Ok(text) = core::str::from_utf8(&f) else { continue };
                let ev = event(&[("int a", 4, true), ("__data_loc char[] d", 4, false)], text);
                if let Ok(p) = Program::compile(&ev) {
                    let mut s = String::new();
                    let _ = p.render(&ev, &rec(&[1, 0, 0, 0, 0, 0, 0, 0]), &env(), &mut s);
                }
            }
        }
    }
    // Deep nesting is refused, not a stack overflow.
    let deep = alloc::format!("\"%d\", {}1{}", "(".repeat(100_000), ")".repeat(100_000));
    let ev = event(&[("int a", 4, true)], &deep);
    assert!(Program::compile(&ev).is_err());
    let deep = alloc::format!("\"%d\", {}1", "-".repeat(100_000));
    let ev = event(&[("int a", 4, true)], &deep);
    assert!(Program::compile(&ev).is_err());
}

/// raw_syscalls:sys_enter exactly as a 6.18 x86_64 kernel's format file has
/// it: `REC->args[N]` indexes an `unsigned long args[6]` field, 8 bytes an
/// element (size / count, whatever the decoding host's long is).
#[test]
fn raw_syscalls_sys_enter_args() {
    let text = "name: sys_enter\nID: 443\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n\nprint fmt: \"NR %ld (%lx, %lx, %lx, %lx, %lx, %lx)\", REC->id, REC->args[0], REC->args[1], REC->args[2], REC->args[3], REC->args[4], REC->args[5]\n";
    let ev = parse_event("raw_syscalls", text).unwrap();
    let mut p = 257u64.to_le_bytes().to_vec();
    for a in [0xffff_ff9cu64, 0x55d8_f0fb_9908, 0x241, 0x1b6, u64::MAX, 1] {
        p.extend_from_slice(&a.to_le_bytes());
    }
    assert_eq!(run(&ev, &rec(&p)), "NR 257 (ffffff9c, 55d8f0fb9908, 241, 1b6, ffffffffffffffff, 1)");
    let mut p = (-1i64).to_le_bytes().to_vec();
    p.extend_from_slice(&[0u8; 48]);
    assert_eq!(run(&ev, &rec(&p)), "NR -1 (0, 0, 0, 0, 0, 0)");
    // A record cut inside the array is an error, not a guess.
    assert!(run_env(&ev, &rec(&p[..40]), &env()).is_err());
}

/// Issue #3 §3, items no other test names: `%i`, every fixed-width cast,
/// the `%pU` byte-order/case variants, `(REC)->f` in helpers, integer
/// literal forms, `%c` of a field, `%hx`/`%hhx` truncation.
#[test]
fn audit_casts_i_and_uuid_variants() {
    let ev = event(
        &[("int a", 4, true), ("unsigned long v", 8, false), ("__u8 uuid[16]", 16, false)],
        r#""%i %+i|%u %d %u %d %llu %lld|%u %d|%x %hx %hhx|%pUb %pUB %pUl %pUL|%d %d %d %lu", REC->a, (REC)->a, (u16)REC->v, (s16)REC->v, (u32)REC->v, (s32)REC->v, (u64)REC->a, (s64)REC->v, (u8)REC->v, (s8)REC->v, (unsigned int)REC->v, REC->v, REC->v, REC->uuid, REC->uuid, REC->uuid, REC->uuid, 0x10, 010, 10U, 0xffffffffffffffffULL"#,
    );
    let mut p = (-5i32).to_le_bytes().to_vec();
    p.extend_from_slice(&0xffff_ffff_ffff_fffeu64.to_le_bytes());
    p.extend((0u8..16).map(|x| x * 17));
    assert_eq!(
        run(&ev, &rec(&p)),
        "-5 -5|65534 -2 4294967294 -2 18446744073709551611 -2|254 -2|fffffffe fffe fe|\
         00112233-4455-6677-8899-aabbccddeeff 00112233-4455-6677-8899-AABBCCDDEEFF \
         33221100-5544-7766-8899-aabbccddeeff 33221100-5544-7766-8899-AABBCCDDEEFF|16 8 10 18446744073709551615"
    );
    // Narrowing keeps the low bits; widening a signed value sign-extends.
    let ev = event(&[("u64 v", 8, false)], r#""%d %d %lld %llu", (s8)(REC->v >> 8), (u8)(REC->v >> 8), (s64)(s32)REC->v, (u64)(u32)(s32)REC->v"#);
    assert_eq!(run(&ev, &rec(&0x8000_8080u64.to_le_bytes())), "-128 128 -2147450752 2147516544");
}

/// Every error message comes back as written: `msg!` finds the line at
/// compile time, `Msg::text` cuts it out through the offset table.
#[test]
fn messages_round_trip() {
    use super::Msg;
    for m in super::MSGS.split('\n') {
        assert_eq!(Msg::of(m).text(), m);
    }
    assert_eq!(msg!("expected )").text(), "expected )");
    assert_eq!(msg!("UUID shorter than 16 bytes").text(), "UUID shorter than 16 bytes");
    // A record that fails keeps its reason.
    let e = parse_event("t", "name: t\nID: 1\nformat:\n\tfield:int a;\toffset:0;\tsize:4;\tsigned:1;\n\nprint fmt: \"%d\", 1 / (REC->a - REC->a)\n").unwrap();
    let env = Env::new(crate::cursor::Endian::Little, 8);
    let mut s = alloc::string::String::new();
    let r = Program::compile(&e).unwrap().render(&e, &[0, 0, 0, 0], &env, &mut s);
    assert_eq!(r.unwrap_err().what, "division by zero");
}

/// `ev`'s plan for `env`, the line it prints of record `r`, and the line
/// the evaluator prints from the same specialized trees.
#[cfg(feature = "fast-print")]
fn plan_and_trees(ev: &Event, r: &[u8], env: &Env) -> (Vec<plan::Step>, String, String) {
    let (fmt, mut exprs) = parse_print_fmt(ev).unwrap();
    for e in &mut exprs {
        eval::specialize(e, env, false);
    }
    let pieces = printf::parse_format(&fmt).unwrap();
    let steps = plan::build(ev, &fmt, &pieces, &exprs, env);
    let mut ctx = Ctx { ev, rec: r, env, scratch: Vec::new(), unknowns: 0, partial: false };
    let mut want = Vec::new();
    printf::append(&mut want, &mut |o| eval::format(&mut ctx, &fmt, &pieces, &mut ExprArgs { exprs: &exprs, next: 0 }, o).unwrap());
    let mut got = Vec::new();
    let p = Program::compile(ev).unwrap();
    printf::append(&mut got, &mut |o| _ = p.render_bytes(ev, r, env, o).unwrap());
    (steps, String::from_utf8_lossy(&got).into_owned(), String::from_utf8_lossy(&want).into_owned())
}

/// The plan's steps print what the evaluator prints, in both dialects and
/// both `long` sizes, for every kind of step (array elements among the
/// fields); the three flag/symbol tables are trees evaluated straight,
/// inside the same line.
#[test]
#[cfg(feature = "fast-print")]
fn plan_prints_as_the_evaluator() {
    let ev = event(
        &[("unsigned long call_site", 8, false), ("void * ptr", 8, false), ("int n", 4, true), ("unsigned int dev", 4, false), ("unsigned long gfp", 8, false), ("char name[8]", 8, true), ("int a[2]", 8, true), ("__data_loc char[] s", 4, false), ("char c", 1, true)],
        r#""cs=%pS %ps p=%p %px n=%d %5d|%-6u|%08x|%lu dev %d,%d g=%s m=%6s %s %-4s|%.2s|%s f=%.4s c=%d a=%d,%x,%u acc=%s", (void *)REC->call_site, (void *)REC->call_site, REC->ptr, REC->ptr, REC->n, REC->n, REC->n, REC->n, (unsigned long) REC->n, ((unsigned int) ((REC->dev) >> 20)), ((unsigned int) ((REC->dev) & ((1U << 20) - 1))), (REC->gfp) ? __print_flags(REC->gfp, "|", { 0x3, "AB" }, { 0x1, "A" }, { 0x4, "C" }, { 0, ((void *)0) }, { 0x8, "D" }) : "none", __print_symbolic(REC->n, { -3, "M3" }, { 1, "ONE" }), REC->n & 0x1 ? "odd" : "even", REC->name, REC->name, __get_str(s), __print_flags(REC->dev, "", { 1, "W" }, { 2, "U" }), REC->c, REC->a[0], REC->a[1], (unsigned int)REC->a[0], (1 && (REC->gfp & 0x4)) ? "true" : "false""#,
    );
    let mut p = Vec::new();
    p.extend_from_slice(&0xffff_ffff_8123_4567u64.to_le_bytes());
    p.extend_from_slice(&0xffff_8881_0087_e000u64.to_le_bytes());
    p.extend_from_slice(&(-3i32).to_le_bytes());
    p.extend_from_slice(&((8u32 << 20) | 3).to_le_bytes());
    let gfp_at = p.len();
    p.extend_from_slice(&0x1fu64.to_le_bytes());
    p.extend_from_slice(b"kmalloc\0");
    p.extend_from_slice(&(-2i32).to_le_bytes());
    p.extend_from_slice(&0x7fu32.to_le_bytes());
    let s_at = 8 + p.len() + 4 + 1;
    p.extend_from_slice(&((3u32 << 16) | s_at as u32).to_le_bytes());
    p.push(0xf0);
    p.extend_from_slice(b"abc");
    let mut zero_gfp = p.clone();
    zero_gfp[gfp_at..gfp_at + 8].fill(0);
    for long_size in [8, 4] {
        for tep in [false, true] {
            let mut env = Env::new(Endian::Little, long_size);
            env.tep = tep;
            for r in [rec(&p), rec(&zero_gfp)] {
                let (steps, got, want) = plan_and_trees(&ev, &r, &env);
                assert_eq!(steps.iter().filter(|s| matches!(s.conv, plan::Conv::Table(..))).count(), 3, "{steps:?}");
                assert_eq!(got, want, "long {long_size} tep {tep}");
            }
        }
    }
}

/// kmem's page pointer and ext4's `found ? pblk : 0` go as plan steps,
/// not trees, and print what the evaluator prints, in both dialects and
/// `long` sizes, with and without the recording's vmemmap_base and
/// struct size (without them the page stays a tree: its stand-in).
#[test]
#[cfg(feature = "fast-print")]
fn plan_pages_and_guards_print_as_the_evaluator() {
    let ev = event(
        &[("unsigned long pfn", 8, false), ("int found", 4, true), ("u64 pblk", 8, false)],
        r#""page=%p pfn=0x%lx free=%p %px found %d %llu %x", REC->pfn != -1UL ? (((struct page *)vmemmap_base) + (REC->pfn)) : ((void *)0), REC->pfn != -1UL ? REC->pfn : 0, (((struct page *)vmemmap_base) + (REC->pfn)), (((struct page *)vmemmap_base) + (REC->pfn)), REC->found, REC->found ? REC->pblk : 0, REC->found ? REC->found : 0"#,
    );
    let mut known = crate::ksyms::Enums::new();
    known.push("vmemmap_base", 0xffd4_0000_0000_0000);
    known.push("sizeof(struct page)", 64);
    known.finish();
    for (pfn, found) in [(0x12ad55u64, 1i32), (u64::MAX, 0), (7, -1)] {
        let mut p = Vec::new();
        p.extend_from_slice(&pfn.to_le_bytes());
        p.extend_from_slice(&found.to_le_bytes());
        p.extend_from_slice(&0x1234_5678_9abcu64.to_le_bytes());
        let r = rec(&p);
        for long_size in [8, 4] {
            for (tep, enums) in [(false, true), (false, false), (true, false)] {
                let mut env = Env::new(Endian::Little, long_size);
                env.tep = tep;
                env.enums = enums.then_some(&known);
                let (steps, got, want) = plan_and_trees(&ev, &r, &env);
                let trees = steps.iter().filter(|s| matches!(s.conv, plan::Conv::Tree(..) | plan::Conv::Eval(..))).count();
                assert_eq!(trees, if tep || enums { 0 } else { 3 }, "{steps:?}");
                assert_eq!(got, want, "long {long_size} tep {tep} enums {enums}");
            }
        }
    }
}
