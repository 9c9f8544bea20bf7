//! Compressing the recorded pages for a compressed trace.dat: each CPU's
//! pages, wherever the stream holds them, become the chunk stream the file
//! holds for that CPU (`tracedat::write::CpuCompressor`), written one after
//! the other to a scratch file that the trace.dat is then copied from.
//!
//! The stream itself stays as it is until the trace.dat replaces it (a
//! crash on the way still leaves a readable recording); the scratch file is
//! punched out as it is copied, so the disk holds the stream, the
//! compressed data and a chunk more.

use crate::tracedat::write::CpuCompressor;
use alloc::vec;
use alloc::vec::Vec;
use rustix::fd::OwnedFd;
use rustix::io::Errno;

/// Bytes of compressed output gathered before they are written.
const WRITE_AT_ONCE: usize = 1 << 20;

/// Each CPU's runs (offset, length) of raw pages in `src` compressed into
/// `scratch` from its start: the runs of the compressed data there, one per
/// CPU, in `cpus`' order.
#[inline(never)]
pub fn compress_cpus(src: &OwnedFd, cpus: &[(u32, Vec<(u64, u64)>)], z: &CpuCompressor, scratch: &OwnedFd) -> Result<Vec<(u32, Vec<(u64, u64)>)>, Errno> {
    // One chunk of raw pages at a time: a CPU's runs (frames) join up in it.
    let mut raw = vec![0u8; z.chunk_len()];
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut done = Vec::new();
    for (cpu, runs) in cpus {
        let total: u64 = runs.iter().map(|r| r.1).sum();
        if total == 0 {
            continue;
        }
        let start = at + out.len() as u64;
        out.extend_from_slice(&z.head(total));
        let mut used = 0;
        for &(mut off, len) in runs {
            let end = off + len;
            while off < end {
                let n = ((end - off) as usize).min(raw.len() - used);
                read_exact(src, &mut raw[used..used + n], off)?;
                (used, off) = (used + n, off + n as u64);
                if used == raw.len() {
                    z.chunk(&raw, &mut out);
                    used = 0;
                }
                if out.len() >= WRITE_AT_ONCE {
                    write_at(scratch, &out, at)?;
                    (at, out) = (at + out.len() as u64, Vec::new());
                }
            }
        }
        if used > 0 {
            z.chunk(&raw[..used], &mut out);
        }
        done.push((*cpu, vec![(start, at + out.len() as u64 - start)]));
    }
    write_at(scratch, &out, at)?;
    Ok(done)
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
