//! Whole recordings decoded in-process, against the kernel's own text.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use super::text_out::TextOut;
use super::*;

// (Uncompressed trace.dat v6 files: the core decodes them without the
// zstd feature.)
const I686_DAT: &[u8] = include_bytes!("../../fixtures/foreign/i686.dat");
const I686_TXT: &[u8] = include_bytes!("../../fixtures/foreign/i686.trace.txt");
const MALTA_DAT: &[u8] = include_bytes!("../../fixtures/foreign/malta.dat");
const MALTA_TXT: &[u8] = include_bytes!("../../fixtures/foreign/malta.trace.txt");

#[derive(Default)]
struct Errors(Vec<String>);

impl Host for Errors {
    fn error(&mut self, cpu: u32, msg: &str) {
        self.0.push(alloc::format!("CPU {cpu}: {msg}"));
    }
}

fn print_to_vec(dat: &[u8], opts: &DecodeOptions) -> (Result<(), Error>, Vec<u8>, Vec<String>) {
    let dat = dat.to_vec();
    let td = TraceDat::open(&dat).unwrap();
    let mut out = TextOut::new(Vec::new());
    let mut host = Errors::default();
    let r = print_file(&td, "x.dat", opts, &mut out, &mut host, &mut |w| panic!("{w}"));
    let bytes = out.finish().unwrap_or_default();
    (r, bytes, host.0)
}

/// Recordings of a 32-bit kernel (i686) and of one whose records are all
/// 8-byte aligned (mips64el malta) print exactly what `cat trace` printed
/// there, header included.
#[test]
fn whole_file_as_the_kernel_printed_it() {
    for (name, dat, txt) in [("i686", I686_DAT, I686_TXT), ("malta", MALTA_DAT, MALTA_TXT)] {
        let (r, got, errors) = print_to_vec(dat, &DecodeOptions::default());
        assert_eq!(r, Ok(()), "{name}");
        assert!(errors.is_empty(), "{name}: {errors:?}");
        if got != txt {
            let (g, w) = (String::from_utf8_lossy(&got), String::from_utf8_lossy(txt));
            let i = g.lines().zip(w.lines()).position(|(a, b)| a != b).unwrap_or(0);
            panic!("{name}: differs from the kernel's text at line {}:\nours:   {}\nkernel: {}", i + 1, g.lines().nth(i).unwrap_or(""), w.lines().nth(i).unwrap_or(""));
        }
    }
}

/// An output from outside the module sees every record the filters let
/// through, the lost-event notices, and the per-CPU counts at the end.
#[test]
fn an_output_of_its_own() {
    #[derive(Default)]
    struct Count {
        records: u64,
        events: Vec<String>,
        finished: Option<Stats>,
    }
    struct Probe<'r> {
        rec: &'r Recording,
        c: Count,
    }
    impl Output for Probe<'_> {
        fn record(&mut self, buffer: usize, r: &crate::text::Rec, _next: Option<&crate::text::Rec>) -> bool {
            assert_eq!(buffer, 0);
            self.c.records += 1;
            let e = self.rec.event_of(r.data).map_or(String::from("?"), |e| e.name.clone());
            if !self.c.events.contains(&e) {
                self.c.events.push(e);
            }
            false
        }
        fn lost(&mut self, _cpu: u32, _count: Option<u64>, _shown: bool) {}
        fn finish(&mut self, s: &Stats) -> fmt::Result {
            self.c.finished = Some(s.clone());
            Ok(())
        }
    }
    let dat = I686_DAT.to_vec();
    let td = TraceDat::open(&dat).unwrap();
    let opts = DecodeOptions { events: alloc::vec![String::from("sched_*")], ..DecodeOptions::default() };
    let mut input = file_input(&td, &opts, true).unwrap();
    let rec = &input.rec;
    let mut p = Probe { rec, c: Count::default() };
    let select = filter::Select::new(&opts, rec);
    let stats = run(rec, select, EventFilter::default(), None, &mut input.merge, &mut p, false, &mut Errors::default());
    p.finish(&stats).unwrap();
    let c = p.c;
    assert!(c.records > 0);
    assert!(c.events.len() > 3 && c.events.iter().all(|e| e.starts_with("sched_")), "{:?}", c.events);
    let s = c.finished.unwrap();
    assert_eq!(s.records, c.records);
    assert_eq!(s.cpus.iter().map(|c| c.records).sum::<u64>(), c.records);
    // The kernel's text of the same records, one line each.
    let want = String::from_utf8_lossy(I686_TXT).lines().filter(|l| l.contains(": sched_")).count() as u64;
    assert_eq!(c.records, want);
}

/// `-e` takes the one glob, `[...]` classes included.
#[test]
fn event_globs_with_classes() {
    let opts = |g: &str| DecodeOptions { events: alloc::vec![String::from(g)], ..DecodeOptions::default() };
    let lines = |g: &str| {
        let (_, b, _) = print_to_vec(I686_DAT, &opts(g));
        String::from_utf8_lossy(&b).lines().filter(|l| !l.starts_with('#')).map(String::from).collect::<Vec<_>>()
    };
    // sched_waking, sched_wakeup, sched_wakeup_new, sched_switch.
    let ws = lines("sched_[ws]*");
    assert_eq!(ws.len(), 23 + 23 + 3 + 47);
    assert!(ws.iter().all(|l| [": sched_wak", ": sched_switch:"].iter().any(|e| l.contains(e))), "{ws:?}");
    let other = lines("sched_[!ws]*");
    assert!(other.len() == 15 && other.iter().all(|l| l.contains(": sched_process_")), "{other:?}");
}

/// The events none of the records use keep their names only (the same
/// events in the same order as when every format is kept), and the text
/// is the same as with every format parsed: plain, `--stat`, `-e`.
#[test]
fn formats_of_events_without_records_are_not_kept() {
    let dat = I686_DAT.to_vec();
    let td = TraceDat::open(&dat).unwrap();
    let buf = td.top().unwrap();
    let mut seen = Seen::default();
    let records = seen.add(td.all_cpu_pages(buf), &td.layout(buf));
    let (all, some) = (Recording::from_file(&td, buf, None), Recording::from_file(&td, buf, Some(&seen)));
    assert_eq!(all.events().len(), some.events().len());
    let mut dropped = 0;
    for (a, b) in all.events().iter().zip(some.events()) {
        assert_eq!((a.id, &a.system, &a.name), (b.id, &b.system, &b.name));
        if seen.has(a.id) || a.system == "ftrace" {
            assert_eq!((a.fields.len(), &a.print_fmt), (b.fields.len(), &b.print_fmt), "{}", a.name);
        } else {
            assert!(b.fields.is_empty() && b.print_fmt.is_empty(), "{}", a.name);
            dropped += 1;
        }
    }
    assert!(dropped > 0 && records > 0, "{dropped} of {}", all.events().len());

    let e = |g: &str| alloc::vec![String::from(g)];
    for opts in [DecodeOptions::default(), DecodeOptions { stat: true, ..DecodeOptions::default() }, DecodeOptions { events: e("sched_*"), ..DecodeOptions::default() }] {
        let mut rec = Recording::from_file(&td, buf, None);
        // (As file_input settles them.)
        let guess = if opts.stat { "nop" } else { rec.count(records, &seen) };
        if rec.tracer.is_empty() {
            rec.tracer = guess.into();
        }
        let mut merge = Merge::from_pages(td.layout(buf), td.all_cpu_pages(buf));
        let mut out = TextOut::new(Vec::new());
        print(&mut rec, &mut merge, Vec::new(), &opts, false, &mut out, &mut Errors::default()).unwrap();
        let want = out.finish().unwrap_or_default();
        let (r, got, _) = print_to_vec(I686_DAT, &opts);
        r.unwrap();
        assert!(want == got, "{}", String::from_utf8_lossy(&got));
    }
}
