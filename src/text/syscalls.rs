//! trace_syscalls.c's printers: `sys_openat(dfd: ..., filename: ...)` and
//! `sys_openat -> 0x3`. They do not use the print fmt of the format file;
//! argument names and types come from the format's fields after
//! `__syscall_nr`. Values print as `%lx` up to 6.17; from 6.18 values
//! below 10 are decimal and the rest `0x%lx` (commit "tracing: Have syscall
//! trace events show "0x" for values greater than 10").

use alloc::string::String;
use core::fmt::{self, Write};

use crate::sys::line::Line;
use crate::format::FieldAt;
use crate::cursor::{read_uint, Endian};

/// VALUE alone.
#[inline(always)]
fn digits(b: &mut Line, v: u64, new_style: bool) {
    if new_style && v < 10 {
        b.push(b'0' + v as u8);
    } else {
        if new_style {
            b.extend_str("0x");
        }
        b.hex(v);
    }
}

/// The line into a line buffer, from the class's pieces (`sys_write(fd: `,
/// `, buf: `, ...): one copy for the text before each value. false when
/// it does not fit, or for what [`enter`] prints alone (verbose, no
/// arguments).
pub fn enter_line(b: &mut Line, args: &[(String, String, FieldAt)], d: &[u8], e: Endian, kver: u32, verbose: bool) -> bool {
    if verbose || args.is_empty() {
        return false;
    }
    let new_style = kver == 0 || kver >= 6018;
    for (p, _, f) in args {
        // A value is at most 18 bytes, `)\n` follows.
        if b.room() < p.len() + 20 {
            return false;
        }
        b.extend_str(p);
        digits(b, read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0), new_style);
    }
    b.extend_str(")\n");
    true
}

/// The same through `out`, for any length; `verbose` puts each argument's
/// type before its name (the piece is cut after `sys_x(` or `, `).
pub fn enter(out: &mut dyn Write, name: &str, args: &[(String, String, FieldAt)], d: &[u8], e: Endian, kver: u32, verbose: bool) -> fmt::Result {
    if args.is_empty() {
        return write!(out, "{}()\n", name);
    }
    let new_style = kver == 0 || kver >= 6018;
    let mut arr = [0u8; 24];
    for (i, (p, ty, f)) in args.iter().enumerate() {
        let cut = if !verbose {
            0
        } else if i == 0 {
            name.len() + 1
        } else {
            2
        };
        let (head, tail) = p.split_at_checked(cut).unwrap_or(("", p));
        out.write_str(head)?;
        if verbose {
            out.write_str(ty)?;
            out.write_char(' ')?;
        }
        out.write_str(tail)?;
        // Arguments are `unsigned long` whatever type the field claims.
        let mut b = Line::on(&mut arr);
        digits(&mut b, read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0), new_style);
        out.write_str(b.as_str())?;
    }
    out.write_str(")\n")
}
