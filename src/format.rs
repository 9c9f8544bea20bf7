//! Event format files: `events/header_page`, `events/header_event` and
//! `events/SYSTEM/EVENT/format`. Nothing about a layout is hard-coded: field
//! order, sizes and types come from the text, because they change between
//! kernels (funcgraph_exit gained `retval` in 6.5, entries gained args).
//!
//! API:
//! - `parse_event(system, text) -> Result<Event, FormatError>`: one `format` file.
//! - `parse_fields(text) -> Result<Vec<Field>, FormatError>`: just the `field:` lines
//!   (what `events/header_page` holds).
//! - `Events`: the table of every event of a recording, sorted by id.

use alloc::string::String;
use alloc::vec::Vec;
use core::fmt;

use crate::cursor::{read_uint, Endian};

/// How a field's bytes are laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A plain integer or pointer of `size` bytes.
    Scalar,
    /// A fixed array `type name[N]` (N elements of `size / N` bytes); `char[N]` is a string.
    /// `Array(0)` is a flexible array (`char buf[]`, size 0): it runs to the end of the record.
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
    /// For fixed arrays this is the element type (`char` for `char comm[16]`).
    pub ctype: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    pub kind: FieldKind,
    /// Size of one element: `size` for scalars, `size / N` for arrays, the element
    /// type's size for dynamic arrays (0 when the type's width is the recording's
    /// `long`, which the format text does not say; see `elem_size`).
    pub elem: usize,
    /// The element type is a character type (`char`, `unsigned char`, `signed char`):
    /// arrays of it print as strings.
    pub is_char: bool,
    /// The type is a pointer (`const char *`, `void *`).
    pub is_ptr: bool,
}

impl Field {
    /// A field as a format line would describe it; the derived members
    /// (`elem`, `is_char`, `is_ptr`) come from `ctype` and `kind`. For code
    /// that builds events by hand (tests) instead of parsing a format.
    pub fn new(name: &str, ctype: &str, offset: usize, size: usize, signed: bool, kind: FieldKind) -> Field {
        let is_ptr = ctype.contains('*');
        let base = base_type(ctype);
        let is_char = !is_ptr && crate::util::one_of("char|unsigned char|signed char", base);
        let elem = match kind {
            FieldKind::Scalar => size,
            FieldKind::Array(n) if n > 0 && size.is_multiple_of(n) => size / n,
            _ => match type_size(base, is_ptr) {
                0 if matches!(kind, FieldKind::Array(_)) => 1,
                t => t,
            },
        };
        Field { name: name.into(), ctype: ctype.into(), offset, size, signed, kind, elem, is_char, is_ptr }
    }

    /// Element size, resolving `long`-sized types with the recording's long size.
    pub fn elem_size(&self, long_size: usize) -> usize {
        if self.elem == 0 {
            long_size
        } else {
            self.elem
        }
    }

    /// The bytes this field refers to in `rec` (the payload starting at
    /// common_type): the scalar itself, the fixed array, or the dynamic array
    /// the `__data_loc`/`__rel_loc` word points at. `None` when out of bounds.
    pub fn data<'a>(&self, rec: &'a [u8], endian: Endian) -> Option<&'a [u8]> {
        match self.kind {
            FieldKind::Scalar => rec.get(self.offset..self.offset.checked_add(self.size)?),
            FieldKind::Array(0) if self.size == 0 => rec.get(self.offset..),
            FieldKind::Array(_) => rec.get(self.offset..self.offset.checked_add(self.size)?),
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let w = read_uint(rec, self.offset, 4, endian).ok()? as usize;
                let mut off = w & 0xffff;
                let len = w >> 16;
                if self.kind == FieldKind::RelLoc {
                    off += self.offset + self.size;
                }
                rec.get(off..off.checked_add(len)?)
            }
        }
    }

    /// Read a scalar field as u64, sign-extended when the field is signed.
    pub fn int(&self, rec: &[u8], endian: Endian) -> Option<u64> {
        let v = read_uint(rec, self.offset, self.size, endian).ok()?;
        Some(if self.signed { sext(v, self.size) } else { v })
    }
}

/// Where a field sits in a record, small enough to keep per event kind and
/// read per record without looking the field up again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldAt {
    pub off: u16,
    pub size: u8,
    pub signed: bool,
}

impl FieldAt {
    pub fn of(f: &Field) -> FieldAt {
        FieldAt { off: f.offset.min(u16::MAX as usize) as u16, size: f.size.min(255) as u8, signed: f.signed }
    }

    /// The value, sign-extended when the field is signed; 0 when the
    /// record is too short (a corrupt record prints zeros, never panics).
    #[inline]
    pub fn get(self, d: &[u8], e: Endian) -> u64 {
        // One 8-byte load, the field's bytes last, then shifts for the
        // size, byte order and sign: every field of every record comes
        // through here, and the general read (a slice per size, a match
        // on size and byte order) cost some fifty instructions a field.
        // Fields in the first 8 bytes of a record (the common header's
        // type and flags) take the general read below.
        let size = self.size as u32;
        let end = self.off as usize + self.size as usize;
        if cfg!(feature = "fast-print") && matches!(size, 1 | 2 | 4 | 8) {
            if let Some(w) = crate::sys::bytes::word_ending(d, end) {
                let sh = 64 - 8 * size;
                // The field's bytes at the top of x.
                let x = match e {
                    Endian::Little => w,
                    Endian::Big => w.swap_bytes() << sh,
                };
                return if self.signed { ((x as i64) >> sh) as u64 } else { x >> sh };
            }
        }
        self.get_read(d, e)
    }

    /// [`FieldAt::get`] through the general read: apart, so that the
    /// one-load path above needs no stack frame.
    #[cfg_attr(feature = "fast-print", cold, inline(never))]
    fn get_read(self, d: &[u8], e: Endian) -> u64 {
        let v = read_uint(d, self.off as usize, self.size as usize, e).unwrap_or(0);
        if self.signed {
            sext(v, self.size as usize)
        } else {
            v
        }
    }

    /// Where a string or array field's bytes lie in record `d`: (start,
    /// length). A `__data_loc`/`__rel_loc` field holds them as a 32-bit
    /// offset:length; with `flex`, a flexible `char buf[]` runs to the end
    /// of the record.
    pub fn loc(self, d: &[u8], kind: &FieldKind, e: Endian, flex: bool) -> (usize, usize) {
        let o = self.off as usize;
        match kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let v = read_uint(d, o, 4, e).unwrap_or(0) as usize;
                let rel = if *kind == FieldKind::RelLoc { o + 4 } else { 0 };
                ((v & 0xffff) + rel, v >> 16)
            }
            FieldKind::Array(_) if flex && self.size == 0 => (o, d.len().saturating_sub(o)),
            _ => (o, self.size as usize),
        }
    }
}

/// Sign-extend the low `size` bytes of `v`.
pub(crate) fn sext(v: u64, size: usize) -> u64 {
    if size == 0 || size >= 8 {
        return v;
    }
    let sh = 64 - 8 * size as u32;
    (((v << sh) as i64) >> sh) as u64
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
    /// How many of `fields` are the common header (`common_*`).
    pub ncommon: usize,
}

/// An event without fields, for what prints without a record (constant
/// folding, bprint): no allocation where one is needed.
pub(crate) static NO_EVENT: Event =
    Event { id: 0, system: String::new(), name: String::new(), fields: Vec::new(), print_fmt: String::new(), ncommon: 0 };

impl Event {
    /// An event built by hand; `ncommon` counts the leading `common_*` fields.
    pub fn new(id: u16, system: &str, name: &str, fields: Vec<Field>, print_fmt: &str) -> Event {
        let ncommon = fields.iter().take_while(|f| f.name.starts_with("common_")).count();
        Event { id, system: system.into(), name: name.into(), fields, print_fmt: print_fmt.into(), ncommon }
    }

    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.get(self.field_index(name)?)
    }
    /// Where field `name` sits in a record. Out of line: the classifiers
    /// call it once for each field of every type they know.
    #[inline(never)]
    pub fn field_at(&self, name: &str) -> Option<FieldAt> {
        self.field(name).map(FieldAt::of)
    }
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }
}

/// A format file that cannot be read. `line` is 1-based (0 = no particular line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatError {
    pub line: usize,
    pub what: &'static str,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line > 0 {
            write!(f, "line {}: {}", self.line, self.what)
        } else {
            f.write_str(self.what)
        }
    }
}

/// The last position of any of the ASCII bytes `set` in `s`: one loop for
/// every such search (a char-array pattern instantiates core's searcher
/// once per array length).
fn rfind_any(s: &str, set: &[u8]) -> Option<usize> {
    s.bytes().rposition(|c| set.contains(&c))
}

fn num(s: &str) -> Option<usize> {
    s.trim_ascii().parse().ok()
}

/// Parse one `field:TYPE NAME; offset:N; size:N; signed:N;` line (after the
/// leading whitespace). Older kernels omit `signed:`.
fn parse_field(line: &str) -> Result<Field, &'static str> {
    field_line(line).map(|l| l.field())
}

/// A field line taken apart, every check of [`parse_field`] done but
/// nothing built: enough for a format whose fields are not kept.
struct FieldLine<'a> {
    name: &'a str,
    ctype: &'a str,
    offset: usize,
    size: usize,
    signed: bool,
    kind: FieldKind,
}

impl FieldLine<'_> {
    fn field(self) -> Field {
        let mut f = Field::new(self.name, self.ctype, self.offset, self.size, self.signed, self.kind);
        // `type name[]` with a size: the count follows from the element size.
        if let FieldKind::Array(0) = f.kind {
            if self.size > 0 && f.elem > 0 {
                f.kind = FieldKind::Array(self.size / f.elem);
            }
        }
        f
    }
}

fn field_line(line: &str) -> Result<FieldLine<'_>, &'static str> {
    let rest = line.strip_prefix("field:").ok_or("expected field:")?;
    let mut parts = rest.split(';');
    let decl = parts.next().unwrap_or("").trim_ascii();
    let (mut offset, mut size, mut signed) = (None, None, None);
    for p in parts {
        let p = p.trim_ascii();
        if let Some(v) = p.strip_prefix("offset:") {
            offset = num(v);
        } else if let Some(v) = p.strip_prefix("size:") {
            size = num(v);
        } else if let Some(v) = p.strip_prefix("signed:") {
            signed = num(v);
        }
    }
    let offset = offset.ok_or("field without offset")?;
    let size = size.ok_or("field without size")?;
    let signed = signed.unwrap_or(0) != 0;

    // `__data_loc char[] name`: the brackets belong to the type.
    let dyn_loc = if decl.starts_with("__data_loc") {
        Some(FieldKind::DataLoc)
    } else if decl.starts_with("__rel_loc") {
        Some(FieldKind::RelLoc)
    } else {
        None
    };
    let set: &[u8] = if dyn_loc.is_some() { b" \t]*" } else { b" \t*" };
    let mut kind = FieldKind::Scalar;
    let mut head = decl;
    if let Some(k) = dyn_loc {
        kind = k;
    } else if let Some(array) = decl.strip_suffix(']') {
        let (before, inner) = array.split_once('[').ok_or("bad field declaration")?;
        // The count may be a number or (older kernels) a symbolic constant;
        // then the size decides the layout below.
        kind = FieldKind::Array(if inner.trim_ascii().is_empty() { 0 } else { num(inner).unwrap_or(0) });
        head = before.trim_ascii_end();
    }
    let sp = rfind_any(head, set).ok_or("bad field declaration")?;
    let (ctype, name) = head.split_at_checked(sp + 1).ok_or("bad field declaration")?;
    let (name, ctype) = (name.trim_ascii(), ctype.trim_ascii());
    if name.is_empty() {
        return Err("field without a name");
    }
    Ok(FieldLine { name, ctype, offset, size, signed, kind })
}

/// The type without `__data_loc`/`__rel_loc`, `const`, `volatile` and `[]`.
fn base_type(ctype: &str) -> &str {
    let mut t = ctype.trim_ascii();
    if let Some(r) = t.strip_prefix("__data_loc").or_else(|| t.strip_prefix("__rel_loc")) {
        t = r.trim_ascii_start();
    }
    if let Some((before, _)) = t.split_once('[') {
        t = before.trim_ascii_end();
    }
    loop {
        if let Some(r) = t.strip_prefix("const ") {
            t = r.trim_ascii_start();
        } else if let Some(r) = t.strip_prefix("volatile ") {
            t = r.trim_ascii_start();
        } else {
            break;
        }
    }
    t
}

/// Byte size of a C scalar type name; 0 when it is as wide as `long`
/// (decided by the recording) or unknown.
pub fn type_size(t: &str, is_ptr: bool) -> usize {
    if is_ptr {
        return 0;
    }
    // Index i of TYPE_SIZES: types of 1 << i bytes.
    const TYPE_SIZES: [&str; 4] = [
        "char|signed char|unsigned char|u8|s8|__u8|__s8|bool|_Bool|uint8_t|int8_t",
        "short|unsigned short|signed short|short int|unsigned short int|u16|s16|__u16|__s16|__be16|__le16|uint16_t|int16_t",
        "int|unsigned int|signed int|unsigned|signed|u32|s32|__u32|__s32|__be32|__le32|uint32_t|int32_t|pid_t|gfp_t|uid_t\
         |gid_t|dev_t|__kernel_pid_t|umode_t|uint|u_int|__kernel_rwf_t|blk_opf_t|blk_status_t|fmode_t|slab_flags_t|vm_fault_t",
        "long long|unsigned long long|long long int|unsigned long long int|signed long long\
         |u64|s64|__u64|__s64|__be64|__le64|uint64_t|int64_t|loff_t|sector_t|ktime_t",
    ];
    let mut n = 1;
    for l in TYPE_SIZES {
        if crate::util::one_of(l, t) {
            return n;
        }
        n *= 2;
    }
    0
}

/// Parse every `field:` line of `text` (the common fields first), as found in
/// `events/header_page` and in the `format:` block of an event.
pub fn parse_fields(text: &str) -> Result<Vec<Field>, FormatError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_ascii();
        if line.starts_with("field:") {
            out.push(parse_field(line).map_err(|what| FormatError { line: i + 1, what })?);
        }
    }
    Ok(out)
}

/// Parse one `events/SYSTEM/EVENT/format` file.
pub fn parse_event(system: &str, text: &str) -> Result<Event, FormatError> {
    parse_event_if(system, text, &|_| true)
}

/// [`parse_event`], where an event whose id `wanted` rejects keeps its
/// name and id only: its field lines are checked (a bad one is the same
/// error) but nothing is built from them. The name still answers `-e`
/// and the by-name lookups; an `-e all` recording has thousands of
/// formats and uses a few hundred, and the fields of the others were
/// most of ftcat's memory and of the time it spent on formats.
pub fn parse_event_if(system: &str, text: &str, wanted: &dyn Fn(u16) -> bool) -> Result<Event, FormatError> {
    // Fields are built until the ID says they are not wanted (it comes
    // before them in every kernel's format files).
    let mut keep = true;
    let mut skipped = false;
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut ncommon = 0;
    let mut print_fmt = None;
    let mut in_common = true;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_ascii();
        let err = |what| FormatError { line: i + 1, what };
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim_ascii());
        } else if let Some(v) = line.strip_prefix("ID:") {
            let n = num(v).and_then(|v| u16::try_from(v).ok()).ok_or(err("bad ID"))?;
            id = Some(n);
            // (The board build builds every field: less code.)
            keep = !cfg!(feature = "fast-print") || wanted(n);
        } else if line.starts_with("field:") {
            let l = field_line(line).map_err(err)?;
            if !keep {
                skipped = true;
                continue;
            }
            let f = l.field();
            if in_common && f.name.starts_with("common_") {
                ncommon += 1;
            } else {
                in_common = false;
            }
            fields.push(f);
        } else if line.is_empty() && !fields.is_empty() {
            in_common = false;
        } else if line.starts_with("print fmt:") {
            // The print fmt runs to the end of the file: a format string may
            // hold newlines (ext4_fc_stats, fsmap events). Keep it verbatim.
            // `line` is a slice of `text`: where it starts is where the rest is.
            let at = line.as_ptr() as usize - text.as_ptr() as usize + "print fmt:".len();
            let v = text.get(at..).unwrap_or("");
            let mut v = v.strip_prefix(' ').unwrap_or(v);
            while let Some(r) = v.strip_suffix('\n').or_else(|| v.strip_suffix('\r')) {
                v = r;
            }
            print_fmt = Some(v);
            break;
        }
    }
    let name = name.ok_or(FormatError { line: 0, what: "no name: line" })?;
    let id = id.ok_or(FormatError { line: 0, what: "no ID: line" })?;
    if !wanted(id) {
        (fields, print_fmt, ncommon) = (Vec::new(), None, 0);
    } else if skipped {
        // A second ID line wants what the first did not (a damaged file).
        return parse_event(system, text);
    }
    Ok(Event {
        id,
        system: system.into(),
        name: name.into(),
        fields,
        print_fmt: print_fmt.unwrap_or("").into(),
        ncommon,
    })
}

/// Every event of a recording, sorted by id for binary search.
#[derive(Clone, Debug, Default)]
pub struct Events {
    list: Vec<Event>,
}

impl Events {
    pub fn new() -> Self {
        Events { list: Vec::new() }
    }
    /// Add an event; an event with the same id replaces the old one.
    pub fn insert(&mut self, ev: Event) {
        match self.list.binary_search_by_key(&ev.id, |e| e.id) {
            Ok(i) => self.list[i] = ev,
            Err(i) => self.list.insert(i, ev),
        }
    }
    pub fn by_id(&self, id: u16) -> Option<&Event> {
        self.index_of(id).map(|i| &self.list[i])
    }
    /// Position of the event with `id` in `list()`: callers keep per-event
    /// state (compiled programs, counters) in a Vec parallel to this table.
    pub fn index_of(&self, id: u16) -> Option<usize> {
        self.list.binary_search_by_key(&id, |e| e.id).ok()
    }
    pub fn by_name(&self, system: &str, name: &str) -> Option<&Event> {
        self.list.iter().find(|e| e.name == name && (system.is_empty() || e.system == system))
    }
    pub fn list(&self) -> &[Event] {
        &self.list
    }
    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// What the kernel does for enums declared with TRACE_DEFINE_ENUM
/// (update_event_printk() in trace_events.c), for the names it was not told
/// about: in the argument part of `text`'s `print fmt:` line, replace each
/// identifier that `value` knows by its decimal value. Like the kernel, it
/// leaves alone strings, character constants, members (`REC->x`, `.x`);
/// it also skips calls, type words, and tags after struct/union/enum.
/// `value` is asked for every other identifier (so a first pass with a
/// `value` that answers None tells whether any is left). Returns the new
/// text, or None when nothing was replaced.
pub fn resolve_enums(text: &[u8], value: &mut dyn FnMut(&str) -> Option<u64>) -> Option<Vec<u8>> {
    let key = b"\nprint fmt: ";
    let start = text.windows(key.len()).position(|w| w == key)? + key.len();
    let end = text[start..].iter().position(|&c| c == b'\n').map_or(text.len(), |n| start + n);
    let line = &text[start..end];
    let mut out: Vec<u8> = Vec::new();
    let mut copied = 0; // bytes of `line` already in `out`
    let mut i = 0;
    let mut in_fmt = true; // the format string itself is never rewritten
    let mut prev_member = false; // the last token was `->` or `.`
    let mut prev_tag = false; // the last token was struct/union/enum
    while i < line.len() {
        let c = line[i];
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < line.len() && line[i] != c {
                i += if line[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            if c == b'"' {
                in_fmt = false;
            }
            prev_member = false;
            continue;
        }
        if c.is_ascii_digit() {
            // A number, suffixes and hex digits included: never a name.
            while i < line.len() && (line[i].is_ascii_alphanumeric() || line[i] == b'_') {
                i += 1;
            }
            prev_member = false;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let s = i;
            while i < line.len() && (line[i].is_ascii_alphanumeric() || line[i] == b'_') {
                i += 1;
            }
            let word = crate::util::word(&line[s..i]);
            let call = line[i..].iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'(');
            let skip = in_fmt || prev_member || prev_tag || call || crate::util::one_of("REC|sizeof", word)
                || crate::printfmt::is_type_word(word);
            prev_tag = crate::util::one_of("struct|union|enum", word);
            prev_member = false;
            if skip {
                continue;
            }
            if let Some(v) = value(word) {
                out.extend_from_slice(&line[copied..s]);
                // The kernel writes the value with %ld; a negative one in
                // parentheses, so that `-NAME` does not become `--1`.
                let neg = (v as i64) < 0;
                if neg {
                    out.push(b'(');
                }
                crate::printfmt::printf::append(&mut out, &mut |o| crate::printfmt::printf::sdec(o, v));
                if neg {
                    out.push(b')');
                }
                copied = i;
            }
            continue;
        }
        if !c.is_ascii_whitespace() {
            prev_member = c == b'.' || (c == b'>' && i > 0 && line[i - 1] == b'-');
            prev_tag = false;
        }
        i += 1;
    }
    if copied == 0 {
        return None;
    }
    let mut t = Vec::with_capacity(text.len() + 16);
    t.extend_from_slice(&text[..start]);
    t.extend_from_slice(&out);
    t.extend_from_slice(&line[copied..]);
    t.extend_from_slice(&text[end..]);
    Some(t)
}

/// `resolve_enums` over every format of a recording, with the kernel's BTF
/// (`btf` is called only when some print fmt names an unresolved
/// identifier): ftrec writes the values, so that any reader (ftcat,
/// trace-cmd) prints HRTIMER_MODE_* & co as the kernel does.
pub fn resolve_enums_btf(formats: &mut [&mut Vec<u8>], btf: &dyn Fn() -> Vec<u8>) {
    // The names asked for, sorted, with their values (the first found wins).
    let mut names: Vec<(String, Option<u64>)> = Vec::new();
    fn find(names: &[(String, Option<u64>)], w: &str) -> Result<usize, usize> {
        names.binary_search_by(|n| n.0.as_str().cmp(w))
    }
    for f in formats.iter() {
        resolve_enums(f, &mut |w| {
            if let Err(at) = find(&names, w) {
                names.insert(at, (String::from(w), None));
            }
            None
        });
    }
    if names.is_empty() {
        return;
    }
    crate::ksyms::btf_enumerators(&btf(), &mut |w, v| {
        if let Ok(i) = find(&names, w) {
            names[i].1.get_or_insert(v);
        }
    });
    for f in formats.iter_mut() {
        if let Some(t) = resolve_enums(f, &mut |w| find(&names, w).ok().and_then(|i| names[i].1)) {
            **f = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FieldAt::get's one-load path against the general read: every
    /// offset, size (the odd ones too), sign and byte order, over records
    /// of every length up to past the end (0 there).
    #[test]
    fn field_get_matches_the_general_read() {
        let bytes: Vec<u8> = (0..24u8).map(|i| i.wrapping_mul(0x9d) ^ 0x80).collect();
        for len in 0..=bytes.len() {
            let d = &bytes[..len];
            for off in 0..28u16 {
                for size in 0..=9u8 {
                    for signed in [false, true] {
                        for e in [Endian::Little, Endian::Big] {
                            let f = FieldAt { off, size, signed };
                            let v = read_uint(d, off as usize, size as usize, e).unwrap_or(0);
                            let want = if signed { sext(v, size as usize) } else { v };
                            assert_eq!(f.get(d, e), want, "{:?} len {} {:?}", f, len, e);
                        }
                    }
                }
            }
        }
    }

    /// hrtimer_start exactly as a 6.18 x86_64 kernel shows it: the
    /// HRTIMER_MODE_* names are not TRACE_DEFINE_ENUM'd, so the kernel prints
    /// them unresolved; ftrec writes the values (from BTF) as the kernel's
    /// own eval-map update would have.
    const HRTIMER_START: &str = "name: hrtimer_start
ID: 460
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:void * hrtimer;\toffset:8;\tsize:8;\tsigned:0;
\tfield:void * function;\toffset:16;\tsize:8;\tsigned:0;
\tfield:s64 expires;\toffset:24;\tsize:8;\tsigned:1;
\tfield:s64 softexpires;\toffset:32;\tsize:8;\tsigned:1;
\tfield:enum hrtimer_mode mode;\toffset:40;\tsize:4;\tsigned:0;
\tfield:bool was_armed;\toffset:44;\tsize:1;\tsigned:0;

print fmt: \"hrtimer=%p function=%ps expires=%llu softexpires=%llu mode=%s was_armed=%d\", REC->hrtimer, REC->function, (unsigned long long) REC->expires, (unsigned long long) REC->softexpires, __print_symbolic(REC->mode, { HRTIMER_MODE_ABS, \"ABS\" }, { HRTIMER_MODE_REL, \"REL\" }, { HRTIMER_MODE_ABS_PINNED, \"ABS|PINNED\" }, { HRTIMER_MODE_REL_PINNED, \"REL|PINNED\" }, { HRTIMER_MODE_ABS_SOFT, \"ABS|SOFT\" }, { HRTIMER_MODE_REL_SOFT, \"REL|SOFT\" }, { HRTIMER_MODE_ABS_PINNED_SOFT, \"ABS|PINNED|SOFT\" }, { HRTIMER_MODE_REL_PINNED_SOFT, \"REL|PINNED|SOFT\" }, { HRTIMER_MODE_ABS_HARD, \"ABS|HARD\" }, { HRTIMER_MODE_REL_HARD, \"REL|HARD\" }, { HRTIMER_MODE_ABS_PINNED_HARD, \"ABS|PINNED|HARD\" }, { HRTIMER_MODE_REL_PINNED_HARD, \"REL|PINNED|HARD\" }), REC->was_armed
";

    #[test]
    fn enums_resolved_like_the_kernels_eval_maps() {
        let modes = ["ABS", "REL", "ABS_PINNED", "REL_PINNED", "ABS_SOFT", "REL_SOFT", "ABS_PINNED_SOFT",
            "REL_PINNED_SOFT", "ABS_HARD", "REL_HARD", "ABS_PINNED_HARD", "REL_PINNED_HARD"];
        let mut asked = Vec::new();
        let mut none = |w: &str| {
            asked.push(String::from(w));
            None
        };
        assert_eq!(resolve_enums(HRTIMER_START.as_bytes(), &mut none), None);
        // Only the enumerators are candidates: no field, string, type or call.
        assert_eq!(asked.len(), 12, "{asked:?}");
        assert!(asked.iter().all(|w| w.starts_with("HRTIMER_MODE_")));
        let mut val = |w: &str| modes.iter().position(|m| w.strip_prefix("HRTIMER_MODE_") == Some(*m)).map(|i| i as u64);
        let t = resolve_enums(HRTIMER_START.as_bytes(), &mut val).unwrap();
        let t = core::str::from_utf8(&t).unwrap();
        assert!(t.starts_with(&HRTIMER_START[..HRTIMER_START.find("print fmt").unwrap()]));
        assert!(t.contains("__print_symbolic(REC->mode, { 0, \"ABS\" }, { 1, \"REL\" }, { 2, \"ABS|PINNED\" }"), "{t}");
        assert!(t.contains("{ 11, \"REL|PINNED|HARD\" }), REC->was_armed\n"), "{t}");
        // It now prints without any enum table, as the kernel does.
        let ev = parse_event("timer", t).unwrap();
        let p = crate::printfmt::Program::compile(&ev).unwrap();
        let mut rec = alloc::vec![0u8; 48];
        rec[40] = 3;
        let mut s = String::new();
        p.render(&ev, &rec, &crate::printfmt::Env::new(Endian::Little, 8), &mut s).unwrap();
        assert!(s.ends_with("mode=REL|PINNED was_armed=0"), "{s}");
        // Members, strings, character constants, tags and called names stay.
        let f = "name: x\nID: 1\nformat:\n\nprint fmt: \"%d A\", REC->A + REC -> A + A * 'A' + (struct A *)A(A) + sizeof(A) + -A\n";
        let t = resolve_enums(f.as_bytes(), &mut |w| (w == "A").then_some(-2i64 as u64)).unwrap();
        assert_eq!(core::str::from_utf8(&t).unwrap(), "name: x\nID: 1\nformat:\n\nprint fmt: \"%d A\", REC->A + REC -> A + (-2) * 'A' + (struct A *)A((-2)) + sizeof((-2)) + -(-2)\n");
        // Cut anywhere (inside strings, escapes, names): no panic.
        for cut in 0..HRTIMER_START.len() {
            let _ = resolve_enums(&HRTIMER_START.as_bytes()[..cut], &mut val);
            let _ = resolve_enums(b"\nprint fmt: \"\\", &mut val);
        }
    }

    const SWITCH: &str = "name: sched_switch
ID: 372
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;
\tfield:__rel_loc u32[] vals;\toffset:32;\tsize:4;\tsigned:0;
\tfield:const char * fmt;\toffset:40;\tsize:8;\tsigned:0;
\tfield:char buf[];\toffset:48;\tsize:0;\tsigned:0;

print fmt: \"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid
";

    #[test]
    fn parses_fields_and_fmt() {
        let e = parse_event("sched", SWITCH).unwrap();
        assert_eq!((e.id, e.name.as_str(), e.system.as_str(), e.ncommon), (372, "sched_switch", "sched", 4));
        assert_eq!(e.fields.len(), 10);
        let c = e.field("prev_comm").unwrap();
        assert_eq!((c.ctype.as_str(), c.kind.clone(), c.elem, c.is_char), ("char", FieldKind::Array(16), 1, true));
        let p = e.field("prev_pid").unwrap();
        assert_eq!((p.offset, p.size, p.signed, p.kind.clone()), (24, 4, true, FieldKind::Scalar));
        let n = e.field("name").unwrap();
        assert_eq!((n.ctype.as_str(), n.kind.clone(), n.is_char), ("__data_loc char[]", FieldKind::DataLoc, true));
        let v = e.field("vals").unwrap();
        assert_eq!((v.kind.clone(), v.elem), (FieldKind::RelLoc, 4));
        let f = e.field("fmt").unwrap();
        assert_eq!((f.ctype.as_str(), f.is_ptr, f.is_char), ("const char *", true, false));
        let b = e.field("buf").unwrap();
        assert_eq!(b.kind, FieldKind::Array(0));
        assert_eq!(e.print_fmt, "\"prev_comm=%s prev_pid=%d\", REC->prev_comm, REC->prev_pid");
    }

    #[test]
    fn dynamic_data_and_errors() {
        let e = parse_event("x", SWITCH).unwrap();
        let mut rec = [0u8; 64];
        rec[28..32].copy_from_slice(&((3u32 << 16) | 52).to_le_bytes());
        rec[52..55].copy_from_slice(b"ab\0");
        rec[32..36].copy_from_slice(&((4u32 << 16) | 8).to_le_bytes()); // 36 + 8 = 44
        rec[44] = 7;
        assert_eq!(e.field("name").unwrap().data(&rec, Endian::Little), Some(&b"ab\0"[..]));
        assert_eq!(e.field("vals").unwrap().data(&rec, Endian::Little), Some(&[7u8, 0, 0, 0][..]));
        assert_eq!(e.field("buf").unwrap().data(&rec, Endian::Little).map(|d| d.len()), Some(16));
        rec[28..32].copy_from_slice(&((300u32 << 16) | 52).to_le_bytes());
        assert_eq!(e.field("name").unwrap().data(&rec, Endian::Little), None);
        assert!(parse_event("x", "name: a\nformat:\n").is_err());
        let bad = parse_event("x", "name: a\nID: 1\n\tfield:int x;\tsize:4;\n").unwrap_err();
        assert_eq!(bad.line, 3);
    }

    #[test]
    fn constructors_match_the_parser() {
        let e = parse_event("sched", SWITCH).unwrap();
        let f = Field::new("prev_comm", "char", 8, 16, false, FieldKind::Array(16));
        let g = e.field("prev_comm").unwrap();
        assert_eq!((f.elem, f.is_char, f.is_ptr), (g.elem, g.is_char, g.is_ptr));
        let p = Field::new("fmt", "const char *", 40, 8, false, FieldKind::Scalar);
        assert!(p.is_ptr && !p.is_char);
        let h = Event::new(1, "s", "n", e.fields.clone(), "\"x\"");
        assert_eq!(h.ncommon, 4);
    }

    #[test]
    fn table_lookup() {
        let mut t = Events::new();
        for (id, n) in [(5u16, "b"), (2, "a"), (9, "c")] {
            let text = alloc::format!("name: {n}\nID: {id}\nprint fmt: \"\"\n");
            t.insert(parse_event("s", &text).unwrap());
        }
        assert_eq!(t.by_id(9).unwrap().name, "c");
        assert_eq!(t.index_of(5), Some(1));
        assert!(t.by_id(3).is_none());
        assert_eq!(t.by_name("s", "a").unwrap().id, 2);
    }
}
