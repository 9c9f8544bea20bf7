//! JSON Lines: one object per record,
//! `{"ts":…,"cpu":…,"pid":…,"comm":"…","event":"system:name","flags":"d.h1.",<fields>}`,
//! and `{"ts":…,"cpu":…,"event":"lost","count":N|null}` where the ring
//! buffer lost events.
//!
//! Fields are typed as their format declares: integers as JSON numbers
//! written out digit for digit (a u64 above 2^53 stays exact), character
//! arrays as strings, other arrays as arrays of numbers. Strings are escaped
//! as RFC 8259 asks; a byte that is not part of valid UTF-8 becomes
//! `\u00XX` (its Latin-1 reading), so every line is valid JSON. An event
//! field named like one of the row's own keys (sched_wakeup's `pid` and
//! `comm`) is written as `event_pid`, `event_comm`.

use alloc::string::String;
use alloc::vec::Vec;

use super::buf::Buf;
use super::{elem, value, CpuStat, Export, Meta, Row, Value};

#[derive(Default)]
pub struct Jsonl {
    /// Per event id seen, its `"system:name"` as a JSON string (sorted by id).
    names: Vec<(u16, Vec<u8>)>,
    /// The line being written.
    line: Buf,
}

/// The keys every row has (none longer than 5 bytes); event fields of
/// these names get `event_` before.
const ROW_KEYS: &str = "ts|cpu|pid|comm|event|flags";

impl Jsonl {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Export for Jsonl {
    fn begin(&mut self, _out: &mut Vec<u8>, _m: &Meta) {}

    fn record(&mut self, out: &mut Vec<u8>, m: &Meta, r: &Row) {
        let mut line = core::mem::take(&mut self.line);
        line.clear();
        self.line_of(&mut line, m, r);
        out.extend_from_slice(line.as_slice());
        self.line = line;
    }

    fn lost(&mut self, out: &mut Vec<u8>, cpu: u32, ts: u64, count: Option<u64>) {
        let mut line = Buf::new();
        key(&mut line, "{\"ts\":");
        uint(&mut line, ts);
        key(&mut line, ",\"cpu\":");
        uint(&mut line, cpu as u64);
        key(&mut line, ",\"event\":\"lost\",\"count\":");
        match count {
            Some(n) => uint(&mut line, n),
            None => key(&mut line, "null"),
        }
        close(&mut line);
        out.extend_from_slice(line.as_slice());
    }

    fn finish(&mut self, _out: &mut Vec<u8>, _m: &Meta, _stats: &[CpuStat]) {}
}

impl Jsonl {
    fn line_of(&mut self, out: &mut Buf, m: &Meta, r: &Row) {
        let d = r.data;
        key(out, "{\"ts\":");
        uint(out, r.ts);
        key(out, ",\"cpu\":");
        uint(out, r.cpu as u64);
        key(out, ",\"pid\":");
        int(out, r.pid as i64);
        key(out, ",\"comm\":");
        escaped_str(out, r.comm);
        key(out, ",\"event\":");
        let ty = crate::text::kernel::rec_type(d, m.endian);
        let i = match self.names.binary_search_by_key(&ty, |n| n.0) {
            Ok(i) => i,
            Err(i) => {
                let mut name = String::new();
                super::event_name(&mut name, r, d, m.endian);
                let mut b = Buf::new();
                string(&mut b, name.as_bytes());
                self.names.insert(i, (ty, b.as_slice().to_vec()));
                i
            }
        };
        out.put(&self.names[i].1);
        key(out, ",\"flags\":");
        string(out, r.lat.as_bytes());
        if let Some(e) = r.event {
            for f in e.fields.get(e.ncommon..).unwrap_or(&[]) {
                let Some(v) = value(f, d, m.endian, m.long_size) else { continue };
                out.put(b",\"");
                if f.name.len() <= 5 && crate::util::one_of(ROW_KEYS, &f.name) {
                    out.put(b"event_");
                }
                escape_into(out, f.name.as_bytes());
                out.put(b"\":");
                put_value(out, &v, m);
            }
            // trace_printk's binary records: the formatted message too.
            if e.system == "ftrace" && e.name == "bprint" {
                if let (Some(f), Some(b)) = (e.field("fmt"), e.field("buf")) {
                    let (Some(addr), Some(args)) = (f.int(d, m.endian), b.data(d, m.endian)) else { return close(out) };
                    let mut s = String::new();
                    let _ = m.env.bprint(addr, args, &mut s);
                    key(out, ",\"msg\":");
                    escaped_str(out, &s);
                }
            }
        }
        close(out)
    }
}

fn key(out: &mut Buf, s: &str) {
    out.put(s.as_bytes());
}

fn close(out: &mut Buf) {
    out.put(b"}\n");
}

pub(crate) fn put_value(out: &mut Buf, v: &Value, m: &Meta) {
    match *v {
        Value::Int(i) => int(out, i),
        Value::Uint(u) => uint(out, u),
        Value::Str(s) => string(out, s),
        Value::Array { data, elem: k, signed } => {
            out.push(b'[');
            for i in 0..data.len() / k {
                if i > 0 {
                    out.push(b',');
                }
                let x = elem(data, k, signed, i, m.endian);
                if signed {
                    int(out, x as i64)
                } else {
                    uint(out, x)
                }
            }
            out.push(b']');
        }
    }
}

/// Decimal digits, no float on the way: exact for every u64.
pub fn uint(out: &mut Buf, v: u64) {
    // In 32-bit pieces of nine digits: a size-optimised build divides a
    // u64 by 10 with a real divide, a u32 with a multiply.
    const E9: u64 = 1_000_000_000;
    let mut t = [0u8; 20];
    let mut i = t.len();
    let mut rest = v;
    while rest > u32::MAX as u64 {
        digits(&mut t, &mut i, (rest % E9) as u32, 9);
        rest /= E9;
    }
    digits(&mut t, &mut i, rest as u32, 1);
    out.put(&t[i..]);
}

/// `x`'s decimal digits before `t[*i]`, at least `min` of them (zeros in front).
fn digits(t: &mut [u8; 20], i: &mut usize, mut x: u32, min: usize) {
    let end = *i;
    while x > 0 || end - *i < min {
        *i -= 1;
        t[*i] = b'0' + (x % 10) as u8;
        x /= 10;
    }
}

pub fn int(out: &mut Buf, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    uint(out, v.unsigned_abs());
}

/// A JSON string of bytes.
pub fn string(out: &mut Buf, b: &[u8]) {
    out.push(b'"');
    escape_into(out, b);
    out.push(b'"');
}

/// A JSON string of text that may carry text::put_all's raw-byte escapes
/// (a comm that is not UTF-8): those are the bytes they stand for.
fn escaped_str(out: &mut Buf, s: &str) {
    // (The escapes' UTF-8 starts with 0xEF: text without one has none.)
    if !s.as_bytes().contains(&0xef) {
        return string(out, s.as_bytes());
    }
    let mut b = Vec::with_capacity(s.len());
    raw_bytes(&mut b, s);
    string(out, &b);
}

/// The bytes text from text::put_all stands for (its raw-byte escapes
/// undone).
pub fn raw_bytes(out: &mut Vec<u8>, s: &str) {
    if !s.as_bytes().contains(&0xef) {
        return out.extend_from_slice(s.as_bytes());
    }
    for c in s.chars() {
        match crate::text::raw_byte(c) {
            Some(x) => out.push(x),
            None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
        }
    }
}

/// RFC 8259 §7: `"` and `\` escaped, control characters as `\n`-style or
/// `\u00XX`; valid UTF-8 as it is; every byte of an invalid sequence as
/// `\u00XX`.
pub fn escape_into(out: &mut Buf, mut b: &[u8]) {
    while !b.is_empty() {
        let (good, bad) = match core::str::from_utf8(b) {
            Ok(_) => (b.len(), 0),
            Err(e) => (e.valid_up_to(), e.error_len().unwrap_or(b.len() - e.valid_up_to())),
        };
        // Runs that need no escape go out whole.
        let mut run = 0;
        for (i, &c) in b[..good].iter().enumerate() {
            let esc: &[u8] = match c {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\t' => b"\\t",
                b'\r' => b"\\r",
                0..=0x1f | 0x7f => b"",
                _ => continue,
            };
            out.put(&b[run..i]);
            if esc.is_empty() {
                u00(out, c);
            } else {
                out.put(esc);
            }
            run = i + 1;
        }
        out.put(&b[run..good]);
        for &c in &b[good..good + bad] {
            u00(out, c);
        }
        b = &b[good + bad..];
    }
}

fn u00(out: &mut Buf, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.put(&[b'\\', b'u', b'0', b'0', HEX[(c >> 4) as usize], HEX[(c & 15) as usize]]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(b: &[u8]) -> std::string::String {
        let mut o = Buf::new();
        string(&mut o, b);
        std::string::String::from_utf8(o.as_slice().to_vec()).unwrap()
    }

    #[test]
    fn escapes() {
        assert_eq!(esc(b"a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(esc("é→".as_bytes()), "\"é→\"");
        assert_eq!(esc(b"x\xffy\xc3"), "\"x\\u00ffy\\u00c3\"");
        let mut o = Buf::new();
        uint(&mut o, u64::MAX);
        o.push(b' ');
        uint(&mut o, 4_294_967_296_000_000_123);
        o.push(b' ');
        int(&mut o, i64::MIN);
        o.push(b' ');
        uint(&mut o, 0);
        assert_eq!(o.as_slice(), b"18446744073709551615 4294967296000000123 -9223372036854775808 0");
    }

    /// A row of every kind of field, a row key renamed, then a lost row.
    #[test]
    fn one_row() {
        super::super::testing::with_row(|m, r| {
            let mut j = Jsonl::new();
            let mut out = Vec::new();
            j.begin(&mut out, m);
            j.record(&mut out, m, r);
            j.lost(&mut out, 0, 13, None);
            j.finish(&mut out, m, &[]);
            assert_eq!(
                std::str::from_utf8(&out).unwrap(),
                "{\"ts\":12,\"cpu\":0,\"pid\":5,\"comm\":\"sh\",\"event\":\"sys:ev\",\"flags\":\"d....\",\
                 \"event_pid\":-2,\"big\":18446744073709551615,\"name\":\"a\\\"\\u00ffb\",\"arr\":[-1,2]}\n\
                 {\"ts\":13,\"cpu\":0,\"event\":\"lost\",\"count\":null}\n"
            );
        });
    }
}
