//! `ftrec -N HOST:PORT`: the recording goes to an unmodified `trace-cmd
//! listen` there, which writes it as its own trace.dat — nothing lands on
//! the board's disk. The messages are `crate::tracemsg`; this is their
//! order, as `trace-cmd record -N` keeps it:
//! - before tracing is touched: connect and agree on protocol v3, so a
//!   refused connection or a listener of another version changes nothing;
//! - once tracing is configured: the metadata known at the start (headers,
//!   formats, kallsyms, printk formats), then one TCP connection per CPU
//!   that the readers splice their pages into;
//! - at the end: the data connections close; the metadata known only now
//!   (saved_cmdlines with the comms of the tasks that ran, the per-CPU
//!   stats that count lost events, the tracer state), FIN_DATA, CLOSE; the
//!   listener appends the CPU data and hangs up once its file is written.
//!
//! The listener drops a client that is silent for 5 s before FIN_DATA, and
//! writes every byte it gets into the file. So the v7 metadata is staged
//! (`tracedat::write::Staged`): its head points past a filler section, and
//! a keeper process sends one byte of that filler every 2 s until the end,
//! when the rest of it and the tail go. The filler (96 KiB) lasts 54 hours
//! of recording. The keeper also watches the connection: the listener
//! never speaks first, so anything to read means it went away, and the
//! recording stops at once. A v6 file cannot be staged: all its metadata
//! goes at the start (saved_cmdlines as it was then, no stats), as
//! `trace-cmd record -N` sends it.

use super::assemble::{self, Ending};
use super::readers::Outcome;
use super::{bail, command, errmsg, Result};
use crate::sys::net::{connect_tcp, read_full, shutdown_write};
use crate::sys::{self, Forked};
use crate::tracedat::write::{self, opt, Meta, Staged};
use crate::tracefs::Tracefs;
use crate::tracemsg::{self, Cmd};
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::RefCell;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::SocketAddr;

/// How long the listener may take to answer a step of the handshake.
const ANSWER_MS: u64 = 10_000;
/// How long the listener may take, after CLOSE, to write its file (it
/// waits 2 s for its readers first).
const WRITE_MS: u64 = 60_000;
/// The filler of a staged file, and how often the keeper sends a byte of
/// it (the listener waits 5 s).
const FILLER: usize = 96 << 10;
const KEEP_MS: i64 = 2000;

/// A connection to a `trace-cmd listen` that accepted protocol v3.
pub(super) struct Listener {
    /// HOST:PORT as given, for messages.
    name: String,
    addr: SocketAddr,
    ctl: OwnedFd,
    /// The v7 metadata's tail, to send at the end, and the options known
    /// at the start that go with it.
    staged: RefCell<Option<(Staged, Vec<(u16, Vec<u8>)>)>>,
    keeper: RefCell<Option<Keeper>>,
}

/// The process that keeps the listener waiting: its pid, and the pipe
/// that tells it to send the rest of the filler and end.
struct Keeper {
    pid: i32,
    stop: OwnedFd,
}

impl Listener {
    /// Connect to `name` (HOST:PORT, see [`parse_addr`]) and agree on
    /// protocol v3.
    pub fn connect(name: &str) -> Result<Listener> {
        let Some(addr) = parse_addr(name) else { bail!("-N {name}: not IP:PORT") };
        let ctl = match connect_tcp(&addr) {
            Ok(fd) => fd,
            Err(e) => bail!("{}", errmsg(&alloc::format!("cannot connect to {name} (is `trace-cmd listen -p {}` running there?)", addr.port()), e)),
        };
        let l = Listener { name: String::from(name), addr, ctl, staged: RefCell::new(None), keeper: RefCell::new(None) };
        let addr = name;
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
            Err(Errno::TIMEDOUT) => bail!("{}: no answer from the listener ({what}) in {} s", self.name, ANSWER_MS / 1000),
            Err(e) => bail!("{}: {}", self.name, errmsg(&alloc::format!("reading the listener's {what}"), e)),
        }
    }

    fn send(&self, b: &[u8]) -> Result<()> {
        crate::sys::write_all(&self.ctl, b).map_err(|e| self.gone(e))
    }

    /// The error of a failed send: the listener went away.
    #[inline(never)]
    fn gone(&self, e: Errno) -> super::Error {
        super::failed(format_args!("{}: the listener went away ({})", self.name, crate::sys::Msg(e)))
    }

    /// Send the metadata known at the start, `meta` (v7: staged, the rest
    /// sent at the end, with a keeper that writes to `failed` if the
    /// listener goes away) and open the data connections, one per CPU, for
    /// pages of `page_size` bytes. From the listener's answer on, it waits
    /// at most 5 s for each message: the metadata is ready before.
    pub fn start(&self, cpus: usize, page_size: usize, meta: &Meta, failed: &OwnedFd) -> Result<Vec<OwnedFd>> {
        let (head, staged) = staged(meta);
        let addr = &self.name;
        self.send(tracemsg::V3_MAGIC)?;
        let mut ok = [0u8; 2];
        if self.read(&mut ok, "go-ahead")? < 2 || &ok != tracemsg::READY {
            bail!("{addr}: the listener did not accept protocol v3");
        }
        self.send(&tracemsg::tinit(cpus as u32, page_size as u32))?;
        let mut hdr = [0u8; tracemsg::HEADER_LEN];
        let rinit = match self.read(&mut hdr, "port list")? {
            n if n < hdr.len() => None,
            _ => tracemsg::header(&hdr).ok(),
        };
        let Some(h) = rinit else { bail!("{addr}: the listener refused {cpus} CPUs of {page_size}-byte pages") };
        let mut body = vec![0u8; h.size as usize - tracemsg::HEADER_LEN];
        self.read(&mut body, "port list")?;
        // (What was wrong is not worth its words on the board.)
        let ports = match tracemsg::rinit_ports(&h, &body, cpus as u32) {
            Ok(p) => p,
            Err(_) => bail!("{addr}: the listener sent a bad port list"),
        };
        let mut msgs = Vec::with_capacity(head.len() + head.len() / tracemsg::MAX_DATA * tracemsg::HEADER_LEN + 64);
        tracemsg::send_data(&mut msgs, &head);
        drop(head);
        if staged.is_none() {
            msgs.extend_from_slice(&tracemsg::bare(Cmd::FinData));
        }
        self.send(&msgs)?;
        if staged.is_some() {
            *self.staged.borrow_mut() = staged;
            // (Before the data connections exist: the keeper holds none.)
            self.keep_alive(failed)?;
        }
        let mut conns = Vec::new();
        for (cpu, port) in ports.into_iter().enumerate() {
            let mut to = self.addr;
            to.set_port(port);
            match connect_tcp(&to) {
                Ok(fd) => conns.push(fd),
                Err(e) => bail!("{}", errmsg(&alloc::format!("{addr}: CPU {cpu}'s data connection to port {port}"), e)),
            }
        }
        Ok(conns)
    }

    /// Start the keeper: it sends a byte of filler every 2 s, and writes
    /// to `failed` if the listener goes away.
    fn keep_alive(&self, failed: &OwnedFd) -> Result<()> {
        let (stop_r, stop_w) = sys::pipe(false).map_err(|e| super::os_err("pipe", e))?;
        match command::fork().map_err(super::Error::new)? {
            Forked::Parent(pid) => {
                *self.keeper.borrow_mut() = Some(Keeper { pid, stop: stop_w });
                Ok(())
            }
            Forked::Child => {
                let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
                drop(stop_w);
                let ok = keep(self.ctl.as_fd(), stop_r.as_fd());
                if !ok {
                    let _ = rustix::io::write(failed, b"x");
                }
                sys::exit_now(if ok { 0 } else { 1 })
            }
        }
    }

    /// Stop the keeper (it sends the rest of the filler): whether it and
    /// the connection were fine to the end.
    fn stop_keeper(&self) -> bool {
        let Some(k) = self.keeper.borrow_mut().take() else { return true };
        let _ = rustix::io::write(&k.stop, b"x");
        command::wait(k.pid) == 0
    }

    /// The end, once the readers are done: the first reader error, or the
    /// tail of the metadata (what `e` and the end know: saved_cmdlines as
    /// it is now, the options with the per-CPU stats), the end of the data connections `conns`,
    /// CLOSE, and the wait for the listener to write its file. Unless
    /// `quiet`, what each CPU sent and the kernel's lost-event counts go
    /// to stderr.
    pub fn finish(&self, top: &Tracefs, e: &Ending, outcomes: &[Outcome], conns: Vec<OwnedFd>, quiet: bool) -> Result<()> {
        let addr = &self.name;
        // The listener never speaks first: anything to read now (a hang-up,
        // a reset) means it has gone.
        let kept = self.stop_keeper();
        let gone = !kept || !matches!(read_full(&self.ctl, &mut [0u8; 1], 0), Err(Errno::TIMEDOUT));
        let err = outcomes.iter().find_map(|o| o.err.as_deref());
        match (gone, err) {
            (true, e) => bail!("{addr}: the listener went away during the recording{}{}", if e.is_some() { ": " } else { "" }, e.unwrap_or("")),
            (false, Some(e)) => bail!("{addr}: {e}"),
            _ => {}
        }
        if let Some((staged, early)) = self.staged.borrow_mut().take() {
            let mut msgs = Vec::new();
            tracemsg::send_data(&mut msgs, &staged.tail(&tail_meta(early, assemble::late(top, e))));
            msgs.extend_from_slice(&tracemsg::bare(Cmd::FinData));
            self.send(&msgs)?;
        }
        // Only now, with the metadata in, may the listener's readers end:
        // their exits interrupt (SIGCHLD) its wait for the metadata. And
        // only once each has read all and closed its end (EOF here) may
        // CLOSE go: a second after it, the listener stops its readers.
        for (cpu, c) in conns.iter().enumerate() {
            let _ = shutdown_write(c);
            if !matches!(read_full(c, &mut [0u8; 1], WRITE_MS), Ok(0)) {
                bail!("{addr}: the listener did not finish reading CPU {cpu}'s data");
            }
        }
        drop(conns);
        self.send(&tracemsg::bare(Cmd::Close))?;
        match read_full(&self.ctl, &mut [0u8; 1], WRITE_MS) {
            Ok(0) => {}
            Ok(_) => bail!("{addr}: the listener answered CLOSE with a message: its file may be incomplete"),
            Err(Errno::TIMEDOUT) => bail!("{addr}: the listener did not finish its file in {} s", WRITE_MS / 1000),
            Err(e) => return Err(self.gone(e)),
        }
        if !quiet {
            summary(outcomes, &e.stats);
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

/// `-N HOST:PORT`: an IPv4 address or "localhost", and a port. No name
/// lookup (that would link a resolver into the static binary) and no IPv6
/// (its text form alone costs the board build 3 KB): a board reaches its
/// workstation by address.
pub fn parse_addr(s: &str) -> Option<SocketAddr> {
    // (By bytes, with a decimal reader of its own: str patterns and
    // FromStr cost the board build twice as much.)
    let dec = |b: &[u8], max: u32| -> Option<u32> {
        let mut v = 0u32;
        for &d in b {
            v = v.checked_mul(10)?.checked_add(char::from(d).to_digit(10)?)?;
        }
        (!b.is_empty() && v <= max).then_some(v)
    };
    let s = s.as_bytes();
    let colon = s.iter().rposition(|&b| b == b':')?;
    let (host, port) = (&s[..colon], dec(&s[colon + 1..], 65535)? as u16);
    let mut ip = [127, 0, 0, 1];
    if host != b"localhost" {
        let mut parts = host.split(|&b| b == b'.');
        for b in ip.iter_mut() {
            *b = dec(parts.next()?, 255)? as u8;
        }
        if parts.next().is_some() {
            return None;
        }
    }
    Some(SocketAddr::from((ip, port)))
}

/// The keeper's loop: a byte of filler every 2 s until `stop`, then the
/// rest of it. False when the listener went away (or the filler ran out).
fn keep(ctl: BorrowedFd, stop: BorrowedFd) -> bool {
    let mut one = Vec::new();
    tracemsg::send_data(&mut one, &[0]);
    let mut left = FILLER;
    let ts = Timespec { tv_sec: KEEP_MS / 1000, tv_nsec: 0 };
    loop {
        let mut fds = [PollFd::new(&stop, PollFlags::IN), PollFd::new(&ctl, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(_) => return false,
        }
        if fds[0].revents().contains(PollFlags::IN) {
            let mut rest = Vec::new();
            tracemsg::send_data(&mut rest, &vec![0; left]);
            return sys::write_all(ctl, &rest).is_ok();
        }
        if !fds[1].revents().is_empty() || left == 0 || sys::write_all(ctl, &one).is_err() {
            return false;
        }
        left -= 1;
    }
}

/// The tail's Meta: LATE's (saved_cmdlines and the options the end
/// knows), with the options only the start knows (uname, version, kernel
/// values) from `early`.
fn tail_meta(mut early: Vec<(u16, Vec<u8>)>, mut late: Meta) -> Meta {
    early.retain(|o| o.0 != opt::TRACECLOCK && o.0 != opt::STATE);
    early.append(&mut late.options);
    late.options = early;
    late
}

/// What the listener writes before the CPU data, from `meta` (the
/// recording's META, configured but not yet started, without a buffer:
/// the listener writes its own): v7, the head of it and the rest
/// staged for the end, with the options known now; v6, all of it, as
/// `trace-cmd record -N` sends it.
#[inline(never)]
fn staged(meta: &Meta) -> (Vec<u8>, Option<(Staged, Vec<(u16, Vec<u8>)>)>) {
    if meta.version >= 7 {
        let (head, staged) = write::staged_head(meta, FILLER as u64);
        return (head, Some((staged, meta.options.clone())));
    }
    let mut bytes = Vec::new();
    for seg in write::layout(meta) {
        if let write::Seg::Bytes(b) = seg {
            bytes.extend_from_slice(&b);
        }
    }
    (bytes, None)
}
