//! TCP, as ftrec's `-N` needs it: connect to an address, read with a time
//! limit. Sending goes through `write_all` (SIGPIPE is ignored, so a closed
//! connection is EPIPE there, not a signal).

use super::Result;
use rustix::event::{poll, PollFd, PollFlags, Timespec};
use rustix::fd::{AsFd, OwnedFd};
use rustix::io::Errno;
use rustix::net::{AddressFamily, SocketAddr, SocketFlags, SocketType};

/// A close-on-exec TCP connection to `addr`.
/// socket(2): <https://man7.org/linux/man-pages/man2/socket.2.html>,
/// connect(2): <https://man7.org/linux/man-pages/man2/connect.2.html>
pub fn connect_tcp(addr: &SocketAddr) -> Result<OwnedFd> {
    let family = if addr.is_ipv4() { AddressFamily::INET } else { AddressFamily::INET6 };
    let fd = rustix::net::socket_with(family, SocketType::STREAM, SocketFlags::CLOEXEC, None)?;
    loop {
        match rustix::net::connect(&fd, addr) {
            Err(Errno::INTR) => {}
            r => return r.map(|()| fd),
        }
    }
}

/// Fill `buf` from `fd`, waiting at most `ms` milliseconds for each part.
/// The bytes read before the peer closed (fewer than asked for) or before
/// time ran out (Err(TIMEDOUT)).
pub fn read_full(fd: impl AsFd, buf: &mut [u8], ms: u64) -> Result<usize> {
    let fd = fd.as_fd();
    let ts = Timespec { tv_sec: (ms / 1000) as _, tv_nsec: ((ms % 1000) * 1_000_000) as _ };
    let mut n = 0;
    while n < buf.len() {
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match poll(&mut fds, Some(&ts)) {
            Ok(0) => return Err(Errno::TIMEDOUT),
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(e) => return Err(e),
        }
        match rustix::io::read(fd, &mut buf[n..]) {
            Ok(0) => break,
            Ok(m) => n += m,
            Err(Errno::INTR | Errno::AGAIN) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// No more data from us on `fd` (the peer reads to EOF); reading goes on.
/// shutdown(2): <https://man7.org/linux/man-pages/man2/shutdown.2.html>
pub fn shutdown_write(fd: impl AsFd) -> Result<()> {
    rustix::net::shutdown(fd, rustix::net::Shutdown::Write)
}
