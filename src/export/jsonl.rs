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

use super::{elem, value, CpuStat, Export, Meta, Row, Value};

#[derive(Default)]
pub struct Jsonl {
    name: String,
}

/// The keys every row has; event fields of these names get `event_` before.
const ROW_KEYS: &str = "ts|cpu|pid|comm|event|flags";

impl Jsonl {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Export for Jsonl {
    fn begin(&mut self, _out: &mut Vec<u8>, _m: &Meta) {}

    fn record(&mut self, out: &mut Vec<u8>, m: &Meta, r: &Row) {
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
        self.name.clear();
        super::event_name(&mut self.name, r, d, m.endian);
        string(out, self.name.as_bytes());
        key(out, ",\"flags\":");
        string(out, r.lat.as_bytes());
        if let Some(e) = r.event {
            for f in e.fields.get(e.ncommon..).unwrap_or(&[]) {
                let Some(v) = value(f, d, m.endian, m.long_size) else { continue };
                out.extend_from_slice(b",\"");
                if crate::util::one_of(ROW_KEYS, &f.name) {
                    out.extend_from_slice(b"event_");
                }
                escape_into(out, f.name.as_bytes());
                out.extend_from_slice(b"\":");
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

    fn lost(&mut self, out: &mut Vec<u8>, cpu: u32, ts: u64, count: Option<u64>) {
        key(out, "{\"ts\":");
        uint(out, ts);
        key(out, ",\"cpu\":");
        uint(out, cpu as u64);
        key(out, ",\"event\":\"lost\",\"count\":");
        match count {
            Some(n) => uint(out, n),
            None => key(out, "null"),
        }
        close(out)
    }

    fn finish(&mut self, _out: &mut Vec<u8>, _m: &Meta, _stats: &[CpuStat]) {}
}

fn key(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(s.as_bytes());
}

fn close(out: &mut Vec<u8>) {
    out.extend_from_slice(b"}\n");
}

pub(crate) fn put_value(out: &mut Vec<u8>, v: &Value, m: &Meta) {
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
pub fn uint(out: &mut Vec<u8>, mut v: u64) {
    let mut t = [0u8; 20];
    let mut i = t.len();
    loop {
        i -= 1;
        t[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&t[i..]);
}

pub fn int(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    uint(out, v.unsigned_abs());
}

/// A JSON string of bytes.
pub fn string(out: &mut Vec<u8>, b: &[u8]) {
    out.push(b'"');
    escape_into(out, b);
    out.push(b'"');
}

/// A JSON string of text that may carry text::put_all's raw-byte escapes
/// (a comm that is not UTF-8): those are the bytes they stand for.
fn escaped_str(out: &mut Vec<u8>, s: &str) {
    if !crate::text::raw_used() {
        return string(out, s.as_bytes());
    }
    let mut b = Vec::with_capacity(s.len());
    raw_bytes(&mut b, s);
    string(out, &b);
}

/// The bytes text from text::put_all stands for (its raw-byte escapes
/// undone).
pub fn raw_bytes(out: &mut Vec<u8>, s: &str) {
    if !crate::text::raw_used() {
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
pub fn escape_into(out: &mut Vec<u8>, mut b: &[u8]) {
    while !b.is_empty() {
        let (good, bad) = match core::str::from_utf8(b) {
            Ok(_) => (b.len(), 0),
            Err(e) => (e.valid_up_to(), e.error_len().unwrap_or(b.len() - e.valid_up_to())),
        };
        for &c in &b[..good] {
            match c {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\r' => out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => u00(out, c),
                _ => out.push(c),
            }
        }
        for &c in &b[good..good + bad] {
            u00(out, c);
        }
        b = &b[good + bad..];
    }
}

fn u00(out: &mut Vec<u8>, c: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u00");
    out.push(HEX[(c >> 4) as usize]);
    out.push(HEX[(c & 15) as usize]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn esc(b: &[u8]) -> std::string::String {
        let mut o = Vec::new();
        string(&mut o, b);
        std::string::String::from_utf8(o).unwrap()
    }

    #[test]
    fn escapes() {
        assert_eq!(esc(b"a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
        assert_eq!(esc("é→".as_bytes()), "\"é→\"");
        assert_eq!(esc(b"x\xffy\xc3"), "\"x\\u00ffy\\u00c3\"");
        let mut o = Vec::new();
        uint(&mut o, u64::MAX);
        o.push(b' ');
        int(&mut o, i64::MIN);
        o.push(b' ');
        uint(&mut o, 0);
        assert_eq!(o, b"18446744073709551615 -9223372036854775808 0");
    }
}
