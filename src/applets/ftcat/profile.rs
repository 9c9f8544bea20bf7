//! ftcat's `--profile` and `--compare`: their options, what goes with
//! what, and the glue from files to src/profile's tables.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::{decode_err, warn, with_recording, Args, Host, Stdout};
use crate::applets::source;
use crate::cli::{Error, Result};
use crate::decode::{self, text_out::TextOut, Style};
#[cfg(feature = "export")]
use crate::export::output::Format;
use crate::profile::{self, compare};
#[cfg(feature = "export")]
use crate::sys;
use crate::usage_err;

/// `--profile`, `--compare` and what goes with them.
#[derive(Default)]
pub struct ProfileArgs {
    pub on: bool,
    pub hist: bool,
    /// `--compare BASE[,BASE...]`: NEW is the FILE operand.
    pub compare: Option<String>,
    pub min_change: Option<f64>,
    pub verbose: bool,
}

/// What goes with `--profile` and `--compare`, and what does not.
pub(super) fn check_profile(a: &Args) -> Result<()> {
    let p = &a.profile;
    let (profile, compare) = (p.on, p.compare.is_some());
    if p.hist && !profile {
        usage_err!("--hist goes with --profile");
    }
    if (p.min_change.is_some() || p.verbose) && !compare {
        usage_err!("--min-change and -v go with --compare");
    }
    if !(profile || compare) {
        return Ok(());
    }
    if profile && compare {
        usage_err!("--profile or --compare, not both");
    }
    if a.live || a.decode.stat || a.decode.style != Style::Kernel {
        usage_err!("--profile and --compare read recordings: not with --live, --stat or --style");
    }
    if compare && a.file.is_none() {
        usage_err!("--compare BASE NEW: NEW is missing");
    }
    #[cfg(feature = "export")]
    if a.export.is_some_and(|f| compare || f != Format::Jsonl) {
        usage_err!("--profile exports as jsonl only; --compare not at all");
    }
    Ok(())
}

/// The profile of the recording at `path` (a trace.dat or a stream file,
/// `-` for stdin), through the filters of `a`, given to `f`.
fn profile_of(path: &str, a: &Args, f: &mut dyn FnMut(profile::Report) -> Result<()>) -> Result<()> {
    let input = source::Input::open(path).and_then(|i| i.whole(path)).map_err(Error::Fail)?;
    with_recording(&input, path, Box::new(|td| {
        let popts = profile::ProfileOptions { hist: a.profile.hist, per_task: a.decode.pids.is_some() };
        let report = decode::file_input(td, &a.decode, false).and_then(|mut i| {
            for w in &i.rec.warnings {
                warn(&alloc::format!("{}: {}", path, w));
            }
            profile::profile(&mut i.rec, &mut i.merge, &a.decode, popts, &mut Host { name: path })
        });
        f(report.map_err(|e| decode_err(e, path))?)
    }))
}

/// `--profile` (as text, or JSON lines) and `--compare`.
#[inline(never)]
pub(super) fn run_profile(a: &Args) -> Result<()> {
    let mut out = TextOut::new(Stdout);
    let file = a.file.as_deref().unwrap_or("trace.dat");
    match &a.profile.compare {
        None => {
            let res = profile_of(file, a, &mut |r| {
                #[cfg(feature = "export")]
                if a.export.is_some() {
                    let mut b = crate::export::buf::Buf::new();
                    r.jsonl(&mut b);
                    return sys::write_all(sys::fd(1), b.as_slice()).map_err(Error::Io);
                }
                let _ = r.print(&mut out);
                Ok(())
            });
            // (Out before a cut stream's error, as its text would be.)
            out.finish().map_err(Error::Io)?;
            res
        }
        Some(base) => {
            let side = |list: &str| -> Result<Vec<profile::Report>> {
                let mut v = Vec::new();
                for p in list.split(',').filter(|p| !p.is_empty()) {
                    profile_of(p, a, &mut |r| Ok(v.push(r)))?;
                }
                Ok(v)
            };
            let o = compare::CompareOptions { min_change: a.profile.min_change.unwrap_or(5.0), all: a.profile.verbose };
            let rows = compare::compare(&side(base)?, &side(file)?, o);
            let _ = compare::print(&mut out, &rows);
            out.finish().map(drop).map_err(Error::Io)
        }
    }
}
