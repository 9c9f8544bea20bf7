//! Kernel symbols from `/proc/kallsyms` text (or the trace.dat kallsyms
//! section): a sorted table with binary search for `%pS`-style lookups, and
//! the `printk_formats` table that `bprint` records point into.
//!
//! OWNER: the `fmt` work.
//!
//! Names live in one shared `String` and each symbol is 16 bytes, so the
//! ~120k symbols of a distribution kernel cost ~3 MB, not 120k allocations.

use alloc::string::String;
use alloc::vec::Vec;

#[derive(Clone, Copy, Debug)]
struct Sym {
    addr: u64,
    name: u32,
    len: u16,
    /// 0 = core kernel, else 1 + index into `mods`.
    module: u16,
}

/// A symbol table sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Ksyms {
    names: String,
    syms: Vec<Sym>,
    mods: Vec<String>,
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
}

/// Symbols that mark the end of a kernel region: an address past them is not
/// inside any symbol (the kernel's is_ksym_addr() refuses it).
fn is_end_marker(name: &str) -> bool {
    matches!(name, "_etext" | "_einittext" | "_end" | "__init_end" | "_edata" | "__bss_stop")
}

impl Ksyms {
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse `/proc/kallsyms` lines: `ADDR TYPE NAME [MODULE]`. Absolute (`A`)
    /// and undefined (`U`) symbols are skipped, as are all-zero addresses (what
    /// an unprivileged reader sees). Malformed lines are skipped: the table is
    /// a best-effort aid for printing, not an input that can be wrong.
    pub fn parse(text: &[u8]) -> Ksyms {
        let mut k = Ksyms::new();
        for line in text.split(|&b| b == b'\n') {
            let line = match core::str::from_utf8(line) {
                Ok(l) => l,
                Err(_) => continue,
            };
            let mut it = line.split_ascii_whitespace();
            let (Some(a), Some(t), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            let Ok(addr) = u64::from_str_radix(a, 16) else { continue };
            if addr == 0 || matches!(t, "A" | "a" | "U" | "u") {
                continue;
            }
            let module = it.next().and_then(|m| m.strip_prefix('[')).and_then(|m| m.strip_suffix(']'));
            k.push(addr, name, module);
        }
        k.finish();
        k
    }

    /// Add one symbol; call `finish()` after the last.
    pub fn push(&mut self, addr: u64, name: &str, module: Option<&str>) {
        let len = name.len().min(u16::MAX as usize);
        let m = match module {
            None => 0,
            Some(m) => match self.mods.iter().position(|x| x == m) {
                Some(i) => i + 1,
                None => {
                    self.mods.push(m.into());
                    self.mods.len()
                }
            },
        };
        let off = self.names.len() as u32;
        self.names.push_str(&name[..len]);
        self.syms.push(Sym { addr, name: off, len: len as u16, module: m.min(u16::MAX as usize) as u16 });
    }

    /// Sort by address. Stable, so of several names at one address the first
    /// listed wins, as in the kernel's own lookup.
    pub fn finish(&mut self) {
        self.syms.sort_by_key(|s| s.addr);
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    fn name_of(&self, s: &Sym) -> &str {
        let a = s.name as usize;
        self.names.get(a..a + s.len as usize).unwrap_or("")
    }

    /// The symbol containing `addr`: the last one starting at or below it.
    /// Its size runs to the next symbol of the same module (or core kernel);
    /// an address past the last symbol of its group, or past an end marker
    /// like `_etext`, is not inside any symbol.
    pub fn lookup(&self, addr: u64) -> Option<Ksym<'_>> {
        let n = self.syms.partition_point(|s| s.addr <= addr);
        if n == 0 {
            return None;
        }
        // The first of the names sharing this address.
        let best_addr = self.syms[n - 1].addr;
        let first = self.syms[..n].partition_point(|s| s.addr < best_addr);
        let s = &self.syms[first];
        let name = self.name_of(s);
        let next = self.syms[n..].iter().find(|x| x.module == s.module).map(|x| x.addr);
        let size = next.map(|a| a - s.addr);
        let offset = addr - s.addr;
        if offset > 0 && (is_end_marker(name) || size.is_none()) {
            return None;
        }
        let module = if s.module == 0 { None } else { self.mods.get(s.module as usize - 1).map(|m| m.as_str()) };
        Some(Ksym { name, offset, size, module })
    }

    /// Address of a symbol by name (first match), for tests and tools.
    pub fn addr_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| self.name_of(s) == name).map(|s| s.addr)
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
            let Some(addr) = core::str::from_utf8(a).ok().and_then(|a| u64::from_str_radix(a, 16).ok()) else {
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
        list.sort_by_key(|e| e.0);
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
