//! `ftcat --live`: the live buffers' per-CPU `trace_pipe_raw`, decoded as
//! they fill.

use alloc::string::String;
use alloc::vec::Vec;

use super::{decode_err, warn, Args, Error, Host, Result, To};
use crate::applets::source;
use crate::decode;
#[cfg(feature = "export")]
use crate::export::output::{export, Extra};
use crate::merge::Merge;
use crate::tracefs::Tracefs;

/// The top level, the instance of -B (if any) and its per-CPU pipes.
#[inline(never)]
fn open_all(a: &Args) -> core::result::Result<(Tracefs, Option<Tracefs>, source::Live), String> {
    let top = Tracefs::open()?;
    let inst = match &a.decode.instance {
        Some(n) => Some(top.instance(n)?),
        None => None,
    };
    let live = source::open_live(&top, inst.as_ref().unwrap_or(&top), a.once)?;
    Ok((top, inst, live))
}

#[inline(never)]
pub(super) fn run_live(a: &Args, to: To<'_>) -> Result<()> {
    let (top, inst, live) = open_all(a).map_err(Error::Fail)?;
    let tfs = inst.as_ref().unwrap_or(&top);
    let mut rec = source::live_recording(&top, tfs, live.sources.len() as u32);
    for w in &rec.warnings {
        warn(&alloc::format!("{}: {}", top.path_of("events"), w));
    }
    #[cfg(feature = "export")]
    let page_size = live.layout.page_size;
    let mut m = Merge::new(live.layout, live.sources);
    let name = tfs.path_of("per_cpu");
    let host = &mut Host { name: &name };
    let res = match to {
        To::Text(out) => decode::print(&mut rec, &mut m, Vec::new(), &a.decode, !a.once, out, host),
        #[cfg(feature = "export")]
        To::Export(f, drain) => {
            // What a file keeps: the kernel's uname, and each CPU's stats
            // as the export ends.
            let ncpus = rec.ncpus;
            let stats = || (0..ncpus).map(|c| tfs.read_str(&alloc::format!("per_cpu/cpu{c}/stats")).unwrap_or_default()).collect();
            let x = Extra { uname: &crate::sys::uname(), page_size, cpustat: &stats };
            export(&mut rec, &mut m, &x, &a.decode, f, !a.once, drain, host)
        }
    };
    res.map_err(|e| decode_err(e, &name))
}
