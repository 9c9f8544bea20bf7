//! ftcat's recordings from files and pipes: a trace.dat or a stream file
//! (read in place), a stream decoded as it arrives on a pipe, and
//! `--save`, which writes either as a trace.dat.

use alloc::boxed::Box;
#[cfg(feature = "stream-pipe")]
use alloc::rc::Rc;
#[cfg(feature = "stream-pipe")]
use alloc::vec::Vec;
#[cfg(feature = "stream-pipe")]
use core::cell::RefCell;

use super::Result;
#[cfg(feature = "stream-pipe")]
use super::{decode_err, warn, Args, Error, Host, To};
use crate::applets::source;
#[cfg(feature = "stream-pipe")]
use crate::decode;
#[cfg(all(feature = "stream-pipe", feature = "export"))]
use crate::export::output::{export, Extra};
#[cfg(feature = "stream-pipe")]
use crate::merge::Merge;
#[cfg(feature = "stream-pipe")]
use crate::sys::{self, Errno};
#[cfg(feature = "stream-pipe")]
use crate::tracedat::stream::{Demux, Shape, Virtual};
use crate::tracedat::stream::{InPlace, Index};
use crate::tracedat::TraceDat;
use crate::fail;
#[cfg(feature = "stream-pipe")]
use crate::usage_err;

/// The recording in `input` given to `f`: a trace.dat, or a stream file
/// read in place. A stream that ends early fails after `f` ran (and printed
/// everything before the cut). (`f` boxed: one copy for every caller.)
pub(super) fn with_recording(input: &source::Input, path: &str, f: Box<dyn FnOnce(&TraceDat) -> Result<()> + '_>) -> Result<()> {
    if !input.is_stream() {
        let td = match TraceDat::open(input.read_at()) {
            Ok(t) => t,
            Err(e) => fail!("{}: {}", path, e),
        };
        return f(&td);
    }
    let stream = match Index::read(input.read_at(), input.len()) {
        Ok(idx) => InPlace::new(input.read_at(), idx),
        Err(e) => fail!("{}: {}", path, e),
    };
    let td = match stream.open() {
        Ok(t) => t,
        Err(e) => fail!("{}: {}", path, e),
    };
    let res = f(&td);
    cut_short(path, stream.cut)?;
    res
}

#[cfg(feature = "stream-pipe")]
/// The index of a stream in `ra` and the trace.dat it stands for.
fn stream_file<'r>(ra: &'r dyn crate::tracedat::ReadAt, len: u64, shape: &Shape) -> core::result::Result<(Index, Virtual<'r>), crate::tracedat::Error> {
    let idx = Index::read(ra, len)?;
    let v = Virtual::new(ra, &idx, shape)?;
    Ok((idx, v))
}

/// A stream that ended early: say where, after what it held was printed.
pub(super) fn cut_short(path: &str, cut: Option<crate::tracedat::Error>) -> Result<()> {
    match cut {
        Some(e) => fail!("{}: the recording is cut short, everything before the cut was read ({})", path, e),
        None => Ok(()),
    }
}

#[cfg(feature = "stream-pipe")]
/// A stream arriving on a pipe, decoded as it comes: the merge waits for
/// each CPU's next page (see tracedat::stream::Demux).
#[inline(never)]
pub(super) fn run_pipe(a: &Args, p: source::FdPipe, path: &str, to: To<'_>) -> Result<()> {
    let (demux, meta) = match Demux::open(alloc::boxed::Box::new(p)) {
        Ok(x) => x,
        Err(e) => fail!("{}: {}", path, e),
    };
    let td = match TraceDat::open(&meta) {
        Ok(t) => t,
        Err(e) => fail!("{}: {}", path, e),
    };
    let Some(buf) = td.buffers.first() else { fail!("{}: no trace data", path) };
    let mut rec = decode::Recording::from_file(&td, buf, None);
    // (The pages are not here yet to guess from: the recorder's word, else nop.)
    match &a.decode.tracer {
        Some(t) => rec.tracer.clone_from(t),
        None if rec.tracer.is_empty() => rec.tracer = "nop".into(),
        None => {}
    }
    for w in &rec.warnings {
        warn(&alloc::format!("{}: {}", path, w));
    }
    let d = Rc::new(RefCell::new(demux));
    let mut m = Merge::new(td.layout(buf), Demux::sources(d.clone(), rec.ncpus));
    let host = &mut Host { name: path };
    let res = match to {
        To::Text(out) => decode::print(&mut rec, &mut m, Vec::new(), &a.decode, true, out, host),
        #[cfg(feature = "export")]
        To::Export(f, drain) => export(&mut rec, &mut m, &Extra { uname: td.options.uname.as_deref().unwrap_or(""), page_size: td.page_size, cpustat: &Vec::new }, &a.decode, f, true, drain, host),
    };
    let res = res.map_err(|e| decode_err(e, path));
    let cut = d.borrow_mut().take_cut();
    cut_short(path, cut)?;
    res
}

#[cfg(feature = "stream-pipe")]
/// `--save OUT`: FILE (a stream, or any trace.dat) as a trace.dat that
/// trace-cmd and KernelShark read. A stream becomes a v7 file; a trace.dat
/// is copied as it is.
#[inline(never)]
pub(super) fn run_save(a: &Args, out_path: &str) -> Result<()> {
    let path = a.file.as_deref().unwrap_or("trace.dat");
    let input = source::Input::open(path).and_then(|i| i.whole(path)).map_err(Error::Fail)?;
    let ra = input.read_at();
    let stream = input.is_stream();
    let (cut, v) = if stream {
        match stream_file(ra, input.len(), &Shape { version: 7, keep: None, used_formats: true }) {
            Ok((idx, v)) => (idx.cut, Some(v)),
            Err(e) => fail!("{}: {}", path, e),
        }
    } else {
        if let Err(e) = TraceDat::open(ra) {
            fail!("{}: {}", path, e);
        }
        (None, None)
    };
    let from: &dyn crate::tracedat::ReadAt = match &v {
        Some(v) => v,
        None => ra,
    };
    let out = if out_path == "-" {
        if crate::record::is_tty(1) {
            usage_err!("--save - writes a binary file: redirect stdout");
        }
        None
    } else {
        let flags = rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CREATE | rustix::fs::OFlags::TRUNC | rustix::fs::OFlags::CLOEXEC;
        match sys::open_str(out_path, flags, rustix::fs::Mode::from_raw_mode(0o644)) {
            Ok(f) => Some(f),
            Err(e) => fail!("{}: {}", out_path, sys::OsError(e)),
        }
    };
    let fd = out.as_ref().map_or(sys::fd(1), |f| rustix::fd::AsFd::as_fd(f));
    let mut buf = alloc::vec![0u8; 1 << 20];
    let mut off = 0u64;
    loop {
        let n = match from.read_at(off, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => fail!("{}: reading at offset {}: {}", path, off, sys::OsError(Errno::from_raw_os_error(e.0))),
        };
        if let Err(e) = sys::write_all(fd, &buf[..n]) {
            fail!("{}: writing at offset {}: {}", out_path, off, sys::OsError(e));
        }
        off += n as u64;
    }
    cut_short(path, cut)
}
