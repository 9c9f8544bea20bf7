//! ftcat: not yet implemented; prints its usage and exits 2 until its issue lands.

use std::ffi::OsString;
use std::io::Write;
use std::vec::Vec;

const USAGE: &str = "Usage: ftcat [OPTIONS]\n\n(not implemented yet)\n";

pub fn main(_args: Vec<OsString>) -> i32 {
    let _ = std::io::stderr().write_all(USAGE.as_bytes());
    2
}
