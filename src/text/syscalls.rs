//! trace_syscalls.c's printers: `sys_openat(dfd: ..., filename: ...)` and
//! `sys_openat -> 0x3`. They do not use the print fmt of the format file;
//! argument names and types come from the format's fields after
//! `__syscall_nr`. Values print as `%lx` up to 6.17; from 6.18 values
//! below 10 are decimal and the rest `0x%lx` (commit "tracing: Have syscall
//! trace events show "0x" for values greater than 10").

use alloc::string::String;
use core::fmt::{self, Write};

use super::kernel::F;
use crate::cursor::{read_uint, Endian};

pub fn enter(out: &mut dyn Write, name: &str, args: &[(String, String, F)], d: &[u8], e: Endian, kver: u32, verbose: bool) -> fmt::Result {
    out.write_str(name)?;
    out.write_char('(')?;
    let new_style = kver == 0 || kver >= 6018;
    for (i, (arg, ty, f)) in args.iter().enumerate() {
        if i > 0 {
            out.write_str(", ")?;
        }
        if verbose {
            write!(out, "{} ", ty)?;
        }
        // Arguments are `unsigned long` whatever type the field claims.
        let v = read_uint(d, f.off as usize, f.size as usize, e).unwrap_or(0);
        if !new_style {
            write!(out, "{}: {:x}", arg, v)?;
        } else if v < 10 {
            write!(out, "{}: {}", arg, v)?;
        } else {
            write!(out, "{}: 0x{:x}", arg, v)?;
        }
    }
    out.write_str(")\n")
}
