//! The recording's metadata, and the trace.dat at the end.
//!
//! Before recording, [`early`] collects what is known then (headers, every
//! event format — which events will occur is not known yet — kallsyms,
//! printk formats, saved_cmdlines, clock, uname): the stream's META. At the
//! end, [`late`] collects what changed or is known only then (cmdlines and
//! tgids seen, per-CPU stats, the tracer state, the formats of the systems
//! enabled): its LATE. [`convert`] turns the stream file into a trace.dat
//! (tracedat::stream::Virtual lays it out, keeping the formats of the
//! systems enabled or seen in the data) and copies the pages across with
//! copy_file_range.

#[cfg(feature = "convert")]
use super::output::{FileAt, Output};
#[cfg(feature = "convert")]
use super::{os_err, Error};
use crate::sys::write_all;
use crate::tracedat::stream::{self, Kind};
#[cfg(feature = "convert")]
use crate::tracedat::stream::{Index, Plan, Shape, Virtual};
use crate::tracedat::write::{self, opt, Compression, Meta, Seg};
use crate::tracefs::Tracefs;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rustix::fd::OwnedFd;
use rustix::io::Errno;

fn read_or_empty(t: &Tracefs, f: &str) -> Vec<u8> {
    t.read(f).unwrap_or_default()
}

/// An option of NUL-terminated `text`.
#[inline(never)]
fn text_opt(opts: &mut Vec<(u16, Vec<u8>)>, id: u16, text: &[u8]) {
    let mut v = Vec::with_capacity(text.len() + 1);
    v.extend_from_slice(text);
    v.push(0);
    opts.push((id, v));
}

/// The format files of the events in `keep`'s systems (None: every
/// system), grouped by system in the tracefs's order; "ftrace" apart.
fn formats(top: &Tracefs, keep: Option<&[String]>, m: &mut Meta) {
    // (Walked by reference: a loop moving out of a Vec compiles to its own
    // iterator and drop code.)
    let all = crate::tracefs::events::all_events(top).unwrap_or_default();
    for e in &all {
        let ftrace = e.system == "ftrace";
        if !ftrace && keep.is_some_and(|k| !k.contains(&e.system)) {
            continue;
        }
        let Ok(f) = top.read(&e.path("format")) else { continue };
        if ftrace {
            m.ftrace_formats.push(f);
            continue;
        }
        match m.systems.last_mut() {
            Some(s) if s.0 == e.system => s.1.push(f),
            _ => m.systems.push((e.system.clone(), vec![f])),
        }
    }
    // Enum names a print fmt leaves unresolved (no TRACE_DEFINE_ENUM, e.g.
    // HRTIMER_MODE_*): their values from the kernel's BTF, as its own eval
    // maps would have written them, so every reader prints what `trace` does.
    let mut fs: Vec<&mut Vec<u8>> = Vec::new();
    for s in m.systems.iter_mut() {
        for f in s.1.iter_mut() {
            fs.push(f);
        }
    }
    crate::format::resolve_enums_btf(&mut fs, &|| crate::sys::read(c"/sys/kernel/btf/vmlinux").unwrap_or_default());
}

/// What META and LATE both hold: the headers, the formats of `keep`'s
/// systems (None: all), kallsyms if `kallsyms`, saved_cmdlines, and the
/// recording's buffer — `name` ("" for the top level and --private), its
/// clock and sub-buffer size (no data: a stream's pages come in frames).
/// No options yet.
#[inline(never)]
fn gather(top: &Tracefs, keep: Option<&[String]>, kallsyms: bool, name: &str, clock_file: &str, page_size: usize, ncpus: usize) -> Meta {
    // Page headers hold a kernel `long` (commit): its size is the kernel's,
    // which header_page says, not this (maybe 32-bit) program's.
    let header_page = read_or_empty(top, "events/header_page");
    let long = write::kernel_long_size(&header_page).unwrap_or(core::mem::size_of::<core::ffi::c_long>() as u8);
    let mut m = Meta {
        version: 7,
        compression: Compression::None,
        big_endian: cfg!(target_endian = "big"),
        long_size: long,
        page_size: page_size as u32,
        header_page,
        header_event: read_or_empty(top, "events/header_event"),
        ftrace_formats: Vec::new(),
        systems: Vec::new(),
        kallsyms: Vec::new(),
        printk_formats: Vec::new(),
        cmdlines: Vec::new(),
        cpus: ncpus as u32,
        options: Vec::new(),
        buffers: Vec::new(),
    };
    formats(top, keep, &mut m);
    if kallsyms {
        m.kallsyms = crate::sys::read(c"/proc/kallsyms").unwrap_or_default();
    }
    m.cmdlines = read_or_empty(top, "saved_cmdlines");
    let clock = crate::tracefs::state::clock_name(clock_file);
    m.buffers.push(write::Buffer { name: String::from(name), clock, page_size: page_size as u32, cpu_sizes: vec![0; ncpus] });
    m
}

/// The KVARS option: the values of `kvars::KNOWN` that the formats of the
/// events enabled in `rec` need, as the running kernel has them (none: no
/// option).
#[cfg(feature = "kvars")]
fn kvars_opt(top: &Tracefs, rec: &Tracefs, m: &mut Meta) {
    let mut fs = m.systems.iter().flat_map(|s| s.1.iter().map(|f| (s.0.as_str(), f.as_slice())));
    // (kallsyms give the variables' addresses, also when META leaves them out.)
    let ksyms;
    let kallsyms = if m.kallsyms.is_empty() {
        ksyms = crate::sys::read(c"/proc/kallsyms").unwrap_or_default();
        &ksyms
    } else {
        &m.kallsyms
    };
    let kvars = crate::tracefs::kvars::read_enabled(top, rec, &mut fs, kallsyms, m.long_size as usize);
    if !kvars.is_empty() {
        text_opt(&mut m.options, opt::KVARS, kvars.as_bytes());
    }
}

/// META: what is known before recording (also what `ftrec -N` sends
/// first). `kallsyms`: put them here (else in LATE: a nearly full disk
/// keeps room for pages).
#[inline(never)]
pub fn early(top: &Tracefs, rec: &Tracefs, name: &str, page_size: usize, ncpus: usize, clock_file: &str, state: &str, kallsyms: bool) -> Meta {
    let mut m = gather(top, None, kallsyms, name, clock_file, page_size, ncpus);
    // Kernel values the enabled events' formats read (kmem's
    // vmemmap_base), so that ftcat prints those lines as the kernel did —
    // a stream read as it arrives too.
    #[cfg(feature = "kvars")]
    kvars_opt(top, rec, &mut m);
    #[cfg(not(feature = "kvars"))]
    let _ = rec;
    m.printk_formats = read_or_empty(top, "printk_formats");
    let o = &mut m.options;
    text_opt(o, opt::TRACECLOCK, clock_file.as_bytes());
    text_opt(o, opt::UNAME, crate::sys::uname().as_bytes());
    text_opt(o, opt::VERSION, concat!("ftbox ", env!("CARGO_PKG_VERSION")).as_bytes());
    // The tracer state as configured: a stream read as it arrives prints
    // with it (LATE has it as it was at the end).
    if !state.is_empty() {
        text_opt(o, opt::STATE, state.as_bytes());
    }
    m
}

/// What the end of a recording knows, read before anything was restored.
pub struct Ending<'a> {
    /// Instance name ("" for the top level and --private).
    pub name: &'a str,
    pub page_size: usize,
    /// per_cpu/cpuN/stats.
    pub stats: Vec<String>,
    /// Systems of the events enabled (their formats are kept even when no
    /// record of them made it).
    pub systems: Vec<String>,
    pub clock_file: String,
    /// The tracer state that shapes the text (tracefs::state::trace_state).
    pub state: String,
    /// META left kallsyms out.
    pub kallsyms: bool,
}

/// "\nBuffer: NAME\n\n": the CPUSTAT option's head and the summary's.
fn buffer_head(name: &str) -> Vec<u8> {
    if name.is_empty() {
        Vec::new()
    } else {
        [b"\nBuffer: ", name.as_bytes(), b"\n\n"].concat()
    }
}

/// LATE: what is known at the end.
#[inline(never)]
pub fn late(top: &Tracefs, e: &Ending) -> Meta {
    let mut m = gather(top, Some(&e.systems), e.kallsyms, e.name, &e.clock_file, e.page_size, e.stats.len());
    let head = buffer_head(e.name);
    let o = &mut m.options;
    text_opt(o, opt::TRACECLOCK, e.clock_file.as_bytes());
    if !head.is_empty() {
        text_opt(o, opt::CPUSTAT, &head);
    }
    for (c, s) in e.stats.iter().enumerate() {
        text_opt(o, opt::CPUSTAT, format!("CPU: {c}\n{s}").as_bytes());
    }
    if !e.state.is_empty() {
        text_opt(o, opt::STATE, e.state.as_bytes());
    }
    let tgids = read_or_empty(top, "saved_tgids");
    if !tgids.is_empty() {
        o.push((opt::SAVED_TGIDS, tgids));
    }
    m
}

/// A metadata frame (META or LATE) of `m`: the header, then the bytes as
/// the layout made them (what stream::meta_bytes would join in a copy:
/// kallsyms alone are megabytes).
pub fn write_meta(fd: &OwnedFd, kind: Kind, m: &Meta) -> core::result::Result<(), Errno> {
    // (A stream's metadata has no CPU data: every segment is bytes.)
    let segs = write::layout(m);
    let bytes = || segs.iter().filter_map(|s| if let Seg::Bytes(b) = s { Some(b) } else { None });
    write_all(fd, &stream::frame(kind, 0, bytes().map(|b| b.len() as u64).sum()))?;
    bytes().try_for_each(|b| write_all(fd, b))
}

/// Copy `len` bytes at `off` of `src` to the end of `out`; `punch`: punch
/// each chunk copied out of `src`, so the disk never holds it twice.
#[cfg(feature = "convert")]
#[inline(never)]
fn copy_data(src: &OwnedFd, mut off: u64, len: u64, out: &OwnedFd, punch: bool) -> core::result::Result<(), Errno> {
    let end = off + len;
    let mut fallback = false;
    let mut buf = Vec::new();
    while off < end {
        let want = (end - off).min(1 << 20) as usize;
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
        if punch && off > chunk_start {
            let flags = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
            let _ = rustix::fs::fallocate(src, flags, chunk_start, off - chunk_start);
        }
    }
    Ok(())
}

/// Free bytes on the filesystem of `fd`.
pub fn free_space(fd: &OwnedFd) -> u64 {
    rustix::fs::fstatvfs(fd).map(|s| s.f_bavail.saturating_mul(s.f_frsize)).unwrap_or(u64::MAX)
}

/// Each CPU's share of a converted recording, for the summary.
pub struct CpuSummary {
    pub cpu: u32,
    pub bytes: u64,
    /// None when the pages were not looked at (a stream).
    pub stats: Option<write::PageStats>,
    /// The bytes of its data in a compressed file.
    pub compressed: Option<u64>,
}

/// The stream in the output file becomes a trace.dat of `version` stored
/// as `compression` says, keeping the newest `keep` bytes per CPU.
/// Err(None): no room for the copy, the stream stays.
#[cfg(feature = "convert")]
#[inline(never)]
pub fn convert(out: &Output, version: u32, compression: Compression, keep: Option<u64>) -> core::result::Result<Vec<CpuSummary>, Option<Error>> {
    let err = |e: crate::tracedat::Error| Some(Error::new(format!("{}: {e}", out.path)));
    let src = FileAt { fd: rustix::io::fcntl_dupfd_cloexec(&out.fd, 3).map_err(|e| Some(os_err(&out.path, e)))? };
    let idx = Index::read(&src, src.len()).map_err(err)?;
    let mut plan = Plan::new(&src, &idx, &Shape { version, keep, used_formats: true }).map_err(err)?;
    let stats = core::mem::take(&mut plan.stats);
    // A compressed file's CPU data comes from a scratch file (unnamed once
    // made), punched out as it is copied.
    let scratch = match compression {
        Compression::None => None,
        #[cfg(feature = "zstd-write")]
        c => {
            let (f, name) = out.temp().map_err(Some)?;
            out.remove_temp(&name);
            let z = write::CpuCompressor::new(c, plan.meta.big_endian, idx.page_size);
            plan.cpus = match super::compress::compress_cpus(&src.fd, &plan.cpus, &z, &f) {
                Ok(cpus) => cpus,
                Err(Errno::NOSPC | Errno::DQUOT) => return Err(None),
                Err(e) => return Err(Some(os_err(&format!("{}: compressing the recorded data", out.path), e))),
            };
            plan.meta.compression = c;
            Some(FileAt { fd: f })
        }
    };
    let data = scratch.as_ref().unwrap_or(&src);
    // Each CPU's compressed bytes, for the summary.
    let zlen: Vec<(u32, u64)> = if scratch.is_some() { plan.cpus.iter().map(|(cpu, runs)| (*cpu, runs.iter().map(|r| r.1).sum())).collect() } else { Vec::new() };
    let v = Virtual::of(data, plan);
    // The new file beside the old needs room for a copy of it (with a
    // margin for the filesystem's own blocks); the scratch file's data
    // moves into it.
    let moved = scratch.as_ref().map_or(0, |s| s.len());
    if free_space(&out.fd) + moved < v.len + v.len / 64 + (1 << 20) {
        return Err(None);
    }
    let (tmp, name) = out.temp().map_err(Some)?;
    let mut pos = 0u64;
    for part in v.parts() {
        let r = match part {
            Ok(b) => write_all(&tmp, b).map(|()| b.len() as u64),
            Err((off, len)) => copy_data(&data.fd, off, len, &tmp, scratch.is_some()).map(|()| len),
        };
        match r {
            Ok(n) => pos += n,
            Err(e) => {
                out.remove_temp(&name);
                let what = format!("writing the trace.dat beside {} at offset {pos}", out.path);
                return Err(if e == Errno::NOSPC || e == Errno::DQUOT { None } else { Some(os_err(&what, e)) });
            }
        }
    }
    out.replace_with(&name).map_err(|e| {
        out.remove_temp(&name);
        Some(e)
    })?;
    let mut sum = Vec::new();
    for (cpu, st) in stats {
        let compressed = zlen.iter().find(|z| z.0 == cpu).map(|z| z.1);
        sum.push(CpuSummary { cpu, bytes: st.pages * u64::from(idx.page_size), stats: Some(st), compressed });
    }
    Ok(sum)
}

/// The kernel's lost-event counts in per_cpu/cpuN/stats, and their words.
const LOST: [(&str, &str); 3] =
    [("overrun:", "events lost"), ("commit overrun:", "events lost due to commit overrun"), ("dropped events:", "events dropped")];

/// The per-CPU summary on stderr, built as bytes and written at once.
#[inline(never)]
pub fn summary(name: &str, stats: &[String], cpus: &[CpuSummary], scanned: bool) {
    use core::fmt::Write;
    let mut e = crate::sys::stderr();
    e.bytes(&buffer_head(name));
    for (c, st) in stats.iter().enumerate() {
        let d = cpus.iter().find(|d| d.cpu as usize == c);
        let _ = write!(e, "CPU{c}: {} bytes", d.map_or(0, |d| d.bytes));
        if scanned {
            let _ = write!(e, ", {} events recorded", d.and_then(|d| d.stats.as_ref()).map_or(0, |s| s.events));
        }
        if let Some(z) = d.and_then(|d| d.compressed) {
            let _ = write!(e, " ({z} bytes compressed)");
        }
        // The kernel's counts (as trace-cmd prints them), then the pages' flags.
        lost_counts(&mut e, c, st);
        if let Some(ps) = d.and_then(|d| d.stats.as_ref()).filter(|ps| ps.lost_flags > 0) {
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
