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

use super::buf::{run, Buf, Run};
use super::{elem, value, Cols, CpuStat, Export, Memo, Meta, Row, Value};
use crate::format::Event;

#[derive(Default)]
pub struct Jsonl {
    /// By event type id, how its rows are written (made at its first
    /// record), and its last row's fields.
    plans: Vec<Option<(Plan, Memo)>>,
    /// By CPU, the CPU and pid of its last row and that row's
    /// `,"cpu":C,"pid":P,"comm":"…"`: a CPU's rows mostly come from one
    /// task at a time.
    who: Vec<(Option<(u32, i32)>, Buf)>,
    /// The timestamps' leading digits.
    ts: Top,
}

/// A row's start, `{"ts":`, with the digits of a timestamp above 10^4
/// but its last four, and the range of numbers they lead: timestamps in
/// ns only change those every 10 us, which holds dozens of records in a
/// busy trace, so a row's start is mostly one piece to copy and four
/// digits to make.
#[derive(Default)]
struct Top {
    /// The numbers from `base` to `base + 10^4` (base 0: none yet).
    base: u64,
    /// `{"ts":` and the leading digits (at most 16 of them), padded.
    digits: [u8; 32],
    len: usize,
}

const E4: u64 = 10_000;

impl Top {
    /// `{"ts":` and `v` in decimal, as [`uint`] writes it.
    #[inline(always)]
    fn put(&mut self, out: &mut Buf, v: u64) {
        if self.base == 0 || v < self.base || v - self.base >= E4 {
            let q = v / E4;
            if q == 0 {
                key(out, TS);
                return uint(out, v);
            }
            self.base = q * E4;
            // (Up to 16 digits, and digits()'s 24 bytes of room after
            // the key: within the 32.)
            self.digits = [0; 32];
            self.digits[..TS.len()].copy_from_slice(TS.as_bytes());
            self.len = TS.len() + digits(&mut self.digits[TS.len()..], q);
        }
        out.put_fixed(&self.digits, self.len);
        out.put_fixed(&four((v - self.base) as u32).to_le_bytes(), 4);
    }
}

/// One event's part of its rows that is the same in every row, written
/// once: the event's name and each field's key.
struct Plan {
    /// `,"event":"system:name","flags":"`.
    head: Vec<u8>,
    /// The event's last row from its CPU on to its fields:
    /// `,"cpu":C,"pid":P,"comm":"…","event":"system:name","flags":"d.h1."`,
    /// and the CPU, pid and record bytes (common flags and preempt count:
    /// the latency columns) it was made from. An event's rows mostly
    /// come from one task on one CPU while it runs.
    mid: Buf,
    mid_of: Option<(u32, i32, [u8; 2])>,
    /// Each field past the common ones with its `,"name":` key.
    cols: Cols,
    /// When every field is a number with a short key: the record length
    /// that holds them all, and the most bytes they and the row's end
    /// take (then they are written in one run).
    scalars: Option<(usize, usize)>,
    /// ftrace:bprint, whose rows also carry the formatted message.
    bprint: bool,
}

/// The keys every row has (none longer than 5 bytes); event fields of
/// these names get `event_` before.
const ROW_KEYS: &str = "ts|cpu|pid|comm|event|flags";

/// A row's first key.
const TS: &str = "{\"ts\":";

impl Jsonl {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Plan {
    fn new(r: &Row, m: &Meta) -> Plan {
        let mut name = String::new();
        super::event_name(&mut name, r, r.data, m.endian);
        let mut head = Buf::new();
        key(&mut head, ",\"event\":");
        string(&mut head, name.as_bytes());
        key(&mut head, ",\"flags\":\"");
        let e = r.event.unwrap_or(&crate::format::NO_EVENT);
        let cols = Cols::new(e, &|keys, f| {
            keys.put(b",\"");
            if f.name.len() <= 5 && crate::util::one_of(ROW_KEYS, &f.name) {
                keys.put(b"event_");
            }
            escape_into(keys, f.name.as_bytes());
            keys.put(b"\":");
        });
        let bprint = e.system == "ftrace" && e.name == "bprint";
        let short = cols.cols.iter().all(|c| c.scalar.is_some() && c.klen() <= super::KEY);
        let need = e.fields.iter().skip(e.ncommon).map(|f| f.offset + f.size).max();
        // Per field its key, a sign and the room digits() takes; `}\n`.
        let most = cols.cols.iter().map(|c| c.klen() + 1 + 24).sum::<usize>() + 2;
        let scalars = need.filter(|_| short && !bprint).map(|need| (need, most));
        Plan { head: head.as_slice().to_vec(), mid: Buf::new(), mid_of: None, cols, scalars, bprint }
    }

    /// Row `r` from its CPU on to its fields (`who` is the CPU's part).
    #[inline(always)]
    fn mid(&mut self, out: &mut Buf, r: &Row, who: &[u8]) {
        let d = r.data;
        // (The latency columns come from these two bytes alone.)
        let flags = [d.get(2).copied().unwrap_or(0), d.get(3).copied().unwrap_or(0)];
        if self.mid_of != Some((r.cpu, r.pid, flags)) {
            self.mid.clear();
            self.mid.put(who);
            self.mid.put(&self.head);
            // The latency columns are letters, digits and dots: no escapes.
            self.mid.put(r.lat.as_bytes());
            self.mid.push(b'"');
            self.mid_of = Some((r.cpu, r.pid, flags));
        }
        out.put(self.mid.as_slice());
    }

    /// Row `r`'s fields and end when they are all numbers the record
    /// holds, in one run (false: not).
    #[inline(always)]
    fn put_scalars(&self, out: &mut Buf, d: &[u8], endian: crate::cursor::Endian) -> bool {
        let Some((need, most)) = self.scalars else { return false };
        if d.len() < need {
            return false;
        }
        run(out, most, |h| {
            for c in &self.cols.cols {
                let Some(sc) = c.scalar else { continue };
                let v = sc.get(d, endian).unwrap_or(0);
                h.put_fixed(c.padded(), c.klen());
                if sc.signed() && (v as i64) < 0 {
                    h.byte(b'-');
                    number(h, (v as i64).unsigned_abs());
                } else {
                    number(h, v);
                }
            }
            h.put_fixed(b"}\n", 2);
        });
        true
    }

    /// Row `r`'s end: its fields on.
    fn rest(&self, out: &mut Buf, m: &Meta, r: &Row) {
        let d = r.data;
        if self.put_scalars(out, d, m.endian) {
            return;
        }
        if let Some(e) = r.event {
            fields(out, &self.cols, e, d, m);
            // trace_printk's binary records: the formatted message too.
            if self.bprint {
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

impl Export for Jsonl {
    fn begin(&mut self, _out: &mut Buf, _m: &Meta) {}

    fn record(&mut self, out: &mut Buf, m: &Meta, r: &Row) {
        let d = r.data;
        let ty = crate::text::kernel::rec_type(d, m.endian) as usize;
        if self.plans.len() <= ty {
            self.plans.resize_with(ty + 1, || None);
        }
        let (plan, memo) = self.plans[ty].get_or_insert_with(|| (Plan::new(r, m), Memo::new(r.event.unwrap_or(&crate::format::NO_EVENT))));
        self.ts.put(out, r.ts);
        let c = (r.cpu as usize).min(crate::text::kernel::MAX_CPUS);
        if self.who.len() <= c {
            self.who.resize_with(c + 1, || (None, Buf::new()));
        }
        let who = &mut self.who[c];
        if who.0 != Some((r.cpu, r.pid)) {
            let b = &mut who.1;
            b.clear();
            key(b, ",\"cpu\":");
            uint(b, r.cpu as u64);
            key(b, ",\"pid\":");
            int(b, r.pid as i64);
            key(b, ",\"comm\":");
            escaped_str(b, r.comm);
            who.0 = Some((r.cpu, r.pid));
        }
        plan.mid(out, r, who.1.as_slice());
        // The rest depends on the record's fields alone.
        match memo.text(d, 0, |b| plan.rest(b, m, r)) {
            Some(t) => out.put(t),
            None => plan.rest(out, m, r),
        }
    }

    fn lost(&mut self, out: &mut Buf, cpu: u32, ts: u64, count: Option<u64>) {
        key(out, TS);
        uint(out, ts);
        key(out, ",\"cpu\":");
        uint(out, cpu as u64);
        key(out, ",\"event\":\"lost\",\"count\":");
        match count {
            Some(n) => uint(out, n),
            None => key(out, "null"),
        }
        close(out);
    }

    fn finish(&mut self, _out: &mut Buf, _m: &Meta, _stats: &[CpuStat]) {}

    fn wants_lat(&self) -> bool {
        true
    }
}

/// Each of record `d`'s fields past the common ones, with its key.
fn fields(out: &mut Buf, cols: &Cols, e: &Event, d: &[u8], m: &Meta) {
    for c in &cols.cols {
        if let Some(sc) = c.scalar {
            let Some(v) = sc.get(d, m.endian) else { continue };
            cols.put_key(out, c);
            if sc.signed() {
                int(out, v as i64)
            } else {
                uint(out, v)
            }
            continue;
        }
        let Some(v) = e.fields.get(c.field).and_then(|f| value(f, d, m.endian, m.long_size)) else { continue };
        cols.put_key(out, c);
        put_value(out, &v, m);
    }
}

fn key(out: &mut Buf, s: &str) {
    out.put(s.as_bytes());
}

#[inline(always)]
fn close(out: &mut Buf) {
    out.put_fixed(b"}\n", 2);
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
///
/// A size-optimised build divides by a constant with a real divide
/// instruction, tens of cycles each, and a row has dozens of digits
/// (timestamps, kernel addresses): here a number is cut into groups of
/// eight digits, and each group becomes its eight characters at once (see
/// [`eight`]), stored as one word.
pub fn uint(out: &mut Buf, v: u64) {
    // Many numbers are one digit (CPUs, fds, counts, depths).
    if v < 10 {
        return out.push(b'0' + v as u8);
    }
    // Room for the top group's full word, which starts before the number
    // when the group is short (its leading zeros are shifted out).
    let n = digits(out.room(24), v);
    out.advance(n);
}

/// [`uint`] in a run.
#[inline(always)]
fn number(h: &mut Run, v: u64) {
    if v < 10 {
        return h.byte(b'0' + v as u8);
    }
    let n = digits(h.rest(), v);
    h.skip(n);
}

/// `v`'s digits at the start of `t`, which has room for 24 bytes; how
/// many they are.
fn digits(t: &mut [u8], v: u64) -> usize {
    let n = ndigits(v);
    // The groups of eight from the last digit back; the top one has the
    // `at` digits left. Stored from the top down, as each word's store
    // runs past its group.
    let mut w = [0u64; 3];
    let (mut k, mut at, mut rest) = (0, n, v);
    loop {
        let q = if at > 8 { div_e8(rest) } else { 0 };
        if let Some(x) = w.get_mut(k) {
            *x = eight((rest - q * E8) as u32);
        }
        if at <= 8 || k >= 2 {
            break;
        }
        (k, at, rest) = (k + 1, at - 8, q);
    }
    put8(t, 0, w[k] >> (8 * (8 - at)));
    for j in (0..k).rev() {
        put8(t, n - 8 * (j + 1), w[j]);
    }
    n
}

/// `w`'s bytes (little-endian: its low byte first) at `t[at..]`.
#[inline(always)]
fn put8(t: &mut [u8], at: usize, w: u64) {
    if let Some(d) = t.get_mut(at..).and_then(|d| d.first_chunk_mut::<8>()) {
        *d = w.to_le_bytes();
    }
}

/// The eight decimal characters of `x` (< 10^8), leading zeros included,
/// as a little-endian word: each step splits every lane of the word in two
/// (4+4 digits, then 2+2, then 1+1) with a multiply standing for the divide,
/// the high halves in the lower lanes so the first digit is the first byte.
#[inline(always)]
fn eight(x: u32) -> u64 {
    // x / 10^4 by the multiply by 2^40 / 10^4, rounded up: the error,
    // under 10^-4 for x < 10^8, never reaches the next integer.
    let hi = (x as u64 * 109_951_163) >> 40;
    let v = hi | (x as u64 - hi * 10_000) << 32;
    // Each 32-bit lane (< 10^4) / 100: the multiply by 2^20 / 100, rounded up.
    let q = ((v * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let v = q | (v - q * 100) << 16;
    // Each 16-bit lane (< 100) / 10: the multiply by 2^10 / 10, rounded up.
    let q = ((v * 103) >> 10) & 0x000f_000f_000f_000f;
    let v = q | (v - q * 10) << 8;
    v + 0x3030_3030_3030_3030
}

/// The four decimal characters of `x` (< 10^4), leading zeros included,
/// as [`eight`] makes eight.
#[inline(always)]
fn four(x: u32) -> u32 {
    // x / 100 by the multiply by 2^19 / 100, rounded up (exact below 43699).
    let q = (x * 5243) >> 19;
    let v = q | (x - q * 100) << 16;
    let q = ((v * 103) >> 10) & 0x000f_000f;
    let v = q | (v - q * 10) << 8;
    v + 0x3030_3030
}

/// How many decimal digits `v` has: from its bit length (1233 / 4096 is
/// just above log10(2)), then one comparison.
fn ndigits(v: u64) -> usize {
    const POW10: [u64; 20] = {
        let mut t = [1u64; 20];
        let mut i = 1;
        while i < 20 {
            t[i] = t[i - 1] * 10;
            i += 1;
        }
        t
    };
    let bits = 64 - (v | 1).leading_zeros() as usize;
    let t = (bits * 1233) >> 12;
    (t + (v >= POW10[t]) as usize).max(1)
}

const E8: u64 = 100_000_000;

/// `v / 10^8` for every u64: 10^8 is 2^8 * 390625, and for the 56 bits
/// left after the shift, the multiply by 2^82 / 390625 (rounded up) is
/// exact (its error, under 2^19, times 2^56 stays under 2^82).
fn div_e8(v: u64) -> u64 {
    (((v >> 8) as u128 * 0xabcc_7711_8461_cefd) >> 82) as u64
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
    // Most strings (comms, names) are printable ASCII: out as they are.
    if b.iter().all(|&c| (0x20..0x7f).contains(&c) && c != b'"' && c != b'\\') {
        return out.put(b);
    }
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
        // Every length of number, and each side of every power of ten.
        let mut p = 1u64;
        for _ in 0..20 {
            for v in [p - 1, p, p + 1, p.wrapping_mul(7) / 3] {
                o.clear();
                uint(&mut o, v);
                assert_eq!(o.as_slice(), std::format!("{v}").as_bytes());
            }
            p = p.wrapping_mul(10);
        }
    }

    /// Timestamps with their leading digits kept: as [`uint`] writes them,
    /// across a change of those digits, below 10^8 and back.
    #[test]
    fn timestamps() {
        let mut top = Top::default();
        let (mut a, mut b) = (Buf::new(), Buf::new());
        for v in [37_157_806_994_190u64, 37_157_806_994_191, 37_157_806_999_999, 37_157_807_000_000, 37_157_899_999_999, 37_157_900_000_000, 5, 9_999, 10_000, 99_999_999, 100_000_000, 37_157_806_994_190, u64::MAX, 0] {
            top.put(&mut a, v);
            a.push(b' ');
            key(&mut b, TS);
            uint(&mut b, v);
            b.push(b' ');
        }
        assert_eq!(std::str::from_utf8(a.as_slice()).unwrap(), std::str::from_utf8(b.as_slice()).unwrap());
    }

    /// The multiplies that stand for divides, against the divides.
    #[test]
    fn divides() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(div_e8(x), x / E8, "{x}");
            assert_eq!(div_e8(x >> (x & 63)), (x >> (x & 63)) / E8);
            let y = (x % E8) as u32;
            assert_eq!(eight(y).to_le_bytes(), *std::format!("{y:08}").as_bytes(), "{y}");
            let y = y % E4 as u32;
            assert_eq!(four(y).to_le_bytes(), *std::format!("{y:04}").as_bytes(), "{y}");
        }
        for v in [0, 99, 100, E8 - 1, E8, u64::MAX, u64::MAX - E8] {
            assert_eq!(div_e8(v), v / E8);
        }
        for v in [0, 9, 10, 99, 100, 9999, 10_000, 99_999_999] {
            assert_eq!(eight(v).to_le_bytes(), *std::format!("{v:08}").as_bytes());
        }
    }

    /// A row's numbers written in one run are the bytes the general path
    /// writes; a record cut short of them is left to that path.
    #[test]
    fn numbers_in_one_run() {
        super::super::testing::with_row(|m, r| {
            let (e, recs) = super::super::testing::numbers();
            for d in &recs {
                let row = Row { data: d, event: Some(&e), ..*r };
                let plan = Plan::new(&row, m);
                let (mut a, mut b) = (Buf::new(), Buf::new());
                assert!(plan.put_scalars(&mut a, d, m.endian));
                fields(&mut b, &plan.cols, &e, d, m);
                close(&mut b);
                assert_eq!(std::str::from_utf8(a.as_slice()).unwrap(), std::str::from_utf8(b.as_slice()).unwrap());
                assert!(!plan.put_scalars(&mut a, &d[..d.len() - 1], m.endian));
            }
        });
    }

    /// A row of every kind of field, a row key renamed, then a lost row.
    #[test]
    fn one_row() {
        super::super::testing::with_row(|m, r| {
            let mut j = Jsonl::new();
            let mut out = Buf::new();
            j.begin(&mut out, m);
            j.record(&mut out, m, r);
            j.lost(&mut out, 0, 13, None);
            j.finish(&mut out, m, &[]);
            assert_eq!(
                std::str::from_utf8(out.as_slice()).unwrap(),
                "{\"ts\":12,\"cpu\":0,\"pid\":5,\"comm\":\"sh\",\"event\":\"sys:ev\",\"flags\":\"d....\",\
                 \"event_pid\":-2,\"big\":18446744073709551615,\"name\":\"a\\\"\\u00ffb\",\"arr\":[-1,2]}\n\
                 {\"ts\":13,\"cpu\":0,\"event\":\"lost\",\"count\":null}\n"
            );
        });
    }
}
