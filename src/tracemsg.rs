//! trace-cmd's listener protocol, version 3, as `trace-cmd record -N`
//! speaks it to `trace-cmd listen` (trace-cmd's lib/trace-cmd/trace-msg.c
//! and tracecmd/trace-listen.c): the bytes only, no I/O.
//!
//! A session, client's view:
//! 1. the listener greets with [`GREETING`]; the client offers v3
//!    ([`V3_OFFER`]), the listener answers [`V3_REPLY`] (a v1-only listener
//!    reads the offer as a CPU count of -1 and hangs up); the client sends
//!    [`V3_MAGIC`], the listener [`READY`];
//! 2. from here on, framed messages ([`Header`] + body): the client sends
//!    `TINIT` (CPUs, page size, the option "tcp": TCP data connections),
//!    the listener answers `RINIT` with one port per CPU (its reader
//!    processes accept there);
//! 3. the trace.dat metadata goes in `SEND_DATA` messages (the listener
//!    writes their bodies to its file as they are), ended by `FIN_DATA`;
//!    the listener gives up when more than 5 s pass between two of them;
//! 4. each CPU's raw pages go, unframed, on a TCP connection to its port;
//! 5. `CLOSE` once every data connection is closed: the listener then
//!    appends the CPU data (a BUFFER section and its option) to the
//!    metadata. Nothing else is sent at the end of a recording: the
//!    listener reads no options after `FIN_DATA`.
//!
//! Every number in a message is big-endian (network order); the metadata
//! inside `SEND_DATA` is in the trace.dat's own byte order.

use alloc::vec::Vec;

/// The listener's first 8 bytes.
pub const GREETING: &[u8; 8] = b"tracecmd";
/// "CPU count -1, protocol V3" (`V3_CPU` with its NUL).
pub const V3_OFFER: &[u8] = b"-1V3\0";
/// The listener's answer to the offer: the highest version it speaks.
pub const V3_REPLY: &[u8] = b"V3\0";
/// `V3_MAGIC` as trace-cmd sends it: "766679\0" and the literal's own NUL.
pub const V3_MAGIC: &[u8; 8] = b"766679\0\0";
/// The listener's go-ahead after the magic.
pub const READY: &[u8; 2] = b"OK";

/// A message's size limit, header included (`MSG_MAX_LEN`): the listener
/// refuses bigger ones.
pub const MAX_LEN: usize = 8192;
/// `struct tracecmd_msg_header`: size, cmd, cmd_size.
pub const HEADER_LEN: usize = 12;
/// The most metadata one `SEND_DATA` carries.
pub const MAX_DATA: usize = MAX_LEN - HEADER_LEN;

/// Message commands (trace-msg.c's `MSG_MAP`), those a recording uses.
#[derive(Clone, Copy, PartialEq, Debug)]
#[repr(u32)]
pub enum Cmd {
    Close = 0,
    Tinit = 1,
    Rinit = 2,
    SendData = 3,
    FinData = 4,
    NotSupp = 5,
}

impl Cmd {
    /// The fixed part of the command's body (`msg_cmd_sizes`).
    const fn fixed_len(self) -> usize {
        match self {
            Cmd::Tinit => 12,
            Cmd::Rinit => 4,
            _ => 0,
        }
    }
}

/// A message header as received.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Header {
    /// The whole message, header included.
    pub size: u32,
    pub cmd: u32,
    /// The fixed part of the body; the rest is variable data.
    pub cmd_size: u32,
}

/// What was wrong with a message from the listener.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Error {
    /// Size outside [HEADER_LEN, MAX_LEN], or cmd_size beyond it.
    BadSize(u32),
    /// Another command came where `want` was expected.
    Unexpected { got: u32, want: Cmd },
    /// The RINIT port list does not hold one port per CPU.
    BadPorts,
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::BadSize(n) => write!(f, "a message of {n} bytes"),
            Error::Unexpected { got, want } => write!(f, "message {got} where {want:?} was expected"),
            Error::BadPorts => f.write_str("a bad port list"),
        }
    }
}

fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Start a message of `cmd` with `fixed` (its fixed part) and `data`
/// (its variable part) to come.
fn message(out: &mut Vec<u8>, cmd: Cmd, fixed: &[u8], data: &[u8]) {
    let size = HEADER_LEN + fixed.len() + data.len();
    for n in [size, cmd as usize, cmd.fixed_len()] {
        out.extend_from_slice(&(n as u32).to_be_bytes());
    }
    out.extend_from_slice(fixed);
    out.extend_from_slice(data);
}

/// TINIT: `cpus` data connections, pages of `page_size` bytes, over TCP
/// (the option "tcp"; without it the listener opens UDP ports).
pub fn tinit(cpus: u32, page_size: u32) -> Vec<u8> {
    let mut fixed = [0u8; 12];
    fixed[..4].copy_from_slice(&cpus.to_be_bytes());
    fixed[4..8].copy_from_slice(&page_size.to_be_bytes());
    fixed[8..].copy_from_slice(&1u32.to_be_bytes());
    let mut out = Vec::new();
    message(&mut out, Cmd::Tinit, &fixed, b"tcp\0");
    out
}

/// `data` as SEND_DATA messages of at most [`MAX_LEN`] bytes each,
/// appended to `out`.
pub fn send_data(out: &mut Vec<u8>, data: &[u8]) {
    for chunk in data.chunks(MAX_DATA) {
        message(out, Cmd::SendData, &[], chunk);
    }
}

/// A message without a body: FIN_DATA, CLOSE.
pub fn bare(cmd: Cmd) -> [u8; HEADER_LEN] {
    let mut out = Vec::new();
    message(&mut out, cmd, &[], &[]);
    let mut b = [0u8; HEADER_LEN];
    b.copy_from_slice(&out);
    b
}

/// Read a header; `Ok` only for a size the listener itself would accept.
pub fn header(b: &[u8; HEADER_LEN]) -> Result<Header, Error> {
    let h = Header { size: be32(b, 0), cmd: be32(b, 4), cmd_size: be32(b, 8) };
    let size = h.size as usize;
    if !(HEADER_LEN..=MAX_LEN).contains(&size) || h.cmd_size as usize > size - HEADER_LEN {
        return Err(Error::BadSize(h.size));
    }
    Ok(h)
}

/// The ports of an RINIT body (everything after the header): a CPU count,
/// then as many NUL-terminated decimal port numbers.
pub fn rinit_ports(h: &Header, body: &[u8], cpus: u32) -> Result<Vec<u16>, Error> {
    if h.cmd != Cmd::Rinit as u32 {
        return Err(Error::Unexpected { got: h.cmd, want: Cmd::Rinit });
    }
    let fixed = h.cmd_size as usize;
    if fixed < 4 || body.len() < fixed || be32(body, 0) != cpus {
        return Err(Error::BadPorts);
    }
    let mut ports = Vec::new();
    let mut rest = &body[fixed..];
    while let Some(nul) = rest.iter().position(|&b| b == 0) {
        let port = core::str::from_utf8(&rest[..nul]).ok().and_then(|s| s.parse::<u16>().ok());
        ports.push(port.filter(|&p| p != 0).ok_or(Error::BadPorts)?);
        rest = &rest[nul + 1..];
    }
    if ports.len() != cpus as usize || !rest.is_empty() {
        return Err(Error::BadPorts);
    }
    Ok(ports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_strings_are_trace_cmds() {
        // write(fd, V3_CPU, sizeof(V3_CPU)) with V3_CPU "-1V3"; write(fd,
        // V3_MAGIC, sizeof(V3_MAGIC)) with V3_MAGIC "766679\0"; the
        // listener's write(fd, "V3", 3) and write(fd, "OK", 2).
        assert_eq!(V3_OFFER.len(), 5);
        assert_eq!(V3_MAGIC.len(), 8);
        assert_eq!(V3_REPLY, b"V3\0");
    }

    #[test]
    fn tinit_as_make_tinit_builds_it() {
        // 2 CPUs, 4096-byte pages, one option "tcp".
        let want: &[u8] = &[
            0, 0, 0, 28, 0, 0, 0, 1, 0, 0, 0, 12, // size, MSG_TINIT, sizeof(tinit)
            0, 0, 0, 2, 0, 0, 16, 0, 0, 0, 0, 1, // cpus, page_size, opt_num
            b't', b'c', b'p', 0,
        ];
        assert_eq!(tinit(2, 4096), want);
    }

    #[test]
    fn data_is_cut_at_the_message_limit() {
        let data: Vec<u8> = (0..MAX_DATA + 5).map(|i| i as u8).collect();
        let mut out = Vec::new();
        send_data(&mut out, &data);
        assert_eq!(out.len(), data.len() + 2 * HEADER_LEN);
        // The first is exactly MSG_MAX_LEN, as tracecmd_msg_data_send cuts.
        assert_eq!(&out[..12], &[0, 0, 0x20, 0, 0, 0, 0, 3, 0, 0, 0, 0]);
        assert_eq!(&out[12..12 + MAX_DATA], &data[..MAX_DATA]);
        assert_eq!(&out[MAX_LEN..MAX_LEN + 12], &[0, 0, 0, 17, 0, 0, 0, 3, 0, 0, 0, 0]);
        assert_eq!(&out[MAX_LEN + 12..], &data[MAX_DATA..]);
        assert_eq!(bare(Cmd::FinData), [0, 0, 0, 12, 0, 0, 0, 4, 0, 0, 0, 0]);
        assert_eq!(bare(Cmd::Close), [0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn rinit_ports_as_make_rinit_writes_them() {
        // Two CPUs on the listener's first search ports.
        let msg: &[u8] = &[0, 0, 0, 26, 0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 2, b'1', b'5', b'0', b'0', 0, b'1', b'5', b'0', b'1', 0];
        let h = header(msg[..12].try_into().unwrap()).unwrap();
        assert_eq!(h, Header { size: 26, cmd: 2, cmd_size: 4 });
        assert_eq!(rinit_ports(&h, &msg[12..], 2), Ok(alloc::vec![1500, 1501]));
        // One CPU fewer than asked for, a bad number, a missing NUL.
        assert_eq!(rinit_ports(&h, &msg[12..], 3), Err(Error::BadPorts));
        let mut bad = msg[12..].to_vec();
        bad[5] = b'x';
        assert_eq!(rinit_ports(&h, &bad, 2), Err(Error::BadPorts));
        assert_eq!(rinit_ports(&h, &msg[12..25], 2), Err(Error::BadPorts));
        // NOT_SUPP where RINIT belongs.
        let h = Header { size: 12, cmd: Cmd::NotSupp as u32, cmd_size: 0 };
        assert_eq!(rinit_ports(&h, &[], 2), Err(Error::Unexpected { got: 5, want: Cmd::Rinit }));
    }

    #[test]
    fn headers_out_of_bounds_are_refused() {
        for (size, cmd_size) in [(11u32, 0u32), (8193, 0), (12, 1)] {
            let mut b = [0u8; 12];
            b[..4].copy_from_slice(&size.to_be_bytes());
            b[8..].copy_from_slice(&cmd_size.to_be_bytes());
            assert_eq!(header(&b), Err(Error::BadSize(size)));
        }
    }
}
