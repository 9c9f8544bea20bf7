//! Turn the per-CPU temp files into a trace.dat: collect the metadata
//! (headers, the formats of every system that appears in the data, kallsyms,
//! printk formats, saved_cmdlines, per-CPU stats), lay the file out with
//! `tracedat::write`, then write it, copying the raw pages with
//! copy_file_range and punching them out of the temp files as they go, so a
//! nearly full disk still has room for the result.

use crate::tracedat::write::{self, opt, Buffer, Meta, Seg};
use crate::tracefs::events::EventRef;
use crate::tracefs::Tracefs;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

/// One CPU's recorded data: `file[start..end]`.
pub struct CpuData {
    pub file: Option<OwnedFd>,
    pub start: u64,
    pub end: u64,
}

impl CpuData {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
}

pub struct Recorded<'a> {
    /// Instance name for the BUFFER option; "" for the top level (and --private).
    pub name: &'a str,
    pub page_size: usize,
    pub cpus: Vec<CpuData>,
    /// per_cpu/cpuN/stats, read before anything was restored.
    pub stats: Vec<String>,
    /// Events enabled for this recording (their systems' formats are kept
    /// even when no record of them made it).
    pub systems: Vec<String>,
    pub clock_file: String,
    /// The tracer state that shapes the text (tracefs::state::trace_state), read
    /// before anything was restored.
    pub state: String,
}

fn read_or_empty(t: &Tracefs, f: &str) -> Vec<u8> {
    t.read(f).unwrap_or_default()
}


/// An option of NUL-terminated text made of `parts`.
#[inline(never)]
fn text_opt(opts: &mut Vec<(u16, Vec<u8>)>, id: u16, parts: &[&[u8]]) {
    let mut v = parts.concat();
    v.push(0);
    opts.push((id, v));
}

/// Read a temp file region in chunks for the page scan; adds to `total`.
#[inline(never)]
fn scan_cpu(d: &CpuData, ps: usize, long: usize, ids: &mut Vec<u16>, total: &mut write::PageStats) {
    let Some(f) = &d.file else { return };
    let mut buf = vec![0u8; ps * 256];
    let mut off = d.start;
    while off < d.end {
        let want = ((d.end - off) as usize).min(buf.len());
        let n = match rustix::io::pread(f, &mut buf[..want], off) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        write::scan_pages(&buf[..n], ps, long, cfg!(target_endian = "big"), total, |id| {
            if let Err(at) = ids.binary_search(&id) {
                ids.insert(at, id);
            }
        });
        off += n as u64;
    }
}

/// Systems whose events occur in the data, by reading every event's id.
#[inline(never)]
fn systems_for(top: &Tracefs, all: &[EventRef], ids: &[u16], out: &mut Vec<String>) {
    for ev in all {
        if ids.is_empty() || ev.system == "ftrace" || out.binary_search(&ev.system).is_ok() {
            continue;
        }
        let id = top.read_str(&ev.path("id")).ok().and_then(|s| s.trim().parse::<u64>().ok());
        if id.is_some_and(|id| id <= 0xffff && ids.binary_search(&(id as u16)).is_ok()) {
            super::insert_sorted(out, &ev.system);
        }
    }
}

/// The format files of a system's events.
#[inline(never)]
fn formats_of(top: &Tracefs, all: &[EventRef], sys: &str) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for e in all {
        if e.system == sys {
            if let Ok(f) = top.read(&e.path("format")) {
                v.push(f);
            }
        }
    }
    v
}

use crate::sys::write_all;

/// Copy `len` bytes at `off` of `src` to the end of `out`, punching copied
/// chunks out of `src` so the disk never holds the data twice.
const CHUNK: u64 = 1 << 20;

/// Can holes be punched in `f` (tmpfs, ext4, xfs, btrfs: yes)? Tried past
/// the end of the data, where it changes nothing.
#[inline(never)]
fn can_punch(f: &OwnedFd) -> bool {
    let end = rustix::fs::fstat(f).map(|s| s.st_size as u64).unwrap_or(0);
    let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
    rustix::fs::fallocate(f, flags, end, 4096).is_ok()
}

#[inline(never)]
fn copy_data(src: &OwnedFd, mut off: u64, len: u64, out: &OwnedFd) -> Result<(), Errno> {
    let end = off + len;
    let mut fallback = false;
    let mut buf = Vec::new();
    while off < end {
        let want = (end - off).min(CHUNK) as usize;
        let chunk_start = off;
        if !fallback {
            let mut o = off;
            match rustix::fs::copy_file_range(src, Some(&mut o), out, None, want) {
                Ok(0) => fallback = true,
                Ok(n) => off += n as u64,
                Err(Errno::INTR) => {}
                Err(Errno::XDEV | Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => fallback = true,
                Err(e) => return Err(e),
            }
        } else {
            buf.resize(want, 0);
            let n = rustix::io::pread(src, &mut buf[..], off)?;
            if n == 0 {
                return Err(Errno::IO);
            }
            write_all(out, &buf[..n])?;
            off += n as u64;
        }
        if off > chunk_start {
            let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            let _ = rustix::fs::fallocate(src, flags, chunk_start, off - chunk_start);
        }
    }
    Ok(())
}

/// Free bytes on the filesystem of `fd`.
fn free_space(fd: &OwnedFd) -> u64 {
    rustix::fs::fstatvfs(fd).map(|s| s.f_bavail.saturating_mul(s.f_frsize)).unwrap_or(u64::MAX)
}

fn buffer(r: &Recorded, name: &str, cpu_sizes: Vec<u64>) -> Buffer {
    Buffer { name: String::from(name), clock: crate::tracefs::state::clock_name(&r.clock_file), page_size: r.page_size as u32, cpu_sizes }
}

/// The layout for the current sizes: the recording's buffer, after an empty
/// top level when a v6 file records an instance (v6 always has a top-level
/// flyrecord; v7 needs none).
#[inline(never)]
fn layout_for(meta: &mut Meta, r: &Recorded) -> Vec<Seg> {
    meta.buffers.clear();
    if meta.version < 7 && !r.name.is_empty() {
        meta.buffers.push(buffer(r, "", vec![0; r.cpus.len()]));
    }
    let mut sizes = Vec::new();
    for d in &r.cpus {
        sizes.push(d.len());
    }
    meta.buffers.push(buffer(r, r.name, sizes));
    write::layout(meta)
}

/// Build and write the file. `full`: the disk filled during recording —
/// first drop the newest pages until the metadata and a copy chunk fit.
/// Unless `quiet`, the per-CPU summary goes straight to stderr.
#[inline(never)]
pub fn assemble(top: &Tracefs, out: &OwnedFd, mut r: Recorded, version: u32, full: bool, quiet: bool) -> Result<(), String> {
    let mut dropped = false;
    // Which systems: those enabled (sorted) plus those whose ids occur in the data.
    let mut systems = core::mem::take(&mut r.systems);
    // (Sorted and without duplicates: "ftrace" is there once at most.)
    if let Some(i) = systems.iter().position(|s| s == "ftrace") {
        systems.remove(i);
    }
    // Page headers hold a kernel `long` (commit): its size is the kernel's,
    // which header_page says, not this (maybe 32-bit) program's.
    let header_page = read_or_empty(top, "events/header_page");
    let long = write::kernel_long_size(&header_page).unwrap_or(core::mem::size_of::<core::ffi::c_long>() as u8);
    let mut ids = Vec::new();
    let mut page_stats = Vec::new();
    for d in &r.cpus {
        let mut st = write::PageStats::default();
        scan_cpu(d, r.page_size, long as usize, &mut ids, &mut st);
        page_stats.push(st);
    }
    let all = crate::tracefs::events::all_events(top).unwrap_or_default();
    systems_for(top, &all, &ids, &mut systems);
    let buffer_head = buffer_head(r.name);
    let mut meta = metadata(top, &r, &all, &systems, version, header_page, long);
    let mut segs = layout_for(&mut meta, &r);

    if full {
        // Room for the metadata and one copy chunk (or, where holes cannot
        // be punched, for a second copy of the data), taken from the newest
        // pages of the biggest CPUs.
        let mut need = 64 * 1024;
        for s in &segs {
            if let Seg::Bytes(b) = s {
                need += b.len() as u64;
            }
        }
        // (Asked of the first CPU's temp file: they share one directory.)
        let mut first = None;
        let mut data = 0;
        for d in &r.cpus {
            data += d.len();
            if first.is_none() {
                first = d.file.as_ref();
            }
        }
        let punch = first.is_some_and(can_punch);
        need += if punch { CHUNK } else { data };
        let mut short = need.saturating_sub(free_space(out));
        if short > 0 {
            let ps = r.page_size as u64;
            while short > 0 {
                // The biggest CPU (the last of equals).
                let mut big = None;
                for (i, d) in r.cpus.iter().enumerate() {
                    if big.is_none_or(|b: usize| d.len() >= r.cpus[b].len()) {
                        big = Some(i);
                    }
                }
                let Some(i) = big else { break };
                let d = &mut r.cpus[i];
                let cut = short.min(256 << 10).div_ceil(ps).saturating_mul(ps).min(d.len());
                if cut == 0 {
                    break;
                }
                d.end -= cut;
                if let Some(f) = &d.file {
                    let _ = rustix::fs::ftruncate(f, d.end);
                }
                short = short.saturating_sub(if punch { cut } else { 2 * cut });
            }
            dropped = true;
            segs = layout_for(&mut meta, &r);
        }
    }
    // The segments own their bytes now; the metadata can go before the
    // (possibly long) copy.
    drop(meta);

    let mut pos = 0u64;
    for s in &segs {
        let res = match s {
            Seg::Bytes(b) => write_all(out, b).map(|()| b.len() as u64),
            Seg::Data { cpu, len, .. } => {
                let d = &r.cpus[*cpu];
                match &d.file {
                    Some(f) => copy_data(f, d.start, *len, out).map(|()| *len),
                    None => Err(Errno::IO),
                }
            }
        };
        match res {
            Ok(n) => pos += n,
            Err(e) => {
                let why = if e == Errno::NOSPC || e == Errno::DQUOT || e == Errno::FBIG { " (the file is incomplete)" } else { "" };
                return Err(format!("writing the output at offset {pos}: {}{why}", crate::sys::Msg(e)));
            }
        }
    }

    if !quiet {
        summary(&r, &page_stats, &buffer_head, dropped);
    }
    Ok(())
}

/// "\nBuffer: NAME\n\n" for an instance: the CPUSTAT option's head and the
/// summary's.
fn buffer_head(name: &str) -> Vec<u8> {
    if name.is_empty() { Vec::new() } else { [b"\nBuffer: ", name.as_bytes(), b"\n\n"].concat() }
}

/// Everything of the file but the CPU data: the headers, the formats of
/// ftrace's events and of `systems`' (from `all`), kallsyms, printk
/// formats, saved_cmdlines and the options (clock, uname, version, the
/// per-CPU stats, the tracer state, saved_tgids). No buffers yet: laid out
/// as it is, it is the metadata alone (what `ftrec -N` sends first).
#[inline(never)]
pub(super) fn metadata(top: &Tracefs, r: &Recorded, all: &[EventRef], systems: &[String], version: u32, header_page: Vec<u8>, long: u8) -> Meta {
    let mut meta = Meta {
        version,
        big_endian: cfg!(target_endian = "big"),
        long_size: long,
        page_size: r.page_size as u32,
        header_page,
        header_event: read_or_empty(top, "events/header_event"),
        ftrace_formats: formats_of(top, all, "ftrace"),
        systems: Vec::new(),
        kallsyms: crate::sys::read(c"/proc/kallsyms").unwrap_or_default(),
        printk_formats: read_or_empty(top, "printk_formats"),
        cmdlines: read_or_empty(top, "saved_cmdlines"),
        cpus: r.cpus.len() as u32,
        options: Vec::new(),
        buffers: Vec::new(),
    };
    for s in systems {
        meta.systems.push((s.clone(), formats_of(top, all, s)));
    }
    // Enum names a print fmt leaves unresolved (no TRACE_DEFINE_ENUM, e.g.
    // HRTIMER_MODE_*): their values from the kernel's BTF, as its own eval
    // maps would have written them, so every reader prints what `trace` does.
    let mut fs: Vec<&mut Vec<u8>> = Vec::new();
    for s in meta.systems.iter_mut() {
        for f in s.1.iter_mut() {
            fs.push(f);
        }
    }
    crate::format::resolve_enums_btf(&mut fs, &|| crate::sys::read(c"/sys/kernel/btf/vmlinux").unwrap_or_default());
    meta.options = options(top, r);
    meta
}

/// The options of a recording: the clock, uname, ftbox's version, the
/// per-CPU stats, the tracer state, saved_tgids.
#[inline(never)]
pub(super) fn options(top: &Tracefs, r: &Recorded) -> Vec<(u16, Vec<u8>)> {
    let buffer_head = buffer_head(r.name);
    let mut opts = Vec::new();
    let o = &mut opts;
    text_opt(o, opt::TRACECLOCK, &[r.clock_file.as_bytes()]);
    text_opt(o, opt::UNAME, &[crate::sys::uname().as_bytes()]);
    text_opt(o, opt::VERSION, &[concat!("ftbox ", env!("CARGO_PKG_VERSION")).as_bytes()]);
    if !buffer_head.is_empty() {
        text_opt(o, opt::CPUSTAT, &[&buffer_head]);
    }
    for (c, s) in r.stats.iter().enumerate() {
        text_opt(o, opt::CPUSTAT, &[format!("CPU: {c}\n{s}").as_bytes()]);
    }
    if !r.state.is_empty() {
        text_opt(o, opt::STATE, &[r.state.as_bytes()]);
    }
    let tgids = read_or_empty(top, "saved_tgids");
    if !tgids.is_empty() {
        o.push((opt::SAVED_TGIDS, tgids));
    }
    opts
}

/// The kernel's lost-event counts in per_cpu/cpuN/stats, and their words.
const LOST: [(&str, &str); 3] =
    [("overrun:", "events lost"), ("commit overrun:", "events lost due to commit overrun"), ("dropped events:", "events dropped")];

/// The per-CPU summary on stderr, built as bytes and written at once.
#[inline(never)]
fn summary(r: &Recorded, page_stats: &[write::PageStats], buffer_head: &[u8], dropped: bool) {
    use core::fmt::Write;
    let mut e = crate::sys::stderr();
    if dropped {
        e.bytes(b"disk full: the newest pages that did not fit were dropped\n");
    }
    e.bytes(buffer_head);
    for (c, (d, ps)) in r.cpus.iter().zip(page_stats).enumerate() {
        let st = r.stats.get(c).map(String::as_str).unwrap_or("");
        let _ = write!(e, "CPU{c}: {} bytes, {} events recorded", d.len(), ps.events);
        // The kernel's counts (as trace-cmd prints them), then the pages' flags.
        lost_counts(&mut e, c, st);
        if ps.lost_flags > 0 {
            let _ = write!(e, "\nCPU {c}: {} pages follow lost events ({} counted on the pages)", ps.lost_flags, ps.lost_events);
        }
        e.bytes(b"\n");
    }
}


/// "CPU c: N events lost" lines for the kernel's counts in `st` (a
/// per_cpu/cpuN/stats text).
#[inline(never)]
pub(super) fn lost_counts(e: &mut crate::sys::Writer, c: usize, st: &str) {
    use core::fmt::Write;
    for (key, what) in LOST {
        // (The one reader of a stats text, ftcat's too.)
        let n = crate::decode::recording::stat_num(st, key);
        if n > 0 {
            let _ = write!(e, "\nCPU {c}: {n} {what}");
        }
    }
}
