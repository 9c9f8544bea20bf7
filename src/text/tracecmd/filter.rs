//! Where a field's bytes lie in a record: shared by the trace-cmd printer
//! and the report-time filters of `decode` (`-F`, `--graph`).

use crate::cursor::{read_uint, Endian};
use crate::format::FieldAt;
use crate::format::{Event, FieldKind};

/// The field `name` of `e`, as the printers read it.
pub fn field(e: &Event, name: &str) -> Option<FieldAt> {
    super::fld(e, name)
}

/// Where a string or array field's bytes lie: (start, length). With
/// `flex`, a flexible `char buf[]` runs to the end of the record.
pub fn loc(d: &[u8], f: FieldAt, kind: &FieldKind, e: Endian, flex: bool) -> (usize, usize) {
    let o = f.off as usize;
    match kind {
        FieldKind::DataLoc | FieldKind::RelLoc => {
            let v = read_uint(d, o, 4, e).unwrap_or(0) as usize;
            let rel = if *kind == FieldKind::RelLoc { o + 4 } else { 0 };
            ((v & 0xffff) + rel, v >> 16)
        }
        FieldKind::Array(_) if flex && f.size == 0 => (o, d.len().saturating_sub(o)),
        _ => (o, f.size as usize),
    }
}

