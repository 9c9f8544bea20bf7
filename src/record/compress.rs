//! Compressing the recorded pages for a compressed trace.dat: each CPU's
//! pages become the chunk stream the file holds for it
//! (`tracedat::write::CpuCompressor`), written to the end of the CPU's own
//! temp file, so the assembly copies them into place like raw pages.
//!
//! The raw pages are punched out of the temp file as they are compressed:
//! the disk holds little more than the compressed copy at any time, which
//! matters on a board whose disk a recording nearly fills.

use super::assemble::CpuData;
use crate::tracedat::write::{Compression, CpuCompressor};
use alloc::vec;
use alloc::vec::Vec;
use rustix::fd::OwnedFd;
use rustix::fs::FallocateFlags;
use rustix::io::Errno;

/// Bytes of compressed output gathered before they are written.
const WRITE_AT_ONCE: usize = 1 << 20;

/// Replace each CPU's pages in `cpus` by their chunk stream.
#[inline(never)]
pub fn compress_cpus(cpus: &mut [CpuData], c: Compression, page_size: usize) -> Result<(), Errno> {
    let z = CpuCompressor::new(c, cfg!(target_endian = "big"), page_size as u32);
    let mut raw = vec![0u8; z.chunk_len()];
    let mut out = Vec::new();
    for d in cpus {
        let Some(f) = &d.file else { continue };
        if d.len() == 0 {
            continue;
        }
        out.extend_from_slice(&z.head(d.len()));
        let mut at = d.end;
        let (mut off, mut kept) = (d.start, d.start);
        while off < d.end {
            let n = ((d.end - off) as usize).min(raw.len());
            read_exact(f, &mut raw[..n], off)?;
            z.chunk(&raw[..n], &mut out);
            off += n as u64;
            if out.len() >= WRITE_AT_ONCE || off == d.end {
                write_at(f, &out, at)?;
                at += out.len() as u64;
                out.clear();
                // Only pages whose compressed copy is written go.
                let _ = rustix::fs::fallocate(f, FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE, kept, off - kept);
                kept = off;
            }
        }
        (d.start, d.end) = (d.end, at);
    }
    Ok(())
}

fn read_exact(f: &OwnedFd, mut buf: &mut [u8], mut off: u64) -> Result<(), Errno> {
    while !buf.is_empty() {
        match rustix::io::pread(f, &mut *buf, off) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => {
                buf = &mut buf[n..];
                off += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn write_at(f: &OwnedFd, mut buf: &[u8], mut off: u64) -> Result<(), Errno> {
    while !buf.is_empty() {
        match rustix::io::pwrite(f, buf, off) {
            Ok(0) => return Err(Errno::IO),
            Ok(n) => {
                buf = &buf[n..];
                off += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
