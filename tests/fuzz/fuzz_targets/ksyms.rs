//! Symbol tables (src/ksyms.rs): /proc/kallsyms text and its lookups,
//! printk_formats text, and the BTF enumerator reader.
//!
//! Input: the text (or blob); addresses to look up come from it too.
#![no_main]

use ftbox::ksyms::{Enums, Ksyms, Printk};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let k = Ksyms::parse(data);
    let p = Printk::parse(data);
    // Addresses near the ones the text names, and the input's own words.
    let mut addrs = vec![0, u64::MAX, 0xffff_ffff_8100_0000];
    for line in data.split(|&b| b == b'\n').take(64) {
        let w = line.split(|&b| b == b' ').next().unwrap_or(b"");
        let w = w.strip_prefix(b"0x").unwrap_or(w);
        if let Ok(a) = u64::from_str_radix(&String::from_utf8_lossy(w), 16) {
            addrs.push(a);
        }
    }
    for a in addrs {
        for d in [0, 1, 0x10] {
            let x = a.wrapping_add(d);
            if let Some(s) = k.lookup(x) {
                let _ = k.addr_of(s.name);
            }
            let _ = p.lookup(x);
        }
    }
    let e = Enums::parse_btf(data);
    let _ = (e.get("HRTIMER_MODE_ABS"), e.len());
});
