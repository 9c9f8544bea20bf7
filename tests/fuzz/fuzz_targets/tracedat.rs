//! A trace.dat from bytes: open it, then walk every record of every buffer
//! through the merge and print it as ftcat would: kernel style, kernel
//! style with -R, trace-cmd style, and --stat (records counted, lines
//! rendered and dropped). The pipeline is ftcat's (src/applets/ftcat.rs,
//! file_recording/decode/pump) cut to what decides the text; keep it in
//! step when ftcat's pipeline moves into the library.
#![no_main]

use ftbox::format;
use ftbox::ksyms::{Ksyms, Printk};
use ftbox::merge::{Item, Merge};
use ftbox::text::{self, env::Decoder, opts, tracecmd::TraceCmd, Classes, Cmdlines, HeaderInfo, Kernel, Opts, Rec};
use ftbox::tracedat::{Buffer, TraceDat};
use ftbox_fuzz::Sink;
use libfuzzer_sys::fuzz_target;
use std::fmt::Write;

fuzz_target!(|data: &[u8]| {
    let file = data.to_vec();
    let Ok(td) = TraceDat::open(&file) else { return };
    for buf in &td.buffers {
        if buf.latency {
            let _ = td.latency_text(buf);
            continue;
        }
        let rec = Recording::new(&td, buf);
        let mut out = Sink::default();
        for style in [Style::Kernel, Style::KernelRaw, Style::TraceCmd, Style::Stat] {
            print(&td, buf, &rec, style, &mut out);
        }
        // trace-cmd --stat: each CPU's pages counted alone.
        for c in &buf.cpus {
            let mut pages = td.cpu_pages(buf, c);
            while let Some(Ok(_)) = pages.next_page() {}
        }
    }
});

/// What ftcat's file_recording() gathers from the file.
struct Recording {
    dec: Decoder,
    cmd: Cmdlines,
    saved: Vec<u8>,
    opts: Opts,
    tracer: String,
    clock: String,
    release: String,
    ncpus: u32,
}

impl Recording {
    fn new(td: &TraceDat, buf: &Buffer) -> Recording {
        let mut events = Vec::new();
        for f in &td.formats {
            if let Ok(e) = format::parse_event(&f.system, &f.text) {
                events.push(e);
            }
        }
        let dec = Decoder::new(events, Ksyms::parse(td.kallsyms.as_bytes()), Printk::parse(td.printk.as_bytes()), td.endian, td.kernel_long_size() as usize);
        let mut cmd = Cmdlines::parse(td.cmdlines.as_bytes());
        cmd.add_tgids(td.options.tgids.as_deref().unwrap_or("").as_bytes());
        let state = td.options.state.as_deref().unwrap_or("");
        let get = |k| text::opts::state_get(state, k).unwrap_or("");
        let mut o = Opts::default();
        o.set_all(get("options"));
        // ftcat guesses the tracer from the records; here from the events
        // a file carries, so that graph and function files take those paths.
        let has = |n: &str| dec.events().iter().any(|e| e.system == "ftrace" && e.name == n);
        let tracer = match get("tracer") {
            "" if has("funcgraph_entry") => "function_graph",
            "" if has("function") => "function",
            "" => "nop",
            t => t,
        };
        let top = buf.cpus.iter().map(|c| c.cpu.saturating_add(1)).max().unwrap_or(1);
        Recording {
            cmd,
            saved: td.cmdlines.as_bytes().to_vec(),
            opts: o,
            tracer: tracer.into(),
            clock: buf.clock.as_deref().or(td.options.clock()).unwrap_or("local").into(),
            release: td.options.uname.clone().unwrap_or_default(),
            ncpus: td.options.cpu_count.unwrap_or(0).max(top),
            dec,
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Kernel,
    KernelRaw,
    TraceCmd,
    Stat,
}

/// A record kept while the merge moves on (its next record decides how a
/// graph entry prints).
struct Held {
    cpu: u32,
    ts: u64,
    data: Vec<u8>,
}

fn print(td: &TraceDat, buf: &Buffer, rec: &Recording, style: Style, out: &mut Sink) {
    let events = rec.dec.events();
    let cls = Classes::new(events);
    let mut o = rec.opts;
    if style == Style::KernelRaw {
        o.flags |= opts::FIELDS | opts::ALL_FIELDS;
    }
    let mut k = Kernel::new(&rec.dec, &rec.cmd, &cls, o, rec.ncpus);
    k.endian = rec.dec.endian;
    k.long = rec.dec.long_size;
    k.set_clock(&rec.clock);
    k.set_release(&rec.release);
    k.set_tracer(&rec.tracer);
    let mut tc = None;
    if style == Style::TraceCmd {
        let mut t = TraceCmd::new(&rec.dec, &rec.saved, events);
        t.flags |= text::tracecmd::INDENT;
        t.endian = rec.dec.endian;
        t.long = rec.dec.long_size;
        t.in_ns = text::clock_in_ns(&rec.clock);
        tc = Some(t);
    } else if style != Style::Stat {
        let h = HeaderInfo { tracer: &rec.tracer, entries: 0, written: 0, cpus: rec.ncpus, release: &rec.release, model: "" };
        let _ = k.header(out, &h);
    }
    let mut p = Printer { k, tc, style, null: Sink::default() };
    let mut m = Merge::from_pages(td.layout(buf), td.all_cpu_pages(buf));
    let mut held: Option<Held> = None;
    while let Some(it) = m.next() {
        match it {
            Item::Record { cpu, ts, data } => {
                let now = Rec { cpu, ts, data };
                let consumed = match &held {
                    // Kernel style folds with the CPU's next record,
                    // trace-cmd style with the merge's next.
                    Some(h) if h.cpu == cpu || style == Style::TraceCmd => p.line(h, Some(&now), out),
                    Some(h) => p.line(h, None, out),
                    None => false,
                };
                held = if consumed { None } else { Some(Held { cpu, ts, data: data.to_vec() }) };
            }
            Item::Lost { cpu, count, .. } => {
                if let Some(h) = held.take() {
                    p.line(&h, None, out);
                }
                match &mut p.tc {
                    Some(t) => t.lost(cpu, count),
                    None => {
                        let _ = p.k.lost(out, cpu, count);
                    }
                }
            }
            Item::Error { error, .. } => {
                let _ = write!(out, "{error}");
            }
        }
    }
    if let Some(h) = held.take() {
        p.line(&h, None, out);
    }
    let _ = p.k.finish(out);
}

struct Printer<'a> {
    k: Kernel<'a, Decoder>,
    tc: Option<TraceCmd<'a>>,
    style: Style,
    /// --stat renders every line (the interpreter's failures are counted)
    /// and drops it.
    null: Sink,
}

impl Printer<'_> {
    /// One record (and `next`, when it folds into it: returns true).
    fn line(&mut self, h: &Held, next: Option<&Rec>, out: &mut Sink) -> bool {
        let r = Rec { cpu: h.cpu, ts: h.ts, data: &h.data };
        out.record();
        if let Some(t) = &mut self.tc {
            t.arm(r.cpu);
            return t.line(out, &r, next).unwrap_or(false);
        }
        if self.style == Style::Stat {
            self.null.record();
            return self.k.line(&mut self.null, &r, next).unwrap_or(false);
        }
        self.k.line(out, &r, next).unwrap_or(false)
    }
}
