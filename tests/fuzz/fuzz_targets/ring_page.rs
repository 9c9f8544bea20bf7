//! Ring-buffer pages (src/ring.rs): the header, the record walk (time
//! extends, absolute stamps, padding), and the merge of two CPUs' pages
//! (src/merge.rs).
//!
//! Input: one byte of layout, then pages. Layout bits: 0 big-endian,
//! 1 a 4-byte `long`, 2-3 the page size (4096, 1024, 8192, all of the
//! rest), 4 padding deltas count (trace-cmd's timestamps). The pages go to
//! CPUs 0 and 1 in turn.
#![no_main]

use ftbox::cursor::Endian;
use ftbox::merge::{Fill, Merge, PageSource};
use ftbox::ring::{Page, PageLayout};
use ftbox::tracedat::Error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else { return };
    let endian = if flags & 1 != 0 { Endian::Big } else { Endian::Little };
    let long = if flags & 2 != 0 { 4 } else { 8 };
    let size = match (flags >> 2) & 3 {
        0 => 4096,
        1 => 1024,
        2 => 8192,
        _ => rest.len().max(1),
    };
    let mut layout = PageLayout::new(endian, long, size as u32);
    layout.padding_delta = flags & 16 != 0;

    // Each page alone, through the iterator.
    for p in rest.chunks(size) {
        let Ok(page) = Page::parse(&layout, p) else { continue };
        let _ = (page.data_len(), page.is_empty(), page.lost);
        for r in page.records() {
            if r.is_err() {
                break;
            }
        }
    }

    // The pages as two CPUs' streams, merged by time.
    let mut cpus = [Vec::new(), Vec::new()];
    for (i, p) in rest.chunks(size).enumerate() {
        cpus[i % 2].push(p);
    }
    let [a, b] = cpus;
    let sources: Vec<Box<dyn PageSource>> = vec![Box::new(Pages { cpu: 0, pages: a, next: 0 }), Box::new(Pages { cpu: 1, pages: b, next: 0 })];
    let mut m = Merge::new(layout, sources);
    while m.next().is_some() {}
});

/// One CPU's pages from the input.
struct Pages<'a> {
    cpu: u32,
    pages: Vec<&'a [u8]>,
    next: usize,
}

impl PageSource for Pages<'_> {
    fn cpu(&self) -> u32 {
        self.cpu
    }
    fn fill(&mut self, page: &mut Vec<u8>) -> Result<Fill, Error> {
        let Some(p) = self.pages.get(self.next) else { return Ok(Fill::End) };
        self.next += 1;
        page.clear();
        page.extend_from_slice(p);
        Ok(Fill::Page)
    }
}
