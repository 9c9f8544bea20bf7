//! A small protobuf encoder: just what the Perfetto exporter writes
//! (varints, zigzag, length-delimited fields, packed repeated fields, nested
//! messages), appending to a [`Buf`].
//!
//! A nested message's length comes before its body but is known only after
//! it: [`begin`] leaves one byte for it, enough for most (an event's
//! fields are under 128 bytes), and [`end`] writes it there, moving the
//! body up only when the length needs more bytes. Each byte thus moves at
//! most once per enclosing message (a handful of levels), never once per
//! sibling as encoding every submessage into its own buffer and copying it
//! up would.

use super::buf::{Buf, Run};

/// Wire types.
pub const VARINT: u8 = 0;
pub const I64: u8 = 1;
pub const LEN: u8 = 2;

/// (Most varints written are one byte — tags, small values, lengths —
/// and take the inlined first branch.)
#[inline(always)]
pub fn varint(b: &mut Buf, v: u64) {
    if v < 0x80 {
        return b.push(v as u8);
    }
    long_varint(b, v)
}

fn long_varint(b: &mut Buf, mut v: u64) {
    let t = b.room(10);
    let mut n = 0;
    while v >= 0x80 && n < 9 {
        t[n] = v as u8 | 0x80;
        v >>= 7;
        n += 1;
    }
    t[n] = v as u8;
    b.advance(n + 1);
}

/// Bytes `v` takes as a varint: its bit length over 7, rounded up (by a
/// multiply, 37 / 256 being close enough to 1 / 7 for up to 70 bits: a
/// size-optimised build would divide).
#[inline(always)]
pub fn varint_len(v: u64) -> usize {
    let bits = 64 - (v | 1).leading_zeros() as usize;
    ((bits + 6) * 37) >> 8
}

#[inline(always)]
pub fn tag(b: &mut Buf, field: u32, wire: u8) {
    varint(b, (field as u64) << 3 | wire as u64);
}

/// uint32/uint64/bool/enum fields; int32/int64 fields take `v as u64` (a
/// negative value is then 10 bytes, as protobuf encodes it).
pub fn uint(b: &mut Buf, field: u32, v: u64) {
    tag(b, field, VARINT);
    varint(b, v);
}

/// int32/int64 fields.
pub fn int(b: &mut Buf, field: u32, v: i64) {
    uint(b, field, v as u64);
}

pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// sint32/sint64 fields.
pub fn sint(b: &mut Buf, field: u32, v: i64) {
    uint(b, field, zigzag(v));
}

pub fn fixed64(b: &mut Buf, field: u32, v: u64) {
    tag(b, field, I64);
    b.put(&v.to_le_bytes());
}

/// string/bytes fields (and an already encoded message).
pub fn bytes(b: &mut Buf, field: u32, v: &[u8]) {
    tag(b, field, LEN);
    varint(b, v.len() as u64);
    b.put(v);
}

/// A nested message (or packed field) being written: where its body
/// starts, and the bytes left for its length in front of it.
#[must_use]
pub struct Open {
    body: usize,
    room: usize,
}

/// Start field `field` as a nested message; its fields follow, then [`end`].
pub fn begin(b: &mut Buf, field: u32) -> Open {
    begin_room(b, field, 1)
}

/// [`begin`] for a message likely `room` length bytes long (2: under
/// 16 KiB, 3: under 2 MiB).
pub fn begin_room(b: &mut Buf, field: u32, room: usize) -> Open {
    tag(b, field, LEN);
    b.put(&[0; 3][..room]);
    Open { body: b.len(), room }
}

/// Close a nested message: its length in front, the body right after it.
/// A length shorter than the room left is padded to fill it (`0x85 0x00`
/// is 5: protobuf readers take a varint's redundant high groups, and
/// Perfetto's own writer pads the same way); a longer one moves the body.
#[inline(always)]
pub fn end(b: &mut Buf, o: Open) {
    let n = b.len() - o.body;
    if n < 0x80 && o.room == 1 {
        return b.set(o.body - 1, &[n as u8]);
    }
    long_end(b, o)
}

fn long_end(b: &mut Buf, o: Open) {
    let n = (b.len() - o.body) as u64;
    // (Generic events, whose room is two bytes, are written as often.)
    if n < 0x4000 && o.room == 2 {
        return b.set(o.body - 2, &[n as u8 | 0x80, (n >> 7) as u8]);
    }
    let k = varint_len(n).max(o.room);
    if k > o.room {
        b.open_gap(o.body, k - o.room);
    }
    let mut t = [0u8; 10];
    let mut v = n;
    for (i, x) in t.iter_mut().enumerate().take(k) {
        *x = (v as u8 & 0x7f) | if i + 1 < k { 0x80 } else { 0 };
        v >>= 7;
    }
    b.set(o.body - o.room, &t[..k]);
}

/// Bytes a [`Run`] may write.
pub const RUN: usize = 48;

/// Write a run (at most [`RUN`] bytes: an event's header) into `b` with `f`.
#[inline(always)]
pub fn run<R>(b: &mut Buf, f: impl FnOnce(&mut Run) -> R) -> R {
    super::buf::run(b, RUN, f)
}

/// The encoder's pieces written into a [`Run`].
impl Run<'_> {
    /// Length `n` (< 2^14) in the two bytes from `at`, as [`end`] writes
    /// it in two bytes of room.
    #[inline(always)]
    pub fn len2(&mut self, at: usize, n: usize) {
        self.set(at, n as u8 | 0x80);
        self.set(at + 1, (n >> 7) as u8);
    }

    #[inline(always)]
    pub fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte(v as u8 | 0x80);
            v >>= 7;
        }
        self.byte(v as u8)
    }

    /// As [`uint`].
    #[inline(always)]
    pub fn uint(&mut self, field: u32, v: u64) {
        self.varint((field as u64) << 3);
        self.varint(v);
    }

    /// As [`begin_room`].
    #[inline(always)]
    pub fn begin_room(&mut self, field: u32, room: usize) -> Open {
        self.varint((field as u64) << 3 | LEN as u64);
        for _ in 0..room {
            self.byte(0);
        }
        Open { body: self.pos(), room }
    }
}

/// A packed repeated varint field (uint32/uint64/int32/int64; zigzag the
/// values first for sint types).
pub fn packed(b: &mut Buf, field: u32, vals: impl IntoIterator<Item = u64>) {
    let o = begin(b, field);
    for v in vals {
        varint(b, v);
    }
    end(b, o);
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;
    use alloc::vec::Vec;

    #[test]
    fn varints() {
        let mut b = Buf::new();
        varint(&mut b, 300);
        assert_eq!(b.as_slice(), [0xac, 0x02]);
        let mut every_length = std::vec![0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX];
        every_length.extend((0..64).flat_map(|k| [1u64 << k, (1u64 << k) - 1]));
        for v in every_length {
            b.clear();
            varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v), "{v}");
        }
        assert_eq!(varint_len(u64::MAX), 10);
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        b.clear();
        int(&mut b, 1, -1);
        assert_eq!(b.len(), 11);
    }

    /// The examples of the protobuf encoding guide: field 1 = 150, and
    /// a message holding it as field 3.
    #[test]
    fn nested_and_packed() {
        let mut b = Buf::new();
        let o = begin(&mut b, 3);
        uint(&mut b, 1, 150);
        end(&mut b, o);
        assert_eq!(b.as_slice(), [0x1a, 0x03, 0x08, 0x96, 0x01]);
        b.clear();
        packed(&mut b, 4, [3, 270, 86942]);
        assert_eq!(b.as_slice(), [0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e, 0xa7, 0x05]);
        b.clear();
        bytes(&mut b, 2, b"testing");
        assert_eq!(b.as_slice(), [0x12, 0x07, 0x74, 0x65, 0x73, 0x74, 0x69, 0x6e, 0x67]);
        // Two levels, the inner one over 127 bytes (a 2-byte length).
        b.clear();
        let outer = begin(&mut b, 1);
        let inner = begin(&mut b, 2);
        bytes(&mut b, 1, &[7; 200]);
        end(&mut b, inner);
        end(&mut b, outer);
        let mut want: Vec<u8> = vec![0x0a, 0xce, 0x01, 0x12, 0xcb, 0x01, 0x0a, 0xc8, 0x01];
        want.extend_from_slice(&[7; 200]);
        assert_eq!(b.as_slice(), &want[..]);
        // Room for two length bytes, one needed: padded.
        b.clear();
        let o = begin_room(&mut b, 1, 2);
        uint(&mut b, 1, 5);
        end(&mut b, o);
        assert_eq!(b.as_slice(), [0x0a, 0x82, 0x00, 0x08, 0x05]);
        // A 3-byte length where one was left.
        b.clear();
        let o = begin(&mut b, 1);
        bytes(&mut b, 2, &[1; 20000]);
        end(&mut b, o);
        assert_eq!(&b.as_slice()[..7], [0x0a, 0xa4, 0x9c, 0x01, 0x12, 0xa0, 0x9c]);
        assert_eq!(b.len(), 1 + 3 + 1 + 3 + 20000);
        fixed64(&mut b, 1, 1);
        sint(&mut b, 1, -2);
    }

    /// A run writes what the functions one by one write.
    #[test]
    fn run_as_one_by_one() {
        let (mut a, mut b) = (Buf::new(), Buf::new());
        for v in [0, 127, 128, u64::MAX] {
            a.put(b"x");
            let o = begin_room(&mut a, 437, 2);
            uint(&mut a, 1, v);
            end(&mut a, o);
            b.put(b"x");
            let o = run(&mut b, |r| {
                let o = r.begin_room(437, 2);
                r.uint(1, v);
                o
            });
            end(&mut b, o);
        }
        assert_eq!(a.as_slice(), b.as_slice());
    }
}
