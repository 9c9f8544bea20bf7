//! The print fmt interpreter (src/printfmt): compile a fuzzed format
//! file's `print fmt:` and render fuzzed records with it, in the kernel's
//! and libtraceevent's dialects, both byte orders; the `fields` printer;
//! and trace_printk's binary form (`bprint`) with the same bytes.
//!
//! Input: a format file (as tracefs prints it), a NUL, the record.
#![no_main]

use ftbox::cursor::Endian;
use ftbox::format;
use ftbox::ksyms::{Enums, Ksyms, Printk};
use ftbox::printfmt::{self, Env, Program};
use ftbox_fuzz::{split, text, Sink};
use libfuzzer_sys::fuzz_target;

/// A few symbols, printk strings and enumerators for %pS, %s of a
/// pointer, and unresolved names.
struct Tables {
    ksyms: Ksyms,
    printk: Printk,
    enums: Enums,
}

/// (Made for each input: the tables are not Sync, and small.)
fn tables() -> Tables {
    Tables {
        ksyms: Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff81001000 t do_one [mod]\nffffffff81002000 T schedule\n"),
        printk: Printk::parse(b"0xffffffff82000000 : \"hello %d\\n\"\n0xffffffff82000010 : \"str\"\n"),
        enums: {
            let mut e = Enums::new();
            e.push("HRTIMER_MODE_ABS", 0);
            e.push("NAME", 7);
            e.finish();
            e
        },
    }
}

fuzz_target!(|data: &[u8]| {
    let (fmt, rec) = split(data, 0);
    let Ok(ev) = format::parse_event("sys", &text(fmt)) else { return };
    let t = &tables();
    let prog = Program::compile(&ev);
    let mut out = Sink::default();
    for (endian, long, tep) in [(Endian::Little, 8, false), (Endian::Little, 8, true), (Endian::Big, 4, false)] {
        let mut env = Env::new(endian, long);
        env.ksyms = Some(&t.ksyms);
        env.printk = Some(&t.printk);
        env.enums = Some(&t.enums);
        env.hz = 250;
        env.tep = tep;
        if let Ok(p) = &prog {
            out.record();
            let _ = p.render(&ev, rec, &env, &mut out);
        }
        out.record();
        let _ = printfmt::render_fields(&ev, rec, &env, &mut out);
    }
    out.record();
    let _ = printfmt::bprint(ev.print_fmt.as_bytes(), rec, &Env::new(Endian::Little, 8), &mut out);
});
