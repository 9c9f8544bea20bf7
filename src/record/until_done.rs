//! Running until done: start tracing (or the command, which starts it
//! itself), then wait in one poll for whichever comes first — the command
//! exits, SIGINT/SIGTERM, the duration runs out, or a reader fails.

use super::{command, configure, os_err, tf, Error, RecordPlan, Result, Session};
use crate::sys;
use alloc::vec::Vec;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fd::OwnedFd;
use rustix::fs::OFlags;
use rustix::process::Signal;

/// SIGINT and SIGTERM from now on wake the returned pipe end (and are
/// passed on to the traced command): they end the recording, not ftrec.
pub(super) fn catch_signals() -> Result<OwnedFd> {
    sys::catch_signals(&[Signal::INT, Signal::TERM]).map_err(|e| Error::new(command::os("pipe", e)))
}

/// Start tracing (or the command) and wait for the end. `signals`: the
/// pipe of `catch_signals`; `reader_failed`: readable once a reader has
/// failed. Returns the command's pid, if one ran.
#[inline(never)]
pub(super) fn run_until_done(s: &mut Session, plan: &RecordPlan, signals: &OwnedFd, reader_failed: &OwnedFd) -> Result<Option<i32>> {
    let mut child = None;
    if plan.command.is_empty() {
        s.rec.write("tracing_on", b"1").map_err(tf)?;
    } else {
        // With -F the command adds its own pid to the filters (which hold
        // the -P pids already, if any); else it runs unfiltered and the
        // recording is of the whole system (or the pids) while it runs.
        let files = if plan.filter_command { configure::pid_filters(s, None, !plan.pids.is_empty())? } else { Vec::new() };
        let on = s.rec.open_file("tracing_on", OFlags::WRONLY).map_err(tf)?;
        child = Some(command::spawn(&plan.command, &files, &on, plan.output == "-").map_err(Error::new)?);
    }
    // The duration as a timerfd polled with the rest (reading a clock
    // instead would link the vDSO lookup into the static binary). A
    // duration of 0 stops at once.
    let timer = match plan.duration_ms {
        Some(ms) if ms > 0 => Some(sys::timer_once(ms).map_err(|e| os_err("timerfd", e))?),
        _ => None,
    };
    while plan.duration_ms != Some(0) && sys::caught_signal().is_none() {
        let pidfd = child.as_ref().and_then(|c: &command::Child| c.pidfd.as_ref());
        // The last two slots: the child's pidfd and the timer, else the
        // signal pipe again.
        let mut fds = [
            PollFd::new(signals, PollFlags::IN),
            PollFd::new(reader_failed, PollFlags::IN),
            PollFd::new(pidfd.unwrap_or(signals), PollFlags::IN),
            PollFd::new(timer.as_ref().unwrap_or(signals), PollFlags::IN),
        ];
        // Without a pidfd (old kernel) check the child every 100 ms.
        let short = Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
        let _ = poll(&mut fds, if child.is_some() && pidfd.is_none() { Some(&short) } else { None });
        if fds[1].revents().contains(PollFlags::IN)
            || (pidfd.is_some() && fds[2].revents().contains(PollFlags::IN))
            || (timer.is_some() && fds[3].revents().contains(PollFlags::IN))
        {
            break;
        }
        if let Some(c) = &child {
            if c.pidfd.is_none() && command::has_ended(c.pid) {
                break;
            }
        }
    }
    // A signal with a command running: pass it on, the command ends too.
    if let (Some(c), Some(sig)) = (&child, sys::caught_signal()) {
        let _ = sys::kill(c.pid, sig);
    }
    Ok(child.map(|c| c.pid))
}
