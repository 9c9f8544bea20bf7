//! Event format files (src/format.rs): `name:`, `ID:`, the `field:`
//! lines, `print fmt:`; then each field read out of a record (the input's
//! bytes again), and the TRACE_DEFINE_ENUM rewrite of the print fmt's
//! arguments.
//!
//! Input: a format file as tracefs prints it.
#![no_main]

use ftbox::cursor::Endian;
use ftbox::format::{self, Events};
use ftbox_fuzz::text;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let t = text(data);
    let _ = format::parse_fields(&t);
    if let Ok(ev) = format::parse_event("sys", &t) {
        for f in &ev.fields {
            let _ = f.elem_size(8);
            let _ = f.elem_size(4);
            for e in [Endian::Little, Endian::Big] {
                let _ = f.data(data, e);
                let _ = f.int(data, e);
            }
        }
        let _ = (ev.field("common_pid"), ev.field_index("ip"));
        let mut evs = Events::new();
        let id = ev.id;
        evs.insert(ev.clone());
        evs.insert(ev);
        let _ = (evs.by_id(id), evs.by_name("sys", "x"));
    }
    // Every identifier resolves (to its length): the rewrite runs on all.
    let _ = format::resolve_enums(data, &mut |w| Some(w.len() as u64));
    let mut f = data.to_vec();
    format::resolve_enums_btf(&mut [&mut f], &|| Vec::new());
});
