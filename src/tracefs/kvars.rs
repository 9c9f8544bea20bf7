//! The running kernel's values that some formats read (`kvars::KNOWN`),
//! read as root: a variable's address from /proc/kallsyms, its value from
//! /proc/kcore (an ELF image of kernel memory), a struct's size from BTF.

use alloc::vec::Vec;

use crate::kvars::{self, Elf, Source};
use crate::sys;

/// The `name=value` text of the values that `formats` (event format files)
/// need, for `printfmt::Env::enums` and ftrec's private option; what cannot
/// be read (not root, no BTF, a kernel without the variable) is left out,
/// and its lines print partially.
pub fn read_known(formats: &[&[u8]], kallsyms: &[u8], long: usize) -> alloc::string::String {
    let mut found = Vec::new();
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
    kvars::to_text(&found)
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
