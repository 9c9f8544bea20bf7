//! The ring buffer itself: `mark`, `show`, `snapshot`.

use super::{fs, join_args, write, Args, Ctx};
use crate::cli::Result;
use crate::{fail, sys, tracefs, usage_err};
use alloc::format;
use alloc::string::String;
use rustix::io::Errno;

pub(super) fn mark(c: &Ctx, a: &Args) -> Result<()> {
    // One write is one marker event; end it with a newline like echo does
    // so the text file shows one line per mark.
    write(c.t(), "trace_marker", &(join_args(&a.pos, ' ') + "\n"))
}

pub(super) fn show(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    if a.pipe && a.snapshot {
        usage_err!("show: --pipe and --snapshot do not go together (a snapshot is not consumed)");
    }
    let base = match (a.pipe, a.snapshot) {
        (true, _) => "trace_pipe",
        (_, true) => "snapshot",
        _ => "trace",
    };
    let file = match a.cpu {
        Some(n) => format!("per_cpu/cpu{n}/{base}"),
        None => String::from(base),
    };
    if !t.exists(&file) {
        if a.snapshot {
            fail!("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)");
        }
        fail!("{}: no such CPU", t.path_of(&file));
    }
    let fd = t.open_file(&file, rustix::fs::OFlags::RDONLY).map_err(fs)?;
    let mut buf = alloc::vec![0u8; 65536];
    loop {
        match rustix::io::read(&fd, &mut buf) {
            Ok(0) => return Ok(()),
            // trace_pipe hands out what it has; write it through at once so
            // `ftctl show --pipe | grep` sees lines as they happen.
            Ok(n) => sys::write_all(sys::fd(1), &buf[..n])?,
            Err(Errno::INTR) => {}
            Err(errno) => return Err(fs(tracefs::Error::new(tracefs::Op::Read, t.path_of(&file), errno, None))),
        }
    }
}

pub(super) fn snapshot(c: &Ctx, a: &Args) -> Result<()> {
    let t = c.t();
    // Writing 1 allocates (if needed) and swaps, 2 clears, 0 frees.
    let v = match a.pos[0].as_str() {
        "take" => "1",
        "clear" => "2",
        "free" => "0",
        x => usage_err!("snapshot: '{x}' is not take, clear or free"),
    };
    if !t.exists("snapshot") {
        fail!("this kernel has no snapshot buffer (CONFIG_TRACER_SNAPSHOT is off)");
    }
    write(t, "snapshot", v)
}
