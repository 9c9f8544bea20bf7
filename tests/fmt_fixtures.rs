//! The print fmt interpreter against real recordings from another kernel
//! (Debian 6.12, fixtures/linux-6.12): every format of every
//! trace.dat compiles, and for the `trace-cmd extract` + `trace` text pairs
//! the rendered event text equals the kernel's.

use ftbox::format::{parse_event, Event, Events};
use ftbox::ksyms::{Ksyms, Printk};
use ftbox::printfmt::{Env, Program};
use ftbox::ring::Page;
use ftbox::tracedat::TraceDat;
use std::path::PathBuf;

mod support;

fn fixtures() -> PathBuf {
    support::fixtures("events.dat")
}

fn events_of(dat: &TraceDat) -> Events {
    let mut t = Events::new();
    for f in &dat.formats {
        t.insert(parse_event(&f.system, &f.text).unwrap_or_else(|e| panic!("{}: {e}", f.system)));
    }
    t
}

/// Events the kernel prints with its own code, not their print fmt (see
/// fmt_live.rs): the `ftrace` system and the syscall printers.
fn printed_by_kernel_code(ev: &Event) -> bool {
    ev.system == "ftrace" || ev.system == "syscalls"
}

/// Plain `%p` (no extension): these recordings were made with hash-ptr on,
/// so the kernel printed a siphash of the pointer that no recording lets us
/// recompute (we print the raw value, as with hash-ptr off).
fn has_plain_p(ev: &Event) -> bool {
    let f = ev.print_fmt.as_bytes();
    let end = f.iter().skip(1).position(|&c| c == b'"').map_or(f.len(), |p| p + 1);
    let f = &f[..end];
    f.windows(3).any(|w| w[0] == b'%' && w[1] == b'p' && !w[2].is_ascii_alphanumeric())
        || f.ends_with(b"%p")
}

/// Formats of the 6.12 recordings that call kernel functions whose results
/// the record does not hold; the caller prints their fields.
const COMPILE_EXCEPTIONS: &[(&str, &str)] = &[
    ("xen/xen_mmu_ptep_modify_prot_commit", "pte_val(native_make_pte()): Xen paravirt page-table translation"),
    ("xen/xen_mmu_ptep_modify_prot_start", "pte_val(native_make_pte()): Xen paravirt page-table translation"),
    ("xen/xen_mmu_set_p4d", "pgd_val(native_make_pgd()): Xen paravirt page-table translation"),
    ("xen/xen_mmu_set_pud", "pud_val(native_make_pud()): Xen paravirt page-table translation"),
    ("xen/xen_mmu_set_pmd", "pmd_val(native_make_pmd()): Xen paravirt page-table translation"),
    ("xen/xen_mmu_set_pte", "pte_val(native_make_pte()): Xen paravirt page-table translation"),
    ("xen/xen_mc_extend_args", "xen_hypercall_name(): a kernel table"),
    ("xen/xen_mc_entry", "xen_hypercall_name(): a kernel table"),
    ("intel_iommu/prq_report", "decode_prq_descriptor(): a kernel function"),
    ("ras/extlog_mem_event", "cper_severity_str()/cper_mem_err_unpack(): kernel functions"),
];

#[test]
fn every_fixture_format_compiles() {
    let dir = fixtures();
    let (mut parsed, mut compiled) = (0, 0);
    let mut failed = Vec::new();
    for name in ["events.dat", "wide.dat", "fg.dat", "func.dat", "kprobe.dat", "stack.dat", "events-v6.dat"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let dat = TraceDat::open(&bytes).unwrap();
        for ev in events_of(&dat).list() {
            parsed += 1;
            match Program::compile(ev) {
                Ok(_) => compiled += 1,
                Err(_) if COMPILE_EXCEPTIONS.iter().any(|(k, _)| *k == format!("{}/{}", ev.system, ev.name)) => {}
                Err(e) => failed.push(format!("{name}: {}/{}: {e}: {}", ev.system, ev.name, ev.print_fmt)),
            }
        }
    }
    eprintln!("fixture formats: {parsed} parsed, {compiled} compiled");
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// Per-CPU (name, text) of the kernel's trace file.
fn trace_lines(text: &str, ncpu: usize) -> Vec<Vec<(String, String)>> {
    let mut v = vec![Vec::new(); ncpu];
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let b = line.as_bytes();
        let Some(i) = (0..b.len().saturating_sub(5)).find(|&i| {
            b[i] == b'[' && b[i + 4] == b']' && b[i + 1..i + 4].iter().all(u8::is_ascii_digit) && b[i + 5] == b' '
        }) else {
            continue;
        };
        let cpu: usize = line[i + 1..i + 4].parse().unwrap();
        let rest = &line[i + 6..];
        let Some(c) = rest.find(": ") else { continue };
        let rest = &rest[c + 2..];
        let (name, t) = rest.split_once(": ").unwrap_or((rest, ""));
        if cpu < ncpu {
            v[cpu].push((name.to_string(), t.to_string()));
        }
    }
    v
}

#[test]
fn fixture_text_matches_kernel() {
    let dir = fixtures();
    let mut report = Vec::new();
    for base in ["x-events", "x-wide"] {
        let bytes = std::fs::read(dir.join(format!("{base}.extract.dat"))).unwrap();
        let text = std::fs::read_to_string(dir.join(format!("{base}.trace.txt"))).unwrap();
        let dat = TraceDat::open(&bytes).unwrap();
        let events = events_of(&dat);
        let programs: Vec<_> = events.list().iter().map(Program::compile).collect();
        let ksyms = Ksyms::parse(dat.kallsyms.as_bytes());
        let printk = Printk::parse(dat.printk.as_bytes());
        let mut env = Env::new(dat.endian, dat.long_size as usize);
        env.ksyms = Some(&ksyms);
        env.printk = Some(&printk);
        let buf = dat.top().expect("top buffer").clone();
        let layout = dat.layout(&buf);
        let ncpu = buf.cpus.iter().map(|c| c.cpu as usize + 1).max().unwrap_or(0);
        let klines = trace_lines(&text, ncpu);
        let (mut compared, mut identical, mut hashed, mut skipped) = (0, 0, 0, 0);
        let mut diffs = Vec::new();
        for c in &buf.cpus {
            let mut k = klines[c.cpu as usize].iter();
            let mut pages = dat.cpu_pages(&buf, c);
            while let Some(p) = pages.next_page() {
                let p = p.unwrap().to_vec();
                let page = Page::parse(&layout, &p).unwrap();
                for r in page.records() {
                    let r = r.unwrap();
                    let id = dat.endian.u16([r.data[0], r.data[1]]);
                    let i = events.index_of(id).expect("known event id");
                    let ev = &events.list()[i];
                    let Some((kname, ktext)) = k.next() else { panic!("{base}: more records than trace lines") };
                    if printed_by_kernel_code(ev) {
                        skipped += 1;
                        continue;
                    }
                    assert_eq!(kname, &ev.name, "{base} cpu{}: out of step", c.cpu);
                    if has_plain_p(ev) {
                        hashed += 1;
                        continue;
                    }
                    compared += 1;
                    let mut out = String::new();
                    let r = match &programs[i] {
                        Ok(p) => p.render(ev, r.data, &env, &mut out).map_err(|e| e.what),
                        Err(e) => Err(e.what),
                    };
                    match r {
                        Ok(_) if out == *ktext => identical += 1,
                        other => {
                            if diffs.len() < 20 {
                                diffs.push(format!("{}: {:?}\n  kernel: {ktext}\n  ours:   {out}", ev.name, other.err()));
                            }
                        }
                    }
                }
            }
        }
        eprintln!(
            "{base}: {compared} lines compared, {identical} identical, {hashed} with hashed %p not compared, \
             {skipped} skipped (ftrace/syscalls printers)"
        );
        assert!(compared > 0);
        report.extend(diffs);
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}
