//! The values of `KNOWN` as the running kernel has them: where each one
//! lives, the typed ELF view of /proc/kcore, the kallsyms lookup, and the
//! kernel's own text as a last resort (the I/O is in `tracefs::kvars`).

use alloc::string::String;
use core::fmt::Write;

use crate::cursor::{read_uint, Endian};

/// One value a format may need and where the running kernel keeps it.
pub struct Known {
    /// The name as the format (or `printfmt`'s pointer arithmetic) asks for it.
    pub name: &'static str,
    /// Needed when a format's text contains this.
    pub used_by: &'static str,
    pub source: Source,
}

pub enum Source {
    /// A `long` kernel variable: its kallsyms address, read in /proc/kcore.
    Variable,
    /// `sizeof(struct NAME)` from the kernel's BTF.
    StructSize(&'static str),
}

/// Every value a recorder looks for.
pub const KNOWN: &[Known] = &[
    Known { name: "vmemmap_base", used_by: "vmemmap_base", source: Source::Variable },
    Known { name: "sizeof(struct page)", used_by: "struct page *", source: Source::StructSize("page") },
];

/// The `name=value` text of the private trace.dat option (values in hex).
pub fn to_text(values: &[(&str, u64)]) -> String {
    let mut s = String::new();
    for (n, v) in values {
        let _ = write!(s, "{}=0x{:x}\n", n, v);
    }
    s
}

/// The address of data symbol `name` in /proc/kallsyms text (`ADDR TYPE
/// NAME`); None when absent or hidden (kptr_restrict prints zeros).
pub fn kallsyms_addr(kallsyms: &[u8], name: &str) -> Option<u64> {
    for l in kallsyms.split(|&b| b == b'\n') {
        let mut w = l.split(|&b| b == b' ');
        let (Some(a), Some(_ty), Some(n)) = (w.next(), w.next(), w.next()) else { continue };
        if n == name.as_bytes() {
            let a = u64::from_str_radix(core::str::from_utf8(a).ok()?, 16).ok()?;
            return (a != 0).then_some(a);
        }
    }
    None
}

/// `(vmemmap_base, sizeof(struct page))` from the kernel's own `trace` text
/// of mm_page_alloc records printed with hash-ptr off: each line's
/// `page=%p` is vmemmap_base + pfn * size beside its `pfn=0x...`. Two
/// lines with different pfns give the size; `size` (from BTF) is checked
/// against it, or used when there is one line.
pub fn vmemmap_from_trace(text: &[u8], size: Option<u64>) -> Option<(u64, u64)> {
    let mut seen: Option<(u64, u64)> = None;
    let mut size = size;
    for l in text.split(|&b| b == b'\n') {
        let (Some(page), Some(pfn)) = (hex_after(l, b" page="), hex_after(l, b" pfn=0x")) else { continue };
        if page == 0 {
            continue;
        }
        match seen {
            Some((p0, f0)) if f0 != pfn => {
                let (dp, df) = (page.wrapping_sub(p0) as i64, pfn.wrapping_sub(f0) as i64);
                if df == 0 || dp % df != 0 || size.is_some_and(|s| s as i64 != dp / df) {
                    return None;
                }
                size = Some((dp / df) as u64);
                break;
            }
            Some(_) => {}
            None => seen = Some((page, pfn)),
        }
    }
    let ((page, pfn), size) = (seen?, size?);
    Some((page.wrapping_sub(pfn.wrapping_mul(size)), size))
}

/// The hex number right after `key` in `line`.
fn hex_after(line: &[u8], key: &[u8]) -> Option<u64> {
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_hexdigit()).count();
    u64::from_str_radix(core::str::from_utf8(&line[at..at + digits]).ok()?, 16).ok()
}

/// Why an ELF image (/proc/kcore) does not map an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ElfError {
    /// No ELF magic, or a class or byte order that is neither 32 nor 64
    /// bits, little nor big endian.
    NotElf,
    /// The header or program header table ends early.
    Short,
    /// No PT_LOAD segment holds the whole range.
    NotMapped,
}

/// The header of an ELF file: where its program headers are and how to read
/// them.
#[derive(Clone, Copy, Debug)]
pub struct Elf {
    pub endian: Endian,
    /// ELFCLASS64.
    pub wide: bool,
    /// File offset and byte length of the program header table.
    pub phoff: u64,
    pub phlen: usize,
    phentsize: usize,
}

const PT_LOAD: u64 = 1;

impl Elf {
    /// The ELF header at the start of `head` (64 bytes are enough).
    pub fn parse(head: &[u8]) -> Result<Elf, ElfError> {
        if head.get(..4) != Some(b"\x7fELF") {
            return Err(ElfError::NotElf);
        }
        let wide = match head.get(4) {
            Some(1) => false,
            Some(2) => true,
            _ => return Err(ElfError::NotElf),
        };
        let endian = match head.get(5) {
            Some(1) => Endian::Little,
            Some(2) => Endian::Big,
            _ => return Err(ElfError::NotElf),
        };
        let r = |off, size| read_uint(head, off, size, endian).map_err(|_| ElfError::Short);
        // e_phoff, e_phentsize, e_phnum
        let (phoff, phentsize, phnum) = if wide { (r(0x20, 8)?, r(0x36, 2)?, r(0x38, 2)?) } else { (r(0x1c, 4)?, r(0x2a, 2)?, r(0x2c, 2)?) };
        if phentsize < if wide { 56 } else { 32 } {
            return Err(ElfError::NotElf);
        }
        Ok(Elf { endian, wide, phoff, phlen: (phentsize * phnum) as usize, phentsize: phentsize as usize })
    }

    /// The file offset of `len` bytes at virtual address `vaddr`, from the
    /// program header table `phdrs` (the `phlen` bytes at `phoff`).
    pub fn file_offset(&self, phdrs: &[u8], vaddr: u64, len: u64) -> Result<u64, ElfError> {
        if phdrs.len() < self.phlen {
            return Err(ElfError::Short);
        }
        for ph in phdrs[..self.phlen].chunks_exact(self.phentsize) {
            let r = |off, size| read_uint(ph, off, size, self.endian).unwrap_or(0);
            // p_type, p_offset, p_vaddr, p_filesz
            let (ty, off, va, size) = if self.wide { (r(0, 4), r(8, 8), r(16, 8), r(32, 8)) } else { (r(0, 4), r(4, 4), r(8, 4), r(16, 4)) };
            if ty == PT_LOAD && vaddr >= va && vaddr.wrapping_sub(va).checked_add(len).is_some_and(|end| end <= size) {
                return Ok(off + (vaddr - va));
            }
        }
        Err(ElfError::NotMapped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// An ELF64 little-endian header with two PT_LOAD segments, as
    /// /proc/kcore lays them out.
    fn kcore() -> (Vec<u8>, Vec<u8>) {
        let mut h = alloc::vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2;
        h[5] = 1;
        h[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        h[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        h[0x38..0x3a].copy_from_slice(&3u16.to_le_bytes());
        let mut ph = Vec::new();
        for (ty, off, va, size) in [(4u32, 0x100u64, 0u64, 0x10u64), (1, 0x1000, 0xffff_ffff_8000_0000, 0x2000), (1, 0x9000, 0xffff_8880_0000_0000, 0x1000)] {
            let mut p = [0u8; 56];
            p[..4].copy_from_slice(&ty.to_le_bytes());
            p[8..16].copy_from_slice(&off.to_le_bytes());
            p[16..24].copy_from_slice(&va.to_le_bytes());
            p[32..40].copy_from_slice(&size.to_le_bytes());
            ph.extend_from_slice(&p);
        }
        (h, ph)
    }

    #[test]
    fn kcore_segments_map_addresses() {
        let (h, ph) = kcore();
        let e = Elf::parse(&h).unwrap();
        assert_eq!((e.phoff, e.phlen), (64, 168));
        assert_eq!(e.file_offset(&ph, 0xffff_ffff_8000_0e68, 8), Ok(0x1e68));
        assert_eq!(e.file_offset(&ph, 0xffff_8880_0000_0ff8, 8), Ok(0x9ff8));
        // Across the end of a segment, in no segment, a note segment.
        assert_eq!(e.file_offset(&ph, 0xffff_8880_0000_0ffc, 8), Err(ElfError::NotMapped));
        assert_eq!(e.file_offset(&ph, 0x1234, 8), Err(ElfError::NotMapped));
        assert_eq!(e.file_offset(&ph, 0x8, 4), Err(ElfError::NotMapped));
        assert_eq!(e.file_offset(&ph[..100], 0x8, 4), Err(ElfError::Short));
        assert_eq!(Elf::parse(b"\x7fELF\x03\x01").unwrap_err(), ElfError::NotElf);
        assert_eq!(Elf::parse(&h[..0x30]).unwrap_err(), ElfError::Short);
    }

    #[test]
    fn vmemmap_from_the_kernels_text() {
        let t = b"  a-1 [000] ..... 1.0: mm_page_alloc: page=ffffea000ea0c9c0 pfn=0x3a8327 order=0\n\
                  a-1 [000] ..... 1.0: mm_page_alloc: page=0000000000000000 pfn=0x0 order=0\n\
                  a-1 [000] ..... 1.0: mm_page_alloc: page=ffffea00073b6840 pfn=0x1ceda1 order=0\n";
        assert_eq!(vmemmap_from_trace(t, None), Some((0xffff_ea00_0000_0000, 64)));
        assert_eq!(vmemmap_from_trace(t, Some(64)), Some((0xffff_ea00_0000_0000, 64)));
        assert_eq!(vmemmap_from_trace(t, Some(72)), None);
        assert_eq!(vmemmap_from_trace(&t[..100], Some(64)), Some((0xffff_ea00_0000_0000, 64)));
        assert_eq!(vmemmap_from_trace(&t[..100], None), None);
        assert_eq!(vmemmap_from_trace(b"", Some(64)), None);
    }

    #[test]
    fn kallsyms_and_option_text() {
        let k = b"ffffffff81000000 T _stext\nffffffff83a2e068 D vmemmap_base\nffffffffc0000000 t x\t[mod]\n";
        assert_eq!(kallsyms_addr(k, "vmemmap_base"), Some(0xffff_ffff_83a2_e068));
        assert_eq!(kallsyms_addr(k, "vmemmap"), None);
        assert_eq!(kallsyms_addr(b"0000000000000000 D vmemmap_base\n", "vmemmap_base"), None);
        let t = to_text(&[("vmemmap_base", 0xffd4_0000_0000_0000), ("sizeof(struct page)", 64)]);
        assert_eq!(t, "vmemmap_base=0xffd4000000000000\nsizeof(struct page)=0x40\n");
        assert_eq!(super::super::parse_text(&t).get("sizeof(struct page)"), Some(64));
    }
}
