//! The running kernel's values that some formats read (`kvars::KNOWN`),
//! read as root: a variable's address from /proc/kallsyms, its value from
//! /proc/kcore (an ELF image of kernel memory), a struct's size from BTF.
//! Kernels built without CONFIG_KALLSYMS_ALL list no data symbols, and
//! without CONFIG_PROC_KCORE there is no kcore: then the kernel tells
//! vmemmap_base itself, in its text of an mm_page_alloc record.

use alloc::format;
use alloc::vec::Vec;

use super::Tracefs;
use crate::kvars::{self, Elf, Source};
use crate::sys;

/// The `name=value` text of the values that `formats` (event format files)
/// need, for `printfmt::Env::enums` and ftrec's private option; what cannot
/// be read (not root, no BTF, a kernel without the variable) is left out,
/// and its lines print partially.
pub fn read_known(top: &Tracefs, formats: &[&[u8]], kallsyms: &[u8], long: usize) -> alloc::string::String {
    let mut found: Vec<(&str, u64)> = Vec::new();
    let mut btf = None;
    for k in kvars::KNOWN {
        let need = k.used_by.as_bytes();
        if !formats.iter().any(|f| f.windows(need.len()).any(|w| w == need)) {
            continue;
        }
        let v = match k.source {
            Source::Variable => kvars::kallsyms_addr(kallsyms, k.name).and_then(|a| read_kcore(a, long)),
            Source::StructSize(s) => crate::ksyms::btf_struct_size(btf.get_or_insert_with(|| sys::read(c"/sys/kernel/btf/vmlinux").unwrap_or_default()), s),
        };
        if let Some(v) = v {
            found.push((k.name, v));
        }
    }
    let has = |found: &[(&str, u64)], n| found.iter().any(|f| f.0 == n);
    if !has(&found, "vmemmap_base") && formats.iter().any(|f| f.windows(12).any(|w| w == b"vmemmap_base")) {
        let size = found.iter().find(|f| f.0 == "sizeof(struct page)").map(|f| f.1);
        if let Some((base, size)) = vmemmap_from_kernel_text(top, size) {
            found.push(("vmemmap_base", base));
            if !has(&found, "sizeof(struct page)") {
                found.push(("sizeof(struct page)", size));
            }
        }
    }
    kvars::to_text(&found)
}

/// [`read_known`] for the formats, among `formats` (system, format file),
/// of the events enabled in `rec` (its set_event): a value may take a
/// short-lived instance of our own to read, which only an event that is
/// recorded is worth. (`dyn`: ftrec's formats and live ftcat's share one
/// copy.)
pub fn read_enabled<'a>(top: &Tracefs, rec: &Tracefs, formats: &mut dyn Iterator<Item = (&'a str, &'a [u8])>, kallsyms: &[u8], long: usize) -> alloc::string::String {
    let on = rec.read_str("set_event").unwrap_or_default();
    let enabled = |sys: &str, f: &[u8]| {
        let name = core::str::from_utf8(f).ok().and_then(|t| t.lines().next()?.strip_prefix("name: "));
        name.is_some_and(|n| on.lines().any(|l| l.split_once(':') == Some((sys, n))))
    };
    let fs: Vec<&[u8]> = formats.filter(|f| enabled(f.0, f.1)).map(|f| f.1).collect();
    read_known(top, &fs, kallsyms, long)
}

/// `long` bytes of kernel memory at `addr`, in the machine's byte order.
fn read_kcore(addr: u64, long: usize) -> Option<u64> {
    let fd = sys::open(c"/proc/kcore").ok()?;
    let mut head = [0u8; 64];
    pread_exact(&fd, &mut head, 0)?;
    let elf = Elf::parse(&head).ok()?;
    let mut phdrs = alloc::vec![0u8; elf.phlen];
    pread_exact(&fd, &mut phdrs, elf.phoff)?;
    let off = elf.file_offset(&phdrs, addr, long as u64).ok()?;
    let mut v = [0u8; 8];
    pread_exact(&fd, &mut v[..long.min(8)], off)?;
    crate::cursor::read_uint(&v, 0, long.min(8), elf.endian).ok()
}

fn pread_exact(fd: &sys::OwnedFd, buf: &mut [u8], off: u64) -> Option<()> {
    let mut at = 0;
    while at < buf.len() {
        match rustix::io::pread(fd, &mut buf[at..], off + at as u64) {
            Ok(0) => return None,
            Ok(n) => at += n,
            Err(sys::Errno::INTR) => {}
            Err(_) => return None,
        }
    }
    Some(())
}

/// (vmemmap_base, sizeof(struct page)) from the kernel's own text of
/// mm_page_alloc: in an instance of our own (small, removed after) with
/// hash-ptr off, the pages this process touches are allocated and printed
/// as `page=ADDR pfn=0xPFN` (see `kvars::vmemmap_from_trace`).
fn vmemmap_from_kernel_text(top: &Tracefs, size: Option<u64>) -> Option<(u64, u64)> {
    let name = format!("ftbox-kvars-{}", sys::getpid());
    let rel = format!("instances/{name}");
    top.mkdir(&rel).ok()?;
    let r = top.instance(&name).ok().and_then(|inst| {
        let w = |f: &str, v: &[u8]| inst.write(f, v).ok();
        w("buffer_size_kb", b"64")?;
        w("options/hash-ptr", b"0")?;
        w("events/kmem/mm_page_alloc/enable", b"1")?;
        // Fresh anonymous memory, one write per page: each page faults in
        // through the page allocator while the event is on.
        let mut mem = alloc::vec![0u8; 64 * 4096];
        for i in (0..mem.len()).step_by(4096) {
            mem[i] = 1;
        }
        core::hint::black_box(&mem);
        w("tracing_on", b"0")?;
        kvars::vmemmap_from_trace(&inst.read("trace").ok()?, size)
    });
    let _ = top.rmdir(&rel);
    r
}
