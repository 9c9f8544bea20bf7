//! Event format files: `events/header_page`, `events/header_event` and
//! `events/SYSTEM/EVENT/format`. Nothing about a layout is hard-coded: field
//! order, sizes and types come from the text, because they change between
//! kernels (funcgraph_exit gained `retval` in 6.5, entries gained args).
//!
//! OWNER: the `fmt` work (format + printfmt + ksyms). Contract for users:
//! `Field`, `FieldKind`, `Event` and `parse_event` keep these names.

use alloc::string::String;
use alloc::vec::Vec;

/// How a field's bytes are laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A plain integer or pointer of `size` bytes.
    Scalar,
    /// A fixed array `type name[N]` (N elements of `size / N` bytes); `char[N]` is a string.
    Array(usize),
    /// `__data_loc`: a u32 whose low 16 bits are the offset from the record start, high 16 the length.
    DataLoc,
    /// `__rel_loc`: like DataLoc but the offset is relative to the end of this field.
    RelLoc,
}

#[derive(Clone, Debug)]
pub struct Field {
    pub name: String,
    /// The C type as written, without the name (`unsigned long`, `char`, `__data_loc char[]`).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub kind: FieldKind,
}

#[derive(Clone, Debug)]
pub struct Event {
    pub id: u16,
    pub system: String,
    pub name: String,
    /// Every field in file order, `common_*` first.
    pub fields: Vec<Field>,
    /// The text after `print fmt: `.
    pub print_fmt: String,
}
