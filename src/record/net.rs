//! `ftrec -N HOST:PORT`: the recording goes to an unmodified `trace-cmd
//! listen` there, which writes it as its own trace.dat — nothing lands on
//! the board's disk. The messages are `crate::tracemsg`; this is their
//! order, as `trace-cmd record -N` keeps it:
//! - before tracing is touched: connect and agree on protocol v3, so a
//!   refused connection or a listener of another version changes nothing;
//! - once tracing is configured: the metadata up front (as a trace.dat
//!   without CPU data: headers, formats, kallsyms, printk formats,
//!   saved_cmdlines, options), then one TCP connection per CPU that the
//!   readers splice their pages into;
//! - at the end: the data connections close, then CLOSE; the listener
//!   appends the CPU data to the metadata and hangs up once its file is
//!   written.
//!
//! The protocol has no room for anything learned during the recording:
//! the per-CPU stats (lost events) are shown on stderr, and the pages keep
//! their own lost-event marks; saved_cmdlines is the one at the start.

use super::assemble::{self, CpuData, Recorded};
use super::readers::Outcome;
use super::{bail, errmsg, RecordPlan, Result, Session};
use crate::sys::net::{connect_tcp, read_full};
use crate::tracemsg::{self, Cmd};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use rustix::fd::OwnedFd;
use rustix::io::Errno;
use rustix::net::SocketAddr;

/// How long the listener may take to answer a step of the handshake.
const ANSWER_MS: u64 = 10_000;
/// How long the listener may take, after CLOSE, to write its file (it
/// waits 2 s for its readers first).
const WRITE_MS: u64 = 60_000;

/// A connection to a `trace-cmd listen` that accepted protocol v3.
pub(super) struct Listener {
    addr: SocketAddr,
    ctl: OwnedFd,
}

impl Listener {
    /// Connect to `addr` and agree on protocol v3.
    pub fn connect(addr: SocketAddr) -> Result<Listener> {
        let ctl = match connect_tcp(&addr) {
            Ok(fd) => fd,
            Err(e) => bail!("{}", errmsg(&alloc::format!("cannot connect to {addr} (is `trace-cmd listen -p {}` running there?)", addr.port()), e)),
        };
        let l = Listener { addr, ctl };
        let mut greeting = [0u8; 8];
        if l.read(&mut greeting, "greeting")? < 8 || &greeting != tracemsg::GREETING {
            bail!("{addr}: not a trace-cmd listener (it did not greet with \"tracecmd\")");
        }
        l.send(tracemsg::V3_OFFER)?;
        let mut reply = [0u8; 3];
        match l.read(&mut reply, "protocol version")? {
            // A v1 listener took "-1V3" for a CPU count of -1 and hung up.
            0 => bail!("{addr}: protocol version mismatch: the listener speaks only v1 (it hung up on the v3 offer); ftrec speaks v3"),
            n if reply[..n] != *tracemsg::V3_REPLY => {
                let theirs = crate::sys::lossy(&reply[..n]);
                bail!("{addr}: protocol version mismatch: the listener answered \"{}\"; ftrec speaks V3", theirs.trim_end_matches('\0'))
            }
            _ => Ok(l),
        }
    }

    /// Fill `buf` (up to the listener closing) with its answer: `what`
    /// names it in errors.
    fn read(&self, buf: &mut [u8], what: &str) -> Result<usize> {
        match read_full(&self.ctl, buf, ANSWER_MS) {
            Ok(n) => Ok(n),
            Err(Errno::TIMEDOUT) => bail!("{}: no answer from the listener ({what}) in {} s", self.addr, ANSWER_MS / 1000),
            Err(e) => bail!("{}: {}", self.addr, errmsg(&alloc::format!("reading the listener's {what}"), e)),
        }
    }

    fn send(&self, b: &[u8]) -> Result<()> {
        crate::sys::write_all(&self.ctl, b).map_err(|e| self.gone(e))
    }

    /// The error of a failed send: the listener went away.
    #[inline(never)]
    fn gone(&self, e: Errno) -> super::Error {
        super::failed(format_args!("{}: the listener went away ({})", self.addr, crate::sys::Msg(e)))
    }

    /// Send the metadata and open the data connections, one per CPU, for
    /// pages of `page_size` bytes. From the listener's answer on, it waits
    /// at most 5 s for each message: `metadata` is ready before.
    pub fn start(&self, cpus: usize, page_size: usize, metadata: &[u8]) -> Result<Vec<OwnedFd>> {
        let addr = self.addr;
        self.send(tracemsg::V3_MAGIC)?;
        let mut ok = [0u8; 2];
        if self.read(&mut ok, "go-ahead")? < 2 || &ok != tracemsg::READY {
            bail!("{addr}: the listener did not accept protocol v3");
        }
        self.send(&tracemsg::tinit(cpus as u32, page_size as u32))?;
        let mut head = [0u8; tracemsg::HEADER_LEN];
        let rinit = match self.read(&mut head, "port list")? {
            n if n < head.len() => None,
            _ => tracemsg::header(&head).ok(),
        };
        let Some(h) = rinit else { bail!("{addr}: the listener refused {cpus} CPUs of {page_size}-byte pages") };
        let mut body = vec![0u8; h.size as usize - tracemsg::HEADER_LEN];
        self.read(&mut body, "port list")?;
        let ports = match tracemsg::rinit_ports(&h, &body, cpus as u32) {
            Ok(p) => p,
            Err(e) => bail!("{addr}: the listener sent {e}"),
        };
        let mut msgs = Vec::with_capacity(metadata.len() + metadata.len() / tracemsg::MAX_DATA * tracemsg::HEADER_LEN + 64);
        tracemsg::send_data(&mut msgs, metadata);
        msgs.extend_from_slice(&tracemsg::bare(Cmd::FinData));
        self.send(&msgs)?;
        let mut conns = Vec::new();
        for (cpu, port) in ports.into_iter().enumerate() {
            let mut to = addr;
            to.set_port(port);
            match connect_tcp(&to) {
                Ok(fd) => conns.push(fd),
                Err(e) => bail!("{}", errmsg(&alloc::format!("{addr}: CPU {cpu}'s data connection to port {port}"), e)),
            }
        }
        Ok(conns)
    }

    /// The end, once every data connection is closed: the first reader
    /// error, or CLOSE and the wait for the listener to write its file.
    /// Unless `quiet`, what each CPU sent and the kernel's lost-event
    /// counts (`stats`) go to stderr.
    pub fn finish(&self, outcomes: &[Outcome], stats: &[String], quiet: bool) -> Result<()> {
        let addr = self.addr;
        // The listener never speaks first: anything to read now (a hang-up,
        // a reset) means it has gone.
        let gone = !matches!(read_full(&self.ctl, &mut [0u8; 1], 0), Err(Errno::TIMEDOUT));
        let err = outcomes.iter().find_map(|o| o.err.as_deref());
        match (gone, err) {
            (true, e) => bail!("{addr}: the listener went away during the recording{}{}", if e.is_some() { ": " } else { "" }, e.unwrap_or("")),
            (false, Some(e)) => bail!("{addr}: {e}"),
            _ => {}
        }
        self.send(&tracemsg::bare(Cmd::Close))?;
        match read_full(&self.ctl, &mut [0u8; 1], WRITE_MS) {
            Ok(0) => {}
            Ok(_) => bail!("{addr}: the listener answered CLOSE with a message: its file may be incomplete"),
            Err(Errno::TIMEDOUT) => bail!("{addr}: the listener did not finish its file in {} s", WRITE_MS / 1000),
            Err(e) => return Err(self.gone(e)),
        }
        if !quiet {
            summary(outcomes, stats);
        }
        Ok(())
    }
}

/// What each CPU sent, and the kernel's lost-event counts, on stderr.
#[inline(never)]
fn summary(outcomes: &[Outcome], stats: &[String]) {
    use core::fmt::Write;
    let mut e = crate::sys::stderr();
    for (c, o) in outcomes.iter().enumerate() {
        let _ = write!(e, "CPU{c}: {} bytes sent", o.bytes);
        assemble::lost_counts(&mut e, c, stats.get(c).map(String::as_str).unwrap_or(""));
        e.bytes(b"\n");
    }
}

/// The trace.dat metadata the listener writes before the CPU data: what
/// `assemble` writes, with the tracing state of now (the recording is
/// configured, not yet started) and no per-CPU stats. The formats: those
/// of the systems enabled, or of all when no event was named (the buffer
/// may then hold any).
#[inline(never)]
pub(super) fn metadata(s: &Session, plan: &RecordPlan, name: &str, page_size: usize, cpus: usize) -> Vec<u8> {
    let top = &s.top;
    let all = crate::tracefs::events::all_events(top).unwrap_or_default();
    let mut systems = s.systems.clone();
    if plan.events.is_empty() {
        for ev in &all {
            if ev.system != "ftrace" {
                super::insert_sorted(&mut systems, &ev.system);
            }
        }
    }
    let header_page = top.read("events/header_page").unwrap_or_default();
    let long = crate::tracedat::write::kernel_long_size(&header_page).unwrap_or(core::mem::size_of::<core::ffi::c_long>() as u8);
    let mut r = Recorded {
        name,
        page_size,
        cpus: Vec::new(),
        stats: Vec::new(),
        systems: Vec::new(),
        clock_file: s.rec.read_str("trace_clock").unwrap_or_default(),
        state: crate::tracefs::state::trace_state(&s.rec),
    };
    for _ in 0..cpus {
        r.cpus.push(CpuData { file: None, start: 0, end: 0 });
    }
    let meta = assemble::metadata(top, &r, &all, &systems, plan.file_version, header_page, long);
    let mut bytes = Vec::new();
    for seg in crate::tracedat::write::layout(&meta) {
        if let crate::tracedat::write::Seg::Bytes(b) = seg {
            bytes.extend_from_slice(&b);
        }
    }
    bytes
}
