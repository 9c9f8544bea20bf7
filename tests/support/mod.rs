//! Helpers shared by the integration tests (each test file is its own
//! crate; `mod support;` pulls this in).

use std::path::Path;

/// x-kstack (stack traces: `=>` lines) rewritten with instance buffers, the
/// way `trace-cmd extract -B` lays a file out: `bufs` names the buffers
/// ("" = top) and says which carry the records (the same records in each:
/// equal timestamps show the merge's tie order).
pub fn with_instances(version: u32, bufs: &[(&str, bool)]) -> Vec<u8> {
    use ftbox::tracedat::write::{self, Buffer, Meta, Seg};
    let orig = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/vm-6.12/x-kstack.extract.dat")).unwrap();
    let td = ftbox::tracedat::TraceDat::open(&orig).unwrap();
    let (mut ftrace, mut systems) = (Vec::new(), Vec::<(String, Vec<Vec<u8>>)>::new());
    for f in &td.formats {
        let text = f.text.clone().into_bytes();
        match systems.last_mut() {
            _ if f.system == "ftrace" => ftrace.push(text),
            Some((s, v)) if *s == f.system => v.push(text),
            _ => systems.push((f.system.clone(), vec![text])),
        }
    }
    let b = td.top().unwrap();
    let cpus = td.options.cpu_count.unwrap();
    let mut data = vec![Vec::new(); cpus as usize];
    for c in &b.cpus {
        let mut cp = td.cpu_pages(b, c);
        while let Some(p) = cp.next_page() {
            data[c.cpu as usize].extend_from_slice(p.unwrap());
        }
    }
    let clock = b.clock.clone().or_else(|| td.options.clock().map(String::from)).unwrap_or_else(|| "local".into());
    let buffers = bufs
        .iter()
        .map(|&(n, full)| Buffer { name: n.into(), clock: clock.clone(), page_size: b.page_size, cpu_sizes: data.iter().map(|d| if full { d.len() as u64 } else { 0 }).collect() })
        .collect();
    let meta = Meta {
        version,
        big_endian: false,
        long_size: td.long_size,
        page_size: td.page_size,
        header_page: td.header_page.clone().into_bytes(),
        header_event: td.header_event.clone().into_bytes(),
        ftrace_formats: ftrace,
        systems,
        kallsyms: td.kallsyms.clone().into_bytes(),
        printk_formats: td.printk.clone().into_bytes(),
        cmdlines: td.cmdlines.clone().into_bytes(),
        cpus,
        options: Vec::new(),
        buffers,
    };
    let mut out = Vec::new();
    for s in write::layout(&meta) {
        match s {
            Seg::Bytes(b) => out.extend_from_slice(&b),
            Seg::Data { buffer, cpu, .. } => out.extend_from_slice(if bufs[buffer].1 { &data[cpu] } else { &[] }),
        }
    }
    out
}
