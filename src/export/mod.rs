//! Exporters: a recording's records in other tools' formats, written as
//! bytes into a [`Buf`] the caller drains (no I/O here).
//!
//! - [`perfetto`]: a Perfetto protobuf trace (`Trace.packet` messages), for
//!   Perfetto's UI and trace processor;
//! - [`jsonl`]: one JSON object per record, for SQL engines (DuckDB's
//!   `read_json`, ClickHouse's `JSONEachRow`, Spark's `spark.read.json`).
//!
//! Both are driven the same way ([`Export`]): [`Export::begin`] with what
//! the recording says about itself, then its records and lost-event markers
//! in merge order, then [`Export::finish`] with the per-CPU statistics.
//! [`output::Exporter`] is that driving as a [`crate::decode::Output`], so
//! the records come through ftcat's own filters.

use alloc::string::String;
use alloc::vec::Vec;

use crate::cursor::Endian;
use buf::Buf;
use crate::format::{Event, Field, FieldKind};
use crate::text::{Cmdlines, Env};

pub mod buf;
pub mod compact;
pub mod jsonl;
pub mod output;
pub mod perfetto;
pub mod proto;

/// What the recording says about itself.
pub struct Meta<'a> {
    /// `uname -s`, `-r`, `-m` of the traced kernel (empty when unknown).
    pub sysname: &'a str,
    pub release: &'a str,
    pub machine: &'a str,
    /// The trace clock (`local`, `global`, `mono_raw`, `boot`, `counter`, ...).
    pub clock: &'a str,
    pub ncpus: u32,
    pub page_size: u32,
    pub endian: Endian,
    /// The traced kernel's `long`, for `long`-sized array elements.
    pub long_size: usize,
    /// pid → comm, pid → tgid.
    pub cmd: &'a Cmdlines,
    /// The saved_cmdlines text, for the list of every pid it names (Cmdlines
    /// answers lookups only).
    pub saved: &'a [u8],
    /// Symbols, trace_printk formats and the print fmt interpreter.
    pub env: &'a dyn Env,
    /// Every event format of the recording.
    pub events: &'a [Event],
}

impl Meta<'_> {
    /// Every pid the saved cmdlines name, sorted, each once.
    pub fn pids(&self) -> Vec<i32> {
        let mut v: Vec<i32> = Vec::new();
        for line in self.saved.split(|&b| b == b'\n') {
            let n = line.iter().position(|&b| b == b' ').unwrap_or(line.len());
            if let Some(p) = core::str::from_utf8(&line[..n]).ok().and_then(|s| s.trim_ascii().parse().ok()) {
                v.push(p);
            }
        }
        crate::sort::sort_by(&mut v, Ord::cmp);
        v.dedup();
        v
    }

    /// A uname line (`Linux HOST 6.12.1 x86_64`, as trace.dat's UNAME
    /// option holds) into sysname, release and machine.
    pub fn uname_words(line: &str) -> (&str, &str, &str) {
        let release = crate::text::kernel::release_word(line);
        let mut w = line.split_ascii_whitespace();
        let sysname = w.next().filter(|&s| s != release).unwrap_or("");
        let machine = w.last().filter(|&m| m != release).unwrap_or("");
        (sysname, release, machine)
    }
}

/// One record of the merged stream, as the printers see it, plus who ran.
pub struct Row<'a> {
    pub cpu: u32,
    /// In trace-clock units (ns for the ns clocks).
    pub ts: u64,
    /// The payload from common_type on.
    pub data: &'a [u8],
    /// Its format (None: a type the recording has no format for).
    pub event: Option<&'a Event>,
    pub pid: i32,
    /// The running task's comm (text::put_all's raw-byte escapes included).
    pub comm: &'a str,
    /// The latency columns (`d.h1.`) of the record's common flags (empty
    /// for an exporter that does not [`Export::wants_lat`]).
    pub lat: &'a str,
}

/// Per-CPU statistics of the recording (what the kernel's
/// `per_cpu/cpuN/stats` said when it was saved) and the events the
/// stream itself marked lost.
#[derive(Clone, Copy, Default)]
pub struct CpuStat {
    pub cpu: u32,
    pub entries: u64,
    pub overrun: u64,
    pub commit_overrun: u64,
    pub bytes: u64,
    pub dropped: u64,
    pub read: u64,
    /// Lost events the pages recorded (counted), and losses of unknown size.
    pub lost: u64,
    pub lost_unknown: u64,
}

/// An output format. Each call appends to `out`, which the caller drains
/// when it likes (an exporter keeps no reference to it). `out` is a
/// [`Buf`]: an exporter writes its bytes straight into it, with no line
/// or message of its own to copy over.
pub trait Export {
    fn begin(&mut self, out: &mut Buf, m: &Meta);
    fn record(&mut self, out: &mut Buf, m: &Meta, r: &Row);
    /// Events were lost on `cpu` before its next record (at `ts`).
    fn lost(&mut self, out: &mut Buf, cpu: u32, ts: u64, count: Option<u64>);
    fn finish(&mut self, out: &mut Buf, m: &Meta, stats: &[CpuStat]);
    /// Whether rows need [`Row::lat`] (made for every record otherwise).
    fn wants_lat(&self) -> bool {
        false
    }
}

/// One field's value, typed as its format declares it.
pub enum Value<'a> {
    Int(i64),
    Uint(u64),
    /// A character array or `__data_loc char[]`, up to its first NUL.
    Str(&'a [u8]),
    /// Any other array: its elements.
    Array { data: &'a [u8], elem: usize, signed: bool },
}

/// Read field `f` of record `d` (None: out of the record's bounds).
pub fn value<'a>(f: &Field, d: &'a [u8], endian: Endian, long: usize) -> Option<Value<'a>> {
    if f.kind == FieldKind::Scalar {
        let v = f.int(d, endian)?;
        return Some(if f.signed { Value::Int(v as i64) } else { Value::Uint(v) });
    }
    let b = f.data(d, endian)?;
    if f.is_char {
        let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        return Some(Value::Str(&b[..n]));
    }
    let elem = f.elem_size(long).clamp(1, 8);
    Some(Value::Array { data: b, elem, signed: f.signed })
}

/// Where a scalar field lies in a record, kept per event so that the
/// exporters' loops over every field of every record read a number with
/// neither the [`Field`] nor a [`Value`] passed through memory.
#[derive(Clone, Copy)]
pub struct Scalar {
    off: usize,
    size: u8,
    signed: bool,
}

impl Scalar {
    /// None: not a scalar, or of a size no integer has (read as
    /// [`value`] reads it: not at all).
    pub fn of(f: &Field) -> Option<Scalar> {
        if f.kind != FieldKind::Scalar {
            return None;
        }
        Scalar::at(f)
    }

    /// The field's bytes as an integer whatever its kind, as [`Field::int`]
    /// reads it.
    pub fn at(f: &Field) -> Option<Scalar> {
        matches!(f.size, 1 | 2 | 4 | 8).then_some(Scalar { off: f.offset, size: f.size as u8, signed: f.signed })
    }

    /// Its value in record `d` as [`Field::int`] reads it (sign-extended
    /// when signed; None past the record's end).
    #[inline(always)]
    pub fn get(self, d: &[u8], endian: Endian) -> Option<u64> {
        let b = d.get(self.off..)?;
        let v = match self.size {
            8 => endian.u64(*b.first_chunk()?),
            4 => endian.u32(*b.first_chunk()?) as u64,
            2 => endian.u16(*b.first_chunk()?) as u64,
            _ => *b.first()? as u64,
        };
        Some(if self.signed { crate::format::sext(v, self.size as usize) } else { v })
    }

    pub fn signed(self) -> bool {
        self.signed
    }
}

/// One event's fields past the common ones as an exporter writes them:
/// each one's key, encoded once per event, and where a scalar lies.
pub struct Cols {
    pub cols: Vec<Col>,
    /// The keys longer than [`KEY`] bytes.
    long: Vec<u8>,
}

/// Keys up to this long are kept in their [`Col`], zero-padded, and
/// written with one fixed-size move (most field names are short).
pub const KEY: usize = 32;

pub struct Col {
    /// Its index in the event's fields.
    pub field: usize,
    /// Its key, padded, and the key's length; a longer key lies at
    /// `long` in [`Cols`]'s bytes.
    key: [u8; KEY],
    klen: usize,
    long: (usize, usize),
    pub scalar: Option<Scalar>,
}

impl Col {
    /// Its key's length.
    #[inline(always)]
    pub fn klen(&self) -> usize {
        self.klen
    }

    /// Its key zero-padded to [`KEY`] bytes (when it is that short).
    #[inline(always)]
    pub fn padded(&self) -> &[u8; KEY] {
        &self.key
    }
}

impl Cols {
    /// `key` writes a field's key. (Once per event type: `dyn` and out
    /// of line, one copy for both exporters.)
    #[inline(never)]
    pub fn new(e: &Event, key: &dyn Fn(&mut Buf, &Field)) -> Cols {
        let (mut cols, mut long, mut k) = (Vec::new(), Vec::new(), Buf::new());
        for (i, f) in e.fields.iter().enumerate().skip(e.ncommon) {
            k.clear();
            key(&mut k, f);
            let mut c = Col { field: i, key: [0; KEY], klen: k.len(), long: (0, 0), scalar: Scalar::of(f) };
            match c.key.get_mut(..k.len()) {
                Some(pad) => pad.copy_from_slice(k.as_slice()),
                None => {
                    c.long = (long.len(), long.len() + k.len());
                    long.extend_from_slice(k.as_slice());
                }
            }
            cols.push(c);
        }
        Cols { cols, long }
    }

    #[inline(always)]
    pub fn key<'a>(&'a self, c: &'a Col) -> &'a [u8] {
        match c.key.get(..c.klen) {
            Some(k) => k,
            None => self.long.get(c.long.0..c.long.1).unwrap_or_default(),
        }
    }

    /// Append `c`'s key to `out`.
    #[inline(always)]
    pub fn put_key(&self, out: &mut Buf, c: &Col) {
        if c.klen <= KEY {
            out.put_fixed(&c.key, c.klen);
        } else {
            out.put(self.key(c));
        }
    }
}

/// The text an exporter last wrote for one event's fields (and whatever
/// else of a record it chose), kept with what it was made from: a loop
/// of system calls repeats its arguments (`dd bs=1` writes the same fd,
/// buffer and count each time), and while a record's field bytes and the
/// caller's context are the last one's, so is the text.
#[derive(Default)]
pub struct Memo {
    /// Where the fields past the common ones lie in a record; None when
    /// some field's bytes lie elsewhere (`__data_loc`, a flexible array):
    /// then the span's bytes do not say all.
    span: Option<(usize, usize)>,
    /// Those bytes of the record last written and the caller's context
    /// (what else the text depends on), when `text` is theirs.
    of: Vec<u8>,
    ctx: u64,
    kept: bool,
    text: Buf,
    /// Texts reused and made: an event whose fields seldom repeat stops
    /// being kept, which would only cost a copy per record.
    hits: u32,
    misses: u32,
}

impl Memo {
    pub fn new(e: &Event) -> Memo {
        let fields = e.fields.get(e.ncommon..).unwrap_or_default();
        let fixed = fields.iter().all(|f| matches!(f.kind, FieldKind::Scalar) || matches!(f.kind, FieldKind::Array(n) if n > 0));
        let start = fields.iter().map(|f| f.offset).min().unwrap_or(0);
        let end = fields.iter().map(|f| f.offset + f.size).max().unwrap_or(0);
        Memo { span: (fixed && end > start).then_some((start, end)), ..Memo::default() }
    }

    /// Whether texts are kept: the event's fields can be, and they repeat.
    #[inline(always)]
    fn on(&self) -> bool {
        self.span.is_some() && (self.misses < 256 || self.hits >= self.misses / 4)
    }

    /// The text for record `d` and `ctx`: the one kept when the record's
    /// fields are the same bytes as the last record's and `ctx` the same,
    /// else made now with `write` and kept. None when no text is kept
    /// (the caller writes the record itself).
    #[inline(always)]
    pub fn text(&mut self, d: &[u8], ctx: u64, write: impl FnOnce(&mut Buf)) -> Option<&[u8]> {
        let (a, z) = self.span?;
        let f = d.get(a..z)?;
        if self.kept && ctx == self.ctx && same(f, &self.of) {
            self.hits = self.hits.saturating_add(1);
        } else if self.on() {
            self.misses = self.misses.saturating_add(1);
            self.text.clear();
            write(&mut self.text);
            self.of.clear();
            self.of.extend_from_slice(f);
            (self.kept, self.ctx) = (true, ctx);
        } else {
            return None;
        }
        Some(self.text.as_slice())
    }
}

/// `a == b` a word at a time (a slice comparison calls musl's `memcmp`,
/// which goes byte by byte; and iterators are calls in this size-first
/// build).
#[inline(always)]
fn same(mut a: &[u8], mut b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    while let (Some((p, ra)), Some((q, rb))) = (a.split_first_chunk::<8>(), b.split_first_chunk::<8>()) {
        if u64::from_ne_bytes(*p) != u64::from_ne_bytes(*q) {
            return false;
        }
        (a, b) = (ra, rb);
    }
    if let (Some((p, ra)), Some((q, rb))) = (a.split_first_chunk::<4>(), b.split_first_chunk::<4>()) {
        if u32::from_ne_bytes(*p) != u32::from_ne_bytes(*q) {
            return false;
        }
        (a, b) = (ra, rb);
    }
    // At most three bytes left.
    a.first() == b.first() && a.get(1) == b.get(1) && a.get(2) == b.get(2)
}

/// Element `i` of an array value, sign-extended when signed.
pub fn elem(data: &[u8], elem: usize, signed: bool, i: usize, endian: Endian) -> u64 {
    let v = crate::cursor::read_uint(data, i * elem, elem, endian).unwrap_or(0);
    if signed {
        crate::format::sext(v, elem)
    } else {
        v
    }
}

/// `system:name` of a record's event, `type N` when the recording has no
/// format for it (as `ftcat --stat` names it).
pub fn event_name(out: &mut String, r: &Row, d: &[u8], endian: Endian) {
    use core::fmt::Write;
    match r.event {
        Some(e) => {
            out.push_str(&e.system);
            out.push(':');
            out.push_str(&e.name);
        }
        None => {
            let _ = write!(out, "type {}", crate::text::kernel::rec_type(d, endian));
        }
    }
}

/// A hand-made event and one record of it, for the exporters' unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::{Meta, Row};
    use crate::cursor::Endian;
    use crate::format::{Event, Field, FieldKind};
    use crate::ksyms::{Ksyms, Printk};
    use crate::text::{env::Decoder, Cmdlines};

    /// `sys:ev` (id 7) with an int `pid` (a row key), a u64 above 2^53, a
    /// char array holding a quote and a byte that is not UTF-8, and an s16
    /// array; run by pid 5, `sh`, on CPU 0 at 12.
    pub fn with_row(f: impl FnOnce(&Meta, &Row)) {
        let mut fields = common();
        fields.extend([
            Field::new("pid", "int", 8, 4, true, FieldKind::Scalar),
            Field::new("big", "u64", 12, 8, false, FieldKind::Scalar),
            Field::new("name", "char", 20, 8, false, FieldKind::Array(8)),
            Field::new("arr", "s16", 28, 4, true, FieldKind::Array(2)),
        ]);
        let ev = Event::new(7, "sys", "ev", fields, "");
        let dec = Decoder::new(std::vec![ev.clone()], Ksyms::new(), Printk::parse(b""), Endian::Little, 8);
        let cmd = Cmdlines::parse(b"5 sh\n");
        let m = Meta {
            sysname: "Linux",
            release: "6.12.0",
            machine: "x86_64",
            clock: "local",
            ncpus: 1,
            page_size: 4096,
            endian: Endian::Little,
            long_size: 8,
            cmd: &cmd,
            saved: b"5 sh\n",
            env: &dec,
            events: dec.events(),
        };
        let mut d = std::vec![7, 0, 0x01, 0, 5, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff];
        d.extend_from_slice(&u64::MAX.to_le_bytes());
        d.extend_from_slice(b"a\"\xffb\0\0\0\0");
        d.extend_from_slice(&[0xff, 0xff, 2, 0]);
        let r = Row { cpu: 0, ts: 12, data: &d, event: Some(&ev), pid: 5, comm: cmd.comm(5), lat: "d...." };
        f(&m, &r);
    }

    /// The common fields every event starts with.
    fn common() -> std::vec::Vec<Field> {
        std::vec![
            Field::new("common_type", "unsigned short", 0, 2, false, FieldKind::Scalar),
            Field::new("common_flags", "unsigned char", 2, 1, false, FieldKind::Scalar),
            Field::new("common_preempt_count", "unsigned char", 3, 1, false, FieldKind::Scalar),
            Field::new("common_pid", "int", 4, 4, true, FieldKind::Scalar),
        ]
    }

    /// `syscalls:sys_enter_x` (id 9), all numbers: an int, an unsigned
    /// long and a long, with records of each value's extremes.
    pub fn numbers() -> (Event, std::vec::Vec<std::vec::Vec<u8>>) {
        let mut fields = common();
        fields.extend([
            Field::new("__syscall_nr", "int", 8, 4, true, FieldKind::Scalar),
            Field::new("buf", "unsigned long", 16, 8, false, FieldKind::Scalar),
            Field::new("count", "long", 24, 8, true, FieldKind::Scalar),
        ]);
        let ev = Event::new(9, "syscalls", "sys_enter_x", fields, "");
        let mut recs = std::vec::Vec::new();
        for (nr, buf, count) in [(1i32, 0u64, 1i64), (-1, u64::MAX, i64::MIN), (300, 0x5602_4cc6_e230, -129)] {
            let mut d = std::vec![9, 0, 0x01, 0, 5, 0, 0, 0];
            d.extend_from_slice(&nr.to_le_bytes());
            d.extend_from_slice(&[0; 4]);
            d.extend_from_slice(&buf.to_le_bytes());
            d.extend_from_slice(&count.to_le_bytes());
            recs.push(d);
        }
        (ev, recs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A text is reused while the span's bytes and the context repeat,
    /// made anew when either changes, and no longer kept for an event
    /// whose fields do not repeat.
    #[test]
    fn memo_reuses_while_fields_repeat() {
        testing::with_row(|_, r| {
            let e = r.event.unwrap();
            let mut memo = Memo::new(e);
            let mut made = 0;
            let mut text = |memo: &mut Memo, d: &[u8], ctx: u64| {
                let t = memo.text(d, ctx, |b| {
                    made += 1;
                    b.put(&d[8..12]);
                });
                t.map(|t| t.to_vec())
            };
            let mut d = r.data.to_vec();
            assert_eq!(text(&mut memo, &d, 1).as_deref(), Some(&d[8..12]));
            assert_eq!(text(&mut memo, &d, 1).as_deref(), Some(&d[8..12]));
            // The common fields are not the memo's to compare.
            d[4] ^= 1;
            assert_eq!(text(&mut memo, &d, 1).as_deref(), Some(&d[8..12]));
            d[8] ^= 1;
            assert_eq!(text(&mut memo, &d, 1).as_deref(), Some(&d[8..12]));
            // The last byte of the span, then the context.
            *d.last_mut().unwrap() ^= 1;
            assert!(text(&mut memo, &d, 1).is_some());
            assert!(text(&mut memo, &d, 2).is_some());
            // A record cut short of the span is the caller's to write.
            assert!(text(&mut memo, &d[..20], 2).is_none());
            for i in 0..300u32 {
                d[8..10].copy_from_slice(&(i as u16).to_le_bytes());
                text(&mut memo, &d, 2);
            }
            assert!(text(&mut memo, &d, 2).is_none(), "fields that never repeat are not kept");
            drop(text);
            // Four texts above, then misses until the 256th.
            assert_eq!(made, 256);
        });
    }

    #[test]
    fn same_bytes() {
        let a: Vec<u8> = (0..40).collect();
        for n in 0..40 {
            assert!(same(&a[..n], &a[..n]));
            assert!(!same(&a[..n], &a[1..n + 1]) || n == 0);
            for i in 0..n {
                let mut b = a[..n].to_vec();
                b[i] ^= 0x80;
                assert!(!same(&a[..n], &b), "{n} {i}");
            }
        }
        assert!(!same(b"ab", b"abc"));
    }

    /// A data_loc field's bytes lie past the span: such events are not kept.
    #[test]
    fn memo_only_for_fixed_fields() {
        let f = |kind| Field::new("x", "char", 8, 4, false, kind);
        let ev = |kind| Event::new(1, "s", "e", std::vec![Field::new("common_type", "unsigned short", 0, 2, false, FieldKind::Scalar), f(kind)], "");
        assert!(Memo::new(&ev(FieldKind::Scalar)).span.is_some());
        assert!(Memo::new(&ev(FieldKind::Array(4))).span.is_some());
        assert!(Memo::new(&ev(FieldKind::Array(0))).span.is_none());
        assert!(Memo::new(&ev(FieldKind::DataLoc)).span.is_none());
        assert!(Memo::new(&crate::format::NO_EVENT).span.is_none());
    }
}
