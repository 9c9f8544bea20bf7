//! Kernel symbols from `/proc/kallsyms` text (or the trace.dat kallsyms
//! section): a sorted table with binary search for `%pS`-style lookups, and
//! the `printk_formats` table that `bprint` records point into.
//!
//! The table is the kallsyms text itself, shared with the trace.dat that
//! read it. The kernel lists its own symbols first, in address order, one
//! `%px %c %s` line each: that head is searched in place, by binary search
//! over the text's bytes, with nothing built for it but a check of its
//! order. Only the lines after it (module symbols, ftrace trampolines,
//! anything out of order) get a table, 14 bytes a symbol (its address,
//! where its line starts, its module). A symbol's name and type are read
//! from its line when a lookup needs them.

use alloc::boxed::Box;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::{Cell, OnceCell};
use crate::tracedat::LazyText;
use crate::sys::bytes;

/// One symbol. Packed: the table is ~160k of them, and 16-byte alignment
/// would add a seventh to it.
#[derive(Clone, Copy)]
#[repr(C, packed(2))]
struct Sym {
    addr: u64,
    /// Where its line starts in the text.
    line: u32,
    /// 0 = core kernel, else 1 + index into `mods`.
    module: u16,
}

impl Sym {
    /// (A packed field is read by value, never through a reference.)
    #[inline(always)]
    fn addr(&self) -> u64 {
        self.addr
    }
    #[inline(always)]
    fn line(&self) -> u32 {
        self.line
    }
    #[inline(always)]
    fn module(&self) -> u16 {
        self.module
    }
}

/// A symbol table sorted by address, parsed at its first use: ftcat reads
/// the kallsyms of every recording, and most print no symbol (parsing the
/// ~120k lines was a tenth of decoding a million syscall records).
#[derive(Default)]
pub struct Ksyms {
    /// The kallsyms text (valid UTF-8: lines that were not are blanked),
    /// decompressed at its first use.
    text: Rc<LazyText>,
    tab: OnceCell<Table>,
    /// Recent lookups by address (see [`Slot`]), allocated at the first:
    /// sets of two adjacent slots, the more recent first.
    cache: OnceCell<Box<[Cell<Slot>]>>,
    /// Recent names by address (see [`NameSlot`]), the same way.
    #[cfg(feature = "fast-print")]
    names: OnceCell<Box<[Cell<NameSlot>]>>,
}

/// One entry of the lookup cache: an address and what [`Ksyms::find`]
/// answered for it. function_graph records and `%pS` fields (kmem's
/// call_site) name the same few thousand addresses millions of times; a
/// hit saves two binary searches over ~120k symbols, their cache misses
/// and reading the symbol's line.
#[derive(Clone, Copy)]
struct Slot {
    addr: u64,
    hit: Option<Hit>,
}

/// A symbol found for an address: the parts of a [`Ksym`], its name as a
/// place in the text.
#[derive(Clone, Copy)]
struct Hit {
    start: u64,
    size: Option<u64>,
    name: u32,
    len: u16,
    module: u16,
    /// The name or the module holds a NUL byte (see [`Ksym::nul`]).
    nul: bool,
}

/// One entry of the name cache: an address and the name of its symbol,
/// when that is all ASCII, the whole answer of [`Ksyms::ascii_name`]. The
/// function and graph tracers print a name or two a record and nothing
/// else of the symbol: a third of a [`Slot`], so that the sets a recording
/// uses stay in the CPU's nearest cache.
#[cfg(feature = "fast-print")]
#[derive(Clone, Copy)]
struct NameSlot {
    addr: u64,
    /// Where the name is in the text; `len` 0: no symbol or not ASCII.
    name: u32,
    len: u16,
    /// The symbol is a module's.
    module: bool,
}

/// The two ways of `addr`'s set of `cache` (keyed by `key`), the one
/// holding `addr` in front, filled by `fill` when neither did: the back
/// one, the older, is the one replaced.
#[inline(always)]
fn two_way<T: Copy>(cache: &[Cell<T>], addr: u64, key: impl Fn(T) -> u64, fill: impl FnOnce() -> T) -> Option<T> {
    let [front, back] = cache.get(2 * set_of(addr)..).and_then(|s| s.first_chunk())?;
    if key(front.get()) != addr {
        front.swap(back);
        if key(front.get()) != addr {
            front.set(fill());
        }
    }
    Some(front.get())
}

/// Sets of the lookup cache (a power of two), two slots each: a graph
/// recording's few hundred functions put a couple of dozen pairs in one
/// slot of a direct-mapped cache, and a hot pair (lock and unlock) that
/// shares one evicts each other at every call; two ways leave a few
/// misses per function.
const CACHE_SETS: usize = 2048;

/// The cache set of `addr`: a multiplicative hash, as symbol addresses
/// share their high bits and are aligned.
fn set_of(addr: u64) -> usize {
    (addr.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - CACHE_SETS.trailing_zeros())) as usize
}

/// For the `Debug` of the printfmt environment that holds one.
impl core::fmt::Debug for Ksyms {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        f.write_str("Ksyms")
    }
}

#[derive(Default)]
struct Table {
    /// Where the head starts and ends in the text: lines [`HeadLine::read`]
    /// reads, with a symbol, in address order (see [`Table::parse`]).
    head: core::ops::Range<usize>,
    /// How many lines the head has.
    head_len: usize,
    /// The symbols of the lines after the head, sorted by address.
    syms: Vec<Sym>,
    /// `syms` has core kernel symbols (module 0): a text out of order.
    /// Without them the next core symbol is in the head alone, and a
    /// lookup need not walk past every module symbol for one.
    tail_core: bool,
    mods: Vec<String>,
    /// The lowest symbol address (u64::MAX for none): below it no symbol
    /// holds an address, and user addresses (a page fault's `%ps`, a new
    /// one at every fault) miss the cache and need no search to say so.
    low: u64,
    /// The table has static data symbols (`d`, `b`, `r`): the kernel was
    /// built with CONFIG_KALLSYMS_ALL and looks up data addresses too.
    /// Without it only text addresses have symbols; the few global data
    /// symbols /proc/kallsyms still lists (`__start_init_stack`) hold none.
    all: bool,
}

/// The answer of `Ksyms::lookup`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ksym<'a> {
    pub name: &'a str,
    /// addr - symbol start.
    pub offset: u64,
    /// Distance to the next symbol (what the kernel prints after `/`).
    pub size: Option<u64>,
    pub module: Option<&'a str>,
    /// The name or the module holds a NUL byte (a hostile text: the
    /// kernel's names have none). What prints a symbol as the kernel's
    /// `%s` would stops there; checked once, when the lookup cache takes
    /// the symbol, so that a `%pS` of a usual name need not look for one.
    pub nul: bool,
}

/// Symbols that mark the end of a kernel region: an address past them is not
/// inside any symbol (the kernel's is_ksym_addr() refuses it).
fn is_end_marker(name: &str) -> bool {
    // A cheap rejection first: every %pS with an offset asks.
    name.len() <= 11 && name.starts_with('_') && crate::util::one_of("_etext|_einittext|_end|__init_end|_edata|__bss_stop", name)
}

/// `u8::is_ascii_whitespace`, with one compare for the usual non-blank byte.
#[inline(always)]
fn blank(c: u8) -> bool {
    c <= b' ' && matches!(c, b' ' | b'\t' | b'\n' | b'\x0c' | b'\r')
}

/// The next whitespace-separated word of `s` from `*at` (split_ascii_whitespace).
fn word<'a>(s: &'a str, at: &mut usize) -> Option<&'a str> {
    let b = s.as_bytes();
    let mut i = *at;
    while i < b.len() && blank(b[i]) {
        i += 1;
    }
    let start = i;
    while i < b.len() && !blank(b[i]) {
        i += 1;
    }
    *at = i;
    if start == i {
        return None;
    }
    s.get(start..i)
}

/// `u64::from_str_radix(a, 16)`: an optional `+`, hex digits, no overflow.
fn hex(a: &[u8]) -> Option<u64> {
    let a = a.strip_prefix(b"+").unwrap_or(a);
    // Past the leading zeros, 16 digits fit: no check per digit.
    let zeros = a.iter().take_while(|&&c| c == b'0').count();
    if a.is_empty() || a.len() - zeros > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in &a[zeros..] {
        v = (v << 4) | hex_digit(c)? as u64;
    }
    Some(v)
}

/// Eight lowercase hex digits (as `%px` writes them) as a number, all at
/// once as the bytes of a u64: a loop over the digits was half the cost of
/// checking the head's ~160k lines.
fn hex8(digits: &[u8]) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let x = u64::from_be_bytes(*digits.first_chunk::<8>()?);
    // A digit's value is its low nibble; a letter's (bit 6 set) that plus 9.
    let n = (x & (0x0f * ONES)) + ((x >> 6) & ONES) * 9;
    // Valid digits are what `{:x}` writes back for their values: '0' + n
    // below ten, 'a' - 10 + n from ten (where n + 6 carries into bit 4).
    // (Each byte stays below 256: no carry from one byte to the next.)
    let ten_up = ((n + 6 * ONES) >> 4) & ONES;
    if n & (0xf0 * ONES) != 0 || n + 0x30 * ONES + ten_up * 39 != x {
        return None;
    }
    // One nibble a byte to one nibble each: pairs, then fours, then eight.
    let n = (n | n >> 4) & 0x00ff_00ff_00ff_00ff;
    let n = (n | n >> 8) & 0x0000_ffff_0000_ffff;
    Some((n | n >> 16) & 0xffff_ffff)
}

/// The value of one hex digit.
#[inline(always)]
fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}


impl Ksyms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep a copy of `/proc/kallsyms` text for parsing at the first
    /// lookup (see [`Table::parse`]).
    pub fn parse(text: &[u8]) -> Ksyms {
        Ksyms::from_vec(text.to_vec())
    }

    /// Keep `/proc/kallsyms` text for parsing at the first lookup. UTF-8
    /// is checked once for the whole text (the usual case), not line by
    /// line; lines that are not UTF-8 hold no symbol and are blanked.
    pub fn from_vec(text: Vec<u8>) -> Ksyms {
        let text = String::from_utf8(text).unwrap_or_else(|e| {
            let mut t = e.into_bytes();
            let mut at = 0;
            while at < t.len() {
                let end = newline(&t, at);
                if core::str::from_utf8(&t[at..end]).is_err() {
                    t[at..end].fill(b' ');
                }
                at = end + 1;
            }
            String::from_utf8(t).unwrap_or_default()
        });
        Ksyms::shared(Rc::new(LazyText::from(text)))
    }

    /// Use kallsyms text where it is (a trace.dat's section), not a copy.
    pub fn shared(text: Rc<LazyText>) -> Ksyms {
        Ksyms { text, ..Ksyms::default() }
    }

    /// The kallsyms text as given.
    pub fn text(&self) -> &[u8] {
        self.text.as_bytes()
    }

    fn tab(&self) -> &Table {
        crate::util::once(&self.tab, || Table::parse(&self.text))
    }

    pub fn len(&self) -> usize {
        self.tab().head_len + self.tab().syms.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The symbol containing `addr`: the last one starting at or below it.
    /// Its size runs to the next symbol of the same module (or core kernel);
    /// an address past the last symbol of its group, or past an end marker
    /// like `_etext`, is not inside any symbol.
    pub fn lookup(&self, addr: u64) -> Option<Ksym<'_>> {
        let h = self.hit(addr)?;
        let name = self.name(&h);
        let module = if h.module == 0 { None } else { self.tab().mods.get(h.module as usize - 1).map(|m| m.as_str()) };
        Some(Ksym { name, offset: addr - h.start, size: h.size, module, nul: h.nul })
    }

    /// The name of [`Ksyms::lookup`]'s symbol alone, when it is all ASCII
    /// (checked once, when the lookup cache takes the symbol): the function
    /// tracer prints two names a record and nothing else of them.
    #[cfg(feature = "fast-print")]
    pub fn ascii_name(&self, addr: u64) -> Option<&str> {
        self.named(addr).map(|(name, _)| name)
    }

    /// [`Ksyms::ascii_name`] of a core kernel symbol (no module).
    #[cfg(feature = "fast-print")]
    pub fn core_ascii_name(&self, addr: u64) -> Option<&str> {
        self.named(addr).filter(|&(_, module)| !module).map(|(name, _)| name)
    }

    /// The ASCII name of the symbol at `addr` and whether it is a module's,
    /// through the name cache (apart from the lookup cache: a recording
    /// that prints names alone never allocates that one).
    #[cfg(feature = "fast-print")]
    fn named(&self, addr: u64) -> Option<(&str, bool)> {
        let slot = |addr| {
            let h = self.find(addr).filter(|h| self.name(h).is_ascii());
            h.map_or(NameSlot { addr, name: 0, len: 0, module: false }, |h| NameSlot { addr, name: h.name, len: h.len, module: h.module != 0 })
        };
        // Filled with the answer for address 0, so that every slot is true.
        let cache = crate::util::once(&self.names, || {
            let empty = slot(0);
            (0..2 * CACHE_SETS).map(|_| Cell::new(empty)).collect()
        });
        let s = two_way(cache, addr, |s| s.addr, || slot(addr))?;
        if s.len == 0 {
            return None;
        }
        let at = s.name as usize;
        Some((self.text.get(at..at + s.len as usize).unwrap_or(""), s.module))
    }

    fn name(&self, h: &Hit) -> &str {
        self.text.get(h.name as usize..h.name as usize + h.len as usize).unwrap_or("")
    }

    /// [`Ksyms::find`] through the lookup cache.
    #[inline]
    fn hit(&self, addr: u64) -> Option<Hit> {
        // Filled with the answer for address 0, so that every slot is true.
        let cache = crate::util::once(&self.cache, || {
            let empty = Slot { addr: 0, hit: self.find(0) };
            (0..2 * CACHE_SETS).map(|_| Cell::new(empty)).collect()
        });
        two_way(cache, addr, |s| s.addr, || Slot { addr, hit: self.find(addr) })?.hit
    }

    /// [`Ksyms::lookup`] without the cache: the last symbol at or below
    /// `addr` in the head and in the table after it, of equal addresses
    /// the head's (listed first).
    #[inline(never)]
    fn find(&self, addr: u64) -> Option<Hit> {
        let t = self.tab();
        if addr < t.low {
            return None;
        }
        let text = self.text.as_bytes();
        let (above, last) = t.head_partition(text, |a| a <= addr);
        let n = t.syms.partition_point(|s| s.addr() <= addr);
        let tail = n.checked_sub(1).map(|i| t.syms[i].addr());
        // Of several names at one address the first listed wins, as in the
        // kernel's own lookup.
        let (start, line, module) = match (last, tail) {
            (Some(h), tail) if tail.map_or(true, |a| a <= h.addr) => {
                let first = t.head_at(text, t.head_partition(text, |a| a < h.addr).0).unwrap_or(h);
                (h.addr, first.start, 0)
            }
            (_, Some(start)) => {
                let s = t.syms[t.syms[..n].partition_point(|s| s.addr() < start)];
                (start, s.line() as usize, s.module())
            }
            _ => return None,
        };
        // The size runs to the next symbol of the same module (or core kernel).
        let head_next = if module == 0 { t.head_at(text, above).map(|l| l.addr) } else { None };
        let tail_next = if module == 0 && !t.tail_core { None } else { t.syms[n..].iter().find(|x| x.module() == module).map(|x| x.addr()) };
        let size = match (head_next, tail_next) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map(|next| next - start);
        let line = self.text.get(line..).and_then(|l| l.get(..newline(l.as_bytes(), 0))).unwrap_or("");
        let (_, kind, name, _, _) = sym_line(line)?;
        // Names are at most u16::MAX bytes (as the table has always kept them).
        let name = if name.len() > u16::MAX as usize { name.get(..u16::MAX as usize).unwrap_or("") } else { name };
        if addr > start && (is_end_marker(name) || size.is_none()) {
            return None;
        }
        if !t.all && module == 0 && matches!(kind, b'D' | b'B' | b'R' | b'd' | b'b' | b'r') {
            return None;
        }
        let at = name.as_ptr() as usize - self.text.as_ptr() as usize;
        let nul = name.as_bytes().contains(&0) || module != 0 && t.mods.get(module as usize - 1).is_some_and(|m| m.as_bytes().contains(&0));
        Some(Hit { start, size, name: at as u32, len: name.len() as u16, module, nul })
    }

    /// Address of a symbol by name (first match), for tests and tools.
    /// Before the table is parsed, a scan of the text for the line ending
    /// in the name: ftcat asks for the irq-entry bounds at every start.
    pub fn addr_of(&self, name: &str) -> Option<u64> {
        scan_addr(self.text.as_bytes(), name.as_bytes())
    }
}

/// [`Ksyms::addr_of`] over kallsyms text: the lowest address (first
/// listed of equal ones) of the symbols named `name` that [`Table::parse`]
/// keeps. Only lines whose name column ends the way `name` does are
/// parsed: a tenth of the cost of parsing them all.
fn scan_addr(text: &[u8], name: &[u8]) -> Option<u64> {
    let &last = name.last()?;
    let mut best: Option<u64> = None;
    let mut at = 0;
    while at < text.len() {
        let end = newline(text, at);
        let line = &text[at..end];
        at = end + 1;
        // The name column ends the line, or a `\t[module]` follows it.
        let mut n = line.len();
        while n > 0 && blank(line[n - 1]) {
            n -= 1;
        }
        if n > 0 && line[n - 1] == b']' {
            if let Some(k) = line[..n].iter().rposition(|&b| b == b'[') {
                n = k;
                while n > 0 && blank(line[n - 1]) {
                    n -= 1;
                }
            }
        }
        if n <= name.len() || line[n - 1] != last || !blank(line[n - name.len() - 1]) || !line[..n].ends_with(name) {
            continue;
        }
        // The name must be the third word (not a type letter or a module).
        if let Some((addr, _, nm, _, e)) = core::str::from_utf8(line).ok().and_then(sym_line) {
            if e == n && nm.len() == name.len() && best.map_or(true, |b| addr < b) {
                best = Some(addr);
            }
        }
    }
    best
}

/// One kallsyms line `ADDR TYPE NAME [MODULE]` of a symbol the table keeps
/// (not absolute or undefined, address not 0): address, type letter,
/// name, module and where the name ends in the line.
fn sym_line(line: &str) -> Option<(u64, u8, &str, Option<&str>, usize)> {
    let mut at = 0;
    let (a, t, name) = (word(line, &mut at)?, word(line, &mut at)?, word(line, &mut at)?);
    let end = at;
    let addr = hex(a.as_bytes())?;
    let t = t.as_bytes();
    if addr == 0 || (t.len() == 1 && matches!(t[0] | 0x20, b'a' | b'u')) {
        return None;
    }
    let module = word(line, &mut at).and_then(|m| m.strip_prefix('[')).and_then(|m| m.strip_suffix(']'));
    Some((addr, t[0], name, module, end))
}

/// [`sym_line`]'s address, type letter and module for a line of the shape
/// the kernel writes (`%px %c %s` and `\t[%s]` for a module), with none
/// of its skipping; None for any other shape, which `sym_line` reads.
/// The table is parsed at the first lookup of every run that prints a
/// symbol: ~160k lines, a third of the time of printing a small file.
fn quick_line(line: &str) -> Option<(u64, u8, Option<&str>)> {
    let b = line.as_bytes();
    let n = b.iter().position(|&c| c == b' ')?;
    if !(n == 16 || n == 8) || b.len() < n + 4 || blank(b[n + 1]) || b[n + 2] != b' ' || blank(b[n + 3]) {
        return None;
    }
    let addr = hex(&b[..n])?;
    let name = n + 3;
    let Some(k) = b[name..].iter().position(|&c| blank(c)) else { return Some((addr, b[n + 1], None)) };
    // A module: `\t[NAME]` ends the line.
    let m = line.get(name + k..)?.strip_prefix("\t[")?.strip_suffix(']')?;
    if m.is_empty() || m.bytes().any(blank) {
        return None;
    }
    Some((addr, b[n + 1], Some(m)))
}

/// Index of the first `\n` of `t` at or after `i` (`t.len()` if none).
#[inline]
fn newline(t: &[u8], i: usize) -> usize {
    bytes::find_byte(t, i, b'\n')
}

/// Index of the first byte at most b' ' (a blank or a control byte: where
/// a name ends) of `t` at or after `i` (`t.len()` if none).
#[inline]
fn name_end(t: &[u8], i: usize) -> usize {
    bytes::find_at_most(t, i, b' ')
}

/// A line of the head: `ADDR T NAME` exactly as the kernel writes a core
/// kernel symbol (`%px %c %s`: 16 hex digits, a type, a name, no module),
/// a shape checked in a few steps. [`sym_line`] reads such a line the
/// same way.
#[derive(Clone, Copy)]
struct HeadLine {
    addr: u64,
    kind: u8,
    /// Where the line starts in the text, and where it ends (its `\n` or
    /// the end of the text).
    start: usize,
    end: usize,
}

impl HeadLine {
    /// The line at `at` (a line start) if it has this shape.
    fn read(t: &[u8], at: usize) -> Option<HeadLine> {
        let (digits, rest) = t.get(at..)?.split_first_chunk::<16>()?;
        let &[b' ', kind, b' ', first, ..] = rest else { return None };
        if blank(kind) || blank(first) {
            return None;
        }
        let end = name_end(t, at + 19);
        if t.get(end).is_some_and(|&c| c != b'\n') {
            return None;
        }
        let (hi, lo) = digits.split_at(8);
        let addr = hex8(hi)? << 32 | hex8(lo)?;
        Some(HeadLine { addr, kind, start: at, end })
    }

    /// A symbol the table keeps (not absolute or undefined, address not 0).
    fn kept(&self) -> bool {
        self.addr != 0 && !matches!(self.kind | 0x20, b'a' | b'u')
    }
}

impl Table {
    /// Parse `/proc/kallsyms` lines: `ADDR TYPE NAME [MODULE]`. Absolute (`A`)
    /// and undefined (`U`) symbols are skipped, as are all-zero addresses (what
    /// an unprivileged reader sees). Malformed lines are skipped: the table is
    /// a best-effort aid for printing, not an input that can be wrong.
    ///
    /// The head, the kernel's own symbols in address order, is only
    /// checked, not copied: it starts after the lines with no symbol that
    /// open the text (x86_64's per-cpu symbols, `A`) and ends at the first
    /// line not of [`HeadLine`]'s shape, with no symbol or out of order.
    /// The lines after it, whatever they are, get the table.
    #[inline(never)]
    fn parse(text: &str) -> Table {
        let mut k = Table::default();
        let b = text.as_bytes();
        let mut at = 0;
        // (The board build, without `fast-print`, has no head: the table
        // has every symbol, as it needs no code of its own.)
        if cfg!(feature = "fast-print") {
            while let Some(l) = HeadLine::read(b, at).filter(|l| !l.kept()) {
                at = l.end + 1;
            }
            k.head.start = at;
            let mut prev = 0;
            while let Some(l) = HeadLine::read(b, at).filter(|l| l.kept() && l.addr >= prev) {
                prev = l.addr;
                k.all |= matches!(l.kind, b'd' | b'b' | b'r');
                k.head_len += 1;
                at = l.end + 1;
            }
            // (at can be one past the end, after a last line with no `\n`.)
            k.head.end = at.min(b.len());
            at = k.head.end;
        }
        // By hand rather than split_ascii_whitespace/from_str_radix: a
        // fifth of the instructions.
        // (Line starts are u32: a trace.dat section is at most 1 GiB.)
        while at < text.len() && at <= u32::MAX as usize {
            let end = newline(text.as_bytes(), at);
            // (at and end are next to newlines: char boundaries.)
            let line = text.get(at..end).unwrap_or("");
            let sym = quick_line(line).or_else(|| sym_line(line).map(|(a, t, _, m, _)| (a, t, m)));
            if let Some((addr, kind, module)) = sym.filter(|&(a, t, _)| a != 0 && !matches!(t | 0x20, b'a' | b'u')) {
                k.add(addr, at as u32, module, kind);
            }
            at = end + 1;
        }
        k.sort();
        let head_low = k.head_at(b, k.head.start).map_or(u64::MAX, |l| l.addr);
        k.low = k.syms.first().map_or(head_low, |s| s.addr().min(head_low));
        k
    }

    /// Sort by address; of several names at one address the first listed
    /// stays first (line order is file order: the sort is stable).
    /// kallsyms is in address order but for a tail (module symbols, ftrace
    /// trampolines): only the part from the first symbol above the tail's
    /// lowest is sorted.
    fn sort(&mut self) {
        let s = &mut self.syms;
        let Some(head) = s.windows(2).position(|w| w[0].addr() > w[1].addr()) else { return };
        let low = s[head + 1..].iter().map(|x| x.addr()).min().unwrap_or(0);
        let from = s[..=head].partition_point(|x| x.addr() <= low);
        crate::sort::sort_by_key(&mut s[from..], |x| x.addr());
    }

    /// The line of the head at `from` (a line start), if the head goes on
    /// there.
    fn head_at(&self, text: &[u8], from: usize) -> Option<HeadLine> {
        if !cfg!(feature = "fast-print") || from >= self.head.end {
            return None;
        }
        HeadLine::read(text, from)
    }

    /// `partition_point` over the head's lines, by address: where the first
    /// line that `below` refuses starts (the addresses it takes come
    /// first), and the last line it takes. A binary search over the bytes
    /// of the head: a probe reads the line after it.
    fn head_partition(&self, text: &[u8], below: impl Fn(u64) -> bool) -> (usize, Option<HeadLine>) {
        if !cfg!(feature = "fast-print") {
            return (0, None);
        }
        let (mut lo, mut hi, mut last) = (self.head.start, self.head.end, None);
        // lo is always a line start; every line from hi on is refused.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let from = if mid == lo { lo } else { newline(text, mid - 1) + 1 };
            match self.head_at(text, from) {
                Some(l) if below(l.addr) => {
                    lo = l.end + 1;
                    last = Some(l);
                }
                _ => hi = mid,
            }
        }
        (lo.min(self.head.end), last)
    }

    /// One symbol whose line starts at `line`.
    fn add(&mut self, addr: u64, line: u32, module: Option<&str>, kind: u8) {
        if module.is_none() {
            self.tail_core = true;
            self.all |= matches!(kind, b'd' | b'b' | b'r');
        }
        let m = match module {
            None => 0,
            // kallsyms lists a module's symbols together: the search from
            // the last finds it at once.
            Some(m) => match self.mods.iter().rposition(|x| x == m) {
                Some(i) => i + 1,
                None => {
                    self.mods.push(m.into());
                    self.mods.len()
                }
            },
        };
        self.syms.push(Sym { addr, line, module: m.min(u16::MAX as usize) as u16 });
    }
}

/// `printk_formats`: the format strings `trace_printk()` callers registered,
/// by address. `bprint` records carry only the address.
#[derive(Clone, Debug, Default)]
pub struct Printk {
    list: Vec<(u64, String)>,
}

impl Printk {
    /// Parse `0xADDR : "text"` lines. The kernel escapes `\n`, `\t` and `"`
    /// (t_show() in trace_printk.c) but writes a backslash as itself, so a
    /// backslash not starting one of those escapes stays.
    pub fn parse(text: &[u8]) -> Printk {
        let mut list = Vec::new();
        for line in text.split(|&b| b == b'\n') {
            let Some(colon) = find(line, b" : ") else { continue };
            let a = trim(&line[..colon]);
            let a = a.strip_prefix(b"0x").unwrap_or(a);
            let Some(addr) = hex(a) else {
                continue;
            };
            let mut s = trim(&line[colon + 3..]);
            if s.len() >= 2 && s[0] == b'"' && s[s.len() - 1] == b'"' {
                s = &s[1..s.len() - 1];
            }
            let mut out = Vec::with_capacity(s.len());
            let mut i = 0;
            while i < s.len() {
                if s[i] == b'\\' && i + 1 < s.len() {
                    let r = match s[i + 1] {
                        b'n' => Some(b'\n'),
                        b't' => Some(b'\t'),
                        b'"' => Some(b'"'),
                        _ => None,
                    };
                    if let Some(c) = r {
                        out.push(c);
                        i += 2;
                        continue;
                    }
                }
                out.push(s[i]);
                i += 1;
            }
            list.push((addr, String::from_utf8_lossy(&out).into_owned()));
        }
        crate::sort::sort_by_key(&mut list, |e| e.0);
        Printk { list }
    }

    pub fn lookup(&self, addr: u64) -> Option<&str> {
        let i = self.list.binary_search_by_key(&addr, |e| e.0).ok()?;
        Some(self.list[i].1.as_str())
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// Enumerator values by name: what the kernel knows about identifiers such as
/// `HRTIMER_MODE_ABS` that a format prints unresolved (no TRACE_DEFINE_ENUM).
/// Filled from the kernel's BTF (`/sys/kernel/btf/vmlinux`) when the caller
/// has it, or by hand with `push`.
#[derive(Clone, Debug, Default)]
pub struct Enums {
    names: String,
    /// (name start, name len, value), sorted by name after `finish`.
    list: Vec<(u32, u16, u64)>,
}

impl Enums {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, name: &str, value: u64) {
        // At most u16::MAX bytes, cut on a character boundary.
        let mut len = name.len().min(u16::MAX as usize);
        while !name.is_char_boundary(len) {
            len -= 1;
        }
        let name = name.get(..len).unwrap_or("");
        self.list.push((self.names.len() as u32, name.len() as u16, value));
        self.names.push_str(name);
    }

    fn name(&self, e: &(u32, u16, u64)) -> &str {
        self.names.get(e.0 as usize..e.0 as usize + e.1 as usize).unwrap_or("")
    }

    /// Sort by name; of duplicate names the first pushed wins.
    pub fn finish(&mut self) {
        let mut l = core::mem::take(&mut self.list);
        crate::sort::sort_by(&mut l, |a, b| self.name(a).cmp(self.name(b)));
        l.dedup_by(|b, a| self.name(a) == self.name(b));
        self.list = l;
    }

    /// The value of enumerator `name`, sign-extended to 64 bits when the
    /// enum is signed.
    pub fn get(&self, name: &str) -> Option<u64> {
        let i = self.list.binary_search_by(|e| self.name(e).cmp(name)).ok()?;
        Some(self.list[i].2)
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Every enumerator of a BTF blob (the kernel's `/sys/kernel/btf/vmlinux`,
    /// either byte order). Other kinds are skipped by their encoded sizes; a
    /// blob that does not parse gives what was read before the damage.
    pub fn parse_btf(b: &[u8]) -> Enums {
        let mut out = Enums::new();
        btf_enumerators(b, &mut |n, v| out.push(n, v));
        out.finish();
        out
    }
}

/// Call `found(name, value)` for every enumerator of a BTF blob, in file
/// order (values sign-extended when the enum is signed).
pub fn btf_enumerators(b: &[u8], found: &mut dyn FnMut(&str, u64)) {
    btf_walk(b, &mut |kind, n, v| {
        if kind != BTF_KIND_STRUCT {
            found(n, v)
        }
    });
}

/// `sizeof(struct name)` as the kernel's BTF records it.
pub fn btf_struct_size(b: &[u8], name: &str) -> Option<u64> {
    let mut size = None;
    btf_walk(b, &mut |kind, n, v| {
        if kind == BTF_KIND_STRUCT && n == name {
            size.get_or_insert(v);
        }
    });
    size
}

const BTF_KIND_STRUCT: u32 = 4;

/// `found(kind, name, value)` for every enumerator (kind 6 or 19, its
/// value) and named struct (kind 4, its size) of a BTF blob, in file order.
/// Other kinds are skipped by their encoded sizes; at damage, or a kind of
/// unknown size, it stops.
fn btf_walk(b: &[u8], found: &mut dyn FnMut(u32, &str, u64)) {
    let endian = match b.get(..2) {
        Some([0x9f, 0xeb]) => crate::cursor::Endian::Little,
        Some([0xeb, 0x9f]) => crate::cursor::Endian::Big,
        _ => return,
    };
    let u32at = |o: usize| crate::cursor::read_uint(b, o, 4, endian).ok().map(|v| v as usize);
    let (Some(hdr_len), Some(type_off), Some(type_len), Some(str_off), Some(str_len)) =
        (u32at(4), u32at(8), u32at(12), u32at(16), u32at(20))
    else {
        return;
    };
    let s0 = hdr_len.saturating_add(str_off);
    let strs = match b.get(s0..s0.saturating_add(str_len)) {
        Some(s) => s,
        None => return,
    };
    let name = |off: usize| -> Option<&str> {
        let s = strs.get(off..)?;
        let n = s.iter().position(|&c| c == 0)?;
        core::str::from_utf8(&s[..n]).ok()
    };
    let mut p = hdr_len.saturating_add(type_off);
    let end = p.saturating_add(type_len).min(b.len());
    while p + 12 <= end {
        let (Some(name_off), Some(info), Some(size)) = (u32at(p), u32at(p + 4), u32at(p + 8)) else { break };
        let vlen = info & 0xffff;
        let kind = (info >> 24) & 0x1f;
        let signed = info >> 31 != 0;
        if kind as u32 == BTF_KIND_STRUCT {
            if let Some(n) = name(name_off).filter(|n| !n.is_empty()) {
                found(BTF_KIND_STRUCT, n, size as u64);
            }
        }
        p += 12;
        let extra = match kind {
            1 | 14 | 17 => 4,
            3 => 12,
            4 | 5 | 15 => 12 * vlen,
            // enum: (name, value) pairs; enum64: (name, lo, hi).
            6 | 19 => {
                let esz = if kind == 6 { 8 } else { 12 };
                for i in 0..vlen {
                    let q = p + esz * i;
                    let (Some(n), Some(lo)) = (u32at(q), u32at(q + 4)) else { break };
                    let v = if kind == 19 {
                        let Some(hi) = u32at(q + 8) else { break };
                        ((hi as u64) << 32) | lo as u64
                    } else if signed {
                        lo as u32 as i32 as i64 as u64
                    } else {
                        lo as u64
                    };
                    if let Some(n) = name(n) {
                        found(kind as u32, n, v);
                    }
                }
                esz * vlen
            }
            13 => 8 * vlen,
            2 | 7 | 8 | 9 | 10 | 11 | 12 | 16 | 18 => 0,
            _ => break, // unknown kind: its size is unknown, stop here
        };
        p += extra;
    }
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t' | b'\r', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = s {
        s = rest;
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const KALLSYMS: &[u8] = b"ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000100 T foo
ffffffff81000180 t bar
ffffffff81000200 T _etext
0000000000000000 A fixed_percpu_data
ffffffffc0001000 t modfn\t[mymod]
ffffffffc0001040 t modfn2\t[mymod]
ffffffffc0002000 t other\t[om]
";

    #[test]
    fn lookup_sizes_and_modules() {
        let k = Ksyms::parse(KALLSYMS);
        assert_eq!(k.len(), 8);
        let s = k.lookup(0xffffffff81000110).unwrap();
        assert_eq!((s.name, s.offset, s.size, s.module), ("foo", 0x10, Some(0x80), None));
        let s = k.lookup(0xffffffff81000000).unwrap();
        assert_eq!((s.name, s.size), ("_stext", Some(0x100)));
        assert!(k.lookup(0xffffffff80000000).is_none());
        assert!(k.lookup(0xffffffff81000300).is_none(), "past _etext");
        let s = k.lookup(0xffffffffc0001004).unwrap();
        assert_eq!((s.name, s.offset, s.size, s.module), ("modfn", 4, Some(0x40), Some("mymod")));
        assert!(k.lookup(0xffffffffc0001044).is_none(), "last symbol of its module");
        assert_eq!(k.lookup(0xffffffffc0002000).unwrap().module, Some("om"));
        assert!(Ksyms::parse(b"0000000000000000 T x\n").is_empty());
        // Without static data symbols (no CONFIG_KALLSYMS_ALL) a data address
        // has no symbol; with them it does.
        let k = Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff82000000 D __start_init_stack\nffffffff83000000 T _sinittext\n");
        assert!(k.lookup(0xffffffff82000010).is_none());
        let k = Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff82000000 D __start_init_stack\nffffffff82000008 d x\nffffffff83000000 T _sinittext\n");
        assert_eq!(k.lookup(0xffffffff82000004).unwrap().name, "__start_init_stack");
    }

    /// A line that is not UTF-8 holds no symbol, and the others keep
    /// theirs.
    #[test]
    fn parse_skips_lines_that_are_not_utf8() {
        let k = Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff81000100 T b\xffad\nffffffff81000200 T good\nffffffff81000300 T _etext\n");
        assert_eq!(k.len(), 3);
        assert_eq!(k.lookup(0xffffffff81000204).map(|s| (s.name, s.size)), Some(("good", Some(0x100))));
    }

    /// A NUL byte in a name or a module (a hostile text) is flagged, and
    /// only there.
    #[test]
    fn nul_in_names_and_modules() {
        let k = Ksyms::parse(b"ffffffff81000000 T _stext\nffffffff81000100 T plain\nffffffff81000300 T _etext\nffffffffc0000000 t a\0b\t[m]\nffffffffc0000100 t c\t[m\0n]\nffffffffc0000200 t d\t[m]\nffffffffc0000300 t e\t[m]\n");
        for (a, nul) in [(0xffffffff81000104, false), (0xffffffffc0000004, true), (0xffffffffc0000100, true), (0xffffffffc0000204, false)] {
            for _ in 0..2 {
                assert_eq!(k.lookup(a).map(|s| s.nul), Some(nul), "{a:x}");
            }
        }
    }

    /// Out of order text is sorted by address, and of several names at
    /// one address the first listed wins, wherever the others are.
    #[test]
    fn unsorted_and_aliases() {
        let k = Ksyms::parse(b"ffffffff81000300 T _etext\nffffffff81000100 T first\nffffffff81000000 T _stext\nffffffff81000100 t second\nffffffffc0000000 t m\t[mod]\nffffffff81000100 T third\nffffffff81000200 T next\n");
        assert_eq!(k.len(), 7);
        assert_eq!(k.lookup(0xffffffff81000104).map(|s| (s.name, s.offset, s.size)), Some(("first", 4, Some(0x100))));
        assert_eq!(k.lookup(0xffffffffc0000000).map(|s| (s.name, s.module)), Some(("m", Some("mod"))));
    }

    /// The merge of the sorted head and the sorted tail is the order of a
    /// stable sort by address, whatever the shape of the disorder.
    #[test]
    fn sort_merges_head_and_tail() {
        let mut x = 12345u64;
        for n in [0usize, 1, 2, 7, 50, 300] {
            for head in [0, n / 3, n] {
                let mut t = Table::default();
                for i in 0..n {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let addr = if i < head { i as u64 * 4 } else { (x >> 33) % (n as u64 * 4 + 1) };
                    t.syms.push(Sym { addr, line: i as u32, module: 0 });
                }
                let mut want: Vec<(u64, u32)> = t.syms.iter().map(|s| (s.addr(), s.line())).collect();
                want.sort();
                t.sort();
                assert_eq!(t.syms.iter().map(|s| (s.addr(), s.line())).collect::<Vec<_>>(), want, "{n} {head}");
            }
        }
    }

    /// The lookup over the head searched in place and the table after it
    /// answers what a table of every line, stably sorted, answers: texts
    /// of a kallsyms' shape (per-cpu lines, a sorted head, modules) with
    /// lines that break the head anywhere.
    #[test]
    fn head_in_place_as_a_full_table() {
        let mut x = 99u64;
        let mut rnd = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        let names = ["f", "_etext", "g", "d1", "h"];
        let mut both = 0;
        for round in 0..300 {
            let mut text = String::new();
            for i in 0..rnd(3) {
                text += &alloc::format!("{:016x} A pcpu{i}\n", i * 64);
            }
            let mut a = 0xffffffff81000000u64;
            for i in 0..rnd(40) {
                a += rnd(3) * 16;
                let kind = [b'T', b't', b'D', b'd', b'r', b'b', b'W'][rnd(7) as usize] as char;
                let name = names[rnd(5) as usize];
                let line = match rnd(if round % 3 == 0 { 12 } else { 40 }) {
                    0 => alloc::format!("{:016x} {kind} {name}{i}\tjunk\n", a),
                    1 => alloc::format!("{:016X} {kind} {name}{i}\n", a),
                    2 => alloc::format!("{:016x} {kind} {name}{i}\n", a - 0x100),
                    3 => alloc::format!("{:016x} {kind} {name}{i}\t[m{}]\n", 0xffffffffc0000000u64 + rnd(9) * 16, rnd(2)),
                    4 => alloc::format!("{:016x} U {name}{i}\n", a),
                    5 => "\n".into(),
                    _ => alloc::format!("{:016x} {kind} {name}{i}\n", a),
                };
                text += &line;
            }
            if rnd(2) == 0 {
                text.pop();
            }
            let k = Ksyms::parse(text.as_bytes());
            // Every line with a symbol, stably sorted; the lookup as the
            // table of them all answered it.
            let mut all: Vec<(u64, u8, &str, Option<&str>)> = text.lines().filter_map(sym_line).map(|(a, t, n, m, _)| (a, t, n, m)).collect();
            crate::sort::sort_by_key(&mut all, |s| s.0);
            let data = all.iter().any(|s| s.3.is_none() && matches!(s.1, b'd' | b'b' | b'r'));
            assert_eq!(k.len(), all.len(), "{text}");
            let want = |q: u64| -> Option<(&str, u64, Option<u64>, Option<&str>)> {
                let n = all.partition_point(|s| s.0 <= q);
                let start = all.get(n.checked_sub(1)?)?.0;
                let s = all[all.partition_point(|s| s.0 < start)];
                let size = all[n..].iter().find(|x| x.3 == s.3).map(|x| x.0 - start);
                if q > start && (is_end_marker(s.2) || size.is_none()) || !data && s.3.is_none() && matches!(s.1, b'D' | b'B' | b'R' | b'd' | b'b' | b'r') {
                    return None;
                }
                Some((s.2, q - start, size, s.3))
            };
            for q in all.iter().flat_map(|s| [s.0 - 1, s.0, s.0 + 8]).chain([0, u64::MAX]) {
                assert_eq!(k.lookup(q).map(|s| (s.name, s.offset, s.size, s.module)), want(q), "{q:x} in\n{text}");
            }
            both += (k.tab().head_len > 1 && k.tab().syms.len() > 1) as usize;
        }
        assert!(both > 100 || !cfg!(feature = "fast-print"), "{both} texts with a head and a table");
    }

    /// ascii_name is lookup's name when that is all ASCII, from the cache
    /// or not.
    #[cfg(feature = "fast-print")]
    #[test]
    fn ascii_names() {
        let k = Ksyms::parse("ffffffff81000000 T _stext\nffffffff81000100 T f\u{fc}r\nffffffff81000200 T plain\nffffffff81000300 T _etext\n".as_bytes());
        for _ in 0..2 {
            for a in [0xffffffff81000104, 0xffffffff81000204, 0xffffffff81000400, 0] {
                assert_eq!(k.ascii_name(a), k.lookup(a).map(|s| s.name).filter(|n| n.is_ascii()), "{a:x}");
            }
        }
        assert_eq!(k.ascii_name(0xffffffff81000204), Some("plain"));
        // core_ascii_name: a module's symbol has none.
        let k = Ksyms::parse(KALLSYMS);
        for a in [0xffffffff81000110, 0xffffffffc0001004, 0xffffffff81000110] {
            assert_eq!(k.core_ascii_name(a), k.lookup(a).filter(|s| s.module.is_none()).map(|s| s.name), "{a:x}");
        }
        assert!(k.ascii_name(0xffffffffc0001004).is_some());
    }

    /// Cached answers are the answers: addresses that share a cache slot
    /// or repeat come back the same, symbol or none.
    #[test]
    fn lookup_cache_keeps_answers() {
        let k = Ksyms::parse(KALLSYMS);
        let addrs = [0xffffffff81000110, 0xffffffff80000000, 0xffffffffc0001004, 0, 0xffffffff81000000];
        let first: Vec<_> = addrs.iter().map(|&a| k.lookup(a)).collect();
        for _ in 0..2 {
            for a in 0..4 * CACHE_SETS as u64 {
                k.lookup(0xffffffff81000000 + a * 8);
            }
            assert_eq!(addrs.iter().map(|&a| k.lookup(a)).collect::<Vec<_>>(), first);
        }
        // Two addresses of one set take turns without evicting each other
        // (the second way), and both keep their answers.
        let a = 0xffffffff81000110;
        let b = (1..).map(|i| a + i * 8).find(|&b| set_of(b) == set_of(a)).unwrap();
        let want = (k.lookup(a), k.lookup(b));
        for _ in 0..3 {
            assert_eq!((k.lookup(a), k.lookup(b)), want);
        }
    }

    /// The usual lines read as `sym_line` reads them, and other shapes
    /// are left to it.
    #[test]
    fn quick_lines_as_sym_line() {
        for l in ["ffffffff81000100 T foo", "ffffffffc0001000 t modfn\t[mymod]", "c1000000 T x", "+fffffff81000100 T foo", "0000000000000000 A z", "ffffffff81000100 U u"] {
            let slow = sym_line(l).map(|(a, t, _, m, _)| (a, t, m));
            assert_eq!(quick_line(l).filter(|&(a, t, _)| a != 0 && !matches!(t | 0x20, b'a' | b'u')), slow, "{l}");
        }
        for l in ["ffffffff81000100 T foo junk", "ffffffff81000100 T foo\t[m] x", "ffffffff81000100 T foo\r", "ffffffff81000100 T foo bar\t[m]", "ffffffff81000100 T foo\t[]", "ffffffff81000100 T foo [m]", " ffffffff81000100 T foo", "ffffffff81000100 TT foo", "ffffffff81000100 T"] {
            assert_eq!(quick_line(l), None, "{l}");
        }
    }

    /// hex8 reads lowercase hex digits as a loop over them would, and
    /// refuses any other byte in any place (uppercase too).
    #[test]
    fn hex8_as_a_loop() {
        let base = *b"ffffffff81000000";
        for at in 0..16 {
            for c in 0..=255u8 {
                let mut d = base;
                d[at] = c;
                let want = d.iter().try_fold(0u64, |v, &c| matches!(c, b'0'..=b'9' | b'a'..=b'f').then(|| v << 4 | hex_digit(c).unwrap() as u64));
                let (hi, lo) = d.split_at(8);
                assert_eq!(hex8(hi).zip(hex8(lo)).map(|(h, l)| h << 32 | l), want, "{at} {c}");
            }
        }
        assert_eq!(hex8(b"0123456789abcdef"), Some(0x01234567));
        assert_eq!(hex8(b"89abcdef"), Some(0x89abcdef));
    }

    #[test]
    fn hex_digits() {
        assert_eq!(hex(b"ffffffff81000000"), Some(0xffffffff81000000));
        assert_eq!(hex(b"+0000000000000000001F"), Some(0x1f));
        assert_eq!(hex(b"10000000000000000"), None);
        assert_eq!(hex(b""), None);
        assert_eq!(hex(b"12g"), None);
    }

    /// addr_of answers the same before the table is parsed (a text scan)
    /// and after.
    #[test]
    fn addr_of_parsed_or_not() {
        let text: &[u8] = b"ffffffff81000300 T dup\nffffffff81000000 T _stext\nffffffff81000100 T foo\n0000000000000000 A zero\nffffffff81000200 A abs\nffffffff81000280 T dup\nffffffffc0001000 t modfn\t[foo_mod]\nffffffffc0001040 t x\t[modfn2]\n";
        for parsed in [false, true] {
            let k = Ksyms::parse(text);
            if parsed {
                assert_eq!(k.len(), 6);
            }
            assert_eq!(k.addr_of("foo"), Some(0xffffffff81000100));
            assert_eq!(k.addr_of("fo"), None);
            assert_eq!(k.addr_of("dup"), Some(0xffffffff81000280));
            assert_eq!(k.addr_of("modfn"), Some(0xffffffffc0001000));
            assert_eq!(k.addr_of("modfn2"), None);
            assert_eq!(k.addr_of("zero"), None);
            assert_eq!(k.addr_of("abs"), None);
            assert_eq!(k.addr_of("T"), None);
            assert_eq!(k.addr_of(""), None);
            assert_eq!(k.lookup(0xffffffff81000104).map(|s| s.name), Some("foo"));
        }
        for i in 0..=text.len() {
            let naive = text[i..].iter().position(|&b| b == b'\n').map_or(text.len(), |k| i + k);
            assert_eq!(newline(text, i), naive);
        }
    }

    #[test]
    fn btf_enums() {
        // header (24) | types | strings "\0A\0B\0BIG\0"
        let mut t = Vec::new();
        let w = |t: &mut Vec<u8>, v: u32| t.extend_from_slice(&v.to_le_bytes());
        // INT (kind 1) + its u32
        w(&mut t, 0);
        w(&mut t, 1 << 24);
        w(&mut t, 4);
        w(&mut t, 32);
        // STRUCT (kind 4) page, size 64, one member
        w(&mut t, 9);
        w(&mut t, (4 << 24) | 1);
        w(&mut t, 64);
        t.extend_from_slice(&[0; 12]);
        // signed ENUM (kind 6, kind_flag) with A=-1, B=4
        w(&mut t, 0);
        w(&mut t, (1 << 31) | (6 << 24) | 2);
        w(&mut t, 4);
        w(&mut t, 1);
        w(&mut t, u32::MAX);
        w(&mut t, 3);
        w(&mut t, 4);
        // ENUM64 (kind 19) BIG = 1 << 40
        w(&mut t, 0);
        w(&mut t, (19 << 24) | 1);
        w(&mut t, 8);
        w(&mut t, 5);
        w(&mut t, 0);
        w(&mut t, 1 << 8);
        let strs = b"\0A\0B\0BIG\0page\0";
        let mut b = Vec::new();
        b.extend_from_slice(&[0x9f, 0xeb, 1, 0]);
        for v in [24u32, 0, t.len() as u32, t.len() as u32, strs.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&t);
        b.extend_from_slice(strs);
        let e = Enums::parse_btf(&b);
        assert_eq!(e.len(), 3);
        assert_eq!(e.get("A"), Some(u64::MAX));
        assert_eq!(e.get("B"), Some(4));
        assert_eq!(e.get("BIG"), Some(1 << 40));
        assert_eq!(e.get("C"), None);
        assert!(Enums::parse_btf(&b[..30]).is_empty());
        assert_eq!(btf_struct_size(&b, "page"), Some(64));
        assert_eq!(btf_struct_size(&b, "A"), None);
    }

    #[test]
    fn printk_unescapes() {
        let p = Printk::parse(b"0xffffffff8281972f : \"thaw\\tprocesses\\n\"\n0x10 : \"a \\\"q\\\" \\x\"\nbad line\n");
        assert_eq!(p.len(), 2);
        assert_eq!(p.lookup(0xffffffff8281972f), Some("thaw\tprocesses\n"));
        assert_eq!(p.lookup(0x10), Some("a \"q\" \\x"));
        assert_eq!(p.lookup(0x11), None);
    }
}
