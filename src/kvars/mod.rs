//! Values of the running kernel that some print fmts read but no record
//! holds: kmem's `page=%p` is `(struct page *)vmemmap_base + pfn`, which
//! needs the variable `vmemmap_base` (KASLR picks it at boot) and the size
//! of `struct page`. A recorder reads them once (the address from
//! /proc/kallsyms, the value from /proc/kcore, the size from BTF; where
//! kallsyms lists no data symbols or there is no kcore, from the kernel's
//! own text of one mm_page_alloc record) and keeps them as `name=value`
//! lines beside the recording; the printers look the names up in
//! `printfmt::Env::enums`, where a missing one makes the line partial
//! instead of wrong.
//!
//! Only values that stay fixed after boot belong here: a snapshot of
//! `jiffies` (writeback's `age=`) would print a wrong age as if exact.

use crate::ksyms::Enums;

// Reading the values from the running kernel: workstation builds (the
// values are x86_64's; `make tiny`, the board build, leaves it out).
#[cfg(feature = "kvars")]
mod read;
#[cfg(feature = "kvars")]
pub use read::*;

/// `to_text`'s lines back into a table; lines that do not parse are skipped.
pub fn parse_text(text: &str) -> Enums {
    let mut e = Enums::new();
    for l in text.lines() {
        let Some((n, v)) = l.split_once('=') else { continue };
        let v = v.trim_ascii();
        let v = match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16),
            None => v.parse(),
        };
        if let Ok(v) = v {
            e.push(n, v);
        }
    }
    e.finish();
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_text() {
        let e = parse_text("vmemmap_base=0xffd4000000000000\nsizeof(struct page)=0x40\nn=12\n");
        assert_eq!(e.get("sizeof(struct page)"), Some(64));
        assert_eq!(e.get("vmemmap_base"), Some(0xffd4_0000_0000_0000));
        assert_eq!(e.get("n"), Some(12));
        assert_eq!(parse_text("junk\nx=zz\n").len(), 0);
    }
}
